//! The end of a checked run waits for the cluster to come to rest before
//! the final checks; a cluster that does not is an error naming what is
//! still in flight, not a silent give-up.

use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, Step};
use fusion_scenario::Scenario;
use fusion_sim::{SimOptions, run_variant};
use fusion_testkit::{ScenarioBuilder, btree, phase, table, txn, update_by_index, workload};

/// Every session changes a row, then thinks `think_s` seconds before it
/// commits: until then it holds the row and is not at rest.
fn scenario(think_s: u64) -> Scenario {
    let slow = txn(
        "slow",
        1,
        vec![
            update_by_index(KeyDist::Uniform, 1),
            Step::Think {
                time: think_s * NS_PER_S,
            },
            Step::Commit,
        ],
    );
    ScenarioBuilder::new(2)
        .table(table("t", 400, 20))
        .index(btree("t_pk", 0, 32, 32))
        .workload(workload("w", 2, 1, NS_PER_MS, vec![slow]))
        .phase(phase("run", 200 * NS_PER_MS))
        .build()
}

#[test]
fn a_cluster_that_does_not_come_to_rest_is_an_error_naming_what_is_in_flight() {
    // 120 s of think time: longer than the 60 s the quiesce waits.
    let o = run_variant("stuck", &scenario(120), &SimOptions::checked());
    assert!(o.check.is_none(), "no checks over a cluster not at rest");
    let e = o
        .errors
        .iter()
        .find(|e| e.contains("did not come to rest"))
        .unwrap_or_else(|| panic!("no error for the unsettled cluster: {:?}", o.errors));
    assert!(
        e.contains("within 60 s of simulated time")
            && e.contains("inst1: sessions not at rest")
            && e.contains("inst2: sessions not at rest"),
        "{e}"
    );
    // Unchecked runs do not wait for rest: nothing to report.
    let plain = run_variant("stuck", &scenario(120), &SimOptions::default());
    assert!(plain.errors.is_empty(), "{:?}", plain.errors);
}

#[test]
fn a_cluster_that_comes_to_rest_in_time_is_checked() {
    // 20 s of think time: the sessions commit within the quiesce's 60 s.
    let o = run_variant("slow", &scenario(20), &SimOptions::checked());
    assert!(o.errors.is_empty(), "{:?}", o.errors);
    let check = o.check.expect("checked");
    assert!(check.commits >= 2, "the thinking sessions committed");
}
