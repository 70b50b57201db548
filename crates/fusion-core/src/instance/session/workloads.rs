//! The workloads this instance runs: their specifications, which of them
//! the phase enables, and the statement (tkprof) each step is charged to.

use std::sync::Arc;

use crate::config::{Catalog, WorkloadSpec};
use crate::stats::Stats;
use crate::tkprof::{StmtStat, UPDATE_SEQ, sql_of};

#[derive(Debug)]
pub(super) struct Workloads {
    specs: Arc<Vec<WorkloadSpec>>,
    /// The workloads the phase enables, by name (`None`: all).
    enabled: Option<Vec<String>>,
    /// Statement of each step (`[workload][transaction][step]`), an index
    /// into `stats.statements`.
    stmt_ids: Vec<Vec<Vec<Option<usize>>>>,
    /// The recursive `update seq$`, when the catalog has sequences.
    update_seq: Option<usize>,
}

impl Workloads {
    pub fn new(specs: Arc<Vec<WorkloadSpec>>) -> Workloads {
        Workloads {
            specs,
            enabled: None,
            stmt_ids: Vec::new(),
            update_seq: None,
        }
    }

    /// A handle on the specifications (shared, never changed).
    #[inline(always)]
    pub fn specs(&self) -> Arc<Vec<WorkloadSpec>> {
        Arc::clone(&self.specs)
    }

    pub fn spec(&self, w: usize) -> &WorkloadSpec {
        &self.specs[w]
    }

    pub fn get(&self, w: usize) -> Option<&WorkloadSpec> {
        self.specs.get(w)
    }

    pub fn enabled(&self, w: usize) -> bool {
        match &self.enabled {
            None => true,
            Some(list) => self
                .specs
                .get(w)
                .is_some_and(|spec| list.contains(&spec.name)),
        }
    }

    /// Enable exactly these workloads (`None`: all).
    pub fn enable(&mut self, list: Option<Vec<String>>) {
        self.enabled = list;
    }

    /// Give every step's statement (and the recursive `update seq$`) its
    /// place in `stats.statements`.
    pub fn register_statements(&mut self, stats: &mut Stats, catalog: &Catalog) {
        let find_or_add = |stats: &mut Stats, sql: String, recursive: bool| -> usize {
            match stats.statements.iter().position(|s| s.sql == sql) {
                Some(i) => i,
                None => {
                    stats.statements.push(StmtStat::new(sql, recursive));
                    stats.statements.len() - 1
                }
            }
        };
        self.stmt_ids = self
            .specs
            .iter()
            .map(|w| {
                w.transactions
                    .iter()
                    .map(|t| {
                        t.steps
                            .iter()
                            .map(|st| sql_of(st, catalog).map(|sql| find_or_add(stats, sql, false)))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        if !catalog.sequences.is_empty() {
            self.update_seq = Some(find_or_add(stats, UPDATE_SEQ.to_string(), true));
        }
        debug_assert!(
            self.update_seq.is_none_or(|st| stats
                .statements
                .get(st)
                .is_some_and(|s| s.sql == UPDATE_SEQ)),
            "update seq$ registered at a wrong place"
        );
    }

    /// The statement of step `step` of transaction `template` of workload `w`.
    pub fn stmt_id(&self, w: usize, template: usize, step: usize) -> Option<usize> {
        self.stmt_ids
            .get(w)
            .and_then(|t| t.get(template))
            .and_then(|s| s.get(step))
            .copied()
            .flatten()
    }

    /// The recursive `update seq$` statement.
    pub fn update_seq_stmt(&self) -> Option<usize> {
        self.update_seq
    }
}
