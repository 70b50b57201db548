//! The kernel: the services every part of the instance shares, behind a
//! small API. The clock (`now`, moved only by the driver's inputs), the SCN,
//! the statistics, the random stream, the parameters, the costs and the
//! layout; the outbox of actions for the driver; the timer table; the I/O
//! table; the process table with the CPUs; the bounded error log.
//!
//! Its fields are private: a part of the instance sends, starts an I/O,
//! arms a timer, runs a process on a CPU or records an error through it,
//! and cannot leave one of its tables half-updated.

mod errors;
mod io;
mod procs;
mod timers;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

pub use errors::ERRORS_MAX;
use errors::ErrorLog;
use io::IoTable;
use procs::ProcTable;
use timers::Timers;

use super::events::{IoPurpose, Proc, Timer};
use super::numa::Numa;
use crate::config::{Costs, Nanos, ParamValue, Params, Server};
use crate::cpu::{ProcId, SchedClass, StepDone};
use crate::cpus::Cpus;
use crate::layout::Layout;
use crate::msg::{Action, Io};
use crate::stats::{Stat, Stats, Wait};
use crate::types::{InstId, Scn};

pub(super) struct Kernel {
    id: InstId,
    instance_count: u8,
    now: Nanos,
    scn: Scn,
    stats: Stats,
    rng: ChaCha8Rng,
    params: Params,
    costs: Costs,
    layout: Arc<Layout>,
    outbox: VecDeque<Action>,
    timers: Timers,
    io: IoTable,
    procs: ProcTable,
    errors: ErrorLog,
    /// What time handled, by kind, when a driver counts it (off: `None`).
    tally: Option<Box<EventTally>>,
}

/// What an instance's time handled, by kind: the simulator's benchmark
/// counts its events by what they did (off in normal runs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventTally {
    /// Timers armed, by kind (each fires once, unless the run ends first).
    pub timers: BTreeMap<&'static str, u64>,
    /// CPU steps asked for, by process class (each ends once, unless
    /// withdrawn or the run ends first).
    pub steps: BTreeMap<&'static str, u64>,
    /// Messages delivered to the instance, by kind.
    pub messages: BTreeMap<&'static str, u64>,
    /// I/O completions delivered.
    pub ios: u64,
    /// Wake-ups: the driver's call at the instance's next deadline.
    pub wakes: u64,
    /// Wake-ups that found no timer and no CPU step due: nothing changed.
    pub wakes_idle: u64,
    /// Deadlines handled right after the input before them, nothing else
    /// happening in between: folded into that input's event (not events
    /// of their own, so not in [`EventTally::inputs`]).
    pub folded: u64,
}

impl EventTally {
    /// The driver's calls counted: messages, I/O completions, wake-ups.
    pub fn inputs(&self) -> u64 {
        self.messages.values().sum::<u64>() + self.ios + self.wakes
    }

    /// Add another's counts (instances or variants summed).
    pub fn merge(&mut self, other: &EventTally) {
        for (k, n) in &other.timers {
            *self.timers.entry(k).or_default() += n;
        }
        for (k, n) in &other.steps {
            *self.steps.entry(k).or_default() += n;
        }
        for (k, n) in &other.messages {
            *self.messages.entry(k).or_default() += n;
        }
        self.ios += other.ios;
        self.wakes += other.wakes;
        self.wakes_idle += other.wakes_idle;
        self.folded += other.folded;
    }
}

/// A driver's input, as [`Kernel::tally_input`] counts it.
pub(super) enum Input {
    Message(&'static str),
    Io,
    /// A wake-up; `idle`: it found nothing due.
    Wake {
        idle: bool,
    },
    /// A deadline folded into the input before it.
    Folded,
}

/// What is due next while time moves (see [`Kernel::next_due`]).
pub(super) enum Due {
    /// CPU steps finished: read them with [`Kernel::step_done`], then [`Kernel::settle`].
    Steps,
    Timer(Timer),
}

impl Kernel {
    pub fn new(
        id: InstId,
        instance_count: u8,
        params: Params,
        costs: Costs,
        layout: Arc<Layout>,
        seed: u64,
        server: Option<Server>,
    ) -> Kernel {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(u64::from(id.0) + 1);
        let cpus = Cpus::new(params.cpu_count, costs.time_slice_ns, server.as_ref());
        let numa = server.map(|s| {
            Numa::new(
                s,
                params.numa_support,
                params.buffers(),
                params.db_block_size,
            )
        });
        Kernel {
            id,
            instance_count,
            now: 0,
            scn: Scn(1),
            stats: Stats::default(),
            rng,
            params,
            costs,
            layout,
            outbox: VecDeque::new(),
            timers: Timers::default(),
            io: IoTable::default(),
            procs: ProcTable::new(cpus, numa),
            errors: ErrorLog::default(),
            tally: None,
        }
    }

    /// This instance.
    #[inline(always)]
    pub fn id(&self) -> InstId {
        self.id
    }

    /// Instances in the cluster (members or not).
    #[inline(always)]
    pub fn instance_count(&self) -> u8 {
        self.instance_count
    }

    #[inline(always)]
    pub fn now(&self) -> Nanos {
        self.now
    }

    // ----- the SCN ----------------------------------------------------------------

    #[inline(always)]
    pub fn scn(&self) -> Scn {
        self.scn
    }

    #[inline]
    pub fn next_scn(&mut self) -> Scn {
        self.scn = self.scn.next();
        self.scn
    }

    /// A peer's SCN arrived (Lamport): ours is never behind what we have seen.
    #[inline]
    pub fn observe_scn(&mut self, scn: Scn) {
        if scn > self.scn {
            self.scn = scn;
        }
    }

    // ----- shared reading -------------------------------------------------------------

    #[inline(always)]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The counters as `v$sysstat` would show them now: the CPUs' busy
    /// time as of now added.
    pub fn stats_now(&self) -> Stats {
        let mut s = self.stats.clone();
        s.add(Stat::OsBusyTime, self.cpus().busy());
        s
    }

    #[inline(always)]
    pub fn stats_mut(&mut self) -> &mut Stats {
        &mut self.stats
    }

    #[inline(always)]
    pub fn incr(&mut self, stat: Stat) {
        self.stats.incr(stat);
    }

    #[inline(always)]
    pub fn add(&mut self, stat: Stat, v: u64) {
        self.stats.add(stat, v);
    }

    /// Record a foreground or background wait.
    #[inline(always)]
    pub fn wait(&mut self, event: Wait, ns: Nanos, foreground: bool) {
        self.stats.wait(event, ns, foreground);
    }

    /// A restarted instance's counters go on from its earlier life's.
    pub fn carry_over(&mut self, stats: Stats, busy: Option<Nanos>) {
        self.stats = stats;
        if let Some(busy) = busy {
            self.procs.cpus_mut().set_busy(busy);
        }
    }

    #[inline(always)]
    pub fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    #[inline(always)]
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Change a parameter online; scheduling classes follow at once.
    pub fn set_param(&mut self, name: &str, value: &ParamValue) {
        if let Err(e) = self.params.set(name, value) {
            self.error(&e.to_string());
        }
        self.procs.reclassify(self.now, &self.params);
    }

    #[inline(always)]
    pub fn costs(&self) -> &Costs {
        &self.costs
    }

    #[inline(always)]
    pub fn layout(&self) -> &Arc<Layout> {
        &self.layout
    }

    // ----- the outbox, timers and I/O -------------------------------------------------

    /// An action for the driver, in order.
    #[inline(always)]
    pub fn push_action(&mut self, action: Action) {
        self.outbox.push_back(action);
    }

    #[inline(always)]
    pub fn pop_action(&mut self) -> Option<Action> {
        self.outbox.pop_front()
    }

    /// Whether an action waits for the driver.
    #[inline(always)]
    pub fn has_actions(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Fire `timer` after `delay`.
    #[inline]
    pub fn arm(&mut self, delay: Nanos, timer: Timer) {
        if self.tally.is_some() {
            self.tally_arm(timer);
        }
        self.timers.arm(self.now + delay, timer);
    }

    /// When the next timer or CPU event is due.
    #[inline]
    pub fn next_deadline(&self) -> Option<Nanos> {
        match (self.timers.next(), self.procs.next_event()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    #[inline]
    pub fn start_io(&mut self, io: Io, purpose: IoPurpose) {
        let id = self.io.start(purpose);
        self.outbox.push_back(Action::Io { id, io });
    }

    /// The purpose of a completed I/O; `None` (and an error recorded): not ours.
    #[inline]
    pub fn io_done(&mut self, id: u64) -> Option<IoPurpose> {
        let purpose = self.io.complete(id);
        if purpose.is_none() {
            self.error(&format!("completion for unknown I/O {id}"));
        }
        purpose
    }

    pub fn io_in_flight(&self) -> impl Iterator<Item = &IoPurpose> {
        self.io.in_flight()
    }

    /// The instance stops: nothing it asked for is done, nothing is due.
    pub fn stop(&mut self) {
        self.outbox.clear();
        self.timers.clear();
    }

    // ----- time -----------------------------------------------------------------------

    /// Start moving time to `until`.
    pub fn begin_advance(&self, until: Nanos) {
        // A driver that goes back in time would reorder what already happened.
        assert!(
            until >= self.now,
            "{}: the driver moved time back from {} ns to {until} ns",
            self.id,
            self.now
        );
    }

    /// The next CPU event or timer due by `until`, time moved to it; `None`:
    /// nothing more is due by then.
    #[inline]
    pub fn next_due(&mut self, until: Nanos) -> Option<Due> {
        let cpu_at = self.procs.next_event();
        let next = match (cpu_at, self.timers.next()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        if next > until {
            return None;
        }
        debug_assert!(
            next >= self.now,
            "{}: an event at {next} ns is in the past",
            self.id
        );
        self.now = next;
        if cpu_at == Some(next) {
            self.procs.advance(next);
            return Some(Due::Steps);
        }
        self.timers.pop().map(Due::Timer)
    }

    /// The `k`th step finished at this instant (handling one adds none).
    #[inline(always)]
    pub fn step_done(&self, k: usize) -> Option<StepDone> {
        self.procs.done(k)
    }

    /// The steps finished at this instant are handled.
    #[inline(always)]
    pub fn settle(&mut self) {
        self.procs.settle(self.now);
    }

    /// Count what time handles from now on, by kind ([`EventTally`]).
    pub fn count_events(&mut self) {
        if self.tally.is_none() {
            // What was armed before counting began (at startup) fires too.
            let mut t = EventTally::default();
            for (_, timer) in self.timers.armed() {
                *t.timers.entry(timer.kind()).or_default() += 1;
            }
            self.tally = Some(Box::new(t));
        }
    }

    /// A restarted instance goes on counting where its earlier life stopped.
    pub fn carry_tally(&mut self, earlier: EventTally) {
        self.tally = Some(Box::new(earlier));
    }

    /// Whether [`Kernel::count_events`] was asked.
    #[inline(always)]
    pub fn counting(&self) -> bool {
        self.tally.is_some()
    }

    /// A timer armed, counted by kind (only while counting).
    #[cold]
    #[inline(never)]
    fn tally_arm(&mut self, timer: Timer) {
        if let Some(t) = self.tally.as_mut() {
            *t.timers.entry(timer.kind()).or_default() += 1;
        }
    }

    /// A CPU step asked for by `proc`, counted by its class (only while counting).
    #[cold]
    #[inline(never)]
    fn tally_cpu(&mut self, proc: ProcId) {
        let class = self.procs.get(proc).map_or("unknown", Proc::class);
        if let Some(t) = self.tally.as_mut() {
            *t.steps.entry(class).or_default() += 1;
        }
    }

    /// A driver's input, counted by kind (only while counting).
    #[cold]
    #[inline(never)]
    pub fn tally_input(&mut self, input: Input) {
        if let Some(t) = self.tally.as_mut() {
            match input {
                Input::Message(kind) => *t.messages.entry(kind).or_default() += 1,
                Input::Io => t.ios += 1,
                Input::Wake { idle } => {
                    t.wakes += 1;
                    t.wakes_idle += u64::from(idle);
                }
                Input::Folded => t.folded += 1,
            }
        }
    }

    /// What time handled, by kind, since [`Kernel::count_events`].
    pub fn event_tally(&self) -> Option<&EventTally> {
        self.tally.as_deref()
    }

    /// Time reached `until` with nothing more due.
    pub fn end_advance(&mut self, until: Nanos) {
        debug_assert!(until >= self.now);
        self.now = until;
    }

    /// A kill at `now`: time catches up (it does not go back).
    pub fn catch_up(&mut self, now: Nanos) {
        self.now = self.now.max(now);
    }

    // ----- processes and CPUs -----------------------------------------------------------

    pub fn add_proc(&mut self, p: Proc, name: String) -> ProcId {
        self.procs.add(p, name, &self.params)
    }

    #[inline(always)]
    pub fn proc(&self, id: ProcId) -> Option<Proc> {
        self.procs.get(id)
    }

    pub fn proc_name(&self, id: ProcId) -> Option<&str> {
        self.procs.name(id)
    }

    pub fn find_proc(&self, name: &str) -> Option<ProcId> {
        self.procs.find(name)
    }

    /// Run `proc` for `demand` ns of CPU (it queues for one first).
    #[inline(always)]
    pub fn cpu(&mut self, proc: ProcId, demand: Nanos) {
        if self.tally.is_some() {
            self.tally_cpu(proc);
        }
        self.procs.request(self.now, proc, demand);
    }

    /// Withdraw a process's CPU step.
    pub fn cancel_cpu(&mut self, proc: ProcId) {
        self.procs.cancel(self.now, proc);
    }

    pub fn cpus(&self) -> &Cpus {
        self.procs.cpus()
    }

    #[inline(always)]
    pub fn numa(&self) -> Option<&Numa> {
        self.procs.numa()
    }

    #[inline(always)]
    pub fn numa_mut(&mut self) -> Option<&mut Numa> {
        self.procs.numa_mut()
    }

    /// With a `[server]`: the stall on memory a finished step owes, if any.
    pub fn memory_stall(&mut self, proc: ProcId) -> Option<Nanos> {
        let now = self.now;
        self.procs
            .numa_mut()?
            .stall_after(now, proc, &mut self.stats)
    }

    /// Hold `proc`'s CPU for a stall of `stall` ns (the core's pipelines go to its other threads).
    pub fn stall(&mut self, proc: ProcId, stall: Nanos) {
        let class: SchedClass = self.procs.class_of(proc);
        let group = self.procs.numa().map_or(0, |n| n.home(proc));
        self.procs
            .cpus_mut()
            .request_stall(self.now, proc, class, stall, group);
    }

    // ----- the error log -----------------------------------------------------------------

    /// Record a problem with a peer's message or an I/O (reported by the
    /// driver, never panicked on), within the log's bound.
    pub fn error(&mut self, problem: &str) {
        self.errors.push(self.id, problem);
    }

    pub fn errors(&self) -> &[String] {
        self.errors.as_slice()
    }
}

/// What [`Kernel::run_until`] found due (tests).
#[cfg(test)]
#[derive(Debug, PartialEq)]
pub(super) enum Fired {
    Steps(Vec<StepDone>),
    Timer(Timer),
}

#[cfg(test)]
impl Kernel {
    /// Instance 1 of a two-instance cluster at time 0, default parameters
    /// and costs, over `catalog`'s tables: for tests of one subsystem.
    pub fn for_tests(catalog: &crate::config::Catalog) -> Kernel {
        Kernel::for_instance(InstId(1), catalog)
    }

    /// Instance `id` of a two-instance cluster, as [`Kernel::for_tests`].
    pub fn for_instance(id: InstId, catalog: &crate::config::Catalog) -> Kernel {
        let params = Params::default();
        let layout = Arc::new(Layout::new(catalog, 2, params.lm_contiguous_res_count));
        Kernel::new(id, 2, params, Costs::default(), layout, 1, None)
    }

    /// The timers armed, in the order they fire.
    pub fn timers_armed(&self) -> Vec<(Nanos, Timer)> {
        self.timers.armed()
    }

    /// Move time to the next CPU steps' end or timer due by `until`, and
    /// say what happened (`None`: nothing by then; time stays).
    /// (A time slice's end where no step finished is not reported.)
    pub fn run_until(&mut self, until: Nanos) -> Option<Fired> {
        loop {
            match self.next_due(until)? {
                Due::Steps => {
                    let done: Vec<_> = (0..).map_while(|k| self.step_done(k)).collect();
                    self.settle();
                    if !done.is_empty() {
                        return Some(Fired::Steps(done));
                    }
                }
                Due::Timer(t) => return Some(Fired::Timer(t)),
            }
        }
    }

    /// The actions emitted so far, in order (taken).
    pub fn take_actions(&mut self) -> Vec<Action> {
        self.outbox.drain(..).collect()
    }
}
