//! `fusionlab chaos --live` as a user runs it: the simulator's chaos draws
//! carried out on real processes, a private local cluster per run, stopped
//! after it; the checkers count what was acknowledged and lost.

use std::path::PathBuf;

mod common;
use common::{fusionlab, processes_in};

/// instance-crash-recovery shortened to 11 s of timeline a run.
const SHORT: &[&str] = &[
    "--set",
    "phase.warmup.duration_s=1",
    "--set",
    "phase.baseline.duration_s=1",
    "--set",
    "phase.crash.duration_s=8",
    "--set",
    "phase.after.duration_s=1",
];

/// `chaos --live` with `options` over instance-crash-recovery shortened,
/// 2 runs from seed 44 (a pause and a kill, a kill and a loss): its JSON
/// and stderr, once it exited 0.
fn two_runs(options: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec!["chaos", "--live"];
    args.extend_from_slice(options);
    args.extend([
        "instance-crash-recovery",
        "--runs",
        "2",
        "--seed",
        "44",
        "--json",
    ]);
    args.extend_from_slice(SHORT);
    let o = fusionlab(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}\n{out}");
    (serde_json::from_str(&out).expect("one JSON object"), err)
}

#[test]
fn live_chaos_runs_check_every_run_and_leave_no_process_behind() {
    let (v, err) = two_runs(&[]);
    assert_eq!(v["driver"], "live", "{v}");
    assert_eq!(v["runs"], 2, "{v}");
    assert!(v["commits_acknowledged"].as_u64().unwrap_or(0) > 0, "{v}");
    assert_eq!(v["commits_lost"], 0, "{v}");
    assert_eq!(v["violations"], 0, "{v}");
    assert_eq!(v["protocol_errors"], 0, "{v}");
    let drawn: u64 = v["faults"]
        .as_object()
        .expect("faults by kind")
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert!(drawn >= 2, "at least one fault a run: {v}");
    // One private cluster a run, every process of it stopped and its
    // directory removed.
    let dirs: Vec<PathBuf> = err
        .lines()
        .filter_map(|l| l.strip_prefix("starting a local cluster of 3 instances in "))
        .map(PathBuf::from)
        .collect();
    assert_eq!(dirs.len(), 2, "{err}");
    for dir in &dirs {
        assert!(
            processes_in(dir).is_empty(),
            "{} left running",
            dir.display()
        );
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}

#[test]
fn live_chaos_on_a_running_cluster_uses_it_for_every_run_and_leaves_it_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = common::up(dir.path(), 3);
    let file = dir.path().join("cluster.toml");
    c.0.write(&file).expect("the cluster file");
    let file = file.to_str().expect("utf-8").to_string();
    let (v, err) = two_runs(&["--cluster", file.as_str()]);
    assert_eq!(v["driver"], "live-cluster", "{v}");
    assert_eq!(v["commits_lost"], 0, "{v}");
    assert_eq!(v["violations"], 0, "{v}");
    assert!(
        !err.contains("starting a local cluster"),
        "no cluster of its own: {err}"
    );
    // The cluster is still there for the next experiment: every instance
    // answers (the killed ones were started again by the runner).
    let status = fusionlab(["status", "--cluster", file.as_str()]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    // Stopped by the file, which names the instances started again.
    let down = fusionlab(["down", "--cluster", file.as_str()]);
    assert_eq!(down.status.code(), Some(0));
    assert!(processes_in(dir.path()).is_empty(), "left running");
    drop(c);
}

#[test]
fn live_chaos_says_what_is_wrong_with_its_input() {
    let o = fusionlab(["chaos", "--live", "instance-crash-recovery", "--runs", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--runs: give at least 1 run"), "{err}");
    let o = fusionlab(["chaos", "--live", "no-such-scenario", "--runs", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-scenario"), "{err}");
    assert!(!err.contains("starting a local cluster"), "{err}");
}
