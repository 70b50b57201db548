//! The redo the store keeps is enough to rebuild every block: an OLTP
//! workload (updates through an index on key and value, inserts with their
//! index entries and splits, bitmap updates) on three instances, then, for
//! every block, the store's image rolled forward with every instance's kept
//! redo (merged by SCN) is exactly the newest image in the cluster. And a
//! lower `fast_start_mttr_target` leaves less redo after the checkpoints and
//! writes more blocks.

use fusion_core::block::Block;
use fusion_core::config::{
    Access, IndexDef, IndexKind, KeyDist, KeySpec, NS_PER_MS, Params, Step, TableDef, WorkloadSpec,
};
use fusion_core::instance::{BufState, Command};
use fusion_core::msg::RedoRecord;
use fusion_core::recovery::roll_forward;
use fusion_core::stats::Stat;
use fusion_core::types::BlockAddr;
use fusion_scenario::Scenario;
use fusion_sim::{Sim, SimOptions};
use fusion_testkit::{ScenarioBuilder, btree, keys, phase, table, txn, update_by_index, workload};

const INSTANCES: u8 = 3;

fn scenario(params: Params, bitmap: bool, sessions: u32) -> Scenario {
    let mut steps = vec![
        txn(
            "update",
            4,
            vec![update_by_index(KeyDist::Uniform, 2), Step::Commit],
        ),
        txn(
            "insert",
            2,
            vec![Step::Insert { table: 0, rows: 2 }, Step::Commit],
        ),
    ];
    let mut b = ScenarioBuilder::new(INSTANCES)
        .seed(5)
        .params(params)
        .table(TableDef {
            free_blocks_per_instance: 400,
            ..table("t", 3_000, 20)
        })
        // On key and value: an update changes its entry too.
        .index(IndexDef {
            free_blocks_per_instance: 400,
            includes_value: true,
            ..btree("t_kv", 0, 24, 12)
        });
    if bitmap {
        b = b
            .table(TableDef {
                distinct_values: 4,
                ..table("s", 400, 20)
            })
            .index(btree("s_pk", 1, 32, 32))
            .index(IndexDef {
                kind: IndexKind::Bitmap,
                rows_per_piece: 50,
                entries_per_leaf: 4,
                ..btree("s_bm", 1, 4, 32)
            });
        // One row per transaction of a table with a bitmap index.
        steps.push(txn(
            "bitmap",
            1,
            vec![
                Step::Update {
                    table: 1,
                    access: Access::Index(1),
                    keys: keys(KeyDist::Uniform),
                    rows: 1,
                },
                Step::Commit,
            ],
        ));
    }
    b.workload(workload("oltp", INSTANCES, sessions, NS_PER_MS / 2, steps))
        .phase(phase("run", 2_500 * NS_PER_MS))
        .build()
}

/// Every instance's kept redo, merged by SCN (a stable sort: a thread's
/// records keep their order).
fn merged(sim: &Sim) -> Vec<&RedoRecord> {
    let mut all: Vec<&RedoRecord> = (0..usize::from(INSTANCES))
        .filter_map(|i| sim.redo_thread(i))
        .flat_map(|t| t.records().map(|(_, r)| r))
        .collect();
    all.sort_by_key(|r| r.scn);
    all
}

/// The newest image of `blk`: a current buffer somewhere, else the store's.
fn newest(sim: &Sim, blk: BlockAddr) -> Block {
    let stored = &sim.stored_blocks()[blk.idx()];
    sim.instances()
        .iter()
        .flat_map(|i| i.buffers_of(blk))
        .filter(|b| matches!(b.state(), BufState::Xcur | BufState::Scur))
        .map(|b| &b.image)
        .filter(|img| img.scn > stored.scn)
        .max_by_key(|img| img.scn)
        .unwrap_or(stored)
        .clone()
}

/// For every block, the store's image rolled forward with the kept redo is
/// the newest image; returns the blocks that needed redo and the changes
/// applied. Call it with every change's redo written (a cluster at rest).
fn check_roll_forward(sim: &Sim) -> (u32, u64) {
    let redo = merged(sim);
    let (mut rolled, mut changes) = (0, 0u64);
    for blk in (0..sim.stored_blocks().len() as u32).map(BlockAddr) {
        let want = newest(sim, blk);
        let start = sim.stored_blocks()[blk.idx()].clone();
        let (got, applied) =
            roll_forward(start, redo.iter().copied()).unwrap_or_else(|e| panic!("{blk}: {e}"));
        assert_eq!(got.scn, want.scn, "{blk}: SCN after roll-forward");
        assert_eq!(got.body, want.body, "{blk}: rows, entries, pieces");
        if applied > 0 {
            rolled += 1;
            changes += u64::from(applied);
        }
    }
    (rolled, changes)
}

#[test]
fn the_store_image_rolled_forward_with_the_kept_redo_is_the_newest_image() {
    let params = Params {
        cpu_count: 2,
        ..Params::default()
    };
    let s = scenario(params, true, 3);
    let mut sim = Sim::new(&s, &SimOptions::default());
    sim.keep_redo();
    sim.run_until(2_500 * NS_PER_MS);
    sim.quiesce().expect("the cluster comes to rest");
    assert_eq!(sim.stopped(), None);

    let stats: Vec<_> = (0..usize::from(INSTANCES))
        .map(|i| sim.stats_of(i))
        .collect();
    let total = |stat: Stat| stats.iter().map(|s| s.get(stat)).sum::<u64>();
    assert!(total(Stat::RowsUpdated) > 1_000, "updates ran");
    assert!(total(Stat::RowsInserted) > 200, "inserts ran");
    assert!(
        total(Stat::BitmapPiecesChanged) > 50,
        "bitmap pieces changed"
    );
    assert!(total(Stat::LeafNodeSplits) > 0, "leaves split");
    assert!(total(Stat::GcsPastImagesDiscarded) > 0, "past images");
    assert!(total(Stat::PhysicalWrites) > 0, "DBWR wrote");

    // At rest with many blocks dirty: not a vacuous check.
    let (rolled, changes) = check_roll_forward(&sim);
    assert!(
        rolled > 20 && changes > 100,
        "{rolled} blocks rolled forward with {changes} changes"
    );

    // Idle, DBWR writes what is left and the checkpoints move: most of
    // the redo is gone from the store, and what is kept still suffices.
    sim.run_until(sim.now() + 3_000 * NS_PER_MS);
    // The next redo writes carry the checkpoints to the store.
    for i in 0..usize::from(INSTANCES) {
        sim.command(i, Command::EnableWorkloads(None));
    }
    sim.run_until(sim.now() + 50 * NS_PER_MS);
    sim.quiesce().expect("the cluster comes to rest");
    for i in 0..usize::from(INSTANCES) {
        let t = sim.redo_thread(i).expect("a thread per instance");
        assert!(
            t.records().any(|(_, r)| r.written),
            "inst{}: block written records",
            i + 1
        );
    }
    let kept: u64 = (0..usize::from(INSTANCES))
        .filter_map(|i| sim.redo_thread(i))
        .map(|t| t.kept_bytes())
        .sum();
    let all: u64 = (0..usize::from(INSTANCES))
        .filter_map(|i| sim.redo_thread(i))
        .map(|t| t.end())
        .sum();
    assert!(kept < all / 2, "{kept} of {all} redo bytes kept");
    check_roll_forward(&sim);
}

/// Average redo after each instance's checkpoint, sampled every 100 ms
/// from 3 s to 6 s, and the blocks written. Each instance updates its own
/// third of the rows, so blocks stay where they are dirtied (a block that
/// moves keeps its past images' checkpoints back; see checkpoint.rs).
fn behind_and_writes(target: u32) -> (u64, u64) {
    let params = Params {
        cpu_count: 8,
        fast_start_mttr_target: target,
        ..Params::default()
    };
    let mut b = ScenarioBuilder::new(INSTANCES)
        .seed(5)
        .params(params)
        .table(table("t", 3_000, 20))
        .index(btree("t_pk", 0, 24, 12));
    for i in 0..INSTANCES {
        let lo = 1 + u64::from(i) * 1_000;
        let update = Step::Update {
            table: 0,
            access: Access::Index(0),
            keys: KeySpec {
                range: Some((lo, lo + 999)),
                ..keys(KeyDist::Uniform)
            },
            rows: 2,
        };
        b = b.workload(WorkloadSpec {
            instances: vec![i + 1],
            ..workload(
                &format!("own{i}"),
                1,
                12,
                NS_PER_MS / 2,
                vec![txn("update", 1, vec![update, Step::Commit])],
            )
        });
    }
    let s = b.phase(phase("run", 6_000 * NS_PER_MS)).build();
    let mut sim = Sim::new(&s, &SimOptions::default());
    sim.keep_redo();
    sim.run_until(3_000 * NS_PER_MS);
    let (mut sum, mut samples) = (0u64, 0u64);
    for step in 1..=30 {
        sim.run_until((3_000 + step * 100) * NS_PER_MS);
        for i in 0..usize::from(INSTANCES) {
            let t = sim.redo_thread(i).expect("a thread");
            sum += t.end() - t.checkpoint();
            samples += 1;
        }
    }
    assert_eq!(sim.stopped(), None);
    let writes = (0..usize::from(INSTANCES))
        .map(|i| sim.stats_of(i).get(Stat::PhysicalWrites))
        .sum();
    (sum / samples, writes)
}

#[test]
fn a_lower_mttr_target_leaves_less_redo_to_apply_and_writes_more() {
    let (unset, unset_writes) = behind_and_writes(0);
    let (two, two_writes) = behind_and_writes(2);
    let (one, one_writes) = behind_and_writes(1);
    // The target bounds the redo behind at a MiB per second of target,
    // plus what piles up until DBWR's next passes (a block whose last redo
    // is still in memory waits for the next pass).
    assert!(unset > 4 << 20, "unset: {unset} bytes behind");
    assert!(
        one < two && two < unset && 2 * one < unset && one < 3 << 20,
        "bytes behind: unset {unset}, target 2 s {two}, 1 s {one}"
    );
    assert!(
        one_writes > two_writes && two_writes > unset_writes,
        "blocks written: unset {unset_writes}, target 2 s {two_writes}, 1 s {one_writes}"
    );
}
