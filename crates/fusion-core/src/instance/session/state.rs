//! A session's state, and [`Sessions`]: the table of this instance's
//! sessions with everything that queues them (the ready queue, the sessions
//! waiting on a block) and the requests and transaction lookups they have
//! outstanding.
//!
//! `Sessions` only keeps the books; deciding what a session does is the
//! foreground code's (the rest of `session/`), and recording a wait's time is
//! `Foregrounds::end_wait`'s.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::super::cache::BufId;
use super::super::execution::ExecPoint;
use super::Session;
use crate::config::Nanos;
use crate::stats::Wait;
use crate::types::{BlockAddr, Scn, Xid};

/// What a session is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum SessionState {
    /// Its workload is not running (or it finished).
    Idle,
    Think,
    Ready,
    Cpu(AfterCpu),
    /// Waiting on a block (its own request, or behind another session or a pin).
    WaitBlock,
    /// Waiting for a transaction: a row lock, or a lookup of its state.
    WaitTx,
    /// `log file sync`.
    WaitCommit,
    /// A global enqueue (`row cache lock`, `DFS lock handle`, `enq: SQ - contention`).
    WaitEnq,
    /// Coordinating a parallel statement (waiting for its slaves or running it serially).
    WaitPx,
}

/// What a session's CPU step was for: what to do when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum AfterCpu {
    /// The execute call's overhead.
    Exec,
    /// Visiting a pinned buffer.
    Visit(BufId),
    Commit,
    /// An index block split over several pinned buffers.
    Split,
    /// Parallel execution work of the QC (merging a buffer, or running serially).
    Px,
    /// Writes to the session's private memory (`memory_writes`).
    Memory {
        ops: u32,
    },
}

/// A request this instance has outstanding for a block.
#[derive(Clone, Copy, Debug)]
pub(in crate::instance) struct PendingRequest {
    pub id: u64,
    /// The session that asked (others wait behind it on the block).
    pub owner: u32,
    pub sent_at: Nanos,
    /// For a full scan: a granted read is `db file scattered read`.
    pub scan: bool,
    /// What was asked: a reconfiguration asks the new master again.
    pub kind: crate::msg::ReqKind,
}

/// The sessions of an instance and their queues.
///
/// Bounded by the session count: a session is at most once in the ready
/// queue and at most once among the block waiters, since it is queued only
/// when it stops running and taken out before it runs again (asserted in
/// debug builds). Requests are one per block, lookups one per question.
#[derive(Debug)]
pub(in crate::instance) struct Sessions {
    table: Vec<Session>,
    /// Sessions ready to go on, in the order they became ready.
    ready: VecDeque<u32>,
    /// Sessions waiting for something to happen to a block.
    block_waiters: FxHashMap<BlockAddr, Vec<u32>>,
    /// Entries in all of `block_waiters`' lists.
    block_waiting: usize,
    /// Requests this instance has outstanding, one per block.
    requests: FxHashMap<BlockAddr, PendingRequest>,
    next_request: u64,
    /// Outstanding transaction lookups: token -> (session, our SCN when asked).
    tx_lookups: FxHashMap<u64, Lookup>,
    next_lookup: u64,
}

/// A question about another instance's transaction, until it is answered.
#[derive(Clone, Copy, Debug)]
pub(in crate::instance) struct Lookup {
    pub sid: u32,
    /// Our SCN when we asked.
    pub asked_at: Scn,
    pub xid: Xid,
    /// A row lock wait (`TxWait`: answered when it ends), else a state query.
    pub wait: bool,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            table: Vec::new(),
            ready: VecDeque::new(),
            block_waiters: FxHashMap::default(),
            block_waiting: 0,
            requests: FxHashMap::default(),
            next_request: 1,
            tx_lookups: FxHashMap::default(),
            next_lookup: 1,
        }
    }
}

impl Sessions {
    // ----- the table ----------------------------------------------------------------

    /// The id the next session added gets. An instance runs at most
    /// SESSIONS_PER_INSTANCE_MAX (60,000) sessions, all workloads together:
    /// the loader refuses more, so an id always fits 32 bits.
    pub(in crate::instance) fn next_id(&self) -> u32 {
        u32::try_from(self.table.len()).expect("at most 60,000 sessions per instance")
    }

    /// Every session's id, in order.
    pub(in crate::instance) fn ids(&self) -> std::ops::Range<u32> {
        0..self.next_id()
    }

    /// Add a session; returns its id.
    pub(super) fn add(&mut self, s: Session) -> u32 {
        let id = self.next_id();
        self.table.push(s);
        id
    }

    pub(in crate::instance) fn iter(&self) -> impl Iterator<Item = &Session> {
        self.table.iter()
    }

    /// The session `sid`, if there is one.
    pub(in crate::instance) fn get(&self, sid: usize) -> Option<&Session> {
        self.table.get(sid)
    }

    #[inline]
    pub(in crate::instance) fn session(&self, sid: u32) -> &Session {
        &self.table[sid as usize]
    }

    #[inline]
    pub(in crate::instance) fn session_mut(&mut self, sid: u32) -> &mut Session {
        &mut self.table[sid as usize]
    }

    /// Move session `sid` to `point` of its execution.
    #[inline]
    pub(in crate::instance) fn go_to(&mut self, sid: u32, point: ExecPoint) {
        self.table[sid as usize].cur = point;
    }

    // ----- the ready queue ----------------------------------------------------------

    /// Session `sid` may go on; a new database call begins if it was idle or thinking.
    #[inline]
    pub(super) fn set_ready(&mut self, sid: u32, now: Nanos) {
        let s = &mut self.table[sid as usize];
        if matches!(s.st, SessionState::Idle | SessionState::Think) {
            s.call_start = Some(now);
        }
        s.st = SessionState::Ready;
        self.push_ready(sid);
    }

    /// Session `sid` goes on after a CPU step (its database call goes on).
    #[inline(always)]
    pub(super) fn resume(&mut self, sid: u32) {
        self.table[sid as usize].st = SessionState::Ready;
        self.push_ready(sid);
    }

    #[inline(always)]
    fn push_ready(&mut self, sid: u32) {
        self.ready.push_back(sid);
        debug_assert!(
            self.ready.len() <= self.table.len(),
            "ready queue of {} for {} sessions",
            self.ready.len(),
            self.table.len()
        );
    }

    #[inline]
    pub(super) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The session first in the ready queue, taken off it. It may have
    /// stopped being ready since it was queued: see [`Sessions::is_ready`].
    #[inline(always)]
    pub(super) fn pop_ready(&mut self) -> Option<u32> {
        self.ready.pop_front()
    }

    #[inline(always)]
    pub(super) fn is_ready(&self, sid: u32) -> bool {
        self.table
            .get(sid as usize)
            .is_some_and(|s| s.st == SessionState::Ready)
    }

    // ----- waits ----------------------------------------------------------------------

    pub(super) fn begin_wait(&mut self, sid: u32, event: Wait, state: SessionState, now: Nanos) {
        let s = &mut self.table[sid as usize];
        s.wait = Some((event, now));
        s.st = state;
    }

    /// End the session's wait, if it waits: the event it began with and how long it took.
    pub(super) fn end_wait(&mut self, sid: u32, now: Nanos) -> Option<(Wait, Nanos)> {
        let (event, since) = self.table[sid as usize].wait.take()?;
        Some((event, now - since))
    }

    /// Drop the session's wait unrecorded (it never really happened).
    pub(super) fn forget_wait(&mut self, sid: u32) {
        self.table[sid as usize].wait = None;
    }

    /// When the session's wait began, if it waits.
    pub(super) fn waiting_since(&self, sid: u32) -> Option<Nanos> {
        self.table[sid as usize].wait.map(|(_, since)| since)
    }

    /// Session `sid` waits on `event` until something happens to `blk`.
    pub(super) fn wait_on_block(&mut self, sid: u32, blk: BlockAddr, event: Wait, now: Nanos) {
        self.begin_wait(sid, event, SessionState::WaitBlock, now);
        let list = self.block_waiters.entry(blk).or_default();
        debug_assert!(!list.contains(&sid), "session {sid} waits twice on {blk}");
        list.push(sid);
        self.block_waiting += 1;
        debug_assert!(
            self.block_waiting <= self.table.len(),
            "{} block waiters for {} sessions",
            self.block_waiting,
            self.table.len()
        );
    }

    /// Whether any session waits on a block at all (a miss on the map would
    /// still hash and probe).
    #[inline(always)]
    pub(super) fn someone_waits_on_a_block(&self) -> bool {
        !self.block_waiters.is_empty()
    }

    /// The sessions waiting on `blk`, in the order they began, taken off the block.
    pub(super) fn take_block_waiters(&mut self, blk: BlockAddr) -> Option<Vec<u32>> {
        let list = self.block_waiters.remove(&blk)?;
        self.block_waiting -= list.len();
        Some(list)
    }

    /// Whether sessions need `blk` (a request for it, or sessions waiting on
    /// it): its buffers are not to be replaced.
    pub(super) fn need(&self, blk: BlockAddr) -> bool {
        self.requests.contains_key(&blk) || self.block_waiters.contains_key(&blk)
    }

    // ----- requests and lookups -------------------------------------------------------

    /// Whether a session of this instance already asked for `blk`.
    #[inline]
    pub(in crate::instance) fn has_request(&self, blk: BlockAddr) -> bool {
        self.requests.contains_key(&blk)
    }

    /// Session `owner` asks for `blk`; returns the request's id.
    pub(super) fn start_request(
        &mut self,
        blk: BlockAddr,
        owner: u32,
        now: Nanos,
        scan: bool,
        kind: crate::msg::ReqKind,
    ) -> u64 {
        let id = self.next_request;
        self.next_request += 1;
        let before = self.requests.insert(
            blk,
            PendingRequest {
                id,
                owner,
                sent_at: now,
                scan,
                kind,
            },
        );
        // Sessions queue behind a request (`gc buffer busy acquire`) rather than ask twice.
        debug_assert!(before.is_none(), "a second request for {blk}");
        id
    }

    /// The outstanding request for `blk`, if it is request `id`.
    #[inline(always)]
    pub(super) fn request(&self, blk: BlockAddr, id: u64) -> Option<PendingRequest> {
        self.requests.get(&blk).copied().filter(|r| r.id == id)
    }

    /// The outstanding request for `blk`, whichever it is.
    #[inline]
    pub(super) fn request_for(&self, blk: BlockAddr) -> Option<PendingRequest> {
        self.requests.get(&blk).copied()
    }

    /// The request for `blk` is complete.
    #[inline]
    pub(super) fn end_request(&mut self, blk: BlockAddr) {
        self.requests.remove(&blk);
    }

    /// Session `sid` asks another instance about a transaction; returns the question's token.
    pub(super) fn start_lookup(&mut self, sid: u32, asked_at: Scn, xid: Xid, wait: bool) -> u64 {
        let token = self.next_lookup;
        self.next_lookup += 1;
        self.tx_lookups.insert(
            token,
            Lookup {
                sid,
                asked_at,
                xid,
                wait,
            },
        );
        token
    }

    /// The answer to question `token` came: who asked, and our SCN when it did.
    pub(super) fn end_lookup(&mut self, token: u64) -> Option<(u32, Scn)> {
        self.tx_lookups.remove(&token).map(|l| (l.sid, l.asked_at))
    }

    // ----- reconfiguration ----------------------------------------------------------

    /// Every outstanding block request, by block, to ask the new masters again.
    pub(in crate::instance) fn outstanding_requests(&self) -> Vec<(BlockAddr, PendingRequest)> {
        let mut out: Vec<(BlockAddr, PendingRequest)> =
            self.requests.iter().map(|(&b, &r)| (b, r)).collect();
        out.sort_unstable_by_key(|&(b, r)| (r.id, b));
        out
    }

    /// Every unanswered question about a transaction, by token.
    pub(in crate::instance) fn outstanding_lookups(&self) -> Vec<(u64, Lookup)> {
        let mut out: Vec<(u64, Lookup)> = self.tx_lookups.iter().map(|(&t, &l)| (t, l)).collect();
        out.sort_unstable_by_key(|&(t, _)| t);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: u32) -> Sessions {
        let mut s = Sessions::default();
        for i in 0..n {
            s.add(Session::new(i, 0, i));
        }
        s
    }

    #[test]
    fn the_ready_queue_keeps_order_and_skips_sessions_no_longer_ready() {
        let mut s = table(3);
        s.set_ready(2, 5);
        s.set_ready(0, 6);
        s.set_ready(1, 7);
        assert_eq!(s.session(2).call_start, Some(5));
        s.begin_wait(0, Wait::LogFileSync, SessionState::WaitCommit, 8);
        assert_eq!(s.pop_ready(), Some(2));
        assert_eq!(s.pop_ready(), Some(0));
        assert!(!s.is_ready(0));
        assert_eq!(s.pop_ready(), Some(1));
        assert!(s.is_ready(1));
        assert_eq!(s.pop_ready(), None);
        assert_eq!(s.end_wait(0, 10), Some((Wait::LogFileSync, 2)));
        assert_eq!(s.end_wait(0, 11), None);
    }

    #[test]
    fn block_waiters_are_taken_once_in_order() {
        let mut s = table(3);
        let blk = BlockAddr(7);
        assert!(!s.need(blk));
        s.wait_on_block(2, blk, Wait::BufferBusyWaits, 0);
        s.wait_on_block(0, blk, Wait::BufferBusyWaits, 0);
        assert!(s.need(blk));
        assert_eq!(s.session(2).st, SessionState::WaitBlock);
        assert_eq!(s.take_block_waiters(blk), Some(vec![2, 0]));
        assert_eq!(s.take_block_waiters(blk), None);
        assert!(!s.need(blk));
    }

    #[test]
    fn a_request_answers_only_to_its_id() {
        let mut s = table(1);
        let blk = BlockAddr(3);
        let id = s.start_request(
            blk,
            0,
            100,
            true,
            crate::msg::ReqKind::Current { new_block: false },
        );
        assert!(s.has_request(blk) && s.need(blk));
        assert!(s.request(blk, id + 1).is_none());
        let r = s.request(blk, id).unwrap();
        assert_eq!((r.owner, r.sent_at, r.scan), (0, 100, true));
        s.end_request(blk);
        assert!(!s.has_request(blk));
        let token = s.start_lookup(0, 42, Xid::NONE, false);
        assert_eq!(s.end_lookup(token), Some((0, 42)));
        assert_eq!(s.end_lookup(token), None);
    }
}
