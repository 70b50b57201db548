//! The dispatcher: where one subsystem's step needs another's, it applies
//! what the first answered, in the order the work happens. The subsystems'
//! own methods take the kernel and what they read of the others; the steps
//! here sequence them, as methods of [`Dispatch`]: the kernel and the
//! subsystems, which the instance holds and routes each input to
//! (`mod.rs`). Maintenance is not among them: the compiler keeps it out
//! of every step.

mod directory;
mod driver;
mod drm;
mod insert;
mod reconfig;
mod views;
mod visit;

use super::cache::Cache;
use super::events::IoPurpose;
use super::events::Timer;
use super::execution::{ExecPoint, Purpose};
use super::gc::GlobalCache;
use super::gc::ges_route::{GesEffect, GesStep};
use super::kernel::Kernel;
use super::membership::Membership;
use super::membership::Verdict;
use super::observe::Observer;
use super::px::PxState;
use super::px::{PS, PxEffect, PxStep, QcStep};
use super::redo::FlushWaiter;
use super::redo::Redo;
use super::session::Foregrounds;
use super::session::{Acquired, AfterCpu, SessionState};
use crate::block::Block;
use crate::config::Nanos;
use crate::cpu::{ProcId, StepDone};
use crate::msg::{Envelope, Io, LockMode, Lvb, Msg, ReqKind, ResName};
use crate::px::{PxMsg, QueryRef};
use crate::stats::Wait;
use crate::types::{BlockAddr, InstId, InstSet, Scn, Xid};
use crate::voting::Vote;

/// The kernel and every subsystem but maintenance (RMAN, the CPU hogs,
/// which ask nothing of the others): what the dispatcher's steps, its
/// methods, sequence. The instance holds it beside maintenance and the
/// driver's API, so no step here can reach maintenance. Owned, not
/// borrowed: a step reads a part at a fixed offset, as the instance's own
/// methods did (borrowed for each input, the transfer run took 6 % more
/// instructions).
pub(super) struct Dispatch {
    id: InstId,
    /// The services every part shares (kernel/).
    k: Kernel,
    cache: Cache,
    /// Directory, LMS, masters, GES (gc/).
    gc: GlobalCache,
    /// LGWR, DBWR and its slaves, past-image writes (redo/).
    redo: Redo,
    /// Sessions, transactions, inserts, sequences, workloads (session/).
    fg: Foregrounds,
    /// Parallel execution: PX servers, hosted slaves, coordinated statements.
    px: PxState,
    /// CSS, reconfiguration, SMON, links (membership/).
    membership: Membership,
    /// The checkers' history, the alert log, the trace (observe/).
    obs: Observer,
}

impl Dispatch {
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

    /// The less common steps of [`Dispatch::drive`]; true when the session goes on at once.
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
    #[inline]
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

    // ----- the foregrounds' waits (for the steps that still call them here) -------------

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

    // ----- what every step uses ----------------------------------------------------

    /// Every process stops; what was only in memory (the buffer cache, the
    /// undo in it) is gone, what was written is in the store.
    pub(super) fn stop(&mut self, why: String) {
        self.membership.halt(why);
        self.k.stop();
        self.cache = Cache::new(self.cache.capacity(), self.k.layout().total_blocks);
    }

    /// The master of a block now (see gc/masters.rs).
    fn block_master(&self, blk: BlockAddr) -> InstId {
        self.gc.block_master(self.k.layout(), blk)
    }

    /// The master of a global enqueue resource now.
    fn enqueue_master(&self, res: crate::msg::ResName) -> InstId {
        self.gc.enqueue_master(self.k.layout(), res)
    }

    fn observe_scn(&mut self, scn: Scn) {
        self.k.observe_scn(scn);
    }

    #[inline(always)]
    fn send(&mut self, to: InstId, msg: Msg) {
        self.membership.net().send(&mut self.k, to, msg);
    }

    #[inline(always)]
    fn start_io(&mut self, io: Io, purpose: IoPurpose) {
        self.k.start_io(io, purpose);
    }

    #[inline(always)]
    fn arm(&mut self, delay: Nanos, timer: Timer) {
        self.k.arm(delay, timer);
    }

    #[inline(always)]
    fn cpu(&mut self, proc: ProcId, demand: Nanos) {
        self.k.cpu(proc, demand);
    }

    /// A message of this incarnation, for the part of the instance it is about.
    pub(super) fn on_message(&mut self, env: Envelope) {
        let from = env.from;
        if let Some(res) = env.msg.enqueue()
            && res
                .xid()
                .is_some_and(|x| x.is_none() || x.inst().0 >= self.k.instance_count())
        {
            self.error(format!("{from} named a TX enqueue of no instance: {res:?}"));
            return;
        }
        match env.msg {
            // Replies to this instance's own requests are handled at once by the
            // receiving foreground; requests for others go through an LMS.
            Msg::Ship(ship) => self.on_ship(from, env.sent_at, env.scn, ship),
            Msg::Grant { req, grant } => self.on_grant(from, env.sent_at, req, grant),
            Msg::TxStatus { xid, token, report } => {
                self.fg
                    .on_tx_status(&mut self.k, &mut self.obs, xid, token, report)
            }
            // Global enqueues are LMD's work, not LMS's; it is not charged CPU here.
            Msg::EnqConvert { res, mode, token } => {
                if self.enqueue_master(res) == self.id {
                    self.ges_master_convert(from, res, mode, token);
                } else {
                    self.error(format!("{from} asked a non-master for {res:?}"));
                }
            }
            Msg::EnqDown { res, mode, lvb } => self.ges_master_down(from, res, mode, lvb),
            Msg::EnqGrant {
                res,
                mode,
                token,
                lvb,
            } => self.on_enq_grant(res, mode, token, lvb),
            Msg::EnqBast { res, .. } => self.on_enq_bast(res),
            Msg::Px(m) => self.on_px(from, m),
            // Reconfiguration and recovery: LMON's and SMON's, not LMS's.
            Msg::Promote { blk } => self.on_promote(blk),
            Msg::RecoverBlock { blk } => self.dir_recover(from, blk),
            Msg::SendPi { blk, to } => self.send_pi(blk, to),
            Msg::RecoverImage { blk, source } => self.on_recover_image(blk, source),
            Msg::BlockRecovered { blk, scn } => self.dir_block_recovered(from, blk, scn),
            Msg::ThreadsRecovered { threads } => {
                self.membership.recovered(threads);
                self.roll_back_dead_in_cache();
            }
            // Dynamic remastering and deadlock searches: LMD's.
            msg @ Msg::Drm(_) => self.on_drm(from, msg),
            Msg::Deadlock(m) => self.on_deadlock(from, *m),
            msg => self.lms_enqueue(from, env.sent_at, msg),
        }
    }

    /// Record a problem with a peer's message or an I/O (reported by the
    /// driver, never panicked on). Kept up to [`ERRORS_MAX`]: a peer that
    /// sends garbage for ever must not grow the instance without bound.
    pub(super) fn error(&mut self, problem: String) {
        self.k.error(&problem);
    }

    // ----- transactions ---------------------------------------------------------------

    /// What this instance knows about a transaction right now.
    pub(super) fn tx_state(&self, xid: Xid) -> crate::block::TxState {
        self.fg.txns().state(xid)
    }
}
