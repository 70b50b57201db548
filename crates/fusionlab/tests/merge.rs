//! A campaign split over machines: `sweep` and `chaos` with `--parts` run
//! contiguous slices of the runs, and `fusionlab merge` of the slices'
//! JSON prints, byte for byte, what the whole campaign prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");

/// Two or three instances updating hot rows: a sweep's expectation with a
/// figure, and a chaos campaign's timeline of 1.5 s.
const MINI: &str = r#"[scenario]
name = "mini-merge"
title = "A small campaign"
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
name = "first"
duration_s = 0.5

[[phase]]
name = "second"
duration_s = 1

[[expect]]
name = "instance 1 commits"
metric = "stat:user commits"
instance = 1
phase = "second"
op = ">="
value = 150
"#;

fn dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fusionlab-merge-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    std::fs::write(dir.join("mini.toml"), MINI).expect("write the scenario");
    dir
}

/// `fusionlab ARGS` with these environment variables, and none of the
/// parts' from the test's own environment.
fn fusionlab(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("FUSIONLAB_PARTS")
        .env_remove("FUSIONLAB_PART")
        .env_remove("FUSIONLAB_PART_INDEX");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run fusionlab")
}

/// The exit status a whole campaign has: 0, or 3 when a run failed.
fn ran(o: &Output) -> &[u8] {
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    &o.stdout
}

/// Write each output to DIR/NAME-K.json and return the paths.
fn save(dir: &Path, name: &str, outputs: &[Output]) -> Vec<String> {
    outputs
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let path = dir.join(format!("{name}-{}.json", k + 1));
            std::fs::write(&path, ran(o)).expect("write a part");
            path.to_string_lossy().into_owned()
        })
        .collect()
}

fn merge(files: &[String], json: bool) -> Output {
    let mut args = vec!["merge"];
    // In reverse: the order of the files does not matter.
    args.extend(files.iter().rev().map(String::as_str));
    if json {
        args.push("--json");
    }
    fusionlab(&args, &[])
}

#[test]
fn a_sweep_merged_from_its_parts_is_the_whole_sweep() {
    let d = dir("sweep");
    let file = d.join("mini.toml");
    let path = file.to_str().expect("utf-8 path");
    let sweep = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec![
            "sweep",
            path,
            "--seeds",
            "1..5",
            "--vary",
            "cluster.instances=2,3",
        ];
        args.extend(extra);
        fusionlab(&args, env)
    };
    // Three parts of 3, 3 and 4 runs on one thread each: the merge's
    // threads are theirs added up, the whole sweep's 3.
    let whole_json = sweep(&["--jobs", "3", "--json"], &[]);
    let whole_text = sweep(&["--jobs", "3"], &[]);
    let parts = [
        sweep(
            &["--jobs", "1", "--json", "--parts", "3", "--part", "1"],
            &[],
        ),
        sweep(
            &["--jobs", "1", "--json"],
            &[("FUSIONLAB_PARTS", "3"), ("FUSIONLAB_PART", "2")],
        ),
        sweep(
            &["--jobs", "1", "--json"],
            &[("FUSIONLAB_PARTS", "3"), ("FUSIONLAB_PART_INDEX", "2")],
        ),
    ];
    let files = save(&d, "sweep", &parts);
    let first: serde_json::Value = serde_json::from_slice(&parts[0].stdout).expect("JSON");
    assert_eq!(first["part"]["runs"], 3, "{first}");
    assert_eq!(first["per_run"].as_array().map(Vec::len), Some(3));
    let last: serde_json::Value = serde_json::from_slice(&parts[2].stdout).expect("JSON");
    assert_eq!(last["part"]["first_run"], 6, "{last}");
    assert_eq!(last["per_run"][0]["values"]["cluster.instances"], "3");
    let merged_json = merge(&files, true);
    assert_eq!(
        String::from_utf8_lossy(ran(&merged_json)),
        String::from_utf8_lossy(ran(&whole_json))
    );
    assert_eq!(merged_json.status.code(), whole_json.status.code());
    let merged_text = merge(&files, false);
    assert_eq!(
        String::from_utf8_lossy(ran(&merged_text)),
        String::from_utf8_lossy(ran(&whole_text))
    );
    // A part missing, a part twice, a part's text instead of its JSON.
    let o = merge(&files[..2], false);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("part 3 of 3 is missing (runs 7 to 10 of 10)"),
        "{e}"
    );
    let o = merge(&[files[0].clone(), files[0].clone()], false);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("both part 1 of 3"), "{e}");
    let text = d.join("text.json");
    std::fs::write(&text, &whole_text.stdout).expect("write");
    let o = merge(&[text.to_string_lossy().into_owned()], false);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not JSON"));
    // Another --set is another sweep.
    let other = sweep(
        &[
            "--jobs",
            "1",
            "--json",
            "--parts",
            "3",
            "--part",
            "3",
            "--set",
            "phase.first.duration_s=0.4",
        ],
        &[],
    );
    let mut mixed = files[..2].to_vec();
    mixed.extend(save(&d, "other", &[other]));
    let o = merge(&mixed, false);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("not the same sweep (their --set (replay) differ)"),
        "{e}"
    );
}

#[test]
fn a_chaos_campaign_merged_from_its_parts_is_the_whole_campaign() {
    let d = dir("chaos");
    let file = d.join("mini.toml");
    let path = file.to_str().expect("utf-8 path");
    let chaos = |extra: &[&str]| {
        let mut args = vec!["chaos", path, "--runs", "5", "--seed", "11"];
        args.extend(extra);
        fusionlab(&args, &[])
    };
    let whole_json = chaos(&["--json"]);
    let whole_text = chaos(&[]);
    let parts = [
        chaos(&["--json", "--parts", "2", "--part-index", "0"]),
        chaos(&["--json", "--parts", "2", "--part-index", "1"]),
    ];
    let second: serde_json::Value = serde_json::from_slice(&parts[1].stdout).expect("JSON");
    // 5 runs in 2 parts: runs 3 to 5, from seed 11 + 2.
    assert_eq!(second["seed"], 13, "{second}");
    assert_eq!(second["runs"], 3);
    let files = save(&d, "chaos", &parts);
    let merged_json = merge(&files, true);
    assert_eq!(
        String::from_utf8_lossy(ran(&merged_json)),
        String::from_utf8_lossy(ran(&whole_json))
    );
    let merged_text = merge(&files, false);
    assert_eq!(
        String::from_utf8_lossy(ran(&merged_text)),
        String::from_utf8_lossy(ran(&whole_text))
    );
    assert_eq!(merged_text.status.code(), whole_text.status.code());
    assert_eq!(merged_text.stderr, whole_text.stderr);
    // A part of a campaign from another seed does not fit.
    let shifted = fusionlab(
        &[
            "chaos", path, "--runs", "5", "--seed", "12", "--json", "--parts", "2", "--part", "2",
        ],
        &[],
    );
    let mut mixed = files[..1].to_vec();
    mixed.extend(save(&d, "shifted", &[shifted]));
    let o = merge(&mixed, false);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("another --seed?"), "{e}");
    // A sweep's part and a chaos campaign's do not merge.
    let sweep = fusionlab(
        &[
            "sweep", path, "--seeds", "1..2", "--json", "--parts", "2", "--part", "1",
        ],
        &[],
    );
    let mut mixed = files[..1].to_vec();
    mixed.extend(save(&d, "sweep", &[sweep]));
    let o = merge(&mixed, false);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("merge the parts of one campaign"), "{e}");
}

#[test]
fn bad_parts_are_bad_input() {
    let d = dir("bad");
    let file = d.join("mini.toml");
    let path = file.to_str().expect("utf-8 path");
    for (args, env, needle) in [
        (
            vec![
                "sweep", path, "--seeds", "1..4", "--parts", "2", "--part", "3",
            ],
            vec![],
            "numbered 1 to 2",
        ),
        (
            vec![
                "sweep", path, "--seeds", "1..4", "--parts", "5", "--part", "1",
            ],
            vec![],
            "more parts than the campaign's 4 runs",
        ),
        (
            vec!["chaos", path, "--runs", "4", "--parts", "0", "--part", "1"],
            vec![],
            "at least 1 part",
        ),
        (
            vec!["chaos", path, "--runs", "4", "--part", "1"],
            vec![("FUSIONLAB_PART_INDEX", "0"), ("FUSIONLAB_PARTS", "2")],
            "give one",
        ),
        (
            vec!["chaos", path, "--runs", "4"],
            vec![("FUSIONLAB_PARTS", "2")],
            "give the part to run",
        ),
        (
            vec!["sweep", path, "--seeds", "1..4", "--part-index", "2"],
            vec![("FUSIONLAB_PARTS", "2")],
            "indexed 0 to 1",
        ),
    ] {
        let o = fusionlab(&args, &env);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}
