//! Observation: what the instance keeps for others to read, and that
//! nothing in it reads back. The checkers' history (history.rs), the alert
//! log (alert.rs) and the timeline trace (trace.rs), each bounded.
//!
//! The rest of the instance writes through [`Observer`]'s methods, giving
//! the time itself (the observer keeps no clock and asks nothing of the
//! instance); the driver reads through `Instance`'s methods in inspect.rs.

mod alert;
mod history;
mod trace;

pub use alert::{ALERT_LINES_MAX, AlertLine};
pub use history::{Horizon, Observation};
pub use trace::{Hop, TRACE_PENDING_MAX, TraceRecord, TransferId};

use crate::config::Nanos;

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
