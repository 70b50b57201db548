use fusion_core::config::{
    Access, KeyDist, KeySpec, NS_PER_MS, NS_PER_S, NS_PER_US, ParamValue, Params, Step,
};
use fusion_core::metrics::{AwrLine, Metric};
use fusion_scenario::{
    At, CmpOp, Device, Fault, LinkTarget, LoadedScenario, Operand, ScenarioError, load_file,
    load_str,
};

const FULL: &str = include_str!("data/full.toml");

/// A small valid file that takes most defaults (also the base of the
/// error cases in `load_errors.rs`).
const MIN: &str = include_str!("data/min.toml");

fn ok(text: &str, overrides: &[&str]) -> LoadedScenario {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match load_str(text, "t.toml", &o) {
        Ok(s) => s,
        Err(e) => panic!("expected the scenario to load, got:\n{e}"),
    }
}

#[test]
fn full_file_round_trips() {
    let s = ok(FULL, &[]);
    assert_eq!(s.path, "t.toml");
    assert_eq!(s.name, "myth-cpu-starvation");
    assert_eq!(s.title, "A CPU-starved node slows the whole cluster");
    assert_eq!(s.myth.as_deref(), Some("A busy node only hurts itself"));
    assert!(s.description.starts_with("Instance 2 runs CPU hogs"));
    assert!(!s.has_variants);
    assert_eq!(s.variants.len(), 1);
    assert_eq!(s.variants[0].name, "myth-cpu-starvation");
    let sc = &s.variants[0].scenario;
    assert_eq!(sc.seed, 42);

    // Parameters: every instance, then instance 2 only.
    assert_eq!(sc.instances.len(), 2);
    assert_eq!(sc.instances[0].cpu_count, 4);
    assert_eq!(sc.instances[1].cpu_count, 8);
    assert_eq!(sc.instances[0].db_cache_size, 64 << 20);
    assert_eq!(sc.instances[1].db_cache_size, 64 << 20);
    assert_eq!(
        sc.instances[0].gcs_server_processes,
        Params::default().gcs_server_processes
    );

    // Costs in ns; unset ones keep their defaults.
    let d = fusion_core::config::Costs::default();
    assert_eq!(sc.costs.execute_ns, 15 * NS_PER_US);
    assert_eq!(sc.costs.row_examined_ns, 50);
    assert_eq!(sc.costs.cr_build_ns, 60_500);
    assert_eq!(sc.costs.time_slice_ns, 20 * NS_PER_MS);
    assert_eq!(sc.costs.consistent_get_ns, d.consistent_get_ns);
    assert_eq!(sc.costs.lms_send_ns, d.lms_send_ns);

    assert_eq!(sc.network.latency, 40 * NS_PER_US);
    assert_eq!(sc.network.jitter, 5 * NS_PER_US);
    assert_eq!(sc.network.bandwidth_bps, 25_000_000_000);
    assert_eq!(sc.network.message_bytes, 256);
    assert_eq!(sc.storage.read_latency, 2_500_000);
    assert_eq!(sc.storage.write_latency, 3 * NS_PER_MS);
    assert_eq!(sc.storage.log_write_latency, NS_PER_MS);
    assert_eq!(sc.storage.iops, 0);

    // Catalog.
    let cat = &sc.catalog;
    assert_eq!(cat.tables.len(), 2);
    assert_eq!(cat.tables[0].name, "orders");
    assert_eq!(cat.tables[0].rows, 200_000);
    assert_eq!(cat.tables[0].rows_per_block, 50);
    assert_eq!(cat.tables[0].free_blocks_per_instance, 1000);
    assert_eq!(cat.tables[1].free_blocks_per_instance, 256);
    assert_eq!(cat.indexes[0].table, 0);
    assert_eq!(cat.indexes[0].entries_per_leaf, 250);
    assert_eq!(cat.indexes[0].entries_per_branch, 250);
    assert_eq!(cat.indexes[0].free_blocks_per_instance, 64);
    assert_eq!(cat.indexes[1].table, 1);
    assert_eq!(cat.indexes[1].entries_per_leaf, 100);
    assert_eq!(cat.indexes[1].entries_per_branch, 50);
    assert_eq!(cat.indexes[1].free_blocks_per_instance, 8);

    // Workloads and steps resolved to positions.
    let w = &sc.workloads[0];
    assert_eq!(w.name, "oltp");
    assert_eq!(w.instances, vec![1, 2]);
    assert_eq!(w.sessions_per_instance, 16);
    assert_eq!(w.think_time, 10 * NS_PER_MS);
    assert_eq!(w.iterations, Some(1000));
    assert_eq!(w.transactions[0].name, "lookup");
    assert_eq!(w.transactions[0].weight, 80);
    let uniform = KeySpec {
        dist: KeyDist::Uniform,
        range: None,
        org: None,
    };
    assert_eq!(
        w.transactions[0].steps,
        vec![
            Step::Read {
                table: 0,
                access: Access::Index(0),
                keys: uniform.clone(),
                rows: 4
            },
            Step::Read {
                table: 1,
                access: Access::FullScan,
                keys: uniform.clone(),
                rows: 1
            },
            Step::Commit,
        ]
    );
    assert_eq!(w.transactions[1].name, "txn2");
    assert_eq!(w.transactions[1].weight, 20);
    assert_eq!(
        w.transactions[1].steps,
        vec![
            Step::Update {
                table: 0,
                access: Access::Index(0),
                keys: KeySpec {
                    dist: KeyDist::Hot {
                        fraction: 0.01,
                        share: 0.9
                    },
                    range: None,
                    org: None
                },
                rows: 2
            },
            Step::Update {
                table: 0,
                access: Access::Index(0),
                keys: KeySpec {
                    dist: KeyDist::Sequential,
                    range: Some((1, 500)),
                    org: None
                },
                rows: 1
            },
            Step::Insert { table: 0, rows: 1 },
            Step::Commit,
            Step::Think {
                time: 5 * NS_PER_MS
            },
        ]
    );
    let r = &sc.workloads[1];
    assert_eq!(r.instances, vec![1, 2]);
    assert_eq!(r.think_time, 0);
    assert_eq!(r.iterations, None);
    assert_eq!(r.transactions[0].name, "txn1");
    assert_eq!(r.transactions[0].weight, 1);
    assert_eq!(
        r.transactions[0].steps,
        vec![Step::Read {
            table: 1,
            access: Access::Index(1),
            keys: KeySpec {
                dist: KeyDist::Hot {
                    fraction: 0.01,
                    share: 0.9
                },
                range: None,
                org: None
            },
            rows: 1
        }]
    );

    // Phases.
    assert_eq!(sc.phases.len(), 2);
    let (p0, p1) = (&sc.phases[0], &sc.phases[1]);
    assert_eq!(p0.name, "baseline");
    assert_eq!(p0.duration, 20 * NS_PER_S);
    assert_eq!(p0.workloads, Some(vec!["oltp".to_string()]));
    assert!(p0.parameters.is_empty() && p0.faults.is_empty());
    assert_eq!(p1.duration, 30_500_000_000);
    assert_eq!(p1.workloads, None);
    assert_eq!(
        p1.parameters,
        vec![
            (1, "_os_sched_high_priority".to_string(), ParamValue::Int(0)),
            (2, "_os_sched_high_priority".to_string(), ParamValue::Int(0)),
            (
                2,
                "_high_priority_processes".to_string(),
                ParamValue::Text("LMS*|LGWR*".into())
            ),
        ]
    );
    assert_eq!(
        p1.faults,
        vec![
            Fault::StressCpu {
                instance: 2,
                workers: 16,
                load_pct: 100
            },
            Fault::DiskLatency {
                instance: 2,
                device: Device::Redo,
                latency: 500 * NS_PER_MS,
                jitter: 5 * NS_PER_MS
            },
            Fault::NetworkLatency {
                target: LinkTarget::All,
                latency: 2 * NS_PER_MS,
                jitter: 0
            },
            Fault::NetworkLatency {
                target: LinkTarget::Link { from: 1, to: 2 },
                latency: 500 * NS_PER_US,
                jitter: 100 * NS_PER_US
            },
            Fault::Bandwidth {
                target: LinkTarget::Instance(1),
                rate_bps: 100_000_000
            },
        ]
    );

    // Expectations, with `than` inheriting from the left side.
    assert_eq!(s.expectations.len(), 2);
    let e = &s.expectations[0];
    assert_eq!(e.name, "cr receive time grows 10x when starved");
    assert_eq!(e.left.metric, Metric::Awr(AwrLine::CrReceiveMs));
    assert_eq!(e.left.phase, "starved");
    assert_eq!(e.left.instance, Some(1));
    assert_eq!(e.left.variant, None);
    assert_eq!(e.op, CmpOp::Ge);
    assert_eq!(e.factor, 10.0);
    match &e.right {
        Operand::Metric(r) => {
            assert_eq!(r.metric, e.left.metric);
            assert_eq!(r.text, e.left.text);
            assert_eq!(r.phase, "baseline");
            assert_eq!(r.instance, Some(1));
            assert_eq!(r.variant, None);
        }
        other => panic!("expected a metric on the right, got {other:?}"),
    }
    let e = &s.expectations[1];
    assert_eq!(e.op, CmpOp::Lt);
    assert_eq!(e.factor, 1.0);
    assert_eq!(e.left.instance, None);
    assert!(matches!(e.right, Operand::Value(v) if v == 5.0));
}

#[test]
fn minimal_file_takes_defaults() {
    let s = ok(MIN, &[]);
    let sc = &s.variants[0].scenario;
    assert_eq!(sc.seed, 1);
    assert_eq!(s.description, "");
    assert_eq!(s.myth, None);
    assert_eq!(sc.instances, vec![Params::default(), Params::default()]);
    assert_eq!(sc.costs, fusion_core::config::Costs::default());
    assert_eq!(sc.network, fusion_scenario::NetworkModel::default());
    assert_eq!(sc.storage, fusion_scenario::StorageModel::default());
    assert_eq!(
        sc.phases[1].faults,
        vec![Fault::StressCpu {
            instance: 2,
            workers: 4,
            load_pct: 100
        }]
    );
}

#[test]
fn load_file_reads_and_names_missing_files() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/full.toml");
    assert_eq!(
        load_file(&path, &[]).map(|s| s.name).ok().as_deref(),
        Some("myth-cpu-starvation")
    );
    let missing = std::path::Path::new("no/such/scenario.toml");
    let e = load_file(missing, &[]).unwrap_err();
    assert!(matches!(e, ScenarioError::Io { .. }));
    assert!(e.to_string().starts_with("no/such/scenario.toml: "), "{e}");
}

// Files the loader refuses are in `load_errors.rs`, as a table.

// ---- --set ----------------------------------------------------------------

#[test]
fn set_changes_values() {
    let s = ok(
        FULL,
        &[
            "parameters.cpu_count=6",
            "network.latency_us=75",
            "scenario.seed=7",
            "parameters.inst2.db_cache_size=128M",
        ],
    );
    let sc = &s.variants[0].scenario;
    assert_eq!(sc.instances[0].cpu_count, 6);
    assert_eq!(sc.instances[1].cpu_count, 8, "inst2's own value still wins");
    assert_eq!(sc.instances[1].db_cache_size, 128 << 20);
    assert_eq!(sc.network.latency, 75 * NS_PER_US);
    assert_eq!(sc.seed, 7);
    // A key the file does not have is created.
    let s = ok(MIN, &["costs.commit_us=40", "parameters.inst1.cpu_count=2"]);
    assert_eq!(s.variants[0].scenario.costs.commit_ns, 40 * NS_PER_US);
    assert_eq!(s.variants[0].scenario.instances[0].cpu_count, 2);
}

#[test]
fn set_addresses_array_elements_by_name_and_index() {
    let s = ok(
        FULL,
        &[
            "phase.baseline.duration_s=5",
            "phase.1.fault.0.workers=32",
            "workload.oltp.transaction.lookup.weight=7",
            "workload.0.transaction.1.steps.0.rows=9",
            "phase.starved.fault.3.target.to=1",
            "phase.starved.fault.3.target.from=2",
            "table.orders.rows=5000",
            "expect.\"cr receive time grows 10x when starved\".factor=2.5",
        ],
    );
    let sc = &s.variants[0].scenario;
    assert_eq!(sc.phases[0].duration, 5 * NS_PER_S);
    assert_eq!(
        sc.phases[1].faults[0],
        Fault::StressCpu {
            instance: 2,
            workers: 32,
            load_pct: 100
        }
    );
    assert_eq!(sc.workloads[0].transactions[0].weight, 7);
    assert!(matches!(
        sc.workloads[0].transactions[1].steps[0],
        Step::Update { rows: 9, .. }
    ));
    assert!(matches!(
        sc.phases[1].faults[3],
        Fault::NetworkLatency {
            target: LinkTarget::Link { from: 2, to: 1 },
            ..
        }
    ));
    assert_eq!(sc.catalog.tables[0].rows, 5000);
    assert_eq!(s.expectations[0].factor, 2.5);
}

#[test]
fn set_values_parse_as_toml_or_text() {
    let s = ok(
        FULL,
        &[
            "parameters._high_priority_processes=LMS*",
            "workload.oltp.instances=[2]",
            "phase.baseline.workloads=[\"oltp\", \"report\"]",
            "costs.row_examined_us=0.1",
        ],
    );
    let sc = &s.variants[0].scenario;
    assert_eq!(sc.instances[0].high_priority_processes, "LMS*");
    assert_eq!(sc.workloads[0].instances, vec![2]);
    assert_eq!(sc.phases[0].workloads.as_ref().map(Vec::len), Some(2));
    assert_eq!(sc.costs.row_examined_ns, 100);
}

// ---- variants ---------------------------------------------------------------

/// Two variants of MIN (appended to it).
const VARIANTS: &str = include_str!("data/variants.toml");
/// An expectation comparing MIN's two variants (appended after VARIANTS).
const EXPECT_VARIANTS: &str = include_str!("data/expect_variants.toml");

#[test]
fn variants_differ_only_in_their_set_values() {
    let text = format!("{MIN}{VARIANTS}");
    let s = ok(&text, &[]);
    assert!(s.has_variants);
    assert_eq!(s.variants.len(), 2);
    let (a, b) = (&s.variants[0], &s.variants[1]);
    assert_eq!((a.name.as_str(), b.name.as_str()), ("ts-lms", "rt-lms"));
    assert_eq!(a.description, "LMS in the time-sharing class");
    assert_eq!(b.description, "");
    let (sa, sb) = (&a.scenario, &b.scenario);
    assert_eq!(
        sa.phases[1].faults,
        vec![Fault::StressCpu {
            instance: 2,
            workers: 8,
            load_pct: 100
        }]
    );
    assert_eq!(
        sb.phases[1].faults,
        vec![Fault::StressCpu {
            instance: 2,
            workers: 32,
            load_pct: 100
        }]
    );
    let prio = |v: u64| {
        vec![
            (1, "_os_sched_high_priority".to_string(), ParamValue::Int(v)),
            (2, "_os_sched_high_priority".to_string(), ParamValue::Int(v)),
        ]
    };
    assert_eq!(sa.phases[1].parameters, prio(0));
    assert_eq!(sb.phases[1].parameters, prio(1));
    // Everything else is the same.
    assert_eq!(sa.seed, sb.seed);
    assert_eq!(sa.instances, sb.instances);
    assert_eq!(sa.costs, sb.costs);
    assert_eq!(sa.network, sb.network);
    assert_eq!(sa.storage, sb.storage);
    assert_eq!(sa.catalog, sb.catalog);
    assert_eq!(sa.workloads, sb.workloads);
    assert_eq!(sa.phases[0].name, sb.phases[0].name);
    assert_eq!(sa.phases[0].duration, sb.phases[0].duration);
    assert_eq!(sa.phases[1].duration, sb.phases[1].duration);
}

#[test]
fn set_applies_before_variants() {
    let text = format!("{MIN}{VARIANTS}");
    let s = ok(
        &text,
        &["network.latency_us=99", "phase.starved.fault.0.workers=2"],
    );
    for v in &s.variants {
        assert_eq!(v.scenario.network.latency, 99 * NS_PER_US);
    }
    // The variant's own value wins over --set for the same key.
    assert!(matches!(
        s.variants[1].scenario.phases[1].faults[0],
        Fault::StressCpu { workers: 32, .. }
    ));
}

#[test]
fn variant_set_accepts_dotted_and_header_forms() {
    let text = format!(
        "{MIN}\n[[variant]]\nname = \"a\"\nset = {{ cluster.instances = 1, phase.starved.fault.0.instance = 1, \"workload.w.instances\" = [1] }}\n\n[[variant]]\nname = \"b\"\n[variant.set]\n\"costs.commit_us\" = 1\n[variant.set.network]\nlatency_us = 7\n"
    );
    let s = ok(&text, &[]);
    assert_eq!(s.variants[0].scenario.instances.len(), 1);
    assert_eq!(s.variants[1].scenario.instances.len(), 2);
    assert_eq!(s.variants[1].scenario.costs.commit_ns, NS_PER_US);
    assert_eq!(s.variants[1].scenario.network.latency, 7 * NS_PER_US);
}

#[test]
fn expectations_name_variants() {
    let text = format!("{MIN}{VARIANTS}{EXPECT_VARIANTS}");
    let s = ok(&text, &[]);
    let e = &s.expectations[0];
    assert_eq!(e.left.variant.as_deref(), Some("rt-lms"));
    assert_eq!(e.left.instance, Some(1));
    match &e.right {
        Operand::Metric(r) => {
            assert_eq!(r.variant.as_deref(), Some("ts-lms"));
            assert_eq!(r.instance, None);
            assert_eq!(r.phase, "starved");
            assert_eq!(r.metric, e.left.metric);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn problems_carry_structured_locations() {
    let e = load_str(&MIN.replace("rows = 1000", "rows = -1"), "t.toml", &[]).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!(
        p.at,
        At::File {
            line: 10,
            column: 8
        }
    );
    assert_eq!(p.key.as_deref(), Some("table[0].rows"));
}

// ---- no input panics ----------------------------------------------------------

#[test]
fn every_prefix_loads_or_fails_cleanly() {
    let text = format!("{FULL}{VARIANTS}");
    for (i, _) in text.char_indices() {
        let _ = load_str(&text[..i], "t.toml", &[]);
        let _ = load_str(
            &text[..i],
            "t.toml",
            &["phase.1.fault.0.workers=3".to_string()],
        );
    }
}

#[test]
fn odd_overrides_do_not_panic() {
    let odd = [
        "",
        "=",
        "==",
        ".=1",
        "\"=1",
        "a.\"b=1",
        "phase=1",
        "phase.0=1",
        "phase.0.fault=[]",
        "variant.0.set=3",
        "expect=1",
        "scenario=\"x\"",
        "cluster.instances=300",
        "cluster.instances=1e400",
        "x.y.z.w=[[1]]",
        "phase.-1.x=1",
        "phase.99999999999999999999.x=1",
        "table.0.rows=9223372036854775807",
        "phase.0.duration_s=1e300",
        "phase.0.duration_s=nan",
        "network.bandwidth_mbps=inf",
        "costs.time_slice_ms=1e-12",
    ];
    let text = format!("{FULL}{VARIANTS}");
    for o in odd {
        let _ = load_str(&text, "t.toml", &[o.to_string()]);
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Replacing any slice of a valid file with junk never panics.
        #[test]
        fn mutated_files_never_panic(at in 0usize..4000, len in 0usize..40, junk in "[ -~\n]{0,20}") {
            let text = format!("{FULL}{VARIANTS}");
            let mut start = at.min(text.len());
            while !text.is_char_boundary(start) { start -= 1; }
            let mut end = (start + len).min(text.len());
            while !text.is_char_boundary(end) { end -= 1; }
            let mutated = format!("{}{}{}", &text[..start], junk, &text[end..]);
            let _ = load_str(&mutated, "t.toml", &[]);
        }

        #[test]
        fn arbitrary_overrides_never_panic(o in "[a-z0-9_.\"= \\[\\]-]{0,40}") {
            let _ = load_str(FULL, "t.toml", &[o]);
        }
    }
}

// ---- [tour] -------------------------------------------------------------------

/// A `[tour]` for MIN (appended to it).
const TOUR: &str = include_str!("data/tour.toml");
/// A `[tour]` with two `versus` figures, for MIN with VARIANTS.
const TOUR_VERSUS: &str = include_str!("data/tour_versus.toml");

#[test]
fn tour_section_loads() {
    let s = ok(&format!("{MIN}{TOUR}"), &[]);
    let t = s.tour.expect("a [tour] section");
    assert_eq!(t.order, 1);
    assert_eq!(t.label, "inst1 avg gc cr receive with inst2's LMS starved");
    assert_eq!(t.deck, "63.3 ms (node 1, deck slide 'Node1 GC workload')");
    assert_eq!(t.measured.metric, Metric::Awr(AwrLine::CrReceiveMs));
    assert_eq!(t.measured.text, AwrLine::CrReceiveMs.label());
    assert_eq!(t.measured.phase, "starved");
    assert_eq!(t.measured.instance, Some(1));
    assert_eq!(
        t.measured.variant.as_deref(),
        Some("mini"),
        "without variants the only run is named after the scenario"
    );
    assert!(ok(MIN, &[]).tour.is_none(), "[tour] is optional");

    // The full file has one too; the cluster and a --set order work.
    let full = ok(FULL, &["tour.order=7"]);
    let t = full.tour.expect("full.toml has a [tour]");
    assert_eq!((t.order, t.measured.instance), (7, Some(1)));

    // A header-form `measured`, the cluster, and a named variant.
    let text = format!(
        "{MIN}{VARIANTS}\n[tour]\norder = 0\nlabel = \"l\"\ndeck = \"d\"\n[tour.measured]\nmetric = \"waits:gc cr block congested\"\nphase = \"baseline\"\ninstance = \"all\"\nvariant = \"rt-lms\"\n"
    );
    let t = ok(&text, &[]).tour.expect("tour");
    assert_eq!(t.measured.instance, None);
    assert_eq!(t.measured.variant.as_deref(), Some("rt-lms"));
    // Without a variant, the first one.
    let t = ok(&text.replace("variant = \"rt-lms\"\n", ""), &[])
        .tour
        .expect("tour");
    assert_eq!(t.measured.variant.as_deref(), Some("ts-lms"));
}

#[test]
fn a_think_time_or_a_cost_lets_time_pass() {
    // No think time and free calls and visits is refused (`load_errors.rs`):
    // the sessions would loop at one instant. Either one lets time pass.
    let text = MIN.replace(
        "sessions_per_instance = 2\n",
        "sessions_per_instance = 2\nthink_time_ms = 0\n",
    ) + "\n[costs]\nexecute_us = 0\nconsistent_get_us = 0\n";
    ok(&text, &["workload.w.think_time_ms=1"]);
    ok(&text, &["costs.consistent_get_us=1"]);
}

/// Two sequences (appended to MIN).
const SEQ: &str = include_str!("data/sequences.toml");

fn with_sequences(steps: &str) -> String {
    MIN.replace(
        "steps = [{ op = \"read\", table = \"t\", via = \"t_pk\" }, { op = \"commit\" }]",
        steps,
    ) + SEQ
}

#[test]
fn sequences_and_their_steps_load() {
    let text = with_sequences(
        "steps = [{ op = \"nextval\", sequence = \"o\", rows = 2 }, { op = \"insert\", table = \"t\", key = { sequence = \"s\" } }]",
    );
    let s = ok(&text, &[]);
    let s = &s.variants[0].scenario;
    let seqs = &s.catalog.sequences;
    assert_eq!(seqs.len(), 2);
    assert_eq!(
        (seqs[0].cache, seqs[0].order, seqs[0].start),
        (0, false, 10)
    );
    assert_eq!(
        (seqs[1].cache, seqs[1].order, seqs[1].increment),
        (1000, true, 1)
    );
    let steps = &s.workloads[0].transactions[0].steps;
    assert_eq!(
        steps[0],
        Step::NextVal {
            sequence: 1,
            rows: 2
        }
    );
    assert_eq!(
        steps[1],
        Step::InsertSeq {
            table: 0,
            rows: 1,
            sequence: 0
        }
    );
    // A variant or --set may change a sequence.
    let s = ok(&text, &["sequence.s.cache=20"]);
    assert_eq!(s.variants[0].scenario.catalog.sequences[0].cache, 20);
}

#[test]
fn a_reverse_key_index_loads() {
    let s = ok(MIN, &[]);
    assert!(!s.variants[0].scenario.catalog.indexes[0].reverse);
    let text = MIN.replace(
        "table = \"t\"\n\n[[workload]]",
        "table = \"t\"\nreverse = true\n\n[[workload]]",
    );
    let s = ok(&text, &[]);
    assert!(s.variants[0].scenario.catalog.indexes[0].reverse);
    // A variant or --set may turn it on or off.
    let s = ok(MIN, &["index.t_pk.reverse=true"]);
    assert!(s.variants[0].scenario.catalog.indexes[0].reverse);
}

// ---- organisations, partitions, index kinds, counts, tour versus -----------

/// A table of two organisations, partitioned, its index local and on (key,
/// value); a bitmap-indexed table; steps by organisation and a count.
const ORGS: &str = include_str!("data/orgs.toml");

#[test]
fn organisations_partitions_and_index_kinds_load() {
    use fusion_core::config::IndexKind;
    let s = ok(ORGS, &[]);
    let c = &s.variants[0].scenario.catalog;
    assert_eq!((c.tables[0].orgs, c.tables[0].partition_by_org), (2, true));
    assert_eq!(c.tables[1].distinct_values, 4);
    let kv = &c.indexes[0];
    assert!(kv.local && kv.includes_value && kv.kind == IndexKind::BTree);
    let bm = &c.indexes[2];
    assert_eq!((bm.kind, bm.rows_per_piece), (IndexKind::Bitmap, 100));
    let steps = &s.variants[0].scenario.workloads[0].transactions[0].steps;
    assert!(matches!(&steps[1], Step::Update { keys, rows: 3, .. } if keys.org == Some(2)));
    assert!(matches!(
        &steps[2],
        Step::Count { table: 1, index: 2, values, rows: 1 } if values.range == Some((1, 4))
    ));
    // A bitmap's pieces cover the whole table unless told otherwise.
    let s = ok(&ORGS.replace("rows_per_piece = 100\n", ""), &[]);
    assert_eq!(
        s.variants[0].scenario.catalog.indexes[2].rows_per_piece,
        1000
    );
}

#[test]
fn tour_versus_figures_default_to_the_measured_one() {
    let text = format!("{MIN}{VARIANTS}{TOUR_VERSUS}");
    let t = ok(&text, &[]).tour.expect("tour");
    assert_eq!(t.versus.len(), 2);
    let (a, b) = (&t.versus[0], &t.versus[1]);
    assert_eq!(
        (a.variant.as_deref(), a.phase.as_str(), a.instance),
        (Some("rt-lms"), "starved", Some(1))
    );
    assert_eq!(
        (b.variant.as_deref(), b.phase.as_str(), b.instance),
        (Some("ts-lms"), "baseline", None)
    );
    assert_eq!(a.metric, t.measured.metric);
}
