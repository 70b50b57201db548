//! The sequence myth's companion, `myth-sequence-right-hand-index`: it is
//! not in the tour, so its verdict is checked here, and its variants pass
//! the checkers (index check included) on a short load.

use fusion_sim::{SimOptions, run_scenario};
use fusionlab_tests::{run_clean, shipped_with};

const NAME: &str = "myth-sequence-right-hand-index";

fn load(overrides: &[&str]) -> fusion_scenario::LoadedScenario {
    shipped_with(NAME, overrides)
}

#[test]
fn the_companion_is_shipped_but_not_in_the_tour() {
    let loaded = load(&[]);
    assert!(loaded.tour.is_none(), "the tour is for the deck's myths");
    assert!(!loaded.expectations.is_empty());
}

#[test]
fn the_companion_reproduces_its_figures() {
    let (result, _) = run_clean(&load(&[]), None);
    let failed: Vec<String> = result
        .verdicts
        .iter()
        .filter(|v| !v.passed)
        .map(|v| format!("{}: {}", v.name, v.detail))
        .collect();
    assert!(result.reproduced(), "{}", failed.join("\n"));
}

#[test]
fn every_variant_passes_the_checkers_on_a_short_load() {
    let loaded = load(&["workload.load.iterations=1", "phase.load.duration_s=10"]);
    let (_, outcomes) = run_scenario(&loaded, &SimOptions::checked());
    for o in &outcomes {
        let check = o.check.as_ref().expect("checked");
        assert!(
            o.errors.is_empty() && check.violations.is_empty(),
            "{}: {:?}",
            o.result.name,
            o.errors
        );
        // The 100,000 initial rows and every committed insert.
        assert!(
            check.index_entries_checked > 100_000,
            "{}: {} index entries",
            o.result.name,
            check.index_entries_checked
        );
    }
}
