//! What the driver and the checkers read of the foregrounds (through the
//! instance's views, `dispatch/views.rs`): the row lock waits, the
//! sessions' states and waits, the oldest snapshot still in use.

use super::Foregrounds;
use crate::stats::Wait;
use crate::types::{Scn, Xid};

impl Foregrounds {
    /// The row lock waits now, as edges of the wait-for graph: (session,
    /// the transaction it runs, the transaction it waits for).
    pub(in crate::instance) fn row_lock_waits(&self) -> Vec<(u32, Xid, Xid)> {
        self.rows
            .edges()
            .map(|(sid, holder)| (sid, self.xid_of(sid), holder))
            .collect()
    }

    /// Every session has stopped (its workload is disabled or done) and holds nothing.
    pub(in crate::instance) fn all_at_rest(&self) -> bool {
        self.sessions.iter().all(|s| s.at_rest())
    }

    /// Sessions that are not idle.
    pub(in crate::instance) fn active(&self) -> usize {
        self.sessions.iter().filter(|s| !s.is_idle()).count()
    }

    /// What sessions wait on right now: (event, sessions), by event.
    pub(in crate::instance) fn current_waits(&self) -> Vec<(Wait, u32)> {
        let mut out: Vec<(Wait, u32)> = Vec::new();
        for w in self.sessions.iter().filter_map(|s| s.waiting_on()) {
            match out.iter_mut().find(|(e, _)| *e == w) {
                Some((_, n)) => *n += 1,
                None => out.push((w, 1)),
            }
        }
        out.sort();
        out
    }

    /// Every session finished its iterations (finite workloads).
    pub(in crate::instance) fn all_finished(&self) -> bool {
        self.sessions.iter().all(|s| s.is_finished())
    }

    /// The oldest snapshot a busy session reads with. A session that thinks
    /// or idles takes a new snapshot (the SCN of then) before it reads
    /// again: its last one no longer counts.
    pub(in crate::instance) fn oldest_open_snapshot(&self) -> Option<Scn> {
        self.sessions.iter().filter_map(|s| s.busy_snapshot()).min()
    }
}
