//! A phase's figures are the phase's own: its largest waits are the ones of
//! its interval (not the run's so far), and work of a workload the phase
//! does not list stops at the boundary instead of running on into it.

use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, NS_PER_US};
use fusion_core::stats::{EventStat, HISTOGRAM_BUCKETS, Stats, Wait};
use fusion_report::PhaseResult;
use fusion_scenario::{Device, Fault, Phase};
use fusion_sim::{SimOptions, VariantOutcome, run_variant};
use fusion_testkit::{
    ScenarioBuilder, btree, params, phase, quiet_phase, read_by_index, table, txn, update_by_index,
    workload,
};

fn phase_named<'a>(o: &'a VariantOutcome, name: &str) -> &'a PhaseResult {
    o.result
        .phases
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no phase {name}"))
}

/// The upper bound (exclusive, ns) of the largest histogram bucket holding
/// a wait; `None` when it is the last, open-ended bucket.
fn largest_bucket_bound(e: &EventStat) -> Option<u64> {
    let b = e.histogram.iter().rposition(|&n| n > 0)?;
    (b < HISTOGRAM_BUCKETS - 1).then(|| (1u64 << b) * NS_PER_US)
}

/// Every event's and every statement's maximum wait in `s` fits the
/// interval's histogram: below the upper bound of its largest bucket, and
/// a statement's not above its event's.
fn assert_peaks_fit(s: &Stats, at: &str) {
    for &w in Wait::ALL {
        let e = s.event(w);
        if e.waits == 0 {
            assert_eq!(e.max_ns, 0, "{at}: {} has no wait but a maximum", w.name());
            continue;
        }
        if let Some(bound) = largest_bucket_bound(e) {
            assert!(
                e.max_ns < bound,
                "{at}: {} max {} us, but its histogram ends below {} us",
                w.name(),
                e.max_ns / NS_PER_US,
                bound / NS_PER_US
            );
        }
        for st in &s.statements {
            let sw = st.waits[w as usize];
            assert!(
                sw.max_ns <= e.max_ns,
                "{at}: {:?} waited {} us on {} at most, the event only {} us",
                st.sql,
                sw.max_ns / NS_PER_US,
                w.name(),
                e.max_ns / NS_PER_US
            );
        }
    }
}

/// Reads by index of a table four times the buffer cache, so most reads go
/// to disk: 40 ms each in phase `slow` (a data-disk fault on both
/// instances), then a quiet phase in which the reads in flight land, then
/// the normal 3 ms in phase `fast`.
fn slow_then_fast() -> VariantOutcome {
    let slow_disk = |instance| Fault::DiskLatency {
        instance,
        device: Device::Data,
        latency: 40 * NS_PER_MS,
        jitter: 0,
    };
    let s = ScenarioBuilder::new(2)
        .params(params(4, 100))
        .table(table("t", 8_000, 20))
        .index(btree("t_pk", 0, 200, 200))
        .workload(workload(
            "reads",
            2,
            2,
            NS_PER_MS,
            vec![txn("read", 1, vec![read_by_index(KeyDist::Uniform, 1)])],
        ))
        .phase(Phase {
            faults: vec![slow_disk(1), slow_disk(2)],
            ..phase("slow", NS_PER_S)
        })
        .phase(quiet_phase("gap", NS_PER_S))
        .phase(phase("fast", NS_PER_S))
        .build();
    let o = run_variant("peaks", &s, &SimOptions::default());
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    o
}

#[test]
fn a_phase_max_wait_is_its_own_and_fits_its_histogram() {
    let o = slow_then_fast();
    for p in &o.result.phases {
        for x in &p.instances {
            assert_peaks_fit(&x.stats, &format!("phase {} inst{}", p.name, x.id));
        }
    }
    for x in &phase_named(&o, "slow").instances {
        let e = x.stats.event(Wait::DbFileSequentialRead);
        assert!(
            e.waits > 0 && e.max_ns >= 40 * NS_PER_MS,
            "inst{}: the slow phase's reads are slow: {e:?}",
            x.id
        );
    }
    // Every read of the fast phase began in it, at the normal latency: its
    // maximum is not the slow phase's 40 ms.
    for x in &phase_named(&o, "fast").instances {
        let e = x.stats.event(Wait::DbFileSequentialRead);
        assert!(
            e.waits > 0 && e.max_ns < 20 * NS_PER_MS,
            "inst{}: the fast phase's largest read took {} us",
            x.id,
            e.max_ns / NS_PER_US
        );
        for st in &x.stats.statements {
            let sw = st.waits[Wait::DbFileSequentialRead as usize];
            assert!(
                sw.max_ns < 20 * NS_PER_MS,
                "inst{}: {:?}'s largest read in the fast phase took {} us",
                x.id,
                st.sql,
                sw.max_ns / NS_PER_US
            );
        }
    }
}

/// Workload `long` runs transactions of seconds (each changes a row, then
/// reads 20,000 rows by index) in phase `first`; phase `second` lists only
/// workload `other` (updates). Checked, so the transactions cut short must
/// leave a consistent database.
fn long_then_other() -> VariantOutcome {
    let long = txn(
        "long",
        1,
        vec![
            update_by_index(KeyDist::Uniform, 1),
            read_by_index(KeyDist::Uniform, 20_000),
        ],
    );
    let other = txn("other", 1, vec![update_by_index(KeyDist::Uniform, 1)]);
    let s = ScenarioBuilder::new(2)
        .table(table("t", 2_000, 20))
        .index(btree("t_pk", 0, 200, 200))
        .workload(workload("long", 2, 2, NS_PER_MS, vec![long]))
        .workload(workload("other", 2, 2, NS_PER_MS, vec![other]))
        .phase(Phase {
            workloads: Some(vec!["long".into()]),
            ..phase("first", 300 * NS_PER_MS)
        })
        .phase(Phase {
            workloads: Some(vec!["other".into()]),
            ..phase("second", 500 * NS_PER_MS)
        })
        .build();
    let o = run_variant("boundary", &s, &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    o
}

#[test]
fn a_session_of_an_unlisted_workload_starts_nothing_after_the_boundary() {
    let o = long_then_other();
    let select = |s: &Stats| {
        s.statements
            .iter()
            .find(|st| st.sql.starts_with("SELECT"))
            .map_or(0, |st| st.executions)
    };
    let update = |s: &Stats| {
        s.statements
            .iter()
            .find(|st| st.sql.starts_with("UPDATE"))
            .map_or(0, |st| st.executions)
    };
    for x in &phase_named(&o, "first").instances {
        assert!(
            select(&x.stats) > 100,
            "inst{}: long reads in phase first",
            x.id
        );
    }
    // An execution is counted when it starts: the one running at the
    // boundary belongs to phase first, and no other starts after it.
    for x in &phase_named(&o, "second").instances {
        assert_eq!(
            select(&x.stats),
            0,
            "inst{}: workload long went on into phase second",
            x.id
        );
        assert!(update(&x.stats) > 10, "inst{}: workload other runs", x.id);
    }
    let check = o.check.expect("checked");
    assert!(check.violations.is_empty(), "{:?}", check.violations);
}
