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
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::life::Life;
use crate::queue::{Ev, Key, SEQ_SHIFT, Taken, key_time};
use crate::{Sim, step};

/// The threads of a parallel run and each instance's lane, kept between
/// windows so a window allocates nothing once they have grown.
pub(crate) struct Lanes {
    /// This thread and `threads - 1` workers.
    threads: usize,
    lanes: Vec<Lane>,
    /// The merge's heap of lane heads (see [`head_of`]).
    heads: BinaryHeap<Reverse<u128>>,
    /// Per lane: its next record to merge.
    cursor: Vec<usize>,
    /// Test hook: the lane that panics (a stand-in for a bug in the model).
    #[cfg(test)]
    pub(crate) panic_in_lane: Option<usize>,
}

impl Lanes {
    /// `threads` threads (this one included) for `instances` lanes.
    pub(crate) fn new(threads: usize, instances: usize) -> Lanes {
        Lanes {
            threads,
            lanes: (0..instances).map(|_| Lane::default()).collect(),
            heads: BinaryHeap::new(),
            cursor: vec![0; instances],
            #[cfg(test)]
            panic_in_lane: None,
        }
    }
}

/// One instance with its lane, as the threads share them while windows run:
/// aligned so two slots never share a cache line.
#[repr(align(128))]
struct Slot {
    x: Instance,
    life: Life,
    armed: Option<Nanos>,
    lane: Lane,
}

/// What the threads share while windows run. A window lasts tens of
/// microseconds, about what waking a sleeping thread takes: the workers
/// spin (then yield) between windows instead of sleeping.
struct Crew {
    slots: Vec<Mutex<Slot>>,
    /// Bumped to start a window (or, with `quit`, to end the workers).
    epoch: AtomicU64,
    quit: AtomicBool,
    /// Workers done with this window.
    done: AtomicUsize,
    /// The window's [`Window::wake_end`].
    wake_end: AtomicU64,
    /// The fenced instances as the window began (a bit per instance).
    fenced: AtomicU64,
    nextvals: bool,
    #[cfg(test)]
    panic_in_lane: Option<usize>,
}

/// Spins before a waiting thread starts yielding its core.
const SPINS_MAX: u32 = 1 << 12;

impl Crew {
    fn lock(&self, i: usize) -> Option<MutexGuard<'_, Slot>> {
        self.slots
            .get(i)
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every slot, locked (by the coordinating thread, between windows).
    fn lock_all(&self) -> Vec<MutexGuard<'_, Slot>> {
        self.slots
            .iter()
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }

    /// Run thread `k`'s lanes of this window: every `threads`-th from `k`.
    /// An instance stays on one thread from window to window, so what it
    /// touches stays in that core's caches.
    fn run_share(&self, k: usize, threads: usize) {
        let w = Window {
            wake_end: self.wake_end.load(Ordering::Acquire),
            nextvals: self.nextvals,
        };
        let fenced = self.fenced.load(Ordering::Acquire);
        for i in (k..self.slots.len()).step_by(threads.max(1)) {
            let Some(mut slot) = self.lock(i) else {
                return;
            };
            if slot.lane.inputs.is_empty() {
                continue;
            }
            #[cfg(test)]
            assert!(self.panic_in_lane != Some(i), "lane {i} panics, as asked");
            let Slot {
                x,
                life,
                armed,
                lane,
            } = &mut *slot;
            lane.run(x, life, armed, fenced >> i & 1 == 1, w);
        }
    }

    /// A worker: run each window's lanes until told to quit.
    fn work(&self, k: usize, threads: usize) {
        let mut seen = 0;
        loop {
            let mut spins = 0u32;
            loop {
                let e = self.epoch.load(Ordering::Acquire);
                if e != seen {
                    seen = e;
                    break;
                }
                if spins < SPINS_MAX {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self.quit.load(Ordering::Acquire) {
                return;
            }
            // Counted done even when a lane panics (a bug in the model):
            // the coordinator then stops and the scope hands the panic on,
            // instead of everyone waiting for this thread forever.
            let _done = Done(self);
            self.run_share(k, threads);
        }
    }

    /// Run one window on every thread; returns when every lane is done.
    fn window(&self, workers: usize, w: Window, fenced: u64) {
        self.wake_end.store(w.wake_end, Ordering::Release);
        self.fenced.store(fenced, Ordering::Release);
        self.done.store(0, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.run_share(0, workers + 1);
        let mut spins = 0u32;
        while self.done.load(Ordering::Acquire) < workers && !self.quit.load(Ordering::Acquire) {
            if spins < SPINS_MAX {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Marks a worker done with its window when dropped, also by a panic,
/// which also tells everyone to quit.
struct Done<'a>(&'a Crew);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.quit.store(true, Ordering::Release);
        }
        self.0.done.fetch_add(1, Ordering::AcqRel);
    }
}

/// Ends the workers when the coordinating thread leaves its loop, also
/// by a panic: the scope joins them before it hands a panic on.
struct Dismiss<'a>(&'a Crew);

impl Drop for Dismiss<'_> {
    fn drop(&mut self) {
        self.0.quit.store(true, Ordering::Release);
        self.0.epoch.fetch_add(1, Ordering::AcqRel);
    }
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
                crate::life::note_halt(x, life, armed);
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
        // The instances go to the threads' slots for the run and come back.
        let slots = std::mem::take(&mut self.instances)
            .into_iter()
            .zip(std::mem::take(&mut self.life))
            .zip(std::mem::take(&mut self.armed))
            .zip(std::mem::take(&mut lanes.lanes))
            .map(|(((x, life), armed), lane)| {
                Mutex::new(Slot {
                    x,
                    life,
                    armed,
                    lane,
                })
            })
            .collect();
        let crew = Crew {
            slots,
            epoch: AtomicU64::new(0),
            quit: AtomicBool::new(false),
            done: AtomicUsize::new(0),
            wake_end: AtomicU64::new(0),
            fenced: AtomicU64::new(0),
            nextvals: self.nextvals.is_some() || self.seq_order.is_some(),
            #[cfg(test)]
            panic_in_lane: lanes.panic_in_lane,
        };
        let workers = lanes.threads.saturating_sub(1);
        std::thread::scope(|scope| {
            for k in 1..=workers {
                let crew = &crew;
                scope.spawn(move || crew.work(k, workers + 1));
            }
            let _dismiss = Dismiss(&crew);
            self.windows_until(&crew, &mut lanes, workers, until);
        });
        for m in crew.slots {
            let slot = m.into_inner().unwrap_or_else(PoisonError::into_inner);
            self.instances.push(slot.x);
            self.life.push(slot.life);
            self.armed.push(slot.armed);
            lanes.lanes.push(slot.lane);
        }
        self.lanes = Some(lanes);
        if self.stopped.is_none() {
            self.now = self.now.max(until);
        }
    }

    fn windows_until(&mut self, crew: &Crew, lanes: &mut Lanes, workers: usize, until: Nanos) {
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
            self.deal(crew, end);
            let fenced = (0..crew.slots.len())
                .filter(|&i| self.voting.is_fenced(InstId(i as u8)))
                .fold(0u64, |bits, i| bits | 1 << i);
            let w = Window {
                wake_end: key_time(end),
                nextvals: crew.nextvals,
            };
            crew.window(workers, w, fenced);
            if crew.quit.load(Ordering::Acquire) {
                // A worker panicked: the scope hands its panic on.
                return;
            }
            self.windows += 1;
            self.merge(crew, lanes);
        }
    }

    /// Hand every event before `end` to its instance's lane.
    fn deal(&mut self, crew: &Crew, end: Key) {
        let mut slots = crew.lock_all();
        while let Some(k) = self.queue.pop_before(end) {
            let (i, ev) = match self.queue.take(k) {
                Taken::Wake(i) => (i, None),
                Taken::Event(ev) => (ev.instance(), Some(ev)),
                Taken::Gone => continue,
            };
            if let Some(slot) = slots.get_mut(i) {
                slot.lane.inputs.push_back((k, ev));
            }
        }
    }

    /// Replay the lanes' records in the serial order (see the module).
    fn merge(&mut self, crew: &Crew, lanes: &mut Lanes) {
        let mut slots = crew.lock_all();
        let Lanes { heads, cursor, .. } = lanes;
        heads.clear();
        for (l, slot) in slots.iter_mut().enumerate() {
            cursor[l] = 0;
            slot.lane.ranks.clear();
            if let Some(head) = head_of(&slot.lane, 0, l) {
                heads.push(Reverse(head));
            }
        }
        let mut rank = 0u64;
        while let Some(Reverse(head)) = heads.pop() {
            let l = (head & 0xff) as usize;
            let Some(lane) = slots.get_mut(l).map(|s| &mut s.lane) else {
                continue;
            };
            let r = cursor[l];
            cursor[l] += 1;
            lane.ranks.push(rank);
            rank += 1;
            if self.stopped.is_none() {
                let at = (head >> 64) as Nanos;
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
        for slot in slots.iter_mut() {
            slot.lane.recs.clear();
            // Left only when the run stopped part way.
            slot.lane.outs.clear();
        }
    }
}

/// Lane `l`'s record `r` as a merge key, one integer: its time, then 0 and
/// its queue sequence number for an event queued before the window, or 1
/// and its pusher's rank for a wake-up queued inside it (the pusher, an
/// earlier record, is ranked already), then the lane.
fn head_of(lane: &Lane, r: usize, l: usize) -> Option<u128> {
    let rec = lane.recs.get(r)?;
    let (class, order) = match rec.origin {
        Origin::Queued(low) => (0, low >> SEQ_SHIFT),
        Origin::Woken(p) => (1, lane.ranks.get(p as usize).copied().unwrap_or(0)),
    };
    Some(u128::from(rec.at) << 64 | class << 63 | u128::from(order) << 8 | l as u128)
}

#[cfg(test)]
mod tests {
    use crate::{Sim, SimOptions};
    use fusion_core::config::NS_PER_MS;

    /// A panic in a lane, on a worker or on the coordinating thread, ends
    /// the run with that panic: nobody waits for the thread that died.
    #[test]
    fn a_panicking_lane_ends_the_run_with_its_panic_not_a_hang() {
        let s = crate::tests::reads(3, 4, &[("first", 50 * NS_PER_MS)]);
        let opts = SimOptions {
            threads: 2,
            ..SimOptions::default()
        };
        // Lane 1 runs on the worker, lane 0 on the coordinating thread.
        for lane in [1, 0] {
            let mut sim = Sim::new(&s, &opts);
            if let Some(l) = sim.lanes.as_mut() {
                l.panic_in_lane = Some(lane);
            }
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::run_phases_with(&mut sim, "v", &s, &opts)
            }));
            assert!(ran.is_err(), "lane {lane}: the run went on");
        }
    }
}
