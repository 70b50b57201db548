//! LMS: the global cache server processes. Each worker takes GCS messages in
//! arrival order and needs a CPU for each (so a starved instance serves late).
//! A master routes requests through its LMS; a holder's LMS builds CR copies
//! by rolling back undo or ships its current block — the latter only once
//! LGWR has made the block's redo durable (`gcs log flush sync`).
//!
//! `Lms` owns the workers: their queues, the job each runs, the jobs parked
//! for a flush or a pin. What a job needs and what serving decides are in
//! serve.rs, where blocks are shipped (`Holder::ship`); the messages LMS
//! takes are routed by the dispatcher.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::block::{CrCopy, CrError};
use crate::config::{NS_PER_MS, Nanos};
use crate::cpu::ProcId;
use crate::msg::{Msg, Request};
use crate::types::{BlockAddr, InstId, Scn};

/// LMS did not start on a request within this long: the block is "congested".
pub const CONGESTED_AFTER_NS: Nanos = NS_PER_MS;

/// Jobs one LMS worker may have queued: far more than the requests every
/// session of a 64-instance cluster can have outstanding at once; reaching
/// it means a peer floods this instance.
pub const QUEUE_MAX: usize = 1 << 20;

/// Serving one forwarded request from this cache.
#[derive(Clone, Debug)]
pub struct Serve {
    pub req: Request,
    pub master: InstId,
    pub shared: bool,
    pub stage: Stage,
    /// The CR copy prepared when the job was picked up, with the SCN of the
    /// current image it was built from.
    pub built: Option<(Scn, Result<CrCopy, CrError>)>,
    /// A serving LMS (the master's or this one) did not start on it within
    /// [`CONGESTED_AFTER_NS`]: the requester names the wait `... congested`.
    pub congested: bool,
}

impl Serve {
    /// A request the master routed here. Until the holder's LMS runs, the
    /// only LMS wait it carries is the master's: if that LMS did not start on
    /// it within [`CONGESTED_AFTER_NS`], the transfer is congested already.
    pub fn new(req: Request, master: InstId, shared: bool) -> Serve {
        Serve {
            req,
            master,
            shared,
            stage: Stage::Start,
            built: None,
            congested: req.timing.lms_wait > CONGESTED_AFTER_NS,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Look at the buffer, build or pin, and ship if nothing else is needed.
    Start,
    /// Waited for a local pin; now pin and go on.
    AfterPin,
    /// The flush is done: send.
    Send,
}

#[derive(Clone, Debug)]
pub enum Job {
    /// A message for this LMS (a request at its master, a directory update,
    /// a transaction query, an SCN broadcast).
    Msg { from: InstId, msg: Msg },
    /// A forwarded request this cache serves.
    Serve(Box<Serve>),
}

/// Why a job could not be queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFull {
    pub worker: u8,
}

#[derive(Debug)]
struct Worker {
    proc: ProcId,
    /// Jobs and when they were queued; while `running`, the front one is
    /// the job on (or waiting for) the CPU. It stays there until it ends
    /// rather than moving out: a job with a message is large to move.
    queue: VecDeque<(Job, Nanos)>,
    running: bool,
    parked: FxHashMap<u64, (Box<Serve>, Nanos)>,
    next_park: u64,
    /// The running job belongs to an incarnation that ended: when its CPU
    /// step ends it is dropped, not carried out.
    stale: bool,
}

#[derive(Debug)]
pub struct Lms {
    workers: Vec<Worker>,
    /// Jobs waiting for a local pin on a block: (worker, parked job).
    pin_waiters: FxHashMap<BlockAddr, Vec<(u8, u64)>>,
}

impl Lms {
    pub fn new(procs: impl IntoIterator<Item = ProcId>) -> Lms {
        Lms {
            workers: procs
                .into_iter()
                .map(|proc| Worker {
                    proc,
                    queue: VecDeque::new(),
                    running: false,
                    parked: FxHashMap::default(),
                    next_park: 1,
                    stale: false,
                })
                .collect(),
            pin_waiters: FxHashMap::default(),
        }
    }

    pub fn count(&self) -> usize {
        self.workers.len()
    }

    /// Jobs queued, running and parked, over every worker.
    pub fn backlog(&self) -> usize {
        self.workers
            .iter()
            .map(|w| w.queue.len() + w.parked.len())
            .sum()
    }

    pub fn proc(&self, w: u8) -> ProcId {
        self.workers[usize::from(w)].proc
    }

    /// The worker that serves everything about a block.
    #[inline]
    pub fn worker_for(&self, blk: BlockAddr) -> u8 {
        let w = blk.0 % u32::try_from(self.workers.len().max(1)).unwrap_or(u32::MAX);
        // Below the worker count, which `Instance::new` keeps 8-bit.
        u8::try_from(w).expect("at most 100 LMS workers")
    }

    /// Queue a job behind the others.
    pub fn enqueue(&mut self, w: u8, job: Job, now: Nanos) -> Result<(), QueueFull> {
        let worker = &mut self.workers[usize::from(w)];
        if worker.queue.len() - usize::from(worker.running) >= QUEUE_MAX {
            return Err(QueueFull { worker: w });
        }
        worker.queue.push_back((job, now));
        Ok(())
    }

    /// Queue a job ahead of the others: work already under way goes on first.
    pub fn enqueue_front(&mut self, w: u8, job: Job, now: Nanos) {
        let worker = &mut self.workers[usize::from(w)];
        // Behind the running job, ahead of the waiting ones.
        worker.queue.insert(usize::from(worker.running), (job, now));
    }

    /// If worker `w` is idle, its next job, now running: the caller works out
    /// the CPU it needs and asks for it.
    pub fn start_next(&mut self, w: u8) -> Option<&mut Job> {
        let worker = &mut self.workers[usize::from(w)];
        if worker.running {
            return None;
        }
        let (job, _) = worker.queue.front_mut()?;
        worker.running = true;
        Some(job)
    }

    /// Worker `w`'s CPU step ended: its job and when it was queued (`None`
    /// when the job was dropped by a reconfiguration meanwhile).
    pub fn finish(&mut self, w: u8) -> Option<(Job, Nanos)> {
        let worker = self.workers.get_mut(usize::from(w))?;
        let job = if std::mem::take(&mut worker.running) {
            worker.queue.pop_front()
        } else {
            None
        };
        if std::mem::take(&mut worker.stale) {
            return None;
        }
        job
    }

    /// A reconfiguration: every job of the old incarnation is dropped (the
    /// directory is rebuilt and the requesters ask again). A job on the CPU
    /// is dropped when its step ends. Returns the jobs dropped.
    pub fn purge(&mut self) -> usize {
        let mut dropped = 0;
        for worker in &mut self.workers {
            dropped += worker.queue.len() + worker.parked.len();
            // The running job stays at the front until its step ends.
            worker.queue.truncate(usize::from(worker.running));
            worker.parked.clear();
            if worker.running {
                worker.stale = true;
            }
        }
        self.pin_waiters.clear();
        dropped
    }

    /// Set a job aside until a flush or a pin lets it go on.
    pub fn park(&mut self, w: u8, serve: Box<Serve>, now: Nanos) -> u64 {
        let worker = &mut self.workers[usize::from(w)];
        let id = worker.next_park;
        worker.next_park += 1;
        worker.parked.insert(id, (serve, now));
        id
    }

    /// A parked job, and when it was parked.
    pub fn unpark(&mut self, w: u8, id: u64) -> Option<(Box<Serve>, Nanos)> {
        self.workers.get_mut(usize::from(w))?.parked.remove(&id)
    }

    /// Parked job `id` waits for the local pins on `blk` to go.
    pub fn wait_for_pin(&mut self, blk: BlockAddr, w: u8, id: u64) {
        self.pin_waiters.entry(blk).or_default().push((w, id));
    }

    /// The last pin on `blk` went: the parked jobs that waited for it.
    #[inline]
    pub fn pin_released(&mut self, blk: BlockAddr) -> Option<Vec<(u8, u64)>> {
        // Called on every last unpin; usually no LMS job waits at all.
        if self.pin_waiters.is_empty() {
            return None;
        }
        self.pin_waiters.remove(&blk)
    }
}
