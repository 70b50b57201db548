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
    #[serde(default)]
    pub pid: u32,
}

impl ClusterFile {
    pub fn read(path: &Path) -> Result<ClusterFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the cluster file: {e}", path.display()))?;
        let mut c: ClusterFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        // A file shared in a repository (cluster/cluster.toml) leaves the
        // token to the environment, like the processes it describes.
        if let Ok(t) = std::env::var(TOKEN_ENV)
            && !t.is_empty()
        {
            c.token = t;
        }
        if c.token.is_empty() {
            return Err(format!(
                "{}: no token: set `token` in the file or {TOKEN_ENV} in the environment",
                path.display()
            ));
        }
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

    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text = toml::to_string_pretty(self).map_err(|e| e.to_string())?;
        let text = format!(
            "# A Fusionlab cluster, written by `fusionlab up`. Keep it private: it holds the token.\n{text}"
        );
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// How `up` starts a cluster.
#[derive(Clone, Debug)]
pub struct UpOptions {
    pub instances: u8,
    pub dir: PathBuf,
    /// Ports from here (store, then interconnect and admin per instance); 0 = any free port.
    pub base_port: u16,
    /// The `fusionlab` binary to start (normally this one).
    pub exe: PathBuf,
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

/// Start the store and the instances; returns once every one listens.
pub fn up(opts: &UpOptions) -> Result<ClusterFile, String> {
    if opts.instances == 0 || u32::from(opts.instances) > fusion_wire::MAX_INSTANCES {
        return Err(format!(
            "--instances must be between 1 and {}",
            fusion_wire::MAX_INSTANCES
        ));
    }
    std::fs::create_dir_all(&opts.dir).map_err(|e| format!("{}: {e}", opts.dir.display()))?;
    let token = new_token()?;
    let mut children: Vec<(String, Child, PathBuf)> = Vec::new();
    let spawn = |name: &str, args: Vec<String>| -> Result<(Child, PathBuf), String> {
        let addr_file = opts.dir.join(format!("{name}.addr"));
        let _ = std::fs::remove_file(&addr_file);
        let log = std::fs::File::create(opts.dir.join(format!("{name}.log")))
            .map_err(|e| format!("{}: {e}", opts.dir.display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&opts.exe);
        cmd.args(&args)
            .arg("--addr-file")
            .arg(&addr_file)
            .env(TOKEN_ENV, &token)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        // Its own process group: a Ctrl-C in the shell that ran `up` does not stop the cluster.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {} {name}: {e}", opts.exe.display()))?;
        Ok((child, addr_file))
    };
    let store_dir = opts.dir.join("store");
    let (c, f) = spawn(
        "store",
        vec![
            "store".into(),
            "--listen".into(),
            port(opts.base_port, 0),
            "--dir".into(),
            store_dir.display().to_string(),
        ],
    )?;
    children.push(("store".into(), c, f));
    for i in 1..=opts.instances {
        let o = 2 * u16::from(i);
        let (c, f) = spawn(
            &format!("inst{i}"),
            vec![
                "instance".into(),
                "--id".into(),
                i.to_string(),
                "--interconnect".into(),
                port(opts.base_port, o - 1),
                "--admin".into(),
                port(opts.base_port, o),
            ],
        )?;
        children.push((format!("inst{i}"), c, f));
    }
    // Wait for every address file; a child that exits first fails the start.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut addrs: Vec<Vec<String>> = vec![Vec::new(); children.len()];
    loop {
        let mut missing = false;
        let mut exited = None;
        for (k, (name, child, file)) in children.iter_mut().enumerate() {
            if !addrs[k].is_empty() {
                continue;
            }
            if let Ok(Some(status)) = child.try_wait() {
                exited = Some(format!("{name} exited at start ({status})"));
                let log = std::fs::read_to_string(opts.dir.join(format!("{name}.log")))
                    .unwrap_or_default();
                exited = exited.map(|e| format!("{e}:\n{log}"));
                break;
            }
            match std::fs::read_to_string(&*file) {
                Ok(t) if t.ends_with('\n') => {
                    addrs[k] = t.lines().map(str::to_string).collect();
                }
                _ => missing = true,
            }
        }
        if let Some(e) = exited {
            kill_all(&mut children);
            return Err(e);
        }
        if !missing {
            break;
        }
        if Instant::now() > deadline {
            kill_all(&mut children);
            return Err(
                "the cluster did not start within 20 s (see the logs in the cluster directory)"
                    .into(),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = |k: usize| children[k].1.id();
    let field = |k: usize, j: usize| -> Result<String, String> {
        addrs[k]
            .get(j)
            .cloned()
            .ok_or_else(|| format!("{}: address file is incomplete", children[k].0))
    };
    let cluster = ClusterFile {
        token,
        dir: opts.dir.clone(),
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
                    pid: pid(k),
                })
            })
            .collect::<Result<Vec<_>, String>>()?,
    };
    Ok(cluster)
}

/// Start one instance of `cluster` again (after it was killed) on the
/// addresses the cluster file gives, with its token; returns its process
/// id once it listens. Its log goes on in the cluster directory.
pub fn start_instance(
    exe: &Path,
    cluster: &ClusterFile,
    m: &InstanceMember,
) -> Result<u32, String> {
    let name = format!("inst{}", m.id);
    let addr_file = cluster.dir.join(format!("{name}.addr"));
    let _ = std::fs::remove_file(&addr_file);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(cluster.dir.join(format!("{name}.log")))
        .map_err(|e| format!("{}: {e}", cluster.dir.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(["instance", "--id", &m.id.to_string()])
        .args(["--interconnect", &m.interconnect, "--admin", &m.admin])
        .arg("--addr-file")
        .arg(&addr_file)
        .env(TOKEN_ENV, &cluster.token)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {} {name}: {e}", exe.display()))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(t) = std::fs::read_to_string(&addr_file)
            && t.ends_with('\n')
        {
            return Ok(child.id());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{name} exited at start ({status}); see its log"));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(format!("{name} did not start within 20 s; see its log"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn kill_all(children: &mut [(String, Child, PathBuf)]) {
    for (_, c, _) in children.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Whether a process is alive. A child of ours that exited is reaped here
/// (a zombie still answers signal 0); anyone else's is asked with signal 0.
pub fn alive(pid: u32) -> bool {
    let Some(p) = rustix::process::Pid::from_raw(pid as i32) else {
        return false;
    };
    match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG) {
        Ok(Some(_)) => false,
        Ok(None) => true,
        Err(_) => rustix::process::test_kill_process(p).is_ok(),
    }
}

/// Stop a process: SIGTERM, then SIGKILL if it is still there after `grace`.
pub fn stop(pid: u32, grace: Duration) {
    let Some(p) = rustix::process::Pid::from_raw(pid as i32) else {
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

/// Write a listener's address(es) for `up`, one per line, atomically.
pub fn write_addr_file(path: &Path, addrs: &[std::net::SocketAddr]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let text: String = addrs.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}
