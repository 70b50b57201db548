//! `fusionlab chaos --compose` on a real Docker engine: one run of
//! `instance-crash-recovery` whose seed draws a kill (`docker kill` of
//! inst2, recovered by the survivors from its redo in the store's
//! container) and a loss, phases shortened. Nothing acknowledged may be
//! lost, nothing broken, and the project (containers, networks, volume)
//! must be gone afterwards. Without a Docker engine (or compose) it prints
//! one line and passes.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run a command to its end with a deadline: its status, stdout, stderr
/// and process id, or why it did not run.
fn run(cmd: &mut Command, deadline: Duration) -> Result<(i32, String, String, u32), String> {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{shown}: {e}"))?;
    let pid = child.id();
    let mut so = child.stdout.take().expect("piped stdout");
    let mut se = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let end = Instant::now() + deadline;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| format!("{shown}: {e}"))? {
            break Some(s);
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Some(s) => Ok((s.code().unwrap_or(-1), out, err, pid)),
        None => Err(format!(
            "{shown}: still running after {deadline:?}, killed:\n{out}{err}"
        )),
    }
}

fn answers(program: &[&str]) -> bool {
    run(
        Command::new(program[0]).args(&program[1..]),
        Duration::from_secs(20),
    )
    .is_ok_and(|(code, ..)| code == 0)
}

/// An image this test built, removed when the test ends.
struct Image(String);

impl Drop for Image {
    fn drop(&mut self) {
        let _ = run(
            Command::new("docker").args(["image", "rm", &self.0]),
            Duration::from_secs(60),
        );
    }
}

#[test]
fn chaos_compose_kills_a_container_and_loses_nothing_when_docker_answers() {
    if !answers(&["docker", "info", "--format", "{{.ServerVersion}}"]) {
        println!("skipped: no Docker engine answers (`docker info`)");
        return;
    }
    if !answers(&["docker-compose", "version"]) && !answers(&["docker", "compose", "version"]) {
        println!("skipped: neither `docker compose` nor `docker-compose` runs");
        return;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let image = Image(format!(
        "fusionlab:test-chaos-{}x{nanos}",
        std::process::id()
    ));
    let (code, out, err, _) = run(
        Command::new(repo().join("cluster/build-local-image")).args([
            "--binary",
            env!("CARGO_BIN_EXE_fusionlab"),
            "--tag",
            &image.0,
        ]),
        Duration::from_secs(600),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 0, "cluster/build-local-image failed:\n{out}{err}");

    let t0 = Instant::now();
    let compose_file = repo().join("cluster/docker-compose.yml");
    let (code, json, err, pid) = run(
        Command::new(env!("CARGO_BIN_EXE_fusionlab")).args([
            "chaos",
            "--compose",
            "--compose-file",
            compose_file.to_str().expect("a UTF-8 path"),
            "--image",
            &image.0,
            "instance-crash-recovery",
            "--runs",
            "1",
            "--seed",
            "1005",
            "--set",
            "phase.warmup.duration_s=1",
            "--set",
            "phase.baseline.duration_s=2",
            "--set",
            "phase.crash.duration_s=8",
            "--set",
            "phase.after.duration_s=2",
            "--json",
        ]),
        Duration::from_secs(400),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(code, 0, "chaos --compose exited {code}:\n{json}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("one JSON object");
    assert_eq!(v["driver"], "compose", "{v}");
    let r = &v["per_run"][0];
    let faults: Vec<&str> = r["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        faults.iter().any(|f| f.starts_with("kill inst")),
        "seed 1005 draws a kill: {r}"
    );
    // The loss is the kernel's in the containers' namespaces where it can
    // (netem, else iptables' statistic match), and stderr says so.
    assert!(
        faults.iter().any(|f| f.starts_with("loss of")),
        "seed 1005 draws a loss: {r}"
    );
    let how = err
        .lines()
        .find(|l| l.contains(": seed 1005: loss of"))
        .unwrap_or_else(|| panic!("how the loss was carried out is not said:\n{err}"));
    match fusion_live::netfault::offers() {
        Ok(o) if o.netem || o.iptables_statistic => assert!(
            how.contains(": tc netem in ") || how.contains(": iptables statistic DROP in "),
            "{how}"
        ),
        _ => assert!(how.contains(": by the instances ("), "{how}"),
    }
    assert!(r["commits_acknowledged"].as_u64().unwrap_or(0) > 0, "{r}");
    assert_eq!(r["commits_lost"], 0, "{r}\n{err}");
    assert_eq!(
        r["violations"].as_array().map(Vec::len),
        Some(0),
        "{r}\n{err}"
    );
    assert_eq!(
        r["protocol_errors"].as_array().map(Vec::len),
        Some(0),
        "{r}\n{err}"
    );

    // Nothing of the run's project is left on the engine.
    let project = format!("fusionlab-chaos-{pid}-1005");
    let label = format!("label=com.docker.compose.project={project}");
    for what in [
        vec!["ps", "-a", "-q", "--filter", &label],
        vec!["network", "ls", "-q", "--filter", &label],
        vec!["volume", "ls", "-q", "--filter", &label],
    ] {
        let (code, left, ..) = run(Command::new("docker").args(&what), Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(code, 0);
        assert!(
            left.trim().is_empty(),
            "docker {what:?} still lists: {left}"
        );
    }
    println!(
        "chaos --compose: 1 run in {:.1} s, {} acknowledged, 0 lost",
        t0.elapsed().as_secs_f64(),
        r["commits_acknowledged"]
    );
}
