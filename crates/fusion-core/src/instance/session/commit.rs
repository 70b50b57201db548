//! A session's transaction: its xid (taken at the first change), the blocks
//! it changed, its commit (`log file sync` until LGWR has written the commit
//! record), and waiting for other transactions: on a row lock
//! (`enq: TX - row lock contention`), or for another instance to say whether
//! one of its transactions has committed (a CR build needs to know).
//! Recursive transactions (splits, segment headers, `update seq$`) commit at
//! once, without a session wait.

use super::super::cache::{BufId, Cache};
use super::super::events::Timer;
use super::super::execution::{ExecPoint, Purpose};
use super::super::kernel::Kernel;
use super::super::membership::{Net, roll_back_dead};
use super::super::observe::{Observation, Observer};
use super::super::redo::{FlushWaiter, Redo};
use super::row_locks::{RowWait, Via};
use super::state::Acquired;
use super::state::{AfterCpu, SessionState};
use super::workload::unit;
use super::{Foregrounds, RowLockWait, TxWaiter, dd_interval_ns, record};
use crate::block::{Change, TxState};
use crate::config::Nanos;
use crate::config::OnDeadlock;
use crate::msg::{Lvb, Msg, RedoRecord, ResName, TxEnd, TxReport};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Scn, Xid};

impl Foregrounds {
    /// The transaction of session `sid`, begun at its first change.
    pub(in crate::instance) fn session_xid(&mut self, sid: u32) -> Xid {
        let x = self.sessions.session(sid).xid;
        if !x.is_none() {
            return x;
        }
        let x = self.txns.begin();
        self.sessions.session_mut(sid).xid = x;
        x
    }

    /// Session `sid` changed `blk`: remember it, and retire the CR copies that
    /// predate the change (they would hide it from the session itself).
    pub(in crate::instance) fn touch_block(&mut self, cache: &mut Cache, sid: u32, blk: BlockAddr) {
        let xid = self.sessions.session(sid).xid;
        cache.forget_private(blk, xid);
        let t = &mut self.sessions.session_mut(sid).touched;
        if !t.contains(&blk) {
            t.push(blk);
        }
    }

    /// A recursive transaction: changes that commit at once, independently of the session's.
    pub(in crate::instance) fn recursive_txn(&mut self, k: &mut Kernel) -> (Xid, Scn) {
        let xid = self.txns.begin();
        let scn = k.next_scn();
        (xid, scn)
    }

    /// Commit a recursive transaction; returns the commit record's redo address.
    pub(in crate::instance) fn commit_recursive(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        xid: Xid,
        blocks: &[BlockAddr],
    ) -> u64 {
        let scn = k.next_scn();
        self.txns.commit(xid, scn);
        for &blk in blocks {
            if let Some(id) = cache.current(blk) {
                cache.get_mut(id).image.clean_out(xid, scn);
            }
        }
        // A commit record changes no block: the transaction table needs no
        // redo address from it.
        redo.append(k, RedoRecord::commit(scn, xid, 100))
    }

    /// The transaction ends: the commit call's CPU first.
    pub(super) fn commit(&mut self, k: &mut Kernel, sid: u32) -> bool {
        self.stmt_close(k, sid);
        let s = self.sessions.session_mut(sid);
        s.st = SessionState::Cpu(AfterCpu::Commit);
        let proc = s.proc;
        k.cpu(proc, k.costs().commit_ns);
        false
    }

    /// The commit call ran: commit, clean out, wake the waiters, and wait for LGWR.
    pub(in crate::instance) fn commit_done(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        mut net: Net,
        obs: &mut Observer,
        sid: u32,
    ) {
        k.incr(Stat::UserCommits);
        let xid = self.sessions.session(sid).xid;
        if xid.is_none() {
            // A read-only transaction has nothing to make durable.
            self.end_txn(k, sid);
            return;
        }
        let scn = k.next_scn();
        self.txns.commit(xid, scn);
        let rba = redo.append(k, RedoRecord::commit(scn, xid, 100));
        // Fast commit cleanout of the blocks still held here.
        // Emptied, not dropped: the next transaction reuses its allocation.
        let mut touched = std::mem::take(&mut self.sessions.session_mut(sid).touched);
        for &blk in &touched {
            if let Some(id) = cache.current(blk) {
                cache.get_mut(id).image.clean_out(xid, scn);
            }
        }
        touched.clear();
        self.sessions.session_mut(sid).touched = touched;
        record(k, obs, Observation::Commit { xid, scn });
        self.wake_tx_waiters(k, obs, &mut net, xid, scn);
        k.incr(Stat::RedoSynchWrites);
        if redo.request_flush(k, rba, Some(FlushWaiter::Session(sid))) {
            record(k, obs, Observation::Acknowledged { xid });
            self.end_txn(k, sid);
        } else {
            self.begin_wait(k, sid, Wait::LogFileSync, SessionState::WaitCommit);
        }
    }

    /// `xid` committed at `scn`: local sessions waiting on it go on, other
    /// instances waiting on it are told (through its TX enqueue's master
    /// when the GES asked for it, `TxStatus` for a lookup that waits).
    fn wake_tx_waiters(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        net: &mut Net,
        xid: Xid,
        scn: Scn,
    ) {
        for waiter in self.txns.take_waiters(xid) {
            match waiter {
                TxWaiter::Session(other) => {
                    if self.sessions.session(other).st == SessionState::WaitTx {
                        self.rows.end(other);
                        self.end_wait(k, obs, other, None);
                        self.set_ready(k, other);
                    }
                }
                TxWaiter::Remote(inst, token) => net.send(
                    k,
                    inst,
                    Msg::TxStatus {
                        xid,
                        token,
                        report: TxReport::Committed(scn),
                    },
                ),
                TxWaiter::Ges => self.rows.give_back(xid, TxEnd::Committed(scn)),
            }
        }
    }

    /// LGWR wrote the commit record.
    pub(in crate::instance) fn session_flushed(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        sid: u32,
    ) {
        if self.sessions.session(sid).st != SessionState::WaitCommit {
            return;
        }
        if let Some(since) = self.sessions.waiting_since(sid) {
            k.add(Stat::RedoSynchTime, k.now() - since);
        }
        let xid = self.sessions.session(sid).xid;
        record(k, obs, Observation::Acknowledged { xid });
        self.end_wait(k, obs, sid, None);
        self.end_txn(k, sid);
    }

    /// The transaction is over: think before the next one.
    fn end_txn(&mut self, k: &mut Kernel, sid: u32) {
        let w = self.sessions.session(sid).workload;
        let think = self.workloads.spec(w).think_time;
        let s = self.sessions.session_mut(sid);
        s.in_txn = false;
        s.xid = Xid::NONE;
        s.cur = ExecPoint::None;
        s.execs_left = 0;
        s.iterations += 1;
        s.hints.clear();
        let jitter = if think > 0 {
            (unit(k.rng()) * think as f64) as Nanos
        } else {
            0
        };
        self.think(k, sid, think / 2 + jitter);
    }

    /// Session `sid` waits until transaction `holder` ends (a row lock or an
    /// index piece): behind it here when it is this instance's; on its TX
    /// enqueue when its owner is another member (the dispatcher asks the
    /// GES); for recovery's word (the lookup's token) when its owner is no
    /// longer a member. LMD's deadlock scan is armed if it is not.
    #[must_use]
    pub(in crate::instance) fn wait_for_tx(
        &mut self,
        k: &mut Kernel,
        net: Net,
        sid: u32,
        holder: Xid,
    ) -> RowLockWait {
        self.begin_wait(k, sid, Wait::EnqTxRowLockContention, SessionState::WaitTx);
        let (wait, via) = if holder.inst() == k.id() {
            self.txns.wait_for_end(holder, TxWaiter::Session(sid));
            (RowLockWait::Local, Via::Local)
        } else if net.is_member(holder.inst()) {
            (RowLockWait::Ges(ResName::tx(holder)), Via::Ges)
        } else {
            let token = self.sessions.start_lookup(sid, k.scn(), holder, true);
            self.sessions.session_mut(sid).pending_lookups = 1;
            (RowLockWait::Recovery(token), Via::Recovery)
        };
        let abandonable = matches!(
            self.sessions.session(sid).cur,
            ExecPoint::Table {
                purpose: Purpose::Update,
                ..
            }
        );
        let dd_ns = dd_interval_ns(k);
        if let Some(at) = self
            .rows
            .begin(sid, holder, k.now(), dd_ns, abandonable, via)
        {
            k.arm(at - k.now(), Timer::DeadlockScan(at));
        }
        wait
    }

    /// A row lock wait on another member's transaction: its TX enqueue was
    /// granted (`lvb`: how the transaction ended). The session goes on and
    /// looks at the row again; the enqueue is given back at once.
    pub(in crate::instance) fn tx_enqueue_granted(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        sid: u32,
        res: ResName,
        lvb: Lvb,
    ) {
        let Some(xid) = res.xid() else {
            return;
        };
        match lvb.as_tx_end() {
            Some(TxEnd::Committed(scn)) => self.txns.learn_commit(xid, scn),
            // Recovery rolled it back: what it changed is undone where it is met.
            Some(TxEnd::RolledBack) => {}
            None => k.error(&format!(
                "TX enqueue of {xid} granted without how the transaction ended"
            )),
        }
        let waited = self.rows.end(sid);
        debug_assert!(waited.is_none_or(|w| w.holder == xid && w.via == Via::Ges));
        if self.sessions.session(sid).st == SessionState::WaitTx {
            self.end_session_wait(k, obs, sid);
        }
    }

    /// The owner of a transaction another member waits for died: the
    /// session waits for recovery's word instead, as a lookup (which the
    /// reconfiguration asks of recovery with the others).
    pub(in crate::instance) fn row_wait_for_recovery(&mut self, k: &Kernel, sid: u32) {
        let Some(&w) = self.rows.wait_of(sid) else {
            return;
        };
        if self.sessions.session(sid).st != SessionState::WaitTx {
            return;
        }
        let _token = self.sessions.start_lookup(sid, k.scn(), w.holder, true);
        self.sessions.session_mut(sid).pending_lookups = 1;
        self.rows.via_recovery(sid);
    }

    /// The GES asks this instance, the owner of `xid`, for its TX enqueue:
    /// how the transaction ended, or `None` while it runs (it is given back
    /// when it ends: [`RowLocks::take_given_back`]).
    pub(in crate::instance) fn tx_owner_asked(&mut self, xid: Xid) -> Option<TxEnd> {
        match self.txns.state(xid) {
            TxState::Committed(scn) => Some(TxEnd::Committed(scn)),
            TxState::Active if self.txns.began(xid) => {
                self.txns.wait_for_end(xid, TxWaiter::Ges);
                None
            }
            // An earlier life's transaction (recovery rolled it back), or
            // one a peer named that never began: nothing to wait for, and
            // nothing kept for it.
            TxState::Active | TxState::Unknown => Some(TxEnd::RolledBack),
        }
    }

    /// The session of this instance running transaction `xid`, if any.
    pub(in crate::instance) fn txn_session(&self, xid: Xid) -> Option<u32> {
        if xid.is_none() {
            return None;
        }
        self.sessions
            .ids()
            .find(|&sid| self.sessions.session(sid).xid == xid)
    }

    /// The transaction session `sid` runs (`Xid::NONE` before its first change).
    pub(in crate::instance) fn xid_of(&self, sid: u32) -> Xid {
        self.sessions.session(sid).xid
    }

    /// ORA-00060: session `sid`'s statement is rolled back, the victim of a
    /// deadlock. Only a row update that has not changed its row yet is
    /// chosen, so nothing is undone: the execution ends, and the
    /// transaction goes on with its next one, or runs this one again, as
    /// the workload says. Returns the wait it was in.
    pub(in crate::instance) fn deadlock_victim(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        sid: u32,
    ) -> Option<RowWait> {
        // The confirmation checked the wait against this instance's record;
        // a wait for recovery's word is never part of a cycle.
        let w = *self.rows.wait_of(sid)?;
        if !w.abandonable
            || w.via == Via::Recovery
            || self.sessions.session(sid).st != SessionState::WaitTx
        {
            return None;
        }
        self.rows.end(sid);
        if w.via == Via::Local {
            self.txns.cancel_wait(w.holder, sid);
        }
        k.incr(Stat::EnqueueDeadlocks);
        k.add(Stat::DeadlockDetectionTime, k.now() - w.since);
        self.end_wait(k, obs, sid, None);
        let workload = self.sessions.session(sid).workload;
        let retry = self.workloads.spec(workload).row_locks.on_deadlock == OnDeadlock::Retry;
        let s = self.sessions.session_mut(sid);
        if retry && let ExecPoint::Table { table, key, .. } = s.cur {
            // The same row again, as the next execution of the statement.
            if let Some((_, keys)) = s.update_keys.iter_mut().find(|(t, _)| *t == table) {
                keys.push(key);
                s.execs_left += 1;
            }
        }
        self.sessions.go_to(sid, ExecPoint::None);
        self.set_ready(k, sid);
        Some(w)
    }

    /// Ask the owners of transactions whose state a CR build needs. The
    /// lookups of transactions of instances no longer members come back,
    /// to be asked of recovery once the session waits for them.
    pub(in crate::instance) fn look_up(
        &mut self,
        k: &mut Kernel,
        mut net: Net,
        sid: u32,
        xids: Vec<Xid>,
    ) -> (Acquired, Vec<u64>) {
        let mut asked = 0;
        let mut dead = Vec::new();
        for x in xids {
            if x.inst() == k.id() || x.inst().0 >= k.instance_count() {
                continue;
            }
            let token = self.sessions.start_lookup(sid, k.scn(), x, false);
            asked += 1;
            if net.is_member(x.inst()) {
                net.send(k, x.inst(), Msg::TxQuery { xid: x, token });
            } else {
                dead.push(token);
            }
        }
        if asked == 0 {
            // Nothing could be asked (a transaction of a non-existent instance): read on.
            return (Acquired::Restart, dead);
        }
        self.sessions.session_mut(sid).pending_lookups = asked;
        self.begin_wait(k, sid, Wait::GcCrBlock2Way, SessionState::WaitTx);
        (Acquired::Waiting, dead)
    }

    /// Another instance answered a lookup (or a row lock wait) about one of
    /// its transactions. An answer to a question this session has no longer
    /// pending is the peer's protocol error, not this instance's.
    pub(in crate::instance) fn on_tx_status(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        xid: Xid,
        token: u64,
        report: TxReport,
    ) {
        let Some((sid, asked_at)) = self.sessions.end_lookup(token) else {
            return;
        };
        // A row lock wait for a dead instance's transaction ends with the answer.
        if self
            .rows
            .wait_of(sid)
            .is_some_and(|w| w.via == Via::Recovery)
        {
            self.rows.end(sid);
        }
        if self.sessions.session(sid).pending_lookups == 0 {
            k.error(&format!(
                "answer {token} about transaction {xid} for session {sid}, which asked nothing"
            ));
            return;
        }
        match report {
            TxReport::Committed(scn) => self.txns.learn_commit(xid, scn),
            TxReport::Active => self.sessions.session_mut(sid).hints.push((xid, asked_at)),
        }
        let s = self.sessions.session_mut(sid);
        s.pending_lookups -= 1;
        if s.pending_lookups == 0 && s.st == SessionState::WaitTx {
            self.end_wait(k, obs, sid, None);
            self.set_ready(k, sid);
        }
    }

    /// Make `change` to the current buffer `buf` under `xid` at `scn`, and
    /// log it as `bytes` of redo. False, with nothing done, when the change
    /// does not fit the block.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn change_block(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        buf: BufId,
        change: Change,
        xid: Xid,
        scn: Scn,
        bytes: u32,
    ) -> bool {
        if !cache.get_mut(buf).image.apply(&change, xid, scn) {
            return false;
        }
        self.log_change(k, cache, redo, buf, change, xid, scn, bytes);
        true
    }

    /// Log a change already made to `buf` (see [`Foregrounds::change_block`]).
    /// A change of this instance's own transaction tells the transaction
    /// table where its redo begins.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn log_change(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        buf: BufId,
        change: Change,
        xid: Xid,
        scn: Scn,
        bytes: u32,
    ) {
        let blk = cache.get(buf).blk;
        let rba = redo.append(k, RedoRecord::change(scn, xid, blk, bytes, change));
        if xid.inst() == k.id() && !xid.is_none() {
            self.txns
                .changed_at(xid, rba.saturating_sub(u64::from(bytes)));
        }
        dirtied(k, cache, buf, rba, bytes);
    }

    /// Delayed block cleanout of a buffer with what this instance knows.
    pub(in crate::instance) fn clean_out(&self, cache: &mut Cache, buf: BufId) {
        cache
            .get_mut(buf)
            .image
            .clean_out_known(&|x| self.txns.state(x));
    }

    /// On-demand rollback of `xid`'s changes in current buffer `buf`, when
    /// it is a dead instance's uncommitted transaction. True when anything
    /// was rolled back (then look at the block again).
    pub(in crate::instance) fn roll_back_dead(
        &self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &Redo,
        buf: BufId,
        xid: Xid,
    ) -> bool {
        if !self.txns.is_dead_uncommitted(xid) {
            return false;
        }
        roll_back_dead(k, cache, redo.end_rba(), buf, xid)
    }
}

/// Mark a current buffer changed by the `bytes` of redo that end at `rba`.
fn dirtied(k: &mut Kernel, cache: &mut Cache, buf: BufId, rba: u64, bytes: u32) {
    // A change clears the block's fairness counter.
    if cache.dirtied(buf, rba, k.now()) {
        k.incr(Stat::GcCrFairnessClears);
    }
    if cache.get(buf).first_rba().is_none() {
        cache.set_first_rba(buf, Some(rba - u64::from(bytes)));
    }
    // What is not on disk begins no later than the change just made.
    debug_assert!(
        cache.get(buf).first_rba().is_some_and(|first| first <= rba),
        "{} changed at RBA {rba} while its first change not on disk is later",
        cache.get(buf).blk
    );
    k.incr(Stat::DbBlockChanges);
}
