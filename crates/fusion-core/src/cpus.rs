//! The CPUs of one instance: one run queue ([`Scheduler`]) over all of
//! them, or, on a server with locality groups (`[server]`), one run queue
//! per group. A process is bound to its home group (the strong affinity of
//! MPO-aware Oracle's foregrounds, `numactl --cpubind`): it waits for and
//! runs on that group's CPUs only, so where it runs is where its local
//! memory is.

use crate::config::Nanos;
use crate::config::server::Server;
use crate::cpu::{ProcId, SchedClass, Scheduler, StepDone};

/// The run queues.
#[derive(Clone, Debug)]
// The single run queue stays inline: it is on the path of every event, and
// an instance has one `Cpus`.
#[allow(clippy::large_enum_variant)]
pub enum Cpus {
    /// Every CPU in one run queue (no server description).
    One(Scheduler),
    /// One run queue per locality group.
    Groups(Vec<Scheduler>),
}

impl Cpus {
    /// `cpu_count` plain CPUs, or the server's groups of hardware threads.
    pub fn new(cpu_count: u32, quantum_ns: Nanos, server: Option<&Server>) -> Cpus {
        match server {
            None => Cpus::One(Scheduler::new(cpu_count, quantum_ns)),
            Some(s) => Cpus::Groups(
                (0..s.groups.max(1))
                    .map(|_| {
                        Scheduler::with_cores(
                            s.cpus_per_group(),
                            quantum_ns,
                            s.threads_per_core,
                            s.pipelines_per_core,
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// Ask for `demand` ns of CPU for `proc`, on its home `group`'s CPUs.
    #[inline]
    pub fn request(
        &mut self,
        now: Nanos,
        proc: ProcId,
        class: SchedClass,
        demand: Nanos,
        group: u8,
    ) {
        match self {
            Cpus::One(s) => s.request(now, proc, class, demand),
            Cpus::Groups(g) => {
                let i = usize::from(group) % g.len();
                g[i].request(now, proc, class, demand)
            }
        }
    }

    /// Ask for `demand` ns of a stall on memory: the CPU is held, but the
    /// core's pipelines are left to its other threads.
    pub fn request_stall(
        &mut self,
        now: Nanos,
        proc: ProcId,
        class: SchedClass,
        demand: Nanos,
        group: u8,
    ) {
        match self {
            Cpus::One(s) => s.request_stall(now, proc, class, demand),
            Cpus::Groups(g) => in_group(g, group).request_stall(now, proc, class, demand),
        }
    }

    /// Withdraw a process's step. Returns whether it was found.
    /// Processes waiting for a CPU now, over every run queue.
    pub fn queued(&self) -> usize {
        match self {
            Cpus::One(s) => s.queued(),
            Cpus::Groups(g) => g.iter().map(Scheduler::queued).sum(),
        }
    }

    pub fn cancel(&mut self, now: Nanos, proc: ProcId) -> bool {
        match self {
            Cpus::One(s) => s.cancel(now, proc),
            // A process is in one group's run queue only.
            Cpus::Groups(g) => g.iter_mut().any(|s| s.cancel(now, proc)),
        }
    }

    /// Finish the steps due by `now` (in group order at one time).
    #[inline(always)]
    pub fn advance(&mut self, now: Nanos, done: &mut Vec<StepDone>) {
        match self {
            Cpus::One(s) => s.advance(now, done),
            Cpus::Groups(g) => advance_groups(g, now, done),
        }
    }

    #[inline(always)]
    pub fn settle(&mut self, now: Nanos) {
        match self {
            Cpus::One(s) => s.settle(now),
            Cpus::Groups(g) => settle_groups(g, now),
        }
    }

    pub fn reclassify(&mut self, now: Nanos, class_of: impl Fn(ProcId) -> SchedClass) {
        match self {
            Cpus::One(s) => s.reclassify(now, class_of),
            Cpus::Groups(g) => g.iter_mut().for_each(|s| s.reclassify(now, &class_of)),
        }
    }

    /// When the next step ends or a time slice expires, in any group.
    #[inline(always)]
    pub fn next_event(&self) -> Option<Nanos> {
        match self {
            Cpus::One(s) => s.next_event(),
            Cpus::Groups(g) => next_in_groups(g),
        }
    }

    /// CPU time used by all steps so far (`v$osstat` BUSY_TIME).
    pub fn busy(&self) -> Nanos {
        match self {
            Cpus::One(s) => s.busy_ns,
            Cpus::Groups(g) => g.iter().map(|s| s.busy_ns).sum(),
        }
    }

    /// Carry an earlier life's busy time (a restarted instance's counters go on).
    pub fn set_busy(&mut self, busy: Nanos) {
        match self {
            Cpus::One(s) => s.busy_ns = busy,
            Cpus::Groups(g) => {
                for (i, s) in g.iter_mut().enumerate() {
                    s.busy_ns = if i == 0 { busy } else { 0 };
                }
            }
        }
    }
}

// The groups' paths, out of line: without a server they never run, and the
// single run queue's stay as small as they were.

fn in_group(g: &mut [Scheduler], group: u8) -> &mut Scheduler {
    let i = usize::from(group) % g.len();
    &mut g[i]
}

#[inline(never)]
fn advance_groups(g: &mut [Scheduler], now: Nanos, done: &mut Vec<StepDone>) {
    g.iter_mut().for_each(|s| s.advance(now, done))
}

#[inline(never)]
fn settle_groups(g: &mut [Scheduler], now: Nanos) {
    g.iter_mut().for_each(|s| s.settle(now))
}

#[inline(never)]
fn next_in_groups(g: &[Scheduler]) -> Option<Nanos> {
    g.iter().filter_map(Scheduler::next_event).min()
}
