//! The directory's side of the dispatcher (this instance as a block's
//! master) and the holder's side of a transfer (LMS, `gc/serve.rs`): the
//! directory's `Route`s followed, LMS's steps applied, in the order the
//! work happens.

use super::super::cache::BufState;
use super::super::events::IoPurpose;
use super::super::gc::serve::{self, Holder, LmsStep};
use super::super::gc::{Drained, PROMOTE_REQ, Route, Source, UnexpectedAck};
use super::super::session::TxWaiter;
use super::Dispatch;
use crate::block::Block;
use crate::config::Nanos;
use crate::cpu::StepDone;
use crate::msg::{GrantKind, Installed, Io, Mode, Msg, RecoverSource, Request, Shipment, TxReport};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, Scn, Xid};

impl Dispatch {
    // ----- the directory (this instance as master) ---------------------------------------

    /// A block request reached its master (this instance), which is not frozen.
    pub(in crate::instance) fn dir_request_now(&mut self, req: Request) {
        if let Some(route) = self.gc.dir_request(req) {
            self.follow(route);
        }
    }

    /// Carry out what the directory decided.
    pub(super) fn follow(&mut self, route: Route) {
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

    pub(super) fn grant(&mut self, req: Request, grant: GrantKind) {
        if req.requester == self.id {
            self.k.incr(Stat::GcLocalGrants);
            self.on_local_grant(req, grant);
        } else {
            self.k.incr(Stat::GcRemoteGrants);
            self.send(req.requester, Msg::Grant { req, grant });
        }
    }

    pub(in crate::instance) fn dir_invalidate_ack(&mut self, from: InstId, blk: BlockAddr) {
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
    pub(in crate::instance) fn dir_installed(&mut self, from: InstId, done: Installed) {
        let blk = done.blk;
        self.gc.dir_installed(from, done);
        while let Drained::Route(route) = self.gc.dir_next_queued(blk) {
            self.follow(route);
        }
    }

    /// The holder a request was forwarded to no longer has the block.
    pub(in crate::instance) fn dir_not_held(&mut self, from: InstId, req: Request) {
        if let Some(route) = self.gc.dir_not_held(from, req) {
            self.follow(route);
        }
    }

    /// The X holder down-converted to S for fairness: route the request again.
    pub(in crate::instance) fn dir_down_converted(&mut self, from: InstId, req: Request) {
        if let Some(route) = self.gc.dir_down_converted(from, req) {
            self.follow(route);
        }
    }

    /// A holder aged its copy out.
    pub(in crate::instance) fn dir_relinquish(&mut self, from: InstId, blk: BlockAddr, mode: Mode) {
        self.gc.dir_relinquish(from, blk, mode);
        // A promotion the holder could not make leaves the block free again.
        self.dir_drain(blk);
    }

    /// Route the requests queued on `blk`, one by one, while nothing is in flight.
    pub(in crate::instance) fn dir_drain(&mut self, blk: BlockAddr) {
        while let Drained::Route(route) = self.gc.dir_next_queued(blk) {
            self.follow(route);
        }
    }

    /// The current holder wrote the block: past images up to `scn` are obsolete.
    pub(in crate::instance) fn dir_written(&mut self, from: InstId, blk: BlockAddr, scn: Scn) {
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
    pub(in crate::instance) fn dir_write_request(&mut self, from: InstId, blk: BlockAddr) {
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
    pub(in crate::instance) fn on_promote(&mut self, blk: BlockAddr) {
        // The disk may hold a newer image than the past image: a write whose
        // `Written` was lost with the old incarnation did not discard it.
        self.start_io(Io::ReadBlock { blk }, IoPurpose::PromoteCheck { blk });
    }

    /// The disk's image of `blk` is as of `disk_scn`: promote the newest
    /// past image if it is newer, else drop the past images the disk covers
    /// and leave the block to the disk.
    pub(in crate::instance) fn on_promote_checked(
        &mut self,
        blk: BlockAddr,
        disk_scn: crate::types::Scn,
    ) {
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
                self.installed(Installed::unshipped(blk, PROMOTE_REQ, Mode::X));
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
    pub(in crate::instance) fn dir_recover(&mut self, recoverer: InstId, blk: BlockAddr) {
        match self.gc.recover_source(blk) {
            Source::Current => self.recover_reply(recoverer, blk, RecoverSource::Current),
            Source::Disk => self.recover_reply(recoverer, blk, RecoverSource::Disk),
            Source::Pi(holder) if holder == self.id => self.send_pi(blk, recoverer),
            Source::Pi(holder) => self.send(holder, Msg::SendPi { blk, to: recoverer }),
        }
    }

    // ----- the holder's side of a transfer (gc/serve.rs) -----------------------------

    /// The holder's side of a transfer, on the parts of the instance it uses.
    #[inline(always)]
    pub(super) fn holder(&mut self) -> Holder<'_, impl Fn(Xid) -> crate::block::TxState + '_> {
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
    pub(in crate::instance) fn lms_enqueue(&mut self, from: InstId, sent_at: Nanos, msg: Msg) {
        self.holder().enqueue(from, sent_at, msg);
    }

    /// The master (this instance) routes a request to itself as holder: serve it next.
    pub(in crate::instance) fn lms_serve_here(&mut self, req: Request, shared: bool) {
        self.holder().serve_here(req, shared);
    }

    /// An LMS worker's CPU step ended: what its job left to do is done
    /// before the worker takes its next job.
    #[inline]
    pub(in crate::instance) fn lms_step_done(&mut self, w: u8, d: StepDone) {
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
    pub(super) fn lms_message(&mut self, from: InstId, msg: Msg) {
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
            Msg::Installed(done) => self.dir_installed(from, done),
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
    pub(super) fn tx_report(&self, xid: Xid) -> TxReport {
        match self.tx_state(xid) {
            crate::block::TxState::Committed(s) => TxReport::Committed(s),
            _ => TxReport::Active,
        }
    }

    /// LGWR made the redo durable: the parked LMS job can send.
    pub(in crate::instance) fn lms_flushed(&mut self, w: u8, job: u64) {
        self.holder().flushed(w, job);
    }

    /// A local pin on `blk` was released: resume LMS jobs waiting for it.
    #[inline]
    pub(in crate::instance) fn unpinned(&mut self, blk: BlockAddr) {
        let Some(waiting) = self.gc.lms_pin_released(blk) else {
            return;
        };
        self.holder().unpinned(waiting);
    }

    /// The block a shipment carried here (its box kept for one shipped from here).
    pub(in crate::instance) fn unbox_shipped_block(&mut self, ship: Box<Shipment>) -> Block {
        self.gc.unbox_shipped_block(&self.cache, ship)
    }

    /// The master asks this instance to drop its shared copy.
    pub(in crate::instance) fn invalidate_local(
        &mut self,
        master: InstId,
        blk: BlockAddr,
        req: u64,
    ) {
        let net = self.membership.net();
        if serve::invalidate_local(&mut self.k, &mut self.cache, net, master, blk, req) {
            let me = self.id;
            self.dir_invalidate_ack(me, blk);
        }
        self.wake_block(blk);
    }

    /// A write covered this instance's past images of `blk`.
    pub(in crate::instance) fn discard_pi(&mut self, blk: BlockAddr, scn: Scn) {
        serve::discard_pi(&mut self.k, &mut self.cache, &self.redo, blk, scn);
    }
}
