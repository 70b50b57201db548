//! Changes and their redo, and the checkpoint they leave behind.
//!
//! A session changes a current buffer with `Instance::change_block`: the
//! block makes the [`Change`] (`Block::apply`), and a redo record carrying
//! the same change vector goes to the log buffer. The buffer remembers where
//! its first change not yet on disk begins (`Buffer::first_rba`).
//!
//! **The checkpoint position** is the lowest such address over the dirty
//! buffers and past images this instance changed, or the end of redo when
//! there is none: every change in the thread below it is on disk, in a
//! block a write covered. DBWR reads it off the cache's checkpoint queue
//! at each tick and after each batch (so it may lag, never lead) and LGWR hands it to the store with each redo write, which
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

use super::super::cache::{BufId, BufState, Cache};
use super::super::kernel::Kernel;
use super::Redo;
use crate::config::Nanos;
use crate::types::BlockAddr;

/// Redo bytes recovery reads and applies per second, the rate
/// `fast_start_mttr_target` is turned into a redo bound with: 1 MiB/s, the
/// order of the 11.2 recovery in rac-internals §8 (34 MB of redo scanned,
/// 25 MB applied, in about 56 s).
pub const RECOVERY_REDO_PER_S: u64 = 1 << 20;

impl Redo {
    /// The checkpoint position now (see the module's comment).
    pub fn checkpoint_position(&self, cache: &mut Cache) -> u64 {
        cache
            .first_dirty_rba()
            .unwrap_or_else(|| self.lgwr.end_rba())
    }

    /// With `fast_start_mttr_target` set: the redo address whose changes
    /// must be on disk for recovery to finish within the target.
    pub fn mttr_bound(&self, k: &Kernel) -> Option<u64> {
        let target = u64::from(k.params().fast_start_mttr_target);
        (target > 0).then(|| {
            self.lgwr
                .end_rba()
                .saturating_sub(target.saturating_mul(RECOVERY_REDO_PER_S))
        })
    }

    /// Add to DBWR's candidates `(dirty since, buffer)`, sorted and without
    /// repeats, the buffers whose first change lies below `below`.
    pub fn mttr_candidates(&self, cache: &Cache, below: u64, out: &mut Vec<(Nanos, BufId)>) {
        let before = out.len();
        out.extend(
            cache
                .iter()
                .filter(|(_, b)| {
                    b.dirty()
                        && b.state() == BufState::Xcur
                        && !b.leaving()
                        && b.first_rba().is_some_and(|f| f < below)
                })
                .map(|(id, b)| (b.dirty_since, id)),
        );
        if out.len() > before {
            out.sort_unstable();
            out.dedup();
        }
    }

    /// Past images whose first change lies below `below` hold the
    /// checkpoint back: the blocks whose masters to ask for a write of the
    /// current block now (at most once a second each), in address order.
    pub fn pi_writes_to_ask(&mut self, k: &Kernel, cache: &Cache, below: u64) -> Vec<BlockAddr> {
        let now = k.now();
        let mut blks: Vec<BlockAddr> = cache
            .iter()
            .filter(|(_, b)| b.state() == BufState::Pi && b.first_rba().is_some_and(|f| f < below))
            .map(|(_, b)| b.blk)
            .collect();
        blks.sort_unstable();
        blks.dedup();
        self.pi_writes.forget_asks(|blk| {
            cache
                .buffers_of(blk)
                .any(|id| cache.get(id).state() == BufState::Pi)
        });
        blks.retain(|&blk| self.pi_writes.ask(blk, now));
        blks
    }

    /// The master asked this instance to write its current `blk`: DBWR's next pass does.
    pub fn write_current_asked(&mut self, cache: &Cache, blk: BlockAddr) {
        if let Some(id) = cache.current(blk)
            && cache.get(id).dirty()
        {
            self.pi_writes.asked_to_write(blk);
        }
    }

    /// Add the current blocks the masters asked for to DBWR's candidates,
    /// first. An ask stays until the block is written (a busy writer or
    /// redo still to flush defers it to the next pass) or is no longer
    /// held dirty here.
    pub fn asked_write_candidates(&mut self, cache: &Cache, out: &mut Vec<(Nanos, BufId)>) {
        if self.pi_writes.nothing_to_write() {
            return;
        }
        let blks = self
            .pi_writes
            .writes_due(|blk| cache.current(blk).is_some_and(|id| cache.get(id).dirty()));
        for blk in blks {
            if let Some(id) = cache.current(blk)
                && !cache.get(id).leaving()
            {
                out.push((0, id));
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|c| c.1);
    }

    /// `blk` was written: a write asked for it is done.
    pub fn asked_write_done(&mut self, blk: BlockAddr) {
        self.pi_writes.written(blk);
    }
}
