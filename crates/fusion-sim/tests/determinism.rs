//! The simulator is deterministic: the same scenario and seed give the same
//! per-phase statistics on every instance and the same event count, bit for
//! bit; another seed gives another run. Scenarios are built directly as
//! `fusion_scenario::Scenario` values (no file format involved) and use every
//! source of randomness: key choice, network jitter, disk-latency jitter and
//! CPU hogs.

use fusion_core::config::{
    Access, Catalog, Costs, IndexDef, IndexKind, KeyDist, KeySpec, NS_PER_MS, NS_PER_US,
    ParamValue, Params, Step, TableDef, TxnTemplate, WorkloadSpec,
};
use fusion_scenario::{Device, Fault, LinkTarget, NetworkModel, Phase, Scenario, StorageModel};
use fusion_sim::{SimOptions, VariantOutcome, run_variant};

fn scenario(instances: u8, seed: u64) -> Scenario {
    let params = Params {
        cpu_count: 2,
        gcs_server_processes: 1,
        db_cache_size: 200 * 8192,
        ..Params::default()
    };
    let hot = KeySpec {
        dist: KeyDist::Hot {
            fraction: 0.02,
            share: 0.7,
        },
        range: None,
        org: None,
    };
    let uniform = KeySpec {
        dist: KeyDist::Uniform,
        range: None,
        org: None,
    };
    let seq = KeySpec {
        dist: KeyDist::Sequential,
        range: None,
        org: None,
    };
    let workload = WorkloadSpec {
        name: "oltp".into(),
        instances: (1..=instances).collect(),
        sessions_per_instance: 4,
        think_time: 2 * NS_PER_MS,
        transactions: vec![
            TxnTemplate {
                name: "lookup".into(),
                weight: 3,
                steps: vec![
                    Step::Read {
                        table: 0,
                        access: Access::Index(0),
                        keys: uniform.clone(),
                        rows: 3,
                    },
                    Step::Read {
                        table: 0,
                        access: Access::Index(0),
                        keys: seq,
                        rows: 1,
                    },
                    Step::Commit,
                ],
            },
            TxnTemplate {
                name: "update".into(),
                weight: 2,
                steps: vec![
                    Step::Read {
                        table: 0,
                        access: Access::Index(0),
                        keys: hot.clone(),
                        rows: 1,
                    },
                    Step::Update {
                        table: 0,
                        access: Access::Index(0),
                        keys: hot,
                        rows: 2,
                    },
                    Step::Think {
                        time: 200 * NS_PER_US,
                    },
                    Step::Commit,
                ],
            },
        ],
        iterations: None,
    };
    Scenario {
        seed,
        instances: vec![params; instances as usize],
        costs: Costs::default(),
        network: NetworkModel {
            jitter: 20_000,
            ..NetworkModel::default()
        },
        storage: StorageModel::default(),
        catalog: Catalog {
            sequences: Vec::new(),
            tables: vec![TableDef {
                name: "t".into(),
                rows: 3_000,
                rows_per_block: 30,
                free_blocks_per_instance: 4,
                orgs: 1,
                partition_by_org: false,
                distinct_values: 0,
            }],
            indexes: vec![IndexDef {
                name: "t_pk".into(),
                table: 0,
                entries_per_leaf: 32,
                entries_per_branch: 16,
                free_blocks_per_instance: 4,
                reverse: false,
                kind: IndexKind::BTree,
                local: false,
                includes_value: false,
                rows_per_piece: 1,
            }],
        },
        workloads: vec![workload],
        phases: vec![
            Phase {
                name: "warm".into(),
                duration: 250 * NS_PER_MS,
                parameters: vec![],
                faults: vec![],
                workloads: None,
            },
            Phase {
                name: "faults".into(),
                duration: 400 * NS_PER_MS,
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
                workloads: None,
            },
            Phase {
                name: "after".into(),
                duration: 200 * NS_PER_MS,
                parameters: vec![],
                faults: vec![],
                workloads: None,
            },
        ],
    }
}

fn run(s: &Scenario, seed: Option<u64>, check: bool) -> VariantOutcome {
    run_variant("det", s, &SimOptions { seed, check })
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
