//! The simulator's event queue: every pending delivery, I/O completion and
//! wake-up, in one order by (time, sequence number).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusion_core::config::{NS_PER_MS, Nanos};
use fusion_core::msg::{Envelope, IoResult};
use fusion_core::types::InstId;

/// Events further ahead than this when pushed go to `Queue::far`.
const FAR_NS: Nanos = NS_PER_MS;

/// An event with a payload, kept in a slot (wake-ups are in the key alone).
pub(crate) enum Ev {
    Deliver(Envelope),
    Io {
        inst: u8,
        id: u64,
        result: IoResult,
        write: Option<Box<fusion_core::block::Block>>,
    },
    /// A fence (or its lifting) reaches the voting file, one I/O time after
    /// it was asked for. Cluster-wide: a parallel window ends before it.
    Fence {
        inst: InstId,
        fenced: bool,
    },
}

impl Ev {
    /// The instance (0-based) the event is for; the voting file's
    /// [`Ev::Fence`] names the instance fenced.
    pub(crate) fn instance(&self) -> usize {
        match self {
            Ev::Deliver(env) => env.to.idx(),
            Ev::Io { inst, .. } => usize::from(*inst),
            Ev::Fence { inst, .. } => inst.idx(),
        }
    }
}

/// A queue entry in one integer, so the queue compares one `u128`: the time in
/// the high word, then the sequence number, then what the event is (a slot,
/// or [`WAKE`] and an instance). Sequence numbers are unique among queued
/// events, so the order is exactly (time, sequence number).
pub(crate) type Key = u128;
/// Bits of the low word below the sequence number.
pub(crate) const SEQ_SHIFT: u32 = 32;
/// Marks a wake-up; the instance is in the bits below.
pub(crate) const WAKE: u64 = 1 << (SEQ_SHIFT - 1);
pub(crate) const PAYLOAD: u64 = (1 << SEQ_SHIFT) - 1;
/// The highest sequence number; past it the queued events are renumbered
/// (see [`Queue::renumber`]), every few billion events.
pub(crate) const SEQ_MAX: u64 = (1 << (64 - SEQ_SHIFT)) - 1;
/// Near events kept in the sorted vector at most: a scenario with very many
/// events in flight sends the rest to the heap instead of paying a long
/// insertion each (the order is the same either way). 64 measured best on
/// the 64-instance benchmark (0.93 of the wall time of 512; 128 and 32
/// slower than 64), and the small clusters never reach it.
pub(crate) const NEAR_MAX: usize = 64;
/// Near events up to which an insertion walks from the end rather than
/// searching by halves.
const NEAR_WALK_MAX: usize = 32;
/// Events queued at most (messages on the wire, I/Os, timers; a busy
/// scenario has thousands). Each holds up to a few hundred bytes, so past
/// this a run is stopped with an error (about a gigabyte in) rather than
/// taking the machine's memory; it also keeps slot numbers below [`WAKE`].
pub const QUEUED_EVENTS_MAX: usize = 1 << 22;

pub(crate) fn key_time(k: Key) -> Nanos {
    (k >> 64) as Nanos
}

/// The events not yet processed, ordered by (time, sequence number), in two
/// parts: `near`, sorted latest first, for the near future, and the heap
/// `far` for events more than [`FAR_NS`] ahead when pushed (timer wake-ups,
/// mostly stale ones). The next event is the earlier of `near`'s last and
/// `far`'s top. A new near event is usually among the next few (a CPU step
/// ending, a message landing), so it is inserted by a short walk from the
/// end, and taking the next one is a `Vec::pop`: cheaper than a heap's
/// sifts at these sizes (tens of events).
pub(crate) struct Queue {
    near: Vec<Key>,
    far: BinaryHeap<Reverse<Key>>,
    pub(crate) slots: Vec<Option<Ev>>,
    pub(crate) free: Vec<u32>,
    seq: u64,
    /// [`SEQ_MAX`], lowered by tests to see renumbering happen.
    seq_max: u64,
    /// [`QUEUED_EVENTS_MAX`], lowered by tests.
    pub(crate) queued_max: usize,
    /// The keys of the queued [`Ev::Fence`] events, earliest first: the
    /// events a parallel window may not pass (window.rs).
    barriers: Vec<Key>,
}

/// A queued event, taken out of the queue.
pub(crate) enum Taken {
    /// Instance `.0`'s timer.
    Wake(usize),
    Event(Ev),
    /// Its slot was empty (never: slots are freed only when taken).
    Gone,
}

/// The queue holds [`QUEUED_EVENTS_MAX`] events: the event was not queued.
#[derive(Debug)]
pub(crate) struct QueueFull;

impl Default for Queue {
    fn default() -> Queue {
        Queue {
            near: Vec::new(),
            far: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            seq_max: SEQ_MAX,
            queued_max: QUEUED_EVENTS_MAX,
            barriers: Vec::new(),
        }
    }
}

impl Queue {
    pub(crate) fn len(&self) -> usize {
        self.near.len() + self.far.len()
    }

    pub(crate) fn push_key(&mut self, now: Nanos, at: Nanos, payload: u64) -> Key {
        debug_assert!(at >= now, "an event queued in the past: {at} ns < {now} ns");
        if self.seq >= self.seq_max {
            self.renumber();
        }
        self.seq += 1;
        let key = (Key::from(at) << 64) | Key::from((self.seq << SEQ_SHIFT) | payload);
        if at > now.saturating_add(FAR_NS) || self.near.len() >= NEAR_MAX {
            self.far.push(Reverse(key));
            return key;
        }
        // Sorted latest first: the new key goes after every later one. A
        // short vector is walked from the end (the new event is usually
        // among the next few); a longer one, a big cluster's, is searched
        // by halves.
        let pos = if self.near.len() <= NEAR_WALK_MAX {
            self.near
                .iter()
                .rposition(|&k| k > key)
                .map_or(0, |p| p + 1)
        } else {
            self.near.partition_point(|&k| k > key)
        };
        self.near.insert(pos, key);
        key
    }

    pub(crate) fn push(&mut self, now: Nanos, at: Nanos, ev: Ev) -> Result<(), QueueFull> {
        if self.len() >= self.queued_max {
            return Err(QueueFull);
        }
        // A freed slot is always empty: writing it needs no drop of the old value.
        let barrier = matches!(ev, Ev::Fence { .. });
        let slot = match self.free.pop() {
            Some(i) if self.slots.get(i as usize).is_some_and(Option::is_none) => {
                self.slots[i as usize] = Some(ev);
                u64::from(i)
            }
            _ => {
                // Below WAKE: there are at most `queued_max` slots.
                self.slots.push(Some(ev));
                (self.slots.len() - 1) as u64
            }
        };
        let key = self.push_key(now, at, slot);
        if barrier {
            let pos = self.barriers.partition_point(|&b| b < key);
            self.barriers.insert(pos, key);
        }
        Ok(())
    }

    /// The earliest queued barrier's key (see [`Ev::Fence`]).
    pub(crate) fn first_barrier(&self) -> Option<Key> {
        self.barriers.first().copied()
    }

    pub(crate) fn push_wake(
        &mut self,
        now: Nanos,
        at: Nanos,
        inst: usize,
    ) -> Result<Key, QueueFull> {
        if self.len() >= self.queued_max {
            return Err(QueueFull);
        }
        Ok(self.push_key(now, at, WAKE | inst as u64))
    }

    /// Give the queued events sequence numbers 1, 2, ... in their order, so
    /// numbering can go on: only their relative order ever mattered, and
    /// every later event still gets a higher number than all of them.
    #[cold]
    pub(crate) fn renumber(&mut self) {
        let mut keys: Vec<Key> = self.near.drain(..).collect();
        keys.extend(self.far.drain().map(|Reverse(k)| k));
        keys.sort_unstable();
        for (position, k) in keys.iter_mut().enumerate() {
            let low = ((position as u64 + 1) << SEQ_SHIFT) | (*k as u64 & PAYLOAD);
            *k = (*k >> 64 << 64) | Key::from(low);
        }
        // Which part holds an event does not change the order (the next
        // event is the earlier of the two tops): all go to the heap.
        self.barriers = keys
            .iter()
            .copied()
            .filter(|&k| {
                let payload = k as u64 & PAYLOAD;
                payload & WAKE == 0
                    && matches!(
                        self.slots.get(payload as usize),
                        Some(Some(Ev::Fence { .. }))
                    )
            })
            .collect();
        self.far = keys.into_iter().map(Reverse).collect();
        self.seq = self.far.len() as u64;
    }

    /// The next event's key.
    pub(crate) fn peek(&self) -> Option<Key> {
        match (self.near.last(), self.far.peek()) {
            (Some(&a), Some(&Reverse(b))) => Some(a.min(b)),
            (Some(&a), None) => Some(a),
            (None, b) => b.map(|&Reverse(b)| b),
        }
    }

    /// Remove and return the next event's key if it is not after `until`.
    #[inline]
    pub(crate) fn pop_until(&mut self, until: Nanos) -> Option<Key> {
        let key = self.peek().filter(|&k| key_time(k) <= until)?;
        self.remove_next(key);
        Some(key)
    }

    /// Remove and return the next event's key if it comes before `end`.
    pub(crate) fn pop_before(&mut self, end: Key) -> Option<Key> {
        let key = self.peek().filter(|&k| k < end)?;
        self.remove_next(key);
        Some(key)
    }

    /// Take out `key`, the next event.
    #[inline]
    fn remove_next(&mut self, key: Key) {
        // Keys are unique: the next one is on top of the part that holds it.
        if self.near.last() == Some(&key) {
            self.near.pop();
        } else {
            self.far.pop();
        }
        if self.barriers.first() == Some(&key) {
            self.barriers.remove(0);
        }
    }

    /// Take the event of slot `payload` (a key's low bits, not a wake-up's)
    /// out of it; `None` if it was empty.
    #[inline(always)]
    pub(crate) fn take_slot(&mut self, payload: u64) -> Option<Ev> {
        let slot = payload as usize;
        let ev = self.slots.get_mut(slot).and_then(Option::take)?;
        self.free.push(slot as u32);
        Some(ev)
    }

    /// Take the event of `key` out of its slot (a wake-up's instance is in
    /// the key). Each event is taken once, where it is
    /// processed, so a message is not copied through temporaries.
    pub(crate) fn take(&mut self, key: Key) -> Taken {
        let payload = key as u64 & PAYLOAD;
        if payload & WAKE != 0 {
            return Taken::Wake((payload & !WAKE) as usize);
        }
        match self.take_slot(payload) {
            Some(ev) => Taken::Event(ev),
            None => Taken::Gone,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pop every event up to `until`, as (time, payload).
    fn drain(q: &mut Queue, until: Nanos) -> Vec<(Nanos, u64)> {
        std::iter::from_fn(|| q.pop_until(until))
            .map(|k| (key_time(k), k as u64 & PAYLOAD))
            .collect()
    }

    #[test]
    fn events_come_out_by_time_then_push_order_across_renumbering_and_overflow() {
        // Pseudo-random times, many ties, some far ahead; push in waves with
        // pops in between. The expected order is (time, push order).
        let mut q = Queue {
            seq_max: 2_000,
            ..Queue::default()
        };
        let mut expected: Vec<(Nanos, u64, u64)> = Vec::new();
        let mut got = Vec::new();
        let (mut x, mut now, mut order) = (7u64, 0, 0u64);
        for wave in 0..50u64 {
            // The first wave overflows the near vector.
            let pushes = if wave == 0 {
                NEAR_MAX as u64 + 100
            } else {
                64 + wave * 3
            };
            for _ in 0..pushes {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = now + (x >> 33) % 50 + if x % 7 == 0 { 2 * FAR_NS } else { 0 };
                let payload = order % WAKE;
                q.push_key(now, at, payload);
                expected.push((at, order, payload));
                order += 1;
            }
            now += 20;
            got.extend(drain(&mut q, now));
        }
        got.extend(drain(&mut q, Nanos::MAX));
        assert!(order > 3 * q.seq_max, "numbering ran out and was renewed");
        expected.sort();
        let expected: Vec<(Nanos, u64)> = expected.into_iter().map(|(t, _, p)| (t, p)).collect();
        assert_eq!(got, expected);
    }
}
