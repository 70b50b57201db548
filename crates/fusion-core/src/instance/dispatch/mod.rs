//! The dispatcher: where one subsystem's step needs another's, the
//! instance applies what the first answered, in the order the work
//! happens. The subsystems' own methods take the kernel and what they read
//! of the others; the steps here sequence them.

mod drm;
mod insert;
mod reconfig;
mod visit;

use super::Instance;
use super::cache::BufState;
use super::events::IoPurpose;
use super::execution::{ExecPoint, Purpose};
use super::gc::ges_route::{GesEffect, GesStep};
use super::gc::serve::{self, Holder, LmsStep};
use super::gc::{Drained, PROMOTE_REQ, Route, Source, UnexpectedAck};
use super::membership::Verdict;
use super::px::{PS, PxEffect, PxStep, QcStep};
use super::redo::FlushWaiter;
use super::session::TxWaiter;
use super::session::{Acquired, AfterCpu, SessionState};
use crate::block::Block;
use crate::config::Nanos;
use crate::cpu::StepDone;
use crate::msg::{
    GrantKind, Io, LockMode, Lvb, Mode, Msg, RecoverSource, ReqKind, Request, ResName, Shipment,
    TxReport,
};
use crate::px::{PxMsg, QueryRef};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, InstSet, Scn, Xid};
use crate::voting::Vote;

impl Instance {
    // ----- redo ---------------------------------------------------------------------------

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
                FlushWaiter::Session(s) => self.fg.session_flushed(&mut self.k, &mut self.obs, s),
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
            self.fg.session_flushed(&mut self.k, &mut self.obs, s);
        }
    }

    /// A reconfiguration to `members`: broadcasts not acknowledged go again.
    pub(super) fn lgwr_rebroadcast(&mut self, members: InstSet) {
        self.redo
            .rebroadcast(&mut self.k, &mut self.membership.net(), members);
        while let Some(s) = self.redo.next_acked() {
            self.fg.session_flushed(&mut self.k, &mut self.obs, s);
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
        self.membership
            .alert_reconfiguration(&self.k, &mut self.obs, old, new, dead);
        self.membership.fence(&mut self.k, dead);
        self.begin_reconfig(dead);
    }

    // ----- the directory (this instance as master) ---------------------------------------

    /// A block request reached its master (this instance), which is not frozen.
    pub(super) fn dir_request_now(&mut self, req: Request) {
        if let Some(route) = self.gc.dir_request(req) {
            self.follow(route);
        }
    }

    /// Carry out what the directory decided.
    fn follow(&mut self, route: Route) {
        match route {
            Route::Forward {
                holder,
                req,
                shared,
            } => {
                if holder == self.id {
                    self.lms_serve_here(req, shared);
                } else {
                    let master = self.id;
                    self.send(
                        holder,
                        Msg::Forward {
                            req,
                            master,
                            shared,
                        },
                    );
                }
            }
            Route::Grant { req, grant } => self.grant(req, grant),
            Route::HeldInX { req } => {
                // A session here asks only for what this cache lacks.
                debug_assert_ne!(
                    req.requester, self.id,
                    "{}: asked its own directory for {} it holds in X",
                    self.id, req.blk
                );
                self.error(format!(
                    "{} asked for {} (request {}) it holds in X",
                    req.requester, req.blk, req.id
                ));
            }
            Route::Invalidate {
                holders,
                blk,
                req_id,
            } => {
                for h in holders.iter() {
                    if h == self.id {
                        self.invalidate_local(h, blk, req_id);
                    } else {
                        self.send(h, Msg::Invalidate { blk, req: req_id });
                    }
                }
            }
        }
    }

    fn grant(&mut self, req: Request, grant: GrantKind) {
        if req.requester == self.id {
            self.k.incr(Stat::GcLocalGrants);
            self.on_local_grant(req, grant);
        } else {
            self.k.incr(Stat::GcRemoteGrants);
            self.send(req.requester, Msg::Grant { req, grant });
        }
    }

    pub(super) fn dir_invalidate_ack(&mut self, from: InstId, blk: BlockAddr) {
        match self.gc.dir_invalidate_ack(from, blk) {
            Ok(Some(route)) => self.follow(route),
            Ok(None) => {}
            Err(UnexpectedAck { from, blk }) => self.error(format!(
                "{from} acknowledged an invalidation of {blk} not asked of it"
            )),
        }
    }

    /// The requester installed what it was sent or granted: requests queued
    /// behind the transfer go on, one by one.
    pub(super) fn dir_installed(
        &mut self,
        from: InstId,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        prev: Option<InstId>,
        pi_kept: bool,
    ) {
        self.gc.dir_installed(from, blk, req, mode, prev, pi_kept);
        while let Drained::Route(route) = self.gc.dir_next_queued(blk) {
            self.follow(route);
        }
    }

    /// The holder a request was forwarded to no longer has the block.
    pub(super) fn dir_not_held(&mut self, from: InstId, req: Request) {
        if let Some(route) = self.gc.dir_not_held(from, req) {
            self.follow(route);
        }
    }

    /// The X holder down-converted to S for fairness: route the request again.
    pub(super) fn dir_down_converted(&mut self, from: InstId, req: Request) {
        if let Some(route) = self.gc.dir_down_converted(from, req) {
            self.follow(route);
        }
    }

    /// A holder aged its copy out.
    pub(super) fn dir_relinquish(&mut self, from: InstId, blk: BlockAddr, mode: Mode) {
        self.gc.dir_relinquish(from, blk, mode);
        // A promotion the holder could not make leaves the block free again.
        self.dir_drain(blk);
    }

    /// Route the requests queued on `blk`, one by one, while nothing is in flight.
    pub(super) fn dir_drain(&mut self, blk: BlockAddr) {
        while let Drained::Route(route) = self.gc.dir_next_queued(blk) {
            self.follow(route);
        }
    }

    /// The current holder wrote the block: past images up to `scn` are obsolete.
    pub(super) fn dir_written(&mut self, from: InstId, blk: BlockAddr, scn: Scn) {
        for h in self.gc.dir_written(blk).iter() {
            if h == self.id {
                self.discard_pi(blk, scn);
            } else if h != from {
                // The writer drops its own past images when its write completes.
                self.send(h, Msg::DiscardPi { blk, scn });
            }
        }
    }

    /// The master (here) of `blk` was asked for a write by a past image's
    /// holder, `from`: the current holder writes, and the write's discard
    /// reaches `from`.
    pub(super) fn dir_write_request(&mut self, from: InstId, blk: BlockAddr) {
        self.gc.note_pi(blk, from);
        match self.gc.writer(blk) {
            Some(h) if h == self.id => self.redo.write_current_asked(&self.cache, blk),
            Some(h) => self.send(h, Msg::WriteCurrent { blk }),
            // Nobody holds it current (or the directory is being rebuilt):
            // the holder asks again later.
            None => {}
        }
    }

    // ----- the directory's side of a reconfiguration and of recovery --------------------

    /// The master made this instance's newest past image of `blk` the
    /// current block (X): it was shipped to an instance that died, or the
    /// transfer was lost with the old incarnation.
    pub(super) fn on_promote(&mut self, blk: BlockAddr) {
        // The disk may hold a newer image than the past image: a write whose
        // `Written` was lost with the old incarnation did not discard it.
        self.start_io(Io::ReadBlock { blk }, IoPurpose::PromoteCheck { blk });
    }

    /// The disk's image of `blk` is as of `disk_scn`: promote the newest
    /// past image if it is newer, else drop the past images the disk covers
    /// and leave the block to the disk.
    pub(super) fn on_promote_checked(&mut self, blk: BlockAddr, disk_scn: crate::types::Scn) {
        let newest = self
            .cache
            .buffers_of(blk)
            .filter(|&id| self.cache.get(id).state() == BufState::Pi)
            .max_by_key(|&id| self.cache.get(id).image.scn);
        let master = self.block_master(blk);
        let me = self.id;
        match newest {
            Some(id)
                if self.cache.current(blk).is_none() && self.cache.get(id).image.scn > disk_scn =>
            {
                self.cache.set_state(id, BufState::Xcur);
                self.k.incr(crate::stats::Stat::GcsPastImagesPromoted);
                // A session's request for the block, asked again of the
                // master in this reconfiguration, queues there behind the
                // promotion: the block is here now, which answers it (the
                // master drops it on the `Installed` below).
                if let Some(owner) = self.fg.answered_by_promotion(blk) {
                    self.fg.ready_owner(&mut self.k, &mut self.obs, owner);
                }
                if master == me {
                    self.dir_installed(me, blk, PROMOTE_REQ, Mode::X, None, false);
                } else {
                    self.send(
                        master,
                        Msg::Installed {
                            blk,
                            req: PROMOTE_REQ,
                            mode: Mode::X,
                            prev_holder: None,
                            pi_kept: false,
                        },
                    );
                }
                self.wake_block(blk);
            }
            _ => {
                // Gone meanwhile, or older than the disk: the disk has it.
                self.discard_pi(blk, disk_scn);
                if master == me {
                    self.dir_relinquish(me, blk, Mode::X);
                } else {
                    self.send(master, Msg::Relinquish { blk, mode: Mode::X });
                }
            }
        }
    }

    /// The recovering instance asks where the newest image of a claimed block is.
    pub(super) fn dir_recover(&mut self, recoverer: InstId, blk: BlockAddr) {
        match self.gc.recover_source(blk) {
            Source::Current => self.recover_reply(recoverer, blk, RecoverSource::Current),
            Source::Disk => self.recover_reply(recoverer, blk, RecoverSource::Disk),
            Source::Pi(holder) if holder == self.id => self.send_pi(blk, recoverer),
            Source::Pi(holder) => self.send(holder, Msg::SendPi { blk, to: recoverer }),
        }
    }

    // ----- GES ----------------------------------------------------------------------------

    /// One step of the global enqueue service, and what it answered, applied.
    pub(super) fn ges_step(&mut self, step: impl FnOnce(&mut GesStep)) {
        let frozen = self.membership.reconfiguring();
        let mut ges = GesStep::new(&mut self.gc, &mut self.k, self.membership.net(), frozen);
        step(&mut ges);
        let effects = ges.effects();
        self.apply_ges(effects);
    }

    pub(super) fn apply_ges(&mut self, effects: Vec<GesEffect>) {
        for e in effects {
            match e {
                GesEffect::Resume(sid, res) if res.kind == crate::msg::EnqKind::Tx => {
                    self.tx_enqueue_held(sid, res)
                }
                GesEffect::Resume(sid, _) => {
                    if self
                        .fg
                        .sessions()
                        .get(sid as usize)
                        .is_some_and(|s| s.state() == SessionState::WaitEnq)
                    {
                        self.end_session_wait(sid);
                    }
                }
                GesEffect::OwnerAsked(xid) => self.tx_owner_asked(xid),
                GesEffect::Hold { res, mode, token } => {
                    self.membership.hold_convert(res, mode, token)
                }
            }
        }
    }

    /// Session `sid` wants `res` in `mode`. True when it holds it now; false
    /// when it waits (timed as `event`) and will be made ready once it does.
    pub(super) fn enq_get(&mut self, sid: u32, res: ResName, mode: LockMode, event: Wait) -> bool {
        let frozen = self.membership.reconfiguring();
        let mut ges = GesStep::new(&mut self.gc, &mut self.k, self.membership.net(), frozen);
        let held = ges.get(sid, res, mode);
        let effects = ges.effects();
        if !held {
            self.begin_wait(sid, event, SessionState::WaitEnq);
        }
        self.apply_ges(effects);
        held
    }

    /// Whether session `sid` is the local user of `res` now.
    pub(super) fn enq_holds(&self, sid: u32, res: ResName) -> bool {
        self.gc.enq_holds(sid, res)
    }

    /// The user of `res` is done with it; `lvb` replaces the value block.
    pub(super) fn enq_release(&mut self, res: ResName, lvb: Option<Lvb>) {
        self.ges_step(|g| g.release(res, lvb));
    }

    /// The master granted this instance's conversion.
    pub(super) fn on_enq_grant(&mut self, res: ResName, mode: LockMode, token: u64, lvb: Lvb) {
        self.ges_step(|g| g.granted(res, mode, token, lvb));
    }

    /// The master wants this instance's lock on `res` for someone else.
    pub(super) fn on_enq_bast(&mut self, res: ResName) {
        self.ges_step(|g| g.bast(res));
    }

    /// A conversion request reached the master (this instance).
    pub(super) fn ges_master_convert(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        token: u64,
    ) {
        self.ges_step(|g| g.master_convert(from, res, mode, token));
    }

    /// A holder down-converted.
    pub(super) fn ges_master_down(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        lvb: Option<Lvb>,
    ) {
        self.ges_step(|g| g.master_down(from, res, mode, lvb));
    }

    /// An enqueue conversion for the master here: held while frozen.
    pub(super) fn ges_convert_here(&mut self, res: ResName, mode: LockMode, token: u64) {
        self.ges_step(|g| g.convert_here(res, mode, token));
    }

    // ----- the holder's side of a transfer (gc/serve.rs) -----------------------------

    /// The holder's side of a transfer, on the parts of the instance it uses.
    #[inline(always)]
    fn holder(&mut self) -> Holder<'_, impl Fn(Xid) -> crate::block::TxState + '_> {
        let txns = self.fg.txns();
        Holder::new(
            &mut self.gc,
            &mut self.k,
            &mut self.cache,
            &mut self.redo,
            self.membership.net(),
            &mut self.obs,
            move |x: Xid| txns.state(x),
        )
    }

    /// A message for LMS arrived.
    pub(super) fn lms_enqueue(&mut self, from: InstId, sent_at: Nanos, msg: Msg) {
        self.holder().enqueue(from, sent_at, msg);
    }

    /// The master (this instance) routes a request to itself as holder: serve it next.
    pub(super) fn lms_serve_here(&mut self, req: Request, shared: bool) {
        self.holder().serve_here(req, shared);
    }

    /// An LMS worker's CPU step ended: what its job left to do is done
    /// before the worker takes its next job.
    pub(super) fn lms_step_done(&mut self, w: u8, d: StepDone) {
        let step = self.holder().step_done(w, d);
        match step {
            LmsStep::Done => {}
            LmsStep::Message { from, msg } => self.lms_message(from, msg),
            LmsStep::NotHeld(req) => {
                let me = self.id;
                self.dir_not_held(me, req);
            }
            LmsStep::DownConverted(req) => {
                let me = self.id;
                self.dir_down_converted(me, req);
            }
            LmsStep::Wake(blk) => self.wake_block(blk),
        }
        self.holder().kick(w);
    }

    /// A message LMS took, for the part of the instance it is about.
    fn lms_message(&mut self, from: InstId, msg: Msg) {
        let msg = if self.gc.drm_in_play() {
            match self.drm_screen(from, msg) {
                Some(msg) => msg,
                None => return,
            }
        } else {
            msg
        };
        match msg {
            Msg::Request(req) => self.dir_request(req),
            Msg::Installed {
                blk,
                req,
                mode,
                prev_holder,
                pi_kept,
            } => self.dir_installed(from, blk, req, mode, prev_holder, pi_kept),
            Msg::NotHeld { req } => self.dir_not_held(from, req),
            Msg::DownConverted { req } => self.dir_down_converted(from, req),
            Msg::Relinquish { blk, mode } => self.dir_relinquish(from, blk, mode),
            Msg::InvalidateAck { blk, .. } => self.dir_invalidate_ack(from, blk),
            Msg::Invalidate { blk, req } => self.invalidate_local(from, blk, req),
            Msg::Written { blk, scn } => self.dir_written(from, blk, scn),
            Msg::DiscardPi { blk, scn } => self.discard_pi(blk, scn),
            Msg::WriteRequest { blk } => self.dir_write_request(from, blk),
            Msg::WriteCurrent { blk } => self.redo.write_current_asked(&self.cache, blk),
            Msg::TxQuery { xid, token } => {
                let report = self.tx_report(xid);
                self.send(from, Msg::TxStatus { xid, token, report });
            }
            Msg::TxWait { xid, token } => match self.tx_report(xid) {
                TxReport::Active => self
                    .fg
                    .txns_mut()
                    .wait_for_end(xid, TxWaiter::Remote(from, token)),
                report => self.send(from, Msg::TxStatus { xid, token, report }),
            },
            // Broadcast on commit: the SCN was applied when the message
            // arrived (every envelope carries one); LMS acknowledges it.
            Msg::ScnBroadcast { seq } => self.send(from, Msg::ScnAck { seq }),
            Msg::ScnAck { seq } => self.on_scn_ack(seq),
            other => self.error(format!(
                "LMS got an unexpected message from {from}: {other:?}"
            )),
        }
    }

    /// What this instance tells another of a transaction now.
    fn tx_report(&self, xid: Xid) -> TxReport {
        match self.tx_state(xid) {
            crate::block::TxState::Committed(s) => TxReport::Committed(s),
            _ => TxReport::Active,
        }
    }

    /// LGWR made the redo durable: the parked LMS job can send.
    pub(super) fn lms_flushed(&mut self, w: u8, job: u64) {
        self.holder().flushed(w, job);
    }

    /// A local pin on `blk` was released: resume LMS jobs waiting for it.
    #[inline]
    pub(super) fn unpinned(&mut self, blk: BlockAddr) {
        let Some(waiting) = self.gc.lms_pin_released(blk) else {
            return;
        };
        self.holder().unpinned(waiting);
    }

    /// The block a shipment carried here (its box kept for one shipped from here).
    pub(super) fn unbox_shipped_block(&mut self, ship: Box<Shipment>) -> Block {
        self.gc.unbox_shipped_block(&self.cache, ship)
    }

    /// The master asks this instance to drop its shared copy.
    pub(super) fn invalidate_local(&mut self, master: InstId, blk: BlockAddr, req: u64) {
        let net = self.membership.net();
        if serve::invalidate_local(&mut self.k, &mut self.cache, net, master, blk, req) {
            let me = self.id;
            self.dir_invalidate_ack(me, blk);
        }
        self.wake_block(blk);
    }

    /// A write covered this instance's past images of `blk`.
    pub(super) fn discard_pi(&mut self, blk: BlockAddr, scn: Scn) {
        serve::discard_pi(&mut self.k, &mut self.cache, &self.redo, blk, scn);
    }

    // ----- moving sessions on -----------------------------------------------------------

    // Called after every event; most find nothing to run, so that check is inlined.
    #[inline]
    pub(super) fn run_ready(&mut self) {
        if !self.fg.has_ready() && !self.px.has_kicks() {
            return;
        }
        self.run_ready_slow();
    }

    #[inline(never)]
    fn run_ready_slow(&mut self) {
        loop {
            while let Some(sid) = self.fg.pop_ready() {
                if self.fg.is_ready(sid) {
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
            let Some(point) = self.fg.ready_point(sid) else {
                return;
            };
            // The common block visits stay here; the rest is out of line so
            // this loop keeps a small frame and no hoisted set-up of rare paths.
            let go_on = match *point {
                ExecPoint::Index { blk, .. } => self.visit(sid, blk, false),
                ExecPoint::Table { rowid, purpose, .. } => {
                    self.visit(sid, rowid.blk, purpose == Purpose::Update)
                }
                ExecPoint::Scan { next, .. } => self.visit(sid, BlockAddr(next), false),
                ExecPoint::IndexLeaf { blk, .. } | ExecPoint::MaintLeaf { blk, .. } => {
                    self.visit(sid, blk, true)
                }
                ExecPoint::None => self.fg.next_execution(&mut self.k, sid),
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
            ExecPoint::InsertRow { table, key } => match self.fg.insert_block(table) {
                Some(blk) => self.visit(sid, blk, true),
                None => {
                    self.fg
                        .sessions_mut()
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
            ExecPoint::None => self.fg.next_execution(&mut self.k, sid),
        }
    }

    /// A session's CPU step ended: go on with what it was for.
    pub(super) fn session_cpu_done(&mut self, sid: u32, d: StepDone) {
        let SessionState::Cpu(after) = self.fg.sessions().session(sid).state() else {
            return;
        };
        match after {
            AfterCpu::Exec => self.fg.execute_done(&self.k, sid),
            AfterCpu::Visit(buf) => self.visit_done(sid, buf),
            AfterCpu::Commit => {
                self.fg.commit_done(
                    &mut self.k,
                    &mut self.cache,
                    &mut self.redo,
                    self.membership.net(),
                    &mut self.obs,
                    sid,
                );
                self.give_back_tx_enqueues();
            }
            AfterCpu::Split => self.split_done(sid),
            AfterCpu::Px => self.px_qc_cpu_done(sid),
            AfterCpu::Memory { ops } => self.fg.memory_writes_done(&mut self.k, sid, ops, d),
        }
    }

    // ----- the foregrounds' waits (for the routing still on the instance) ----------------

    #[inline(always)]
    pub(super) fn resume(&mut self, sid: u32) {
        self.fg.resume(sid);
    }

    #[inline(always)]
    pub(super) fn begin_wait(&mut self, sid: u32, event: Wait, state: SessionState) {
        self.fg.begin_wait(&self.k, sid, event, state);
    }

    #[inline(always)]
    pub(super) fn end_wait(&mut self, sid: u32, event: Option<Wait>) {
        self.fg.end_wait(&mut self.k, &mut self.obs, sid, event);
    }

    #[inline(always)]
    pub(super) fn end_session_wait(&mut self, sid: u32) {
        self.fg.end_session_wait(&mut self.k, &mut self.obs, sid);
    }

    #[inline(always)]
    pub(super) fn wait_on_block(&mut self, sid: u32, blk: BlockAddr, event: Wait) {
        self.fg.wait_on_block(&self.k, sid, blk, event);
    }

    #[inline(always)]
    pub(super) fn wake_block(&mut self, blk: BlockAddr) {
        self.fg.wake_block(&mut self.k, &mut self.obs, blk);
    }

    /// Session `sid` asks the master for `blk`: counted for dynamic
    /// remastering and held while the block's object moves, then sent, or
    /// routed by the directory here when this instance is the master.
    #[inline]
    pub(super) fn gc_request(&mut self, sid: u32, blk: BlockAddr, kind: ReqKind, scan: bool) {
        let (k, obs, net) = (&mut self.k, &mut self.obs, self.membership.net());
        let req = self.fg.gc_request(k, obs, net, sid, blk, kind, scan);
        let Some(req) = self.drm_request(sid, req) else {
            return;
        };
        let master = self.block_master(blk);
        if master == self.id {
            self.dir_request(req);
        } else {
            self.send(master, Msg::Request(req));
        }
    }

    /// Ask the owners of transactions whose state a CR build needs (those
    /// of instances no longer members once the session waits).
    pub(super) fn look_up(&mut self, sid: u32, xids: Vec<Xid>) -> Acquired {
        let net = self.membership.net();
        let (acquired, dead) = self.fg.look_up(&mut self.k, net, sid, xids);
        for token in dead {
            self.ask_dead(token);
        }
        acquired
    }

    // ----- parallel execution ------------------------------------------------------

    /// One step of parallel execution, and what it answered, applied in order.
    fn px_step<R>(&mut self, step: impl FnOnce(&mut PxStep) -> R) -> R {
        let mut px = PxStep::new(
            &mut self.px,
            &mut self.k,
            self.membership.net(),
            &mut self.fg,
            &mut self.obs,
        );
        let answer = step(&mut px);
        let effects = px.effects();
        self.apply_px(effects);
        answer
    }

    fn apply_px(&mut self, effects: Vec<PxEffect>) {
        for e in effects {
            match e {
                PxEffect::BeginWait { sid, event } => {
                    self.begin_wait(sid, event, SessionState::WaitPx)
                }
                PxEffect::EndWait(sid) => self.end_wait(sid, None),
                PxEffect::EndPxWait(sid) => {
                    if self.fg.sessions().session(sid).state() == SessionState::WaitPx {
                        self.end_wait(sid, None);
                    }
                }
                PxEffect::Wake(sid) => self.end_session_wait(sid),
                PxEffect::Resume(sid) => self.resume(sid),
                PxEffect::ReleasePs => self.enq_release(PS, None),
                PxEffect::Continue(w) => self.px_step(|p| p.worker_next(w)),
                PxEffect::Execute { exec, insts } => self.px_step(|p| p.execute(exec, &insts)),
            }
        }
    }

    /// Drive session `sid`'s parallel statement. True when the session can go on at once.
    pub(super) fn px_qc_step(&mut self, sid: u32, qref: QueryRef) -> bool {
        match self.px_step(|p| p.qc_step(sid, qref)) {
            QcStep::GoOn => true,
            QcStep::TakePs => {
                if self.enq_get(sid, PS, LockMode::X, Wait::EnqPsContention) {
                    self.px_step(|p| p.probe(sid));
                }
                false
            }
            QcStep::Wait => false,
        }
    }

    /// The QC session's CPU step ended (merging a buffer, or its serial work).
    pub(super) fn px_qc_cpu_done(&mut self, sid: u32) {
        self.px_step(|p| p.qc_cpu_done(sid));
    }

    /// Run the PX workers that have something to do. True when any did.
    pub(super) fn px_run(&mut self) -> bool {
        let mut any = false;
        while let Some(w) = self.px.next_kick() {
            any = true;
            self.px_step(|p| p.worker_next(w));
        }
        any
    }

    /// A read of PX worker `w` completed.
    pub(super) fn px_read_done(&mut self, w: usize, seq: u64, blocks: Vec<Block>) {
        self.px_step(|p| p.read_done(w, seq, blocks));
    }

    /// A PX server's CPU step ended.
    pub(super) fn px_server_step_done(&mut self, idx: u32, d: StepDone) {
        self.px_step(|p| p.server_step_done(idx, d));
    }

    /// A PX message from another instance.
    pub(super) fn on_px(&mut self, from: InstId, m: PxMsg) {
        self.px_step(|p| p.on_message(from, m));
    }
}
