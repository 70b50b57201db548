//! `Instance::handle_timeouts_folded`, observed from outside: a driver that
//! hands a deadline over and lets the instance go on to its next ones
//! itself, while nothing else can reach it, sees exactly what a driver
//! calling `handle_timeout` once per deadline sees: the same messages and
//! I/O at the same times, the same statistics, the same history.

mod harness;

use fusion_core::config::{NS_PER_MS, Step};
use fusion_core::types::InstId;
use harness::{Cluster, Latencies, configs, key_mastered_by, read, think_ms, update, workload};

/// Two instances reading and changing each other's blocks and their own,
/// run to the end of their iterations, folding or not.
fn run(fold: bool) -> Cluster {
    let catalog = harness::catalog(40, 10);
    let layout = harness::layout(2, &catalog);
    let (theirs, _) = key_mastered_by(&layout, InstId(1));
    let (ours, _) = key_mastered_by(&layout, InstId(0));
    let one = workload(
        "one",
        1,
        vec![read(theirs), update(ours), update(theirs), Step::Commit],
        30,
        1,
    );
    let two = workload(
        "two",
        2,
        vec![think_ms(1), read(ours), update(theirs), Step::Commit],
        30,
        2,
    );
    let mut cluster = Cluster::new(configs(2, catalog, vec![one, two]), Latencies::default());
    cluster.fold = fold;
    cluster.run_until(50 * NS_PER_MS);
    cluster.run_until_true(5_000 * NS_PER_MS, Cluster::sessions_finished);
    cluster
}

#[test]
fn an_instance_going_on_to_its_next_deadlines_sees_what_one_call_each_sees() {
    let plain = run(false);
    let folded = run(true);
    // Something happened, and part of it in deadlines one after another.
    assert!(plain.seen.len() > 100, "{} seen", plain.seen.len());
    assert!(
        folded.went_on > 100,
        "{} deadlines gone on to",
        folded.went_on
    );
    assert_eq!(format!("{:?}", folded.seen), format!("{:?}", plain.seen));
    assert_eq!(
        format!("{:?}", folded.history),
        format!("{:?}", plain.history)
    );
    for (a, b) in folded.instances.iter().zip(&plain.instances) {
        assert_eq!(a.stats(), b.stats());
    }
}
