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

use fusion_core::config::Nanos;
use std::cmp::Reverse;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use fusion_core::types::InstId;

use crate::Sim;
use crate::lanes::*;
use crate::queue::{Ev, Key, Taken, key_time};

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
        // Nothing is folded into an event of an earlier call.
        self.merged_wake = None;
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
                // Queued before any wake-up merged after it.
                self.merged_wake = None;
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
        // The record merged last (lane, record): a wake-up it queued that
        // comes right after it was due before anything queued, so the
        // serial loop folded it into that event (`fold_into_event`).
        let mut last: Option<(usize, usize)> = None;
        // The record merged last may have queued its wake-up for a later
        // window (`merged_wake`): folded too if it is the next one merged.
        while let Some(Reverse(head)) = heads.pop() {
            let l = (head & 0xff) as usize;
            let Some(lane) = slots.get_mut(l).map(|s| &mut s.lane) else {
                continue;
            };
            let r = cursor[l];
            cursor[l] += 1;
            lane.ranks.push(rank);
            rank += 1;
            let folded = lane.recs.get(r).is_some_and(|rec| match rec.origin {
                Origin::Woken(p) => last == Some((l, p as usize)),
                Origin::Queued(low) => {
                    self.merged_wake == Some(Key::from(rec.at) << 64 | Key::from(low))
                }
            });
            last = Some((l, r));
            self.merged_wake = None;
            if self.stopped.is_none() {
                let at = (head >> 64) as Nanos;
                self.now = at;
                if folded {
                    self.folded += 1;
                } else {
                    self.events += 1;
                }
                let outs = lane.recs.get(r).map_or(0, |rec| rec.outs);
                for _ in 0..outs {
                    let Some(out) = lane.outs.pop_front() else {
                        break;
                    };
                    match out {
                        Out::Act(a) => self.perform_one(l, a),
                        Out::Landed(block) => self.store.apply(*block),
                        Out::Nextval(seq, v) => self.observe_nextval(at, l, seq, v),
                        Out::Wake(d) => match self.queue.push_wake(at, d, l) {
                            Ok(key) => self.merged_wake = Some(key),
                            Err(_) => self.queue_full(),
                        },
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
