//! The timer table: what is due when, in time order, ties in arming order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::super::events::Timer;
use crate::config::Nanos;

#[derive(Debug, Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Nanos, u64, Timer)>>,
    /// Arming order: two timers due at once fire in the order they were armed.
    seq: u64,
}

impl Timers {
    #[inline]
    pub fn arm(&mut self, at: Nanos, timer: Timer) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, timer)));
    }

    /// When the next timer is due.
    #[inline(always)]
    pub fn next(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Timer> {
        self.heap.pop().map(|Reverse((_, _, timer))| timer)
    }

    pub fn clear(&mut self) {
        self.heap.clear();
    }

    /// The timers armed, in the order they fire (tests, and the event
    /// counts' start).
    pub fn armed(&self) -> Vec<(Nanos, Timer)> {
        let mut all: Vec<_> = self.heap.iter().map(|Reverse(t)| *t).collect();
        all.sort();
        all.into_iter().map(|(at, _, timer)| (at, timer)).collect()
    }
}
