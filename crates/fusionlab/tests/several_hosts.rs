//! Several hosts without an orchestrator: a block store and three
//! instance processes, each on a "host" of its own made of a network
//! namespace the test creates (veth pairs to a bridge, private addresses
//! inside those namespaces only), named in one cluster file by their
//! addresses, form one cluster; the runner, on the store's host, plays a
//! short scenario to its verdict.
//!
//! The cluster file also gives the instances' process ids, so the runner
//! carries out the scenario's faults on inst2's links in the hosts'
//! namespaces where the kernel can: tbf narrows them (wire time at inst1),
//! a 30 % loss is dropped by the kernel (netem, or iptables without it) and
//! survived with nothing lost, and 20 ms are netem's where the kernel has
//! it (this VM's has not: the instances carry them out and the alert log
//! says so). Afterwards none of the runner's qdiscs or firewall rules is
//! left on any host. Not root, or no iproute2: one line, skipped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;
use common::hosts::Hosts;
use common::{DATA_DIR, EXE};

/// The processes of the test, killed when it ends.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(cmd: &mut Command, log: &Path, token: &str) -> Child {
    let log = std::fs::File::create(log).expect("log file");
    cmd.env(fusion_live::cluster::TOKEN_ENV, token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("a process starts")
}

/// A store on host 0 and instance N on host N, and the cluster file that
/// names them by their addresses (and pids: the runner enters their
/// namespaces). None (and a line saying why) when this machine does not
/// let the test make hosts.
struct Cluster {
    // Dropped in this order: the processes (held to be killed), then the
    // hosts.
    _procs: Processes,
    hosts: Hosts,
    dir: tempfile::TempDir,
    file: std::path::PathBuf,
}

impl Cluster {
    fn start(tag: &str) -> Option<Cluster> {
        let hosts = match Hosts::create(tag, 4) {
            Ok(h) => h,
            Err(e) => {
                println!("skipped: cannot make network namespaces as hosts here ({e})");
                return None;
            }
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let token = fusion_live::cluster::new_token().expect("token");
        let store_dir = dir.path().join("store");
        let store_addr = format!("{}:7000", hosts.ip(0));
        let mut procs = Processes(Vec::new());
        procs.0.push(spawn(
            &mut hosts.command(
                0,
                &[
                    EXE,
                    "store",
                    "--listen",
                    &store_addr,
                    "--dir",
                    &store_dir.display().to_string(),
                ],
            ),
            &dir.path().join("store.log"),
            &token,
        ));
        let mut file = format!(
            "token = \"{token}\"\ndir = \"{}\"\n\n[store]\naddress = \"{store_addr}\"\n",
            dir.path().display()
        );
        for id in 1..=3usize {
            let interconnect = format!("{}:7100", hosts.ip(id));
            let admin = format!("{}:7200", hosts.ip(id));
            let child = spawn(
                &mut hosts.command(
                    id,
                    &[
                        EXE,
                        "instance",
                        "--id",
                        &id.to_string(),
                        "--interconnect",
                        &interconnect,
                        "--admin",
                        &admin,
                        "--journal-dir",
                        &dir.path().display().to_string(),
                    ],
                ),
                &dir.path().join(format!("inst{id}.log")),
                &token,
            );
            // `ip netns exec` runs the program as itself: the instance's pid.
            file.push_str(&format!(
                "\n[[instance]]\nid = {id}\ninterconnect = \"{interconnect}\"\nadmin = \"{admin}\"\npid = {}\n",
                child.id()
            ));
            procs.0.push(child);
        }
        let cluster = dir.path().join("cluster.toml");
        std::fs::write(&cluster, file).expect("cluster file");
        Some(Cluster {
            _procs: procs,
            hosts,
            dir,
            file: cluster,
        })
    }

    /// The runner on host 0: `run --live --cluster FILE ARGS...`.
    fn runner(&self, args: &[&str]) -> Command {
        let file = self.file.display().to_string();
        let mut all = vec![EXE, "run", "--live", "--cluster", file.as_str()];
        all.extend(args);
        let mut c = self.hosts.command(0, &all);
        c.env("FUSIONLAB_DATA_DIR", DATA_DIR);
        c
    }

    /// The last lines of every process's log.
    fn logs(&self) -> String {
        ["store", "inst1", "inst2", "inst3"]
            .iter()
            .map(|n| {
                let l = std::fs::read_to_string(self.dir.path().join(format!("{n}.log")))
                    .unwrap_or_default();
                let tail: Vec<&str> = l.lines().rev().take(15).collect();
                format!("--- {n}.log\n{}", tail.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether any host has a qdisc or firewall chain of the runner's.
    fn leftovers(&self) -> Vec<String> {
        let mut left = Vec::new();
        for h in 0..4 {
            let q = self.hosts.output(h, &["tc", "qdisc", "show"]);
            if q.contains(" fab: ") {
                left.push(format!("host {h}: {q}"));
            }
            let f = self.hosts.output(h, &["iptables", "-S"]);
            if f.contains("FUSIONLAB-LOSS") {
                left.push(format!("host {h}: {f}"));
            }
        }
        left
    }
}

#[test]
fn processes_on_several_hosts_named_by_address_form_one_cluster_and_the_kernel_shapes_a_hosts_link()
{
    let Some(c) = Cluster::start("a") else {
        return;
    };
    let scenario = common::kernel_faults::scenario().display().to_string();
    let out = common::output_within(
        &mut c.runner(&["--json", "--check", &scenario]),
        Duration::from_secs(300),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stderr}\n{}",
        out.status.code(),
        c.logs()
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the JSON report");

    // One cluster across the hosts, and each fault where a chaos user
    // looks for it.
    let snmp = c.hosts.output(2, &["cat", "/proc/net/snmp"]);
    common::kernel_faults::check_report(&report, &stderr, &snmp);

    // Nothing of the runner's is left on any host.
    assert_eq!(c.leftovers(), Vec::<String>::new());
}

/// A run stopped by Ctrl-C while the kernel shapes a link takes its rules
/// with it.
#[test]
fn a_run_interrupted_while_the_kernel_shapes_a_link_leaves_no_rule_behind() {
    let Some(c) = Cluster::start("b") else {
        return;
    };
    if !fusion_live::netfault::offers().is_ok_and(|o| o.tbf && o.htb_u32) {
        println!("skipped: this kernel has no sch_tbf with sch_htb and cls_u32");
        return;
    }
    let scenario = common::kernel_faults::scenario().display().to_string();
    let mut runner = c
        .runner(&["--json", &scenario])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the runner starts");
    // The tbf of "narrow-inst2" in inst2's namespace: the run is in it.
    let start = std::time::Instant::now();
    while !c
        .hosts
        .output(2, &["tc", "qdisc", "show"])
        .contains("qdisc tbf")
    {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "inst2's link was never narrowed\n{}",
            c.logs()
        );
        assert!(
            runner.try_wait().expect("wait").is_none(),
            "the run ended before its narrow phase"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = runner.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .is_ok_and(|s| s.success())
    );
    let status = loop {
        if let Some(s) = runner.try_wait().expect("wait") {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "the runner did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(c.leftovers(), Vec::<String>::new());
}
