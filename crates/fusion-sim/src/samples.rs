//! The recovery summary's simulator side: each instance's committed
//! transactions sampled every [`SAMPLE_NS`] of cluster time while a
//! scenario with failure faults runs (the brownout is read off them,
//! `fusion_driver::brownout`), and the instance recoveries gathered at
//! every phase's end into the phase results.
//!
//! The same stops take the run's time series (`fusion_driver::series`):
//! every instance's counters and gauges at each interval's end.
//!
//! Sampling stops the event loop at the sample times, as a timed fault
//! does; it reads counters and changes nothing. A scenario without failure
//! faults samples no commits, only the series.

use fusion_core::config::Nanos;
use fusion_core::instance::Instance;
use fusion_core::recovery::RecoveryReport;
use fusion_core::stats::{Stat, Stats};
use fusion_driver::brownout::{CommitSeries, SAMPLE_NS, SAMPLES_MAX};
use fusion_driver::{InstantSample, SeriesRecorder};
use fusion_report::Series;
use fusion_scenario::{Fault, Scenario};

use crate::Sim;
use crate::lifecycle::{Life, LifeEvent};

impl Sim {
    /// The commit series of a run of `s`: sampled only when it has failure faults.
    pub(crate) fn series_for(s: &Scenario) -> Option<CommitSeries> {
        s.phases
            .iter()
            .flat_map(|p| &p.faults)
            .any(Fault::is_failure)
            .then(|| CommitSeries::new(0, SAMPLE_NS))
    }

    /// [`Sim::run_to`], stopping at every sample time on the way to take a
    /// sample of every instance's commits (when the run samples them) and
    /// of the time series.
    pub(crate) fn run_sampled(&mut self, until: Nanos, timeline: &[(Nanos, LifeEvent)]) {
        let mut applied = 0;
        loop {
            let commits_at = self
                .commits
                .as_ref()
                .filter(|c| c.samples.len() < SAMPLES_MAX)
                .map(CommitSeries::next_at);
            let series_at = self.series.as_ref().and_then(SeriesRecorder::next_at);
            let Some(at) = commits_at.into_iter().chain(series_at).min() else {
                break;
            };
            if at > until {
                break;
            }
            let upto = applied + timeline[applied..].partition_point(|(t, _)| *t <= at);
            self.run_to(at, &timeline[applied..upto]);
            applied = upto;
            if self.stopped.is_some() {
                return;
            }
            if commits_at == Some(at) {
                self.sample();
            }
            if series_at == Some(at) {
                self.sample_series(at);
            }
        }
        self.run_to(until, &timeline[applied..]);
    }

    /// Every instance's counters and gauges now, for the time series.
    fn sample_series(&mut self, at: Nanos) {
        let stats: Vec<Stats> = self.instances.iter().map(Instance::stats).collect();
        let samples = self.instant_samples(&stats);
        if let Some(r) = self.series.as_mut() {
            r.record(at, &samples);
        }
    }

    fn instant_samples<'a>(&self, stats: &'a [Stats]) -> Vec<InstantSample<'a>> {
        stats
            .iter()
            .enumerate()
            .map(|(i, stats)| InstantSample {
                stats,
                run_queue: self.instances[i].run_queue_len(),
                lms_backlog: self.instances[i].lms_backlog(),
                up: self.is_up(i),
            })
            .collect()
    }

    /// The time series of the run so far, with a last shorter point up to
    /// now when the run ended between two sample times (`None` when it was
    /// not taken).
    pub(crate) fn finish_series(&mut self) -> Option<Series> {
        let stats: Vec<Stats> = self.instances.iter().map(Instance::stats).collect();
        let samples = self.instant_samples(&stats);
        let now = self.now;
        self.series.take().map(|r| r.finish(now, &samples))
    }

    /// Every instance's `user commits` and whether it is up, now.
    fn sample(&mut self) {
        self.note_admissions();
        let sample = (0..self.instances.len())
            .map(|i| {
                (
                    self.instances[i].stats().get(Stat::UserCommits),
                    self.is_up(i),
                )
            })
            .collect();
        // Past SAMPLES_MAX nothing more is kept (nor taken): the brownout
        // is measured over the samples kept.
        if let Some(c) = self.commits.as_mut() {
            c.push(sample);
        }
    }

    /// The instance recoveries completed since the last call, every
    /// instance's, in the order of their completion.
    pub(crate) fn take_recoveries(&mut self) -> Vec<RecoveryReport> {
        let mut out: Vec<RecoveryReport> = self
            .instances
            .iter_mut()
            .flat_map(|x| x.take_recoveries())
            .collect();
        out.sort_by_key(|r| (r.completed_at, r.dead_instance.0));
        for r in &out {
            if let Some(l) = self.lives_recovered.get_mut(r.dead_instance.idx()) {
                l.note_recovered();
            }
        }
        out
    }

    /// Note which instances' current lives the cluster has admitted: those
    /// in the newest incarnation of the instances that are up (looked at
    /// every sample and every step of the quiesce).
    fn note_admissions(&mut self) {
        let newest = (0..self.instances.len())
            .filter(|&i| self.is_up(i) && self.instances[i].halted().is_none())
            .map(|i| {
                let (incarnation, members) = self.instances[i].membership();
                (incarnation, std::cmp::Reverse(i), members)
            })
            .max_by_key(|m| (m.0, m.1));
        let Some((incarnation, _, members)) = newest else {
            return;
        };
        for (i, x) in self.instances.iter().enumerate() {
            let life = self.lives.get(i).copied().unwrap_or(0);
            let up = self.life.get(i).is_some_and(|l| !matches!(l, Life::Down));
            let Some(l) = self.lives_recovered.get_mut(i) else {
                continue;
            };
            l.note_seen(life, incarnation, members.contains(x.id) && up);
        }
    }

    /// The instances with an admitted life that ended (killed, or evicted
    /// and stopped) that no survivor has reported recovering yet. The
    /// end-of-run checks wait for them: until then the newest image of what
    /// only they held is in their redo, not in any cache or the store. (A
    /// recovery that completes after the last phase is in no phase's
    /// report; a life killed before the cluster admitted it held nothing.)
    pub(crate) fn unrecovered(&mut self) -> Vec<usize> {
        self.note_admissions();
        self.take_recoveries();
        (0..self.instances.len())
            .filter(|&i| {
                let l = self.lives_recovered.get(i).copied().unwrap_or_default();
                let down = matches!(self.life.get(i), Some(Life::Down));
                let current = self.lives.get(i).copied().unwrap_or(0);
                l.unrecovered(current, down)
            })
            .collect()
    }

    /// The commits sampled so far (None when the run does not sample).
    pub fn commit_series(&self) -> Option<&CommitSeries> {
        self.commits.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use fusion_core::config::{KeyDist, NS_PER_MS, NS_PER_S, Step};
    use fusion_testkit::{ScenarioBuilder, btree, phase, table, txn, update_by_index, workload};

    use super::*;
    use crate::{SimOptions, run_phases};

    /// Two phases, updates on every instance, instance 2 frozen for 400 ms
    /// in the second (a failure fault: the run samples).
    fn paused() -> Scenario {
        let mut second = phase("second", 2 * NS_PER_S);
        second.faults.push(Fault::Pause {
            instance: 2,
            at: 500 * NS_PER_MS,
            duration: 400 * NS_PER_MS,
        });
        ScenarioBuilder::new(3)
            .table(table("t", 400, 20))
            .index(btree("t_pk", 0, 32, 32))
            .workload(workload(
                "w",
                2,
                8,
                NS_PER_MS,
                vec![txn(
                    "upd",
                    1,
                    vec![update_by_index(KeyDist::Uniform, 1), Step::Commit],
                )],
            ))
            .phase(phase("first", NS_PER_S))
            .phase(second)
            .build()
    }

    #[test]
    fn commits_are_sampled_every_100_ms_and_sampling_changes_nothing() {
        let s = paused();
        let opts = SimOptions::default();
        let sim = Sim::new(&s, &opts);
        assert!(sim.commit_series().is_some(), "a failure fault: sampled");
        let mut probe = Sim::new(&s, &opts);
        for p in &s.phases {
            let start = probe.now();
            for i in 0..probe.instances.len() {
                for cmd in p.commands_for(i) {
                    probe.command(i, cmd);
                }
            }
            let timeline = fusion_driver::timeline_of(start, &p.faults);
            probe.run_sampled(start + p.duration, &timeline);
        }
        let series = probe.commit_series().expect("sampled");
        // 0 s, 0.1 s, ..., 3.0 s.
        assert_eq!(series.samples.len(), 31);
        let up = |k: usize| series.samples[k][1].1;
        // The pause: from 1.5 s to 1.9 s of the timeline.
        assert!(up(14) && !up(15) && !up(18) && up(19), "{series:?}");
        let last = &series.samples[30];
        // The workload runs on instances 1 and 2.
        assert!(last[0].0 > 0 && last[1].0 > 0 && last[2].0 == 0, "{last:?}");
        assert!(series.samples.windows(2).all(|w| w[0][0].0 <= w[1][0].0));
        // The same run without samples: the same report, bit for bit.
        let sampled = run_phases(Sim::new(&s, &opts), "v", &s, &opts);
        let mut plain = Sim::new(&s, &opts);
        plain.commits = None;
        plain.series = None;
        let plain = run_phases(plain, "v", &s, &opts);
        assert!(plain.result.series.is_none());
        assert_eq!(sampled.events(), plain.events());
        for (a, b) in sampled.result.phases.iter().zip(&plain.result.phases) {
            for (x, y) in a.instances.iter().zip(&b.instances) {
                assert_eq!(x.stats, y.stats);
            }
            assert_eq!(a.alert_log, b.alert_log);
            assert!(a.recovery.is_empty(), "no instance died");
        }
    }

    #[test]
    fn the_series_has_a_point_per_interval_and_sampling_it_changes_nothing() {
        let s = paused();
        // An interval that is no multiple of the brownout's 100 ms: the
        // loop stops at both kinds of sample time.
        let opts = SimOptions {
            interval_ns: 250 * NS_PER_MS,
            ..SimOptions::default()
        };
        let sampled = run_phases(Sim::new(&s, &opts), "v", &s, &opts);
        let series = sampled.result.series.as_ref().expect("a series");
        assert_eq!(series.interval_ns, 250 * NS_PER_MS);
        assert_eq!(series.instances.len(), 3);
        let points = &series.instances[1].points;
        // 3 s of run: 12 points of 250 ms.
        assert_eq!(points.len(), 12);
        assert!(points.iter().all(|p| p.length_ns == 250 * NS_PER_MS));
        assert_eq!(points[11].end_ns, 3 * NS_PER_S);
        // inst2 is frozen from 1.5 s to 1.9 s: down at 1.5 s and 1.75 s,
        // up again at 2 s.
        let up: Vec<bool> = points.iter().map(|p| p.up).collect();
        assert!(up[4] && !up[5] && !up[6] && up[7], "{up:?}");
        // The workload runs on instances 1 and 2, and commits add up to the
        // phases' counts.
        let commits: u64 = points.iter().map(|p| p.user_commits).sum();
        let phases: u64 = sampled
            .result
            .phases
            .iter()
            .map(|p| p.instances[1].stats.get(Stat::UserCommits))
            .sum();
        assert!(commits > 0);
        assert_eq!(commits, phases);
        assert!(
            series.instances[2]
                .points
                .iter()
                .all(|p| p.user_commits == 0)
        );
        let mut plain = Sim::new(&s, &opts);
        plain.series = None;
        let plain = run_phases(plain, "v", &s, &opts);
        assert_eq!(sampled.events(), plain.events());
        for (a, b) in sampled.result.phases.iter().zip(&plain.result.phases) {
            for (x, y) in a.instances.iter().zip(&b.instances) {
                assert_eq!(x.stats, y.stats);
            }
        }
    }
}
