//! Helpers shared by the workspace-level tests in `tests/tests/`: shipped
//! scenarios shortened so a test runs in a fraction of a second, and a
//! simulated run that must be free of protocol errors. The scenario pieces
//! and shortening come from `fusion-testkit`, which the simulator's own
//! tests share.
//!
//! The command-line tests (which need the built binary) live with the binary,
//! in `crates/fusionlab/tests/`.

use fusion_report::RunResult;
use fusion_scenario::LoadedScenario;
use fusion_sim::{SimOptions, VariantOutcome, run_scenario};
pub use fusion_testkit::{load_short, short_overrides};

/// The shipped scenario the tests lean on (CPU starvation, LMS priority).
pub const CPU_STARVATION: &str = "myth-cpu-starvation";

/// The text of a shipped scenario.
pub fn shipped_text(name: &str) -> &'static str {
    match fusionlab::shipped::find(name) {
        Some(s) => s.text,
        None => panic!(
            "no shipped scenario `{name}` (shipped: {})",
            fusionlab::shipped::names()
        ),
    }
}

/// A shipped scenario with every phase `secs` long.
pub fn shipped_short(name: &str, secs: f64, extra: &[&str]) -> LoadedScenario {
    load_short(
        shipped_text(name),
        &format!("scenarios/{name}.toml"),
        secs,
        extra,
    )
}

/// A shipped scenario with these overrides (and no others).
pub fn shipped_with(name: &str, overrides: &[&str]) -> LoadedScenario {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    fusion_scenario::load_str(
        shipped_text(name),
        &format!("scenarios/{name}.toml"),
        &overrides,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Simulate every variant (with `seed` instead of the scenario's, if
/// given); no variant may report a protocol error.
pub fn run_clean(loaded: &LoadedScenario, seed: Option<u64>) -> (RunResult, Vec<VariantOutcome>) {
    let (result, outcomes) = run_scenario(
        loaded,
        &SimOptions {
            seed,
            check: false,
            ..SimOptions::default()
        },
    );
    for o in &outcomes {
        assert!(
            o.errors.is_empty(),
            "{} {}: protocol errors {:?}",
            loaded.name,
            o.result.name,
            o.errors
        );
    }
    (result, outcomes)
}
