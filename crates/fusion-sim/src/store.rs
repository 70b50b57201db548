//! The simulated shared block store: datafile blocks and one redo thread per
//! instance, with read/write latency and an IOPS budget for the datafiles.
//! Each thread keeps its redo from the instance's checkpoint on (redo.rs),
//! for instance recovery to read back.

use fusion_core::block::Block;
use fusion_core::config::{NS_PER_S, Nanos};
use fusion_core::msg::{IoResult, RedoRecord};
use fusion_core::types::BlockAddr;
use fusion_scenario::{Device, StorageModel};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::redo::{REDO_KEPT_MAX, RedoThread};

/// Bytes one read of a redo thread brings back during instance recovery.
pub const REDO_READ_BYTES: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, Default)]
struct Slow {
    latency: Nanos,
    jitter: Nanos,
}

pub struct Store {
    blocks: Vec<Block>,
    model: StorageModel,
    /// The array's next free I/O slot under the IOPS budget.
    next_slot: Nanos,
    redo_fault: Vec<Option<Slow>>,
    data_fault: Vec<Option<Slow>>,
    rng: ChaCha8Rng,
    /// Each instance's redo from its checkpoint on.
    threads: Vec<RedoThread>,
    /// A restarted instance's earlier life's redo, until a recovery reads it.
    retired: Vec<Vec<RedoRecord>>,
    retired_bytes: Vec<u64>,
    /// Keep the redo records (for instance recovery); off, only the
    /// thread's addresses move: a run without failures reads nothing back,
    /// and a block that keeps moving between instances is never written,
    /// so its past images would hold the checkpoints back and the kept
    /// redo would grow with the run.
    keep_redo: bool,
}

impl Store {
    pub fn new(blocks: Vec<Block>, model: StorageModel, instances: usize, seed: u64) -> Store {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(2_000);
        Store {
            blocks,
            model,
            next_slot: 0,
            redo_fault: vec![None; instances],
            data_fault: vec![None; instances],
            rng,
            threads: vec![RedoThread::default(); instances],
            retired: vec![Vec::new(); instances],
            retired_bytes: vec![0; instances],
            keep_redo: false,
        }
    }

    /// Every datafile block, by address.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    fn jittered(&mut self, base: Nanos, fault: Option<Slow>) -> Nanos {
        match fault {
            Some(f) => {
                f.latency
                    + if f.jitter > 0 {
                        self.rng.next_u64() % (f.jitter + 1)
                    } else {
                        0
                    }
            }
            None => base,
        }
    }

    fn data_slot(&mut self, now: Nanos) -> Nanos {
        if self.model.iops == 0 {
            return now;
        }
        let start = now.max(self.next_slot);
        self.next_slot = start + NS_PER_S / self.model.iops;
        start
    }

    pub fn read(&mut self, now: Nanos, inst: usize, blk: BlockAddr) -> (Nanos, IoResult) {
        let start = self.data_slot(now);
        let fault = self.data_fault.get(inst).copied().flatten();
        let took = self.jittered(self.model.read_latency, fault);
        let block = self
            .blocks
            .get(blk.idx())
            .cloned()
            .unwrap_or_else(|| Block::new(blk, fusion_core::block::Body::Unformatted));
        (start + took, IoResult::Read(Box::new(block)))
    }

    /// A multiblock read: one I/O under the IOPS budget for `count` contiguous blocks.
    pub fn read_many(
        &mut self,
        now: Nanos,
        inst: usize,
        first: BlockAddr,
        count: u32,
    ) -> (Nanos, IoResult) {
        let start = self.data_slot(now);
        let fault = self.data_fault.get(inst).copied().flatten();
        let took = self.jittered(self.model.read_latency, fault);
        let blocks = (first.0..first.0.saturating_add(count))
            .map(|a| {
                self.blocks.get(a as usize).cloned().unwrap_or_else(|| {
                    Block::new(BlockAddr(a), fusion_core::block::Body::Unformatted)
                })
            })
            .collect();
        (start + took, IoResult::ReadMany(blocks))
    }

    /// When a datafile write issued now completes; the caller applies it then.
    pub fn write(&mut self, now: Nanos, inst: usize) -> Nanos {
        let start = self.data_slot(now);
        let fault = self.data_fault.get(inst).copied().flatten();
        start + self.jittered(self.model.write_latency, fault)
    }

    /// When a redo write issued now completes. Its records are kept from
    /// now on, and those before the instance's `checkpoint` dropped; an
    /// error when the redo kept passes [`REDO_KEPT_MAX`].
    /// Keep every redo record from the checkpoints on, to read them back.
    pub fn keep_redo(&mut self) {
        self.keep_redo = true;
    }

    pub fn write_redo(
        &mut self,
        now: Nanos,
        inst: usize,
        records: Vec<RedoRecord>,
        checkpoint: u64,
    ) -> Result<(Nanos, IoResult), String> {
        let fault = self.redo_fault.get(inst).copied().flatten();
        let took = self.jittered(self.model.log_write_latency, fault);
        if !self.keep_redo {
            if let Some(t) = self.threads.get_mut(inst) {
                t.pass(&records, checkpoint);
            }
            return Ok((now + took, IoResult::Written));
        }
        if let Some(t) = self.threads.get_mut(inst) {
            t.write(records, checkpoint);
            let kept: u64 = self.threads.iter().map(RedoThread::kept_bytes).sum();
            if kept > REDO_KEPT_MAX {
                let behind: Vec<String> = self
                    .threads
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("inst{} {} MiB", i + 1, t.kept_bytes() >> 20))
                    .collect();
                return Err(format!(
                    "the store keeps {} MiB of redo after the instances' checkpoints ({}), \
                     more than its limit of {} MiB: a checkpoint stopped moving (a block that \
                     keeps moving between instances is never written, and its past images \
                     hold their holders' checkpoints back); the run stops here: shorten \
                     the phases",
                    kept >> 20,
                    behind.join(", "),
                    REDO_KEPT_MAX >> 20
                ));
            }
        }
        Ok((now + took, IoResult::Written))
    }

    /// Instance recovery reads `thread` back, as sequential reads of
    /// [`REDO_READ_BYTES`] each under the datafiles' latency and IOPS budget:
    /// more redo to apply, a longer scan.
    pub fn read_redo(&mut self, now: Nanos, reader: usize, thread: usize) -> (Nanos, IoResult) {
        // An earlier life's redo not recovered yet comes first, once.
        let mut records = self
            .retired
            .get_mut(thread)
            .map(std::mem::take)
            .unwrap_or_default();
        let mut bytes = self
            .retired_bytes
            .get_mut(thread)
            .map(std::mem::take)
            .unwrap_or(0);
        if let Some(t) = self.threads.get(thread) {
            records.extend(t.records().map(|(_, r)| r.clone()));
            bytes += t.kept_bytes();
        }
        let reads = bytes.div_ceil(REDO_READ_BYTES).max(1);
        let fault = self.data_fault.get(reader).copied().flatten();
        let mut at = now;
        for _ in 0..reads {
            let start = self.data_slot(at);
            at = start + self.jittered(self.model.read_latency, fault);
        }
        (at, IoResult::Redo(records))
    }

    /// A restarted instance writes its thread from the start again. What
    /// its earlier life left is kept apart until a recovery reads it (the
    /// restart may come before the cluster has even noticed the death).
    pub fn restart_thread(&mut self, inst: usize) {
        if let (Some(t), Some(r), Some(b)) = (
            self.threads.get_mut(inst),
            self.retired.get_mut(inst),
            self.retired_bytes.get_mut(inst),
        ) {
            let old = std::mem::take(t);
            r.extend(old.records().map(|(_, rec)| rec.clone()));
            *b += old.kept_bytes();
        }
    }

    /// Instance `inst`'s redo thread as kept.
    pub fn redo_thread(&self, inst: usize) -> Option<&RedoThread> {
        self.threads.get(inst)
    }

    /// A datafile write completed: the block is on disk.
    pub fn apply(&mut self, block: Block) {
        let a = block.addr.idx();
        // A write never goes back in time (an older write finishing late).
        if a < self.blocks.len() && block.scn >= self.blocks[a].scn {
            self.blocks[a] = block;
        }
    }

    /// The shortest time any I/O takes from its issue to its completion,
    /// under the faults now set (a slow disk's latency replaces the model's).
    pub fn latency_ns_min(&self) -> Nanos {
        let m = &self.model;
        self.redo_fault
            .iter()
            .chain(&self.data_fault)
            .flatten()
            .map(|f| f.latency)
            .chain([m.read_latency, m.write_latency, m.log_write_latency])
            .min()
            .unwrap_or(0)
    }

    pub fn clear_faults(&mut self) {
        self.redo_fault.iter_mut().for_each(|f| *f = None);
        self.data_fault.iter_mut().for_each(|f| *f = None);
    }

    pub fn set_fault(&mut self, inst: usize, device: Device, latency: Nanos, jitter: Nanos) {
        let slot = match device {
            Device::Redo => self.redo_fault.get_mut(inst),
            Device::Data => self.data_fault.get_mut(inst),
        };
        if let Some(s) = slot {
            *s = Some(Slow { latency, jitter });
        }
    }
}
