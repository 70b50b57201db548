//! Bounds on input (issue 14): any size the loader accepts runs. A small
//! scenario with every kind of segment, step and fault gets sizes drawn over
//! (and a little beyond) their accepted ranges; what the loader accepts and
//! the memory estimate admits under a small cap runs briefly on the
//! simulator. The property is that nothing panics: not the loader, not the
//! estimate, not the model (a truncated block address or an overflowing
//! sum in the core is a panic in this profile).

use fusion_scenario::estimate::estimate;
use fusion_scenario::load_str;
use fusion_sim::SimOptions;
use proptest::prelude::*;

/// Every kind of segment the model lays out: an OLTP table with an index
/// and a sequence for inserts, a table with a bitmap index, a table only a
/// parallel query reads; every kind of fault.
const BASE: &str = r#"
[scenario]
name = "bounds"
title = "Sizes across their ranges"
seed = 5

[cluster]
instances = 2

[[table]]
name = "t"
rows = 2000
rows_per_block = 20

[[index]]
name = "t_pk"
table = "t"

[[table]]
name = "b"
rows = 1000
rows_per_block = 10
distinct_values = 4

[[index]]
name = "b_pk"
table = "b"

[[index]]
name = "b_bm"
table = "b"
kind = "bitmap"
rows_per_piece = 100

[[table]]
name = "p"
rows = 3000
rows_per_block = 50

[[sequence]]
name = "s"

[[query]]
name = "q"
plan = "hash_join_group_by"
tables = ["p", "p"]
degree = 4

[[workload]]
name = "oltp"
instances = "all"
sessions_per_instance = 2
think_time_ms = 1

[[workload.transaction]]
name = "mix"
steps = [
  { op = "read", table = "t", via = "t_pk", rows = 2 },
  { op = "update", table = "t", via = "t_pk", keys = { dist = "sequential", range = [1, 2000] } },
  { op = "insert", table = "t", rows = 2, key = { sequence = "s" } },
  { op = "nextval", sequence = "s" },
  { op = "count", table = "b", via = "b_bm" },
  { op = "update", table = "b", via = "b_pk" },
  { op = "read", table = "t", via = "full_scan" },
  { op = "commit" },
]

[[workload]]
name = "px"
instances = [1]
sessions_per_instance = 1

[[workload.transaction]]
steps = [{ op = "parallel_query", query = "q" }, { op = "think", ms = 1 }]

[[phase]]
name = "one"
duration_s = 0.02

[[phase]]
name = "two"
duration_s = 0.02

[[phase.fault]]
kind = "stress_cpu"
instance = 1
workers = 2

[[phase.fault]]
kind = "latency"
target = "all"
latency_ms = 1

[[phase.fault]]
kind = "bandwidth"
target = { from = 1, to = 2 }
rate_mbps = 100

[[phase.fault]]
kind = "disk_latency"
instance = 2
device = "redo"
latency_ms = 2
"#;

/// A run the estimate puts above this is skipped, as `--max-memory` would
/// refuse it: the test must stay small.
const CAP: u64 = 192 << 20;

/// An integer from `lo..=hi`, spread evenly over the orders of magnitude
/// (the edges of a wide range matter more than its middle).
fn log_int(lo: u64, hi: u64) -> impl Strategy<Value = u64> {
    (0.0f64..=1.0, any::<bool>()).prop_map(move |(u, edge)| {
        if edge && u < 0.2 {
            return if u < 0.1 { lo } else { hi };
        }
        let (a, b) = ((lo.max(1) as f64).ln(), (hi.max(1) as f64).ln());
        let v = (a + u * (b - a)).exp().round();
        if v >= hi as f64 {
            hi
        } else {
            (v as u64).clamp(lo, hi)
        }
    })
}

/// A number from `lo..=hi` (`lo` > 0), spread evenly over the orders of magnitude.
fn log_f64(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (0.0f64..=1.0).prop_map(move |u| (lo.ln() + u * (hi.ln() - lo.ln())).exp())
}

/// One `--set`, present or not.
fn knob(
    key: &'static str,
    values: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<Option<String>> {
    // A few knobs a case: a case with many is almost always refused or too big.
    proptest::option::weighted(0.2, values.prop_map(move |v| format!("{key}={v}"))).boxed()
}

fn int(key: &'static str, lo: u64, hi: u64) -> BoxedStrategy<Option<String>> {
    knob(key, log_int(lo, hi).prop_map(|v| v.to_string()))
}

fn num(key: &'static str, lo: f64, hi: f64) -> BoxedStrategy<Option<String>> {
    knob(key, log_f64(lo, hi).prop_map(|v| format!("{v}")))
}

/// Sizes over their accepted ranges and beyond, up to what the file format
/// holds: the loader must refuse what the model cannot take (a value it
/// let through unchecked would overflow or truncate in the run).
fn overrides() -> impl Strategy<Value = Vec<String>> {
    const I64: u64 = i64::MAX.unsigned_abs();
    const U32: u64 = u32::MAX as u64;
    let knobs: Vec<BoxedStrategy<Option<String>>> = vec![
        // The faults name instance 2.
        int("cluster.instances", 2, 16),
        int("table.t.rows", 1, I64),
        int("table.t.rows_per_block", 1, 1000),
        int("table.t.free_blocks_per_instance", 0, U32),
        int("table.b.rows", 1, I64),
        int("table.b.distinct_values", 1, U32),
        int("table.p.rows", 1, I64),
        int("index.t_pk.entries_per_leaf", 4, U32),
        int("index.t_pk.entries_per_branch", 4, U32),
        int("index.t_pk.free_blocks_per_instance", 0, U32),
        int("index.b_bm.rows_per_piece", 1, U32),
        int("index.b_bm.entries_per_leaf", 4, U32),
        int("sequence.s.cache", 2, 1_000_000_000),
        int("sequence.s.start", 1, U32),
        int("sequence.s.increment", 1, 1_000_000),
        int("query.q.degree", 1, 4096),
        int("query.q.instances", 1, 64),
        int("query.q.group_by_mod", 1, I64),
        int("workload.oltp.sessions_per_instance", 1, U32),
        int("workload.oltp.transaction.mix.steps.0.rows", 1, U32),
        int("workload.oltp.transaction.mix.steps.2.rows", 1, 100_000),
        int(
            "workload.oltp.transaction.mix.steps.1.keys.range.1",
            2000,
            I64,
        ),
        int("workload.px.sessions_per_instance", 1, 1000),
        int("parameters.cpu_count", 1, 1024),
        int("parameters.db_cache_size", 1 << 16, 1 << 40),
        int("parameters.parallel_max_servers", 0, 3600),
        int("parameters.db_file_multiblock_read_count", 1, 1024),
        int("parameters._lm_contiguous_res_count", 1, 1 << 20),
        int("parameters.log_buffer", 1 << 16, 1 << 32),
        int("phase.two.fault.0.workers", 1, U32),
        int("network.message_bytes", 1, U32),
        int("storage.iops", 0, I64),
        num("network.bandwidth_mbps", 1e-6, 1e9),
        num("network.latency_us", 1e-3, 1e15),
        num("storage.read_latency_ms", 1e-3, 1e12),
        num("costs.execute_us", 1e-3, 1e15),
        num("costs.row_examined_us", 1e-3, 1e15),
        num("costs.px_row_receive_us", 1e-3, 1e15),
        num("costs.time_slice_ms", 1e-3, 1e12),
        num("phase.two.fault.2.rate_mbps", 1e-6, 1e9),
        num("workload.oltp.think_time_ms", 1e-3, 1e12),
    ];
    knobs.prop_map(|sets| sets.into_iter().flatten().collect())
}

/// What became of a case.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The loader refused it.
    Refused,
    /// The estimate puts it above the cap.
    TooBig,
    Ran,
}

/// Load `sets` on BASE; when the loader accepts them and the estimate
/// admits the run, run it.
fn try_run(sets: &[String]) -> Outcome {
    let Ok(loaded) = load_str(BASE, "bounds.toml", sets) else {
        return Outcome::Refused;
    };
    if estimate(&loaded, false).bytes > CAP {
        return Outcome::TooBig;
    }
    let opts = SimOptions {
        seed: None,
        check: false,
        ..SimOptions::default()
    };
    let (_result, outcomes) = fusion_sim::run_scenario(&loaded, &opts);
    assert_eq!(outcomes.len(), loaded.variants.len());
    Outcome::Ran
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES=N runs a longer search (24 by default, for CI).
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
        // Each case may be a whole (short) simulation.
        max_shrink_iters: 64,
        max_shrink_time: 30_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_size_the_loader_accepts_runs_without_panicking(sets in overrides()) {
        try_run(&sets);
    }
}

/// The base itself runs, and so does every size at the top of its range
/// alone where the estimate admits it (fixed cases, so the edges run on every
/// CI run whatever the random ones draw).
#[test]
fn the_edges_of_each_range_run() {
    assert_eq!(try_run(&[]), Outcome::Ran, "the base scenario");
    let edges = [
        "table.t.rows_per_block=1000",
        "table.t.rows_per_block=1",
        "index.t_pk.entries_per_leaf=10000",
        "index.t_pk.entries_per_branch=4",
        "index.b_bm.rows_per_piece=1",
        "table.b.distinct_values=1000",
        "sequence.s.cache=1000000000",
        "sequence.s.start=4294967295",
        "sequence.s.increment=1000000",
        "query.q.degree=4096",
        "query.q.instances=64",
        "workload.oltp.transaction.mix.steps.1.keys.range.1=1099511627776",
        "workload.oltp.transaction.mix.steps.0.rows=4294967295",
        "parameters.cpu_count=1024",
        "parameters.db_cache_size=1024G",
        "parameters._lm_contiguous_res_count=1048576",
        "phase.two.fault.0.workers=10000",
        "network.message_bytes=65536",
        "network.bandwidth_mbps=1",
        "phase.two.fault.2.rate_mbps=1",
        "costs.execute_us=1000000",
        "costs.row_examined_us=1000",
        "costs.px_row_receive_us=1000",
        "costs.time_slice_ms=1000",
        "storage.iops=9223372036854775807",
        "query.q.group_by_mod=9223372036854775807",
        "cluster.instances=16",
    ];
    let missed: Vec<String> = edges
        .iter()
        .map(|edge| (edge, try_run(&[edge.to_string()])))
        .filter(|(_, o)| *o != Outcome::Ran)
        .map(|(edge, o)| format!("{edge}: {o:?}"))
        .collect();
    assert!(missed.is_empty(), "edges that did not run: {missed:#?}");
}

/// The calibration scenarios of the memory estimate (docs/benchmarks.md)
/// load, so the table there can be measured again.
#[test]
fn the_memory_calibration_scenarios_load() {
    for (file, text) in [
        ("rows.toml", include_str!("../bench/memory/rows.toml")),
        ("scan.toml", include_str!("../bench/memory/scan.toml")),
        ("px.toml", include_str!("../bench/memory/px.toml")),
        ("check.toml", include_str!("../bench/memory/check.toml")),
    ] {
        if let Err(e) = load_str(text, file, &[]) {
            panic!("{e}");
        }
    }
}
