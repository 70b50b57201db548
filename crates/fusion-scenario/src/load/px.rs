//! `[[query]]` (parallel statements), the `parallel_query` step, and the
//! checks parallel execution needs across the file: parameters that depend
//! on each other, and tables a parallel query reads that no workload changes.

use fusion_core::config::{Catalog, Params, Step, WorkloadSpec};
use fusion_core::px::{Degree, JoinDistribution, PxPlan, PxQuery};

use super::{Checker, Tv, names_list, quoted_list, suggest};
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

impl Checker<'_> {
    /// `[[query]]`: parallel statements workloads run with `parallel_query` steps.
    pub(super) fn queries(&mut self, node: &Node, cat: &Catalog) -> Vec<QueryDraft> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("query"), "query") {
            let Some(tv) = self.table(item, &path, QUERY_KEYS) else {
                continue;
            };
            let name = self.req(&tv, "name").and_then(|n| {
                let name = self.name(n, &tv.at("name"))?;
                self.unique(&mut seen, &name, n, &tv.at("name"), "query");
                Some(name)
            });
            let plan = self.req(&tv, "plan").and_then(|n| {
                let s = self.string(n, &tv.at("plan"))?;
                let p = PxPlan::from_name(&s);
                if p.is_none() {
                    self.err(
                        n,
                        &tv.at("plan"),
                        format!(
                            "unknown plan `{s}` (one of: {}){}",
                            quoted_list(PxPlan::NAMES),
                            suggest(&s, PxPlan::NAMES)
                        ),
                    );
                }
                p
            });
            let tables_node = self.req(&tv, "tables");
            let tables = match (tables_node, plan) {
                (Some(n), Some(p)) => self.query_tables(n, &tv.at("tables"), p, cat),
                _ => None,
            };
            let (degree, instances) = self.query_degree(&tv);
            let only = |ck: &mut Self, key: &str, wanted: PxPlan| {
                if let (Some(e), Some(p)) = (tv.entry(key), plan)
                    && p != wanted
                {
                    ck.err_key(
                        e,
                        &tv.at(key),
                        format!("`{key}` applies to plan \"{}\" only", wanted.name()),
                    );
                }
            };
            only(self, "distribution", PxPlan::HashJoinGroupBy);
            only(self, "group_by_mod", PxPlan::HashJoinGroupBy);
            only(self, "entries_per_leaf", PxPlan::IndexBuild);
            let distribution = match tv.get("distribution") {
                None => JoinDistribution::Hash,
                Some(n) => {
                    match self.string(n, &tv.at("distribution")).as_deref() {
                        Some("hash") | None => JoinDistribution::Hash,
                        Some("broadcast") => JoinDistribution::Broadcast,
                        Some(other) => {
                            self.err(
                            n,
                            &tv.at("distribution"),
                            format!("unknown distribution `{other}` (one of: \"hash\", \"broadcast\")"),
                        );
                            JoinDistribution::Hash
                        }
                    }
                }
            };
            let group_mod = tv
                .get("group_by_mod")
                .and_then(|n| self.int(n, &tv.at("group_by_mod"), 1, i64::MAX))
                .map_or(100, |v| v as u64);
            let entries_per_leaf = self.opt_u32(&tv, "entries_per_leaf", 4, 100_000, 250);
            let Some(name) = name else { continue };
            let query = match (plan, tables, degree) {
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
            out.push(QueryDraft {
                name,
                query,
                tables_node: tables_node.cloned(),
                tables_path: tv.at("tables"),
            });
        }
        out
    }

    fn query_tables(
        &mut self,
        node: &Node,
        path: &KeyPath,
        plan: PxPlan,
        cat: &Catalog,
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
        let names: Vec<String> = cat.tables.iter().map(|t| t.name.clone()).collect();
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = path.index(i);
            let t = self.string(item, &p)?;
            match cat.tables.iter().position(|x| x.name == t) {
                Some(pos) => out.push(pos),
                None => {
                    self.err(
                        item,
                        &p,
                        format!("unknown table `{t}` (tables: {})", names_list(&names)),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    /// `degree`: a number (the hint's degree) or "default"; `instances` with a number only.
    fn query_degree(&mut self, tv: &Tv) -> (Option<Degree>, u32) {
        let degree = self.req(tv, "degree").and_then(|n| match &n.val {
            Val::Str(s) if s == "default" => Some(Degree::Default),
            Val::Int(_) => self.u32_in(n, &tv.at("degree"), 1, 4096).map(Degree::Fixed),
            _ => {
                self.err(
                    n,
                    &tv.at("degree"),
                    format!(
                        "expected a degree 1..=4096 or \"default\", found {}",
                        n.describe()
                    ),
                );
                None
            }
        });
        let instances = self.opt_u32(tv, "instances", 1, 64, 1);
        if let (Some(Degree::Default), Some(e)) = (degree, tv.entry("instances")) {
            self.err_key(
                e,
                &tv.at("instances"),
                "`instances` multiplies a numeric degree; it does not apply to \"default\"",
            );
        }
        (degree, instances)
    }

    /// A `parallel_query` step.
    pub(super) fn parallel_query_step(&mut self, tv: &Tv, queries: &[QueryDraft]) -> Option<Step> {
        let n = self.req(tv, "query")?;
        let name = self.string(n, &tv.at("query"))?;
        match queries.iter().find(|q| q.name == name) {
            Some(q) => q.query.clone().map(|q| Step::ParallelQuery(Box::new(q))),
            None => {
                let names: Vec<String> = queries.iter().map(|q| q.name.clone()).collect();
                self.err(
                    n,
                    &tv.at("query"),
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
        cat: &Catalog,
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
                    let tname = cat.tables.get(t).map_or("?", |x| x.name.as_str());
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
        for (k, ph) in phases.iter().enumerate() {
            for (inst, name, value) in &ph.parameters {
                let idx = usize::from(*inst).saturating_sub(1);
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
                                .index(k)
                                .key("parameters")
                                .key(name),
                        ),
                        None,
                        format!("phase `{}`, instance {}: {msg}", ph.name, i + 1),
                    );
                }
            }
        }
    }
}
