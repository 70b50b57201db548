//! `fusionlab sweep` as a user runs it: the distribution agrees with `run`
//! seed by seed, the threads change nothing, bad input names its flag.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");

/// Two or three instances updating hot rows; one expectation that holds on
/// some seeds only (the commits of a 0.3 s phase, against a bar near their
/// middle), so that the distribution is not all or nothing.
const MINI: &str = r#"[scenario]
name = "mini-sweep"
title = "A small scenario whose verdict depends on its seed"
seed = 3

[cluster]
instances = 2

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
name = "run"
duration_s = 0.3

[[expect]]
name = "instance 1 commits a fair share"
metric = "stat:user commits"
instance = 1
phase = "run"
op = ">="
value = BAR
"#;

fn scenario(test: &str, bar: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fusionlab-sweep-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join("mini.toml");
    std::fs::write(&path, MINI.replace("BAR", &bar.to_string())).expect("write the scenario");
    path
}

fn fusionlab(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env(
            "FUSIONLAB_DATA_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep-store"),
        )
        .output()
        .expect("run fusionlab")
}

fn json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// Commits of instance 1 in `run` with this seed and instance count.
fn commits(path: &Path, seed: u64, instances: &str) -> f64 {
    let o = fusionlab(&[
        "run",
        path.to_str().expect("utf-8 path"),
        "--no-store",
        "--json",
        "--seed",
        &seed.to_string(),
        "--set",
        &format!("cluster.instances={instances}"),
    ]);
    let j = json(&o);
    let v = &j["verdicts"][0]["detail"];
    // "inst1 run: 1,234  >=  1,200": the figure before the operator.
    let detail = v.as_str().expect("a verdict detail");
    let figure = detail
        .split(": ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .expect("a figure in the detail");
    figure.replace(',', "").parse().expect("a number")
}

#[test]
fn the_distribution_is_the_runs_seed_by_seed() {
    // The bar: the median of instance 1's commits over the seeds, with two
    // instances, so some seeds pass and some do not.
    let probe = scenario("probe", 0);
    let seeds = [1u64, 2, 3, 4, 5];
    let mut two: Vec<f64> = seeds.iter().map(|&s| commits(&probe, s, "2")).collect();
    let three: Vec<f64> = seeds.iter().map(|&s| commits(&probe, s, "3")).collect();
    let mut sorted = two.clone();
    sorted.sort_by(f64::total_cmp);
    let bar = sorted[2] as u64;
    let path = scenario("sweep", bar);
    let o = fusionlab(&[
        "sweep",
        path.to_str().expect("utf-8 path"),
        "--seeds",
        "1..5",
        "--vary",
        "cluster.instances=2,3",
        "--json",
    ]);
    let j = json(&o);
    assert_eq!(j["runs"], 10);
    let cells = j["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 2);
    for (cell, (figures, instances)) in cells
        .iter()
        .zip([(&mut two, "2"), (&mut three.clone(), "3")])
    {
        assert_eq!(cell["values"]["cluster.instances"], instances);
        assert_eq!(cell["runs"], 5);
        let passing: Vec<u64> = seeds
            .iter()
            .zip(figures.iter())
            .filter(|(_, f)| **f >= bar as f64)
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(
            cell["reproduced"],
            passing.len(),
            "{instances} instances: {cell}"
        );
        let missed: Vec<u64> = seeds
            .iter()
            .copied()
            .filter(|s| !passing.contains(s))
            .collect();
        assert_eq!(cell["not_reproduced_seeds"], serde_json::json!(missed));
        let e = &cell["expectations"][0];
        assert_eq!(e["passed"], passing.len());
        figures.sort_by(f64::total_cmp);
        assert_eq!(e["measured"]["median"], figures[2], "{e}");
        assert_eq!(e["measured"]["min"], figures[0]);
        assert_eq!(e["measured"]["max"], figures[4]);
    }
    // With two instances the bar is the median: at least 3 of 5 pass, not all
    // unless the figures tie.
    assert!(cells[0]["reproduced"].as_u64() >= Some(3));
}

#[test]
fn one_thread_or_two_the_same_sweep() {
    let path = scenario("threads", 1);
    let p = path.to_str().expect("utf-8 path");
    let mut a = json(&fusionlab(&[
        "sweep", p, "--seeds", "10..13", "--jobs", "1", "--json",
    ]));
    let mut b = json(&fusionlab(&[
        "sweep", p, "--seeds", "10..13", "--jobs", "2", "--json",
    ]));
    assert_eq!(a["threads"], 1);
    assert_eq!(b["threads"], 2);
    a["threads"] = Value::Null;
    b["threads"] = Value::Null;
    assert_eq!(a, b);
    let text = fusionlab(&["sweep", p, "--seeds", "10..13"]);
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("REPRODUCED on 4 of 4 seeds"), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
}

#[test]
fn bad_seeds_and_values_are_named() {
    let path = scenario("bad", 1);
    let p = path.to_str().expect("utf-8 path");
    for (args, needle) in [
        (
            vec!["--seeds", "5..1"],
            "--seeds 5..1: the first seed is above the last",
        ),
        (vec!["--seeds", "x"], "`x` is not a seed"),
        (vec!["--vary", "cluster.instances"], "expected KEY=v1,v2"),
        (
            vec!["--vary", "cluster.instances=2,999"],
            "--vary cluster.instances=999",
        ),
        (vec!["--vary", "cluster.nonsense=1"], "nonsense"),
        (vec!["--jobs", "0"], "--jobs"),
    ] {
        let mut all = vec!["sweep", p];
        all.extend(args.iter().copied());
        let o = fusionlab(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
