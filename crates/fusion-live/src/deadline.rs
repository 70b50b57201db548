//! A precise one-shot deadline on the tokio reactor: a `timerfd` armed at an
//! absolute `CLOCK_MONOTONIC` time.
//!
//! Why not `tokio::time::sleep`: tokio's timer wheel has a 1 ms resolution,
//! and modeled CPU steps and timers are tens of microseconds. A timerfd
//! becomes readable at its expiry (hrtimer precision, no timer slack), and
//! the reactor's `epoll_wait` wakes on it like on any socket, so the host
//! task waits for a deadline and for messages in one place, on the same
//! thread as the network.

use std::os::fd::OwnedFd;

use fusion_core::config::Nanos;
use rustix::time::{
    Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
    timerfd_settime,
};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

pub struct DeadlineTimer {
    fd: AsyncFd<OwnedFd>,
    /// The absolute monotonic time the timer is armed for, if any.
    armed: Option<u64>,
}

impl DeadlineTimer {
    /// A disarmed timer. Needs a tokio runtime with I/O enabled.
    pub fn new() -> std::io::Result<DeadlineTimer> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: the `OwnedFd` moves into the `AsyncFd` and is closed only
        // when it is dropped, so the descriptor stays open and the same for
        // the registration's whole life.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }?;
        Ok(DeadlineTimer { fd, armed: None })
    }

    /// Arm for `at`, an absolute `CLOCK_MONOTONIC` time in nanoseconds
    /// (re-arming for the same time costs no system call).
    pub fn arm(&mut self, at: u64) -> std::io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        // 0 would disarm the timer: a time in the past expires at once.
        let at = at.max(1);
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: (at / 1_000_000_000) as i64,
                tv_nsec: (at % 1_000_000_000) as i64,
            },
        };
        timerfd_settime(&self.fd, TimerfdTimerFlags::ABSTIME, &spec)?;
        self.armed = Some(at);
        Ok(())
    }

    /// Wait until the armed time has passed (forever when disarmed).
    /// Cancel-safe: dropping the future leaves the timer armed.
    pub async fn expired(&mut self) -> std::io::Result<()> {
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            match rustix::io::read(guard.get_inner(), &mut buf) {
                Ok(_) => {
                    self.armed = None;
                    return Ok(());
                }
                Err(rustix::io::Errno::AGAIN) => guard.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The absolute monotonic time of a deadline on a cluster clock.
pub fn absolute(epoch: u64, at: Nanos) -> u64 {
    epoch.saturating_add(at)
}
