//! The history journal: with the correctness checks on (`--check`), an
//! instance host given a journal directory appends every observation its
//! instance records to a file *before* anything the step that recorded it
//! sends or writes leaves the process. A process that dies from outside
//! (SIGKILL, the OOM killer, `docker kill`) or freezes (SIGSTOP) thus leaves
//! behind every read, write and commit whose effects another instance or the
//! store could see, and the runner reads the part it had not drained yet
//! back from the file ([`read_after`]). Without it the checker would meet
//! the dead instance's last commits only in the survivors' reads, and
//! report them as values nobody wrote.
//!
//! The file lives on the instance's host (page cache: it survives the
//! process, not the machine) and holds length-delimited `Observation`
//! messages of the admin protocol. The runner still drains the history over
//! the admin service as the run goes; the journal serves only what an
//! instance that stopped answering could not hand over.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use fusion_core::instance::{Horizon, Instance, Observation};
use fusion_core::types::InstId;
use prost::Message;

use crate::observation_codec::{decode_observation, encode_observation};
use crate::pb;

/// Observations the host keeps for the runner at most (as many as the
/// instance's own log may hold): past it the host reports that nobody takes
/// them, and stops taking more (the instance's log then fills and says so).
pub const JOURNAL_PENDING_MAX: usize = 1 << 22;

/// The journal of instance `inst`'s life `life` in the run that started at
/// `run` (the cluster clock's origin): one file per life, so that a
/// restarted instance's history starts afresh.
pub fn path(dir: &Path, inst: InstId, run: u64, life: u32) -> PathBuf {
    dir.join(format!("inst{}-history-{run}-{life}.bin", inst.0 + 1))
}

/// Observations taken, and the horizon when they were the last.
pub type Taken = (Vec<Observation>, Option<Horizon>);

/// The host's side: what the instance recorded, written through to the
/// file, kept until the runner takes it.
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
    pending: VecDeque<Observation>,
    /// The instance's horizon when the last pull emptied its log.
    horizon: Option<Horizon>,
    scratch: Vec<Observation>,
    bytes: Vec<u8>,
    /// Set once the file or the bound failed: the run stops on the report,
    /// and nothing more is pulled.
    broken: bool,
}

impl Journal {
    /// A new, empty journal; journals of this instance's earlier runs in
    /// `dir` are removed (they are of no use once a new run loads).
    pub fn create(dir: &Path, inst: InstId, run: u64, life: u32) -> std::io::Result<Journal> {
        let path = path(dir, inst, run, life);
        let own = format!("inst{}-history-", inst.0 + 1);
        let this_run = format!("{own}{run}-");
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(&own) && !name.starts_with(&this_run) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)?;
        Ok(Journal {
            file,
            path,
            pending: VecDeque::new(),
            horizon: None,
            scratch: Vec::new(),
            bytes: Vec::new(),
            broken: false,
        })
    }

    /// Take what the instance recorded since the last pull into the file
    /// and the pending queue. Call it after every step, before the step's
    /// actions leave. Err: the journal failed (reported once).
    pub fn pull(&mut self, inst: &mut Instance) -> Result<(), String> {
        if self.broken {
            return Ok(());
        }
        self.scratch.clear();
        let horizon = inst.drain_history(&mut self.scratch, usize::MAX);
        debug_assert!(horizon.is_some(), "an unbounded drain empties the log");
        self.horizon = horizon;
        if self.scratch.is_empty() {
            return Ok(());
        }
        self.bytes.clear();
        for o in &self.scratch {
            // Encoding into a Vec cannot run out of room.
            let _ = encode_observation(o).encode_length_delimited(&mut self.bytes);
        }
        if let Err(e) = self.file.write_all(&self.bytes) {
            self.broken = true;
            return Err(format!(
                "the history journal {} cannot be written: {e}; an instance killed from \
                 outside now would leave its last observations unchecked",
                self.path.display()
            ));
        }
        if self.pending.len() + self.scratch.len() > JOURNAL_PENDING_MAX {
            self.broken = true;
            return Err(format!(
                "{JOURNAL_PENDING_MAX} observations wait for the runner to take them: \
                 nobody drains the history"
            ));
        }
        self.pending.extend(self.scratch.drain(..));
        Ok(())
    }

    /// At most `max` of the oldest observations not taken yet, and the
    /// instance's horizon when that took the last of them (as
    /// `Instance::drain_history` answers); and the journal's failure, if
    /// this pull met it.
    pub fn take(&mut self, inst: &mut Instance, max: usize) -> (Taken, Option<String>) {
        let failed = self.pull(inst).err();
        let n = max.min(self.pending.len());
        let chunk: Vec<Observation> = self.pending.drain(..n).collect();
        let horizon = if self.pending.is_empty() && !self.broken {
            self.horizon
        } else {
            None
        };
        ((chunk, horizon), failed)
    }
}

/// The observations of a journal after the first `skip` (those the runner
/// drained already), in the order recorded. A frame cut short at the end
/// (the process died in the middle of a write) ends the journal.
pub fn read_after(path: &Path, skip: u64, who: &str) -> Result<Vec<Observation>, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("{who}: the history journal {}: {e}", path.display()))?;
    let mut rest = &bytes[..];
    let mut seen: u64 = 0;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let Ok(o) = pb::Observation::decode_length_delimited(&mut rest) else {
            break;
        };
        if seen >= skip {
            out.push(decode_observation(&o, who)?);
        }
        seen += 1;
    }
    if seen < skip {
        return Err(format!(
            "{who}: the history journal {} holds {seen} observations, but {skip} were taken \
             from the instance: it is not this life's",
            path.display()
        ));
    }
    Ok(out)
}
