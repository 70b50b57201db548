//! Choosing a buffer to replace: the scan from the cold end of the LRU,
//! and the run of buffers at that end that cannot be reused (dirty, past
//! images, leaving) which later scans count without walking again (the
//! cache's `StuckTail`).

use super::{BlockAddr, BufId, BufState, Cache, NIL, SCAN_MAX};

/// What to do with a buffer chosen for replacement.
pub enum Victim {
    /// Free to reuse; if it was a current copy the master must be told.
    Free {
        relinquish: Option<(BlockAddr, BufState)>,
    },
    /// Nothing could be replaced.
    None,
}

impl Cache {
    /// Find a buffer to replace, from the cold end: CR copies and clean,
    /// unpinned current buffers. Dirty buffers and past images are skipped
    /// (DBWR must write them first). A replaceable buffer `prefer` accepts is
    /// taken first (one of the taker's own locality group, with NUMA
    /// support); else the coldest replaceable one. Returns the victim and how
    /// many were inspected.
    pub fn victim(
        &mut self,
        busy: impl Fn(BlockAddr) -> bool,
        prefer: impl Fn(BufId) -> bool,
    ) -> (Victim, u32) {
        #[cfg(debug_assertions)]
        let walked = self.walk_for_victim(&busy, &prefer);
        let (found, inspected) = self.scan_for_victim(&busy, &prefer);
        #[cfg(debug_assertions)]
        assert_eq!(
            (found, inspected),
            walked,
            "the victim scan that skips the stuck tail disagrees with a plain walk"
        );
        match found {
            Some(at) => (self.replace(at), inspected),
            None => (Victim::None, inspected),
        }
    }

    /// [`Cache::victim`]'s choice and count, starting past the stuck tail
    /// and extending it with what this scan finds.
    pub(super) fn scan_for_victim(
        &mut self,
        busy: &impl Fn(BlockAddr) -> bool,
        prefer: &impl Fn(BufId) -> bool,
    ) -> (Option<BufId>, u32) {
        let tail = self.stuck_tail;
        let (mut at, mut inspected) = if tail.len > 0 {
            (self.links[tail.last as usize].prev, tail.len)
        } else {
            (self.lru_tail, 0)
        };
        // Still in the run of buffers from the tail that are not reusable.
        let mut stuck = true;
        let mut fallback = None;
        while at != NIL && inspected < SCAN_MAX {
            inspected += 1;
            let link = &mut self.links[at as usize];
            let prev = link.prev;
            if !self.reusable[at as usize] {
                if stuck {
                    link.stuck = tail.epoch;
                    self.stuck_tail.len = inspected;
                    self.stuck_tail.last = at;
                }
            } else {
                stuck = false;
                // Only a reusable buffer is looked at itself.
                let b = self.get(at);
                if !b.pinned() && !busy(b.blk) {
                    if prefer(at) {
                        return (Some(at), inspected);
                    }
                    fallback = fallback.or(Some(at));
                }
            }
            at = prev;
        }
        (fallback, inspected)
    }

    /// The victim scan as plainly written, changing nothing: what
    /// [`Cache::scan_for_victim`] must agree with.
    #[cfg(any(test, debug_assertions))]
    pub(super) fn walk_for_victim(
        &self,
        busy: &impl Fn(BlockAddr) -> bool,
        prefer: &impl Fn(BufId) -> bool,
    ) -> (Option<BufId>, u32) {
        let mut at = self.lru_tail;
        let mut inspected = 0;
        let mut fallback = None;
        while at != NIL && inspected < SCAN_MAX {
            inspected += 1;
            let b = self.get(at);
            assert_eq!(
                self.reusable[at as usize],
                b.reusable(),
                "buffer {at}'s reusable mark is stale"
            );
            if b.replaceable() && !busy(b.blk) {
                if prefer(at) {
                    return (Some(at), inspected);
                }
                fallback = fallback.or(Some(at));
            }
            at = self.links[at as usize].prev;
        }
        (fallback, inspected)
    }

    /// Drop replaceable buffer `at`, saying whether the master must be told.
    pub(super) fn replace(&mut self, at: BufId) -> Victim {
        let b = self.get(at);
        let relinquish = b.is_current().then_some((b.blk, b.state));
        self.discard(at);
        Victim::Free { relinquish }
    }

    #[inline]
    pub(super) fn set_reusable(&mut self, id: BufId, reusable: bool) {
        self.reusable[id as usize] = reusable;
        if reusable && self.in_stuck_tail(id) {
            self.forget_stuck_tail();
        }
    }

    #[inline]
    pub(super) fn in_stuck_tail(&self, id: BufId) -> bool {
        self.stuck_tail.len > 0 && self.links[id as usize].stuck == self.stuck_tail.epoch
    }

    /// The stuck tail is no longer known: the next scan walks from the tail.
    #[cold]
    pub(super) fn forget_stuck_tail(&mut self) {
        let t = &mut self.stuck_tail;
        t.len = 0;
        t.last = NIL;
        if t.epoch == u32::MAX {
            // Stamps of old epochs must never match a new one.
            for link in &mut self.links {
                link.stuck = 0;
            }
            t.epoch = 0;
        }
        t.epoch += 1;
    }
}
