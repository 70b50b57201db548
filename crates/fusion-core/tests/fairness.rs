//! The fairness down-convert (`_fairness_threshold`), observed from outside:
//! an X holder that has served that many CR copies of a block since it last
//! changed it stops building them, holds the block in S instead, and the
//! reader gets the shared current image and rolls it back itself. The
//! holder still writes the block; a later change needs X again.

mod harness;

use fusion_core::block::Block;
use fusion_core::config::{NS_PER_MS, Nanos, Step};
use fusion_core::instance::{BufState, Command, InstanceConfig, Observation};
use fusion_core::msg::{Msg, ShipKind};
use fusion_core::stats::Stat;
use fusion_core::types::{BlockAddr, InstId};
use harness::{Cluster, Latencies, configs, key_mastered_by, read, think_ms, update, workload};

const INST1: InstId = InstId(0);
const INST2: InstId = InstId(1);

/// The table: 40 rows, 10 to a block, all starting at 0.
fn catalog() -> fusion_core::config::Catalog {
    harness::catalog(40, 10)
}

/// Two instances with `_fairness_threshold` set to `threshold`.
fn configs_with(
    threshold: u32,
    workloads: Vec<fusion_core::config::WorkloadSpec>,
) -> Vec<InstanceConfig> {
    let mut configs = configs(2, catalog(), workloads);
    for c in &mut configs {
        c.params.fairness_threshold = threshold;
    }
    configs
}

/// What the `Ship` messages to `to` for `blk` carried: (sent at, kind, pi kept).
fn ships_to(cluster: &Cluster, to: InstId, blk: BlockAddr) -> Vec<(Nanos, ShipKind, bool)> {
    cluster
        .sent()
        .filter_map(|(at, env)| match &env.msg {
            Msg::Ship(s) if env.to == to && s.req.blk == blk => Some((at, s.kind, s.pi_kept)),
            _ => None,
        })
        .collect()
}

fn kinds(ships: &[(Nanos, ShipKind, bool)]) -> Vec<&'static str> {
    ships
        .iter()
        .map(|s| match s.1 {
            ShipKind::Cr { .. } => "cr",
            ShipKind::Raw => "raw",
            ShipKind::Shared => "shared",
            ShipKind::Current => "current",
        })
        .collect()
}

/// The values instance `inst` read for `key`, in order.
fn values_read(cluster: &Cluster, inst: InstId, key: u64) -> Vec<Option<i64>> {
    cluster
        .history
        .iter()
        .filter_map(|(from, o)| match o {
            Observation::Read { key: k, val, .. } if *from == inst && *k == key => Some(*val),
            _ => None,
        })
        .collect()
}

/// `inst`'s current buffer of `blk`: its state and whether it is dirty.
fn current_of(cluster: &Cluster, inst: InstId, blk: BlockAddr) -> Option<(BufState, bool)> {
    cluster.instances[usize::from(inst.0)]
        .buffers_of(blk)
        .find(|b| matches!(b.state(), BufState::Xcur | BufState::Scur))
        .map(|b| (b.state(), b.dirty()))
}

/// inst2 (the block's master) changes a row once; inst1 then reads it
/// `reads` times, each time with a newer snapshot (it commits a change of
/// its own block in between), so each read needs a new CR copy.
fn one_change_then_reads(threshold: u32, reads: u64) -> (Cluster, u64, BlockAddr) {
    let layout = harness::layout(2, &catalog());
    let (key, blk) = key_mastered_by(&layout, INST2);
    let (own, own_blk) = key_mastered_by(&layout, INST1);
    assert_ne!(blk, own_blk);
    let writer = workload("writer", 2, vec![update(key), Step::Commit], 1, 1);
    let reader = workload(
        "reader",
        1,
        vec![think_ms(20), read(key), update(own), Step::Commit],
        reads,
        1,
    );
    let mut cluster = Cluster::new(
        configs_with(threshold, vec![writer, reader]),
        Latencies::default(),
    );
    cluster.run_until_true(2_000 * NS_PER_MS, Cluster::sessions_finished);
    (cluster, key, blk)
}

#[test]
fn after_threshold_cr_copies_the_holder_down_converts_and_ships_the_shared_block() {
    let (cluster, key, blk) = one_change_then_reads(4, 10);

    assert_eq!(values_read(&cluster, INST1, key), vec![Some(1); 10]);
    let ships = ships_to(&cluster, INST1, blk);
    assert_eq!(
        kinds(&ships),
        vec!["cr", "cr", "cr", "cr", "shared"],
        "four CR copies, then the shared current block; the later reads are local"
    );
    let holder = cluster.instances[1].stats();
    assert_eq!(holder.get(Stat::GcCrFairnessDownConverts), 1);
    assert_eq!(
        holder.get(Stat::GcCrFairnessClears),
        0,
        "nothing changed it since"
    );

    // Both hold the block in S; the holder's copy is still dirty: it writes it.
    assert_eq!(
        current_of(&cluster, INST1, blk),
        Some((BufState::Scur, false))
    );
    assert_eq!(
        current_of(&cluster, INST2, blk),
        Some((BufState::Scur, true))
    );
    let (x, s, _) = cluster.instances[1]
        .directory_entry(blk)
        .expect("inst2 masters the block");
    assert_eq!((x, s), (None, vec![INST1, INST2]));
}

#[test]
fn a_threshold_of_zero_never_down_converts() {
    let (cluster, key, blk) = one_change_then_reads(0, 10);

    assert_eq!(values_read(&cluster, INST1, key), vec![Some(1); 10]);
    assert_eq!(kinds(&ships_to(&cluster, INST1, blk)), vec!["cr"; 10]);
    let holder = cluster.instances[1].stats();
    assert_eq!(holder.get(Stat::GcCrFairnessDownConverts), 0);
    assert_eq!(
        current_of(&cluster, INST2, blk),
        Some((BufState::Xcur, true))
    );
}

/// Runs one workload at a time, each for 100 ms: `(instance 1-based,
/// workload)`. Every workload runs its transaction `iterations` times.
fn staged(
    threshold: u32,
    workloads: Vec<fusion_core::config::WorkloadSpec>,
    order: &[&str],
) -> Cluster {
    let mut cluster = Cluster::new(configs_with(threshold, workloads), Latencies::default());
    let mut at = 0;
    for name in order {
        for i in 0..2 {
            cluster.apply(i, Command::EnableWorkloads(Some(vec![name.to_string()])));
        }
        at += 100 * NS_PER_MS;
        cluster.run_until(at);
    }
    cluster.run_until_true(at + 1_000 * NS_PER_MS, Cluster::sessions_finished);
    cluster
}

/// inst1 reads `key` `n` times, each with a newer snapshot (it commits a
/// change of a block of its own in between).
fn reads(name: &str, key: u64, own: u64, n: u64) -> fusion_core::config::WorkloadSpec {
    workload(name, 1, vec![read(key), update(own), Step::Commit], n, 1)
}

#[test]
fn a_change_after_cr_copies_counts_a_fairness_clear() {
    let layout = harness::layout(2, &catalog());
    let (key, blk) = key_mastered_by(&layout, INST2);
    let (own, _) = key_mastered_by(&layout, INST1);
    let change = |name| workload(name, 2, vec![update(key), Step::Commit], 1, 1);
    // Two CR copies between the changes: below the threshold of 4.
    let cluster = staged(
        4,
        vec![
            change("change1"),
            reads("reads", key, own, 2),
            change("change2"),
        ],
        &["change1", "reads", "change2"],
    );

    assert_eq!(values_read(&cluster, INST1, key), vec![Some(1); 2]);
    assert_eq!(kinds(&ships_to(&cluster, INST1, blk)), vec!["cr", "cr"]);
    let holder = cluster.instances[1].stats();
    assert_eq!(holder.get(Stat::GcCrFairnessDownConverts), 0);
    assert_eq!(holder.get(Stat::GcCrFairnessClears), 1);
    assert_eq!(
        current_of(&cluster, INST2, blk),
        Some((BufState::Xcur, true))
    );
}

#[test]
fn after_a_down_convert_a_change_takes_x_back_and_the_counting_starts_again() {
    let layout = harness::layout(2, &catalog());
    let (key, blk) = key_mastered_by(&layout, INST2);
    let (own, _) = key_mastered_by(&layout, INST1);
    let change = |name| workload(name, 2, vec![update(key), Step::Commit], 1, 1);
    let cluster = staged(
        2,
        vec![
            change("change1"),
            reads("reads1", key, own, 4),
            change("change2"),
            reads("reads2", key, own, 4),
        ],
        &["change1", "reads1", "change2", "reads2"],
    );

    let mut expected = vec![Some(1); 4];
    expected.extend([Some(2); 4]);
    assert_eq!(values_read(&cluster, INST1, key), expected);
    // Threshold 2: two CR copies, then the shared block, after each change.
    assert_eq!(
        kinds(&ships_to(&cluster, INST1, blk)),
        vec!["cr", "cr", "shared", "cr", "cr", "shared"]
    );
    let holder = cluster.instances[1].stats();
    assert_eq!(holder.get(Stat::GcCrFairnessDownConverts), 2);
    // The second change found the block in S: it took X back (an upgrade,
    // granted here at the master) after inst1's shared copy was invalidated.
    assert!(
        cluster.sent().any(|(_, env)| env.to == INST1
            && matches!(env.msg, Msg::Invalidate { blk: b, .. } if b == blk))
    );
    assert_eq!(
        current_of(&cluster, INST2, blk),
        Some((BufState::Scur, true))
    );
}

#[test]
fn the_s_holder_that_writes_the_block_ships_it_to_a_changer_and_keeps_a_past_image() {
    let layout = harness::layout(2, &catalog());
    let (key, blk) = key_mastered_by(&layout, INST2);
    let other = key + 1;
    assert_eq!(layout.initial_rowid(0, other).map(|r| r.blk), Some(blk));
    let (own, _) = key_mastered_by(&layout, INST1);
    // Threshold 1: inst1's second read makes inst2 down-convert; then inst1
    // changes another row of the same block, which it holds in S.
    let cluster = staged(
        1,
        vec![
            workload("change", 2, vec![update(key), Step::Commit], 1, 1),
            reads("reads", key, own, 3),
            workload("changer", 1, vec![update(other), Step::Commit], 1, 1),
        ],
        &["change", "reads", "changer"],
    );

    assert_eq!(values_read(&cluster, INST1, key), vec![Some(1); 3]);
    let ships = ships_to(&cluster, INST1, blk);
    assert_eq!(kinds(&ships), vec!["cr", "shared", "current"]);
    assert!(ships[2].2, "inst2's dirty copy stays as a past image");
    // Its copy was never just dropped (invalidated).
    assert!(
        !cluster.sent().any(|(_, env)| env.to == INST2
            && matches!(env.msg, Msg::Invalidate { blk: b, .. } if b == blk))
    );
    assert_eq!(
        current_of(&cluster, INST1, blk),
        Some((BufState::Xcur, true))
    );
    let pi: Vec<&Block> = cluster.instances[1]
        .buffers_of(blk)
        .filter(|b| b.state() == BufState::Pi)
        .map(|b| &b.image)
        .collect();
    assert_eq!(pi.len(), 1, "one past image at inst2");
    let slot = layout.initial_rowid(0, key).expect("an initial row").slot;
    assert_eq!(pi[0].row(slot).map(|r| r.val), Some(1));
}
