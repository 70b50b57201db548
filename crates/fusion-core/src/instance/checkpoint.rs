//! Changes and their redo, and the checkpoint they leave behind.
//!
//! A session changes a current buffer with [`Instance::change_block`]: the
//! block makes the [`Change`] (`Block::apply`), and a redo record carrying
//! the same change vector goes to the log buffer. The buffer remembers where
//! its first change not yet on disk begins (`Buffer::first_rba`).
//!
//! **The checkpoint position** is the lowest such address over the dirty
//! buffers and past images this instance changed, or the end of redo when
//! there is none: every change in the thread below it is on disk, in a
//! block a write covered. DBWR works it out at each tick (so it may lag,
//! never lead) and LGWR hands it to the store with each redo write, which
//! drops the redo before it. A write that completes after the block changed
//! again moves the buffer's address to where the written image's last
//! change ended; a past image that replaces an older one keeps the older
//! one's address, since its changes are not on disk either.
//!
//! **`fast_start_mttr_target`** (seconds; 0, the default, leaves DBWR as it
//! was): recovery must read and apply the redo after the checkpoint, at
//! [`RECOVERY_REDO_PER_S`]. So a target of T seconds allows T ×
//! `RECOVERY_REDO_PER_S` bytes of redo between the checkpoint and the end of
//! redo, and each DBWR pass also writes the dirty current buffers whose first
//! change lies further back than that (oldest first, within the writers'
//! batches). A lower target means more writes and less redo to apply after
//! a crash. A past image is not written by its holder (Oracle would ask the
//! master for a write of the current block): a block that keeps moving
//! between instances keeps the checkpoints of its past images' holders back
//! until its current holder writes it.

use super::Instance;
use super::cache::BufId;
use crate::block::Change;
use crate::config::Nanos;
use crate::msg::RedoRecord;
use crate::stats::Stat;
use crate::types::{Scn, Xid};

/// Redo bytes recovery reads and applies per second, the rate
/// `fast_start_mttr_target` is turned into a redo bound with: 1 MiB/s, the
/// order of the 11.2 recovery in rac-internals §8 (34 MB of redo scanned,
/// 25 MB applied, in about 56 s).
pub const RECOVERY_REDO_PER_S: u64 = 1 << 20;

impl Instance {
    /// Make `change` to the current buffer `buf` under `xid` at `scn`, and
    /// log it as `bytes` of redo. False, with nothing done, when the change
    /// does not fit the block.
    pub(super) fn change_block(
        &mut self,
        buf: BufId,
        change: Change,
        xid: Xid,
        scn: Scn,
        bytes: u32,
    ) -> bool {
        if !self.cache.get_mut(buf).image.apply(&change, xid, scn) {
            return false;
        }
        self.log_change(buf, change, xid, scn, bytes);
        true
    }

    /// Log a change already made to `buf` (see [`Instance::change_block`]).
    pub(super) fn log_change(
        &mut self,
        buf: BufId,
        change: Change,
        xid: Xid,
        scn: Scn,
        bytes: u32,
    ) {
        let blk = self.cache.get(buf).blk;
        let rba = self.redo(RedoRecord::change(scn, xid, blk, bytes, change));
        self.dirtied(buf, rba, bytes);
    }

    /// Mark a current buffer changed by the `bytes` of redo that end at `rba`.
    fn dirtied(&mut self, buf: BufId, rba: u64, bytes: u32) {
        // A change clears the block's fairness counter.
        if self.cache.dirtied(buf, rba, self.now) {
            self.stats.incr(Stat::GcCrFairnessClears);
        }
        let b = self.cache.get_mut(buf);
        if b.first_rba.is_none() {
            b.first_rba = Some(rba - u64::from(bytes));
        }
        self.stats.incr(Stat::DbBlockChanges);
    }

    /// The checkpoint position now (see the module's comment).
    pub(super) fn checkpoint_position(&self) -> u64 {
        self.cache
            .iter()
            .filter_map(|(_, b)| b.first_rba)
            .min()
            .unwrap_or_else(|| self.lgwr.end_rba())
    }

    /// With `fast_start_mttr_target` set: the redo address whose changes
    /// must be on disk for recovery to finish within the target.
    pub(super) fn mttr_bound(&self) -> Option<u64> {
        let target = u64::from(self.params.fast_start_mttr_target);
        (target > 0).then(|| {
            self.lgwr
                .end_rba()
                .saturating_sub(target.saturating_mul(RECOVERY_REDO_PER_S))
        })
    }

    /// Add to DBWR's candidates `(dirty since, buffer)`, sorted and without
    /// repeats, the buffers whose first change lies below `below`.
    pub(super) fn mttr_candidates(&self, below: u64, out: &mut Vec<(Nanos, BufId)>) {
        let before = out.len();
        out.extend(
            self.cache
                .iter()
                .filter(|(_, b)| {
                    b.dirty
                        && b.state == super::BufState::Xcur
                        && !b.leaving
                        && b.first_rba.is_some_and(|f| f < below)
                })
                .map(|(id, b)| (b.dirty_since, id)),
        );
        if out.len() > before {
            out.sort_unstable();
            out.dedup();
        }
    }
}
