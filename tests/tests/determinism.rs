//! Same scenario and seed: byte-identical results. Another seed: different ones.

use fusion_report::{TextOptions, render, to_json};
use fusion_sim::{SimOptions, run_scenario};
use fusionlab_tests::{CPU_STARVATION, run_clean, shipped_short};

fn json(loaded: &fusion_scenario::LoadedScenario, seed: Option<u64>) -> String {
    let (result, _) = run_clean(loaded, seed);
    serde_json::to_string_pretty(&to_json(&result)).expect("the report serializes")
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let loaded = shipped_short(CPU_STARVATION, 0.3, &[]);
    let a = json(&loaded, None);
    let b = json(&loaded, None);
    assert!(a == b, "two runs with the same seed differ");
    assert!(a.contains("\"gc cr blocks received\""));

    let seed = loaded.variants[0].scenario.seed;
    assert_eq!(
        json(&loaded, Some(seed)),
        a,
        "--seed equal to the file's changes nothing"
    );

    let c = json(&loaded, Some(seed + 1));
    assert_ne!(a, c, "another seed gives the same report");
    assert_eq!(c, json(&loaded, Some(seed + 1)));
}

#[test]
fn same_seed_same_text_report() {
    let loaded = shipped_short(CPU_STARVATION, 0.2, &[]);
    let text = |names_9i| {
        let (result, _) = run_scenario(&loaded, &SimOptions::default());
        render(
            &result,
            &TextOptions {
                names_9i,
                ..TextOptions::default()
            },
        )
    };
    assert_eq!(text(false), text(false));
    assert_eq!(text(true), text(true));
}

#[test]
fn a_set_seed_is_a_seed_too() {
    // `--set scenario.seed=N` and `--seed N` give the same run.
    let by_set = shipped_short(CPU_STARVATION, 0.2, &["scenario.seed=1234"]);
    let plain = shipped_short(CPU_STARVATION, 0.2, &[]);
    assert_eq!(json(&by_set, None), json(&plain, Some(1234)));
}

#[test]
fn every_shipped_scenario_is_deterministic() {
    for s in fusionlab::shipped::all() {
        let loaded = shipped_short(s.name, 0.15, &[]);
        assert_eq!(json(&loaded, None), json(&loaded, None), "{}", s.name);
    }
}
