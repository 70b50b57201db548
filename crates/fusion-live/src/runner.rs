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
use fusion_core::recovery::RecoveryReport;
use fusion_core::types::BlockAddr;
use fusion_driver::brownout::CommitSeries;
use fusion_driver::{Ran, VariantOutcome};
use fusion_report::{AlertEntry, RunResult, VariantResult};
use fusion_scenario::{LoadedScenario, Scenario};
use fusion_wire::Codec;

use crate::admin_client::Admin;
use crate::cluster::ClusterFile;
use crate::drain::drain_one;
use crate::lives::{Lives, ProcessControl};
use crate::nextvals::Nextvals;
use crate::pb;
pub use crate::phase_watch::Hold;
use crate::phase_watch::{PhaseSnapshots, WATCH_EVERY};
use crate::store_client::Store;
pub use crate::variant_run::VariantRun;

/// The time series' interval when none is asked for.
pub use fusion_driver::series::DEFAULT_INTERVAL_NS;

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

/// How long a cluster may take to come up (containers start in any order).
const READY_WAIT_MAX: Duration = Duration::from_secs(30);

/// Wait until every instance answers (the store is retried at format).
async fn wait_ready(admins: &[Admin]) -> Result<(), String> {
    let limit = tokio::time::Instant::now() + READY_WAIT_MAX;
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
                    READY_WAIT_MAX.as_secs()
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
    let limit = tokio::time::Instant::now() + READY_WAIT_MAX;
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
            crate::netfault::NetFaults::new(
                r.control
                    .and_then(|c| c.net_members(instance_count))
                    .unwrap_or_else(|| crate::netfault::members_of(r.cluster, instance_count)),
            )
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
