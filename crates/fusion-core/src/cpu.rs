//! The CPU run queue of one instance: `cpu_count` CPUs, a real-time class
//! that preempts, and a time-sharing class served round-robin with a time
//! slice. Every CPU-using step of every process (a session's logical read,
//! an LMS build, LGWR, a CPU hog) goes through here, so a starved instance's
//! LMS waits behind the hogs exactly as long as the schedule says.

use std::collections::VecDeque;

use crate::config::Nanos;

mod events;
use events::Events;

/// Index of a process in the instance's process table.
pub type ProcId = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedClass {
    /// Runs before any time-sharing process and preempts one if no CPU is free.
    RealTime,
    /// Round-robin with a time slice.
    TimeShare,
}

/// A finished CPU step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepDone {
    pub proc: ProcId,
    pub requested_at: Nanos,
    /// When the step first got a CPU.
    pub started_at: Nanos,
    pub done_at: Nanos,
    /// Time runnable but not running (before the start and after preemptions).
    pub waited: Nanos,
}

#[derive(Clone, Debug)]
struct Task {
    proc: ProcId,
    class: SchedClass,
    remaining_ns: Nanos,
    requested_at: Nanos,
    /// When the step first got a CPU; [`NOT_STARTED`] until then (a plain
    /// number, not an `Option`, keeps a task, copied on every start and
    /// stop, 48 bytes).
    started_at: Nanos,
    queued_at: Nanos,
    waited_ns: Nanos,
    /// On a core whose threads share its pipelines: wall time is work times
    /// `.0 / .1` (threads running on the core / pipelines), set when the
    /// step (re)starts on a CPU; `(1, 1)` at full speed.
    stretch: (u8, u8),
    /// A stall on memory: holds the CPU, not the core's pipelines.
    stall: bool,
}

impl Task {
    /// A step of `demand` ns asked for at `now`.
    #[inline(always)]
    fn new(now: Nanos, proc: ProcId, class: SchedClass, demand: Nanos, stall: bool) -> Task {
        Task {
            proc,
            class,
            remaining_ns: demand,
            requested_at: now,
            started_at: NOT_STARTED,
            queued_at: now,
            waited_ns: 0,
            stretch: (1, 1),
            stall,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Cpu {
    task: Option<Task>,
    slice_start: Nanos,
    /// The process whose step just finished here: if it asks for more CPU at
    /// once (before [`Scheduler::settle`]), it keeps the CPU, as a process
    /// that goes on working does.
    reserved_for: Option<ProcId>,
}

/// The run queue.
#[derive(Clone, Debug)]
pub struct Scheduler {
    cpus: Vec<Cpu>,
    rt: VecDeque<Task>,
    ts: VecDeque<Task>,
    quantum_ns: Nanos,
    /// CPU time used by all steps so far (`v$osstat` BUSY_TIME).
    pub busy_ns: Nanos,
    /// When each busy CPU's step ends or its slice expires, earliest first:
    /// a CPU has an event while it runs a task (put there by `start`,
    /// taken off by `take` or `finish`).
    events: Events,
    /// CPUs held for the process that just finished a step there.
    reserved: Vec<u32>,
    /// CPUs with no task and no reservation (a bit per CPU), so finding a
    /// free one does not walk every CPU.
    idle: Bits,
    /// The latest time the run queue has reached. Time never goes back: a
    /// step's start, slice and end are all measured from it.
    clock: Nanos,
    /// Hardware threads per core (CPUs `c * threads_per_core ..` share core
    /// `c`); 1: every CPU is a core of its own.
    threads_per_core: u32,
    /// Threads of a core that run at full speed at once.
    pipelines_per_core: u32,
}

/// A fixed-size bit set over CPU numbers. The first 64 CPUs (all of them
/// in nearly every scenario) are a word of their own, so setting one of
/// their bits, done several times per CPU step, is a plain word operation.
#[derive(Clone, Debug)]
struct Bits {
    low: u64,
    /// CPUs 64 and up, 64 to a word.
    high: Vec<u64>,
}

impl Bits {
    fn new(len: usize, on: bool) -> Bits {
        let mut b = Bits {
            low: 0,
            high: vec![0; len.saturating_sub(64).div_ceil(64)],
        };
        if on {
            for i in 0..len {
                b.set(i, true);
            }
        }
        b
    }

    #[inline(always)]
    fn set(&mut self, i: usize, on: bool) {
        if i < 64 {
            // Without a branch on `on`, which is mostly known where this
            // is inlined, and not where it is not.
            self.low = self.low & !(1u64 << i) | u64::from(on) << i;
        } else {
            self.set_high(i, on);
        }
    }

    #[cold]
    #[inline(never)]
    fn set_high(&mut self, i: usize, on: bool) {
        let word = &mut self.high[i / 64 - 1];
        *word = *word & !(1u64 << (i % 64)) | u64::from(on) << (i % 64);
    }

    fn get(&self, i: usize) -> bool {
        let word = if i < 64 {
            self.low
        } else {
            self.high[i / 64 - 1]
        };
        word & (1u64 << (i % 64)) != 0
    }

    fn first(&self) -> Option<usize> {
        if self.low != 0 {
            return Some(self.low.trailing_zeros() as usize);
        }
        self.high
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(k, w)| (k + 1) * 64 + w.trailing_zeros() as usize)
    }
}

impl Scheduler {
    pub fn new(cpu_count: u32, quantum_ns: Nanos) -> Scheduler {
        Scheduler::with_cores(cpu_count, quantum_ns, 1, 1)
    }

    /// CPUs that are hardware threads, `threads_per_core` to a core whose
    /// `pipelines_per_core` pipelines they share (chip multithreading).
    pub fn with_cores(
        cpu_count: u32,
        quantum_ns: Nanos,
        threads_per_core: u32,
        pipelines_per_core: u32,
    ) -> Scheduler {
        let cpus = cpu_count.max(1) as usize;
        Scheduler {
            cpus: vec![Cpu::default(); cpus],
            rt: VecDeque::new(),
            ts: VecDeque::new(),
            quantum_ns: quantum_ns.max(1),
            busy_ns: 0,
            events: Events::new(cpus),
            reserved: Vec::new(),
            idle: Bits::new(cpus, true),
            clock: 0,
            threads_per_core: threads_per_core.clamp(1, u32::from(u8::MAX)),
            pipelines_per_core: pipelines_per_core
                .clamp(1, threads_per_core.clamp(1, u32::from(u8::MAX))),
        }
    }

    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// Processes waiting for a CPU.
    pub fn queued(&self) -> usize {
        self.rt.len() + self.ts.len()
    }

    /// Ask for `demand` ns of CPU for `proc`.
    // Inlined in its two callers: on the path of every CPU step.
    #[inline(always)]
    fn request_inner(
        &mut self,
        now: Nanos,
        proc: ProcId,
        class: SchedClass,
        demand: Nanos,
        stall: bool,
    ) {
        // The common case, checked first: no CPU held for a process whose
        // step just finished (`request_general` looks for one first), no
        // hardware threads, and one of the first 64 CPUs free.
        if self.reserved.is_empty() && self.threads_per_core == 1 && self.idle.low != 0 {
            let i = self.idle.low.trailing_zeros() as usize;
            // Built here, in place on the CPU.
            let task = Task::new(now, proc, class, demand, stall);
            self.start(i, task, now);
        } else {
            self.request_general(now, proc, class, demand, stall);
        }
    }

    /// [`Scheduler::request_inner`] in general: the process takes back the
    /// CPU held for it, or gets a free one, preempts, or queues.
    #[inline(never)]
    fn request_general(
        &mut self,
        now: Nanos,
        proc: ProcId,
        class: SchedClass,
        demand: Nanos,
        stall: bool,
    ) {
        let task = Task::new(now, proc, class, demand, stall);
        if let Some(k) = self
            .reserved
            .iter()
            .position(|&i| self.cpus[i as usize].reserved_for == Some(proc))
        {
            // Taken back: nothing for `settle` to hand out here.
            let i = self.reserved.swap_remove(k);
            self.run_on(i as usize, task, now);
            return;
        }
        let idle = if self.threads_per_core > 1 {
            self.idle_on_quietest_core()
        } else {
            self.idle.first()
        };
        if let Some(i) = idle {
            self.start(i, task, now);
            return;
        }
        if class == SchedClass::RealTime
            && let Some(i) = self.first_running_ts()
        {
            let mut victim = self.take(i, now);
            victim.queued_at = now;
            self.ts.push_front(victim);
            self.run_on(i, task, now);
            return;
        }
        match class {
            SchedClass::RealTime => self.rt.push_back(task),
            SchedClass::TimeShare => self.ts.push_back(task),
        }
    }

    /// The scheduling class of processes changed (`priocntl`, or a parameter
    /// change): queued and running steps move to their new class at once, and
    /// a process now real-time preempts a time-sharing one if no CPU is free.
    fn reclassify_inner(&mut self, now: Nanos, class_of: impl Fn(ProcId) -> SchedClass) {
        let steps_before = self.steps();
        // A class decides whether a time slice ends a step: every event time may move.
        for i in 0..self.cpus.len() {
            let Some(t) = self.cpus[i].task.as_mut() else {
                continue;
            };
            t.class = class_of(t.proc);
            let overdue = t.class == SchedClass::TimeShare
                && self.cpus[i].slice_start.saturating_add(self.quantum_ns) < now;
            if overdue {
                // A step that ran real-time past a whole slice becomes
                // time-sharing now: its slice starts now, not in the past
                // (an event before `now` would go back in time).
                let mut t = self.take(i, now);
                t.queued_at = now;
                self.run_on(i, t, now);
            } else {
                self.schedule_due(i);
            }
        }
        let mut all: Vec<Task> = self.rt.drain(..).chain(self.ts.drain(..)).collect();
        all.sort_by_key(|t| t.queued_at);
        for mut t in all {
            t.class = class_of(t.proc);
            match t.class {
                SchedClass::RealTime => self.rt.push_back(t),
                SchedClass::TimeShare => self.ts.push_back(t),
            }
        }
        while !self.rt.is_empty() {
            let Some(i) = self.first_running_ts() else {
                break;
            };
            let mut victim = self.take(i, now);
            victim.queued_at = now;
            self.ts.push_front(victim);
            self.dispatch(i, now);
        }
        // A new class moves steps between queues and CPUs, never loses or adds one.
        assert_eq!(
            self.steps(),
            steps_before,
            "reclassifying changed the number of steps"
        );
        assert!(
            self.rt.is_empty() || self.first_running_ts().is_none(),
            "a real-time step waits while a time-sharing one runs"
        );
    }

    /// Steps queued or running (cold paths' checks).
    fn steps(&self) -> usize {
        self.queued() + self.cpus.iter().filter(|c| c.task.is_some()).count()
    }

    /// The lowest CPU running a time-sharing step (the one a real-time
    /// step preempts). A walk over the CPUs, not a set kept up to date on
    /// every start and stop: it is only needed when no CPU is free.
    fn first_running_ts(&self) -> Option<usize> {
        self.cpus.iter().position(|c| {
            c.task
                .as_ref()
                .is_some_and(|t| t.class == SchedClass::TimeShare)
        })
    }

    /// Withdraw a process's step (a stopped CPU hog). Returns whether it was found.
    fn cancel_inner(&mut self, now: Nanos, proc: ProcId) -> bool {
        let steps_before = self.steps();
        let found = if let Some(i) = self
            .cpus
            .iter()
            .position(|c| c.task.as_ref().is_some_and(|t| t.proc == proc))
        {
            self.take(i, now);
            self.dispatch(i, now);
            true
        } else {
            let before = self.rt.len() + self.ts.len();
            self.rt.retain(|t| t.proc != proc);
            self.ts.retain(|t| t.proc != proc);
            before != self.rt.len() + self.ts.len()
        };
        // A process has one step at a time: withdrawn, it has none left.
        assert_eq!(
            self.steps() + usize::from(found),
            steps_before,
            "withdrawing process {proc}'s step withdrew another"
        );
        assert!(
            !self.has_step(proc),
            "process {proc} still has a step after it was withdrawn"
        );
        found
    }

    /// Whether `proc` has a step queued or running (checks).
    fn has_step(&self, proc: ProcId) -> bool {
        self.rt.iter().chain(&self.ts).any(|t| t.proc == proc)
            || self
                .cpus
                .iter()
                .any(|c| c.task.as_ref().is_some_and(|t| t.proc == proc))
    }

    /// Ask for `demand` ns of CPU for `proc`.
    pub fn request(&mut self, now: Nanos, proc: ProcId, class: SchedClass, demand: Nanos) {
        self.tick(now);
        self.request_inner(now, proc, class, demand, false);
    }

    /// Ask for `demand` ns of a stall on memory for `proc`: it holds a CPU
    /// but leaves its core's pipelines to the other threads.
    pub fn request_stall(&mut self, now: Nanos, proc: ProcId, class: SchedClass, demand: Nanos) {
        self.tick(now);
        self.request_inner(now, proc, class, demand, true);
    }

    /// Withdraw a process's step (a stopped CPU hog). Returns whether it was found.
    pub fn cancel(&mut self, now: Nanos, proc: ProcId) -> bool {
        self.tick(now);
        self.cancel_inner(now, proc)
    }

    /// Advance to `now`: finish steps and rotate time slices. Finished steps are appended to `done`.
    #[inline]
    pub fn advance(&mut self, now: Nanos, done: &mut Vec<StepDone>) {
        // The clock moves with each event handled (a call that handles none
        // changes nothing, whatever its `now`).
        self.advance_inner(now, done);
    }

    /// Hand CPUs freed by finished steps (and not taken back by their process)
    /// to waiting processes. Call after handling the steps [`Scheduler::advance`] returned.
    #[inline]
    pub fn settle(&mut self, now: Nanos) {
        // Not ticked (this follows `advance` at the same time, on every
        // event): a CPU handed out here is due no earlier than the clock,
        // which `set_due` asserts.
        self.settle_inner(now);
    }

    /// Move processes to a new scheduling class (see `reclassify_inner`).
    pub fn reclassify(&mut self, now: Nanos, class_of: impl Fn(ProcId) -> SchedClass) {
        self.tick(now);
        self.reclassify_inner(now, class_of);
    }

    /// Move the clock to `now`, which must not be before it.
    #[inline]
    fn tick(&mut self, now: Nanos) {
        debug_assert!(
            now >= self.clock,
            "the run queue went back in time from {} to {now}",
            self.clock
        );
        self.clock = now;
    }

    /// When the next step ends or a time slice expires.
    #[inline]
    pub fn next_event(&self) -> Option<Nanos> {
        self.events.first().map(|(at, _)| at)
    }

    /// Record when CPU `i`'s current task next needs attention.
    fn schedule_due(&mut self, i: usize) {
        if let Some(t) = self.cpus[i].task.as_ref() {
            let at = self.event_time(&self.cpus[i], t);
            self.events.remove(i as u32);
            self.set_due(i, at);
        }
    }

    /// CPU `i`, which has no event, has its next at `at`.
    #[inline(always)]
    fn set_due(&mut self, i: usize, at: Nanos) {
        debug_assert!(
            at >= self.clock,
            "CPU {i} due at {at}, before the run queue's time {}",
            self.clock
        );
        self.events.insert(at, i as u32);
    }

    fn event_time(&self, cpu: &Cpu, task: &Task) -> Nanos {
        let end = cpu
            .slice_start
            .saturating_add(wall(task.remaining_ns, task.stretch));
        match task.class {
            SchedClass::RealTime => end,
            SchedClass::TimeShare => end.min(cpu.slice_start.saturating_add(self.quantum_ns)),
        }
    }

    /// Advance to `now`: finish steps and rotate time slices. Finished steps are appended to `done`.
    // Inlined where the steps are handled; a slice's end (rare) is not.
    #[inline(always)]
    fn advance_inner(&mut self, now: Nanos, done: &mut Vec<StepDone>) {
        loop {
            let Some((at, cpu)) = self.events.first() else {
                return;
            };
            if at > now {
                return;
            }
            // Events are handled at their own time, in time order.
            self.tick(at);
            let i = cpu as usize;
            if !self.finish(i, at, done) {
                self.slice_over(i, at);
            }
        }
    }

    /// CPU `i`'s time slice is over at `at`, its step not.
    #[inline(never)]
    fn slice_over(&mut self, i: usize, at: Nanos) {
        let mut task = self.take(i, at);
        task.queued_at = at;
        if self.ts.is_empty() {
            // Nobody waits: keep running (not waiting).
            self.run_on(i, task, at);
        } else {
            self.ts.push_back(task);
            self.dispatch(i, at);
        }
    }

    /// CPU `i`'s event at `at`: if it ends the step, report it and hold the
    /// CPU for its process. What [`Scheduler::take`] does, in place: the
    /// task is not moved out only to be dropped (the common case, by far).
    #[inline(always)]
    fn finish(&mut self, i: usize, at: Nanos, done: &mut Vec<StepDone>) -> bool {
        let cpu = &mut self.cpus[i];
        let task = cpu
            .task
            .as_ref()
            .expect("an event is only due on a CPU that runs a task");
        let ran = at - cpu.slice_start;
        let work = if task.stretch.0 == task.stretch.1 {
            ran
        } else {
            work_done(ran, task.remaining_ns, task.stretch)
        };
        if work != task.remaining_ns {
            return false;
        }
        done.push(StepDone {
            proc: task.proc,
            requested_at: task.requested_at,
            // Set when it got the CPU it ran on.
            started_at: task.started_at,
            done_at: at,
            waited: task.waited_ns,
        });
        cpu.reserved_for = Some(task.proc);
        cpu.task = None;
        self.busy_ns += ran;
        // Not idle: held for the process (`idle` was clear, as it runs a task).
        // Its event, the first, is gone.
        self.events.pop_first(i as u32);
        self.reserved.push(i as u32);
        true
    }

    /// Hand CPUs freed by finished steps (and not taken back by their process)
    /// to waiting processes. Call after handling the steps [`Scheduler::advance`] returned.
    // Inlined where the steps are handled (mostly a CPU or two to free):
    // handing them out to waiting processes is not.
    #[inline(always)]
    fn settle_inner(&mut self, now: Nanos) {
        if !(self.rt.is_empty() && self.ts.is_empty()) {
            self.hand_out(now);
        } else {
            // Nobody waits: the CPUs just go idle, in any order.
            for k in 0..self.reserved.len() {
                let i = self.reserved[k] as usize;
                self.release(i);
            }
            self.reserved.clear();
        }
        debug_assert!(self.reserved.is_empty(), "CPUs still held after settling");
        debug_assert!(
            self.queued() == 0 || self.idle.first().is_none(),
            "{} steps wait while CPU {:?} is idle",
            self.queued(),
            self.idle.first()
        );
    }

    /// [`Scheduler::settle`] with processes waiting: the held CPUs go to them.
    #[inline(never)]
    fn hand_out(&mut self, now: Nanos) {
        if self.reserved.is_empty() {
            return;
        }
        // In CPU order, as a walk over all CPUs would hand them out.
        let mut held = std::mem::take(&mut self.reserved);
        held.sort_unstable();
        for &i in &held {
            let i = i as usize;
            self.release(i);
            self.dispatch(i, now);
        }
        held.clear();
        self.reserved = held;
    }

    /// CPU `i`, held for the process whose step finished there, is free.
    #[inline(always)]
    fn release(&mut self, i: usize) {
        // Only `advance` reserves a CPU, once its step is done, and only
        // taking it back (which also unlists it) puts a task there.
        let held_for = self.cpus[i].reserved_for.take();
        debug_assert!(
            held_for.is_some() && self.cpus[i].task.is_none(),
            "CPU {i} listed as reserved holds {:?} for {held_for:?}",
            self.cpus[i].task
        );
        self.idle.set(i, true);
    }

    /// Take CPU `i`'s task (and its event) off it.
    fn take(&mut self, i: usize, now: Nanos) -> Task {
        let cpu = &mut self.cpus[i];
        let mut task = cpu
            .task
            .take()
            .expect("a task is only taken off a CPU that runs one");
        // A step is taken off no later than it ends (its end is an event, and
        // events are handled in time order), so neither subtraction can
        // underflow: debug builds check them, as the assert they would be.
        let ran = now - cpu.slice_start;
        task.remaining_ns -= if task.stretch.0 == task.stretch.1 {
            ran
        } else {
            work_done(ran, task.remaining_ns, task.stretch)
        };
        self.busy_ns += ran;
        if cpu.reserved_for.is_none() {
            self.idle.set(i, true);
        }
        self.events.remove(i as u32);
        task
    }

    /// Put `task` on CPU `i` (free, or just taken off) and date its event.
    fn run_on(&mut self, i: usize, task: Task, now: Nanos) {
        self.start(i, task, now);
    }

    /// [`Scheduler::run_on`], inlined where a step mostly starts (a
    /// request that finds a CPU free).
    #[inline(always)]
    fn start(&mut self, i: usize, mut task: Task, now: Nanos) {
        debug_assert!(
            self.cpus[i].task.is_none(),
            "CPU {i} given process {}'s step while it runs another",
            task.proc
        );
        task.waited_ns += now - task.queued_at;
        if self.threads_per_core > 1 {
            task.stretch = self.stretch_on(i, task.stall);
        }
        if task.started_at == NOT_STARTED {
            task.started_at = now;
        }
        self.idle.set(i, false);
        let cpu = Cpu {
            task: None,
            slice_start: now,
            reserved_for: None,
        };
        let at = self.event_time(&cpu, &task);
        self.cpus[i] = Cpu {
            task: Some(task),
            ..cpu
        };
        self.set_due(i, at);
    }

    /// An idle CPU on the core with the fewest threads busy (the Solaris
    /// dispatcher spreads runnable threads over a CMT chip's cores before
    /// it doubles them up on one core's pipelines); the lowest such.
    #[cold]
    #[inline(never)]
    fn idle_on_quietest_core(&self) -> Option<usize> {
        let tpc = self.threads_per_core as usize;
        let mut best: Option<(usize, usize)> = None;
        for first in (0..self.cpus.len()).step_by(tpc) {
            let end = (first + tpc).min(self.cpus.len());
            let Some(i) = (first..end).find(|&i| self.idle.get(i)) else {
                continue;
            };
            let busy = self.cpus[first..end]
                .iter()
                .filter(|c| c.task.is_some() || c.reserved_for.is_some())
                .count();
            if best.is_none_or(|(b, _)| busy < b) {
                best = Some((busy, i));
            }
        }
        best.map(|(_, i)| i).or_else(|| self.idle.first())
    }

    /// How much slower a step starting on CPU `i` runs: the threads that
    /// will compute on its core (not those stalled on memory), this one
    /// included, over the core's pipelines.
    /// Set when the step starts (siblings that start or stop later do not
    /// change it: steps are short, and the average is what counts).
    #[cold]
    #[inline(never)]
    fn stretch_on(&self, i: usize, stall: bool) -> (u8, u8) {
        if stall {
            return (1, 1);
        }
        let tpc = self.threads_per_core as usize;
        let first = i / tpc * tpc;
        let siblings = self.cpus[first..(first + tpc).min(self.cpus.len())]
            .iter()
            .enumerate()
            .filter(|&(k, c)| first + k != i && c.task.as_ref().is_some_and(|t| !t.stall))
            .count() as u32;
        let running = siblings + 1;
        if running > self.pipelines_per_core {
            // Both at most `threads_per_core`, which `with_cores` keeps within a u8.
            (running as u8, self.pipelines_per_core as u8)
        } else {
            (1, 1)
        }
    }

    /// Give free CPU `i` the first waiting step, if any.
    fn dispatch(&mut self, i: usize, now: Nanos) {
        debug_assert!(
            self.cpus[i].task.is_none() && self.cpus[i].reserved_for.is_none(),
            "CPU {i} handed a step while it is not free"
        );
        if let Some(t) = self.rt.pop_front().or_else(|| self.ts.pop_front()) {
            let proc = t.proc;
            self.run_on(i, t, now);
            // The step handed out left the queue and runs on this CPU only.
            debug_assert!(
                self.rt.iter().chain(&self.ts).all(|t| t.proc != proc)
                    && self
                        .cpus
                        .iter()
                        .filter(|c| c.task.as_ref().is_some_and(|t| t.proc == proc))
                        .count()
                        == 1,
                "process {proc} has more than one step"
            );
        } else {
            debug_assert!(
                self.idle.get(i),
                "CPU {i}, left without a step, is not idle"
            );
        }
    }
}

/// Wall time of `work` ns of CPU at `stretch` (threads over pipelines).
#[inline(always)]
fn wall(work: Nanos, stretch: (u8, u8)) -> Nanos {
    if stretch.0 == stretch.1 {
        work
    } else {
        wall_shared(work, stretch)
    }
}

/// [`wall`] on a core whose pipelines are shared (out of the hot path:
/// without hardware threads it never runs).
#[cold]
#[inline(never)]
fn wall_shared(work: Nanos, stretch: (u8, u8)) -> Nanos {
    let w = (u128::from(work) * u128::from(stretch.0)).div_ceil(u128::from(stretch.1));
    Nanos::try_from(w).unwrap_or(Nanos::MAX)
}

/// Work done in `ran` ns of wall time at `stretch`, at most `remaining`
/// (rounded down: a step ends at its event, never before).
#[cold]
#[inline(never)]
fn work_done(ran: Nanos, remaining: Nanos, stretch: (u8, u8)) -> Nanos {
    if ran >= wall_shared(remaining, stretch) {
        remaining
    } else {
        // Below `remaining`, so within a u64.
        (u128::from(ran) * u128::from(stretch.1) / u128::from(stretch.0)) as Nanos
    }
}

/// [`Task::started_at`] of a step that has not had a CPU yet. A step
/// that does start at `Nanos::MAX` keeps it as its start all the same.
const NOT_STARTED: Nanos = Nanos::MAX;

#[cfg(test)]
mod tests;
