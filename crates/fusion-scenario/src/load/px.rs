//! `[[query]]` (parallel statements), the `parallel_query` step, and the
//! checks parallel execution needs across the file: parameters that depend
//! on each other, and tables a parallel query reads that no workload changes.

use fusion_core::config::{Catalog, Params, Step, WorkloadSpec};
use fusion_core::px::{Degree, JoinDistribution, PxPlan, PxQuery};

use super::problems::{Validator, names_list, quoted_list, suggest};
use super::read::TableView;
use crate::model::Phase;
use crate::tree::{KeyPath, Node, Origin, Val};

pub(super) const QUERY_KEYS: &[&str] = &[
    "name",
    "plan",
    "tables",
    "degree",
    "instances",
    "distribution",
    "group_by_mod",
    "entries_per_leaf",
];

/// A query read from the file, with the node of its table list for messages.
/// `query` is `None` when it had errors (already reported): steps naming it
/// then do not report it again.
pub(super) struct QueryDraft {
    name: String,
    query: Option<PxQuery>,
    tables_node: Option<Node>,
    tables_path: KeyPath,
}

impl Validator<'_> {
    /// `[[query]]`: parallel statements workloads run with `parallel_query` steps.
    pub(super) fn queries(&mut self, node: &Node, catalog: &Catalog) -> Vec<QueryDraft> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("query"), "query") {
            let Some(query) = self.table(item, &path, QUERY_KEYS) else {
                continue;
            };
            if let Some(draft) = self.query_draft(&query, &mut seen, catalog) {
                out.push(draft);
            }
        }
        out
    }

    /// One `[[query]]`; `None` only when it has no usable name.
    fn query_draft(
        &mut self,
        query: &TableView,
        seen: &mut Vec<(String, Node)>,
        catalog: &Catalog,
    ) -> Option<QueryDraft> {
        let name = self.req(query, "name").and_then(|node| {
            let name = self.name(node, &query.at("name"))?;
            self.unique(seen, &name, node, &query.at("name"), "query");
            Some(name)
        });
        let plan = self
            .req(query, "plan")
            .and_then(|node| self.plan(node, &query.at("plan")));
        let tables_node = self.req(query, "tables");
        let tables = match (tables_node, plan) {
            (Some(node), Some(p)) => self.query_tables(node, &query.at("tables"), p, catalog),
            _ => None,
        };
        let (degree, instances) = self.query_degree(query);
        if let Some(plan) = plan {
            self.check_plan_keys(query, plan);
        }
        let distribution = self.join_distribution(query);
        let group_mod = query
            .get("group_by_mod")
            .and_then(|node| self.int(node, &query.at("group_by_mod"), 1, i64::MAX))
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(100);
        let entries_per_leaf = self.opt_u32(query, "entries_per_leaf", 4, 100_000, 250);
        let name = name?;
        let px_query = match (plan, tables, degree) {
            (Some(plan), Some(tables), Some(degree)) => Some(PxQuery {
                name: name.clone(),
                plan,
                tables,
                degree,
                instances,
                distribution,
                group_mod,
                entries_per_leaf,
            }),
            _ => None,
        };
        Some(QueryDraft {
            name,
            query: px_query,
            tables_node: tables_node.cloned(),
            tables_path: query.at("tables"),
        })
    }

    /// `plan`: one of `PxPlan::NAMES`.
    fn plan(&mut self, node: &Node, path: &KeyPath) -> Option<PxPlan> {
        let s = self.string(node, path)?;
        let plan = PxPlan::from_name(&s);
        if plan.is_none() {
            self.err(
                node,
                path,
                format!(
                    "unknown plan `{s}` (one of: {}){}",
                    quoted_list(PxPlan::NAMES),
                    suggest(&s, PxPlan::NAMES)
                ),
            );
        }
        plan
    }

    /// Keys that tune one plan only.
    fn check_plan_keys(&mut self, query: &TableView, plan: PxPlan) {
        for (key, wanted) in [
            ("distribution", PxPlan::HashJoinGroupBy),
            ("group_by_mod", PxPlan::HashJoinGroupBy),
            ("entries_per_leaf", PxPlan::IndexBuild),
        ] {
            if let Some(e) = query.entry(key)
                && plan != wanted
            {
                self.err_key(
                    e,
                    &query.at(key),
                    format!("`{key}` applies to plan \"{}\" only", wanted.name()),
                );
            }
        }
    }

    /// `distribution`: "hash" (the default) or "broadcast".
    fn join_distribution(&mut self, query: &TableView) -> JoinDistribution {
        let Some(node) = query.get("distribution") else {
            return JoinDistribution::Hash;
        };
        match self.string(node, &query.at("distribution")).as_deref() {
            Some("hash") | None => JoinDistribution::Hash,
            Some("broadcast") => JoinDistribution::Broadcast,
            Some(other) => {
                self.err(
                    node,
                    &query.at("distribution"),
                    format!("unknown distribution `{other}` (one of: \"hash\", \"broadcast\")"),
                );
                JoinDistribution::Hash
            }
        }
    }

    fn query_tables(
        &mut self,
        node: &Node,
        path: &KeyPath,
        plan: PxPlan,
        catalog: &Catalog,
    ) -> Option<Vec<usize>> {
        let Val::Array(items) = &node.val else {
            self.err(
                node,
                path,
                format!("expected a list of table names, found {}", node.describe()),
            );
            return None;
        };
        if items.len() != plan.tables() {
            self.err(
                node,
                path,
                format!(
                    "plan \"{}\" reads {} table{}, found {}",
                    plan.name(),
                    plan.tables(),
                    if plan.tables() == 1 { "" } else { "s" },
                    items.len()
                ),
            );
            return None;
        }
        let names: Vec<String> = catalog.tables.iter().map(|t| t.name.clone()).collect();
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_path = path.index(i);
            let table_name = self.string(item, &item_path)?;
            match catalog.tables.iter().position(|t| t.name == table_name) {
                Some(pos) => out.push(pos),
                None => {
                    self.err(
                        item,
                        &item_path,
                        format!(
                            "unknown table `{table_name}` (tables: {})",
                            names_list(&names)
                        ),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    /// `degree`: a number (the hint's degree) or "default"; `instances` with a number only.
    fn query_degree(&mut self, query: &TableView) -> (Option<Degree>, u32) {
        let degree = self.req(query, "degree").and_then(|node| match &node.val {
            Val::Str(s) if s == "default" => Some(Degree::Default),
            Val::Int(_) => self
                .u32_in(node, &query.at("degree"), 1, 4096)
                .map(Degree::Fixed),
            _ => {
                self.err(
                    node,
                    &query.at("degree"),
                    format!(
                        "expected a degree 1..=4096 or \"default\", found {}",
                        node.describe()
                    ),
                );
                None
            }
        });
        let instances = self.opt_u32(query, "instances", 1, 64, 1);
        if let (Some(Degree::Default), Some(e)) = (degree, query.entry("instances")) {
            self.err_key(
                e,
                &query.at("instances"),
                "`instances` multiplies a numeric degree; it does not apply to \"default\"",
            );
        }
        (degree, instances)
    }

    /// A `parallel_query` step.
    pub(super) fn parallel_query_step(
        &mut self,
        step: &TableView,
        queries: &[QueryDraft],
    ) -> Option<Step> {
        let node = self.req(step, "query")?;
        let name = self.string(node, &step.at("query"))?;
        match queries.iter().find(|q| q.name == name) {
            Some(q) => q.query.clone().map(|q| Step::ParallelQuery(Box::new(q))),
            None => {
                let names: Vec<String> = queries.iter().map(|q| q.name.clone()).collect();
                self.err(
                    node,
                    &step.at("query"),
                    format!("unknown query `{name}` (queries: {})", names_list(&names)),
                );
                None
            }
        }
    }

    /// Parallel slaves read tables with direct reads from the datafiles, which
    /// is exact only for tables no workload changes (there is no object
    /// checkpoint or consistent read of the images read): refuse the others.
    pub(super) fn check_query_tables(
        &mut self,
        queries: &[QueryDraft],
        workloads: &[WorkloadSpec],
        catalog: &Catalog,
    ) {
        for q in queries {
            let (Some(query), Some(node)) = (&q.query, &q.tables_node) else {
                continue;
            };
            for &t in &query.tables {
                let writer = workloads.iter().find_map(|w| {
                    w.transactions.iter().find_map(|x| {
                        x.steps.iter().find_map(|s| match s {
                            Step::Update { table, .. }
                            | Step::Insert { table, .. }
                            | Step::InsertSeq { table, .. }
                                if *table == t =>
                            {
                                Some((w.name.clone(), x.name.clone()))
                            }
                            _ => None,
                        })
                    })
                });
                if let Some((w, x)) = writer {
                    let tname = catalog.tables.get(t).map_or("?", |x| x.name.as_str());
                    self.err(
                        node,
                        &q.tables_path,
                        format!(
                            "table `{tname}` is changed by workload `{w}` (transaction `{x}`): parallel query reads tables with direct reads, which is modeled only for tables no workload changes"
                        ),
                    );
                }
            }
        }
    }

    /// Parameters that depend on each other, on every instance, at start and
    /// after each phase's changes; `parallel_execution_message_size` must be
    /// the same everywhere (an Oracle RAC rule).
    pub(super) fn check_px_params(&mut self, instances: &[Params], phases: &[Phase]) {
        let at = KeyPath::root().key("parameters");
        for (i, p) in instances.iter().enumerate() {
            if let Err((name, msg)) = p.px.check(p.cpu_count) {
                self.push(
                    &None,
                    &Origin::File,
                    Some(&at.key(name)),
                    None,
                    format!("instance {}: {msg}", i + 1),
                );
            }
        }
        let sizes: Vec<u32> = instances.iter().map(|p| p.px.message_size).collect();
        if sizes.windows(2).any(|w| w[0] != w[1]) {
            self.push(
                &None,
                &Origin::File,
                Some(&at.key("parallel_execution_message_size")),
                None,
                "parallel_execution_message_size must be the same on every instance".to_string(),
            );
        }
        let mut running: Vec<Params> = instances.to_vec();
        for (phase_index, phase) in phases.iter().enumerate() {
            for (instance, name, value) in &phase.parameters {
                let idx = usize::from(*instance).saturating_sub(1);
                if let Some(p) = running.get_mut(idx) {
                    let _ = p.set(name, value);
                }
            }
            for (i, p) in running.iter().enumerate() {
                if let Err((name, msg)) = p.px.check(p.cpu_count) {
                    self.push(
                        &None,
                        &Origin::File,
                        Some(
                            &KeyPath::root()
                                .key("phase")
                                .index(phase_index)
                                .key("parameters")
                                .key(name),
                        ),
                        None,
                        format!("phase `{}`, instance {}: {msg}", phase.name, i + 1),
                    );
                }
            }
        }
    }
}
