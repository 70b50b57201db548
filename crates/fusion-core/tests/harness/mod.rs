//! A small cluster for behaviour tests: two or three `Instance`s driven
//! through the driver interface only (`Instance::new`, `handle_message`,
//! `handle_io`, `handle_timeout`, `apply`, `poll_action`, `next_deadline`)
//! on a virtual clock, as quinn-proto's tests drive a `Pair` of connections.
//!
//! Everything around the instances is as simple as a test can want: a
//! network that delivers every message after one fixed latency, in send
//! order; a block store that is a map of block images (a write lands when
//! it is acknowledged) and accepts redo, acknowledging each write after a
//! fixed latency. The clock jumps from one event or deadline to the next.
//! Whatever crossed the wire or became durable is logged with its time, so
//! a test can say what happened before what.
//!
//! The cluster fails the test, with what it knows, when an instance reports
//! an error, when an instance asks to be woken in the past, or when it stops
//! making progress (many events without the clock moving).

#![allow(dead_code)] // Each test file uses its own part of the harness.

use std::collections::BTreeMap;
use std::sync::Arc;

use fusion_core::block::{Block, Body};
use fusion_core::config::{
    Access, Catalog, Costs, KeyDist, KeySpec, NS_PER_MS, NS_PER_US, Nanos, Params, Step, TableDef,
    TxnTemplate, WorkloadSpec,
};
use fusion_core::instance::{Command, Instance, InstanceConfig, Observation};
use fusion_core::layout::{self, Layout};
use fusion_core::msg::{Action, Envelope, Io, IoResult, RedoRecord};
use fusion_core::types::{BlockAddr, InstId};

/// Events handled at one instant before the cluster is declared livelocked.
const STEPS_PER_INSTANT_MAX: u64 = 100_000;

/// Fixed latencies of the world around the instances.
#[derive(Clone, Copy, Debug)]
pub struct Latencies {
    /// One way, for every message.
    pub net_ns: Nanos,
    pub read_ns: Nanos,
    pub write_ns: Nanos,
    /// From a redo write's request to its acknowledgement (durable).
    pub redo_ns: Nanos,
}

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies {
            net_ns: 200 * NS_PER_US,
            read_ns: NS_PER_MS,
            write_ns: NS_PER_MS,
            redo_ns: 500 * NS_PER_US,
        }
    }
}

/// Something the world saw, with the virtual time it happened.
#[derive(Clone, Debug)]
pub enum Seen {
    /// An instance sent a message (when the input that made it was handled).
    Sent { at: Nanos, env: Envelope },
    /// The store acknowledged a redo write: from `at` on it is durable.
    RedoDurable {
        at: Nanos,
        inst: InstId,
        records: Vec<RedoRecord>,
    },
    /// The store acknowledged a block write.
    BlockWritten {
        at: Nanos,
        inst: InstId,
        blk: BlockAddr,
    },
}

enum Event {
    Deliver(Envelope),
    IoDone {
        inst: usize,
        id: u64,
        result: IoResult,
        /// What becomes durable when the I/O is acknowledged.
        lands: Lands,
    },
}

enum Lands {
    Nothing,
    Block(Box<Block>),
    Redo(Vec<RedoRecord>),
}

/// Two or three instances, their network and their store.
pub struct Cluster {
    pub instances: Vec<Instance>,
    pub layout: Arc<Layout>,
    pub latencies: Latencies,
    /// Everything sent or made durable, in time order.
    pub seen: Vec<Seen>,
    /// What the instances observed (reads with their snapshot, writes,
    /// commits), by instance, in order.
    pub history: Vec<(InstId, Observation)>,
    now: Nanos,
    /// Pending deliveries and I/O completions by (time, order of scheduling).
    queue: BTreeMap<(Nanos, u64), Event>,
    sequence: u64,
    blocks: BTreeMap<BlockAddr, Block>,
    /// Events handled since the clock last moved.
    steps_at_instant: u64,
    /// The voting file (disk heartbeats).
    voting: fusion_core::voting::VotingFile,
    /// Hand a deadline over with `handle_timeouts_folded`: the instance
    /// goes on to its next ones itself while nothing else can happen.
    pub fold: bool,
    /// Deadlines an instance went on to itself (beyond the one handed over).
    pub went_on: u64,
    /// Nothing is handled past it (`run_until`'s end).
    until: Nanos,
}

impl Cluster {
    /// A cluster of `configs.len()` instances (all of one scenario).
    pub fn new(configs: Vec<InstanceConfig>, latencies: Latencies) -> Cluster {
        let layout = configs
            .first()
            .map(|c| c.layout.clone())
            .expect("a cluster has instances");
        let blocks = layout
            .initial_blocks()
            .into_iter()
            .map(|b| (b.addr, b))
            .collect();
        let count = configs.len();
        let mut cluster = Cluster {
            voting: fusion_core::voting::VotingFile::new(count),
            instances: configs.into_iter().map(Instance::new).collect(),
            layout,
            latencies,
            seen: Vec::new(),
            history: Vec::new(),
            now: 0,
            queue: BTreeMap::new(),
            sequence: 0,
            blocks,
            steps_at_instant: 0,
            fold: false,
            went_on: 0,
            until: Nanos::MAX,
        };
        // Starting sessions may already ask for something.
        for i in 0..cluster.instances.len() {
            cluster.after_input(i);
        }
        cluster
    }

    /// Give instance `i` (0-based) an administrative command now.
    pub fn apply(&mut self, i: usize, cmd: Command) {
        self.instances[i].apply(self.now, cmd);
        self.after_input(i);
    }

    /// Deliver `env` after the network's latency, as if a peer had sent it.
    pub fn send(&mut self, env: Envelope) {
        self.schedule(self.latencies.net_ns, Event::Deliver(env));
    }

    /// Handle every event and deadline up to `until`, then move the clock there.
    pub fn run_until(&mut self, until: Nanos) {
        self.until = until;
        while let Some(at) = self.next_at().filter(|&at| at <= until) {
            self.step(at);
        }
        self.until = Nanos::MAX;
        self.now = self.now.max(until);
    }

    /// Run until `done` holds, failing the test if it does not by `limit`.
    pub fn run_until_true(&mut self, limit: Nanos, mut done: impl FnMut(&Cluster) -> bool) {
        while !done(self) {
            match self.next_at() {
                Some(at) if at <= limit => self.step(at),
                next => panic!(
                    "not done by {} ms (next event: {:?} ns); sessions wait on: {}",
                    limit / NS_PER_MS,
                    next,
                    self.waits()
                ),
            }
        }
    }

    /// Every session of every instance finished its iterations.
    pub fn sessions_finished(&self) -> bool {
        self.instances.iter().all(Instance::sessions_finished)
    }

    /// The time of the next queued event or instance deadline.
    fn next_at(&self) -> Option<Nanos> {
        let queued = self.queue.keys().next().map(|&(at, _)| at);
        let deadline = self
            .instances
            .iter()
            .filter_map(Instance::next_deadline)
            .min();
        [queued, deadline].into_iter().flatten().min()
    }

    /// Handle what is due at `at`: queued events first (in the order they
    /// were scheduled), then the deadlines that have come.
    fn step(&mut self, at: Nanos) {
        if at > self.now {
            self.now = at;
            self.steps_at_instant = 0;
        }
        self.steps_at_instant += 1;
        assert!(
            self.steps_at_instant <= STEPS_PER_INSTANT_MAX,
            "livelock: {STEPS_PER_INSTANT_MAX} events at {} ns without the clock moving; \
             sessions wait on: {}",
            self.now,
            self.waits()
        );
        if let Some(entry) = self.queue.first_entry().filter(|e| e.key().0 <= at) {
            match entry.remove() {
                Event::Deliver(env) => {
                    let i = env.to.idx();
                    self.instances[i].handle_message(self.now, env);
                    self.after_input(i);
                }
                Event::IoDone {
                    inst,
                    id,
                    result,
                    lands,
                } => {
                    self.land(inst, lands);
                    self.instances[inst].handle_io(self.now, id, result);
                    self.after_input(inst);
                }
            }
            return;
        }
        for i in 0..self.instances.len() {
            if let Some(deadline) = self.instances[i].next_deadline() {
                assert!(
                    deadline >= self.now,
                    "inst{} asks to be woken at {deadline} ns, before now ({} ns)",
                    i + 1,
                    self.now
                );
                if deadline == self.now && self.fold {
                    // Nothing else happens before the next queued event,
                    // another instance's deadline or the end.
                    let others = (0..self.instances.len())
                        .filter(|&j| j != i)
                        .filter_map(|j| self.instances[j].next_deadline());
                    let quiet_until = self
                        .queue
                        .keys()
                        .next()
                        .map(|&(at, _)| at)
                        .into_iter()
                        .chain(others)
                        .chain([self.until.saturating_add(1)])
                        .min()
                        .unwrap_or(Nanos::MAX);
                    let (handled, reached) =
                        self.instances[i].handle_timeouts_folded(self.now, quiet_until);
                    self.went_on += u64::from(handled) - 1;
                    self.now = reached;
                    self.after_input(i);
                } else if deadline == self.now {
                    self.instances[i].handle_timeout(self.now);
                    self.after_input(i);
                }
            }
        }
    }

    /// Make a completed write durable and log it.
    fn land(&mut self, inst: usize, lands: Lands) {
        let inst_id = InstId(inst as u8);
        match lands {
            Lands::Nothing => {}
            Lands::Block(block) => {
                self.seen.push(Seen::BlockWritten {
                    at: self.now,
                    inst: inst_id,
                    blk: block.addr,
                });
                self.blocks.insert(block.addr, *block);
            }
            Lands::Redo(records) => self.seen.push(Seen::RedoDurable {
                at: self.now,
                inst: inst_id,
                records,
            }),
        }
    }

    /// After an input to instance `i`: fail on its errors, perform its
    /// actions and keep what it observed.
    fn after_input(&mut self, i: usize) {
        let errors = self.instances[i].errors();
        assert!(
            errors.is_empty(),
            "inst{} reported errors at {} ns: {errors:?}",
            i + 1,
            self.now
        );
        while let Some(action) = self.instances[i].poll_action() {
            self.perform(i, action);
        }
        let id = InstId(i as u8);
        let observed = self.instances[i].take_history();
        self.history.extend(observed.into_iter().map(|o| (id, o)));
    }

    fn perform(&mut self, i: usize, action: Action) {
        match action {
            Action::Send(env) => {
                self.seen.push(Seen::Sent {
                    at: self.now,
                    env: env.clone(),
                });
                self.schedule(self.latencies.net_ns, Event::Deliver(env));
            }
            Action::Io { id, io } => {
                let (latency_ns, result, lands) = match io {
                    Io::ReadBlock { blk } => (
                        self.latencies.read_ns,
                        IoResult::Read(Box::new(self.block(blk))),
                        Lands::Nothing,
                    ),
                    Io::ReadBlocks { first, count } => (
                        self.latencies.read_ns,
                        IoResult::ReadMany(
                            (first.0..first.0 + count)
                                .map(|a| self.block(BlockAddr(a)))
                                .collect(),
                        ),
                        Lands::Nothing,
                    ),
                    Io::WriteBlock { block } => (
                        self.latencies.write_ns,
                        IoResult::Written,
                        Lands::Block(block),
                    ),
                    Io::WriteRedo { records, .. } => (
                        self.latencies.redo_ns,
                        IoResult::Written,
                        Lands::Redo(records),
                    ),
                    Io::Vote { vote } => (
                        self.latencies.write_ns,
                        match self.voting.heartbeat(vote) {
                            Ok(votes) => IoResult::Votes(votes),
                            Err(_) => IoResult::Fenced,
                        },
                        Lands::Nothing,
                    ),
                    Io::Fence { inst } => {
                        self.voting.fence(inst);
                        (self.latencies.write_ns, IoResult::Written, Lands::Nothing)
                    }
                    Io::Unfence { inst } => {
                        self.voting.unfence(inst);
                        (self.latencies.write_ns, IoResult::Written, Lands::Nothing)
                    }
                    // The harness keeps no thread to read back: nothing to recover.
                    Io::ReadRedo { .. } => (
                        self.latencies.read_ns,
                        IoResult::Redo(Vec::new()),
                        Lands::Nothing,
                    ),
                };
                self.schedule(
                    latency_ns,
                    Event::IoDone {
                        inst: i,
                        id,
                        result,
                        lands,
                    },
                );
            }
        }
    }

    fn schedule(&mut self, delay_ns: Nanos, event: Event) {
        self.sequence += 1;
        self.queue
            .insert((self.now + delay_ns, self.sequence), event);
    }

    /// The store's image of a block (never written: unformatted).
    fn block(&self, blk: BlockAddr) -> Block {
        self.blocks
            .get(&blk)
            .cloned()
            .unwrap_or_else(|| Block::new(blk, Body::Unformatted))
    }

    /// What every instance's sessions wait on, for failure messages.
    fn waits(&self) -> String {
        let per_instance: Vec<String> = self
            .instances
            .iter()
            .enumerate()
            .map(|(i, x)| format!("inst{}: {:?}", i + 1, x.current_waits()))
            .collect();
        per_instance.join("; ")
    }

    /// Messages sent so far, with their send time.
    pub fn sent(&self) -> impl Iterator<Item = (Nanos, &Envelope)> {
        self.seen.iter().filter_map(|s| match s {
            Seen::Sent { at, env } => Some((*at, env)),
            _ => None,
        })
    }

    /// When a redo write of `inst` holding a change to `blk` first became durable.
    pub fn redo_durable_at(&self, inst: InstId, blk: BlockAddr) -> Option<Nanos> {
        self.seen.iter().find_map(|s| match s {
            Seen::RedoDurable {
                at,
                inst: from,
                records,
            } if *from == inst && records.iter().any(|r| r.blk == Some(blk)) => Some(*at),
            _ => None,
        })
    }
}

// ----- a schema and workloads for the tests -----------------------------------------

/// The one table of the tests: `rows` rows, `rows_per_block` to a block, all
/// starting at value 0, with a B-tree index on the key that fits one leaf.
pub fn catalog(rows: u64, rows_per_block: u32) -> Catalog {
    let mut index = layout::btree("T_PK", 0, 1000, 1000);
    index.free_blocks_per_instance = 4;
    let table = TableDef {
        free_blocks_per_instance: 4,
        ..layout::table("T", rows, rows_per_block)
    };
    Catalog {
        tables: vec![table],
        indexes: vec![index],
        sequences: Vec::new(),
    }
}

/// The index of `catalog`, as a step's access path.
pub const BY_KEY: Access = Access::Index(0);

/// One key of the table.
pub fn key(k: u64) -> KeySpec {
    KeySpec {
        dist: KeyDist::Uniform,
        range: Some((k, k)),
        org: None,
    }
}

pub fn read(k: u64) -> Step {
    Step::Read {
        table: 0,
        access: BY_KEY,
        keys: key(k),
        rows: 1,
    }
}

pub fn update(k: u64) -> Step {
    Step::Update {
        table: 0,
        access: BY_KEY,
        keys: key(k),
        rows: 1,
    }
}

pub fn think_ms(ms: u64) -> Step {
    Step::Think {
        time: ms * NS_PER_MS,
    }
}

/// One session on instance `inst` (1-based) running `steps` as one
/// transaction, `iterations` times, `think_ms` apart.
pub fn workload(
    name: &str,
    inst: u8,
    steps: Vec<Step>,
    iterations: u64,
    think_ms: u64,
) -> WorkloadSpec {
    WorkloadSpec {
        name: name.to_string(),
        instances: vec![inst],
        sessions_per_instance: 1,
        think_time: think_ms * NS_PER_MS,
        transactions: vec![TxnTemplate {
            name: name.to_string(),
            weight: 1,
            steps,
        }],
        iterations: Some(iterations),
        row_locks: Default::default(),
    }
}

/// Configurations for `instances` instances sharing `catalog` and
/// `workloads`. Each block has its own master (`_lm_contiguous_res_count`
/// = 1), so a test can pick which instance masters the block it uses.
pub fn configs(
    instances: u8,
    catalog: Catalog,
    workloads: Vec<WorkloadSpec>,
) -> Vec<InstanceConfig> {
    let params = Params {
        lm_contiguous_res_count: CONTIGUOUS_BLOCKS,
        ..Params::default()
    };
    let layout = Arc::new(layout(instances, &catalog));
    let catalog = Arc::new(catalog);
    let workloads = Arc::new(workloads);
    (0..instances)
        .map(|i| InstanceConfig {
            id: InstId(i),
            instances,
            params: params.clone(),
            costs: Costs::default(),
            catalog: catalog.clone(),
            layout: layout.clone(),
            workloads: workloads.clone(),
            seed: 7,
            record_history: true,
            delivery: fusion_core::instance::Delivery::Direct,
            life: 0,
            server: None,
        })
        .collect()
}

/// `_lm_contiguous_res_count` of the tests: every block hashes to its own master.
const CONTIGUOUS_BLOCKS: u32 = 1;

/// The layout `configs` gives the instances.
pub fn layout(instances: u8, catalog: &Catalog) -> Layout {
    Layout::new(catalog, instances, CONTIGUOUS_BLOCKS)
}

/// The first key of the table whose block instance `master` masters, with its block.
pub fn key_mastered_by(layout: &Layout, master: InstId) -> (u64, BlockAddr) {
    let rows = layout.tables[0].initial_rows;
    (1..=rows)
        .find_map(|k| {
            let blk = layout.initial_rowid(0, k)?.blk;
            (layout.master(blk) == master).then_some((k, blk))
        })
        .unwrap_or_else(|| panic!("no block of the table is mastered by {master}"))
}
