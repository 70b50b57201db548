//! Events by kind (`fusionlab bench --events`): what each event of the
//! queue was, and what the instances' time handled inside it, so that the
//! events a run could do without are counted before any is cut. The
//! instances count (off in normal runs); this sums them.

use fusion_core::instance::{EventTally, Instance};

/// A run's events by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventKinds {
    /// Every instance's inputs (messages, I/O, wake-ups) and the timers and
    /// CPU steps handled inside them, summed.
    pub tally: EventTally,
    /// Events no instance took: for a frozen or dead instance, or dropped.
    pub dropped: u64,
}

impl EventKinds {
    /// The instances' counts, for a run of `events` events.
    pub(crate) fn of(instances: &[Instance], events: u64) -> EventKinds {
        let mut tally = EventTally::default();
        for t in instances.iter().filter_map(Instance::event_tally) {
            tally.merge(t);
        }
        // Every input an instance counted came from one event of the queue.
        debug_assert!(
            tally.inputs() <= events,
            "{} inputs, {events} events",
            tally.inputs()
        );
        EventKinds {
            dropped: events.saturating_sub(tally.inputs()),
            tally,
        }
    }

    /// Add another run's counts (a scenario's variants summed).
    pub fn merge(&mut self, other: &EventKinds) {
        self.tally.merge(&other.tally);
        self.dropped += other.dropped;
    }

    /// Every event counted, whatever its kind.
    pub fn total(&self) -> u64 {
        self.tally.inputs() + self.dropped
    }
}
