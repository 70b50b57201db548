//! The deterministic simulator: every instance of a scenario in one process,
//! on a virtual clock, with an in-memory interconnect and block store.
//!
//! Determinism: one event order by (time, sequence number) (see `Queue`),
//! seeded ChaCha RNGs, no hash-map iteration and no wall clock. The same
//! scenario and seed give the same result, bit for bit.

pub mod checkers;
mod index_check;
mod net;
mod store;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusion_core::config::Nanos;
use fusion_core::instance::{Command, Instance, Observation};
use fusion_core::msg::{Action, Envelope, Io, IoResult};
use fusion_core::stats::{Stat, Stats};
use fusion_report::{InstanceResult, PhaseResult, RunResult, VariantResult};
use fusion_scenario::{Fault, LoadedScenario, Scenario};

pub use checkers::{CheckReport, Checker};

/// Events further ahead than this when pushed go to `Queue::far`.
const FAR: Nanos = fusion_core::config::NS_PER_MS;
use net::Network;
use store::Store;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    /// Replace the scenario's seed.
    pub seed: Option<u64>,
    /// Run the correctness checkers (after every event, and over the history at the end).
    pub check: bool,
}

/// One variant's run.
#[derive(Debug)]
pub struct SimOutcome {
    pub result: VariantResult,
    /// Simulated events processed.
    pub events: u64,
    /// Cluster time simulated.
    pub simulated_ns: Nanos,
    /// Blocks shipped between instances (CR and current).
    pub transfers: u64,
    /// Protocol problems the instances reported (should be none).
    pub errors: Vec<String>,
    pub check: Option<CheckReport>,
}

/// An event with a payload, kept in a slot (wake-ups are in the key alone).
enum Ev {
    Deliver(Envelope),
    Io {
        inst: u8,
        id: u64,
        result: IoResult,
        write: Option<Box<fusion_core::block::Block>>,
    },
}

/// A queue entry in one integer, so the queue compares one `u128`: the time in
/// the high word, then the sequence number, then what the event is (a slot,
/// or [`WAKE`] and an instance). Sequence numbers are unique among queued
/// events, so the order is exactly (time, sequence number).
type Key = u128;
/// Bits of the low word below the sequence number.
const SEQ_SHIFT: u32 = 32;
/// Marks a wake-up; the instance is in the bits below.
const WAKE: u64 = 1 << (SEQ_SHIFT - 1);
const PAYLOAD: u64 = (1 << SEQ_SHIFT) - 1;
/// The highest sequence number; past it the queued events are renumbered
/// (see [`Queue::renumber`]), every few billion events.
const SEQ_MAX: u64 = (1 << (64 - SEQ_SHIFT)) - 1;
/// Near events kept in the sorted vector at most: a scenario with very many
/// events in flight sends the rest to the heap instead of paying a long
/// insertion each (the order is the same either way).
const NEAR_MAX: usize = 512;

fn key_time(k: Key) -> Nanos {
    (k >> 64) as Nanos
}

/// The events not yet processed, ordered by (time, sequence number), in two
/// parts: `near`, sorted latest first, for the near future, and the heap
/// `far` for events more than [`FAR`] ahead when pushed (timer wake-ups,
/// mostly stale ones). The next event is the earlier of `near`'s last and
/// `far`'s top. A new near event is usually among the next few (a CPU step
/// ending, a message landing), so it is inserted by a short walk from the
/// end, and taking the next one is a `Vec::pop`: cheaper than a heap's
/// sifts at these sizes (tens of events).
struct Queue {
    near: Vec<Key>,
    far: BinaryHeap<Reverse<Key>>,
    slots: Vec<Option<Ev>>,
    free: Vec<u32>,
    seq: u64,
    /// [`SEQ_MAX`], lowered by tests to see renumbering happen.
    seq_max: u64,
}

impl Default for Queue {
    fn default() -> Queue {
        Queue {
            near: Vec::new(),
            far: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            seq: 0,
            seq_max: SEQ_MAX,
        }
    }
}

impl Queue {
    fn push_key(&mut self, now: Nanos, at: Nanos, payload: u64) {
        if self.seq >= self.seq_max {
            self.renumber();
        }
        self.seq += 1;
        let key = (Key::from(at) << 64) | Key::from((self.seq << SEQ_SHIFT) | payload);
        if at > now.saturating_add(FAR) || self.near.len() >= NEAR_MAX {
            self.far.push(Reverse(key));
            return;
        }
        let pos = self
            .near
            .iter()
            .rposition(|&k| k > key)
            .map_or(0, |p| p + 1);
        self.near.insert(pos, key);
    }

    fn push(&mut self, now: Nanos, at: Nanos, ev: Ev) {
        // A freed slot is always empty: writing it needs no drop of the old value.
        let slot = match self.free.pop() {
            Some(i) if self.slots.get(i as usize).is_some_and(Option::is_none) => {
                self.slots[i as usize] = Some(ev);
                u64::from(i)
            }
            _ => {
                // Slot numbers below WAKE: two billion events in flight would
                // need hundreds of gigabytes first.
                self.slots.push(Some(ev));
                (self.slots.len() - 1) as u64
            }
        };
        self.push_key(now, at, slot);
    }

    fn push_wake(&mut self, now: Nanos, at: Nanos, inst: usize) {
        self.push_key(now, at, WAKE | inst as u64);
    }

    /// Give the queued events sequence numbers 1, 2, ... in their order, so
    /// numbering can go on: only their relative order ever mattered, and
    /// every later event still gets a higher number than all of them.
    #[cold]
    fn renumber(&mut self) {
        let mut keys: Vec<Key> = self.near.drain(..).collect();
        keys.extend(self.far.drain().map(|Reverse(k)| k));
        keys.sort_unstable();
        for (n, k) in keys.iter_mut().enumerate() {
            let low = ((n as u64 + 1) << SEQ_SHIFT) | (*k as u64 & PAYLOAD);
            *k = (*k >> 64 << 64) | Key::from(low);
        }
        // Which part holds an event does not change the order (the next
        // event is the earlier of the two tops): all go to the heap.
        self.far = keys.into_iter().map(Reverse).collect();
        self.seq = self.far.len() as u64;
    }

    /// The next event's key.
    fn peek(&self) -> Option<Key> {
        match (self.near.last(), self.far.peek()) {
            (Some(&a), Some(&Reverse(b))) => Some(a.min(b)),
            (Some(&a), None) => Some(a),
            (None, b) => b.map(|&Reverse(b)| b),
        }
    }

    /// Remove and return the next event's key if it is not after `until`.
    fn pop_until(&mut self, until: Nanos) -> Option<Key> {
        let key = self.peek().filter(|&k| key_time(k) <= until)?;
        // Keys are unique: the next one is on top of the part that holds it.
        if self.near.last() == Some(&key) {
            self.near.pop();
        } else {
            self.far.pop();
        }
        Some(key)
    }
}

/// The simulator of one scenario variant.
pub struct Sim {
    now: Nanos,
    queue: Queue,
    instances: Vec<Instance>,
    armed: Vec<Option<Nanos>>,
    net: Network,
    store: Store,
    events: u64,
    checker: Option<Checker>,
    block_size: u32,
    /// Sequence values in the order instances handed them out: (time, instance, sequence, value).
    nextvals: Option<Vec<(Nanos, usize, u32, i64)>>,
    /// Order and uniqueness of sequence values across the cluster (when sequences exist).
    seq_order: Option<SeqOrder>,
}

/// What only a view of the whole cluster can tell about sequence values: a
/// value lower than one already handed out elsewhere (out of order), or one
/// handed out twice. Counted on the instance that handed it out.
#[derive(Default)]
struct SeqOrder {
    highest: rustc_hash::FxHashMap<u32, i64>,
    seen: rustc_hash::FxHashSet<(u32, i64)>,
    /// Per instance: (out of order, duplicated).
    counts: Vec<(u64, u64)>,
}

impl Sim {
    pub fn new(s: &Scenario, opts: &SimOptions) -> Sim {
        let seed = opts.seed.unwrap_or(s.seed);
        let n = s.instances.len() as u8;
        let layout = s.layout();
        let instances = s
            .instance_configs(&layout, seed, opts.check)
            .into_iter()
            .map(Instance::new)
            .collect();
        let block_size = s.block_size();
        let mut instances: Vec<Instance> = instances;
        if !s.catalog.sequences.is_empty() {
            for x in &mut instances {
                x.log_nextvals(true);
            }
        }
        Sim {
            now: 0,
            queue: Queue::default(),
            instances,
            armed: vec![None; n as usize],
            net: Network::new(s.network.clone(), n, seed),
            store: Store::new(layout.initial_blocks(), s.storage.clone(), n, seed),
            events: 0,
            checker: opts.check.then(|| Checker::new(layout.clone())),
            block_size,
            nextvals: None,
            seq_order: (!s.catalog.sequences.is_empty()).then(|| SeqOrder {
                counts: vec![(0, 0); n as usize],
                ..SeqOrder::default()
            }),
        }
    }

    /// Perform what instance `i` asked for, then re-arm its timer.
    fn drain(&mut self, i: usize) {
        self.perform(i);
        self.rearm(i, None);
    }

    /// Perform the actions instance `i` asked for.
    // Inline: most events ask for nothing, and that check costs less than a call.
    #[inline(always)]
    fn perform(&mut self, i: usize) {
        while let Some(action) = self.instances.get_mut(i).and_then(Instance::poll_action) {
            self.perform_one(i, action);
        }
    }

    #[inline(never)]
    fn perform_one(&mut self, i: usize, action: Action) {
        match action {
            Action::Send(env) => {
                let bytes = env
                    .msg
                    .wire_bytes(self.block_size, self.net.message_bytes());
                let at = self
                    .net
                    .arrival(self.now, env.from.idx(), env.to.idx(), bytes);
                self.queue.push(self.now, at, Ev::Deliver(env));
            }
            Action::Io { id, io } => {
                let (at, result, write) = match io {
                    Io::ReadBlock { blk } => {
                        let (at, r) = self.store.read(self.now, i, blk);
                        (at, r, None)
                    }
                    Io::ReadBlocks { first, count } => {
                        let (at, r) = self.store.read_many(self.now, i, first, count);
                        (at, r, None)
                    }
                    Io::WriteBlock { block } => (
                        self.store.write(self.now, i),
                        IoResult::Written,
                        Some(block),
                    ),
                    Io::WriteRedo { records, bytes } => {
                        let (at, r) = self.store.write_redo(self.now, i, records, bytes);
                        (at, r, None)
                    }
                };
                self.queue.push(
                    self.now,
                    at,
                    Ev::Io {
                        inst: i as u8,
                        id,
                        result,
                        write,
                    },
                );
            }
        }
    }

    /// Re-arm instance `i`'s timer. With `direct: Some(until)`, a wake-up that
    /// would be the very next event popped (strictly before everything in the
    /// queue, and not past `until`) is returned instead of pushed: the caller
    /// processes it at once, in exactly the order the queue would have given.
    fn rearm(&mut self, i: usize, direct: Option<Nanos>) -> Option<Nanos> {
        let d = self.instances[i].next_deadline()?;
        if self.armed[i].is_some_and(|a| d >= a) {
            return None;
        }
        self.armed[i] = Some(d);
        if let Some(until) = direct
            && d <= until
            && self.queue.peek().is_none_or(|top| d < key_time(top))
        {
            return Some(d);
        }
        self.queue.push_wake(self.now, d, i);
        None
    }

    /// Process events up to `until`.
    pub fn run_until(&mut self, until: Nanos) {
        for i in 0..self.instances.len() {
            self.drain(i);
        }
        // A wake-up that is due before anything queued skips the queue.
        let mut direct: Option<(Nanos, usize)> = None;
        loop {
            let (at, payload) = match direct.take() {
                Some((at, i)) => (at, WAKE | i as u64),
                None => {
                    let Some(key) = self.queue.pop_until(until) else {
                        break;
                    };
                    (key_time(key), key as u64 & PAYLOAD)
                }
            };
            // The event is taken out of its slot only here, so a message is not
            // copied through temporaries on the way.
            let ev = if payload & WAKE != 0 {
                None
            } else {
                let slot = payload as usize;
                let Some(ev) = self.queue.slots.get_mut(slot).and_then(Option::take) else {
                    continue;
                };
                self.queue.free.push(slot as u32);
                Some(ev)
            };
            self.now = at;
            self.events += 1;
            let i = match ev {
                None => self.wake(at, (payload & !WAKE) as usize),
                Some(Ev::Deliver(env)) => {
                    let i = env.to.idx();
                    self.instances[i].handle_message(at, env);
                    i
                }
                Some(Ev::Io {
                    inst,
                    id,
                    result,
                    write,
                }) => {
                    if let Some(block) = write {
                        self.store.apply(*block);
                    }
                    self.instances[inst as usize].handle_io(at, id, result);
                    inst as usize
                }
            };
            self.perform(i);
            if self.nextvals.is_some() || self.seq_order.is_some() {
                for (seq, v) in self.instances[i].take_nextvals() {
                    if let Some(o) = self.seq_order.as_mut() {
                        let high = o.highest.entry(seq).or_insert(i64::MIN);
                        if v < *high {
                            o.counts[i].0 += 1;
                        }
                        *high = (*high).max(v);
                        if !o.seen.insert((seq, v)) {
                            o.counts[i].1 += 1;
                        }
                    }
                    if let Some(log) = self.nextvals.as_mut() {
                        log.push((at, i, seq, v));
                    }
                }
            }
            direct = self.rearm(i, Some(until)).map(|d| (d, i));
            if let Some(c) = self.checker.as_mut() {
                let history: Vec<Observation> = self
                    .instances
                    .iter_mut()
                    .flat_map(|x| x.take_history())
                    .collect();
                c.after_event(&self.instances, &history);
            }
        }
        self.now = self.now.max(until);
    }

    /// Instance `i`'s timer fired at `at`.
    fn wake(&mut self, at: Nanos, i: usize) -> usize {
        if self.armed[i] == Some(at) {
            self.armed[i] = None;
        }
        self.instances[i].handle_timeout(at);
        i
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
        if let Some((ooo, dup)) = self.seq_order.as_ref().and_then(|o| o.counts.get(i)) {
            st.add(fusion_core::stats::Stat::SeqValuesOutOfOrder, *ooo);
            st.add(fusion_core::stats::Stat::SeqValuesDuplicated, *dup);
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
        self.net.clear_faults();
        self.store.clear_faults();
        for f in faults {
            match f {
                Fault::DiskLatency {
                    instance,
                    device,
                    latency,
                    jitter,
                } => self.store.set_fault(
                    usize::from(*instance).saturating_sub(1),
                    *device,
                    *latency,
                    *jitter,
                ),
                Fault::NetworkLatency {
                    target,
                    latency,
                    jitter,
                } => self.net.add_latency(target, *latency, *jitter),
                Fault::Bandwidth { target, rate_bps } => self.net.set_bandwidth(target, *rate_bps),
                Fault::StressCpu { .. } => {}
            }
        }
    }

    /// Stop every workload and fault and let what is in flight land (blocks on
    /// the wire, commits waiting for LGWR), so the end-of-run checks see a
    /// cluster at rest rather than a block between two caches.
    pub fn quiesce(&mut self) {
        self.set_faults(&[]);
        for i in 0..self.instances.len() {
            self.command(
                i,
                Command::StressCpu {
                    workers: 0,
                    load_pct: 100,
                },
            );
            self.command(i, Command::EnableWorkloads(Some(Vec::new())));
        }
        let limit = self.now + 60 * fusion_core::config::NS_PER_S;
        while self.now < limit {
            let step = self.now + 100 * fusion_core::config::NS_PER_MS;
            self.run_until(step);
            let busy = self.instances.iter().any(|x| !x.sessions_at_rest());
            let on_wire = self
                .queue
                .slots
                .iter()
                .flatten()
                .any(|e| matches!(e, Ev::Deliver(_)));
            if !busy && !on_wire {
                break;
            }
        }
    }

    pub fn store(&self) -> &store::Store {
        &self.store
    }

    pub fn events(&self) -> u64 {
        self.events
    }
}

/// Run one variant through its phases and collect each phase's activity.
pub fn run_variant(name: &str, s: &Scenario, opts: &SimOptions) -> SimOutcome {
    let mut sim = Sim::new(s, opts);
    let mut phases = Vec::new();
    for phase in &s.phases {
        // The counters before the phase's own commands: what a command sets
        // off at once (a session woken by its workload starting counts its
        // first execution) belongs to the phase it starts.
        let start = sim.now();
        let before: Vec<Stats> = (0..sim.instances.len()).map(|i| sim.stats_of(i)).collect();
        // The same start of phase as the live runtime's.
        sim.set_faults(&phase.faults);
        for i in 0..sim.instances.len() {
            for cmd in phase.commands_for(i) {
                sim.command(i, cmd);
            }
        }
        sim.run_until(start + phase.duration);
        let instances = sim
            .instances
            .iter()
            .enumerate()
            .zip(&before)
            .map(|((i, x), b)| InstanceResult {
                id: x.id.number(),
                cpu_count: x.params().cpu_count,
                db_block_size: x.params().db_block_size,
                stats: sim.stats_of(i).since(b),
            })
            .collect();
        phases.push(PhaseResult {
            name: phase.name.clone(),
            start_ns: start,
            elapsed_ns: phase.duration,
            instances,
        });
    }
    // What the run did, before the checkers' quiet period below.
    let (events, simulated_ns) = (sim.events, sim.now);
    if opts.check {
        sim.quiesce();
    }
    let mut errors: Vec<String> = sim
        .instances
        .iter()
        .flat_map(|x| x.errors().iter().cloned())
        .collect();
    let check = sim.checker.take().map(|c| {
        let history: Vec<Observation> = sim
            .instances
            .iter_mut()
            .flat_map(|x| x.take_history())
            .collect();
        c.finish(&sim.instances, &sim.store, &history)
    });
    if let Some(c) = &check {
        errors.extend(c.violations.iter().cloned());
    }
    let transfers = phases
        .iter()
        .flat_map(|p: &PhaseResult| p.instances.iter())
        .map(|x| x.stats.get(Stat::GcCrBlocksReceived) + x.stats.get(Stat::GcCurrentBlocksReceived))
        .sum();
    SimOutcome {
        result: VariantResult {
            name: name.to_string(),
            phases,
        },
        events,
        simulated_ns,
        transfers,
        errors,
        check,
    }
}

/// Run every variant of a scenario and evaluate its expectations.
pub fn run_scenario(loaded: &LoadedScenario, opts: &SimOptions) -> (RunResult, Vec<SimOutcome>) {
    let outcomes: Vec<SimOutcome> = loaded
        .variants
        .iter()
        .map(|v| run_variant(&v.name, &v.scenario, opts))
        .collect();
    let variants: Vec<VariantResult> = outcomes.iter().map(|o| o.result.clone()).collect();
    let verdicts = fusion_report::evaluate(loaded, &variants);
    let seed = opts
        .seed
        .or_else(|| loaded.variants.first().map(|v| v.scenario.seed))
        .unwrap_or(0);
    let result = RunResult {
        scenario: loaded.name.clone(),
        title: loaded.title.clone(),
        myth: loaded.myth.clone(),
        seed,
        has_variants: loaded.has_variants,
        variants,
        verdicts,
    };
    (result, outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pop every event up to `until`, as (time, payload).
    fn drain(q: &mut Queue, until: Nanos) -> Vec<(Nanos, u64)> {
        std::iter::from_fn(|| q.pop_until(until))
            .map(|k| (key_time(k), k as u64 & PAYLOAD))
            .collect()
    }

    #[test]
    fn events_come_out_by_time_then_push_order_across_renumbering_and_overflow() {
        // Pseudo-random times, many ties, some far ahead; push in waves with
        // pops in between. The expected order is (time, push order).
        let mut q = Queue {
            seq_max: 2_000,
            ..Queue::default()
        };
        let mut expected: Vec<(Nanos, u64, u64)> = Vec::new();
        let mut got = Vec::new();
        let (mut x, mut now, mut order) = (7u64, 0, 0u64);
        for wave in 0..50u64 {
            // The first wave overflows the near vector.
            let n = if wave == 0 {
                NEAR_MAX as u64 + 100
            } else {
                64 + wave * 3
            };
            for _ in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = now + (x >> 33) % 50 + if x % 7 == 0 { 2 * FAR } else { 0 };
                let payload = order % WAKE;
                q.push_key(now, at, payload);
                expected.push((at, order, payload));
                order += 1;
            }
            now += 20;
            got.extend(drain(&mut q, now));
        }
        got.extend(drain(&mut q, Nanos::MAX));
        assert!(order > 3 * q.seq_max, "numbering ran out and was renewed");
        expected.sort();
        let expected: Vec<(Nanos, u64)> = expected.into_iter().map(|(t, _, p)| (t, p)).collect();
        assert_eq!(got, expected);
    }
}
