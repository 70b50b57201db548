//! The deterministic simulator: every instance of a scenario in one process,
//! on a virtual clock, with the scenario's interconnect
//! ([`fusion_driver::Interconnect`], as live) and an in-memory block store.
//!
//! Determinism: one event order by (time, sequence number) (see `Queue`),
//! seeded ChaCha RNGs, no hash-map iteration and no wall clock. The same
//! scenario and seed give the same result, bit for bit.

mod kinds;
mod lanes;
mod life;
mod lifecycle;
mod perform;
mod queue;
mod redo;
mod samples;
mod step;
mod store;
mod window;

use fusion_check::ConsistencyChecker;
use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos};
use fusion_core::instance::{Command, Instance};
use fusion_core::stats::Stats;
use fusion_core::types::InstId;
use fusion_driver::{Activity, Interconnect, SeqOrder};
use fusion_report::trace::TraceWriter;
use fusion_report::{RunResult, VariantResult};
use fusion_scenario::{Fault, LoadedScenario, Scenario};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

pub use fusion_driver::{Ran, VariantOutcome};
pub use kinds::EventKinds;
use lifecycle::Life;
pub use queue::QUEUED_EVENTS_MAX;
use queue::{Ev, PAYLOAD, Queue, WAKE, key_time};
pub use redo::{REDO_KEPT_MAX, RedoThread};
use store::Store;

/// How to run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Replace the scenario's seed.
    pub seed: Option<u64>,
    /// Run the correctness checkers (after every event, and over the history at the end).
    pub check: bool,
    /// The time series' interval of cluster time (`--interval-ms`).
    pub interval_ns: Nanos,
    /// Threads to advance the instances on (`--threads`): 1 runs serially;
    /// more give the same result, byte for byte (window.rs). A checked or
    /// traced run is serial.
    pub threads: usize,
}

impl Default for SimOptions {
    fn default() -> SimOptions {
        SimOptions {
            seed: None,
            check: false,
            interval_ns: fusion_driver::series::DEFAULT_INTERVAL_NS,
            threads: 1,
        }
    }
}

impl SimOptions {
    /// The scenario's own seed, with the correctness checkers.
    pub fn checked() -> SimOptions {
        SimOptions {
            check: true,
            ..SimOptions::default()
        }
    }
}

/// The simulator of one scenario variant.
pub struct Sim {
    now: Nanos,
    queue: Queue,
    instances: Vec<Instance>,
    armed: Vec<Option<Nanos>>,
    net: Interconnect,
    store: Store,
    events: u64,
    /// Wake-ups handed over at once after the event before them (due
    /// before anything queued), each instance going on to its next
    /// deadline itself while nothing else happens: folded into that event,
    /// not counted in `events` ([`Instance::handle_timeouts_folded`]).
    folded: u64,
    /// A parallel run's merge: the wake-up the record merged last queued
    /// for a later window, folded if it is the next event (window.rs).
    merged_wake: Option<queue::Key>,
    /// Whether an instance goes on to its next deadlines itself (off:
    /// one wake-up each, the plain path tests compare with).
    fold: bool,
    checker: Option<ConsistencyChecker>,
    block_size: u32,
    /// Sequence values in the order instances handed them out: (time,
    /// instance, sequence, value); at most [`SEQ_VALUES_MAX`].
    nextvals: Option<Vec<(Nanos, usize, u32, i64)>>,
    /// Order and uniqueness of sequence values across the cluster (when
    /// sequences exist), counted in event order.
    seq_order: Option<SeqOrder>,
    /// Why the run had to stop (a limit reached), if it did: no event is
    /// processed after it.
    stopped: Option<String>,
    /// Per instance: up, frozen or gone (life.rs).
    life: Vec<Life>,
    /// The voting file and the I/O fence (the store's, kept here).
    voting: fusion_core::voting::VotingFile,
    /// The voting file's I/O time: the store's write latency.
    vote_latency: Nanos,
    /// Kills, pauses and continues as they happened: (time, instance, what).
    fault_log: Vec<(Nanos, InstId, String)>,
    /// Every instance's commits, sampled for the brownout (samples.rs);
    /// `None` when the scenario has no failure fault.
    commits: Option<fusion_driver::brownout::CommitSeries>,
    /// The run's time series, sampled at the same stops (samples.rs).
    series: Option<fusion_driver::SeriesRecorder>,
    /// Per instance: its lives the cluster admitted and the recoveries of
    /// it survivors reported (samples.rs).
    lives_recovered: Vec<lifecycle::Lives>,
    /// Each instance's configuration, to start it again after a kill.
    configs: Vec<fusion_core::instance::InstanceConfig>,
    /// How many times each instance was restarted.
    lives: Vec<u32>,
    /// The timeline trace being written (`run --trace`), fed after every event.
    trace: Option<TraceWriter>,
    /// The threads and lanes of a parallel run (window.rs); `None`: serial.
    lanes: Option<lanes::Lanes>,
    /// No message or I/O arrives sooner than this after it is sent: the
    /// longest a parallel window may be (0: the run is serial).
    lookahead_ns: Nanos,
    /// Parallel windows run so far.
    windows: u64,
}

/// Sequence values the simulator keeps at most, for the cross-cluster
/// checks and the log: a run past it stops with an error.
pub use fusion_driver::SEQ_VALUES_MAX;

impl Sim {
    pub fn new(s: &Scenario, opts: &SimOptions) -> Sim {
        let seed = opts.seed.unwrap_or(s.seed);
        let instance_count = s.instances.len();
        let layout = s.layout();
        let configs = s.instance_configs(&layout, seed, opts.check);
        let instances = configs.iter().cloned().map(Instance::new).collect();
        let block_size = s.block_size();
        let mut instances: Vec<Instance> = instances;
        if !s.catalog.sequences.is_empty() {
            for x in &mut instances {
                x.log_nextvals(true);
            }
        }
        // The network's own random stream, apart from the instances' and the store's.
        let mut net_rng = ChaCha8Rng::seed_from_u64(seed);
        net_rng.set_stream(1_000);
        let mut store = Store::new(
            layout.initial_blocks(),
            s.storage.clone(),
            instance_count,
            seed,
        );
        // Redo is read back only to recover a failed instance.
        if s.phases
            .iter()
            .flat_map(|p| &p.faults)
            .any(Fault::is_failure)
        {
            store.keep_redo();
        }
        let mut sim = Sim {
            now: 0,
            queue: Queue::default(),
            instances,
            armed: vec![None; instance_count],
            net: Interconnect::new(s.network.clone(), instance_count, net_rng),
            store,
            events: 0,
            folded: 0,
            merged_wake: None,
            fold: true,
            checker: opts.check.then(|| ConsistencyChecker::new(layout.clone())),
            block_size,
            nextvals: None,
            seq_order: (!s.catalog.sequences.is_empty()).then(|| SeqOrder::new(instance_count)),
            stopped: None,
            life: (0..instance_count).map(|_| Life::Up).collect(),

            voting: fusion_core::voting::VotingFile::new(instance_count),
            vote_latency: s.storage.write_latency,
            fault_log: Vec::new(),
            commits: Sim::series_for(s),
            series: Some(fusion_driver::SeriesRecorder::new(
                instance_count,
                0,
                opts.interval_ns,
            )),
            lives_recovered: vec![lifecycle::Lives::default(); instance_count],
            lives: vec![0; instance_count],
            configs,
            trace: None,
            lanes: (opts.threads > 1 && !opts.check && instance_count >= 2)
                .then(|| lanes::Lanes::new(opts.threads, instance_count)),
            lookahead_ns: 0,
            windows: 0,
        };
        sim.lookahead_ns = sim.net.latency_ns_min().min(sim.store.latency_ns_min());
        sim
    }

    /// Write the timeline trace of this run into `w`: every instance keeps
    /// trace records from now on, drained after every event.
    pub fn attach_trace(&mut self, w: TraceWriter) {
        // The trace is fed in event order, as it happens: serially.
        self.lanes = None;
        for x in &mut self.instances {
            x.set_tracing(true);
        }
        self.trace = Some(w);
    }

    /// The trace writer, taken back at the end of the run.
    pub fn detach_trace(&mut self) -> Option<TraceWriter> {
        for x in &mut self.instances {
            x.set_tracing(false);
        }
        self.trace.take()
    }

    /// Hand what instance `i` recorded to the trace (only with one).
    #[cold]
    fn drain_trace(&mut self, i: usize) {
        if let (Some(t), Some(x)) = (self.trace.as_mut(), self.instances.get_mut(i)) {
            t.drain(i, self.now, x);
        }
    }

    /// Stop the run: `why` is reported, nothing more is processed.
    #[cold]
    fn stop(&mut self, why: String) {
        self.stopped.get_or_insert(why);
    }

    /// The queue is full: stop, saying what filled it.
    #[cold]
    fn queue_full(&mut self) {
        let (mut messages, mut io) = (0, 0);
        for ev in self.queue.slots.iter().flatten() {
            match ev {
                Ev::Deliver(_) => messages += 1,
                Ev::Io { .. } | Ev::Fence { .. } => io += 1,
            }
        }
        let timers = self.queue.len() - messages - io;
        self.stop(format!(
            "the simulator's event queue is full ({QUEUED_EVENTS_MAX} events: {messages} \
             messages on the wire, {io} I/Os, {timers} timers) at {:.3} s: the run stops here",
            self.now as f64 / NS_PER_S as f64
        ));
    }

    /// Why the run stopped early (a limit reached), if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Perform what instance `i` asked for, then re-arm its timer.
    fn drain(&mut self, i: usize) {
        self.perform(i);
        if self.trace.is_some() {
            self.drain_trace(i);
        }
        self.rearm(i, None);
    }

    /// Re-arm instance `i`'s timer. With `direct: Some(until)`, a wake-up that
    /// would be the very next event popped (strictly before everything in the
    /// queue, and not past `until`) is returned instead of pushed: the caller
    /// processes it at once, in exactly the order the queue would have given.
    fn rearm(&mut self, i: usize, direct: Option<Nanos>) -> Option<Nanos> {
        let d = step::rearm(self.instances.get(i)?, self.armed.get_mut(i)?, self.now)?;
        if let Some(until) = direct
            && d <= until
            && self.queue.peek().is_none_or(|top| d < key_time(top))
        {
            return Some(d);
        }
        if self.queue.push_wake(self.now, d, i).is_err() {
            self.queue_full();
        }
        None
    }

    /// Process events up to `until`.
    pub fn run_until(&mut self, until: Nanos) {
        // A frozen or dead instance fires no timer: re-arming it would only
        // queue a wake-up to drop (one per call, so the events counted would
        // depend on where a run stops, as it does at every sample).
        for i in 0..self.instances.len() {
            if self.is_up(i) {
                self.drain(i);
            }
        }
        if self.lanes.is_some() && self.lookahead_ns > 0 {
            return self.run_windows(until);
        }
        // A wake-up that is due before anything queued skips the queue: it
        // is folded into the event before it.
        let mut direct: Option<(Nanos, usize)> = None;
        while self.stopped.is_none() {
            let (at, payload) = match direct.take() {
                Some((at, i)) => {
                    if self.fold_into_event(i, at, until) {
                        direct = self.after_event(i, until);
                    }
                    continue;
                }
                None => {
                    let Some(key) = self.queue.pop_until(until) else {
                        break;
                    };
                    (key_time(key), key as u64 & PAYLOAD)
                }
            };
            // The event is taken out of its slot only here and moved no
            // more until its instance gets it: a message is large.
            let ev = if payload & WAKE != 0 {
                None
            } else {
                let Some(ev) = self.queue.take_slot(payload) else {
                    continue;
                };
                Some(ev)
            };
            let i = match &ev {
                None => (payload & !WAKE) as usize,
                Some(Ev::Fence { inst, fenced }) => {
                    let (inst, fenced) = (*inst, *fenced);
                    self.fence_applies(inst, fenced);
                    continue;
                }
                Some(ev) => ev.instance(),
            };
            self.now = at;
            self.events += 1;
            let fenced = self.voting.is_fenced(InstId(i as u8));
            let (Some(x), Some(life), Some(armed)) = (
                self.instances.get_mut(i),
                self.life.get_mut(i),
                self.armed.get_mut(i),
            ) else {
                continue;
            };
            let landed = step::land(x, life, armed, fenced, at, ev);
            if let Some(block) = landed.write {
                self.store.apply(*block);
            }
            if !landed.handled {
                continue;
            }
            direct = self.after_event(i, until);
        }
        if self.stopped.is_none() {
            self.now = self.now.max(until);
        }
    }

    /// What follows an event instance `i` handled: perform what it asked
    /// for, look after it, re-arm its timer. Returns its wake-up when that
    /// is due before anything queued (and by `until`).
    #[inline(always)]
    fn after_event(&mut self, i: usize, until: Nanos) -> Option<(Nanos, usize)> {
        self.perform(i);
        if self.trace.is_some() {
            self.drain_trace(i);
        }
        self.note_halt(i);
        if self.nextvals.is_some() || self.seq_order.is_some() {
            self.track_nextvals(self.now, i);
        }
        let direct = self.rearm(i, Some(until)).map(|d| (d, i));
        if let Some(c) = self.checker.as_mut() {
            c.after_event(&mut self.instances);
        }
        direct
    }

    /// Instance `i`'s wake-up at `at`, due before anything queued: handed
    /// over at once, folded into the event before it. The instance goes on
    /// to its later deadlines itself while nothing else can happen before
    /// them (before the queue's next event, by `until`) and they ask nothing
    /// of the simulator, unless each event is looked at on its own (the
    /// trace, the checkers, sequence values, in event order).
    /// Returns whether it handled it.
    #[inline(always)]
    fn fold_into_event(&mut self, i: usize, at: Nanos, until: Nanos) -> bool {
        let watched = self.trace.is_some()
            || self.checker.is_some()
            || self.nextvals.is_some()
            || self.seq_order.is_some();
        let quiet_until = if watched || !self.fold {
            at
        } else {
            let next = self.queue.peek().map_or(Nanos::MAX, key_time);
            next.min(until.saturating_add(1))
        };
        let (Some(x), Some(life), Some(armed)) = (
            self.instances.get_mut(i),
            self.life.get_mut(i),
            self.armed.get_mut(i),
        ) else {
            return false;
        };
        self.now = at;
        let Some((handled, reached)) = step::land_folded(x, life, armed, at, quiet_until) else {
            return false;
        };
        self.folded += u64::from(handled);
        self.now = reached;
        true
    }

    /// The sequence values instance `i` handed out at `at`.
    fn track_nextvals(&mut self, at: Nanos, i: usize) {
        for (seq, v) in self.instances[i].take_nextvals() {
            self.observe_nextval(at, i, seq, v);
        }
    }

    /// A sequence value instance `i` handed out at `at`: counted out of
    /// order or duplicated, and logged when asked.
    fn observe_nextval(&mut self, at: Nanos, i: usize, seq: u32, v: i64) {
        if let Some(o) = self.seq_order.as_mut()
            && let Err(why) = o.observe(i, seq, v)
        {
            self.stopped.get_or_insert(why);
        }
        if let Some(log) = self.nextvals.as_mut() {
            if log.len() >= SEQ_VALUES_MAX {
                self.stopped.get_or_insert_with(|| {
                    format!("the log of sequence values is full ({SEQ_VALUES_MAX} values)")
                });
            } else {
                log.push((at, i, seq, v));
            }
        }
    }

    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Keep every sequence value handed out, in the cluster's event order
    /// (for property tests: uniqueness, order, gaps).
    pub fn log_nextvals(&mut self) {
        self.nextvals = Some(Vec::new());
    }

    /// An instance's statistics with the cluster-wide sequence checks added.
    pub fn stats_of(&self, i: usize) -> Stats {
        let mut st = self.instances[i].stats();
        if let Some(o) = &self.seq_order {
            o.add_to(i, &mut st);
        }
        st
    }

    /// The values logged so far: (time, instance 0-based, sequence, value).
    pub fn nextvals(&self) -> &[(Nanos, usize, u32, i64)] {
        self.nextvals.as_deref().unwrap_or(&[])
    }

    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }

    /// Keep every parallel statement's result (for property tests).
    pub fn log_px_results(&mut self) {
        for x in &mut self.instances {
            x.log_px_results(true);
        }
    }

    /// Results of the parallel statements that ended since the last call:
    /// (QC's instance 0-based, result).
    pub fn take_px_results(&mut self) -> Vec<(usize, fusion_core::px::PxResult)> {
        let mut out = Vec::new();
        for (i, x) in self.instances.iter_mut().enumerate() {
            out.extend(x.take_px_results().into_iter().map(|r| (i, r)));
        }
        out
    }

    /// Send a command to one instance (0-based).
    pub fn command(&mut self, inst: usize, cmd: Command) {
        if let Some(x) = self.instances.get_mut(inst) {
            x.apply(self.now, cmd);
            self.drain(inst);
        }
    }

    /// The interconnect and store faults of a phase (replacing the previous
    /// phase's). CPU stress is an instance command (`Phase::commands_for`).
    fn set_faults(&mut self, faults: &[Fault]) {
        self.set_faults_only(faults);
        self.lookahead_ns = self.net.latency_ns_min().min(self.store.latency_ns_min());
    }

    fn set_faults_only(&mut self, faults: &[Fault]) {
        self.net.set_faults(faults);
        self.store.clear_faults();
        for f in faults {
            if let Fault::DiskLatency {
                instance,
                device,
                latency,
                jitter,
            } = f
            {
                self.store.set_fault(
                    usize::from(*instance).saturating_sub(1),
                    *device,
                    *latency,
                    *jitter,
                );
            }
        }
    }

    /// Stop every workload and fault (the live runtime's quiesce too) and let
    /// what is in flight land, for at most [`SETTLE_NS_MAX`] of simulated
    /// time. Err: the cluster did not come to rest, and what is still going on.
    ///
    /// [`SETTLE_NS_MAX`]: fusion_driver::SETTLE_NS_MAX
    pub fn quiesce(&mut self) -> Result<(), String> {
        self.set_faults(&[]);
        for i in 0..self.instances.len() {
            for cmd in fusion_driver::quiesce_commands() {
                self.command(i, cmd);
            }
        }
        let limit = self.now + fusion_driver::SETTLE_NS_MAX;
        loop {
            let step = self.now + 100 * NS_PER_MS;
            self.run_to(step, &[]);
            if let Some(why) = &self.stopped {
                return Err(why.clone());
            }
            let activity = self.activity();
            // A dead instance's blocks are only whole again once a survivor
            // recovered it (samples.rs).
            let unrecovered = self.unrecovered();
            if activity.iter().all(Activity::at_rest) && unrecovered.is_empty() {
                return Ok(());
            }
            if self.now >= limit {
                let waited = format!(
                    "{} s of simulated time",
                    fusion_driver::SETTLE_NS_MAX / NS_PER_S
                );
                if !unrecovered.is_empty() {
                    let mut dead = fusion_core::types::InstSet::default();
                    for i in unrecovered.iter().filter_map(|&i| u8::try_from(i).ok()) {
                        dead.insert(InstId(i));
                    }
                    return Err(fusion_driver::not_recovered(dead, &waited));
                }
                return fusion_driver::settled(&activity, &waited);
            }
        }
    }

    /// What each instance still has going on: sessions, messages on their
    /// way to it, its I/Os.
    fn activity(&self) -> Vec<Activity> {
        let mut activity: Vec<Activity> = self
            .instances
            .iter()
            .enumerate()
            .map(|(i, x)| Activity {
                instance: x.id,
                // A killed or evicted instance is gone: nothing of it can settle.
                at_rest: x.sessions_at_rest() || matches!(self.life.get(i), Some(Life::Down)),
                waits: x
                    .current_waits()
                    .into_iter()
                    .map(|(w, sessions)| (w.name().to_string(), sessions))
                    .collect(),
                messages_in_flight: 0,
                io_in_flight: 0,
            })
            .collect();
        for ev in self.queue.slots.iter().flatten() {
            let (inst, counter): (InstId, fn(&mut Activity) -> &mut u64) = match ev {
                Ev::Deliver(env) => (env.to, |a| &mut a.messages_in_flight),
                Ev::Io { inst, .. } => (InstId(*inst), |a| &mut a.io_in_flight),
                Ev::Fence { .. } => continue,
            };
            if matches!(self.life.get(inst.idx()), Some(Life::Down)) {
                continue;
            }
            if let Some(a) = activity.get_mut(inst.idx()) {
                *counter(a) += 1;
            }
        }
        activity
    }

    /// The datafile blocks as the store holds them.
    pub fn stored_blocks(&self) -> &[fusion_core::block::Block] {
        self.store.blocks()
    }

    /// Instance `inst`'s redo thread as the store keeps it (from the
    /// instance's checkpoint on).
    /// Keep the redo records the instances write, from their checkpoints on
    /// (`redo_thread` reads them). A scenario with failure faults keeps them.
    pub fn keep_redo(&mut self) {
        self.store.keep_redo();
    }

    pub fn redo_thread(&self, inst: usize) -> Option<&RedoThread> {
        self.store.redo_thread(inst)
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    /// Wake-ups folded into the event before them (not in [`Sim::events`]).
    pub fn folded(&self) -> u64 {
        self.folded
    }

    /// Count events by kind from now on ([`EventKinds`]); the run goes
    /// serially, as a checked or traced one does.
    pub fn count_events(&mut self) {
        self.lanes = None;
        for x in &mut self.instances {
            x.count_events();
        }
    }

    /// The events counted by kind since [`Sim::count_events`].
    pub fn event_kinds(&self) -> EventKinds {
        EventKinds::of(&self.instances, self.events)
    }

    /// How many parallel windows the run went through (0: it ran serially).
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Every instance's statistics, with the cluster-wide sequence checks.
    fn snapshot(&self) -> Vec<Stats> {
        (0..self.instances.len())
            .map(|i| self.stats_of(i))
            .collect()
    }
}

/// The threads a run of `loaded` gets by default: every core when its
/// biggest cluster has at least [`PARALLEL_INSTANCES_MIN`] instances, else 1.
pub fn default_threads(loaded: &LoadedScenario) -> usize {
    let instances = loaded.instances_max();
    if instances < PARALLEL_INSTANCES_MIN {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Instances a cluster needs for a run to go parallel by default. Each
/// window's records cross between cores twice (dealt out, merged back): on
/// the 2-core reference machine 16 instances gain nothing, 32 gain 11 %,
/// 64 gain 18 % (docs/benchmarks.md, "One run on several threads").
pub const PARALLEL_INSTANCES_MIN: usize = 32;

/// Run one variant through its phases and collect each phase's activity.
pub fn run_variant(name: &str, s: &Scenario, opts: &SimOptions) -> VariantOutcome {
    run_phases(Sim::new(s, opts), name, s, opts)
}

/// [`run_variant`], writing its timeline trace into `trace` (the variant's
/// `index` of `count`, see [`TraceWriter::begin_variant`]).
pub fn run_variant_traced(
    name: &str,
    s: &Scenario,
    opts: &SimOptions,
    (index, count): (usize, usize),
    mut trace: TraceWriter,
) -> (VariantOutcome, TraceWriter) {
    let mut sim = Sim::new(s, opts);
    trace.begin_variant(index, count, name, s.instances.len());
    sim.attach_trace(trace);
    let outcome = run_phases_with(&mut sim, name, s, opts);
    let trace = match sim.detach_trace() {
        Some(t) => t,
        None => unreachable!("the trace was attached above"),
    };
    (outcome, trace)
}

/// [`run_variant`], counting its events by kind (`fusionlab bench
/// --events`): the same run, serially.
pub fn run_variant_counted(
    name: &str,
    s: &Scenario,
    opts: &SimOptions,
) -> (VariantOutcome, EventKinds) {
    let mut sim = Sim::new(s, opts);
    sim.count_events();
    let outcome = run_phases_with(&mut sim, name, s, opts);
    let kinds = sim.event_kinds();
    (outcome, kinds)
}

/// Test hook: [`run_variant`] on a network that loses the `k`-th message
/// of the run (counted from 1, heartbeats not counted).
pub fn run_variant_losing(name: &str, s: &Scenario, opts: &SimOptions, k: u64) -> VariantOutcome {
    let mut sim = Sim::new(s, opts);
    sim.net.lose_nth(k);
    run_phases(sim, name, s, opts)
}

/// Run `sim`, new for scenario `s`, through the phases.
fn run_phases(mut sim: Sim, name: &str, s: &Scenario, opts: &SimOptions) -> VariantOutcome {
    run_phases_with(&mut sim, name, s, opts)
}

/// Run `sim`, new for scenario `s`, through the phases.
fn run_phases_with(sim: &mut Sim, name: &str, s: &Scenario, opts: &SimOptions) -> VariantOutcome {
    let mut phases = Vec::new();
    let mut recoveries = Vec::new();
    let mut stopped = None;
    for phase in &s.phases {
        // The counters before the phase's own commands: what a command sets
        // off at once (a session woken by its workload starting counts its
        // first execution) belongs to the phase it starts.
        let start = sim.now();
        let before = sim.snapshot();
        // The same start of phase as the live runtime's.
        sim.set_faults(&phase.faults);
        if let Some(t) = sim.trace.as_mut() {
            t.phase(&phase.name, start, phase.duration, &phase.faults);
        }
        for i in 0..sim.instances.len() {
            for cmd in phase.commands_for(i) {
                sim.command(i, cmd);
            }
        }
        let timeline = fusion_driver::timeline_of(start, &phase.faults);
        sim.run_sampled(start + phase.duration, &timeline);
        if let Some(why) = sim.stopped() {
            // A phase cut short is left out of the result.
            stopped = Some(format!("phase {:?}: {why}", phase.name));
            break;
        }
        let mut result = fusion_driver::phase_result(
            &phase.name,
            s,
            start,
            phase.duration,
            &before,
            &sim.snapshot(),
            sim.take_alert_log(),
        );
        // Every member keeps the same view; a halted instance's is stale.
        if let Some(inst) = sim.instances.iter().find(|i| i.halted().is_none()) {
            result.pf_masters = fusion_driver::pf_master_rows(&s.catalog, &inst.gcspfmaster_info());
        }
        phases.push(result);
        recoveries.push(sim.take_recoveries());
    }
    fusion_driver::brownout::attach_recoveries(
        &mut phases,
        recoveries,
        &s.phases,
        sim.commit_series(),
    );
    let series = sim.finish_series();
    // What the run did, before the checkers' quiet period below.
    let ran = Ran::Simulated {
        events: sim.events,
        simulated_ns: sim.now,
    };
    let mut outcome = VariantOutcome::new(
        VariantResult {
            name: name.to_string(),
            phases,
            series,
        },
        ran,
    );
    let settled = match stopped {
        Some(why) => Err(why),
        None if opts.check => sim.quiesce(),
        None => Ok(()),
    };
    outcome.errors = sim
        .instances
        .iter()
        .flat_map(|x| x.errors().iter().cloned())
        .collect();
    let checker = sim.checker.take();
    match settled {
        Err(why) => outcome.errors.push(why),
        Ok(()) => {
            if let Some(c) = checker {
                outcome.set_check(c.finish(&mut sim.instances, sim.store.blocks()));
            }
        }
    }
    outcome
}

/// Run every variant of a scenario and evaluate its expectations.
pub fn run_scenario(
    loaded: &LoadedScenario,
    opts: &SimOptions,
) -> (RunResult, Vec<VariantOutcome>) {
    let outcomes: Vec<VariantOutcome> = loaded
        .variants
        .iter()
        .map(|v| run_variant(&v.name, &v.scenario, opts))
        .collect();
    let result = fusion_driver::run_result(loaded, opts.seed, &outcomes);
    (result, outcomes)
}

/// [`run_scenario`], writing the timeline trace of every variant into `trace`.
pub fn run_scenario_traced(
    loaded: &LoadedScenario,
    opts: &SimOptions,
    mut trace: TraceWriter,
) -> (RunResult, Vec<VariantOutcome>, TraceWriter) {
    let count = loaded.variants.len();
    let mut outcomes = Vec::with_capacity(count);
    for (index, v) in loaded.variants.iter().enumerate() {
        let (o, t) = run_variant_traced(&v.name, &v.scenario, opts, (index, count), trace);
        trace = t;
        outcomes.push(o);
    }
    let result = fusion_driver::run_result(loaded, opts.seed, &outcomes);
    (result, outcomes, trace)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use fusion_core::config::{KeyDist, Step};
    use fusion_testkit::{ScenarioBuilder, btree, phase, read_by_index, table, txn, workload};

    /// `instances` instances of `sessions` sessions each reading a 400-row
    /// table by its index, through `phases` (name, length).
    pub(crate) fn reads(instances: u8, sessions: u32, phases: &[(&str, Nanos)]) -> Scenario {
        let mut b = ScenarioBuilder::new(instances)
            .table(table("t", 400, 20))
            .index(btree("t_pk", 0, 32, 32))
            .workload(workload(
                "w",
                instances,
                sessions,
                NS_PER_MS,
                vec![txn(
                    "read",
                    1,
                    vec![read_by_index(KeyDist::Uniform, 2), Step::Commit],
                )],
            ));
        for (name, length) in phases {
            b = b.phase(phase(name, *length));
        }
        b.build()
    }

    #[test]
    fn an_instance_going_on_to_its_next_deadlines_itself_ends_as_one_wake_up_each() {
        let s = reads(
            2,
            8,
            &[("first", 100 * NS_PER_MS), ("second", 100 * NS_PER_MS)],
        );
        let opts = SimOptions::default();
        let run = |fold| {
            let mut sim = Sim::new(&s, &opts);
            sim.fold = fold;
            let o = run_phases_with(&mut sim, "v", &s, &opts);
            (
                format!("{:?} {:?}", o.result, o.ran),
                sim.events(),
                sim.folded(),
            )
        };
        let (folded, events, wakes_folded) = run(true);
        let (plain, plain_events, plain_folded) = run(false);
        assert!(folded == plain, "folding changed the run");
        // The same events, and the same deadlines handed over outside them.
        assert_eq!((events, wakes_folded), (plain_events, plain_folded));
        // Most of a session's CPU steps follow one another with nothing in
        // between: folded, not events.
        assert!(
            wakes_folded > events,
            "{wakes_folded} folded, {events} events"
        );
    }

    #[test]
    fn a_run_on_two_threads_goes_through_windows_and_ends_as_the_serial_one() {
        let s = reads(3, 8, &[("first", 200 * NS_PER_MS)]);
        let run = |threads| {
            let opts = SimOptions {
                threads,
                ..SimOptions::default()
            };
            let mut sim = Sim::new(&s, &opts);
            let o = run_phases_with(&mut sim, "v", &s, &opts);
            (
                format!("{:?} {:?}", o.result, o.ran),
                sim.windows(),
                sim.folded(),
            )
        };
        let (serial, none, serial_folded) = run(1);
        let (parallel, windows, parallel_folded) = run(2);
        assert_eq!(none, 0, "one thread is serial");
        assert!(windows > 100, "{windows} windows");
        assert!(serial == parallel, "the two runs differ");
        // The merge finds the wake-ups the serial loop folded.
        assert!(serial_folded > 0);
        assert_eq!(serial_folded, parallel_folded);
        // A checked run is serial: the checkers look after every event.
        let checked = SimOptions {
            threads: 2,
            ..SimOptions::checked()
        };
        let mut sim = Sim::new(&s, &checked);
        run_phases_with(&mut sim, "v", &s, &checked);
        assert_eq!(sim.windows(), 0);
    }

    #[test]
    fn a_full_event_queue_stops_the_run_with_an_error_not_a_panic() {
        let s = reads(
            2,
            8,
            &[("first", 100 * NS_PER_MS), ("second", 100 * NS_PER_MS)],
        );
        let opts = SimOptions::checked();
        let roomy = run_variant("roomy", &s, &opts);
        assert!(roomy.errors.is_empty(), "{:?}", roomy.errors);
        assert_eq!(roomy.result.phases.len(), 2);

        let mut sim = Sim::new(&s, &opts);
        sim.queue.queued_max = 6;
        let o = run_phases(sim, "cramped", &s, &opts);
        assert!(
            o.result.phases.is_empty(),
            "the phase cut short is left out"
        );
        assert!(o.check.is_none(), "no checks over a run cut short");
        assert_eq!(o.errors.len(), 1, "{:?}", o.errors);
        assert!(
            o.errors[0].starts_with("phase \"first\": the simulator's event queue is full"),
            "{:?}",
            o.errors
        );
    }
}
