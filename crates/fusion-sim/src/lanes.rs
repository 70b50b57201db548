//! The lanes of a run on several threads (window.rs says how a window
//! runs): each instance's lane with its inputs and records, the crew of
//! worker threads, and the merge key of a lane's record. The `Sim` side
//! (dealing events out, merging the records back) is in window.rs.

use fusion_core::block::Block;
use fusion_core::config::Nanos;
use fusion_core::instance::Instance;
use fusion_core::msg::Action;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::lifecycle::Life;
use crate::queue::{Ev, Key, SEQ_SHIFT, key_time};
use crate::step;

/// The threads of a parallel run and each instance's lane, kept between
/// windows so a window allocates nothing once they have grown.
pub(crate) struct Lanes {
    /// This thread and `threads - 1` workers.
    pub(crate) threads: usize,
    pub(crate) lanes: Vec<Lane>,
    /// The merge's heap of lane heads (see [`head_of`]).
    pub(crate) heads: BinaryHeap<Reverse<u128>>,
    /// Per lane: its next record to merge.
    pub(crate) cursor: Vec<usize>,
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
pub(crate) struct Slot {
    pub(crate) x: Instance,
    pub(crate) life: Life,
    pub(crate) armed: Option<Nanos>,
    pub(crate) lane: Lane,
}

/// What the threads share while windows run. A window lasts tens of
/// microseconds, about what waking a sleeping thread takes: the workers
/// spin (then yield) between windows instead of sleeping.
pub(crate) struct Crew {
    pub(crate) slots: Vec<Mutex<Slot>>,
    /// Bumped to start a window (or, with `quit`, to end the workers).
    pub(crate) epoch: AtomicU64,
    pub(crate) quit: AtomicBool,
    /// Workers done with this window.
    pub(crate) done: AtomicUsize,
    /// The window's [`Window::wake_end`].
    pub(crate) wake_end: AtomicU64,
    /// The fenced instances as the window began (a bit per instance).
    pub(crate) fenced: AtomicU64,
    pub(crate) nextvals: bool,
    #[cfg(test)]
    pub(crate) panic_in_lane: Option<usize>,
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
    pub(crate) fn lock_all(&self) -> Vec<MutexGuard<'_, Slot>> {
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
    pub(crate) fn work(&self, k: usize, threads: usize) {
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
    pub(crate) fn window(&self, workers: usize, w: Window, fenced: u64) {
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
pub(crate) struct Done<'a>(pub(crate) &'a Crew);

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
pub(crate) struct Dismiss<'a>(pub(crate) &'a Crew);

impl Drop for Dismiss<'_> {
    fn drop(&mut self) {
        self.0.quit.store(true, Ordering::Release);
        self.0.epoch.fetch_add(1, Ordering::AcqRel);
    }
}

/// One instance's share of a window.
#[derive(Default)]
pub(crate) struct Lane {
    /// Its events queued before the window, in their order.
    pub(crate) inputs: VecDeque<(Key, Option<Ev>)>,
    /// Wake-ups it queued for itself that fall inside the window: (time,
    /// the record of the event that queued it), in (time, push) order.
    pub(crate) wakes: VecDeque<(Nanos, u32)>,
    /// The events it processed, in its order.
    pub(crate) recs: Vec<Rec>,
    /// The merge's rank of each record.
    pub(crate) ranks: Vec<u64>,
    /// What the events asked of the cluster, record after record.
    pub(crate) outs: VecDeque<Out>,
}

/// One processed event.
pub(crate) struct Rec {
    pub(crate) at: Nanos,
    pub(crate) origin: Origin,
    /// How many of `Lane::outs` are this event's.
    pub(crate) outs: u32,
}

pub(crate) enum Origin {
    /// Queued before the window: its key's low word orders it.
    Queued(u64),
    /// A wake-up queued inside the window by record `.0` of the same lane.
    Woken(u32),
}

/// What an event asked of the cluster.
pub(crate) enum Out {
    Act(Action),
    /// A datafile write reached the disk.
    Landed(Box<Block>),
    Nextval(u32, i64),
    /// A wake-up after the window's end, for the queue.
    Wake(Nanos),
}

/// What a lane needs to know of the window: the same for every lane.
#[derive(Clone, Copy)]
pub(crate) struct Window {
    /// Wake-ups at or after this time wait for a later window.
    pub(crate) wake_end: Nanos,
    pub(crate) nextvals: bool,
}

impl Lane {
    /// Process this instance's events of the window, in order, recording
    /// what they ask of the cluster.
    pub(crate) fn run(
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
                crate::lifecycle::note_halt(x, life, armed);
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

/// Lane `l`'s record `r` as a merge key, one integer: its time, then 0 and
/// its queue sequence number for an event queued before the window, or 1
/// and its pusher's rank for a wake-up queued inside it (the pusher, an
/// earlier record, is ranked already), then the lane.
pub(crate) fn head_of(lane: &Lane, r: usize, l: usize) -> Option<u128> {
    let rec = lane.recs.get(r)?;
    let (class, order) = match rec.origin {
        Origin::Queued(low) => (0, low >> SEQ_SHIFT),
        Origin::Woken(p) => (1, lane.ranks.get(p as usize).copied().unwrap_or(0)),
    };
    Some(u128::from(rec.at) << 64 | class << 63 | u128::from(order) << 8 | l as u128)
}
