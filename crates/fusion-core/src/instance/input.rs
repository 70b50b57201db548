//! What a driver gives an instance: its configuration at start and the
//! administrative commands.

use std::sync::Arc;

use super::membership::Delivery;
use crate::config::{Catalog, Costs, ParamValue, Params, Server, WorkloadSpec};
use crate::layout::Layout;
use crate::types::InstId;

/// Everything an instance needs at start.
#[derive(Clone, Debug)]
pub struct InstanceConfig {
    pub id: InstId,
    pub instances: u8,
    pub params: Params,
    pub costs: Costs,
    pub catalog: Arc<Catalog>,
    pub layout: Arc<Layout>,
    pub workloads: Arc<Vec<WorkloadSpec>>,
    pub seed: u64,
    /// Record reads and writes for the correctness checkers (tests).
    pub record_history: bool,
    /// How the database's messages reach the peers (`link.rs`): straight
    /// through, or numbered, acknowledged and sent again when a transport's
    /// connection comes back (live) or after 500 ms (a phase has a `loss`
    /// or a `partition` fault; then a block not received within 500 ms is
    /// `lost`).
    pub delivery: Delivery,
    /// How many times this instance started before (0: with the cluster).
    /// A restarted instance joins the running cluster (a reconfiguration)
    /// before its sessions start, and numbers its transactions after its
    /// earlier lives' (`LIFE_XIDS`).
    pub life: u32,
    /// The server the instance runs on (`[server]`): locality groups,
    /// hardware threads, memory costs. `None`: `cpu_count` plain CPUs and
    /// no memory model.
    pub server: Option<Server>,
}

/// Administrative commands (the admin service in the live runtime, phase
/// boundaries in the simulator).
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Change a parameter that may change online (see [`Params::PHASE_CHANGEABLE`]).
    SetParameter { name: String, value: ParamValue },
    /// Start `workers` CPU-bound processes busy `load_pct` of the time (0 workers stops them).
    StressCpu { workers: u32, load_pct: u32 },
    /// Enable exactly these workloads (by name; `None`: all). A session of
    /// another workload finishes the execution it is in, ends its
    /// transaction there (committing what it changed) and idles.
    EnableWorkloads(Option<Vec<String>>),
    /// A measured interval starts (a phase): forget the largest waits seen so
    /// far, so the next snapshot's `max_ns` is the interval's own
    /// ([`Stats::reset_peaks`](crate::stats::Stats::reset_peaks)).
    ResetPeaks,
    /// `ALTER SYSTEM CHECKPOINT`: DBWR writes every buffer dirty now, its
    /// writers going from one batch straight to the next until none is
    /// left (`DBWR checkpoints` counts the checkpoints completed).
    Checkpoint,
    /// RMAN `BACKUP DATABASE` with `CONFIGURE DEVICE TYPE DISK PARALLELISM
    /// channels` and, when given, `SECTION SIZE section_size_mb M`
    /// (multisection): see `backup.rs`.
    Backup {
        channels: u32,
        section_size_mb: Option<u32>,
    },
}
