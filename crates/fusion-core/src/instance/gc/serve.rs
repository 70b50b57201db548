//! The holder's side of a transfer: what an LMS job costs, what serving a
//! forwarded request decides, and shipping the block (`Holder::ship`).
//!
//! [`Holder`] is one step of it: the global cache with what it uses of the
//! rest of the instance, borrowed for the step: the kernel, the buffer
//! cache, the redo (is the block's redo on disk; flush it), membership's
//! `Net`, the observer, and what this instance knows of a transaction. What
//! the rest must do comes back as an [`LmsStep`], applied by the dispatcher
//! before the worker takes its next job: a message LMS took, for the
//! directory or another subsystem; the master here told this instance
//! does not hold the block as forwarded; the sessions waiting on a block
//! that left woken.
//!
//! The state lives in components: the jobs in `Lms`, the buffers in `Cache`,
//! the redo in `Lgwr`; this file only moves decisions between them.

use super::super::cache::{BufId, BufState, Cache};
use super::super::kernel::Kernel;
use super::super::membership::Net;
use super::super::observe::{Hop, Observer};
use super::super::redo::{FlushWaiter, Lgwr, Redo};
use super::GlobalCache;
use super::lms::{CONGESTED_AFTER_NS, Job, QUEUE_MAX, Serve, Stage};
use crate::block::{Block, CrCopy, CrError, TxState};
use crate::config::{Costs, Nanos};
use crate::cpu::{ProcId, StepDone};
use crate::msg::{Msg, ReqKind, Request, ShipKind, Shipment};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Scn, Xid};

/// What an LMS step leaves to the rest of the instance, in the order it
/// happens: applied before the worker takes its next job.
#[derive(Debug, PartialEq)]
pub(in crate::instance) enum LmsStep {
    /// Nothing (the job was dropped, parked, or sent what it had to).
    Done,
    /// A message LMS took, its LMS time added to a request's timing: for
    /// the directory here or another part of the instance.
    Message { from: InstId, msg: Msg },
    /// The master here routes `req` again: this instance no longer holds
    /// the block as the request was forwarded for.
    NotHeld(Request),
    /// The master here routes `req` again: this instance holds the block
    /// in S only now (it down-converted for fairness).
    DownConverted(Request),
    /// The current block left this instance: the sessions waiting on it look again.
    Wake(BlockAddr),
}

/// One step of the holder's side of a transfer: the global cache and, borrowed
/// for the step, what it uses of the rest of the instance.
pub(in crate::instance) struct Holder<'a, Tx> {
    gc: &'a mut GlobalCache,
    k: &'a mut Kernel,
    cache: &'a mut Cache,
    redo: &'a mut Redo,
    net: Net<'a>,
    obs: &'a mut Observer,
    /// What this instance knows of a transaction now (its transaction table).
    tx: Tx,
}

impl<'a, Tx: Fn(Xid) -> TxState> Holder<'a, Tx> {
    pub fn new(
        gc: &'a mut GlobalCache,
        k: &'a mut Kernel,
        cache: &'a mut Cache,
        redo: &'a mut Redo,
        net: Net<'a>,
        obs: &'a mut Observer,
        tx: Tx,
    ) -> Self {
        Holder {
            gc,
            k,
            cache,
            redo,
            net,
            obs,
            tx,
        }
    }

    /// A message for LMS arrived: queued for the worker of its block.
    pub fn enqueue(&mut self, from: InstId, sent_at: Nanos, mut msg: Msg) {
        self.k.incr(Stat::GcsMsgsReceived);
        let wire = self.k.now().saturating_sub(sent_at);
        if let Msg::Request(req) | Msg::Forward { req, .. } = &mut msg {
            req.timing.request += wire;
        }
        let blk = msg.blk();
        let w = blk.map_or(0, |b| self.gc.lms.worker_for(b));
        let job = match msg {
            Msg::Forward {
                req,
                master,
                shared,
            } => Job::Serve(self.gc.spares.wrap_serve(Serve::new(req, master, shared))),
            msg => Job::Msg { from, msg },
        };
        if let Err(full) = self.gc.lms.enqueue(w, job, self.k.now()) {
            self.k.error(&format!(
                "LMS{} queue full ({} jobs): dropped a message from {from}",
                full.worker, QUEUE_MAX
            ));
            return;
        }
        self.kick(w);
    }

    /// The master (this instance) routes a request to itself as holder: serve it next.
    pub fn serve_here(&mut self, req: Request, shared: bool) {
        let w = self.gc.lms.worker_for(req.blk);
        let me = self.k.id();
        let job = Job::Serve(self.gc.spares.wrap_serve(Serve::new(req, me, shared)));
        self.gc.lms.enqueue_front(w, job, self.k.now());
        self.kick(w);
    }

    /// An idle worker takes its next job and asks for the CPU it needs.
    pub fn kick(&mut self, w: u8) {
        let Some(job) = self.gc.lms.start_next(w) else {
            return;
        };
        // Disjoint borrows: the job keeps the CR copy it builds; the rest is read.
        let view = HolderView {
            cache: self.cache,
            costs: self.k.costs(),
            lgwr: self.redo.lgwr(),
            scn: self.k.scn(),
            fairness_threshold: self.k.params().fairness_threshold,
        };
        let demand = view.job_demand(job, &self.tx);
        let proc = self.gc.lms.proc(w);
        self.k.cpu(proc, demand);
    }

    /// Worker `w`'s CPU step ended: its job, carried out as far as LMS
    /// goes. The caller applies what it answers, then kicks the worker.
    pub fn step_done(&mut self, w: u8, d: StepDone) -> LmsStep {
        let Some((job, queued)) = self.gc.lms.finish(w) else {
            return LmsStep::Done;
        };
        // A step ends after it was asked for and started, and waited
        // within that span (the run queue).
        debug_assert!(d.requested_at <= d.started_at && d.started_at <= d.done_at);
        let wait = d.started_at.saturating_sub(queued)
            + d.waited.saturating_sub(d.started_at - d.requested_at);
        let run = (d.done_at - d.requested_at).saturating_sub(d.waited);
        self.k.add(Stat::GcsMsgsProcessTime, run);
        if self.obs.tracing() {
            trace_lms_job(self.obs, self.k.now(), self.gc.lms.proc(w), &job);
        }
        match job {
            Job::Msg { from, mut msg } => {
                // The master's LMS is a serving LMS too, whether it forwards,
                // grants or serves from its own cache: the time the request
                // waited for its CPU is LMS CPU wait, not request time.
                // Routing a down-converted request again is this LMS serving
                // it, as for a request.
                if let Msg::Request(req) | Msg::DownConverted { req } = &mut msg {
                    req.timing.lms_wait += wait;
                    req.timing.lms_proc += run;
                }
                LmsStep::Message { from, msg }
            }
            Job::Serve(mut s) => {
                s.req.timing.lms_wait += wait;
                s.req.timing.lms_proc += run;
                if s.stage == Stage::Start && wait > CONGESTED_AFTER_NS {
                    s.congested = true;
                }
                self.serve(w, s, run)
            }
        }
    }

    fn serve(&mut self, w: u8, mut s: Box<Serve>, run: Nanos) -> LmsStep {
        let blk = s.req.blk;
        let Some(buf) = self.cache.current(blk) else {
            return self.not_held(s.req, s.master);
        };
        if s.stage == Stage::Send {
            return self.ship(s, buf, run);
        }
        match (s.req.kind, s.shared) {
            (ReqKind::Cr { .. }, false) => {
                if self.cache.get(buf).state() != BufState::Xcur {
                    // Down-converted for fairness after the master forwarded
                    // this here: it is served from the shared copy now.
                    return self.down_converted(s.req, s.master);
                }
                if self
                    .cache
                    .fairness_due(buf, self.k.params().fairness_threshold)
                {
                    // Enough CR copies built from a block nobody here is
                    // changing: hold it in S instead, and let readers take
                    // the shared current image and roll it back themselves.
                    self.cache.down_convert(buf);
                    self.k.incr(Stat::GcCrFairnessDownConverts);
                    return self.down_converted(s.req, s.master);
                }
                self.cache.cr_served(buf);
                let scn_now = self.cache.get(buf).image.scn;
                let built = match s.built.take() {
                    Some((scn, b)) if scn == scn_now => b,
                    _ => self.build_for(buf, &s.req),
                };
                self.k.add(
                    Stat::GcCrBlockBuildTime,
                    run.saturating_sub(self.k.costs().lms_send_ns),
                );
                if let Ok(cp) = &built
                    && cp.undo_applied > 0
                {
                    self.k.incr(Stat::GcCrBlocksBuilt);
                }
                if built.is_err() {
                    self.k.incr(Stat::GcCrLightWorks);
                }
                s.built = Some((scn_now, built));
                if self.redo.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf)
                } else {
                    let send_time = self.k.costs().lms_send_ns.min(run);
                    self.ship(s, buf, send_time)
                }
            }
            (ReqKind::Cr { .. }, true) => {
                if self.cache.get(buf).state() != BufState::Scur {
                    return self.not_held(s.req, s.master);
                }
                // A shared copy this instance down-converted may still have
                // redo in memory: the image waits for the flush, as a
                // current block does.
                if self.redo.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf)
                } else {
                    self.ship(s, buf, run)
                }
            }
            (ReqKind::Current { .. }, _) => {
                if self.cache.get(buf).pinned() {
                    let id = self.gc.lms.park(w, s, self.k.now());
                    self.gc.lms.wait_for_pin(blk, w, id);
                    return LmsStep::Done;
                }
                self.cache.set_leaving(buf, true);
                if self.redo.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf)
                } else {
                    let send_time = self.k.costs().lms_send_ns.min(run);
                    self.ship(s, buf, send_time)
                }
            }
        }
    }

    fn build_for(&self, buf: BufId, req: &Request) -> Result<CrCopy, CrError> {
        let ReqKind::Cr { snapshot, reader } = req.kind else {
            return Err(CrError::SnapshotTooOld);
        };
        self.cache
            .get(buf)
            .image
            .build_cr(snapshot, reader, self.k.scn(), &self.tx)
    }

    /// This instance holds the block in S only (it down-converted for
    /// fairness): the master routes `req` again.
    fn down_converted(&mut self, req: Request, master: InstId) -> LmsStep {
        if master == self.k.id() {
            return LmsStep::DownConverted(req);
        }
        self.net.send(self.k, master, Msg::DownConverted { req });
        LmsStep::Done
    }

    fn not_held(&mut self, req: Request, master: InstId) -> LmsStep {
        if master == self.k.id() {
            return LmsStep::NotHeld(req);
        }
        self.net.send(self.k, master, Msg::NotHeld { req });
        LmsStep::Done
    }

    fn park_for_flush(&mut self, w: u8, s: Box<Serve>, buf: BufId) -> LmsStep {
        let rba = self.cache.get(buf).last_rba;
        let id = self.gc.lms.park(w, s, self.k.now());
        let durable = self
            .redo
            .request_flush(self.k, rba, Some(FlushWaiter::Lms(w, id)));
        // Parked because the redo was still to be written: LGWR releases it.
        debug_assert!(!durable, "an LMS job parked for redo already on disk");
        LmsStep::Done
    }

    /// LGWR made the redo durable: the parked job can send.
    pub fn flushed(&mut self, w: u8, job: u64) {
        let Some((mut s, since)) = self.gc.lms.unpark(w, job) else {
            return;
        };
        let took = self.k.now() - since;
        self.k.wait(Wait::GcsLogFlushSync, took, false);
        self.obs.trace_background_wait(
            self.k.now(),
            self.gc.lms.proc(w),
            Wait::GcsLogFlushSync,
            took,
        );
        s.req.timing.flush += took;
        // Counted with its time when it completes, so an interval's average is
        // never a time without its count (or a count without its time).
        match s.req.kind {
            ReqKind::Cr { .. } => {
                self.k.incr(Stat::GcCrBlocksFlushed);
                self.k.add(Stat::GcCrBlockFlushTime, took)
            }
            ReqKind::Current { .. } => {
                self.k.incr(Stat::GcCurrentBlocksFlushed);
                self.k.add(Stat::GcCurrentBlockFlushTime, took)
            }
        }
        s.stage = Stage::Send;
        self.gc.lms.enqueue_front(w, Job::Serve(s), self.k.now());
        self.kick(w);
    }

    /// The last local pin on a block went: the LMS jobs that waited for it
    /// (`waiting`, from [`GlobalCache::lms_pin_released`]) go on.
    pub fn unpinned(&mut self, waiting: Vec<(u8, u64)>) {
        for (w, id) in waiting {
            let Some((mut s, since)) = self.gc.lms.unpark(w, id) else {
                continue;
            };
            let took = self.k.now() - since;
            s.req.timing.pin += took;
            self.k.add(Stat::GcCurrentBlockPinTime, took);
            s.stage = Stage::AfterPin;
            self.gc.lms.enqueue_front(w, Job::Serve(s), self.k.now());
            self.kick(w);
        }
    }

    /// Send the block to the requester.
    fn ship(&mut self, mut s: Box<Serve>, buf: BufId, send_time: Nanos) -> LmsStep {
        let req = s.req;
        let me = self.k.id();
        // 2-way: the request went straight to the holder (the master was the
        // requester or the holder itself); 3-way: a third instance forwarded it.
        let hops = if s.master == me || s.master == req.requester {
            2
        } else {
            3
        };
        let (kind, block, pi_kept) = match (req.kind, s.shared) {
            (ReqKind::Cr { .. }, false) => {
                self.k.incr(Stat::GcCrBlocksServed);
                self.k.add(Stat::GcCrBlockSendTime, send_time);
                match s.built.take() {
                    Some((_, Ok(cp))) => {
                        let kind = ShipKind::Cr {
                            lo: cp.lo,
                            hi: cp.hi,
                            private: cp.private_to.is_some(),
                        };
                        (kind, cp.image, false)
                    }
                    _ => (ShipKind::Raw, self.cache.get(buf).image.clone(), false),
                }
            }
            (ReqKind::Cr { .. }, true) => {
                self.k.incr(Stat::GcCrBlocksServed);
                self.k.add(Stat::GcCrBlockSendTime, send_time);
                (ShipKind::Shared, self.cache.get(buf).image.clone(), false)
            }
            (ReqKind::Current { .. }, _) => {
                self.k.incr(Stat::GcCurrentBlocksServed);
                self.k.add(Stat::GcCurrentBlockSendTime, send_time);
                let (block, pi) = self.give_up_current(buf);
                (ShipKind::Current, block, pi)
            }
        };
        let congested = s.congested;
        // Emptied of its CR copy above: kept for the next request served here.
        self.gc.spares.keep_serve(s);
        let ship = self.gc.spares.wrap_ship(Shipment {
            req,
            kind,
            block,
            pi_kept,
            hops,
            congested,
        });
        // The requester never forwards to itself: the block goes elsewhere.
        debug_assert_ne!(req.requester, me, "{me} shipped a block to itself");
        self.net.send(self.k, req.requester, Msg::Ship(ship));
        if matches!(req.kind, ReqKind::Current { .. }) {
            // It is gone from here: whoever waits on it asks again.
            debug_assert!(self.cache.current(req.blk).is_none());
            LmsStep::Wake(req.blk)
        } else {
            LmsStep::Done
        }
    }

    /// The current block leaves: keep a past image if it is dirty, else drop it.
    fn give_up_current(&mut self, buf: BufId) -> (Block, bool) {
        // Clean out our own commits first: the next holder cannot know them.
        self.cache.get_mut(buf).image.clean_out_known(&self.tx);
        self.cache.give_up_current(buf)
    }
}

impl GlobalCache {
    /// The last local pin on `blk` went: the LMS jobs that waited for it, if any.
    #[inline]
    pub fn lms_pin_released(&mut self, blk: BlockAddr) -> Option<Vec<(u8, u64)>> {
        self.lms.pin_released(blk)
    }

    /// The block a shipment carried here; the box is kept for a block
    /// shipped from here (a few at most: shipping takes them as fast as they come).
    pub fn unbox_shipped_block(&mut self, cache: &Cache, mut b: Box<Shipment>) -> Block {
        let empty = cache.placeholder(b.block.addr);
        let block = std::mem::replace(&mut b.block, empty);
        self.spares.keep_ship(b);
        block
    }
}

/// The master asks this instance to drop its shared copy of `blk`. True
/// when the master is this instance: acknowledge it there (else it was sent).
pub(in crate::instance) fn invalidate_local(
    k: &mut Kernel,
    cache: &mut Cache,
    mut net: Net,
    master: InstId,
    blk: BlockAddr,
    req: u64,
) -> bool {
    if cache.invalidate_shared(blk) {
        k.error(&format!(
            "{master} invalidated the dirty shared copy of {blk} this instance writes"
        ));
    }
    if master == k.id() {
        return true;
    }
    net.send(k, master, Msg::InvalidateAck { blk, req });
    false
}

/// A write as of `scn` covered this instance's past images of `blk`.
pub(in crate::instance) fn discard_pi(
    k: &mut Kernel,
    cache: &mut Cache,
    redo: &Redo,
    blk: BlockAddr,
    scn: Scn,
) {
    let discarded = cache.discard_past_images(blk, scn);
    k.add(Stat::GcsPastImagesDiscarded, discarded);
    // A newer past image took over an older one's first-dirty address
    // (cache.rs, `give_up_current`); this instance's changes the write
    // covered are on disk now: what is not begins later.
    if let Some(rba) = redo.rba_after(scn) {
        cache.past_images_on_disk_below(blk, rba);
    }
}

/// What an LMS job's CPU demand depends on, read from the components that own it.
struct HolderView<'a> {
    cache: &'a Cache,
    costs: &'a Costs,
    lgwr: &'a Lgwr,
    scn: Scn,
    /// `_fairness_threshold`: see [`Cache::fairness_due`].
    fairness_threshold: u32,
}

impl HolderView<'_> {
    /// CPU a job needs. A CR copy is built here, when the job starts, so its
    /// real undo count is charged.
    fn job_demand(&self, job: &mut Job, tx: &impl Fn(Xid) -> TxState) -> Nanos {
        let c = self.costs;
        let s = match job {
            Job::Msg { .. } => return c.lms_message_ns,
            Job::Serve(s) => s,
        };
        match s.stage {
            Stage::Send => c.lms_send_ns,
            Stage::AfterPin => c.lms_pin_ns + self.send_cost_unless_flush(s.req.blk),
            Stage::Start => {
                let Some(buf) = self.cache.current(s.req.blk) else {
                    return c.lms_message_ns;
                };
                match (s.req.kind, s.shared) {
                    (ReqKind::Cr { .. }, false)
                        if self.cache.get(buf).state() != BufState::Xcur
                            || self.cache.fairness_due(buf, self.fairness_threshold) =>
                    {
                        // No copy is built: the master is told to route it again.
                        c.lms_message_ns
                    }
                    (ReqKind::Cr { snapshot, reader }, false) => {
                        let b = self.cache.get(buf);
                        let scn = b.image.scn;
                        let built = b.image.build_cr(snapshot, reader, self.scn, tx);
                        let undo = built.as_ref().map_or(0, |cp| cp.undo_applied);
                        s.built = Some((scn, built));
                        c.cr_build_ns
                            + c.undo_apply_ns * Nanos::from(undo)
                            + self.send_cost_unless_flush(s.req.blk)
                    }
                    (ReqKind::Cr { .. }, true) => self.send_cost_unless_flush(s.req.blk),
                    (ReqKind::Current { .. }, _) => {
                        c.lms_pin_ns + self.send_cost_unless_flush(s.req.blk)
                    }
                }
            }
        }
    }

    /// Sending is charged with the job unless the block must wait for a flush
    /// first (then it is a step of its own after the flush).
    fn send_cost_unless_flush(&self, blk: BlockAddr) -> Nanos {
        match self.cache.current(blk) {
            Some(b) if self.lgwr.redo_pending(self.cache.get(b).last_rba) => 0,
            _ => self.costs.lms_send_ns,
        }
    }
}

/// An LMS process `proc` finished a step of `job`: a request's hop at its
/// master or its holder.
#[cold]
fn trace_lms_job(obs: &mut Observer, now: Nanos, proc: ProcId, job: &Job) {
    match job {
        Job::Msg {
            msg: Msg::Request(req) | Msg::DownConverted { req } | Msg::NotHeld { req },
            ..
        } => obs.trace_hop(now, req.requester, req.id, Hop::Master, proc),
        Job::Serve(s) => obs.trace_hop(now, s.req.requester, s.req.id, Hop::Holder, proc),
        Job::Msg { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::events::Proc;
    use super::super::super::kernel::Fired;
    use super::super::super::membership::{Delivery, Membership};
    use super::*;
    use crate::block::Body;
    use crate::config::Catalog;
    use crate::msg::{Action, Envelope, Timing};

    const ME: InstId = InstId(1);
    const PEER: InstId = InstId(0);

    struct Rig {
        gc: GlobalCache,
        k: Kernel,
        cache: Cache,
        redo: Redo,
        m: Membership,
        obs: Observer,
    }

    /// Instance 1 of 2 with one LMS, an empty cache and nothing in the log buffer.
    fn rig() -> Rig {
        let mut k = Kernel::for_instance(ME, &Catalog::default());
        let mut gc = GlobalCache::new(ME, 2);
        let lms = k.add_proc(Proc::Lms(0), "LMS0".into());
        gc.start_lms(vec![lms]);
        let lgwr = k.add_proc(Proc::Lgwr, "LGWR".into());
        let m = Membership::new(ME, 2, k.params(), 0, Delivery::Direct);
        // The default catalog lays out no table: the blocks here are 0..64.
        let cache = Cache::new(16, 64);
        Rig {
            gc,
            k,
            cache,
            redo: Redo::new(lgwr),
            m,
            obs: Observer::new(false),
        }
    }

    impl Rig {
        fn holder(&mut self) -> Holder<'_, impl Fn(Xid) -> TxState> {
            Holder::new(
                &mut self.gc,
                &mut self.k,
                &mut self.cache,
                &mut self.redo,
                self.m.net(),
                &mut self.obs,
                |_: Xid| TxState::Unknown,
            )
        }

        /// LMS's next CPU step ends: what its job left to do (then the
        /// worker takes its next job, as the dispatcher does).
        fn lms_runs(&mut self) -> LmsStep {
            let Some(Fired::Steps(done)) = self.k.run_until(u64::MAX) else {
                panic!("LMS asked for no CPU");
            };
            let [d] = done[..] else { panic!("{done:?}") };
            let step = self.holder().step_done(0, d);
            self.holder().kick(0);
            step
        }

        fn sent(&mut self) -> Vec<Envelope> {
            self.k
                .take_actions()
                .into_iter()
                .map(|a| match a {
                    Action::Send(env) => env,
                    other => panic!("{other:?}"),
                })
                .collect()
        }

        fn hold(&mut self, blk: BlockAddr) -> BufId {
            let image = Block::new(blk, Body::Table { rows: vec![] });
            self.cache.insert(blk, BufState::Xcur, image)
        }
    }

    fn current_request(blk: BlockAddr) -> Request {
        Request {
            id: 7,
            blk,
            requester: PEER,
            kind: ReqKind::Current { new_block: false },
            timing: Timing::default(),
        }
    }

    fn forward(req: Request) -> Msg {
        Msg::Forward {
            req,
            master: PEER,
            shared: false,
        }
    }

    #[test]
    fn a_clean_current_block_forwarded_here_is_shipped_and_its_waiters_woken() {
        let mut r = rig();
        let blk = BlockAddr(5);
        r.hold(blk);
        r.holder().enqueue(PEER, 0, forward(current_request(blk)));
        assert!(r.sent().is_empty(), "nothing before LMS runs");
        assert_eq!(r.lms_runs(), LmsStep::Wake(blk));
        assert_eq!(r.cache.current(blk), None, "clean: no past image kept");
        let sent = r.sent();
        let [env] = &sent[..] else { panic!("{sent:?}") };
        let Msg::Ship(ship) = &env.msg else {
            panic!("{env:?}")
        };
        assert_eq!(
            (env.to, ship.kind, ship.hops, ship.pi_kept),
            (PEER, ShipKind::Current, 2, false)
        );
        assert!(ship.req.timing.lms_proc > 0, "LMS's time travels with it");
        assert_eq!(r.k.stats().get(Stat::GcCurrentBlocksServed), 1);
    }

    #[test]
    fn a_current_request_for_a_pinned_block_waits_for_the_last_unpin() {
        let mut r = rig();
        let blk = BlockAddr(5);
        let buf = r.hold(blk);
        r.cache.pin_shared(buf);
        r.holder().enqueue(PEER, 0, forward(current_request(blk)));
        assert_eq!(r.lms_runs(), LmsStep::Done);
        assert!(r.sent().is_empty(), "it waits for the pin");
        assert_eq!(r.gc.lms_backlog(), 1, "parked");
        assert!(!r.cache.unpin(buf));
        let waiting = r.gc.lms_pin_released(blk).expect("the job waits on it");
        r.holder().unpinned(waiting);
        assert_eq!(r.lms_runs(), LmsStep::Wake(blk));
        assert_eq!(r.sent().len(), 1);
        assert_eq!(r.gc.lms_backlog(), 0);
        assert!(r.gc.lms_pin_released(blk).is_none());
    }

    #[test]
    fn the_master_here_routes_again_what_this_cache_no_longer_holds_and_takes_its_messages() {
        let mut r = rig();
        let req = current_request(BlockAddr(5));
        // Routed here by the master here, but the block is gone.
        r.holder().serve_here(req, false);
        let LmsStep::NotHeld(back) = r.lms_runs() else {
            panic!("not told")
        };
        assert_eq!((back.id, back.blk), (req.id, req.blk));
        assert!(r.sent().is_empty(), "no message to itself");
        // A request for the master here: handed to it with LMS's time.
        r.holder().enqueue(PEER, 0, Msg::Request(req));
        let LmsStep::Message {
            from,
            msg: Msg::Request(got),
        } = r.lms_runs()
        else {
            panic!("not handed on")
        };
        assert_eq!(from, PEER);
        assert!(got.timing.lms_proc > 0);
    }
}
