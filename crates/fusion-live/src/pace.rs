//! Why a host is behind real time. Either its model asks for more than a
//! whole CPU can run (zero-cost loops, too many sessions for the machine):
//! the run must stop, or its figures would be time-dilated. Or the kernel
//! gives the process less CPU than it asks for (a CPU quota, a throttled
//! cgroup, a busy host, `docker update --cpus`): a fault from outside,
//! which a real instance survives by being slow, and so does this one —
//! its steps run late and it catches up when the CPU comes back.
//!
//! The two are told apart by the CPU the process got while behind (under
//! half a CPU: starved) and, given at least that, by the model time one
//! CPU-second of the host's turns (its model steps and their sends)
//! carries: a whole CPU keeps up if that is well over a second, with room
//! left for the network and the admin service.

use fusion_core::config::Nanos;
use std::collections::VecDeque;

/// Samples at most this often while behind.
const SAMPLE_EVERY_NS: Nanos = 100_000_000;
/// The window a judgement looks back over, at most (samples kept).
const SAMPLES_MAX: usize = 50;
/// A judgement needs at least this much real time behind.
const WINDOW_NS_MIN: Nanos = 1_000_000_000;
/// A whole CPU keeps up when a CPU-second of turns carries at least 5/4 s
/// of model: a fifth of the CPU left for the rest of the process.
const KEEPS_UP_MODEL: u128 = 5;
const KEEPS_UP_CPU: u128 = 4;
/// A process given less of a CPU than this (per mille) while behind is
/// starved from outside.
const STARVED_BELOW_PERMILLE: u64 = 500;

/// One look at the host at the end of a turn behind real time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    wall_ns: Nanos,
    /// The CPU time of the host's thread or process ([`CpuClock`]).
    cpu_ns: Nanos,
    /// The CPU time spent in measured turns since the stretch began.
    turns_cpu_ns: Nanos,
    /// The instance's time: the last step it ran.
    model_ns: Nanos,
}

/// What a host behind real time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behind {
    /// Not behind long enough to tell.
    Undecided,
    /// Even with a whole CPU it could not keep up: one CPU-second of its
    /// turns carries `model_ns_per_cpu_s` of model time.
    Overloaded { model_ns_per_cpu_s: Nanos },
    /// It got `cpu_permille` of a CPU over `window_ns`, and would keep up
    /// with a whole one.
    Starved { cpu_permille: u64, window_ns: Nanos },
}

/// The current stretch behind real time.
#[derive(Debug, Default)]
pub struct Pace {
    samples: VecDeque<Sample>,
    /// Whether the last turn ended behind (the next one is measured).
    behind: bool,
    turns_cpu_ns: Nanos,
}

impl Pace {
    /// Whether the turn about to start is measured: the one before ended
    /// behind (reading a CPU clock is a system call: only then).
    pub fn measures_next_turn(&self) -> bool {
        self.behind
    }

    /// The host caught up: the next stretch behind is judged on its own.
    pub fn caught_up(&mut self) {
        self.samples.clear();
        self.behind = false;
        self.turns_cpu_ns = 0;
    }

    /// A turn ended with work still due at model time `model_ns`; the
    /// CPU clock read `cpu_began_ns` when it began (if it was measured) and
    /// `cpu_ns` now. Judge the stretch up to now.
    pub fn turn_ended_behind(
        &mut self,
        wall_ns: Nanos,
        model_ns: Nanos,
        cpu_began_ns: Option<Nanos>,
        cpu_ns: Nanos,
    ) -> Behind {
        self.behind = true;
        if let Some(began) = cpu_began_ns {
            debug_assert!(cpu_ns >= began, "a CPU clock went back");
            self.turns_cpu_ns = self
                .turns_cpu_ns
                .saturating_add(cpu_ns.saturating_sub(began));
        }
        let now = Sample {
            wall_ns,
            cpu_ns,
            turns_cpu_ns: self.turns_cpu_ns,
            model_ns,
        };
        if let Some(last) = self.samples.back() {
            debug_assert!(wall_ns >= last.wall_ns, "the clock went back");
            if wall_ns.saturating_sub(last.wall_ns) < SAMPLE_EVERY_NS {
                return Behind::Undecided;
            }
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
        let turns_cpu = u128::from(now.turns_cpu_ns.saturating_sub(first.turns_cpu_ns));
        let model = u128::from(now.model_ns.saturating_sub(first.model_ns));
        let cpu = u128::from(now.cpu_ns.saturating_sub(first.cpu_ns));
        let cpu_permille = u64::try_from(cpu * 1000 / u128::from(window_ns)).unwrap_or(u64::MAX);
        // Given less than half a CPU, a process is starved whatever its
        // model: one that runs a millisecond in a hundred (a CFS quota)
        // finds its caches cold every time and carries little model per
        // CPU-second, so the ratio says nothing there.
        if cpu_permille < STARVED_BELOW_PERMILLE
            || model * KEEPS_UP_CPU >= turns_cpu * KEEPS_UP_MODEL
        {
            Behind::Starved {
                cpu_permille,
                window_ns,
            }
        } else {
            // turns_cpu > 0 here, and the quotient is under 5/4 s.
            Behind::Overloaded {
                model_ns_per_cpu_s: u64::try_from(model * 1_000_000_000 / turns_cpu)
                    .unwrap_or(u64::MAX),
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

    /// A stretch of `secs` seconds behind, a turn ending every 10 ms: the
    /// process gets `cpu_share` of a CPU, of which `turns_share` goes to
    /// its turns, each CPU-second of turns running `model_per_cpu` seconds
    /// of model.
    fn stretch(
        pace: &mut Pace,
        secs: u64,
        cpu_share: f64,
        turns_share: f64,
        model_per_cpu: f64,
    ) -> Behind {
        let mut last = Behind::Undecided;
        let turn = 10.0 * (MS as f64);
        for i in 0..=secs * 100 {
            let began = 700.0 * (MS as f64) + (i as f64) * turn * cpu_share;
            let measured = pace.measures_next_turn().then_some(began as u64);
            let ended = began + turn * cpu_share * turns_share;
            let model =
                3_000.0 * (MS as f64) + (i as f64) * turn * cpu_share * turns_share * model_per_cpu;
            last = pace.turn_ended_behind(
                5_000 * MS + i * 10 * MS,
                model as u64,
                measured,
                ended as u64,
            );
        }
        last
    }

    #[test]
    fn a_throttled_process_whose_model_fits_a_cpu_is_starved() {
        let mut pace = Pace::default();
        // 1 % of a CPU, half of it taken by the network and the admin
        // service: a CPU-second of turns still carries 3 s of model.
        match stretch(&mut pace, 3, 0.01, 0.5, 3.0) {
            Behind::Starved {
                cpu_permille,
                window_ns,
            } => {
                assert_eq!(cpu_permille, 10);
                assert_eq!(window_ns, 3_000 * MS);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_model_a_whole_cpu_cannot_carry_is_overloaded_once_it_gets_half_a_cpu() {
        for share in [1.0, 0.6] {
            let mut pace = Pace::default();
            match stretch(&mut pace, 3, share, 0.95, 1.1) {
                Behind::Overloaded { model_ns_per_cpu_s } => {
                    assert!(
                        (1_090 * MS..=1_110 * MS).contains(&model_ns_per_cpu_s),
                        "{model_ns_per_cpu_s}"
                    );
                }
                other => panic!("share {share}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_process_given_under_half_a_cpu_is_starved_even_where_its_turns_run_slow() {
        // A CFS quota of 1 %: its caches are cold each time it runs.
        for share in [0.3, 0.01] {
            let mut pace = Pace::default();
            assert!(
                matches!(
                    stretch(&mut pace, 3, share, 0.95, 0.7),
                    Behind::Starved { .. }
                ),
                "share {share}"
            );
        }
    }

    #[test]
    fn a_process_given_no_cpu_at_all_is_starved() {
        let mut pace = Pace::default();
        assert!(matches!(
            stretch(&mut pace, 2, 0.0, 1.0, 3.0),
            Behind::Starved {
                cpu_permille: 0,
                ..
            }
        ));
    }

    #[test]
    fn under_a_second_behind_nothing_is_judged_and_catching_up_starts_over() {
        let mut pace = Pace::default();
        assert!(!pace.measures_next_turn());
        assert_eq!(stretch(&mut pace, 0, 0.02, 1.0, 3.0), Behind::Undecided);
        assert!(pace.measures_next_turn());
        assert_eq!(
            stretch(&mut pace, 0, 0.02, 1.0, 3.0),
            Behind::Undecided,
            "sampled at most every 100 ms"
        );
        pace.caught_up();
        assert!(!pace.measures_next_turn());
        assert!(pace.samples.is_empty());
        assert_eq!(stretch(&mut pace, 0, 0.02, 1.0, 3.0), Behind::Undecided);
    }

    #[test]
    fn the_window_is_bounded() {
        let mut pace = Pace::default();
        stretch(&mut pace, 30, 0.5, 1.0, 2.0);
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
