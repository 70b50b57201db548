//! Maintenance jobs beside the workload: RMAN backups (backup.rs) and the
//! `stress_cpu` fault's CPU hogs (hogs.rs). Both only take CPU, I/O and
//! timers from the kernel and write to the alert log and the trace: their
//! methods take those two and nothing else, and nothing else in the
//! instance asks them anything (tests.rs drives them alone).

mod backup;
mod hogs;
mod rman;

#[derive(Debug, Default)]
pub(super) struct Maintenance {
    /// RMAN's channels and the backup they run.
    rman: rman::Rman,
    /// The CPU hogs of `stress_cpu`.
    hogs: hogs::CpuHogs,
}

#[cfg(test)]
mod tests;
