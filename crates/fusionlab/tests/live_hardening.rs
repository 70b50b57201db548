//! The live cluster against strangers, resource exhaustion, signals and
//! stale state, as real processes on loopback:
//!
//! - unauthenticated interconnect connections cost an instance little
//!   memory, are limited, and are reported once, not per connection;
//! - an instance or store out of file descriptors keeps accepting once it
//!   has some again, and says so once;
//! - `status` asks the store rather than checking its pid;
//! - the cluster file and a run's cluster directory are private;
//! - SIGINT and SIGTERM stop the cluster a run started (or quiesce the one
//!   it was given) and exit with 130 and 143;
//! - `restart instN` brings an instance back on its addresses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fusion_core::types::InstId;
use fusion_live::admin_client::Admin;
use fusion_live::cluster::{self, ClusterFile};
use fusion_wire::framing::{decode_frame, encode_frame, hello_frame};
use fusion_wire::pb;

mod common;
use common::{Cluster, EXE, assert_ok, fusionlab, hot_rows, processes_in};

/// A cluster started with the library (the processes are this test's
/// children) and its cluster file, written as `up` writes it.
fn up(dir: &Path, instances: u8) -> (Cluster, PathBuf) {
    let c = common::up(dir, instances);
    let file = dir.join("cluster.toml");
    c.0.write(&file).expect("cluster file");
    (c, file)
}

/// A short live run of the hot-rows scenario on the cluster in `file`.
fn short_run(file: &Path) -> Output {
    fusionlab([
        Path::new("run"),
        Path::new("--live"),
        Path::new("--cluster"),
        file,
        Path::new("--set"),
        Path::new("phase.run.duration_s=0.3"),
        &hot_rows(),
    ])
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A process's memory figure from /proc/PID/status, in KiB: `VmRSS`
/// (resident now) or `VmHWM` (the most it was resident at any time).
fn memory_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("a {field} line in kB"))
}

/// Lines of a log that contain `needle`.
fn count_in(log: &Path, needle: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        // The listener's own report: the host logs the same line again
        // as a problem of the instance (for `status`), once too.
        .filter(|l| l.contains(needle) && !l.contains("fusion_live::host"))
        .count()
}

/// Poll `done` until it holds; panic naming `what` after `patience`.
fn wait_until(what: &str, patience: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + patience;
    while !done() {
        assert!(Instant::now() < end, "{what}: not within {patience:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the server closed this connection (end of stream or reset),
/// waiting at most `patience` for it.
fn closed_by_peer(s: &mut TcpStream, patience: Duration) -> bool {
    s.set_read_timeout(Some(patience)).expect("timeout");
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// What an interconnect answers a Hello with a wrong token: its refusal;
/// None if it closed the connection unanswered (over its limit).
fn refusal_to_a_stranger(interconnect: &str) -> Option<String> {
    let mut s = TcpStream::connect(interconnect).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = Vec::new();
    encode_frame(
        &hello_frame(pb::Hello::new(InstId(1), "not-the-token", 1)),
        &mut buf,
    );
    s.write_all(&buf).ok()?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("the whole answer");
    match decode_frame(&body).expect("a frame").kind {
        Some(pb::frame::Kind::Refusal(r)) => Some(r.reason),
        other => panic!("a refusal expected, got {other:?}"),
    }
}

/// Up to 100 connections that announce a 64 MiB frame and send 1 MiB of it
/// used to cost an instance 64 MiB each for 5 s; now a stranger's frame
/// past 4 KiB is refused unread. Connections that wait for their Hello are
/// limited (64); the rest are closed at once, reported once per burst, in
/// the log and as a problem of the instance. The instance serves after.
#[test]
fn strangers_on_the_interconnect_cost_little_memory_and_are_reported_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, file) = up(dir.path(), 3);
    // Loaded (as after any run): trouble is then a problem of the instance too.
    assert_ok(&short_run(&file));
    let inst1 = c.0.instances[0].clone();
    let log = dir.path().join("inst1.log");

    let (rss_before_kib, peak_before_kib) = (
        memory_kib(inst1.pid, "VmRSS"),
        memory_kib(inst1.pid, "VmHWM"),
    );
    let mut flood = Vec::new();
    for _ in 0..100 {
        let mut s = TcpStream::connect(&inst1.interconnect).expect("connects");
        s.set_write_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut bytes = (64u32 << 20).to_be_bytes().to_vec();
        bytes.resize(4 + (1 << 20), 0x5a);
        // The instance may close the connection before it took it all.
        let _ = s.write_all(&bytes);
        flood.push(s);
    }
    // Closed at once; an instance that waited for the rest of what they
    // announce would close them after the 5 s it waits for a Hello.
    for (i, s) in flood.iter_mut().enumerate() {
        assert!(
            closed_by_peer(s, Duration::from_secs(10)),
            "connection {i} announcing 64 MiB is still open"
        );
    }
    // The peak covers the whole flood, whenever the instance read it.
    let (rss_after_kib, peak_after_kib) = (
        memory_kib(inst1.pid, "VmRSS"),
        memory_kib(inst1.pid, "VmHWM"),
    );
    eprintln!(
        "inst1 memory around 100 connections announcing 64 MiB: resident {rss_before_kib} KiB \
         before, {rss_after_kib} KiB after; peak {peak_before_kib} KiB before, {peak_after_kib} \
         KiB after"
    );
    assert!(
        rss_after_kib < rss_before_kib + 20 * 1024,
        "inst1 grew from {rss_before_kib} KiB to {rss_after_kib} KiB"
    );
    assert!(
        peak_after_kib < peak_before_kib + 20 * 1024,
        "inst1 peaked at {peak_after_kib} KiB (before the flood: {peak_before_kib} KiB)"
    );
    drop(flood);

    // 100 connections that start a Hello and stall: 64 wait, 36 are closed.
    let troubles = "connections are already held (at most 64)";
    let recoveries = "admitting connections again after closing";
    let (troubles_before, recoveries_before) =
        (count_in(&log, troubles), count_in(&log, recoveries));
    let mut stalled = Vec::new();
    for _ in 0..100 {
        let mut s = TcpStream::connect(&inst1.interconnect).expect("connects");
        s.write_all(&[0, 0, 0x0f, 0xa0, 8, 1])
            .expect("writes the start of a Hello");
        stalled.push(s);
    }
    wait_until("the burst is logged", Duration::from_secs(10), || {
        count_in(&log, troubles) > troubles_before
    });
    let problems = rt().block_on(async {
        Admin::new("inst1", &inst1.admin, &c.0.token)
            .expect("admin")
            .status(Duration::from_secs(5))
            .await
            .expect("inst1 answers its admin service during the flood")
            .errors
    });
    assert!(
        problems.iter().any(|p| p.contains(troubles)),
        "{problems:?}"
    );
    drop(stalled);
    // Admitted again once the instance has seen the stalled ones go.
    let mut why = String::new();
    wait_until(
        "a stranger is answered again",
        Duration::from_secs(10),
        || {
            why = refusal_to_a_stranger(&inst1.interconnect).unwrap_or_default();
            !why.is_empty()
        },
    );
    assert!(why.contains("Hello.cluster_token"), "{why}");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        count_in(&log, troubles),
        troubles_before + 1,
        "one report per burst:\n{text}"
    );
    assert_eq!(count_in(&log, recoveries), recoveries_before + 1, "{text}");
    // At least the 36 past the 64 that waited (and any retry of ours
    // that came before the instance saw the stalled ones go).
    let closed: u32 = text
        .lines()
        .filter_map(|l| l.split_once(recoveries))
        .next_back()
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("how many were closed");
    assert!(closed >= 36, "{text}");

    // And it still runs a scenario with its peers.
    assert_ok(&short_run(&file));
}

/// A child process killed when the test ends, whatever happens.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `fusionlab ARGS` with at most `files` open file descriptors, its
/// stderr in `log`, the token in the environment.
fn start_with_fd_limit(files: u32, args: &[&str], log: &Path, token: &str) -> Killed {
    let log = std::fs::File::create(log).expect("log");
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
        .arg(EXE)
        .args(args)
        .env(cluster::TOKEN_ENV, token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starts");
    Killed(child)
}

/// The addresses a process wrote to its address file, once it did.
fn addresses(addr_file: &Path) -> Vec<String> {
    wait_until("the process listens", Duration::from_secs(20), || {
        std::fs::read_to_string(addr_file).is_ok_and(|t| t.ends_with('\n'))
    });
    std::fs::read_to_string(addr_file)
        .expect("address file")
        .lines()
        .map(str::to_string)
        .collect()
}

/// What a listener logs when the process has no descriptor left.
const OUT_OF_FILES: &str = "cannot accept connections: Too many open files";

/// Lines of `log` about `listener` running out of descriptors.
fn out_of_files(log: &Path, listener: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(listener) && l.contains(OUT_OF_FILES))
        .count()
}

/// Open connections to `addr` until process `pid` (allowed `limit`
/// descriptors) has none left, as its log says for `listener`. A few more
/// than it can take wait in the kernel's queue: few enough that once the
/// ones it took are closed it can take them all (one streak of failures).
fn exhaust_files(pid: u32, limit: usize, addr: &str, log: &Path, listener: &str) -> Vec<TcpStream> {
    let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("its descriptors")
        .count();
    let mut held = Vec::new();
    for _ in 0..(limit - open + 5) {
        held.push(TcpStream::connect(addr).expect("connects (the kernel's queue)"));
    }
    wait_until(
        "the process runs out of files",
        Duration::from_secs(10),
        || out_of_files(log, listener) > 0,
    );
    held
}

/// An instance with no file descriptor left neither dies nor spins: it
/// says so once per listener, tries again every 100 ms, and serves once
/// connections go (the admin call made meanwhile is answered).
#[test]
fn an_instance_out_of_file_descriptors_says_so_once_and_serves_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (log, addr_file) = (dir.path().join("inst1.log"), dir.path().join("inst1.addr"));
    let token = "fd-test-token";
    let mut child = start_with_fd_limit(
        40,
        &[
            "instance",
            "--id",
            "1",
            "--interconnect",
            "127.0.0.1:0",
            "--admin",
            "127.0.0.1:0",
            "--addr-file",
            addr_file.to_str().expect("utf-8 path"),
        ],
        &log,
        token,
    );
    let addrs = addresses(&addr_file);
    let (interconnect, admin) = (addrs[0].clone(), addrs[1].clone());
    let held = exhaust_files(
        child.0.id(),
        40,
        &interconnect,
        &log,
        "interconnect listener",
    );
    // An admin call while there is no descriptor for it: it waits.
    let (tx, rx) = mpsc::channel();
    let admin_for_call = admin.clone();
    let caller = std::thread::spawn(move || {
        let answer = rt().block_on(async {
            Admin::new("inst1", &admin_for_call, token)
                .expect("admin")
                .status(Duration::from_secs(30))
                .await
        });
        let _ = tx.send(answer);
    });
    wait_until(
        "the admin listener runs out of files",
        Duration::from_secs(10),
        || out_of_files(&log, "admin listener") > 0,
    );
    assert!(rx.try_recv().is_err(), "answered without a descriptor");
    drop(held);
    let answer = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the admin call ends");
    caller.join().expect("caller");
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(
        child.0.try_wait().expect("waits"),
        None,
        "the instance exited"
    );
    let why = refusal_to_a_stranger(&interconnect).expect("an answer");
    assert!(why.contains("not loaded"), "{why}");

    let text = std::fs::read_to_string(&log).expect("log");
    for listener in ["interconnect listener", "admin listener"] {
        let reports = out_of_files(&log, listener);
        assert_eq!(reports, 1, "{listener}: one report per streak:\n{text}");
        assert!(
            text.lines()
                .any(|l| l.contains(listener) && l.contains("accepting again")),
            "{text}"
        );
    }
}

/// The same for the block store's listener.
#[test]
fn a_store_out_of_file_descriptors_says_so_once_and_serves_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (log, addr_file) = (dir.path().join("store.log"), dir.path().join("store.addr"));
    let token = "fd-test-token";
    let store_dir = dir.path().join("store");
    let mut child = start_with_fd_limit(
        40,
        &[
            "store",
            "--listen",
            "127.0.0.1:0",
            "--dir",
            store_dir.to_str().expect("utf-8 path"),
            "--addr-file",
            addr_file.to_str().expect("utf-8 path"),
        ],
        &log,
        token,
    );
    let addr = addresses(&addr_file).remove(0);
    let held = exhaust_files(child.0.id(), 40, &addr, &log, "block store listener");
    drop(held);
    let rt = rt();
    wait_until("the store answers again", Duration::from_secs(20), || {
        rt.block_on(async {
            fusion_store::StoreClient::connect(&addr, token, Duration::from_secs(2))
                .await?
                .ping()
                .await
        })
        .is_ok()
    });
    assert_eq!(child.0.try_wait().expect("waits"), None, "the store exited");
    let text = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        out_of_files(&log, "block store listener"),
        1,
        "one report per streak:\n{text}"
    );
}

/// `status` asks the store: a killed store is NOT ANSWERING, with why, and
/// the exit status is 4. `up` writes its cluster file 0600 in a 0700
/// directory.
#[test]
fn status_says_a_killed_store_is_not_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("c");
    let out = fusionlab(
        [Path::new("up"), Path::new("--instances"), Path::new("1")]
            .into_iter()
            .chain([Path::new("--dir"), d.as_path()]),
    );
    assert_ok(&out);
    let file = d.join("cluster.toml");
    let c = Cluster(ClusterFile::read(&file).expect("cluster file"));
    let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "the cluster file holds the token");
    assert_eq!(mode(&d), 0o700);

    let status = || fusionlab([Path::new("status"), Path::new("--cluster"), &file]);
    let st = status();
    assert_ok(&st);
    let text = String::from_utf8_lossy(&st.stdout);
    assert!(
        text.contains(&format!("(pid {}): answering", c.0.store.pid)),
        "{text}"
    );

    let killed = Command::new("kill")
        .arg("-9")
        .arg(c.0.store.pid.to_string())
        .status()
        .expect("kill");
    assert!(killed.success());
    let st = status();
    let text = String::from_utf8_lossy(&st.stdout);
    assert_eq!(st.status.code(), Some(4), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("block store"))
        .expect("a store line");
    assert!(
        line.contains("NOT ANSWERING") && line.contains("refused"),
        "{line}"
    );
}

/// `restart instN` stops the instance if it runs, starts it on the same
/// addresses with the token, and records its pid; a killed one comes back
/// the same way. The cluster then runs a scenario.
#[test]
fn restart_brings_an_instance_back_on_its_addresses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, file) = up(dir.path(), 3);
    let restart = |who: &str| {
        fusionlab([
            Path::new("restart"),
            Path::new(who),
            Path::new("--cluster"),
            &file,
        ])
    };
    let old = c.0.instances.clone();

    // A running one: stopped, then started again.
    let out = restart("inst2");
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("inst2 restarted"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!cluster::alive(old[1].pid), "the old inst2 still runs");
    // A killed one.
    let killed = Command::new("kill")
        .arg("-9")
        .arg(old[2].pid.to_string())
        .status()
        .expect("kill");
    assert!(killed.success());
    assert_ok(&restart("3"));

    let now = ClusterFile::read(&file).expect("cluster file");
    // Stopped with the test, whatever happens below.
    let _restarted = Cluster(ClusterFile {
        instances: now.instances[1..].to_vec(),
        store: fusion_live::cluster::Member {
            address: now.store.address.clone(),
            pid: 0,
        },
        ..now.clone()
    });
    let mode = std::fs::metadata(&file)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    for k in [1, 2] {
        assert_ne!(now.instances[k].pid, old[k].pid);
        assert!(cluster::alive(now.instances[k].pid));
        assert_eq!(now.instances[k].interconnect, old[k].interconnect);
        assert_eq!(now.instances[k].admin, old[k].admin);
    }
    assert_eq!(now.instances[0], old[0]);
    assert_eq!(now.token, c.0.token);

    let st = fusionlab([Path::new("status"), Path::new("--cluster"), &file]);
    assert_ok(&st);
    assert_ok(&short_run(&file));

    // Bad names are bad input.
    for bad in ["inst0", "inst4", "store", "instx"] {
        assert_eq!(restart(bad).status.code(), Some(2), "{bad}");
    }
}

/// A `fusionlab` child whose stderr lines are collected as they come.
struct Watched {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Watched {
    fn start<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> Watched {
        let mut child = Command::new(EXE)
            .args(args)
            .env("FUSIONLAB_DATA_DIR", common::DATA_DIR)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Watched {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The first stderr line that starts with `prefix`.
    fn line_starting(&mut self, prefix: &str, patience: Duration) -> String {
        let end = Instant::now() + patience;
        loop {
            if let Some(l) = self.seen.iter().find(|l| l.starts_with(prefix)) {
                return l.clone();
            }
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("no line {prefix:?} on stderr: {:#?}", self.seen),
            }
        }
    }

    fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(sent.success());
    }

    /// Its exit status, waiting at most `patience` (then it is killed).
    fn exit_code(&mut self, patience: Duration) -> Option<i32> {
        let end = Instant::now() + patience;
        loop {
            if let Some(status) = self.child.try_wait().expect("waits") {
                while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(1)) {
                    self.seen.push(l);
                }
                return status.code();
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("still running after {patience:?}: {:#?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a live command, wait until the local cluster it starts listens,
/// send `signal`, and check that it stops every process of that cluster,
/// removes its private directory, and exits with `expected`.
fn interrupted_while_running(args: &[&str], signal: &str, expected: i32) {
    let mut run = Watched::start(args);
    let line = run.line_starting("starting a local cluster of ", Duration::from_secs(30));
    let (count, dir) = line
        .strip_prefix("starting a local cluster of ")
        .and_then(|rest| rest.split_once(" instances in "))
        .expect("N instances in DIR");
    let count: u32 = count.parse().expect("a count");
    let dir = PathBuf::from(dir);
    // Unpredictable and private: not named after the pid, readable by its owner only.
    let name = dir
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("fusionlab-live-"), "{name}");
    assert_ne!(name, format!("fusionlab-live-{}", run.child.id()));
    let mode = std::fs::metadata(&dir)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700, "{}", dir.display());
    // Every process of the cluster listens.
    for member in ["store".to_string()]
        .into_iter()
        .chain((1..=count).map(|i| format!("inst{i}")))
    {
        let _ = addresses(&dir.join(format!("{member}.addr")));
    }
    assert_eq!(processes_in(&dir).len(), count as usize + 1);

    run.signal(signal);
    let code = run.exit_code(Duration::from_secs(60));
    assert_eq!(code, Some(expected), "{:#?}", run.seen);
    assert!(
        run.seen
            .iter()
            .any(|l| l.ends_with(&format!("interrupted by SIG{signal}"))),
        "{:#?}",
        run.seen
    );
    let left = processes_in(&dir);
    assert!(
        left.is_empty(),
        "processes of the cluster remain: {left:#?}"
    );
    assert!(!dir.exists(), "{} was not removed", dir.display());
}

#[test]
fn ctrl_c_on_run_live_stops_the_cluster_it_started() {
    interrupted_while_running(
        &[
            "run",
            "--live",
            "myth-interconnect-blame",
            "--set",
            "phase.warmup.duration_s=3",
            "--set",
            "phase.baseline.duration_s=3",
            "--set",
            "phase.slow-redo-inst2.duration_s=3",
        ],
        "INT",
        130,
    );
}

#[test]
fn sigterm_on_tour_live_stops_the_cluster_it_started() {
    interrupted_while_running(&["tour", "--live"], "TERM", 143);
}

/// Interrupted on a cluster it was given, a run leaves that cluster
/// running but quiesced: no workload of the abandoned run goes on.
#[test]
fn an_interrupted_run_on_a_given_cluster_leaves_it_quiesced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (c, file) = up(dir.path(), 3);
    let mut run = Watched::start([
        Path::new("run"),
        Path::new("--live"),
        Path::new("--cluster"),
        &file,
        Path::new("--set"),
        Path::new("phase.run.duration_s=60"),
        &hot_rows(),
    ]);
    let rt = rt();
    // The admin clients' connections run on this runtime.
    let _in_runtime = rt.enter();
    let admins: Vec<Admin> =
        c.0.instances
            .iter()
            .map(|m| Admin::new(&format!("inst{}", m.id), &m.admin, &c.0.token).expect("admin"))
            .collect();
    // Err until the run has loaded the scenario.
    let commits = |a: &Admin| -> Result<u64, String> {
        rt.block_on(a.stats())
            .map(|s| s.sysstat.get("user commits").copied().unwrap_or(0))
    };
    wait_until("the workload runs", Duration::from_secs(60), || {
        admins.iter().all(|a| commits(a).is_ok_and(|n| n > 0))
    });

    run.signal("INT");
    assert_eq!(
        run.exit_code(Duration::from_secs(60)),
        Some(130),
        "{:#?}",
        run.seen
    );
    assert!(
        run.seen
            .iter()
            .any(|l| l.contains("stopped the workloads and faults")),
        "{:#?}",
        run.seen
    );
    for a in &admins {
        wait_until(
            &format!("{} comes to rest", a.who),
            Duration::from_secs(30),
            || {
                rt.block_on(a.status(Duration::from_secs(5)))
                    .is_ok_and(|s| s.at_rest && s.active_sessions == 0)
            },
        );
        let at_rest = commits(a).expect("stats");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            commits(a).expect("stats"),
            at_rest,
            "{} still commits",
            a.who
        );
    }
    // Every process of the cluster is still there.
    for m in &c.0.instances {
        assert!(cluster::alive(m.pid), "inst{} died", m.id);
    }
}
