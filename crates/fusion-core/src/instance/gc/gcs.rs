//! The master's side of the global cache service: the part of the global
//! resource directory (GRD) this instance masters. For each block it knows
//! the X holder, the S holders and the past-image holders, and it serializes
//! mode changes: while one transfer of a block is in flight, later requests
//! for it queue here.
//!
//! `Directory` owns that state and answers each input with a [`Route`]: what
//! must happen next (forward to a holder, grant, invalidate S holders). It
//! sends nothing itself; the instance routes the answer (instance/route.rs).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::msg::{GrantKind, Held, Installed, Mode, ReqKind, Request};
use crate::types::{BlockAddr, InstId, InstSet, Scn};

/// The request id a promotion is recorded under in `busy` (the holder's
/// `Installed` for it carries the same id).
pub const PROMOTE_REQ: u64 = u64::MAX;

/// What the master decided for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Ask `holder`'s LMS to serve it: a CR copy, the shared image
    /// (`shared`: from an S holder), or the current block.
    Forward {
        holder: InstId,
        req: Request,
        shared: bool,
    },
    /// No cache can ship it: the requester reads it from disk, formats a new
    /// block, or upgrades its S copy.
    Grant { req: Request, grant: GrantKind },
    /// First these S holders must drop their copies; the directory routes the
    /// request again once every one has acknowledged.
    Invalidate {
        holders: InstSet,
        blk: BlockAddr,
        req_id: u64,
    },
    /// The requester is the block's X holder here. No step of the protocol
    /// asks for a block held in X (a promotion answers its holder's own
    /// queued request, see [`Directory::installed`]), so the request is
    /// refused as the requester's protocol error and nothing changes.
    HeldInX { req: Request },
}

/// An `InvalidateAck` the directory did not ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnexpectedAck {
    pub from: InstId,
    pub blk: BlockAddr,
}

/// What to do once every S holder has acknowledged its invalidation.
#[derive(Clone, Copy, Debug)]
enum AfterAcks {
    Grant(Request, GrantKind),
    Forward(InstId, Request),
}

#[derive(Debug, Default)]
struct Resource {
    x: Option<InstId>,
    s: InstSet,
    pi: InstSet,
    /// The S holder that down-converted from X for fairness and may still
    /// hold the block dirty: it is the one that writes it, so a current
    /// request takes the block from it (it keeps a past image) rather than
    /// invalidating its copy. Always one of `s`.
    writer: Option<InstId>,
    /// The request whose transfer is in flight: (requester, its request id;
    /// ids are unique per requester only).
    busy: Option<(InstId, u64)>,
    queue: VecDeque<Request>,
    /// The S holders asked to drop their copies that have not acknowledged yet.
    acks_pending: InstSet,
    after_acks: Option<AfterAcks>,
    /// Claimed for instance recovery: requests queue until it is recovered.
    claimed: bool,
    /// While the directory is rebuilt: the newest past image reported and its holder.
    newest_pi: Option<(Scn, InstId)>,
}

impl Resource {
    fn idle(&self) -> bool {
        self.x.is_none()
            && self.s.is_empty()
            && self.pi.is_empty()
            && self.busy.is_none()
            && self.queue.is_empty()
            && !self.claimed
    }

    /// `who` no longer holds the block in S.
    fn drop_s(&mut self, who: InstId) {
        self.s.remove(who);
        if self.writer == Some(who) {
            self.writer = None;
        }
    }

    /// The coherence rule the directory keeps: an X holder excludes every S holder.
    fn assert_coherent(&self, blk: BlockAddr) {
        if let Some(x) = self.x {
            debug_assert!(
                self.s.is_empty(),
                "{blk:?}: X holder {x} beside S holders {:?}",
                self.s
            );
        }
        debug_assert!(
            self.writer.is_none_or(|w| self.s.contains(w)),
            "{blk:?}: writer {:?} is not an S holder",
            self.writer
        );
    }
}

/// What the master of a block did with the next queued request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drained {
    /// Route it (and ask again).
    Route(Route),
    /// A transfer is in flight: the rest of the queue waits for it.
    Busy,
    /// Nothing queued.
    Empty,
}

/// The blocks this instance masters.
#[derive(Debug)]
pub struct Directory {
    /// This instance: serving from the master's own cache is preferred (2-way).
    me: InstId,
    res: FxHashMap<BlockAddr, Resource>,
}

impl Directory {
    pub fn new(me: InstId) -> Directory {
        Directory {
            me,
            res: FxHashMap::default(),
        }
    }

    /// (X holder, S holders, PI holders) of a block, for checkers and `status`.
    pub fn view(&self, blk: BlockAddr) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.res
            .get(&blk)
            .map(|r| (r.x, r.s.iter().collect(), r.pi.iter().collect()))
    }

    fn res(&mut self, blk: BlockAddr) -> &mut Resource {
        self.res.entry(blk).or_default()
    }

    fn tidy(&mut self, blk: BlockAddr) {
        if self.res.get(&blk).is_some_and(Resource::idle) {
            self.res.remove(&blk);
        }
    }

    /// A block request reached its master. `None`: it queues behind a transfer.
    pub fn request(&mut self, req: Request) -> Option<Route> {
        let r = self.res(req.blk);
        if r.busy.is_some() || r.claimed {
            r.queue.push_back(req);
            return None;
        }
        Some(self.route(req))
    }

    fn route(&mut self, req: Request) -> Route {
        let me = self.me;
        let who = req.requester;
        let r = self.res(req.blk);
        if r.x == Some(who) {
            return Route::HeldInX { req };
        }
        match req.kind {
            ReqKind::Cr { .. } => {
                if let Some(h) = r.x {
                    // CR copies are served by the X holder without changing any mode.
                    Route::Forward {
                        holder: h,
                        req,
                        shared: false,
                    }
                } else if let Some(h) = prefer(r.s.without(who), me) {
                    r.busy = Some((req.requester, req.id));
                    Route::Forward {
                        holder: h,
                        req,
                        shared: true,
                    }
                } else {
                    r.busy = Some((req.requester, req.id));
                    self.grant(req, GrantKind::Disk(Mode::S))
                }
            }
            ReqKind::Current { new_block } => {
                r.busy = Some((req.requester, req.id));
                if new_block && r.x.is_none() && r.s.is_empty() {
                    self.grant(req, GrantKind::New)
                } else if let Some(h) = r.x {
                    Route::Forward {
                        holder: h,
                        req,
                        shared: false,
                    }
                } else {
                    let others = r.s.without(who);
                    let holds_s = r.s.contains(who);
                    // Another S holder that may hold the block dirty ships it
                    // (keeping a past image); its copy is never just dropped.
                    let writer = r.writer.filter(|w| others.contains(*w));
                    if others.is_empty() {
                        let g = if holds_s {
                            GrantKind::Upgrade
                        } else {
                            GrantKind::Disk(Mode::X)
                        };
                        self.grant(req, g)
                    } else if holds_s && writer.is_none() {
                        self.invalidate_then(
                            req.blk,
                            others,
                            AfterAcks::Grant(req, GrantKind::Upgrade),
                        )
                    } else {
                        let shipper = writer.or(prefer(others, me)).unwrap_or(who);
                        let rest = others.without(shipper);
                        if rest.is_empty() {
                            Route::Forward {
                                holder: shipper,
                                req,
                                shared: false,
                            }
                        } else {
                            self.invalidate_then(req.blk, rest, AfterAcks::Forward(shipper, req))
                        }
                    }
                }
            }
        }
    }

    fn invalidate_then(&mut self, blk: BlockAddr, holders: InstSet, then: AfterAcks) -> Route {
        let req_id = match then {
            AfterAcks::Grant(r, _) | AfterAcks::Forward(_, r) => r.id,
        };
        let r = self.res(blk);
        debug_assert!(
            r.acks_pending.is_empty() && r.after_acks.is_none(),
            "{blk:?}: an invalidation while another one waits for acknowledgements"
        );
        r.acks_pending = holders;
        r.after_acks = Some(then);
        Route::Invalidate {
            holders,
            blk,
            req_id,
        }
    }

    /// An S holder dropped its copy. Once all have, the waiting request goes
    /// on. An acknowledgement from a peer that was not asked (or answers
    /// twice) is a protocol error of the peer's, and changes nothing.
    pub fn invalidate_ack(
        &mut self,
        from: InstId,
        blk: BlockAddr,
    ) -> Result<Option<Route>, UnexpectedAck> {
        let Some(r) = self.res.get_mut(&blk) else {
            return Err(UnexpectedAck { from, blk });
        };
        if !r.acks_pending.contains(from) {
            return Err(UnexpectedAck { from, blk });
        }
        r.drop_s(from);
        r.acks_pending.remove(from);
        if !r.acks_pending.is_empty() {
            return Ok(None);
        }
        let Some(then) = r.after_acks.take() else {
            debug_assert!(false, "{blk:?}: acknowledgements awaited for nothing");
            return Ok(None);
        };
        Ok(Some(match then {
            AfterAcks::Grant(req, g) => self.grant(req, g),
            AfterAcks::Forward(h, req) => Route::Forward {
                holder: h,
                req,
                shared: false,
            },
        }))
    }

    fn grant(&mut self, req: Request, grant: GrantKind) -> Route {
        if let GrantKind::Disk(Mode::S) = grant {
            self.res(req.blk).s.insert(req.requester);
        }
        Route::Grant { req, grant }
    }

    /// The requester installed what it was sent or granted: record the new
    /// state. Then call [`Directory::next_queued`] until it stops routing.
    pub fn installed(&mut self, from: InstId, done: Installed) {
        let Installed {
            blk,
            req,
            mode,
            prev_holder: prev,
            pi_kept,
        } = done;
        let r = self.res(blk);
        if r.busy != Some((from, req)) {
            // Not the transfer in flight here: a late `Installed` of one
            // routed before this entry was rebuilt (a DRM or a
            // reconfiguration; seed 40357). The holders' reports say how
            // the block is held now, and transfers routed since may have
            // moved it on: recording this one would name a past holder X.
            return;
        }
        if let Some(p) = prev
            && p != from
        {
            if r.x == Some(p) {
                r.x = None;
            }
            if mode == Mode::X {
                r.drop_s(p);
            }
            if pi_kept {
                r.pi.insert(p);
            }
        }
        match mode {
            Mode::X => {
                r.x = Some(from);
                r.drop_s(from);
            }
            Mode::S => r.s.insert(from),
        }
        r.busy = None;
        if req == PROMOTE_REQ && mode == Mode::X {
            // The reconfiguration made `from`'s past image the current
            // block while `from`'s own request for it, asked again of this
            // master, queued behind the promotion: the promotion answered
            // it (the holder ended it when it promoted; see
            // `Instance::on_promote_checked`).
            r.queue.retain(|q| q.requester != from);
        }
        r.assert_coherent(blk);
    }

    /// The next request queued on `blk`, routed, unless a transfer is in flight.
    /// Asked one at a time: routing one may change what the next one finds.
    pub fn next_queued(&mut self, blk: BlockAddr) -> Drained {
        let r = self.res(blk);
        if r.busy.is_some() || r.claimed {
            return Drained::Busy;
        }
        match r.queue.pop_front() {
            Some(next) => Drained::Route(self.route(next)),
            None => {
                self.tidy(blk);
                Drained::Empty
            }
        }
    }

    /// The holder a request was forwarded to no longer has the block.
    pub fn not_held(&mut self, from: InstId, req: Request) -> Option<Route> {
        let r = self.res(req.blk);
        if r.x == Some(from) {
            r.x = None;
        }
        r.drop_s(from);
        if r.busy == Some((req.requester, req.id)) {
            r.busy = None;
        }
        if r.busy.is_some() {
            r.queue.push_front(req);
            None
        } else {
            Some(self.route(req))
        }
    }

    /// A holder aged its copy out (or had no past image left to promote).
    pub fn relinquish(&mut self, from: InstId, blk: BlockAddr, mode: Mode) {
        let r = self.res(blk);
        if r.busy == Some((from, PROMOTE_REQ)) {
            r.busy = None;
        }
        match mode {
            Mode::X if r.x == Some(from) => r.x = None,
            _ => r.drop_s(from),
        }
        self.tidy(blk);
    }

    /// The X holder `from` down-converted to S for fairness instead of
    /// building a CR copy for `req` (see `Instance::serve`): it is an S
    /// holder now, the one that writes the block, and `req` is routed again
    /// (to an S holder: the shared current image is shipped and the
    /// requester builds its CR copy itself). If `from` is no longer the X
    /// holder here, a current transfer from it overtook this message: only
    /// the request is routed again.
    pub fn down_converted(&mut self, from: InstId, req: Request) -> Option<Route> {
        let r = self.res(req.blk);
        if r.x == Some(from) {
            r.x = None;
            r.s.insert(from);
            r.writer = Some(from);
        }
        r.assert_coherent(req.blk);
        if r.busy.is_some() {
            r.queue.push_front(req);
            None
        } else {
            Some(self.route(req))
        }
    }

    /// `from` says it holds a past image of `blk` (it asks for a write): the
    /// next write's discard reaches it even if an earlier write forgot it.
    pub fn note_pi(&mut self, blk: BlockAddr, from: InstId) {
        if let Some(r) = self.res.get_mut(&blk) {
            r.pi.insert(from);
        }
    }

    /// Who writes the block now: its X holder, or the S holder that
    /// down-converted from X for fairness and holds it dirty.
    pub fn writer(&self, blk: BlockAddr) -> Option<InstId> {
        let r = self.res.get(&blk)?;
        r.x.or(r.writer)
    }

    /// The current holder wrote the block: returns the instances whose past
    /// images up to the write's SCN are now obsolete.
    pub fn written(&mut self, blk: BlockAddr) -> InstSet {
        let r = self.res(blk);
        let holders = std::mem::take(&mut r.pi);
        self.tidy(blk);
        holders
    }
}

/// Where the newest image of a claimed block is (see [`Directory::recover_source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A survivor holds it current: nothing to recover.
    Current,
    /// This past-image holder has the newest image.
    Pi(InstId),
    Disk,
}

/// Rebuilding after a reconfiguration: the directory starts empty, every
/// member reports what it holds of the blocks mastered here, and the
/// recovering instance claims its recovery set.
impl Directory {
    /// This instance.
    pub fn me(&self) -> InstId {
        self.me
    }

    /// Forget everything: the incarnation changed, every member reports again.
    pub fn clear(&mut self) {
        self.res.clear();
    }

    /// `from` holds `blk` so.
    pub fn rebuild(&mut self, from: InstId, blk: BlockAddr, held: Held) {
        let r = self.res(blk);
        match held {
            Held::X { .. } => r.x = Some(from),
            Held::S { dirty } => {
                r.s.insert(from);
                if dirty {
                    r.writer = Some(from);
                }
            }
            Held::Pi { scn } => {
                r.pi.insert(from);
                if r.newest_pi.is_none_or(|(s, _)| scn > s) {
                    r.newest_pi = Some((scn, from));
                }
            }
            Held::Reading { mode, req } => {
                match mode {
                    Mode::X => r.x = Some(from),
                    Mode::S => r.s.insert(from),
                }
                // One grant is in flight per block: a second report of one
                // (a peer's mistake) keeps the first to wait for; the
                // holders are recorded either way.
                if r.busy.is_none() {
                    r.busy = Some((from, req));
                }
            }
        }
    }

    /// The recovering instance claims `blk`: requests wait until it is recovered.
    pub fn claim(&mut self, blk: BlockAddr) {
        self.res(blk).claimed = true;
    }

    /// Every member has reported. Returns the past images to promote: for
    /// an unclaimed block nobody holds current, the newest past image is the
    /// current block now (it was shipped in X to an instance that died, or
    /// its transfer was lost with the old incarnation); the block is busy
    /// until its holder confirms. A claimed block is promoted by recovery.
    pub fn finish_rebuild(&mut self) -> Vec<(BlockAddr, InstId)> {
        let mut promote = Vec::new();
        for (&blk, r) in self.res.iter_mut() {
            if let Some(x) = r.x {
                // An X holder beside S holders cannot be: an X transfer
                // starts only once every S copy was given up.
                debug_assert!(
                    r.s.is_empty(),
                    "{blk:?}: X holder {x} beside S holders {:?} after a rebuild",
                    r.s
                );
                r.s = InstSet::default();
                r.writer = None;
            }
            if r.claimed {
                continue;
            }
            if r.x.is_none()
                && r.s.is_empty()
                && let Some((_, holder)) = r.newest_pi
            {
                r.busy = Some((holder, PROMOTE_REQ));
                promote.push((blk, holder));
            }
            r.newest_pi = None;
        }
        promote.sort_unstable();
        promote
    }

    /// Where recovery finds the newest image of a claimed block.
    pub fn recover_source(&mut self, blk: BlockAddr) -> Source {
        let r = self.res(blk);
        if r.x.is_some() || !r.s.is_empty() {
            return Source::Current;
        }
        match r.newest_pi {
            Some((_, holder)) => Source::Pi(holder),
            None => Source::Disk,
        }
    }

    /// The claimed block is recovered: with `written` it is on disk and
    /// every past image is obsolete (returned, to be discarded); without, a
    /// survivor held it current and nothing changed. The queue may go on
    /// (call [`Directory::next_queued`]).
    pub fn recovered(&mut self, blk: BlockAddr, written: bool) -> InstSet {
        let r = self.res(blk);
        r.claimed = false;
        r.newest_pi = None;
        if written {
            std::mem::take(&mut r.pi)
        } else {
            InstSet::default()
        }
    }
}

/// Dynamic remastering of one object: its entries leave the old masters'
/// directories and are rebuilt at the new master from the holders'
/// reports, as a reconfiguration rebuilds them all.
impl Directory {
    /// Forget the entries of the blocks `of_object` says belong to the
    /// object being remastered. Returns the requests still queued on them
    /// (none when every member was quiet), by block, to send to the new
    /// master.
    pub fn drop_object(&mut self, of_object: impl Fn(BlockAddr) -> bool) -> Vec<Request> {
        let mut gone: Vec<BlockAddr> = self.res.keys().copied().filter(|&b| of_object(b)).collect();
        gone.sort_unstable();
        let mut queued = Vec::new();
        for blk in gone {
            if let Some(r) = self.res.remove(&blk) {
                queued.extend(r.queue);
            }
        }
        queued
    }

    /// Every member reported its holdings of the object: what the
    /// rebuild kept only while it ran goes (an X holder beside S holders
    /// cannot be, as after a reconfiguration). No past image is promoted:
    /// nothing was lost, so a block nobody holds current is on disk.
    pub fn finish_object(&mut self, of_object: impl Fn(BlockAddr) -> bool) {
        for (&blk, r) in self.res.iter_mut() {
            if !of_object(blk) {
                continue;
            }
            if r.x.is_some() {
                r.s = InstSet::default();
                r.writer = None;
            }
            r.newest_pi = None;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::Timing;
    use crate::types::Xid;

    const MASTER: InstId = InstId(0);
    const INST2: InstId = InstId(1);
    const INST3: InstId = InstId(2);
    const BLK: BlockAddr = BlockAddr(19);

    fn request(requester: InstId, id: u64, kind: ReqKind) -> Request {
        Request {
            id,
            blk: BLK,
            requester,
            kind,
            timing: Timing::default(),
        }
    }

    fn current(requester: InstId, id: u64) -> Request {
        request(requester, id, ReqKind::Current { new_block: false })
    }

    #[test]
    fn a_promotion_answers_its_holders_own_queued_request_and_the_rest_go_on() {
        // Seed 21194: nobody holds the block current after the
        // reconfiguration; instance 3 has the newest past image and asked
        // for the block again, as did instance 2.
        let mut dir = Directory::new(MASTER);
        dir.rebuild(INST3, BLK, Held::Pi { scn: Scn(40) });
        dir.rebuild(INST2, BLK, Held::Pi { scn: Scn(30) });
        assert_eq!(dir.finish_rebuild(), vec![(BLK, INST3)]);
        let own = request(
            INST3,
            7,
            ReqKind::Cr {
                snapshot: Scn(45),
                reader: Xid(0),
            },
        );
        assert_eq!(dir.request(own), None, "queued behind the promotion");
        assert_eq!(dir.request(current(INST2, 3)), None);

        dir.installed(INST3, Installed::unshipped(BLK, PROMOTE_REQ, Mode::X));

        // Instance 3 holds the block in X: its own request is answered, and
        // instance 2's goes to it (not a disk read of an older image).
        assert_eq!(
            dir.next_queued(BLK),
            Drained::Route(Route::Forward {
                holder: INST3,
                req: current(INST2, 3),
                shared: false,
            })
        );
        assert_eq!(dir.next_queued(BLK), Drained::Busy);
    }

    #[test]
    fn a_failed_promotion_leaves_its_holders_request_to_the_disk() {
        // The disk was newer than the past image: the holder gave it up.
        let mut dir = Directory::new(MASTER);
        dir.rebuild(INST3, BLK, Held::Pi { scn: Scn(40) });
        assert_eq!(dir.finish_rebuild(), vec![(BLK, INST3)]);
        assert_eq!(dir.request(current(INST3, 7)), None);
        dir.relinquish(INST3, BLK, Mode::X);
        assert_eq!(
            dir.next_queued(BLK),
            Drained::Route(Route::Grant {
                req: current(INST3, 7),
                grant: GrantKind::Disk(Mode::X),
            })
        );
    }

    #[test]
    fn a_request_from_the_x_holder_is_refused_and_changes_nothing() {
        let mut dir = Directory::new(MASTER);
        let first = current(INST2, 1);
        assert_eq!(
            dir.request(first),
            Some(Route::Grant {
                req: first,
                grant: GrantKind::Disk(Mode::X),
            })
        );
        dir.installed(INST2, Installed::unshipped(BLK, 1, Mode::X));
        let again = current(INST2, 2);
        assert_eq!(dir.request(again), Some(Route::HeldInX { req: again }));
        assert_eq!(dir.view(BLK), Some((Some(INST2), vec![], vec![])));
        // The X holder still ships the block to the next requester.
        assert_eq!(
            dir.request(current(INST3, 1)),
            Some(Route::Forward {
                holder: INST2,
                req: current(INST3, 1),
                shared: false,
            })
        );
    }

    #[test]
    fn a_late_installed_from_before_a_remaster_changes_nothing() {
        // Seed 40357: instance 3 holds the block in X; instance 2's request
        // goes to it, and the block reaches instance 2, whose `Installed`
        // is late. DRM rebuilds the entry meanwhile (instance 2 reports X),
        // and instance 3 takes the block back before the `Installed` comes.
        let mut dir = Directory::new(MASTER);
        dir.rebuild(INST3, BLK, Held::X { dirty: true });
        dir.finish_object(|_| true);
        let taken = current(INST2, 59);
        assert_eq!(
            dir.request(taken),
            Some(Route::Forward {
                holder: INST3,
                req: taken,
                shared: false,
            })
        );
        assert!(dir.drop_object(|_| true).is_empty());
        dir.rebuild(INST2, BLK, Held::X { dirty: true });
        dir.rebuild(INST3, BLK, Held::Pi { scn: Scn(89) });
        dir.finish_object(|_| true);
        let back = current(INST3, 125);
        assert_eq!(
            dir.request(back),
            Some(Route::Forward {
                holder: INST2,
                req: back,
                shared: false,
            })
        );
        dir.installed(
            INST3,
            Installed {
                blk: BLK,
                req: 125,
                mode: Mode::X,
                prev_holder: Some(INST2),
                pi_kept: true,
            },
        );
        assert_eq!(dir.view(BLK).map(|(x, _, _)| x), Some(Some(INST3)));

        dir.installed(
            INST2,
            Installed {
                blk: BLK,
                req: 59,
                mode: Mode::X,
                prev_holder: Some(INST3),
                pi_kept: true,
            },
        );

        // Instance 3 still holds it: instance 2's next request goes there.
        assert_eq!(dir.view(BLK).map(|(x, _, _)| x), Some(Some(INST3)));
        let again = current(INST2, 86);
        assert_eq!(
            dir.request(again),
            Some(Route::Forward {
                holder: INST3,
                req: again,
                shared: false,
            })
        );
    }

    #[test]
    fn a_block_still_being_read_at_a_rebuild_waits_for_its_installed() {
        // Seed 40515: instance 2 was granted a disk read in S before the
        // reconfiguration and reports it under way; instance 3 asks for X.
        let mut dir = Directory::new(MASTER);
        let read = Held::Reading {
            mode: Mode::S,
            req: 4,
        };
        dir.rebuild(INST2, BLK, read);
        assert!(dir.finish_rebuild().is_empty());
        assert_eq!(dir.view(BLK), Some((None, vec![INST2], vec![])));
        let x = current(INST3, 24);
        assert_eq!(dir.request(x), None, "queued until the read is installed");
        dir.installed(INST2, Installed::unshipped(BLK, 4, Mode::S));
        let Drained::Route(route) = dir.next_queued(BLK) else {
            panic!("the queued request is routed once the read is in");
        };
        assert_eq!(
            route,
            Route::Forward {
                holder: INST2,
                req: x,
                shared: false,
            },
            "the reader, which holds the block now, gives it up before X is granted"
        );
    }
}
