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
//!
//! `Lgwr` owns the log buffer, the flush waiters and the broadcasts; it asks
//! for its CPU and releases waiters by answering, and the instance acts on
//! the answers (instance/route.rs).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::{NS_PER_S, Nanos};
use crate::cpu::ProcId;
use crate::msg::RedoRecord;
use crate::stats::{Stat, Stats, Wait};
use crate::types::Scn;

/// LGWR writes at least this often when there is redo to write.
pub const LGWR_TIMEOUT_NS: Nanos = 3 * NS_PER_S;
/// Block written records the log buffer holds at most before a write takes them.
pub const BWR_PENDING_MAX: usize = 1 << 16;

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

/// What a flush request found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// The redo is on disk already; nobody was queued.
    Durable,
    /// Queued; `start_write`: LGWR was idle and now wants its CPU to write.
    Queued { start_write: bool },
}

/// One group write, taken from the log buffer when LGWR gets its CPU.
#[derive(Debug)]
pub struct GroupWrite {
    pub records: Vec<RedoRecord>,
    pub bytes: u64,
    /// The redo address the write reaches.
    pub upto: u64,
    /// It carries commits and the SCN must be broadcast: the broadcast's number.
    pub broadcast: Option<u64>,
}

#[derive(Debug)]
pub struct Lgwr {
    proc: ProcId,
    buffer: Vec<RedoRecord>,
    buffered_bytes: u64,
    /// Redo byte address after the last record appended.
    next_rba: u64,
    /// Block written records in the buffer (bounded by [`BWR_PENDING_MAX`]).
    pending_bwr: usize,
    /// Everything below this is on disk.
    flushed: u64,
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
    acked: u64,
    broadcast_seq: u64,
    /// Committers whose redo is on disk, waiting for the SCN acknowledgements.
    ack_waiters: BinaryHeap<Reverse<(u64, u32)>>,
    /// Every [`SCN_MARK_EVERY_BYTES`] of redo, the SCN and address of the
    /// record there (at most [`SCN_MARKS_MAX`]): where a write at an SCN
    /// leaves this thread's changes on disk (`rba_after`).
    marks: VecDeque<(Scn, u64)>,
    next_mark: u64,
}

/// Redo bytes between two SCN marks.
pub const SCN_MARK_EVERY_BYTES: u64 = 64 << 10;
/// SCN marks kept (4 GiB of redo).
pub const SCN_MARKS_MAX: usize = 1 << 16;

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

impl Lgwr {
    pub fn new(proc: ProcId) -> Lgwr {
        Lgwr {
            proc,
            buffer: Vec::new(),
            buffered_bytes: 0,
            next_rba: 0,
            pending_bwr: 0,
            flushed: 0,
            busy: false,
            wanted: 0,
            waiters: BinaryHeap::new(),
            seq: 0,
            buffered_commit: false,
            broadcasts: VecDeque::new(),
            acked: 0,
            broadcast_seq: 0,
            ack_waiters: BinaryHeap::new(),
            marks: VecDeque::new(),
            next_mark: 0,
        }
    }

    pub fn proc(&self) -> ProcId {
        self.proc
    }

    /// Is the redo covering this change still only in memory?
    #[inline]
    pub fn redo_pending(&self, rba: u64) -> bool {
        rba > self.flushed
    }

    /// Append one redo record. Returns the address a flush must reach to cover
    /// it, and whether the log buffer is a third full (LGWR should write now).
    pub fn append(
        &mut self,
        record: RedoRecord,
        log_buffer: u64,
        stats: &mut Stats,
    ) -> (u64, bool) {
        let bytes = u64::from(record.bytes);
        if self.next_rba >= self.next_mark {
            self.mark(record.scn);
        }
        self.buffered_commit |= record.commit;
        self.buffer.push(record);
        self.buffered_bytes += bytes;
        self.next_rba += bytes;
        stats.incr(Stat::RedoEntries);
        stats.add(Stat::RedoSize, bytes);
        (self.next_rba, self.buffered_bytes >= log_buffer / 3)
    }

    #[cold]
    fn mark(&mut self, scn: Scn) {
        // `rba_after` searches the marks by SCN.
        debug_assert!(
            self.marks.back().is_none_or(|&(last, _)| last <= scn),
            "redo at SCN {scn} appended after redo at a later SCN"
        );
        if self.marks.len() >= SCN_MARKS_MAX {
            self.marks.pop_front();
        }
        self.marks.push_back((scn, self.next_rba));
        self.next_mark = self.next_rba + SCN_MARK_EVERY_BYTES;
    }

    /// A redo address at or before this thread's first record with an SCN
    /// above `scn` (a write of a block at `scn` covers this instance's
    /// changes to it below that address). `None` when the marks kept do not
    /// reach back that far.
    pub fn rba_after(&self, scn: Scn) -> Option<u64> {
        // SCNs only grow along a thread: the last mark at or below `scn`.
        let i = self.marks.partition_point(|&(s, _)| s <= scn);
        i.checked_sub(1)
            .and_then(|i| self.marks.get(i))
            .map(|&(_, rba)| rba)
    }

    /// Append a block written record: no bytes, no statistic, no write of
    /// its own; it rides in the next write.
    /// A BWR only spares recovery work, so past [`BWR_PENDING_MAX`] unwritten
    /// ones (a cluster writing blocks while this instance logs nothing)
    /// further ones are dropped rather than grow the buffer.
    pub fn append_block_written(&mut self, record: RedoRecord) {
        debug_assert!(record.written && record.bytes == 0);
        if self.pending_bwr < BWR_PENDING_MAX {
            self.pending_bwr += 1;
            self.buffer.push(record);
        }
    }

    /// The redo address after the last record appended (the end of redo).
    pub fn end_rba(&self) -> u64 {
        self.next_rba
    }

    /// Make sure redo up to `rba` gets written; `waiter` is released by
    /// [`Lgwr::next_released`] when it is.
    pub fn request_flush(&mut self, rba: u64, waiter: Option<FlushWaiter>) -> Flush {
        debug_assert!(
            rba <= self.next_rba,
            "a flush asked up to RBA {rba}, past the end of redo {}",
            self.next_rba
        );
        if rba <= self.flushed {
            return Flush::Durable;
        }
        if let Some(w) = waiter {
            self.seq += 1;
            self.waiters.push(Reverse((rba, self.seq, w)));
        }
        self.wanted = self.wanted.max(rba);
        Flush::Queued {
            start_write: self.want_cpu(),
        }
    }

    /// Whether LGWR, idle with redo wanted on disk, now asks for its CPU.
    fn want_cpu(&mut self) -> bool {
        if !self.busy && self.wanted > self.flushed {
            self.busy = true;
            return true;
        }
        false
    }

    /// LGWR got its CPU: take everything buffered as one write. `broadcast`:
    /// commits must be broadcast to `others` instances before they count.
    pub fn take_write(&mut self, broadcast: bool, others: u32, stats: &mut Stats) -> GroupWrite {
        debug_assert!(self.busy, "LGWR wrote without having asked for its CPU");
        // The next batch is likely about as big: no regrowing from empty.
        let capacity = self.buffer.len();
        let records = std::mem::replace(&mut self.buffer, Vec::with_capacity(capacity));
        let bytes = std::mem::take(&mut self.buffered_bytes);
        self.pending_bwr = 0;
        let upto = self.next_rba;
        let mut announced = None;
        if std::mem::take(&mut self.buffered_commit) {
            if broadcast && others > 0 {
                self.broadcast_seq += 1;
                self.broadcasts.push_back(Broadcast {
                    seq: self.broadcast_seq,
                    upto,
                    pending: others,
                    written_at: None,
                });
                announced = Some(self.broadcast_seq);
            } else {
                // Everything acknowledged lies in redo already written out.
                debug_assert!(
                    upto >= self.acked,
                    "acknowledged RBA {} past the end of redo {upto}",
                    self.acked
                );
                self.acked = upto;
            }
        }
        debug_assert!(
            self.buffer.is_empty() && self.buffered_bytes == 0 && upto >= self.flushed,
            "a write left redo in the log buffer or went back from RBA {} to {upto}",
            self.flushed
        );
        stats.incr(Stat::RedoWrites);
        stats.add(Stat::RedoBlocksWritten, bytes.div_ceil(512));
        GroupWrite {
            records,
            bytes,
            upto,
            broadcast: announced,
        }
    }

    /// The write of redo up to `upto` completed. Then take the released
    /// waiters with [`Lgwr::next_released`], and call [`Lgwr::resume`].
    pub fn written(&mut self, upto: u64, took: Nanos, now: Nanos, stats: &mut Stats) {
        stats.add(Stat::RedoWriteTime, took);
        stats.wait(Wait::LogFileParallelWrite, took, false);
        // One write at a time, of everything buffered when it began: it
        // reaches at least as far as the last, never past the end of redo.
        debug_assert!(self.busy, "a redo write completed that LGWR never started");
        debug_assert!(
            self.flushed <= upto && upto <= self.next_rba,
            "a redo write up to RBA {upto} completed with {} on disk and redo ending at {}",
            self.flushed,
            self.next_rba
        );
        self.flushed = upto;
        self.busy = false;
        for b in self.broadcasts.iter_mut() {
            if b.upto <= upto && b.written_at.is_none() {
                b.written_at = Some(now);
            }
        }
    }

    /// The next waiter whose redo is on disk (and, for a committer, known to
    /// every instance). One at a time: releasing one may queue others.
    #[inline]
    pub fn next_released(&mut self) -> Option<FlushWaiter> {
        while let Some(Reverse((rba, _, w))) = self.waiters.peek().copied() {
            if rba > self.flushed {
                return None;
            }
            self.waiters.pop();
            match w {
                // Broadcast on commit: the other instances must know the SCN too.
                FlushWaiter::Session(s) if rba > self.acked => {
                    self.ack_waiters.push(Reverse((rba, s)))
                }
                FlushWaiter::Dbwr => {}
                w => return Some(w),
            }
        }
        None
    }

    /// After a write's waiters are released: write again if more is wanted.
    pub fn resume(&mut self) -> bool {
        self.want_cpu()
    }

    /// A reconfiguration: acknowledgements of the old incarnation will not
    /// come. Every broadcast still unacknowledged is sent again to the
    /// `others` survivors (returned: their numbers), and each waits for
    /// theirs; with no survivor left to tell, they are acknowledged now.
    pub fn rebroadcast(&mut self, others: u32, now: Nanos, stats: &mut Stats) -> Vec<u64> {
        let seqs: Vec<u64> = self.broadcasts.iter().map(|b| b.seq).collect();
        for b in &mut self.broadcasts {
            b.pending = others;
        }
        if others == 0 {
            for &seq in &seqs {
                self.scn_ack(seq, now, stats);
            }
            // Nobody left to hear them: every commit is acknowledged.
            debug_assert!(
                self.broadcasts.is_empty(),
                "broadcasts pending with no survivor to acknowledge them"
            );
            return Vec::new();
        }
        seqs
    }

    /// An instance acknowledged broadcast `seq`. Commits are released in
    /// broadcast order; take the committers with [`Lgwr::next_acked`].
    pub fn scn_ack(&mut self, seq: u64, now: Nanos, stats: &mut Stats) {
        if let Some(b) = self.broadcasts.iter_mut().find(|b| b.seq == seq) {
            b.pending = b.pending.saturating_sub(1);
        }
        while self.broadcasts.front().is_some_and(|b| b.pending == 0) {
            let Some(b) = self.broadcasts.pop_front() else {
                break;
            };
            self.acked = self.acked.max(b.upto);
            // The time commits waited for acknowledgements after the write.
            if let Some(at) = b.written_at {
                stats.wait(Wait::WaitForScnAck, now.saturating_sub(at), false);
            }
        }
    }

    /// The next committer whose redo is on disk and acknowledged by everyone.
    pub fn next_acked(&mut self) -> Option<u32> {
        let ready = self.acked.min(self.flushed);
        let Reverse((rba, s)) = self.ack_waiters.peek().copied()?;
        if rba > ready {
            return None;
        }
        self.ack_waiters.pop();
        Some(s)
    }

    /// LGWR's timeout: the address to flush to when redo is waiting.
    pub fn timeout(&self) -> Option<u64> {
        (self.next_rba > self.flushed).then_some(self.next_rba)
    }
}
