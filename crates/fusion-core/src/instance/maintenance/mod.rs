//! Maintenance jobs beside the workload: RMAN backups (backup.rs) and the
//! `stress_cpu` fault's CPU hogs (hogs.rs). Both only take CPU and I/O
//! through the kernel; nothing else in the instance asks them anything.

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
