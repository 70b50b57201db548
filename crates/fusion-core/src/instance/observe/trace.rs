//! The timeline trace's records (`fusionlab run --trace`): what the
//! instance's processes did and when, handed to the driver, which writes the
//! trace file. Off unless the driver asks (`Instance::set_tracing`): a run
//! without a trace builds no record and does the same work as before, only
//! a test of one `Option` at each place a record would be made.
//!
//! The instance knows its own timeline and nothing of files or clocks: each
//! record carries the times the instance already used for its statistics
//! (a CPU step's `StepDone`, a wait's start and end), so the trace shows the
//! same waits the report counts.

use crate::config::Nanos;
use crate::cpu::ProcId;
use crate::stats::Wait;
use crate::types::InstId;

/// Records kept between two drains at most: the simulator drains after
/// every event, the live runner would several times a second. A driver that
/// falls behind loses the newest records (counted), never the host's memory.
pub const TRACE_PENDING_MAX: usize = 1 << 20;

/// A block request, named the way every instance on its path knows it: the
/// requester and the requester's number for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransferId {
    pub requester: InstId,
    pub req: u64,
}

/// Where a block request is on its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// A session sent it (its `gc ... request` wait begins).
    Request,
    /// The master's LMS routed it (forwarded it to the holder, granted it,
    /// or took it to serve from its own cache).
    Master,
    /// The holder's LMS worked on it (built or pinned, and shipped).
    Holder,
    /// The block arrived at the requester; the wait ended as `event`.
    Received { event: Wait },
    /// The master granted it without a block (read from disk, upgrade, new
    /// block); the wait ended as `event`.
    Granted { event: Wait },
    /// The local master answered at once: no message, no wait, no transfer.
    Abandoned,
}

/// One thing a process of the instance did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceRecord {
    /// A CPU step ended: asked for at `requested_at`, first on a CPU at
    /// `started_at`, done at `done_at`, runnable but not running for `waited`.
    Cpu {
        proc: ProcId,
        requested_at: Nanos,
        started_at: Nanos,
        done_at: Nanos,
        waited: Nanos,
    },
    /// A wait of a foreground process (a session, a PX server), as
    /// `v$system_event` counts it. A foreground does one thing at a time:
    /// its waits and CPU steps never overlap.
    Wait {
        proc: ProcId,
        event: Wait,
        began: Nanos,
        ended: Nanos,
    },
    /// A background process's wait (`gcs log flush sync`, `log file
    /// parallel write`, `db file parallel write`): it may overlap the
    /// process's CPU steps and its other such waits (LMS serves other
    /// requests while one waits for a flush).
    BackgroundWait {
        proc: ProcId,
        event: Wait,
        began: Nanos,
        ended: Nanos,
    },
    /// A fully-loaded CPU hog (`stress_cpu` at 100 %) began (`busy`) or
    /// stopped asking for a CPU at `at`. Its one CPU request never ends, so
    /// no `Cpu` record shows it: between the two it is runnable or running.
    Hog { proc: ProcId, busy: bool, at: Nanos },
    /// A block request passed `hop` on process `proc` at `at`.
    Transfer {
        id: TransferId,
        hop: Hop,
        proc: ProcId,
        at: Nanos,
    },
}

/// The records not yet drained, when tracing is on.
#[derive(Debug, Default)]
pub(super) struct TraceLog {
    records: Vec<TraceRecord>,
    /// Records dropped because the log was full.
    dropped: u64,
}

impl TraceLog {
    pub(super) fn push(&mut self, r: TraceRecord) {
        if self.records.len() < TRACE_PENDING_MAX {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }
}

impl TraceLog {
    /// Move the records made since the last drain to `out`, in the order
    /// they were made; returns how many were dropped since (the log full).
    pub(super) fn drain(&mut self, out: &mut Vec<TraceRecord>) -> u64 {
        out.append(&mut self.records);
        std::mem::take(&mut self.dropped)
    }
}
