//! Behaviour of the global cache between instances, observed from outside:
//! what crossed the wire, what became durable when, what sessions read and
//! the waits they recorded. The instances run on the harness's virtual
//! clock with a fixed-latency network and store (see `harness`).

mod harness;

use fusion_core::config::{NS_PER_MS, Nanos, Step};
use fusion_core::instance::{Command, Observation};
use fusion_core::msg::{Envelope, Msg, ReqKind, ShipKind};
use fusion_core::stats::{Stat, Wait};
use fusion_core::types::Scn;
use fusion_core::types::{BlockAddr, InstId};
use harness::{Cluster, Latencies, configs, key_mastered_by, read, think_ms, update, workload};

const INST1: InstId = InstId(0);
const INST2: InstId = InstId(1);
const INST3: InstId = InstId(2);

/// The table of the tests: 40 rows, 10 to a block, all starting at 0.
fn catalog() -> fusion_core::config::Catalog {
    harness::catalog(40, 10)
}

/// The blocks `Ship` messages carried to `to` for `blk`: (sent at, kind, hops, image).
fn ships_to(
    cluster: &Cluster,
    to: InstId,
    blk: BlockAddr,
) -> Vec<(Nanos, ShipKind, u8, fusion_core::block::Block)> {
    cluster
        .sent()
        .filter_map(|(at, env)| match &env.msg {
            Msg::Ship(s) if env.to == to && s.req.blk == blk => {
                Some((at, s.kind, s.hops, s.block.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The path of `requester`'s requests for `blk` as (from, to, message).
fn routed(
    cluster: &Cluster,
    requester: InstId,
    blk: BlockAddr,
) -> Vec<(InstId, InstId, &'static str)> {
    cluster
        .sent()
        .filter_map(|(_, env)| {
            let (req, what) = match &env.msg {
                Msg::Request(req) => (req, "request"),
                Msg::Forward { req, .. } => (req, "forward"),
                Msg::Ship(s) => (&s.req, "ship"),
                _ => return None,
            };
            (req.blk == blk && req.requester == requester).then_some((env.from, env.to, what))
        })
        .collect()
}

/// The values instance `inst` read for `key`, in order, with their snapshots.
fn reads_of(cluster: &Cluster, inst: InstId, key: u64) -> Vec<(u64, Option<i64>)> {
    cluster
        .history
        .iter()
        .filter_map(|(from, o)| match o {
            Observation::Read {
                snapshot,
                key: k,
                val,
                ..
            } if *from == inst && *k == key => Some((snapshot.0, *val)),
            _ => None,
        })
        .collect()
}

/// The commit SCNs instance `inst` recorded.
fn commits_of(cluster: &Cluster, inst: InstId) -> Vec<u64> {
    cluster
        .history
        .iter()
        .filter_map(|(from, o)| match o {
            Observation::Commit { scn, .. } if *from == inst => Some(scn.0),
            _ => None,
        })
        .collect()
}

#[test]
fn a_cr_read_of_a_block_held_dirty_elsewhere_is_a_copy_rolled_back_with_its_undo() {
    let layout = harness::layout(2, &catalog());
    let (key, blk) = key_mastered_by(&layout, INST2);
    // inst2 changes the row and commits only at about 300 ms; inst1 reads it
    // at about 100 ms (before the commit) and again at about 600 ms (after).
    let writer = workload(
        "writer",
        2,
        vec![update(key), think_ms(300), Step::Commit],
        1,
        1,
    );
    let reader = workload(
        "reader",
        1,
        vec![
            think_ms(100),
            read(key),
            think_ms(500),
            read(key),
            Step::Commit,
        ],
        1,
        1,
    );
    let mut cluster = Cluster::new(
        configs(2, catalog(), vec![writer, reader]),
        Latencies::default(),
    );
    cluster.run_until_true(2_000 * NS_PER_MS, Cluster::sessions_finished);

    let commit = *commits_of(&cluster, INST2)
        .first()
        .expect("the writer committed");
    let reads = reads_of(&cluster, INST1, key);
    assert_eq!(reads.len(), 2, "two reads of key {key}: {reads:?}");
    let ((before, old), (after, new)) = (reads[0], reads[1]);
    assert!(
        before < commit && after >= commit,
        "snapshots {before} and {after} around the commit at {commit}"
    );
    assert_eq!(old, Some(0), "the uncommitted change is invisible");
    assert_eq!(new, Some(1), "the committed change is visible");

    // The first read was served by inst2 as a CR copy: an image of the block
    // rolled back to before the change, with no undo or ITL of its own.
    let ships = ships_to(&cluster, INST1, blk);
    let (_, kind, _, image) = ships.first().expect("inst2 shipped the block to inst1");
    assert!(matches!(kind, ShipKind::Cr { .. }), "shipped as {kind:?}");
    let slot = layout.initial_rowid(0, key).expect("an initial row").slot;
    assert_eq!(image.row(slot).map(|r| r.val), Some(0));
    assert!(image.undo.is_empty() && image.itl.is_empty());
    let holder = cluster.instances[1].stats();
    assert!(holder.get(Stat::GcCrBlocksBuilt) >= 1, "built from undo");
    assert!(cluster.instances[0].stats().get(Stat::GcCrBlocksReceived) >= 2);
}

#[test]
fn a_current_block_is_shipped_only_once_the_holders_redo_is_durable() {
    let layout = harness::layout(2, &catalog());
    let (key, blk) = key_mastered_by(&layout, INST2);
    // Another row of the same block: no row lock between the two changes.
    let other = key + 1;
    assert_eq!(layout.initial_rowid(0, other).map(|r| r.blk), Some(blk));
    // inst2 changes the block and keeps its redo in memory (no commit, no
    // LGWR timeout for 3 s); inst1 wants the block current at about 100 ms.
    let writer = workload(
        "writer",
        2,
        vec![update(key), think_ms(300), Step::Commit],
        1,
        1,
    );
    let updater = workload(
        "updater",
        1,
        vec![think_ms(100), update(other), Step::Commit],
        1,
        1,
    );
    let latencies = Latencies::default();
    let mut cluster = Cluster::new(configs(2, catalog(), vec![writer, updater]), latencies);
    cluster.run_until_true(2_000 * NS_PER_MS, Cluster::sessions_finished);

    let requested = cluster
        .sent()
        .find_map(|(at, env)| match &env.msg {
            Msg::Request(req)
                if env.from == INST1
                    && req.blk == blk
                    && matches!(req.kind, ReqKind::Current { .. }) =>
            {
                Some(at)
            }
            _ => None,
        })
        .expect("inst1 asked for the block current");
    let durable = cluster
        .redo_durable_at(INST2, blk)
        .expect("inst2's redo for the block was written");
    let ships = ships_to(&cluster, INST1, blk);
    let (shipped, kind, ..) = ships.first().expect("inst2 shipped the block");
    assert!(matches!(kind, ShipKind::Current), "shipped as {kind:?}");
    assert!(
        requested + latencies.net_ns < durable && durable <= *shipped,
        "request at {requested}, redo durable at {durable}, ship at {shipped}: \
         the request must make the redo durable before the block leaves"
    );

    let holder = cluster.instances[1].stats();
    let flush = holder.event(Wait::GcsLogFlushSync);
    assert_eq!(flush.waits, 1);
    assert!(flush.time_ns >= latencies.redo_ns, "{flush:?}");
    assert_eq!(holder.get(Stat::GcCurrentBlocksFlushed), 1);
    // The flush delayed the block: the requester names its wait `busy`.
    let requester = cluster.instances[0].stats();
    assert_eq!(requester.event(Wait::GcCurrentBlockBusy).waits, 1);
    assert_eq!(requester.event(Wait::GcCurrentBlock2Way).waits, 0);
}

#[test]
fn a_block_mastered_by_its_holder_is_two_way_and_by_a_third_instance_three_way() {
    let layout = harness::layout(3, &catalog());
    let (key_two, blk_two) = key_mastered_by(&layout, INST2);
    let (key_three, blk_three) = key_mastered_by(&layout, INST3);
    // inst2 changes and commits both rows; only then is inst1's reader let
    // go (so inst2's redo is durable before anyone asks).
    let writer = workload(
        "writer",
        2,
        vec![update(key_two), update(key_three), Step::Commit],
        1,
        1,
    );
    let reader = workload(
        "reader",
        1,
        vec![read(key_two), read(key_three), Step::Commit],
        1,
        1,
    );
    let mut cluster = Cluster::new(
        configs(3, catalog(), vec![writer, reader]),
        Latencies::default(),
    );
    cluster.apply(0, Command::EnableWorkloads(Some(Vec::new())));
    cluster.run_until_true(1_000 * NS_PER_MS, |c| c.instances[1].sessions_finished());
    assert!(
        reads_of(&cluster, INST1, key_two).is_empty(),
        "the reader waited"
    );
    cluster.apply(0, Command::EnableWorkloads(None));
    cluster.run_until_true(2_000 * NS_PER_MS, Cluster::sessions_finished);

    assert_eq!(
        routed(&cluster, INST1, blk_two),
        vec![(INST1, INST2, "request"), (INST2, INST1, "ship")],
        "2-way: inst1 asks the master, which holds the block and ships it"
    );
    assert_eq!(
        routed(&cluster, INST1, blk_three),
        vec![
            (INST1, INST3, "request"),
            (INST3, INST2, "forward"),
            (INST2, INST1, "ship")
        ],
        "3-way: the master forwards to the holder, which ships to inst1"
    );
    let hops = |blk| -> Vec<u8> { ships_to(&cluster, INST1, blk).iter().map(|s| s.2).collect() };
    assert_eq!(hops(blk_two), vec![2]);
    assert_eq!(hops(blk_three), vec![3]);

    let reads: Vec<Option<i64>> = [key_two, key_three]
        .iter()
        .flat_map(|&k| reads_of(&cluster, INST1, k))
        .map(|(_, val)| val)
        .collect();
    assert_eq!(reads, vec![Some(1), Some(1)], "both committed changes seen");
    let requester = cluster.instances[0].stats();
    assert!(requester.event(Wait::GcCrBlock2Way).waits >= 1);
    assert!(requester.event(Wait::GcCrBlock3Way).waits >= 1);
}

#[test]
#[should_panic(expected = "inst2 reported errors")]
fn the_harness_fails_when_an_instance_reports_an_error() {
    let mut cluster = Cluster::new(configs(2, catalog(), Vec::new()), Latencies::default());
    // A message from an instance outside the cluster of two.
    cluster.send(Envelope {
        from: InstId(5),
        to: INST2,
        incarnation: 1,
        scn: Scn(1),
        sent_at: 0,
        msg: Msg::ScnAck { seq: 1 },
        link: Default::default(),
    });
    cluster.run_until(NS_PER_MS);
}

#[test]
#[should_panic(expected = "not done by 1000 ms")]
fn the_harness_fails_when_the_cluster_does_not_get_there_in_time() {
    let sleeper = workload("sleeper", 1, vec![think_ms(5_000), Step::Commit], 1, 1);
    let mut cluster = Cluster::new(configs(2, catalog(), vec![sleeper]), Latencies::default());
    cluster.run_until_true(1_000 * NS_PER_MS, Cluster::sessions_finished);
}
