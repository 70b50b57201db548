//! Row lock waits, and LMD's global deadlock detection over them.
//!
//! A session that meets a row locked by another transaction waits for that
//! transaction to end (`enq: TX - row lock contention`): behind it in the
//! transaction table when it is this instance's, on its TX enqueue at the
//! GES when it is another member's (`gc/ges.rs`), and for recovery's word
//! when its instance died. Each wait is an edge of the cluster's wait-for
//! graph, and a session waits for one transaction at a time: every node has
//! at most one edge out, so the cycles are disjoint.
//!
//! Every `_lm_dd_interval` (10 s; 3 s on a single instance, as Oracle
//! without RAC checks a TX wait) LMD begins a search from each wait that
//! old. The search follows the holders from instance to instance
//! (Chandy-Misra-Haas edge chasing, `Msg::Deadlock`): a path that comes
//! back to its first transaction is a deadlock. Its edges are then
//! confirmed (each wait still the same one, so all held at once), and
//! the oldest wait of the cycle whose statement can be rolled back is the
//! victim; only its own search declares it, so a cycle has one victim.
//! The victim's statement fails with ORA-00060 and the alert log says
//! "Global Enqueue Services Deadlock detected".
//!
//! `RowLocks` keeps the waits and answers with decisions; the dispatcher
//! (`dispatch/visit.rs`) sends and applies them.

use std::collections::{BTreeMap, VecDeque};

use crate::config::Nanos;
use crate::msg::{TxEnd, WaitHop};
use crate::types::{InstId, Xid};

/// Hops a search follows at most: more sessions than a cluster has would
/// be a peer's garbage.
pub(in crate::instance) const PATH_MAX: usize = 4096;

/// Deadlocks an instance keeps the record of (the newest).
pub(in crate::instance) const DEADLOCKS_MAX: usize = 64;

/// Where a row lock wait waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum Via {
    /// Behind a transaction of this instance, in its transaction table.
    Local,
    /// On the transaction's TX enqueue, at the GES.
    Ges,
    /// For recovery to say how a dead instance's transaction ended.
    Recovery,
}

/// One session's row lock wait.
#[derive(Clone, Copy, Debug)]
pub(in crate::instance) struct RowWait {
    pub holder: Xid,
    pub since: Nanos,
    pub wait_id: u64,
    /// A row update that has changed nothing yet: its statement can be
    /// rolled back by failing it.
    pub abandonable: bool,
    pub via: Via,
    /// When LMD last searched from this wait.
    searched_at: Option<Nanos>,
}

/// A deadlock this instance broke: when, and the cycle as confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockSeen {
    pub at: Nanos,
    pub cycle: Vec<WaitHop>,
}

/// What LMD does with a search that reached this instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::instance) enum Search {
    /// The holder waits in turn: go on to its holder's owner.
    Forward(InstId, Vec<WaitHop>),
    /// The path came back to its first transaction: tell its instance.
    Found(InstId, Vec<WaitHop>),
    /// No deadlock through this path (or a cycle its first wait is not on).
    Stop,
}

/// What LMD does with a confirmation that reached this instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::instance) enum Confirm {
    /// Hop `at` holds: go on to the next hop's instance.
    Next(InstId, u32),
    /// Every edge held: the first hop, this instance's, is the victim.
    Victim(u32),
    /// A wait changed meanwhile: no deadlock.
    Stop,
}

#[derive(Debug, Default)]
pub(in crate::instance) struct RowLocks {
    /// The waits, by session (ordered: a scan begins its searches in the same order every run).
    waits: BTreeMap<u32, RowWait>,
    next_wait_id: u64,
    /// LMD's next scan, while one is armed.
    scan_at: Option<Nanos>,
    deadlocks: VecDeque<DeadlockSeen>,
    /// Deadlocks broken here since the start (the record keeps the newest).
    broken: u64,
    /// This instance's transactions that ended while the GES had asked for
    /// their TX enqueue: to give back (the dispatcher takes them after a commit).
    given_back: Vec<(Xid, TxEnd)>,
}

impl RowLocks {
    /// Session `sid` begins to wait for `holder`. Returns when LMD must
    /// scan, if no scan is armed yet.
    pub fn begin(
        &mut self,
        sid: u32,
        holder: Xid,
        now: Nanos,
        dd_ns: Nanos,
        abandonable: bool,
        via: Via,
    ) -> Option<Nanos> {
        self.next_wait_id += 1;
        let wait = RowWait {
            holder,
            since: now,
            wait_id: self.next_wait_id,
            abandonable,
            via,
            searched_at: None,
        };
        let earlier = self.waits.insert(sid, wait);
        debug_assert!(earlier.is_none(), "session {sid} waits twice");
        if self.scan_at.is_some() {
            return None;
        }
        let at = now + dd_ns;
        self.scan_at = Some(at);
        Some(at)
    }

    /// Transaction `xid` of this instance ended and the GES asked for its TX enqueue.
    pub fn give_back(&mut self, xid: Xid, end: TxEnd) {
        self.given_back.push((xid, end));
    }

    /// The TX enqueues to give back now.
    pub fn take_given_back(&mut self) -> Vec<(Xid, TxEnd)> {
        std::mem::take(&mut self.given_back)
    }

    /// Whether a TX enqueue is left to give back (none may be, between events).
    pub fn giving_back(&self) -> bool {
        !self.given_back.is_empty()
    }

    /// Session `sid` waits no longer (the transaction ended, or its statement failed).
    pub fn end(&mut self, sid: u32) -> Option<RowWait> {
        self.waits.remove(&sid)
    }

    /// The wait of session `sid`, if it waits for a row.
    pub fn wait_of(&self, sid: u32) -> Option<&RowWait> {
        self.waits.get(&sid)
    }

    /// Session `sid`'s wait is now for recovery's word.
    pub fn via_recovery(&mut self, sid: u32) {
        if let Some(w) = self.waits.get_mut(&sid) {
            w.via = Via::Recovery;
        }
    }

    /// LMD's scan fired at `now`: the waits to search from (`dd_ns` old and
    /// not searched for as long), and when to scan next (`None`: no wait left).
    pub fn scan(&mut self, now: Nanos, dd_ns: Nanos) -> (Vec<(u32, RowWait)>, Option<Nanos>) {
        debug_assert!(self.scan_at.is_some_and(|at| at <= now));
        let mut due = Vec::new();
        let mut next: Option<Nanos> = None;
        for (&sid, w) in self.waits.iter_mut() {
            let last = w.searched_at.unwrap_or(w.since);
            if now >= last + dd_ns {
                w.searched_at = Some(now);
                due.push((sid, *w));
            }
            let again = w.searched_at.unwrap_or(w.since) + dd_ns;
            next = Some(next.map_or(again, |n| n.min(again)));
        }
        debug_assert!(next.is_none_or(|n| n > now));
        self.scan_at = next;
        (due, next)
    }

    /// Whether a scan is armed for `at` (a timer of an earlier arming is stale).
    pub fn scan_due(&self, at: Nanos) -> bool {
        self.scan_at == Some(at)
    }

    /// The hop for session `sid` running `xid`, while it waits.
    pub fn hop(&self, me: InstId, sid: u32, xid: Xid) -> Option<WaitHop> {
        let w = self.waits.get(&sid)?;
        Some(WaitHop {
            inst: me,
            sid,
            xid,
            holder: w.holder,
            wait_id: w.wait_id,
            since: w.since,
            abandonable: w.abandonable,
        })
    }

    /// A search reached this instance; `hop` is the wait of the session
    /// running the last hop's holder, if that session waits for a row.
    pub fn search(path: Vec<WaitHop>, hop: Option<WaitHop>) -> Search {
        let (Some(first), Some(hop)) = (path.first().copied(), hop) else {
            return Search::Stop;
        };
        let mut path = path;
        path.push(hop);
        if hop.holder == first.xid {
            return Search::Found(first.inst, path);
        }
        let revisits = path.iter().any(|h| h.xid == hop.holder);
        if revisits || path.len() >= PATH_MAX || hop.holder.is_none() {
            // A cycle not through the first wait: its own waits find it.
            return Search::Stop;
        }
        Search::Forward(hop.holder.inst(), path)
    }

    /// The wait of the cycle rolled back: the oldest one that can be
    /// (ties by instance and session). `None`: none can.
    pub fn victim(cycle: &[WaitHop]) -> Option<usize> {
        cycle
            .iter()
            .enumerate()
            .filter(|(_, h)| h.abandonable)
            .min_by_key(|(_, h)| (h.since, h.inst, h.sid))
            .map(|(i, _)| i)
    }

    /// Whether hop `h` of a path is still this instance's same wait, as
    /// this instance records it (a peer's copy of the path is not trusted:
    /// whether the wait can be rolled back, and since when, must match too).
    pub fn holds(&self, me: InstId, h: &WaitHop) -> bool {
        h.inst == me && self.hop(me, h.sid, h.xid) == Some(*h)
    }

    /// A confirmation reached this instance at hop `at` of `path`.
    pub fn confirm(&self, me: InstId, path: &[WaitHop], at: u32) -> Confirm {
        let len = path.len();
        let i = at as usize;
        if i == len {
            // Back at the first hop: it must still hold, and be the victim.
            return match path.first() {
                Some(first) if self.holds(me, first) && RowLocks::victim(path) == Some(0) => {
                    Confirm::Victim(first.sid)
                }
                _ => Confirm::Stop,
            };
        }
        match path.get(i) {
            Some(h) if self.holds(me, h) => {
                let next = i + 1;
                let to = path.get(next).map_or(path[0].inst, |n| n.inst);
                Confirm::Next(to, next as u32)
            }
            _ => Confirm::Stop,
        }
    }

    /// A deadlock was broken here at `at`.
    pub fn record(&mut self, at: Nanos, cycle: Vec<WaitHop>) {
        self.broken += 1;
        if self.deadlocks.len() == DEADLOCKS_MAX {
            self.deadlocks.pop_front();
        }
        self.deadlocks.push_back(DeadlockSeen { at, cycle });
        debug_assert!(self.deadlocks.len() <= DEADLOCKS_MAX);
    }

    /// The deadlocks broken here, the newest last (up to [`DEADLOCKS_MAX`]).
    pub fn deadlocks(&self) -> impl Iterator<Item = &DeadlockSeen> {
        self.deadlocks.iter()
    }

    /// Every row lock wait now: (session, holder).
    pub fn edges(&self) -> impl Iterator<Item = (u32, Xid)> + '_ {
        self.waits.iter().map(|(&sid, w)| (sid, w.holder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(inst: u8, sid: u32, xid: u64, holder: u64, since: Nanos) -> WaitHop {
        WaitHop {
            inst: InstId(inst),
            sid,
            xid: Xid::new(InstId(inst), xid),
            holder: Xid::new(InstId(1 - inst), holder),
            wait_id: 1,
            since,
            abandonable: true,
        }
    }

    #[test]
    fn a_path_back_to_its_first_transaction_is_found_at_its_instance() {
        let a = hop(0, 3, 10, 20, 5);
        let b = hop(1, 7, 20, 10, 9);
        let Search::Found(to, path) = RowLocks::search(vec![a], Some(b)) else {
            panic!("not found");
        };
        assert_eq!(to, InstId(0));
        assert_eq!(path, vec![a, b]);
        // The oldest wait is the victim.
        assert_eq!(RowLocks::victim(&path), Some(0));
    }

    #[test]
    fn a_holder_that_does_not_wait_ends_the_search() {
        let a = hop(0, 3, 10, 20, 5);
        assert_eq!(RowLocks::search(vec![a], None), Search::Stop);
    }

    #[test]
    fn a_cycle_without_the_first_wait_is_left_to_its_own_waits() {
        // a waits for b, b for c, c for b: b and c deadlock, a only waits.
        let a = WaitHop {
            holder: Xid::new(InstId(1), 20),
            ..hop(0, 1, 10, 99, 1)
        };
        let b = WaitHop {
            holder: Xid::new(InstId(0), 30),
            ..hop(1, 2, 20, 99, 2)
        };
        let c = WaitHop {
            holder: Xid::new(InstId(1), 20),
            ..hop(0, 3, 30, 99, 3)
        };
        let Search::Forward(to, path) = RowLocks::search(vec![a], Some(b)) else {
            panic!("stopped early");
        };
        assert_eq!(to, InstId(0));
        assert_eq!(RowLocks::search(path, Some(c)), Search::Stop);
    }

    #[test]
    fn only_a_wait_that_can_be_rolled_back_is_a_victim() {
        let a = WaitHop {
            abandonable: false,
            ..hop(0, 3, 10, 20, 1)
        };
        let b = hop(1, 7, 20, 10, 9);
        assert_eq!(RowLocks::victim(&[a, b]), Some(1));
        let b = WaitHop {
            abandonable: false,
            ..b
        };
        assert_eq!(RowLocks::victim(&[a, b]), None);
    }

    #[test]
    fn a_wait_that_changed_since_the_search_fails_the_confirmation() {
        let mut r = RowLocks::default();
        let me = InstId(0);
        let holder = Xid::new(InstId(1), 20);
        r.begin(3, holder, 5, 100, true, Via::Ges);
        let first = r.hop(me, 3, Xid::new(me, 10)).expect("waits");
        let other = WaitHop {
            inst: InstId(1),
            sid: 7,
            xid: holder,
            holder: first.xid,
            wait_id: 1,
            since: 9,
            abandonable: true,
        };
        let path = vec![first, other];
        assert_eq!(r.confirm(me, &path, 0), Confirm::Next(InstId(1), 1));
        assert_eq!(r.confirm(me, &path, 2), Confirm::Victim(3));
        // The wait ended and a new one began: the same session, another wait.
        r.end(3);
        r.begin(3, holder, 50, 100, true, Via::Ges);
        assert_eq!(r.confirm(me, &path, 2), Confirm::Stop);
    }

    #[test]
    fn a_path_that_misdescribes_a_wait_here_confirms_nothing() {
        let mut r = RowLocks::default();
        let me = InstId(0);
        let holder = Xid::new(InstId(1), 20);
        // Session 3 waits at a point that cannot be rolled back.
        r.begin(3, holder, 5, 100, false, Via::Ges);
        let mine = r.hop(me, 3, Xid::new(me, 10)).expect("waits");
        let forged = WaitHop {
            abandonable: true,
            ..mine
        };
        let other = WaitHop {
            inst: InstId(1),
            sid: 7,
            xid: holder,
            holder: mine.xid,
            wait_id: 1,
            since: 9,
            abandonable: true,
        };
        assert_eq!(r.confirm(me, &[forged, other], 2), Confirm::Stop);
        assert_eq!(r.confirm(me, &[forged, other], 0), Confirm::Stop);
    }

    #[test]
    fn a_scan_searches_each_wait_once_an_interval_and_arms_the_next() {
        let mut r = RowLocks::default();
        let x = Xid::new(InstId(1), 4);
        assert_eq!(r.begin(1, x, 0, 100, true, Via::Local), Some(100));
        assert_eq!(r.begin(2, x, 40, 100, true, Via::Local), None);
        let (due, next) = r.scan(100, 100);
        assert_eq!(due.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![1]);
        assert_eq!(next, Some(140));
        assert!(r.scan_due(140) && !r.scan_due(100));
        let (due, next) = r.scan(140, 100);
        assert_eq!(due.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![2]);
        assert_eq!(next, Some(200));
        r.end(1);
        r.end(2);
        let (due, next) = r.scan(200, 100);
        assert!(due.is_empty() && next.is_none());
    }
}
