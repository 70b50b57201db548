//! LMS: the global cache server processes. Each worker takes GCS messages in
//! arrival order and needs a CPU for each (so a starved instance serves late).
//! Here a master routes requests, and a holder builds CR copies by rolling
//! back undo or ships its current block — the latter only once LGWR has made
//! the block's redo durable (`gcs log flush sync`). This is where blocks are shipped.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::cache::{BufId, BufState};
use super::lgwr::FlushWaiter;
use super::{Instance, TxWaiter};
use crate::block::{Block, CrCopy, CrError};
use crate::config::{NS_PER_MS, Nanos};
use crate::cpu::{ProcId, StepDone};
use crate::msg::{Msg, ReqKind, Request, ShipKind, TxReport};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Xid};

/// LMS did not start on a request within this long: the block is "congested".
pub const CONGESTED_AFTER: Nanos = NS_PER_MS;

/// Serving one forwarded request from this cache.
#[derive(Clone, Debug)]
pub struct Serve {
    req: Request,
    master: InstId,
    shared: bool,
    stage: Stage,
    /// The CR copy prepared when the job was picked up.
    built: Option<(u64, Result<CrCopy, CrError>)>,
    congested: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Look at the buffer, build or pin, and ship if nothing else is needed.
    Start,
    /// Waited for a local pin; now pin and go on.
    AfterPin,
    /// The flush is done: send.
    Send,
}

#[derive(Clone, Debug)]
enum Job {
    Msg { from: InstId, msg: Msg },
    Serve(Box<Serve>),
}

#[derive(Debug)]
pub struct LmsWorker {
    pub proc: ProcId,
    queue: VecDeque<(Job, Nanos)>,
    running: Option<(Job, Nanos, Nanos)>,
    parked: FxHashMap<u64, (Box<Serve>, Nanos)>,
    next_park: u64,
}

impl LmsWorker {
    pub fn new(proc: ProcId) -> LmsWorker {
        LmsWorker {
            proc,
            queue: VecDeque::new(),
            running: None,
            parked: FxHashMap::default(),
            next_park: 1,
        }
    }
}

impl Instance {
    fn lms_for(&self, blk: BlockAddr) -> u8 {
        (blk.0 as usize % self.lms.len().max(1)) as u8
    }

    /// A message for LMS arrived.
    pub(super) fn lms_enqueue(&mut self, from: InstId, sent_at: Nanos, mut msg: Msg) {
        self.stats.incr(Stat::GcsMsgsReceived);
        let wire = self.now.saturating_sub(sent_at);
        let blk = match &mut msg {
            Msg::Request(r) => {
                r.timing.request += wire;
                Some(r.blk)
            }
            Msg::Forward { req, .. } => {
                req.timing.request += wire;
                Some(req.blk)
            }
            Msg::Installed { blk, .. }
            | Msg::Invalidate { blk, .. }
            | Msg::InvalidateAck { blk, .. }
            | Msg::Relinquish { blk, .. }
            | Msg::Written { blk, .. }
            | Msg::DiscardPi { blk, .. } => Some(*blk),
            Msg::NotHeld { req } => Some(req.blk),
            _ => None,
        };
        let w = blk.map_or(0, |b| self.lms_for(b));
        let job = match msg {
            Msg::Forward {
                req,
                master,
                shared,
            } => Job::Serve(Box::new(Serve {
                req,
                master,
                shared,
                stage: Stage::Start,
                built: None,
                congested: false,
            })),
            msg => Job::Msg { from, msg },
        };
        self.lms[w as usize].queue.push_back((job, self.now));
        self.lms_kick(w);
    }

    /// The master (this instance) routes a request to itself as holder: serve it next.
    pub(super) fn lms_serve_here(&mut self, req: Request, shared: bool) {
        let w = self.lms_for(req.blk);
        let serve = Serve {
            req,
            master: self.id,
            shared,
            stage: Stage::Start,
            built: None,
            congested: false,
        };
        self.lms[w as usize]
            .queue
            .push_front((Job::Serve(Box::new(serve)), self.now));
        self.lms_kick(w);
    }

    fn lms_kick(&mut self, w: u8) {
        let wi = w as usize;
        if self.lms[wi].running.is_some() {
            return;
        }
        let Some((mut job, queued)) = self.lms[wi].queue.pop_front() else {
            return;
        };
        let demand = self.lms_demand(&mut job);
        self.lms[wi].running = Some((job, queued, demand));
        let proc = self.lms[wi].proc;
        self.cpu(proc, demand);
    }

    /// CPU a job needs. A CR copy is built here so its real undo count is charged.
    fn lms_demand(&mut self, job: &mut Job) -> Nanos {
        let c = &self.costs;
        match job {
            Job::Msg { .. } => c.lms_message,
            Job::Serve(s) => match s.stage {
                Stage::Send => c.lms_send,
                Stage::AfterPin => c.lms_pin + self.send_cost_unless_flush(s.req.blk),
                Stage::Start => {
                    let Some(buf) = self.cache.current(s.req.blk) else {
                        return c.lms_message;
                    };
                    match (s.req.kind, s.shared) {
                        (ReqKind::Cr { snapshot, reader }, false) => {
                            let b = self.cache.get(buf);
                            let scn = b.image.scn;
                            let built = b
                                .image
                                .build_cr(snapshot, reader, self.scn, &|x| self.tx_state(x));
                            let undo = built.as_ref().map_or(0, |cp| cp.undo_applied);
                            s.built = Some((scn, built));
                            c.cr_build
                                + c.undo_apply * Nanos::from(undo)
                                + self.send_cost_unless_flush(s.req.blk)
                        }
                        (ReqKind::Cr { .. }, true) => c.lms_send,
                        (ReqKind::Current { .. }, _) => {
                            c.lms_pin + self.send_cost_unless_flush(s.req.blk)
                        }
                    }
                }
            },
        }
    }

    fn send_cost_unless_flush(&self, blk: BlockAddr) -> Nanos {
        match self.cache.current(blk) {
            Some(b) if self.redo_pending(self.cache.get(b).last_rba) => 0,
            _ => self.costs.lms_send,
        }
    }

    pub(super) fn lms_step_done(&mut self, w: u8, d: StepDone) {
        let wi = w as usize;
        let Some((job, queued, _demand)) = self.lms[wi].running.take() else {
            return;
        };
        let wait = d.started_at.saturating_sub(queued)
            + d.waited.saturating_sub(d.started_at - d.requested_at);
        let run = (d.done_at - d.requested_at).saturating_sub(d.waited);
        self.stats.add(Stat::GcsMsgsProcessTime, run);
        match job {
            Job::Msg { from, msg } => self.lms_message(w, from, msg, wait, run),
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

    fn lms_message(&mut self, w: u8, from: InstId, msg: Msg, wait: Nanos, run: Nanos) {
        match msg {
            Msg::Request(mut req) => {
                // The master's own work counts as request time if it forwards,
                // and as LMS time if it serves the block itself.
                let holder_here = self.cache.current(req.blk).is_some();
                if holder_here {
                    req.timing.lms_wait += wait;
                    req.timing.lms_proc += run;
                } else {
                    req.timing.request += wait + run;
                }
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
            Msg::Relinquish { blk, mode } => self.dir_relinquish(from, blk, mode),
            Msg::InvalidateAck { blk, .. } => self.dir_invalidate_ack(from, blk),
            Msg::Invalidate { blk, req } => self.invalidate_local(from, blk, req),
            Msg::Written { blk, scn } => self.dir_written(from, blk, scn),
            Msg::DiscardPi { blk, scn } => self.discard_pi(blk, scn),
            Msg::TxQuery { xid, token } => {
                let report = self.tx_report(xid);
                self.send(from, Msg::TxStatus { xid, token, report });
            }
            Msg::TxWait { xid, token } => match self.tx_report(xid) {
                TxReport::Active => self
                    .txns
                    .waiters
                    .entry(xid.seq())
                    .or_default()
                    .push(TxWaiter::Remote(from, token)),
                report => self.send(from, Msg::TxStatus { xid, token, report }),
            },
            // Broadcast on commit: the SCN was applied when the message
            // arrived (every envelope carries one); LMS acknowledges it.
            Msg::ScnBroadcast { seq } => self.send(from, Msg::ScnAck { seq }),
            Msg::ScnAck { seq } => self.on_scn_ack(seq),
            other => {
                let _ = w;
                self.errors.push(format!(
                    "{}: LMS got an unexpected message from {from}: {other:?}",
                    self.id
                ));
            }
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
                let scn_now = self.cache.get(buf).image.scn;
                let built = match s.built.take() {
                    Some((scn, b)) if scn == scn_now => b,
                    _ => self.build_for(buf, &s.req),
                };
                self.stats.add(
                    Stat::GcCrBlockBuildTime,
                    run.saturating_sub(self.costs.lms_send),
                );
                if let Ok(cp) = &built
                    && cp.undo_applied > 0
                {
                    self.stats.incr(Stat::GcCrBlocksBuilt);
                }
                if built.is_err() {
                    self.stats.incr(Stat::GcCrLightWorks);
                }
                s.built = Some((scn_now, built));
                if self.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf);
                } else {
                    self.ship(s, buf, self.costs.lms_send.min(run));
                }
            }
            (ReqKind::Cr { .. }, true) => {
                if self.cache.get(buf).state != BufState::Scur {
                    self.not_held(s.req, s.master);
                    return;
                }
                self.ship(s, buf, run);
            }
            (ReqKind::Current { .. }, _) => {
                let b = self.cache.get(buf);
                if b.pinned() {
                    let id = self.park(w, s);
                    self.pin_waiters.entry(blk).or_default().push((w, id));
                    return;
                }
                self.cache.get_mut(buf).leaving = true;
                if self.redo_pending(self.cache.get(buf).last_rba) {
                    self.park_for_flush(w, s, buf);
                } else {
                    self.ship(s, buf, self.costs.lms_send.min(run));
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
            .build_cr(snapshot, reader, self.scn, &|x| self.tx_state(x))
    }

    fn not_held(&mut self, req: Request, master: InstId) {
        if master == self.id {
            let me = self.id;
            self.dir_not_held(me, req);
        } else {
            self.send(master, Msg::NotHeld { req });
        }
    }

    fn park(&mut self, w: u8, s: Box<Serve>) -> u64 {
        let l = &mut self.lms[w as usize];
        let id = l.next_park;
        l.next_park += 1;
        l.parked.insert(id, (s, self.now));
        id
    }

    fn park_for_flush(&mut self, w: u8, s: Box<Serve>, buf: BufId) {
        let rba = self.cache.get(buf).last_rba;
        let id = self.park(w, s);
        self.request_flush(rba, Some(FlushWaiter::Lms(w, id)));
    }

    /// LGWR made the redo durable: the parked job can send.
    pub(super) fn lms_flushed(&mut self, w: u8, job: u64) {
        let Some((mut s, since)) = self
            .lms
            .get_mut(w as usize)
            .and_then(|l| l.parked.remove(&job))
        else {
            return;
        };
        let took = self.now - since;
        self.wait_event(Wait::GcsLogFlushSync, took, false);
        s.req.timing.flush += took;
        // Counted with its time when it completes, so an interval's average is
        // never a time without its count (or a count without its time).
        match s.req.kind {
            ReqKind::Cr { .. } => {
                self.stats.incr(Stat::GcCrBlocksFlushed);
                self.stats.add(Stat::GcCrBlockFlushTime, took)
            }
            ReqKind::Current { .. } => {
                self.stats.incr(Stat::GcCurrentBlocksFlushed);
                self.stats.add(Stat::GcCurrentBlockFlushTime, took)
            }
        }
        s.stage = Stage::Send;
        self.lms[w as usize]
            .queue
            .push_front((Job::Serve(s), self.now));
        self.lms_kick(w);
    }

    /// A local pin on `blk` was released: resume LMS jobs waiting for it.
    pub(super) fn unpinned(&mut self, blk: BlockAddr) {
        // Called on every last unpin; usually no LMS job waits at all.
        if self.pin_waiters.is_empty() {
            return;
        }
        let Some(list) = self.pin_waiters.remove(&blk) else {
            return;
        };
        for (w, id) in list {
            let Some((mut s, since)) = self
                .lms
                .get_mut(w as usize)
                .and_then(|l| l.parked.remove(&id))
            else {
                continue;
            };
            let took = self.now - since;
            s.req.timing.pin += took;
            self.stats.add(Stat::GcCurrentBlockPinTime, took);
            s.stage = Stage::AfterPin;
            self.lms[w as usize]
                .queue
                .push_front((Job::Serve(s), self.now));
            self.lms_kick(w);
        }
    }

    /// Send the block to the requester.
    fn ship(&mut self, s: Box<Serve>, buf: BufId, send_time: Nanos) {
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
                self.stats.incr(Stat::GcCrBlocksServed);
                self.stats.add(Stat::GcCrBlockSendTime, send_time);
                match s.built {
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
                self.stats.incr(Stat::GcCrBlocksServed);
                self.stats.add(Stat::GcCrBlockSendTime, send_time);
                (ShipKind::Shared, self.cache.get(buf).image.clone(), false)
            }
            (ReqKind::Current { .. }, _) => {
                self.stats.incr(Stat::GcCurrentBlocksServed);
                self.stats.add(Stat::GcCurrentBlockSendTime, send_time);
                let (block, pi) = self.give_up_current(buf);
                (ShipKind::Current, block, pi)
            }
        };
        let congested = s.congested;
        self.send(
            req.requester,
            Msg::Ship {
                req,
                kind,
                block: Box::new(block),
                pi_kept,
                hops,
                congested,
            },
        );
        if matches!(req.kind, ReqKind::Current { .. }) {
            self.wake_block(req.blk);
        }
    }

    /// The current block leaves: keep a past image if it is dirty, else drop it.
    fn give_up_current(&mut self, buf: BufId) -> (Block, bool) {
        // Clean out our own commits first: the next holder cannot know them.
        self.clean_out_buffer(buf);
        let blk = self.cache.get(buf).blk;
        if self.cache.get(buf).dirty {
            // A newer past image makes an older one useless: keep one per block.
            self.cache
                .remove_where(blk, |id, b| id != buf && b.state == BufState::Pi);
        }
        let b = self.cache.get_mut(buf);
        b.leaving = false;
        if b.dirty {
            // The copy stays as the past image; the original, whose vectors
            // have room to grow, travels to the next holder, which changes it.
            let copy = b.image.clone();
            let image = std::mem::replace(&mut b.image, copy);
            self.cache.set_state(buf, BufState::Pi);
            (image, true)
        } else {
            (self.cache.remove(buf).image, false)
        }
    }

    /// The master asks this instance to drop its shared copy.
    pub(super) fn invalidate_local(&mut self, master: InstId, blk: BlockAddr, req: u64) {
        if let Some(buf) = self.cache.current(blk)
            && self.cache.get(buf).state == BufState::Scur
        {
            // A reader may still hold it pinned; nobody else may use it
            // (its valid range was never worked out): an empty range.
            self.cache.set_state(
                buf,
                BufState::Cr {
                    lo: 1,
                    hi: 0,
                    private_to: None,
                },
            );
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
    pub(super) fn discard_pi(&mut self, blk: BlockAddr, scn: crate::types::Scn) {
        let n = self
            .cache
            .remove_where(blk, |_, b| b.state == BufState::Pi && b.image.scn <= scn);
        self.stats.add(Stat::GcsPastImagesDiscarded, n);
    }
}
