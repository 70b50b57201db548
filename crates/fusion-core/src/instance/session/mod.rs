//! Foreground sessions: each runs its workload's transactions step by step.
//! A block visit is a consistent get (CR mode) or a db block get (current
//! mode); a miss becomes a global cache request and the session waits under
//! the placeholder event (`gc cr request`), renamed on completion to what
//! happened (`gc cr block 2-way`, `... busy`, `... congested`, `... grant 2-way`).
//! This is where a wait event is timed: every foreground wait begins in
//! [`Instance::begin_wait`] and is recorded in [`Instance::end_wait`], below.
//!
//! - `state.rs`: a session's state, and [`Sessions`], the component that owns
//!   the sessions, their ready queue, block waiters, requests and lookups;
//! - `workload.rs`: the workload interpreter (transactions, steps, keys,
//!   think time, the statement a session's work is charged to);
//! - `access.rs`: block visits (`visit`, `acquire_cr`, `acquire_current`,
//!   `visit_done`), row updates and scans;
//! - `fusion.rs`: the requesting side of cache fusion (`gc_request`,
//!   `on_ship`, `on_grant`, installs, `make_room`);
//! - `commit.rs`: the session's transaction (commit, `log file sync`, row
//!   lock waits, lookups of other instances' transactions).
//!
//! Here: waits, and the loop that moves ready sessions on (`run_ready`, `drive`).

mod access;
mod commit;
mod fusion;
mod insert;
mod maintain;
mod sequence;
mod state;
mod transactions;
mod workload;
mod workloads;

pub(super) use access::Acquired;
pub(super) use state::{AfterCpu, SessionState, Sessions};
pub(super) use transactions::{Transactions, TxWaiter};

use super::Instance;
use super::cache::BufId;
use super::execution::IndexChange;
use super::execution::{ExecPoint, Purpose};
use crate::block::Block;
use crate::config::Nanos;
use crate::cpu::{ProcId, StepDone};
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
            snapshot: 0,
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
    inserts: insert::InsertPoints,
    seqs: sequence::Sequences,
    workloads: workloads::Workloads,
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
            inserts: insert::InsertPoints::new(layout, me, instances),
            seqs: sequence::Sequences::new(catalog.sequences.clone()),
            workloads: workloads::Workloads::new(workloads),
        }
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

    /// Enable exactly these workloads (`None`: all).
    pub fn enable_workloads(&mut self, list: Option<Vec<String>>) {
        self.workloads.enable(list);
    }
}

impl Instance {
    // ----- waits ------------------------------------------------------------------------

    /// Session `sid` may go on.
    #[inline(always)]
    pub(super) fn set_ready(&mut self, sid: u32) {
        self.fg.sessions.set_ready(sid, self.k.now());
    }

    /// Session `sid` goes on after its CPU step.
    #[inline(always)]
    pub(super) fn resume(&mut self, sid: u32) {
        self.fg.sessions.resume(sid);
    }

    /// Begin a wait (the event may be renamed when it ends).
    pub(super) fn begin_wait(&mut self, sid: u32, event: Wait, state: SessionState) {
        self.fg.sessions.begin_wait(sid, event, state, self.k.now());
    }

    /// End the session's wait, recording it under `event` (or the one it began with).
    pub(super) fn end_wait(&mut self, sid: u32, event: Option<Wait>) {
        if let Some((began_as, took)) = self.fg.sessions.end_wait(sid, self.k.now()) {
            let ev = event.unwrap_or(began_as);
            self.wait_event(ev, took, true);
            if self.obs.tracing() {
                let proc = self.fg.sessions.session(sid).proc;
                self.obs.trace_wait(self.k.now(), proc, ev, took);
            }
            if let Some(st) = self.stmt_target(sid) {
                self.k.stats_mut().statements[st].wait(ev, took);
            }
        }
    }

    /// Begin a wait for something outside the session (a global enqueue, PX).
    pub(super) fn begin_session_wait(&mut self, sid: u32, event: Wait, state: SessionState) {
        self.begin_wait(sid, event, state);
    }

    /// End such a wait and make the session ready.
    pub(super) fn end_session_wait(&mut self, sid: u32) {
        self.end_wait(sid, None);
        self.set_ready(sid);
    }

    /// Session `sid` waits on `event` until something happens to `blk`
    /// (`gc buffer busy acquire` / `release`, `buffer busy waits`).
    pub(super) fn wait_on_block(&mut self, sid: u32, blk: BlockAddr, event: Wait) {
        self.fg
            .sessions
            .wait_on_block(sid, blk, event, self.k.now());
    }

    /// Something changed about `blk`: waiting sessions try again.
    // Called on every unpin; usually nobody waits at all, so that check is inlined.
    #[inline(always)]
    pub(super) fn wake_block(&mut self, blk: BlockAddr) {
        if self.fg.sessions.someone_waits_on_a_block() {
            self.wake_block_waiters(blk);
        }
    }

    #[inline(never)]
    fn wake_block_waiters(&mut self, blk: BlockAddr) {
        let Some(waiters) = self.fg.sessions.take_block_waiters(blk) else {
            return;
        };
        for sid in waiters {
            if self.fg.sessions.session(sid).st == SessionState::WaitBlock {
                self.end_wait(sid, None);
                self.set_ready(sid);
            }
        }
    }

    // ----- moving sessions on -----------------------------------------------------------

    // Called after every event; most find nothing to run, so that check is inlined.
    #[inline]
    pub(super) fn run_ready(&mut self) {
        if !self.fg.sessions.has_ready() && !self.px.has_kicks() {
            return;
        }
        self.run_ready_slow();
    }

    #[inline(never)]
    fn run_ready_slow(&mut self) {
        loop {
            while let Some(sid) = self.fg.sessions.pop_ready() {
                if self.fg.sessions.is_ready(sid) {
                    self.drive(sid);
                }
            }
            if !self.px_run() {
                break;
            }
        }
    }

    /// Move a session forward until it has to wait for something.
    fn drive(&mut self, sid: u32) {
        loop {
            let s = self.fg.sessions.session(sid);
            if s.st != SessionState::Ready {
                return;
            }
            // The common block visits stay here; the rest is out of line so
            // this loop keeps a small frame and no hoisted set-up of rare paths.
            let go_on = match s.cur {
                ExecPoint::Index { blk, .. } => self.visit(sid, blk, false),
                ExecPoint::Table { rowid, purpose, .. } => {
                    self.visit(sid, rowid.blk, purpose == Purpose::Update)
                }
                ExecPoint::Scan { next, .. } => self.visit(sid, BlockAddr(next), false),
                ExecPoint::IndexLeaf { blk, .. } | ExecPoint::MaintLeaf { blk, .. } => {
                    self.visit(sid, blk, true)
                }
                ExecPoint::None => self.next_execution(sid),
                point => self.drive_other(sid, point),
            };
            if !go_on {
                return;
            }
        }
    }

    /// The less common steps of [`Instance::drive`]; true when the session goes on at once.
    #[inline(never)]
    fn drive_other(&mut self, sid: u32, point: ExecPoint) -> bool {
        match point {
            ExecPoint::ScanHeader { table } => {
                let h = self.k.layout().tables[table].header;
                self.visit(sid, h, false)
            }
            ExecPoint::InsertRow { table, key } => match self.fg.inserts.block(table) {
                Some(blk) => self.visit(sid, blk, true),
                None => {
                    self.fg
                        .sessions
                        .go_to(sid, ExecPoint::InsertAlloc { table, key });
                    true
                }
            },
            ExecPoint::InsertAlloc { table, .. } => {
                let h = self.k.layout().tables[table].header;
                self.visit(sid, h, true)
            }
            ExecPoint::InsertNew { table, key, blk } => self.format_new(sid, table, key, blk),
            ExecPoint::Split { .. } => self.split_step(sid),
            ExecPoint::Seq { seq, step, insert } => self.seq_step(sid, seq, step, insert),
            ExecPoint::Px { qref } => self.px_qc_step(sid, qref),
            // Handled in `drive`; the same here.
            ExecPoint::Index { blk, .. } => self.visit(sid, blk, false),
            ExecPoint::Scan { next, .. } => self.visit(sid, BlockAddr(next), false),
            ExecPoint::Table { rowid, purpose, .. } => {
                self.visit(sid, rowid.blk, purpose == Purpose::Update)
            }
            ExecPoint::IndexLeaf { blk, .. } | ExecPoint::MaintLeaf { blk, .. } => {
                self.visit(sid, blk, true)
            }
            ExecPoint::None => self.next_execution(sid),
        }
    }

    /// A session's CPU step ended: go on with what it was for.
    pub(super) fn session_cpu_done(&mut self, sid: u32, d: StepDone) {
        let SessionState::Cpu(after) = self.fg.sessions.session(sid).st else {
            return;
        };
        match after {
            AfterCpu::Exec => {
                // The statement's snapshot: the SCN when its execute call ends.
                let scn = self.k.scn();
                self.fg.sessions.session_mut(sid).snapshot = scn;
                self.resume(sid);
            }
            AfterCpu::Visit(buf) => self.visit_done(sid, buf),
            AfterCpu::Commit => self.commit_done(sid),
            AfterCpu::Split => self.split_done(sid),
            AfterCpu::Px => self.px_qc_cpu_done(sid),
            AfterCpu::Memory { ops } => self.memory_writes_done(sid, ops, d),
        }
    }
}
