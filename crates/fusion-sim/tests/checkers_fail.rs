//! The checkers can fail: situations where a violation must be reported.
//!
//! Two kinds of evidence:
//! - fabricated observations fed to a `ConsistencyChecker` (a read that contradicts the
//!   committed history, a read that misses its own change, a committed write
//!   that no image holds), next to the same history made consistent, which
//!   must pass; and a wrong read slipped into a checked run as it goes;
//! - real instances driven by a small driver written here (the instance is
//!   sans-IO, so any driver can run it): two single-instance "clusters" that
//!   each believe they own the same block in X (coherence), and a cluster over
//!   a block store that silently drops datafile writes (re-read blocks come
//!   back old: stale reads), next to the same cluster over a faithful store,
//!   which must pass.
//!
//! The final checks look up the newest image of a block in the instances'
//! caches, then in the store's images (here the initial ones, or the test
//! driver's own store).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use fusion_check::{CheckReport, ConsistencyChecker};
use fusion_core::block::Block;
use fusion_core::config::{
    Catalog, Costs, IndexDef, KeyDist, NS_PER_MS, NS_PER_US, Nanos, Params, Step, TableDef,
    WorkloadSpec,
};
use fusion_core::instance::{BufState, Instance, InstanceConfig, Observation};
use fusion_core::layout::Layout;
use fusion_core::msg::{Action, Envelope, Io, IoResult};
use fusion_core::types::Scn;
use fusion_core::types::{InstId, Xid};
use fusion_scenario::Scenario;
use fusion_sim::{Sim, SimOptions, run_variant};
use fusion_testkit::{
    ScenarioBuilder, btree, phase, quiet_phase, read_by_index, table, txn, update_by_index,
};

// ----- a small cluster definition ------------------------------------------------------

const ROWS: u64 = 400;
const ROWS_PER_BLOCK: u32 = 10;

fn catalog() -> Catalog {
    Catalog {
        tables: vec![TableDef {
            free_blocks_per_instance: 2,
            ..table("t", ROWS, ROWS_PER_BLOCK)
        }],
        indexes: vec![IndexDef {
            free_blocks_per_instance: 2,
            ..btree("t_pk", 0, 32, 32)
        }],
        sequences: Vec::new(),
    }
}

fn params(buffers: u64) -> Params {
    Params {
        gcs_server_processes: 1,
        ..fusion_testkit::params(2, buffers)
    }
}

/// One session per instance (no concurrency inside an instance): reads and
/// read-modify-write updates of uniformly drawn keys.
fn workload(instances: u8, sessions: u32) -> WorkloadSpec {
    fusion_testkit::workload(
        "w",
        instances,
        sessions,
        200 * NS_PER_US,
        vec![
            txn(
                "read",
                1,
                vec![read_by_index(KeyDist::Uniform, 4), Step::Commit],
            ),
            txn(
                "update",
                1,
                vec![update_by_index(KeyDist::Uniform, 2), Step::Commit],
            ),
        ],
    )
}

fn scenario(instances: u8, buffers: u64, ms: u64) -> Scenario {
    ScenarioBuilder::new(instances)
        .params(params(buffers))
        .catalog(catalog())
        .workload(workload(instances, 1))
        .phase(phase("run", ms * NS_PER_MS))
        .build()
}

fn layout(instances: u8) -> Arc<Layout> {
    Arc::new(Layout::new(
        &catalog(),
        instances,
        Params::default().lm_contiguous_res_count,
    ))
}

/// A simulator that has not run: its store holds the initial images (every row 0).
fn pristine(instances: u8) -> Sim {
    Sim::new(&scenario(instances, 64, 1), &SimOptions::default())
}

fn xid(inst: u8, seq: u64) -> Xid {
    Xid::new(InstId(inst), seq)
}

fn with(report: &CheckReport, needle: &str) -> Vec<String> {
    report
        .violations
        .iter()
        .filter(|v| v.contains(needle))
        .cloned()
        .collect()
}

// ----- fabricated histories ------------------------------------------------------------

/// Key 5 of table 0: written to 1 by transaction 1.1, committed at SCN 10, and
/// written to 2 by 1.2, committed at SCN 20. The store still holds 0, so the
/// histories below stay clear of the lost-write check by writing the key back
/// to 0 last (1.3, committed at 30) unless a test wants that check to fire.
fn committed_history() -> Vec<Observation> {
    vec![
        Observation::Write {
            xid: xid(0, 1),
            table: 0,
            key: 5,
            val: 1,
        },
        Observation::Commit {
            xid: xid(0, 1),
            scn: Scn(10),
        },
        Observation::Write {
            xid: xid(0, 2),
            table: 0,
            key: 5,
            val: 2,
        },
        Observation::Commit {
            xid: xid(0, 2),
            scn: Scn(20),
        },
    ]
}

fn back_to_zero() -> Vec<Observation> {
    vec![
        Observation::Write {
            xid: xid(0, 3),
            table: 0,
            key: 5,
            val: 0,
        },
        Observation::Commit {
            xid: xid(0, 3),
            scn: Scn(30),
        },
    ]
}

fn read(snapshot: u64, val: i64) -> Observation {
    Observation::Read {
        xid: Xid::NONE,
        snapshot: Scn(snapshot),
        table: 0,
        key: 5,
        val: Some(val),
    }
}

/// Feed a history one observation per event, as a run would, and finish
/// against the initial images.
fn check(history: &[Observation]) -> CheckReport {
    let sim = pristine(2);
    let mut c = ConsistencyChecker::new(layout(2));
    for o in history {
        c.take(std::slice::from_ref(o));
        c.coherence(sim.instances());
    }
    let stored = sim.stored_blocks();
    c.finish_with(|blk| {
        stored
            .get(blk.idx())
            .map(|b| (b.clone(), "the store".to_string()))
    })
}

#[test]
fn consistent_reads_pass() {
    let mut h = committed_history();
    // Each snapshot sees the newest version committed at or before it.
    h.extend([
        read(5, 0),
        read(9, 0),
        read(10, 1),
        read(19, 1),
        read(20, 2),
        read(29, 2),
    ]);
    h.extend(back_to_zero());
    h.push(read(30, 0));
    let r = check(&h);
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.reads_checked, 7);
    assert_eq!(r.commits, 3);
}

#[test]
fn a_read_older_than_its_snapshot_is_reported() {
    let mut h = committed_history();
    h.push(read(25, 1)); // 2 was committed at 20 <= 25
    h.extend(back_to_zero());
    let r = check(&h);
    let v = with(&r, "CR read");
    assert_eq!(v.len(), 1, "{:?}", r.violations);
    assert!(
        v[0].contains("snapshot 25")
            && v[0].contains("returned Some(1)")
            && v[0].contains("expected Some(2)"),
        "{v:?}"
    );
}

#[test]
fn a_read_of_a_change_committed_after_its_snapshot_is_reported() {
    let mut h = committed_history();
    h.push(read(15, 2)); // 2 was committed at 20 > 15: the reader saw the future
    h.extend(back_to_zero());
    let r = check(&h);
    let v = with(&r, "CR read");
    assert_eq!(v.len(), 1, "{:?}", r.violations);
    assert!(
        v[0].contains("returned Some(2)") && v[0].contains("expected Some(1)"),
        "{v:?}"
    );
}

#[test]
fn a_dirty_read_of_an_uncommitted_change_is_reported() {
    let mut h = committed_history();
    h.push(Observation::Write {
        xid: xid(1, 7),
        table: 0,
        key: 5,
        val: 99,
    }); // never commits
    h.push(read(50, 99));
    h.extend(back_to_zero());
    let r = check(&h);
    let v = with(&r, "CR read");
    assert_eq!(v.len(), 1, "{:?}", r.violations);
    assert!(v[0].contains("returned Some(99)"), "{v:?}");
}

#[test]
fn a_read_of_a_missing_row_is_reported() {
    let mut h = committed_history();
    h.push(Observation::Read {
        xid: Xid::NONE,
        snapshot: Scn(25),
        table: 0,
        key: 6,
        val: None,
    }); // key 6 exists (value 0)
    h.extend(back_to_zero());
    let r = check(&h);
    assert_eq!(with(&r, "key 6").len(), 1, "{:?}", r.violations);
}

#[test]
fn a_transaction_that_misses_its_own_change_is_reported() {
    let mut h = committed_history();
    let me = xid(1, 4);
    h.push(Observation::Write {
        xid: me,
        table: 0,
        key: 5,
        val: 3,
    });
    // At snapshot 25 the committed value is 2, but the reader changed the row to 3.
    h.push(Observation::Read {
        xid: me,
        snapshot: Scn(25),
        table: 0,
        key: 5,
        val: Some(2),
    });
    h.push(Observation::Read {
        xid: me,
        snapshot: Scn(25),
        table: 0,
        key: 5,
        val: Some(3),
    }); // right
    h.push(Observation::Commit {
        xid: me,
        scn: Scn(26),
    });
    h.extend(back_to_zero());
    let r = check(&h);
    let v = with(&r, "its own change");
    assert_eq!(v.len(), 1, "{:?}", r.violations);
    assert!(
        v[0].contains("returned Some(2)") && v[0].contains("its own change was 3"),
        "{v:?}"
    );
}

#[test]
fn a_committed_write_no_image_holds_is_a_lost_write() {
    // Nobody holds the block, and the store still has 0.
    let r = check(&committed_history());
    let v = with(&r, "lost write");
    assert_eq!(v.len(), 1, "{:?}", r.violations);
    assert!(
        v[0].contains("key 5") && v[0].contains("holds Some(0)") && v[0].contains("last written 2"),
        "{v:?}"
    );
    assert!(r.rows_checked >= 1);
}

/// A committed insert whose key no index entry holds (an entry lost, or never
/// made because the index ran out of blocks).
#[test]
fn a_committed_key_missing_from_the_index_is_reported() {
    let mut h = committed_history();
    h.extend(back_to_zero());
    h.push(Observation::Write {
        xid: xid(0, 4),
        table: 0,
        key: ROWS + 1,
        val: 0,
    });
    h.push(Observation::Commit {
        xid: xid(0, 4),
        scn: Scn(40),
    });
    let r = check(&h);
    let v = with(&r, "index 0");
    assert_eq!(v.len(), 1, "{:?}", r.violations);
    assert!(
        v[0].contains(&format!("committed key {} appears 0 times", ROWS + 1)),
        "{v:?}"
    );
    assert_eq!(r.index_entries_checked, ROWS);
    // The same key written by a transaction that never committed may be missing.
    h.pop();
    assert!(with(&check(&h), "index 0").is_empty());
}

/// Leaf entries out of order, an entry pointing at the wrong row, a key twice:
/// each is reported from the images the checker is given.
#[test]
fn a_broken_index_structure_is_reported() {
    let sim = pristine(1);
    let lay = layout(1);
    let root = lay.indexes[0].root;
    let store = sim.stored_blocks();
    let first_leaf = store
        .get(root.idx())
        .and_then(|b| b.child_for(0))
        .expect("the root is a branch");
    let run = |edit: &dyn Fn(&mut Block)| {
        ConsistencyChecker::new(lay.clone()).finish_with(|blk| {
            let mut b = store.get(blk.idx())?.clone();
            if blk == first_leaf {
                edit(&mut b);
            }
            Some((b, "the store".to_string()))
        })
    };
    let entries = |b: &mut Block| match b.body_mut() {
        fusion_core::block::Body::Leaf { entries, .. } => entries.clone(),
        _ => panic!("not a leaf"),
    };
    let set = |b: &mut Block, e: Vec<fusion_core::block::LeafEntry>| {
        if let fusion_core::block::Body::Leaf { entries, .. } = b.body_mut() {
            *entries = e;
        }
    };
    // The pristine index passes.
    let r = run(&|_| {});
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    assert_eq!(r.index_entries_checked, ROWS);
    let r = run(&|b| {
        let mut e = entries(b);
        e.swap(0, 1);
        set(b, e);
    });
    assert!(!with(&r, "out of order").is_empty(), "{:?}", r.violations);
    let r = run(&|b| {
        let mut e = entries(b);
        e[2].rowid = e[3].rowid;
        set(b, e);
    });
    assert!(
        !with(&r, "entry for key 3 points at").is_empty(),
        "{:?}",
        r.violations
    );
    let r = run(&|b| {
        let mut e = entries(b);
        e.remove(4);
        set(b, e);
    });
    assert!(
        !with(&r, "committed key 5 appears 0 times").is_empty(),
        "{:?}",
        r.violations
    );
}

#[test]
fn the_checker_caps_its_report_but_keeps_counting() {
    let mut h = committed_history();
    for i in 0..100u64 {
        h.push(read(25 + i, 7));
    }
    h.extend(back_to_zero());
    let r = check(&h);
    assert_eq!(r.reads_checked, 100);
    assert!(
        !r.violations.is_empty() && r.violations.len() <= 20,
        "{} violations",
        r.violations.len()
    );
}

// ----- real instances under a driver written here --------------------------------------

enum Ev {
    Deliver(Envelope),
    Io {
        inst: usize,
        id: u64,
        result: IoResult,
        write: Option<Box<Block>>,
    },
    Wake(usize),
}

/// How the test driver's block store behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Storage {
    Faithful,
    /// Datafile writes complete but are never applied: reads return the initial images.
    DropsWrites,
}

/// A minimal deterministic driver for one cluster: fixed wire latency (FIFO
/// per link) and I/O latency, one event queue, the checker after every event.
struct Driver {
    now: Nanos,
    heap: BinaryHeap<Reverse<(Nanos, u64)>>,
    evs: BTreeMap<u64, Ev>,
    seq: u64,
    insts: Vec<Instance>,
    armed: Vec<Option<Nanos>>,
    store: Vec<Block>,
    storage: Storage,
    link_free: Vec<Nanos>,
    voting: fusion_core::voting::VotingFile,
    checker: Option<ConsistencyChecker>,
}

impl Driver {
    fn new(
        size: u8,
        buffers: u64,
        sessions: u32,
        seed: u64,
        storage: Storage,
        check: bool,
    ) -> Driver {
        Driver::with_workload(
            size,
            buffers,
            seed,
            storage,
            check,
            workload(size, sessions),
        )
    }

    fn with_workload(
        size: u8,
        buffers: u64,
        seed: u64,
        storage: Storage,
        check: bool,
        work: WorkloadSpec,
    ) -> Driver {
        let cat = Arc::new(catalog());
        let layout = layout(size);
        let wl = Arc::new(vec![work]);
        let insts: Vec<Instance> = (0..size)
            .map(|i| {
                Instance::new(InstanceConfig {
                    id: InstId(i),
                    instances: size,
                    params: params(buffers),
                    costs: Costs::default(),
                    catalog: cat.clone(),
                    layout: layout.clone(),
                    workloads: wl.clone(),
                    seed,
                    record_history: true,
                    delivery: fusion_core::instance::Delivery::Direct,
                    life: 0,
                    server: None,
                })
            })
            .collect();
        let n = insts.len();
        Driver {
            now: 0,
            heap: BinaryHeap::new(),
            evs: BTreeMap::new(),
            seq: 0,
            insts,
            armed: vec![None; n],
            store: layout.initial_blocks(),
            storage,
            link_free: vec![0; n * n],
            voting: fusion_core::voting::VotingFile::new(n),
            checker: check.then(|| ConsistencyChecker::new(layout.clone())),
        }
    }

    fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.evs.insert(self.seq, ev);
        self.heap.push(Reverse((at, self.seq)));
    }

    fn drain(&mut self, i: usize) {
        while let Some(a) = self.insts[i].poll_action() {
            match a {
                Action::Send(env) => {
                    let link = env.from.idx() * self.insts.len() + env.to.idx();
                    let at = (self.now + 50_000).max(self.link_free[link]);
                    self.link_free[link] = at;
                    self.push(at, Ev::Deliver(env));
                }
                Action::Io { id, io } => {
                    let (at, result, write) = match io {
                        Io::ReadBlock { blk } => {
                            let b = self.store[blk.idx()].clone();
                            (self.now + NS_PER_MS, IoResult::Read(Box::new(b)), None)
                        }
                        Io::ReadBlocks { first, count } => {
                            let blocks = (first.idx()..first.idx() + count as usize)
                                .map(|a| self.store[a].clone())
                                .collect();
                            (self.now + NS_PER_MS, IoResult::ReadMany(blocks), None)
                        }
                        Io::WriteBlock { block } => {
                            (self.now + NS_PER_MS, IoResult::Written, Some(block))
                        }
                        Io::WriteRedo { .. } => (self.now + NS_PER_MS / 2, IoResult::Written, None),
                        Io::Vote { vote } => {
                            let r = match self.voting.heartbeat(vote) {
                                Ok(votes) => IoResult::Votes(votes),
                                Err(_) => IoResult::Fenced,
                            };
                            (self.now + NS_PER_MS, r, None)
                        }
                        Io::Fence { inst } => {
                            self.voting.fence(inst);
                            (self.now + NS_PER_MS, IoResult::Written, None)
                        }
                        Io::Unfence { inst } => {
                            self.voting.unfence(inst);
                            (self.now + NS_PER_MS, IoResult::Written, None)
                        }
                        // This harness keeps no redo: nothing to recover.
                        Io::ReadRedo { .. } => {
                            (self.now + NS_PER_MS, IoResult::Redo(Vec::new()), None)
                        }
                    };
                    self.push(
                        at,
                        Ev::Io {
                            inst: i,
                            id,
                            result,
                            write,
                        },
                    );
                }
            }
        }
        if let Some(d) = self.insts[i].next_deadline()
            && self.armed[i].is_none_or(|a| d < a)
        {
            self.armed[i] = Some(d);
            self.push(d, Ev::Wake(i));
        }
    }

    fn run_until(&mut self, until: Nanos) {
        for i in 0..self.insts.len() {
            self.drain(i);
        }
        while let Some(&Reverse((at, seq))) = self.heap.peek() {
            if at > until {
                break;
            }
            self.heap.pop();
            let Some(ev) = self.evs.remove(&seq) else {
                continue;
            };
            self.now = at;
            let i = match ev {
                Ev::Deliver(env) => {
                    let i = env.to.idx();
                    self.insts[i].handle_message(at, env);
                    i
                }
                Ev::Io {
                    inst,
                    id,
                    result,
                    write,
                } => {
                    if let Some(b) = write
                        && self.storage == Storage::Faithful
                        && b.scn >= self.store[b.addr.idx()].scn
                    {
                        let a = b.addr.idx();
                        self.store[a] = *b;
                    }
                    self.insts[inst].handle_io(at, id, result);
                    inst
                }
                Ev::Wake(i) => {
                    if self.armed[i] == Some(at) {
                        self.armed[i] = None;
                    }
                    self.insts[i].handle_timeout(at);
                    i
                }
            };
            self.drain(i);
            if let Some(c) = self.checker.as_mut() {
                c.after_event(&mut self.insts);
            }
        }
    }

    /// The final checks, against this driver's own store (a store that
    /// drops every write still holds the initial images).
    fn finish(mut self) -> CheckReport {
        let c = self.checker.take().expect("driver built with the checker");
        c.finish(&mut self.insts, &self.store)
    }
}

/// Two single-instance clusters over the same database each believe they own
/// every block they change: together they hold the hot blocks in X twice.
#[test]
fn two_exclusive_holders_of_a_block_are_reported() {
    let mut pair = Vec::new();
    for seed in [1, 2] {
        let mut d = Driver::new(1, 200, 2, seed, Storage::Faithful, false);
        d.run_until(300 * NS_PER_MS);
        pair.append(&mut d.insts);
    }
    let both_x = (0..layout(1).total_blocks).any(|a| {
        pair.iter().all(|x| {
            x.buffers_of(fusion_core::types::BlockAddr(a))
                .any(|b| b.state() == BufState::Xcur)
        })
    });
    assert!(
        both_x,
        "the two clusters never held the same block in X (the test lost its premise)"
    );
    let initial = layout(1).initial_blocks();
    // Only coherence is in question: the histories are not.
    for x in &mut pair {
        x.take_history();
    }
    let mut c = ConsistencyChecker::new(layout(1));
    c.coherence(&pair);
    let r = c.finish(&mut pair[..1], &initial);
    let v = with(&r, "coherence");
    assert!(
        !v.is_empty(),
        "no coherence violation reported: {:?}",
        r.violations
    );
    assert!(v[0].contains("held in X by 2"), "{v:?}");
    // Either instance alone is coherent.
    let (first, second) = pair.split_at_mut(1);
    for one in [first, second] {
        let mut c = ConsistencyChecker::new(layout(1));
        c.coherence(one);
        let r = c.finish(one, &initial);
        assert!(with(&r, "coherence").is_empty(), "{:?}", r.violations);
    }
}

/// A block store that acknowledges datafile writes but never applies them:
/// once a written block ages out of the cache, the next read brings back the
/// initial image. The checker must see stale reads and lost writes.
#[test]
fn a_store_that_drops_writes_is_caught() {
    // A tiny cache (the minimum of 16 buffers) over 40 table blocks forces
    // DBWR writes and re-reads from disk.
    let mut d = Driver::new(2, 16, 1, 1, Storage::DropsWrites, true);
    d.run_until(3_000 * NS_PER_MS);
    let r = d.finish();
    assert!(r.commits > 50, "too little work: {} commits", r.commits);
    assert!(
        !with(&r, "CR read").is_empty(),
        "a store that drops every write went unnoticed ({} commits, {} reads checked)",
        r.commits,
        r.reads_checked
    );
}

/// Updates only, over a store that drops its writes: an update that finds
/// its block aged out reads the initial image back and computes its new
/// value from an undone one (a lost update). No session reads, so only the
/// value each update overwrote, checked as a read at the change's SCN, can
/// show it before the end.
#[test]
fn an_update_of_an_undone_value_is_caught_as_it_happens() {
    let updates = fusion_testkit::workload(
        "u",
        2,
        1,
        200 * NS_PER_US,
        vec![txn(
            "update",
            1,
            vec![update_by_index(KeyDist::Uniform, 2), Step::Commit],
        )],
    );
    for (storage, lost) in [(Storage::DropsWrites, true), (Storage::Faithful, false)] {
        let mut d = Driver::with_workload(2, 16, 1, storage, true, updates.clone());
        d.run_until(3_000 * NS_PER_MS);
        let r = d.finish();
        assert!(r.commits > 50, "too little work: {} commits", r.commits);
        // Readers with a transaction: the updates themselves.
        let by_updates: Vec<String> = with(&r, "CR read by ")
            .into_iter()
            .filter(|v| !v.contains(&format!("CR read by {} ", Xid::NONE)))
            .collect();
        assert_eq!(
            !by_updates.is_empty(),
            lost,
            "{storage:?}: {} commits, {:?}",
            r.commits,
            r.violations
        );
    }
}

/// The control: the same cluster, same work, same driver and seed over a
/// store that applies its writes: every read is consistent.
#[test]
fn the_same_work_over_a_faithful_store_reads_consistently() {
    let mut d = Driver::new(2, 16, 1, 1, Storage::Faithful, true);
    d.run_until(3_000 * NS_PER_MS);
    let r = d.finish();
    assert!(r.commits > 50, "too little work: {} commits", r.commits);
    assert!(with(&r, "CR read").is_empty(), "{:?}", r.violations);
}

/// A read that contradicts the history, slipped into a checked run as it
/// goes (the checker drains the instances after every event and verifies
/// reads as it takes them): reported, among no other violation.
#[test]
fn a_wrong_read_in_the_middle_of_a_checked_run_is_caught() {
    let mut d = Driver::new(2, 16, 1, 1, Storage::Faithful, true);
    d.run_until(1_000 * NS_PER_MS);
    // Key 7 at snapshot 0 is the initial 0, whatever the run did since.
    let wrong = Observation::Read {
        xid: Xid::NONE,
        snapshot: Scn(0),
        table: 0,
        key: 7,
        val: Some(12_345),
    };
    d.checker
        .as_mut()
        .expect("driver built with the checker")
        .take(&[wrong]);
    d.run_until(2_000 * NS_PER_MS);
    let r = d.finish();
    assert!(r.commits > 50, "too little work: {} commits", r.commits);
    assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    assert!(
        r.violations[0]
            .contains("at snapshot 0 of table 0 key 7 returned Some(12345), expected Some(0)"),
        "{:?}",
        r.violations
    );
}

/// The same work in the simulator (its own faithful store) passes every check.
#[test]
fn the_same_work_in_the_simulator_passes() {
    let mut s = scenario(2, 16, 3_000);
    // Quiesce before the final check so no block is on the wire.
    s.phases.push(quiet_phase("quiesce", 300 * NS_PER_MS));
    let o = run_variant("control", &s, &SimOptions::checked());
    let r = o.check.expect("checked");
    assert!(r.commits > 50, "too little work: {} commits", r.commits);
    assert!(r.reads_checked > 100);
    assert!(
        o.errors.is_empty() && r.violations.is_empty(),
        "{:?}",
        o.errors
    );
}
