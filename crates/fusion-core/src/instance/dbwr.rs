//! DBWR: writes dirty current buffers back to the datafiles — the oldest
//! first (incremental checkpoint) and, when the cache is short of clean
//! buffers, from the cold end of the LRU. A block is written only once the
//! redo covering it is on disk. When the write completes the master is told,
//! so it can have past images of the block elsewhere discarded.
//!
//! `Dbwr` owns the writers and their batches. The instance hands it the
//! candidate buffers and says which redo is on disk; DBWR answers with the
//! writers to run and the redo it waits for (instance/route.rs).

use crate::config::{NS_PER_MS, NS_PER_S, Nanos};
use crate::cpu::ProcId;
use crate::types::BlockAddr;

/// How often DBWR looks for work.
pub const DBWR_TICK: Nanos = 200 * NS_PER_MS;
/// Dirty buffers older than this are written (the checkpoint target).
pub const CHECKPOINT_AGE: Nanos = 2 * NS_PER_S;
/// Buffers one writer writes per pass.
pub const BATCH: usize = 64;

#[derive(Debug)]
struct Writer {
    proc: ProcId,
    /// Blocks chosen for the write in progress (waiting for CPU).
    batch: Vec<BlockAddr>,
    busy: bool,
    outstanding: u32,
    started: Nanos,
}

/// A writer with a batch that now wants its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartWriter {
    pub proc: ProcId,
    pub blocks: usize,
}

#[derive(Debug)]
pub struct Dbwr {
    writers: Vec<Writer>,
    urgent: bool,
    /// The checkpoint position: every change in this instance's redo below
    /// this address is on disk (worked out at each tick, so it may lag).
    checkpoint: u64,
}

impl Dbwr {
    pub fn new(procs: impl IntoIterator<Item = ProcId>) -> Dbwr {
        Dbwr {
            writers: procs
                .into_iter()
                .map(|proc| Writer {
                    proc,
                    batch: Vec::new(),
                    busy: false,
                    outstanding: 0,
                    started: 0,
                })
                .collect(),
            urgent: false,
            checkpoint: 0,
        }
    }

    /// Writer `w`'s process.
    pub fn proc(&self, w: u8) -> Option<ProcId> {
        self.writers.get(usize::from(w)).map(|x| x.proc)
    }

    /// The checkpoint position last worked out.
    pub fn checkpoint(&self) -> u64 {
        self.checkpoint
    }

    /// The checkpoint moved to `rba` (it never goes back).
    pub fn advance_checkpoint(&mut self, rba: u64) {
        debug_assert!(
            rba >= self.checkpoint,
            "checkpoint went back from {} to {rba}",
            self.checkpoint
        );
        self.checkpoint = self.checkpoint.max(rba);
    }

    /// Writers a pass spreads work over (at least one, even with none configured).
    pub fn writer_slots(&self) -> usize {
        self.writers.len().max(1)
    }

    /// The cache is short of clean buffers: true when a pass should run now
    /// (once until the next tick).
    pub fn urgent(&mut self) -> bool {
        !std::mem::replace(&mut self.urgent, true)
    }

    /// The periodic tick: whether this pass is urgent.
    pub fn tick(&mut self, cache_nearly_full: bool) -> bool {
        std::mem::take(&mut self.urgent) || cache_nearly_full
    }

    /// One pass over candidate buffers, oldest first: `(block, redo address of
    /// its last change)`. A block whose redo is still in memory waits for the
    /// next pass; returns the redo address that must be flushed for it (0: none).
    pub fn pass(
        &mut self,
        candidates: impl IntoIterator<Item = (BlockAddr, u64)>,
        redo_pending: impl Fn(u64) -> bool,
    ) -> u64 {
        let slots = self.writer_slots();
        let mut flush_to = 0;
        for (blk, rba) in candidates {
            let writer = &mut self.writers[blk.idx() % slots];
            if writer.busy || writer.batch.len() >= BATCH {
                continue;
            }
            if redo_pending(rba) {
                // Write-ahead: the redo must be on disk first; write it next pass.
                flush_to = flush_to.max(rba);
                continue;
            }
            writer.batch.push(blk);
        }
        flush_to
    }

    /// The writers that have a batch and are idle, now marked busy: each wants its CPU.
    pub fn start_writers(&mut self) -> Vec<StartWriter> {
        self.writers
            .iter_mut()
            .filter(|w| !w.busy && !w.batch.is_empty())
            .map(|w| {
                w.busy = true;
                StartWriter {
                    proc: w.proc,
                    blocks: w.batch.len(),
                }
            })
            .collect()
    }

    /// Writer `w` got its CPU: the blocks to write now.
    pub fn take_batch(&mut self, w: u8, now: Nanos) -> Vec<BlockAddr> {
        let writer = &mut self.writers[usize::from(w)];
        debug_assert!(writer.busy, "DBW{w} ran without a batch");
        writer.started = now;
        std::mem::take(&mut writer.batch)
    }

    /// One write of writer `w`'s batch was issued.
    pub fn write_issued(&mut self, w: u8) {
        self.writers[usize::from(w)].outstanding += 1;
    }

    /// Writer `w` issued its batch (some blocks may have gone meanwhile).
    pub fn batch_issued(&mut self, w: u8) {
        let writer = &mut self.writers[usize::from(w)];
        if writer.outstanding == 0 {
            writer.busy = false;
        }
    }

    /// One of writer `w`'s writes completed. When it was the last, returns how
    /// long the batch took (`db file parallel write`).
    pub fn written(&mut self, w: u8, started: Nanos, now: Nanos) -> Option<Nanos> {
        let writer = self.writers.get_mut(usize::from(w))?;
        debug_assert!(writer.outstanding > 0, "DBW{w}: a write completed twice");
        writer.outstanding = writer.outstanding.saturating_sub(1);
        if writer.outstanding > 0 {
            return None;
        }
        writer.busy = false;
        Some(now - writer.started.max(started.min(writer.started)))
    }
}
