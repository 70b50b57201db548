//! The instance as a router: the directory's and GES's answers turned into
//! messages, I/O, CPU requests and calls on other components. No state
//! lives here; every decision was taken by the component that owns the
//! state (gcs.rs, ges.rs), the holder's side of a transfer is routed in
//! serve.rs, and LGWR's and DBWR's answers in redo/.

use super::super::Instance;
use super::super::session::SessionState;
use super::gcs::{Drained, Route, UnexpectedAck};
use super::ges::{Get, HandOn};
use crate::msg::{GrantKind, LockMode, Lvb, Mode, Msg, Request, ResName};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Scn};

impl Instance {
    // ----- the directory (this instance as master) ---------------------------------

    /// A block request reached its master (this instance), which is not frozen.
    pub(in crate::instance) fn dir_request_now(&mut self, req: Request) {
        if let Some(route) = self.gc.directory.request(req) {
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

    pub(in crate::instance) fn dir_invalidate_ack(&mut self, from: InstId, blk: BlockAddr) {
        match self.gc.directory.invalidate_ack(from, blk) {
            Ok(Some(route)) => self.follow(route),
            Ok(None) => {}
            Err(UnexpectedAck { from, blk }) => self.error(format!(
                "{from} acknowledged an invalidation of {blk} not asked of it"
            )),
        }
    }

    /// The requester installed what it was sent or granted: requests queued
    /// behind the transfer go on, one by one.
    pub(in crate::instance) fn dir_installed(
        &mut self,
        from: InstId,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        prev: Option<InstId>,
        pi_kept: bool,
    ) {
        self.gc
            .directory
            .installed(from, blk, req, mode, prev, pi_kept);
        while let Drained::Route(route) = self.gc.directory.next_queued(blk) {
            self.follow(route);
        }
    }

    /// The holder a request was forwarded to no longer has the block.
    pub(in crate::instance) fn dir_not_held(&mut self, from: InstId, req: Request) {
        if let Some(route) = self.gc.directory.not_held(from, req) {
            self.follow(route);
        }
    }

    /// The X holder down-converted to S for fairness: route the request again.
    pub(in crate::instance) fn dir_down_converted(&mut self, from: InstId, req: Request) {
        if let Some(route) = self.gc.directory.down_converted(from, req) {
            self.follow(route);
        }
    }

    /// A holder aged its copy out.
    pub(in crate::instance) fn dir_relinquish(&mut self, from: InstId, blk: BlockAddr, mode: Mode) {
        self.gc.directory.relinquish(from, blk, mode);
        // A promotion the holder could not make leaves the block free again.
        self.dir_drain(blk);
    }

    /// Route the requests queued on `blk`, one by one, while nothing is in flight.
    pub(in crate::instance) fn dir_drain(&mut self, blk: BlockAddr) {
        while let Drained::Route(route) = self.gc.directory.next_queued(blk) {
            self.follow(route);
        }
    }

    /// The current holder wrote the block: past images up to `scn` are obsolete.
    pub(in crate::instance) fn dir_written(&mut self, from: InstId, blk: BlockAddr, scn: Scn) {
        for h in self.gc.directory.written(blk).iter() {
            if h == self.id {
                self.discard_pi(blk, scn);
            } else if h != from {
                // The writer drops its own past images when its write completes.
                self.send(h, Msg::DiscardPi { blk, scn });
            }
        }
    }

    // ----- GES: this instance's locks ----------------------------------------------

    /// Session `sid` wants `res` in `mode`. True when it holds it now; false
    /// when it waits (timed as `event`) and will be made ready once it does.
    pub(in crate::instance) fn enq_get(
        &mut self,
        sid: u32,
        res: ResName,
        mode: LockMode,
        event: Wait,
    ) -> bool {
        // While the directory is frozen the master here may not grant
        // without asking (it does not know yet who holds what).
        let master = if self.grd_frozen() {
            InstId(u8::MAX)
        } else {
            self.enqueue_master(res)
        };
        match self.gc.ges.get(sid, res, mode, master, self.k.stats_mut()) {
            Get::Held => true,
            Get::Wait { convert } => {
                self.begin_session_wait(sid, event, SessionState::WaitEnq);
                if let Some(mode) = convert {
                    self.enq_convert(res, mode);
                }
                false
            }
        }
    }

    /// Whether session `sid` is the local user of `res` now.
    pub(in crate::instance) fn enq_holds(&self, sid: u32, res: ResName) -> bool {
        self.gc.ges.holds(sid, res)
    }

    /// The user of `res` is done with it; `lvb` replaces the value block.
    pub(in crate::instance) fn enq_release(&mut self, res: ResName, lvb: Option<Lvb>) {
        let Some(asked_back) = self.gc.ges.release(res, lvb) else {
            return;
        };
        if asked_back {
            self.enq_down(res);
        }
        self.enq_hand_on(res);
    }

    /// Give the lock to the next local waiter, or ask the master for the mode it needs.
    fn enq_hand_on(&mut self, res: ResName) {
        match self.gc.ges.hand_on(res) {
            HandOn::Nothing => {}
            HandOn::Resume(sid) => {
                if self
                    .fg
                    .sessions()
                    .get(sid as usize)
                    .is_some_and(|s| s.state() == SessionState::WaitEnq)
                {
                    self.end_session_wait(sid);
                }
            }
            HandOn::Convert(mode) => self.enq_convert(res, mode),
        }
    }

    /// Send a conversion request to the master (or handle it here).
    fn enq_convert(&mut self, res: ResName, mode: LockMode) {
        let token = self.gc.ges.start_convert(res, mode, self.k.now());
        let master = self.enqueue_master(res);
        if master == self.id {
            self.ges_convert_here(res, mode, token);
        } else {
            self.send(master, Msg::EnqConvert { res, mode, token });
        }
    }

    /// Down-convert to NL and hand the value block back to the master.
    fn enq_down(&mut self, res: ResName) {
        let Some(lvb) = self.gc.ges.down(res, self.k.stats_mut()) else {
            return;
        };
        let master = self.enqueue_master(res);
        if master == self.id {
            self.ges_master_down(self.id, res, LockMode::Nl, lvb);
        } else {
            let mode = LockMode::Nl;
            self.send(master, Msg::EnqDown { res, mode, lvb });
        }
    }

    /// The master granted this instance's conversion.
    pub(in crate::instance) fn on_enq_grant(
        &mut self,
        res: ResName,
        mode: LockMode,
        token: u64,
        lvb: Lvb,
    ) {
        if let Err(problem) =
            self.gc
                .ges
                .granted(res, mode, token, lvb, self.k.now(), self.k.stats_mut())
        {
            self.error(problem);
            return;
        }
        self.enq_hand_on(res);
    }

    /// The master wants this instance's lock on `res` for someone else.
    pub(in crate::instance) fn on_enq_bast(&mut self, res: ResName) {
        if self.gc.ges.bast(res) {
            self.enq_down(res);
            self.enq_hand_on(res);
        }
    }

    // ----- GES: this instance as master ------------------------------------------------

    /// A conversion request reached the master (this instance).
    pub(in crate::instance) fn ges_master_convert(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        token: u64,
    ) {
        match self.gc.ges.master_convert(from, res, mode, token) {
            Some(grant) => self.ges_grant(res, grant),
            None => self.ges_bast_blockers(res),
        }
    }

    /// A holder down-converted: grant what now fits, then ask who still blocks.
    pub(in crate::instance) fn ges_master_down(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        lvb: Option<Lvb>,
    ) {
        for grant in self.gc.ges.master_down(from, res, mode, lvb) {
            self.ges_grant(res, grant);
        }
        self.ges_bast_blockers(res);
    }

    /// Ask every holder that blocks the head of the queue to down-convert.
    fn ges_bast_blockers(&mut self, res: ResName) {
        let Some((mode, blockers)) = self.gc.ges.master_blockers(res) else {
            return;
        };
        for holder in blockers {
            if holder == self.id {
                self.on_enq_bast(res);
            } else {
                self.send(holder, Msg::EnqBast { res, mode });
            }
        }
    }

    fn ges_grant(&mut self, res: ResName, (to, mode, token, lvb): super::ges::MasterGrant) {
        if to == self.id {
            self.on_enq_grant(res, mode, token, lvb);
        } else {
            self.send(
                to,
                Msg::EnqGrant {
                    res,
                    mode,
                    token,
                    lvb,
                },
            );
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
}
