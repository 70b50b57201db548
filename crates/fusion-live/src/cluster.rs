//! A local cluster of processes: `fusionlab up` starts a block store and N
//! instance processes on loopback and writes a cluster file; `status` and
//! `down` read it, and `run --live --cluster FILE` runs against it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The environment variable that hands the cluster token to child processes
/// (not the command line, which `ps` shows to everyone).
pub const TOKEN_ENV: &str = "FUSIONLAB_TOKEN";

/// The environment variable naming a file that holds the token instead (a
/// Docker or Kubernetes secret, mounted as a file): read when
/// FUSIONLAB_TOKEN is not set, so the token is on no command line and in no
/// environment.
pub const TOKEN_FILE_ENV: &str = "FUSIONLAB_TOKEN_FILE";

/// A token file larger than this is not a token file.
const TOKEN_FILE_BYTES_MAX: u64 = 4096;

/// The token the environment gives: FUSIONLAB_TOKEN, or the contents of the
/// file FUSIONLAB_TOKEN_FILE names (trailing white space dropped). None when
/// neither is set; an error when both are, or the file cannot be read or
/// holds no token.
pub fn token_from_env() -> Result<Option<String>, String> {
    let direct = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    let file = std::env::var_os(TOKEN_FILE_ENV).filter(|f| !f.is_empty());
    match (direct, file) {
        (Some(_), Some(_)) => Err(format!(
            "both {TOKEN_ENV} and {TOKEN_FILE_ENV} are set: set one of them"
        )),
        (Some(t), None) => Ok(Some(t)),
        (None, Some(f)) => token_from_file(Path::new(&f)).map(Some),
        (None, None) => Ok(None),
    }
}

fn token_from_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let bad = |why: String| format!("{TOKEN_FILE_ENV}={}: {why}", path.display());
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(TOKEN_FILE_BYTES_MAX + 1).read_to_string(&mut text))
        .map_err(|e| bad(format!("cannot read the token: {e}")))?;
    if text.len() as u64 > TOKEN_FILE_BYTES_MAX {
        return Err(bad(format!(
            "more than {TOKEN_FILE_BYTES_MAX} bytes: not a token"
        )));
    }
    let token = text.trim_end();
    if token.is_empty() {
        return Err(bad("the file is empty".to_string()));
    }
    Ok(token.to_string())
}

/// What a cluster file holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// Shared secret: the admin, store and interconnect services reject calls
    /// without it. Empty: taken from FUSIONLAB_TOKEN (which also overrides it).
    #[serde(default)]
    pub token: String,
    /// Where the store keeps its files and the processes their logs.
    pub dir: PathBuf,
    /// Where the runner finds the instances' history journals (a volume
    /// it shares with them in containers); a cluster of this machine's
    /// processes keeps them in `dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_dir: Option<PathBuf>,
    /// The logging flags `up` gave its processes (`--log-level`,
    /// `--log-format`): `restart` gives them to the instance it starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_args: Vec<String>,
    pub store: Member,
    #[serde(rename = "instance")]
    pub instances: Vec<InstanceMember>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Member {
    pub address: String,
    /// 0 when the process was not started by `up` (containers).
    #[serde(default)]
    pub pid: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InstanceMember {
    /// 1-based, as in reports.
    pub id: u8,
    pub interconnect: String,
    pub admin: String,
    /// Where the instance serves its Prometheus metrics (`GET /metrics`);
    /// empty when it serves none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub metrics: String,
    #[serde(default)]
    pub pid: u32,
    /// The container it runs in (id or name, as `docker inspect` takes
    /// it), if any: the runner carries out the scenario's network faults in
    /// its network namespace (see `netfault`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub container: String,
}

impl ClusterFile {
    /// The cluster a file describes, with the token from FUSIONLAB_TOKEN
    /// when that is set.
    pub fn read(path: &Path) -> Result<ClusterFile, String> {
        let mut c = ClusterFile::read_stored(path)?;
        // A file shared in a repository (cluster/cluster.toml) leaves the
        // token to the environment, like the processes it describes.
        if let Some(t) = token_from_env()? {
            c.token = t;
        }
        if c.token.is_empty() {
            return Err(format!(
                "{}: no token: set `token` in the file, or {TOKEN_ENV} (or \
                 {TOKEN_FILE_ENV}) in the environment",
                path.display()
            ));
        }
        Ok(c)
    }

    /// The file as written (the token from the environment not applied):
    /// what a command that updates the file writes back.
    pub fn read_stored(path: &Path) -> Result<ClusterFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the cluster file: {e}", path.display()))?;
        let c: ClusterFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, m) in c.instances.iter().enumerate() {
            if usize::from(m.id) != i + 1 {
                return Err(format!(
                    "{}: instances must be listed as 1, 2, 3, ... (entry {} has id {})",
                    path.display(),
                    i + 1,
                    m.id
                ));
            }
        }
        if c.instances.is_empty() {
            return Err(format!(
                "{}: no [[instance]] in the cluster file",
                path.display()
            ));
        }
        Ok(c)
    }

    /// Write the file readable by its owner only (it holds the token): a
    /// new file created with mode 0600 replaces the old one, so the token is
    /// never in a file others may read, even for a moment, and a reader
    /// never sees half a file.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;

        let text = toml::to_string_pretty(self).map_err(|e| e.to_string())?;
        let text = format!(
            "# A Fusionlab cluster, written by `fusionlab up`. Keep it private: it holds the token.\n{text}"
        );
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "cluster.toml".into());
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let fail = |what: &Path, e: std::io::Error| format!("{}: {e}", what.display());
        // A leftover of a writer that died here (same pid) is ours to replace.
        let _ = std::fs::remove_file(&tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail(&tmp, e));
        }
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(path, e)
        })
    }
}

/// How `up` starts a cluster.
#[derive(Clone, Debug)]
pub struct UpOptions {
    pub instances: u8,
    pub dir: PathBuf,
    /// Ports from here (store, then interconnect and admin per instance,
    /// then each instance's metrics); 0 = any free port.
    pub base_port: u16,
    /// The `fusionlab` binary to start (normally this one).
    pub exe: PathBuf,
    /// Logging flags for every process (`--log-level`, `--log-format`).
    pub log_args: Vec<String>,
}

/// A fresh random token.
pub fn new_token() -> Result<String, String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn port(base: u16, offset: u16) -> String {
    if base == 0 {
        "127.0.0.1:0".into()
    } else {
        format!("127.0.0.1:{}", base.saturating_add(offset))
    }
}

/// One process of a cluster being started: its name (`store`, `inst2`),
/// the child and its address file.
struct Starting {
    name: String,
    child: Child,
    addr_file: PathBuf,
}

/// How a process started in a cluster directory treats the log it finds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Log {
    /// A new cluster: start the log afresh.
    Fresh,
    /// A restart: append, so the process's earlier life stays readable.
    Append,
}

/// Start one process of the cluster in `dir`: `exe` with `args`, the token
/// in its environment, its log in `dir/NAME.log` and its addresses written
/// to `dir/NAME.addr`.
fn start_member(
    exe: &Path,
    dir: &Path,
    name: &str,
    args: &[String],
    token: &str,
    log: Log,
) -> Result<Starting, String> {
    let addr_file = dir.join(format!("{name}.addr"));
    let _ = std::fs::remove_file(&addr_file);
    let log_path = dir.join(format!("{name}.log"));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(log == Log::Append)
        .truncate(log == Log::Fresh)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .arg("--addr-file")
        .arg(&addr_file)
        .env(TOKEN_ENV, token)
        // The token is given: a file named for this process would clash.
        .env_remove(TOKEN_FILE_ENV)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err);
    // Its own process group: a Ctrl-C in the shell that ran `up` does not stop the cluster.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {} {name}: {e}", exe.display()))?;
    Ok(Starting {
        name: name.to_string(),
        child,
        addr_file,
    })
}

/// How long the processes of a cluster have to start listening.
const START_PATIENCE: Duration = Duration::from_secs(20);

/// Wait until every process wrote its address file; the addresses of each,
/// in order. A process that exits first, or a start slower than
/// [`START_PATIENCE`], kills them all and fails with what its log says.
fn wait_listening(dir: &Path, starting: &mut [Starting]) -> Result<Vec<Vec<String>>, String> {
    let deadline = Instant::now() + START_PATIENCE;
    let mut addrs: Vec<Vec<String>> = vec![Vec::new(); starting.len()];
    loop {
        let mut missing = false;
        let mut exited = None;
        for (k, s) in starting.iter_mut().enumerate() {
            if !addrs[k].is_empty() {
                continue;
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                let log = std::fs::read_to_string(dir.join(format!("{}.log", s.name)))
                    .unwrap_or_default();
                exited = Some(format!("{} exited at start ({status}):\n{log}", s.name));
                break;
            }
            match std::fs::read_to_string(&s.addr_file) {
                Ok(t) if t.ends_with('\n') => {
                    addrs[k] = t.lines().map(str::to_string).collect();
                }
                _ => missing = true,
            }
        }
        if let Some(e) = exited {
            kill_all(starting);
            return Err(e);
        }
        if !missing {
            return Ok(addrs);
        }
        if Instant::now() > deadline {
            kill_all(starting);
            return Err(format!(
                "the cluster did not start within {} s (see the logs in {})",
                START_PATIENCE.as_secs(),
                dir.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Create a cluster directory (and its parents) readable by its owner only:
/// it holds the logs, the store's files and the cluster file.
pub fn create_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            format!(
                "{}: cannot create the cluster directory: {e}",
                dir.display()
            )
        })
}

fn instance_args(
    id: u8,
    interconnect: &str,
    admin: &str,
    metrics: &str,
    dir: &Path,
) -> Vec<String> {
    let mut args = vec![
        "instance".into(),
        "--id".into(),
        id.to_string(),
        "--interconnect".into(),
        interconnect.into(),
        "--admin".into(),
        admin.into(),
        // The runner, on this machine, reads a killed instance's last
        // observations from here (journal.rs).
        "--journal-dir".into(),
        dir.to_string_lossy().into_owned(),
    ];
    if !metrics.is_empty() {
        args.extend(["--metrics".into(), metrics.into()]);
    }
    args
}

/// Start the store and the instances; returns once every one listens.
pub fn up(opts: &UpOptions) -> Result<ClusterFile, String> {
    if opts.instances == 0 || u32::from(opts.instances) > fusion_wire::INSTANCES_MAX {
        return Err(format!(
            "--instances must be between 1 and {}",
            fusion_wire::INSTANCES_MAX
        ));
    }
    create_private_dir(&opts.dir)?;
    let token = new_token()?;
    let mut starting: Vec<Starting> = Vec::new();
    let store_dir = opts.dir.join("store");
    // Every process of this cluster runs on this host: a crash of the host
    // ends the run whatever the store synced, and the kernel keeps what it
    // acknowledged through any process's death. Without `fsync`, a busy
    // host's disk no longer adds to the scenario's storage latency.
    let mut store_args = vec![
        "store".into(),
        "--listen".into(),
        port(opts.base_port, 0),
        "--dir".into(),
        store_dir.display().to_string(),
        "--fsync".into(),
        "off".into(),
    ];
    store_args.extend(opts.log_args.iter().cloned());
    let mut start = |name: &str, args: Vec<String>| -> Result<(), String> {
        match start_member(&opts.exe, &opts.dir, name, &args, &token, Log::Fresh) {
            Ok(s) => {
                starting.push(s);
                Ok(())
            }
            Err(e) => {
                kill_all(&mut starting);
                Err(e)
            }
        }
    };
    start("store", store_args)?;
    for i in 1..=opts.instances {
        let o = 2 * u16::from(i);
        // The metrics ports follow every instance's interconnect and admin.
        let m = 2 * u16::from(opts.instances) + u16::from(i);
        let mut args = instance_args(
            i,
            &port(opts.base_port, o - 1),
            &port(opts.base_port, o),
            &port(opts.base_port, m),
            &opts.dir,
        );
        args.extend(opts.log_args.iter().cloned());
        start(&format!("inst{i}"), args)?;
    }
    let addrs = wait_listening(&opts.dir, &mut starting)?;
    let pid = |k: usize| starting[k].child.id();
    let field = |k: usize, j: usize| -> Result<String, String> {
        addrs[k]
            .get(j)
            .cloned()
            .ok_or_else(|| format!("{}: address file is incomplete", starting[k].name))
    };
    let cluster = ClusterFile {
        token,
        dir: opts.dir.clone(),
        journal_dir: None,
        log_args: opts.log_args.clone(),
        store: Member {
            address: field(0, 0)?,
            pid: pid(0),
        },
        instances: (1..=opts.instances)
            .map(|i| {
                let k = usize::from(i);
                Ok(InstanceMember {
                    id: i,
                    interconnect: field(k, 0)?,
                    admin: field(k, 1)?,
                    metrics: field(k, 2)?,
                    pid: pid(k),
                    container: String::new(),
                })
            })
            .collect::<Result<Vec<_>, String>>()?,
    };
    Ok(cluster)
}

/// Restart instance `id` (1-based) of a cluster `up` started: stop it if it
/// still runs, start it again on the same addresses with the cluster's
/// token. Returns the new pid, for the caller to record in the cluster
/// file. The instance comes back with no scenario loaded.
pub fn restart_instance(c: &ClusterFile, id: u8, exe: &Path) -> Result<u32, String> {
    let count = c.instances.len();
    let m = usize::from(id)
        .checked_sub(1)
        .and_then(|k| c.instances.get(k))
        .ok_or_else(|| format!("inst{id}: the cluster has instances inst1 to inst{count}"))?;
    if m.pid == 0 {
        return Err(format!(
            "inst{id}: the cluster file has no pid for it (not started by `fusionlab up`): \
             restart it where it runs"
        ));
    }
    if alive(m.pid) {
        if !runs_in(m.pid, &c.dir) {
            return Err(format!(
                "inst{id}: pid {} is not a process of the cluster in {} (its command line does \
                 not name that directory): left alone",
                m.pid,
                c.dir.display()
            ));
        }
        stop(m.pid, Duration::from_secs(3));
        if alive(m.pid) {
            return Err(format!("inst{id}: pid {} did not stop", m.pid));
        }
    }
    let name = format!("inst{id}");
    let mut args = instance_args(id, &m.interconnect, &m.admin, &m.metrics, &c.dir);
    args.extend(c.log_args.iter().cloned());
    let mut starting = vec![start_member(
        exe,
        &c.dir,
        &name,
        &args,
        &c.token,
        Log::Append,
    )?];
    let addrs = wait_listening(&c.dir, &mut starting)?;
    let listening = addrs.first().map(Vec::as_slice).unwrap_or_default();
    let mut expected = vec![m.interconnect.as_str(), m.admin.as_str()];
    if !m.metrics.is_empty() {
        expected.push(m.metrics.as_str());
    }
    if listening != expected.as_slice() {
        kill_all(&mut starting);
        return Err(format!(
            "{name} listens on {listening:?}, not on its addresses {}",
            expected.join(", ")
        ));
    }
    Ok(starting[0].child.id())
}

/// Whether process `pid` belongs to the cluster in `dir`: its command line
/// names that directory (every process `up` starts is given its address
/// file there). A pid from an old cluster file may have been reused by any
/// process since; such a process is not ours to stop.
pub fn runs_in(pid: u32, dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let dir = dir.as_os_str().as_bytes();
    !dir.is_empty() && cmdline.split(|&b| b == 0).any(|arg| arg.starts_with(dir))
}

fn kill_all(starting: &mut [Starting]) {
    for s in starting.iter_mut() {
        let _ = s.child.kill();
        let _ = s.child.wait();
    }
}

/// A pid from a cluster file as the kernel's: none for 0 or one past
/// `i32::MAX` (which `kill` would take for a process group).
fn process_id(pid: u32) -> Option<rustix::process::Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
}

/// Whether a process is alive. A child of ours that exited is reaped here
/// (a zombie still answers signal 0); anyone else's is asked with signal 0,
/// and is dead if it is a zombie its parent has not reaped yet.
pub fn alive(pid: u32) -> bool {
    let Some(p) = process_id(pid) else {
        return false;
    };
    match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG) {
        Ok(Some(_)) => false,
        Ok(None) => true,
        Err(_) => rustix::process::test_kill_process(p).is_ok() && !zombie(pid),
    }
}

/// Whether a process has exited but not been reaped (state `Z` in
/// /proc/PID/stat, after the command name in parentheses).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Stop a process: SIGTERM, then SIGKILL if it is still there after `grace`.
pub fn stop(pid: u32, grace: Duration) {
    let Some(p) = process_id(pid) else {
        return;
    };
    let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
    let end = Instant::now() + grace;
    while Instant::now() < end {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
}

/// Stop processes at once: SIGTERM to all, SIGKILL to those still there
/// after `grace`, then wait (at most `grace` again) until they are gone, so
/// that a caller that returns leaves none behind.
pub fn stop_all(pids: &[u32], grace: Duration) {
    let signal_all = |pids: &[u32], signal| {
        for p in pids.iter().filter_map(|&p| process_id(p)) {
            let _ = rustix::process::kill_process(p, signal);
        }
    };
    signal_all(pids, rustix::process::Signal::TERM);
    let mut left = pids.to_vec();
    for then in [Some(rustix::process::Signal::KILL), None] {
        let end = Instant::now() + grace;
        loop {
            left.retain(|&p| alive(p));
            if left.is_empty() {
                return;
            }
            if Instant::now() > end {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(signal) = then {
            signal_all(&left, signal);
        }
    }
}

/// Write a listener's address(es) for `up`, one per line, atomically.
pub fn write_addr_file(path: &Path, addrs: &[std::net::SocketAddr]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let text: String = addrs.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn cluster(dir: &Path) -> ClusterFile {
        ClusterFile {
            token: "0123abcd".into(),
            dir: dir.to_path_buf(),
            journal_dir: None,
            log_args: Vec::new(),
            store: Member {
                address: "127.0.0.1:7000".into(),
                pid: 10,
            },
            instances: vec![InstanceMember {
                id: 1,
                interconnect: "127.0.0.1:7001".into(),
                admin: "127.0.0.1:7002".into(),
                metrics: "127.0.0.1:7003".into(),
                pid: 11,
                container: String::new(),
            }],
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn the_cluster_file_is_private_even_when_it_replaces_a_readable_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cluster.toml");
        let c = cluster(dir.path());
        c.write(&path).expect("writes");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(ClusterFile::read(&path).expect("reads back"), c);

        // One left readable by others (an older fusionlab, a copy) is
        // replaced by a private file, not rewritten in place.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let mut moved = c.clone();
        moved.instances[0].pid = 12;
        moved.write(&path).expect("writes");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(ClusterFile::read(&path).expect("reads back"), moved);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("lists")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["cluster.toml"], "a temporary file was left behind");
    }

    #[test]
    fn a_cluster_directory_is_created_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a").join("b");
        create_private_dir(&nested).expect("creates");
        assert_eq!(mode(&nested), 0o700);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
    }

    #[test]
    fn a_pid_belongs_to_a_cluster_only_if_its_command_line_names_the_directory() {
        // This test process runs from the target directory.
        let exe = std::env::current_exe().expect("exe");
        let target = exe.parent().expect("a directory");
        assert!(runs_in(std::process::id(), target));
        assert!(!runs_in(
            std::process::id(),
            Path::new("/no/such/fusionlab/cluster")
        ));
        assert!(!runs_in(std::process::id(), Path::new("")));
        assert!(!runs_in(0, target));
    }

    #[test]
    fn pids_a_cluster_file_cannot_mean_are_not_signalled() {
        assert!(process_id(0).is_none());
        // Would be -1 as an i32: kill(-1) signals every process we may signal.
        assert!(process_id(u32::MAX).is_none());
        assert!(!alive(u32::MAX));
        assert!(process_id(1).is_some());
    }
}
