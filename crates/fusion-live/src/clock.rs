//! The cluster clock: nanoseconds of `CLOCK_MONOTONIC` since an origin the
//! runner picks when it loads a scenario.
//!
//! Every process on one host reads the same monotonic clock, so a message's
//! send time (taken by the sender) and its arrival (taken by the receiver) can
//! be subtracted, which the latency decomposition needs. Containers on one
//! host share it too; across hosts the wire share is off by their clock skew.

use fusion_core::config::Nanos;

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// A clock counting from a shared origin.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: u64,
}

impl Clock {
    pub fn new(epoch_ns: u64) -> Clock {
        Clock { epoch: epoch_ns }
    }

    /// Time since the origin (0 before it).
    pub fn now(&self) -> Nanos {
        monotonic_ns().saturating_sub(self.epoch)
    }

    /// The origin as an absolute monotonic time.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}
