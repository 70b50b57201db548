//! Running a scenario on a live cluster: the same phases, faults,
//! statistics, report and verdicts as the simulator, in real time.
//!
//! The runner drives the cluster through the admin services: it formats the
//! store with the scenario's initial blocks, loads the variant into every
//! instance, starts each phase everywhere at once, snapshots the counters at
//! its edges, and watches the instances while the phase runs: a dead
//! instance or a problem one reports stops the run with a message naming it.

use std::time::Duration;
use tracing::Instrument;

use fusion_check::ConsistencyChecker;
use fusion_core::block::Block;
use fusion_core::instance::{Horizon, Observation};
use fusion_core::recovery::RecoveryReport;
use fusion_core::stats::Stats;
use fusion_core::types::{BlockAddr, InstId};
use fusion_driver::brownout::CommitSeries;
use fusion_driver::{Ran, VariantOutcome};
use fusion_report::{AlertEntry, RunResult, VariantResult};
use fusion_scenario::{LoadedScenario, Scenario};
use fusion_wire::Codec;
use indicatif::{ProgressBar, ProgressStyle};

use crate::admin_client::Admin;
use crate::cluster::ClusterFile;
use crate::lives::{Lives, ProcessControl};
use crate::nextvals::Nextvals;
use crate::pb;
use crate::process::{HISTORY_CHUNK, decode_observation};
use crate::store_client::Store;
pub use crate::variant_run::VariantRun;

/// How often a running phase looks at every instance.
/// The time series' interval when none is asked for.
pub use fusion_driver::series::DEFAULT_INTERVAL_NS;

pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(250);
/// Longest a running cluster may go without any progress (no logical read,
/// commit or message anywhere) while sessions are active before the run is
/// declared hung.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(20);

/// What to run, and how.
pub struct LiveRun<'a> {
    pub cluster: &'a ClusterFile,
    /// The scenario file's text and name (instances load the same text).
    pub text: &'a str,
    pub label: &'a str,
    pub overrides: &'a [String],
    pub seed: Option<u64>,
    /// Record every read and write and check them at the end (tests).
    pub check: bool,
    /// Draw a progress bar per phase (on stderr).
    pub progress: bool,
    /// The time series' interval of cluster time (`--interval-ms`;
    /// [`DEFAULT_INTERVAL_NS`] by default).
    pub interval_ns: u64,
    /// What carries out the `kill`, `pause` and `restart` faults on the
    /// instances' processes (None: the run refuses them).
    pub control: Option<&'a dyn ProcessControl>,
    /// An open-ended phase (`run --live --hold PHASE`), or None.
    pub hold: Option<Hold>,
}

/// An open-ended phase: it runs until `end` turns true (the operator's
/// Ctrl-C or SIGTERM, or `--duration`); the phases and variants after it do
/// not run, and the run ends with its report and checks.
#[derive(Clone, Debug)]
pub struct Hold {
    pub phase: String,
    pub end: tokio::sync::watch::Receiver<bool>,
}

/// A live run that stopped for a reason the scenario did not ask for (an
/// instance died or stopped answering, a problem it reported): what failed,
/// and the result of the phases that finished before.
#[derive(Debug)]
pub struct LiveFailure {
    pub message: String,
    /// The variants run so far, the last one with the phases it finished
    /// (None when not even one phase did).
    pub partial: Option<(RunResult, Vec<VariantOutcome>)>,
}

/// Run every variant of `loaded` on the cluster and evaluate its
/// expectations. Err: the cluster failed (an instance died, did not answer
/// or reported a problem); problems of the run itself (checker violations,
/// a cluster that did not come to rest) are in the outcomes' errors.
pub async fn run(
    loaded: &LoadedScenario,
    r: &LiveRun<'_>,
) -> Result<(RunResult, Vec<VariantOutcome>), LiveFailure> {
    let span = tracing::info_span!("run", scenario = %loaded.name, seed = ?r.seed);
    run_variants(loaded, r).instrument(span).await
}

async fn run_variants(
    loaded: &LoadedScenario,
    r: &LiveRun<'_>,
) -> Result<(RunResult, Vec<VariantOutcome>), LiveFailure> {
    let mut outcomes = Vec::new();
    for v in &loaded.variants {
        let held = r
            .hold
            .as_ref()
            .is_some_and(|h| v.scenario.phases.iter().any(|p| p.name == h.phase));
        let variant = tracing::info_span!("variant", name = %v.name);
        variant.in_scope(|| tracing::info!("variant started"));
        match run_variant(&v.name, &v.scenario, r)
            .instrument(variant)
            .await
        {
            Ok(o) if held => {
                outcomes.push(o);
                break;
            }
            Ok(o) => outcomes.push(o),
            Err(Stopped { message, partial }) => {
                tracing::error!("the run stopped: {message}");
                outcomes.extend(partial);
                // The expectations are evaluated on what ran: one on a
                // phase or variant that did not run says it had nothing
                // to measure.
                let partial = (!outcomes.is_empty()).then(|| {
                    (
                        fusion_driver::run_result(loaded, r.seed, &outcomes),
                        outcomes,
                    )
                });
                return Err(LiveFailure { message, partial });
            }
        }
    }
    let result = fusion_driver::run_result(loaded, r.seed, &outcomes);
    Ok((result, outcomes))
}

impl std::fmt::Display for LiveFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A variant that stopped, and its phases that finished.
struct Stopped {
    message: String,
    partial: Option<VariantOutcome>,
}

impl From<String> for Stopped {
    fn from(message: String) -> Stopped {
        Stopped {
            message,
            partial: None,
        }
    }
}

/// Call every admin at once; the first error wins.
pub(crate) async fn on_all<T, F, Fut>(admins: &[Admin], f: F) -> Result<Vec<T>, String>
where
    F: Fn(Admin) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>> + Send + 'static,
    T: Send + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    for (i, a) in admins.iter().enumerate() {
        let fut = f(a.clone());
        set.spawn(async move { (i, fut.await) });
    }
    let mut out: Vec<Option<T>> = (0..admins.len()).map(|_| None).collect();
    let mut errors = Vec::new();
    while let Some(j) = set.join_next().await {
        match j {
            Ok((i, Ok(v))) => out[i] = Some(v),
            Ok((_, Err(e))) => errors.push(e),
            Err(e) => errors.push(format!("admin call failed: {e}")),
        }
    }
    if !errors.is_empty() {
        errors.sort();
        return Err(errors.join("\n"));
    }
    Ok(out.into_iter().flatten().collect())
}

/// Notices a hung cluster: sessions active, yet no instance has done any
/// work (logical reads, commits, messages) for `limit`.
pub(crate) struct StallWatch {
    limit: Duration,
    progress: u64,
    since: std::time::Instant,
}

impl StallWatch {
    pub(crate) fn new(limit: Duration) -> StallWatch {
        StallWatch {
            limit,
            progress: 0,
            since: std::time::Instant::now(),
        }
    }

    pub(crate) fn check(
        &mut self,
        st: &[pb::StatusResponse],
        now: std::time::Instant,
    ) -> Result<(), String> {
        let progress: u64 = st.iter().map(|s| s.progress).sum();
        let active = st.iter().any(|s| s.active_sessions > 0);
        if progress != self.progress || !active {
            self.progress = progress;
            self.since = now;
            return Ok(());
        }
        if now.duration_since(self.since) < self.limit {
            return Ok(());
        }
        let waits: Vec<String> = st
            .iter()
            .map(|s| {
                let w: Vec<String> = s
                    .waits
                    .iter()
                    .map(|w| format!("{} ({} sessions)", w.event, w.sessions))
                    .collect();
                format!("in flight on inst{}: {}", s.instance + 1, w.join(", "))
            })
            .collect();
        Err(format!(
            "no progress anywhere for {} s while sessions are active (hung):\n{}",
            self.limit.as_secs(),
            waits.join("\n")
        ))
    }
}

/// One phase's counters on every instance, before and after it.
pub(crate) struct PhaseSnapshots {
    pub(crate) name: String,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) before: Vec<Stats>,
    pub(crate) after: Vec<Stats>,
}

/// How long a cluster may take to come up (containers start in any order).
const READY_LIMIT: Duration = Duration::from_secs(30);

/// Wait until every instance answers (the store is retried at format).
async fn wait_ready(admins: &[Admin]) -> Result<(), String> {
    let limit = tokio::time::Instant::now() + READY_LIMIT;
    loop {
        match on_all(
            admins,
            |a| async move { a.status(Duration::from_secs(2)).await },
        )
        .await
        {
            Ok(_) => return Ok(()),
            Err(e) if tokio::time::Instant::now() > limit => {
                return Err(format!(
                    "the cluster did not answer within {} s:\n{e}",
                    READY_LIMIT.as_secs()
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn run_variant(name: &str, s: &Scenario, r: &LiveRun<'_>) -> Result<VariantOutcome, Stopped> {
    let instance_count = s.instances.len();
    if r.cluster.instances.len() < instance_count {
        return Err(format!(
            "the scenario needs {instance_count} instances; the cluster has {}",
            r.cluster.instances.len()
        )
        .into());
    }
    let members = &r.cluster.instances[..instance_count];
    let admins: Vec<Admin> = members
        .iter()
        .map(|m| Admin::new(&format!("inst{}", m.id), &m.admin, &r.cluster.token))
        .collect::<Result<_, _>>()?;
    wait_ready(&admins).await?;
    let layout = s.layout();
    let codec = Codec::new(s.block_size(), instance_count as u8, layout.total_blocks);
    let store = Store::new(
        &r.cluster.store.address,
        &r.cluster.token,
        codec,
        fusion_core::types::InstId(0),
    )?;
    // The run: the cluster clock's origin, also what the store is formatted
    // for (the last variant's hosts may still write: refused from now on).
    let (epoch, epoch_realtime_ns) = crate::clock::now_both();
    let limit = tokio::time::Instant::now() + READY_LIMIT;
    while let Err(e) = store
        .format(
            s.block_size(),
            layout.total_blocks,
            instance_count as u32,
            &s.storage,
            epoch,
        )
        .await
    {
        if tokio::time::Instant::now() > limit {
            return Err(e.into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    store.load_initial(&layout.initial_blocks()).await?;

    let seed = r.seed.unwrap_or(s.seed);
    let peers: Vec<String> = members.iter().map(|m| m.interconnect.clone()).collect();
    let load = pb::LoadRequest {
        scenario_text: r.text.to_string(),
        label: r.label.to_string(),
        overrides: r.overrides.to_vec(),
        variant: name.to_string(),
        seed,
        record_history: r.check,
        peers,
        store: r.cluster.store.address.clone(),
        epoch_ns: epoch,
        life: 0,
        carried: None,
        epoch_realtime_ns,
        boot_id: crate::clock::boot_id(),
    };
    on_all(&admins, |a| {
        let l = load.clone();
        async move { a.load(l).await }
    })
    .await?;

    let mut run = VariantRun {
        admins: &admins,
        lives: Lives::new(instance_count),
        // Checked: the histories are drained into the checker as the run
        // goes, so neither the instances nor the runner pile them up.
        checker: r.check.then(|| ConsistencyChecker::new(layout.clone())),
        // The values every instance hands out, for the cluster-wide count
        // of values out of order and duplicated (the simulator counts them too).
        nextvals: (!s.catalog.sequences.is_empty())
            .then(|| Nextvals::new(instance_count, s.catalog.sequences.len())),
        series: s
            .phases
            .iter()
            .any(|p| p.faults.iter().any(fusion_scenario::Fault::is_failure))
            .then(|| CommitSeries::new(0, WATCH_EVERY.as_nanos() as u64)),
        interval_ns: r.interval_ns,
        recorder: None,
        epoch,
        load,
        control: r.control,
        // The runner reads the journals of a cluster of this machine's
        // processes (one `up` or this command started).
        journal_dir: r.cluster.journal_dir.clone().or_else(|| {
            r.cluster
                .instances
                .iter()
                .all(|m| m.pid != 0)
                .then(|| r.cluster.dir.clone())
        }),
        failures_by_phase: s
            .phases
            .iter()
            .map(|p| p.faults.iter().any(fusion_scenario::Fault::is_failure))
            .collect(),
        phase_index: 0,
        none_answer_since: None,
        undecided: false,
        unchecked: Vec::new(),
        store_silent_since: None,
        // Looked at (namespaces, the kernel probed) only for a scenario
        // with network faults.
        net: crate::netfault::any_network_fault(&s.phases).then(|| {
            crate::netfault::NetFaults::new(crate::netfault::members_of(r.cluster, instance_count))
        }),
        kernel_faults: Vec::new(),
    };
    let mut snapshots = Vec::new();
    let mut alerts: Vec<Vec<AlertEntry>> = Vec::new();
    let mut recoveries: Vec<Vec<RecoveryReport>> = Vec::new();
    // The phases that finished, as a result (what a failed run still reports).
    let partial = |snapshots: &[PhaseSnapshots], alerts: &[Vec<AlertEntry>]| {
        VariantOutcome::new(
            VariantResult {
                name: name.to_string(),
                phases: phase_results(s, snapshots, alerts),
                series: None,
            },
            Ran::Live,
        )
    };
    for (k, phase) in s.phases.iter().enumerate() {
        let stopped =
            |e: String, snapshots: &[PhaseSnapshots], alerts: &[Vec<AlertEntry>]| Stopped {
                message: format!("the run stopped in phase {:?} of {name}:\n{e}", phase.name),
                partial: (!snapshots.is_empty()).then(|| partial(snapshots, alerts)),
            };
        let hold = r.hold.as_ref().filter(|h| h.phase == phase.name);
        let span = tracing::info_span!("phase", name = %phase.name);
        span.in_scope(|| {
            let duration_s = phase.duration as f64 / 1e9;
            tracing::info!(duration_s, faults = phase.faults.len(), "phase started");
        });
        let ran = run
            .phase(k, phase, name, r.progress, &store, hold)
            .instrument(span)
            .await
            .map_err(|e| stopped(e, &snapshots, &alerts))?;
        let (snap, phase_alerts, phase_recoveries) = ran;
        snapshots.push(snap);
        alerts.push(phase_alerts);
        recoveries.push(phase_recoveries);
        if hold.is_some() {
            // The operator ended the run here.
            break;
        }
    }
    // A frozen instance goes on (its pause may reach past the run) so
    // that the cluster can come to rest.
    run.resume_all().await?;
    if let Some(mut n) = run.nextvals.take() {
        // The values of the last watch onwards; then every value in the
        // order handed out, counted into the snapshots that include it.
        run.take_nextvals(&mut n).await?;
        n.count_into(
            snapshots
                .iter_mut()
                .flat_map(|p| [&mut p.before[..], &mut p.after[..]]),
        )
        .map_err(|e| format!("counting the sequence values of {name}: {e}"))?;
    }
    let series = run.finish_series().await?;
    let mut phases = phase_results(s, &snapshots, &alerts);
    fusion_driver::brownout::attach_recoveries(
        &mut phases,
        recoveries,
        &s.phases,
        run.series.as_ref(),
    );
    let mut outcome = VariantOutcome::new(
        VariantResult {
            name: name.to_string(),
            phases,
            series,
        },
        Ran::Live,
    );
    store.set_faults(&[]).await?;
    // Stop the workloads and faults of the last phase: the cluster may run
    // another variant or scenario next (the live tour does), which should
    // not start with this one's sessions and CPU hogs still busy.
    run.each(|a| async move { a.quiesce().await }).await?;
    outcome.errors.append(&mut run.unchecked);

    if run.checker.is_some() {
        // An instance lost to the end: what it recorded last is in its
        // journal, and it is down whether or not the others evicted it yet.
        run.give_up_lost()?;
        // The checker stays in while the cluster settles: an eviction seen
        // only now (an instance frozen to the end, woken by `resume_all`)
        // must reach it before the woken instance's history does.
        let settled = run.settle().await?;
        if let Some(c) = run.checker.take() {
            match settled {
                Err(why) => outcome.errors.push(why),
                Ok(()) => {
                    let answering = run.answering();
                    outcome.set_check(check(&answering, &store, codec, &layout, c).await?);
                }
            }
        }
    }
    // The next variant (or scenario) starts on a whole cluster: a killed
    // instance's process is started again (it is loaded afresh then).
    run.revive()?;
    Ok(outcome)
}

/// Each phase's result from its snapshots and alert log.
fn phase_results(
    s: &Scenario,
    snapshots: &[PhaseSnapshots],
    alerts: &[Vec<AlertEntry>],
) -> Vec<fusion_report::PhaseResult> {
    snapshots
        .iter()
        .zip(alerts)
        .map(|(p, a)| {
            fusion_driver::phase_result(
                &p.name,
                s,
                p.start_ns,
                p.end_ns.saturating_sub(p.start_ns),
                &p.before,
                &p.after,
                a.clone(),
            )
        })
        .collect()
}

/// Chunks of a history a drain takes from one instance at most while the
/// run goes on: as many as its log holds (4 Mi observations). One that
/// records faster than the runner takes is left for the next look (its log
/// full is an error of the run); at rest, twice that is a peer that lies.
const DRAIN_CHUNKS_MAX: usize = 64;

/// Take what instance `i`'s history holds into the checker, one chunk of
/// at most `HISTORY_CHUNK` observations at a time. `at_rest`: nothing is
/// recorded any more, the history must be taken to its end.
pub(crate) async fn drain_one(
    i: usize,
    a: &Admin,
    c: &mut ConsistencyChecker,
    at_rest: bool,
    new_life: bool,
) -> Result<u64, String> {
    let rounds = if at_rest {
        2 * DRAIN_CHUNKS_MAX
    } else {
        DRAIN_CHUNKS_MAX
    };
    let chunk = u32::try_from(HISTORY_CHUNK).unwrap_or(u32::MAX);
    let id = InstId(u8::try_from(i).map_err(|_| format!("{}: too many instances", a.who))?);
    let mut caught_up = false;
    let mut taken: u64 = 0;
    for _ in 0..rounds {
        let h = a.history(chunk).await?;
        let obs: Vec<Observation> = h
            .observations
            .iter()
            .map(|o| decode_observation(o, &a.who))
            .collect::<Result<_, _>>()?;
        caught_up = h.caught_up;
        let horizon = caught_up.then_some(Horizon {
            scn: h.scn,
            snapshot: h.snapshot,
        });
        taken += obs.len() as u64;
        if new_life && !obs.is_empty() && c.is_down(id) {
            // A life the runner started after the checker took the last
            // one down: it records only once the cluster admitted it, so
            // what it recorded is a member's, even if the runner's last look
            // at the membership came just before the admission.
            c.instance_up(id);
        }
        c.take_drained(id, &obs, horizon);
        if caught_up {
            break;
        }
    }
    if at_rest && !caught_up {
        return Err(format!(
            "{}: its history did not end after {rounds} chunks of {HISTORY_CHUNK} at rest",
            a.who
        ));
    }
    Ok(taken)
}

/// The checkers over the rest of the instances' histories and the newest
/// image of every block (a current buffer somewhere, else the store's), at
/// rest.
async fn check(
    admins: &[(usize, Admin)],
    store: &Store,
    codec: Codec,
    layout: &std::sync::Arc<fusion_core::layout::Layout>,
    mut checker: ConsistencyChecker,
) -> Result<fusion_check::CheckReport, String> {
    for (i, a) in admins {
        drain_one(*i, a, &mut checker, true, false).await?;
    }
    // Read in the name of an instance still in the cluster: the store
    // refuses an evicted one's calls (found by chaos --live: instance 1
    // evicted left every run with it unchecked).
    let mut read = Err("no instance answers to read the store for".to_string());
    for (i, _) in admins {
        let Ok(inst) = u32::try_from(*i) else {
            continue;
        };
        read = store.read_all(inst, layout.total_blocks).await;
        if read.is_ok() {
            break;
        }
    }
    let mut newest: Vec<Option<(Block, String)>> = read?
        .into_iter()
        .map(|b| Some((b, "the store".to_string())))
        .collect();
    let just_admins: Vec<Admin> = admins.iter().map(|(_, a)| a.clone()).collect();
    let images = on_all(&just_admins, |a| async move { a.images().await }).await?;
    for (&(i, _), imgs) in admins.iter().zip(&images) {
        for bytes in &imgs.blocks {
            let b = codec
                .decode_block("ImagesResponse.blocks", bytes)
                .map_err(|e| format!("inst{}: {e}", i + 1))?;
            if let Some(slot) = newest.get_mut(b.addr.idx()) {
                *slot = Some((b, format!("inst{}", i + 1)));
            }
        }
    }
    Ok(checker.finish_with(|blk: BlockAddr| newest.get(blk.idx()).cloned().flatten()))
}

/// The progress line of a held phase: how long it has run, and every
/// instance's state (set at each look).
pub(crate) fn held_bar(variant: &str, phase: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) =
        ProgressStyle::with_template("{prefix:>28} held {elapsed_precise} (Ctrl-C ends it)  {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix(format!("{variant}: {phase}"));
    bar
}

pub(crate) fn phase_bar(variant: &str, phase: &str, duration_ns: u64) -> ProgressBar {
    let b = ProgressBar::new(duration_ns / 1_000_000);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>28} [{bar:40}] {pos}/{len} ms") {
        b.set_style(style.progress_chars("=> "));
    }
    b.set_prefix(format!("{variant}: {phase}"));
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(inst: u32, progress: u64, active: u32) -> pb::StatusResponse {
        pb::StatusResponse {
            instance: inst,
            progress,
            active_sessions: active,
            waits: vec![pb::WaitNow {
                event: "gc cr request".into(),
                sessions: active,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_cluster_without_progress_is_hung_only_after_the_limit() {
        let t0 = std::time::Instant::now();
        let mut w = StallWatch::new(Duration::from_secs(20));
        let st = [status(0, 100, 4), status(1, 50, 4)];
        assert!(w.check(&st, t0).is_ok());
        assert!(w.check(&st, t0 + Duration::from_secs(19)).is_ok());
        let e = w.check(&st, t0 + Duration::from_secs(21)).unwrap_err();
        assert!(
            e.contains("hung") && e.contains("inst2: gc cr request (4 sessions)"),
            "{e}"
        );
    }

    #[test]
    fn progress_or_idle_sessions_reset_the_watch() {
        let t0 = std::time::Instant::now();
        let mut w = StallWatch::new(Duration::from_secs(20));
        assert!(w.check(&[status(0, 100, 4)], t0).is_ok());
        // Work happened: the clock starts again.
        assert!(
            w.check(&[status(0, 101, 4)], t0 + Duration::from_secs(15))
                .is_ok()
        );
        assert!(
            w.check(&[status(0, 101, 4)], t0 + Duration::from_secs(30))
                .is_ok()
        );
        // Nobody active (think time, a disabled workload): never hung.
        assert!(
            w.check(&[status(0, 101, 0)], t0 + Duration::from_secs(60))
                .is_ok()
        );
        assert!(
            w.check(&[status(0, 101, 0)], t0 + Duration::from_secs(120))
                .is_ok()
        );
    }
}
