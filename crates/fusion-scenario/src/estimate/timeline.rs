//! What grows with the timeline: the work each transaction shape does at
//! the rate the CPUs, think times and commits allow, and from it the redo
//! and sequence values a run accumulates; and what `--check` keeps of the
//! rows that work writes.

use fusion_core::config::{Access, IndexKind, Nanos, Step};

use super::part::{MemoryPart, to_u64};
use crate::model::Scenario;
use crate::sizes::{Segment, SegmentSize, grouped};

/// A redo record the store keeps, with its share of the write that carried
/// it and of the transaction table.
pub(super) const REDO: u64 = 64;
/// A sequence value handed out (the simulator checks order and duplicates).
pub(super) const NEXTVAL: u64 = 48;
/// Under `--check`: a row the run writes, in the checker's map with its
/// last write and the committed versions it keeps (`fusion-check`'s
/// `rows.rs`), the map's growth included; and the fixed part: the reads
/// that may wait (`PENDING_READS_MAX`, 56 bytes each, a few hundred in the
/// simulator) and the versions between two trims.
pub(super) const CHECK_ROW: u64 = 160;
pub(super) const CHECK_FIXED: u64 = 4 << 20;

/// What the workloads do to each table over the run, at most: rows updated
/// and rows inserted.
pub(super) struct Churn {
    pub(super) updated: Vec<f64>,
    pub(super) inserted: Vec<f64>,
    /// Sequence values handed out (SEQ$ changes).
    pub(super) nextvals: f64,
}

/// One transaction shape's work: CPU and waits, what it leaves behind.
#[derive(Default)]
struct TxnWork {
    cpu: f64,
    wait: f64,
    redo: f64,
    nextvals: f64,
    /// Per table: rows updated, rows inserted.
    updated: Vec<f64>,
    inserted: Vec<f64>,
}

fn txn_work(s: &Scenario, sizes: &[SegmentSize], steps: &[Step]) -> TxnWork {
    let c = &s.costs;
    let ns = |v: Nanos| v as f64;
    let height = |ix: usize| {
        sizes
            .iter()
            .find(|x| x.segment == Segment::Index(ix))
            .map_or(2.0, |x| x.height as f64)
    };
    let indexes_on = |t: usize| s.catalog.indexes.iter().filter(|i| i.table == t).count() as f64;
    let on_update = |t: usize| {
        s.catalog
            .indexes
            .iter()
            .filter(|i| i.table == t && (i.includes_value || i.kind == IndexKind::Bitmap))
            .count() as f64
    };
    let tables = s.catalog.tables.len();
    let mut w = TxnWork {
        updated: vec![0.0; tables],
        inserted: vec![0.0; tables],
        ..TxnWork::default()
    };
    let mut changes = 0.0;
    for step in steps {
        match step {
            Step::Read {
                table,
                access,
                rows,
                ..
            } => match access {
                Access::Index(ix) => {
                    let r = f64::from(*rows);
                    w.cpu += r * (ns(c.execute_ns) + (height(*ix) + 1.0) * ns(c.consistent_get_ns));
                }
                Access::FullScan => {
                    let (blocks, rows) = sizes
                        .iter()
                        .find(|x| x.segment == Segment::Table(*table))
                        .map_or((1.0, 1.0), |x| (x.formatted as f64, x.items as f64));
                    w.cpu += ns(c.execute_ns)
                        + blocks * ns(c.consistent_get_ns)
                        + rows * ns(c.row_examined_ns);
                }
            },
            Step::Update {
                table,
                access,
                rows,
                ..
            } => {
                let r = f64::from(*rows);
                let h = match access {
                    Access::Index(ix) => height(*ix),
                    Access::FullScan => 2.0,
                };
                w.cpu += r
                    * (ns(c.execute_ns)
                        + (h + 1.0) * ns(c.consistent_get_ns)
                        + ns(c.db_block_get_ns)
                        + ns(c.row_change_ns));
                changes += r * (1.0 + on_update(*table));
                if let Some(u) = w.updated.get_mut(*table) {
                    *u += r;
                }
            }
            Step::Insert { table, rows } | Step::InsertSeq { table, rows, .. } => {
                let r = f64::from(*rows);
                let ix = indexes_on(*table);
                w.cpu += r
                    * (ns(c.execute_ns)
                        + (1.0 + ix) * (ns(c.row_change_ns) + ns(c.db_block_get_ns)));
                changes += r * (1.0 + ix);
                if let Some(x) = w.inserted.get_mut(*table) {
                    *x += r;
                }
                if let Step::InsertSeq { sequence, .. } = step {
                    w.nextvals += r;
                    changes += r * seq_updates(s, *sequence);
                }
            }
            Step::NextVal { sequence, rows } => {
                let r = f64::from(*rows);
                w.cpu += r * ns(c.execute_ns);
                w.nextvals += r;
                changes += r * seq_updates(s, *sequence);
            }
            Step::Count { rows, .. } => {
                let r = f64::from(*rows);
                w.cpu +=
                    r * (ns(c.execute_ns) + 2.0 * ns(c.consistent_get_ns) + ns(c.bitmap_piece_ns));
            }
            Step::ParallelQuery(_) => w.cpu += ns(c.execute_ns),
            Step::Think { time } => w.wait += ns(*time),
            // Memory only: at least a local line's latency per write (nothing grows).
            Step::MemoryWrites { ops } => {
                let latency = s.server.as_ref().map_or(1, |sv| sv.local_latency);
                w.cpu += f64::from(*ops) * latency as f64;
            }
            Step::Commit => {}
        }
    }
    w.cpu += ns(c.commit_ns);
    if changes > 0.0 {
        // A commit record, and the log file sync that waits for its write.
        w.redo = changes + 1.0;
        w.wait += ns(s.storage.log_write_latency);
    }
    w
}

/// SEQ$ changes per value of a sequence: each NOCACHE value is an update
/// and a recursive commit, a cached value a share of its batch's.
fn seq_updates(s: &Scenario, sequence: usize) -> f64 {
    s.catalog
        .sequences
        .get(sequence)
        .map_or(0.0, |q| 2.0 / q.batch() as f64)
}

/// What grows with the timeline: the redo records the store keeps and the
/// sequence values handed out. Transactions run at the rate the sessions'
/// think times and commits allow, at most the rate the CPUs allow, while
/// their workload runs. Also what the transactions change, at most.
pub(super) fn timeline_part(s: &Scenario, sizes: &[SegmentSize]) -> (MemoryPart, Churn) {
    let tables = s.catalog.tables.len();
    let mut churn = Churn {
        updated: vec![0.0; tables],
        inserted: vec![0.0; tables],
        nextvals: 0.0,
    };
    let mut bytes = 0f64;
    let mut biggest: Option<(f64, String)> = None;
    for w in &s.workloads {
        let total_weight: f64 = w
            .transactions
            .iter()
            .map(|t| f64::from(t.weight.max(1)))
            .sum();
        if total_weight <= 0.0 {
            continue;
        }
        let mut avg = TxnWork {
            updated: vec![0.0; tables],
            inserted: vec![0.0; tables],
            ..TxnWork::default()
        };
        for t in &w.transactions {
            let p = f64::from(t.weight.max(1)) / total_weight;
            let x = txn_work(s, sizes, &t.steps);
            avg.cpu += p * x.cpu;
            avg.wait += p * x.wait;
            avg.redo += p * x.redo;
            avg.nextvals += p * x.nextvals;
            for (a, b) in avg.updated.iter_mut().zip(&x.updated) {
                *a += p * b;
            }
            for (a, b) in avg.inserted.iter_mut().zip(&x.inserted) {
                *a += p * b;
            }
        }
        let enabled: f64 = s
            .phases
            .iter()
            .filter(|p| p.workloads.as_ref().is_none_or(|l| l.contains(&w.name)))
            .map(|p| p.duration as f64)
            .sum();
        let per_txn = avg.redo * REDO as f64 + avg.nextvals * NEXTVAL as f64;
        let sessions = f64::from(w.sessions_per_instance);
        for &instance in &w.instances {
            let cpus = s
                .instances
                .get(usize::from(instance).saturating_sub(1))
                .map_or(1.0, |p| f64::from(p.cpu_count));
            // A session's transaction takes at least its CPU and its waits;
            // the instance's CPUs run at most `cpus` at once. A transaction
            // that takes no time at all is counted as taking a nanosecond.
            let cycle = (w.think_time as f64 + avg.cpu + avg.wait).max(1.0);
            let rate = (sessions / cycle).min(if avg.cpu > 0.0 {
                cpus / avg.cpu
            } else {
                f64::INFINITY
            });
            let mut txns = rate * enabled;
            if let Some(n) = w.iterations {
                txns = txns.min(sessions * n as f64);
            }
            let b = txns * per_txn;
            bytes += b;
            churn.nextvals += txns * avg.nextvals;
            for (a, x) in churn.updated.iter_mut().zip(&avg.updated) {
                *a += txns * x;
            }
            for (a, x) in churn.inserted.iter_mut().zip(&avg.inserted) {
                *a += txns * x;
            }
            if biggest.as_ref().is_none_or(|x| b > x.0) {
                biggest = Some((b, w.name.clone()));
            }
        }
    }
    let timeline: Nanos = s.phases.iter().map(|p| p.duration).sum();
    let part = MemoryPart {
        what: format!(
            "redo kept over {} s of cluster time",
            grouped(timeline / fusion_core::config::NS_PER_S)
        ),
        bytes: to_u64(bytes),
        lower: match biggest {
            Some((_, w)) => format!(
                "phases' duration_s, or workload `{w}`'s sessions_per_instance (or raise its think_time_ms)"
            ),
            None => String::new(),
        },
    };
    (part, churn)
}

/// What `--check` keeps: each row the run writes (an updated row at most
/// once, however often it changes; every inserted row) with its last write
/// and the committed versions a snapshot may still see, and a fixed part
/// (the reads waiting for commits, the versions kept between two trims,
/// the open transactions' writes). Reads are checked as they come and not
/// kept, so the length of the run only counts through the rows it writes.
pub(super) fn check_part(s: &Scenario, churn: &Churn) -> MemoryPart {
    let mut rows = 0f64;
    let mut biggest: Option<(f64, &str)> = None;
    for (t, table) in s.catalog.tables.iter().enumerate() {
        let updated = churn.updated.get(t).copied().unwrap_or(0.0);
        let inserted = churn.inserted.get(t).copied().unwrap_or(0.0);
        let written = updated.min(table.rows as f64) + inserted;
        rows += written;
        if written > 0.0 && biggest.is_none_or(|b| written > b.0) {
            biggest = Some((written, table.name.as_str()));
        }
    }
    MemoryPart {
        what: format!("--check history ({} rows written)", grouped(to_u64(rows))),
        bytes: CHECK_FIXED.saturating_add(to_u64(rows * CHECK_ROW as f64)),
        lower: match biggest {
            Some((_, name)) => format!(
                "the rows the workloads write to table `{name}` (its rows, the inserts over the phases' duration_s)"
            ),
            None => String::new(),
        },
    }
}
