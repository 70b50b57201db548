//! Helpers shared by the workspace-level tests in `tests/tests/`: shipped
//! scenarios shortened so a test runs in a fraction of a second.
//!
//! The command-line tests (which need the built binary) live with the binary,
//! in `crates/fusionlab/tests/`.

use fusion_scenario::LoadedScenario;

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

/// `--set` overrides that make every phase of `text` last `secs` seconds
/// (phase names are read from the file, so the tests follow its edits).
pub fn short_overrides(text: &str, label: &str, secs: f64) -> Vec<String> {
    let loaded = match fusion_scenario::load_str(text, label, &[]) {
        Ok(l) => l,
        Err(e) => panic!("{label} does not load:\n{e}"),
    };
    let mut names: Vec<String> = Vec::new();
    for v in &loaded.variants {
        for p in &v.scenario.phases {
            if !names.contains(&p.name) {
                names.push(p.name.clone());
            }
        }
    }
    names
        .iter()
        .map(|n| format!("phase.{n:?}.duration_s={secs}"))
        .collect()
}

/// Load scenario text with every phase `secs` long, plus `extra` overrides.
pub fn load_short(text: &str, label: &str, secs: f64, extra: &[&str]) -> LoadedScenario {
    let mut overrides = short_overrides(text, label, secs);
    overrides.extend(extra.iter().map(|s| s.to_string()));
    match fusion_scenario::load_str(text, label, &overrides) {
        Ok(l) => l,
        Err(e) => panic!("{label} with {overrides:?} does not load:\n{e}"),
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
