//! What the correctness checkers read: every read with its snapshot, every
//! write and every commit, recorded when `InstanceConfig::record_history` is
//! on and handed to the driver by `Instance::drain_history` (or
//! `Instance::take_history`), with the instance's [`Horizon`].
//!
//! The drivers drain the log as the run goes: the simulator after every
//! event, the live runner in bounded chunks on every look at the cluster.
//! So that a driver that falls behind cannot eat the host's memory, the log
//! holds at most [`HISTORY_MAX`] observations not yet drained (a limit on
//! what is pending, not on the run's total). Reaching it is an error in
//! `Instance::errors` (the run fails, its checks being incomplete); the
//! observations beyond it are dropped, never a panic.

use std::collections::VecDeque;

use crate::types::{Scn, Xid};

/// What the checkers see: reads with their snapshot, and changes and commits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    Read {
        xid: Xid,
        snapshot: Scn,
        table: usize,
        key: u64,
        val: Option<i64>,
    },
    Write {
        xid: Xid,
        table: usize,
        key: u64,
        val: i64,
    },
    Commit {
        xid: Xid,
        scn: Scn,
    },
    /// The commit of `xid` was acknowledged to its session: its `log file
    /// sync` ended (the commit record is on disk). Recorded after its
    /// `Commit`; a commit not acknowledged when its instance died is in
    /// doubt (it is committed if its record reached the disk).
    Acknowledged {
        xid: Xid,
    },
}

/// Most observations kept between two drains: 4 Mi, about 230 MB. The
/// simulator drains after every event; the live runner a few times a second.
pub(super) const HISTORY_MAX: usize = 1 << 22;

/// What an instance's history promises about the observations it has not
/// recorded yet, as of a drain that took everything recorded so far: a
/// checker verifies a read once no commit it could see is still to come,
/// and forgets the row versions no later read can see.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Horizon {
    /// The instance's SCN: every later commit of it gets a higher one.
    pub scn: Scn,
    /// Every later read of it has a snapshot at or above this one: the
    /// oldest snapshot of a session in the middle of a statement, else the
    /// SCN (a new statement takes the SCN as its snapshot).
    pub snapshot: Scn,
}

#[derive(Debug)]
pub(super) struct History {
    /// `None` when nobody checks.
    log: Option<VecDeque<Observation>>,
    len_max: usize,
    /// Observations dropped because the log was full.
    dropped: u64,
}

impl History {
    pub(super) fn new(on: bool) -> History {
        History::with_limit(on, HISTORY_MAX)
    }

    fn with_limit(on: bool, len_max: usize) -> History {
        History {
            log: on.then(VecDeque::new),
            len_max,
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
        if log.len() < self.len_max {
            log.push_back(o);
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
            self.len_max
        )
    }

    /// Move the oldest `max` observations (at most) to the end of `out`.
    /// True when the log is now empty.
    pub(super) fn drain(&mut self, out: &mut Vec<Observation>, max: usize) -> bool {
        let Some(log) = self.log.as_mut() else {
            return true;
        };
        let n = log.len().min(max);
        out.extend(log.drain(..n));
        log.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(scn: u64) -> Observation {
        Observation::Commit {
            xid: crate::types::Xid::new(crate::types::InstId(0), 1),
            scn: Scn(scn),
        }
    }

    fn take(h: &mut History) -> Vec<Observation> {
        let mut out = Vec::new();
        h.drain(&mut out, usize::MAX);
        out
    }

    #[test]
    fn off_records_nothing() {
        let mut h = History::new(false);
        assert!(!h.is_on());
        assert!(!h.record(commit(1)));
        assert!(take(&mut h).is_empty());
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
        assert_eq!(take(&mut h), vec![commit(1), commit(2)]);
        // Taken: there is room again.
        assert!(!h.record(commit(5)));
        assert_eq!(take(&mut h), vec![commit(5)]);
    }

    #[test]
    fn a_drain_takes_the_oldest_in_bounded_chunks_and_makes_room() {
        let mut h = History::with_limit(true, 3);
        for scn in 1..=3 {
            assert!(!h.record(commit(scn)));
        }
        let mut out = Vec::new();
        assert!(!h.drain(&mut out, 2), "one is left");
        assert_eq!(out, vec![commit(1), commit(2)]);
        // The limit is on what is pending: a drained log takes more.
        assert!(!h.record(commit(4)));
        assert!(!h.record(commit(5)));
        assert!(!h.drain(&mut out, 2), "one is left");
        assert_eq!(out, vec![commit(1), commit(2), commit(3), commit(4)]);
        assert!(h.drain(&mut out, 2), "emptied");
        assert_eq!(out.len(), 5);
        assert!(h.drain(&mut out, 2), "an empty log is caught up");
        assert_eq!(h.dropped, 0);
    }
}
