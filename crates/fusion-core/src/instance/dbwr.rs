//! DBWR: writes dirty current buffers back to the datafiles — the oldest
//! first (incremental checkpoint) and, when the cache is short of clean
//! buffers, from the cold end of the LRU. A block is written only once the
//! redo covering it is on disk. When the write completes the master is told,
//! so it can have past images of the block elsewhere discarded.

use super::cache::{BufId, BufState};
use super::lgwr::FlushWaiter;
use super::{Instance, IoPurpose};
use crate::config::{NS_PER_MS, NS_PER_S, Nanos};
use crate::cpu::ProcId;
use crate::msg::{Io, Msg};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Scn};

/// How often DBWR looks for work.
pub const DBWR_TICK: Nanos = 200 * NS_PER_MS;
/// Dirty buffers older than this are written (the checkpoint target).
const CHECKPOINT_AGE: Nanos = 2 * NS_PER_S;
/// Buffers one writer writes per pass.
const BATCH: usize = 64;

#[derive(Debug)]
pub struct Writer {
    pub proc: ProcId,
    /// Blocks chosen for the write in progress (waiting for CPU).
    batch: Vec<BlockAddr>,
    busy: bool,
    outstanding: u32,
    started: Nanos,
}

impl Writer {
    pub fn new(proc: ProcId) -> Writer {
        Writer {
            proc,
            batch: Vec::new(),
            busy: false,
            outstanding: 0,
            started: 0,
        }
    }
}

#[derive(Debug, Default)]
pub struct Dbwr {
    pub writers: Vec<Writer>,
    urgent: bool,
}

impl Instance {
    /// The cache is short of clean buffers: write now (once until the next tick).
    pub(super) fn dbwr_urgent(&mut self) {
        if !self.dbwr.urgent {
            self.dbwr.urgent = true;
            self.dbwr_pass(true);
        }
    }

    pub(super) fn dbwr_tick(&mut self) {
        let urgent = std::mem::take(&mut self.dbwr.urgent)
            || self.cache.used() * 10 >= self.cache.capacity * 9;
        self.dbwr_pass(urgent);
    }

    fn dbwr_pass(&mut self, urgent: bool) {
        let n = self.dbwr.writers.len().max(1);
        let now = self.now;
        let mut candidates: Vec<(Nanos, BufId)> = self
            .cache
            .iter()
            .filter(|(_, b)| {
                b.dirty
                    && b.state == BufState::Xcur
                    && !b.leaving
                    && now.saturating_sub(b.dirty_since) >= CHECKPOINT_AGE
            })
            .map(|(id, b)| (b.dirty_since, id))
            .collect();
        if urgent {
            for id in self.cache.coldest(BATCH * n) {
                let b = self.cache.get(id);
                if b.dirty && b.state == BufState::Xcur && !b.leaving {
                    candidates.push((0, id));
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup_by_key(|c| c.1);
        let mut flush_to = 0;
        for (_, id) in candidates {
            let (blk, rba) = {
                let b = self.cache.get(id);
                (b.blk, b.last_rba)
            };
            let w = blk.idx() % n;
            if self.dbwr.writers[w].busy || self.dbwr.writers[w].batch.len() >= BATCH {
                continue;
            }
            if self.redo_pending(rba) {
                // Write-ahead: the redo must be on disk first; write it next pass.
                flush_to = flush_to.max(rba);
                continue;
            }
            self.dbwr.writers[w].batch.push(blk);
        }
        if flush_to > 0 {
            self.request_flush(flush_to, Some(FlushWaiter::Dbwr));
        }
        for w in 0..self.dbwr.writers.len() {
            let writer = &mut self.dbwr.writers[w];
            if !writer.busy && !writer.batch.is_empty() {
                writer.busy = true;
                let cost = self.costs.dbwr_write * writer.batch.len() as Nanos;
                let proc = writer.proc;
                self.cpu(proc, cost);
            }
        }
    }

    /// A writer got its CPU: issue its writes.
    pub(super) fn dbwr_step_done(&mut self, w: u8) {
        let wi = w as usize;
        let batch = std::mem::take(&mut self.dbwr.writers[wi].batch);
        self.dbwr.writers[wi].started = self.now;
        for blk in batch {
            let Some(id) = self.cache.current(blk) else {
                continue;
            };
            let b = self.cache.get(id);
            if !b.dirty || b.state != BufState::Xcur {
                continue;
            }
            let block = Box::new(b.image.clone());
            let scn = block.scn;
            self.dbwr.writers[wi].outstanding += 1;
            self.start_io(
                Io::WriteBlock { block },
                IoPurpose::DbwrWrite {
                    blk,
                    scn,
                    writer: w,
                    started: self.now,
                },
            );
        }
        if self.dbwr.writers[wi].outstanding == 0 {
            self.dbwr.writers[wi].busy = false;
        }
    }

    pub(super) fn on_block_written(&mut self, blk: BlockAddr, scn: Scn, w: u8, started: Nanos) {
        self.stats.incr(Stat::PhysicalWrites);
        self.stats.incr(Stat::DbwrCheckpointBuffersWritten);
        if let Some(id) = self.cache.current(blk) {
            let b = self.cache.get_mut(id);
            if b.image.scn == scn {
                b.dirty = false;
                if b.global {
                    b.global = false;
                    self.stats.incr(Stat::DbwrFusionWrites);
                }
            }
        }
        // Our own past images of the block are now obsolete too.
        self.discard_pi(blk, scn);
        let master = self.layout.master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_written(me, blk, scn);
        } else {
            self.send(master, Msg::Written { blk, scn });
        }
        let wi = w as usize;
        if let Some(writer) = self.dbwr.writers.get_mut(wi) {
            writer.outstanding = writer.outstanding.saturating_sub(1);
            if writer.outstanding == 0 {
                writer.busy = false;
                let took = self.now - writer.started.max(started.min(writer.started));
                self.wait_event(Wait::DbFileParallelWrite, took, false);
            }
        }
    }
}
