//! The requesting side of cache fusion: a session's request for a block
//! (`gc_request`), and what comes back: a block (`on_ship`), or a grant to
//! read it from disk, to upgrade the copy held here, or to format a new
//! block (`on_grant`). The foreground that asked installs what came and
//! tells the master (`installed`); the placeholder wait it began
//! (`gc cr request`) is recorded under the name of what happened.
//!
//! `make_room` frees a buffer for whatever is installed (or built) here.

use super::super::events::{IoPurpose, Timer};
use super::super::kernel::Kernel;
use super::super::membership::Net;
use super::super::membership::RETRANSMIT_NS;
use super::super::observe::Hop;
use super::super::observe::Observer;
use super::Foregrounds;
use super::state::{PendingRequest, SessionState};
use crate::block::Block;
use crate::config::Nanos;
use crate::metrics::{BlockKind, Part};
use crate::msg::{Io, Mode, ReqKind, Request, Timing};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Scn};

/// The event a shipped block's wait is recorded under. Congested wins over
/// busy (a flush or pin delayed it), busy over 3-way, 3-way over 2-way.
fn ship_event(kind: BlockKind, congested: bool, busy: bool, hops: u8) -> Wait {
    match (kind, congested, busy, hops) {
        (BlockKind::Cr, true, _, _) => Wait::GcCrBlockCongested,
        (BlockKind::Cr, _, true, _) => Wait::GcCrBlockBusy,
        (BlockKind::Cr, _, _, 3) => Wait::GcCrBlock3Way,
        (BlockKind::Cr, _, _, _) => Wait::GcCrBlock2Way,
        (BlockKind::Current, true, _, _) => Wait::GcCurrentBlockCongested,
        (BlockKind::Current, _, true, _) => Wait::GcCurrentBlockBusy,
        (BlockKind::Current, _, _, 3) => Wait::GcCurrentBlock3Way,
        (BlockKind::Current, _, _, _) => Wait::GcCurrentBlock2Way,
    }
}

impl Foregrounds {
    /// Session `sid` asks for `blk` and waits under the placeholder event.
    /// The request comes back for the dispatcher to count for dynamic
    /// remastering, hold while the block's object moves, and send to the
    /// master (or route through the directory here).
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    pub(in crate::instance) fn gc_request(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        net: Net,
        sid: u32,
        blk: BlockAddr,
        kind: ReqKind,
        scan: bool,
    ) -> Request {
        let id = self.sessions.start_request(blk, sid, k.now(), scan, kind);
        let placeholder = match kind {
            ReqKind::Cr { .. } => Wait::GcCrRequest,
            ReqKind::Current { .. } => Wait::GcCurrentRequest,
        };
        self.begin_wait(k, sid, placeholder, SessionState::WaitBlock);
        let me = k.id();
        self.trace_session_hop(k, obs, sid, me, id, Hop::Request);
        let req = Request {
            id,
            blk,
            requester: me,
            kind,
            timing: Timing::default(),
        };
        // Only a network that drops messages loses a request: over a
        // transport (live) one that broke sends everything again when it is
        // back, and a late block is late, not lost.
        if net.links_lossy() {
            k.arm(RETRANSMIT_NS, Timer::GcLost(blk, id));
        }
        req
    }

    /// 500 ms after request `req` for `blk` went out (or after it was last
    /// called lost), nothing came back (rac-internals §1.10): if its session
    /// still waits for the block or the grant, that wait ends as `gc cr
    /// block lost` (`gc current block lost`), `gc blocks lost` counts it, and
    /// the session waits again: under `gc cr request retry` (`gc current
    /// retry`) when its own request is what the sublayer sends again, else
    /// under the placeholder while the reply is sent again. Another 500 ms
    /// without an answer is another loss. No alert log line: Oracle writes
    /// none for a lost block. `master`: the block's master now.
    pub(in crate::instance) fn gc_lost(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        net: Net,
        master: InstId,
        blk: BlockAddr,
        req: u64,
    ) {
        let Some(pending) = self.sessions.request(blk, req) else {
            return;
        };
        let owner = pending.owner;
        let s = self.sessions.session(owner);
        let cr = match s.waiting_on() {
            _ if s.st != SessionState::WaitBlock => return,
            Some(Wait::GcCrRequest | Wait::GcCrRequestRetry) => true,
            Some(Wait::GcCurrentRequest | Wait::GcCurrentRetry) => false,
            // Granted: the session reads the block from disk now.
            _ => return,
        };
        let (lost, retry, placeholder) = if cr {
            (
                Wait::GcCrBlockLost,
                Wait::GcCrRequestRetry,
                Wait::GcCrRequest,
            )
        } else {
            (
                Wait::GcCurrentBlockLost,
                Wait::GcCurrentRetry,
                Wait::GcCurrentRequest,
            )
        };
        self.end_wait(k, obs, owner, Some(lost));
        k.incr(Stat::GcBlocksLost);
        // The alert log keeps lost blocks beside evictions (bounded: ALERT_LINES_MAX).
        let now = k.now();
        obs.alert(
            now,
            format!(
                "{}: {blk} requested through instance {} (nothing within 500 ms, retried)",
                lost.name(),
                master.number()
            ),
        );
        let again = if master != k.id() && net.request_unacked(master, blk, req) {
            retry
        } else {
            placeholder
        };
        self.begin_wait(k, owner, again, SessionState::WaitBlock);
        k.arm(RETRANSMIT_NS, Timer::GcLost(blk, req));
    }

    /// The event a request's wait ends under when the block or grant came:
    /// `event`, unless the wait is a retry, which keeps its name.
    fn answered_as(&self, sid: u32, event: Wait) -> Option<Wait> {
        match self.sessions.session(sid).waiting_on() {
            Some(Wait::GcCrRequestRetry | Wait::GcCurrentRetry) => None,
            _ => Some(event),
        }
    }

    /// Count a received block and split its receive time the deck's way:
    /// request send, LMS CPU wait, LMS processing, log flush and wire.
    fn count_received(k: &mut Kernel, kind: BlockKind, asked_at: Nanos, sent_at: Nanos, t: Timing) {
        let total = k.now() - asked_at;
        // `sent_at` is on the sender's clock and the timing parts are the
        // peers' measurements: in the live runtime they can add up to a
        // little more than the total, so the remainders are floored at 0.
        let wire = k.now().saturating_sub(sent_at);
        let lms = t.lms_proc + t.pin;
        let request = total.saturating_sub(t.lms_wait + lms + t.flush + wire);
        for (part, v) in [
            (Part::RequestSend, request),
            (Part::LmsCpuWait, t.lms_wait),
            (Part::LmsProcessing, lms),
            (Part::LogFlush, t.flush),
            (Part::Wire, wire),
        ] {
            k.add(part.stat(kind), v);
        }
        match kind {
            BlockKind::Cr => {
                k.incr(Stat::GcCrBlocksReceived);
                k.add(Stat::GcCrBlockReceiveTime, total);
            }
            BlockKind::Current => {
                k.incr(Stat::GcCurrentBlocksReceived);
                k.add(Stat::GcCurrentBlockReceiveTime, total);
            }
        }
    }

    /// The session that asked may go on, unless it stopped waiting meanwhile.
    pub(in crate::instance) fn ready_owner(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        sid: u32,
    ) {
        if self.sessions.session(sid).st == SessionState::WaitBlock {
            self.end_wait(k, obs, sid, None);
            self.set_ready(k, sid);
        }
    }

    /// The trace's last hop of a request: the block (or the grant) reached
    /// the session that asked, whose wait ends as `event` (`None`: the name
    /// it has, a retry's).
    #[inline(always)]
    fn trace_received(
        &self,
        k: &Kernel,
        obs: &mut Observer,
        sid: u32,
        req: Request,
        event: Option<Wait>,
        grant: bool,
    ) {
        if obs.tracing() {
            let event = event
                .or_else(|| self.sessions.session(sid).waiting_on())
                .unwrap_or(Wait::GcCrRequest);
            let hop = if grant {
                Hop::Granted { event }
            } else {
                Hop::Received { event }
            };
            self.trace_session_hop(k, obs, sid, req.requester, req.id, hop);
        }
    }

    /// Session `sid`'s request `req` (of `requester`) passed `hop` now.
    #[inline(always)]
    fn trace_session_hop(
        &self,
        k: &Kernel,
        obs: &mut Observer,
        sid: u32,
        requester: InstId,
        req: u64,
        hop: Hop,
    ) {
        if obs.tracing() {
            let proc = self.sessions.session(sid).proc();
            obs.trace_hop(k.now(), requester, req, hop, proc);
        }
    }
}

impl Foregrounds {
    /// A block arrived for request `req`: the session that asked stops
    /// waiting, its wait named by what happened on the way. The session, or
    /// `None` when no such request is outstanding (the peer's error).
    // Inlined into `on_ship`, its only caller, on the path of every block received.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn ship_arrived(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        from: InstId,
        sent_at: Nanos,
        req: Request,
        block_kind: BlockKind,
        congested: bool,
        hops: u8,
    ) -> Option<u32> {
        let blk = req.blk;
        let Some(pending) = self.sessions.request(blk, req.id) else {
            k.error(&format!(
                "{from} shipped {blk} for request {} we do not have",
                req.id
            ));
            return None;
        };
        self.sessions.end_request(blk);
        Foregrounds::count_received(k, block_kind, pending.sent_at, sent_at, req.timing);
        let busy = req.timing.flush > 0 || req.timing.pin > 0;
        let event = ship_event(block_kind, congested, busy, hops);
        let owner = pending.owner;
        if self.sessions.session(owner).st == SessionState::WaitBlock {
            let event = self.answered_as(owner, event);
            self.trace_received(k, obs, owner, req, event, false);
            self.end_wait(k, obs, owner, event);
            self.set_ready(k, owner);
        } else {
            self.trace_received(k, obs, owner, req, Some(event), false);
        }
        Some(owner)
    }

    /// An unrolled image (light work) for session `sid`, as of the sender's
    /// SCN: its CR copy is built here when the session looks again.
    pub(in crate::instance) fn keep_raw(&mut self, sid: u32, block: Block, sender_scn: Scn) {
        self.sessions.session_mut(sid).raw = Some((Box::new(block), sender_scn));
    }

    /// The master granted request `req` without a block: the session's wait
    /// ends, named by the grant. The request, or `None` when no such request
    /// is outstanding (the peer's error).
    pub(in crate::instance) fn grant_arrived(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        req: Request,
    ) -> Option<PendingRequest> {
        let Some(pending) = self.sessions.request(req.blk, req.id) else {
            k.error(&format!(
                "grant for {} request {} we do not have",
                req.blk, req.id
            ));
            return None;
        };
        let congested = req.timing.lms_wait > super::super::gc::CONGESTED_AFTER_NS;
        let event = match (req.kind, congested) {
            (ReqKind::Cr { .. }, false) => Wait::GcCrGrant2Way,
            (ReqKind::Cr { .. }, true) => Wait::GcCrGrantCongested,
            (ReqKind::Current { .. }, false) => Wait::GcCurrentGrant2Way,
            (ReqKind::Current { .. }, true) => Wait::GcCurrentGrantCongested,
        };
        if self.sessions.session(pending.owner).st == SessionState::WaitBlock {
            let event = self.answered_as(pending.owner, event);
            self.trace_received(k, obs, pending.owner, req, event, true);
            self.end_wait(k, obs, pending.owner, event);
        } else {
            self.trace_received(k, obs, pending.owner, req, Some(event), true);
        }
        Some(pending)
    }

    /// The master here granted request `req`: no message and no gc wait.
    pub(in crate::instance) fn local_grant_arrived(
        &mut self,
        k: &Kernel,
        obs: &mut Observer,
        req: Request,
    ) -> Option<PendingRequest> {
        let pending = self.sessions.request(req.blk, req.id)?;
        // The placeholder wait never really happened.
        self.sessions.forget_wait(pending.owner);
        self.trace_session_hop(k, obs, pending.owner, req.requester, req.id, Hop::Abandoned);
        Some(pending)
    }

    /// A read from disk was granted: the session waits for it.
    pub(in crate::instance) fn read_granted(
        &mut self,
        k: &mut Kernel,
        pending: PendingRequest,
        req: Request,
        mode: Mode,
    ) {
        let blk = req.blk;
        let event = if pending.scan {
            Wait::DbFileScatteredRead
        } else {
            Wait::DbFileSequentialRead
        };
        self.begin_wait(k, pending.owner, event, SessionState::WaitBlock);
        k.start_io(
            Io::ReadBlock { blk },
            IoPurpose::GrantRead {
                blk,
                req: req.id,
                mode,
                scan: pending.scan,
            },
        );
    }

    /// The request for `blk` is answered (installed, upgraded, or made moot).
    #[inline]
    pub(in crate::instance) fn end_request(&mut self, blk: BlockAddr) {
        self.sessions.end_request(blk);
    }

    /// This instance's past image of `blk` became the current block (a
    /// reconfiguration promoted it): a request of ours for the block is
    /// answered by it. The session that asked, to wake.
    pub(in crate::instance) fn answered_by_promotion(&mut self, blk: BlockAddr) -> Option<u32> {
        let owner = self.sessions.request_for(blk)?.owner;
        self.sessions.end_request(blk);
        Some(owner)
    }

    /// The request `req` for `blk`, if it is outstanding.
    #[inline]
    pub(in crate::instance) fn request(&self, blk: BlockAddr, req: u64) -> Option<PendingRequest> {
        self.sessions.request(blk, req)
    }

    /// The locality group whose buffers `taker` prefers (NUMA-aware only).
    pub(in crate::instance) fn taker_group(&self, k: &Kernel, taker: u32) -> Option<u8> {
        match k.numa() {
            Some(n) if n.aware() => Some(n.home(self.sessions.session(taker).proc)),
            _ => None,
        }
    }

    /// Whether a session here needs `blk` (a victim must not be it).
    #[inline]
    pub(in crate::instance) fn need(&self, blk: BlockAddr) -> bool {
        self.sessions.need(blk)
    }
}
