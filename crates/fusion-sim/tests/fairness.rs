//! The fairness down-convert (`_fairness_threshold`) under the simulator's
//! checkers: one instance changes rows all over a table (so it commits
//! often but changes each block only now and then), the other reads a few hot
//! blocks all the time, each time at a newer snapshot (its SCN follows the
//! changer's commits). With the default threshold (4) the changer
//! down-converts blocks it keeps serving CR copies of, the reader holds them
//! in S and reads them locally; with 0 it never does. Either way every read
//! is consistent, no write is lost and the cluster stays coherent.

use fusion_core::config::{KeyDist, NS_PER_MS, Params, Step, WorkloadSpec};
use fusion_core::stats::{Stat, Stats};
use fusion_sim::{SimOptions, VariantOutcome, run_variant};
use fusion_testkit::{
    ScenarioBuilder, btree, phase, quiet_phase, read_by_index, table, txn, update_by_index,
};

fn hot() -> KeyDist {
    KeyDist::Hot {
        fraction: 0.02,
        share: 0.9,
    }
}

/// A workload on one instance (1-based).
fn on(inst: u8, name: &str, sessions: u32, think_ms: u64, steps: Vec<Step>) -> WorkloadSpec {
    WorkloadSpec {
        name: name.into(),
        instances: vec![inst],
        sessions_per_instance: sessions,
        think_time: think_ms * NS_PER_MS,
        transactions: vec![txn(name, 1, steps)],
        iterations: None,
        row_locks: Default::default(),
    }
}

fn run(threshold: u32) -> VariantOutcome {
    let scenario = ScenarioBuilder::new(2)
        .seed(3)
        .params(Params {
            fairness_threshold: threshold,
            ..Params::default()
        })
        .table(table("t", 2_000, 20))
        .index(btree("t_pk", 0, 64, 64))
        .workload(on(
            1,
            "changer",
            1,
            5,
            vec![update_by_index(KeyDist::Uniform, 1), Step::Commit],
        ))
        .workload(on(
            2,
            "reader",
            4,
            1,
            vec![read_by_index(hot(), 2), Step::Commit],
        ))
        .phase(phase("run", 800 * NS_PER_MS))
        .phase(quiet_phase("quiesce", 200 * NS_PER_MS))
        .build();
    run_variant("fairness", &scenario, &SimOptions::checked())
}

/// The counters of instance `id` (1-based) over every phase.
fn stats_of(o: &VariantOutcome, id: u8) -> Stats {
    let mut total = Stats::default();
    for p in &o.result.phases {
        if let Some(i) = p.instance(id) {
            total.merge(&i.stats);
        }
    }
    total
}

fn assert_checked(o: &VariantOutcome) {
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    let check = o.check.as_ref().expect("a checked run");
    assert!(check.violations.is_empty(), "{:?}", check.violations);
    assert!(
        check.reads_checked > 1_000 && check.commits > 10,
        "{check:?}"
    );
}

#[test]
fn the_changer_down_converts_hot_blocks_and_every_read_stays_consistent() {
    let fair = run(4);
    let never = run(0);
    assert_checked(&fair);
    assert_checked(&never);

    let (changer, reader) = (stats_of(&fair, 1), stats_of(&fair, 2));
    assert!(changer.get(Stat::GcCrFairnessDownConverts) > 0);
    assert!(changer.get(Stat::GcCrFairnessClears) > 0);
    assert_eq!(
        reader.get(Stat::GcCrFairnessDownConverts),
        0,
        "it changes nothing"
    );

    assert_eq!(stats_of(&never, 1).get(Stat::GcCrFairnessDownConverts), 0);
    // Reads of blocks held in S need no transfer: the reader receives fewer.
    let received = |o: &VariantOutcome| stats_of(o, 2).get(Stat::GcCrBlocksReceived);
    assert!(
        received(&fair) < received(&never),
        "{} cr blocks received with the down-convert, {} without",
        received(&fair),
        received(&never)
    );
}
