//! LGWR: the redo thread of the instance. Changes append redo to the log
//! buffer; a write takes everything buffered (group commit). Committers wait
//! on `log file sync`, LMS on `gcs log flush sync`, DBWR before writing a block
//! whose redo is not yet on disk (write-ahead logging).
//!
//! Broadcast on commit (10.2+, `max_commit_propagation_delay = 0`): a write
//! that carries commits also sends the instance's SCN to every other
//! instance through LMS, in parallel with the write; a committer's `log file
//! sync` ends only when the redo is on disk *and* every instance has
//! acknowledged the SCN. So another instance's queries see the commit at
//! once, and a starved LMS anywhere stretches everyone's commits.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{Instance, IoPurpose};
use crate::config::{NS_PER_S, Nanos};
use crate::cpu::ProcId;
use crate::msg::{Io, RedoRecord};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Scn, Xid};

/// LGWR writes at least this often when there is redo to write.
pub const LGWR_TIMEOUT: Nanos = 3 * NS_PER_S;

/// Who waits for redo to be on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlushWaiter {
    /// A committing session (`log file sync`).
    Session(u32),
    /// An LMS job parked until the flush (`gcs log flush sync`): worker, job id.
    Lms(u8, u64),
    /// DBWR wants to write a block.
    Dbwr,
}

#[derive(Debug, Default)]
pub struct Lgwr {
    pub proc: ProcId,
    buffer: Vec<RedoRecord>,
    buffered_bytes: u64,
    /// Redo byte address after the last record appended.
    pub next_rba: u64,
    /// Everything below this is on disk.
    pub flushed: u64,
    /// A write is in progress (or LGWR is getting a CPU to start one).
    busy: bool,
    /// Highest address someone is waiting for.
    wanted: u64,
    waiters: BinaryHeap<Reverse<(u64, u64, FlushWaiter)>>,
    seq: u64,
    /// The buffered redo holds a commit record (its write will broadcast).
    buffered_commit: bool,
    /// Commit broadcasts not yet acknowledged by every instance, oldest first.
    broadcasts: VecDeque<Broadcast>,
    /// Commits in redo below this are known to every instance.
    pub acked: u64,
    broadcast_seq: u64,
    /// Committers whose redo is on disk, waiting for the SCN acknowledgements.
    ack_waiters: BinaryHeap<Reverse<(u64, u32)>>,
}

/// One write's commit SCN broadcast.
#[derive(Debug)]
struct Broadcast {
    seq: u64,
    /// The redo address the write reaches.
    upto: u64,
    /// Instances that have not acknowledged yet.
    pending: u32,
    /// When the write's redo was on disk, once it is.
    written_at: Option<Nanos>,
}

impl Instance {
    /// Append one redo record; returns the address a flush must reach to cover it.
    pub(super) fn redo(
        &mut self,
        xid: Xid,
        blk: Option<BlockAddr>,
        scn: Scn,
        bytes: u32,
        commit: bool,
    ) -> u64 {
        let g = &mut self.lgwr;
        g.buffer.push(RedoRecord {
            scn,
            xid,
            blk,
            bytes,
            commit,
        });
        g.buffered_bytes += u64::from(bytes);
        g.next_rba += u64::from(bytes);
        g.buffered_commit |= commit;
        self.stats.incr(Stat::RedoEntries);
        self.stats.add(Stat::RedoSize, u64::from(bytes));
        let rba = self.lgwr.next_rba;
        // LGWR writes when a third of the log buffer is full.
        if self.lgwr.buffered_bytes >= self.params.log_buffer / 3 {
            self.request_flush(rba, None);
        }
        rba
    }

    /// Make sure redo up to `rba` gets written; `waiter` is told when it is.
    /// Returns true when it already is on disk (nobody is queued then).
    pub(super) fn request_flush(&mut self, rba: u64, waiter: Option<FlushWaiter>) -> bool {
        if rba <= self.lgwr.flushed {
            return true;
        }
        if let Some(w) = waiter {
            self.lgwr.seq += 1;
            self.lgwr.waiters.push(Reverse((rba, self.lgwr.seq, w)));
        }
        self.lgwr.wanted = self.lgwr.wanted.max(rba);
        self.lgwr_kick();
        false
    }

    fn lgwr_kick(&mut self) {
        if !self.lgwr.busy && self.lgwr.wanted > self.lgwr.flushed {
            self.lgwr.busy = true;
            let cost = self.costs.lgwr_write;
            self.cpu(self.lgwr.proc, cost);
        }
    }

    /// LGWR got its CPU: write everything buffered.
    pub(super) fn lgwr_step_done(&mut self) {
        // The next batch is likely about as big: no regrowing from empty.
        let capacity = self.lgwr.buffer.len();
        let records = std::mem::replace(&mut self.lgwr.buffer, Vec::with_capacity(capacity));
        let bytes = std::mem::take(&mut self.lgwr.buffered_bytes);
        let upto = self.lgwr.next_rba;
        if std::mem::take(&mut self.lgwr.buffered_commit) {
            self.broadcast_commits(upto);
        }
        self.stats.incr(Stat::RedoWrites);
        self.stats.add(Stat::RedoBlocksWritten, bytes.div_ceil(512));
        self.start_io(
            Io::WriteRedo { records, bytes },
            IoPurpose::RedoWrite {
                upto,
                started: self.now,
            },
        );
    }

    pub(super) fn on_redo_written(&mut self, upto: u64, started: Nanos) {
        let took = self.now - started;
        self.stats.add(Stat::RedoWriteTime, took);
        self.wait_event(Wait::LogFileParallelWrite, took, false);
        self.lgwr.flushed = self.lgwr.flushed.max(upto);
        self.lgwr.busy = false;
        let now = self.now;
        for b in self.lgwr.broadcasts.iter_mut() {
            if b.upto <= upto && b.written_at.is_none() {
                b.written_at = Some(now);
            }
        }
        while let Some(Reverse((rba, _, w))) = self.lgwr.waiters.peek().copied() {
            if rba > self.lgwr.flushed {
                break;
            }
            self.lgwr.waiters.pop();
            match w {
                // Broadcast on commit: the other instances must know the SCN too.
                FlushWaiter::Session(s) if rba > self.lgwr.acked => {
                    self.lgwr.ack_waiters.push(Reverse((rba, s)))
                }
                FlushWaiter::Session(s) => self.session_flushed(s),
                FlushWaiter::Lms(worker, job) => self.lms_flushed(worker, job),
                FlushWaiter::Dbwr => {}
            }
        }
        self.lgwr_kick();
    }

    /// Send the SCN of a write that carries commits to every other instance.
    fn broadcast_commits(&mut self, upto: u64) {
        if !self.params.broadcast_on_commit() || self.n < 2 {
            self.lgwr.acked = self.lgwr.acked.max(upto);
            return;
        }
        self.lgwr.broadcast_seq += 1;
        let seq = self.lgwr.broadcast_seq;
        self.lgwr.broadcasts.push_back(Broadcast {
            seq,
            upto,
            pending: u32::from(self.n) - 1,
            written_at: None,
        });
        for i in 0..self.n {
            let to = crate::types::InstId(i);
            if to != self.id {
                self.send(to, crate::msg::Msg::ScnBroadcast { seq });
            }
        }
    }

    /// An instance acknowledged broadcast `seq` (LMS passes it on). Commits
    /// are released in broadcast order.
    pub(super) fn on_scn_ack(&mut self, seq: u64) {
        if let Some(b) = self.lgwr.broadcasts.iter_mut().find(|b| b.seq == seq) {
            b.pending = b.pending.saturating_sub(1);
        }
        while self.lgwr.broadcasts.front().is_some_and(|b| b.pending == 0) {
            let Some(b) = self.lgwr.broadcasts.pop_front() else {
                break;
            };
            self.lgwr.acked = self.lgwr.acked.max(b.upto);
            // The time commits waited for acknowledgements after the write.
            if let Some(at) = b.written_at {
                self.wait_event(Wait::WaitForScnAck, self.now.saturating_sub(at), false);
            }
        }
        let ready = self.lgwr.acked.min(self.lgwr.flushed);
        while let Some(Reverse((rba, s))) = self.lgwr.ack_waiters.peek().copied() {
            if rba > ready {
                break;
            }
            self.lgwr.ack_waiters.pop();
            self.session_flushed(s);
        }
    }

    pub(super) fn lgwr_timeout(&mut self) {
        if self.lgwr.next_rba > self.lgwr.flushed {
            let rba = self.lgwr.next_rba;
            self.request_flush(rba, None);
        }
    }

    /// Is the redo covering this change still only in memory?
    pub(super) fn redo_pending(&self, rba: u64) -> bool {
        rba > self.lgwr.flushed
    }
}
