//! Observation: what the instance keeps for others to read, and that
//! nothing in it reads back. The checkers' history (history.rs), the alert
//! log (alert.rs) and the timeline trace (its records in trace.rs, its
//! hooks here), each bounded.
//!
//! The rest of the instance writes through [`Observer`]'s methods, giving
//! the time itself (the observer keeps no clock and asks nothing of the
//! instance); the driver reads through `Instance`'s views (`dispatch/views.rs`).

mod alert;
mod history;
mod trace;

pub use alert::{ALERT_LINES_MAX, AlertLine};
pub use history::{Horizon, Observation};
pub use trace::{Hop, TRACE_PENDING_MAX, TraceRecord, TransferId};

use crate::config::Nanos;
use crate::cpu::{ProcId, StepDone};
use crate::stats::Wait;
use crate::types::InstId;

pub(super) struct Observer {
    /// What the checkers read, when they check.
    history: history::History,
    /// The alert log since the driver last took it.
    alert: alert::AlertLog,
    /// The timeline trace's records, when the driver asked for them.
    trace: Option<Box<trace::TraceLog>>,
}

impl Observer {
    /// `record_history`: keep reads, writes and commits for the checkers.
    pub fn new(record_history: bool) -> Observer {
        Observer {
            history: history::History::new(record_history),
            alert: alert::AlertLog::default(),
            trace: None,
        }
    }

    /// A line of the alert log.
    #[inline]
    pub fn alert(&mut self, at: Nanos, line: impl Into<String>) {
        self.alert.write(at, line);
    }

    /// The alert log's lines since the last take, left in place.
    pub fn alert_lines(&self) -> &[AlertLine] {
        self.alert.lines()
    }

    /// The alert log's lines since the last take.
    pub fn take_alert_log(&mut self, now: Nanos) -> Vec<AlertLine> {
        self.alert.take(now)
    }

    /// Whether the checkers' history is kept.
    #[inline(always)]
    pub fn history_on(&self) -> bool {
        self.history.is_on()
    }

    /// Move at most `max` of the oldest observations not yet drained to
    /// `out`; true when that emptied the log.
    pub fn drain_history(&mut self, out: &mut Vec<Observation>, max: usize) -> bool {
        self.history.drain(out, max)
    }

    /// Keep an observation for the checkers; `Err` (once) with the problem
    /// when the log just filled and later ones are dropped.
    #[inline(always)]
    pub fn record(&mut self, o: Observation) -> Result<(), String> {
        if self.history.record(o) {
            return Err(self.history.full_error());
        }
        Ok(())
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
    use crate::stats::Wait;

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
