//! Maintenance jobs beside the workload: RMAN backups (rman.rs, routed in
//! backup.rs) and the `stress_cpu` fault's CPU hogs (hogs.rs, routed in
//! stress.rs). Both only take CPU, I/O and timers from the kernel and write
//! to the alert log and the trace: their methods take those two and nothing
//! else, and nothing else in the instance asks them anything (tests.rs
//! drives them alone).

mod backup;
mod hogs;
mod rman;
mod stress;

#[derive(Debug, Default)]
pub(super) struct Maintenance {
    /// RMAN's channels and the backup they run.
    rman: rman::Rman,
    /// The CPU hogs of `stress_cpu`.
    hogs: hogs::CpuHogs,
}

#[cfg(test)]
mod tests;
