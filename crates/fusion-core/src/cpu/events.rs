//! The busy CPUs' step ends, in the order they are handled: the run
//! queue's next event is the first.

use crate::config::Nanos;

/// The events of the busy CPUs as (time, CPU), in that order: the earliest
/// first, ties to the lowest CPU (the order in which they are handled).
///
/// Kept sorted as events go in: a step's end goes in from the back (it is
/// mostly later than most events dated before it), and the first event,
/// mostly the one that goes out, leaves from the front by moving `head` on;
/// neither walks every busy CPU, as a scan for the earliest did once per
/// step.
#[derive(Clone, Debug)]
pub(super) struct Events {
    /// `slots[head..end]`, each event as one number, time then CPU (see
    /// [`Events::key`]), so that ordering two is one comparison. Twice as
    /// many slots as CPUs (a CPU has one event at most): when the events
    /// reach the end they move back to the start, at most once every
    /// `cpus` events that leave.
    slots: Vec<u128>,
    head: usize,
    end: usize,
}

impl Events {
    pub(super) fn new(cpus: usize) -> Events {
        Events {
            slots: vec![0; 2 * cpus],
            head: 0,
            end: 0,
        }
    }

    /// An event as a number that sorts as (time, CPU) does.
    #[inline(always)]
    fn key(at: Nanos, cpu: u32) -> u128 {
        u128::from(at) << 32 | u128::from(cpu)
    }

    #[inline(always)]
    pub(super) fn first(&self) -> Option<(Nanos, u32)> {
        if self.head == self.end {
            return None;
        }
        let key = self.slots[self.head];
        Some(((key >> 32) as Nanos, key as u32))
    }

    /// Add an event of a CPU that has none.
    #[inline(always)]
    pub(super) fn insert(&mut self, at: Nanos, cpu: u32) {
        debug_assert!(
            self.slots[self.head..self.end]
                .iter()
                .all(|&key| key as u32 != cpu),
            "CPU {cpu} given a second event"
        );
        if self.end == self.slots.len() {
            self.move_to_start();
        }
        let key = Events::key(at, cpu);
        // The events and the free slot after them; from the back, the
        // later events move back a slot.
        let live = &mut self.slots[self.head..=self.end];
        let mut k = live.len() - 1;
        while k > 0 && live[k - 1] > key {
            live[k] = live[k - 1];
            k -= 1;
        }
        live[k] = key;
        self.end += 1;
        debug_assert!(
            self.slots[self.head..self.end].is_sorted(),
            "the events are out of order after CPU {cpu}'s went in"
        );
    }

    /// Move the events to the first slots (there are more than enough
    /// for them: a CPU has one at most).
    #[cold]
    #[inline(never)]
    fn move_to_start(&mut self) {
        self.slots.copy_within(self.head..self.end, 0);
        self.end -= self.head;
        self.head = 0;
        debug_assert!(self.end < self.slots.len(), "more events than CPUs");
    }

    /// Drop the first event, CPU `cpu`'s.
    #[inline(always)]
    pub(super) fn pop_first(&mut self, cpu: u32) {
        debug_assert_eq!(self.first().map(|(_, c)| c), Some(cpu));
        let _ = cpu;
        self.head += 1;
    }

    /// Drop CPU `cpu`'s event, which it has.
    #[inline(always)]
    pub(super) fn remove(&mut self, cpu: u32) {
        if self.head != self.end && self.slots[self.head] as u32 == cpu {
            // The first, as when its step ends.
            self.head += 1;
        } else {
            self.remove_later(cpu);
        }
    }

    /// [`Events::remove`] of an event not the first (a step preempted, or
    /// moved by a new class): the events after it move up a slot.
    #[cold]
    #[inline(never)]
    fn remove_later(&mut self, cpu: u32) {
        let live = &mut self.slots[self.head..self.end];
        let k = live
            .iter()
            .position(|&key| key as u32 == cpu)
            .expect("a CPU that runs a task has an event");
        live.copy_within(k + 1.., k);
        self.end -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_earliest_first_ties_to_the_lowest_cpu() {
        // Two CPUs: four slots, so that events wrap back to the start.
        let mut e = Events::new(2);
        assert_eq!(e.first(), None);
        for round in 0..10 {
            let t = 100 * round;
            e.insert(t + 7, 1);
            e.insert(t + 7, 0);
            assert_eq!(e.first(), Some((t + 7, 0)), "a tie goes to the lowest CPU");
            e.remove(0);
            e.insert(t + 9, 0);
            assert_eq!(e.first(), Some((t + 7, 1)));
            e.remove(1);
            assert_eq!(e.first(), Some((t + 9, 0)));
            e.remove(0);
            assert_eq!(e.first(), None);
        }
        // An event not the first goes out, the others keep their order;
        // `Nanos::MAX` sorts last.
        let mut e = Events::new(4);
        e.insert(Nanos::MAX, 0);
        e.insert(5, 3);
        e.insert(3, 2);
        e.insert(4, 1);
        e.remove(1);
        assert_eq!(e.first(), Some((3, 2)));
        e.remove(2);
        assert_eq!(e.first(), Some((5, 3)));
        e.remove(3);
        assert_eq!(e.first(), Some((Nanos::MAX, 0)));
    }
}
