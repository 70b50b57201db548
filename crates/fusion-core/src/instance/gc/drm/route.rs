//! Dynamic remastering's steps as `GlobalCache`'s methods (the state and
//! the protocol are in drm.rs).

use super::super::GlobalCache;
use super::super::masters::PfMaster;
use super::super::report::held_blocks;
use super::{DRM_HELD_MAX, Ended, Frozen, Running, Transfer};
use crate::config::Nanos;
use crate::instance::cache::Cache;
use crate::instance::kernel::Kernel;
use crate::layout::Layout;
use crate::msg::{Held, Msg, Request};
use crate::types::{BlockAddr, InstId, InstSet};

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
