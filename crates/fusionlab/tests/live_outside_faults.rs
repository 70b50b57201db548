//! Faults from outside, as a chaos user brings them: a cluster `up` started
//! runs an open-ended workload (`run --live --hold`) while a shell script
//! that is not Fusionlab code kills, freezes and restarts its processes.
//! The survivors detect each fault by their heartbeats, evict, reconfigure
//! and recover; the runner goes on, narrates what it saw as not in the
//! scenario, takes back what returns, and ends on Ctrl-C with the report
//! and the lost-commit check. And the reproducer of the issue: `kill -9` of
//! inst2 during `run --live myth-cpu-starvation` is survived.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{DATA_DIR, EXE};

/// The scenario the fault script attacks: OLTP on three instances, no
/// fault of its own, a long phase to hold, `css_misscount` 3 s.
fn outside() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/outside.toml")
}

/// The report of a held run and its checks: exit 0, nothing lost, no
/// violation; stdout.
fn clean_report(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}\n{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("checked ") && l.ends_with("no violation")),
        "{out}"
    );
    for line in out.lines().filter(|l| l.contains("across failures")) {
        assert!(line.contains(" 0 lost"), "{line}");
    }
    assert!(!err.contains("violation"), "{err}");
    out
}

/// The alert log of a report as one line per entry (continuations joined),
/// so that a wrapped line is still found.
fn alert_lines(out: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for l in out.lines() {
        let t = l.trim();
        if l.starts_with("                         ") && !t.is_empty() {
            if let Some(last) = lines.last_mut() {
                last.push(' ');
                last.push_str(t);
            }
        } else if t.contains(" s  inst ") {
            lines.push(t.to_string());
        }
    }
    lines
}

/// Run the operator's fault script to its end, then Ctrl-C the held run
/// (which ends its phase; the report follows); the run's output.
fn faults_then_ctrl_c(script: &mut Command, run: std::process::Child) -> Output {
    let faults = script.output().expect("bash runs");
    assert!(
        faults.status.success(),
        "the fault script failed: {}",
        String::from_utf8_lossy(&faults.stderr)
    );
    let _ = Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status();
    let mut run = run;
    let started = Instant::now();
    while run.try_wait().expect("waitable").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the held run did not end after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    run.wait_with_output().expect("output")
}

/// The row of the recovery summary for `dead`.
fn recovery_row<'a>(out: &'a str, dead: &str) -> Option<&'a str> {
    out.lines()
        .find(|l| l.trim_start().starts_with(&format!("{dead}   inst")))
}

#[test]
fn a_shell_script_kills_freezes_and_restarts_processes_and_the_cluster_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cdir = dir.path().join("c");
    let cluster = common::up(&cdir, 3);
    let file = cdir.join("cluster.toml");
    cluster.0.write(&file).expect("cluster file written");
    // The script restarts instances by hand (new pids, in the file): what
    // is stopped at the end is what the file names then.
    let _stop = StopFromFile(file.clone());
    let file_s = file.display().to_string();
    let run = Command::new(EXE)
        .args(["run", "--live", "--cluster", &file_s, "--hold", "chaos"])
        .arg(outside())
        .env("FUSIONLAB_DATA_DIR", DATA_DIR)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fusionlab starts");
    // The operator's script: plain shell, pids read from the cluster file
    // (`fusionlab restart` is how a user starts an `up` instance by hand).
    let script = format!(
        r#"set -e
pid() {{ awk -v id="$1" '/^\[\[instance\]\]/{{i++}} i==id && /^pid/{{print $3}}' "{file_s}"; }}
sleep 4
kill -STOP "$(pid 2)"; sleep 1; kill -CONT "$(pid 2)"
sleep 2
kill -9 "$(pid 3)"
sleep 6
"{EXE}" restart inst3 --cluster "{file_s}"
sleep 5
kill -STOP "$(pid 2)"; sleep 6; kill -CONT "$(pid 2)"
sleep 5
"#
    );
    let o = faults_then_ctrl_c(Command::new("bash").args(["-c", &script]), run);
    let out = clean_report(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the held phase ended (SIGINT)"), "{err}");
    let alerts = alert_lines(&out);
    let has = |inst: &str, what: &str| {
        alerts
            .iter()
            .any(|l| l.contains(&format!("inst {inst}")) && l.contains(what))
    };
    // The short freeze: lost, then back without an eviction.
    assert!(has("2", "(not in the scenario)"), "{alerts:#?}");
    assert!(has("2", "Instance answering again after"), "{alerts:#?}");
    // The kill: seen, evicted and recovered by a survivor, started again by
    // hand and taken back as its next life.
    assert!(has("3", "No answer since"), "{alerts:#?}");
    assert!(has("1", "Evicting instance 3 from cluster"), "{alerts:#?}");
    assert!(
        has("3", "Instance process started again after"),
        "{alerts:#?}"
    );
    assert!(has("3", "Instance restarted (startup)"), "{alerts:#?}");
    // The long freeze: evicted while frozen, found evicted when it woke,
    // started again by the runner.
    assert!(
        alerts
            .iter()
            .any(|l| l.contains("Evicting instance 2") || l.contains("Evicting instance 2, 3")),
        "{alerts:#?}"
    );
    assert!(has("2", "evicted"), "{alerts:#?}");
    // Both recoveries in the summary, with redo read.
    for dead in ["inst2", "inst3"] {
        let row = recovery_row(&out, dead).unwrap_or_else(|| panic!("no {dead} row:\n{out}"));
        // The report groups thousands (`1,004`).
        let redo_kb: u64 = row
            .split_whitespace()
            .nth(5)
            .and_then(|v| v.replace(',', "").parse().ok())
            .unwrap_or_else(|| panic!("no redo figure in {row:?}"));
        assert!(redo_kb > 0, "{row}");
    }
}

/// The issue's reproducer: `kill -9` of inst2's process while `run --live
/// myth-cpu-starvation` runs (phases shortened). Before, the run stopped
/// with exit 4 and every expectation failed; now inst1 evicts and recovers
/// inst2 and every phase has inst1's figures.
#[test]
fn a_kill_nobody_scripted_during_the_cpu_myth_is_survived() {
    let child = Command::new(EXE)
        .args(["run", "--live", "--check", "myth-cpu-starvation"])
        .args(["--set", "phase.warmup.duration_s=2"])
        .args(["--set", "phase.baseline.duration_s=9"])
        .args(["--set", "phase.lms-normal-priority.duration_s=3"])
        .args(["--set", "phase.lms-realtime.duration_s=2"])
        .args(["--set", "phase.lms-and-lgwr-realtime.duration_s=2"])
        .args(["--set", "parameters.css_misscount=3"])
        .env("FUSIONLAB_DATA_DIR", DATA_DIR)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fusionlab starts");
    let pid = common::wait_for_child("inst2", || common::instance_pid(child.id(), "2"));
    // In the baseline (the cluster takes a second or two to start).
    std::thread::sleep(Duration::from_secs(6));
    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    let o = child.wait_with_output().expect("fusionlab ends");
    let out = clean_report(&o);
    let alerts = alert_lines(&out);
    assert!(
        alerts
            .iter()
            .any(|l| l.contains("inst 2") && l.contains("(not in the scenario)")),
        "{alerts:#?}"
    );
    assert!(
        out.contains("Completed instance recovery at Thread 2"),
        "{out}"
    );
    assert!(recovery_row(&out, "inst2").is_some(), "{out}");
    for phase in [
        "warmup",
        "baseline",
        "lms-normal-priority",
        "lms-realtime",
        "lms-and-lgwr-realtime",
    ] {
        assert!(
            out.contains(&format!("Instance 1   (phase {phase},")),
            "no inst1 figures for {phase}:\n{out}"
        );
    }
    assert!(out.contains("VERDICT:"), "{out}");
}

/// Stops every process a cluster file names when dropped (read then, so
/// that an instance restarted by hand is stopped too).
struct StopFromFile(std::path::PathBuf);

impl Drop for StopFromFile {
    fn drop(&mut self) {
        if let Ok(c) = fusion_live::cluster::ClusterFile::read(&self.0) {
            drop(common::Cluster(c));
        }
    }
}

/// A network namespace of this test's own, deleted when dropped (with the
/// firewall rules in it).
struct Netns(String);

impl Netns {
    /// None when this machine does not let the test make one (not root, no
    /// `ip`): the test then says it skipped.
    fn create() -> Option<Netns> {
        let name = format!("fusionlab-test-{}", std::process::id());
        let made = Command::new("ip")
            .args(["netns", "add", &name])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            return None;
        }
        let ns = Netns(name);
        ns.run(&["ip", "link", "set", "lo", "up"]).then_some(ns)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(args);
        c
    }

    fn run(&self, args: &[&str]) -> bool {
        self.command(args)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.0])
            .status();
    }
}

/// The port of an address `host:port`.
fn port(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(_, p)| p)
}

/// Real packet loss and a firewall rule, inside a network namespace the
/// test creates: the cluster and the runner run in it; first 30 % of every
/// TCP segment is dropped by the kernel for a while (`iptables -m
/// statistic`: this kernel has no netem), then every interconnect port is
/// cut for longer than `css_misscount`. The loss costs retransmissions and
/// nothing else; the cut splits the cluster, inst1 survives, the others
/// stop and are taken back, and are admitted once the rule goes.
#[test]
fn real_packet_loss_and_a_firewall_cut_are_survived() {
    let Some(ns) = Netns::create() else {
        println!("skipped: cannot create a network namespace here (needs root and iproute2)");
        return;
    };
    if !ns.run(&["iptables", "-L", "-n"]) {
        println!("skipped: no iptables in a network namespace here");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cdir = dir.path().join("c");
    let cdir_s = cdir.display().to_string();
    let up = ns
        .command(&[EXE, "up", "--instances", "3", "--dir", &cdir_s])
        .env("FUSIONLAB_DATA_DIR", DATA_DIR)
        .output()
        .expect("up runs");
    common::assert_ok(&up);
    let file = cdir.join("cluster.toml");
    let c = fusion_live::cluster::ClusterFile::read(&file).expect("cluster file");
    let _stop = common::Cluster(c.clone());
    let file_s = file.display().to_string();
    let outside_s = outside().display().to_string();
    let run = ns
        .command(&[
            EXE,
            "run",
            "--live",
            "--cluster",
            &file_s,
            "--hold",
            "chaos",
            &outside_s,
        ])
        .env("FUSIONLAB_DATA_DIR", DATA_DIR)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fusionlab starts");
    let ports: Vec<&str> = c.instances.iter().map(|m| port(&m.interconnect)).collect();
    // Every link at once (one rule for all the ports): cut one port after
    // the other, two instances could still hear each other for a moment,
    // form the larger side and evict inst1 (seen on a loaded host).
    let ports = ports.join(",");
    let cut = format!(
        "iptables -$1 INPUT -p tcp -m multiport --dports {ports} -j DROP; \
         iptables -$1 INPUT -p tcp -m multiport --sports {ports} -j DROP; "
    );
    let script = format!(
        r#"set -e
loss() {{ iptables -$1 INPUT -p tcp -m statistic --mode random --probability 0.3 -j DROP; }}
cut() {{ {cut} }}
sleep 4
loss A; sleep 5; loss D
sleep 3
cut A; sleep 6; cut D
sleep 8
"#
    );
    let o = faults_then_ctrl_c(&mut ns.command(&["bash", "-c", &script]), run);
    let out = clean_report(&o);
    let alerts = alert_lines(&out);
    // The cut: a split, inst1 keeps the cluster, the others stop...
    assert!(
        alerts
            .iter()
            .any(|l| l.contains("inst 1") && l.contains("Evicting instance")),
        "{alerts:#?}"
    );
    assert!(
        alerts
            .iter()
            .any(|l| l.contains("restarting it (not in the scenario)")),
        "{alerts:#?}"
    );
    // ... and once the rule is gone every instance is a member again.
    let last_list = alerts
        .iter()
        .rev()
        .find(|l| l.contains("inst 1") && l.contains("List of instances:"))
        .unwrap_or_else(|| panic!("no reconfiguration:\n{alerts:#?}"));
    assert!(last_list.contains("1, 2, 3"), "{alerts:#?}");
}
