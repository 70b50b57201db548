//! Broadcast on commit (`max_commit_propagation_delay = 0`, the default):
//! a commit waits until every other instance's LMS has acknowledged its
//! SCN, so a node whose LMS is starved stretches the other nodes' commits.
//! With the Lamport scheme (`max_commit_propagation_delay = 700`) the
//! commits do not wait for anybody.

use fusion_core::stats::Wait;
use fusion_report::RunResult;
use fusionlab_tests::{CPU_STARVATION, run_clean, shipped_short};

fn run(extra: &[&str]) -> RunResult {
    run_clean(&shipped_short(CPU_STARVATION, 2.0, extra), None).0
}

/// Instance 1's average `log file sync` (ms) and its count of `wait for scn ack` waits in a phase.
fn inst1_commit(r: &RunResult, phase: &str) -> (f64, u64) {
    let i = r.variants[0]
        .phase(phase)
        .and_then(|p| p.instance(1))
        .unwrap_or_else(|| panic!("no instance 1 in phase {phase}"));
    let sync = i.stats.event(Wait::LogFileSync);
    assert!(sync.waits > 0, "no commits on instance 1 in {phase}");
    let avg_ms = sync.time_ns as f64 / sync.waits as f64 / 1e6;
    (avg_ms, i.stats.event(Wait::WaitForScnAck).waits)
}

#[test]
fn a_starved_lms_elsewhere_stretches_commits_with_broadcast_on_commit() {
    let r = run(&[]);
    let (base, _) = inst1_commit(&r, "baseline");
    let (starved, acks_late) = inst1_commit(&r, "lms-normal-priority");
    let (rt, _) = inst1_commit(&r, "lms-realtime");
    assert!(
        starved > 5.0 * base,
        "inst1 log file sync {starved:.2} ms with inst2's LMS starved vs {base:.2} ms baseline"
    );
    assert!(acks_late > 0, "no late SCN acknowledgement was timed");
    assert!(
        rt < 2.0 * base,
        "inst1 log file sync {rt:.2} ms with inst2's LMS real-time vs {base:.2} ms baseline"
    );
}

#[test]
fn lamport_commits_wait_for_nobody() {
    let r = run(&["parameters.max_commit_propagation_delay=700"]);
    let (base, _) = inst1_commit(&r, "baseline");
    let (starved, acks) = inst1_commit(&r, "lms-normal-priority");
    assert_eq!(acks, 0, "SCN acknowledgements without broadcast on commit");
    assert!(
        starved < 2.0 * base,
        "inst1 log file sync {starved:.2} ms with inst2's LMS starved vs {base:.2} ms baseline"
    );
}

#[test]
fn the_parameter_is_checked() {
    let text = fusionlab_tests::shipped_text(CPU_STARVATION);
    let err = fusion_scenario::load_str(
        text,
        "scenarios/myth-cpu-starvation.toml",
        &["parameters.max_commit_propagation_delay=90001".to_string()],
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        err.contains("max_commit_propagation_delay") && err.contains("90000"),
        "unexpected error: {err}"
    );
}
