//! Dynamic remastering seen from outside: a master moves after a window
//! of one-sided access, and a peer's DRM message that does not fit the
//! DRM in progress is a protocol error, never a panic (a debug build runs
//! these, so a `debug_assert!` on a peer's message would fail here).

mod harness;

use fusion_core::config::{KeyDist, KeySpec, NS_PER_MS, Nanos, Step};
use fusion_core::instance::{Instance, InstanceConfig, PfMaster};
use fusion_core::msg::{DrmMsg, Envelope, Held, Msg};
use fusion_core::types::Scn;
use fusion_core::types::{BlockAddr, InstId};
use harness::{BY_KEY, Cluster, Latencies, workload};

const INST1: InstId = InstId(0);
const INST2: InstId = InstId(1);

/// 400 rows, 10 to a block (40 blocks, each with its own master), and a
/// buffer cache of 16 blocks: random reads miss and open blocks at their
/// masters all the time.
fn configs(
    window_ms: u64,
    workloads: Vec<fusion_core::config::WorkloadSpec>,
) -> Vec<InstanceConfig> {
    let mut configs = harness::configs(2, harness::catalog(400, 10), workloads);
    for c in &mut configs {
        c.params.db_cache_size = 16 * 8192;
        c.params.gc_policy_time_ns = window_ms * NS_PER_MS;
        // 10 opens in a 100 ms window.
        c.params.gc_policy_minimum = 6_000;
    }
    configs
}

fn random_read() -> Step {
    Step::Read {
        table: 0,
        access: BY_KEY,
        keys: KeySpec {
            dist: KeyDist::Uniform,
            range: None,
            org: None,
        },
        rows: 1,
    }
}

/// Instance 2 reads random rows for 300 ms; instance 1 does nothing.
fn one_sided(window_ms: u64) -> Cluster {
    let reader = workload("reader", 2, vec![random_read(), Step::Commit], 100_000, 1);
    let mut cluster = Cluster::new(configs(window_ms, vec![reader]), Latencies::default());
    cluster.run_until(300 * NS_PER_MS);
    cluster
}

fn drm_messages(cluster: &Cluster) -> usize {
    cluster
        .sent()
        .filter(|(_, env)| matches!(env.msg, Msg::Drm(_)))
        .count()
}

#[test]
fn a_master_moves_after_a_window_of_one_sided_access() {
    let mut cluster = one_sided(100);
    for (i, inst) in cluster.instances.iter().enumerate() {
        let moved = inst.gcspfmaster_info();
        assert!(
            moved.contains(&PfMaster {
                object: 0,
                current: INST2,
                previous: None,
                remasters: 1
            }),
            "inst{}: the table is instance 2's: {moved:?}",
            i + 1
        );
    }
    let log = cluster.instances[0].take_alert_log();
    let lines: Vec<&str> = log.iter().map(|l| l.line.as_str()).collect();
    assert!(
        lines.contains(&"Begin DRM(1) - transfer pkey 0 to 1"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("End DRM(1) - transfer pkey 0 to 1")),
        "{lines:?}"
    );
    // Since the move, instance 2 asks nobody for the table's blocks.
    let moved_at = cluster
        .sent()
        .find(|(_, env)| matches!(&env.msg, Msg::Drm(m) if matches!(**m, DrmMsg::Done { .. })))
        .map(|(at, _)| at)
        .expect("the DRM ended");
    let layout = cluster.layout.clone();
    let remote_after: Vec<BlockAddr> = cluster
        .sent()
        .filter(|(at, env)| *at > moved_at + NS_PER_MS && env.from == INST2)
        .filter_map(|(_, env)| match &env.msg {
            Msg::Request(r) if layout.object_of(r.blk) == Some(0) => Some(r.blk),
            _ => None,
        })
        .collect();
    assert!(remote_after.is_empty(), "{remote_after:?}");
}

#[test]
fn a_policy_time_of_zero_moves_nothing_and_sends_nothing() {
    let cluster = one_sided(0);
    assert_eq!(drm_messages(&cluster), 0);
    assert!(
        cluster
            .instances
            .iter()
            .all(|i| i.gcspfmaster_info().is_empty())
    );
}

/// Instance `to` (0-based) of two, with no workload.
fn instance(me: InstId) -> Instance {
    let cfg = configs(100, Vec::new())
        .into_iter()
        .nth(usize::from(me.0))
        .expect("two configurations");
    Instance::new(cfg)
}

/// Deliver `msg` from the other instance at `at`; drop what it sends.
fn deliver(inst: &mut Instance, me: InstId, at: Nanos, msg: DrmMsg) {
    let from = if me == INST1 { INST2 } else { INST1 };
    inst.handle_message(
        at,
        Envelope {
            from,
            to: me,
            incarnation: 1,
            scn: Scn(1),
            sent_at: 0,
            msg: Msg::Drm(Box::new(msg)),
            link: Default::default(),
        },
    );
    while inst.poll_action().is_some() {}
}

#[test]
fn a_drm_message_that_does_not_fit_is_a_protocol_error() {
    let layout = harness::layout(2, &harness::catalog(400, 10));
    let index_block = layout.indexes[0].root;
    let cases: Vec<(&str, InstId, Vec<DrmMsg>)> = vec![
        // Instance 1 is the coordinator: instance 2 may not begin a DRM.
        (
            "freeze from a non-coordinator",
            INST1,
            vec![DrmMsg::Freeze {
                drm: 1,
                object: 0,
                to: INST2,
            }],
        ),
        ("quiet for no DRM", INST1, vec![DrmMsg::Quiet { drm: 7 }]),
        (
            "statistics of an unknown object",
            INST1,
            vec![DrmMsg::Stats {
                window: 1,
                objects: vec![(99, 1_000)],
            }],
        ),
        (
            "statistics to a non-coordinator",
            INST2,
            vec![DrmMsg::Stats {
                window: 1,
                objects: vec![(0, 1_000)],
            }],
        ),
        (
            "an unknown object",
            INST2,
            vec![DrmMsg::Freeze {
                drm: 1,
                object: 99,
                to: INST2,
            }],
        ),
        (
            "a transfer of no DRM",
            INST2,
            vec![DrmMsg::Transfer { drm: 3 }],
        ),
        ("done of no DRM", INST2, vec![DrmMsg::Done { drm: 3 }]),
        (
            "a third DRM while one runs and the next waits for its end",
            INST2,
            vec![
                DrmMsg::Freeze {
                    drm: 1,
                    object: 0,
                    to: INST2,
                },
                // Held: DRM(1)'s Done may come after it on another link.
                DrmMsg::Freeze {
                    drm: 2,
                    object: 1,
                    to: INST2,
                },
                DrmMsg::Freeze {
                    drm: 3,
                    object: 1,
                    to: INST2,
                },
            ],
        ),
        (
            "a report of another object's block",
            INST2,
            vec![
                DrmMsg::Freeze {
                    drm: 1,
                    object: 0,
                    to: INST2,
                },
                DrmMsg::Transfer { drm: 1 },
                DrmMsg::Rebuild {
                    drm: 1,
                    blocks: vec![(index_block, Held::X { dirty: false })],
                },
            ],
        ),
        (
            "a report for a DRM out of order",
            INST2,
            vec![
                DrmMsg::Freeze {
                    drm: 1,
                    object: 0,
                    to: INST2,
                },
                DrmMsg::Transfer { drm: 1 },
                DrmMsg::Rebuild {
                    drm: 2,
                    blocks: Vec::new(),
                },
            ],
        ),
    ];
    for (what, me, msgs) in cases {
        let mut inst = instance(me);
        for (i, msg) in msgs.into_iter().enumerate() {
            deliver(&mut inst, me, (i as u64 + 1) * NS_PER_MS, msg);
        }
        let errors = inst.errors();
        assert_eq!(errors.len(), 1, "{what}: {errors:?}");
        assert!(
            errors[0].contains("DRM") || errors[0].contains("pkey"),
            "{what}: {errors:?}"
        );
        assert!(inst.halted().is_none(), "{what}: the instance goes on");
    }
}
