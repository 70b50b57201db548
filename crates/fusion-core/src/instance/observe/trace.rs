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

use super::Observer;
use crate::config::Nanos;
use crate::cpu::{ProcId, StepDone};
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
    fn push(&mut self, r: TraceRecord) {
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

// Each hook below is inlined to one test of `self.trace`; the record is
// only built when tracing is on.
impl Observer {
    /// Keep trace records from now on (`on`), or stop and forget them.
    pub fn set_tracing(&mut self, on: bool) {
        self.trace = on.then(Box::default);
    }

    /// Whether trace records are kept.
    #[inline(always)]
    pub fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Move the records made since the last drain to `out`; how many were
    /// dropped since (0 when tracing is off).
    pub fn drain_trace(&mut self, out: &mut Vec<TraceRecord>) -> u64 {
        self.trace.as_mut().map_or(0, |log| log.drain(out))
    }

    #[inline(always)]
    pub fn trace_cpu(&mut self, d: StepDone) {
        if let Some(log) = self.trace.as_mut() {
            log.push(TraceRecord::Cpu {
                proc: d.proc,
                requested_at: d.requested_at,
                started_at: d.started_at,
                done_at: d.done_at,
                waited: d.waited,
            });
        }
    }

    /// A foreground wait of `took` ending `now`.
    #[inline(always)]
    pub fn trace_wait(&mut self, now: Nanos, proc: ProcId, event: Wait, took: Nanos) {
        if let Some(log) = self.trace.as_mut() {
            log.push(TraceRecord::Wait {
                proc,
                event,
                began: now.saturating_sub(took),
                ended: now,
            });
        }
    }

    /// A background wait of `took` ending `now`.
    #[inline(always)]
    pub fn trace_background_wait(&mut self, now: Nanos, proc: ProcId, event: Wait, took: Nanos) {
        if let Some(log) = self.trace.as_mut() {
            log.push(TraceRecord::BackgroundWait {
                proc,
                event,
                began: now.saturating_sub(took),
                ended: now,
            });
        }
    }

    /// A fully-loaded hog began (`busy`) or stopped asking for a CPU `now`.
    #[inline(always)]
    pub fn trace_hog(&mut self, now: Nanos, proc: ProcId, busy: bool) {
        if let Some(log) = self.trace.as_mut() {
            log.push(TraceRecord::Hog {
                proc,
                busy,
                at: now,
            });
        }
    }

    /// Request `req` of `requester` passed `hop` on `proc` at `now`.
    #[inline(always)]
    pub fn trace_hop(&mut self, now: Nanos, requester: InstId, req: u64, hop: Hop, proc: ProcId) {
        if let Some(log) = self.trace.as_mut() {
            log.push(TraceRecord::Transfer {
                id: TransferId { requester, req },
                hop,
                proc,
                at: now,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: ProcId = 7;

    fn drained(obs: &mut Observer) -> (Vec<TraceRecord>, u64) {
        let mut out = Vec::new();
        let dropped = obs.drain_trace(&mut out);
        (out, dropped)
    }

    #[test]
    fn off_the_hooks_record_nothing() {
        let mut obs = Observer::new(false);
        assert!(!obs.tracing());
        obs.trace_wait(1_000, P, Wait::GcCrRequest, 300);
        obs.trace_hog(1_000, P, true);
        assert_eq!(drained(&mut obs), (Vec::new(), 0));
    }

    #[test]
    fn a_wait_ends_now_and_began_its_length_before() {
        let mut obs = Observer::new(false);
        obs.set_tracing(true);
        obs.trace_wait(1_000, P, Wait::GcCrRequest, 300);
        obs.trace_background_wait(2_000, P, Wait::LogFileParallelWrite, 5_000);
        obs.trace_hop(2_500, InstId(1), 9, Hop::Master, P);
        let (records, dropped) = drained(&mut obs);
        assert_eq!(dropped, 0);
        assert_eq!(
            records,
            vec![
                TraceRecord::Wait {
                    proc: P,
                    event: Wait::GcCrRequest,
                    began: 700,
                    ended: 1_000
                },
                // A wait longer than the time so far began at 0, not before.
                TraceRecord::BackgroundWait {
                    proc: P,
                    event: Wait::LogFileParallelWrite,
                    began: 0,
                    ended: 2_000
                },
                TraceRecord::Transfer {
                    id: TransferId {
                        requester: InstId(1),
                        req: 9
                    },
                    hop: Hop::Master,
                    proc: P,
                    at: 2_500
                },
            ]
        );
        assert_eq!(drained(&mut obs), (Vec::new(), 0), "drained once");
    }

    #[test]
    fn a_full_log_counts_what_it_drops_until_the_next_drain() {
        let mut obs = Observer::new(false);
        obs.set_tracing(true);
        for at in 0..TRACE_PENDING_MAX as u64 + 3 {
            obs.trace_hog(at, P, true);
        }
        let (records, dropped) = drained(&mut obs);
        assert_eq!((records.len(), dropped), (TRACE_PENDING_MAX, 3));
        assert_eq!(
            records.last(),
            Some(&TraceRecord::Hog {
                proc: P,
                busy: true,
                at: TRACE_PENDING_MAX as u64 - 1
            }),
            "the newest are the ones dropped"
        );
        obs.trace_hog(0, P, false);
        assert_eq!(drained(&mut obs).1, 0, "the count starts again");
        obs.set_tracing(false);
        obs.trace_hog(0, P, false);
        assert_eq!(drained(&mut obs), (Vec::new(), 0));
    }
}
