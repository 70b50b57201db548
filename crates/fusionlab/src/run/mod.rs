//! `run`, `validate` and `list`. Each writes its output to `out`, its
//! messages to `err`, and returns the exit status; a [`Failure`] it returns
//! carries its own.

pub mod args;
pub mod report;
pub mod trace;

use std::io::Write;

use anyhow::Result;
use fusion_driver::Driver;
use fusion_scenario::{LoadedScenario, ScenarioError};
use fusion_sim::SimOptions;

use crate::memory::{MemoryLimit, size_text, within_limit};
use crate::run::args::RunArgs;
use crate::shipped::{self, Source};
use crate::{Failure, exit};

/// Simulate a scenario and print its report (text or JSON).
pub fn run(a: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let loaded = shipped::load(&a.scenario, &a.sets)?;
    check_phases(&loaded, &a.phases)?;
    fusion_driver::refusal(&loaded, Driver::Simulator).map_err(Failure::input)?;
    within_limit(&loaded, a.check, &MemoryLimit::new(a.max_memory))?;
    let scenario = crate::runs::scenario_text(a)?;
    let html = crate::run::report::HtmlFile::create(a.html.as_deref())?;
    let trace = crate::run::trace::TraceFile::create(a.trace.as_deref(), a.trace_window)?;
    let opts = SimOptions {
        seed: a.seed,
        check: a.check,
        interval_ns: a.interval_ns(),
        threads: a
            .threads
            .unwrap_or_else(|| fusion_sim::default_threads(&loaded)),
    };
    let (result, outcomes) = match trace {
        Some(t) => {
            let (result, outcomes, writer) =
                fusion_sim::run_scenario_traced(&loaded, &opts, t.writer);
            crate::run::trace::finish(&t.path, writer, err)?;
            (result, outcomes)
        }
        None => fusion_sim::run_scenario(&loaded, &opts),
    };
    let code = crate::run::report::print_run(&result, &outcomes, a, out, err)?;
    crate::runs::record(a, scenario, "simulator", (&result, &outcomes), code, err)?;
    if let Some(h) = html {
        h.write_run(&result, &loaded, a.names_9i)?;
    }
    Ok(code)
}

/// `--phase` names must exist in the run.
pub(crate) fn check_phases(loaded: &LoadedScenario, wanted: &[String]) -> Result<(), Failure> {
    let mut known: Vec<&str> = Vec::new();
    for v in &loaded.variants {
        for p in &v.scenario.phases {
            if !known.contains(&p.name.as_str()) {
                known.push(&p.name);
            }
        }
    }
    for w in wanted {
        if !known.contains(&w.as_str()) {
            return Err(Failure::input(format!(
                "--phase {w}: {} has no phase `{w}` (phases: {})",
                loaded.path,
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// Load a scenario and say whether it is valid, and whether its run fits
/// `limit` (a run above it is bad input, as `run` would refuse it).
pub fn validate(
    scenario: &str,
    sets: &[String],
    limit: &MemoryLimit,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let source = shipped::resolve(scenario)?;
    match source.load(sets) {
        Ok(s) => {
            let e = within_limit(&s, false, limit)?;
            writeln!(
                out,
                "ok: {}; a run needs about {} of memory",
                summary(&s),
                size_text(e.bytes)
            )?;
            Ok(exit::OK)
        }
        Err(e @ ScenarioError::Io { .. }) => Err(Failure::input(e.to_string()).into()),
        Err(e) => {
            writeln!(err, "{e}")?;
            let problems = e.problems().len();
            let name = match source {
                Source::File(p) => p.display().to_string(),
                Source::Shipped(s) => s.label(),
            };
            writeln!(
                err,
                "{name}: {problems} problem{}",
                if problems == 1 { "" } else { "s" }
            )?;
            Ok(exit::INVALID)
        }
    }
}

/// `NAME (V variants, P phases, E expectations)`.
fn summary(s: &LoadedScenario) -> String {
    let plural =
        |count: usize, what: &str| format!("{count} {what}{}", if count == 1 { "" } else { "s" });
    let phases = s.variants.first().map_or(0, |v| v.scenario.phases.len());
    format!(
        "{} ({}, {}, {})",
        s.name,
        plural(s.variants.len(), "variant"),
        plural(phases, "phase"),
        plural(s.expectations.len(), "expectation"),
    )
}

/// One line per shipped scenario, `name  title`, by tour order then name.
pub fn list(out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let mut rows: Vec<(Option<u32>, &str, String)> = Vec::new();
    let mut broken = 0;
    for s in shipped::all() {
        match s.load(&[]) {
            Ok(l) => rows.push((l.tour.as_ref().map(|t| t.order), s.name, l.title)),
            Err(e) => {
                writeln!(err, "{e}")?;
                broken += 1;
                rows.push((
                    None,
                    s.name,
                    format!("(does not load: see `fusionlab validate {}`)", s.name),
                ));
            }
        }
    }
    rows.sort_by(|a, b| (a.0.is_none(), a.0, a.1).cmp(&(b.0.is_none(), b.0, b.1)));
    let width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    for (_, name, title) in &rows {
        writeln!(out, "{name:<width$}  {title}")?;
    }
    Ok(if broken > 0 { exit::INVALID } else { exit::OK })
}
