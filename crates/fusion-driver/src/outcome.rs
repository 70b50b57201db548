//! A run's result, the same from either driver: per phase the difference of
//! two snapshots of every instance's counters (as AWR reports an interval),
//! per variant the phases with what the driver saw, and for the run the
//! variants with the verdicts of the scenario's expectations.

use fusion_check::CheckReport;
use fusion_core::config::Nanos;
use fusion_core::stats::{Stat, Stats};
use fusion_report::{InstanceResult, PhaseResult, RunResult, VariantResult};
use fusion_scenario::{LoadedScenario, Scenario};

/// How a variant ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ran {
    /// On the simulator: events processed and cluster time simulated (up
    /// to the last phase's end, without the end-of-run quiesce).
    Simulated { events: u64, simulated_ns: Nanos },
    /// On a live cluster, in real time.
    Live,
}

/// One variant's run, from either driver.
#[derive(Clone, Debug)]
pub struct VariantOutcome {
    pub result: VariantResult,
    pub ran: Ran,
    /// Blocks shipped between instances (CR and current), over every phase.
    pub transfers: u64,
    /// Problems the run found (should be none): protocol errors the
    /// instances reported, a cluster that did not settle, and the checkers'
    /// violations (also in `check`).
    pub errors: Vec<String>,
    /// The checkers' findings, when the run was checked.
    pub check: Option<CheckReport>,
}

impl VariantOutcome {
    /// The outcome of a variant's phases, before any problem is known.
    pub fn new(result: VariantResult, ran: Ran) -> VariantOutcome {
        let transfers = result
            .phases
            .iter()
            .flat_map(|p| p.instances.iter())
            .map(|x| {
                x.stats.get(Stat::GcCrBlocksReceived) + x.stats.get(Stat::GcCurrentBlocksReceived)
            })
            .sum();
        VariantOutcome {
            result,
            ran,
            transfers,
            errors: Vec::new(),
            check: None,
        }
    }

    /// Events the simulator processed (0 for a live run).
    pub fn events(&self) -> u64 {
        match self.ran {
            Ran::Simulated { events, .. } => events,
            Ran::Live => 0,
        }
    }

    /// Cluster time the simulator simulated (0 for a live run).
    pub fn simulated_ns(&self) -> Nanos {
        match self.ran {
            Ran::Simulated { simulated_ns, .. } => simulated_ns,
            Ran::Live => 0,
        }
    }

    /// Whether `error` is one of the checkers' violations (else the
    /// protocol's or the driver's problem).
    pub fn is_violation(&self, error: &str) -> bool {
        self.check
            .as_ref()
            .is_some_and(|c| c.violations.iter().any(|v| v == error))
    }

    /// Record the checkers' findings, their violations among the errors.
    pub fn set_check(&mut self, check: CheckReport) {
        self.errors.extend(check.violations.iter().cloned());
        self.check = Some(check);
    }
}

/// One phase of `scenario` between the counters of every instance before
/// (`before`, 0-based instance order) and after it (`after`). Counters are
/// differenced; the largest waits are `after`'s own, which are the phase's
/// because the phase's first command reset them (`Command::ResetPeaks`).
/// The phase's instance recoveries (`recovery`) are left for the driver.
pub fn phase_result(
    name: &str,
    scenario: &Scenario,
    start_ns: Nanos,
    elapsed_ns: Nanos,
    before: &[Stats],
    after: &[Stats],
    mut alert_log: Vec<fusion_report::AlertEntry>,
) -> PhaseResult {
    // In time order; lines of one instance at one instant keep their order.
    alert_log.sort_by_key(|a| a.at_ns);
    PhaseResult {
        alert_log,
        // Filled in by the driver once the run is over: a recovery's
        // brownout is measured past the phase (`brownout::recovery_entry`).
        recovery: Vec::new(),
        // The simulator fills it in from its instances (`pf_master_rows`).
        pf_masters: Vec::new(),
        name: name.to_string(),
        start_ns,
        elapsed_ns,
        instances: after
            .iter()
            .zip(before)
            .zip(&scenario.instances)
            .enumerate()
            .map(|(i, ((a, b), params))| InstanceResult {
                id: (i + 1) as u8,
                cpu_count: params.cpu_count,
                db_block_size: params.db_block_size,
                stats: a.since(b),
                threads: scenario
                    .server
                    .as_ref()
                    .filter(|s| s.threads_per_core > 1)
                    .map(|s| fusion_report::ThreadDefaults {
                        cores: s.groups.saturating_mul(s.cores_per_group),
                        threads_per_core: s.threads_per_core,
                        parallel_max_servers: params.px.max_servers(params.cpu_count),
                        parallel_servers_target: params.px.servers_target(params.cpu_count),
                        parallel_degree_limit: params.px.degree_limit(params.cpu_count),
                    }),
            })
            .collect(),
    }
}

/// The result of every variant of `loaded`, in order, with the verdicts of
/// its expectations; `seed` is the one forced on every variant (`--seed`).
pub fn run_result(
    loaded: &LoadedScenario,
    seed: Option<u64>,
    outcomes: &[VariantOutcome],
) -> RunResult {
    let variants: Vec<VariantResult> = outcomes.iter().map(|o| o.result.clone()).collect();
    let verdicts = fusion_report::evaluate(loaded, &variants);
    let seed = seed
        .or_else(|| loaded.variants.first().map(|v| v.scenario.seed))
        .unwrap_or(0);
    RunResult {
        scenario: loaded.name.clone(),
        title: loaded.title.clone(),
        myth: loaded.myth.clone(),
        seed,
        has_variants: loaded.has_variants,
        variants,
        verdicts,
    }
}

/// `V$GCSPFMASTER_INFO` as the report shows it: `info` (an instance's
/// `Instance::gcspfmaster_info`) with each object's name from `catalog`
/// (pkeys are the tables in catalog order, then the indexes).
pub fn pf_master_rows(
    catalog: &fusion_core::config::Catalog,
    info: &[fusion_core::instance::PfMaster],
) -> Vec<fusion_report::PfMasterRow> {
    let names: Vec<&str> = catalog
        .tables
        .iter()
        .map(|t| t.name.as_str())
        .chain(catalog.indexes.iter().map(|i| i.name.as_str()))
        .collect();
    let mut rows: Vec<fusion_report::PfMasterRow> = info
        .iter()
        .map(|m| fusion_report::PfMasterRow {
            object: usize::try_from(m.object)
                .ok()
                .and_then(|i| names.get(i))
                .map_or_else(|| format!("pkey {}", m.object), |n| (*n).to_string()),
            pkey: m.object,
            current_master: m.current.0,
            previous_master: m.previous.map(|p| p.0),
            remaster_count: m.remasters,
        })
        .collect();
    rows.sort_by_key(|r| r.pkey);
    rows
}
