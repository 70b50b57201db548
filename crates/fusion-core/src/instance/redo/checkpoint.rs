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

use super::super::Instance;
use super::super::cache::{BufId, BufState};
use crate::block::Change;
use crate::config::Nanos;
use crate::msg::RedoRecord;
use crate::stats::Stat;
use crate::types::{BlockAddr, Scn, Xid};

/// Redo bytes recovery reads and applies per second, the rate
/// `fast_start_mttr_target` is turned into a redo bound with: 1 MiB/s, the
/// order of the 11.2 recovery in rac-internals §8 (34 MB of redo scanned,
/// 25 MB applied, in about 56 s).
pub const RECOVERY_REDO_PER_S: u64 = 1 << 20;

impl Instance {
    /// Make `change` to the current buffer `buf` under `xid` at `scn`, and
    /// log it as `bytes` of redo. False, with nothing done, when the change
    /// does not fit the block.
    pub(in crate::instance) fn change_block(
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
    pub(in crate::instance) fn log_change(
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
        if self.cache.dirtied(buf, rba, self.k.now()) {
            self.k.incr(Stat::GcCrFairnessClears);
        }
        if self.cache.get(buf).first_rba().is_none() {
            self.cache.set_first_rba(buf, Some(rba - u64::from(bytes)));
        }
        self.k.incr(Stat::DbBlockChanges);
    }

    /// The checkpoint position now (see the module's comment).
    pub(in crate::instance) fn checkpoint_position(&mut self) -> u64 {
        self.cache
            .first_dirty_rba()
            .unwrap_or_else(|| self.redo.lgwr.end_rba())
    }

    /// With `fast_start_mttr_target` set: the redo address whose changes
    /// must be on disk for recovery to finish within the target.
    pub(in crate::instance) fn mttr_bound(&self) -> Option<u64> {
        let target = u64::from(self.k.params().fast_start_mttr_target);
        (target > 0).then(|| {
            self.redo
                .lgwr
                .end_rba()
                .saturating_sub(target.saturating_mul(RECOVERY_REDO_PER_S))
        })
    }

    /// Add to DBWR's candidates `(dirty since, buffer)`, sorted and without
    /// repeats, the buffers whose first change lies below `below`.
    pub(in crate::instance) fn mttr_candidates(&self, below: u64, out: &mut Vec<(Nanos, BufId)>) {
        let before = out.len();
        out.extend(
            self.cache
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
    /// checkpoint back: ask their masters to have the current block written.
    pub(in crate::instance) fn ask_pi_writes(&mut self, below: u64) {
        let now = self.k.now();
        let mut blks: Vec<BlockAddr> = self
            .cache
            .iter()
            .filter(|(_, b)| b.state() == BufState::Pi && b.first_rba().is_some_and(|f| f < below))
            .map(|(_, b)| b.blk)
            .collect();
        blks.sort_unstable();
        blks.dedup();
        let cache = &self.cache;
        self.redo.pi_writes.forget_asks(|blk| {
            cache
                .buffers_of(blk)
                .any(|id| cache.get(id).state() == BufState::Pi)
        });
        for blk in blks {
            if !self.redo.pi_writes.ask(blk, now) {
                continue;
            }
            let master = self.block_master(blk);
            if master == self.id {
                let me = self.id;
                self.dir_write_request(me, blk);
            } else {
                self.send(master, crate::msg::Msg::WriteRequest { blk });
            }
        }
    }

    /// The master (here) of `blk` was asked for a write by a past image's
    /// holder, `from`: the current holder writes, and the write's discard
    /// reaches `from`.
    pub(in crate::instance) fn dir_write_request(
        &mut self,
        from: crate::types::InstId,
        blk: BlockAddr,
    ) {
        self.gc.note_pi(blk, from);
        match self.gc.writer(blk) {
            Some(h) if h == self.id => self.write_current_asked(blk),
            Some(h) => self.send(h, crate::msg::Msg::WriteCurrent { blk }),
            // Nobody holds it current (or the directory is being rebuilt):
            // the holder asks again later.
            None => {}
        }
    }

    /// The master asked this instance to write its current `blk`: DBWR's next pass does.
    pub(in crate::instance) fn write_current_asked(&mut self, blk: BlockAddr) {
        if let Some(id) = self.cache.current(blk)
            && self.cache.get(id).dirty()
        {
            self.redo.pi_writes.asked_to_write(blk);
        }
    }

    /// Add the current blocks the masters asked for to DBWR's candidates,
    /// first. An ask stays until the block is written (a busy writer or
    /// redo still to flush defers it to the next pass) or is no longer
    /// held dirty here.
    pub(in crate::instance) fn asked_write_candidates(&mut self, out: &mut Vec<(Nanos, BufId)>) {
        if self.redo.pi_writes.nothing_to_write() {
            return;
        }
        let cache = &self.cache;
        let blks = self
            .redo
            .pi_writes
            .writes_due(|blk| cache.current(blk).is_some_and(|id| cache.get(id).dirty()));
        for blk in blks {
            if let Some(id) = self.cache.current(blk)
                && !self.cache.get(id).leaving()
            {
                out.push((0, id));
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|c| c.1);
    }

    /// `blk` was written: a write asked for it is done.
    pub(in crate::instance) fn asked_write_done(&mut self, blk: BlockAddr) {
        self.redo.pi_writes.written(blk);
    }
}
