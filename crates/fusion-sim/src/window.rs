//! One run on several threads, with the serial run's result byte for byte.
//!
//! Instances touch each other only through the network and the store, and
//! nothing sent or asked of the store arrives sooner than the lookahead: the
//! shortest message latency or I/O time (`Sim::lookahead_ns`, 0 makes the run serial). So the
//! events before `t0 + lookahead` (`t0` the next event's time) are known
//! when a window starts, and each instance can process its own share alone,
//! on any thread: a *lane*. What an event asks of the cluster (a send, an
//! I/O, a write landing, a sequence value, a later wake-up) is recorded, not
//! done. At the window's end the lanes' events are merged into the order the
//! serial loop would have processed them in, and the records are replayed in
//! that order: the network's and the store's random draws, the queue's
//! sequence numbers and every arrival time come out exactly as serially.
//!
//! The serial order is (time, sequence number), a number given at push
//! time. An event queued before the window keeps its key. A wake-up an
//! instance queues for itself inside the window was pushed after all of
//! those, so at equal times it comes after them, and two such wake-ups come
//! in the order of the events that pushed them: the merge ranks events as it
//! goes, and a wake-up compares by the rank of its pusher.
//!
//! A fence reaching the voting file ([`Ev::Fence`]) changes what a write
//! landing anywhere does: a window ends before it and it is applied alone.

use fusion_core::block::Block;
use fusion_core::config::Nanos;
use fusion_core::instance::Instance;
use fusion_core::msg::Action;
use fusion_core::types::InstId;
use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::life::Life;
use crate::queue::{Ev, Key, Taken, key_time};
use crate::{Sim, step};

/// The worker threads and each instance's lane, kept between windows so a
/// window allocates nothing once they have grown.
pub(crate) struct Lanes {
    pool: std::sync::Arc<rayon::ThreadPool>,
    lanes: Vec<Lane>,
    /// The merge's heap of lane heads: (time, class, order, lane).
    heads: BinaryHeap<Reverse<(Nanos, u8, u64, u32)>>,
    /// Per lane: its next record to merge.
    cursor: Vec<usize>,
}

/// One instance's share of a window.
#[derive(Default)]
struct Lane {
    /// Its events queued before the window, in their order.
    inputs: VecDeque<(Key, Option<Ev>)>,
    /// Wake-ups it queued for itself that fall inside the window: (time,
    /// the record of the event that queued it), in (time, push) order.
    wakes: VecDeque<(Nanos, u32)>,
    /// The events it processed, in its order.
    recs: Vec<Rec>,
    /// The merge's rank of each record.
    ranks: Vec<u64>,
    /// What the events asked of the cluster, record after record.
    outs: VecDeque<Out>,
}

/// One processed event.
struct Rec {
    at: Nanos,
    origin: Origin,
    /// How many of `Lane::outs` are this event's.
    outs: u32,
}

enum Origin {
    /// Queued before the window: its key's low word orders it.
    Queued(u64),
    /// A wake-up queued inside the window by record `.0` of the same lane.
    Woken(u32),
}

/// What an event asked of the cluster.
enum Out {
    Act(Action),
    /// A datafile write reached the disk.
    Landed(Box<Block>),
    Nextval(u32, i64),
    /// A wake-up after the window's end, for the queue.
    Wake(Nanos),
}

/// What a lane needs to know of the window: the same for every lane.
#[derive(Clone, Copy)]
struct Window {
    /// Wake-ups at or after this time wait for a later window.
    wake_end: Nanos,
    nextvals: bool,
}

impl Lanes {
    /// `threads` workers (at least 2) for `instances` lanes; an error when
    /// the system refuses the threads.
    pub(crate) fn new(threads: usize, instances: usize) -> Result<Lanes, String> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|n| format!("fusion-sim-lane-{n}"))
            .build()
            .map_err(|e| format!("cannot start {threads} simulator threads: {e}"))?;
        Ok(Lanes {
            pool: std::sync::Arc::new(pool),
            lanes: (0..instances).map(|_| Lane::default()).collect(),
            heads: BinaryHeap::new(),
            cursor: vec![0; instances],
        })
    }
}

impl Lane {
    /// Process this instance's events of the window, in order, recording
    /// what they ask of the cluster.
    fn run(
        &mut self,
        x: &mut Instance,
        life: &mut Life,
        armed: &mut Option<Nanos>,
        fenced: bool,
        w: Window,
    ) {
        loop {
            // An event queued before the window comes first at equal times.
            let wake_first = match (self.inputs.front(), self.wakes.front()) {
                (Some(&(k, _)), Some(&(t, _))) => t < key_time(k),
                (None, Some(_)) => true,
                (_, None) => false,
            };
            let (at, origin, ev) = if wake_first {
                let Some((t, pusher)) = self.wakes.pop_front() else {
                    break;
                };
                (t, Origin::Woken(pusher), None)
            } else {
                let Some((k, ev)) = self.inputs.pop_front() else {
                    break;
                };
                (key_time(k), Origin::Queued(k as u64), ev)
            };
            let before = self.outs.len();
            let landed = step::land(x, life, armed, fenced, at, ev);
            if let Some(block) = landed.write {
                self.outs.push_back(Out::Landed(block));
            }
            if landed.handled {
                while let Some(a) = x.poll_action() {
                    self.outs.push_back(Out::Act(a));
                }
                step::note_halt(x, life, armed);
                if w.nextvals {
                    for (seq, v) in x.take_nextvals() {
                        self.outs.push_back(Out::Nextval(seq, v));
                    }
                }
                if let Some(d) = step::rearm(x, armed, at) {
                    if d < w.wake_end {
                        let me = self.recs.len() as u32;
                        let pos = self.wakes.partition_point(|&(t, _)| t <= d);
                        self.wakes.insert(pos, (d, me));
                    } else {
                        self.outs.push_back(Out::Wake(d));
                    }
                }
            }
            self.recs.push(Rec {
                at,
                origin,
                outs: (self.outs.len() - before) as u32,
            });
        }
    }
}

impl Sim {
    /// Process events up to `until` in parallel windows (see the module).
    pub(crate) fn run_windows(&mut self, until: Nanos) {
        let Some(mut lanes) = self.lanes.take() else {
            return;
        };
        // The whole loop on a worker: each window's lanes are then shared by
        // work stealing, without waking this thread from outside the pool.
        let pool = std::sync::Arc::clone(&lanes.pool);
        pool.install(|| self.windows_until(&mut lanes, until));
        self.lanes = Some(lanes);
        if self.stopped.is_none() {
            self.now = self.now.max(until);
        }
    }

    fn windows_until(&mut self, lanes: &mut Lanes, until: Nanos) {
        while self.stopped.is_none() {
            let Some(top) = self.queue.peek().filter(|&k| key_time(k) <= until) else {
                break;
            };
            if self.queue.first_barrier() == Some(top) {
                // A fence: alone, between windows.
                self.queue.pop_until(until);
                self.now = key_time(top);
                if let Taken::Event(Ev::Fence { inst, fenced }) = self.queue.take(top) {
                    self.fence_applies(inst, fenced);
                }
                continue;
            }
            let end_ns = key_time(top)
                .saturating_add(self.lookahead_ns)
                .min(until.saturating_add(1));
            let mut end: Key = Key::from(end_ns) << 64;
            if let Some(b) = self.queue.first_barrier() {
                end = end.min(b);
            }
            self.deal(lanes, end);
            let w = Window {
                wake_end: key_time(end),
                nextvals: self.nextvals.is_some() || self.seq_order.is_some(),
            };
            self.run_lanes(lanes, w);
            self.windows += 1;
            self.merge(lanes);
        }
    }

    /// Hand every event before `end` to its instance's lane.
    fn deal(&mut self, lanes: &mut Lanes, end: Key) {
        while let Some(k) = self.queue.pop_before(end) {
            let (i, ev) = match self.queue.take(k) {
                Taken::Wake(i) => (i, None),
                Taken::Event(ev) => (ev.instance(), Some(ev)),
                Taken::Gone => continue,
            };
            if let Some(lane) = lanes.lanes.get_mut(i) {
                lane.inputs.push_back((k, ev));
            }
        }
    }

    /// Every lane with events runs its window, on the workers.
    fn run_lanes(&mut self, lanes: &mut Lanes, w: Window) {
        let voting = &self.voting;
        let work = self
            .instances
            .iter_mut()
            .zip(self.life.iter_mut())
            .zip(self.armed.iter_mut())
            .zip(lanes.lanes.iter_mut())
            .enumerate()
            .filter(|(_, (_, lane))| !lane.inputs.is_empty());
        let mut work: Vec<_> = work.collect();
        if work.len() == 1 {
            // Nothing to share: no hand-over to a worker.
            for (i, (((x, life), armed), lane)) in work {
                lane.run(x, life, armed, voting.is_fenced(InstId(i as u8)), w);
            }
            return;
        }
        work.par_iter_mut()
            .for_each(|(i, (((x, life), armed), lane))| {
                lane.run(x, life, armed, voting.is_fenced(InstId(*i as u8)), w);
            });
    }

    /// Replay the lanes' records in the serial order (see the module).
    fn merge(&mut self, lanes: &mut Lanes) {
        let Lanes {
            lanes,
            heads,
            cursor,
            ..
        } = lanes;
        heads.clear();
        for (l, lane) in lanes.iter_mut().enumerate() {
            cursor[l] = 0;
            lane.ranks.clear();
            if let Some(head) = head_of(lane, 0, l) {
                heads.push(Reverse(head));
            }
        }
        let mut rank = 0u64;
        while let Some(Reverse((at, _, _, l))) = heads.pop() {
            let l = l as usize;
            let lane = &mut lanes[l];
            let r = cursor[l];
            cursor[l] += 1;
            lane.ranks.push(rank);
            rank += 1;
            if self.stopped.is_none() {
                self.now = at;
                self.events += 1;
                let outs = lane.recs.get(r).map_or(0, |rec| rec.outs);
                for _ in 0..outs {
                    let Some(out) = lane.outs.pop_front() else {
                        break;
                    };
                    match out {
                        Out::Act(a) => self.perform_one(l, a),
                        Out::Landed(block) => self.store.apply(*block),
                        Out::Nextval(seq, v) => self.observe_nextval(at, l, seq, v),
                        Out::Wake(d) => {
                            if self.queue.push_wake(at, d, l).is_err() {
                                self.queue_full();
                            }
                        }
                    }
                }
            }
            if let Some(head) = head_of(lane, cursor[l], l) {
                heads.push(Reverse(head));
            }
        }
        for lane in lanes.iter_mut() {
            lane.recs.clear();
            // Left only when the run stopped part way.
            lane.outs.clear();
        }
    }
}

/// Lane `l`'s record `r` as a merge key: (time, 0, queue order) for an
/// event queued before the window, (time, 1, pusher's rank) for a wake-up
/// queued inside it (its pusher, an earlier record, is ranked already).
fn head_of(lane: &Lane, r: usize, l: usize) -> Option<(Nanos, u8, u64, u32)> {
    let rec = lane.recs.get(r)?;
    let (class, order) = match rec.origin {
        Origin::Queued(low) => (0, low),
        Origin::Woken(p) => (1, lane.ranks.get(p as usize).copied().unwrap_or(0)),
    };
    Some((rec.at, class, order, l as u32))
}
