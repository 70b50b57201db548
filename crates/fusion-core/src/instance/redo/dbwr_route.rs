//! The instance routing DBWR's answers (dbwr.rs): passes over the dirty
//! buffers, writers and I/O slaves on the CPU, their writes, the
//! completions, and `ALTER SYSTEM CHECKPOINT`.
//!
//! What a write costs, step by step:
//! - a writer's batch: `dbwr_write` of CPU per block (building the batch,
//!   freeing the buffers, posting their waiters), plus `dbwr_io_submit` per
//!   block when it submits its own writes (true writers);
//! - with `dbwr_io_slaves`, the one writer hands each write to a slave,
//!   whose step is `dbwr_io_submit`;
//! - on a server that models DBWR's memory (`[server]`
//!   `write_lines_per_buffer`, `io_lines_per_write`), the writer also reads
//!   `write_lines_per_buffer` lines of each buffer and the submitter touches
//!   `io_lines_per_write`, local or remote by where the buffer lives, and
//!   the block's bytes cross to the submitter's group's I/O controller
//!   (numa.rs: `Touch::Write`). NUMA-aware writers (`_enable_NUMA_support`)
//!   write their own group's buffers, so all of it stays local.

use super::super::Instance;
use super::super::events::{IoPurpose, Proc};
use super::super::numa::Touch;
use super::dbwr;
use super::lgwr::FlushWaiter;
use crate::config::Nanos;
use crate::cpu::ProcId;
use crate::msg::{Io, Msg, RedoRecord};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Scn};

impl Instance {
    /// Start the writers (`DBWn`) and the I/O slaves (`I1nn`). With
    /// `dbwr_io_slaves` there is one writer, whatever `db_writer_processes`
    /// says (Oracle's rule). Worker numbers fit 8 bits: both parameters are
    /// at most 100 (`Params::set`).
    pub(in crate::instance) fn start_writers(&mut self) {
        let slaves = self.k.params().dbwr_io_slaves;
        let writers = if slaves > 0 {
            1
        } else {
            self.k.params().db_writer_processes
        };
        let number = |i: u32| u8::try_from(i.min(u32::from(u8::MAX))).unwrap_or(u8::MAX);
        let procs: Vec<(ProcId, u8)> = (0..writers)
            .map(|i| {
                let proc = self.add_proc(Proc::Dbwr(number(i)), format!("DBW{i}"));
                (proc, self.k.numa().map_or(0, |n| n.home(proc)))
            })
            .collect();
        // Writers write their own group's buffers when the database places
        // memory by group and the server models what a write touches.
        let groups = self
            .k
            .numa()
            .filter(|n| n.aware() && n.models_writes())
            .map(|n| n.group_count());
        self.redo.dbwr = dbwr::Dbwr::new(procs, groups);
        let slave_procs: Vec<ProcId> = (0..slaves)
            .map(|i| self.add_proc(Proc::DbwrSlave(number(i)), format!("I1{:02}", i + 1)))
            .collect();
        self.redo.slaves = dbwr::IoSlaves::new(slave_procs);
    }

    /// The cache is short of clean buffers: write now (once until the next tick).
    pub(in crate::instance) fn dbwr_urgent(&mut self) {
        if self.redo.dbwr.urgent() {
            self.dbwr_pass(true);
        }
    }

    pub(in crate::instance) fn dbwr_tick(&mut self) {
        let nearly_full = self.cache.used() * 10 >= self.cache.capacity * 9;
        let urgent = self.redo.dbwr.tick(nearly_full);
        let checkpoint = self.checkpoint_position();
        self.redo.dbwr.advance_checkpoint(checkpoint);
        self.dbwr_pass(urgent);
    }

    /// `ALTER SYSTEM CHECKPOINT`: every buffer dirty now is written.
    pub(in crate::instance) fn begin_checkpoint(&mut self) {
        let end = self.redo.lgwr.end_rba();
        self.redo.dbwr.begin_full_checkpoint(end);
        self.obs.alert(
            self.k.now(),
            format!(
                "Beginning global checkpoint up to RBA {end}, SCN: {}",
                self.k.scn()
            ),
        );
        self.check_full_checkpoint();
        if self.redo.dbwr.checkpointing() {
            self.dbwr_pass(false);
        }
    }

    /// A full checkpoint whose buffers are all written ends.
    fn check_full_checkpoint(&mut self) {
        let position = self.checkpoint_position();
        self.redo.dbwr.advance_checkpoint(position);
        if self.redo.dbwr.full_checkpoint_done(position) {
            self.k.incr(Stat::DbwrCheckpoints);
            self.obs.alert(
                self.k.now(),
                format!("Completed checkpoint up to RBA {position}"),
            );
        }
    }

    pub(in crate::instance) fn dbwr_pass(&mut self, urgent: bool) {
        let cold = urgent.then(|| dbwr::BATCH * self.redo.dbwr.writer_slots());
        // A full checkpoint writes every dirty buffer, however young.
        let age = if self.redo.dbwr.checkpointing() {
            0
        } else {
            dbwr::CHECKPOINT_AGE
        };
        let mut candidates = self.cache.write_candidates(self.k.now(), age, cold);
        if let Some(below) = self.mttr_bound() {
            self.mttr_candidates(below, &mut candidates);
            self.ask_pi_writes(below);
        }
        self.asked_write_candidates(&mut candidates);
        let cache = &self.cache;
        let lgwr = &self.redo.lgwr;
        let numa = self.k.numa().filter(|n| n.models_writes());
        let flush_to = self.redo.dbwr.pass(
            candidates.into_iter().map(|(_, id)| {
                let b = cache.get(id);
                (b.blk, b.last_rba, numa.map_or(0, |n| n.group_of(id)))
            }),
            |rba| lgwr.redo_pending(rba),
        );
        if flush_to > 0 {
            self.request_flush(flush_to, Some(FlushWaiter::Dbwr));
        }
        let per_block = self.k.costs().dbwr_write
            + if self.redo.slaves.any() {
                0
            } else {
                self.k.costs().dbwr_io_submit
            };
        for start in self.redo.dbwr.start_writers() {
            if let Some(touch) = self.batch_touch(start.proc)
                && let Some(numa) = self.k.numa_mut()
            {
                numa.defer(start.proc, touch);
            }
            self.cpu(start.proc, per_block * start.blocks as Nanos);
        }
    }

    /// What writer `proc`'s batch touches in memory, when the server models it.
    fn batch_touch(&self, proc: ProcId) -> Option<Touch> {
        let numa = self.k.numa().filter(|n| n.models_writes())?;
        let Some(Proc::Dbwr(w)) = self.k.proc(proc) else {
            return None;
        };
        let groups = numa.group_count();
        let mut blocks_by_group = vec![0u32; groups];
        for &blk in self.redo.dbwr.batch(w) {
            if let Some(id) = self.cache.current(blk) {
                blocks_by_group[usize::from(numa.group_of(id)) % groups] += 1;
            }
        }
        let (read, submit) = numa.write_lines();
        let slaves = self.redo.slaves.any();
        Some(Touch::Write {
            blocks_by_group,
            lines: read + if slaves { 0 } else { submit },
            transfer: !slaves,
        })
    }

    /// The buffer holding the current image of `blk`, if it still needs writing.
    fn still_dirty(&self, blk: BlockAddr) -> Option<super::super::cache::BufId> {
        let id = self.cache.current(blk)?;
        let b = self.cache.get(id);
        // A dirty scur buffer was down-converted for fairness: still ours to write.
        (b.dirty() && b.is_current()).then_some(id)
    }

    /// A writer got its CPU: issue its writes, or hand them to the slaves.
    pub(in crate::instance) fn dbwr_step_done(&mut self, w: u8) {
        let slaves = self.redo.slaves.any();
        for blk in self.redo.dbwr.take_batch(w, self.k.now()) {
            if self.still_dirty(blk).is_none() {
                continue;
            }
            self.redo.dbwr.write_issued(w);
            if slaves {
                self.redo.slaves.hand(blk, w);
            } else {
                self.issue_write(blk, w);
            }
        }
        self.redo.dbwr.batch_issued(w);
        if slaves {
            self.start_slaves();
        }
    }

    /// Idle I/O slaves take the writes handed to them.
    fn start_slaves(&mut self) {
        while let Some((_, proc, blk)) = self.redo.slaves.next_start() {
            if let Some(numa) = self.k.numa_mut().filter(|n| n.models_writes())
                && let Some(id) = self.cache.current(blk)
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
            self.cpu(proc, self.k.costs().dbwr_io_submit.max(1));
        }
    }

    /// I/O slave `i` submitted its write.
    pub(in crate::instance) fn dbwr_slave_step_done(&mut self, i: u8) {
        if let Some((blk, w)) = self.redo.slaves.done(i) {
            if self.still_dirty(blk).is_some() {
                self.issue_write(blk, w);
            } else if self.redo.dbwr.write_dropped(w) && self.redo.dbwr.checkpointing() {
                self.dbwr_pass(false);
            }
        }
        self.start_slaves();
    }

    /// Write the current image of `blk` for writer `w`.
    fn issue_write(&mut self, blk: BlockAddr, w: u8) {
        let Some(id) = self.still_dirty(blk) else {
            return;
        };
        let b = self.cache.get(id);
        let block = Box::new(b.image.clone());
        let scn = block.scn;
        let rba = b.last_rba;
        self.start_io(
            Io::WriteBlock { block },
            IoPurpose::DbwrWrite {
                blk,
                scn,
                rba,
                writer: w,
                started: self.k.now(),
            },
        );
    }

    /// DBWR's write of `blk` as of `scn` completed; `rba` is where this
    /// instance's last change in the written image ended.
    pub(in crate::instance) fn on_block_written(
        &mut self,
        blk: BlockAddr,
        scn: Scn,
        rba: u64,
        w: u8,
        started: Nanos,
    ) {
        self.k.incr(Stat::PhysicalWrites);
        self.k.incr(Stat::DbwrCheckpointBuffersWritten);
        if let Some(id) = self.cache.current(blk) {
            let b = self.cache.get_mut(id);
            if b.image.scn == scn {
                if b.global {
                    b.global = false;
                    self.k.incr(Stat::DbwrFusionWrites);
                }
                self.cache.set_first_rba(id, None);
                self.cache.set_clean(id);
            } else if let Some(first) = b.first_rba() {
                // Changed during the write: what is not on disk begins after it.
                self.cache.set_first_rba(id, Some(first.max(rba)));
            }
        }
        // Shipped away during the write: a past image left here holds
        // changes the write covered; what is not on disk begins after it.
        // (Older ones are discarded just below.)
        self.cache.past_images_on_disk_below(blk, rba);
        self.redo
            .lgwr
            .append_block_written(RedoRecord::block_written(blk, scn));
        // Our own past images of the block are now obsolete too.
        self.discard_pi(blk, scn);
        self.asked_write_done(blk);
        let master = self.block_master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_written(me, blk, scn);
        } else {
            self.send(master, Msg::Written { blk, scn });
        }
        if let Some(took) = self.redo.dbwr.written(w, started, self.k.now()) {
            self.wait_event(Wait::DbFileParallelWrite, took, false);
            if let Some(proc) = self.redo.dbwr.proc(w) {
                self.obs
                    .trace_background_wait(self.k.now(), proc, Wait::DbFileParallelWrite, took);
            }
            // The batch is on disk: the checkpoint may move now, not a tick later.
            if self.redo.dbwr.checkpointing() {
                // A full checkpoint: this writer goes on to its next batch.
                self.check_full_checkpoint();
                if self.redo.dbwr.checkpointing() {
                    self.dbwr_pass(false);
                }
            } else {
                let checkpoint = self.checkpoint_position();
                self.redo.dbwr.advance_checkpoint(checkpoint);
            }
        }
    }
}
