//! The failure faults of a live run carried out on real processes: `kill`
//! is SIGKILL, `pause` SIGSTOP then SIGCONT, `restart` starts the instance's
//! process again on its addresses. The runner decides when (the same
//! timeline as the simulator's, `fusion_driver::timeline_of`); a
//! [`ProcessControl`] does it to processes (here, local ones by pid) or,
//! elsewhere, to containers.

use std::path::PathBuf;
use std::sync::Mutex;

use rustix::process::{Pid, Signal, kill_process};

use crate::cluster::{self, ClusterFile};

/// What the runner does to an instance's process (0-based instances).
pub trait ProcessControl: Send + Sync {
    /// Stop it at once (SIGKILL): no chance to write or say anything.
    fn kill(&self, inst: usize) -> Result<(), String>;
    /// Freeze it (SIGSTOP).
    fn pause(&self, inst: usize) -> Result<(), String>;
    /// Let a frozen one go on (SIGCONT).
    fn resume(&self, inst: usize) -> Result<(), String>;
    /// Start it again on the same addresses; returns once it listens.
    fn restart(&self, inst: usize) -> Result<(), String>;
    /// Phase `phase` (0-based) begins, its instances told. A control that
    /// cuts the scenario's partitions for real (containers: `docker network
    /// disconnect` from the interconnect network) cuts this phase's here.
    fn phase_begins(&self, _phase: usize) -> Result<(), String> {
        Ok(())
    }
    /// Phase `phase` ends: what `phase_begins` cut is joined again.
    fn phase_ends(&self, _phase: usize) -> Result<(), String> {
        Ok(())
    }
    /// The first `n` instances as the kernel's network faults reach them
    /// (namespace and interconnect address), when this control knows them
    /// better than the cluster file does (a Swarm stack's tasks, named in
    /// the file by service names). None: the cluster file's.
    fn net_members(&self, _n: usize) -> Option<Vec<crate::netfault::Member>> {
        None
    }
}

/// Where each instance of a live run is, as the runner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveLife {
    Up,
    /// Frozen by a `pause` fault until the runner lets it go on.
    Paused,
    /// Killed by a `kill` fault; a `restart` starts it again.
    Killed,
    /// The cluster evicted it: it stopped itself (its process still answers).
    Evicted,
    /// It stopped answering, and the scenario did not ask for it: killed,
    /// frozen or cut off from outside (`kill -9`, `docker pause`, a
    /// firewall rule), since `since_ns` (runner time). The cluster decides
    /// by its heartbeats whether it is dead; the runner probes it at every
    /// look and takes it back when it answers again.
    Lost {
        since_ns: u64,
    },
}

/// The instances of a local cluster (started by `run --live` or `up`), by
/// their process ids.
pub struct LocalProcesses {
    exe: PathBuf,
    cluster: Mutex<ClusterFile>,
    /// The cluster file to keep up to date with a restarted instance's
    /// process id (so that `down` stops it), if the cluster has one.
    file: Option<PathBuf>,
}

impl LocalProcesses {
    /// Err: the cluster file has no process id for an instance (its
    /// processes were not started here or by `up`: containers).
    pub fn new(cluster: &ClusterFile, exe: PathBuf) -> Result<LocalProcesses, String> {
        if let Some(m) = cluster.instances.iter().find(|m| m.pid == 0) {
            return Err(format!(
                "inst{} has no process id in the cluster file (not started by `fusionlab up`)",
                m.id
            ));
        }
        Ok(LocalProcesses {
            exe,
            cluster: Mutex::new(cluster.clone()),
            file: None,
        })
    }

    /// Keep `file` (the cluster's file) up to date with restarted
    /// instances' process ids.
    pub fn with_file(mut self, file: PathBuf) -> LocalProcesses {
        self.file = Some(file);
        self
    }

    /// The cluster as it is now (a restarted instance has a new pid).
    pub fn cluster(&self) -> Result<ClusterFile, String> {
        self.cluster
            .lock()
            .map(|c| c.clone())
            .map_err(|_| "the process table is poisoned".to_string())
    }

    fn pid(&self, inst: usize) -> Result<u32, String> {
        self.cluster()?
            .instances
            .get(inst)
            .map(|m| m.pid)
            .ok_or_else(|| format!("inst{}: no such instance", inst + 1))
    }

    fn signal(&self, inst: usize, signal: Signal, what: &str) -> Result<(), String> {
        let pid = self.pid(inst)?;
        let p = i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| format!("inst{}: pid {pid} is not a process id", inst + 1))?;
        kill_process(p, signal).map_err(|e| format!("inst{} (pid {pid}): {what}: {e}", inst + 1))
    }
}

impl ProcessControl for LocalProcesses {
    fn kill(&self, inst: usize) -> Result<(), String> {
        self.signal(inst, Signal::KILL, "SIGKILL")?;
        // Reaped if it is our child, so a restart finds its ports free.
        if let Ok(pid) = self.pid(inst) {
            let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while cluster::alive(pid) && std::time::Instant::now() < end {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        Ok(())
    }

    fn pause(&self, inst: usize) -> Result<(), String> {
        self.signal(inst, Signal::STOP, "SIGSTOP")
    }

    fn resume(&self, inst: usize) -> Result<(), String> {
        self.signal(inst, Signal::CONT, "SIGCONT")
    }

    fn restart(&self, inst: usize) -> Result<(), String> {
        let mut c = self.cluster()?;
        let m = c
            .instances
            .get(inst)
            .cloned()
            .ok_or_else(|| format!("inst{}: no such instance", inst + 1))?;
        let pid = cluster::restart_instance(&c, m.id, &self.exe)?;
        if let Some(m) = c.instances.get_mut(inst) {
            m.pid = pid;
        }
        if let Some(f) = &self.file {
            c.write(f)?;
        }
        if let Ok(mut now) = self.cluster.lock() {
            *now = c;
        }
        Ok(())
    }
}

/// What the runner knows of every instance's life during a variant: where
/// it is, which life it runs, its last counters (a killed or frozen one
/// cannot be asked), and the commits sampled for the brownout.
pub struct Lives {
    pub state: Vec<LiveLife>,
    /// Each instance's life number (0, then one more per restart).
    pub life: Vec<u32>,
    /// The last counters taken from each instance (a phase edge while it
    /// is killed or frozen uses them: they did not move since).
    pub last_stats: Vec<Option<(fusion_core::stats::Stats, u64)>>,
    /// Frozen instances and when (runner time since the variant began, ns)
    /// they go on.
    pub resume_at: Vec<(u64, usize)>,
    /// The alert log lines of the runner itself (kills, pauses, restarts),
    /// in the simulator's words, not yet put into a phase.
    pub alerts: Vec<fusion_report::AlertEntry>,
    /// Observations taken from each instance's current life, over the
    /// admin service or from its journal: where a journal read starts.
    pub taken: Vec<u64>,
    /// Whether the journal of an instance's current life was read to its
    /// end (it died or was evicted without handing its history over).
    pub journal_read: Vec<bool>,
    /// A life the runner started (loaded) that the checker has not seen
    /// as a member yet: what it records is a member's (see `drain_one`).
    pub fresh: Vec<bool>,
}

impl Lives {
    pub fn new(instances: usize) -> Lives {
        Lives {
            state: vec![LiveLife::Up; instances],
            life: vec![0; instances],
            last_stats: vec![None; instances],
            resume_at: Vec::new(),
            alerts: Vec::new(),
            taken: vec![0; instances],
            journal_read: vec![false; instances],
            fresh: vec![false; instances],
        }
    }

    /// Every instance's state in a few words, for the progress line of a
    /// held phase: `inst1 up, inst2 lost 3.1 s`.
    pub fn summary(&self, now_ns: u64) -> String {
        self.state
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let what = match s {
                    LiveLife::Up => "up".to_string(),
                    LiveLife::Paused => "paused".to_string(),
                    LiveLife::Killed => "killed".to_string(),
                    LiveLife::Evicted => "evicted".to_string(),
                    LiveLife::Lost { since_ns } => format!(
                        "lost {:.1} s",
                        now_ns.saturating_sub(*since_ns) as f64 / 1e9
                    ),
                };
                format!("inst{} {what}", i + 1)
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether instance `i` stopped answering without the scenario's doing.
    pub fn lost(&self, i: usize) -> bool {
        matches!(self.state.get(i), Some(LiveLife::Lost { .. }))
    }

    /// Whether instance `i`'s process can answer (not killed, not frozen).
    pub fn answers(&self, i: usize) -> bool {
        matches!(self.state.get(i), Some(LiveLife::Up | LiveLife::Evicted))
    }

    /// Instance `i` runs as a member (not killed, frozen or evicted).
    pub fn up(&self, i: usize) -> bool {
        matches!(self.state.get(i), Some(LiveLife::Up))
    }

    /// A line for the alert log, as the simulator writes it.
    pub fn note(&mut self, at_ns: u64, inst: usize, what: &str) {
        self.note_line(at_ns, inst, format!("Instance {what}"));
    }

    /// A line for the alert log as it is.
    pub fn note_line(&mut self, at_ns: u64, inst: usize, line: String) {
        self.alerts.push(fusion_report::AlertEntry {
            at_ns,
            instance: u8::try_from(inst + 1).unwrap_or(u8::MAX),
            line,
        });
    }
}
