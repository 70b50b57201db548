//! The time series of a run (`fusion_report::Series`), from either driver:
//! a driver stops at every [`SeriesRecorder::next_at`] (the simulator's
//! event loop stops there as for the brownout's samples; the live runner
//! looks at the cluster), hands in what it reads of each instance
//! ([`InstantSample`]: its cumulative counters and two gauges), and the
//! recorder differences the counters into the interval's figures.
//!
//! No I/O and no clock: the drivers pass times in.

use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos};
use fusion_core::stats::{Stat, Stats, Wait, WaitClass};
use fusion_report::series::{SERIES_WAIT_CLASSES, TOP_WAITS_MAX};
use fusion_report::{InstanceSeries, Series, SeriesPoint, TopWait};

/// The interval when none is asked for (`--interval-ms`).
pub const DEFAULT_INTERVAL_NS: Nanos = NS_PER_S;
/// The shortest interval accepted.
pub const INTERVAL_NS_MIN: Nanos = NS_PER_MS;
/// Points kept per instance at most (a day of cluster time at 1 s): past
/// it sampling stops and the series says it was truncated.
pub const POINTS_MAX: usize = 86_400;

/// What a driver read of one instance at a sample time.
#[derive(Clone, Copy, Debug)]
pub struct InstantSample<'a> {
    /// Its counters so far (cumulative, as `v$sysstat` shows them).
    pub stats: &'a Stats,
    /// Processes waiting for a CPU now.
    pub run_queue: usize,
    /// Requests its LMS workers hold unfinished now.
    pub lms_backlog: usize,
    /// Not killed, evicted or frozen.
    pub up: bool,
}

/// The counters a point is differenced from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counters {
    cr_blocks: u64,
    cr_ns: u64,
    current_blocks: u64,
    current_ns: u64,
    commits: u64,
    /// Per [`Wait`]: waits and time waited.
    waits: Vec<(u64, u64)>,
}

impl Counters {
    fn of(s: &Stats) -> Counters {
        Counters {
            cr_blocks: s.get(Stat::GcCrBlocksReceived),
            cr_ns: s.get(Stat::GcCrBlockReceiveTime),
            current_blocks: s.get(Stat::GcCurrentBlocksReceived),
            current_ns: s.get(Stat::GcCurrentBlockReceiveTime),
            commits: s.get(Stat::UserCommits),
            waits: Wait::ALL
                .iter()
                .map(|w| (s.event(*w).waits, s.event(*w).time_ns))
                .collect(),
        }
    }
}

/// Builds a [`Series`] from samples taken every `interval_ns` of cluster
/// time from `start_ns`.
#[derive(Clone, Debug)]
pub struct SeriesRecorder {
    start_ns: Nanos,
    interval_ns: Nanos,
    /// The last sample's time (the start before the first).
    last_ns: Nanos,
    /// The interval the next sample ends (1 for the first).
    next_k: u64,
    /// Per instance: its counters at the last sample (zero before the first:
    /// an instance starts with none).
    prev: Vec<Counters>,
    series: Series,
}

impl SeriesRecorder {
    /// A recorder for `instances` instances whose counters are all zero at
    /// `start_ns`. `interval_ns` is raised to [`INTERVAL_NS_MIN`].
    pub fn new(instances: usize, start_ns: Nanos, interval_ns: Nanos) -> SeriesRecorder {
        let interval_ns = interval_ns.max(INTERVAL_NS_MIN);
        SeriesRecorder {
            start_ns,
            interval_ns,
            last_ns: start_ns,
            next_k: 1,
            prev: vec![Counters::default(); instances],
            series: Series {
                interval_ns,
                instances: (0..instances)
                    .map(|i| InstanceSeries {
                        id: u8::try_from(i + 1).unwrap_or(u8::MAX),
                        points: Vec::new(),
                    })
                    .collect(),
                truncated: false,
            },
        }
    }

    /// When the next sample is due; `None` once [`POINTS_MAX`] are kept.
    pub fn next_at(&self) -> Option<Nanos> {
        (!self.series.truncated).then(|| {
            self.start_ns
                .saturating_add(self.next_k.saturating_mul(self.interval_ns))
        })
    }

    /// Take a sample at `at` (cluster time), one per instance in order: a
    /// point per instance for the interval since the last sample. A sample
    /// at or before the last one is ignored. The next sample is due at the
    /// first interval's end after `at` (a late live look skips the ends it
    /// missed; its point is longer).
    pub fn record(&mut self, at: Nanos, samples: &[InstantSample<'_>]) {
        if at <= self.last_ns || self.series.truncated {
            return;
        }
        let full = self
            .series
            .instances
            .first()
            .is_some_and(|s| s.points.len() >= POINTS_MAX);
        if full {
            self.series.truncated = true;
            return;
        }
        let length_ns = at - self.last_ns;
        for (i, sample) in samples.iter().enumerate() {
            let (Some(prev), Some(out)) = (self.prev.get_mut(i), self.series.instances.get_mut(i))
            else {
                continue;
            };
            let now = Counters::of(sample.stats);
            out.points.push(point(prev, &now, at, length_ns, sample));
            *prev = now;
        }
        self.last_ns = at;
        let k = (at - self.start_ns) / self.interval_ns + 1;
        self.next_k = k.max(self.next_k + 1);
    }

    /// The series so far.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The series, with a last shorter point up to `end_ns` when the run
    /// ended between two sample times.
    pub fn finish(mut self, end_ns: Nanos, samples: &[InstantSample<'_>]) -> Series {
        self.record(end_ns, samples);
        self.series
    }
}

/// The point of one interval from the counters at its start and end.
fn point(
    before: &Counters,
    after: &Counters,
    end_ns: Nanos,
    length_ns: Nanos,
    sample: &InstantSample<'_>,
) -> SeriesPoint {
    // A restarted instance's counters may start again from zero: saturate.
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let mut wait_class_ns = [0u64; SERIES_WAIT_CLASSES.len()];
    let mut top: Vec<TopWait> = Vec::new();
    for (k, w) in Wait::ALL.iter().enumerate() {
        let (Some(a), b) = (after.waits.get(k), before.waits.get(k).copied()) else {
            continue;
        };
        let (b_waits, b_ns) = b.unwrap_or_default();
        let (waits, time_ns) = (d(a.0, b_waits), d(a.1, b_ns));
        if w.class() == WaitClass::Idle || (waits == 0 && time_ns == 0) {
            continue;
        }
        if let Some(c) = SERIES_WAIT_CLASSES.iter().position(|c| *c == w.class()) {
            wait_class_ns[c] += time_ns;
        }
        top.push(TopWait {
            event: w.name(),
            waits,
            time_ns,
        });
    }
    top.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.event.cmp(b.event)));
    top.truncate(TOP_WAITS_MAX);
    SeriesPoint {
        end_ns,
        length_ns,
        up: sample.up,
        gc_cr_blocks_received: d(after.cr_blocks, before.cr_blocks),
        gc_cr_receive_ns: d(after.cr_ns, before.cr_ns),
        gc_current_blocks_received: d(after.current_blocks, before.current_blocks),
        gc_current_receive_ns: d(after.current_ns, before.current_ns),
        user_commits: d(after.commits, before.commits),
        wait_class_ns,
        top_waits: top,
        run_queue: u32::try_from(sample.run_queue).unwrap_or(u32::MAX),
        lms_backlog: u32::try_from(sample.lms_backlog).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = NS_PER_MS;

    fn sample(stats: &Stats) -> InstantSample<'_> {
        InstantSample {
            stats,
            run_queue: 3,
            lms_backlog: 1,
            up: true,
        }
    }

    #[test]
    fn counters_are_differenced_into_each_interval() {
        let mut rec = SeriesRecorder::new(2, 0, 500 * MS);
        assert_eq!(rec.next_at(), Some(500 * MS));
        let mut a = Stats::default();
        let b = Stats::default();
        a.add(Stat::GcCrBlocksReceived, 10);
        a.add(Stat::GcCrBlockReceiveTime, 10 * 2 * MS);
        a.add(Stat::UserCommits, 4);
        a.wait(Wait::GcCrBlock2Way, 3 * MS, true);
        a.wait(Wait::LogFileSync, 5 * MS, true);
        // An idle class wait is left out.
        a.wait(Wait::PxDeqExecutionMsg, 100 * MS, false);
        rec.record(500 * MS, &[sample(&a), sample(&b)]);
        assert_eq!(rec.next_at(), Some(1000 * MS));
        a.add(Stat::GcCrBlocksReceived, 5);
        a.add(Stat::GcCrBlockReceiveTime, 5 * 4 * MS);
        a.add(Stat::UserCommits, 1);
        a.wait(Wait::LogFileSync, 7 * MS, true);
        rec.record(1000 * MS, &[sample(&a), sample(&b)]);
        // The run ends 200 ms into the third interval.
        let s = rec.finish(1200 * MS, &[sample(&a), sample(&b)]);
        let p = &s.instances[0].points;
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].end_ns, p[0].length_ns), (500 * MS, 500 * MS));
        assert_eq!(p[0].gc_cr_blocks_received, 10);
        assert_eq!(p[0].gc_cr_receive_ms(), Some(2.0));
        assert_eq!(p[0].commits_per_s(), 8.0);
        assert_eq!(p[0].wait_class_ms(WaitClass::Cluster), 3.0);
        assert_eq!(p[0].wait_class_ms(WaitClass::Commit), 5.0);
        assert_eq!(p[0].top_waits.len(), 2, "{:?}", p[0].top_waits);
        assert_eq!(p[0].top_waits[0].event, "log file sync");
        assert_eq!((p[0].run_queue, p[0].lms_backlog), (3, 1));
        assert_eq!(p[1].gc_cr_blocks_received, 5);
        assert_eq!(p[1].gc_cr_receive_ms(), Some(4.0));
        assert_eq!(p[1].user_commits, 1);
        assert_eq!(p[1].top_waits[0].time_ns, 7 * MS);
        assert_eq!((p[2].end_ns, p[2].length_ns), (1200 * MS, 200 * MS));
        assert_eq!(p[2].gc_cr_blocks_received, 0);
        assert_eq!(p[2].gc_cr_receive_ms(), None);
        assert!(p[2].top_waits.is_empty());
        assert_eq!(s.instances[1].id, 2);
        assert!(s.instances[1].points.iter().all(|p| p.user_commits == 0));
    }

    #[test]
    fn a_late_sample_covers_the_time_since_the_last_and_skips_missed_ends() {
        let mut rec = SeriesRecorder::new(1, 0, 100 * MS);
        let s = Stats::default();
        rec.record(350 * MS, &[sample(&s)]);
        assert_eq!(rec.next_at(), Some(400 * MS));
        // Nothing for a time already covered.
        rec.record(300 * MS, &[sample(&s)]);
        rec.record(420 * MS, &[sample(&s)]);
        let p = &rec.series().instances[0].points;
        assert_eq!(p.len(), 2);
        assert_eq!((p[1].end_ns, p[1].length_ns), (420 * MS, 70 * MS));
    }

    #[test]
    fn a_restarted_instance_whose_counters_fell_back_adds_nothing() {
        let mut rec = SeriesRecorder::new(1, 0, 100 * MS);
        let mut s = Stats::default();
        s.add(Stat::UserCommits, 50);
        rec.record(100 * MS, &[sample(&s)]);
        let fresh = Stats::default();
        rec.record(200 * MS, &[sample(&fresh)]);
        s = Stats::default();
        s.add(Stat::UserCommits, 4);
        rec.record(300 * MS, &[sample(&s)]);
        let p = &rec.series().instances[0].points;
        assert_eq!(
            p.iter().map(|p| p.user_commits).collect::<Vec<_>>(),
            [50, 0, 4]
        );
    }

    #[test]
    fn sampling_stops_at_the_limit_and_says_so() {
        let mut rec = SeriesRecorder::new(1, 0, INTERVAL_NS_MIN);
        let s = Stats::default();
        for k in 1..=POINTS_MAX as u64 + 1 {
            rec.record(k * INTERVAL_NS_MIN, &[sample(&s)]);
        }
        assert_eq!(rec.next_at(), None);
        assert!(rec.series().truncated);
        assert_eq!(rec.series().instances[0].points.len(), POINTS_MAX);
    }
}
