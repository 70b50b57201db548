//! What the simulator's tests (`crates/fusion-sim/tests`) and the workspace
//! tests (`tests/`) share to describe a run: [`ScenarioBuilder`] and the
//! pieces of a scenario with the defaults every test used to spell out, and
//! [`load_short`] for scenario files with every phase shortened.
//!
//! Tests build `Scenario` values directly (no file format involved) unless
//! they test a file.

use fusion_core::config::{
    Access, Catalog, Costs, IndexDef, IndexKind, KeyDist, KeySpec, Nanos, Params, SequenceDef,
    Step, TableDef, TxnTemplate, WorkloadSpec,
};
use fusion_scenario::{LoadedScenario, NetworkModel, Phase, Scenario, StorageModel};

/// A scenario put together piece by piece: `instances` alike (default
/// parameters), the default costs, network and storage, seed 1, and nothing
/// else until added.
#[derive(Clone, Debug)]
pub struct ScenarioBuilder {
    scenario: Scenario,
}

impl ScenarioBuilder {
    pub fn new(instances: u8) -> ScenarioBuilder {
        ScenarioBuilder {
            scenario: Scenario {
                seed: 1,
                instances: vec![Params::default(); usize::from(instances)],
                costs: Costs::default(),
                network: NetworkModel::default(),
                storage: StorageModel::default(),
                server: None,
                catalog: Catalog::default(),
                workloads: Vec::new(),
                phases: Vec::new(),
            },
        }
    }

    pub fn seed(mut self, seed: u64) -> ScenarioBuilder {
        self.scenario.seed = seed;
        self
    }

    /// The same parameters on every instance.
    pub fn params(mut self, params: Params) -> ScenarioBuilder {
        for p in &mut self.scenario.instances {
            *p = params.clone();
        }
        self
    }

    /// Each instance's parameters from its 0-based index.
    pub fn params_each(mut self, params: impl Fn(usize) -> Params) -> ScenarioBuilder {
        for (i, p) in self.scenario.instances.iter_mut().enumerate() {
            *p = params(i);
        }
        self
    }

    pub fn network(mut self, network: NetworkModel) -> ScenarioBuilder {
        self.scenario.network = network;
        self
    }

    /// Every table, index and sequence at once (replacing any added).
    pub fn catalog(mut self, catalog: Catalog) -> ScenarioBuilder {
        self.scenario.catalog = catalog;
        self
    }

    pub fn table(mut self, table: TableDef) -> ScenarioBuilder {
        self.scenario.catalog.tables.push(table);
        self
    }

    pub fn index(mut self, index: IndexDef) -> ScenarioBuilder {
        self.scenario.catalog.indexes.push(index);
        self
    }

    pub fn sequence(mut self, sequence: SequenceDef) -> ScenarioBuilder {
        self.scenario.catalog.sequences.push(sequence);
        self
    }

    pub fn workload(mut self, workload: WorkloadSpec) -> ScenarioBuilder {
        self.scenario.workloads.push(workload);
        self
    }

    pub fn phase(mut self, phase: Phase) -> ScenarioBuilder {
        self.scenario.phases.push(phase);
        self
    }

    pub fn build(self) -> Scenario {
        self.scenario
    }
}

/// Parameters with `cpu_count` CPUs and a buffer cache of `buffers` 8 KB
/// blocks, the rest default.
pub fn params(cpu_count: u32, buffers: u64) -> Params {
    Params {
        cpu_count,
        db_cache_size: buffers * 8192,
        ..Params::default()
    }
}

/// A table of `rows` keyed 1..=rows, one organisation, no room for inserts.
pub fn table(name: &str, rows: u64, rows_per_block: u32) -> TableDef {
    TableDef {
        name: name.into(),
        rows,
        rows_per_block,
        free_blocks_per_instance: 0,
        orgs: 1,
        partition_by_org: false,
        distinct_values: 0,
    }
}

/// A plain B-tree on the key of table `table` (by position), no room for splits.
pub fn btree(name: &str, table: usize, entries_per_leaf: u32, entries_per_branch: u32) -> IndexDef {
    IndexDef {
        name: name.into(),
        table,
        entries_per_leaf,
        entries_per_branch,
        free_blocks_per_instance: 0,
        reverse: false,
        kind: IndexKind::BTree,
        local: false,
        includes_value: false,
        rows_per_piece: 1,
    }
}

/// Keys drawn by `dist` from the table's initial rows, any organisation.
pub fn keys(dist: KeyDist) -> KeySpec {
    KeySpec {
        dist,
        range: None,
        org: None,
    }
}

/// `rows` rows of table 0 read through index 0.
pub fn read_by_index(dist: KeyDist, rows: u32) -> Step {
    Step::Read {
        table: 0,
        access: Access::Index(0),
        keys: keys(dist),
        rows,
    }
}

/// `rows` rows of table 0 updated through index 0.
pub fn update_by_index(dist: KeyDist, rows: u32) -> Step {
    Step::Update {
        table: 0,
        access: Access::Index(0),
        keys: keys(dist),
        rows,
    }
}

pub fn txn(name: &str, weight: u32, steps: Vec<Step>) -> TxnTemplate {
    TxnTemplate {
        name: name.into(),
        weight,
        steps,
    }
}

/// A workload on instances 1..=`instances` that runs until stopped.
pub fn workload(
    name: &str,
    instances: u8,
    sessions_per_instance: u32,
    think_time: Nanos,
    transactions: Vec<TxnTemplate>,
) -> WorkloadSpec {
    WorkloadSpec {
        name: name.into(),
        instances: (1..=instances).collect(),
        sessions_per_instance,
        think_time,
        transactions,
        iterations: None,
        row_locks: Default::default(),
    }
}

/// A phase of `duration` that changes nothing: every workload runs.
pub fn phase(name: &str, duration: Nanos) -> Phase {
    Phase {
        name: name.into(),
        duration,
        parameters: Vec::new(),
        faults: Vec::new(),
        workloads: None,
        checkpoint: false,
        backup: None,
    }
}

/// A phase with no workload: sessions finish their execution, commit and
/// stop, and what was in flight lands.
pub fn quiet_phase(name: &str, duration: Nanos) -> Phase {
    Phase {
        workloads: Some(Vec::new()),
        ..phase(name, duration)
    }
}

/// `--set` overrides that make every phase of `text` last `secs` seconds
/// (phase names are read from the file, so the tests follow its edits).
pub fn short_overrides(text: &str, label: &str, secs: f64) -> Vec<String> {
    let loaded = match fusion_scenario::load_str(text, label, &[]) {
        Ok(l) => l,
        Err(e) => panic!("{label} does not load:\n{e}"),
    };
    let mut names: Vec<String> = Vec::new();
    for v in &loaded.variants {
        for p in &v.scenario.phases {
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
    }
    names
        .iter()
        .map(|name| format!("phase.{name:?}.duration_s={secs}"))
        .collect()
}

/// Load scenario text with every phase `secs` long, plus `extra` overrides.
pub fn load_short(text: &str, label: &str, secs: f64, extra: &[&str]) -> LoadedScenario {
    let mut overrides = short_overrides(text, label, secs);
    overrides.extend(extra.iter().map(|s| s.to_string()));
    match fusion_scenario::load_str(text, label, &overrides) {
        Ok(l) => l,
        Err(e) => panic!("{label} with {overrides:?} does not load:\n{e}"),
    }
}
