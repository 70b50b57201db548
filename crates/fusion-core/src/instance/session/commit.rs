//! A session's transaction: its xid (taken at the first change), the blocks
//! it changed, its commit (`log file sync` until LGWR has written the commit
//! record), and waiting for other transactions: on a row lock
//! (`enq: TX - row lock contention`), or for another instance to say whether
//! one of its transactions has committed (a CR build needs to know).
//! Recursive transactions (splits, segment headers, `update seq$`) commit at
//! once, without a session wait.

use super::super::Instance;
use super::super::execution::ExecPoint;
use super::super::observe::Observation;
use super::super::redo::FlushWaiter;
use super::TxWaiter;
use super::access::Acquired;
use super::state::{AfterCpu, SessionState};
use super::workload::unit;
use crate::config::Nanos;
use crate::msg::{Msg, RedoRecord, TxReport};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Scn, Xid};

impl Instance {
    /// The transaction of session `sid`, begun at its first change.
    pub(in crate::instance) fn session_xid(&mut self, sid: u32) -> Xid {
        let x = self.fg.sessions.session(sid).xid;
        if !x.is_none() {
            return x;
        }
        let x = self.fg.txns.begin();
        self.fg.sessions.session_mut(sid).xid = x;
        x
    }

    /// Session `sid` changed `blk`: remember it, and retire the CR copies that
    /// predate the change (they would hide it from the session itself).
    pub(in crate::instance) fn touch_block(&mut self, sid: u32, blk: BlockAddr) {
        let xid = self.fg.sessions.session(sid).xid;
        self.cache.forget_private(blk, xid);
        let t = &mut self.fg.sessions.session_mut(sid).touched;
        if !t.contains(&blk) {
            t.push(blk);
        }
    }

    /// A recursive transaction: changes that commit at once, independently of the session's.
    pub(in crate::instance) fn recursive_txn(&mut self) -> (Xid, Scn) {
        let xid = self.fg.txns.begin();
        let scn = self.next_scn();
        (xid, scn)
    }

    /// Commit a recursive transaction; returns the commit record's redo address.
    pub(in crate::instance) fn commit_recursive(&mut self, xid: Xid, blocks: &[BlockAddr]) -> u64 {
        let scn = self.next_scn();
        self.fg.txns.commit(xid, scn);
        for &blk in blocks {
            if let Some(id) = self.cache.current(blk) {
                self.cache.get_mut(id).image.clean_out(xid, scn);
            }
        }
        self.redo(RedoRecord::commit(scn, xid, 100))
    }

    /// The transaction ends: the commit call's CPU first.
    pub(super) fn commit(&mut self, sid: u32) -> bool {
        self.stmt_close(sid);
        let s = self.fg.sessions.session_mut(sid);
        s.st = SessionState::Cpu(AfterCpu::Commit);
        let proc = s.proc;
        self.cpu(proc, self.k.costs().commit);
        false
    }

    /// The commit call ran: commit, clean out, wake the waiters, and wait for LGWR.
    pub(super) fn commit_done(&mut self, sid: u32) {
        self.k.incr(Stat::UserCommits);
        let xid = self.fg.sessions.session(sid).xid;
        if xid.is_none() {
            // A read-only transaction has nothing to make durable.
            self.end_txn(sid);
            return;
        }
        let scn = self.next_scn();
        self.fg.txns.commit(xid, scn);
        let rba = self.redo(RedoRecord::commit(scn, xid, 100));
        // Fast commit cleanout of the blocks still held here.
        // Emptied, not dropped: the next transaction reuses its allocation.
        let mut touched = std::mem::take(&mut self.fg.sessions.session_mut(sid).touched);
        for &blk in &touched {
            if let Some(id) = self.cache.current(blk) {
                self.cache.get_mut(id).image.clean_out(xid, scn);
            }
        }
        touched.clear();
        self.fg.sessions.session_mut(sid).touched = touched;
        self.record(Observation::Commit { xid, scn });
        self.wake_tx_waiters(xid, scn);
        self.k.incr(Stat::RedoSynchWrites);
        if self.request_flush(rba, Some(FlushWaiter::Session(sid))) {
            self.record(Observation::Acknowledged { xid });
            self.end_txn(sid);
        } else {
            self.begin_wait(sid, Wait::LogFileSync, SessionState::WaitCommit);
        }
    }

    /// `xid` committed at `scn`: local sessions waiting on it go on, other
    /// instances waiting on it are told.
    fn wake_tx_waiters(&mut self, xid: Xid, scn: Scn) {
        for waiter in self.fg.txns.take_waiters(xid) {
            match waiter {
                TxWaiter::Session(other) => {
                    if self.fg.sessions.session(other).st == SessionState::WaitTx {
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

    /// LGWR wrote the commit record.
    pub(in crate::instance) fn session_flushed(&mut self, sid: u32) {
        if self.fg.sessions.session(sid).st != SessionState::WaitCommit {
            return;
        }
        if let Some(since) = self.fg.sessions.waiting_since(sid) {
            self.k.add(Stat::RedoSynchTime, self.k.now() - since);
        }
        let xid = self.fg.sessions.session(sid).xid;
        self.record(Observation::Acknowledged { xid });
        self.end_wait(sid, None);
        self.end_txn(sid);
    }

    /// The transaction is over: think before the next one.
    fn end_txn(&mut self, sid: u32) {
        let w = self.fg.sessions.session(sid).workload;
        let think = self.fg.workloads.spec(w).think_time;
        let s = self.fg.sessions.session_mut(sid);
        s.in_txn = false;
        s.xid = Xid::NONE;
        s.cur = ExecPoint::None;
        s.execs_left = 0;
        s.iterations += 1;
        s.hints.clear();
        let jitter = if think > 0 {
            (unit(self.k.rng()) * think as f64) as Nanos
        } else {
            0
        };
        self.think(sid, think / 2 + jitter);
    }

    /// Session `sid` waits until transaction `holder` ends (a row lock or an index piece).
    pub(in crate::instance) fn wait_for_tx(&mut self, sid: u32, holder: Xid) {
        self.begin_wait(sid, Wait::EnqTxRowLockContention, SessionState::WaitTx);
        if holder.inst() == self.id {
            self.fg.txns.wait_for_end(holder, TxWaiter::Session(sid));
        } else {
            let token = self
                .fg
                .sessions
                .start_lookup(sid, self.k.scn(), holder, true);
            self.fg.sessions.session_mut(sid).pending_lookups = 1;
            if self.membership.is_member(holder.inst()) {
                self.send(holder.inst(), Msg::TxWait { xid: holder, token });
            } else {
                self.ask_dead(token);
            }
        }
    }

    /// Ask the owners of transactions whose state a CR build needs.
    pub(super) fn look_up(&mut self, sid: u32, xids: Vec<Xid>) -> Acquired {
        let mut asked = 0;
        for x in xids {
            if x.inst() == self.id || x.inst().0 >= self.k.instance_count() {
                continue;
            }
            let token = self.fg.sessions.start_lookup(sid, self.k.scn(), x, false);
            asked += 1;
            if self.membership.is_member(x.inst()) {
                self.send(x.inst(), Msg::TxQuery { xid: x, token });
            } else {
                self.ask_dead(token);
            }
        }
        if asked == 0 {
            // Nothing could be asked (a transaction of a non-existent instance): read on.
            return Acquired::Restart;
        }
        self.fg.sessions.session_mut(sid).pending_lookups = asked;
        self.begin_wait(sid, Wait::GcCrBlock2Way, SessionState::WaitTx);
        Acquired::Waiting
    }

    /// Another instance answered a lookup (or a row lock wait) about one of its transactions.
    pub(in crate::instance) fn on_tx_status(&mut self, xid: Xid, token: u64, report: TxReport) {
        let Some((sid, asked_at)) = self.fg.sessions.end_lookup(token) else {
            return;
        };
        match report {
            TxReport::Committed(scn) => self.fg.txns.learn_commit(xid, scn),
            TxReport::Active => self
                .fg
                .sessions
                .session_mut(sid)
                .hints
                .push((xid, asked_at)),
        }
        let s = self.fg.sessions.session_mut(sid);
        // A session waits until every question it asked is answered, and a
        // token is answered once: an answer always has a question pending.
        assert!(
            s.pending_lookups > 0,
            "{}: answer {token} for session {sid}, which asked nothing",
            self.id
        );
        s.pending_lookups -= 1;
        if s.pending_lookups == 0 && s.st == SessionState::WaitTx {
            self.end_wait(sid, None);
            self.set_ready(sid);
        }
    }
}
