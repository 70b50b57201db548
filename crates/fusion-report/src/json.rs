//! The JSON contract: what machines read after a run.
//!
//! ```text
//! { "scenario", "title", "myth" (string|null), "seed",
//!   "phases": [ { "name", "elapsed_us",
//!                 "instances": [ { "id",
//!                                  "sysstat": { "<v$sysstat name>": number },
//!                                    (every statistic; those inside one node, `fusionlab ...
//!                                    memory ...`, only when not 0: a run without `[server]`)
//!                                  "events": { "<event>": { "waits", "time_us", "waits_fg",
//!                                                           "time_fg_us", "max_us",
//!                                                           "histogram_us": { "<upper bound us>": count } } },
//!                                  "awr": { "<AWR line label>": number|null },
//!                                  "statements": [ { "sql", "recursive",
//!                                                    "parse"|"execute"|"fetch": { "count", "cpu_us", "elapsed_us",
//!                                                                                 "disk", "query", "current", "rows" },
//!                                                    "waits": { "<event>": { "times_waited", "max_wait_us",
//!                                                                            "total_waited_us" } } } ] } ] } ],
//!   (a phase with parallel statements also has "px": { "statements": [ { "query", "plan",
//!    "qc_instance", "qc_sid", "requested_dop", "dop", "server_sets", "slaves": { "<inst>": n },
//!    "queued_us", "elapsed_us", "result_rows", "index_leaves" } ], "sessions": [ { "query",
//!    "qc_instance", "qc_sid", "instance", "name", "server_set", "requested_dop", "dop", "rows",
//!    "bytes_sent_remote", "bytes_received_remote", "bytes_sent_local" } ],
//!    "pairs": [ { "from", "to", "bytes", "buffers" } ] })
//!   "series": { "interval_us", "truncated",
//!               "instances": [ { "id",
//!                                "points": [ { "t_s", "length_us", "up",
//!                                              "gc_cr_blocks_received", "gc_cr_receive_us", "avg_gc_cr_receive_ms",
//!                                              "gc_current_blocks_received", "gc_current_receive_us",
//!                                              "avg_gc_current_receive_ms", "user_commits",
//!                                              "wait_class_us": { "<wait class>": number },
//!                                              "top_waits": [ { "event", "waits", "time_us" } ],
//!                                              "run_queue", "lms_backlog" } ] } ] }
//!             (the first variant's; absent when the run took none)
//!   "variants": [ { "name", "phases": [...], "series": {...} } ]   (only when the scenario declares variants)
//!   "verdicts": [ { "name", "passed", "detail" } ],
//!   "reproduced": bool }
//! ```
//!
//! Every statistic is present; time-valued ones (nanoseconds inside) are
//! integer microseconds, the others as counted. Events appear only when they
//! had waits, histogram buckets only when not empty. Bucket `i` counts waits
//! shorter than `2^i` us, keyed by that bound; the last bucket (2^31) also
//! holds everything longer.
//!
//! A series point covers the `length_us` before `t_s` (cluster time, s);
//! its counts and times are the interval's, `avg_*` null without a block;
//! `run_queue` (processes waiting for a CPU) and `lms_backlog` (requests
//! LMS holds unfinished) are read at `t_s`; `top_waits` are the interval's
//! five largest non-idle waits by time.

use fusion_core::metrics::AwrLine;
use fusion_core::stats::{EventStat, Stat, Stats, Unit, Wait};
use serde_json::{Map, Value, json};

use crate::model::{InstanceResult, PhaseResult, RunResult, VariantResult};
use crate::series::{SERIES_WAIT_CLASSES, Series, SeriesPoint};

const NS_PER_US: u64 = 1_000;

/// The run as one JSON object (see the module documentation for the contract).
pub fn to_json(result: &RunResult) -> Value {
    let mut o = Map::new();
    o.insert("scenario".into(), json!(result.scenario));
    o.insert("title".into(), json!(result.title));
    o.insert("myth".into(), json!(result.myth));
    o.insert("seed".into(), json!(result.seed));
    let first = result.variants.first().map(phases).unwrap_or_default();
    o.insert("phases".into(), Value::Array(first));
    if let Some(s) = result.variants.first().and_then(|v| v.series.as_ref()) {
        o.insert("series".into(), series(s));
    }
    if result.has_variants {
        let variants = result
            .variants
            .iter()
            .map(|v| {
                let mut o = Map::new();
                o.insert("name".into(), json!(v.name));
                o.insert("phases".into(), Value::Array(phases(v)));
                if let Some(s) = &v.series {
                    o.insert("series".into(), series(s));
                }
                Value::Object(o)
            })
            .collect();
        o.insert("variants".into(), Value::Array(variants));
    }
    let verdicts = result
        .verdicts
        .iter()
        .map(|v| json!({ "name": v.name, "passed": v.passed, "detail": v.detail }))
        .collect();
    o.insert("verdicts".into(), Value::Array(verdicts));
    o.insert("reproduced".into(), json!(result.reproduced()));
    Value::Object(o)
}

/// `series`: per instance, the figures of every interval.
fn series(s: &Series) -> Value {
    let instances: Vec<Value> = s
        .instances
        .iter()
        .map(|i| {
            let points: Vec<Value> = i.points.iter().map(point).collect();
            json!({ "id": i.id, "points": points })
        })
        .collect();
    json!({
        "interval_us": s.interval_ns / NS_PER_US,
        "truncated": s.truncated,
        "instances": instances,
    })
}

fn point(p: &SeriesPoint) -> Value {
    let mut classes = Map::new();
    for (c, ns) in SERIES_WAIT_CLASSES.iter().zip(&p.wait_class_ns) {
        classes.insert(c.name().into(), json!(ns / NS_PER_US));
    }
    let top: Vec<Value> = p
        .top_waits
        .iter()
        .map(|w| json!({ "event": w.event, "waits": w.waits, "time_us": w.time_ns / NS_PER_US }))
        .collect();
    json!({
        "t_s": p.end_ns as f64 / 1e9,
        "length_us": p.length_ns / NS_PER_US,
        "up": p.up,
        "gc_cr_blocks_received": p.gc_cr_blocks_received,
        "gc_cr_receive_us": p.gc_cr_receive_ns / NS_PER_US,
        "avg_gc_cr_receive_ms": p.gc_cr_receive_ms(),
        "gc_current_blocks_received": p.gc_current_blocks_received,
        "gc_current_receive_us": p.gc_current_receive_ns / NS_PER_US,
        "avg_gc_current_receive_ms": p.gc_current_receive_ms(),
        "user_commits": p.user_commits,
        "wait_class_us": classes,
        "top_waits": top,
        "run_queue": p.run_queue,
        "lms_backlog": p.lms_backlog,
    })
}

fn phases(v: &VariantResult) -> Vec<Value> {
    v.phases.iter().map(phase).collect()
}

fn phase(p: &PhaseResult) -> Value {
    let mut v = json!({
        "name": p.name,
        "elapsed_us": p.elapsed_ns / NS_PER_US,
        "instances": p.instances.iter().map(instance).collect::<Vec<_>>(),
    });
    let px = p.cluster_stats().px;
    if !px.is_empty()
        && let Some(o) = v.as_object_mut()
    {
        o.insert("px".into(), crate::px::json(&px));
    }
    if !p.alert_log.is_empty()
        && let Some(o) = v.as_object_mut()
    {
        let lines: Vec<Value> = p
            .alert_log
            .iter()
            .map(|a| {
                json!({
                    "t_s": a.at_ns as f64 / 1e9,
                    "instance": a.instance,
                    "line": a.line,
                })
            })
            .collect();
        o.insert("alert_log".into(), Value::Array(lines));
    }
    if !p.recovery.is_empty()
        && let Some(o) = v.as_object_mut()
    {
        o.insert("recovery".into(), recovery(p));
    }
    if !p.pf_masters.is_empty()
        && let Some(o) = v.as_object_mut()
    {
        // Masters from 0 as in Oracle's view; null: the hash's.
        let rows: Vec<Value> = p
            .pf_masters
            .iter()
            .map(|r| {
                json!({
                    "object": r.object,
                    "data_object_id": r.pkey,
                    "current_master": r.current_master,
                    "previous_master": r.previous_master,
                    "remaster_cnt": r.remaster_count,
                })
            })
            .collect();
        o.insert("gcspfmaster_info".into(), Value::Array(rows));
    }
    v
}

/// `recovery`: the phase's instance recoveries (1-based instances; times
/// in ms, detection in s from the phase's start; `brownout_ms` null when
/// there was no rate before the fault to compare with).
fn recovery(p: &PhaseResult) -> Value {
    use fusion_core::metrics::RecoveryFigure as F;
    let rows: Vec<Value> = p
        .recovery
        .iter()
        .map(|r| {
            let f = |figure: F| r.figure(figure, p.start_ns);
            json!({
                "dead_instance": r.dead_instance,
                "recovered_by": r.recovered_by,
                "detected_s": f(F::DetectedS),
                "freeze_ms": f(F::FreezeMs),
                "recovery_ms": f(F::RecoveryMs),
                "brownout_ms": f(F::BrownoutMs),
                "redo_kb_read": f(F::RedoKbRead),
                "blocks_recovered": r.blocks_recovered,
                "transactions_rolled_back": r.transactions_rolled_back,
            })
        })
        .collect();
    Value::Array(rows)
}

fn instance(i: &InstanceResult) -> Value {
    json!({
        "id": i.id,
        "sysstat": sysstat(&i.stats),
        "events": events(&i.stats),
        "awr": awr(&i.stats),
        "statements": statements(&i.stats),
    })
}

/// tkprof's figures per statement that ran (CPU, elapsed and gets are all
/// charged to execute).
fn statements(s: &Stats) -> Value {
    let call = |count: u64, cpu: u64, ela: u64, disk: u64, q: u64, c: u64, rows: u64| {
        json!({ "count": count, "cpu_us": cpu / NS_PER_US, "elapsed_us": ela / NS_PER_US,
                "disk": disk, "query": q, "current": c, "rows": rows })
    };
    let list = s
        .statements
        .iter()
        .filter(|x| !x.is_empty())
        .map(|st| {
            let mut waits = Map::new();
            for (&w, e) in Wait::ALL.iter().zip(&st.waits) {
                if e.waits > 0 {
                    waits.insert(
                        w.name().into(),
                        json!({ "times_waited": e.waits, "max_wait_us": e.max_ns / NS_PER_US,
                                "total_waited_us": e.time_ns / NS_PER_US }),
                    );
                }
            }
            json!({
                "sql": st.sql,
                "recursive": st.recursive,
                "parse": call(st.parses, 0, 0, 0, 0, 0, 0),
                "execute": call(st.executions, st.cpu_ns, st.elapsed_ns, st.disk, st.query, st.current, st.rows),
                "fetch": call(st.fetches, 0, 0, 0, 0, 0, 0),
                "waits": waits,
            })
        })
        .collect();
    Value::Array(list)
}

fn sysstat(s: &Stats) -> Value {
    let mut m = Map::new();
    for &stat in Stat::ALL {
        if stat.inside_node() && s.get(stat) == 0 {
            continue;
        }
        let v = match stat.unit() {
            Unit::Time => s.get(stat) / NS_PER_US,
            Unit::Count | Unit::Bytes => s.get(stat),
        };
        m.insert(stat.name().into(), json!(v));
    }
    Value::Object(m)
}

fn events(s: &Stats) -> Value {
    let mut m = Map::new();
    for &w in Wait::ALL {
        let e = s.event(w);
        if e.waits > 0 {
            m.insert(w.name().into(), event(e));
        }
    }
    Value::Object(m)
}

fn event(e: &EventStat) -> Value {
    let mut h = Map::new();
    for (i, &n) in e.histogram.iter().enumerate() {
        if n > 0 {
            h.insert((1u64 << i).to_string(), json!(n));
        }
    }
    json!({
        "waits": e.waits,
        "time_us": e.time_ns / NS_PER_US,
        "waits_fg": e.waits_fg,
        "time_fg_us": e.time_fg_ns / NS_PER_US,
        "max_us": e.max_ns / NS_PER_US,
        "histogram_us": h,
    })
}

fn awr(s: &Stats) -> Value {
    let mut m = Map::new();
    for &line in AwrLine::ALL {
        m.insert(line.label().into(), json!(line.eval(s)));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;

    fn run(has_variants: bool) -> RunResult {
        let mut s = Stats::default();
        s.add(Stat::GcCrBlocksReceived, 10);
        s.add(Stat::GcCrBlockReceiveTime, 10 * 1_500_000);
        s.add(Stat::DbTime, 2_500_000_999);
        s.add(Stat::RedoSize, 4096);
        s.wait(Wait::GcCrBlock2Way, 1_500_000, true);
        s.wait(Wait::GcCrBlock2Way, 1_700_000, true);
        s.wait(Wait::GcCrBlock2Way, 300_000, false);
        let mut st = fusion_core::tkprof::StmtStat::new("update seq$".into(), true);
        st.parses = 2;
        st.executions = 2;
        st.elapsed_ns = 3_000_000;
        st.wait(Wait::GcCurrentBlock2Way, 1_000_000);
        s.statements.push(st);
        let phase = |name: &str| PhaseResult {
            alert_log: Vec::new(),
            recovery: Vec::new(),
            pf_masters: Vec::new(),
            name: name.into(),
            start_ns: 0,
            elapsed_ns: 30_000_000_000,
            instances: vec![InstanceResult {
                id: 1,
                cpu_count: 4,
                db_block_size: 8192,
                stats: s.clone(),
                threads: None,
            }],
        };
        RunResult {
            scenario: "interconnect".into(),
            title: "GC problems are the interconnect".into(),
            myth: None,
            seed: 42,
            has_variants,
            variants: vec![
                VariantResult {
                    name: "a".into(),
                    phases: vec![phase("baseline"), phase("slow-redo")],
                    series: Some(Series {
                        interval_ns: 1_000_000_000,
                        truncated: false,
                        instances: vec![crate::series::InstanceSeries {
                            id: 1,
                            points: vec![SeriesPoint {
                                end_ns: 1_000_000_000,
                                length_ns: 1_000_000_000,
                                up: true,
                                gc_cr_blocks_received: 4,
                                gc_cr_receive_ns: 6_000_000,
                                user_commits: 9,
                                wait_class_ns: [2_000_000, 0, 0, 0, 0, 0, 0, 0, 0],
                                top_waits: vec![crate::series::TopWait {
                                    event: "gc cr block 2-way",
                                    waits: 4,
                                    time_ns: 2_000_000,
                                }],
                                run_queue: 2,
                                lms_backlog: 1,
                                ..SeriesPoint::default()
                            }],
                        }],
                    }),
                },
                VariantResult {
                    name: "b".into(),
                    phases: vec![phase("baseline")],
                    series: None,
                },
            ],
            verdicts: vec![Verdict {
                name: "e".into(),
                passed: true,
                detail: "d".into(),
                measured: None,
            }],
        }
    }

    #[test]
    fn contract_keys_units_and_histogram() {
        let j = to_json(&run(false));
        for k in [
            "scenario",
            "title",
            "myth",
            "seed",
            "phases",
            "verdicts",
            "reproduced",
        ] {
            assert!(j.get(k).is_some(), "missing {k}");
        }
        assert!(j.get("variants").is_none());
        assert_eq!(j["myth"], Value::Null);
        assert_eq!(j["seed"], 42);
        assert_eq!(j["reproduced"], true);
        assert_eq!(
            j["verdicts"][0],
            json!({ "name": "e", "passed": true, "detail": "d" })
        );
        let p = &j["phases"];
        assert_eq!(p.as_array().map(Vec::len), Some(2));
        assert_eq!(p[0]["name"], "baseline");
        assert_eq!(p[0]["elapsed_us"], 30_000_000);
        let i = &p[0]["instances"][0];
        assert_eq!(i["id"], 1);
        let sys = i["sysstat"].as_object().expect("sysstat object");
        let node_stats = Stat::ALL.iter().filter(|s| s.inside_node()).count();
        assert_eq!(
            sys.len(),
            Stat::COUNT - node_stats,
            "every statistic is present, but those inside one node while they are 0"
        );
        assert_eq!(sys["DB time"], 2_500_000, "time in integer microseconds");
        assert_eq!(sys["gc cr block receive time"], 15_000);
        assert_eq!(sys["gc cr blocks received"], 10);
        assert_eq!(sys["redo size"], 4096, "bytes as counted");
        let ev = i["events"].as_object().expect("events object");
        assert_eq!(ev.len(), 1, "only events with waits");
        let e = &ev["gc cr block 2-way"];
        assert_eq!(e["waits"], 3);
        assert_eq!(e["time_us"], 3_500);
        assert_eq!(e["waits_fg"], 2);
        assert_eq!(e["time_fg_us"], 3_200);
        assert_eq!(e["max_us"], 1_700);
        // 300 us is under 512 us; 1500 and 1700 us are under 2048 us.
        assert_eq!(e["histogram_us"], json!({ "512": 1, "2048": 2 }));
        let awr = i["awr"].as_object().expect("awr object");
        assert_eq!(awr.len(), AwrLine::ALL.len());
        assert_eq!(awr[AwrLine::CrReceiveMs.label()], 1.5);
        assert_eq!(awr[AwrLine::CurrentReceiveMs.label()], Value::Null);
        let st = &i["statements"][0];
        assert_eq!(st["sql"], "update seq$");
        assert_eq!(st["recursive"], true);
        assert_eq!(st["parse"]["count"], 2);
        assert_eq!(st["execute"]["elapsed_us"], 3_000);
        assert_eq!(
            st["waits"]["gc current block 2-way"],
            json!({ "times_waited": 1, "max_wait_us": 1_000, "total_waited_us": 1_000 })
        );
        assert_eq!(j["series"]["interval_us"], 1_000_000);
        let point = &j["series"]["instances"][0]["points"][0];
        assert_eq!(point["t_s"], 1.0);
        assert_eq!(point["avg_gc_cr_receive_ms"], 1.5);
        assert_eq!(point["avg_gc_current_receive_ms"], Value::Null);
        assert_eq!(point["user_commits"], 9);
        assert_eq!(point["wait_class_us"]["Cluster"], 2_000);
        assert_eq!(point["wait_class_us"]["Commit"], 0);
        assert_eq!(
            point["top_waits"][0],
            json!({ "event": "gc cr block 2-way", "waits": 4, "time_us": 2_000 })
        );
        assert_eq!(
            (point["run_queue"].clone(), point["lms_backlog"].clone()),
            (json!(2), json!(1))
        );
    }

    #[test]
    fn variants_shape() {
        let j = to_json(&run(true));
        let v = j["variants"].as_array().expect("variants array");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0]["name"], "a");
        assert_eq!(v[1]["name"], "b");
        assert_eq!(v[1]["phases"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            j["phases"], v[0]["phases"],
            "top-level phases are the first variant's"
        );
        assert_eq!(j["series"], v[0]["series"], "and so is the series");
        assert!(v[1].get("series").is_none(), "b took none");
        let text = serde_json::to_string(&j).expect("serializes");
        assert_eq!(
            text,
            serde_json::to_string(&to_json(&run(true))).expect("serializes")
        );
    }
}
