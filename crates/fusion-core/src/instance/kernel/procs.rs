//! The process table with the CPUs they run on: each process's kind, name
//! and scheduling class, the run queues, and memory by locality group.

use super::super::events::Proc;
use super::super::numa::Numa;
use crate::config::{Nanos, Params};
use crate::cpu::{ProcId, SchedClass, StepDone};
use crate::cpus::Cpus;

pub(super) struct ProcTable {
    procs: Vec<Proc>,
    names: Vec<String>,
    classes: Vec<SchedClass>,
    cpus: Cpus,
    /// Memory by locality group, with a server description (numa.rs).
    numa: Option<Numa>,
    /// Steps the CPUs finished at the instant being handled.
    done: Vec<StepDone>,
}

impl ProcTable {
    pub fn new(cpus: Cpus, numa: Option<Numa>) -> ProcTable {
        ProcTable {
            procs: Vec::new(),
            names: Vec::new(),
            classes: Vec::new(),
            cpus,
            numa,
            done: Vec::new(),
        }
    }

    pub fn add(&mut self, p: Proc, name: String, params: &Params) -> ProcId {
        debug_assert_eq!(self.procs.len(), self.names.len());
        self.procs.push(p);
        self.names.push(name);
        let id = ProcId::try_from(self.procs.len() - 1).expect("fewer than 2^32 processes");
        let class = self.class_by_name(id, params);
        self.classes.push(class);
        if let Some(numa) = self.numa.as_mut() {
            numa.add_proc(id, None);
        }
        debug_assert_eq!(self.procs.len(), self.classes.len());
        id
    }

    #[inline(always)]
    pub fn get(&self, id: ProcId) -> Option<Proc> {
        self.procs.get(id as usize).copied()
    }

    pub fn name(&self, id: ProcId) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }

    pub fn find(&self, name: &str) -> Option<ProcId> {
        self.names
            .iter()
            .position(|n| n == name)
            .and_then(|p| ProcId::try_from(p).ok())
    }

    /// The scheduling class of a process, as last worked out from the parameters.
    #[inline(always)]
    pub fn class_of(&self, proc: ProcId) -> SchedClass {
        debug_assert!(
            (proc as usize) < self.classes.len(),
            "process {proc} is not in the process table of {}",
            self.classes.len()
        );
        self.classes
            .get(proc as usize)
            .copied()
            .unwrap_or(SchedClass::TimeShare)
    }

    /// The scheduling class the parameters give a process (by its name).
    fn class_by_name(&self, proc: ProcId, params: &Params) -> SchedClass {
        let name = self.name(proc).unwrap_or("");
        if params.is_high_priority(name) {
            SchedClass::RealTime
        } else {
            SchedClass::TimeShare
        }
    }

    /// Work the classes out again from the parameters; they apply at once,
    /// to processes already waiting for a CPU too.
    pub fn reclassify(&mut self, now: Nanos, params: &Params) {
        let n = ProcId::try_from(self.procs.len()).expect("fewer than 2^32 processes");
        self.classes = (0..n).map(|p| self.class_by_name(p, params)).collect();
        let classes = &self.classes;
        self.cpus.reclassify(now, |p| {
            classes
                .get(p as usize)
                .copied()
                .unwrap_or(SchedClass::TimeShare)
        });
    }

    /// Ask for `demand` ns of CPU for `proc`, on its home group's CPUs.
    #[inline(always)]
    pub fn request(&mut self, now: Nanos, proc: ProcId, demand: Nanos) {
        let class = self.class_of(proc);
        let group = self.numa.as_ref().map_or(0, |n| n.home(proc));
        self.cpus.request(now, proc, class, demand, group);
    }

    pub fn cancel(&mut self, now: Nanos, proc: ProcId) -> bool {
        self.cpus.cancel(now, proc)
    }

    #[inline(always)]
    pub fn next_event(&self) -> Option<Nanos> {
        self.cpus.next_event()
    }

    /// Finish the steps due at `now`: read them with [`ProcTable::done`].
    #[inline(always)]
    pub fn advance(&mut self, now: Nanos) {
        debug_assert!(self.done.is_empty(), "steps left from an earlier instant");
        self.cpus.advance(now, &mut self.done);
    }

    #[inline(always)]
    pub fn done(&self, k: usize) -> Option<StepDone> {
        self.done.get(k).copied()
    }

    /// The steps finished at `now` are handled.
    #[inline(always)]
    pub fn settle(&mut self, now: Nanos) {
        self.done.clear();
        self.cpus.settle(now);
    }

    pub fn cpus(&self) -> &Cpus {
        &self.cpus
    }

    pub fn cpus_mut(&mut self) -> &mut Cpus {
        &mut self.cpus
    }

    #[inline(always)]
    pub fn numa(&self) -> Option<&Numa> {
        self.numa.as_ref()
    }

    #[inline(always)]
    pub fn numa_mut(&mut self) -> Option<&mut Numa> {
        self.numa.as_mut()
    }
}
