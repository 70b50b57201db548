//! The dispatcher: where one subsystem's step needs another's, the
//! instance applies what the first answered, in the order the work
//! happens. The subsystems' own methods take the kernel and what they read
//! of the others; the steps here sequence them.

use super::Instance;
use super::cache::BufId;
use super::membership::Verdict;
use super::redo::FlushWaiter;
use crate::block::Change;
use crate::config::Nanos;
use crate::msg::{Msg, RedoRecord};
use crate::types::{BlockAddr, InstId, InstSet, Scn, Xid};
use crate::voting::Vote;

impl Instance {
    // ----- redo ---------------------------------------------------------------------------

    /// Make `change` to the current buffer `buf` under `xid` at `scn`, and
    /// log it as `bytes` of redo. False, with nothing done, when the change
    /// does not fit the block.
    pub(super) fn change_block(
        &mut self,
        buf: BufId,
        change: Change,
        xid: Xid,
        scn: Scn,
        bytes: u32,
    ) -> bool {
        if !self.cache.get_mut(buf).image.apply(&change, xid, scn) {
            return false;
        }
        self.log_change(buf, change, xid, scn, bytes);
        true
    }

    /// Log a change already made to `buf` (see [`Instance::change_block`]).
    pub(super) fn log_change(
        &mut self,
        buf: BufId,
        change: Change,
        xid: Xid,
        scn: Scn,
        bytes: u32,
    ) {
        let blk = self.cache.get(buf).blk;
        let rba = self.redo(RedoRecord::change(scn, xid, blk, bytes, change));
        super::redo::dirtied(&mut self.k, &mut self.cache, buf, rba, bytes);
    }

    /// Append one redo record; returns the address a flush must reach to
    /// cover it. A change of this instance's own transaction tells the
    /// transaction table where its redo begins.
    pub(super) fn redo(&mut self, record: RedoRecord) -> u64 {
        let (xid, bytes, change) = (record.xid, record.bytes, record.change.is_some());
        let rba = self.redo.append(&mut self.k, record);
        if change && xid.inst() == self.id && !xid.is_none() {
            self.fg
                .txns_mut()
                .changed_at(xid, rba.saturating_sub(u64::from(bytes)));
        }
        rba
    }

    /// Make sure redo up to `rba` gets written; `waiter` is told when it is.
    /// Returns true when it already is on disk (nobody is queued then).
    #[inline]
    pub(super) fn request_flush(&mut self, rba: u64, waiter: Option<FlushWaiter>) -> bool {
        self.redo.request_flush(&mut self.k, rba, waiter)
    }

    /// LGWR got its CPU.
    pub(super) fn lgwr_step_done(&mut self) {
        let oldest_active = self.fg.txns().oldest_active_rba();
        self.redo
            .lgwr_step_done(&mut self.k, &mut self.membership.net(), oldest_active);
    }

    /// LGWR's write is on disk: its waiters are woken in the order they asked.
    pub(super) fn on_redo_written(&mut self, upto: u64, started: Nanos) {
        self.redo
            .redo_written(&mut self.k, &mut self.obs, upto, started);
        let mut dbwr_waited = false;
        while let Some(waiter) = self.redo.next_released() {
            match waiter {
                FlushWaiter::Session(s) => self.session_flushed(s),
                FlushWaiter::Lms(worker, job) => self.lms_flushed(worker, job),
                FlushWaiter::Dbwr => dbwr_waited = true,
            }
        }
        if dbwr_waited && self.redo.checkpointing() {
            // The redo a checkpoint's buffers waited for is on disk.
            self.dbwr_pass(false);
        }
        self.redo.resume_lgwr(&mut self.k);
    }

    /// An instance acknowledged broadcast `seq` (LMS passes it on).
    pub(super) fn on_scn_ack(&mut self, seq: u64) {
        self.redo.scn_ack(&mut self.k, seq);
        while let Some(s) = self.redo.next_acked() {
            self.session_flushed(s);
        }
    }

    /// A reconfiguration to `members`: broadcasts not acknowledged go again.
    pub(super) fn lgwr_rebroadcast(&mut self, members: InstSet) {
        self.redo
            .rebroadcast(&mut self.k, &mut self.membership.net(), members);
        while let Some(s) = self.redo.next_acked() {
            self.session_flushed(s);
        }
    }

    // ----- DBWR ---------------------------------------------------------------------------

    /// The cache is short of clean buffers: write now (once until the next tick).
    pub(super) fn dbwr_urgent(&mut self) {
        if self.redo.dbwr_urgent() {
            self.dbwr_pass(true);
        }
    }

    pub(super) fn dbwr_tick(&mut self) {
        let urgent = self.redo.dbwr_tick(&mut self.cache);
        self.dbwr_pass(urgent);
    }

    /// `ALTER SYSTEM CHECKPOINT`.
    pub(super) fn begin_checkpoint(&mut self) {
        if self
            .redo
            .begin_checkpoint(&mut self.k, &mut self.obs, &mut self.cache)
        {
            self.dbwr_pass(false);
        }
    }

    /// A DBWR pass: the candidates, the masters of past images that hold
    /// the checkpoint back asked for writes, the writers started.
    pub(super) fn dbwr_pass(&mut self, urgent: bool) {
        let mut candidates = self.redo.pass_candidates(&self.k, &self.cache, urgent);
        if let Some(below) = self.redo.mttr_bound(&self.k) {
            self.redo
                .mttr_candidates(&self.cache, below, &mut candidates);
            for blk in self.redo.pi_writes_to_ask(&self.k, &self.cache, below) {
                let master = self.block_master(blk);
                if master == self.id {
                    let me = self.id;
                    self.dir_write_request(me, blk);
                } else {
                    self.send(master, Msg::WriteRequest { blk });
                }
            }
        }
        self.redo
            .asked_write_candidates(&self.cache, &mut candidates);
        self.redo.pass(&mut self.k, &self.cache, candidates);
    }

    /// I/O slave `i` submitted its write.
    pub(super) fn dbwr_slave_step_done(&mut self, i: u8) {
        if self.redo.dbwr_slave_step_done(&mut self.k, &self.cache, i) {
            self.dbwr_pass(false);
        }
        self.redo.start_slaves(&mut self.k, &self.cache);
    }

    /// DBWR's write of `blk` as of `scn` completed; `rba` is where this
    /// instance's last change in the written image ended.
    pub(super) fn on_block_written(
        &mut self,
        blk: BlockAddr,
        scn: Scn,
        rba: u64,
        w: u8,
        started: Nanos,
    ) {
        self.redo
            .block_written(&mut self.k, &mut self.cache, blk, scn, rba);
        // Our own past images of the block are now obsolete too.
        self.discard_pi(blk, scn);
        self.redo.asked_write_done(blk);
        let master = self.block_master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_written(me, blk, scn);
        } else {
            self.send(master, Msg::Written { blk, scn });
        }
        if self
            .redo
            .writer_done(&mut self.k, &mut self.obs, &mut self.cache, w, started)
        {
            self.dbwr_pass(false);
        }
    }

    // ----- membership ---------------------------------------------------------------------

    /// A member's network heartbeat.
    pub(super) fn on_heartbeat(&mut self, from: InstId, incarnation: u32, members: InstSet) {
        let verdict = self
            .membership
            .on_heartbeat(&mut self.k, from, incarnation, members);
        self.act_on(verdict);
    }

    /// The voting file as the disk heartbeat read it.
    pub(super) fn on_votes(&mut self, votes: &[Vote]) {
        let verdict = self.membership.on_votes(&self.k, votes);
        self.act_on(verdict);
    }

    fn act_on(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Wait => {}
            Verdict::Stop(why) => self.halt(why),
            Verdict::Evict { dead, survivors } => self.evict(dead, survivors),
        }
    }

    /// The store lets the joining instance do I/O again: reconfigure with it.
    pub(super) fn on_unfenced(&mut self) {
        if let Some(members) = self.membership.on_unfenced() {
            self.evict(InstSet::default(), members);
        }
    }

    /// The store refused an I/O: this instance was fenced by the others.
    pub(super) fn on_fenced(&mut self) {
        if let Some(why) = self.membership.on_fenced() {
            self.halt(why);
        }
    }

    /// This instance stops at once, as an evicted node's reboot stops it.
    pub(super) fn halt(&mut self, why: String) {
        if self.membership.halted().is_some() {
            return;
        }
        self.membership.alert_halt(&self.k, &mut self.obs, &why);
        self.stop(why);
    }

    /// Others are dead or on the losing side (this instance's own finding,
    /// or a survivor's report of the new incarnation): evict them and reconfigure.
    pub(super) fn evict(&mut self, dead: InstSet, survivors: InstSet) {
        let (old, new) = self.membership.reconfigure(&self.k, survivors);
        self.new_incarnation(old, new, dead, survivors);
    }

    /// A member's report brought incarnation `incarnation` of `members`
    /// here first (or admitted this restarted instance): join it.
    pub(super) fn join_incarnation(&mut self, incarnation: u32, members: InstSet) {
        let (old, new, dead) = self.membership.adopt(&self.k, incarnation, members);
        self.new_incarnation(old, new, dead, members);
    }

    fn new_incarnation(&mut self, old: u32, new: u32, dead: InstSet, survivors: InstSet) {
        // The departed masters' resources move to the survivors.
        self.gc.set_members(survivors);
        self.alert_reconfiguration(old, new, dead);
        self.membership.fence(&mut self.k, dead);
        self.begin_reconfig(dead);
    }
}
