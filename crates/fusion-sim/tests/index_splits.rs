//! Inserts from every instance into one sequence-keyed index: all of them
//! land on the index's right-hand leaf, which several instances then split at
//! once. Splits of one index are serialized by its split enqueue; without it
//! the splitting descents took each other's blocks away for ever (a livelock:
//! hundreds of thousands of current-block transfers and almost no inserts).
//!
//! On 2 and 3 instances the run must
//! - make steady progress: rows inserted in each of three equal phases within
//!   a factor of two of each other, and far above zero (the livelock managed
//!   about 20 in the first phase and none after);
//! - move a bounded number of blocks per insert;
//! - split leaves and branches, and wait on `enq: TX - index contention`;
//! - leave a valid B-tree holding every committed key exactly once (the
//!   simulator's index check), with no other checker violation.

use fusion_core::config::{IndexDef, NS_PER_MS, Params, SequenceDef, Step, TableDef};
use fusion_core::stats::{Stat, Wait};
use fusion_scenario::Scenario;
use fusion_sim::{SimOptions, VariantOutcome, run_variant};
use fusion_testkit::{ScenarioBuilder, btree, phase, table, txn, workload};

const PHASE_MS: u64 = 400;

fn scenario(instances: u8, reverse: bool) -> Scenario {
    let insert = txn(
        "insert-20",
        1,
        vec![
            Step::InsertSeq {
                table: 0,
                rows: 20,
                sequence: 0,
            },
            Step::Commit,
        ],
    );
    ScenarioBuilder::new(instances)
        .seed(11)
        .params(Params {
            cpu_count: 2,
            db_cache_size: 2048 * 8192,
            ..Params::default()
        })
        .table(TableDef {
            free_blocks_per_instance: 2_000,
            ..table("t", 1, 20)
        })
        .index(IndexDef {
            free_blocks_per_instance: 2_000,
            reverse,
            ..btree("t_pk", 0, 16, 8)
        })
        // ORDER: consecutive values go to different instances, the worst case
        // for the right-hand leaf.
        .sequence(SequenceDef {
            name: "s".into(),
            cache: 100,
            order: true,
            start: 10,
            increment: 1,
        })
        .workload(workload("load", instances, 2, 0, vec![insert]))
        .phase(phase("p1", PHASE_MS * NS_PER_MS))
        .phase(phase("p2", PHASE_MS * NS_PER_MS))
        .phase(phase("p3", PHASE_MS * NS_PER_MS))
        .build()
}

fn run(instances: u8, reverse: bool) -> VariantOutcome {
    run_variant(
        "splits",
        &scenario(instances, reverse),
        &SimOptions::checked(),
    )
}

fn sum(o: &VariantOutcome, phase: usize, stat: Stat) -> u64 {
    o.result.phases[phase]
        .instances
        .iter()
        .map(|i| i.stats.get(stat))
        .sum()
}

fn assert_steady_and_valid(instances: u8, reverse: bool) {
    let o = run(instances, reverse);
    let what = format!("{instances} instances, reverse {reverse}");
    assert!(o.errors.is_empty(), "{what}: {:?}", o.errors);
    let rows: Vec<u64> = (0..3).map(|p| sum(&o, p, Stat::RowsInserted)).collect();
    let (lo, hi) = (rows.iter().min().copied(), rows.iter().max().copied());
    let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(0));
    let total: u64 = rows.iter().sum();
    let moved: u64 = (0..3)
        .map(|p| sum(&o, p, Stat::GcCurrentBlocksReceived) + sum(&o, p, Stat::GcCrBlocksReceived))
        .sum();
    let leaf: u64 = (0..3).map(|p| sum(&o, p, Stat::LeafNodeSplits)).sum();
    let branch: u64 = (0..3).map(|p| sum(&o, p, Stat::BranchNodeSplits)).sum();
    assert!(
        lo >= 200,
        "{what}: too few rows inserted per phase: {rows:?}"
    );
    // A reverse key index spreads its inserts better as it grows: its rate
    // rises from phase to phase, so only the right-hand case must be flat.
    assert!(
        reverse || 2 * lo >= hi,
        "{what}: progress not proportional to time: {rows:?} per {PHASE_MS} ms phase"
    );
    assert!(
        moved <= 6 * total,
        "{what}: {moved} blocks received for {total} inserts"
    );
    assert!(
        leaf * 16 >= total / 2 && branch > 0,
        "{what}: {leaf} leaf and {branch} branch splits for {total} inserts"
    );
    let space: u64 = (0..3).map(|p| sum(&o, p, Stat::SpaceErrors)).sum();
    assert_eq!(space, 0, "{what}: the index ran out of blocks");
    let check = o.check.as_ref().expect("checked run");
    assert!(
        check.violations.is_empty(),
        "{what}: {:?}",
        check.violations
    );
    assert!(
        check.index_entries_checked > total,
        "{what}: the index check walked {} entries for {total} inserts",
        check.index_entries_checked
    );
    if !reverse {
        // The right-hand leaf is split by one instance while the others queue.
        let waits: u64 = o.result.phases[..]
            .iter()
            .flat_map(|p| p.instances.iter())
            .map(|i| i.stats.event(Wait::EnqTxIndexContention).waits)
            .sum();
        assert!(waits > 0, "{what}: nobody waited for a split");
    }
}

#[test]
fn two_instances_splitting_the_right_hand_leaf_make_steady_progress() {
    assert_steady_and_valid(2, false);
}

#[test]
fn three_instances_splitting_the_right_hand_leaf_make_steady_progress() {
    assert_steady_and_valid(3, false);
}

#[test]
fn a_reverse_key_index_stays_valid_under_inserts_from_three_instances() {
    assert_steady_and_valid(3, true);
}
