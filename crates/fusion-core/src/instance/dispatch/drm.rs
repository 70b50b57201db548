//! The dispatcher's steps of dynamic remastering (gc/drm.rs decides):
//! the policy statistics sent to the coordinator, the DRM's messages, the
//! requests held under `gc remaster`, and the messages a move leaves late.

use super::Dispatch;
use crate::instance::events::Timer;
use crate::instance::membership::RETRANSMIT_NS;
use crate::instance::session::SessionState;
use crate::msg::{DrmMsg, Msg, ReqKind, Request};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId};

impl Dispatch {
    /// The coordinator of DRM: the lowest member, as for a reconfiguration.
    fn drm_coordinator(&self) -> InstId {
        self.membership.members().first().unwrap_or(self.id)
    }

    /// A session of this instance opens `req.blk` at its master: count it
    /// for the policy statistics, and hold the request under `gc remaster`
    /// while the block's object moves (`None`: held).
    pub(in crate::instance) fn drm_request(&mut self, sid: u32, req: Request) -> Option<Request> {
        let exclusive = matches!(req.kind, ReqKind::Current { .. });
        if let Some(report) = self.gc.drm_count(&self.k, req.blk, exclusive) {
            self.drm_to_coordinator(report);
        }
        if !self.gc.drm_holds(self.k.layout(), req.blk) {
            return Some(req);
        }
        // The placeholder wait just began: the same wait, under its real name.
        self.begin_wait(sid, Wait::GcRemaster, SessionState::WaitBlock);
        if let Err(e) = self.gc.drm_hold(req) {
            self.error(e);
        }
        None
    }

    fn drm_to_coordinator(&mut self, msg: Msg) {
        let c = self.drm_coordinator();
        if c == self.id {
            self.on_drm(c, msg);
        } else {
            self.send(c, msg);
        }
    }

    /// To every member, this one included (last: its own step may send).
    fn drm_broadcast(&mut self, msg: DrmMsg) {
        let me = self.id;
        for m in self.membership.members().iter().filter(|&m| m != me) {
            self.send(m, Msg::Drm(Box::new(msg.clone())));
        }
        self.on_drm_msg(me, msg);
    }

    /// A DRM message (from a peer, or this instance's own).
    pub(in crate::instance) fn on_drm(&mut self, from: InstId, msg: Msg) {
        if let Msg::Drm(m) = msg {
            self.on_drm_msg(from, *m);
        }
    }

    fn on_drm_msg(&mut self, from: InstId, msg: DrmMsg) {
        let members = self.membership.members();
        let coordinator = self.drm_coordinator();
        match msg {
            DrmMsg::Stats { window, objects } => {
                if coordinator != self.id {
                    return self.error(format!(
                        "{from} sent DRM statistics to {}, not the coordinator",
                        self.id
                    ));
                }
                match self.gc.drm_stats(&self.k, from, window, &objects) {
                    // Not while the cluster reconfigures: the next window decides.
                    Ok(Some(_)) if self.membership.reconfiguring() => {}
                    Ok(Some((object, to))) => self.drm_begin(object, to),
                    Ok(None) => {}
                    Err(e) => self.error(e),
                }
            }
            DrmMsg::Freeze { drm, object, to } => {
                let layout = self.k.layout();
                match self.gc.drm_freeze(
                    layout,
                    from,
                    coordinator,
                    (drm, object, to),
                    members,
                    self.k.now(),
                ) {
                    Ok(true) => self.drm_check_quiet(),
                    Ok(false) => {}
                    Err(e) => self.error(e),
                }
            }
            DrmMsg::Quiet { drm } => {
                if coordinator != self.id {
                    return self.error(format!(
                        "{from} said quiet for DRM({drm}) to a non-coordinator"
                    ));
                }
                match self.gc.drm_quiet(from, drm, members) {
                    Ok(true) => self.drm_broadcast(DrmMsg::Transfer { drm }),
                    Ok(false) => {}
                    Err(e) => self.error(e),
                }
            }
            DrmMsg::Transfer { drm } => {
                match self
                    .gc
                    .drm_transfer(&self.k, &self.cache, from, coordinator, drm)
                {
                    Ok(t) => {
                        let me = self.id;
                        if !t.leftover.is_empty() {
                            self.error(format!(
                                "DRM({drm}): {} requests were still queued here at the transfer",
                                t.leftover.len()
                            ));
                        }
                        if t.to != me {
                            self.k.add(Stat::ReplayedLocksSent, t.blocks.len() as u64);
                        }
                        let msg = DrmMsg::Rebuild {
                            drm,
                            blocks: t.blocks,
                        };
                        if t.to == me {
                            self.on_drm_msg(me, msg);
                        } else {
                            self.send(t.to, Msg::Drm(Box::new(msg)));
                        }
                        for req in t.leftover {
                            self.submit_request(req);
                        }
                    }
                    Err(e) => self.error(e),
                }
            }
            DrmMsg::Rebuild { drm, blocks } => {
                let replayed = if from == self.id {
                    0
                } else {
                    blocks.len() as u64
                };
                let layout = self.k.layout();
                match self.gc.drm_rebuild(layout, from, drm, blocks, members) {
                    Ok((complete, leftover)) => {
                        self.k.add(Stat::ReplayedLocksReceived, replayed);
                        if !leftover.is_empty() {
                            self.error(format!(
                                "DRM({drm}): {} requests were still queued here at the first report",
                                leftover.len()
                            ));
                        }
                        for req in leftover {
                            self.dir_request(req);
                        }
                        if complete {
                            for (sender, msg) in self.gc.drm_take_held_messages() {
                                self.lms_message(sender, msg);
                            }
                            self.drm_broadcast(DrmMsg::Done { drm });
                        }
                    }
                    Err(e) => self.error(e),
                }
            }
            DrmMsg::Done { drm } => {
                let ended = match self.gc.drm_done(from, drm, self.k.now()) {
                    Ok(ended) => ended,
                    Err(e) => return self.error(e),
                };
                self.k.incr(Stat::RemasterOps);
                self.k.incr(Stat::RemasteredObjects);
                self.k.add(Stat::RemasterTime, ended.remaster_ns);
                self.k.add(Stat::QuiesceTime, ended.quiesce_ns);
                if coordinator == self.id
                    && let Some(r) = self.gc.drm_ended(drm)
                {
                    let now = self.k.now();
                    self.obs.alert(
                        now,
                        format!(
                            "End DRM({}) - transfer pkey {} to {} (frozen {} ms)",
                            r.drm,
                            r.object,
                            r.to.0,
                            (now - r.began) / crate::config::NS_PER_MS
                        ),
                    );
                }
                for req in ended.held {
                    self.drm_release(req);
                }
                // The next DRM's freeze, if it came first.
                if let Some((from, drm, object, to)) = self.gc.drm_take_next_freeze() {
                    self.on_drm_msg(from, DrmMsg::Freeze { drm, object, to });
                }
            }
        }
    }

    /// Coordinator: LMD begins remastering `object` to `to`.
    fn drm_begin(&mut self, object: u32, to: InstId) {
        let now = self.k.now();
        let drm = self.gc.drm_begin(object, to, now);
        // Oracle's LMD trace numbers instances from 0.
        self.obs.alert(
            now,
            format!("Begin DRM({drm}) - transfer pkey {object} to {}", to.0),
        );
        self.drm_broadcast(DrmMsg::Freeze { drm, object, to });
    }

    /// After every input: close the policy window if it ended; tell the
    /// coordinator once quiet if a DRM waits for it.
    #[inline(always)]
    pub(in crate::instance) fn drm_after_input(&mut self) {
        // A commit gives back the TX enqueues the GES asked for where it happens.
        debug_assert!(!self.fg.row_locks().giving_back());
        if let Some(report) = self.gc.drm_tick(&self.k) {
            self.drm_to_coordinator(report);
        }
        if self.gc.drm_awaits_quiet().is_some() {
            self.drm_check_quiet();
        }
    }

    /// Once none of this instance's own requests for the object moving is
    /// in flight (those held for the DRM aside), tell the coordinator.
    /// Checked after every input while a DRM waits for it.
    pub(in crate::instance) fn drm_check_quiet(&mut self) {
        let Some((drm, object)) = self.gc.drm_awaits_quiet() else {
            return;
        };
        let layout = self.k.layout();
        let busy = self
            .fg
            .sessions()
            .outstanding_requests()
            .into_iter()
            .any(|(blk, p)| {
                layout.object_of(blk) == Some(object) && !self.gc.drm_is_held(blk, p.id)
            });
        if busy {
            return;
        }
        self.gc.drm_quiet_sent();
        self.drm_to_coordinator(Msg::Drm(Box::new(DrmMsg::Quiet { drm })));
    }

    /// The DRM is done: a held request goes to the object's new master, and
    /// its session waits for it under the placeholder event again.
    fn drm_release(&mut self, req: Request) {
        let owner = self
            .fg
            .sessions()
            .outstanding_requests()
            .into_iter()
            .find(|(blk, p)| *blk == req.blk && p.id == req.id)
            .map(|(_, p)| p.owner);
        let Some(owner) = owner else {
            return;
        };
        let s = self.fg.sessions().session(owner);
        if s.state() == SessionState::WaitBlock && s.waiting_on() == Some(Wait::GcRemaster) {
            self.end_wait(owner, None);
            let placeholder = match req.kind {
                ReqKind::Cr { .. } => Wait::GcCrRequest,
                ReqKind::Current { .. } => Wait::GcCurrentRequest,
            };
            self.begin_wait(owner, placeholder, SessionState::WaitBlock);
        }
        if self.membership.net().links_lossy() {
            self.arm(RETRANSMIT_NS, Timer::GcLost(req.blk, req.id));
        }
        self.submit_request(req);
    }

    /// A message LMS took for the master of `blk`, while an object is being
    /// or has been remastered: the new master keeps it until every member
    /// has reported; an old master passes a late one on (what it says of a
    /// holder's copy is in that holder's report already). `None`: handled.
    pub(in crate::instance) fn drm_screen(&mut self, from: InstId, msg: Msg) -> Option<Msg> {
        let blk: BlockAddr = match &msg {
            Msg::Request(req) | Msg::NotHeld { req } | Msg::DownConverted { req } => req.blk,
            Msg::Installed(crate::msg::Installed { blk, .. })
            | Msg::Relinquish { blk, .. }
            | Msg::InvalidateAck { blk, .. }
            | Msg::Written { blk, .. }
            | Msg::WriteRequest { blk } => *blk,
            _ => return Some(msg),
        };
        let layout = self.k.layout();
        if self.gc.drm_holds_message(layout, blk) {
            if let Err(e) = self.gc.drm_hold_message(from, msg) {
                self.error(e);
            }
            return None;
        }
        let Some(master) = self.gc.drm_moved_away(layout, blk) else {
            return Some(msg);
        };
        match msg {
            // The requester is in the request: the new master answers it.
            Msg::Request(_) | Msg::Written { .. } | Msg::WriteRequest { .. } => {
                self.send(master, msg)
            }
            // The holder reported its copy as it is now.
            Msg::Installed(_) | Msg::Relinquish { .. } => {}
            other => self.error(format!(
                "{from} sent {} for {blk} to its master before DRM moved it: no transfer of it was in flight",
                other.kind()
            )),
        }
        None
    }
}
