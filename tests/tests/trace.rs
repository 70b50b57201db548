//! The timeline trace (`run --trace`): the JSON parses, every flow arrow
//! that starts ends, slices nest on every thread, the whole CPU-starvation
//! myth fits in 50 MB, a window keeps only its time, and tracing changes no
//! figure of the run.

use std::collections::HashMap;

use fusion_report::trace::{TraceOut, TraceSummary, TraceWindow, TraceWriter};
use fusion_scenario::LoadedScenario;
use fusion_sim::SimOptions;
use fusionlab_tests::{CPU_STARVATION, shipped_short, shipped_with};
use serde_json::Value;

/// The bound on the whole CPU-starvation myth's trace.
const CPU_MYTH_TRACE_BYTES_MAX: usize = 50_000_000;

/// Run every variant of `loaded` with a trace kept in memory.
fn traced(loaded: &LoadedScenario, window: TraceWindow) -> (Value, TraceSummary, Value) {
    let writer = TraceWriter::new(TraceOut::memory(), window);
    let (result, _, writer) =
        fusion_sim::run_scenario_traced(loaded, &SimOptions::default(), writer);
    let (summary, bytes) = writer.finish().expect("a trace in memory");
    let trace: Value = serde_json::from_slice(&bytes).expect("the trace is JSON");
    assert_eq!(summary.json_bytes as usize, bytes.len());
    (fusion_report::to_json(&result), summary, trace)
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().expect("traceEvents")
}

/// A time in nanoseconds from the format's microseconds.
fn ns(us: &Value) -> i64 {
    (us.as_f64().expect("a time") * 1000.0).round() as i64
}

fn thread_key(e: &Value) -> Thread {
    (
        e["pid"].as_u64().expect("pid"),
        e["tid"].as_u64().expect("tid"),
    )
}

/// A thread: (pid, tid).
type Thread = (u64, u64);

/// A complete slice: (start, end, name), in nanoseconds.
type Slice = (i64, i64, String);

/// Every complete slice, per thread.
fn slices(trace: &Value) -> HashMap<Thread, Vec<Slice>> {
    let mut by_thread: HashMap<Thread, Vec<Slice>> = HashMap::new();
    for e in events(trace).iter().filter(|e| e["ph"] == "X") {
        let start = ns(&e["ts"]);
        let end = start + ns(&e["dur"]);
        let name = e["name"].as_str().expect("a name").to_string();
        by_thread
            .entry(thread_key(e))
            .or_default()
            .push((start, end, name));
    }
    by_thread
}

/// On every thread, two slices are disjoint or one holds the other.
fn assert_nested(trace: &Value) {
    for (thread, mut list) in slices(trace) {
        list.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        let mut open: Vec<&Slice> = Vec::new();
        for s in &list {
            while open.last().is_some_and(|o| o.1 <= s.0) {
                open.pop();
            }
            if let Some(o) = open.last() {
                assert!(
                    s.1 <= o.1,
                    "thread {thread:?}: {s:?} overlaps {o:?} partly (slices must nest)"
                );
            }
            open.push(s);
        }
    }
}

/// Every flow has one start, one end after it, and steps between; each of
/// its events lies inside a slice of its thread (where it binds). Returns
/// how many flows.
fn assert_flows_whole(trace: &Value) -> usize {
    // Per flow id: (phase, time, thread) of each of its events.
    let mut flows: HashMap<u64, Vec<(&str, i64, Thread)>> = HashMap::new();
    for e in events(trace) {
        let ph = e["ph"].as_str().expect("ph");
        if matches!(ph, "s" | "t" | "f") {
            flows
                .entry(e["id"].as_u64().expect("a flow id"))
                .or_default()
                .push((ph, ns(&e["ts"]), thread_key(e)));
        }
    }
    let by_thread = slices(trace);
    for (id, steps) in &flows {
        let starts = steps.iter().filter(|s| s.0 == "s").count();
        let ends = steps.iter().filter(|s| s.0 == "f").count();
        assert_eq!((starts, ends), (1, 1), "flow {id}: {steps:?}");
        let start = steps.iter().find(|s| s.0 == "s").map(|s| s.1);
        assert!(
            steps.iter().all(|s| Some(s.1) >= start),
            "flow {id} starts after a step of it: {steps:?}"
        );
        for (ph, at, thread) in steps {
            let inside = by_thread
                .get(thread)
                .is_some_and(|l| l.iter().any(|&(a, b, _)| a <= *at && *at <= b));
            assert!(
                inside,
                "flow {id}: its {ph} at {at} ns on {thread:?} is in no slice"
            );
        }
    }
    flows.len()
}

/// The names `M` events give processes and threads.
fn names(trace: &Value, what: &str) -> Vec<String> {
    events(trace)
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == what)
        .map(|e| e["args"]["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_whole_cpu_myth_trace_fits_in_50_mb_parses_nests_and_its_arrows_end() {
    let loaded = shipped_with(CPU_STARVATION, &[]);
    let (_, summary, trace) = traced(&loaded, TraceWindow::ALL);
    assert!(
        (summary.json_bytes as usize) < CPU_MYTH_TRACE_BYTES_MAX,
        "the CPU myth's trace is {} bytes",
        summary.json_bytes
    );
    assert_eq!(summary.records_dropped, 0);
    assert_nested(&trace);
    let flows = assert_flows_whole(&trace);
    assert!(flows > 1000, "{flows} transfers drawn");
    assert_eq!(flows as u64, summary.transfers);

    // An instance is a process; its sessions and background processes threads.
    let processes = names(&trace, "process_name");
    assert_eq!(processes, ["cluster", "inst1", "inst2"]);
    let threads = names(&trace, "thread_name");
    for t in ["phases", "LMS0", "LGWR", "DBW0"] {
        assert!(threads.iter().any(|n| n == t), "no thread {t}: {threads:?}");
    }
    assert!(threads.iter().any(|n| n.starts_with("oracle")));

    // Waits under their v$system_event names, CPU steps, the phases.
    let named = |ph: &str, name: &str| {
        events(&trace)
            .iter()
            .filter(|e| e["ph"] == ph && e["name"] == name)
            .count()
    };
    for wait in ["gc cr block 2-way", "log file sync", "CPU", "run queue"] {
        assert!(named("X", wait) > 0, "no {wait} slice");
    }
    for phase in &loaded.variants[0].scenario.phases {
        assert_eq!(named("X", &phase.name), 1, "phase {}", phase.name);
    }
    // The CPU hogs of the starved phase: a fault mark and their CPU.
    assert!(
        events(&trace)
            .iter()
            .any(|e| e["ph"] == "i" && e["name"].as_str().is_some_and(|n| n.contains("stress_cpu")))
    );
    assert!(threads.iter().any(|n| n.starts_with("stress")));
    assert!(named("X", "stress_cpu (runnable or running)") > 0);
    // The run queue and LMS backlog as counters, per instance.
    assert!(named("C", "run queue") > 10);
    assert!(named("C", "LMS backlog") > 10);
    // A received block's arrow is named as its wait is.
    assert!(named("f", "gc cr block 2-way") > 0);
}

#[test]
fn a_trace_changes_no_figure_of_the_run() {
    let loaded = shipped_short(CPU_STARVATION, 0.5, &[]);
    let (plain, _) = fusion_sim::run_scenario(&loaded, &SimOptions::default());
    let (with_trace, _, _) = traced(&loaded, TraceWindow::ALL);
    assert_eq!(fusion_report::to_json(&plain), with_trace);
}

#[test]
fn a_window_keeps_only_its_time_and_whole_arrows() {
    let loaded = shipped_short(CPU_STARVATION, 0.5, &[]);
    let window: TraceWindow = "1.2..1.7".parse().expect("a window");
    let (_, summary, trace) = traced(&loaded, window);
    let (from, to) = (1_200_000_000, 1_700_000_000);
    let mut timed = 0;
    for e in events(&trace) {
        if e["ph"] == "M" {
            continue;
        }
        let start = ns(&e["ts"]);
        let end = start + e.get("dur").map_or(0, ns);
        assert!(
            from <= start && end <= to,
            "{e} is outside the window {from}..{to} ns"
        );
        timed += 1;
    }
    assert!(timed > 100, "{timed} events in the window");
    assert_nested(&trace);
    assert!(assert_flows_whole(&trace) > 0);
    assert!(
        summary.transfers_unfinished > 0,
        "arrows cut by the window are left out"
    );
    let (_, whole, _) = traced(&loaded, TraceWindow::ALL);
    assert!(summary.json_bytes * 2 < whole.json_bytes);
    // The same run, the same trace.
    let (_, again, same) = traced(&loaded, window);
    assert_eq!((again, same), (summary, trace));
}
