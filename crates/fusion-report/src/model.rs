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
}

/// The outcome of one expectation.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub name: String,
    pub passed: bool,
    /// The numbers behind it, e.g. `inst1 baseline 0.41 ms -> lms-normal 38.2 ms (x93.2, need >= x10)`.
    pub detail: String,
}
