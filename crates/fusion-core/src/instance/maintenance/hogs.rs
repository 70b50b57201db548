//! CPU hogs: the `stress_cpu` fault. Processes in the instance's own run
//! queue, busy `load_pct` of every period, so they compete with sessions,
//! LMS and LGWR for the CPUs the way `stress-ng` competes with a real instance.
//!
//! `CpuHogs` owns which processes hog and how hard; `Maintenance`'s methods
//! in stress.rs create the processes, ask the run queue for their CPU and
//! arm their wake-ups.

use crate::config::{NS_PER_MS, Nanos};
use crate::cpu::ProcId;

/// Period of a partly-loaded CPU hog (busy `load_pct` of it).
const PERIOD_NS: Nanos = 100 * NS_PER_MS;
/// Demand of a fully-loaded hog: it never finishes.
const FOREVER_NS: Nanos = Nanos::MAX / 4;

#[derive(Debug)]
pub(super) struct CpuHogs {
    procs: Vec<ProcId>,
    /// Bumped on every change, so wake-ups armed for an earlier set are ignored.
    epoch: u64,
    load_pct: u32,
}

impl Default for CpuHogs {
    fn default() -> Self {
        CpuHogs {
            procs: Vec::new(),
            epoch: 0,
            load_pct: 100,
        }
    }
}

impl CpuHogs {
    /// A new set of hogs at `load_pct` (1..=100) replaces the old one:
    /// returns the old processes, whose CPU requests must be cancelled.
    pub fn restart(&mut self, load_pct: u32) -> Vec<ProcId> {
        self.epoch += 1;
        self.load_pct = load_pct.clamp(1, 100);
        std::mem::take(&mut self.procs)
    }

    /// Hog `proc` joins the set: the CPU it asks for first.
    pub fn add(&mut self, proc: ProcId) -> Nanos {
        self.procs.push(proc);
        if self.load_pct >= 100 {
            FOREVER_NS
        } else {
            self.busy_time()
        }
    }

    /// Whether the hogs are busy all the time (one CPU request that never ends).
    pub fn fully_loaded(&self) -> bool {
        self.load_pct >= 100
    }

    pub fn procs(&self) -> &[ProcId] {
        &self.procs
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// How long a partly-loaded hog runs each period.
    pub fn busy_time(&self) -> Nanos {
        PERIOD_NS * Nanos::from(self.load_pct) / 100
    }

    /// How long it sleeps for the rest of the period (at least 1 ns).
    pub fn sleep_time(&self) -> Nanos {
        (PERIOD_NS * Nanos::from(100 - self.load_pct) / 100).max(1)
    }

    /// Hog number `h` of the current set, if a wake-up armed in `epoch` still counts.
    pub fn wakes(&self, h: u32, epoch: u64) -> Option<ProcId> {
        if epoch != self.epoch {
            return None;
        }
        self.procs.get(h as usize).copied()
    }
}
