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

/// One run on several threads (the simulator's parallel windows) gives the
/// serial run's report byte for byte, and processes the same events.
fn same_on_threads(loaded: &fusion_scenario::LoadedScenario, threads: usize) {
    let run = |threads| {
        let (result, outcomes) = run_scenario(
            loaded,
            &SimOptions {
                threads,
                ..SimOptions::default()
            },
        );
        let json = serde_json::to_string_pretty(&to_json(&result)).expect("the report serializes");
        let text = render(&result, &TextOptions::default());
        let ran: Vec<String> = outcomes.iter().map(|o| format!("{:?}", o.ran)).collect();
        let errors: Vec<Vec<String>> = outcomes.iter().map(|o| o.errors.clone()).collect();
        (json, text, ran, errors)
    };
    let serial = run(1);
    let parallel = run(threads);
    assert!(
        serial.0 == parallel.0,
        "{}: the JSON report differs on {threads} threads",
        loaded.name
    );
    assert!(
        serial.1 == parallel.1,
        "{}: the text report differs on {threads} threads",
        loaded.name
    );
    assert_eq!(serial.2, parallel.2, "{}: events processed", loaded.name);
    assert_eq!(serial.3, parallel.3, "{}: errors", loaded.name);
}

#[test]
fn every_shipped_scenario_gives_the_same_bytes_on_several_threads() {
    for s in fusionlab::shipped::all() {
        same_on_threads(&shipped_short(s.name, 0.15, &[]), 2);
    }
}

#[test]
fn failures_give_the_same_bytes_on_several_threads() {
    // Full length: the kills, freezes, partitions and losses land, members
    // are evicted and fenced, survivors recover them.
    for name in [
        "instance-crash-recovery",
        "split-brain",
        "frozen-node",
        "interconnect-loss",
    ] {
        same_on_threads(&fusionlab_tests::shipped_with(name, &[]), 3);
    }
}
