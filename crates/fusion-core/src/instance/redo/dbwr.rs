//! DBWR: writes dirty current buffers back to the datafiles — the oldest
//! first (incremental checkpoint) and, when the cache is short of clean
//! buffers, from the cold end of the LRU. A block is written only once the
//! redo covering it is on disk. When the write completes the master is told,
//! so it can have past images of the block elsewhere discarded.
//!
//! `Dbwr` owns the writers and their batches. The instance hands it the
//! candidate buffers and says which redo is on disk; DBWR answers with the
//! writers to run and the redo it waits for (instance/dbwr_route.rs).
//!
//! Two ways of writing, as Oracle has them: true writers
//! (`db_writer_processes`), each building its own batches and submitting
//! its own writes; or one writer with I/O slaves (`dbwr_io_slaves`), which
//! builds every batch and hands each write to a slave (`IoSlaves`) that
//! only submits it. With NUMA-aware writers each writes the buffers of its
//! own locality group. `ALTER SYSTEM CHECKPOINT` keeps the writers going
//! from one batch to the next until every buffer dirty at the command is
//! written.

use std::collections::VecDeque;

use crate::config::{NS_PER_MS, NS_PER_S, Nanos};
use crate::cpu::ProcId;
use crate::types::BlockAddr;

/// How often DBWR looks for work.
pub const DBWR_TICK_NS: Nanos = 200 * NS_PER_MS;
/// Dirty buffers older than this are written (the checkpoint target).
pub const CHECKPOINT_AGE_NS: Nanos = 2 * NS_PER_S;
/// Buffers one writer writes per pass.
pub const BATCH_MAX: usize = 64;

#[derive(Debug)]
struct Writer {
    proc: ProcId,
    /// The locality group it runs in (0 without a server).
    home: u8,
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
    /// NUMA-aware writers: per locality group, the writers whose home it
    /// is (each writes its group's buffers). Empty: a buffer goes to a
    /// writer by its block address.
    by_group: Vec<Vec<usize>>,
    /// `ALTER SYSTEM CHECKPOINT` in progress: the end of redo when it was
    /// asked for; done when the checkpoint position reaches it.
    full_checkpoint: Option<u64>,
}

impl Dbwr {
    /// Writers `(process, home group)`; `groups`: NUMA-aware writers on a
    /// server of that many locality groups.
    pub fn new(procs: impl IntoIterator<Item = (ProcId, u8)>, groups: Option<usize>) -> Dbwr {
        let writers: Vec<Writer> = procs
            .into_iter()
            .map(|(proc, home)| Writer {
                proc,
                home,
                batch: Vec::new(),
                busy: false,
                outstanding: 0,
                started: 0,
            })
            .collect();
        let mut by_group = vec![Vec::new(); groups.unwrap_or(0)];
        for (i, w) in writers.iter().enumerate() {
            if let Some(g) = by_group.get_mut(usize::from(w.home)) {
                g.push(i);
            }
        }
        Dbwr {
            writers,
            urgent: false,
            checkpoint: 0,
            by_group,
            full_checkpoint: None,
        }
    }

    /// Writer `w`'s process.
    pub fn proc(&self, w: u8) -> Option<ProcId> {
        self.writers.get(usize::from(w)).map(|x| x.proc)
    }

    /// `ALTER SYSTEM CHECKPOINT`: every change below `end_rba` must be
    /// written (a later command while one runs moves its target on).
    pub fn begin_full_checkpoint(&mut self, end_rba: u64) {
        self.full_checkpoint = Some(self.full_checkpoint.map_or(end_rba, |t| t.max(end_rba)));
    }

    /// A full checkpoint is in progress: the writers go on from batch to batch.
    pub fn checkpointing(&self) -> bool {
        self.full_checkpoint.is_some()
    }

    /// The checkpoint position is now `position`: true when that completes
    /// the full checkpoint in progress (it ends here).
    pub fn full_checkpoint_done(&mut self, position: u64) -> bool {
        match self.full_checkpoint {
            Some(target) if position >= target => {
                self.full_checkpoint = None;
                true
            }
            _ => false,
        }
    }

    /// The blocks of writer `w`'s batch waiting for its CPU.
    pub fn batch(&self, w: u8) -> &[BlockAddr] {
        self.writers
            .get(usize::from(w))
            .map_or(&[], |wr| wr.batch.as_slice())
    }

    /// A write of writer `w`'s batch handed out was not issued (the buffer
    /// was clean or gone by then). Returns whether that ended the batch.
    pub fn write_dropped(&mut self, w: u8) -> bool {
        let Some(writer) = self.writers.get_mut(usize::from(w)) else {
            return false;
        };
        debug_assert!(writer.outstanding > 0, "DBW{w}: a write dropped twice");
        writer.outstanding -= 1;
        if writer.outstanding == 0 && writer.busy {
            writer.busy = false;
            return true;
        }
        false
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
        self.checkpoint = rba;
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
    /// its last change, the locality group of its memory)`. A block whose
    /// redo is still in memory waits for the next pass; returns the redo
    /// address that must be flushed for it (0: none).
    pub fn pass(
        &mut self,
        candidates: impl IntoIterator<Item = (BlockAddr, u64, u8)>,
        redo_pending: impl Fn(u64) -> bool,
    ) -> u64 {
        let slots = self.writer_slots();
        let mut flush_to = 0;
        for (blk, rba, group) in candidates {
            let w = match self.by_group.get(usize::from(group)) {
                Some(own) if !own.is_empty() => own[blk.idx() % own.len()],
                _ => blk.idx() % slots,
            };
            let writer = &mut self.writers[w];
            if writer.busy || writer.batch.len() >= BATCH_MAX {
                continue;
            }
            if redo_pending(rba) {
                // Write-ahead: the redo must be on disk first; write it next pass.
                flush_to = flush_to.max(rba);
                continue;
            }
            writer.batch.push(blk);
        }
        debug_assert!(
            self.writers.iter().all(|w| w.batch.len() <= BATCH_MAX),
            "a writer's batch outgrew {BATCH_MAX} blocks"
        );
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
        debug_assert_eq!(
            writer.outstanding, 0,
            "DBW{w} took a new batch with writes of the last outstanding"
        );
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
        // Issued when (or, by a slave, after) the writer took its batch.
        debug_assert!(
            started >= writer.started,
            "DBW{w}: a write started at {started} ns, before its batch at {} ns",
            writer.started
        );
        writer.outstanding -= 1;
        if writer.outstanding > 0 {
            return None;
        }
        writer.busy = false;
        Some(now - writer.started)
    }
}

/// Queued writes at most: the one writer's batch (it hands over one batch
/// at a time and takes the next only when that one is on disk).
pub const SLAVE_QUEUE_MAX: usize = BATCH_MAX;

/// DBWR's I/O slaves (`dbwr_io_slaves`): they take the writes the one
/// writer hands them, in order, one each at a time, and submit them
/// (asynchronously: a slave goes on to the next without waiting for the
/// disk).
#[derive(Debug, Default)]
pub struct IoSlaves {
    procs: Vec<ProcId>,
    /// Per slave: the write it is submitting `(block, writer)`.
    current: Vec<Option<(BlockAddr, u8)>>,
    queue: VecDeque<(BlockAddr, u8)>,
}

impl IoSlaves {
    pub fn new(procs: Vec<ProcId>) -> IoSlaves {
        IoSlaves {
            current: vec![None; procs.len()],
            procs,
            queue: VecDeque::new(),
        }
    }

    pub fn any(&self) -> bool {
        !self.procs.is_empty()
    }

    /// Writer `w` hands over the write of `blk`.
    pub fn hand(&mut self, blk: BlockAddr, w: u8) {
        debug_assert!(
            self.any(),
            "DBW{w} handed {blk} to I/O slaves it does not have"
        );
        debug_assert!(
            self.queue.len() < SLAVE_QUEUE_MAX,
            "the slaves' queue holds more than one batch"
        );
        self.queue.push_back((blk, w));
    }

    /// An idle slave takes the next write: `(slave, its process, block)`.
    pub fn next_start(&mut self) -> Option<(u8, ProcId, BlockAddr)> {
        let i = self.current.iter().position(Option::is_none)?;
        let (blk, w) = self.queue.pop_front()?;
        self.current[i] = Some((blk, w));
        Some((u8::try_from(i).unwrap_or(u8::MAX), self.procs[i], blk))
    }

    /// Slave `i` has submitted its write: `(block, writer)`.
    pub fn done(&mut self, i: u8) -> Option<(BlockAddr, u8)> {
        self.current.get_mut(usize::from(i))?.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_aware_writers_take_their_own_groups_buffers() {
        // Writers 0 and 1 live in groups 1 and 0.
        let mut d = Dbwr::new([(10, 1), (11, 0)], Some(2));
        let cands = (0..8u32).map(|i| (BlockAddr(i), 0, (i % 2) as u8));
        assert_eq!(d.pass(cands, |_| false), 0);
        assert!(d.batch(0).iter().all(|b| b.0 % 2 == 1), "{:?}", d.batch(0));
        assert!(d.batch(1).iter().all(|b| b.0 % 2 == 0), "{:?}", d.batch(1));
        // Without groups, by block address whatever the memory.
        let mut plain = Dbwr::new([(10, 1), (11, 0)], None);
        let cands = (0..8u32).map(|i| (BlockAddr(i), 0, 0));
        plain.pass(cands, |_| false);
        assert_eq!(plain.batch(0).len(), 4);
        assert_eq!(plain.batch(1).len(), 4);
    }

    #[test]
    fn a_full_checkpoint_ends_at_its_target() {
        let mut d = Dbwr::new([(1, 0)], None);
        assert!(!d.checkpointing());
        d.begin_full_checkpoint(500);
        assert!(d.checkpointing());
        assert!(!d.full_checkpoint_done(499));
        assert!(d.full_checkpoint_done(500));
        assert!(!d.checkpointing());
    }

    #[test]
    fn slaves_take_the_handed_writes_in_order_one_each() {
        let mut s = IoSlaves::new(vec![20, 21]);
        for b in 0..3 {
            s.hand(BlockAddr(b), 0);
        }
        assert_eq!(s.next_start(), Some((0, 20, BlockAddr(0))));
        assert_eq!(s.next_start(), Some((1, 21, BlockAddr(1))));
        assert_eq!(s.next_start(), None, "both slaves busy");
        assert_eq!(s.done(1), Some((BlockAddr(1), 0)));
        assert_eq!(s.next_start(), Some((1, 21, BlockAddr(2))));
    }
}
