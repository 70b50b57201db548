//! Why a host is behind real time. Either its model asks for more than a
//! whole CPU can run (zero-cost loops, too many sessions for the machine):
//! the run must stop, or its figures would be time-dilated. Or the kernel
//! gives the process less CPU than it asks for (a CPU quota, a throttled
//! cgroup, a busy host, `docker update --cpus`): a fault from outside,
//! which a real instance survives by being slow, and so does this one —
//! its steps run late and it catches up when the CPU comes back.
//!
//! The two are told apart by the model time one CPU-second carries while
//! the host is behind: at least a second means a whole CPU would keep up.

use fusion_core::config::Nanos;
use std::collections::VecDeque;

/// Samples at most this often while behind.
const SAMPLE_EVERY_NS: Nanos = 100_000_000;
/// The window a judgement looks back over, at most (samples kept).
const SAMPLES_MAX: usize = 50;
/// A judgement needs at least this much real time behind.
const WINDOW_NS_MIN: Nanos = 1_000_000_000;

/// One look at the host while it is behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The clock.
    pub wall_ns: Nanos,
    /// CPU time used ([`CpuClock`]).
    pub cpu_ns: Nanos,
    /// The instance's time: the last step it ran.
    pub model_ns: Nanos,
}

/// What a host behind real time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behind {
    /// Not behind long enough to tell.
    Undecided,
    /// Even with the whole CPU it could not keep up: one CPU-second carries
    /// `model_ns_per_cpu_s` of model time (less than a second).
    Overloaded { model_ns_per_cpu_s: Nanos },
    /// It got `cpu_permille` of a CPU over `window_ns`, and would keep up
    /// with a whole one.
    Starved { cpu_permille: u64, window_ns: Nanos },
}

/// The samples of the current stretch behind real time.
#[derive(Debug, Default)]
pub struct Pace {
    samples: VecDeque<Sample>,
}

impl Pace {
    /// The host caught up: the next stretch behind is judged on its own.
    pub fn caught_up(&mut self) {
        self.samples.clear();
    }

    /// Whether a sample taken now would be kept (reading the process's CPU
    /// time is a system call: only then is it read).
    pub fn wants_sample(&self, wall_ns: Nanos) -> bool {
        self.samples
            .back()
            .is_none_or(|last| wall_ns.saturating_sub(last.wall_ns) >= SAMPLE_EVERY_NS)
    }

    /// Keep `now` and judge the stretch up to it.
    pub fn note(&mut self, now: Sample) -> Behind {
        if let Some(last) = self.samples.back() {
            debug_assert!(now.wall_ns >= last.wall_ns, "the clock went back");
        }
        let behind = self.judge(now);
        if self.samples.len() == SAMPLES_MAX {
            self.samples.pop_front();
        }
        self.samples.push_back(now);
        debug_assert!(self.samples.len() <= SAMPLES_MAX);
        behind
    }

    fn judge(&self, now: Sample) -> Behind {
        let Some(first) = self.samples.front() else {
            return Behind::Undecided;
        };
        let window_ns = now.wall_ns.saturating_sub(first.wall_ns);
        if window_ns < WINDOW_NS_MIN {
            return Behind::Undecided;
        }
        let cpu_ns = now.cpu_ns.saturating_sub(first.cpu_ns);
        let model_ns = now.model_ns.saturating_sub(first.model_ns);
        if model_ns >= cpu_ns {
            let cpu_permille = u64::try_from(u128::from(cpu_ns) * 1000 / u128::from(window_ns))
                .unwrap_or(u64::MAX);
            Behind::Starved {
                cpu_permille,
                window_ns,
            }
        } else {
            // cpu_ns > model_ns >= 0, so the quotient fits below a second.
            let per_s = u128::from(model_ns) * 1_000_000_000 / u128::from(cpu_ns);
            Behind::Overloaded {
                model_ns_per_cpu_s: u64::try_from(per_s).unwrap_or(u64::MAX),
            }
        }
    }
}

/// Whose CPU time tells whether the host got the CPU: its thread's where
/// the host runs on a current-thread runtime (as in an instance process:
/// the network tasks share that thread, and nothing else in the process,
/// a test's other threads for one, is counted); else the whole process's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuClock {
    Thread,
    Process,
}

impl CpuClock {
    /// The clock for a host about to be spawned on the current runtime.
    pub fn for_current_runtime() -> CpuClock {
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::CurrentThread) => CpuClock::Thread,
            _ => CpuClock::Process,
        }
    }

    /// The CPU time used so far, or `None` where the kernel does not say
    /// (then no stretch is judged starved: the lag stops the run as before).
    pub fn now_ns(self) -> Option<Nanos> {
        let id = match self {
            CpuClock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
            CpuClock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
        };
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's duration.
        if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
            return None;
        }
        let s = u64::try_from(ts.tv_sec).ok()?;
        let ns = u64::try_from(ts.tv_nsec).ok()?;
        s.checked_mul(1_000_000_000)?.checked_add(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    /// A stretch of `secs` seconds behind, sampled every 100 ms, the
    /// process getting `cpu_share` of a CPU and running `model_per_cpu`
    /// seconds of model per CPU-second.
    fn stretch(pace: &mut Pace, secs: u64, cpu_share: f64, model_per_cpu: f64) -> Behind {
        let mut last = Behind::Undecided;
        for i in 0..=secs * 10 {
            let wall_ns = 5_000 * MS + i * 100 * MS;
            let cpu = (i as f64) * 100.0 * (MS as f64) * cpu_share;
            last = pace.note(Sample {
                wall_ns,
                cpu_ns: 700 * MS + cpu as u64,
                model_ns: 3_000 * MS + (cpu * model_per_cpu) as u64,
            });
        }
        last
    }

    #[test]
    fn a_throttled_process_whose_model_fits_a_cpu_is_starved() {
        let mut pace = Pace::default();
        match stretch(&mut pace, 3, 0.02, 3.0) {
            Behind::Starved {
                cpu_permille,
                window_ns,
            } => {
                assert_eq!(cpu_permille, 20);
                assert_eq!(window_ns, 3_000 * MS);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_model_a_whole_cpu_cannot_carry_is_overloaded_however_little_cpu_it_got() {
        for share in [1.0, 0.3, 0.05] {
            let mut pace = Pace::default();
            match stretch(&mut pace, 3, share, 0.25) {
                Behind::Overloaded { model_ns_per_cpu_s } => {
                    assert!((240 * MS..=260 * MS).contains(&model_ns_per_cpu_s));
                }
                other => panic!("share {share}: {other:?}"),
            }
        }
    }

    #[test]
    fn under_a_second_behind_nothing_is_judged_and_catching_up_starts_over() {
        let mut pace = Pace::default();
        assert_eq!(stretch(&mut pace, 0, 0.02, 3.0), Behind::Undecided);
        assert!(!pace.wants_sample(5_050 * MS));
        assert!(pace.wants_sample(5_100 * MS));
        assert!(matches!(
            stretch(&mut pace, 2, 0.02, 3.0),
            Behind::Starved { .. }
        ));
        pace.caught_up();
        assert!(pace.wants_sample(5_050 * MS));
        assert_eq!(
            pace.note(Sample {
                wall_ns: 9_000 * MS,
                cpu_ns: 0,
                model_ns: 0
            }),
            Behind::Undecided
        );
    }

    #[test]
    fn the_window_is_bounded() {
        let mut pace = Pace::default();
        stretch(&mut pace, 30, 0.5, 2.0);
        assert_eq!(pace.samples.len(), SAMPLES_MAX);
    }

    #[test]
    fn the_kernel_says_how_much_cpu_this_thread_and_process_used() {
        for clock in [CpuClock::Thread, CpuClock::Process] {
            let a = clock.now_ns().expect("Linux has CPU clocks");
            let mut x = 0u64;
            for i in 0..2_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            let b = clock.now_ns().expect("Linux has CPU clocks");
            assert!(b > a, "{clock:?}");
        }
        // A thread's sleep is not its CPU time.
        let a = CpuClock::Thread.now_ns().expect("a thread CPU clock");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let b = CpuClock::Thread.now_ns().expect("a thread CPU clock");
        assert!(b - a < 25_000_000, "{} ns", b - a);
    }
}
