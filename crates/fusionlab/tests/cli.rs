//! The `fusionlab` binary as a user runs it: exit statuses, where output goes,
//! located errors for bad files, shipped scenarios by name from any directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");
const CPU: &str = "myth-cpu-starvation";

/// A tiny valid scenario the error tests break in one place each.
const MINI: &str = r#"[scenario]
name = "mini"
title = "A minimal scenario"
seed = 3

[cluster]
instances = 2

[network]
latency_us = 50

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
duration_s = 0.2

[[phase]]
name = "starved"
duration_s = 0.2

[[phase.fault]]
kind = "stress_cpu"
instance = 2
workers = 4

[[expect]]
name = "some blocks move"
metric = "stat:gc cr blocks received"
phase = "baseline"
op = ">="
value = 0
"#;

/// A directory of this test's own, away from the source tree (under
/// `target/tmp`), so shipped scenarios must come from the binary.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fusionlab-cli-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Run `fusionlab args` in `dir`.
fn fusionlab_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        // Runs are stored under the build's temporary directory, not $HOME.
        .env(
            "FUSIONLAB_DATA_DIR",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/fusionlab-data"),
        )
        .output()
        .expect("fusionlab starts")
}

/// Run `fusionlab args` in a scratch directory (so shipped scenarios must
/// come from the binary, not the working directory).
fn fusionlab(test: &str, args: &[&str]) -> Output {
    fusionlab_in(&scratch(test), args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{}", stderr(o));
}

/// `--set phase.<p>.duration_s=<secs>` for every phase of a shipped scenario.
fn short(name: &str, secs: f64) -> Vec<String> {
    let s = fusionlab::shipped::find(name).expect("shipped");
    let loaded = s.load(&[]).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for p in &loaded.variants[0].scenario.phases {
        out.push("--set".to_string());
        out.push(format!("phase.{:?}.duration_s={secs}", p.name));
    }
    out
}

fn args<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(tail.iter().map(String::as_str))
        .collect()
}

/// Write `text` as `file` in the test's scratch directory; its path.
fn write(test: &str, file: &str, text: &str) -> PathBuf {
    let path = scratch(test).join(file);
    std::fs::write(&path, text).expect("writable");
    path
}

/// 1-based line of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
}

// ---- tour, list, validate -----------------------------------------------------

#[test]
fn no_arguments_runs_the_tour() {
    let o = fusionlab("tour-default", &[]);
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("Fusionlab myth tour: "), "{out}");
    assert!(out.contains("Tour summary"));
    assert!(out.contains("myths reproduced\n"));
    assert!(out.contains("seed"), "the seeds are printed");
    let explicit = fusionlab("tour-explicit", &["tour"]);
    assert_status(&explicit, 0);
    assert_eq!(stdout(&explicit), out, "`fusionlab` is `fusionlab tour`");
}

#[test]
fn list_shows_every_shipped_scenario_aligned() {
    let o = fusionlab("list", &["list"]);
    assert_status(&o, 0);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), fusionlab::shipped::all().len(), "{out}");
    let title_at: Vec<usize> = lines
        .iter()
        .map(|l| {
            let name = l.split_whitespace().next().unwrap_or_default();
            assert!(
                fusionlab::shipped::find(name).is_some(),
                "`{name}` is not shipped"
            );
            l[name.len()..]
                .find(|c: char| c != ' ')
                .map(|i| i + name.len())
                .unwrap_or(0)
        })
        .collect();
    assert!(
        title_at.windows(2).all(|w| w[0] == w[1]),
        "titles not aligned:\n{out}"
    );
    for s in fusionlab::shipped::all() {
        let title = s.load(&[]).map(|l| l.title).unwrap_or_default();
        assert!(
            out.contains(&format!("{}  ", s.name)) && out.contains(&title),
            "{out}"
        );
    }
}

#[test]
fn validate_ok_by_name_and_by_path() {
    let o = fusionlab("validate-name", &["validate", CPU]);
    assert_status(&o, 0);
    let loaded = fusionlab::shipped::find(CPU)
        .and_then(|s| s.load(&[]).ok())
        .expect("loads");
    let phases = loaded.variants[0].scenario.phases.len();
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!("ok: {CPU} (1 variant, {phases} phases, ")),
        "{out}"
    );
    assert!(out.contains(" expectations); a run needs about "), "{out}");
    assert!(out.trim_end().ends_with(" of memory"), "{out}");

    let path = write("validate-path", "mini.toml", MINI);
    let o = fusionlab(
        "validate-path",
        &["validate", path.to_str().expect("utf-8")],
    );
    assert_status(&o, 0);
    assert!(
        stdout(&o).starts_with("ok: mini (1 variant, 2 phases, 1 expectation); a run needs about "),
        "{}",
        stdout(&o)
    );
    // A relative path, from its directory.
    let o = fusionlab_in(&scratch("validate-path"), &["validate", "mini.toml"]);
    assert_status(&o, 0);
    // --set is applied before checking.
    let o = fusionlab(
        "validate-path",
        &[
            "validate",
            path.to_str().expect("utf-8"),
            "--set",
            "cluster.instances=1",
        ],
    );
    assert_status(&o, 1);
    assert!(
        stderr(&o).contains("instance 2 is out of range 1..=1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn validate_reports_every_problem_and_exits_1() {
    let bad = MINI
        .replace("rows = 2000", "rows = \"many\"")
        .replace("latency_us = 50", "latency_us = -5");
    let o = fusionlab_in(
        &scratch("validate-bad"),
        &[
            "validate",
            &write("validate-bad", "bad.toml", &bad)
                .display()
                .to_string(),
        ],
    );
    assert_status(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "bad.toml:{}:14: `network.latency_us`",
            line_of(&bad, "latency_us")
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "bad.toml:{}:8: `table[0].rows`",
            line_of(&bad, "\"many\"")
        )),
        "{err}"
    );
    assert!(err.contains(": 2 problems"), "{err}");
    assert_eq!(stdout(&o), "");
    // A file that does not exist is bad input, not an invalid scenario.
    let o = fusionlab("validate-bad", &["validate", "no-such-file.toml"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("no-such-file.toml: no such file"),
        "{}",
        stderr(&o)
    );
}

// ---- run: bad input -------------------------------------------------------------

/// `run` on `text` written to a file: status 2, and stderr's first line
/// names `line:col` and `key` and says `words`.
#[track_caller]
fn run_rejects(test: &str, text: &str, line: usize, col: usize, key: &str, words: &str) {
    let path = write(test, "bad.toml", text);
    let o = fusionlab(test, &["run", path.to_str().expect("utf-8")]);
    assert_status(&o, 2);
    let err = stderr(&o);
    let want = format!("{}:{line}:{col}: `{key}`", path.display());
    assert!(
        err.lines()
            .any(|l| l.starts_with(&want) && l.contains(words)),
        "expected `{want}...{words}` in:\n{err}"
    );
    assert_eq!(stdout(&o), "", "nothing on stdout");
}

#[test]
fn run_rejects_an_unknown_key() {
    let text = MINI.replace("latency_us = 50", "latncy_us = 50");
    run_rejects(
        "unknown-key",
        &text,
        line_of(&text, "latncy"),
        1,
        "network.latncy_us",
        "did you mean `latency_us`?",
    );
}

#[test]
fn run_rejects_a_wrong_type() {
    let text = MINI.replace("workers = 4", "workers = \"four\"");
    run_rejects(
        "wrong-type",
        &text,
        line_of(&text, "\"four\""),
        11,
        "phase[1].fault[0].workers",
        "expected an integer in 1..=10000, found \"four\"",
    );
}

#[test]
fn run_rejects_an_instance_out_of_range() {
    let text = MINI.replace("\ninstance = 2", "\ninstance = 3");
    run_rejects(
        "instance-range",
        &text,
        line_of(&text, "\ninstance = 3".trim()),
        12,
        "phase[1].fault[0].instance",
        "instance 3 is out of range 1..=2",
    );
}

#[test]
fn run_rejects_a_negative_latency() {
    let text = MINI.replace("latency_us = 50", "latency_us = -0.5");
    run_rejects(
        "negative-latency",
        &text,
        line_of(&text, "-0.5"),
        14,
        "network.latency_us",
        "found -0.5",
    );
}

#[test]
fn run_rejects_malformed_toml() {
    let text = MINI.replace("rows_per_block = 20", "rows_per_block = = 20");
    let path = write("malformed", "bad.toml", &text);
    let o = fusionlab("malformed", &["run", path.to_str().expect("utf-8")]);
    assert_status(&o, 2);
    let err = stderr(&o);
    let want = format!("{}:{}:", path.display(), line_of(&text, "= = 20"));
    assert!(
        err.starts_with(&want) && err.contains("TOML syntax error"),
        "{err}"
    );
}

#[test]
fn run_rejects_a_missing_file_a_bad_set_and_an_unknown_phase() {
    let o = fusionlab("missing", &["run", "nope.toml"]);
    assert_status(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("nope.toml: no such file, and no shipped scenario has that name"),
        "{err}"
    );
    assert!(
        err.contains(CPU),
        "the message lists the shipped names: {err}"
    );

    let o = fusionlab("bad-set", &["run", CPU, "--set", "phase.nope.duration_s=1"]);
    assert_status(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("--set phase.nope.duration_s=1"), "{err}");
    assert!(err.contains("no element named or numbered `nope`"), "{err}");

    let o = fusionlab(
        "bad-set-value",
        &["run", CPU, "--set", "cluster.instances=many"],
    );
    assert_status(&o, 2);
    assert!(stderr(&o).contains("`cluster.instances`"), "{}", stderr(&o));

    let o = fusionlab("bad-set-syntax", &["run", CPU, "--set", "novalue"]);
    assert_status(&o, 2);
    assert!(stderr(&o).contains("expected KEY=VALUE"), "{}", stderr(&o));

    let o = fusionlab("bad-phase", &["run", CPU, "--phase", "nope"]);
    assert_status(&o, 2);
    assert!(stderr(&o).contains("no phase `nope`"), "{}", stderr(&o));

    let o = fusionlab("bad-seed", &["run", CPU, "--seed", "-1"]);
    assert_status(&o, 2);
}

/// An expectation on a figure no driver measures (the model has no free
/// buffer waits and counts no row cache gets) is refused before anything runs, on
/// either driver, naming the expectation and the metric: it would hold on
/// a 0 nobody measured.
#[test]
fn an_expectation_on_a_figure_the_driver_does_not_measure_is_refused() {
    let text = format!(
        "{MINI}
[[expect]]
name = \"no session waits for a free buffer\"
metric = \"waits:free buffer waits\"
phase = \"baseline\"
op = \"<\"
value = 1

[[expect]]
name = \"no row cache get\"
metric = \"stat:gc cr blocks received\"
phase = \"baseline\"
op = \">=\"
than = {{ metric = \"stat:fusionlab dc_sequences gets\" }}
"
    );
    let path = write("unmeasured", "unmeasured.toml", &text);
    let path = path.to_str().expect("utf-8");
    for (cmd, driver) in [
        (
            vec!["run", path, "--live"],
            "a live cluster does not measure",
        ),
        (vec!["run", path], "the simulator does not measure"),
    ] {
        let o = fusionlab("unmeasured", &cmd);
        assert_status(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(driver), "{err}");
        assert!(
            err.contains(
                "expectation \"no session waits for a free buffer\" reads `waits:free buffer waits`"
            ),
            "{err}"
        );
        assert!(
            err.contains(
                "expectation \"no row cache get\" reads `stat:fusionlab dc_sequences gets`"
            ),
            "{err}"
        );
        assert!(
            !err.contains("starting a local cluster"),
            "refused before any process starts: {err}"
        );
        assert_eq!(stdout(&o), "", "nothing ran");
    }
}

// ---- bounds on input (issue 14) ----------------------------------------------------

#[test]
fn sizes_beyond_the_model_are_located_errors() {
    // Rows one to a block past 32-bit block addresses (a panic in layout.rs).
    let path = write("too-many-blocks", "mini.toml", MINI);
    let file = path.to_str().expect("utf-8");
    let big = [
        "--set",
        "table.0.rows=4294967296",
        "--set",
        "table.0.rows_per_block=1",
    ];
    let o = fusionlab(
        "too-many-blocks",
        &args(&["validate", file], &big.map(String::from)),
    );
    assert_status(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{file}: --set table.0.rows=4294967296: `table[0].rows`: table `t` needs "
        )),
        "{err}"
    );
    assert!(err.contains("block addresses are 32-bit"), "{err}");
    let o = fusionlab(
        "too-many-blocks",
        &args(&["run", file], &big.map(String::from)),
    );
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("block addresses are 32-bit"),
        "{}",
        stderr(&o)
    );
    // Free blocks that wrapped around to a wrong model, in the file.
    let text = MINI.replace(
        "rows_per_block = 20\n",
        "rows_per_block = 20\nfree_blocks_per_instance = 4294967295\n",
    );
    run_rejects(
        "wrapped-free-blocks",
        &text,
        line_of(&text, "free_blocks_per_instance"),
        28,
        "table[0].free_blocks_per_instance",
        "block addresses are 32-bit: at most 4,294,967,295",
    );
}

#[test]
fn a_run_above_max_memory_is_refused_with_what_to_lower() {
    let path = write("max-memory", "mini.toml", MINI);
    let file = path.to_str().expect("utf-8");
    // A billion rows ("memory allocation failed" halfway through building them).
    let o = fusionlab(
        "max-memory",
        &[
            "run",
            file,
            "--set",
            "table.0.rows=1000000000",
            "--max-memory",
            "4G",
        ],
    );
    assert_status(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!("fusionlab: {file}: the run needs an estimated ")),
        "{err}"
    );
    assert!(
        err.contains("more than the limit of 4 GiB (--max-memory 4 GiB)"),
        "{err}"
    );
    assert!(err.contains("datafile images"), "{err}");
    assert!(
        err.contains("lower table `t` (rows, rows_per_block"),
        "{err}"
    );
    assert_eq!(stdout(&o), "");
    // validate says the same, with the same status.
    let o = fusionlab(
        "max-memory",
        &[
            "validate",
            file,
            "--set",
            "table.0.rows=1000000000",
            "--max-memory",
            "4G",
        ],
    );
    assert_status(&o, 2);
    assert!(stderr(&o).contains("datafile images"), "{}", stderr(&o));
    // 10,000 parallel query sessions per instance (7.6 GB when they ran).
    let o = fusionlab(
        "max-memory",
        &[
            "validate",
            "myth-inter-instance-pq",
            "--set",
            "workload.sql2.sessions_per_instance=10000",
            "--max-memory",
            "4G",
        ],
    );
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("parallel queries (10,001 coordinators"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("lower query `sql2`'s degree"),
        "{}",
        stderr(&o)
    );
    // The same file fits a larger limit; validate prints the estimate.
    let o = fusionlab("max-memory", &["validate", file, "--max-memory", "512M"]);
    assert_status(&o, 0);
    assert!(
        stdout(&o).contains("; a run needs about "),
        "{}",
        stdout(&o)
    );
    // The tour too, and a limit that is not a size is a usage error.
    let o = fusionlab("max-memory", &["tour", "--max-memory", "1M"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("fusionlab: the tour runs "),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "");
    let o = fusionlab("max-memory", &["run", file, "--max-memory", "lots"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("expected a size such as 4G"),
        "{}",
        stderr(&o)
    );
}

// ---- run: reports -----------------------------------------------------------------

#[test]
fn run_by_name_prints_only_json_with_json() {
    let sets = short(CPU, 0.2);
    let o = fusionlab("json", &args(&["run", CPU, "--json", "--seed", "9"], &sets));
    assert_status(&o, 0);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is only JSON");
    assert_eq!(j["scenario"], CPU);
    assert_eq!(j["seed"], 9);
    assert_eq!(
        j["phases"][0]["elapsed_us"], 200_000,
        "--set changed the durations"
    );
    assert!(j["verdicts"].as_array().is_some_and(|v| !v.is_empty()));
    assert_eq!(stderr(&o), "");
}

#[test]
fn run_takes_its_time_series_at_the_interval_asked_and_writes_the_html_page() {
    // Five phases of 0.2 s: 1 s of cluster time, four points of 250 ms.
    let sets = short(CPU, 0.2);
    let dir = scratch("series");
    let page = dir.join("report.html");
    let page_arg = page.display().to_string();
    let o = fusionlab_in(
        &dir,
        &args(
            &[
                "run",
                CPU,
                "--json",
                "--interval-ms",
                "250",
                "--html",
                &page_arg,
            ],
            &sets,
        ),
    );
    assert_status(&o, 0);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is only JSON");
    assert_eq!(j["series"]["interval_us"], 250_000);
    let instances = j["series"]["instances"].as_array().expect("per instance");
    assert_eq!(instances.len(), 2);
    let points = instances[0]["points"].as_array().expect("points");
    let ends: Vec<f64> = points.iter().filter_map(|p| p["t_s"].as_f64()).collect();
    assert_eq!(ends, [0.25, 0.5, 0.75, 1.0]);
    // The points add up to the phases.
    let commits: u64 = points
        .iter()
        .filter_map(|p| p["user_commits"].as_u64())
        .sum();
    let phases: u64 = j["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter_map(|p| p["instances"][0]["sysstat"]["user commits"].as_u64())
        .sum();
    assert_eq!(commits, phases);
    let html = std::fs::read_to_string(&page).expect("the page was written");
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    // The default interval is 1 s.
    let o = fusionlab("series-default", &args(&["run", CPU, "--json"], &sets));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is only JSON");
    assert_eq!(j["series"]["interval_us"], 1_000_000);
}

#[test]
fn html_to_a_path_that_cannot_be_written_and_a_zero_interval_are_bad_input() {
    let o = fusionlab(
        "html-bad",
        &["run", CPU, "--html", "/nonexistent-dir/report.html"],
    );
    assert_status(&o, 2);
    assert!(
        stderr(&o)
            .contains("--html /nonexistent-dir/report.html: cannot write the HTML report there"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "", "refused before the run");
    let o = fusionlab("interval-zero", &["run", CPU, "--interval-ms", "0"]);
    assert_status(&o, 2);
    assert!(stderr(&o).contains("--interval-ms"), "{}", stderr(&o));
}

#[test]
fn run_text_report_shows_the_seed_and_the_set_values() {
    let sets = short(CPU, 0.2);
    let o = fusionlab("text", &args(&["run", CPU], &sets));
    assert_status(&o, 0);
    let out = stdout(&o);
    let seed = fusionlab::shipped::find(CPU)
        .and_then(|s| s.load(&[]).ok())
        .expect("loads")
        .variants[0]
        .scenario
        .seed;
    // The rerun line: the seed and the program's version.
    let program = format!("fusionlab {}", env!("CARGO_PKG_VERSION"));
    assert!(
        out.contains(&format!("\nseed: {seed} ({program})\n")),
        "{out}"
    );
    assert!(out.contains("(simulated 0.200 s, from 0.000 s"), "{out}");
    assert!(out.contains("VERDICT: "), "{out}");
    assert!(
        out.contains("simulated myth-cpu-starvation: 1.0 s of cluster time"),
        "{out}"
    );

    let mut more = sets.clone();
    more.extend(["--set".to_string(), "scenario.seed=4242".to_string()]);
    let o = fusionlab("text-seed", &args(&["run", CPU], &more));
    assert_status(&o, 0);
    assert!(stdout(&o).contains(&format!("\nseed: 4242 ({program})\n")));

    let o = fusionlab(
        "text-seed-flag",
        &args(&["run", CPU, "--seed", "17", "--9i"], &sets),
    );
    assert_status(&o, 0);
    assert!(stdout(&o).contains(&format!("\nseed: 17 ({program})\n")));
}

#[test]
fn run_phase_filter() {
    let sets = short(CPU, 0.2);
    let loaded = fusionlab::shipped::find(CPU)
        .and_then(|s| s.load(&[]).ok())
        .expect("loads");
    let phases: Vec<&str> = loaded.variants[0]
        .scenario
        .phases
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let (first, last) = (phases[0], phases[phases.len() - 1]);
    let o = fusionlab("phase", &args(&["run", CPU, "--phase", last], &sets));
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(out.contains(&format!("Phase: {last} ")), "{out}");
    assert!(!out.contains(&format!("Phase: {first} ")), "{out}");
}

#[test]
fn run_a_file_from_its_path() {
    let path = write("file", "mini.toml", MINI);
    let o = fusionlab("file", &["run", path.to_str().expect("utf-8"), "--json"]);
    assert_status(&o, 0);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(j["scenario"], "mini");
    assert_eq!(j["seed"], 3);
}

#[test]
fn checkers_run_clean_on_a_short_cpu_starvation_run() {
    // 5 phases of 0.3 s: 1.5 s of cluster time.
    let sets = short(CPU, 0.3);
    let o = fusionlab("check", &args(&["run", CPU, "--check"], &sets));
    assert_status(&o, 0);
    let out = stdout(&o);
    assert!(out.contains(&format!("checked {CPU}: ")), "{out}");
    assert!(out.contains(": no violation\n"), "{out}");
    assert_eq!(stderr(&o), "");

    // With --json the check summary goes to stderr, stdout stays JSON.
    let o = fusionlab(
        "check-json",
        &args(&["run", CPU, "--check", "--json"], &sets),
    );
    assert_status(&o, 0);
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is only JSON");
    assert!(stderr(&o).contains("no violation"), "{}", stderr(&o));
}

/// A checked run whose sessions do not come to rest after it (a row held
/// over 120 s of think time) exits 3, saying what is still in flight.
#[test]
fn a_checked_run_that_does_not_come_to_rest_exits_3() {
    let stuck = MINI.replace(
        r#"{ op = "commit" }]"#,
        r#"{ op = "think", ms = 120000 }, { op = "commit" }]"#,
    );
    assert_ne!(stuck, MINI);
    let file = write("stuck", "stuck.toml", &stuck);
    let path = file.to_string_lossy();
    let o = fusionlab("stuck", &["run", &path, "--check"]);
    assert_status(&o, 3);
    let err = stderr(&o);
    assert!(
        err.contains(
            "fusionlab: mini: protocol error: the cluster did not come to rest within 60 s"
        ) && err.contains("inst1: sessions not at rest"),
        "{err}"
    );
    // The report is printed all the same.
    assert!(stdout(&o).contains("VERDICT: "), "{}", stdout(&o));
}

#[test]
fn usage_errors_exit_2() {
    assert_status(&fusionlab("usage", &["frobnicate"]), 2);
    assert_status(&fusionlab("usage", &["run"]), 2);
    assert_status(&fusionlab("usage", &["--help"]), 0);
    // --cluster only with --live; a live tour on a cluster file that is not there.
    assert_status(&fusionlab("usage", &["tour", "--cluster", "c.toml"]), 2);
    let o = fusionlab(
        "tour-live-missing",
        &["tour", "--live", "--cluster", "no-such-cluster.toml"],
    );
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("no-such-cluster.toml"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_live_run_refuses_faults_it_cannot_carry_out() {
    // A cluster of containers: no process ids, nothing the runner can signal.
    let dir = std::env::temp_dir().join(format!("fusionlab-cli-refuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        "token = \"t\"\ndir = \"/tmp\"\n[store]\naddress = \"store:7000\"\n\
         [[instance]]\nid = 1\ninterconnect = \"inst1:7101\"\nadmin = \"inst1:7201\"\n",
    )
    .expect("writable");
    let file = file.to_string_lossy().into_owned();
    let o = fusionlab(
        "live-kill",
        &[
            "run",
            "instance-crash-recovery",
            "--live",
            "--cluster",
            &file,
        ],
    );
    assert_status(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(
            "phase \"crash\" has a `kill` fault, which needs a runner that can kill, freeze \
             and start the instances' processes"
        ),
        "{err}"
    );
    assert!(err.contains("run it without --live"), "{err}");
    assert!(err.contains("inst1 has no process id"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn run_writes_a_gzipped_trace_and_says_what_it_holds() {
    let sets = short(CPU, 0.2);
    let dir = scratch("trace-gz");
    let file = dir.join("run.json.gz");
    let file_arg = file.display().to_string();
    let o = fusionlab_in(&dir, &args(&["run", CPU, "--trace", &file_arg], &sets));
    assert_status(&o, 0);
    assert!(stderr(&o).contains("trace: "), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("block transfers, written to"),
        "{}",
        stderr(&o)
    );
    let packed = std::fs::read(&file).expect("the trace was written");
    assert_eq!(packed[..2], [0x1f, 0x8b], "gzip's magic number");
    let mut json = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&packed[..]), &mut json)
        .expect("a whole gzip stream");
    let trace: serde_json::Value = serde_json::from_slice(&json).expect("JSON inside");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    assert!(events.iter().any(|e| e["ph"] == "X" && e["name"] == "CPU"));
    // The report on stdout is the one a run without a trace prints.
    let plain = fusionlab("trace-plain", &args(&["run", CPU], &sets));
    assert_eq!(stdout(&o), stdout(&plain));
}

#[test]
fn a_bad_trace_window_or_a_live_trace_is_refused_naming_the_flag() {
    for (window, says) in [
        ("3..1", "the start must come before the end"),
        ("2..2", "the start must come before the end"),
        ("-1..2", "is not a number of seconds"),
        ("10", "expected A..B"),
    ] {
        // `=`: a value may begin with `-`.
        let flag = format!("--trace-window={window}");
        let o = fusionlab("trace-window", &["run", CPU, "--trace", "x.json", &flag]);
        assert_status(&o, 2);
        assert!(
            stderr(&o).contains("--trace-window"),
            "{window}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains(says), "{window}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "refused before the run");
    }
    let o = fusionlab(
        "trace-window-alone",
        &["run", CPU, "--trace-window", "1..2"],
    );
    assert_status(&o, 2);
    assert!(stderr(&o).contains("--trace"), "{}", stderr(&o));
    let o = fusionlab("trace-live", &["run", CPU, "--live", "--trace", "x.json"]);
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("--trace x.json: the timeline trace is simulator-only for now"),
        "{}",
        stderr(&o)
    );
    let o = fusionlab(
        "trace-unwritable",
        &["run", CPU, "--trace", "/nonexistent-dir/t.json"],
    );
    assert_status(&o, 2);
    assert!(
        stderr(&o).contains("--trace /nonexistent-dir/t.json: cannot write the trace there"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn threads_give_the_same_report_and_bad_counts_are_named() {
    let tail = short(CPU, 0.2);
    let one = fusionlab(
        "threads-1",
        &args(&["run", CPU, "--no-store", "--threads", "1"], &tail),
    );
    let three = fusionlab(
        "threads-3",
        &args(&["run", CPU, "--no-store", "--threads", "3"], &tail),
    );
    assert_status(&one, 0);
    assert_status(&three, 0);
    assert!(
        stdout(&one).contains("Top 5 Timed Foreground Events"),
        "{}",
        stdout(&one)
    );
    assert!(
        stdout(&one) == stdout(&three),
        "the reports differ on 3 threads"
    );
    for bad in ["0", "1025", "many"] {
        let o = fusionlab("threads-bad", &["run", CPU, "--threads", bad]);
        assert_status(&o, 2);
        assert!(stderr(&o).contains("--threads"), "{bad}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "refused before the run");
    }
    let o = fusionlab("threads-live", &["run", CPU, "--live", "--threads", "2"]);
    assert_status(&o, 2);
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}
