//! What the live processes log: each process of a cluster started by `up`
//! logs to its file in the cluster directory (the alert log lines of a
//! scripted kill, under the spans of the run, the phase and the
//! reconfiguration; the signal or call that stopped it), and a process
//! that panics says so, with where, before it dies (as JSON lines when
//! asked).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{EXE, assert_ok, fusionlab, hot_rows};

fn log(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default()
}

/// `fusionlab down` when the test ends, whatever happens.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = fusionlab([Path::new("down"), Path::new("--cluster"), &self.0]);
    }
}

#[test]
fn an_instance_log_holds_the_alert_lines_of_a_kill_under_the_run_phase_and_reconfiguration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cdir = dir.path().join("c");
    let up = fusionlab([
        Path::new("up"),
        Path::new("--instances"),
        Path::new("3"),
        Path::new("--dir"),
        &cdir,
    ]);
    assert_ok(&up);
    let file = cdir.join("cluster.toml");
    let down = Down(file.clone());
    let run = fusionlab([
        "run",
        "--live",
        "--cluster",
        &file.display().to_string(),
        "instance-crash-recovery",
        "--set",
        "phase.warmup.duration_s=1",
        "--set",
        "phase.baseline.duration_s=1",
        "--set",
        "phase.crash.duration_s=9",
        "--set",
        "phase.after.duration_s=1",
    ]);
    assert_ok(&run);
    drop(down);

    // The survivor that recovered inst3: the eviction, under the crash
    // phase and a reconfiguration span of the run.
    let inst1 = log(&cdir, "inst1");
    let eviction = inst1
        .lines()
        .find(|l| l.contains("Evicting instance 3 from cluster"))
        .unwrap_or_else(|| panic!("no eviction in inst1.log:\n{inst1}"));
    assert!(eviction.contains(" INFO "), "{eviction}");
    assert!(eviction.contains(" alert: "), "{eviction}");
    assert!(
        eviction.contains("run{scenario=instance-crash-recovery"),
        "{eviction}"
    );
    assert!(eviction.contains(":phase{name=crash}:"), "{eviction}");
    assert!(
        eviction.contains(":reconfiguration{incarnation="),
        "{eviction}"
    );
    assert!(
        inst1.lines().any(
            |l| l.contains(" alert: ") && l.contains("Completed instance recovery at Thread 3")
        ),
        "{inst1}"
    );
    // The last words of one stopped by `down`.
    assert!(
        inst1.contains("shutdown asked over the admin service: stopping"),
        "{inst1}"
    );
    assert!(
        inst1.lines().last().is_some_and(|l| l.contains("exiting")),
        "{inst1}"
    );
    // The killed one said it was told to crash (SIGKILL left no more).
    let inst3 = log(&cdir, "inst3");
    assert!(inst3.contains("crashing on the runner's order"), "{inst3}");
    // The store, stopped by SIGTERM.
    let store = log(&cdir, "store");
    assert!(store.contains("formatted for a new run"), "{store}");
    assert!(store.contains("received SIGTERM: stopping"), "{store}");
    assert!(
        store.lines().last().is_some_and(|l| l.contains("exiting")),
        "{store}"
    );
}

/// One process of a cluster started by hand (as containers start them),
/// killed with `procs`: its stderr to `dir/NAME.log`; returns the
/// addresses it wrote to `dir/NAME.addr`.
fn start(
    procs: &mut Killed,
    dir: &Path,
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Vec<String> {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).expect("log");
    let addr_file = dir.join(format!("{name}.addr"));
    procs.0.push(
        Command::new(EXE)
            .args(args)
            .arg("--addr-file")
            .arg(&addr_file)
            .env("FUSIONLAB_TOKEN", "logs-test-token")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starts"),
    );
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(t) = std::fs::read_to_string(&addr_file)
            && t.ends_with('\n')
        {
            return t.lines().map(str::to_string).collect();
        }
        assert!(Instant::now() < end, "{name} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Children killed when the test ends.
struct Killed(Vec<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A debug build's instance host panics when FUSIONLAB_TEST_PANIC_AFTER_MS
/// says so (a release build never reads it).
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "the panic switch exists in debug builds only"
)]
fn an_instance_that_panics_logs_why_and_where_as_its_last_json_line_and_exits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let store_dir = d.join("store");
    let mut procs = Killed(Vec::new());
    let s = start(
        &mut procs,
        d,
        "store",
        &[
            "store",
            "--listen",
            "127.0.0.1:0",
            "--dir",
            &store_dir.display().to_string(),
        ],
        &[],
    );
    let mut members = Vec::new();
    for id in 1..=3u8 {
        let name = format!("inst{id}");
        let env: &[(&str, &str)] = if id == 2 {
            &[("FUSIONLAB_TEST_PANIC_AFTER_MS", "1500")]
        } else {
            &[]
        };
        let id_arg = id.to_string();
        let mut args = vec![
            "instance",
            "--id",
            &id_arg,
            "--interconnect",
            "127.0.0.1:0",
            "--admin",
            "127.0.0.1:0",
        ];
        if id == 2 {
            args.extend(["--log-format", "json"]);
        }
        let a = start(&mut procs, d, &name, &args, env);
        members.push(format!(
            "[[instance]]\nid = {id}\ninterconnect = \"{}\"\nadmin = \"{}\"\n",
            a[0], a[1]
        ));
    }
    let file = d.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            "token = \"logs-test-token\"\ndir = \"{}\"\n[store]\naddress = \"{}\"\n{}",
            d.display(),
            s[0],
            members.join("")
        ),
    )
    .expect("cluster file");
    // The run loads the scenario (the host starts); inst2 dies in it (the
    // survivors go on without it).
    let run = fusionlab([
        Path::new("run"),
        Path::new("--live"),
        Path::new("--cluster"),
        &file,
        Path::new("--set"),
        Path::new("phase.run.duration_s=8"),
        &hot_rows(),
    ]);
    let ran = String::from_utf8_lossy(&run.stderr).into_owned();
    let inst2 = &mut procs.0[2];
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = inst2.try_wait().expect("waits") {
            break s;
        }
        assert!(Instant::now() < end, "inst2 still runs:\n{ran}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(101), "Rust's status for a panic");

    let text = log(d, "inst2");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    let field =
        |v: &serde_json::Value, k: &str| v["fields"][k].as_str().unwrap_or_default().to_string();
    let panic = lines
        .iter()
        .find(|v| v["target"] == "panic")
        .unwrap_or_else(|| panic!("no panic in inst2.log:\n{text}"));
    assert_eq!(panic["level"], "ERROR");
    assert!(
        field(panic, "message").contains("FUSIONLAB_TEST_PANIC_AFTER_MS=1500"),
        "{panic}"
    );
    assert!(
        field(panic, "location").contains("fusion-live/src/host.rs"),
        "{panic}"
    );
    assert!(!field(panic, "backtrace").is_empty(), "{panic}");
    // Under the run it was loaded for.
    assert_eq!(panic["spans"][0]["name"], "run", "{panic}");
    assert_eq!(panic["spans"][0]["scenario"], "live-hot-rows", "{panic}");
    let last = lines.last().expect("lines");
    assert_eq!(field(last, "message"), "exiting after a panic", "{text}");
    assert_eq!(last["fields"]["status"], 101, "{text}");
    // The others, alive, logged the run too (text is the default).
    let inst1 = log(d, "inst1");
    assert!(inst1.contains("scenario loaded"), "{inst1}");
}

#[test]
fn an_instance_restarted_by_hand_logs_as_up_told_the_cluster_to() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cdir = dir.path().join("c");
    let up = fusionlab([
        Path::new("up"),
        Path::new("--instances"),
        Path::new("1"),
        Path::new("--log-format"),
        Path::new("json"),
        Path::new("--dir"),
        &cdir,
    ]);
    assert_ok(&up);
    let file = cdir.join("cluster.toml");
    let down = Down(file.clone());
    let restarted = fusionlab([
        Path::new("restart"),
        Path::new("inst1"),
        Path::new("--cluster"),
        &file,
    ]);
    assert_ok(&restarted);
    drop(down);
    // `up` starts its store without fsync (every process on one host).
    let store = log(&cdir, "store");
    assert!(store.contains("(fsync off)"), "{store}");
    // Both lives of inst1 wrote JSON lines, the second one's after the
    // first one's last words.
    let inst1 = log(&cdir, "inst1");
    let lines: Vec<&str> = inst1.lines().filter(|l| !l.trim().is_empty()).collect();
    let starts = lines
        .iter()
        .filter(|l| l.contains("fusionlab instance 1: interconnect"))
        .count();
    assert!(starts >= 2, "two lives in inst1.log:\n{inst1}");
    for l in &lines {
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(l);
        assert!(parsed.is_ok(), "not a JSON line: {l}\n{inst1}");
    }
}
