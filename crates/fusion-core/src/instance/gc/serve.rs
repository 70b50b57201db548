//! The holder's side of a transfer, as the instance routes it: what an LMS
//! job costs, what serving a forwarded request decides, and shipping the
//! block. This is where blocks are shipped (`Instance::ship`).
//!
//! The state lives in components: the jobs in `Lms`, the buffers in `Cache`,
//! the redo in `Lgwr`; this file only moves decisions between them.

use super::super::Instance;
use super::super::cache::{BufId, BufState};
use super::super::observe::{Hop, Observer};
use super::super::redo::FlushWaiter;
use super::lms::{CONGESTED_AFTER, Job, Serve, Stage};
use crate::block::{Block, CrCopy, CrError, TxState};
use crate::config::Nanos;
use crate::cpu::{ProcId, StepDone};
use crate::msg::{Msg, ReqKind, Request, ShipKind, Shipment, TxReport};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Scn, Xid};

/// Boxes kept for reuse on the transfer path. A block ping-pongs, so the
/// box that carried a shipment here carries the next one from here, rather
/// than being allocated by one instance and freed by the other every
/// transfer; likewise the box of a request served here.
#[derive(Default)]
pub(super) struct Spares {
    ships: Spare<Shipment>,
    serves: Spare<Serve>,
}

/// Boxes of one kind: a few at most, as the transfer path takes them as
/// fast as they come.
struct Spare<T> {
    // Boxed on purpose: the boxes themselves are what is kept for reuse.
    #[allow(clippy::vec_box)]
    boxes: Vec<Box<T>>,
}

impl<T> Default for Spare<T> {
    fn default() -> Spare<T> {
        Spare { boxes: Vec::new() }
    }
}

impl<T> Spare<T> {
    const MAX: usize = 16;

    /// `value` in a box, a spare one if there is one.
    #[inline]
    fn wrap(&mut self, value: T) -> Box<T> {
        match self.boxes.pop() {
            Some(mut b) => {
                *b = value;
                b
            }
            None => Box::new(value),
        }
    }

    #[inline]
    fn keep(&mut self, b: Box<T>) {
        if self.boxes.len() < Self::MAX {
            self.boxes.push(b);
        }
    }
}

impl Instance {
    /// A message for LMS arrived.
    pub(in crate::instance) fn lms_enqueue(&mut self, from: InstId, sent_at: Nanos, mut msg: Msg) {
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
            } => Job::Serve(self.boxed_serve(Serve::new(req, master, shared))),
            msg => Job::Msg { from, msg },
        };
        if let Err(full) = self.gc.lms.enqueue(w, job, self.k.now()) {
            self.error(format!(
                "LMS{} queue full ({} jobs): dropped a message from {from}",
                full.worker,
                super::lms::QUEUE_LIMIT
            ));
            return;
        }
        self.lms_kick(w);
    }

    /// The master (this instance) routes a request to itself as holder: serve it next.
    pub(in crate::instance) fn lms_serve_here(&mut self, req: Request, shared: bool) {
        let w = self.gc.lms.worker_for(req.blk);
        let me = self.id;
        let job = Job::Serve(self.boxed_serve(Serve::new(req, me, shared)));
        self.gc.lms.enqueue_front(w, job, self.k.now());
        self.lms_kick(w);
    }

    /// An idle worker takes its next job and asks for the CPU it needs.
    fn lms_kick(&mut self, w: u8) {
        let Some(job) = self.gc.lms.start_next(w) else {
            return;
        };
        // Disjoint borrows: the job keeps the CR copy it builds; the rest is read.
        let view = HolderView {
            cache: &self.cache,
            costs: self.k.costs(),
            lgwr: self.redo.lgwr(),
            scn: self.k.scn(),
            fairness_threshold: self.k.params().fairness_threshold,
        };
        let txns = self.fg.txns();
        let demand = view.job_demand(job, &|x| txns.state(x));
        let proc = self.gc.lms.proc(w);
        self.cpu(proc, demand);
    }

    pub(in crate::instance) fn lms_step_done(&mut self, w: u8, d: StepDone) {
        let Some((job, queued)) = self.gc.lms.finish(w) else {
            return;
        };
        let wait = d.started_at.saturating_sub(queued)
            + d.waited.saturating_sub(d.started_at - d.requested_at);
        let run = (d.done_at - d.requested_at).saturating_sub(d.waited);
        self.k.add(Stat::GcsMsgsProcessTime, run);
        if self.obs.tracing() {
            trace_lms_job(&mut self.obs, self.k.now(), self.gc.lms.proc(w), &job);
        }
        match job {
            Job::Msg { from, msg } => self.lms_message(from, msg, wait, run),
            Job::Serve(mut s) => {
                s.req.timing.lms_wait += wait;
                s.req.timing.lms_proc += run;
                if s.stage == Stage::Start && wait > CONGESTED_AFTER {
                    s.congested = true;
                }
                self.serve(w, s, run);
            }
        }
        self.lms_kick(w);
    }

    fn lms_message(&mut self, from: InstId, msg: Msg, wait: Nanos, run: Nanos) {
        match msg {
            Msg::Request(mut req) => {
                // The master's LMS is a serving LMS too, whether it forwards,
                // grants or serves from its own cache: the time the request
                // waited for its CPU is LMS CPU wait, not request time.
                req.timing.lms_wait += wait;
                req.timing.lms_proc += run;
                self.dir_request(req);
            }
            Msg::Installed {
                blk,
                req,
                mode,
                prev_holder,
                pi_kept,
            } => self.dir_installed(from, blk, req, mode, prev_holder, pi_kept),
            Msg::NotHeld { req } => self.dir_not_held(from, req),
            Msg::DownConverted { mut req } => {
                // Routing it again is this LMS serving it, as for a request.
                req.timing.lms_wait += wait;
                req.timing.lms_proc += run;
                self.dir_down_converted(from, req);
            }
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
                    .wait_for_end(xid, super::super::TxWaiter::Remote(from, token)),
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

    fn tx_report(&self, xid: Xid) -> TxReport {
        match self.tx_state(xid) {
            crate::block::TxState::Committed(s) => TxReport::Committed(s),
            _ => TxReport::Active,
        }
    }

    fn serve(&mut self, w: u8, mut s: Box<Serve>, run: Nanos) {
        let blk = s.req.blk;
        let Some(buf) = self.cache.current(blk) else {
            self.not_held(s.req, s.master);
            return;
        };
        if s.stage == Stage::Send {
            self.ship(s, buf, run);
            return;
        }
        match (s.req.kind, s.shared) {
            (ReqKind::Cr { .. }, false) => {
                if self.cache.get(buf).state() != BufState::Xcur {
                    // Down-converted for fairness after the master forwarded
                    // this here: it is served from the shared copy now.
                    self.down_converted(s.req, s.master);
                    return;
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
                    self.down_converted(s.req, s.master);
                    return;
                }
                self.cache.cr_served(buf);
                let scn_now = self.cache.get(buf).image.scn;
                let built = match s.built.take() {
                    Some((scn, b)) if scn == scn_now => b,
                    _ => self.build_for(buf, &s.req),
                };
                self.k.add(
                    Stat::GcCrBlockBuildTime,
                    run.saturating_sub(self.k.costs().lms_send),
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
                    self.park_for_flush(w, s, buf);
                } else {
                    self.ship(s, buf, self.k.costs().lms_send.min(run));
                }
            }
            (ReqKind::Cr { .. }, true) => {
                if self.cache.get(buf).state() != BufState::Scur {
                    self.not_held(s.req, s.master);
                    return;
                }
                // A shared copy this instance down-converted may still have
                // redo in memory: the image waits for the flush, as a
                // current block does.
                if self.redo.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf);
                } else {
                    self.ship(s, buf, run);
                }
            }
            (ReqKind::Current { .. }, _) => {
                if self.cache.get(buf).pinned() {
                    let id = self.gc.lms.park(w, s, self.k.now());
                    self.gc.lms.wait_for_pin(blk, w, id);
                    return;
                }
                self.cache.set_leaving(buf, true);
                if self.redo.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf);
                } else {
                    self.ship(s, buf, self.k.costs().lms_send.min(run));
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
            .build_cr(snapshot, reader, self.k.scn(), &|x| self.tx_state(x))
    }

    /// This instance holds the block in S only (it down-converted for
    /// fairness): the master routes `req` again.
    fn down_converted(&mut self, req: Request, master: InstId) {
        if master == self.id {
            let me = self.id;
            self.dir_down_converted(me, req);
        } else {
            self.send(master, Msg::DownConverted { req });
        }
    }

    fn not_held(&mut self, req: Request, master: InstId) {
        if master == self.id {
            let me = self.id;
            self.dir_not_held(me, req);
        } else {
            self.send(master, Msg::NotHeld { req });
        }
    }

    fn park_for_flush(&mut self, w: u8, s: Box<Serve>, buf: BufId) {
        let rba = self.cache.get(buf).last_rba;
        let id = self.gc.lms.park(w, s, self.k.now());
        self.request_flush(rba, Some(FlushWaiter::Lms(w, id)));
    }

    /// LGWR made the redo durable: the parked job can send.
    pub(in crate::instance) fn lms_flushed(&mut self, w: u8, job: u64) {
        let Some((mut s, since)) = self.gc.lms.unpark(w, job) else {
            return;
        };
        let took = self.k.now() - since;
        self.wait_event(Wait::GcsLogFlushSync, took, false);
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
        self.lms_kick(w);
    }

    /// A local pin on `blk` was released: resume LMS jobs waiting for it.
    #[inline]
    pub(in crate::instance) fn unpinned(&mut self, blk: BlockAddr) {
        let Some(list) = self.gc.lms.pin_released(blk) else {
            return;
        };
        for (w, id) in list {
            let Some((mut s, since)) = self.gc.lms.unpark(w, id) else {
                continue;
            };
            let took = self.k.now() - since;
            s.req.timing.pin += took;
            self.k.add(Stat::GcCurrentBlockPinTime, took);
            s.stage = Stage::AfterPin;
            self.gc.lms.enqueue_front(w, Job::Serve(s), self.k.now());
            self.lms_kick(w);
        }
    }

    /// `serve` in a box, a spare one if there is one.
    fn boxed_serve(&mut self, serve: Serve) -> Box<Serve> {
        self.gc.spares.serves.wrap(serve)
    }

    /// Send the block to the requester.
    fn ship(&mut self, mut s: Box<Serve>, buf: BufId, send_time: Nanos) {
        let req = s.req;
        // 2-way: the request went straight to the holder (the master was the
        // requester or the holder itself); 3-way: a third instance forwarded it.
        let hops = if s.master == self.id || s.master == req.requester {
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
        self.gc.spares.serves.keep(s);
        let ship = self.box_shipment(Shipment {
            req,
            kind,
            block,
            pi_kept,
            hops,
            congested,
        });
        self.send(req.requester, Msg::Ship(ship));
        if matches!(req.kind, ReqKind::Current { .. }) {
            self.wake_block(req.blk);
        }
    }

    /// `ship` in a box, a spare one if there is one.
    fn box_shipment(&mut self, ship: Shipment) -> Box<Shipment> {
        self.gc.spares.ships.wrap(ship)
    }

    /// The block a shipment carried here; the box is kept for a block
    /// shipped from here (a few at most: shipping takes them as fast as they come).
    pub(in crate::instance) fn unbox_shipped_block(&mut self, mut b: Box<Shipment>) -> Block {
        let empty = self.cache.placeholder(b.block.addr);
        let block = std::mem::replace(&mut b.block, empty);
        self.gc.spares.ships.keep(b);
        block
    }

    /// The current block leaves: keep a past image if it is dirty, else drop it.
    fn give_up_current(&mut self, buf: BufId) -> (Block, bool) {
        // Clean out our own commits first: the next holder cannot know them.
        self.clean_out_buffer(buf);
        self.cache.give_up_current(buf)
    }

    /// The master asks this instance to drop its shared copy.
    pub(in crate::instance) fn invalidate_local(
        &mut self,
        master: InstId,
        blk: BlockAddr,
        req: u64,
    ) {
        if self.cache.invalidate_shared(blk) {
            self.error(format!(
                "{master} invalidated the dirty shared copy of {blk} this instance writes"
            ));
        }
        if master == self.id {
            let me = self.id;
            self.dir_invalidate_ack(me, blk);
        } else {
            self.send(master, Msg::InvalidateAck { blk, req });
        }
        self.wake_block(blk);
    }

    /// A write covered our past images of `blk`.
    pub(in crate::instance) fn discard_pi(&mut self, blk: BlockAddr, scn: Scn) {
        let discarded = self.cache.discard_past_images(blk, scn);
        self.k.add(Stat::GcsPastImagesDiscarded, discarded);
        // A newer past image took over an older one's first-dirty address
        // (cache.rs, `give_up_current`); this instance's changes the write
        // covered are on disk now: what is not begins later.
        if let Some(rba) = self.redo.rba_after(scn) {
            self.cache.past_images_on_disk_below(blk, rba);
        }
    }
}

/// What an LMS job's CPU demand depends on, read from the components that own it.
struct HolderView<'a> {
    cache: &'a super::super::cache::Cache,
    costs: &'a crate::config::Costs,
    lgwr: &'a super::super::redo::Lgwr,
    scn: Scn,
    /// `_fairness_threshold`: see [`super::cache::Cache::fairness_due`].
    fairness_threshold: u32,
}

impl HolderView<'_> {
    /// CPU a job needs. A CR copy is built here, when the job starts, so its
    /// real undo count is charged.
    fn job_demand(&self, job: &mut Job, tx: &impl Fn(Xid) -> TxState) -> Nanos {
        let c = self.costs;
        let s = match job {
            Job::Msg { .. } => return c.lms_message,
            Job::Serve(s) => s,
        };
        match s.stage {
            Stage::Send => c.lms_send,
            Stage::AfterPin => c.lms_pin + self.send_cost_unless_flush(s.req.blk),
            Stage::Start => {
                let Some(buf) = self.cache.current(s.req.blk) else {
                    return c.lms_message;
                };
                match (s.req.kind, s.shared) {
                    (ReqKind::Cr { .. }, false)
                        if self.cache.get(buf).state() != BufState::Xcur
                            || self.cache.fairness_due(buf, self.fairness_threshold) =>
                    {
                        // No copy is built: the master is told to route it again.
                        c.lms_message
                    }
                    (ReqKind::Cr { snapshot, reader }, false) => {
                        let b = self.cache.get(buf);
                        let scn = b.image.scn;
                        let built = b.image.build_cr(snapshot, reader, self.scn, tx);
                        let undo = built.as_ref().map_or(0, |cp| cp.undo_applied);
                        s.built = Some((scn, built));
                        c.cr_build
                            + c.undo_apply * Nanos::from(undo)
                            + self.send_cost_unless_flush(s.req.blk)
                    }
                    (ReqKind::Cr { .. }, true) => self.send_cost_unless_flush(s.req.blk),
                    (ReqKind::Current { .. }, _) => {
                        c.lms_pin + self.send_cost_unless_flush(s.req.blk)
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
            _ => self.costs.lms_send,
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
