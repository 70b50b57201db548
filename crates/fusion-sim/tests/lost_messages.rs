//! Lost messages on the interconnect (a `loss` fault): what the DBA sees
//! (`gc blocks lost`, `gc cr block lost` waits of 500 ms), that a checked
//! run stays correct while the instances send again what was lost, that
//! the same seed gives the same run, and, as a property, that losing any
//! one message at any point keeps every invariant the checkers verify.

use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, Nanos, Params, Step};
use fusion_core::stats::{Stat, Wait};
use fusion_scenario::{Fault, LinkTarget, Phase, Scenario};
use fusion_sim::{SimOptions, VariantOutcome, run_variant, run_variant_losing};
use fusion_testkit::{
    ScenarioBuilder, btree, phase, quiet_phase, read_by_index, table, txn, update_by_index,
    workload,
};
use proptest::prelude::*;

fn loss(pct: u32) -> Fault {
    Fault::Loss {
        target: LinkTarget::All,
        loss_ppm: pct * 10_000,
        correlation_ppm: 0,
    }
}

/// `instances` instances reading and updating a hot part of one table: a
/// clean warm-up, `lossy` with `faults`, and a quiet end.
fn oltp(instances: u8, seed: u64, faults: Vec<Fault>, lossy: Nanos) -> Scenario {
    let hot = KeyDist::Hot {
        fraction: 0.02,
        share: 0.6,
    };
    ScenarioBuilder::new(instances)
        .seed(seed)
        .params(Params {
            gcs_server_processes: 2,
            ..fusion_testkit::params(8, 4_000)
        })
        .table(table("t", 20_000, 40))
        .index(btree("t_pk", 0, 64, 64))
        .workload(workload(
            "oltp",
            instances,
            6,
            20 * NS_PER_MS,
            vec![
                txn("read", 3, vec![read_by_index(hot.clone(), 3), Step::Commit]),
                txn("update", 2, vec![update_by_index(hot, 2), Step::Commit]),
            ],
        ))
        .phase(phase("warm", NS_PER_S))
        .phase(Phase {
            faults,
            ..phase("lossy", lossy)
        })
        .phase(quiet_phase("quiet", NS_PER_S))
        .build()
}

/// What the checked run found wrong, one line each (empty: nothing).
fn problems(o: &VariantOutcome) -> Vec<String> {
    let mut p: Vec<String> = o.errors.iter().map(|e| format!("error: {e}")).collect();
    match &o.check {
        None => p.push("the checker did not run".into()),
        Some(check) => {
            p.extend(check.violations.iter().map(|v| format!("violation: {v}")));
            if check.commits == 0 || check.reads_checked == 0 {
                p.push("vacuous: no commit or no checked read".into());
            }
        }
    }
    p
}

#[test]
fn one_and_five_percent_loss_show_as_lost_blocks_of_500_ms_and_stay_correct() {
    for pct in [1, 5] {
        let s = oltp(3, 5, vec![loss(pct)], 4 * NS_PER_S);
        let o = run_variant("loss", &s, &SimOptions::checked());
        let p = problems(&o);
        assert!(p.is_empty(), "{pct} % loss:\n{}", p.join("\n"));
        let lossy = &o.result.phases[1].instances;
        let lost: u64 = lossy.iter().map(|i| i.stats.get(Stat::GcBlocksLost)).sum();
        assert!(lost > 0, "{pct} % loss: no block was lost");
        let (waits, time) = lossy.iter().fold((0, 0), |(w, t), i| {
            let e = i.stats.event(Wait::GcCrBlockLost);
            (w + e.waits, t + e.time_ns)
        });
        assert!(waits > 0, "{pct} % loss: no gc cr block lost wait");
        let avg_ms = time as f64 / waits as f64 / NS_PER_MS as f64;
        assert!(
            (450.0..=550.0).contains(&avg_ms),
            "{pct} % loss: a lost cr block waits {avg_ms:.1} ms, not about 500"
        );
        let warm = &o.result.phases[0].instances;
        assert!(
            warm.iter().all(|i| i.stats.get(Stat::GcBlocksLost) == 0
                && i.stats.event(Wait::GcCrBlockLost).waits == 0),
            "nothing is lost before the loss starts"
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_lossy_run_and_another_seed_another() {
    let run = |seed| {
        let o = run_variant(
            "det",
            &oltp(3, seed, vec![loss(2)], 2 * NS_PER_S),
            &SimOptions::default(),
        );
        format!("{:?}", o.result)
    };
    let a = run(3);
    assert_eq!(a, run(3), "same seed, same run");
    assert_ne!(a, run(4), "another seed, another run");
}

/// A loss of 0 % turns the instances' sublayer on without losing anything,
/// so the test hook alone decides what is lost.
fn with_sublayer(instances: u8, seed: u64) -> Scenario {
    oltp(instances, seed, vec![loss(0)], NS_PER_S)
}

#[test]
fn losing_the_first_message_is_survived() {
    let o = run_variant_losing("first", &with_sublayer(2, 1), &SimOptions::checked(), 1);
    let p = problems(&o);
    assert!(p.is_empty(), "{}", p.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Losing any one message (the `k`-th of the run other than heartbeats,
    /// on any link, whatever it carries, an acknowledgement too) keeps every invariant: no protocol error, a
    /// cluster that settles, coherence, consistent reads, no lost write, a
    /// valid index.
    #[test]
    fn losing_any_one_message_keeps_every_invariant(
        instances in 2u8..=3,
        seed in 0u64..1_000,
        // A 2-instance run sends some 10,000 (acknowledgements included).
        k in 1u64..4_500,
    ) {
        let o = run_variant_losing("prop", &with_sublayer(instances, seed), &SimOptions::checked(), k);
        let p = problems(&o);
        prop_assert!(
            p.is_empty(),
            "losing message {k} of a {instances}-instance run, seed {seed}:\n{}",
            p.join("\n")
        );
    }
}
