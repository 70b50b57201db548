//! The cluster-membership service in the simulator: a killed instance is
//! detected after `css_misscount` and evicted (fenced at the store), a
//! partition evicts the smaller side, and a pause shorter than
//! `css_misscount` is waited out with no eviction.

use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, Nanos, Params, Step};
use fusion_core::stats::Stat;
use fusion_scenario::{Direction, Fault, LinkTarget, Scenario};
use fusion_sim::{SimOptions, run_variant};
use fusion_testkit::{ScenarioBuilder, btree, phase, table, txn, update_by_index, workload};

const MISSCOUNT_S: u32 = 4;

/// Three instances updating rows of one table, then a phase with `faults`.
fn cluster_with(faults: Vec<Fault>, seconds: Nanos) -> Scenario {
    let mut failing = phase("failing", seconds * NS_PER_S);
    failing.faults = faults;
    ScenarioBuilder::new(3)
        .params(Params {
            css_misscount: MISSCOUNT_S,
            ..fusion_testkit::params(4, 2_000)
        })
        .table(table("t", 6_000, 50))
        .index(btree("t_pk", 0, 64, 64))
        .workload(workload(
            "oltp",
            3,
            2,
            5 * NS_PER_MS,
            vec![txn(
                "upd",
                1,
                vec![update_by_index(KeyDist::Uniform, 1), Step::Commit],
            )],
        ))
        .phase(phase("before", 2 * NS_PER_S))
        .phase(failing)
        .build()
}

fn alert_lines(o: &fusion_sim::VariantOutcome, phase: usize) -> Vec<(f64, u8, String)> {
    o.result.phases[phase]
        .alert_log
        .iter()
        .map(|a| (a.at_ns as f64 / 1e9, a.instance, a.line.clone()))
        .collect()
}

#[test]
fn a_killed_instance_is_evicted_after_misscount_by_every_survivor() {
    let s = cluster_with(
        vec![Fault::Kill {
            instance: 3,
            at: NS_PER_S,
        }],
        MISSCOUNT_S as u64 + 4,
    );
    let o = run_variant("kill", &s, &SimOptions::default());
    let lines = alert_lines(&o, 1);
    let killed_at = 3.0; // 2 s before, 1 s into the phase
    assert!(
        lines
            .iter()
            .any(|(t, i, l)| *i == 3 && l.contains("killed") && (*t - killed_at).abs() < 1e-9),
        "{lines:#?}"
    );
    for survivor in [1u8, 2] {
        let started = lines
            .iter()
            .find(|(_, i, l)| *i == survivor && l.starts_with("Reconfiguration started"))
            .unwrap_or_else(|| panic!("instance {survivor} did not reconfigure: {lines:#?}"));
        // Silent for css_misscount, then detected at the next disk heartbeat.
        let detected_after = started.0 - killed_at;
        assert!(
            detected_after >= f64::from(MISSCOUNT_S)
                && detected_after < f64::from(MISSCOUNT_S) + 2.0,
            "instance {survivor} detected the death {detected_after} s after it"
        );
        assert!(started.2.contains("old inc 1, new inc 2"), "{started:?}");
        assert!(
            lines
                .iter()
                .any(|(_, i, l)| *i == survivor && l == "Evicting instance 3 from cluster"),
            "{lines:#?}"
        );
    }
    // The dead instance does nothing after its death: its counters stop.
    let dead = o.result.phases[1]
        .instance(3)
        .map(|i| i.stats.get(Stat::UserCommits));
    let before = o.result.phases[0]
        .instance(3)
        .map(|i| i.stats.get(Stat::UserCommits));
    assert!(
        dead.unwrap_or(0) < before.unwrap_or(0),
        "{dead:?} vs {before:?}"
    );
}

#[test]
fn a_partition_evicts_the_smaller_side_which_stops_itself() {
    let s = cluster_with(
        vec![Fault::Partition {
            target: LinkTarget::Instance(3),
            direction: Direction::Both,
        }],
        MISSCOUNT_S as u64 + 4,
    );
    let o = run_variant("partition", &s, &SimOptions::default());
    let lines = alert_lines(&o, 1);
    assert!(
        lines
            .iter()
            .any(|(_, i, l)| *i == 3 && l.starts_with("ORA-29740")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|(_, i, l)| *i == 3 && l == "Instance terminated by LMON"),
        "{lines:#?}"
    );
    for survivor in [1u8, 2] {
        assert!(
            lines.iter().any(|(_, i, l)| *i == survivor
                && *l == format!("List of instances: 1, 2 (myinst: {survivor})")),
            "{lines:#?}"
        );
    }
}

#[test]
fn a_pause_shorter_than_misscount_is_waited_out_without_eviction() {
    let pause = Fault::Pause {
        instance: 2,
        at: NS_PER_S,
        duration: (u64::from(MISSCOUNT_S) - 1) * NS_PER_S,
    };
    let s = cluster_with(vec![pause], u64::from(MISSCOUNT_S) + 4);
    let o = run_variant("pause", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    let lines = alert_lines(&o, 1);
    assert!(
        lines
            .iter()
            .any(|(_, i, l)| *i == 2 && l.contains("paused (SIGSTOP)")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|(_, i, l)| *i == 2 && l.contains("continued (SIGCONT)")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|(_, _, l)| l.contains("Reconfiguration")),
        "nobody is evicted: {lines:#?}"
    );
    // The frozen instance goes on after the pause: it commits in the phase.
    let commits = o.result.phases[1]
        .instance(2)
        .map_or(0, |i| i.stats.get(Stat::UserCommits));
    assert!(commits > 0);
    // The checkers found the run consistent.
    let check = o.check.as_ref().map(|c| c.violations.len());
    assert_eq!(check, Some(0), "{:?}", o.check);
}

#[test]
fn the_same_seed_gives_the_same_failure_run() {
    let s = cluster_with(
        vec![Fault::Kill {
            instance: 2,
            at: NS_PER_S / 2,
        }],
        u64::from(MISSCOUNT_S) + 3,
    );
    let a = run_variant("a", &s, &SimOptions::default());
    let b = run_variant("b", &s, &SimOptions::default());
    assert_eq!(alert_lines(&a, 1), alert_lines(&b, 1));
    assert_eq!(
        format!("{:?}", a.result.phases[1].instances),
        format!("{:?}", b.result.phases[1].instances)
    );
}
