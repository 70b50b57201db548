//! The instance's alert log: timestamped lines in Oracle's wording for what
//! a DBA looks for after a failure (reconfigurations, evictions, instance
//! recovery, lost blocks). The driver takes the lines as they come
//! (`Instance::take_alert_log`) and the report prints them.

use crate::config::Nanos;

/// Lines kept between two takes. The simulator takes them after each
/// phase; a run that writes more (a storm of lost blocks) keeps the first
/// ones and says how many it dropped.
pub const ALERT_LINES_MAX: usize = 10_000;

/// One line of the alert log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlertLine {
    pub at: Nanos,
    pub line: String,
}

#[derive(Debug, Default)]
pub(super) struct AlertLog {
    lines: Vec<AlertLine>,
    dropped: u64,
}

impl AlertLog {
    pub(super) fn write(&mut self, at: Nanos, line: impl Into<String>) {
        if self.lines.len() < ALERT_LINES_MAX {
            self.lines.push(AlertLine {
                at,
                line: line.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// The lines written since the last take, left in place.
    pub(super) fn lines(&self) -> &[AlertLine] {
        &self.lines
    }

    /// The lines written since the last take (and a last line if some were dropped).
    pub(super) fn take(&mut self, now: Nanos) -> Vec<AlertLine> {
        let mut out = std::mem::take(&mut self.lines);
        if self.dropped > 0 {
            out.push(AlertLine {
                at: now,
                line: format!(
                    "{} more alert log lines were not kept (at most {ALERT_LINES_MAX} between reports)",
                    self.dropped
                ),
            });
            self.dropped = 0;
        }
        out
    }
}
