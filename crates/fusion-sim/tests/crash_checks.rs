//! The checkers across crashes on the simulator, and the recovery summary:
//! a kill just before the end of the timeline is checked only once a
//! survivor recovered it (not against the store's stale images), a frozen
//! instance evicted before it wakes counts for nothing, and the phase that
//! saw the recovery reports it with a brownout measured on the commits.

use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, Nanos, Params, Step};
use fusion_scenario::{Fault, Scenario};
use fusion_sim::{SimOptions, run_variant};
use fusion_testkit::{ScenarioBuilder, btree, phase, table, txn, update_by_index, workload};

const MISSCOUNT_S: u32 = 3;

fn cluster(last: Vec<Fault>, last_s: Nanos) -> Scenario {
    let mut failing = phase("failing", last_s * NS_PER_S);
    failing.faults = last;
    ScenarioBuilder::new(3)
        .params(Params {
            css_misscount: MISSCOUNT_S,
            ..fusion_testkit::params(4, 2_000)
        })
        .table(table("t", 3_000, 50))
        .index(btree("t_pk", 0, 64, 64))
        .workload(workload(
            "oltp",
            3,
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
        .build()
}

#[test]
fn a_kill_at_the_very_end_is_checked_after_its_recovery() {
    let s = cluster(
        vec![Fault::Kill {
            instance: 1,
            at: 900 * NS_PER_MS,
        }],
        1,
    );
    let o = run_variant("late kill", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let c = o.check.expect("checked");
    assert!(c.commits_acknowledged > 0);
    assert_eq!(c.commits_lost, 0);
    // Recovered after the timeline: in no phase's report.
    assert!(o.result.phases.iter().all(|p| p.recovery.is_empty()));
}

#[test]
fn a_recovery_is_summarized_in_its_phase_with_its_brownout() {
    let s = cluster(
        vec![Fault::Kill {
            instance: 3,
            at: NS_PER_S,
        }],
        u64::from(MISSCOUNT_S) + 6,
    );
    let o = run_variant("kill", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let p = &o.result.phases[1];
    let [r] = &p.recovery[..] else {
        panic!("one recovery: {:?}", p.recovery);
    };
    assert_eq!((r.dead_instance, r.recovered_by), (3, 1));
    let detected = r.detected_ns - p.start_ns;
    let misscount = u64::from(MISSCOUNT_S) * NS_PER_S;
    assert!(
        (NS_PER_S + misscount..NS_PER_S + misscount + 2 * NS_PER_S).contains(&detected),
        "{r:?}"
    );
    // The survivors' commits wait for the dead instance's SCN acks until it
    // is evicted: a brownout about as long as the detection takes.
    let brownout = r.brownout_ns.expect("a rate before the fault");
    assert!(
        (misscount - NS_PER_S..=misscount + 3 * NS_PER_S).contains(&brownout),
        "{r:?}"
    );
    let c = o.check.expect("checked");
    assert_eq!(c.commits_lost, 0);
    assert!(c.violations.is_empty(), "{:?}", c.violations);
}

#[test]
fn a_frozen_instance_evicted_before_it_wakes_counts_for_nothing() {
    let s = cluster(
        vec![Fault::Pause {
            instance: 2,
            at: 500 * NS_PER_MS,
            duration: (u64::from(MISSCOUNT_S) + 4) * NS_PER_S,
        }],
        u64::from(MISSCOUNT_S) + 6,
    );
    let o = run_variant("freeze", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let c = o.check.expect("checked");
    assert!(c.violations.is_empty(), "{:?}", c.violations);
    assert_eq!(o.result.phases[1].recovery.len(), 1);
}
