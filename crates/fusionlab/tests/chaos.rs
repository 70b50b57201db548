//! `fusionlab chaos` as a user runs it: counts, determinism, replay by seed,
//! the kinds drawn following the loader, exit statuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");

/// Three instances, hot rows updated, 3 s of timeline.
const MINI: &str = r#"[scenario]
name = "mini"
title = "A minimal scenario"
seed = 3

[cluster]
instances = 3

[[table]]
name = "t"
rows = 2000
rows_per_block = 20

[[index]]
name = "t_pk"
table = "t"

[[workload]]
name = "w"
instances = "all"
sessions_per_instance = 2
think_time_ms = 5

[[workload.transaction]]
name = "look"
steps = [{ op = "read", table = "t", via = "t_pk", keys = "hot" }, { op = "update", table = "t", via = "t_pk", keys = "hot" }, { op = "commit" }]

[[phase]]
name = "baseline"
duration_s = 1

[[phase]]
name = "second"
duration_s = 2
"#;

fn scenario(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fusionlab-chaos-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join("mini.toml");
    std::fs::write(&path, MINI).expect("writable");
    path
}

fn chaos(path: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .arg("chaos")
        .arg(path)
        .args(extra)
        .output()
        .expect("fusionlab starts")
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

#[test]
fn runs_are_counted_checked_and_the_same_every_time() {
    let path = scenario("counted");
    let a = chaos(&path, &["--runs", "4", "--seed", "7", "--json"]);
    let v = json(&a);
    assert_eq!(v["runs"], 4);
    assert_eq!(v["commits_lost"], 0);
    assert_eq!(v["violations"], 0);
    assert_eq!(v["failing_seeds"], serde_json::json!([]));
    assert!(
        v["commits_acknowledged"].as_u64().is_some_and(|n| n > 0),
        "{v}"
    );
    let faults: u64 = v["faults"]
        .as_object()
        .expect("faults by kind")
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert!(faults >= 4, "a few faults per run: {v}");
    // The kinds drawn follow the loader: each kind is drawn or says why not.
    let drawn: Vec<&str> = v["kinds_drawn"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert!(drawn.contains(&"pause"), "{v}");
    let refused = v["kinds_not_drawn"].as_array().expect("a list");
    assert!(
        refused
            .iter()
            .all(|r| r["why"].as_str().is_some_and(|w| !w.is_empty())),
        "{v}"
    );
    let mut kinds: Vec<&str> = drawn.clone();
    kinds.extend(refused.iter().filter_map(|r| r["kind"].as_str()));
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "kill",
            "long_pause",
            "loss",
            "partition",
            "pause",
            "restart"
        ]
    );
    // Deterministic, whatever the threads did.
    let b = chaos(&path, &["--runs", "4", "--seed", "7", "--json"]);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn a_run_is_replayed_by_its_seed() {
    let path = scenario("replay");
    // Whether or not the runs fail (exit status 0 or 3), the same seed
    // gives the same run.
    let any = |o: Output| -> serde_json::Value {
        assert!(matches!(o.status.code(), Some(0 | 3)), "{o:?}");
        serde_json::from_slice(&o.stdout).expect("one JSON object")
    };
    let all = any(chaos(&path, &["--runs", "3", "--seed", "40", "--json"]));
    let third = &all["per_run"][2];
    assert_eq!(third["seed"], 42);
    let one = any(chaos(&path, &["--runs", "1", "--seed", "42", "--json"]));
    assert_eq!(&one["per_run"][0], third);
}

#[test]
fn the_table_says_what_was_drawn_and_counted() {
    let path = scenario("table");
    let o = chaos(&path, &["--runs", "2", "--seed", "1"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    for line in [
        "Chaos: mini, 2 runs from seed 1 (run i has seed 1 + i), checked",
        "kinds drawn: ",
        "runs                  2",
        "commits lost          0",
        "violations            0",
        "failing seeds         none",
    ] {
        assert!(text.contains(line), "`{line}` missing:\n{text}");
    }
}

#[test]
fn no_runs_is_bad_input() {
    let path = scenario("zero");
    let o = chaos(&path, &["--runs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = chaos(Path::new("no-such-scenario"), &["--runs", "1"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `recovery:<figure>` loads as a metric; with no recovery in the phase the
/// verdict fails and says so.
#[test]
fn a_recovery_expectation_without_a_recovery_has_nothing_to_measure() {
    let path = scenario("expect");
    let text = format!(
        "{MINI}\n[[expect]]\nname = \"quick\"\nmetric = \"recovery:recovery_ms\"\nphase = \"second\"\nop = \"<\"\nvalue = 5000\n"
    );
    std::fs::write(&path, text).expect("writable");
    let o = Command::new(BIN)
        .args(["run", "--json"])
        .arg(&path)
        .env(
            "FUSIONLAB_DATA_DIR",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/fusionlab-data"),
        )
        .output()
        .expect("fusionlab starts");
    let v = json(&o);
    let verdict = &v["verdicts"][0];
    assert_eq!(verdict["passed"], false);
    assert_eq!(
        verdict["detail"],
        "cluster second recovery:recovery_ms: `recovery:recovery_ms` had nothing to measure \
         (no instance recovery in phase `second`)"
    );
    assert!(v["variants"][0]["phases"][1].get("recovery").is_none());
}

/// A file whose later variants and expectations name a failure of its own
/// (as frozen-node's do) runs: chaos keeps the first variant and judges by
/// its checkers. `--save-scenario` writes the run as a file `run` replays
/// with the same checked result.
#[test]
fn variants_and_expectations_naming_the_files_failures_do_not_stop_chaos() {
    let path = scenario("variants");
    let text = MINI.replace(
        "name = \"second\"\nduration_s = 2\n",
        "name = \"second\"\nduration_s = 2\n[[phase.fault]]\nkind = \"pause\"\ninstance = 2\n\
         duration_s = 0.5\n",
    ) + "\n[[variant]]\nname = \"short\"\n\n[[variant]]\nname = \"long\"\n\
         set = { \"phase.second.fault.0.duration_s\" = 1 }\n\n[[expect]]\nname = \"e\"\n\
         variant = \"long\"\nmetric = \"stat:user commits\"\nphase = \"second\"\nop = \">\"\nvalue = 0\n";
    std::fs::write(&path, text).expect("writable");
    let saved = path.with_file_name("saved.toml");
    let o = chaos(
        &path,
        &["--runs", "1", "--seed", "5", "--json", "--save-scenario"],
    );
    assert_eq!(o.status.code(), Some(2), "--save-scenario needs a file");
    let mut args = vec!["--runs", "1", "--seed", "5", "--json", "--save-scenario"];
    let saved_arg = saved.to_string_lossy().into_owned();
    args.push(&saved_arg);
    let v = json(&chaos(&path, &args));
    assert_eq!(v["runs"], 1);
    let run = &v["per_run"][0];
    let file = std::fs::read_to_string(&saved).expect("the run's scenario was written");
    assert!(file.contains("# Replay it: fusionlab run"), "{file}");
    assert!(!file.contains("name = \"long\""), "{file}");
    // The drawn faults are the file's only ones (its own pause is out).
    let faults = run["faults"].as_array().expect("the run's faults").len();
    assert_eq!(file.matches("[[phase.fault]]").count(), faults, "{file}");
    let o = Command::new(BIN)
        .args(["run", "--check", "--seed", "5"])
        .arg(&saved)
        .env(
            "FUSIONLAB_DATA_DIR",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/fusionlab-data"),
        )
        .output()
        .expect("fusionlab starts");
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(report.contains("no violation"), "{report}");
    // Two runs of the file: the saved scenario refuses `--runs 2`.
    let o = chaos(&path, &["--runs", "2", "--save-scenario", &saved_arg]);
    assert_eq!(o.status.code(), Some(2));
}
