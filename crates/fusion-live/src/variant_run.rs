//! One variant of a live run while its phases go: the phase loop (its
//! failure faults carried out on the processes at their times, the
//! instances watched four times a second), and what the runner keeps of
//! each instance's life meanwhile ([`Lives`]).
//!
//! A `kill` crashes the instance's state machine first (the `Crash` admin
//! call: exactly what the simulator's kill does), takes what it recorded
//! up to that instant (history, alert log, counters), then SIGKILLs the
//! process: its sockets close, its peers see it gone, only its redo in the
//! store survives. A `pause` is SIGSTOP and, `duration_s` later, SIGCONT. A
//! `restart` starts the process again on the same addresses and loads it
//! with its next life and the counters of the earlier one.

use std::time::Duration;

use fusion_check::{ConsistencyChecker, MemberView};
use fusion_core::recovery::RecoveryReport;
use fusion_core::stats::Stats;
use fusion_core::types::InstId;
use fusion_driver::brownout::CommitSeries;
use fusion_driver::{Activity, InstantSample, LifeEvent, SeriesRecorder};
use fusion_report::AlertEntry;
use fusion_scenario::Phase;

use crate::admin_client::Admin;
use crate::answers::{collect_events, member_views};
use crate::clock::monotonic_ns;
use crate::drain::drain_one;
use crate::lives::{LiveLife, Lives, ProcessControl};
use crate::nextvals::Nextvals;
use crate::pb;
use crate::phase_watch::{
    self, Hold, PhaseSnapshots, STALL_MAX, StallWatch, WATCH_EVERY, phase_bar,
};
use crate::stats_codec;
use crate::store_client::Store;

/// The runner's state for one variant.
pub struct VariantRun<'a> {
    pub(crate) admins: &'a [Admin],
    pub(crate) lives: Lives,
    pub(crate) checker: Option<ConsistencyChecker>,
    pub(crate) nextvals: Option<Nextvals>,
    /// Every instance's commits, sampled at each look (failure scenarios).
    pub(crate) series: Option<CommitSeries>,
    /// The time series' interval, and the series once the first phase
    /// started (sampled when due, between the looks).
    pub(crate) interval_ns: u64,
    pub(crate) recorder: Option<SeriesRecorder>,
    /// The cluster clock's origin (CLOCK_MONOTONIC ns).
    pub(crate) epoch: u64,
    /// What every instance was loaded with (a restarted one gets it again).
    pub(crate) load: pb::LoadRequest,
    pub(crate) control: Option<&'a dyn ProcessControl>,
    /// Where the instances keep their history journals, if the runner can
    /// read them (a local cluster's directory).
    pub(crate) journal_dir: Option<std::path::PathBuf>,
    /// Whether each phase has failure faults: an eviction while none has
    /// had any so far is not the scenario's doing, and the instance is
    /// taken back.
    pub(crate) failures_by_phase: Vec<bool>,
    /// The phase under way (0-based), for an instance taken back.
    pub(crate) phase_index: usize,
    /// Since when no instance answers the runner (every one lost).
    pub(crate) none_answer_since: Option<std::time::Instant>,
    /// Whether a lost instance is still a member in the cluster's newest
    /// view: the survivors have not decided yet, and may wait for it.
    pub(crate) undecided: bool,
    /// What the checks could not see (a lost instance without a journal):
    /// put in the variant's outcome.
    pub(crate) unchecked: Vec<String>,
    /// Since when the block store has not answered the runner.
    pub(crate) store_silent_since: Option<std::time::Instant>,
    /// The network faults the kernel carries out in the instances'
    /// namespaces (None: the scenario has none).
    pub(crate) net: Option<crate::netfault::NetFaults>,
    /// The faults of the phase under way the kernel carries out (a
    /// restarted instance begins the phase without them too).
    pub(crate) kernel_faults: Vec<u32>,
}

/// How long the block store may not answer the runner before the run
/// stops (exit 4).
const STORE_SILENCE_MAX: Duration = Duration::from_secs(5);

/// How long the runner goes on with no instance answering it before it
/// says it is cut off from the cluster (exit status 4).
const NONE_ANSWER_MAX: Duration = Duration::from_secs(30);
/// A held phase's longest run (a year: until the operator ends it).
const HELD_PHASE_MAX: Duration = Duration::from_secs(365 * 24 * 3600);
/// The deadline of the status call that probes a lost instance.
const PROBE_TIMEOUT: Duration = Duration::from_millis(700);

type PhaseRan = (PhaseSnapshots, Vec<AlertEntry>, Vec<RecoveryReport>);

impl VariantRun<'_> {
    /// The cluster clock now.
    fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch)
    }

    /// The admin of every instance that can answer, with its index.
    pub(crate) fn answering(&self) -> Vec<(usize, Admin)> {
        self.admins
            .iter()
            .enumerate()
            .filter(|(i, _)| self.lives.answers(*i))
            .map(|(i, a)| (i, a.clone()))
            .collect()
    }

    /// One phase: begin it everywhere, carry out its failure faults at their
    /// times, watch the cluster, snapshot its edges.
    pub(crate) async fn phase(
        &mut self,
        k: usize,
        phase: &Phase,
        variant: &str,
        progress: bool,
        store: &Store,
        hold: Option<&Hold>,
    ) -> Result<PhaseRan, String> {
        store.set_faults(&phase.faults).await?;
        self.phase_index = k;
        // The counters before the phase's own commands, as the simulator
        // takes them.
        let before = self.snapshot().await?;
        let index = u32::try_from(k).map_err(|_| "too many phases".to_string())?;
        // The kernel's share of the phase's network faults, set before the
        // instances leave it out of their model; a line for each fault.
        let begun = match self.net.as_mut() {
            Some(n) => n.begin(phase)?,
            None => crate::netfault::Begun::default(),
        };
        let at = self.now_ns();
        for (i, line) in begun.lines {
            self.lives.note_line(at, i, line);
        }
        self.kernel_faults = begun.kernel;
        let kernel = self.kernel_faults.clone();
        self.each(|a| {
            let kernel = kernel.clone();
            async move { a.begin_phase(index, kernel).await }
        })
        .await?;
        if let Some(control) = self.control {
            control.phase_begins(k)?;
        }
        let bar = progress.then(|| match hold {
            Some(_) => phase_watch::held_bar(variant, &phase.name),
            None => phase_bar(variant, &phase.name, phase.duration),
        });
        let start = tokio::time::Instant::now();
        let start_ns = self.now_ns();
        if self.recorder.is_none() {
            let n = self.admins.len();
            self.recorder = Some(SeriesRecorder::new(n, start_ns, self.interval_ns));
        }
        // A held phase runs until its end is called (a signal, --duration).
        let end = match hold {
            Some(_) => start + HELD_PHASE_MAX,
            None => start + Duration::from_nanos(phase.duration),
        };
        let timeline = fusion_driver::timeline_of(start_ns, &phase.faults);
        let mut next_event = 0;
        let mut stall = StallWatch::new(STALL_MAX);
        let mut next_look = start + WATCH_EVERY;
        loop {
            let now = tokio::time::Instant::now();
            if now >= end || hold.is_some_and(|h| *h.end.borrow()) {
                break;
            }
            // Sleep until the next look, fault or resume, or the phase's end.
            let due_event = timeline.get(next_event).map(|(t, _)| *t);
            let due_resume = self.lives.resume_at.iter().map(|(t, _)| *t).min();
            let due_sample = self.recorder.as_ref().and_then(SeriesRecorder::next_at);
            let wake_ns = [due_event, due_resume, due_sample]
                .into_iter()
                .flatten()
                .min();
            let mut wake = next_look.min(end);
            if let Some(t) = wake_ns {
                let dt = Duration::from_nanos(t.saturating_sub(self.now_ns()));
                wake = wake.min(now + dt);
            }
            tokio::time::sleep_until(wake).await;
            let now_ns = self.now_ns();
            while let Some(&(t, ev)) = timeline.get(next_event) {
                if t > now_ns {
                    break;
                }
                next_event += 1;
                self.apply(ev, k).await?;
            }
            self.resume_due(now_ns).await?;
            if due_sample.is_some_and(|t| t <= self.now_ns()) {
                self.sample_series().await?;
            }
            if tokio::time::Instant::now() < next_look {
                continue;
            }
            next_look = tokio::time::Instant::now() + WATCH_EVERY;
            if let Some(b) = &bar {
                b.set_position(start.elapsed().as_millis() as u64);
                if hold.is_some() {
                    b.set_message(self.lives.summary(self.now_ns()));
                }
            }
            let mut looked = self.look(&mut stall).await;
            if looked.is_ok() {
                looked = self.store_answers(store).await;
            }
            if let Err(e) = looked {
                if let Some(b) = &bar {
                    b.abandon();
                }
                return Err(e);
            }
        }
        // What is due at the very end (a fault at the phase's last instant).
        while let Some(&(_, ev)) = timeline.get(next_event) {
            next_event += 1;
            self.apply(ev, k).await?;
        }
        if let Some(n) = self.net.as_mut() {
            n.end()?;
        }
        self.kernel_faults.clear();
        if let Some(control) = self.control {
            control.phase_ends(k)?;
        }
        let after = self.snapshot().await?;
        if let Some(b) = bar {
            b.finish();
        }
        let (mut alerts, recoveries) = self.take_events().await?;
        alerts.append(&mut self.lives.alerts);
        let end_ns = self.now_ns();
        Ok((
            PhaseSnapshots {
                name: phase.name.clone(),
                start_ns,
                end_ns,
                before,
                after,
            },
            alerts,
            recoveries,
        ))
    }

    /// One look at the cluster: its status (an instance that died or that
    /// reports a problem, unasked, stops the run), evictions, the commits
    /// series, the histories and sequence values.
    async fn look(&mut self, stall: &mut StallWatch) -> Result<(), String> {
        let st = self.watch().await?;
        if self.undecided {
            // The survivors may wait for a lost member until they evict it
            // (`css_misscount`): no progress then is not a hang.
            *stall = StallWatch::new(STALL_MAX);
        } else {
            stall.check(&st, std::time::Instant::now())?;
        }
        self.sample(&st);
        if let Some(mut c) = self.checker.take() {
            let drained = self.drain(&mut c, false).await;
            self.checker = Some(c);
            drained?;
        }
        if let Some(mut n) = self.nextvals.take() {
            let taken = self.take_nextvals(&mut n).await;
            self.nextvals = Some(n);
            taken?;
        }
        Ok(())
    }

    /// Every instance that can answer, asked for its status, and every lost
    /// one probed. One that stops answering without the scenario's doing is
    /// lost, not a failure of the run: the cluster decides by its heartbeats
    /// whether it is dead, and one that answers again is taken back. Err: a
    /// problem an instance reports, or no instance answering any more.
    async fn watch(&mut self) -> Result<Vec<pb::StatusResponse>, String> {
        let mut set = tokio::task::JoinSet::new();
        for (i, a) in self.admins.iter().enumerate() {
            let timeout = if self.lives.answers(i) {
                Duration::from_secs(3)
            } else if self.lives.lost(i) {
                PROBE_TIMEOUT
            } else {
                continue;
            };
            let a = a.clone();
            set.spawn(async move { (i, a.status(timeout).await) });
        }
        let mut got: Vec<(usize, Result<pb::StatusResponse, String>)> = Vec::new();
        while let Some(j) = set.join_next().await {
            got.push(j.map_err(|e| format!("status call failed: {e}"))?);
        }
        got.sort_by_key(|(i, _)| *i);
        // The cluster as those that run in it see it, before any change here.
        let answered = member_views(got.iter().filter_map(|(_, r)| r.as_ref().ok()));
        let members_now = MemberView::newest(&answered).map(|v| v.members);
        let mut lines = Vec::new();
        let mut out = Vec::new();
        let mut back = Vec::new();
        for (i, r) in got {
            match r {
                Err(_) if self.lives.lost(i) => {}
                Err(e) => self.lose(i, &e),
                Ok(s) if self.lives.lost(i) => back.push((i, s)),
                Ok(s) => {
                    if !s.halted.is_empty() && self.lives.state[i] == LiveLife::Up {
                        // The cluster evicted it: it stopped itself.
                        self.lives.state[i] = LiveLife::Evicted;
                        self.lives.fresh[i] = false;
                        let at = self.now_ns();
                        self.lives.note(at, i, &format!("stopped: {}", s.halted));
                        // Stopped while the others still count it a member
                        // (it terminated on its own: an I/O error), all it
                        // recorded is from its life as a member: taken
                        // before it is down. Once evicted, what it did after
                        // counts for nothing, as on the simulator.
                        let id = InstId(i as u8);
                        if let Some(mut c) = self.checker.take() {
                            let member = members_now.is_some_and(|m| m.contains(id));
                            let drained = if member {
                                drain_one(i, &self.admins[i], &mut c, true, false).await
                            } else {
                                Ok(0)
                            };
                            c.instance_down(id);
                            self.checker = Some(c);
                            self.lives.taken[i] += drained?;
                        }
                        let scripted = self
                            .failures_by_phase
                            .iter()
                            .take(self.phase_index + 1)
                            .any(|&f| f);
                        if !scripted {
                            back.push((i, s.clone()));
                        }
                    }
                    // What an evicted instance meets (its store writes
                    // fenced) is the eviction's doing, not the run's problem.
                    if self.lives.up(i) {
                        lines.extend(s.errors.iter().cloned());
                    }
                    out.push(s);
                }
            }
        }
        let views = member_views(&out);
        let newest = MemberView::newest(&views).map(|v| v.members);
        let lost: Vec<usize> = (0..self.admins.len())
            .filter(|&i| self.lives.lost(i))
            .collect();
        self.undecided = false;
        for &i in &lost {
            let evicted = newest.is_some_and(|m| !m.contains(InstId(i as u8)));
            if evicted {
                // Its last observations from its journal before the checker
                // takes it as down (and ignores what it says from then on).
                self.read_journal(i)?;
            } else {
                self.undecided = true;
            }
        }
        if let Some(c) = self.checker.as_mut() {
            c.note_membership(&views);
        }
        for (i, s) in back {
            self.take_back(i, &s).await?;
        }
        if out.is_empty() && !lost.is_empty() {
            let since = *self
                .none_answer_since
                .get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > NONE_ANSWER_MAX {
                return Err(format!(
                    "no instance has answered the runner for {} s: the runner is cut off \
                     from the cluster, or every instance is gone",
                    NONE_ANSWER_MAX.as_secs()
                ));
            }
        } else {
            self.none_answer_since = None;
        }
        if lines.is_empty() {
            return Ok(out);
        }
        let mut seen = std::collections::BTreeSet::new();
        lines.retain(|l| seen.insert(l.clone()));
        for s in &out {
            if !s.waits.is_empty() {
                let waits: Vec<String> = s
                    .waits
                    .iter()
                    .map(|w| format!("{} ({} sessions)", w.event, w.sessions))
                    .collect();
                lines.push(format!(
                    "in flight on inst{}: {}",
                    s.instance + 1,
                    waits.join(", ")
                ));
            }
        }
        Err(lines.join("\n"))
    }

    /// The block store answers the runner; Err once it has not for
    /// [`STORE_SILENCE_MAX`]: without it the cluster has nothing to run
    /// on (its instances terminate on their I/O errors).
    async fn store_answers(&mut self, store: &Store) -> Result<(), String> {
        match store.ping().await {
            Ok(()) => {
                self.store_silent_since = None;
                Ok(())
            }
            Err(e) => {
                let since = *self
                    .store_silent_since
                    .get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= STORE_SILENCE_MAX {
                    Err(format!(
                        "the block store has not answered for {} s: {e}",
                        STORE_SILENCE_MAX.as_secs()
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Instance `i` stopped answering (`why`), and the scenario did not ask
    /// for it: from now on it is probed, not relied on.
    fn lose(&mut self, i: usize, why: &str) {
        if !self.lives.answers(i) {
            return;
        }
        let at = self.now_ns();
        self.lives.state[i] = LiveLife::Lost { since_ns: at };
        self.lives.fresh[i] = false;
        // The admin client names the instance and its address first; the
        // alert log's column says which instance already.
        let why = self
            .admins
            .get(i)
            .and_then(|a| why.strip_prefix(&format!("{}: ", a.who)))
            .unwrap_or(why);
        self.lives.note_line(
            at,
            i,
            format!(
                "No answer since {:.3} s (not in the scenario): {why}",
                at as f64 / 1e9
            ),
        );
    }

    /// A lost or evicted instance answers (`s`): a frozen one woken before
    /// the cluster evicted it goes on; one evicted, or started again by
    /// hand with nothing loaded, is started as the instance's next life and
    /// asks the cluster to admit it, as a restarted one does (Clusterware
    /// restarts an evicted instance).
    async fn take_back(&mut self, i: usize, s: &pb::StatusResponse) -> Result<(), String> {
        let at = self.now_ns();
        let since = match self.lives.state[i] {
            LiveLife::Lost { since_ns } => Some(since_ns),
            _ => None,
        };
        let gone = |since: Option<u64>| {
            since.map_or(String::new(), |t| {
                format!(" after {:.1} s", at.saturating_sub(t) as f64 / 1e9)
            })
        };
        if s.loaded && s.halted.is_empty() {
            self.lives.state[i] = LiveLife::Up;
            self.lives.note_line(
                at,
                i,
                format!(
                    "Instance answering again{} (not in the scenario)",
                    gone(since)
                ),
            );
            return Ok(());
        }
        if s.loaded {
            self.lives.note_line(
                at,
                i,
                format!(
                    "Instance answering again{}: evicted ({}); restarting it (not in the scenario)",
                    gone(since),
                    s.halted
                ),
            );
        } else {
            // A new process: the old life is dead, with what it recorded.
            self.read_journal(i)?;
            if let Some(c) = self.checker.as_mut() {
                c.instance_down(InstId(i as u8));
            }
            self.lives.note_line(
                at,
                i,
                format!(
                    "Instance process started again{} with nothing loaded (not in the scenario)",
                    gone(since)
                ),
            );
        }
        self.rejoin(i).await?;
        let at = self.now_ns();
        self.lives.note(at, i, "restarted (startup)");
        Ok(())
    }

    /// Load instance `i`'s process with its next life and the counters of
    /// the earlier ones, and begin the phase under way on it.
    async fn rejoin(&mut self, i: usize) -> Result<(), String> {
        self.lives.life[i] += 1;
        self.lives.taken[i] = 0;
        self.lives.journal_read[i] = false;
        self.lives.fresh[i] = true;
        let mut load = self.load.clone();
        load.life = self.lives.life[i];
        load.carried = self.lives.last_stats[i]
            .as_ref()
            .map(|(st, now)| stats_codec::encode(st, *now));
        let a = self.admin(i)?;
        a.load(load).await?;
        let index = u32::try_from(self.phase_index).map_err(|_| "too many phases".to_string())?;
        // A container started again has a new network namespace.
        if let Some(n) = self.net.as_mut() {
            n.restarted(i)?;
        }
        a.begin_phase(index, self.kernel_faults.clone()).await?;
        self.lives.state[i] = LiveLife::Up;
        Ok(())
    }

    /// Feed the checker what instance `i`'s current life recorded and did
    /// not hand over: the end of its journal (once).
    fn read_journal(&mut self, i: usize) -> Result<(), String> {
        if self.lives.journal_read[i] {
            return Ok(());
        }
        self.lives.journal_read[i] = true;
        let Some(c) = self.checker.as_mut() else {
            return Ok(());
        };
        let who = format!("inst{}", i + 1);
        let id = InstId(u8::try_from(i).map_err(|_| format!("{who}: too many instances"))?);
        let Some(dir) = &self.journal_dir else {
            self.unchecked.push(format!(
                "{who} stopped answering and its history since the runner's last look is \
                 not at hand (no history journal on this cluster): the checks may miss or \
                 misjudge its last commits"
            ));
            return Ok(());
        };
        let path = crate::journal::path(dir, id, self.epoch, self.lives.life[i]);
        let obs = crate::journal::read_after(&path, self.lives.taken[i], &who)?;
        self.lives.taken[i] += obs.len() as u64;
        c.take_drained(id, &obs, None);
        Ok(())
    }

    /// Call every instance that should answer; one that does not is lost
    /// (not the run's failure); the answers of the others, by instance.
    /// Err: an instance that answers reports an error.
    pub(crate) async fn each<T, F, Fut>(&mut self, f: F) -> Result<Vec<(usize, T)>, String>
    where
        F: Fn(Admin) -> Fut,
        Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
        T: Send + 'static,
    {
        let mut set = tokio::task::JoinSet::new();
        for (i, a) in self.answering() {
            let fut = f(a);
            set.spawn(async move { (i, fut.await) });
        }
        let mut out = Vec::new();
        let mut failed = Vec::new();
        while let Some(j) = set.join_next().await {
            match j.map_err(|e| format!("admin call failed: {e}"))? {
                (i, Ok(v)) => out.push((i, v)),
                (i, Err(e)) => failed.push((i, e)),
            }
        }
        out.sort_by_key(|(i, _)| *i);
        let mut errors = Vec::new();
        for (i, e) in failed {
            if let Some(e) = self.unless_lost(i, e).await {
                errors.push(e);
            }
        }
        if !errors.is_empty() {
            errors.sort();
            return Err(errors.join("\n"));
        }
        Ok(out)
    }

    /// A call to instance `i` failed with `e`: if its status does not
    /// answer either, it is lost (None); else `e` stands.
    async fn unless_lost(&mut self, i: usize, e: String) -> Option<String> {
        let a = self.admins.get(i)?.clone();
        match a.status(PROBE_TIMEOUT).await {
            Ok(_) => Some(e),
            Err(why) => {
                self.lose(i, &why);
                None
            }
        }
    }

    /// Keep a sample of every instance's commits for each sampling time
    /// that has come (a killed or frozen one: its last count, not up).
    fn sample(&mut self, st: &[pb::StatusResponse]) {
        let Some(series) = self.series.as_mut() else {
            return;
        };
        let now = monotonic_ns().saturating_sub(self.epoch);
        let n = self.lives.state.len();
        let mut sample: Vec<(u64, bool)> = match series.samples.last() {
            Some(last) => last.iter().map(|&(c, _)| (c, false)).collect(),
            None => vec![(0, false); n],
        };
        for s in st {
            if let Some(slot) = usize::try_from(s.instance)
                .ok()
                .and_then(|i| sample.get_mut(i))
            {
                let i = s.instance as usize;
                *slot = (s.user_commits, self.lives.up(i));
            }
        }
        while series.next_at() <= now {
            if !series.push(sample.clone()) {
                return;
            }
        }
    }

    /// Every instance's counters and gauges now, into the time series.
    async fn sample_series(&mut self) -> Result<(), String> {
        let gauges = self.gauges().await?;
        let stats = self.snapshot().await?;
        let at = self.now_ns();
        let samples: Vec<InstantSample<'_>> = stats
            .iter()
            .zip(&gauges)
            .enumerate()
            .map(|(i, (stats, &(run_queue, lms_backlog)))| InstantSample {
                stats,
                run_queue,
                lms_backlog,
                up: self.lives.up(i),
            })
            .collect();
        if let Some(r) = self.recorder.as_mut() {
            r.record(at, &samples);
        }
        Ok(())
    }

    /// The series of the variant, with a last point up to now (`None`
    /// before the first phase started).
    pub(crate) async fn finish_series(&mut self) -> Result<Option<fusion_report::Series>, String> {
        if self.recorder.is_none() {
            return Ok(None);
        }
        self.sample_series().await?;
        Ok(self.recorder.take().map(|r| r.series().clone()))
    }

    /// Every instance's run queue and LMS backlog now (0 for one that
    /// cannot answer).
    async fn gauges(&mut self) -> Result<Vec<(usize, usize)>, String> {
        let mut out = vec![(0, 0); self.admins.len()];
        let got = self
            .each(|a| async move { a.status(Duration::from_secs(3)).await })
            .await?;
        for (i, s) in got {
            out[i] = (s.run_queue as usize, s.lms_backlog as usize);
        }
        Ok(out)
    }

    /// Take what every answering instance's history holds into `c`.
    async fn drain(&mut self, c: &mut ConsistencyChecker, at_rest: bool) -> Result<(), String> {
        for (i, a) in self.answering() {
            let fresh = self.lives.fresh[i];
            match drain_one(i, &a, c, at_rest, fresh).await {
                Ok(n) => {
                    self.lives.taken[i] += n;
                    let id = InstId(u8::try_from(i).unwrap_or(u8::MAX));
                    if fresh && !c.is_down(id) {
                        self.lives.fresh[i] = false;
                    }
                }
                Err(e) => {
                    if let Some(e) = self.unless_lost(i, e).await {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Take the sequence values every answering instance handed out.
    pub(crate) async fn take_nextvals(&mut self, into: &mut Nextvals) -> Result<(), String> {
        for (i, a) in self.answering() {
            match a.nextvals().await {
                Ok(r) => into.take(i, &r, &a.who)?,
                Err(e) => {
                    if let Some(e) = self.unless_lost(i, e).await {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Every instance's counters: asked of those that answer, the last ones
    /// taken of the others (a killed, frozen or lost instance's did not
    /// move since, as far as anyone can tell).
    async fn snapshot(&mut self) -> Result<Vec<Stats>, String> {
        let got = self.each(|a| async move { a.stats().await }).await?;
        for (i, raw) in got {
            let who = &self.admins[i].who;
            let st = stats_codec::decode(&raw, who)?;
            self.lives.last_stats[i] = Some((st, raw.now_ns));
        }
        Ok(self
            .lives
            .last_stats
            .iter()
            .map(|s| s.as_ref().map(|(st, _)| st.clone()).unwrap_or_default())
            .collect())
    }

    /// The alert log lines and recoveries of every answering instance.
    async fn take_events(&mut self) -> Result<(Vec<AlertEntry>, Vec<RecoveryReport>), String> {
        let mut alerts = Vec::new();
        let mut recoveries = Vec::new();
        let got = self.each(|a| async move { a.events().await }).await?;
        for (i, e) in got {
            collect_events(i, e, &mut alerts, &mut recoveries)?;
        }
        Ok((alerts, recoveries))
    }

    /// Carry out one change of life.
    async fn apply(&mut self, ev: LifeEvent, phase: usize) -> Result<(), String> {
        let control = self.control.ok_or_else(|| {
            "this cluster's processes cannot be killed, frozen or started by the runner".to_string()
        })?;
        match ev {
            LifeEvent::Kill(i) if self.lives.answers(i) => {
                let a = self.admin(i)?;
                // The crash first, at this instant; then what it recorded
                // up to it; then the process.
                a.crash().await?;
                if let Some(mut c) = self.checker.take() {
                    let drained = drain_one(i, &a, &mut c, true, false).await;
                    c.instance_down(InstId(i as u8));
                    self.checker = Some(c);
                    self.lives.taken[i] += drained?;
                }
                let raw = a.stats().await?;
                self.lives.last_stats[i] = Some((stats_codec::decode(&raw, &a.who)?, raw.now_ns));
                let e = a.events().await?;
                let mut recoveries = Vec::new();
                collect_events(i, e, &mut self.lives.alerts, &mut recoveries)?;
                control.kill(i)?;
                self.lives.state[i] = LiveLife::Killed;
                let at = self.now_ns();
                self.lives.note(at, i, "killed (SIGKILL)");
            }
            LifeEvent::Pause { inst, duration } if self.lives.up(inst) => {
                let a = self.admin(inst)?;
                // Held first, so that what it recorded up to the freeze is
                // taken exactly: once frozen it may be evicted, and what it
                // does after it wakes counts for nothing.
                a.hold().await?;
                if let Some(mut c) = self.checker.take() {
                    let drained = drain_one(inst, &a, &mut c, true, false).await;
                    self.checker = Some(c);
                    self.lives.taken[inst] += drained?;
                }
                let raw = a.stats().await?;
                self.lives.last_stats[inst] =
                    Some((stats_codec::decode(&raw, &a.who)?, raw.now_ns));
                control.pause(inst)?;
                self.lives.state[inst] = LiveLife::Paused;
                let at = self.now_ns();
                self.lives
                    .resume_at
                    .push((at.saturating_add(duration), inst));
                self.lives.note(
                    at,
                    inst,
                    &format!("paused (SIGSTOP) for {:.1} s", duration as f64 / 1e9),
                );
            }
            LifeEvent::Resume(i) => self.resume(i).await?,
            LifeEvent::Restart(i) if self.lives.state.get(i) == Some(&LiveLife::Killed) => {
                control.restart(i)?;
                self.phase_index = phase;
                self.rejoin(i).await?;
                let at = self.now_ns();
                self.lives.note(at, i, "restarted (startup)");
            }
            // A kill of an instance already gone, a pause of one not up, a
            // restart of one alive: nothing to do, as on the simulator.
            _ => {}
        }
        Ok(())
    }

    fn admin(&self, i: usize) -> Result<Admin, String> {
        self.admins
            .get(i)
            .cloned()
            .ok_or_else(|| format!("inst{}: no such instance", i + 1))
    }

    /// Let frozen instances whose pause has ended go on.
    async fn resume_due(&mut self, now_ns: u64) -> Result<(), String> {
        let due: Vec<usize> = self
            .lives
            .resume_at
            .iter()
            .filter(|(t, _)| *t <= now_ns)
            .map(|(_, i)| *i)
            .collect();
        for i in due {
            self.resume(i).await?;
        }
        Ok(())
    }

    async fn resume(&mut self, i: usize) -> Result<(), String> {
        self.lives.resume_at.retain(|(_, j)| *j != i);
        if self.lives.state.get(i) != Some(&LiveLife::Paused) {
            return Ok(());
        }
        if let Some(control) = self.control {
            control.resume(i)?;
        }
        self.admin(i)?.release().await?;
        self.lives.state[i] = LiveLife::Up;
        let at = self.now_ns();
        self.lives.note(at, i, "continued (SIGCONT)");
        Ok(())
    }

    /// Every instance still lost is taken as down: what its journal holds
    /// goes to the checker first.
    pub(crate) fn give_up_lost(&mut self) -> Result<(), String> {
        for i in 0..self.lives.state.len() {
            if self.lives.lost(i) {
                self.read_journal(i)?;
                if let Some(c) = self.checker.as_mut() {
                    c.instance_down(InstId(i as u8));
                }
            }
        }
        Ok(())
    }

    /// Start every killed (or lost) instance's process again (not loaded:
    /// the next variant loads it with the others).
    pub(crate) fn revive(&mut self) -> Result<(), String> {
        for i in 0..self.lives.state.len() {
            if (self.lives.state[i] == LiveLife::Killed || self.lives.lost(i))
                && let Some(control) = self.control
            {
                control.restart(i)?;
                self.lives.state[i] = LiveLife::Up;
            }
        }
        Ok(())
    }

    /// Every frozen instance goes on now.
    pub(crate) async fn resume_all(&mut self) -> Result<(), String> {
        let paused: Vec<usize> = self.lives.resume_at.iter().map(|(_, i)| *i).collect();
        for i in paused {
            self.resume(i).await?;
        }
        Ok(())
    }

    /// Wait for the quiesced cluster to come to rest and every dead
    /// instance to be recovered, for at most [`fusion_driver::SETTLE_NS_MAX`].
    /// Err: an instance failed; Ok(Err): the cluster did not come to rest,
    /// and what is still in flight.
    pub(crate) async fn settle(&mut self) -> Result<Result<(), String>, String> {
        let limit_ns = fusion_driver::SETTLE_NS_MAX;
        let limit = tokio::time::Instant::now() + Duration::from_nanos(limit_ns);
        loop {
            let st = self.watch().await?;
            // At rest: every session stopped, nothing in flight to anyone.
            let activity: Vec<Activity> = st
                .iter()
                .map(|st| Activity {
                    instance: InstId(st.instance as u8),
                    at_rest: st.at_rest || !st.halted.is_empty(),
                    waits: st
                        .waits
                        .iter()
                        .map(|w| (w.event.clone(), w.sessions))
                        .collect(),
                    messages_in_flight: if st.halted.is_empty() {
                        st.messages_held
                    } else {
                        0
                    },
                    io_in_flight: if st.halted.is_empty() {
                        st.io_in_flight
                    } else {
                        0
                    },
                })
                .collect();
            // A dead instance's committed changes are only in its redo until
            // a survivor recovered it: the checks wait for that too (chaos
            // --live found a kill late in a run checked before its eviction).
            let unrecovered = fusion_driver::unrecovered(&member_views(&st), self.admins.len());
            if activity.iter().all(Activity::at_rest) && unrecovered.is_empty() {
                return Ok(Ok(()));
            }
            if tokio::time::Instant::now() > limit {
                let waited = format!("{} s", limit_ns / 1_000_000_000);
                if !unrecovered.is_empty() {
                    return Ok(Err(fusion_driver::not_recovered(unrecovered, &waited)));
                }
                return Ok(fusion_driver::settled(&activity, &waited));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
