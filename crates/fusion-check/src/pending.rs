//! Consistent reads waiting to be verified: a read at snapshot `s` is
//! verified once no commit at or below `s` can still arrive (every
//! instance's SCN, as of its last drain, is at or above `s`). At most
//! [`PENDING_READS_MAX`] wait; past that the oldest snapshots are verified
//! early (see `ConsistencyChecker`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusion_core::types::{Scn, Xid};

/// Reads waiting for the commits they could see, at most: about 60 MB.
/// The simulator's instances keep each other's SCNs within a message's
/// latency, so a few hundred wait there; the live runner drains a few
/// times a second.
pub const PENDING_READS_MAX: usize = 1 << 20;

/// One consistent read not yet verified.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Read {
    pub(crate) snapshot: Scn,
    /// Arrival order (reads at one snapshot are verified in it).
    pub(crate) seq: u64,
    pub(crate) table: usize,
    pub(crate) key: u64,
    pub(crate) val: Option<i64>,
    pub(crate) xid: Xid,
}

/// The waiting reads, lowest snapshot first.
pub(crate) struct Pending {
    heap: BinaryHeap<Reverse<Read>>,
    limit: usize,
    seq: u64,
}

impl Pending {
    pub(crate) fn new(limit: usize) -> Pending {
        Pending {
            heap: BinaryHeap::new(),
            limit,
            seq: 0,
        }
    }

    /// Queue a read (its `seq` is set here); returns the one with the
    /// lowest snapshot when the queue was full (it must be verified now).
    pub(crate) fn push(&mut self, mut read: Read) -> Option<Read> {
        self.seq += 1;
        read.seq = self.seq;
        self.heap.push(Reverse(read));
        if self.heap.len() > self.limit {
            return self.heap.pop().map(|r| r.0);
        }
        None
    }

    /// How many may wait.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The next read whose snapshot is at or below `upto`.
    pub(crate) fn pop_upto(&mut self, upto: Scn) -> Option<Read> {
        if self.heap.peek().is_some_and(|r| r.0.snapshot <= upto) {
            return self.heap.pop().map(|r| r.0);
        }
        None
    }

    /// The lowest snapshot waiting.
    pub(crate) fn lowest(&self) -> Option<Scn> {
        self.heap.peek().map(|r| r.0.snapshot)
    }

    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Every read still waiting, in arrival order.
    pub(crate) fn take_all(&mut self) -> Vec<Read> {
        let mut all: Vec<Read> = std::mem::take(&mut self.heap)
            .into_iter()
            .map(|r| r.0)
            .collect();
        all.sort_unstable_by_key(|r| r.seq);
        all
    }
}
