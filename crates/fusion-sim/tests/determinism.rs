//! The simulator is deterministic: the same scenario and seed give the same
//! per-phase statistics on every instance and the same event count, bit for
//! bit; another seed gives another run. Scenarios are built directly as
//! `fusion_scenario::Scenario` values (no file format involved) and use every
//! source of randomness: key choice, network jitter, disk-latency jitter and
//! CPU hogs.

use fusion_core::config::{
    IndexDef, KeyDist, NS_PER_MS, NS_PER_US, ParamValue, Params, Step, TableDef,
};
use fusion_scenario::{Device, Fault, LinkTarget, NetworkModel, Phase, Scenario};
use fusion_sim::{SimOptions, VariantOutcome, run_variant};
use fusion_testkit::{
    ScenarioBuilder, btree, params, phase, read_by_index, table, txn, update_by_index, workload,
};

fn scenario(instances: u8, seed: u64) -> Scenario {
    let hot = KeyDist::Hot {
        fraction: 0.02,
        share: 0.7,
    };
    let transactions = vec![
        txn(
            "lookup",
            3,
            vec![
                read_by_index(KeyDist::Uniform, 3),
                read_by_index(KeyDist::Sequential, 1),
                Step::Commit,
            ],
        ),
        txn(
            "update",
            2,
            vec![
                read_by_index(hot.clone(), 1),
                update_by_index(hot, 2),
                Step::Think {
                    time: 200 * NS_PER_US,
                },
                Step::Commit,
            ],
        ),
    ];
    let faults = Phase {
        parameters: vec![(2, "_os_sched_high_priority".into(), ParamValue::Int(0))],
        faults: vec![
            Fault::StressCpu {
                instance: 2,
                workers: 3,
                load_pct: 70,
            },
            Fault::DiskLatency {
                instance: 1,
                device: Device::Redo,
                latency: 5 * NS_PER_MS,
                jitter: 3 * NS_PER_MS,
            },
            Fault::NetworkLatency {
                target: LinkTarget::All,
                latency: 100 * NS_PER_US,
                jitter: 80 * NS_PER_US,
            },
        ],
        ..phase("faults", 400 * NS_PER_MS)
    };
    ScenarioBuilder::new(instances)
        .seed(seed)
        .params(Params {
            gcs_server_processes: 1,
            ..params(2, 200)
        })
        .network(NetworkModel {
            jitter: 20_000,
            ..NetworkModel::default()
        })
        .table(TableDef {
            free_blocks_per_instance: 4,
            ..table("t", 3_000, 30)
        })
        .index(IndexDef {
            free_blocks_per_instance: 4,
            ..btree("t_pk", 0, 32, 16)
        })
        .workload(workload("oltp", instances, 4, 2 * NS_PER_MS, transactions))
        .phase(phase("warm", 250 * NS_PER_MS))
        .phase(faults)
        .phase(phase("after", 200 * NS_PER_MS))
        .build()
}

fn run(s: &Scenario, seed: Option<u64>, check: bool) -> VariantOutcome {
    run_variant(
        "det",
        s,
        &SimOptions {
            seed,
            check,
            ..SimOptions::default()
        },
    )
}

/// Every figure of two runs that must agree, with a message naming the first difference.
fn assert_same(a: &VariantOutcome, b: &VariantOutcome, what: &str) {
    assert_eq!(a.events(), b.events(), "{what}: event counts differ");
    assert_eq!(
        a.simulated_ns(),
        b.simulated_ns(),
        "{what}: simulated time differs"
    );
    assert_eq!(a.transfers, b.transfers, "{what}: block transfers differ");
    assert_eq!(a.errors, b.errors, "{what}: reported errors differ");
    assert_eq!(
        a.result.phases.len(),
        b.result.phases.len(),
        "{what}: phase counts differ"
    );
    for (pa, pb) in a.result.phases.iter().zip(&b.result.phases) {
        assert_eq!(pa.name, pb.name);
        assert_eq!(
            pa.start_ns, pb.start_ns,
            "{what}: phase {} starts at different times",
            pa.name
        );
        assert_eq!(pa.instances.len(), pb.instances.len());
        for (ia, ib) in pa.instances.iter().zip(&pb.instances) {
            assert_eq!(ia.id, ib.id);
            assert!(
                ia.stats == ib.stats,
                "{what}: phase {} inst{}: statistics differ",
                pa.name,
                ia.id
            );
        }
    }
}

/// The runs did something, so equality is not trivially true.
fn assert_busy(o: &VariantOutcome) {
    assert!(o.events() > 10_000, "only {} events", o.events());
    assert!(o.transfers > 0, "no block was shipped");
    for p in &o.result.phases {
        let total = p.cluster_stats();
        assert!(
            total.get(fusion_core::stats::Stat::UserCommits) > 0,
            "phase {} committed nothing",
            p.name
        );
    }
}

#[test]
fn same_scenario_and_seed_give_identical_runs() {
    for instances in [2u8, 3] {
        let s = scenario(instances, 11);
        let a = run(&s, None, false);
        let b = run(&s, None, false);
        assert_busy(&a);
        assert_same(&a, &b, &format!("{instances} instances, seed 11"));
    }
}

#[test]
fn seed_option_overrides_the_scenario_seed() {
    let a = run(&scenario(3, 5), Some(77), false);
    let b = run(&scenario(3, 999), Some(77), false);
    assert_same(&a, &b, "--seed 77 over two scenario seeds");
}

#[test]
fn another_seed_gives_another_run() {
    let s = scenario(3, 11);
    let a = run(&s, Some(1), false);
    let b = run(&s, Some(2), false);
    assert_busy(&a);
    assert_busy(&b);
    assert_ne!(
        a.events(),
        b.events(),
        "seeds 1 and 2 processed the same number of events"
    );
    for (pa, pb) in a.result.phases.iter().zip(&b.result.phases) {
        let differs = pa
            .instances
            .iter()
            .zip(&pb.instances)
            .any(|(x, y)| x.stats != y.stats);
        assert!(
            differs,
            "phase {}: seeds 1 and 2 gave identical statistics on every instance",
            pa.name
        );
    }
}

/// Recording history for the checkers must not change what the model does.
#[test]
fn checking_does_not_perturb_the_run() {
    let s = scenario(2, 3);
    let plain = run(&s, None, false);
    let checked = run(&s, None, true);
    assert!(checked.check.is_some());
    assert!(plain.check.is_none());
    // The checker's own findings are reported as errors of the checked run;
    // compare the model's own figures only.
    let model_errors = |o: &VariantOutcome| -> Vec<String> {
        let v = o
            .check
            .as_ref()
            .map(|c| c.violations.clone())
            .unwrap_or_default();
        o.errors
            .iter()
            .filter(|e| !v.contains(e))
            .cloned()
            .collect()
    };
    assert_eq!(model_errors(&plain), model_errors(&checked));
    let strip = |o: &VariantOutcome| VariantOutcome {
        errors: vec![],
        check: None,
        ..o.clone()
    };
    assert_same(
        &strip(&plain),
        &strip(&checked),
        "with and without the checkers",
    );
}

/// Counting events by kind (`bench --events`) does not change the run, and
/// every event of the queue is one of the kinds counted.
#[test]
fn counting_events_by_kind_does_not_perturb_the_run() {
    let s = scenario(3, 17);
    let plain = run(&s, None, false);
    let (counted, kinds) = fusion_sim::run_variant_counted("v", &s, &SimOptions::default());
    assert_same(&plain, &counted, "counted vs plain");
    assert_eq!(kinds.total(), counted.events(), "{kinds:?}");
    let t = &kinds.tally;
    assert!(t.wakes > 0 && t.ios > 0, "{t:?}");
    // Every shipped block arrived as a `Ship` message.
    assert_eq!(
        t.messages.get("Ship").copied().unwrap_or(0),
        counted.transfers
    );
    assert!(t.wakes_idle < t.wakes, "{t:?}");
    assert!(t.steps.get("foreground").copied().unwrap_or(0) > 0, "{t:?}");
}
