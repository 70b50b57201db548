//! The figures the deck's last three myths turn on, measured on shortened
//! copies of the shipped scenarios: consistent gets per execution exactly
//! (small table, bitmap index) and the verdicts of the logical-isolation
//! variants.

use fusion_core::metrics::{Metric, SqlColumn};
use fusion_report::RunResult;
use fusion_report::figures::measure;
use fusion_scenario::MetricRef;
use fusionlab_tests::{run_clean, shipped_with};

/// Run a shipped scenario with these overrides (and no others).
fn run(name: &str, overrides: &[&str]) -> RunResult {
    run_clean(&shipped_with(name, overrides), None).0
}

/// A figure of the whole cluster in one variant and phase.
fn figure(r: &RunResult, metric: Metric, variant: &str, phase: &str) -> f64 {
    let m = MetricRef {
        metric,
        text: String::new(),
        variant: Some(variant.to_string()),
        phase: phase.to_string(),
        instance: None,
    };
    measure(r, &m).unwrap_or_else(|| panic!("no {metric:?} in {variant}/{phase}"))
}

fn per_exec(c: SqlColumn) -> Metric {
    Metric::SqlPerExec(c)
}

#[test]
fn small_table_full_scans_read_31_blocks_and_index_lookups_3() {
    let r = run(
        "myth-small-table-index",
        &[
            "workload.lookups.iterations=300",
            "phase.lookups.duration_s=1",
        ],
    );
    let gets = |v: &str| figure(&r, per_exec(SqlColumn::Query), v, "lookups");
    let cpu = |v: &str| figure(&r, per_exec(SqlColumn::Cpu), v, "lookups");
    let execs = |v: &str| figure(&r, Metric::Sql(SqlColumn::Count), v, "lookups");
    assert_eq!(execs("full-scan"), 600.0, "300 executions per instance");
    assert_eq!(execs("index"), 600.0);
    // Every block below the high-water mark: the segment header and 30 blocks of rows.
    assert_eq!(gets("full-scan"), 31.0);
    // Root, leaf, table block.
    assert_eq!(gets("index"), 3.0);
    // CPU per execution from the per-operation costs: 15 us execute + 31
    // gets x 5 us + 10,001 rows x 0.05 us (670.05 us), against 15 us + 3 x 5 us.
    assert!(
        (cpu("full-scan") - 0.67005).abs() < 1e-9,
        "{}",
        cpu("full-scan")
    );
    assert!((cpu("index") - 0.030).abs() < 1e-9, "{}", cpu("index"));
    assert!(r.reproduced(), "{:#?}", r.verdicts);
}

#[test]
fn bitmap_counts_read_2_blocks_from_one_node_or_two() {
    let r = run(
        "myth-bitmap-index",
        &["workload.select.iterations=200", "phase.run.duration_s=0.5"],
    );
    for v in ["select-one-node", "select-two-nodes"] {
        assert_eq!(
            figure(&r, per_exec(SqlColumn::Query), v, "run"),
            2.0,
            "{v}: the root and the leaf holding the value's piece"
        );
        assert_eq!(figure(&r, per_exec(SqlColumn::Current), v, "run"), 0.0);
        assert_eq!(
            figure(
                &r,
                Metric::ClassTimeMs(fusion_core::stats::WaitClass::Cluster),
                v,
                "run"
            ),
            0.0
        );
    }
    assert_eq!(
        figure(&r, Metric::Sql(SqlColumn::Count), "select-two-nodes", "run"),
        2.0 * figure(&r, Metric::Sql(SqlColumn::Count), "select-one-node", "run"),
    );
    assert_eq!(
        figure(&r, per_exec(SqlColumn::Cpu), "select-two-nodes", "run"),
        figure(&r, per_exec(SqlColumn::Cpu), "select-one-node", "run"),
    );
}

#[test]
fn bitmap_dml_serializes_on_piece_locks() {
    let r = run(
        "myth-bitmap-index",
        &["phase.warmup.duration_s=0.2", "phase.run.duration_s=1"],
    );
    let tx = Metric::EventTimeMs(fusion_core::stats::Wait::EnqTxRowLockContention);
    let elapsed = per_exec(SqlColumn::Elapsed);
    assert_eq!(figure(&r, tx, "dml-btree-only", "run"), 0.0);
    for v in ["dml-bitmap-one-node", "dml-bitmap-two-nodes"] {
        assert!(figure(&r, tx, v, "run") > 0.0, "{v} waits on piece locks");
        assert!(
            figure(&r, elapsed, v, "run") >= 5.0 * figure(&r, elapsed, "dml-btree-only", "run"),
            "{v} is slow"
        );
    }
    let cur = Metric::Stat(fusion_core::stats::Stat::GcCurrentBlocksReceived);
    assert_eq!(figure(&r, cur, "dml-bitmap-one-node", "run"), 0.0);
    assert!(figure(&r, cur, "dml-bitmap-two-nodes", "run") > 0.0);
    // Every change of a piece was one bit of one row.
    let pieces = Metric::Stat(fusion_core::stats::Stat::BitmapPiecesChanged);
    let rows = Metric::Stat(fusion_core::stats::Stat::RowsUpdated);
    for v in ["dml-bitmap-one-node", "dml-bitmap-two-nodes"] {
        let (p, n) = (figure(&r, pieces, v, "run"), figure(&r, rows, v, "run"));
        assert!(
            p > 0.0 && (p - 2.0 * n).abs() <= 16.0,
            "{v}: {p} pieces for {n} rows"
        );
    }
}

#[test]
fn logical_isolation_verdicts_per_variant() {
    let r = run(
        "myth-logical-isolation",
        &["phase.warmup.duration_s=0.3", "phase.batch.duration_s=1.2"],
    );
    for v in &r.verdicts {
        assert!(v.passed, "{}: {}", v.name, v.detail);
    }
    let cluster = Metric::ClassTimeMs(fusion_core::stats::WaitClass::Cluster);
    let c = |v: &str| figure(&r, cluster, v, "batch");
    assert_eq!(
        c("one-instance"),
        0.0,
        "one instance: no cluster wait at all"
    );
    assert_eq!(
        c("partitioned-local-index"),
        0.0,
        "local indexes: nothing shared"
    );
    assert!(c("shared-blocks") > c("partitioned-global-index"));
    assert!(c("partitioned-global-index") > 0.0);
}
