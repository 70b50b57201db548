//! The cluster clock: nanoseconds of `CLOCK_MONOTONIC` since an origin the
//! runner picks when it loads a scenario.
//!
//! Every process on one host reads the same monotonic clock, so a message's
//! send time (taken by the sender) and its arrival (taken by the receiver) can
//! be subtracted, which the latency decomposition needs. Containers on one
//! host share it too. A process on another host (another kernel: another
//! boot id) counts from the same instant by the realtime clock
//! ([`local_epoch`]): there the wire share is off by the hosts' clock skew.

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

/// This kernel's boot id: the same for every process and container of one
/// host, another on another host or after a reboot. Empty if unknown.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The cluster clock's origin on this host's `CLOCK_MONOTONIC`, given the
/// runner's origin (`runner_epoch`, on its host's monotonic clock), the
/// runner's `CLOCK_REALTIME` at that instant and its host's boot id. On the
/// runner's host (the same boot id, or a runner that sent none) it is the
/// runner's own; elsewhere the monotonic clocks count from different boots,
/// and the origin is the instant the realtime clocks agree on: now, less
/// the realtime elapsed since the runner's origin.
pub fn local_epoch(
    runner_epoch: u64,
    runner_realtime: u64,
    runner_boot: &str,
    here_boot: &str,
    (mono_now, real_now): (u64, u64),
) -> u64 {
    if runner_boot.is_empty() || runner_realtime == 0 || runner_boot == here_boot {
        return runner_epoch;
    }
    let since = i128::from(real_now) - i128::from(runner_realtime);
    u64::try_from((i128::from(mono_now) - since).max(0)).unwrap_or(u64::MAX)
}

/// This host's monotonic and realtime clocks, read together.
pub fn now_both() -> (u64, u64) {
    (monotonic_ns(), crate::rx_stamp::realtime_ns())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_another_host_the_origin_is_the_instant_the_realtime_clocks_agree_on() {
        // The runner's origin: its monotonic 5 s, wall clock 1,000 s.
        let (epoch, wall) = (5_000_000_000, 1_000_000_000_000);
        // The same host: the runner's origin as it is.
        assert_eq!(local_epoch(epoch, wall, "a", "a", (9, 9)), epoch);
        // A runner that sent no boot id or realtime: as before.
        assert_eq!(local_epoch(epoch, wall, "", "b", (9, 9)), epoch);
        assert_eq!(local_epoch(epoch, 0, "a", "b", (9, 9)), epoch);
        // Another host, booted long before: 2 s after the origin by the
        // wall clock, its monotonic clock reads 7,200 s.
        let here = local_epoch(
            epoch,
            wall,
            "a",
            "b",
            (7_200_000_000_000, wall + 2_000_000_000),
        );
        assert_eq!(here, 7_198_000_000_000);
        // Booted after the runner's origin's monotonic reading: fine too;
        // and an origin before this host's boot is its boot.
        assert_eq!(
            local_epoch(epoch, wall, "a", "b", (1_000_000_000, wall + 500_000_000)),
            500_000_000
        );
        assert_eq!(
            local_epoch(epoch, wall, "a", "b", (1_000_000_000, wall + 3_000_000_000)),
            0
        );
    }
}
