//! Dynamic remastering (DRM, rac-internals.md §1.9): an object's blocks
//! move to the instance that uses them, so that it grants them locally.
//!
//! - **Statistics** (x$object_policy_statistics): each instance counts its
//!   own opens of each object's blocks (requests to a master, S and X) over
//!   `_gc_policy_time` windows. A window is closed at the first input after
//!   it ended (an instance has one at least every second: CSS's heartbeat
//!   tick), with no timer of its own, so a run that never reaches a
//!   window's end (every shipped scenario at the 10-minute default) sends
//!   nothing and moves no event. The objects over `_gc_policy_minimum` per
//!   minute go to the coordinator, the lowest member, as the
//!   reconfiguration has one; a report more than a window late is dropped.
//! - **Decision** (LMD's affinity queue): the coordinator remasters an
//!   object to an instance whose opens in a window are more than twice any
//!   other's reported for that window, unless it masters the object
//!   already; one DRM at a time in the cluster.
//! - **The move**, a reconfiguration scoped to one object: `Freeze` to every
//!   member (new requests for the object's blocks wait under `gc remaster`,
//!   held where they start); each member is `Quiet` once none of its own
//!   requests for the object is in flight; then `Transfer`: each member
//!   drops what it masters of the object, takes the new master and reports
//!   its holdings of the object's blocks to it (`Rebuild`, the
//!   reconfiguration's report filtered by object); the new master rebuilds
//!   and says `Done`, and the held requests go to it.
//!
//! Every message is checked as a peer's: one that does not fit the DRM in
//! progress is a protocol error, never an assertion.

use super::GlobalCache;
use super::masters::PfMaster;
use super::report::held_blocks;
use crate::config::Nanos;
use crate::instance::cache::Cache;
use crate::instance::kernel::Kernel;
use crate::layout::Layout;
use crate::msg::{Held, Msg, Request};
use crate::types::{BlockAddr, InstId, InstSet};
use rustc_hash::FxHashMap;

/// Requests (and messages at the new master) held while one object moves:
/// at most one per session and block, far below this; reaching it is an
/// error of the run.
pub const DRM_HELD_MAX: usize = 1 << 16;

/// A window's opens of one object by this instance.
#[derive(Clone, Copy, Debug, Default)]
struct Opens {
    shared: u64,
    exclusive: u64,
}

/// The DRM the coordinator runs.
#[derive(Clone, Debug)]
pub struct Running {
    pub drm: u32,
    pub object: u32,
    pub to: InstId,
    pub began: Nanos,
    quiet: InstSet,
}

/// A member's part in the DRM in progress.
#[derive(Clone, Debug)]
struct Frozen {
    /// When this member froze the object, and when it transferred it.
    since: Nanos,
    transferred_at: Nanos,
    drm: u32,
    object: u32,
    to: InstId,
    quiet_sent: bool,
    /// Took the new master and reported to it.
    transferred: bool,
    /// At the new master: its old entries of the object are gone (at its
    /// own transfer or at the first report, whichever came first).
    dropped: bool,
    /// At the new master: who reported.
    reported: InstSet,
    /// At the new master: every member reported.
    complete: bool,
    /// New requests of this instance for the object's blocks.
    held: Vec<Request>,
    /// At the new master: messages for the object's blocks that came
    /// between its drop and the last report.
    held_msgs: Vec<(InstId, Msg)>,
}

#[derive(Debug, Default)]
pub(super) struct Drm {
    /// The policy window the counts are of, and when it ends (0: not known yet).
    window: u64,
    window_end: Nanos,
    opens: FxHashMap<u32, Opens>,
    /// Coordinator: the newest window reported, and its reports (object, instance, opens).
    window_seen: u64,
    reports: Vec<(u32, InstId, u64)>,
    running: Option<Running>,
    /// The last DRM number used here as coordinator.
    last_begun: u32,
    /// The last DRM number this member took part in, this incarnation.
    last_seen: u32,
    frozen: Option<Frozen>,
    /// The coordinator's freeze of the next DRM, come before the new
    /// master's `Done` of the one still frozen here (they travel on
    /// different links): taken once that one ends.
    next_freeze: Option<(InstId, u32, u32, InstId)>,
}

/// A DRM ended at this member.
#[derive(Debug)]
pub struct Ended {
    /// Its requests held meanwhile, for the new master.
    pub held: Vec<Request>,
    /// From the freeze to the end, and to the transfer.
    pub remaster_ns: Nanos,
    pub quiesce_ns: Nanos,
}

/// What a member does when the coordinator says `Transfer`.
#[derive(Debug)]
pub struct Transfer {
    pub to: InstId,
    pub blocks: Vec<(BlockAddr, Held)>,
    /// Requests still queued here on the object's blocks (none when every
    /// member was quiet), for the new master.
    pub leftover: Vec<Request>,
}

impl GlobalCache {
    // ----- statistics -------------------------------------------------------------

    /// This instance opens `blk` at its master (`exclusive`: in X). When
    /// this starts a new policy window, the closed window's objects over
    /// `_gc_policy_minimum`, by pkey, for the coordinator (`None` when none
    /// was, or DRM is off).
    pub fn drm_count(&mut self, k: &Kernel, blk: BlockAddr, exclusive: bool) -> Option<Msg> {
        let window_ns = k.params().gc_policy_time_ns;
        if window_ns == 0 {
            return None;
        }
        let report = self.drm_tick(k);
        let Some(object) = k.layout().object_of(blk) else {
            return report;
        };
        let o = self.drm.opens.entry(object).or_default();
        if exclusive {
            o.exclusive += 1;
        } else {
            o.shared += 1;
        }
        report
    }

    /// At every input: when the policy window has ended, close it (see
    /// [`GlobalCache::drm_count`] for what it returns).
    #[inline(always)]
    pub fn drm_tick(&mut self, k: &Kernel) -> Option<Msg> {
        if k.now() < self.drm.window_end {
            return None;
        }
        self.drm_next_window(k)
    }

    #[inline(never)]
    fn drm_next_window(&mut self, k: &Kernel) -> Option<Msg> {
        let window_ns = k.params().gc_policy_time_ns;
        if window_ns == 0 {
            self.drm.window_end = Nanos::MAX;
            return None;
        }
        let window = k.now() / window_ns;
        self.drm.window_end = (window + 1).saturating_mul(window_ns);
        if window == self.drm.window {
            return None;
        }
        self.drm_close_window(k, window)
    }

    fn drm_close_window(&mut self, k: &Kernel, next: u64) -> Option<Msg> {
        let p = k.params();
        // `_gc_policy_minimum` is per minute: over a window of another length, in proportion.
        let threshold = (u128::from(p.gc_policy_minimum) * u128::from(p.gc_policy_time_ns))
            .div_ceil(60 * u128::from(crate::config::NS_PER_S))
            .max(1);
        let mut objects: Vec<(u32, u64)> = self
            .drm
            .opens
            .iter()
            .map(|(&o, n)| (o, n.shared + n.exclusive))
            .filter(|&(_, n)| u128::from(n) >= threshold)
            .collect();
        objects.sort_unstable();
        let window = std::mem::replace(&mut self.drm.window, next);
        self.drm.opens.clear();
        (!objects.is_empty())
            .then(|| Msg::Drm(Box::new(crate::msg::DrmMsg::Stats { window, objects })))
    }

    /// Coordinator: `from`'s objects over the minimum in `window`. The DRM
    /// to begin, if one object is now dominated by `from`.
    pub fn drm_stats(
        &mut self,
        k: &Kernel,
        from: InstId,
        window: u64,
        objects: &[(u32, u64)],
    ) -> Result<Option<(u32, InstId)>, String> {
        let layout = k.layout();
        if let Some(&(o, _)) = objects.iter().find(|(o, _)| *o >= layout.object_count()) {
            return Err(format!("{from} reported gc activity of unknown pkey {o}"));
        }
        // The affinity of a window long gone says nothing of now.
        let current = k.now() / k.params().gc_policy_time_ns.max(1);
        if window < self.drm.window_seen || window.saturating_add(1) < current {
            return Ok(None);
        }
        if window > self.drm.window_seen {
            self.drm.window_seen = window;
            self.drm.reports.clear();
        }
        for &(o, n) in objects {
            if self
                .drm
                .reports
                .iter()
                .any(|&(ro, ri, _)| ro == o && ri == from)
            {
                return Err(format!(
                    "{from} reported pkey {o} twice for policy window {window}"
                ));
            }
            // Bounded: one row per object and instance of one window.
            self.drm.reports.push((o, from, n));
        }
        if self.drm.running.is_some() {
            return Ok(None);
        }
        for &(o, n) in objects {
            let dominant = self
                .drm
                .reports
                .iter()
                .all(|&(ro, ri, rn)| ro != o || ri == from || n > 2 * rn);
            if dominant && self.masters.object(o) != Some(from) {
                return Ok(Some((o, from)));
            }
        }
        Ok(None)
    }

    // ----- the coordinator ---------------------------------------------------------

    /// Begin remastering `object` to `to`: its DRM number.
    pub fn drm_begin(&mut self, object: u32, to: InstId, now: Nanos) -> u32 {
        debug_assert!(self.drm.running.is_none(), "one DRM at a time");
        let drm = self.drm.last_begun.max(self.drm.last_seen) + 1;
        self.drm.last_begun = drm;
        self.drm.running = Some(Running {
            drm,
            object,
            to,
            began: now,
            quiet: InstSet::default(),
        });
        drm
    }

    /// `from` is quiet: true once every member is.
    pub fn drm_quiet(&mut self, from: InstId, drm: u32, members: InstSet) -> Result<bool, String> {
        let Some(r) = self.drm.running.as_mut().filter(|r| r.drm == drm) else {
            return Err(format!(
                "{from} said quiet for DRM({drm}), which is not running here"
            ));
        };
        if r.quiet.contains(from) {
            return Err(format!("{from} said quiet for DRM({drm}) twice"));
        }
        r.quiet.insert(from);
        Ok(members.iter().all(|m| r.quiet.contains(m)))
    }

    /// The DRM this coordinator runs ended: its figures for the alert log.
    pub fn drm_ended(&mut self, drm: u32) -> Option<Running> {
        self.drm.running.take_if(|r| r.drm == drm)
    }

    // ----- every member ------------------------------------------------------------

    /// The coordinator `from` froze `object` for DRM `drm` to `to`. True
    /// when frozen now; false when it waits for the DRM frozen here to end.
    pub fn drm_freeze(
        &mut self,
        layout: &Layout,
        from: InstId,
        coordinator: InstId,
        (drm, object, to): (u32, u32, InstId),
        members: InstSet,
        now: Nanos,
    ) -> Result<bool, String> {
        if from != coordinator {
            return Err(format!(
                "{from} began DRM({drm}) but the coordinator is {coordinator}"
            ));
        }
        if let Some(f) = &self.drm.frozen {
            // The coordinator began it once the one frozen here was done
            // at the coordinator: its `Done` is on its way here.
            if drm > f.drm && self.drm.next_freeze.is_none() {
                self.drm.next_freeze = Some((from, drm, object, to));
                return Ok(false);
            }
            return Err(format!("{from} began DRM({drm}) while DRM({}) runs", f.drm));
        }
        if drm <= self.drm.last_seen {
            return Err(format!(
                "{from} began DRM({drm}) after DRM({}): out of order",
                self.drm.last_seen
            ));
        }
        if object >= layout.object_count() || !members.contains(to) {
            return Err(format!(
                "{from} began DRM({drm}) of pkey {object} to {to}: no such object or member"
            ));
        }
        self.drm.last_seen = drm;
        self.drm.frozen = Some(Frozen {
            since: now,
            transferred_at: now,
            drm,
            object,
            to,
            quiet_sent: false,
            transferred: false,
            dropped: false,
            reported: InstSet::default(),
            complete: false,
            held: Vec::new(),
            held_msgs: Vec::new(),
        });
        Ok(true)
    }

    /// A freeze that came before the end of the DRM frozen here, to take
    /// now that it ended (see `Drm::next_freeze`).
    pub fn drm_take_next_freeze(&mut self) -> Option<(InstId, u32, u32, InstId)> {
        if self.drm.frozen.is_some() {
            return None;
        }
        self.drm.next_freeze.take()
    }

    /// A new request for `blk` waits for the DRM in progress (`gc remaster`).
    #[inline]
    pub fn drm_holds(&self, layout: &Layout, blk: BlockAddr) -> bool {
        self.drm
            .frozen
            .as_ref()
            .is_some_and(|f| layout.object_of(blk) == Some(f.object))
    }

    /// Keep a request until the DRM is done.
    pub fn drm_hold(&mut self, req: Request) -> Result<(), String> {
        let Some(f) = self.drm.frozen.as_mut() else {
            return Err(format!("request {} held with no DRM running", req.id));
        };
        if f.held.len() >= DRM_HELD_MAX {
            return Err(format!(
                "DRM({}): more than {DRM_HELD_MAX} requests held",
                f.drm
            ));
        }
        f.held.push(req);
        Ok(())
    }

    /// The DRM in progress waits for this member to say it is quiet:
    /// (DRM number, object).
    #[inline]
    pub fn drm_awaits_quiet(&self) -> Option<(u32, u32)> {
        self.drm
            .frozen
            .as_ref()
            .filter(|f| !f.quiet_sent)
            .map(|f| (f.drm, f.object))
    }

    /// Whether request `id` for `blk` is one the DRM holds here.
    pub fn drm_is_held(&self, blk: BlockAddr, id: u64) -> bool {
        self.drm
            .frozen
            .as_ref()
            .is_some_and(|f| f.held.iter().any(|r| r.blk == blk && r.id == id))
    }

    pub fn drm_quiet_sent(&mut self) {
        if let Some(f) = self.drm.frozen.as_mut() {
            f.quiet_sent = true;
        }
    }

    /// The coordinator `from` says every member is quiet: drop what is
    /// mastered here of the object, take its new master, and report what
    /// this instance holds of it.
    pub fn drm_transfer(
        &mut self,
        k: &Kernel,
        cache: &Cache,
        from: InstId,
        coordinator: InstId,
        drm: u32,
    ) -> Result<Transfer, String> {
        if from != coordinator {
            return Err(format!(
                "{from} moved DRM({drm}) on but the coordinator is {coordinator}"
            ));
        }
        let layout = k.layout();
        let Some(f) = self.drm.frozen.as_mut().filter(|f| f.drm == drm) else {
            return Err(format!(
                "{from} moved DRM({drm}) on, which is not running here"
            ));
        };
        if !f.quiet_sent || f.transferred {
            return Err(format!("{from} moved DRM({drm}) on out of turn"));
        }
        f.transferred = true;
        f.transferred_at = k.now();
        let (object, to) = (f.object, f.to);
        let leftover = if f.dropped {
            Vec::new()
        } else {
            f.dropped = true;
            self.directory
                .drop_object(|b| layout.object_of(b) == Some(object))
        };
        self.masters.remaster(object, to);
        let blocks = held_blocks(k, cache)
            .into_iter()
            .filter(|&(b, _)| layout.object_of(b) == Some(object))
            .collect();
        Ok(Transfer {
            to,
            blocks,
            leftover,
        })
    }

    /// The new master: `from`'s holdings of the object. True once every
    /// member has reported (the object is rebuilt here).
    pub fn drm_rebuild(
        &mut self,
        layout: &Layout,
        from: InstId,
        drm: u32,
        blocks: Vec<(BlockAddr, Held)>,
        members: InstSet,
    ) -> Result<(bool, Vec<Request>), String> {
        let me = self.directory.me();
        let Some(f) = self
            .drm
            .frozen
            .as_mut()
            .filter(|f| f.drm == drm && f.to == me && !f.complete)
        else {
            return Err(format!(
                "{from} reported for DRM({drm}), which does not move anything here"
            ));
        };
        if f.reported.contains(from) || !members.contains(from) {
            return Err(format!(
                "{from} reported for DRM({drm}) twice or as a non-member"
            ));
        }
        let object = f.object;
        if let Some((b, _)) = blocks
            .iter()
            .find(|(b, _)| layout.object_of(*b) != Some(object))
        {
            return Err(format!(
                "{from} reported {b} for DRM({drm}) of pkey {object}"
            ));
        }
        f.reported.insert(from);
        let leftover = if f.dropped {
            Vec::new()
        } else {
            f.dropped = true;
            self.directory
                .drop_object(|b| layout.object_of(b) == Some(object))
        };
        for (blk, held) in blocks {
            self.directory.rebuild(from, blk, held);
        }
        let f = self.drm.frozen.as_mut().filter(|f| f.drm == drm);
        let complete = f.is_some_and(|f| {
            f.complete = members.iter().all(|m| f.reported.contains(m));
            f.complete
        });
        if complete {
            self.directory
                .finish_object(|b| layout.object_of(b) == Some(object));
        }
        Ok((complete, leftover))
    }

    /// At the new master, a message for `blk` waits until every member
    /// has reported (its sender may have reported already, or not yet).
    #[inline]
    pub fn drm_holds_message(&self, layout: &Layout, blk: BlockAddr) -> bool {
        self.drm.frozen.as_ref().is_some_and(|f| {
            f.dropped
                && !f.complete
                && f.to == self.directory.me()
                && layout.object_of(blk) == Some(f.object)
        })
    }

    pub fn drm_hold_message(&mut self, from: InstId, msg: Msg) -> Result<(), String> {
        let Some(f) = self.drm.frozen.as_mut() else {
            return Err(format!("a message from {from} held with no DRM running"));
        };
        if f.held_msgs.len() >= DRM_HELD_MAX {
            return Err(format!(
                "DRM({}): more than {DRM_HELD_MAX} messages held",
                f.drm
            ));
        }
        f.held_msgs.push((from, msg));
        Ok(())
    }

    /// The new master rebuilt the object: the messages held meanwhile.
    pub fn drm_take_held_messages(&mut self) -> Vec<(InstId, Msg)> {
        self.drm
            .frozen
            .as_mut()
            .map(|f| std::mem::take(&mut f.held_msgs))
            .unwrap_or_default()
    }

    /// The new master `from` says DRM `drm` is done: the requests held here
    /// go to it now.
    pub fn drm_done(&mut self, from: InstId, drm: u32, now: Nanos) -> Result<Ended, String> {
        match self.drm.frozen.take() {
            Some(f) if f.drm == drm && f.to == from && f.transferred && f.held_msgs.is_empty() => {
                Ok(Ended {
                    held: f.held,
                    remaster_ns: now - f.since,
                    quiesce_ns: f.transferred_at - f.since,
                })
            }
            other => {
                self.drm.frozen = other;
                Err(format!(
                    "{from} ended DRM({drm}), which it does not run here"
                ))
            }
        }
    }

    /// A DRM runs, or one has moved an object: LMS screens what it takes.
    #[inline(always)]
    pub fn drm_in_play(&self) -> bool {
        self.drm.frozen.is_some() || !self.masters.remastered().is_empty()
    }

    /// A message for `blk` reached this instance as its master, but DRM
    /// moved the block's object elsewhere since it was sent.
    #[inline]
    pub fn drm_moved_away(&self, layout: &Layout, blk: BlockAddr) -> Option<InstId> {
        if self.masters.remastered().is_empty() {
            return None;
        }
        let m = self.masters.object(layout.object_of(blk)?)?;
        (m != self.directory.me()).then_some(m)
    }

    /// A reconfiguration: the DRM in progress is abandoned (its held
    /// requests are among the outstanding ones the reconfiguration asks
    /// again for) and the next incarnation numbers afresh. Returns the
    /// abandoned DRM's number.
    pub fn drm_cancel(&mut self) -> Option<u32> {
        self.drm.last_seen = 0;
        self.drm.reports.clear();
        let running = self.drm.running.take().map(|r| r.drm);
        let frozen = self.drm.frozen.take().map(|f| f.drm);
        self.drm.next_freeze = None;
        running.or(frozen)
    }

    /// `V$GCSPFMASTER_INFO`: the objects remastered since the last reconfiguration.
    pub fn remastered(&self) -> &[PfMaster] {
        self.masters.remastered()
    }
}
