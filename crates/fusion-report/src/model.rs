//! What a run produced: per variant, per phase, per instance, the activity of
//! the interval (a difference of two snapshots, as AWR reports one).

use fusion_core::stats::Stats;

/// The result of running one scenario file (all its variants).
#[derive(Clone, Debug)]
pub struct RunResult {
    pub scenario: String,
    pub title: String,
    pub myth: Option<String>,
    pub seed: u64,
    /// True when the file declared variants; the text report then shows them side by side.
    pub has_variants: bool,
    pub variants: Vec<VariantResult>,
    pub verdicts: Vec<Verdict>,
}

impl RunResult {
    /// REPRODUCED when every expectation holds (and there is at least one).
    pub fn reproduced(&self) -> bool {
        !self.verdicts.is_empty() && self.verdicts.iter().all(|v| v.passed)
    }
}

#[derive(Clone, Debug)]
pub struct VariantResult {
    pub name: String,
    pub phases: Vec<PhaseResult>,
    /// The figures of every interval of the run, per instance (`None`
    /// when the driver took none).
    pub series: Option<crate::series::Series>,
}

impl VariantResult {
    /// The phase of that name, if the run has it.
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.name == name)
    }
}

#[derive(Clone, Debug)]
pub struct PhaseResult {
    pub name: String,
    /// Cluster time at the start of the phase.
    pub start_ns: u64,
    pub elapsed_ns: u64,
    pub instances: Vec<InstanceResult>,
    /// The alert log lines of the phase, every instance's, in time order
    /// (reconfigurations, evictions, instance recovery, and the faults that
    /// killed or froze an instance).
    pub alert_log: Vec<AlertEntry>,
    /// The instance recoveries that completed in the phase, in the order
    /// they completed (the recovery summary and JSON `recovery`).
    pub recovery: Vec<RecoveryEntry>,
    /// `V$GCSPFMASTER_INFO` at the end of the phase: the objects dynamic
    /// remastering moved since the last reconfiguration, in pkey order
    /// (empty without a DRM, and in a live run).
    pub pf_masters: Vec<PfMasterRow>,
}

/// One row of `V$GCSPFMASTER_INFO`: an object dynamic remastering moved.
/// Masters are numbered from 0, as Oracle's view numbers them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PfMasterRow {
    /// The segment's name (a table or an index of the scenario).
    pub object: String,
    /// Its pkey (`DATA_OBJECT_ID`; the alert log's `transfer pkey`).
    pub pkey: u32,
    pub current_master: u8,
    /// `None` when the master before the last remaster was the hash's
    /// (Oracle shows 32767).
    pub previous_master: Option<u8>,
    pub remaster_count: u32,
}

/// One instance recovery, as the report shows it. Instances are 1-based;
/// times are cluster time (ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryEntry {
    pub dead_instance: u8,
    pub recovered_by: u8,
    /// The survivors declared it dead (the reconfiguration began).
    pub detected_ns: u64,
    /// The global resource directory was frozen this long.
    pub freeze_ns: u64,
    /// From detection to the end of recovery (its uncommitted transactions
    /// rolled back).
    pub recovery_ns: u64,
    pub redo_bytes_read: u64,
    pub blocks_recovered: u64,
    pub transactions_rolled_back: u64,
    /// How long the survivors' committed transactions per second stayed
    /// below half their rate before the fault; `None` when there was no
    /// rate before the fault to compare with (`fusion_driver::brownout`).
    pub brownout_ns: Option<u64>,
}

impl RecoveryEntry {
    /// `figure` of this recovery in the unit `recovery:<figure>` reads it
    /// (`detected_s` from `phase_start_ns`); `None` for an unknown brownout.
    pub fn figure(
        &self,
        figure: fusion_core::metrics::RecoveryFigure,
        phase_start_ns: u64,
    ) -> Option<f64> {
        use fusion_core::metrics::RecoveryFigure as F;
        const NS_PER_MS: f64 = 1e6;
        Some(match figure {
            F::DetectedS => (self.detected_ns as f64 - phase_start_ns as f64) / 1e9,
            F::FreezeMs => self.freeze_ns as f64 / NS_PER_MS,
            F::RecoveryMs => self.recovery_ns as f64 / NS_PER_MS,
            F::BrownoutMs => self.brownout_ns? as f64 / NS_PER_MS,
            // Whole KB, as the alert log's `Completed redo scan read N KB redo`.
            F::RedoKbRead => (self.redo_bytes_read / 1024) as f64,
            F::BlocksRecovered => self.blocks_recovered as f64,
            F::TransactionsRolledBack => self.transactions_rolled_back as f64,
        })
    }
}

/// One alert log line: when (cluster time), which instance (1-based), what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlertEntry {
    pub at_ns: u64,
    pub instance: u8,
    pub line: String,
}

impl PhaseResult {
    /// The instance with that 1-based number, if it took part.
    pub fn instance(&self, id: u8) -> Option<&InstanceResult> {
        self.instances.iter().find(|i| i.id == id)
    }

    /// Cluster-wide activity: the sum of every instance's counters.
    pub fn cluster_stats(&self) -> Stats {
        let mut total = Stats::default();
        for i in &self.instances {
            total.merge(&i.stats);
        }
        total
    }
}

#[derive(Clone, Debug)]
pub struct InstanceResult {
    /// 1-based instance number.
    pub id: u8,
    pub cpu_count: u32,
    /// `db_block_size` of the instance (cluster-wide in practice): the bytes a
    /// shipped block costs on the wire, for the estimated interconnect traffic.
    pub db_block_size: u32,
    /// Activity during the phase.
    pub stats: Stats,
    /// On a server of hardware threads (`[server]` `threads_per_core` > 1):
    /// what `cpu_count` counts and the parallel defaults derived from it.
    pub threads: Option<ThreadDefaults>,
}

/// `cpu_count` on a chip-multithreading server: cores times threads, and
/// the parallel-execution limits Oracle derives from it (the T-series
/// white paper's table 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadDefaults {
    pub cores: u32,
    pub threads_per_core: u32,
    pub parallel_max_servers: u32,
    pub parallel_servers_target: u32,
    pub parallel_degree_limit: u32,
}

/// The outcome of one expectation.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub name: String,
    pub passed: bool,
    /// The numbers behind it, e.g. `inst1 baseline 0.41 ms -> lms-normal 38.2 ms (x93.2, need >= x10)`.
    pub detail: String,
    /// The measured figure and what it was held against, when both sides
    /// had a value (a sweep's median and range).
    pub measured: Option<Measured>,
}

/// An expectation's two sides as numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The left side.
    pub value: f64,
    /// What the left side is compared with: the factor times the right side.
    pub target: f64,
    pub(crate) shown: crate::fmt::Shown,
}

impl Measured {
    /// A figure in the left side's unit, as the verdict prints it.
    pub fn show(&self, v: f64) -> String {
        self.shown.show(v)
    }
}
