//! The validated form of a scenario file: what the simulator and the live
//! runner execute. Everything here has passed the loader's checks (names
//! resolve, instance numbers are in range, numbers are in their ranges).

use fusion_core::config::{Catalog, Costs, Nanos, ParamValue, Params, Server, WorkloadSpec};
use fusion_core::metrics::Metric;

/// A scenario with its variants resolved. When the file has no `[[variant]]`,
/// `variants` holds one entry named after the scenario.
#[derive(Clone, Debug)]
pub struct LoadedScenario {
    /// Path as given (for messages and reports).
    pub path: String,
    pub name: String,
    pub title: String,
    /// The myth under test, quoted from the deck, if the scenario is one.
    pub myth: Option<String>,
    pub description: String,
    pub variants: Vec<Variant>,
    pub expectations: Vec<Expectation>,
    /// True when the file declared variants (reports then show them side by side).
    pub has_variants: bool,
    /// The scenario's place in the myth tour (`[tour]`), if it takes part.
    pub tour: Option<TourSpec>,
}

impl LoadedScenario {
    /// Instances of its largest variant's cluster (variants may differ in
    /// size): what a run of the whole file needs at once.
    pub fn instances_max(&self) -> usize {
        self.variants
            .iter()
            .map(|v| v.scenario.instances.len())
            .max()
            .unwrap_or(0)
    }
}

/// `[tour]`: how the myth tour summarizes the scenario in one line.
#[derive(Clone, Debug)]
pub struct TourSpec {
    /// Position in the tour (lower first).
    pub order: u32,
    /// Which part of the tour: the RAC myths, or inside one node.
    pub part: TourPart,
    /// The figure the tour shows. Its `variant` is always set (the first
    /// variant when the file named none).
    pub measured: MetricRef,
    /// Figures shown beside it, e.g. the same one in another variant
    /// (`versus = [{ variant = "index" }]`); each has its variant set.
    pub versus: Vec<MetricRef>,
    /// What the figure is, e.g. `inst1 avg gc cr receive with inst2's LMS starved`.
    pub label: String,
    /// What the deck measured for the same figure, as free text.
    pub deck: String,
}

/// The parts of the tour, printed one after the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum TourPart {
    /// The RAC myths deck (seed 004): `part = "myths"`, the default.
    #[default]
    Myths,
    /// Inside one node: NUMA, writers, CMT, parallel maintenance (seeds
    /// 000-003): `part = "node"`.
    Node,
}

/// One runnable configuration.
#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    pub description: String,
    pub scenario: Scenario,
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub seed: u64,
    /// Parameters of each instance; index 0 is instance 1.
    pub instances: Vec<Params>,
    pub costs: Costs,
    pub network: NetworkModel,
    pub storage: StorageModel,
    /// The server each instance runs on (`[server]`), if described.
    pub server: Option<Server>,
    pub catalog: Catalog,
    pub workloads: Vec<WorkloadSpec>,
    pub phases: Vec<Phase>,
}

/// The interconnect between every pair of instances.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkModel {
    /// One-way latency of a message, before serialization.
    pub latency: Nanos,
    /// Uniform random extra latency in `[0, jitter]`.
    pub jitter: Nanos,
    /// Link rate in bits per second; serialization time = bytes * 8 / rate.
    pub bandwidth_bps: u64,
    /// Size of a GCS message without a block (AWR assumes 200 bytes).
    pub message_bytes: u32,
}

impl Default for NetworkModel {
    fn default() -> Self {
        NetworkModel {
            latency: 50_000,
            jitter: 10_000,
            bandwidth_bps: 10_000_000_000,
            message_bytes: 200,
        }
    }
}

/// The shared block store: datafiles and one redo thread per instance.
#[derive(Clone, Debug, PartialEq)]
pub struct StorageModel {
    pub read_latency: Nanos,
    pub write_latency: Nanos,
    pub log_write_latency: Nanos,
    /// Datafile I/O operations per second the array sustains (reads and writes); 0 = unbounded.
    pub iops: u64,
}

impl Default for StorageModel {
    fn default() -> Self {
        StorageModel {
            read_latency: 3_000_000,
            write_latency: 3_000_000,
            log_write_latency: 1_000_000,
            iops: 20_000,
        }
    }
}

/// A stretch of the timeline with its own faults and parameter changes.
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: String,
    pub duration: Nanos,
    /// Parameter changes applied when the phase starts: (1-based instance, name, value).
    pub parameters: Vec<(u8, String, ParamValue)>,
    pub faults: Vec<Fault>,
    /// Workloads whose sessions run in this phase; `None` = all.
    pub workloads: Option<Vec<String>>,
    /// `checkpoint = true`: the phase starts with `ALTER SYSTEM
    /// CHECKPOINT` on every instance (DBWR writes every dirty buffer).
    pub checkpoint: bool,
    /// `backup = { ... }`: the phase starts an RMAN backup of the database,
    /// run by instance 1 (fusion-core `instance/backup.rs`).
    pub backup: Option<Backup>,
}

/// An RMAN `BACKUP DATABASE` (a phase's `backup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backup {
    /// `CONFIGURE DEVICE TYPE DISK PARALLELISM channels`.
    pub channels: u32,
    /// `SECTION SIZE` in MB: multisection, each channel backs up a section
    /// at a time. `None`: a channel backs up a whole datafile.
    pub section_size_mb: Option<u32>,
}

/// Which network links a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkTarget {
    /// Every link.
    All,
    /// Every link into and out of this instance.
    Instance(u8),
    /// Only from -> to (one direction).
    Link { from: u8, to: u8 },
}

/// Which storage device a disk fault slows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The instance's online redo log (LGWR writes).
    Redo,
    /// Datafile reads and writes of the instance.
    Data,
}

/// A fault active for the whole phase. Names follow the chaos tools
/// (Chaos Mesh StressChaos/IOChaos, netem/toxiproxy); units are in the field names.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// `stress_cpu`: `workers` CPU-bound processes in the time-sharing class, each busy `load_pct` of the time.
    StressCpu {
        instance: u8,
        workers: u32,
        load_pct: u32,
    },
    /// `disk_latency`: I/O on the device takes `latency` instead of its normal time (plus `jitter`).
    DiskLatency {
        instance: u8,
        device: Device,
        latency: Nanos,
        jitter: Nanos,
    },
    /// `latency`: extra one-way delay on the selected links.
    NetworkLatency {
        target: LinkTarget,
        latency: Nanos,
        jitter: Nanos,
    },
    /// `bandwidth`: the selected links run at `rate_bps`.
    Bandwidth { target: LinkTarget, rate_bps: u64 },
    /// `kill`: the instance crashes `at` after the phase starts (every
    /// process stops at once; what it had not written is only in its redo).
    Kill { instance: u8, at: Nanos },
    /// `restart`: a killed instance starts again `at` after the phase
    /// starts, with an empty cache, and rejoins the cluster.
    Restart { instance: u8, at: Nanos },
    /// `pause`: the instance freezes (as SIGSTOP does) from `at` for `duration`.
    Pause {
        instance: u8,
        at: Nanos,
        duration: Nanos,
    },
    /// `loss`: each message on the selected links is dropped with
    /// probability `loss_ppm` (parts per million); with `correlation_ppm`,
    /// a drop makes the next message's drop that much more likely (netem's
    /// correlation).
    Loss {
        target: LinkTarget,
        loss_ppm: u32,
        correlation_ppm: u32,
    },
    /// `partition`: the selected links carry nothing for the phase.
    Partition {
        target: LinkTarget,
        direction: Direction,
    },
}

/// Which way a `partition` cuts the target's links (Chaos Mesh's `direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Links into and out of the target.
    Both,
    /// Links into the target: it hears nothing.
    To,
    /// Links out of the target: nobody hears it.
    From,
}

impl Fault {
    /// Whether the fault is a failure (a crash, a freeze, lost messages, a
    /// partition) rather than a slowdown: the membership and recovery story.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Fault::Kill { .. }
                | Fault::Restart { .. }
                | Fault::Pause { .. }
                | Fault::Loss { .. }
                | Fault::Partition { .. }
        )
    }

    /// The fault's `kind` as the scenario file writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::StressCpu { .. } => "stress_cpu",
            Fault::DiskLatency { .. } => "disk_latency",
            Fault::NetworkLatency { .. } => "latency",
            Fault::Bandwidth { .. } => "bandwidth",
            Fault::Kill { .. } => "kill",
            Fault::Restart { .. } => "restart",
            Fault::Pause { .. } => "pause",
            Fault::Loss { .. } => "loss",
            Fault::Partition { .. } => "partition",
        }
    }
}

/// A measured figure at one place of the run.
#[derive(Clone, Debug)]
pub struct MetricRef {
    pub metric: Metric,
    /// The metric as the file wrote it, for reports.
    pub text: String,
    /// `None`: the only variant, or the same variant as the other side.
    pub variant: Option<String>,
    pub phase: String,
    /// 1-based instance; `None` sums the cluster.
    pub instance: Option<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
    pub fn holds(self, l: f64, r: f64) -> bool {
        match self {
            CmpOp::Lt => l < r,
            CmpOp::Le => l <= r,
            CmpOp::Gt => l > r,
            CmpOp::Ge => l >= r,
        }
    }
}

/// The right-hand side of a comparison.
#[derive(Clone, Debug)]
pub enum Operand {
    Metric(MetricRef),
    Value(f64),
}

/// `left op factor * right`; the verdict is REPRODUCED when all hold.
#[derive(Clone, Debug)]
pub struct Expectation {
    pub name: String,
    pub left: MetricRef,
    pub op: CmpOp,
    pub right: Operand,
    pub factor: f64,
}
