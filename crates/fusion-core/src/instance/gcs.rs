//! The master's side of the global cache service: the part of the global
//! resource directory (GRD) this instance masters. For each block it knows
//! the X holder, the S holders and the past-image holders, and it serializes
//! mode changes: while one transfer of a block is in flight, later requests
//! for it queue here.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::Instance;
use crate::msg::{GrantKind, Mode, Msg, ReqKind, Request};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, InstSet, Scn};

/// What to do once every S holder has acknowledged its invalidation.
#[derive(Clone, Copy, Debug)]
enum AfterAcks {
    Grant(Request, GrantKind),
    Forward(InstId, Request),
}

#[derive(Debug, Default)]
pub struct Resource {
    x: Option<InstId>,
    s: InstSet,
    pi: InstSet,
    /// The request whose transfer is in flight: (requester, its request id;
    /// ids are unique per requester only).
    busy: Option<(InstId, u64)>,
    queue: VecDeque<Request>,
    acks_pending: u32,
    after_acks: Option<AfterAcks>,
}

impl Resource {
    fn idle(&self) -> bool {
        self.x.is_none()
            && self.s.is_empty()
            && self.pi.is_empty()
            && self.busy.is_none()
            && self.queue.is_empty()
    }
}

#[derive(Debug, Default)]
pub struct Directory {
    res: FxHashMap<BlockAddr, Resource>,
}

impl Directory {
    pub fn view(&self, blk: BlockAddr) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.res
            .get(&blk)
            .map(|r| (r.x, r.s.iter().collect(), r.pi.iter().collect()))
    }
}

impl Instance {
    fn res(&mut self, blk: BlockAddr) -> &mut Resource {
        self.dir.res.entry(blk).or_default()
    }

    fn gc_tidy(&mut self, blk: BlockAddr) {
        if self.dir.res.get(&blk).is_some_and(Resource::idle) {
            self.dir.res.remove(&blk);
        }
    }

    /// A block request reached its master (this instance).
    pub(super) fn dir_request(&mut self, req: Request) {
        let r = self.res(req.blk);
        if r.busy.is_some() {
            r.queue.push_back(req);
            return;
        }
        self.dir_route(req);
    }

    fn dir_route(&mut self, req: Request) {
        let me = self.id;
        let who = req.requester;
        let r = self.res(req.blk);
        if r.x == Some(who) {
            // The requester gave the block up and asks again; its relinquish was lost in a race.
            r.x = None;
        }
        match req.kind {
            ReqKind::Cr { .. } => {
                if let Some(h) = r.x {
                    // CR copies are served by the X holder without changing any mode.
                    self.forward(h, req, false);
                } else if let Some(h) = prefer(r.s.without(who), me) {
                    r.busy = Some((req.requester, req.id));
                    self.forward(h, req, true);
                } else {
                    r.busy = Some((req.requester, req.id));
                    self.grant(req, GrantKind::Disk(Mode::S));
                }
            }
            ReqKind::Current { new_block } => {
                r.busy = Some((req.requester, req.id));
                if new_block && r.x.is_none() && r.s.is_empty() {
                    self.grant(req, GrantKind::New);
                } else if let Some(h) = r.x {
                    self.forward(h, req, false);
                } else {
                    let others = r.s.without(who);
                    let holds_s = r.s.contains(who);
                    if others.is_empty() {
                        let g = if holds_s {
                            GrantKind::Upgrade
                        } else {
                            GrantKind::Disk(Mode::X)
                        };
                        self.grant(req, g);
                    } else if holds_s {
                        self.invalidate_then(
                            req.blk,
                            others,
                            AfterAcks::Grant(req, GrantKind::Upgrade),
                        );
                    } else {
                        let shipper = prefer(others, me).unwrap_or(who);
                        let rest = others.without(shipper);
                        if rest.is_empty() {
                            self.forward(shipper, req, false);
                        } else {
                            self.invalidate_then(req.blk, rest, AfterAcks::Forward(shipper, req));
                        }
                    }
                }
            }
        }
    }

    fn invalidate_then(&mut self, blk: BlockAddr, holders: InstSet, then: AfterAcks) {
        let req_id = match then {
            AfterAcks::Grant(r, _) | AfterAcks::Forward(_, r) => r.id,
        };
        let r = self.res(blk);
        r.acks_pending = holders.len();
        r.after_acks = Some(then);
        for h in holders.iter() {
            if h == self.id {
                self.invalidate_local(h, blk, req_id);
            } else {
                self.send(h, Msg::Invalidate { blk, req: req_id });
            }
        }
    }

    pub(super) fn dir_invalidate_ack(&mut self, from: InstId, blk: BlockAddr) {
        let r = self.res(blk);
        r.s.remove(from);
        r.acks_pending = r.acks_pending.saturating_sub(1);
        if r.acks_pending == 0
            && let Some(then) = r.after_acks.take()
        {
            match then {
                AfterAcks::Grant(req, g) => self.grant(req, g),
                AfterAcks::Forward(h, req) => self.forward(h, req, false),
            }
        }
    }

    fn forward(&mut self, holder: InstId, req: Request, shared: bool) {
        if holder == self.id {
            self.lms_serve_here(req, shared);
        } else {
            self.send(
                holder,
                Msg::Forward {
                    req,
                    master: self.id,
                    shared,
                },
            );
        }
    }

    fn grant(&mut self, req: Request, grant: GrantKind) {
        if let GrantKind::Disk(Mode::S) = grant {
            self.res(req.blk).s.insert(req.requester);
        }
        if req.requester == self.id {
            self.stats.incr(Stat::GcLocalGrants);
            self.on_local_grant(req, grant);
        } else {
            self.stats.incr(Stat::GcRemoteGrants);
            self.send(req.requester, Msg::Grant { req, grant });
        }
    }

    /// The requester installed what it was sent or granted: record the new state.
    pub(super) fn dir_installed(
        &mut self,
        from: InstId,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        prev: Option<InstId>,
        pi_kept: bool,
    ) {
        let r = self.res(blk);
        if let Some(p) = prev
            && p != from
        {
            if r.x == Some(p) {
                r.x = None;
            }
            if mode == Mode::X {
                r.s.remove(p);
            }
            if pi_kept {
                r.pi.insert(p);
            }
        }
        match mode {
            Mode::X => {
                r.x = Some(from);
                r.s.remove(from);
            }
            Mode::S => r.s.insert(from),
        }
        if r.busy == Some((from, req)) {
            r.busy = None;
        }
        self.dir_drain(blk);
    }

    fn dir_drain(&mut self, blk: BlockAddr) {
        loop {
            let r = self.res(blk);
            if r.busy.is_some() {
                return;
            }
            let Some(next) = r.queue.pop_front() else {
                break;
            };
            self.dir_route(next);
        }
        self.gc_tidy(blk);
    }

    /// The holder a request was forwarded to no longer has the block.
    pub(super) fn dir_not_held(&mut self, from: InstId, req: Request) {
        let r = self.res(req.blk);
        if r.x == Some(from) {
            r.x = None;
        }
        r.s.remove(from);
        if r.busy == Some((req.requester, req.id)) {
            r.busy = None;
        }
        if r.busy.is_some() {
            r.queue.push_front(req);
        } else {
            self.dir_route(req);
        }
    }

    /// A holder aged its copy out.
    pub(super) fn dir_relinquish(&mut self, from: InstId, blk: BlockAddr, mode: Mode) {
        let r = self.res(blk);
        match mode {
            Mode::X if r.x == Some(from) => r.x = None,
            _ => r.s.remove(from),
        }
        self.gc_tidy(blk);
    }

    /// The current holder wrote the block: past images up to `scn` are obsolete.
    pub(super) fn dir_written(&mut self, from: InstId, blk: BlockAddr, scn: Scn) {
        let pis = {
            let r = self.res(blk);
            let p = r.pi;
            r.pi = InstSet::default();
            p
        };
        for h in pis.iter() {
            if h == self.id {
                self.discard_pi(blk, scn);
            } else if h != from {
                // The writer drops its own past images when its write completes.
                self.send(h, Msg::DiscardPi { blk, scn });
            }
        }
        self.gc_tidy(blk);
    }
}

/// Pick a holder, preferring `me` (serving from the master's own cache is 2-way).
fn prefer(set: InstSet, me: InstId) -> Option<InstId> {
    if set.contains(me) {
        Some(me)
    } else {
        set.first()
    }
}
