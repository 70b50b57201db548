//! The workload interpreter: which transaction a session runs next, its
//! steps and their executions, the keys and values they draw, think time,
//! and the statement (tkprof) a session's work is charged to.
//!
//! Every random draw of a session happens here (and in `end_txn`'s think
//! time), in a fixed order per execution: the figures depend on it.

use std::ops::ControlFlow;

use rand_core::Rng;

use super::super::events::{Proc, Timer};
use super::super::execution::{ExecPoint, Purpose, SeqStep};
use super::super::kernel::Kernel;
use super::state::{AfterCpu, SessionState};
use super::{Foregrounds, Session};
use crate::config::{Access, Catalog, KeyDist, KeySpec, LockOrder, Nanos, Step, WorkloadSpec};
use crate::stats::Stat;
use crate::types::Xid;

/// A uniform draw from `[0, 1)`.
pub(super) fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl Foregrounds {
    /// Give every workload step's statement (and the recursive `update
    /// seq$`) its place in `stats.statements`.
    pub(in crate::instance) fn register_statements(&mut self, k: &mut Kernel, catalog: &Catalog) {
        self.workloads.register_statements(k.stats_mut(), catalog);
    }

    /// Create this instance's sessions; they log on spread over a short interval.
    pub(in crate::instance) fn start_sessions(&mut self, k: &mut Kernel) {
        let workloads = self.workloads.specs();
        let me = k.id().number();
        for (w, spec) in workloads.iter().enumerate() {
            if !spec.instances.contains(&me) {
                continue;
            }
            for ordinal in 0..spec.sessions_per_instance {
                let sid = self.sessions.next_id();
                let proc = k.add_proc(Proc::Session(sid), format!("oracle{}", sid));
                let added = self.sessions.add(Session::new(proc, w, ordinal));
                assert_eq!(added, sid, "session ids are table positions");
                // Sessions log on spread over a short interval, not in lockstep.
                let spread = spec.think_time.max(crate::config::NS_PER_MS);
                let delay = (unit(k.rng()) * spread as f64) as Nanos;
                k.arm(delay, Timer::SessionWake(sid));
            }
        }
    }

    fn workload_enabled(&self, w: usize) -> bool {
        self.workloads.enabled(w)
    }

    /// The enabled workloads changed: their idle sessions start again.
    pub(in crate::instance) fn wake_enabled_sessions(&mut self, k: &mut Kernel) {
        for sid in self.sessions.ids() {
            let s = self.sessions.session(sid);
            if s.st == SessionState::Idle && !s.finished && self.workload_enabled(s.workload) {
                self.set_ready(k, sid);
            }
        }
    }

    /// A session's think time is over.
    pub(in crate::instance) fn session_wake(&mut self, k: &mut Kernel, sid: u32) {
        if self
            .sessions
            .get(sid as usize)
            .is_some_and(|s| s.st == SessionState::Think)
        {
            self.set_ready(k, sid);
        }
    }

    /// Start the next execution, step or transaction. Returns false when the
    /// session now waits (CPU, think time, commit) or is idle.
    #[inline(never)]
    pub(in crate::instance) fn next_execution(&mut self, k: &mut Kernel, sid: u32) -> bool {
        let w = self.sessions.session(sid).workload;
        // A handle, not a copy: the spec is shared and never changes.
        let workloads = self.workloads.specs();
        let spec = &workloads[w];
        if !self.sessions.session(sid).in_txn {
            if !self.begin_transaction(k, sid, w, spec) {
                return false;
            }
        } else if !self.workload_enabled(w) {
            // The phase no longer lists the workload: the execution that was
            // running has finished, and the transaction ends here, committing
            // what it changed, so nothing of it runs on into the new phase.
            return self.commit(k, sid);
        }
        let steps = &spec.transactions[self.sessions.session(sid).template].steps;
        if self.sessions.session(sid).execs_left == 0
            && let ControlFlow::Break(go_on) = self.next_step(k, sid, w, steps)
        {
            return go_on;
        }
        self.start_execution(k, sid, w, steps)
    }

    /// A new transaction: pick its template and draw its update keys. False
    /// when the session stops instead (its workload is disabled, or it ran
    /// all its iterations).
    fn begin_transaction(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        w: usize,
        spec: &WorkloadSpec,
    ) -> bool {
        let iterations = self.sessions.session(sid).iterations;
        let all_done = spec.iterations.is_some_and(|n| iterations >= n);
        if !self.workload_enabled(w) || all_done {
            self.go_idle(k, sid, all_done);
            return false;
        }
        let template = self.pick_template(k, spec);
        self.draw_update_keys(k, sid, spec, template);
        let s = self.sessions.session_mut(sid);
        s.template = template;
        s.step = 0;
        s.execs_left = 0;
        s.in_txn = true;
        s.xid = Xid::NONE;
        s.touched.clear();
        true
    }

    /// A transaction template of the workload, drawn by weight.
    fn pick_template(&mut self, k: &mut Kernel, spec: &WorkloadSpec) -> usize {
        let total: u64 = spec
            .transactions
            .iter()
            .map(|t| u64::from(t.weight.max(1)))
            .sum();
        let mut pick = k.rng().next_u64() % total.max(1);
        for (i, t) in spec.transactions.iter().enumerate() {
            let weight = u64::from(t.weight.max(1));
            if pick < weight {
                return i;
            }
            pick -= weight;
        }
        0
    }

    /// The keys a transaction's updates will change, per table, drawn up
    /// front so that its row locks are taken in the workload's order
    /// (ascending keys by default: no deadlock can happen).
    ///
    /// They replace the session's `update_keys`, whose vectors are reused
    /// (cleared, not dropped: no allocation per transaction).
    fn draw_update_keys(&mut self, k: &mut Kernel, sid: u32, spec: &WorkloadSpec, template: usize) {
        let mut keys = std::mem::take(&mut self.sessions.session_mut(sid).update_keys);
        // Tables drawn for so far: `keys[..tables]`; the rest are old vectors to reuse.
        let mut tables = 0;
        if let Some(t) = spec.transactions.get(template) {
            for step in t.steps.iter() {
                if let Step::Update {
                    table,
                    keys: key_spec,
                    rows,
                    ..
                } = step
                {
                    for _ in 0..*rows {
                        let key = self.draw_key(k, sid, *table, key_spec);
                        match keys[..tables].iter_mut().find(|(tb, _)| tb == table) {
                            Some((_, v)) => v.push(key),
                            None => {
                                match keys.get_mut(tables) {
                                    Some((tb, v)) => {
                                        *tb = *table;
                                        v.clear();
                                        v.push(key);
                                    }
                                    None => keys.push((*table, vec![key])),
                                }
                                tables += 1;
                            }
                        }
                    }
                }
            }
        }
        keys.truncate(tables);
        // Popped from the end: sorted the other way round.
        match spec.row_locks.order {
            LockOrder::Ascending => keys.iter_mut().for_each(|(_, v)| {
                v.sort_unstable();
                v.reverse();
            }),
            LockOrder::Descending => keys.iter_mut().for_each(|(_, v)| v.sort_unstable()),
            LockOrder::Drawn => keys.iter_mut().for_each(|(_, v)| v.reverse()),
        }
        self.sessions.session_mut(sid).update_keys = keys;
    }

    /// The transaction's next step begins. `Continue`: its executions
    /// follow; `Break(go_on)`: it was a commit or think time (or the end).
    fn next_step(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        w: usize,
        steps: &[Step],
    ) -> ControlFlow<bool> {
        let s = self.sessions.session_mut(sid);
        let Some(step) = steps.get(s.step) else {
            // End of the transaction: commit what it changed.
            return ControlFlow::Break(self.commit(k, sid));
        };
        s.step += 1;
        let (template, at) = (s.template, s.step - 1);
        if let Some(st) = self.stmt_id(w, template, at) {
            k.stats_mut().statements[st].parses += 1;
        }
        let executions = match step {
            Step::Commit => return ControlFlow::Break(self.commit(k, sid)),
            Step::Think { time } => {
                self.think(k, sid, *time);
                return ControlFlow::Break(false);
            }
            Step::MemoryWrites { ops } => {
                self.memory_writes(k, sid, *ops);
                return ControlFlow::Break(false);
            }
            Step::Read {
                access: Access::FullScan,
                ..
            }
            | Step::ParallelQuery(_) => 1,
            Step::Read { rows, .. }
            | Step::Update { rows, .. }
            | Step::Insert { rows, .. }
            | Step::NextVal { rows, .. }
            | Step::InsertSeq { rows, .. }
            | Step::Count { rows, .. } => (*rows).max(1),
        };
        self.sessions.session_mut(sid).execs_left = executions;
        ControlFlow::Continue(())
    }

    /// One execution of the current step: the execute call's CPU, after
    /// which the session is at the execution's first point.
    fn start_execution(&mut self, k: &mut Kernel, sid: u32, w: usize, steps: &[Step]) -> bool {
        self.stmt_close(k, sid);
        let now = k.now();
        let s = self.sessions.session_mut(sid);
        s.execs_left -= 1;
        let (template, at) = (s.template, s.step - 1);
        // Borrowed from the shared spec (the caller's handle), not cloned.
        let step = &steps[at];
        let stmt = self.stmt_id(w, template, at);
        let s = self.sessions.session_mut(sid);
        s.stmt = stmt;
        s.exec_start = now;
        if let Some(st) = stmt {
            k.stats_mut().statements[st].executions += 1;
            k.stats_mut().statements[st].rows += 1;
        }
        let cost = k.costs().execute_ns;
        k.incr(Stat::ExecuteCount);
        let first = self.first_point(k, sid, w, template, at, step);
        let s = self.sessions.session_mut(sid);
        s.cur = first;
        s.st = SessionState::Cpu(AfterCpu::Exec);
        let proc = s.proc;
        k.cpu(proc, cost);
        false
    }

    /// Where an execution of `step` (step `at` of template `template`)
    /// begins, drawing its key or value.
    fn first_point(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        w: usize,
        template: usize,
        at: usize,
        step: &Step,
    ) -> ExecPoint {
        match *step {
            Step::Read {
                table,
                access: Access::FullScan,
                ..
            } => ExecPoint::ScanHeader { table },
            Step::Read {
                table,
                access: Access::Index(ix),
                ref keys,
                ..
            } => {
                let key = self.draw_key(k, sid, table, keys);
                ExecPoint::Index {
                    ix,
                    table,
                    key,
                    blk: k.layout().index_root(ix, key),
                    purpose: Purpose::Read,
                }
            }
            Step::Count {
                table,
                index,
                ref values,
                ..
            } => {
                let distinct = k.layout().tables[table].distinct_values.max(1);
                let domain = values.range.unwrap_or((1, u64::from(distinct)));
                let value = self.draw_in(k, sid, values, domain) as i64;
                ExecPoint::Index {
                    ix: index,
                    table,
                    key: crate::bitmap::piece_at(value, 0),
                    blk: k.layout().indexes[index].root,
                    purpose: Purpose::Count { value },
                }
            }
            Step::Update {
                table, ref access, ..
            } => self.update_point(k, sid, table, access),
            Step::Insert { table, .. } => {
                let key = self.inserts.next_key(table);
                ExecPoint::InsertRow { table, key }
            }
            Step::NextVal { sequence, .. } => ExecPoint::Seq {
                seq: sequence,
                step: SeqStep::Start,
                insert: None,
            },
            Step::InsertSeq {
                table, sequence, ..
            } => ExecPoint::Seq {
                seq: sequence,
                step: SeqStep::Start,
                insert: Some(table),
            },
            Step::ParallelQuery(_) => ExecPoint::Px {
                qref: crate::px::QueryRef::at(w, template, at),
            },
            Step::Commit | Step::Think { .. } | Step::MemoryWrites { .. } => ExecPoint::None,
        }
    }

    /// Where an update of the next of its drawn keys begins.
    fn update_point(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        table: usize,
        access: &Access,
    ) -> ExecPoint {
        // A step of `rows = 0` runs once and drew no key: it updates key 1.
        let key = self
            .sessions
            .session_mut(sid)
            .update_keys
            .iter_mut()
            .find(|(tb, _)| *tb == table)
            .and_then(|(_, v)| v.pop())
            .unwrap_or(1);
        match *access {
            Access::Index(ix) => ExecPoint::Index {
                ix,
                table,
                key,
                blk: k.layout().index_root(ix, key),
                purpose: Purpose::Update,
            },
            Access::FullScan => match k.layout().initial_rowid(table, key) {
                Some(rowid) => ExecPoint::Table {
                    table,
                    key,
                    rowid,
                    purpose: Purpose::Update,
                },
                None => ExecPoint::None,
            },
        }
    }

    fn stmt_id(&self, w: usize, template: usize, step: usize) -> Option<usize> {
        self.workloads.stmt_id(w, template, step)
    }

    /// The session stops: its workload is disabled, or (`finished`) it ran all its iterations.
    fn go_idle(&mut self, k: &mut Kernel, sid: u32, finished: bool) {
        self.stmt_close(k, sid);
        let now = k.now();
        let s = self.sessions.session_mut(sid);
        if let Some(t) = s.call_start.take() {
            k.add(Stat::DbTime, now - t);
        }
        s.st = SessionState::Idle;
        s.finished = finished;
    }

    /// The session thinks for `duration` (its database call ends).
    /// `ops` writes of a line of the session's private memory: one CPU
    /// step that stalls on them as the server's memory answers (the loader
    /// accepts the step only with a `[server]`).
    fn memory_writes(&mut self, k: &mut Kernel, sid: u32, ops: u32) {
        self.stmt_close(k, sid);
        let s = self.sessions.session_mut(sid);
        s.st = SessionState::Cpu(AfterCpu::Memory { ops });
        let proc = s.proc;
        if let Some(numa) = k.numa_mut() {
            numa.defer(proc, super::super::numa::Touch::Private { ops });
        }
        // Writing a line is all stall: the computing is a nanosecond.
        k.cpu(proc, 1);
    }

    /// The writes are done: count them with the time they took, then go on.
    pub(in crate::instance) fn memory_writes_done(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        ops: u32,
        d: crate::cpu::StepDone,
    ) {
        k.add(Stat::MemoryWriteOps, u64::from(ops));
        k.add(Stat::MemoryWriteOpTime, d.done_at - d.requested_at);
        self.resume(sid);
    }

    pub(super) fn think(&mut self, k: &mut Kernel, sid: u32, duration: Nanos) {
        self.stmt_close(k, sid);
        let now = k.now();
        let s = self.sessions.session_mut(sid);
        if let Some(t) = s.call_start.take() {
            k.add(Stat::DbTime, now - t);
        }
        s.st = SessionState::Think;
        if duration == 0 {
            self.set_ready(k, sid);
        } else {
            k.arm(duration, Timer::SessionWake(sid));
        }
    }

    /// A row key for a step: from the spec's range (the table's initial
    /// rows by default), among the rows of one organisation if it names one.
    fn draw_key(&mut self, k: &mut Kernel, sid: u32, table: usize, spec: &KeySpec) -> u64 {
        let (rows, orgs) = k.layout().tables.get(table).map_or((1, 1), |t| {
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
                let j = self.draw_in(k, sid, spec, (first, last));
                org + orgs * j
            }
            _ => self.draw_in(k, sid, spec, (lo, hi)),
        }
    }

    /// A number from `lo..=hi` with the spec's distribution (the caller
    /// turns the spec's range into `lo..=hi`).
    fn draw_in(&mut self, k: &mut Kernel, sid: u32, spec: &KeySpec, (lo, hi): (u64, u64)) -> u64 {
        // The loader refuses a range with hi < lo, and callers keep to it.
        debug_assert!(lo <= hi, "key range {lo}..={hi}");
        let span = hi.saturating_sub(lo) + 1;
        match spec.dist {
            KeyDist::Uniform => lo + k.rng().next_u64() % span,
            KeyDist::Hot { fraction, share } => {
                let hot = ((span as f64 * fraction).ceil() as u64).clamp(1, span);
                if unit(k.rng()) < share || hot == span {
                    lo + k.rng().next_u64() % hot
                } else {
                    lo + hot + k.rng().next_u64() % (span - hot)
                }
            }
            KeyDist::Sequential => {
                // Each session of the workload in the cluster starts at its
                // own offset and walks the range one key per draw.
                let w = self.sessions.session(sid).workload;
                let per_instance = u64::from(self.workloads.spec(w).sessions_per_instance);
                let in_cluster = per_instance.max(1) * u64::from(k.instance_count());
                let position = u64::from(k.id().0) * per_instance
                    + u64::from(self.sessions.session(sid).ordinal);
                let s = self.sessions.session_mut(sid);
                let key = lo + (position * span / in_cluster + s.seq_next) % span;
                s.seq_next += 1;
                key
            }
        }
    }

    /// The statement a session's work is charged to: the recursive one while it runs.
    pub(in crate::instance) fn stmt_target(&self, sid: u32) -> Option<usize> {
        let s = self.sessions.get(sid as usize)?;
        if s.recursive_start.is_some() {
            return self.workloads.update_seq_stmt();
        }
        s.stmt
    }

    /// The session's current execution ends: charge its elapsed time.
    pub(super) fn stmt_close(&mut self, k: &mut Kernel, sid: u32) {
        let now = k.now();
        let s = self.sessions.session_mut(sid);
        if let Some(st) = s.stmt.take() {
            let took = now - s.exec_start;
            k.stats_mut().statements[st].elapsed_ns += took;
        }
    }
}
