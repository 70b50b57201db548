//! Foreground sessions: each runs its workload's transactions step by step.
//! A block visit is a consistent get (CR mode) or a db block get (current
//! mode); a miss becomes a global cache request and the session waits under
//! the placeholder event (`gc cr request`), renamed on completion to what
//! happened (`gc cr block 2-way`, `... busy`, `... congested`, `... grant 2-way`).
//! This is where a wait event is timed: every foreground wait begins in
//! [`Foregrounds::begin_wait`] and is recorded in [`Foregrounds::end_wait`], below.
//!
//! The foregrounds are a subsystem being converted (issue 29): their
//! decisions are methods of [`Foregrounds`] given the kernel and, by name,
//! what they touch of the others (the buffer cache, redo, membership's
//! `Net`, the observer). What a step needs another subsystem to do comes
//! back as a value (`Acquired::Ask`, `Acquired::Built`, `Changed::Locked`,
//! the lookups left to recovery, the request for the master here), applied
//! by the dispatcher (`dispatch/visit.rs`: a visit, a block's install,
//! `make_room`; `seq_step` and `seq_updated`, for `sequence.rs`'s
//! `SeqNext` and its releases). Inserts and splits (`insert.rs`) answer a
//! `Leaf` or a `Spare`, applied in `dispatch/insert.rs`; the state they and
//! sequences keep is in `insert_points.rs` and `sequences.rs`, which this
//! file names, so that it names nothing that names the instance.
//!
//! - `state.rs`: a session's state and what a visit comes to (values);
//!   [`Sessions`], the component that owns the sessions, their ready queue,
//!   block waiters, requests and lookups, is here beside `Session`, whose
//!   fields it moves;
//! - `workload.rs`: the workload interpreter (transactions, steps, keys,
//!   think time, the statement a session's work is charged to);
//! - `access.rs`: block visits (`visit`, `acquire_cr`, `acquire_current`,
//!   `visit_done`), row updates and scans;
//! - `fusion.rs`: the requesting side of cache fusion (`gc_request`,
//!   `on_ship`, `on_grant`, installs, `make_room`);
//! - `commit.rs`: the session's transaction (commit, `log file sync`, row
//!   lock waits, lookups of other instances' transactions);
//! - `tests.rs`: decisions tested on a kernel of their own.
//!
//! Here: the state (`Foregrounds`, `Session`, `Sessions`) and waits. The
//! files above name this one, never the other way round. The loop that
//! moves ready sessions on (`run_ready`, `drive`) is the dispatcher's.

mod access;
mod commit;
mod fusion;
pub(super) mod insert;
mod insert_points;
mod maintain;
mod row_locks;
pub(super) mod sequence;
mod sequences;
mod state;
mod transactions;
mod views;
mod workload;
mod workloads;

#[cfg(test)]
mod tests;

pub use row_locks::DeadlockSeen;
pub(super) use row_locks::{Confirm, PATH_MAX, RowLocks, Search, Via};
use state::Lookup;
pub(super) use state::{Acquired, AfterCpu, Changed, PendingRequest, SessionState};
pub use transactions::LIFE_XIDS;
pub(super) use transactions::{Transactions, TxWaiter};

/// Where a session's row lock wait waits (see [`Foregrounds::wait_for_tx`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RowLockWait {
    /// Behind a transaction of this instance.
    Local,
    /// On another member's transaction's TX enqueue: ask the GES for it in X.
    Ges(crate::msg::ResName),
    /// For recovery's word about a dead instance's transaction (the lookup's token).
    Recovery(u64),
}

/// How long a row lock wait lasts before LMD searches for a deadlock
/// through it (and how often again): `_lm_dd_interval`, or a single
/// instance's 3 seconds.
pub(super) fn dd_interval_ns(k: &Kernel) -> Nanos {
    if k.instance_count() > 1 {
        k.params().lm_dd_interval_ns
    } else {
        crate::config::SINGLE_INSTANCE_DD_NS
    }
}

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::cache::BufId;
use super::execution::ExecPoint;
use super::execution::IndexChange;
use super::kernel::Kernel;
use super::observe::{Observation, Observer};
use crate::block::Block;
use crate::config::Nanos;
use crate::cpu::ProcId;
use crate::stats::Wait;
use crate::types::BlockAddr;
use crate::types::{Scn, Xid};

/// One foreground session. Its fields are the foregrounds' (`session/`);
/// the rest of the instance reads and moves it through its methods.
#[derive(Debug)]
pub(in crate::instance) struct Session {
    /// Block runs a full scan reads: `(first, end)`, the initial blocks and each instance's formatted run.
    scan_runs: Vec<(u32, u32)>,
    /// New blocks this session holds for a split.
    spares: Vec<BlockAddr>,
    /// Buffers pinned for a split's CPU step.
    split_pins: Vec<BufId>,
    /// Index changes the current update still has to make (maintain.rs).
    maint: Vec<IndexChange>,
    proc: ProcId,
    workload: usize,
    finished: bool,
    /// Position among all sessions of the workload on this instance (sequential keys).
    ordinal: u32,
    st: SessionState,
    /// The transaction template (of the workload) being run.
    template: usize,
    /// The template's next step.
    step: usize,
    /// Executions of the current step still to start.
    execs_left: u32,
    in_txn: bool,
    xid: Xid,
    /// Blocks this transaction changed (commit cleans them out).
    touched: Vec<BlockAddr>,
    /// Keys for this transaction's updates, per table, ascending (a fixed lock order).
    update_keys: Vec<(usize, Vec<u64>)>,
    snapshot: Scn,
    /// Where the current execution is.
    cur: ExecPoint,
    /// The event waited on and since when.
    wait: Option<(Wait, Nanos)>,
    iterations: u64,
    /// Draws so far of a sequential key distribution.
    seq_next: u64,
    /// Transactions their owner reported active, with our SCN when we asked:
    /// the question carried that SCN, so a later commit gets a higher one and
    /// the hint holds for snapshots up to it (an active state cannot be cached).
    hints: Vec<(Xid, Scn)>,
    /// A block shipped unrolled (light work) and the sender's SCN: build the CR copy from it.
    raw: Option<(Box<Block>, Scn)>,
    /// Answers still awaited from other instances about transactions.
    pending_lookups: u32,
    /// When the current database call started (DB time).
    call_start: Option<Nanos>,
    /// The statement being executed (tkprof) and when its execution began.
    stmt: Option<usize>,
    exec_start: Nanos,
    /// When the recursive `update seq$` began, while it runs.
    recursive_start: Option<Nanos>,
}

impl Session {
    /// A session of workload `workload` about to log on, thinking until then.
    pub(super) fn new(proc: ProcId, workload: usize, ordinal: u32) -> Session {
        Session {
            scan_runs: Vec::new(),
            spares: Vec::new(),
            split_pins: Vec::new(),
            maint: Vec::new(),
            proc,
            workload,
            finished: false,
            ordinal,
            st: SessionState::Think,
            template: 0,
            step: 0,
            execs_left: 0,
            in_txn: false,
            xid: Xid::NONE,
            touched: Vec::new(),
            update_keys: Vec::new(),
            snapshot: Scn::ZERO,
            cur: ExecPoint::None,
            wait: None,
            iterations: 0,
            seq_next: 0,
            hints: Vec::new(),
            raw: None,
            pending_lookups: 0,
            call_start: None,
            stmt: None,
            exec_start: 0,
            recursive_start: None,
        }
    }

    /// The event this session is waiting on, if it waits.
    pub(in crate::instance) fn waiting_on(&self) -> Option<Wait> {
        self.wait.map(|(w, _)| w)
    }

    pub(in crate::instance) fn at_rest(&self) -> bool {
        self.st == SessionState::Idle
    }

    pub(in crate::instance) fn is_idle(&self) -> bool {
        matches!(self.st, SessionState::Idle | SessionState::Think)
    }

    /// What it is doing.
    #[inline]
    pub(in crate::instance) fn state(&self) -> SessionState {
        self.st
    }

    /// Its process (in the CPU run queue).
    #[inline]
    pub(in crate::instance) fn proc(&self) -> ProcId {
        self.proc
    }

    /// Its workload has nothing more for it.
    pub(in crate::instance) fn is_finished(&self) -> bool {
        self.finished
    }

    /// The snapshot its reads use while it is busy (not idle or thinking).
    pub(in crate::instance) fn busy_snapshot(&self) -> Option<Scn> {
        (!self.is_idle()).then_some(self.snapshot)
    }

    /// Its parallel statement waits for the slaves (`PX Deq: ...`).
    pub(in crate::instance) fn wait_for_slaves(&mut self) {
        self.st = SessionState::WaitPx;
    }

    /// Its parallel statement's work goes on its own CPU (merging a buffer,
    /// or running serially): the process to charge.
    pub(in crate::instance) fn run_px_step(&mut self) -> ProcId {
        self.st = SessionState::Cpu(AfterCpu::Px);
        self.proc
    }
}

/// The foregrounds: the sessions (their queues and outstanding requests),
/// this instance's transactions and what it knows of the others', where its
/// inserts go, its sequence caches, and the workloads it runs.
pub(super) struct Foregrounds {
    sessions: Sessions,
    txns: Transactions,
    inserts: insert_points::InsertPoints,
    seqs: sequences::Sequences,
    workloads: workloads::Workloads,
    rows: RowLocks,
}

impl Foregrounds {
    pub fn new(
        me: crate::types::InstId,
        instances: u8,
        layout: &crate::layout::Layout,
        catalog: &crate::config::Catalog,
        workloads: std::sync::Arc<Vec<crate::config::WorkloadSpec>>,
        xid_base: u64,
    ) -> Foregrounds {
        Foregrounds {
            sessions: Sessions::default(),
            txns: Transactions::new(me, xid_base),
            inserts: insert_points::InsertPoints::new(layout, me, instances),
            seqs: sequences::Sequences::new(catalog.sequences.clone()),
            workloads: workloads::Workloads::new(workloads),
            rows: RowLocks::default(),
        }
    }

    /// The row lock waits and LMD's deadlock records, to read.
    pub fn row_locks(&self) -> &RowLocks {
        &self.rows
    }

    /// The row lock waits and LMD's deadlock records.
    pub fn row_locks_mut(&mut self) -> &mut RowLocks {
        &mut self.rows
    }

    /// The sessions, to read.
    #[inline(always)]
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// The sessions, for parallel execution's coordinator (it moves its
    /// session between waiting and running).
    #[inline(always)]
    pub fn sessions_mut(&mut self) -> &mut Sessions {
        &mut self.sessions
    }

    /// The transaction table, to read (a transaction's state, cleanout).
    #[inline(always)]
    pub fn txns(&self) -> &Transactions {
        &self.txns
    }

    /// The transaction table, for the reconfiguration and recovery (dead
    /// instances' transactions) and for LGWR (where a change's redo is).
    #[inline(always)]
    pub fn txns_mut(&mut self) -> &mut Transactions {
        &mut self.txns
    }

    /// Keep the sequence values handed out (or stop keeping them).
    pub fn log_nextvals(&mut self, on: bool) {
        self.seqs.log_nextvals(on);
    }

    pub fn take_nextvals(&mut self) -> Vec<(u32, i64)> {
        self.seqs.take_nextvals()
    }

    /// Workload `w`'s specification.
    pub fn workload(&self, w: usize) -> Option<&crate::config::WorkloadSpec> {
        self.workloads.get(w)
    }

    /// Whether a session is ready to run (most events leave none).
    #[inline(always)]
    pub fn has_ready(&self) -> bool {
        self.sessions.has_ready()
    }

    #[inline(always)]
    pub fn pop_ready(&mut self) -> Option<u32> {
        self.sessions.pop_ready()
    }

    #[inline(always)]
    pub fn is_ready(&self, sid: u32) -> bool {
        self.sessions.is_ready(sid)
    }

    /// Where session `sid` is in its execution, when it is ready to go on.
    #[inline(always)]
    pub fn ready_point(&self, sid: u32) -> Option<&ExecPoint> {
        let s = self.sessions.session(sid);
        if s.st == SessionState::Ready {
            Some(&s.cur)
        } else {
            None
        }
    }

    /// The block inserts into `table` go to now, if it has one.
    #[inline]
    pub fn insert_block(&self, table: usize) -> Option<BlockAddr> {
        self.inserts.block(table)
    }

    /// The execute call's CPU step ended: the statement's snapshot is the
    /// SCN when it does, and the session goes on.
    pub fn execute_done(&mut self, k: &Kernel, sid: u32) {
        self.sessions.session_mut(sid).snapshot = k.scn();
        self.sessions.resume(sid);
    }

    /// Enable exactly these workloads (`None`: all).
    pub fn enable_workloads(&mut self, list: Option<Vec<String>>) {
        self.workloads.enable(list);
    }
}

/// Keep an observation for the checkers (when they check). A full log is
/// an error of the run, reported once.
// Inlined: with history off (the usual case) the observation is not even built.
#[inline(always)]
pub(in crate::instance) fn record(k: &mut Kernel, obs: &mut Observer, o: Observation) {
    if let Err(e) = obs.record(o) {
        history_full(k, &e);
    }
}

#[cold]
#[inline(never)]
fn history_full(k: &mut Kernel, e: &str) {
    k.error(e);
}

impl Foregrounds {
    // ----- waits ------------------------------------------------------------------------

    /// Session `sid` may go on.
    #[inline(always)]
    pub fn set_ready(&mut self, k: &Kernel, sid: u32) {
        self.sessions.set_ready(sid, k.now());
    }

    /// Session `sid` goes on after its CPU step.
    #[inline(always)]
    pub fn resume(&mut self, sid: u32) {
        self.sessions.resume(sid);
    }

    /// Begin a wait (the event may be renamed when it ends).
    pub fn begin_wait(&mut self, k: &Kernel, sid: u32, event: Wait, state: SessionState) {
        self.sessions.begin_wait(sid, event, state, k.now());
    }

    /// End the session's wait, recording it under `event` (or the one it began with).
    pub fn end_wait(&mut self, k: &mut Kernel, obs: &mut Observer, sid: u32, event: Option<Wait>) {
        if let Some((began_as, took)) = self.sessions.end_wait(sid, k.now()) {
            let ev = event.unwrap_or(began_as);
            k.wait(ev, took, true);
            if obs.tracing() {
                let proc = self.sessions.session(sid).proc;
                obs.trace_wait(k.now(), proc, ev, took);
            }
            if let Some(st) = self.stmt_target(sid) {
                k.stats_mut().statements[st].wait(ev, took);
            }
        }
    }

    /// End such a wait and make the session ready.
    pub fn end_session_wait(&mut self, k: &mut Kernel, obs: &mut Observer, sid: u32) {
        self.end_wait(k, obs, sid, None);
        self.set_ready(k, sid);
    }

    /// Session `sid` waits on `event` until something happens to `blk`
    /// (`gc buffer busy acquire` / `release`, `buffer busy waits`).
    pub fn wait_on_block(&mut self, k: &Kernel, sid: u32, blk: BlockAddr, event: Wait) {
        self.sessions.wait_on_block(sid, blk, event, k.now());
    }

    /// Something changed about `blk`: waiting sessions try again.
    // Called on every unpin; usually nobody waits at all, so that check is inlined.
    #[inline(always)]
    pub fn wake_block(&mut self, k: &mut Kernel, obs: &mut Observer, blk: BlockAddr) {
        if self.sessions.someone_waits_on_a_block() {
            self.wake_block_waiters(k, obs, blk);
        }
    }

    #[inline(never)]
    fn wake_block_waiters(&mut self, k: &mut Kernel, obs: &mut Observer, blk: BlockAddr) {
        let Some(waiters) = self.sessions.take_block_waiters(blk) else {
            return;
        };
        for sid in waiters {
            if self.sessions.session(sid).st == SessionState::WaitBlock {
                self.end_wait(k, obs, sid, None);
                self.set_ready(k, sid);
            }
        }
    }
}

// ----- the session table ----------------------------------------------------------------

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
    fn add(&mut self, s: Session) -> u32 {
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
    fn set_ready(&mut self, sid: u32, now: Nanos) {
        let s = &mut self.table[sid as usize];
        if matches!(s.st, SessionState::Idle | SessionState::Think) {
            s.call_start = Some(now);
        }
        s.st = SessionState::Ready;
        self.push_ready(sid);
    }

    /// Session `sid` goes on after a CPU step (its database call goes on).
    #[inline(always)]
    fn resume(&mut self, sid: u32) {
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
    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The session first in the ready queue, taken off it. It may have
    /// stopped being ready since it was queued: see [`Sessions::is_ready`].
    #[inline(always)]
    fn pop_ready(&mut self) -> Option<u32> {
        self.ready.pop_front()
    }

    #[inline(always)]
    fn is_ready(&self, sid: u32) -> bool {
        self.table
            .get(sid as usize)
            .is_some_and(|s| s.st == SessionState::Ready)
    }

    // ----- waits ----------------------------------------------------------------------

    fn begin_wait(&mut self, sid: u32, event: Wait, state: SessionState, now: Nanos) {
        let s = &mut self.table[sid as usize];
        s.wait = Some((event, now));
        s.st = state;
    }

    /// End the session's wait, if it waits: the event it began with and how long it took.
    fn end_wait(&mut self, sid: u32, now: Nanos) -> Option<(Wait, Nanos)> {
        let (event, since) = self.table[sid as usize].wait.take()?;
        Some((event, now - since))
    }

    /// Drop the session's wait unrecorded (it never really happened).
    fn forget_wait(&mut self, sid: u32) {
        self.table[sid as usize].wait = None;
    }

    /// When the session's wait began, if it waits.
    fn waiting_since(&self, sid: u32) -> Option<Nanos> {
        self.table[sid as usize].wait.map(|(_, since)| since)
    }

    /// Session `sid` waits on `event` until something happens to `blk`.
    fn wait_on_block(&mut self, sid: u32, blk: BlockAddr, event: Wait, now: Nanos) {
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
    fn someone_waits_on_a_block(&self) -> bool {
        !self.block_waiters.is_empty()
    }

    /// The sessions waiting on `blk`, in the order they began, taken off the block.
    fn take_block_waiters(&mut self, blk: BlockAddr) -> Option<Vec<u32>> {
        let list = self.block_waiters.remove(&blk)?;
        self.block_waiting -= list.len();
        Some(list)
    }

    /// Whether sessions need `blk` (a request for it, or sessions waiting on
    /// it): its buffers are not to be replaced.
    fn need(&self, blk: BlockAddr) -> bool {
        self.requests.contains_key(&blk) || self.block_waiters.contains_key(&blk)
    }

    // ----- requests and lookups -------------------------------------------------------

    /// Whether a session of this instance already asked for `blk`.
    #[inline]
    pub(in crate::instance) fn has_request(&self, blk: BlockAddr) -> bool {
        self.requests.contains_key(&blk)
    }

    /// Session `owner` asks for `blk`; returns the request's id.
    fn start_request(
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
    fn request(&self, blk: BlockAddr, id: u64) -> Option<PendingRequest> {
        self.requests.get(&blk).copied().filter(|r| r.id == id)
    }

    /// The outstanding request for `blk`, whichever it is.
    #[inline]
    fn request_for(&self, blk: BlockAddr) -> Option<PendingRequest> {
        self.requests.get(&blk).copied()
    }

    /// The request for `blk` is complete.
    #[inline]
    fn end_request(&mut self, blk: BlockAddr) {
        self.requests.remove(&blk);
    }

    /// Session `sid` asks another instance about a transaction; returns the question's token.
    fn start_lookup(&mut self, sid: u32, asked_at: Scn, xid: Xid, wait: bool) -> u64 {
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
    fn end_lookup(&mut self, token: u64) -> Option<(u32, Scn)> {
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
