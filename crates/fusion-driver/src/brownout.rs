//! The brownout of an instance failure: how long the survivors' committed
//! transactions per second stayed below half their rate before the fault.
//! Nothing is scripted: a driver samples each instance's `user commits` at a
//! fixed interval of cluster time ([`CommitSeries`]), and [`brownout`]
//! reads the figure off that series, given when the fault struck and who
//! survived it ([`fault_time`], [`survivors`]).
//!
//! - **Before the fault:** the survivors' commits per second from the start
//!   of the fault's phase to the fault. A fault less than
//!   [`PRE_FAULT_MIN_NS`] into its phase uses the [`PRE_FAULT_FALLBACK_NS`]
//!   before it instead (the end of the previous phase), cut at the start of
//!   the series. No time before the fault, or no commit in it: there is no
//!   rate to fall below, and no brownout (`None`, shown as `-`).
//! - **After the fault:** the rate at a sample is that of the [`WINDOW_NS`]
//!   that end there (as a monitor's "commits per second, last second"
//!   reads); every sample from the fault to the end of the series (the end
//!   of the run) whose rate is below half the rate before counts one sample
//!   interval. A stall of D seconds right at the fault counts about D.
//!
//! Pure functions over data: both drivers can use them.

use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos};
use fusion_core::recovery::RecoveryReport;
use fusion_report::{PhaseResult, RecoveryEntry};
use fusion_scenario::{Fault, LinkTarget, Phase};

/// The sampling interval of a [`CommitSeries`].
pub const SAMPLE_NS: Nanos = 100 * NS_PER_MS;
/// The sliding window the rate after the fault is measured over.
pub const WINDOW_NS: Nanos = NS_PER_S;
/// The least time before the fault in its phase that gives a rate before.
pub const PRE_FAULT_MIN_NS: Nanos = NS_PER_S;
/// What is used before a fault less than [`PRE_FAULT_MIN_NS`] into its phase.
pub const PRE_FAULT_FALLBACK_NS: Nanos = 5 * NS_PER_S;
/// Samples kept at most (a day of cluster time at [`SAMPLE_NS`]); past it
/// sampling stops and the brownout is measured over what was kept.
pub const SAMPLES_MAX: usize = 864_000;

/// Each instance's committed transactions (cumulative `user commits`),
/// sampled every `interval_ns` from `start_ns`, and whether it was up then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitSeries {
    pub start_ns: Nanos,
    pub interval_ns: Nanos,
    /// Per sample: per instance (0-based) its commits so far and whether it
    /// was up (not killed, evicted or frozen).
    pub samples: Vec<Vec<(u64, bool)>>,
}

impl CommitSeries {
    pub fn new(start_ns: Nanos, interval_ns: Nanos) -> CommitSeries {
        CommitSeries {
            start_ns,
            interval_ns: interval_ns.max(1),
            samples: Vec::new(),
        }
    }

    /// When the next sample is due.
    pub fn next_at(&self) -> Nanos {
        self.at(self.samples.len())
    }

    /// Keep a sample taken at [`CommitSeries::next_at`]; false (and
    /// nothing kept) once [`SAMPLES_MAX`] are.
    pub fn push(&mut self, sample: Vec<(u64, bool)>) -> bool {
        if self.samples.len() >= SAMPLES_MAX {
            return false;
        }
        self.samples.push(sample);
        true
    }

    fn at(&self, k: usize) -> Nanos {
        self.start_ns
            .saturating_add((k as Nanos).saturating_mul(self.interval_ns))
    }

    /// The last sample taken at or before `t`.
    fn index(&self, t: Nanos) -> Option<usize> {
        let k = t.checked_sub(self.start_ns)? / self.interval_ns;
        let k = usize::try_from(k).unwrap_or(usize::MAX);
        self.samples.len().checked_sub(1).map(|last| last.min(k))
    }

    /// The commits of `who` at sample `k` (an instance that went back to
    /// fewer, restarted, adds nothing).
    fn total(&self, k: usize, who: &[usize]) -> u64 {
        self.samples.get(k).map_or(0, |s| {
            who.iter()
                .filter_map(|&i| s.get(i).map(|c| c.0))
                .sum::<u64>()
        })
    }
}

/// What [`brownout`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Brownout {
    /// The survivors' commits per second before the fault.
    pub rate_before: f64,
    /// Time after the fault during which the sliding window's rate was
    /// below half of it.
    pub below_ns: Nanos,
}

/// The brownout of a fault at `fault_ns` in a phase that began at
/// `phase_start_ns`, over the commits of `survivors` (0-based). `None`:
/// no rate before the fault to compare with (see the module's notes).
pub fn brownout(
    series: &CommitSeries,
    phase_start_ns: Nanos,
    fault_ns: Nanos,
    survivors: &[usize],
) -> Option<Brownout> {
    let from = if fault_ns.saturating_sub(phase_start_ns) >= PRE_FAULT_MIN_NS {
        phase_start_ns
    } else {
        fault_ns.saturating_sub(PRE_FAULT_FALLBACK_NS)
    };
    let from = from.max(series.start_ns);
    let (k0, kf) = (series.index(from)?, series.index(fault_ns)?);
    if kf <= k0 {
        return None;
    }
    let before = series
        .total(kf, survivors)
        .saturating_sub(series.total(k0, survivors));
    let seconds = (series.at(kf) - series.at(k0)) as f64 / NS_PER_S as f64;
    let rate_before = before as f64 / seconds;
    if before == 0 {
        return None;
    }
    let window = usize::try_from((WINDOW_NS / series.interval_ns).max(1)).unwrap_or(usize::MAX);
    let window_s = window as f64 * series.interval_ns as f64 / NS_PER_S as f64;
    let mut below = 0;
    // The rate at sample `end`: the commits of the window that ends there.
    for end in kf..series.samples.len() {
        let Some(begin) = end.checked_sub(window) else {
            continue;
        };
        let done = series
            .total(end, survivors)
            .saturating_sub(series.total(begin, survivors));
        if (done as f64 / window_s) < rate_before / 2.0 {
            below += series.interval_ns;
        }
    }
    Some(Brownout {
        rate_before,
        below_ns: below,
    })
}

/// When the fault that ended in `dead`'s (0-based) recovery struck: the
/// latest failure fault of the timeline that can take it out, at or before
/// its detection, `detected_ns`: its kill, its pause, the start of a phase
/// that cuts its links or loses messages. `phases` starts at cluster time
/// 0. With none (an eviction nothing on the timeline explains) the
/// detection itself.
pub fn fault_time(phases: &[Phase], dead: usize, detected_ns: Nanos) -> Nanos {
    let mut start: Nanos = 0;
    let mut latest = None;
    let is_dead = |instance: u8| usize::from(instance).checked_sub(1) == Some(dead);
    let cuts = |t: &LinkTarget| match *t {
        LinkTarget::All => true,
        LinkTarget::Instance(i) => is_dead(i),
        LinkTarget::Link { from, to } => is_dead(from) || is_dead(to),
    };
    for p in phases {
        for f in &p.faults {
            let at = match f {
                Fault::Kill { instance, at } | Fault::Pause { instance, at, .. }
                    if is_dead(*instance) =>
                {
                    start.saturating_add(*at)
                }
                Fault::Partition { target, .. } | Fault::Loss { target, .. } if cuts(target) => {
                    start
                }
                _ => continue,
            };
            if at <= detected_ns {
                latest = latest.max(Some(at));
            }
        }
        start = start.saturating_add(p.duration);
    }
    latest.unwrap_or(detected_ns)
}

/// The instances (0-based) other than `dead` that were up in every sample
/// from `from_ns` to `to_ns`: the survivors whose commits the brownout
/// counts.
pub fn survivors(series: &CommitSeries, dead: usize, from_ns: Nanos, to_ns: Nanos) -> Vec<usize> {
    let n = series.samples.first().map_or(0, Vec::len);
    let (Some(a), Some(b)) = (series.index(from_ns), series.index(to_ns)) else {
        return (0..n).filter(|&i| i != dead).collect();
    };
    (0..n)
        .filter(|&i| i != dead)
        .filter(|&i| {
            series.samples[a..=b.max(a)]
                .iter()
                .all(|s| s.get(i).is_some_and(|c| c.1))
        })
        .collect()
}

/// A recovery as the report shows it, with its brownout measured on
/// `series` (`None` without a series or without a rate before the fault).
pub fn recovery_entry(
    r: &RecoveryReport,
    phases: &[Phase],
    series: Option<&CommitSeries>,
) -> RecoveryEntry {
    let dead = r.dead_instance.idx();
    let brownout_ns = series.and_then(|s| {
        let fault = fault_time(phases, dead, r.detected_at);
        let phase_start = phase_start_of(phases, fault);
        let who = survivors(s, dead, fault, r.completed_at.max(fault));
        brownout(s, phase_start, fault, &who).map(|b| b.below_ns)
    });
    RecoveryEntry {
        dead_instance: r.dead_instance.number(),
        recovered_by: r.recovered_by.number(),
        detected_ns: r.detected_at,
        freeze_ns: r.unfrozen_at.saturating_sub(r.detected_at),
        recovery_ns: r.completed_at.saturating_sub(r.detected_at),
        redo_bytes_read: r.redo_bytes_read,
        blocks_recovered: r.blocks_recovered,
        transactions_rolled_back: r.transactions_rolled_back,
        brownout_ns,
    }
}

/// Put each phase's recoveries (`recoveries[k]` for `phases[k]`) into its
/// result, with their brownouts measured over the whole run's `series`
/// (a brownout goes on past the phase that saw the recovery).
pub fn attach_recoveries(
    phases: &mut [PhaseResult],
    recoveries: Vec<Vec<RecoveryReport>>,
    phases_of: &[Phase],
    series: Option<&CommitSeries>,
) {
    for (p, rs) in phases.iter_mut().zip(recoveries) {
        p.recovery = rs
            .iter()
            .map(|r| recovery_entry(r, phases_of, series))
            .collect();
    }
}

/// The start of the phase that holds cluster time `t` (phases from 0).
fn phase_start_of(phases: &[Phase], t: Nanos) -> Nanos {
    let mut start: Nanos = 0;
    for p in phases {
        let end = start.saturating_add(p.duration);
        if t < end {
            return start;
        }
        start = end;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;
    const S: Nanos = NS_PER_S;

    /// A series of `n` instances over `seconds`, where instance `i` commits
    /// `rate(i, t)` per second at time `t`, sampled every 100 ms.
    fn series(n: usize, seconds: u64, rate: impl Fn(usize, Nanos) -> u64) -> CommitSeries {
        let mut s = CommitSeries::new(0, SAMPLE_NS);
        let mut done = vec![0u64; n];
        let steps = seconds * S / SAMPLE_NS;
        for k in 0..=steps {
            let t = k * SAMPLE_NS;
            s.push(done.iter().map(|&c| (c, true)).collect());
            for (i, c) in done.iter_mut().enumerate() {
                *c += rate(i, t) / 10;
            }
        }
        s
    }

    #[test]
    fn a_steady_rate_has_no_brownout() {
        let s = series(3, 20, |_, _| 1000);
        let b = brownout(&s, 0, 10 * S, &[0, 1]).expect("a rate before");
        assert!((b.rate_before - 2000.0).abs() < 1e-9, "{b:?}");
        assert_eq!(b.below_ns, 0);
    }

    #[test]
    fn a_stall_counts_every_window_it_drags_below_half() {
        // Survivors commit 1000/s each, nothing from 10 s to 13 s, then again.
        let s = series(3, 30, |i, t| {
            if i == 2 || (10 * S..13 * S).contains(&t) {
                0
            } else {
                1000
            }
        });
        let b = brownout(&s, 0, 10 * S, &[0, 1]).expect("a rate before");
        assert!((b.rate_before - 2000.0).abs() < 1e-9, "{b:?}");
        // The window ending at 10.0 s + k x 100 ms holds 10 - k samples of
        // commits before the stall and k - 30 after it: below half (fewer
        // than 5 of 10) for 5 < k < 35, 2.9 s.
        assert_eq!(b.below_ns, 29 * SAMPLE_NS, "{b:?}");
    }

    #[test]
    fn a_slowdown_to_exactly_half_is_not_below_half() {
        let s = series(2, 20, |_, t| if t >= 10 * S { 500 } else { 1000 });
        let b = brownout(&s, 0, 10 * S, &[0, 1]).expect("a rate before");
        assert_eq!(b.below_ns, 0);
        let s = series(2, 20, |_, t| if t >= 10 * S { 400 } else { 1000 });
        let b = brownout(&s, 0, 10 * S, &[0, 1]).expect("a rate before");
        // A window ending at 10.0 s + k x 100 ms commits
        // 200 x (10 - k) + 80 x k per 100 ms share, below 1000 for k >= 9,
        // up to the end at 20 s: 92 samples.
        assert_eq!(b.below_ns, 92 * SAMPLE_NS, "{b:?}");
    }

    #[test]
    fn a_fault_at_its_phase_start_measures_the_rate_before_over_the_previous_five_seconds() {
        // 3000/s until 5 s, 1000/s from 5 s to the fault at 10 s, the
        // fault's phase starting at 10 s: the last 5 s count, 1000/s.
        let s = series(2, 20, |_, t| if t < 5 * S { 3000 } else { 1000 });
        let b = brownout(&s, 10 * S, 10 * S + 200 * MS, &[0]).expect("a rate before");
        assert!((b.rate_before - 1000.0).abs() < 1e-9, "{b:?}");
        // At the very start of the series there is nothing before.
        assert_eq!(brownout(&s, 0, 0, &[0]), None);
        // Nothing committed before: no rate to fall below.
        let idle = series(2, 20, |_, _| 0);
        assert_eq!(brownout(&idle, 0, 10 * S, &[0]), None);
    }

    #[test]
    fn the_fault_is_the_latest_failure_that_explains_the_death() {
        use fusion_scenario::Direction;
        let phase = |name: &str, secs: u64, faults: Vec<Fault>| Phase {
            name: name.into(),
            duration: secs * S,
            parameters: Vec::new(),
            faults,
            workloads: None,
            checkpoint: false,
            backup: None,
        };
        let phases = vec![
            phase(
                "a",
                10,
                vec![Fault::Kill {
                    instance: 3,
                    at: 4 * S,
                }],
            ),
            phase(
                "b",
                10,
                vec![
                    Fault::Pause {
                        instance: 2,
                        at: 2 * S,
                        duration: S,
                    },
                    Fault::Partition {
                        target: LinkTarget::Instance(1),
                        direction: Direction::Both,
                    },
                ],
            ),
        ];
        assert_eq!(fault_time(&phases, 2, 9 * S), 4 * S);
        assert_eq!(fault_time(&phases, 1, 15 * S), 12 * S);
        assert_eq!(fault_time(&phases, 0, 15 * S), 10 * S);
        // Nothing explains it: the detection.
        assert_eq!(fault_time(&phases, 1, 5 * S), 5 * S);
        assert_eq!(phase_start_of(&phases, 12 * S), 10 * S);
    }

    #[test]
    fn survivors_are_the_others_up_throughout() {
        let mut s = CommitSeries::new(0, SAMPLE_NS);
        for k in 0..20u64 {
            s.push(vec![(k, true), (k, k < 5), (k, k < 15)]);
        }
        assert_eq!(survivors(&s, 1, 300 * MS, 1000 * MS), vec![0, 2]);
        assert_eq!(survivors(&s, 0, 600 * MS, 1600 * MS), Vec::<usize>::new());
        assert_eq!(survivors(&s, 0, 600 * MS, 1400 * MS), vec![2]);
    }
}
