//! `run`, `validate` and `list`. Each writes its output to `out`, its
//! messages to `err`, and returns the exit status; a [`Failure`] it returns
//! carries its own.

use std::io::Write;

use anyhow::{Context, Result};
use fusion_report::TextOptions;
use fusion_scenario::{LoadedScenario, ScenarioError};
use fusion_sim::{SimOptions, SimOutcome};

use crate::figures::grouped;
use crate::memory::{MemoryLimit, size_text, within_limit};
use crate::shipped::{self, Source};
use crate::{Failure, exit};

/// What `fusionlab run` was asked.
#[derive(Clone, Debug, Default)]
pub struct RunArgs {
    /// `FILE|NAME`.
    pub scenario: String,
    pub json: bool,
    pub seed: Option<u64>,
    /// `--set KEY=VALUE`, in order.
    pub sets: Vec<String>,
    pub names_9i: bool,
    /// `--phase NAME`: only these phases in the text report.
    pub phases: Vec<String>,
    pub check: bool,
    /// `--max-memory`: refuse a run estimated to need more (default: half the machine).
    pub max_memory: Option<u64>,
}

/// Simulate a scenario and print its report (text or JSON).
pub fn run(a: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let loaded = shipped::load(&a.scenario, &a.sets)?;
    check_phases(&loaded, &a.phases)?;
    within_limit(&loaded, a.check, &MemoryLimit::new(a.max_memory))?;
    let opts = SimOptions {
        seed: a.seed,
        check: a.check,
    };
    let (result, outcomes) = fusion_sim::run_scenario(&loaded, &opts);
    if a.json {
        let json = serde_json::to_string_pretty(&fusion_report::to_json(&result))
            .context("cannot serialize the report")?;
        writeln!(out, "{json}")?;
    } else {
        let text = TextOptions {
            names_9i: a.names_9i,
            phases: (!a.phases.is_empty()).then(|| a.phases.clone()),
        };
        out.write_all(fusion_report::render(&result, &text).as_bytes())?;
        writeln!(out)?;
        out.write_all(simulation_summary(&outcomes).as_bytes())?;
    }
    if a.check && a.json {
        // stdout holds only the JSON.
        err.write_all(simulation_summary(&outcomes).as_bytes())?;
    }
    let problems = report_errors(&outcomes, err)?;
    Ok(if problems > 0 {
        exit::SIM_ERRORS
    } else {
        exit::OK
    })
}

/// `--phase` names must exist in the run.
fn check_phases(loaded: &LoadedScenario, wanted: &[String]) -> Result<(), Failure> {
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

/// One line per variant: what was simulated, and what the checkers checked.
pub fn simulation_summary(outcomes: &[SimOutcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        s.push_str(&format!(
            "simulated {}: {:.1} s of cluster time, {} events, {} block transfers\n",
            o.result.name,
            o.simulated_ns as f64 / 1e9,
            grouped(o.events as f64, 0),
            grouped(o.transfers as f64, 0),
        ));
        if let Some(c) = &o.check {
            let verdict = match c.violations.len() {
                0 => "no violation".to_string(),
                1 => "1 VIOLATION".to_string(),
                n => format!("{n} VIOLATIONS"),
            };
            s.push_str(&format!(
                "checked {}: {} events (coherence), {} consistent reads, {} rows, {} index entries, {} commits: {verdict}\n",
                o.result.name,
                grouped(c.events_checked as f64, 0),
                grouped(c.reads_checked as f64, 0),
                grouped(c.rows_checked as f64, 0),
                grouped(c.index_entries_checked as f64, 0),
                grouped(c.commits as f64, 0),
            ));
        }
    }
    s
}

/// Print every protocol error and checker violation to `err`; how many there were.
pub fn report_errors(outcomes: &[SimOutcome], err: &mut dyn Write) -> Result<usize> {
    let mut n = 0;
    for o in outcomes {
        let violations: &[String] = o.check.as_ref().map_or(&[], |c| &c.violations);
        for e in &o.errors {
            let what = if violations.contains(e) {
                "check violation"
            } else {
                "protocol error"
            };
            writeln!(err, "fusionlab: {}: {what}: {e}", o.result.name)?;
            n += 1;
        }
    }
    Ok(n)
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
            let n = e.problems().len();
            let name = match source {
                Source::File(p) => p.display().to_string(),
                Source::Shipped(s) => s.label(),
            };
            writeln!(err, "{name}: {n} problem{}", if n == 1 { "" } else { "s" })?;
            Ok(exit::INVALID)
        }
    }
}

/// `NAME (V variants, P phases, E expectations)`.
fn summary(s: &LoadedScenario) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
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
