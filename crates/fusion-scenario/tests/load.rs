use fusion_core::config::{
    Access, KeyDist, KeySpec, NS_PER_MS, NS_PER_S, NS_PER_US, ParamValue, Params, Step,
};
use fusion_core::metrics::{AwrLine, Metric};
use fusion_scenario::{
    At, CmpOp, Device, Fault, LinkTarget, LoadedScenario, Operand, ScenarioError, load_file,
    load_str,
};

const FULL: &str = include_str!("data/full.toml");

/// A small valid file the error tests break in one place each.
const MIN: &str = r#"[scenario]
name = "mini"
title = "A minimal scenario"

[cluster]
instances = 2

[[table]]
name = "t"
rows = 1000
rows_per_block = 10

[[index]]
name = "t_pk"
table = "t"

[[workload]]
name = "w"
instances = [1, 2]
sessions_per_instance = 2

[[workload.transaction]]
name = "look"
steps = [{ op = "read", table = "t", via = "t_pk" }, { op = "commit" }]

[[phase]]
name = "baseline"
duration_s = 10

[[phase]]
name = "starved"
duration_s = 10

[[phase.fault]]
kind = "stress_cpu"
instance = 2
workers = 4
"#;

fn ok(text: &str, overrides: &[&str]) -> LoadedScenario {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match load_str(text, "t.toml", &o) {
        Ok(s) => s,
        Err(e) => panic!("expected the scenario to load, got:\n{e}"),
    }
}

fn err(text: &str, overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match load_str(text, "t.toml", &o) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// 1-based line of the first line containing `needle` (after line `after`).
fn line_of(text: &str, needle: &str, after: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
}

/// Asserts the message has exactly one line, at `line:col`, about `key`, containing `words`.
#[track_caller]
fn assert_one(msg: &str, line: usize, col: usize, key: &str, words: &str) {
    assert_eq!(msg.lines().count(), 1, "expected one problem, got:\n{msg}");
    let prefix = format!("t.toml:{line}:{col}: `{key}`");
    assert!(
        msg.starts_with(&prefix),
        "expected `{prefix}...`, got:\n{msg}"
    );
    assert!(msg.contains(words), "expected `{words}` in:\n{msg}");
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
    assert_eq!(sc.costs.execute, 15 * NS_PER_US);
    assert_eq!(sc.costs.row_examined, 50);
    assert_eq!(sc.costs.cr_build, 60_500);
    assert_eq!(sc.costs.time_slice, 20 * NS_PER_MS);
    assert_eq!(sc.costs.consistent_get, d.consistent_get);
    assert_eq!(sc.costs.lms_send, d.lms_send);

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

// ---- bad files ------------------------------------------------------------

#[test]
fn unknown_top_level_key() {
    let text = format!("{MIN}\n[netwrok]\nlatency_us = 5\n");
    let msg = err(&text, &[]);
    let line = line_of(&text, "[netwrok]", 0);
    assert_one(&msg, line, 2, "netwrok", "unknown key `netwrok`");
    assert!(
        msg.contains("network") && msg.contains("did you mean `network`"),
        "{msg}"
    );
}

#[test]
fn unknown_key_in_a_fault() {
    let text = MIN.replace("workers = 4", "workers = 4\nwrokers = 5");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "wrokers", 0),
        1,
        "phase[1].fault[0].wrokers",
        "unknown key `wrokers`",
    );
    assert!(msg.contains("kind, instance, workers, load_pct"), "{msg}");
}

#[test]
fn unknown_key_in_an_inline_step() {
    let text = MIN.replace("via = \"t_pk\" }", "via = \"t_pk\", row = 3 }");
    let msg = err(&text, &[]);
    let line = line_of(&text, "row = 3", 0);
    let col = text.lines().nth(line - 1).unwrap().find("row = 3").unwrap() + 1;
    assert_one(
        &msg,
        line,
        col,
        "workload[0].transaction[0].steps[0].row",
        "unknown key `row`",
    );
}

#[test]
fn string_where_an_integer_belongs() {
    let text = MIN.replace(
        "sessions_per_instance = 2",
        "sessions_per_instance = \"two\"",
    );
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "sessions_per_instance", 0),
        25,
        "workload[0].sessions_per_instance",
        "expected a positive integer, found \"two\"",
    );
}

#[test]
fn instance_out_of_range_in_a_fault() {
    let text = MIN.replace("instance = 2\nworkers", "instance = 3\nworkers");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "instance = 3", 0),
        12,
        "phase[1].fault[0].instance",
        "out of range 1..=2",
    );
}

#[test]
fn instance_out_of_range_in_parameters() {
    let text = format!("{MIN}\n[parameters.inst9]\ncpu_count = 8\n");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "[parameters.inst9]", 0),
        13,
        "parameters.inst9",
        "instance 9 is out of range 1..=2",
    );
}

#[test]
fn instance_out_of_range_in_a_workload() {
    let text = MIN.replace("instances = [1, 2]", "instances = [1, 5]");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "instances = [1, 5]", 0),
        17,
        "workload[0].instances[1]",
        "instance 5 is out of range",
    );
    let dup = MIN.replace("instances = [1, 2]", "instances = [2, 2]");
    assert!(err(&dup, &[]).contains("instance 2 is listed twice"));
}

#[test]
fn negative_latency() {
    let text = MIN.replace(
        "workers = 4",
        "workers = 4\n\n[[phase.fault]]\nkind = \"latency\"\ntarget = \"all\"\nlatency_ms = -2",
    );
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "latency_ms = -2", 0),
        14,
        "phase[1].fault[1].latency_ms",
        "expected a number >= 0, found -2",
    );
    let net = format!("{MIN}\n[network]\nlatency_us = -0.5\n");
    let msg = err(&net, &[]);
    assert_one(
        &msg,
        line_of(&net, "latency_us", 0),
        14,
        "network.latency_us",
        "found -0.5",
    );
}

#[test]
fn unknown_phase_in_an_expectation() {
    let text = format!(
        "{MIN}\n[[expect]]\nname = \"e\"\nmetric = \"stat:gc cr blocks received\"\nphase = \"starvd\"\nop = \">\"\nvalue = 0\n"
    );
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "phase = \"starvd\"", 0),
        9,
        "expect[0].phase",
        "unknown phase `starvd` (phases: baseline, starved)",
    );
    // In `than` too.
    let text = format!(
        "{MIN}\n[[expect]]\nname = \"e\"\nmetric = \"stat:gc cr blocks received\"\nphase = \"starved\"\nop = \">\"\nthan = {{ phase = \"nope\" }}\n"
    );
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "than", 0),
        18,
        "expect[0].than.phase",
        "unknown phase `nope`",
    );
}

#[test]
fn unknown_metric() {
    let text = format!(
        "{MIN}\n[[expect]]\nname = \"e\"\nmetric = \"stat:no such statistic\"\nphase = \"starved\"\nop = \">\"\nvalue = 0\n"
    );
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "metric", 0),
        10,
        "expect[0].metric",
        "unknown v$sysstat statistic `no such statistic`",
    );
    let text = text.replace("stat:no such statistic", "Avg global cache fast block time");
    assert!(err(&text, &[]).contains("unknown metric"));
}

#[test]
fn unknown_index_in_via() {
    let text = MIN.replace("via = \"t_pk\"", "via = \"t_ix\"");
    let msg = err(&text, &[]);
    let line = line_of(&text, "t_ix", 0);
    let col = text
        .lines()
        .nth(line - 1)
        .unwrap()
        .find("\"t_ix\"")
        .unwrap()
        + 1;
    assert_one(
        &msg,
        line,
        col,
        "workload[0].transaction[0].steps[0].via",
        "unknown index `t_ix` (indexes on `t`: t_pk",
    );
    // An update cannot full-scan.
    let text = MIN.replace(
        "op = \"read\", table = \"t\", via = \"t_pk\"",
        "op = \"update\", table = \"t\", via = \"full_scan\"",
    );
    assert!(err(&text, &[]).contains("an update needs an index"));
}

#[test]
fn index_on_another_table() {
    let text = MIN.replace(
        "[[index]]",
        "[[table]]\nname = \"u\"\nrows = 10\nrows_per_block = 10\n\n[[index]]\nname = \"u_pk\"\ntable = \"u\"\n\n[[index]]",
    );
    let text = text.replace("via = \"t_pk\"", "via = \"u_pk\"");
    assert!(err(&text, &[]).contains("index `u_pk` is on `u`, not on `t`"));
}

#[test]
fn duplicate_phase_names() {
    let text = MIN.replace("name = \"starved\"", "name = \"baseline\"");
    let msg = err(&text, &[]);
    let first = line_of(&text, "name = \"baseline\"", 0);
    let second = line_of(&text, "name = \"baseline\"", first);
    assert_one(
        &msg,
        second,
        8,
        "phase[1].name",
        &format!("duplicate phase name `baseline` (first defined on line {first})"),
    );
}

#[test]
fn toml_syntax_error() {
    let text = MIN.replace("rows = 1000", "rows = 1000 1000");
    let msg = err(&text, &[]);
    assert_eq!(msg.lines().count(), 1, "{msg}");
    let line = line_of(&text, "rows = 1000 1000", 0);
    assert!(
        msg.starts_with(&format!("t.toml:{line}:8: TOML syntax error")),
        "{msg}"
    );
    let msg = err("[scenario]\nname = \"x\nx", &[]);
    assert!(msg.starts_with("t.toml:2:"), "{msg}");
    let msg = err("a = 1\na = 2\n", &[]);
    assert!(
        msg.starts_with("t.toml:2:1: TOML syntax error: duplicate key `a`"),
        "{msg}"
    );
}

#[test]
fn restart_parameter_in_a_phase() {
    let text = MIN.replace(
        "[[phase.fault]]",
        "[phase.parameters]\ncpu_count = 2\n\n[[phase.fault]]",
    );
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "cpu_count = 2", 0),
        1,
        "phase[1].parameters.cpu_count",
        "needs an instance restart",
    );
}

#[test]
fn bad_parameter_values() {
    let text = format!(
        "{MIN}\n[parameters]\ncpu_count = -3\ndb_block_size = 3000\ncpu_cuont = 2\nlog_buffer = 1.5\n"
    );
    let msg = err(&text, &[]);
    assert_eq!(msg.lines().count(), 4, "{msg}");
    assert!(
        msg.contains("`parameters.cpu_count`: expected a non-negative integer or text"),
        "{msg}"
    );
    assert!(
        msg.contains("`parameters.db_block_size`: db_block_size must be a power of two"),
        "{msg}"
    );
    assert!(
        msg.contains("unknown parameter `cpu_cuont`") && msg.contains("did you mean `cpu_count`"),
        "{msg}"
    );
    assert!(
        msg.contains("`parameters.log_buffer`: expected an integer or text"),
        "{msg}"
    );
    let text = format!("{MIN}\n[parameters.inst2]\ndb_block_size = 16384\n");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "db_block_size", 0),
        17,
        "parameters.inst2.db_block_size",
        "must be the same on every instance",
    );
}

#[test]
fn missing_required_keys_and_tables() {
    let text = MIN.replace("rows_per_block = 10\n", "");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "[[table]]", 0),
        1,
        "table[0]",
        "missing required key `rows_per_block`",
    );
    let text = MIN.replace("[cluster]\ninstances = 2\n", "");
    let msg = err(&text, &[]);
    assert!(
        msg.starts_with("t.toml: missing required table [cluster]"),
        "{msg}"
    );
}

#[test]
fn fault_kinds_and_targets() {
    let text = MIN.replace("kind = \"stress_cpu\"", "kind = \"stress_mem\"");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "stress_mem", 0),
        8,
        "phase[1].fault[0].kind",
        "\"stress_cpu\", \"disk_latency\", \"latency\", \"bandwidth\"",
    );
    let text = MIN.replace(
        "workers = 4",
        "workers = 4\n\n[[phase.fault]]\nkind = \"bandwidth\"\ntarget = { from = 1, to = 1 }\nrate_mbps = 10",
    );
    assert!(err(&text, &[]).contains("two different instances"));
    let text = MIN.replace("workers = 4", "workers = 4\nlatency_ms = 3");
    let msg = err(&text, &[]);
    assert!(
        msg.contains("`phase[1].fault[0].latency_ms`: unknown key"),
        "{msg}"
    );
}

#[test]
fn several_problems_are_all_reported_in_file_order() {
    let text = MIN.replace("rows = 1000", "rows = 0").replace(
        "duration_s = 10\n\n[[phase.fault]]",
        "duration_s = -1\n\n[[phase.fault]]",
    );
    let msg = err(&text, &[]);
    let lines: Vec<&str> = msg.lines().collect();
    assert_eq!(lines.len(), 2, "{msg}");
    assert!(lines[0].contains("`table[0].rows`"), "{msg}");
    assert!(lines[1].contains("`phase[1].duration_s`"), "{msg}");
}

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
    assert_eq!(s.variants[0].scenario.costs.commit, 40 * NS_PER_US);
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
    assert_eq!(sc.costs.row_examined, 100);
}

#[test]
fn set_reports_a_missing_element() {
    let msg = err(MIN, &["phase.warmup.duration_s=5"]);
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(
        msg.starts_with("t.toml: --set phase.warmup.duration_s=5: "),
        "{msg}"
    );
    assert!(msg.contains("`phase` has no element named or numbered `warmup` (elements: 0 = baseline, 1 = starved)"), "{msg}");
    let msg = err(MIN, &["phase.7.fault.0.workers=5"]);
    assert!(msg.contains("numbered `7`"), "{msg}");
    let msg = err(MIN, &["phase.1.fault.3.workers=5"]);
    assert!(
        msg.contains("`phase[1].fault` has no element named or numbered `3` (elements: 0)"),
        "{msg}"
    );
    let msg = err(MIN, &["cluster.instances.x=5"]);
    assert!(
        msg.contains("`cluster.instances` is 2, not a table"),
        "{msg}"
    );
    let msg = err(MIN, &["no equals sign"]);
    assert!(
        msg.contains("--set no equals sign: expected KEY=VALUE"),
        "{msg}"
    );
    let msg = err(MIN, &["phase..x=1"]);
    assert!(msg.contains("empty key segment"), "{msg}");
}

#[test]
fn set_bad_value_type_mentions_set() {
    let msg = err(MIN, &["phase.starved.fault.0.workers=many"]);
    assert_eq!(
        msg,
        "t.toml: --set phase.starved.fault.0.workers=many: `phase[1].fault[0].workers`: \
         expected a positive integer, found \"many\""
    );
    let msg = err(MIN, &["phase.1.fault.0.workers=-3"]);
    assert!(msg.contains("--set phase.1.fault.0.workers=-3: `phase[1].fault[0].workers`: expected a positive integer, found -3"), "{msg}");
    // An unknown key created by --set is reported against --set.
    let msg = err(MIN, &["network.latncy_us=5"]);
    assert!(
        msg.starts_with("t.toml: --set network.latncy_us=5: `network.latncy_us`: unknown key"),
        "{msg}"
    );
}

// ---- variants ---------------------------------------------------------------

const VARIANTS: &str = r#"
[[variant]]
name = "ts-lms"
description = "LMS in the time-sharing class"
set = { "phase.starved.parameters._os_sched_high_priority" = 0, "phase.starved.fault.0.workers" = 8 }

[[variant]]
name = "rt-lms"
set = { "phase.starved.parameters._os_sched_high_priority" = 1, "phase.starved.fault.0.workers" = 32 }
"#;

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
fn variant_errors_point_at_the_variant() {
    let text = format!(
        "{MIN}{}",
        VARIANTS.replace("fault.0.workers\" = 32", "fault.0.workers\" = -32")
    );
    let msg = err(&text, &[]);
    let line = line_of(&text, "-32", 0);
    let col = text.lines().nth(line - 1).unwrap().find("-32").unwrap() + 1;
    assert_eq!(
        msg,
        format!(
            "t.toml:{line}:{col}: `phase[1].fault[0].workers` (set by variant `rt-lms`): \
             expected a positive integer, found -32"
        )
    );
    // A path that does not resolve.
    let text = format!(
        "{MIN}{}",
        VARIANTS.replace(
            "phase.starved.fault.0.workers\" = 8",
            "phase.hungry.fault.0.workers\" = 8"
        )
    );
    let msg = err(&text, &[]);
    assert!(
        msg.contains("(variant `ts-lms`): `phase` has no element named or numbered `hungry`"),
        "{msg}"
    );
    // A file problem only one variant exposes says which.
    let text = format!(
        "{MIN}\n[[variant]]\nname = \"one\"\nset = {{ \"cluster.instances\" = 1 }}\n\n[[variant]]\nname = \"two\"\n"
    );
    let msg = err(&text, &[]);
    assert!(
        msg.contains(
            "`phase[1].fault[0].instance` (in variant `one`): instance 2 is out of range 1..=1"
        ),
        "{msg}"
    );
    assert!(
        msg.contains("`workload[0].instances[1]` (in variant `one`)"),
        "{msg}"
    );
    // A variant may not change expectations.
    let text = format!("{MIN}\n[[variant]]\nname = \"x\"\nset = {{ \"expect.0.factor\" = 1 }}\n");
    assert!(err(&text, &[]).contains("a variant may change only the run configuration"));
}

#[test]
fn variant_set_accepts_dotted_and_header_forms() {
    let text = format!(
        "{MIN}\n[[variant]]\nname = \"a\"\nset = {{ cluster.instances = 1, phase.starved.fault.0.instance = 1, \"workload.w.instances\" = [1] }}\n\n[[variant]]\nname = \"b\"\n[variant.set]\n\"costs.commit_us\" = 1\n[variant.set.network]\nlatency_us = 7\n"
    );
    let s = ok(&text, &[]);
    assert_eq!(s.variants[0].scenario.instances.len(), 1);
    assert_eq!(s.variants[1].scenario.instances.len(), 2);
    assert_eq!(s.variants[1].scenario.costs.commit, NS_PER_US);
    assert_eq!(s.variants[1].scenario.network.latency, 7 * NS_PER_US);
}

#[test]
fn expectations_name_variants_and_check_them() {
    let exp = r#"
[[expect]]
name = "rt beats ts"
metric = "avg_ms:gc cr block 2-way"
phase = "starved"
variant = "rt-lms"
instance = 1
op = "<"
than = { variant = "ts-lms", instance = "all" }
"#;
    let text = format!("{MIN}{VARIANTS}{exp}");
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
    let bad = text.replace("variant = \"ts-lms\"", "variant = \"ts\"");
    let msg = err(&bad, &[]);
    assert!(
        msg.contains("`expect[0].than.variant`: unknown variant `ts` (variants: ts-lms, rt-lms)"),
        "{msg}"
    );
    let bad = text.replace("instance = 1\nop", "instance = 3\nop");
    let msg = err(&bad, &[]);
    assert!(
        msg.contains("`expect[0].instance`: instance 3 is out of range 1..=2 in variant `rt-lms`"),
        "{msg}"
    );
    let both = text.replace("than = {", "value = 1\nthan = {");
    assert!(err(&both, &[]).contains("give either `than` or `value`, not both"));
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

const TOUR: &str = r#"
[tour]
order = 1
measured = { metric = "Avg global cache cr block receive time (ms)", phase = "starved", instance = 1 }
label = "inst1 avg gc cr receive with inst2's LMS starved"
deck = "63.3 ms (node 1, deck slide 'Node1 GC workload')"
"#;

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
fn tour_unknown_key() {
    let text = format!("{MIN}{TOUR}").replace("label =", "lable =");
    let msg = err(&text, &[]);
    let line = line_of(&text, "lable", 0);
    assert!(
        msg.contains(&format!(
            "t.toml:{line}:1: `tour.lable`: unknown key `lable` (valid here: order, measured, versus, label, deck; did you mean `label`?)"
        )),
        "{msg}"
    );
    assert!(
        msg.contains("`tour`: missing required key `label`"),
        "{msg}"
    );

    let text = format!("{MIN}{TOUR}").replace("instance = 1 }", "instance = 1, node = 2 }");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "node = 2", 0),
        line_of_col(&text, "node = 2"),
        "tour.measured.node",
        "unknown key `node` (valid here: metric, phase, instance, variant)",
    );
}

#[test]
fn tour_unknown_phase_instance_and_variant() {
    let text = format!("{MIN}{TOUR}").replace("phase = \"starved\"", "phase = \"starvd\"");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "starvd", 0),
        line_of_col(&text, "\"starvd\""),
        "tour.measured.phase",
        "unknown phase `starvd` (phases: baseline, starved)",
    );

    let text = format!("{MIN}{TOUR}").replace("instance = 1 }", "instance = 3 }");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "instance = 3", 0),
        line_of_col(&text, "3 }"),
        "tour.measured.instance",
        "instance 3 is out of range 1..=2",
    );

    let text = format!("{MIN}{TOUR}").replace("instance = 1 }", "instance = 1, variant = \"x\" }");
    let msg = err(&text, &[]);
    assert!(
        msg.contains("`tour.measured.variant`: unknown variant `x` (variants: mini (the file has no [[variant]]))"),
        "{msg}"
    );
}

#[test]
fn tour_bad_values() {
    let text = format!("{MIN}{TOUR}").replace("order = 1", "order = -1");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "order = -1", 0),
        9,
        "tour.order",
        "expected a non-negative integer, found -1",
    );
    let text = format!("{MIN}{TOUR}").replace("order = 1\n", "");
    assert!(err(&text, &[]).contains("`tour`: missing required key `order`"));
    let text = format!("{MIN}{TOUR}").replace("63.3 ms", "63.3\\nms");
    let msg = err(&text, &[]);
    assert!(
        msg.contains("`tour.deck`: expected a non-empty string on one line"),
        "{msg}"
    );
    let text = format!("{MIN}{TOUR}").replace("Avg global cache cr", "Avg global cash cr");
    assert!(err(&text, &[]).contains("`tour.measured.metric`: unknown metric"));
    let text = format!("{MIN}\n[tour]\norder = 1\nlabel = \"l\"\ndeck = \"d\"\nmeasured = 3\n");
    assert!(err(&text, &[]).contains("`tour.measured`: expected a table, found 3"));
    // A variant may not change the tour.
    let text = format!("{MIN}{TOUR}\n[[variant]]\nname = \"v\"\nset = {{ \"tour.order\" = 2 }}\n");
    assert!(err(&text, &[]).contains("a variant may change only the run configuration"));
}

/// 1-based column of the first occurrence of `needle` on its line.
fn line_of_col(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"));
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[start..at].chars().count() + 1
}

#[test]
fn sessions_that_never_let_time_pass_are_refused() {
    // No think time and free calls and visits: the workload's sessions would
    // loop at one instant (the simulator would never finish the phase).
    let text = MIN.replace(
        "sessions_per_instance = 2\n",
        "sessions_per_instance = 2\nthink_time_ms = 0\n",
    ) + "\n[costs]\nexecute_us = 0\nconsistent_get_us = 0\n";
    let msg = err(&text, &[]);
    let line = line_of(&text, "think_time_ms = 0", 0);
    assert!(
        msg.contains(&format!("t.toml:{line}:")) && msg.contains("workload[0].think_time_ms"),
        "{msg}"
    );
    assert!(msg.contains("without time passing"), "{msg}");
    // Either a think time or a cost lets time pass.
    ok(&text, &["workload.w.think_time_ms=1"]);
    ok(&text, &["costs.consistent_get_us=1"]);
}

const SEQ: &str = r#"
[[sequence]]
name = "s"
cache = "nocache"
start = 10

[[sequence]]
name = "o"
cache = 1000
order = true
"#;

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
fn bad_sequences_point_at_the_key() {
    let text = with_sequences("steps = [{ op = \"nextval\", sequence = \"nope\" }]");
    let msg = err(&text, &[]);
    let line = line_of(&text, "sequence = \"nope\"", 0);
    let col = text
        .lines()
        .nth(line - 1)
        .unwrap()
        .find("\"nope\"")
        .unwrap()
        + 1;
    assert_one(
        &msg,
        line,
        col,
        "workload[0].transaction[0].steps[0].sequence",
        "unknown sequence `nope` (sequences: s, o)",
    );
    let text = with_sequences("steps = [{ op = \"commit\" }]").replace("cache = 1000", "cache = 1");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "cache = 1", 0),
        9,
        "sequence[1].cache",
        "expected an integer in 2..=",
    );
    let text =
        with_sequences("steps = [{ op = \"commit\" }]").replace("order = true", "order = \"yes\"");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "order = ", 0),
        9,
        "sequence[1].order",
        "expected true or false",
    );
}

#[test]
fn a_reverse_key_index_loads_and_a_bad_flag_points_at_the_key() {
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
    let text = text.replace("reverse = true", "reverse = 1");
    let msg = err(&text, &[]);
    assert_one(
        &msg,
        line_of(&text, "reverse = 1", 0),
        11,
        "index[0].reverse",
        "expected true or false, found",
    );
    let text = MIN.replace(
        "table = \"t\"\n\n[[workload]]",
        "table = \"t\"\nreversed = true\n\n[[workload]]",
    );
    let msg = err(&text, &[]);
    assert!(
        msg.contains("`index[0].reversed`: unknown key `reversed`")
            && msg.contains("did you mean `reverse`?"),
        "{msg}"
    );
}

// ---- organisations, partitions, index kinds, counts, tour versus -----------

/// MIN with a table of two organisations, partitioned, its index local and
/// on (key, value); a bitmap-indexed table; steps by organisation and a count.
const ORGS: &str = r#"[scenario]
name = "orgs"
title = "Organisations and bitmaps"

[cluster]
instances = 2

[[table]]
name = "t"
rows = 1000
rows_per_block = 10
orgs = 2
partition_by = "org"

[[index]]
name = "t_kv"
table = "t"
columns = ["key", "val"]
local = true

[[table]]
name = "s"
rows = 1000
rows_per_block = 10
distinct_values = 4

[[index]]
name = "s_pk"
table = "s"

[[index]]
name = "s_bm"
table = "s"
kind = "bitmap"
rows_per_piece = 100

[[workload]]
name = "w"
instances = [1, 2]
sessions_per_instance = 2

[[workload.transaction]]
name = "batch"
steps = [
  { op = "read", table = "t", via = "t_kv", org = 2 },
  { op = "update", table = "t", via = "t_kv", org = 2, rows = 3 },
  { op = "count", table = "s", via = "s_bm", values = { dist = "uniform", range = [1, 4] } },
  { op = "update", table = "s", via = "s_pk" },
  { op = "commit" },
]

[[phase]]
name = "run"
duration_s = 1
"#;

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
fn organisation_and_partition_mistakes() {
    let text = ORGS.replace("orgs = 2\n", "");
    let msg = err(&text, &[]);
    assert!(
        msg.contains("`table[0].partition_by`: partitioning by org needs `orgs` >= 2"),
        "{msg}"
    );
    assert!(
        msg.contains("`index[0].local`: a local index needs a partitioned table"),
        "{msg}"
    );
    let text = ORGS.replace("partition_by = \"org\"", "partition_by = \"region\"");
    assert!(err(&text, &[]).contains("unknown partitioning column `region`"));
    let msg = err(ORGS, &["workload.w.transaction.batch.steps.0.org=3"]);
    assert!(
        msg.contains("`workload[0].transaction[0].steps[0].org`"),
        "{msg}"
    );
    assert!(msg.contains("1..=2"), "{msg}");
    let msg = err(ORGS, &["workload.w.transaction.batch.steps.3.org=1"]);
    assert!(msg.contains("table `s` has one organisation"), "{msg}");
    let text = ORGS.replace(
        "{ op = \"commit\" },",
        "{ op = \"insert\", table = \"t\" },\n  { op = \"commit\" },",
    );
    let msg = err(&text, &[]);
    assert!(
        msg.contains("inserts into `t` are not modelled: it is partitioned"),
        "{msg}"
    );
    let msg = err(ORGS, &["index.t_kv.columns=[\"val\"]"]);
    assert!(
        msg.contains("expected [\"key\"] or [\"key\", \"val\"]"),
        "{msg}"
    );
}

#[test]
fn bitmap_mistakes() {
    let text = ORGS.replace("distinct_values = 4\n", "");
    let msg = err(&text, &[]);
    assert!(
        msg.contains("a bitmap index is on the value column: give table `s` `distinct_values`"),
        "{msg}"
    );
    let msg = err(ORGS, &["workload.w.transaction.batch.steps.3.via=\"s_bm\""]);
    assert!(
        msg.contains("`s_bm` is a bitmap index: it answers `count` steps"),
        "{msg}"
    );
    let msg = err(ORGS, &["workload.w.transaction.batch.steps.2.via=\"s_pk\""]);
    assert!(
        msg.contains("a count goes through a bitmap index on `s` (bitmap indexes: s_bm)"),
        "{msg}"
    );
    let msg = err(
        ORGS,
        &["workload.w.transaction.batch.steps.2.values.range=[1, 9]"],
    );
    assert!(msg.contains("values go up to 4 on `s`"), "{msg}");
    let msg = err(ORGS, &["workload.w.transaction.batch.steps.3.rows=2"]);
    assert!(
        msg.contains(
            "a transaction updates 2 rows of `s`, which has a bitmap index: one row per transaction"
        ),
        "{msg}"
    );
    let text = ORGS.replace(
        "{ op = \"commit\" },",
        "{ op = \"insert\", table = \"s\" },\n  { op = \"commit\" },",
    );
    assert!(
        err(&text, &[])
            .contains("inserts into `s` are not modelled: it is indexed by a bitmap index")
    );
    let msg = err(ORGS, &["index.s_pk.rows_per_piece=5"]);
    assert!(
        msg.contains("`rows_per_piece` applies only to kind = \"bitmap\""),
        "{msg}"
    );
    let msg = err(ORGS, &["index.s_bm.kind=\"hash\""]);
    assert!(msg.contains("unknown index kind `hash`"), "{msg}");
}

#[test]
fn tour_versus_figures_default_to_the_measured_one() {
    let text = format!(
        "{MIN}{VARIANTS}\n[tour]\norder = 0\nlabel = \"l\"\ndeck = \"d\"\nmeasured = {{ metric = \"waits:gc cr block congested\", phase = \"starved\", instance = 1, variant = \"ts-lms\" }}\nversus = [{{ variant = \"rt-lms\" }}, {{ phase = \"baseline\", instance = \"all\" }}]\n"
    );
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
    let msg = err(
        &text.replace("variant = \"rt-lms\"", "variant = \"nope\""),
        &[],
    );
    assert!(
        msg.contains("`tour.versus[0].variant`: unknown variant `nope`"),
        "{msg}"
    );
    let msg = err(
        &text.replace("phase = \"baseline\"", "phase = \"later\""),
        &[],
    );
    assert!(
        msg.contains("`tour.versus[1].phase`: unknown phase `later`"),
        "{msg}"
    );
}
