//! Running a scenario on a live cluster: the same phases, faults,
//! statistics, report and verdicts as the simulator, in real time.
//!
//! The runner drives the cluster through the admin services: it formats the
//! store with the scenario's initial blocks, loads the variant into every
//! instance, starts each phase everywhere at once, snapshots the counters at
//! its edges, and watches the instances while the phase runs: a dead
//! instance or a problem one reports stops the run with a message naming it.

use std::time::Duration;

use fusion_check::ConsistencyChecker;
use fusion_core::block::Block;
use fusion_core::instance::{Horizon, Observation};
use fusion_core::stats::Stats;
use fusion_core::types::{BlockAddr, InstId};
use fusion_driver::{Activity, Ran, VariantOutcome};
use fusion_report::{RunResult, VariantResult};
use fusion_scenario::{LoadedScenario, Scenario};
use fusion_wire::Codec;
use indicatif::{ProgressBar, ProgressStyle};

use crate::admin_client::Admin;
use crate::clock::monotonic_ns;
use crate::cluster::ClusterFile;
use crate::nextvals::Nextvals;
use crate::pb;
use crate::process::{HISTORY_CHUNK, decode_observation};
use crate::stats_codec;
use crate::store_client::Store;

/// How often a running phase looks at every instance.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// Longest a running cluster may go without any progress (no logical read,
/// commit or message anywhere) while sessions are active before the run is
/// declared hung.
const STALL_LIMIT: Duration = Duration::from_secs(20);

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
}

/// Run every variant of `loaded` on the cluster and evaluate its
/// expectations. Err: the cluster failed (an instance died, did not answer
/// or reported a problem); problems of the run itself (checker violations,
/// a cluster that did not come to rest) are in the outcomes' errors.
pub async fn run(
    loaded: &LoadedScenario,
    r: &LiveRun<'_>,
) -> Result<(RunResult, Vec<VariantOutcome>), String> {
    let mut outcomes = Vec::new();
    for v in &loaded.variants {
        outcomes.push(run_variant(&v.name, &v.scenario, r).await?);
    }
    let result = fusion_driver::run_result(loaded, r.seed, &outcomes);
    Ok((result, outcomes))
}

/// Call every admin at once; the first error wins.
async fn on_all<T, F, Fut>(admins: &[Admin], f: F) -> Result<Vec<T>, String>
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

async fn snapshot(admins: &[Admin]) -> Result<Vec<(Stats, u64)>, String> {
    let raw = on_all(admins, |a| async move {
        a.stats().await.map(|s| (a.who.clone(), s))
    })
    .await?;
    raw.iter()
        .map(|(who, s)| stats_codec::decode(s, who).map(|st| (st, s.now_ns)))
        .collect()
}

/// Notices a hung cluster: sessions active, yet no instance has done any
/// work (logical reads, commits, messages) for `limit`.
struct StallWatch {
    limit: Duration,
    progress: u64,
    since: std::time::Instant,
}

impl StallWatch {
    fn new(limit: Duration) -> StallWatch {
        StallWatch {
            limit,
            progress: 0,
            since: std::time::Instant::now(),
        }
    }

    fn check(&mut self, st: &[pb::StatusResponse], now: std::time::Instant) -> Result<(), String> {
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

/// Look at every instance once: a dead one or one with problems stops the
/// run, with what the others were waiting on (what was in flight).
async fn watch(admins: &[Admin]) -> Result<Vec<pb::StatusResponse>, String> {
    let mut set = tokio::task::JoinSet::new();
    for (i, a) in admins.iter().enumerate() {
        let a = a.clone();
        set.spawn(async move { (i, a.status(Duration::from_secs(3)).await) });
    }
    let mut got: Vec<Option<Result<pb::StatusResponse, String>>> =
        (0..admins.len()).map(|_| None).collect();
    while let Some(j) = set.join_next().await {
        match j {
            Ok((i, r)) => got[i] = Some(r),
            Err(e) => return Err(format!("status call failed: {e}")),
        }
    }
    let mut lines = Vec::new();
    for r in got.iter().flatten() {
        match r {
            Err(e) => lines.push(e.clone()),
            Ok(s) => lines.extend(s.errors.iter().cloned()),
        }
    }
    if lines.is_empty() {
        return Ok(got.into_iter().flatten().flatten().collect());
    }
    // Every message to a dead peer reports the same loss: once is enough.
    let mut seen = std::collections::BTreeSet::new();
    lines.retain(|l| seen.insert(l.clone()));
    for (i, r) in got.iter().enumerate() {
        if let Some(Ok(s)) = r
            && !s.waits.is_empty()
        {
            let waits: Vec<String> = s
                .waits
                .iter()
                .map(|w| format!("{} ({} sessions)", w.event, w.sessions))
                .collect();
            lines.push(format!("in flight on inst{}: {}", i + 1, waits.join(", ")));
        }
    }
    Err(lines.join("\n"))
}

/// Take the sequence values every instance handed out since the last time.
async fn take_nextvals(admins: &[Admin], into: &mut Nextvals) -> Result<(), String> {
    let answers = on_all(admins, |a| async move { a.nextvals().await }).await?;
    for (i, (a, r)) in admins.iter().zip(&answers).enumerate() {
        into.take(i, r, &a.who)?;
    }
    Ok(())
}

/// One phase's counters on every instance, before and after it.
struct PhaseSnapshots {
    name: String,
    start_ns: u64,
    end_ns: u64,
    before: Vec<Stats>,
    after: Vec<Stats>,
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

async fn run_variant(name: &str, s: &Scenario, r: &LiveRun<'_>) -> Result<VariantOutcome, String> {
    let instance_count = s.instances.len();
    if r.cluster.instances.len() < instance_count {
        return Err(format!(
            "the scenario needs {instance_count} instances; the cluster has {}",
            r.cluster.instances.len()
        ));
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
    let limit = tokio::time::Instant::now() + READY_LIMIT;
    while let Err(e) = store
        .format(
            s.block_size(),
            layout.total_blocks,
            instance_count as u32,
            &s.storage,
        )
        .await
    {
        if tokio::time::Instant::now() > limit {
            return Err(e);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    store.load_initial(&layout.initial_blocks()).await?;

    let seed = r.seed.unwrap_or(s.seed);
    let epoch = monotonic_ns();
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
    };
    on_all(&admins, |a| {
        let l = load.clone();
        async move { a.load(l).await }
    })
    .await?;

    // Checked: the histories are drained into the checker as the run goes,
    // so neither the instances nor the runner pile them up.
    let mut checker = r.check.then(|| ConsistencyChecker::new(layout.clone()));
    // The values every instance hands out, for the cluster-wide count of
    // values out of order and duplicated (the simulator counts them too).
    let mut nextvals = (!s.catalog.sequences.is_empty())
        .then(|| Nextvals::new(instance_count, s.catalog.sequences.len()));
    let mut snapshots = Vec::new();
    for (k, phase) in s.phases.iter().enumerate() {
        store.set_faults(&phase.faults).await?;
        // The counters before the phase's own commands, as the simulator
        // takes them: what a command sets off at once (a session's first
        // execution when its workload starts) belongs to the phase it starts.
        let before = snapshot(&admins).await?;
        on_all(&admins, |a| async move { a.begin_phase(k as u32).await }).await?;
        let bar = r
            .progress
            .then(|| phase_bar(name, &phase.name, phase.duration));
        let start = tokio::time::Instant::now();
        let end = start + Duration::from_nanos(phase.duration);
        let mut stall = StallWatch::new(STALL_LIMIT);
        while tokio::time::Instant::now() < end {
            let left = end - tokio::time::Instant::now();
            tokio::time::sleep(left.min(WATCH_EVERY)).await;
            if let Some(b) = &bar {
                b.set_position(start.elapsed().as_millis() as u64);
            }
            let mut watched = watch(&admins)
                .await
                .and_then(|st| stall.check(&st, std::time::Instant::now()));
            if let (Ok(()), Some(c)) = (&watched, checker.as_mut()) {
                watched = drain_histories(&admins, c, false).await;
            }
            if let (Ok(()), Some(n)) = (&watched, nextvals.as_mut()) {
                watched = take_nextvals(&admins, n).await;
            }
            if let Err(e) = watched {
                if let Some(b) = &bar {
                    b.abandon();
                }
                return Err(format!(
                    "the run stopped in phase {:?} of {name}:\n{e}",
                    phase.name
                ));
            }
        }
        let after = snapshot(&admins).await?;
        if let Some(b) = bar {
            b.finish();
        }
        // The instances share the runner's clock origin: the first one's
        // snapshot times stand for the cluster's.
        snapshots.push(PhaseSnapshots {
            name: phase.name.clone(),
            start_ns: before.first().map_or(0, |(_, t)| *t),
            end_ns: after.first().map_or(0, |(_, t)| *t),
            before: before.into_iter().map(|(st, _)| st).collect(),
            after: after.into_iter().map(|(st, _)| st).collect(),
        });
    }
    if let Some(mut n) = nextvals {
        // The values of the last watch onwards; then every value in the
        // order handed out, counted into the snapshots that include it.
        take_nextvals(&admins, &mut n).await?;
        n.count_into(
            snapshots
                .iter_mut()
                .flat_map(|p| [&mut p.before[..], &mut p.after[..]]),
        )
        .map_err(|e| format!("counting the sequence values of {name}: {e}"))?;
    }
    let phases = snapshots
        .iter()
        .map(|p| {
            fusion_driver::phase_result(
                &p.name,
                s,
                p.start_ns,
                p.end_ns.saturating_sub(p.start_ns),
                &p.before,
                &p.after,
                // Live instances do not send their alert log lines to the runner yet.
                Vec::new(),
            )
            // Nor their recoveries: `recovery` stays empty (the recovery
            // summary is the simulator's for now).
        })
        .collect();
    let mut outcome = VariantOutcome::new(
        VariantResult {
            name: name.to_string(),
            phases,
        },
        Ran::Live,
    );
    store.set_faults(&[]).await?;
    // Stop the workloads and faults of the last phase: the cluster may run
    // another variant or scenario next (the live tour does), which should
    // not start with this one's sessions and CPU hogs still busy.
    on_all(&admins, |a| async move { a.quiesce().await }).await?;

    if let Some(c) = checker {
        match settle(&admins).await? {
            Err(why) => outcome.errors.push(why),
            Ok(()) => outcome.set_check(check(&admins, &store, codec, &layout, c).await?),
        }
    }
    Ok(outcome)
}

/// Wait for the quiesced cluster to come to rest, for at most
/// [`fusion_driver::SETTLE_NS_MAX`]. Err: an instance failed; Ok(Err):
/// the cluster did not come to rest, and what is still in flight.
async fn settle(admins: &[Admin]) -> Result<Result<(), String>, String> {
    let limit_ns = fusion_driver::SETTLE_NS_MAX;
    let limit = tokio::time::Instant::now() + Duration::from_nanos(limit_ns);
    loop {
        let activity: Vec<Activity> = watch(admins)
            .await?
            .iter()
            .map(|st| Activity {
                instance: InstId(st.instance as u8),
                at_rest: st.at_rest,
                waits: st
                    .waits
                    .iter()
                    .map(|w| (w.event.clone(), w.sessions))
                    .collect(),
                messages_in_flight: st.messages_held,
                io_in_flight: st.io_in_flight,
            })
            .collect();
        if activity.iter().all(Activity::at_rest) {
            return Ok(Ok(()));
        }
        if tokio::time::Instant::now() > limit {
            let waited = format!("{} s", limit_ns / 1_000_000_000);
            return Ok(fusion_driver::settled(&activity, &waited));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Chunks of a history a drain takes from one instance at most while the
/// run goes on: as many as its log holds (4 Mi observations). One that
/// records faster than the runner takes is left for the next look (its log
/// full is an error of the run); at rest, twice that is a peer that lies.
const DRAIN_CHUNKS_MAX: usize = 64;

/// Take what every instance's history holds into the checker, one chunk of
/// at most `HISTORY_CHUNK` observations at a time. `at_rest`: nothing is
/// recorded any more, every history must be taken to its end.
async fn drain_histories(
    admins: &[Admin],
    c: &mut ConsistencyChecker,
    at_rest: bool,
) -> Result<(), String> {
    let rounds = if at_rest {
        2 * DRAIN_CHUNKS_MAX
    } else {
        DRAIN_CHUNKS_MAX
    };
    let chunk = u32::try_from(HISTORY_CHUNK).unwrap_or(u32::MAX);
    for (i, a) in admins.iter().enumerate() {
        let id = InstId(u8::try_from(i).map_err(|_| format!("{}: too many instances", a.who))?);
        let mut caught_up = false;
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
    }
    Ok(())
}

/// The checkers over the rest of the instances' histories and the newest
/// image of every block (a current buffer somewhere, else the store's), at
/// rest.
async fn check(
    admins: &[Admin],
    store: &Store,
    codec: Codec,
    layout: &std::sync::Arc<fusion_core::layout::Layout>,
    mut checker: ConsistencyChecker,
) -> Result<fusion_check::CheckReport, String> {
    drain_histories(admins, &mut checker, true).await?;
    let mut newest: Vec<Option<(Block, String)>> = store
        .read_all(layout.total_blocks)
        .await?
        .into_iter()
        .map(|b| Some((b, "the store".to_string())))
        .collect();
    for (i, imgs) in on_all(admins, |a| async move { a.images().await })
        .await?
        .iter()
        .enumerate()
    {
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

fn phase_bar(variant: &str, phase: &str, duration_ns: u64) -> ProgressBar {
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
