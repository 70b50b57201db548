//! What the correctness checkers read: every read with its snapshot, every
//! write and every commit, recorded when `InstanceConfig::record_history` is
//! on and handed to the driver by `Instance::take_history`.
//!
//! The simulator takes the log after every event, so it stays short; the live
//! runtime takes it once, at the end of a run. So that a long checked run
//! cannot eat the host's memory, the log holds at most [`HISTORY_LIMIT`]
//! observations between two takes. Reaching the limit is an error in
//! `Instance::errors` (the run fails, its checks being incomplete); the
//! observations beyond it are dropped, never a panic.

use super::Observation;

/// Most observations kept between two `take_history` calls: 4 Mi, about
/// 230 MB. The checked runs of the test suite stay far below it.
pub(super) const HISTORY_LIMIT: usize = 1 << 22;

#[derive(Debug)]
pub(super) struct History {
    /// `None` when nobody checks.
    log: Option<Vec<Observation>>,
    limit: usize,
    /// Observations dropped because the log was full.
    dropped: u64,
}

impl History {
    pub(super) fn new(on: bool) -> History {
        History::with_limit(on, HISTORY_LIMIT)
    }

    fn with_limit(on: bool, limit: usize) -> History {
        History {
            log: on.then(Vec::new),
            limit,
            dropped: 0,
        }
    }

    /// Whether observations are recorded at all.
    #[inline]
    pub(super) fn is_on(&self) -> bool {
        self.log.is_some()
    }

    /// Keep `o`. When the log is full it is dropped instead: true for the
    /// first drop of the run, which is to be reported ([`History::full_error`]).
    #[inline(always)]
    pub(super) fn record(&mut self, o: Observation) -> bool {
        let Some(log) = self.log.as_mut() else {
            return false;
        };
        if log.len() < self.limit {
            log.push(o);
            return false;
        }
        self.dropped += 1;
        self.dropped == 1
    }

    /// What to report when the log is full.
    pub(super) fn full_error(&self) -> String {
        format!(
            "the checkers' history reached its limit of {} observations before the \
             driver took it; later ones are dropped, so the checks are incomplete",
            self.limit
        )
    }

    /// The observations recorded since the last call.
    pub(super) fn take(&mut self) -> Vec<Observation> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(scn: u64) -> Observation {
        Observation::Commit {
            xid: crate::types::Xid::new(crate::types::InstId(0), 1),
            scn,
        }
    }

    #[test]
    fn off_records_nothing() {
        let mut h = History::new(false);
        assert!(!h.is_on());
        assert!(!h.record(commit(1)));
        assert!(h.take().is_empty());
    }

    #[test]
    fn a_full_log_drops_and_reports_once() {
        let mut h = History::with_limit(true, 2);
        assert!(!h.record(commit(1)));
        assert!(!h.record(commit(2)));
        assert!(h.record(commit(3)), "the first drop is reported");
        let err = h.full_error();
        assert!(err.contains("limit of 2 observations"), "{err}");
        assert!(!h.record(commit(4)), "reported once");
        assert_eq!(h.take(), vec![commit(1), commit(2)]);
        // Taken: there is room again.
        assert!(!h.record(commit(5)));
        assert_eq!(h.take(), vec![commit(5)]);
    }
}
