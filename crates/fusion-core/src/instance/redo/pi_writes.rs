//! Writes asked for because of past images (`fast_start_mttr_target`): a
//! past image cannot be written by its holder, and it holds that holder's
//! checkpoint back until the current block is written (rac-internals.md
//! §1.5: the PI holder asks the master, which asks the current holder).
//! Routed in checkpoint.rs.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::config::{NS_PER_S, Nanos};
use crate::types::BlockAddr;

/// A past image's holder asks for a write of its block at most this often.
pub const PI_WRITE_ASK_NS: Nanos = NS_PER_S;

#[derive(Debug, Default)]
pub(super) struct PiWrites {
    /// Blocks this instance asked a write of, when (one ask a second at most).
    asked: FxHashMap<BlockAddr, Nanos>,
    /// Current blocks the masters asked this instance to write.
    to_write: FxHashSet<BlockAddr>,
}

impl PiWrites {
    /// Forget the asks of blocks of which no past image is left here.
    pub fn forget_asks(&mut self, still_pi: impl Fn(BlockAddr) -> bool) {
        self.asked.retain(|&blk, _| still_pi(blk));
    }

    /// Whether to ask for a write of `blk` at `now` (not asked within
    /// [`PI_WRITE_ASK_NS`]); a true answer records the ask.
    pub fn ask(&mut self, blk: BlockAddr, now: Nanos) -> bool {
        if self.asked.get(&blk).is_some_and(|&t| {
            debug_assert!(
                t <= now,
                "{blk}'s write asked at {t} ns, after now ({now} ns)"
            );
            now - t < PI_WRITE_ASK_NS
        }) {
            return false;
        }
        self.asked.insert(blk, now);
        true
    }

    /// A master asked this instance to write its current `blk`.
    pub fn asked_to_write(&mut self, blk: BlockAddr) {
        self.to_write.insert(blk);
    }

    pub fn nothing_to_write(&self) -> bool {
        self.to_write.is_empty()
    }

    /// The blocks asked for that `still_dirty` says still need writing, in
    /// address order; the others are forgotten.
    pub fn writes_due(&mut self, still_dirty: impl Fn(BlockAddr) -> bool) -> Vec<BlockAddr> {
        self.to_write.retain(|&blk| still_dirty(blk));
        let mut blks: Vec<BlockAddr> = self.to_write.iter().copied().collect();
        blks.sort_unstable();
        blks
    }

    /// `blk` was written: a write asked for it is done.
    pub fn written(&mut self, blk: BlockAddr) {
        self.to_write.remove(&blk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_asked_at_most_once_a_second_per_block() {
        let mut w = PiWrites::default();
        let blk = BlockAddr(7);
        assert!(w.ask(blk, 0));
        assert!(!w.ask(blk, PI_WRITE_ASK_NS - 1), "asked again too soon");
        assert!(w.ask(BlockAddr(8), 1), "another block is asked at once");
        assert!(
            w.ask(blk, PI_WRITE_ASK_NS),
            "a second later it is asked again"
        );
        w.forget_asks(|b| b != blk);
        assert!(
            w.ask(blk, PI_WRITE_ASK_NS + 1),
            "its past image went: forgotten"
        );
    }

    #[test]
    fn blocks_to_write_come_in_order_until_written_or_clean() {
        let mut w = PiWrites::default();
        for b in [9, 3, 5] {
            w.asked_to_write(BlockAddr(b));
        }
        assert_eq!(
            w.writes_due(|_| true),
            vec![BlockAddr(3), BlockAddr(5), BlockAddr(9)]
        );
        w.written(BlockAddr(5));
        assert_eq!(w.writes_due(|b| b != BlockAddr(9)), vec![BlockAddr(3)]);
        assert!(!w.nothing_to_write());
        w.written(BlockAddr(3));
        assert!(w.nothing_to_write());
    }
}
