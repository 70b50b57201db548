//! Correctness checks of a run, kept apart from the model they check and
//! from the driver that ran it: the simulator and the live runner feed the
//! same [`ConsistencyChecker`].
//!
//! - Coherence (after every event): at most one instance holds a block in X,
//!   and nobody holds it in S while someone holds it in X.
//! - CR consistency (at the end): every consistent read returned exactly the
//!   value committed as of its snapshot SCN (or the reader's own change).
//! - Lost writes (at the end): the newest image of every row (a current
//!   buffer somewhere, else the store) holds the last value written to it.
//! - Indexes (at the end): every index is a valid B-tree holding each
//!   committed row's key exactly once (`index_check.rs`).

mod index_check;

use std::sync::Arc;

use fusion_core::block::Block;
use fusion_core::instance::{BufState, Instance, Observation};
use fusion_core::layout::Layout;
use fusion_core::types::{BlockAddr, Xid};
use rustc_hash::FxHashMap;

#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub events_checked: u64,
    pub reads_checked: u64,
    pub rows_checked: u64,
    /// Index leaf entries walked by the index check.
    pub index_entries_checked: u64,
    pub commits: u64,
    pub violations: Vec<String>,
}

struct PendingRead {
    table: usize,
    key: u64,
    snapshot: u64,
    val: Option<i64>,
    xid: Xid,
}

/// Checks a cluster's buffers after every event (coherence) and its history
/// of reads, writes and commits at the end (CR consistency, lost writes,
/// indexes): whether the run kept the data consistent.
pub struct ConsistencyChecker {
    layout: Arc<Layout>,
    report: CheckReport,
    /// Latest value each transaction wrote to each row.
    writes: FxHashMap<Xid, Vec<(usize, u64, i64)>>,
    commits: FxHashMap<Xid, u64>,
    /// Last value written to each row, in the order the history arrived,
    /// and by whom.
    last: FxHashMap<(usize, u64), (i64, Xid)>,
    reads: Vec<PendingRead>,
    x_holders: Vec<u8>,
    s_holders: Vec<u8>,
    /// Observations taken in so far, and at most ([`OBSERVATIONS_MAX`];
    /// lowered by tests).
    observations: u64,
    observations_max: u64,
}

/// Violations kept in the report (the first ones; the checks go on counting).
const VIOLATIONS_MAX: usize = 20;

/// Observations (reads, writes, commits) the checker takes in at most. Its
/// memory grows with each one (about 40 bytes a read, more for a write), so a
/// long checked run stops being checked here, about 2.5 GB in, with a
/// violation that says so, rather than running the machine out of memory.
pub const OBSERVATIONS_MAX: u64 = 1 << 26;

impl ConsistencyChecker {
    pub fn new(layout: Arc<Layout>) -> ConsistencyChecker {
        let blocks = layout.total_blocks as usize;
        ConsistencyChecker {
            layout,
            report: CheckReport::default(),
            writes: FxHashMap::default(),
            commits: FxHashMap::default(),
            last: FxHashMap::default(),
            reads: Vec::new(),
            x_holders: vec![0; blocks],
            s_holders: vec![0; blocks],
            observations: 0,
            observations_max: OBSERVATIONS_MAX,
        }
    }

    fn violation(&mut self, v: String) {
        if self.report.violations.len() < VIOLATIONS_MAX {
            self.report.violations.push(v);
        }
    }

    fn absorb(&mut self, history: &[Observation]) {
        let room = self.observations_max.saturating_sub(self.observations);
        let taken = history
            .len()
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        self.observations += taken as u64;
        if taken < history.len() && room > 0 {
            // Said once, when the limit is reached, even past the cap on
            // violations: the checks cover the history up to here only.
            self.report.violations.push(format!(
                "the checker's limit of {} observations was reached: later reads, writes \
                 and commits are not checked (shorten the checked run)",
                self.observations_max
            ));
        }
        for o in &history[..taken] {
            match *o {
                Observation::Write {
                    xid,
                    table,
                    key,
                    val,
                } => {
                    let w = self.writes.entry(xid).or_default();
                    match w.iter_mut().find(|(t, k, _)| *t == table && *k == key) {
                        Some(e) => e.2 = val,
                        None => w.push((table, key, val)),
                    }
                    self.last.insert((table, key), (val, xid));
                }
                Observation::Commit { xid, scn } => {
                    self.commits.insert(xid, scn);
                    self.report.commits += 1;
                }
                Observation::Read {
                    xid,
                    snapshot,
                    table,
                    key,
                    val,
                } => {
                    let own = self
                        .writes
                        .get(&xid)
                        .and_then(|w| w.iter().find(|(t, k, _)| *t == table && *k == key))
                        .map(|e| e.2);
                    self.report.reads_checked += 1;
                    match own {
                        Some(v) if !xid.is_none() && !self.commits.contains_key(&xid) => {
                            if val != Some(v) {
                                self.violation(format!(
                                    "CR read by {xid} of table {table} key {key} returned {val:?}, its own change was {v}"
                                ));
                            }
                        }
                        _ => self.reads.push(PendingRead {
                            table,
                            key,
                            snapshot,
                            val,
                            xid,
                        }),
                    }
                }
            }
        }
    }

    /// Structural checks after one event.
    pub fn after_event(&mut self, instances: &[Instance], history: &[Observation]) {
        self.absorb(history);
        self.report.events_checked += 1;
        let mut touched: Vec<usize> = Vec::new();
        for inst in instances {
            for b in inst.buffers() {
                let a = b.blk.idx();
                match b.state {
                    BufState::Xcur => self.x_holders[a] += 1,
                    BufState::Scur => self.s_holders[a] += 1,
                    _ => continue,
                }
                touched.push(a);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for &a in &touched {
            let (x, s) = (self.x_holders[a], self.s_holders[a]);
            if x > 1 || (x == 1 && s > 0) {
                self.violation(format!(
                    "coherence: {} held in X by {x} and in S by {s} instances at event {}",
                    BlockAddr(a as u32),
                    self.report.events_checked
                ));
            }
        }
        for a in touched {
            self.x_holders[a] = 0;
            self.s_holders[a] = 0;
        }
    }

    /// Checks over the whole run of instances at hand (the simulator's):
    /// the newest image of a block is a current buffer of one of them, else
    /// `stored[blk]`, the block store's image.
    pub fn finish(
        self,
        instances: &[Instance],
        stored: &[Block],
        history: &[Observation],
    ) -> CheckReport {
        self.finish_with(history, |blk| {
            let current = instances.iter().find_map(|i| {
                i.buffers_of(blk)
                    .find(|b| matches!(b.state, BufState::Xcur | BufState::Scur))
                    .map(|b| (b.image.clone(), i.id.to_string()))
            });
            current.or_else(|| {
                stored
                    .get(blk.idx())
                    .map(|b| (b.clone(), "the store".to_string()))
            })
        })
    }

    /// Checks over the whole run, wherever it ran: `newest(blk)` gives the
    /// newest image of a block (a current buffer somewhere, else the store's)
    /// and where it is.
    pub fn finish_with(
        mut self,
        history: &[Observation],
        newest: impl Fn(BlockAddr) -> Option<(Block, String)>,
    ) -> CheckReport {
        self.absorb(history);
        // Committed versions of each row: (commit scn, value), by scn.
        let mut versions: FxHashMap<(usize, u64), Vec<(u64, i64)>> = FxHashMap::default();
        for (xid, scn) in &self.commits {
            for (t, k, v) in self.writes.get(xid).map(Vec::as_slice).unwrap_or(&[]) {
                versions.entry((*t, *k)).or_default().push((*scn, *v));
            }
        }
        for v in versions.values_mut() {
            v.sort_unstable();
        }
        let reads = std::mem::take(&mut self.reads);
        for r in &reads {
            let exists = self
                .layout
                .tables
                .get(r.table)
                .is_some_and(|t| r.key >= 1 && r.key <= t.initial_rows);
            let expected = versions
                .get(&(r.table, r.key))
                .and_then(|v| {
                    v.iter()
                        .rev()
                        .find(|(scn, _)| *scn <= r.snapshot)
                        .map(|x| x.1)
                })
                .or(exists.then_some(0));
            if r.val != expected {
                self.violation(format!(
                    "CR read by {} at snapshot {} of table {} key {} returned {:?}, expected {:?}",
                    r.xid, r.snapshot, r.table, r.key, r.val, expected
                ));
            }
        }
        // The newest image of each written row holds its last written value:
        // that of the committed writer with the highest commit SCN (row locks
        // order writers, and a later writer commits later). The live runtime's
        // history comes instance by instance, not in one global order, so
        // arrival order only decides for a writer that never committed.
        let mut newest_commit: FxHashMap<(usize, u64), (u64, i64)> = FxHashMap::default();
        for (xid, scn) in &self.commits {
            for (t, k, v) in self.writes.get(xid).map(Vec::as_slice).unwrap_or(&[]) {
                let e = newest_commit.entry((*t, *k)).or_insert((*scn, *v));
                if *scn > e.0 {
                    *e = (*scn, *v);
                }
            }
        }
        let mut last: Vec<((usize, u64), i64)> = self
            .last
            .iter()
            .map(|(k, (v, xid))| match newest_commit.get(k) {
                Some((_, committed)) if self.commits.contains_key(xid) => (*k, *committed),
                _ => (*k, *v),
            })
            .collect();
        last.sort_unstable();
        let mut written: crate::index_check::Written = Vec::new();
        for (xid, w) in &self.writes {
            let done = self.commits.contains_key(xid);
            written.extend(w.iter().map(|&(t, k, _)| (t, k, done)));
        }
        written.sort_unstable();
        let mut problems = Vec::new();
        self.report.index_entries_checked =
            crate::index_check::check_indexes(&self.layout, &written, &newest, &mut problems);
        for p in problems {
            self.violation(p);
        }
        for ((table, key), want) in last {
            self.report.rows_checked += 1;
            let Some(rowid) = self.layout.initial_rowid(table, key) else {
                continue;
            };
            let image = newest(rowid.blk);
            let got = image
                .as_ref()
                .and_then(|(b, _)| b.row(rowid.slot))
                .map(|r| r.val);
            if got != Some(want) {
                let at = image.map_or("nowhere".to_string(), |(_, at)| at);
                self.violation(format!(
                    "lost write: table {table} key {key} holds {got:?} in {at}, last written {want}"
                ));
            }
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::config::{Catalog, TableDef};
    use fusion_core::types::InstId;

    #[test]
    fn a_history_past_the_limit_is_cut_with_one_violation() {
        let catalog = Catalog {
            tables: vec![TableDef {
                name: "t".into(),
                rows: 10,
                rows_per_block: 10,
                free_blocks_per_instance: 0,
                orgs: 1,
                partition_by_org: false,
                distinct_values: 0,
            }],
            ..Catalog::default()
        };
        let layout = Arc::new(Layout::new(&catalog, 1, 1));
        let mut c = ConsistencyChecker::new(layout.clone());
        c.observations_max = 3;
        let commit = |seq| Observation::Commit {
            xid: Xid::new(InstId(0), seq),
            scn: seq,
        };
        c.after_event(&[], &[commit(1), commit(2)]);
        c.after_event(&[], &[commit(3), commit(4)]);
        c.after_event(&[], &[commit(5)]);
        let r = c.finish(&[], &layout.initial_blocks(), &[]);
        assert_eq!(
            r.commits, 3,
            "the observations past the limit are not taken"
        );
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
        assert!(
            r.violations[0].contains("limit of 3 observations"),
            "{:?}",
            r.violations
        );
    }
}
