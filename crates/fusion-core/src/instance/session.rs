//! Foreground sessions: each runs its workload's transactions step by step.
//! A block visit is a consistent get (CR mode) or a db block get (current
//! mode); a miss becomes a global cache request and the session waits under
//! the placeholder event (`gc cr request`), renamed on completion to what
//! happened (`gc cr block 2-way`, `... busy`, `... congested`, `... grant 2-way`).
//! This is where a wait event is timed.

use rand_core::Rng;

use super::cache::{BufId, BufState};
use super::lgwr::FlushWaiter;
use super::{Instance, IoPurpose, Observation, Timer, TxWaiter};
use crate::block::{Block, Body, CrError, TxState};
use crate::config::{Access, KeyDist, KeySpec, Nanos, Step};
use crate::cpu::{ProcId, StepDone};
use crate::metrics::{BlockKind, Part};
use crate::msg::{GrantKind, Io, Mode, Msg, ReqKind, Request, ShipKind, Timing, TxReport};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Rowid, Scn, Xid};

/// A request this instance has outstanding for a block.
#[derive(Clone, Copy, Debug)]
pub struct Inflight {
    id: u64,
    owner: u32,
    sent: Nanos,
    scan: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum St {
    /// Its workload is not running (or it finished).
    Idle,
    Think,
    Ready,
    Cpu(Then),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Then {
    /// The execute call's overhead.
    Exec,
    /// Visiting a pinned buffer.
    Visit(BufId),
    Commit,
    /// An index block split over several pinned buffers.
    Split,
    /// Parallel execution work of the QC (merging a buffer, or running serially).
    Px,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    Read,
    Update,
    /// Maintaining the index for a row inserted at this rowid.
    Insert(Rowid),
    /// `count(*) where val = value` through a bitmap index (maintain.rs).
    Count {
        value: i64,
    },
    /// The next change of an update to an index on the value (maintain.rs).
    Maintain,
}

/// Where the current execution is. `Copy`: read on every step, so a copy is a
/// plain move rather than a per-variant clone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cur {
    /// Between executions.
    None,
    /// Descending an index: next visit is `blk` in CR mode.
    Index {
        ix: usize,
        table: usize,
        key: u64,
        blk: BlockAddr,
        purpose: Purpose,
    },
    /// The row's table block: CR for reads, current for updates.
    Table {
        table: usize,
        key: u64,
        rowid: Rowid,
        purpose: Purpose,
    },
    /// A full scan reads the segment header first (CR) to learn its extent.
    ScanHeader { table: usize },
    /// A full scan at block `next` of run `run` (see `Session::scan_runs`).
    Scan { table: usize, run: u8, next: u32 },
    /// Insert: the instance's insert block, in current mode.
    InsertRow { table: usize, key: u64 },
    /// Insert: take a new block from the segment header (current mode).
    InsertAlloc { table: usize, key: u64 },
    /// Insert: format the new block `blk` (a new-block grant).
    InsertNew {
        table: usize,
        key: u64,
        blk: BlockAddr,
    },
    /// Index maintenance: the leaf, in current mode.
    IndexLeaf {
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        blk: BlockAddr,
    },
    /// Index maintenance with splits: descending in current mode from the root,
    /// splitting every full block on the way (its parent then has room).
    Split {
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        parent: Option<BlockAddr>,
        node: BlockAddr,
    },
    /// An update's index change: the leaf, in current mode (maintain.rs).
    MaintLeaf { table: usize, blk: BlockAddr },
    /// A `nextval` (see sequence.rs); `insert`: then insert a row keyed by it into this table.
    Seq {
        seq: usize,
        step: super::sequence::SeqStep,
        insert: Option<usize>,
    },
    /// Coordinating the parallel statement of this workload step (see px.rs).
    Px { qref: crate::px::QueryRef },
}

#[derive(Debug)]
pub struct Session {
    /// Block runs a full scan reads: `(first, end)`, the initial blocks and each instance's formatted run.
    pub(super) scan_runs: Vec<(u32, u32)>,
    /// New blocks this session holds for a split.
    pub(super) spares: Vec<BlockAddr>,
    /// Buffers pinned for a split's CPU step.
    pub(super) split_pins: Vec<BufId>,
    /// Index changes the current update still has to make (maintain.rs).
    pub(super) maint: Vec<super::maintain::Target>,
    pub proc: ProcId,
    pub workload: usize,
    pub finished: bool,
    /// Position among all sessions of the workload on this instance (sequential keys).
    ordinal: u32,
    pub(super) st: St,
    template: usize,
    step: usize,
    execs_left: u32,
    in_txn: bool,
    pub(super) xid: Xid,
    pub(super) touched: Vec<BlockAddr>,
    /// Keys for this transaction's updates, per table, ascending (a fixed lock order).
    update_keys: Vec<(usize, Vec<u64>)>,
    pub(super) snapshot: Scn,
    pub(super) cur: Cur,
    wait: Option<(Wait, Nanos)>,
    iterations: u64,
    seq_next: u64,
    /// Transactions their owner reported active, with our SCN when we asked:
    /// the question carried that SCN, so a later commit gets a higher one and
    /// the hint holds for snapshots up to it (an active state cannot be cached).
    hints: Vec<(Xid, Scn)>,
    /// A block shipped unrolled (light work): build the CR copy from it.
    raw: Option<(Box<Block>, Scn)>,
    pending_lookups: u32,
    /// When the current database call started (DB time).
    call_start: Option<Nanos>,
    /// The statement being executed (tkprof) and when its execution began.
    stmt: Option<usize>,
    exec_start: Nanos,
    /// When the recursive `update seq$` began, while it runs.
    pub(super) rec_start: Option<Nanos>,
}

impl Session {
    /// The event this session is waiting on, if it waits.
    pub fn waiting_on(&self) -> Option<Wait> {
        self.wait.map(|(w, _)| w)
    }

    pub fn at_rest(&self) -> bool {
        self.st == St::Idle
    }

    pub fn is_idle(&self) -> bool {
        matches!(self.st, St::Idle | St::Think)
    }
}

pub(super) enum Acq {
    Got {
        buf: BufId,
        extra: Nanos,
        cpu: Nanos,
    },
    Wait,
    Restart,
}

fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl Instance {
    pub(super) fn start_sessions(&mut self) {
        let workloads = self.workloads.clone();
        let me = self.id.number();
        for (w, spec) in workloads.iter().enumerate() {
            if !spec.instances.contains(&me) {
                continue;
            }
            for n in 0..spec.sessions_per_instance {
                let sid = self.sessions.len() as u32;
                let proc = self.add_proc(super::Proc::Session(sid), format!("oracle{}", sid));
                self.sessions.push(Session {
                    scan_runs: Vec::new(),
                    spares: Vec::new(),
                    split_pins: Vec::new(),
                    maint: Vec::new(),
                    proc,
                    workload: w,
                    finished: false,
                    ordinal: n,
                    st: St::Think,
                    template: 0,
                    step: 0,
                    execs_left: 0,
                    in_txn: false,
                    xid: Xid::NONE,
                    touched: Vec::new(),
                    update_keys: Vec::new(),
                    snapshot: 0,
                    cur: Cur::None,
                    wait: None,
                    iterations: 0,
                    seq_next: 0,
                    hints: Vec::new(),
                    raw: None,
                    pending_lookups: 0,
                    call_start: None,
                    stmt: None,
                    exec_start: 0,
                    rec_start: None,
                });
                // Sessions log on spread over a short interval, not in lockstep.
                let spread = spec.think_time.max(crate::config::NS_PER_MS);
                let delay = (unit(&mut self.rng) * spread as f64) as Nanos;
                self.arm(delay, Timer::SessionWake(sid));
            }
        }
    }

    fn workload_enabled(&self, w: usize) -> bool {
        match &self.enabled_workloads {
            None => true,
            Some(list) => self
                .workloads
                .get(w)
                .is_some_and(|spec| list.contains(&spec.name)),
        }
    }

    pub(super) fn wake_enabled_sessions(&mut self) {
        for sid in 0..self.sessions.len() as u32 {
            let s = &self.sessions[sid as usize];
            if s.st == St::Idle && !s.finished && self.workload_enabled(s.workload) {
                self.set_ready(sid);
            }
        }
    }

    pub(super) fn session_wake(&mut self, sid: u32) {
        if self
            .sessions
            .get(sid as usize)
            .is_some_and(|s| s.st == St::Think)
        {
            self.set_ready(sid);
        }
    }

    fn set_ready(&mut self, sid: u32) {
        let now = self.now;
        let s = &mut self.sessions[sid as usize];
        if matches!(s.st, St::Idle | St::Think) {
            s.call_start = Some(now);
        }
        s.st = St::Ready;
        self.ready.push_back(sid);
    }

    /// Begin a wait (the event may be renamed when it ends).
    pub(super) fn begin_wait(&mut self, sid: u32, event: Wait, st: St) {
        let now = self.now;
        let s = &mut self.sessions[sid as usize];
        s.wait = Some((event, now));
        s.st = st;
    }

    /// End the session's wait, recording it under `event` (or the one it began with).
    pub(super) fn end_wait(&mut self, sid: u32, event: Option<Wait>) {
        if let Some((ev, since)) = self.sessions[sid as usize].wait.take() {
            let took = self.now - since;
            let ev = event.unwrap_or(ev);
            self.wait_event(ev, took, true);
            if let Some(st) = self.stmt_target(sid) {
                self.stats.statements[st].wait(ev, took);
            }
        }
    }

    /// The statement a session's work is charged to: the recursive one while it runs.
    pub(super) fn stmt_target(&self, sid: u32) -> Option<usize> {
        let s = self.sessions.get(sid as usize)?;
        if s.rec_start.is_some() {
            return self.update_seq_stmt;
        }
        s.stmt
    }

    /// The session's current execution ends: charge its elapsed time.
    fn stmt_close(&mut self, sid: u32) {
        let now = self.now;
        let s = &mut self.sessions[sid as usize];
        if let Some(st) = s.stmt.take() {
            let took = now - s.exec_start;
            self.stats.statements[st].elapsed_ns += took;
        }
    }

    /// Begin a wait for something outside the session (a global enqueue).
    pub(super) fn begin_session_wait(&mut self, sid: u32, event: Wait, st: St) {
        self.begin_wait(sid, event, st);
    }

    /// End such a wait and make the session ready.
    pub(super) fn end_session_wait(&mut self, sid: u32) {
        self.end_wait(sid, None);
        self.set_ready(sid);
    }

    // Called after every event; most find nothing to run, so that check is inlined.
    #[inline]
    pub(super) fn run_ready(&mut self) {
        if self.ready.is_empty() && self.px.kick.is_empty() {
            return;
        }
        self.run_ready_slow();
    }

    #[inline(never)]
    fn run_ready_slow(&mut self) {
        loop {
            while let Some(sid) = self.ready.pop_front() {
                if self
                    .sessions
                    .get(sid as usize)
                    .is_some_and(|s| s.st == St::Ready)
                {
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
            let s = &self.sessions[sid as usize];
            if s.st != St::Ready {
                return;
            }
            // The common block visits stay here; the rest is out of line so
            // this loop keeps a small frame and no hoisted set-up of rare paths.
            let go_on = match s.cur {
                Cur::Index { blk, .. } => self.visit(sid, blk, false),
                Cur::Table { rowid, purpose, .. } => {
                    self.visit(sid, rowid.blk, purpose == Purpose::Update)
                }
                Cur::Scan { next, .. } => self.visit(sid, BlockAddr(next), false),
                Cur::IndexLeaf { blk, .. } | Cur::MaintLeaf { blk, .. } => {
                    self.visit(sid, blk, true)
                }
                Cur::None => self.next_execution(sid),
                cur => self.drive_other(sid, cur),
            };
            if !go_on {
                return;
            }
        }
    }

    /// The less common steps of [`Instance::drive`]; true when the session goes on at once.
    #[inline(never)]
    fn drive_other(&mut self, sid: u32, cur: Cur) -> bool {
        match cur {
            Cur::ScanHeader { table } => {
                let h = self.layout.tables[table].header;
                self.visit(sid, h, false)
            }
            Cur::InsertRow { table, key } => match self.insert_blocks[table].0 {
                Some(blk) => self.visit(sid, blk, true),
                None => {
                    self.sessions[sid as usize].cur = Cur::InsertAlloc { table, key };
                    true
                }
            },
            Cur::InsertAlloc { table, .. } => {
                let h = self.layout.tables[table].header;
                self.visit(sid, h, true)
            }
            Cur::InsertNew { table, key, blk } => self.format_new(sid, table, key, blk),
            Cur::Split { .. } => self.split_step(sid),
            Cur::Seq { seq, step, insert } => self.seq_step(sid, seq, step, insert),
            Cur::Px { qref } => self.px_qc_step(sid, qref),
            // Handled in `drive`; the same here.
            Cur::Index { blk, .. } => self.visit(sid, blk, false),
            Cur::Scan { next, .. } => self.visit(sid, BlockAddr(next), false),
            Cur::Table { rowid, purpose, .. } => {
                self.visit(sid, rowid.blk, purpose == Purpose::Update)
            }
            Cur::IndexLeaf { blk, .. } | Cur::MaintLeaf { blk, .. } => self.visit(sid, blk, true),
            Cur::None => self.next_execution(sid),
        }
    }

    /// Start the next execution, step or transaction. Returns false when the
    /// session now waits (CPU, think time, commit) or is idle.
    #[inline(never)]
    fn next_execution(&mut self, sid: u32) -> bool {
        let w = self.sessions[sid as usize].workload;
        // A handle, not a copy: the spec is shared and never changes.
        let workloads = std::sync::Arc::clone(&self.workloads);
        let spec = &workloads[w];
        let s = &mut self.sessions[sid as usize];
        if !s.in_txn {
            // A new transaction: pick its shape and draw its update keys.
            if !self.workload_enabled(w)
                || spec
                    .iterations
                    .is_some_and(|n| self.sessions[sid as usize].iterations >= n)
            {
                let finished = spec
                    .iterations
                    .is_some_and(|n| self.sessions[sid as usize].iterations >= n);
                self.go_idle(sid, finished);
                return false;
            }
            let total: u64 = spec
                .transactions
                .iter()
                .map(|t| u64::from(t.weight.max(1)))
                .sum();
            let mut pick = self.rng.next_u64() % total.max(1);
            let mut template = 0;
            for (i, t) in spec.transactions.iter().enumerate() {
                let wgt = u64::from(t.weight.max(1));
                if pick < wgt {
                    template = i;
                    break;
                }
                pick -= wgt;
            }
            let mut keys: Vec<(usize, Vec<u64>)> = Vec::new();
            if let Some(t) = spec.transactions.get(template) {
                for step in t.steps.iter() {
                    if let Step::Update {
                        table,
                        keys: ks,
                        rows,
                        ..
                    } = step
                    {
                        for _ in 0..*rows {
                            let k = self.draw_key(sid, *table, ks);
                            match keys.iter_mut().find(|(tb, _)| tb == table) {
                                Some((_, v)) => v.push(k),
                                None => keys.push((*table, vec![k])),
                            }
                        }
                    }
                }
            }
            for (_, v) in &mut keys {
                v.sort_unstable();
                v.reverse(); // popped from the end: ascending order
            }
            let s = &mut self.sessions[sid as usize];
            s.template = template;
            s.step = 0;
            s.execs_left = 0;
            s.in_txn = true;
            s.update_keys = keys;
            s.xid = Xid::NONE;
            s.touched.clear();
        }
        let s = &self.sessions[sid as usize];
        let steps = &spec.transactions[s.template].steps;
        if s.execs_left == 0 {
            // Next step.
            let Some(step) = steps.get(s.step) else {
                // End of the transaction: commit what it changed.
                return self.commit(sid);
            };
            let s = &mut self.sessions[sid as usize];
            s.step += 1;
            let (tpl, at) = (s.template, s.step - 1);
            if let Some(st) = self.stmt_id(w, tpl, at) {
                self.stats.statements[st].parses += 1;
            }
            let s = &mut self.sessions[sid as usize];
            match step {
                Step::Commit => return self.commit(sid),
                Step::Think { time } => {
                    self.think(sid, *time);
                    return false;
                }
                Step::Read {
                    access: Access::FullScan,
                    ..
                } => s.execs_left = 1,
                Step::Read { rows, .. } | Step::Update { rows, .. } => {
                    s.execs_left = (*rows).max(1)
                }
                Step::Insert { rows, .. }
                | Step::NextVal { rows, .. }
                | Step::InsertSeq { rows, .. }
                | Step::Count { rows, .. } => s.execs_left = (*rows).max(1),
                Step::ParallelQuery(_) => s.execs_left = 1,
            }
        }
        // One execution of the current step.
        self.stmt_close(sid);
        let now = self.now;
        let s = &mut self.sessions[sid as usize];
        s.execs_left -= 1;
        // Borrowed from the shared spec (the local handle), not cloned.
        let step = &steps[s.step - 1];
        let (tpl, at) = (s.template, s.step - 1);
        let st = self.stmt_id(w, tpl, at);
        let s = &mut self.sessions[sid as usize];
        s.stmt = st;
        s.exec_start = now;
        if let Some(st) = st {
            self.stats.statements[st].executions += 1;
            self.stats.statements[st].rows += 1;
        }
        let cost = self.costs.execute;
        self.stats.incr(Stat::ExecuteCount);
        let cur = match *step {
            Step::Read {
                table,
                access: Access::FullScan,
                ..
            } => Cur::ScanHeader { table },
            Step::Read {
                table,
                access: Access::Index(ix),
                ref keys,
                ..
            } => {
                let key = self.draw_key(sid, table, keys);
                Cur::Index {
                    ix,
                    table,
                    key,
                    blk: self.layout.index_root(ix, key),
                    purpose: Purpose::Read,
                }
            }
            Step::Count {
                table,
                index,
                ref values,
                ..
            } => {
                let distinct = self.layout.tables[table].distinct_values.max(1);
                let domain = values.range.unwrap_or((1, u64::from(distinct)));
                let value = self.draw_in(sid, values, domain) as i64;
                Cur::Index {
                    ix: index,
                    table,
                    key: crate::bitmap::piece_at(value, 0),
                    blk: self.layout.indexes[index].root,
                    purpose: Purpose::Count { value },
                }
            }
            Step::Update {
                table, ref access, ..
            } => {
                let s = &mut self.sessions[sid as usize];
                let key = s
                    .update_keys
                    .iter_mut()
                    .find(|(tb, _)| *tb == table)
                    .and_then(|(_, v)| v.pop())
                    .unwrap_or(1);
                match *access {
                    Access::Index(ix) => Cur::Index {
                        ix,
                        table,
                        key,
                        blk: self.layout.index_root(ix, key),
                        purpose: Purpose::Update,
                    },
                    Access::FullScan => match self.layout.initial_rowid(table, key) {
                        Some(rowid) => Cur::Table {
                            table,
                            key,
                            rowid,
                            purpose: Purpose::Update,
                        },
                        None => Cur::None,
                    },
                }
            }
            Step::Insert { table, .. } => {
                // Keys of inserted rows interleave by instance above the initial rows.
                let key = self.next_keys[table];
                self.next_keys[table] += u64::from(self.n);
                Cur::InsertRow { table, key }
            }
            Step::NextVal { sequence, .. } => Cur::Seq {
                seq: sequence,
                step: super::sequence::SeqStep::Start,
                insert: None,
            },
            Step::InsertSeq {
                table, sequence, ..
            } => Cur::Seq {
                seq: sequence,
                step: super::sequence::SeqStep::Start,
                insert: Some(table),
            },
            Step::ParallelQuery(_) => Cur::Px {
                qref: crate::px::QueryRef {
                    workload: w as u32,
                    txn: tpl as u32,
                    step: at as u32,
                },
            },
            Step::Commit | Step::Think { .. } => Cur::None,
        };
        let s = &mut self.sessions[sid as usize];
        s.cur = cur;
        s.st = St::Cpu(Then::Exec);
        let proc = s.proc;
        self.cpu(proc, cost);
        false
    }

    fn stmt_id(&self, w: usize, template: usize, step: usize) -> Option<usize> {
        self.stmt_ids
            .get(w)
            .and_then(|t| t.get(template))
            .and_then(|s| s.get(step))
            .copied()
            .flatten()
    }

    fn go_idle(&mut self, sid: u32, finished: bool) {
        self.stmt_close(sid);
        let now = self.now;
        let s = &mut self.sessions[sid as usize];
        if let Some(t) = s.call_start.take() {
            self.stats.add(Stat::DbTime, now - t);
        }
        s.st = St::Idle;
        s.finished = finished;
    }

    fn think(&mut self, sid: u32, time: Nanos) {
        self.stmt_close(sid);
        let now = self.now;
        let s = &mut self.sessions[sid as usize];
        if let Some(t) = s.call_start.take() {
            self.stats.add(Stat::DbTime, now - t);
        }
        s.st = St::Think;
        if time == 0 {
            self.set_ready(sid);
        } else {
            self.arm(time, Timer::SessionWake(sid));
        }
    }

    /// A row key for a step: from the spec's range (the table's initial
    /// rows by default), among the rows of one organisation if it names one.
    fn draw_key(&mut self, sid: u32, table: usize, spec: &KeySpec) -> u64 {
        let (rows, orgs) = self.layout.tables.get(table).map_or((1, 1), |t| {
            (t.initial_rows.max(1), u64::from(t.orgs.max(1)))
        });
        let (lo, hi) = spec.range.unwrap_or((1, rows));
        match spec.org.map(u64::from) {
            Some(org) if orgs > 1 && org <= orgs => {
                // The organisation's keys are org, org + orgs, ...: draw the
                // position among those in the range, then the key.
                let first = lo.saturating_sub(org).div_ceil(orgs);
                let last = hi.saturating_sub(org) / orgs;
                if hi < org || first > last {
                    return lo;
                }
                let j = self.draw_in(sid, spec, (first, last));
                org + orgs * j
            }
            _ => self.draw_in(sid, spec, (lo, hi)),
        }
    }

    /// A number from `lo..=hi` with the spec's distribution (the caller
    /// turns the spec's range into `lo..=hi`).
    fn draw_in(&mut self, sid: u32, spec: &KeySpec, (lo, hi): (u64, u64)) -> u64 {
        let n = hi.saturating_sub(lo) + 1;
        match spec.dist {
            KeyDist::Uniform => lo + self.rng.next_u64() % n,
            KeyDist::Hot { fraction, share } => {
                let hot = ((n as f64 * fraction).ceil() as u64).clamp(1, n);
                if unit(&mut self.rng) < share || hot == n {
                    lo + self.rng.next_u64() % hot
                } else {
                    lo + hot + self.rng.next_u64() % (n - hot)
                }
            }
            KeyDist::Sequential => {
                let w = self.sessions[sid as usize].workload;
                let per = self.workloads[w].sessions_per_instance.max(1) as u64 * u64::from(self.n);
                let me = u64::from(self.id.0) * self.workloads[w].sessions_per_instance as u64
                    + u64::from(self.sessions[sid as usize].ordinal);
                let s = &mut self.sessions[sid as usize];
                let k = lo + (me * n / per + s.seq_next) % n;
                s.seq_next += 1;
                k
            }
        }
    }

    /// Try to visit `blk`; returns true if the session can go on at once (it
    /// never can: a visit always takes CPU), false when it waits.
    pub(super) fn visit(&mut self, sid: u32, blk: BlockAddr, current: bool) -> bool {
        let acq = if current {
            self.acquire_current(sid, blk)
        } else {
            self.acquire_cr(sid, blk)
        };
        match acq {
            Acq::Got {
                buf,
                mut extra,
                cpu,
            } => {
                if matches!(
                    self.sessions[sid as usize].cur,
                    Cur::Scan { .. } | Cur::ScanHeader { .. }
                ) {
                    // Examining the block's rows is part of a scan's work.
                    extra +=
                        self.costs.row_examined * self.cache.get(buf).image.row_slots() as Nanos;
                }
                extra += self.bitmap_work(sid, buf);
                if matches!(self.sessions[sid as usize].cur, Cur::Seq { .. }) {
                    // The recursive `update seq$`: its execute call, the change and its commit.
                    extra += self.costs.execute + self.costs.row_change + self.costs.commit;
                }
                let s = &mut self.sessions[sid as usize];
                s.st = St::Cpu(Then::Visit(buf));
                let proc = s.proc;
                self.cache.touch(buf);
                self.cpu(proc, cpu + extra);
                false
            }
            Acq::Wait => false,
            Acq::Restart => {
                // Snapshot too old: restart the statement with a new snapshot.
                self.stats.incr(Stat::SnapshotTooOld);
                let scn = self.scn;
                let s = &mut self.sessions[sid as usize];
                s.snapshot = scn;
                true
            }
        }
    }

    fn lookup_with_hints(&self, sid: u32) -> impl Fn(Xid) -> TxState + '_ {
        let s = &self.sessions[sid as usize];
        let (hints, snapshot) = (&s.hints, s.snapshot);
        move |x| match self.tx_state(x) {
            TxState::Unknown
                if hints
                    .iter()
                    .any(|&(h, asked_at)| h == x && snapshot <= asked_at) =>
            {
                TxState::Active
            }
            known => known,
        }
    }

    fn acquire_cr(&mut self, sid: u32, blk: BlockAddr) -> Acq {
        let (snapshot, reader) = {
            let s = &self.sessions[sid as usize];
            (s.snapshot, s.xid)
        };
        let get = self.costs.consistent_get;
        // 1. The current buffer, as it is or rolled back here.
        if let Some(cur) = self.cache.current(blk) {
            // A buffer another session is changing right now (exclusive
            // pin) is not read in place: the change lands before our read
            // would. A CR copy taken now is exact.
            let as_is = {
                let b = self.cache.get(cur);
                b.image
                    .visible_as_is(snapshot, reader, &self.lookup_with_hints(sid))
                    .map(|v| v && !b.xpin)
            };
            // The copy, when needed, goes straight to its use (not through a tuple).
            return match as_is {
                Ok(true) => {
                    self.cache.get_mut(cur).pins += 1;
                    Acq::Got {
                        buf: cur,
                        extra: 0,
                        cpu: get,
                    }
                }
                Ok(false) => {
                    let built = self.cache.get(cur).image.build_cr(
                        snapshot,
                        reader,
                        self.scn,
                        &self.lookup_with_hints(sid),
                    );
                    self.use_local_cr(sid, blk, built)
                }
                Err(CrError::Unknown(xids)) => self.look_up(sid, xids),
                Err(CrError::SnapshotTooOld) => Acq::Restart,
            };
        }
        // 2. A CR copy valid for this snapshot.
        // A transaction that changed this block sees only copies built for it:
        // a shared copy may have rolled its own change back.
        let own = !reader.is_none() && self.sessions[sid as usize].touched.contains(&blk);
        let found = self
            .cache
            .buffers_of(blk)
            .find(|&id| match self.cache.get(id).state {
                BufState::Cr { lo, hi, private_to } => {
                    lo <= snapshot
                        && snapshot <= hi
                        && match private_to {
                            Some(p) => p == reader,
                            None => !own,
                        }
                }
                _ => false,
            });
        if let Some(id) = found {
            self.cache.get_mut(id).pins += 1;
            return Acq::Got {
                buf: id,
                extra: 0,
                cpu: get,
            };
        }
        // 3. An unrolled image shipped to us (light work): roll it back here.
        // The image only covers snapshots up to the sender's SCN when it took
        // it: a later statement with a newer snapshot must ask again.
        if self.sessions[sid as usize]
            .raw
            .as_ref()
            .is_some_and(|r| r.0.addr == blk && snapshot <= r.1)
            && let Some((raw, horizon)) = self.sessions[sid as usize].raw.take()
        {
            // No change after the sender took the image can commit at or
            // below its SCN then: that bounds the copy, not our own SCN.
            let built = raw.build_cr(snapshot, reader, horizon, &self.lookup_with_hints(sid));
            if let Err(CrError::Unknown(_)) = &built {
                self.sessions[sid as usize].raw = Some((raw, horizon));
            }
            return self.use_local_cr(sid, blk, built);
        }
        // 4. Someone here already asked for it.
        if self.inflight.contains_key(&blk) {
            self.wait_on_block(sid, blk, Wait::GcBufferBusyAcquire);
            return Acq::Wait;
        }
        let scan = matches!(
            self.sessions[sid as usize].cur,
            Cur::Scan { .. } | Cur::ScanHeader { .. }
        );
        self.gc_request(sid, blk, ReqKind::Cr { snapshot, reader }, scan);
        Acq::Wait
    }

    fn use_local_cr(
        &mut self,
        sid: u32,
        blk: BlockAddr,
        built: Result<crate::block::CrCopy, CrError>,
    ) -> Acq {
        match built {
            Ok(cp) => {
                self.stats.incr(Stat::CrBlocksCreated);
                self.stats
                    .add(Stat::UndoRecordsApplied, u64::from(cp.undo_applied));
                self.stats
                    .add(Stat::ConsistentChanges, u64::from(cp.undo_applied));
                let extra =
                    self.costs.cr_build + self.costs.undo_apply * Nanos::from(cp.undo_applied);
                self.cache.limit_cr(blk);
                self.make_room();
                let state = BufState::Cr {
                    lo: cp.lo,
                    hi: cp.hi,
                    private_to: cp.private_to,
                };
                let id = self.cache.insert(blk, state, cp.image);
                self.cache.get_mut(id).pins += 1;
                self.sessions[sid as usize].hints.clear();
                Acq::Got {
                    buf: id,
                    extra,
                    cpu: self.costs.consistent_get,
                }
            }
            Err(CrError::Unknown(xids)) => self.look_up(sid, xids),
            Err(CrError::SnapshotTooOld) => Acq::Restart,
        }
    }

    /// Ask the owners of transactions whose state a CR build needs.
    fn look_up(&mut self, sid: u32, xids: Vec<Xid>) -> Acq {
        let mut asked = 0;
        for x in xids {
            if x.inst() == self.id || x.inst().0 >= self.n {
                continue;
            }
            let token = self.next_token;
            self.next_token += 1;
            self.tx_tokens.insert(token, (sid, self.scn));
            self.send(x.inst(), Msg::TxQuery { xid: x, token });
            asked += 1;
        }
        if asked == 0 {
            // Nothing could be asked (a transaction of a non-existent instance): read on.
            return Acq::Restart;
        }
        self.sessions[sid as usize].pending_lookups = asked;
        self.begin_wait(sid, Wait::GcCrBlock2Way, St::WaitTx);
        Acq::Wait
    }

    pub(super) fn on_tx_status(&mut self, xid: Xid, token: u64, report: TxReport) {
        let Some((sid, asked_at)) = self.tx_tokens.remove(&token) else {
            return;
        };
        match report {
            TxReport::Committed(scn) => {
                self.remote_commits.insert(xid, scn);
            }
            TxReport::Active => self.sessions[sid as usize].hints.push((xid, asked_at)),
        }
        let s = &mut self.sessions[sid as usize];
        s.pending_lookups = s.pending_lookups.saturating_sub(1);
        if s.pending_lookups == 0 && s.st == St::WaitTx {
            self.end_wait(sid, None);
            self.set_ready(sid);
        }
    }

    pub(super) fn acquire_current(&mut self, sid: u32, blk: BlockAddr) -> Acq {
        if let Some(cur) = self.cache.current(blk) {
            let b = self.cache.get(cur);
            if b.state == BufState::Xcur {
                if b.leaving {
                    self.wait_on_block(sid, blk, Wait::GcBufferBusyRelease);
                    return Acq::Wait;
                }
                if b.pinned() {
                    self.wait_on_block(sid, blk, Wait::BufferBusyWaits);
                    return Acq::Wait;
                }
                self.cache.get_mut(cur).xpin = true;
                return Acq::Got {
                    buf: cur,
                    extra: 0,
                    cpu: self.costs.db_block_get + self.costs.row_change,
                };
            }
        }
        if self.inflight.contains_key(&blk) {
            self.wait_on_block(sid, blk, Wait::GcBufferBusyAcquire);
            return Acq::Wait;
        }
        self.gc_request(sid, blk, ReqKind::Current { new_block: false }, false);
        Acq::Wait
    }

    pub(super) fn wait_on_block(&mut self, sid: u32, blk: BlockAddr, event: Wait) {
        self.begin_wait(sid, event, St::WaitBlock);
        self.block_waiters.entry(blk).or_default().push(sid);
    }

    /// Something changed about `blk`: waiting sessions try again.
    pub(super) fn wake_block(&mut self, blk: BlockAddr) {
        // Called on every unpin; usually nobody waits at all, and a miss
        // would still hash and probe.
        if self.block_waiters.is_empty() {
            return;
        }
        let Some(list) = self.block_waiters.remove(&blk) else {
            return;
        };
        for sid in list {
            if self.sessions[sid as usize].st == St::WaitBlock {
                self.end_wait(sid, None);
                self.set_ready(sid);
            }
        }
    }

    pub(super) fn gc_request(&mut self, sid: u32, blk: BlockAddr, kind: ReqKind, scan: bool) {
        let id = self.next_req;
        self.next_req += 1;
        self.inflight.insert(
            blk,
            Inflight {
                id,
                owner: sid,
                sent: self.now,
                scan,
            },
        );
        let placeholder = match kind {
            ReqKind::Cr { .. } => Wait::GcCrRequest,
            ReqKind::Current { .. } => Wait::GcCurrentRequest,
        };
        self.begin_wait(sid, placeholder, St::WaitBlock);
        let req = Request {
            id,
            blk,
            requester: self.id,
            kind,
            timing: Timing::default(),
        };
        let master = self.layout.master(blk);
        if master == self.id {
            self.dir_request(req);
        } else {
            self.send(master, Msg::Request(req));
        }
    }

    /// A block arrived for one of our requests. The foreground that asked
    /// installs it; the wait is renamed by what happened on the way.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_ship(
        &mut self,
        from: InstId,
        sent_at: Nanos,
        sender_scn: Scn,
        req: Request,
        kind: ShipKind,
        block: Block,
        pi_kept: bool,
        hops: u8,
        congested: bool,
    ) {
        let blk = req.blk;
        let Some(inf) = self.inflight.get(&blk).copied().filter(|i| i.id == req.id) else {
            self.errors.push(format!(
                "{}: {from} shipped {blk} for request {} we do not have",
                self.id, req.id
            ));
            return;
        };
        self.inflight.remove(&blk);
        let total = self.now - inf.sent;
        let t = req.timing;
        let wire = self.now.saturating_sub(sent_at);
        let lms = t.lms_proc + t.pin;
        let request = total.saturating_sub(t.lms_wait + lms + t.flush + wire);
        let bk = if kind == ShipKind::Current {
            BlockKind::Current
        } else {
            BlockKind::Cr
        };
        for (part, v) in [
            (Part::RequestSend, request),
            (Part::LmsCpuWait, t.lms_wait),
            (Part::LmsProcessing, lms),
            (Part::LogFlush, t.flush),
            (Part::Wire, wire),
        ] {
            self.stats.add(part.stat(bk), v);
        }
        let busy = t.flush > 0 || t.pin > 0;
        let event = match (bk, congested, busy, hops) {
            (BlockKind::Cr, true, _, _) => Wait::GcCrBlockCongested,
            (BlockKind::Cr, _, true, _) => Wait::GcCrBlockBusy,
            (BlockKind::Cr, _, _, 3) => Wait::GcCrBlock3Way,
            (BlockKind::Cr, _, _, _) => Wait::GcCrBlock2Way,
            (BlockKind::Current, true, _, _) => Wait::GcCurrentBlockCongested,
            (BlockKind::Current, _, true, _) => Wait::GcCurrentBlockBusy,
            (BlockKind::Current, _, _, 3) => Wait::GcCurrentBlock3Way,
            (BlockKind::Current, _, _, _) => Wait::GcCurrentBlock2Way,
        };
        match bk {
            BlockKind::Cr => {
                self.stats.incr(Stat::GcCrBlocksReceived);
                self.stats.add(Stat::GcCrBlockReceiveTime, total);
            }
            BlockKind::Current => {
                self.stats.incr(Stat::GcCurrentBlocksReceived);
                self.stats.add(Stat::GcCurrentBlockReceiveTime, total);
            }
        }
        let owner = inf.owner;
        if self.sessions[owner as usize].st == St::WaitBlock {
            self.end_wait(owner, Some(event));
            self.set_ready(owner);
        }
        match kind {
            ShipKind::Cr { lo, hi, private } => {
                let reader = match req.kind {
                    ReqKind::Cr { reader, .. } => reader,
                    ReqKind::Current { .. } => Xid::NONE,
                };
                self.cache.limit_cr(blk);
                self.make_room();
                let private_to = private.then_some(reader);
                self.cache
                    .insert(blk, BufState::Cr { lo, hi, private_to }, block);
            }
            ShipKind::Raw => {
                self.sessions[owner as usize].raw = Some((Box::new(block), sender_scn))
            }
            ShipKind::Shared => {
                self.install_current(blk, Mode::S, block, false);
                self.installed(from, blk, req.id, Mode::S, None, false);
            }
            ShipKind::Current => {
                self.install_current(blk, Mode::X, block, pi_kept);
                self.installed(from, blk, req.id, Mode::X, Some(from), pi_kept);
            }
        }
        self.wake_block(blk);
    }

    fn install_current(&mut self, blk: BlockAddr, mode: Mode, mut block: Block, dirty: bool) {
        if let Some(old) = self.cache.current(blk) {
            self.cache.remove(old);
        }
        block.clean_out_known(&|x| self.tx_state(x));
        self.make_room();
        let state = if mode == Mode::X {
            BufState::Xcur
        } else {
            BufState::Scur
        };
        let id = self.cache.insert(blk, state, block);
        let now = self.now;
        let b = self.cache.get_mut(id);
        b.dirty = dirty;
        b.global = dirty;
        b.dirty_since = now;
    }

    /// Tell the master the transfer is complete.
    fn installed(
        &mut self,
        _from: InstId,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        prev: Option<InstId>,
        pi_kept: bool,
    ) {
        let master = self.layout.master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_installed(me, blk, req, mode, prev, pi_kept);
        } else {
            self.send(
                master,
                Msg::Installed {
                    blk,
                    req,
                    mode,
                    prev_holder: prev,
                    pi_kept,
                },
            );
        }
    }

    /// The master granted a request without a block.
    pub(super) fn on_grant(
        &mut self,
        _from: InstId,
        _sent_at: Nanos,
        req: Request,
        grant: GrantKind,
    ) {
        let Some(inf) = self
            .inflight
            .get(&req.blk)
            .copied()
            .filter(|i| i.id == req.id)
        else {
            self.errors.push(format!(
                "{}: grant for {} request {} we do not have",
                self.id, req.blk, req.id
            ));
            return;
        };
        let congested = req.timing.lms_wait > super::lms::CONGESTED_AFTER;
        let event = match (req.kind, congested) {
            (ReqKind::Cr { .. }, false) => Wait::GcCrGrant2Way,
            (ReqKind::Cr { .. }, true) => Wait::GcCrGrantCongested,
            (ReqKind::Current { .. }, false) => Wait::GcCurrentGrant2Way,
            (ReqKind::Current { .. }, true) => Wait::GcCurrentGrantCongested,
        };
        if self.sessions[inf.owner as usize].st == St::WaitBlock {
            self.end_wait(inf.owner, Some(event));
        }
        self.granted(inf, req, grant);
    }

    /// The local master granted a request: no message and no gc wait.
    pub(super) fn on_local_grant(&mut self, req: Request, grant: GrantKind) {
        let Some(inf) = self
            .inflight
            .get(&req.blk)
            .copied()
            .filter(|i| i.id == req.id)
        else {
            return;
        };
        // The placeholder wait never really happened.
        self.sessions[inf.owner as usize].wait = None;
        self.granted(inf, req, grant);
    }

    fn granted(&mut self, inf: Inflight, req: Request, grant: GrantKind) {
        let blk = req.blk;
        match grant {
            GrantKind::Disk(mode) => {
                let event = if inf.scan {
                    Wait::DbFileScatteredRead
                } else {
                    Wait::DbFileSequentialRead
                };
                self.begin_wait(inf.owner, event, St::WaitBlock);
                self.start_io(
                    Io::ReadBlock { blk },
                    IoPurpose::GrantRead {
                        blk,
                        req: req.id,
                        mode,
                        scan: inf.scan,
                    },
                );
            }
            GrantKind::Upgrade => {
                self.inflight.remove(&blk);
                match self.cache.current(blk) {
                    Some(id) => self.cache.set_state(id, BufState::Xcur),
                    None => self.errors.push(format!(
                        "{}: upgrade granted for {blk} but no S copy here",
                        self.id
                    )),
                }
                let me = self.id;
                self.installed(me, blk, req.id, Mode::X, None, false);
                self.ready_owner(inf.owner);
                self.wake_block(blk);
            }
            GrantKind::New => {
                self.inflight.remove(&blk);
                self.install_current(blk, Mode::X, Block::new(blk, Body::Unformatted), false);
                let me = self.id;
                self.installed(me, blk, req.id, Mode::X, None, false);
                self.ready_owner(inf.owner);
                self.wake_block(blk);
            }
        }
    }

    fn ready_owner(&mut self, sid: u32) {
        if matches!(self.sessions[sid as usize].st, St::WaitBlock) {
            self.end_wait(sid, None);
            self.set_ready(sid);
        }
    }

    /// A granted disk read completed.
    pub(super) fn on_grant_read(
        &mut self,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        block: Block,
        _scan: bool,
    ) {
        let Some(inf) = self.inflight.get(&blk).copied().filter(|i| i.id == req) else {
            return;
        };
        self.inflight.remove(&blk);
        self.install_current(blk, mode, block, false);
        let me = self.id;
        self.installed(me, blk, req, mode, None, false);
        self.ready_owner(inf.owner);
        self.wake_block(blk);
    }

    /// Free a buffer if the cache is full.
    pub(super) fn make_room(&mut self) {
        self.stats.incr(Stat::FreeBufferRequested);
        while self.cache.used() >= self.cache.capacity {
            let inflight = &self.inflight;
            let waiters = &self.block_waiters;
            let (victim, inspected) = self
                .cache
                .victim(|b| inflight.contains_key(&b) || waiters.contains_key(&b));
            self.stats
                .add(Stat::FreeBufferInspected, u64::from(inspected));
            match victim {
                super::cache::Victim::Free {
                    relinquish: Some((blk, state)),
                } => {
                    let mode = if state == BufState::Xcur {
                        Mode::X
                    } else {
                        Mode::S
                    };
                    let master = self.layout.master(blk);
                    if master == self.id {
                        let me = self.id;
                        self.dir_relinquish(me, blk, mode);
                    } else {
                        self.send(master, Msg::Relinquish { blk, mode });
                    }
                }
                super::cache::Victim::Free { relinquish: None } => {}
                // Everything is dirty or pinned: run over capacity until DBWR catches up.
                super::cache::Victim::None => {
                    self.dbwr_urgent();
                    break;
                }
            }
        }
    }

    pub(super) fn session_cpu_done(&mut self, sid: u32, _d: StepDone) {
        let St::Cpu(then) = self.sessions[sid as usize].st else {
            return;
        };
        match then {
            Then::Exec => {
                let scn = self.scn;
                let s = &mut self.sessions[sid as usize];
                s.snapshot = scn;
                s.st = St::Ready;
                self.ready.push_back(sid);
            }
            Then::Visit(buf) => self.visit_done(sid, buf),
            Then::Commit => self.commit_done(sid),
            Then::Split => self.split_done(sid),
            Then::Px => self.px_qc_cpu_done(sid),
        }
    }

    pub(super) fn unpin(&mut self, buf: BufId) {
        let Some(b) = self.cache.try_get(buf) else {
            return;
        };
        let blk = b.blk;
        let b = self.cache.get_mut(buf);
        if b.xpin {
            b.xpin = false;
        } else {
            b.pins = b.pins.saturating_sub(1);
        }
        if !self.cache.get(buf).pinned() {
            self.unpinned(blk);
            self.wake_block(blk);
        }
    }

    fn visit_done(&mut self, sid: u32, buf: BufId) {
        let cur = self.sessions[sid as usize].cur;
        let current_mode = matches!(
            cur,
            Cur::Table {
                purpose: Purpose::Update,
                ..
            } | Cur::InsertRow { .. }
                | Cur::InsertAlloc { .. }
                | Cur::IndexLeaf { .. }
                | Cur::MaintLeaf { .. }
                | Cur::Seq { .. }
        );
        if current_mode {
            self.stats.incr(Stat::DbBlockGets);
            self.stats.incr(Stat::DbBlockGetsFromCache);
        } else {
            self.stats.incr(Stat::ConsistentGets);
            self.stats.incr(Stat::ConsistentGetsFromCache);
        }
        if let Some(st) = self.stmt_target(sid) {
            let x = &mut self.stats.statements[st];
            if current_mode {
                x.current += 1;
            } else {
                x.query += 1;
            }
        }
        self.stats.incr(Stat::SessionLogicalReads);
        let next = match cur {
            Cur::Index {
                ix,
                table,
                key,
                blk,
                purpose,
            } => {
                let ekey = self.layout.indexes[ix].entry_key(key);
                let img = &self.cache.get(buf).image;
                match img.child_for(ekey) {
                    Some(child) => Cur::Index {
                        ix,
                        table,
                        key,
                        blk: child,
                        purpose,
                    },
                    None if matches!(purpose, Purpose::Insert(_)) => {
                        let Purpose::Insert(rowid) = purpose else {
                            unreachable!()
                        };
                        Cur::IndexLeaf {
                            ix,
                            table,
                            key,
                            rowid,
                            blk,
                        }
                    }
                    None if matches!(purpose, Purpose::Count { .. } | Purpose::Maintain) => {
                        self.leaf_reached(buf, ix, table, key, blk, purpose)
                    }
                    None => match img.leaf_lookup(ekey) {
                        Some(e) => {
                            self.stats.incr(Stat::IndexFetchByKey);
                            Cur::Table {
                                table,
                                key,
                                rowid: e.rowid,
                                purpose,
                            }
                        }
                        None => {
                            let _ = blk;
                            if purpose == Purpose::Read {
                                let (xid, snapshot) = (
                                    self.sessions[sid as usize].xid,
                                    self.sessions[sid as usize].snapshot,
                                );
                                self.record(Observation::Read {
                                    xid,
                                    snapshot,
                                    table,
                                    key,
                                    val: None,
                                });
                            }
                            Cur::None
                        }
                    },
                }
            }
            Cur::Table {
                table,
                key,
                rowid,
                purpose: Purpose::Read,
            } => {
                let val = self
                    .cache
                    .get(buf)
                    .image
                    .row(rowid.slot)
                    .filter(|r| r.key == key)
                    .map(|r| r.val);
                let (xid, snapshot) = (
                    self.sessions[sid as usize].xid,
                    self.sessions[sid as usize].snapshot,
                );
                self.record(Observation::Read {
                    xid,
                    snapshot,
                    table,
                    key,
                    val,
                });
                Cur::None
            }
            Cur::Table {
                table,
                key,
                rowid,
                purpose: Purpose::Update,
            } => {
                match self.update_row(sid, buf, table, key, rowid) {
                    Some(next) => next,
                    None => return, // waits for a row lock; the pin is already released
                }
            }
            Cur::ScanHeader { table } => {
                let t = &self.layout.tables[table];
                // Every partition's initial blocks (a partitioned table's
                // other segment headers are not read again; nothing is
                // inserted into its partitions, so they say nothing new).
                let mut runs = t.initial_runs();
                if let Body::SegHeader { used } = &self.cache.get(buf).image.body {
                    for (i, u) in used.iter().enumerate() {
                        let r = crate::layout::Layout::free_range(
                            t.free_base,
                            t.free_per_instance,
                            InstId(i as u8),
                        );
                        let used = (*u).min(t.free_per_instance);
                        if used > 0 {
                            runs.push((r.start, r.start + used));
                        }
                    }
                }
                let first = runs[0].0;
                self.sessions[sid as usize].scan_runs = runs;
                Cur::Scan {
                    table,
                    run: 0,
                    next: first,
                }
            }
            Cur::Scan { table, run, next } => {
                let rows = self.cache.get(buf).image.row_slots() as u64;
                self.stats.incr(Stat::TableScanBlocksGotten);
                self.stats.add(Stat::TableScanRowsGotten, rows);
                self.scan_rows_seen(sid, buf, table);
                let runs = &self.sessions[sid as usize].scan_runs;
                match runs.get(run as usize) {
                    Some(&(_, end)) if next + 1 < end => Cur::Scan {
                        table,
                        run,
                        next: next + 1,
                    },
                    _ => match runs.get(run as usize + 1) {
                        Some(&(start, _)) => Cur::Scan {
                            table,
                            run: run + 1,
                            next: start,
                        },
                        None => Cur::None,
                    },
                }
            }
            Cur::InsertRow { table, key } => self.insert_into_block(sid, buf, table, key),
            Cur::InsertAlloc { table, key } => self.take_new_block(sid, buf, table, key),
            Cur::IndexLeaf {
                ix,
                table,
                key,
                rowid,
                blk,
            } => self.insert_into_leaf(sid, buf, ix, table, key, rowid, blk),
            Cur::Seq { seq, insert, .. } => self.seq_updated(sid, buf, seq, insert),
            Cur::MaintLeaf { table, .. } => match self.maintain_leaf(sid, buf, table) {
                Some(next) => next,
                None => return, // waits for a piece's lock; the pin is already released
            },
            Cur::InsertNew { .. }
            | Cur::Split { .. }
            | Cur::Px { .. }
            | Cur::Table {
                purpose: Purpose::Insert(_) | Purpose::Count { .. } | Purpose::Maintain,
                ..
            } => Cur::None,
            Cur::None => Cur::None,
        };
        self.unpin(buf);
        let s = &mut self.sessions[sid as usize];
        s.cur = next;
        s.st = St::Ready;
        self.ready.push_back(sid);
    }

    /// A full scan saw these rows: let the checkers verify them (when recording).
    fn scan_rows_seen(&mut self, sid: u32, buf: BufId, table: usize) {
        if self.history.is_none() {
            return;
        }
        let (xid, snapshot) = (
            self.sessions[sid as usize].xid,
            self.sessions[sid as usize].snapshot,
        );
        let rows: Vec<(u64, i64)> = match &self.cache.get(buf).image.body {
            Body::Table { rows } => rows.iter().flatten().map(|r| (r.key, r.val)).collect(),
            _ => Vec::new(),
        };
        for (key, val) in rows {
            self.record(Observation::Read {
                xid,
                snapshot,
                table,
                key,
                val: Some(val),
            });
        }
    }

    /// Change a row in a current block the session holds pinned. Returns the
    /// next cursor, or `None` when the row is locked and the session now waits.
    fn update_row(
        &mut self,
        sid: u32,
        buf: BufId,
        table: usize,
        key: u64,
        rowid: Rowid,
    ) -> Option<Cur> {
        let my = self.sessions[sid as usize].xid;
        let lock = match self.cache.get(buf).image.row(rowid.slot) {
            Some(r) if r.key == key => r.lock,
            _ => return Some(Cur::None),
        };
        if !lock.is_none() && lock != my {
            let state = self
                .cache
                .get(buf)
                .image
                .state_of(lock, &|x| self.tx_state(x));
            if !matches!(state, TxState::Committed(_)) {
                self.unpin(buf);
                self.wait_for_tx(sid, lock);
                return None;
            }
        }
        let xid = self.session_xid(sid);
        let scn = self.next_scn();
        self.clean_out_buffer(buf);
        let old = self
            .cache
            .get(buf)
            .image
            .row(rowid.slot)
            .map_or(0, |r| r.val);
        let val = self.layout.tables[table].updated_value(old);
        self.cache
            .get_mut(buf)
            .image
            .update_row(rowid.slot, xid, val, scn);
        let rba = self.redo(xid, Some(rowid.blk), scn, 200, false);
        self.dirtied(buf, rba);
        self.stats.incr(Stat::RowsUpdated);
        self.touch_block(sid, rowid.blk);
        self.record(Observation::Write {
            xid,
            table,
            key,
            val,
        });
        // Indexes on the value change with the row (maintain.rs).
        let targets = self.maintenance(table, key, old, val);
        if targets.is_empty() {
            return Some(Cur::None);
        }
        self.sessions[sid as usize].maint = targets;
        Some(self.next_maintenance(sid, table))
    }

    pub(super) fn wait_for_tx(&mut self, sid: u32, holder: Xid) {
        self.begin_wait(sid, Wait::EnqTxRowLockContention, St::WaitTx);
        if holder.inst() == self.id {
            self.txns
                .waiters
                .entry(holder.seq())
                .or_default()
                .push(TxWaiter::Session(sid));
        } else {
            let token = self.next_token;
            self.next_token += 1;
            self.tx_tokens.insert(token, (sid, self.scn));
            self.sessions[sid as usize].pending_lookups = 1;
            self.send(holder.inst(), Msg::TxWait { xid: holder, token });
        }
    }

    fn commit(&mut self, sid: u32) -> bool {
        self.stmt_close(sid);
        let s = &mut self.sessions[sid as usize];
        s.st = St::Cpu(Then::Commit);
        let proc = s.proc;
        self.cpu(proc, self.costs.commit);
        false
    }

    fn commit_done(&mut self, sid: u32) {
        self.stats.incr(Stat::UserCommits);
        let xid = self.sessions[sid as usize].xid;
        if xid.is_none() {
            // A read-only transaction has nothing to make durable.
            self.end_txn(sid);
            return;
        }
        let scn = self.next_scn();
        if let Some(slot) = self.txns.commit.get_mut(xid.seq() as usize) {
            *slot = scn;
        }
        let rba = self.redo(xid, None, scn, 100, true);
        // Fast commit cleanout of the blocks still held here.
        let touched = std::mem::take(&mut self.sessions[sid as usize].touched);
        for blk in touched {
            if let Some(id) = self.cache.current(blk) {
                self.cache.get_mut(id).image.clean_out(xid, scn);
            }
        }
        self.record(Observation::Commit { xid, scn });
        if let Some(waiters) = self.txns.waiters.remove(&xid.seq()) {
            for w in waiters {
                match w {
                    TxWaiter::Session(other) => {
                        if self.sessions[other as usize].st == St::WaitTx {
                            self.end_wait(other, None);
                            self.set_ready(other);
                        }
                    }
                    TxWaiter::Remote(inst, token) => self.send(
                        inst,
                        Msg::TxStatus {
                            xid,
                            token,
                            report: TxReport::Committed(scn),
                        },
                    ),
                }
            }
        }
        self.stats.incr(Stat::RedoSynchWrites);
        if self.request_flush(rba, Some(FlushWaiter::Session(sid))) {
            self.end_txn(sid);
        } else {
            self.begin_wait(sid, Wait::LogFileSync, St::WaitCommit);
        }
    }

    /// LGWR wrote the commit record.
    pub(super) fn session_flushed(&mut self, sid: u32) {
        if self.sessions[sid as usize].st != St::WaitCommit {
            return;
        }
        if let Some((_, since)) = self.sessions[sid as usize].wait {
            self.stats.add(Stat::RedoSynchTime, self.now - since);
        }
        self.end_wait(sid, None);
        self.end_txn(sid);
    }

    fn end_txn(&mut self, sid: u32) {
        let w = self.sessions[sid as usize].workload;
        let think = self.workloads[w].think_time;
        let s = &mut self.sessions[sid as usize];
        s.in_txn = false;
        s.xid = Xid::NONE;
        s.cur = Cur::None;
        s.execs_left = 0;
        s.iterations += 1;
        s.hints.clear();
        let jitter = if think > 0 {
            (unit(&mut self.rng) * think as f64) as Nanos
        } else {
            0
        };
        self.think(sid, think / 2 + jitter);
    }
}
