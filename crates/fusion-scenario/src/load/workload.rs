//! `[[workload]]` and its `[[workload.transaction]]`s: who runs what, on
//! which instances, with how many sessions. The steps of a transaction are
//! read in `steps.rs`.

use fusion_core::config::{
    Catalog, Costs, IndexKind, LockOrder, NS_PER_MS, OnDeadlock, RowLockSpec, Step, TxnTemplate,
    WorkloadSpec,
};

use super::limits::{SESSIONS_PER_INSTANCE_MAX, SESSIONS_WHY};
use super::problems::Validator;
use super::px::QueryDraft;
use crate::tree::{KeyPath, Node, Val};

const WORKLOAD_KEYS: &[&str] = &[
    "name",
    "instances",
    "sessions_per_instance",
    "think_time_ms",
    "iterations",
    "lock_order",
    "on_deadlock",
    "transaction",
];
const LOCK_ORDERS: &[&str] = &["ascending", "descending", "drawn"];
const ON_DEADLOCK: &[&str] = &["continue", "retry"];
const TRANSACTION_KEYS: &[&str] = &["name", "weight", "steps"];
/// Largest transaction weight, so the weights of a workload always sum within a u32.
const WEIGHT_MAX: u32 = 1_000_000;

impl Validator<'_> {
    pub(super) fn workloads(
        &mut self,
        node: &Node,
        instance_count: Option<u8>,
        catalog: &Catalog,
        costs: &Costs,
        queries: &[QueryDraft],
    ) -> Vec<WorkloadSpec> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("workload"), "workload") {
            let Some(workload) = self.table(item, &path, WORKLOAD_KEYS) else {
                continue;
            };
            let name = self.req(&workload, "name").and_then(|v| {
                let name = self.name(v, &workload.at("name"))?;
                self.unique(&mut seen, &name, v, &workload.at("name"), "workload");
                Some(name)
            });
            let instances = self
                .req(&workload, "instances")
                .map(|v| self.instance_list(v, &workload.at("instances"), instance_count));
            let sessions = self.req(&workload, "sessions_per_instance").and_then(|v| {
                self.u32_limited(
                    v,
                    &workload.at("sessions_per_instance"),
                    1,
                    SESSIONS_PER_INSTANCE_MAX,
                    SESSIONS_WHY,
                )
            });
            let think_time = self.opt_duration(&workload, "think_time_ms", NS_PER_MS, false, 0);
            // A session that neither thinks nor pays for its calls and block
            // visits would run forever at one instant: the simulator would
            // never reach the end of the phase, a live instance would spin.
            if think_time == 0 && costs.execute_ns == 0 && costs.consistent_get_ns == 0 {
                let at = workload.get("think_time_ms").unwrap_or(item);
                self.err(
                    at,
                    &workload.at("think_time_ms"),
                    "sessions would run without time passing: with think_time_ms = 0, \
                     give costs.execute_us or costs.consistent_get_us a value above 0",
                );
            }
            let iterations = workload
                .get("iterations")
                .and_then(|v| self.int(v, &workload.at("iterations"), 1, i64::MAX))
                .and_then(|v| u64::try_from(v).ok());
            let mut transactions = Vec::new();
            if let Some(list) = self.req(&workload, "transaction") {
                transactions =
                    self.transactions(list, &workload.at("transaction"), catalog, queries);
            }
            let order = match self.word(&workload, "lock_order", LOCK_ORDERS) {
                Some(1) => LockOrder::Descending,
                Some(2) => LockOrder::Drawn,
                _ => LockOrder::Ascending,
            };
            let on_deadlock = match self.word(&workload, "on_deadlock", ON_DEADLOCK) {
                Some(1) => OnDeadlock::Retry,
                _ => OnDeadlock::Continue,
            };
            out.push(WorkloadSpec {
                name: name.unwrap_or_default(),
                instances: instances.unwrap_or_default(),
                sessions_per_instance: sessions.unwrap_or(1),
                think_time,
                transactions,
                iterations,
                row_locks: RowLockSpec { order, on_deadlock },
            });
        }
        out
    }

    /// An optional key whose value is one of `words`: its position.
    fn word(&mut self, table: &super::read::TableView, key: &str, words: &[&str]) -> Option<usize> {
        let node = table.get(key)?;
        let path = table.at(key);
        let s = self.string(node, &path)?;
        let found = words.iter().position(|w| *w == s);
        if found.is_none() {
            self.err(
                node,
                &path,
                format!(
                    "unknown {key} `{s}` (one of: {}){}",
                    super::problems::quoted_list(words),
                    super::problems::suggest(&s, words)
                ),
            );
        }
        found
    }

    /// `"all"` or a list of distinct instance numbers.
    pub(super) fn instance_list(
        &mut self,
        node: &Node,
        path: &KeyPath,
        instance_count: Option<u8>,
    ) -> Vec<u8> {
        match &node.val {
            Val::Str(s) if s == "all" => (1..=instance_count.unwrap_or(0)).collect(),
            Val::Array(items) => {
                if items.is_empty() {
                    self.err(node, path, "expected at least one instance (or \"all\")");
                }
                let mut out: Vec<u8> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let item_path = path.index(i);
                    if let Some(instance) = self.instance(item, &item_path, instance_count) {
                        if out.contains(&instance) {
                            self.err(
                                item,
                                &item_path,
                                format!("instance {instance} is listed twice"),
                            );
                        } else {
                            out.push(instance);
                        }
                    }
                }
                out
            }
            _ => {
                self.err(
                    node,
                    path,
                    format!(
                        "expected \"all\" or a list of instance numbers such as [1, 2], found {}",
                        node.describe()
                    ),
                );
                Vec::new()
            }
        }
    }

    /// A workload's `[[workload.transaction]]` list.
    fn transactions(
        &mut self,
        node: &Node,
        path: &KeyPath,
        catalog: &Catalog,
        queries: &[QueryDraft],
    ) -> Vec<TxnTemplate> {
        let mut seen = Vec::new();
        let list = self.tables(node, path, "workload.transaction");
        if list.is_empty() && matches!(node.val, Val::Array(_)) {
            self.err(
                node,
                path,
                "a workload needs at least one [[workload.transaction]]",
            );
        }
        let mut out = Vec::new();
        for (i, (item, item_path)) in list.into_iter().enumerate() {
            if let Some(t) = self.transaction(item, &item_path, i, catalog, queries, &mut seen) {
                out.push(t);
            }
        }
        out
    }

    /// One transaction: its name (`txnN` by default), weight and steps.
    fn transaction(
        &mut self,
        node: &Node,
        path: &KeyPath,
        index: usize,
        catalog: &Catalog,
        queries: &[QueryDraft],
        seen: &mut Vec<(String, Node)>,
    ) -> Option<TxnTemplate> {
        let transaction = self.table(node, path, TRANSACTION_KEYS)?;
        let name = match transaction.get("name") {
            Some(v) => {
                let name = self.name(v, &transaction.at("name"));
                if let Some(name) = &name {
                    self.unique(seen, name, v, &transaction.at("name"), "transaction");
                }
                name.unwrap_or_default()
            }
            None => format!("txn{}", index + 1),
        };
        let weight = self.opt_u32(&transaction, "weight", 1, WEIGHT_MAX, 1);
        let mut steps = Vec::new();
        if let Some(list) = self.req(&transaction, "steps") {
            let steps_path = transaction.at("steps");
            let items = self.tables(list, &steps_path, "workload.transaction.steps");
            if items.is_empty() && matches!(list.val, Val::Array(_)) {
                self.err(list, &steps_path, "a transaction needs at least one step");
            }
            for (item, item_path) in items {
                if let Some(step) = self.step(item, &item_path, catalog, queries) {
                    steps.push(step);
                }
            }
            self.check_bitmap_updates(list, &steps_path, &steps, catalog);
        }
        Some(TxnTemplate {
            name,
            weight,
            steps,
        })
    }

    /// Two sessions updating rows of a table with a bitmap index, several
    /// rows per transaction, can each hold a piece the other needs; Oracle
    /// detects the deadlock (ORA-00060), the model does not.
    fn check_bitmap_updates(
        &mut self,
        steps_node: &Node,
        path: &KeyPath,
        steps: &[Step],
        catalog: &Catalog,
    ) {
        for (t, def) in catalog.tables.iter().enumerate() {
            if !catalog
                .indexes
                .iter()
                .any(|i| i.table == t && i.kind == IndexKind::Bitmap)
            {
                continue;
            }
            let rows: u64 = steps
                .iter()
                .map(|s| match s {
                    Step::Update { table, rows, .. } if *table == t => u64::from(*rows),
                    _ => 0,
                })
                .sum();
            if rows > 1 {
                self.err(
                    steps_node,
                    path,
                    format!(
                        "a transaction updates {rows} rows of `{}`, which has a bitmap index: \
                         one row per transaction (a bitmap piece locks many rows, and two \
                         transactions holding pieces the other needs would deadlock; the model \
                         has no deadlock detection)",
                        def.name
                    ),
                );
            }
        }
    }
}
