//! Instance recovery in the simulator: after a kill the survivors
//! reconfigure, the lowest survivor recovers the dead thread, and the
//! cluster goes on with every acknowledged commit kept.

use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, Nanos, Params, Step};
use fusion_core::stats::Stat;
use fusion_scenario::{Direction, Fault, LinkTarget, Scenario};
use fusion_sim::{SimOptions, run_variant};
use fusion_testkit::{ScenarioBuilder, btree, phase, table, txn, update_by_index, workload};

const MISSCOUNT_S: u32 = 3;

/// Three instances updating rows of a small table, then a phase with `faults`
/// and a phase after it.
fn cluster_with(faults: Vec<Fault>, seconds: Nanos) -> Scenario {
    cluster_of(3, faults, seconds)
}

fn cluster_of(instances: u8, faults: Vec<Fault>, seconds: Nanos) -> Scenario {
    let mut failing = phase("failing", seconds * NS_PER_S);
    failing.faults = faults;
    ScenarioBuilder::new(instances)
        .params(Params {
            css_misscount: MISSCOUNT_S,
            ..fusion_testkit::params(4, 2_000)
        })
        .table(table("t", 3_000, 50))
        .index(btree("t_pk", 0, 64, 64))
        .workload(workload(
            "oltp",
            instances,
            2,
            5 * NS_PER_MS,
            vec![txn(
                "upd",
                1,
                vec![update_by_index(KeyDist::Uniform, 2), Step::Commit],
            )],
        ))
        .phase(phase("before", 2 * NS_PER_S))
        .phase(failing)
        .phase(phase("after", 3 * NS_PER_S))
        .build()
}

fn lines_of(o: &fusion_sim::VariantOutcome, phase: usize, inst: u8) -> Vec<String> {
    o.result.phases[phase]
        .alert_log
        .iter()
        .filter(|a| a.instance == inst)
        .map(|a| a.line.clone())
        .collect()
}

fn commits(o: &fusion_sim::VariantOutcome, phase: usize, inst: u8) -> u64 {
    o.result.phases[phase]
        .instance(inst)
        .map_or(0, |i| i.stats.get(Stat::UserCommits))
}

#[test]
fn a_killed_instance_is_recovered_and_the_survivors_go_on() {
    let s = cluster_with(
        vec![Fault::Kill {
            instance: 3,
            at: NS_PER_S,
        }],
        u64::from(MISSCOUNT_S) + 6,
    );
    let o = run_variant("kill", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let recoverer = lines_of(&o, 1, 1);
    for expected in [
        "Post SMON to start 1st pass IR",
        "Started redo scan",
        "Reconfiguration complete",
        "Started redo application",
        "Completed instance recovery at Thread 3",
    ] {
        assert!(
            recoverer.iter().any(|l| l.starts_with(expected)),
            "no {expected:?} in {recoverer:#?}"
        );
    }
    let scan = recoverer
        .iter()
        .find(|l| l.starts_with("Completed redo scan"))
        .cloned()
        .unwrap_or_default();
    assert!(scan.contains("data blocks need recovery"), "{scan}");
    // Instance 2 reconfigured too, but recovered nothing.
    let other = lines_of(&o, 1, 2);
    assert!(
        other
            .iter()
            .any(|l| l.starts_with("Reconfiguration complete")),
        "{other:#?}"
    );
    assert!(
        !other.iter().any(|l| l.starts_with("Started redo scan")),
        "{other:#?}"
    );
    // The survivors commit after the recovery as they did before the kill.
    for survivor in [1u8, 2] {
        let after = commits(&o, 2, survivor);
        let before = commits(&o, 0, survivor);
        assert!(
            after > before,
            "instance {survivor}: {before} commits before, {after} after"
        );
    }
    let check = o.check.as_ref().map(|c| c.violations.clone());
    assert_eq!(check, Some(vec![]), "{:?}", o.check);
}

#[test]
fn a_partitioned_instance_is_evicted_and_recovered() {
    let s = cluster_with(
        vec![Fault::Partition {
            target: LinkTarget::Instance(3),
            direction: Direction::Both,
        }],
        u64::from(MISSCOUNT_S) + 6,
    );
    let o = run_variant("partition", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let recoverer = lines_of(&o, 1, 1);
    assert!(
        recoverer
            .iter()
            .any(|l| l.starts_with("Completed instance recovery at Thread 3")),
        "{recoverer:#?}"
    );
    assert!(commits(&o, 2, 2) > 0);
    let check = o.check.as_ref().map(|c| c.violations.clone());
    assert_eq!(check, Some(vec![]), "{:?}", o.check);
}

/// Found by chaos: an instance restarted before the others evicted its old
/// life took the numbered messages they still sent to that life, and its
/// link numbering ran ahead of theirs once they admitted it ("acknowledged
/// messages N and M; only K were sent", for the rest of the run).
#[test]
fn a_restart_before_the_old_life_is_evicted_keeps_the_link_numbering_in_step() {
    let s = cluster_with(
        vec![
            Fault::Kill {
                instance: 3,
                at: NS_PER_S,
            },
            Fault::Restart {
                instance: 3,
                at: NS_PER_S + 500 * NS_PER_MS,
            },
            Fault::Loss {
                target: LinkTarget::All,
                loss_ppm: 50_000,
                correlation_ppm: 0,
            },
        ],
        u64::from(MISSCOUNT_S) + 8,
    );
    let o = run_variant("early-restart", &s, &SimOptions::default());
    let protocol: Vec<&String> = o.errors.iter().filter(|e| !o.is_violation(e)).collect();
    assert!(protocol.is_empty(), "{protocol:#?}");
    let third = lines_of(&o, 1, 3);
    assert!(
        third
            .iter()
            .any(|l| l.starts_with("Instance joined the cluster")),
        "{third:#?}"
    );
}

#[test]
fn a_killed_instance_restarts_rejoins_and_works_again() {
    let mut s = cluster_with(
        vec![
            Fault::Kill {
                instance: 3,
                at: NS_PER_S,
            },
            Fault::Restart {
                instance: 3,
                at: 2 * NS_PER_S,
            },
        ],
        u64::from(MISSCOUNT_S) + 8,
    );
    s.phases
        .push(fusion_testkit::phase("rejoined", 3 * NS_PER_S));
    let o = run_variant("restart", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    // The old life is evicted and recovered first, then the new one admitted.
    let third = lines_of(&o, 1, 3);
    assert!(
        third.iter().any(|l| l.starts_with("Instance restarted")),
        "{third:#?}"
    );
    assert!(
        third
            .iter()
            .any(|l| l.starts_with("Instance joined the cluster")),
        "{third:#?}"
    );
    let first = lines_of(&o, 1, 1);
    let recovered = first
        .iter()
        .position(|l| l.starts_with("Completed instance recovery at Thread 3"));
    let admitted = first
        .iter()
        .position(|l| l.starts_with("List of instances: 1, 2, 3"));
    assert!(
        matches!((recovered, admitted), (Some(r), Some(a)) if r < a),
        "{first:#?}"
    );
    // The rejoined instance commits in the last phase; nothing was lost.
    assert!(
        commits(&o, 3, 3) > 0,
        "instance 3 did not work after rejoining"
    );
    let check = o.check.as_ref().map(|c| c.violations.clone());
    assert_eq!(check, Some(vec![]), "{:?}", o.check);
}

#[test]
fn the_recovering_instance_dies_and_another_recovers_both_threads() {
    // Instance 1's disk is slow, so its recovery of instance 4 takes
    // seconds, and instance 1 dies in the middle of it.
    let s = cluster_of(
        4,
        vec![
            Fault::DiskLatency {
                instance: 1,
                device: fusion_scenario::Device::Data,
                latency: 1_500 * NS_PER_MS,
                jitter: 0,
            },
            Fault::Kill {
                instance: 4,
                at: NS_PER_S,
            },
            // Instance 4's death is detected at the third or the fourth
            // heartbeat tick after it (its last beat on disk is seen just
            // before or just after a tick: a few microseconds of I/O
            // decide), so 4 or 5 s later; recovery reads redo from 1.5 s
            // after that and applies it for another 1.5 s. 5.7 s after
            // the first kill is inside the recovery either way.
            Fault::Kill {
                instance: 1,
                at: 6_700 * NS_PER_MS,
            },
        ],
        u64::from(MISSCOUNT_S) + 10,
    );
    let o = run_variant("double", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let first = lines_of(&o, 1, 1);
    assert!(
        first
            .iter()
            .any(|l| l.starts_with("Started redo application"))
            && !first
                .iter()
                .any(|l| l.starts_with("Completed instance recovery")),
        "instance 1 was to die in the middle of its recovery: {first:#?}"
    );
    let second = lines_of(&o, 1, 2);
    assert!(
        second
            .iter()
            .any(|l| l == "Beginning instance recovery of 2 threads"),
        "{second:#?}"
    );
    assert!(
        second
            .iter()
            .any(|l| l.starts_with("Completed instance recovery at Thread 1"))
            && second
                .iter()
                .any(|l| l.starts_with("Completed instance recovery at Thread 4")),
        "{second:#?}"
    );
    let check = o.check.as_ref().map(|c| c.violations.clone());
    assert_eq!(check, Some(vec![]), "{:?}", o.check);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..proptest::prelude::ProptestConfig::default() })]

    /// A crash of any instance at any time (to the microsecond, so at any
    /// event), restarted or not, keeps every invariant: no protocol error,
    /// a cluster that settles, coherence, consistent reads, no lost write.
    #[test]
    fn a_crash_at_any_time_keeps_every_invariant(
        instances in 2u8..=3,
        victim in 1u8..=3,
        at_us in 0u64..3_000_000,
        restart_after_ms in proptest::option::of(1u64..4_000),
        seed in 0u64..1_000,
    ) {
        let victim = victim.min(instances);
        let at = at_us * 1_000;
        let mut faults = vec![Fault::Kill { instance: victim, at }];
        if let Some(ms) = restart_after_ms {
            faults.push(Fault::Restart { instance: victim, at: at + ms * NS_PER_MS });
        }
        let mut s = cluster_of(instances, faults, u64::from(MISSCOUNT_S) + 6);
        s.seed = seed;
        let o = run_variant("crash", &s, &SimOptions::checked());
        proptest::prop_assert!(o.errors.is_empty(), "{:#?}", o.errors);
        let violations = o.check.as_ref().map(|c| c.violations.clone());
        proptest::prop_assert_eq!(violations, Some(vec![]));
        // Someone commits in the last phase: the cluster went on.
        let after: u64 = (1..=instances).map(|i| commits(&o, 2, i)).sum();
        proptest::prop_assert!(after > 0, "nobody commits after the crash");
    }
}
