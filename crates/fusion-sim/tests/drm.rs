//! Dynamic remastering under the simulator's checkers: a batch on instance
//! 2 updates rows all over a table larger than its buffer cache, so it
//! opens the table's blocks at their masters all the time; instance 1 only
//! reads now and then. With a short `_gc_policy_time` the coordinator
//! (instance 1) remasters the table, then its index, to instance 2; the
//! batch's requests during each move wait on `gc remaster`, and afterwards
//! instance 2 grants its own opens. No read is inconsistent, no commit is
//! lost and the cluster stays coherent throughout. With `_gc_policy_time = 0`
//! nothing moves.

use fusion_core::config::{KeyDist, NS_PER_MS, Step, WorkloadSpec};
use fusion_core::stats::{Stat, Stats, Wait};
use fusion_scenario::{Fault, LinkTarget, Scenario};
use fusion_sim::{SimOptions, VariantOutcome, run_variant};
use fusion_testkit::{
    ScenarioBuilder, btree, params, phase, quiet_phase, read_by_index, table, txn, update_by_index,
};

/// A workload on one instance (1-based).
fn on(inst: u8, name: &str, sessions: u32, think_ms: u64, steps: Vec<Step>) -> WorkloadSpec {
    on_each(&[inst], name, sessions, think_ms, steps)
}

/// A workload on each of `insts` (1-based).
fn on_each(
    insts: &[u8],
    name: &str,
    sessions: u32,
    think_ms: u64,
    steps: Vec<Step>,
) -> WorkloadSpec {
    WorkloadSpec {
        name: name.into(),
        instances: insts.to_vec(),
        sessions_per_instance: sessions,
        think_time: think_ms * NS_PER_MS,
        transactions: vec![txn(name, 1, steps)],
        iterations: None,
        row_locks: Default::default(),
    }
}

/// `_gc_policy_time` of `window_ms` (0: off), and a minimum of 30,000 opens
/// a minute (25 in a 50 ms window): the batch is far above it, the reader
/// far below. Ranges of 16 blocks hash to a master, so that each instance
/// masters about half of each object to begin with.
fn run(window_ms: u64, seed: u64) -> VariantOutcome {
    run_on(2, window_ms, seed)
}

/// [`run`] on `instances` instances: the reader runs on every one but 2.
fn run_on(instances: u8, window_ms: u64, seed: u64) -> VariantOutcome {
    run_variant(
        "drm",
        &scenario(instances, window_ms, seed),
        &SimOptions::checked(),
    )
}

fn scenario(instances: u8, window_ms: u64, seed: u64) -> Scenario {
    let mut p = params(4, 256);
    p.gc_policy_time_ns = window_ms * NS_PER_MS;
    p.gc_policy_minimum = 30_000;
    p.lm_contiguous_res_count = 16;
    let readers: Vec<u8> = (1..=instances).filter(|&i| i != 2).collect();
    ScenarioBuilder::new(instances)
        .seed(seed)
        .params(p)
        .table(table("t", 40_000, 20))
        .index(btree("t_pk", 0, 256, 256))
        .workload(on(
            2,
            "batch",
            8,
            0,
            vec![update_by_index(KeyDist::Uniform, 1), Step::Commit],
        ))
        .workload(on_each(
            &readers,
            "reader",
            1,
            25,
            vec![read_by_index(KeyDist::Uniform, 1), Step::Commit],
        ))
        .phase(phase("before", 200 * NS_PER_MS))
        .phase(phase("after", 800 * NS_PER_MS))
        .phase(quiet_phase("quiesce", 200 * NS_PER_MS))
        .build()
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

/// The alert log lines of every phase, instance 1-based.
fn alert_lines(o: &VariantOutcome) -> Vec<(u8, String)> {
    o.result
        .phases
        .iter()
        .flat_map(|p| p.alert_log.iter())
        .map(|a| (a.instance, a.line.clone()))
        .collect()
}

/// Grants a remote master sent (`gc cr grant 2-way`, `gc current grant 2-way`).
fn remote_grants_waited(s: &Stats) -> u64 {
    s.event(Wait::GcCrGrant2Way).waits + s.event(Wait::GcCurrentGrant2Way).waits
}

fn assert_checked(o: &VariantOutcome) {
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    let check = o.check.as_ref().expect("a checked run");
    assert!(check.violations.is_empty(), "{:?}", check.violations);
    assert!(
        check.reads_checked > 100 && check.commits > 100,
        "{check:?}"
    );
}

#[test]
fn the_batchs_objects_move_to_its_instance_and_nothing_is_lost() {
    let o = run(50, 5);
    assert_checked(&o);
    let lines = alert_lines(&o);
    let begun: Vec<&String> = lines
        .iter()
        .filter(|(_, l)| l.starts_with("Begin DRM("))
        .map(|(_, l)| l)
        .collect();
    assert_eq!(
        begun,
        [
            "Begin DRM(1) - transfer pkey 0 to 1",
            "Begin DRM(2) - transfer pkey 1 to 1"
        ],
        "the table, then its index, to instance 2 (LMD numbers from 0): {lines:?}"
    );
    assert!(
        lines
            .iter()
            .filter(|(i, l)| *i == 1 && l.starts_with("End DRM("))
            .count()
            == 2,
        "the coordinator ends both: {lines:?}"
    );
    let batch = stats_of(&o, 2);
    assert!(
        batch.event(Wait::GcRemaster).waits > 0,
        "the batch's requests during the moves waited on gc remaster"
    );
    assert_eq!(stats_of(&o, 1).event(Wait::GcRemaster).waits, 0);
    // Both took part in both moves; instance 1 reported its copies to 2.
    for id in [1, 2] {
        assert_eq!(stats_of(&o, id).get(Stat::RemasterOps), 2, "inst{id}");
    }
    assert_eq!(
        stats_of(&o, 1).get(Stat::ReplayedLocksSent),
        stats_of(&o, 2).get(Stat::ReplayedLocksReceived)
    );
    // After the table's move the batch grants itself what it opens.
    let after = o.result.phase("after").expect("the after phase");
    let batch_after = &after.instance(2).expect("instance 2").stats;
    assert!(
        batch_after.get(Stat::GcLocalGrants) > 10 * remote_grants_waited(batch_after),
        "local {} remote {}",
        batch_after.get(Stat::GcLocalGrants),
        remote_grants_waited(batch_after)
    );
}

#[test]
fn a_policy_time_of_zero_moves_nothing() {
    let off = run(0, 5);
    assert_checked(&off);
    assert!(
        alert_lines(&off).iter().all(|(_, l)| !l.contains("DRM(")),
        "{:?}",
        alert_lines(&off)
    );
    assert_eq!(stats_of(&off, 2).event(Wait::GcRemaster).waits, 0);
    let on = run(50, 5);
    let remote_after = |o: &VariantOutcome| {
        let after = o.result.phase("after").expect("the after phase");
        remote_grants_waited(&after.instance(2).expect("instance 2").stats)
    };
    // The table moved at once, its index (mostly cached, rarely opened)
    // only in a later window: its remote grants remain until then.
    assert!(
        4 * remote_after(&on) < remote_after(&off),
        "remote grants after the first move: {} with DRM, {} without",
        remote_after(&on),
        remote_after(&off)
    );
}

#[test]
fn moves_on_two_and_three_instances_stay_consistent_over_seeds() {
    for instances in [2, 3] {
        for seed in 1..=8 {
            let o = run_on(instances, 50, seed);
            assert_checked(&o);
            let ends = alert_lines(&o)
                .iter()
                .filter(|(_, l)| l.starts_with("End DRM("))
                .count();
            assert!(
                ends >= 1,
                "{instances} instances, seed {seed}: {:?}",
                alert_lines(&o)
            );
        }
    }
}

#[test]
fn a_drm_in_progress_when_an_instance_dies_is_abandoned_and_nothing_is_lost() {
    let mut s = scenario(3, 50, 5);
    for p in &mut s.instances {
        p.css_misscount = 2;
    }
    // Instance 3 dies just as the first window closes: the DRM it began
    // waits for its quiet until the survivors evict it.
    s.phases[0].faults = vec![Fault::Kill {
        instance: 3,
        at: 50 * NS_PER_MS + 50 * fusion_core::config::NS_PER_US,
    }];
    s.phases[1].duration = 3_000 * NS_PER_MS;
    let o = run_variant("drm-kill", &s, &SimOptions::checked());
    assert_checked(&o);
    let lines = alert_lines(&o);
    let abandoned = lines
        .iter()
        .position(|(_, l)| l == "DRM(1) abandoned: the cluster reconfigures");
    assert!(abandoned.is_some(), "{lines:?}");
    // The batch waited on gc remaster meanwhile, and goes on afterwards:
    // the survivors remaster the table again in the new incarnation.
    assert!(stats_of(&o, 2).event(Wait::GcRemaster).waits > 0);
    assert!(
        lines
            .iter()
            .skip(abandoned.unwrap_or(0))
            .any(|(_, l)| l.starts_with("End DRM(")),
        "{lines:?}"
    );
}

#[test]
fn an_instance_dying_at_any_step_of_a_drm_loses_nothing() {
    // Killed before the freeze reaches it, while the batch quiesces, at the
    // transfer, around the reports: over a few seeds.
    for at_us in [50_050, 50_300, 51_000, 52_000, 53_000, 55_000] {
        for seed in 1..=3 {
            let mut s = scenario(3, 50, seed);
            for p in &mut s.instances {
                p.css_misscount = 2;
            }
            s.phases[0].faults = vec![Fault::Kill {
                instance: 3,
                at: at_us * fusion_core::config::NS_PER_US,
            }];
            s.phases[1].duration = 3_000 * NS_PER_MS;
            let o = run_variant("drm-kill", &s, &SimOptions::checked());
            assert!(
                o.errors.is_empty(),
                "at {at_us} us, seed {seed}: {:?}",
                o.errors
            );
            let check = o.check.as_ref().expect("a checked run");
            assert!(
                check.violations.is_empty(),
                "at {at_us} us, seed {seed}: {:?}",
                check.violations
            );
        }
    }
}

/// Over an interconnect that loses messages the DRM's steps are numbered,
/// acknowledged and sent again like every database message (live, over a
/// transport, they are numbered too).
#[test]
fn a_drm_over_a_lossy_interconnect_completes_and_loses_nothing() {
    let mut s = scenario(2, 50, 5);
    s.phases[0].faults = vec![Fault::Loss {
        target: LinkTarget::All,
        loss_ppm: 20_000,
        correlation_ppm: 0,
    }];
    let o = run_variant("drm-lossy", &s, &SimOptions::checked());
    assert_checked(&o);
    let lines = alert_lines(&o);
    assert!(
        lines.iter().any(|(_, l)| l.starts_with("End DRM(1)")),
        "{lines:?}"
    );
}
