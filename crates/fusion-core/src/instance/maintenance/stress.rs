//! The `stress_cpu` fault: `Maintenance` starts, stops and wakes the CPU
//! hogs (hogs.rs) through the kernel's run queue and timers.

use super::super::events::{Proc, Timer};
use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::Maintenance;

impl Maintenance {
    pub fn set_hogs(&mut self, k: &mut Kernel, obs: &mut Observer, workers: u32, load_pct: u32) {
        let were_busy = self.hogs.fully_loaded();
        for p in self.hogs.restart(load_pct) {
            k.cancel_cpu(p);
            if were_busy {
                obs.trace_hog(k.now(), p, false);
            }
        }
        for i in 0..workers {
            // Hog processes are created once and reused across phases.
            let name = format!("stress{i}");
            let proc = match k.find_proc(&name) {
                Some(p) => p,
                None => k.add_proc(Proc::Hog(i), name),
            };
            let demand = self.hogs.add(proc);
            k.cpu(proc, demand);
            if self.hogs.fully_loaded() {
                obs.trace_hog(k.now(), proc, true);
            }
        }
    }

    pub fn hog_step_done(&mut self, k: &mut Kernel, h: u32) {
        // A partly-loaded hog sleeps for the rest of its period.
        if self
            .hogs
            .procs()
            .iter()
            .any(|&p| k.proc(p) == Some(Proc::Hog(h)))
        {
            let (sleep, epoch) = (self.hogs.sleep_time(), self.hogs.epoch());
            k.arm(sleep, Timer::HogWake(h, epoch));
        }
    }

    /// A partly-loaded hog's sleep is over: it is busy again.
    pub fn hog_wake(&mut self, k: &mut Kernel, h: u32, epoch: u64) {
        if let Some(p) = self.hogs.wakes(h, epoch) {
            let busy = self.hogs.busy_time();
            k.cpu(p, busy);
        }
    }
}
