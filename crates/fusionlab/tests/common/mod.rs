//! What the live tests of the binary share: the binary, the hot-rows
//! scenario, a local cluster stopped when the test ends, and running the
//! binary. (Each test file includes it with `mod common;` and uses what it
//! needs.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use fusion_live::cluster::{self, ClusterFile, UpOptions};

pub mod hosts;
pub mod kernel_faults;

pub const EXE: &str = env!("CARGO_BIN_EXE_fusionlab");

/// Where the runs these tests make are stored: under the build's temporary
/// directory, not the home of whoever runs the tests.
pub const DATA_DIR: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/fusionlab-data");

/// The hot-rows scenario of the live tests.
pub fn hot_rows() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/hot_rows.toml")
}

/// A cluster that is stopped when the test ends, whatever happens.
pub struct Cluster(pub ClusterFile);

impl Drop for Cluster {
    fn drop(&mut self) {
        let pids: Vec<u32> = self
            .0
            .instances
            .iter()
            .map(|m| m.pid)
            .chain([self.0.store.pid])
            .collect();
        cluster::stop_all(&pids, Duration::from_secs(2));
    }
}

/// A cluster started with the library (the processes are this test's
/// children).
pub fn up(dir: &Path, instances: u8) -> Cluster {
    Cluster(
        cluster::up(&UpOptions {
            instances,
            dir: dir.to_path_buf(),
            base_port: 0,
            exe: EXE.into(),
            log_args: Vec::new(),
        })
        .expect("cluster starts"),
    )
}

/// Run the `fusionlab` binary with these arguments.
pub fn fusionlab<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> Output {
    Command::new(EXE)
        .args(args)
        .env("FUSIONLAB_DATA_DIR", DATA_DIR)
        .output()
        .expect("runs")
}

/// The command succeeded; its exit status and output say why if not.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Processes whose command line names `dir` (a cluster's processes are
/// given their address files there).
pub fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// The pid of a child of the `fusionlab` process `parent` whose arguments
/// (after the program) satisfy `is_it`.
pub fn child_pid(parent: u32, is_it: impl Fn(&[String]) -> bool) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent pid is the 4th field, after the command in parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .skip(1)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if is_it(&args) {
            return Some(pid);
        }
    }
    None
}

/// The pid of instance `id` started by the `fusionlab` process `parent`.
pub fn instance_pid(parent: u32, id: &str) -> Option<u32> {
    child_pid(parent, |args| {
        args.first().is_some_and(|a| a == "instance")
            && args.windows(2).any(|w| w[0] == "--id" && w[1] == id)
    })
}

/// The pid of the child of `parent` that `find` finds, waiting up to 30 s
/// for it to start (panics naming `what` otherwise).
pub fn wait_for_child(what: &str, find: impl Fn() -> Option<u32>) -> u32 {
    let started = std::time::Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no {what} appeared"
        );
        std::thread::sleep(Duration::from_millis(200));
        if let Some(pid) = find() {
            return pid;
        }
    }
}

/// Run `cmd` to its end, its output piped; killed (and the test failed,
/// with why) if it runs longer than `deadline`.
pub fn output_within(cmd: &mut Command, deadline: Duration) -> Output {
    fusion_live::command::output_within(cmd, None, deadline).unwrap_or_else(|e| panic!("{e}"))
}
