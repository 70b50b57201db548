//! The run store from the command line: `run` records (two at once into
//! one store), `runs` lists, `show` prints a run again exactly, `compare`
//! puts two side by side (a snapshot of its text), and a store that is
//! corrupt or of another schema version is a clear error, never a panic.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");
const CPU: &str = "myth-cpu-starvation";

/// `fusionlab args` with the run store in `store`.
fn fusionlab(store: &Path, args: &[&str]) -> Output {
    spawn(store, args)
        .wait_with_output()
        .expect("fusionlab ends")
}

fn spawn(store: &Path, args: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .args(args)
        .env("FUSIONLAB_DATA_DIR", store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("fusionlab starts")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "--- stdout\n{}\n--- stderr\n{}",
        stdout(o),
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

/// The CPU starvation myth with short phases, and `extra` options.
fn short_cpu(extra: &[&'static str]) -> Vec<&'static str> {
    let mut a = vec!["run", CPU];
    for p in [
        "phase.warmup.duration_s=1",
        "phase.baseline.duration_s=2",
        "phase.lms-normal-priority.duration_s=2",
        "phase.lms-realtime.duration_s=2",
        "phase.lms-and-lgwr-realtime.duration_s=2",
    ] {
        a.extend(["--set", p]);
    }
    a.extend(extra);
    a
}

/// The comparison's text with the runs' times (the clock's) taken out.
fn without_times(text: &str) -> String {
    text.lines()
        .map(|l| match (l.find("  20"), l.find(" UTC")) {
            (Some(a), Some(b)) if a < b => format!("{}  <time>{}", &l[..a], &l[b..]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn runs_are_recorded_listed_shown_again_and_compared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    // Two runs into one store at once: the text report, and the JSON one
    // with a larger cpu_count.
    let text_run = spawn(&store, &short_cpu(&[]));
    let json_run = spawn(
        &store,
        &short_cpu(&["--set", "parameters.cpu_count=8", "--json"]),
    );
    let (text_run, json_run) = (
        text_run.wait_with_output().expect("ends"),
        json_run.wait_with_output().expect("ends"),
    );
    assert_status(&text_run, 0);
    assert_status(&json_run, 0);
    // Not a terminal: nothing more on stderr than the run says.
    assert!(
        !stderr(&text_run).contains("stored"),
        "{}",
        stderr(&text_run)
    );

    let list = fusionlab(&store, &["runs"]);
    assert_status(&list, 0);
    let listed = stdout(&list);
    assert!(listed.starts_with("ID  Time (UTC)"), "{listed}");
    // Five or six overrides do not fit beside the row: they go under it.
    let rows: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter(|l| !l.trim_start().starts_with("--set"))
        .collect();
    assert_eq!(rows.len(), 2, "{listed}");
    for l in &rows {
        assert!(
            l.contains(CPU) && l.contains("REPRODUCED") && l.contains(" 42 "),
            "{l}"
        );
    }
    assert_eq!(listed.matches("--set phase.").count(), 10, "{listed}");
    assert_eq!(
        listed.matches("--set parameters.cpu_count=8").count(),
        1,
        "{listed}"
    );
    for l in listed.lines() {
        assert!(l.chars().count() <= 100, "{l}");
    }
    // Ids in the order the two runs happened to finish.
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&fusionlab(&store, &["runs", "--json"]))).expect("JSON");
    let rows = json.as_array().expect("an array");
    let id_with = |cpu8: bool| {
        rows.iter()
            .find(|r| {
                r["sets"]
                    .as_array()
                    .expect("sets")
                    .iter()
                    .any(|s| s == "parameters.cpu_count=8")
                    == cpu8
            })
            .and_then(|r| r["id"].as_i64())
            .expect("a run")
            .to_string()
    };
    let (first, second) = (id_with(false), id_with(true));

    // show: exactly what each run printed.
    let shown = fusionlab(&store, &["show", &first]);
    assert_status(&shown, 0);
    assert_eq!(stdout(&shown), stdout(&text_run));
    let shown = fusionlab(&store, &["show", &second, "--json"]);
    assert_eq!(stdout(&shown), stdout(&json_run));
    // The JSON run's text report was stored too.
    let shown = fusionlab(&store, &["show", &second]);
    assert!(
        stdout(&shown).contains("Global Cache and Enqueue Services"),
        "{}",
        stdout(&shown)
    );
    let scenario = stdout(&fusionlab(&store, &["show", &second, "--scenario"]));
    assert!(scenario.contains("[[phase]]"));
    assert!(
        scenario.ends_with("# --set parameters.cpu_count=8\n"),
        "{scenario}"
    );
    let html = dir.path().join("run.html");
    let o = fusionlab(
        &store,
        &["show", &first, "--html", html.to_str().expect("utf-8")],
    );
    assert_status(&o, 0);
    let page = std::fs::read_to_string(&html).expect("written");
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<pre>"));

    // compare: a snapshot of one phase, the runs' times taken out.
    let cmp = fusionlab(
        &store,
        &["compare", &first, &second, "--phase", "lms-normal-priority"],
    );
    assert_status(&cmp, 0);
    let text = stdout(&cmp);
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too long: {line}");
    }
    let text = without_times(&text)
        .replace(&format!("run {first} "), "run A ")
        .replace(&format!("run {second} "), "run B ");
    insta::assert_snapshot!("compare_cpu_count", text);
    let page = dir.path().join("cmp.html");
    let o = fusionlab(
        &store,
        &[
            "compare",
            &first,
            &second,
            "--all",
            "--html",
            page.to_str().expect("utf-8"),
        ],
    );
    assert_status(&o, 0);
    assert!(
        !stdout(&o).contains("more statistics differ"),
        "--all shows every one"
    );
    let page = std::fs::read_to_string(&page).expect("written");
    assert!(page.contains("<h1>AWR Compare Periods Report</h1>"));
    assert!(page.contains("Phase lms-normal-priority, inst1"));

    // Runs that are not there, phases neither run has.
    let o = fusionlab(&store, &["show", "99"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("runs.sqlite: no run 99 (runs are numbered 1 to 2)"),
        "{}",
        stderr(&o)
    );
    let o = fusionlab(&store, &["compare", &first, &second, "--phase", "nope"]);
    assert_status(&o, 2);
    assert!(stderr(&o).contains("--phase nope: neither run has a phase `nope`"));

    // --no-store leaves the store as it was.
    let o = fusionlab(&store, &[&short_cpu(&["--no-store"])[..]].concat());
    assert_status(&o, 0);
    let listed = stdout(&fusionlab(&store, &["runs", "--json"]));
    assert_eq!(listed.matches("\"id\"").count(), 2, "{listed}");
}

#[test]
fn a_corrupt_or_foreign_store_is_a_clear_error_and_a_run_still_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("runs.sqlite");
    std::fs::write(
        &file,
        "not a database, only text that happens to be here\n".repeat(50),
    )
    .expect("writes");
    let o = fusionlab(dir.path(), &["runs"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).starts_with(&format!("{}: not a SQLite database", file.display())),
        "{}",
        stderr(&o)
    );
    // The run prints its report and its status; only the storing failed.
    let o = fusionlab(dir.path(), &short_cpu(&["--phase", "baseline"]));
    assert_status(&o, 0);
    assert!(stdout(&o).contains("Global Cache and Enqueue Services"));
    assert!(
        stderr(&o).contains(&format!(
            "fusionlab: the run was not stored: {}: not a SQLite database",
            file.display()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&file).expect("still there").len(),
        "not a database, only text that happens to be here\n".len() * 50,
        "the file is left as it was"
    );
}

#[test]
fn a_store_of_an_older_or_newer_schema_is_refused_with_both_versions() {
    for (version, words) in [
        (
            0,
            "run store schema version 0 is older than any this fusionlab reads (version 1)",
        ),
        (
            7,
            "run store schema version 7 was written by a newer fusionlab; this one reads version 1",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        fusion_history::RunStore::open(dir.path(), fusion_history::Access::Write).expect("a store");
        let c = rusqlite::Connection::open(dir.path().join("runs.sqlite")).expect("opens");
        c.execute("UPDATE schema_version SET version = ?1", [version])
            .expect("updates");
        drop(c);
        for args in [&["runs"][..], &["show", "1"], &["compare", "1", "2"]] {
            let o = fusionlab(dir.path(), args);
            assert_status(&o, 2);
            assert!(stderr(&o).contains(words), "{args:?}: {}", stderr(&o));
        }
    }
}

#[test]
fn runs_without_a_store_say_where_it_would_be() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = fusionlab(&dir.path().join("none"), &["runs"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("none/runs.sqlite: no run store here yet"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("none").exists(), "looking creates nothing");
}
