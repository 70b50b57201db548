//! DBWR's work on the kernel and the buffer cache (dbwr.rs keeps the
//! books): passes over the dirty buffers, writers and I/O slaves on the
//! CPU, their writes, the completions, and `ALTER SYSTEM CHECKPOINT`. What
//! a pass or a completion needs of the other subsystems (past images asked
//! for, the master told of a write) the instance does between the steps
//! here, which say when a pass is due.
//!
//! What a write costs, step by step:
//! - a writer's batch: `dbwr_write` of CPU per block (building the batch,
//!   freeing the buffers, posting their waiters), plus `dbwr_io_submit` per
//!   block when it submits its own writes (true writers);
//! - with `dbwr_io_slaves`, the one writer hands each write to a slave,
//!   whose step is `dbwr_io_submit`;
//! - on a described server (`[server]`), the writer also reads
//!   `write_lines_per_buffer` lines of each buffer and the submitter touches
//!   `io_lines_per_write`, local or remote by where the buffer lives, and
//!   the block's bytes cross to the submitter's group's I/O controller
//!   (numa.rs: `Touch::Write`). NUMA-aware writers (`_enable_NUMA_support`)
//!   write their own group's buffers, so all of it stays local.

use super::super::cache::{BufId, Cache};
use super::super::events::{IoPurpose, Proc};
use super::super::kernel::Kernel;
use super::super::numa::Touch;
use super::super::observe::Observer;
use super::lgwr::FlushWaiter;
use super::{Redo, dbwr};
use crate::config::Nanos;
use crate::cpu::ProcId;
use crate::msg::{Io, RedoRecord};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Scn};

impl Redo {
    /// Start the writers (`DBWn`) and the I/O slaves (`I1nn`). With
    /// `dbwr_io_slaves` there is one writer, whatever `db_writer_processes`
    /// says (Oracle's rule). Worker numbers fit 8 bits: both parameters are
    /// at most 100 (`Params::set`).
    pub fn start_writers(&mut self, k: &mut Kernel) {
        let slaves = k.params().dbwr_io_slaves;
        let writers = if slaves > 0 {
            1
        } else {
            k.params().db_writer_processes
        };
        let number = |i: u32| u8::try_from(i.min(u32::from(u8::MAX))).unwrap_or(u8::MAX);
        let procs: Vec<(ProcId, u8)> = (0..writers)
            .map(|i| {
                let proc = k.add_proc(Proc::Dbwr(number(i)), format!("DBW{i}"));
                (proc, k.numa().map_or(0, |n| n.home(proc)))
            })
            .collect();
        // Writers write their own group's buffers when the database places
        // memory by group.
        let groups = k.numa().filter(|n| n.aware()).map(|n| n.group_count());
        self.dbwr = dbwr::Dbwr::new(procs, groups);
        let slave_procs: Vec<ProcId> = (0..slaves)
            .map(|i| k.add_proc(Proc::DbwrSlave(number(i)), format!("I1{:02}", i + 1)))
            .collect();
        self.slaves = dbwr::IoSlaves::new(slave_procs);
    }

    /// The cache is short of clean buffers: true when DBWR must write now
    /// (an urgent pass, once until the next tick).
    pub fn dbwr_urgent(&mut self) -> bool {
        self.dbwr.urgent()
    }

    /// DBWR's tick: the checkpoint moves to where the cache is; whether
    /// the pass that follows is urgent (the cache is nearly full).
    pub fn dbwr_tick(&mut self, cache: &mut Cache) -> bool {
        let nearly_full = cache.used() * 10 >= cache.capacity() * 9;
        let urgent = self.dbwr.tick(nearly_full);
        let checkpoint = self.checkpoint_position(cache);
        self.dbwr.advance_checkpoint(checkpoint);
        urgent
    }

    /// `ALTER SYSTEM CHECKPOINT`: every buffer dirty now is written. True
    /// when a pass must start it (something is dirty).
    pub fn begin_checkpoint(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        cache: &mut Cache,
    ) -> bool {
        let end = self.lgwr.end_rba();
        self.dbwr.begin_full_checkpoint(end);
        obs.alert(
            k.now(),
            format!(
                "Beginning global checkpoint up to RBA {end}, SCN: {}",
                k.scn()
            ),
        );
        self.check_full_checkpoint(k, obs, cache);
        self.dbwr.checkpointing()
    }

    /// A full checkpoint whose buffers are all written ends.
    fn check_full_checkpoint(&mut self, k: &mut Kernel, obs: &mut Observer, cache: &mut Cache) {
        let position = self.checkpoint_position(cache);
        self.dbwr.advance_checkpoint(position);
        if self.dbwr.full_checkpoint_done(position) {
            k.incr(Stat::DbwrCheckpoints);
            obs.alert(
                k.now(),
                format!("Completed checkpoint up to RBA {position}"),
            );
        }
    }

    /// Whether a full checkpoint is under way.
    pub fn checkpointing(&self) -> bool {
        self.dbwr.checkpointing()
    }

    /// A pass's first step: the dirty buffers old enough to write (all of
    /// them during a full checkpoint), with the coldest when `urgent`.
    pub fn pass_candidates(&self, k: &Kernel, cache: &Cache, urgent: bool) -> Vec<(Nanos, BufId)> {
        let cold = urgent.then(|| dbwr::BATCH_MAX * self.dbwr.writer_slots());
        // A full checkpoint writes every dirty buffer, however young.
        let age = if self.dbwr.checkpointing() {
            0
        } else {
            dbwr::CHECKPOINT_AGE_NS
        };
        cache.write_candidates(k.now(), age, cold)
    }

    /// A pass's last step: the writers take their batches from
    /// `candidates` (redo they need written first is asked for) and go on
    /// the CPU.
    pub fn pass(&mut self, k: &mut Kernel, cache: &Cache, candidates: Vec<(Nanos, BufId)>) {
        let lgwr = &self.lgwr;
        let numa = k.numa();
        let flush_to = self.dbwr.pass(
            candidates.into_iter().map(|(_, id)| {
                let b = cache.get(id);
                (b.blk, b.last_rba, numa.map_or(0, |n| n.group_of(id)))
            }),
            |rba| lgwr.redo_pending(rba),
        );
        if flush_to > 0 {
            self.request_flush(k, flush_to, Some(FlushWaiter::Dbwr));
        }
        let per_block = k.costs().dbwr_write_ns
            + if self.slaves.any() {
                0
            } else {
                k.costs().dbwr_io_submit_ns
            };
        for start in self.dbwr.start_writers() {
            if let Some(touch) = self.batch_touch(k, cache, start.proc)
                && let Some(numa) = k.numa_mut()
            {
                numa.defer(start.proc, touch);
            }
            k.cpu(start.proc, per_block * start.blocks as Nanos);
        }
    }

    /// What writer `proc`'s batch touches in memory, on a described server.
    fn batch_touch(&self, k: &Kernel, cache: &Cache, proc: ProcId) -> Option<Touch> {
        let numa = k.numa()?;
        let Some(Proc::Dbwr(w)) = k.proc(proc) else {
            return None;
        };
        let groups = numa.group_count();
        let mut blocks_by_group = vec![0u32; groups];
        for &blk in self.dbwr.batch(w) {
            if let Some(id) = cache.current(blk) {
                blocks_by_group[usize::from(numa.group_of(id)) % groups] += 1;
            }
        }
        let (read, submit) = numa.write_lines();
        let slaves = self.slaves.any();
        Some(Touch::Write {
            blocks_by_group,
            lines: read + if slaves { 0 } else { submit },
            transfer: !slaves,
        })
    }

    /// A writer got its CPU: issue its writes, or hand them to the slaves.
    pub fn dbwr_step_done(&mut self, k: &mut Kernel, cache: &Cache, w: u8) {
        let slaves = self.slaves.any();
        for blk in self.dbwr.take_batch(w, k.now()) {
            if still_dirty(cache, blk).is_none() {
                continue;
            }
            self.dbwr.write_issued(w);
            if slaves {
                self.slaves.hand(blk, w);
            } else {
                issue_write(k, cache, blk, w);
            }
        }
        self.dbwr.batch_issued(w);
        if slaves {
            self.start_slaves(k, cache);
        }
    }

    /// Idle I/O slaves take the writes handed to them.
    pub fn start_slaves(&mut self, k: &mut Kernel, cache: &Cache) {
        while let Some((_, proc, blk)) = self.slaves.next_start() {
            if let Some(numa) = k.numa_mut()
                && let Some(id) = cache.current(blk)
            {
                let mut blocks_by_group = vec![0u32; numa.group_count()];
                let g = usize::from(numa.group_of(id)) % blocks_by_group.len();
                blocks_by_group[g] = 1;
                let lines = numa.write_lines().1;
                numa.defer(
                    proc,
                    Touch::Write {
                        blocks_by_group,
                        lines,
                        transfer: true,
                    },
                );
            }
            let cost = k.costs().dbwr_io_submit_ns.max(1);
            k.cpu(proc, cost);
        }
    }

    /// I/O slave `i` submitted its write: it is issued if the block is
    /// still dirty. True when a full checkpoint's pass must go on (the
    /// write was dropped); the idle slaves start after it
    /// ([`Redo::start_slaves`]).
    pub fn dbwr_slave_step_done(&mut self, k: &mut Kernel, cache: &Cache, i: u8) -> bool {
        if let Some((blk, w)) = self.slaves.done(i) {
            if still_dirty(cache, blk).is_some() {
                issue_write(k, cache, blk, w);
            } else if self.dbwr.write_dropped(w) && self.dbwr.checkpointing() {
                return true;
            }
        }
        false
    }

    /// DBWR's write of `blk` as of `scn` completed, `rba` being where this
    /// instance's last change in the written image ended: the buffer is
    /// clean (or what is not on disk begins later), and the redo says so.
    pub fn block_written(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        blk: BlockAddr,
        scn: Scn,
        rba: u64,
    ) {
        k.incr(Stat::PhysicalWrites);
        k.incr(Stat::DbwrCheckpointBuffersWritten);
        if let Some(id) = cache.current(blk) {
            let b = cache.get_mut(id);
            if b.image.scn == scn {
                if b.global {
                    b.global = false;
                    k.incr(Stat::DbwrFusionWrites);
                }
                cache.set_first_rba(id, None);
                cache.set_clean(id);
            } else if let Some(first) = b.first_rba() {
                // Changed during the write: what is not on disk begins after it.
                cache.set_first_rba(id, Some(first.max(rba)));
            }
        }
        // Shipped away during the write: a past image left here holds
        // changes the write covered; what is not on disk begins after it.
        // (Older ones are discarded by the instance next.)
        cache.past_images_on_disk_below(blk, rba);
        self.lgwr
            .append_block_written(RedoRecord::block_written(blk, scn));
    }

    /// Writer `w`'s write started at `started` is done (after the master
    /// heard of it). True when a full checkpoint's writer goes on to its
    /// next batch (a pass).
    pub fn writer_done(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        cache: &mut Cache,
        w: u8,
        started: Nanos,
    ) -> bool {
        let Some(took) = self.dbwr.written(w, started, k.now()) else {
            return false;
        };
        k.wait(Wait::DbFileParallelWrite, took, false);
        if let Some(proc) = self.dbwr.proc(w) {
            obs.trace_background_wait(k.now(), proc, Wait::DbFileParallelWrite, took);
        }
        // The batch is on disk: the checkpoint may move now, not a tick later.
        if self.dbwr.checkpointing() {
            // A full checkpoint: this writer goes on to its next batch.
            self.check_full_checkpoint(k, obs, cache);
            self.dbwr.checkpointing()
        } else {
            let checkpoint = self.checkpoint_position(cache);
            self.dbwr.advance_checkpoint(checkpoint);
            false
        }
    }
}

/// The buffer holding the current image of `blk`, if it still needs writing.
fn still_dirty(cache: &Cache, blk: BlockAddr) -> Option<BufId> {
    let id = cache.current(blk)?;
    let b = cache.get(id);
    // A dirty scur buffer was down-converted for fairness: still ours to write.
    (b.dirty() && b.is_current()).then_some(id)
}

/// Write the current image of `blk` for writer `w`.
fn issue_write(k: &mut Kernel, cache: &Cache, blk: BlockAddr, w: u8) {
    let Some(id) = still_dirty(cache, blk) else {
        return;
    };
    let b = cache.get(id);
    let block = Box::new(b.image.clone());
    let scn = block.scn;
    let rba = b.last_rba;
    let started = k.now();
    k.start_io(
        Io::WriteBlock { block },
        IoPurpose::DbwrWrite {
            blk,
            scn,
            rba,
            writer: w,
            started,
        },
    );
}
