//! The shipped scenarios, embedded at build time from `scenarios/*.toml`
//! (see `build.rs`), and how a command-line argument names a scenario.

use std::path::Path;

use fusion_scenario::{LoadedScenario, ScenarioError};

use crate::Failure;

/// One embedded scenario file.
#[derive(Clone, Copy, Debug)]
pub struct Shipped {
    /// The file stem: the name users type (`fusionlab run myth-cpu-starvation`).
    pub name: &'static str,
    /// The file name (`myth-cpu-starvation.toml`).
    pub file: &'static str,
    /// The file's text as it was when the binary was built.
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/shipped.rs"));

impl Shipped {
    /// How messages name it: its path in the source tree.
    pub fn label(&self) -> String {
        format!("scenarios/{}", self.file)
    }

    pub fn load(&self, overrides: &[String]) -> Result<LoadedScenario, ScenarioError> {
        fusion_scenario::load_str(self.text, &self.label(), overrides)
    }
}

/// Every shipped scenario, sorted by file name.
pub fn all() -> &'static [Shipped] {
    SHIPPED
}

/// The shipped scenario with this name (file stem).
pub fn find(name: &str) -> Option<&'static Shipped> {
    SHIPPED.iter().find(|s| s.name == name)
}

/// The names of the shipped scenarios, for messages.
pub fn names() -> String {
    if SHIPPED.is_empty() {
        return "none".to_string();
    }
    SHIPPED
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a scenario comes from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    File(&'a Path),
    Shipped(&'static Shipped),
}

/// `FILE|NAME`: a path if such a file exists, else a shipped scenario's name.
pub fn resolve(arg: &str) -> Result<Source<'_>, Failure> {
    let path = Path::new(arg);
    if path.exists() {
        return Ok(Source::File(path));
    }
    if let Some(s) = find(arg) {
        return Ok(Source::Shipped(s));
    }
    Err(Failure::input(format!(
        "{arg}: no such file, and no shipped scenario has that name (shipped: {})",
        names()
    )))
}

impl Source<'_> {
    /// The scenario's text and how messages name it (the live runtime sends
    /// the text to every instance, which loads it with the same overrides).
    pub fn text(&self) -> Result<(String, String), Failure> {
        match self {
            Source::File(p) => std::fs::read_to_string(p)
                .map(|t| (t, p.display().to_string()))
                .map_err(|e| Failure::input(format!("{}: {e}", p.display()))),
            Source::Shipped(s) => Ok((s.text.to_string(), s.label())),
        }
    }

    pub fn load(&self, overrides: &[String]) -> Result<LoadedScenario, ScenarioError> {
        match self {
            Source::File(p) => fusion_scenario::load_file(p, overrides),
            Source::Shipped(s) => s.load(overrides),
        }
    }
}

/// Load `FILE|NAME`; any problem is bad input.
pub fn load(arg: &str, overrides: &[String]) -> Result<LoadedScenario, Failure> {
    resolve(arg)?
        .load(overrides)
        .map_err(|e| Failure::input(e.to_string()))
}
