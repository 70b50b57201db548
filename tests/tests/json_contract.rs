//! The JSON contract machines rely on (`fusionlab run --json`).

use fusion_core::metrics::AwrLine;
use fusion_core::stats::Stat;
use fusion_report::to_json;
use fusion_sim::{SimOptions, run_scenario};
use fusionlab_tests::{CPU_STARVATION, shipped_short};
use serde_json::Value;

#[test]
fn keys_types_and_units() {
    let loaded = shipped_short(CPU_STARVATION, 0.3, &[]);
    let (result, _) = run_scenario(
        &loaded,
        &SimOptions {
            seed: Some(77),
            check: false,
            ..SimOptions::default()
        },
    );
    let j = to_json(&result);

    assert_eq!(j["scenario"], loaded.name.as_str());
    assert_eq!(j["seed"], 77, "the seed used");
    assert!(j["title"].is_string());

    let variant = &result.variants[0];
    let phases = j["phases"].as_array().expect("phases is an array");
    assert_eq!(phases.len(), variant.phases.len());
    let mut received = 0;
    for (pj, p) in phases.iter().zip(&variant.phases) {
        assert_eq!(pj["name"], p.name.as_str());
        assert_eq!(pj["elapsed_us"], 300_000);
        let instances = pj["instances"].as_array().expect("instances is an array");
        assert_eq!(instances.len(), p.instances.len());
        for (ij, i) in instances.iter().zip(&p.instances) {
            assert_eq!(ij["id"], i.id);
            assert!(ij["events"].is_object(), "events is an object");
            let sys = ij["sysstat"].as_object().expect("sysstat is an object");
            let blocks = sys["gc cr blocks received"].as_u64().expect("a count");
            let time_us = sys["gc cr block receive time"]
                .as_u64()
                .expect("integer us");
            assert_eq!(blocks, i.stats.get(Stat::GcCrBlocksReceived));
            assert_eq!(
                time_us,
                i.stats.get(Stat::GcCrBlockReceiveTime) / 1_000,
                "receive time is in microseconds"
            );
            // The AWR average agrees with the raw figures.
            let awr = &ij["awr"][AwrLine::CrReceiveMs.label()];
            if blocks > 0 {
                let avg = awr.as_f64().expect("an average when blocks were received");
                let from_raw = time_us as f64 / 1_000.0 / blocks as f64;
                assert!(
                    (avg - from_raw).abs() <= 0.001 + avg * 1e-6,
                    "{avg} vs {from_raw}"
                );
            } else {
                assert_eq!(*awr, Value::Null);
            }
            for (name, e) in ij["events"].as_object().into_iter().flatten() {
                assert!(e["waits"].as_u64().is_some_and(|w| w > 0), "{name}");
                assert!(e["time_us"].is_u64(), "{name}");
            }
            received += blocks;
        }
    }
    assert!(
        received > 0,
        "the short run shipped no block: the test measures nothing"
    );

    let verdicts = j["verdicts"].as_array().expect("verdicts is an array");
    assert_eq!(verdicts.len(), result.verdicts.len());
    assert!(
        !verdicts.is_empty(),
        "the shipped scenario declares expectations"
    );
    for (vj, v) in verdicts.iter().zip(&result.verdicts) {
        assert_eq!(vj["name"], v.name.as_str());
        assert_eq!(vj["passed"], v.passed);
        assert_eq!(vj["detail"], v.detail.as_str());
    }
    assert_eq!(j["reproduced"], result.reproduced());
}

/// A phase where parallel statements ended has an additive `px` object; the
/// other phases (and scenarios without parallel query) do not.
#[test]
fn parallel_execution_is_an_additive_key() {
    let loaded = shipped_short("myth-inter-instance-pq", 0.2, &[]);
    let (result, _) = run_scenario(&loaded, &SimOptions::default());
    let j = to_json(&result);
    let sql2 = &j["variants"][0]["phases"][1];
    assert_eq!(sql2["name"], "sql2");
    let st = &sql2["px"]["statements"][0];
    assert_eq!(st["query"], "sql2");
    assert_eq!(st["dop"], 16);
    assert_eq!(st["slaves"]["1"], 16);
    assert_eq!(st["slaves"]["2"], 16);
    let sessions = sql2["px"]["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 33, "the QC and 32 slaves");
    let across: u64 = sessions
        .iter()
        .map(|s| s["bytes_sent_remote"].as_u64().expect("bytes"))
        .sum();
    let sysstat: u64 = sql2["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| {
            i["sysstat"]["fusionlab PX remote bytes sent"]
                .as_u64()
                .expect("a count")
        })
        .sum();
    assert_eq!(across, sysstat, "per-slave bytes add up to the statistics");
    let plain = shipped_short(CPU_STARVATION, 0.2, &[]);
    let (result, _) = run_scenario(&plain, &SimOptions::default());
    let j = to_json(&result);
    assert!(j["phases"][0].get("px").is_none());
}
