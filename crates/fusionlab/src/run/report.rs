//! What a run prints, on the simulator and live alike (`run`, `run --live`,
//! and the tour's blocks): the report (text or JSON), what each variant ran,
//! and its problems, with the exit status they map to.

use std::io::Write;

use anyhow::{Context, Result};
use fusion_driver::{Ran, VariantOutcome};
use fusion_report::{RunResult, TextOptions};

use crate::exit;
use crate::run::args::RunArgs;
use fusion_report::grouped;

/// The file `--html FILE` names, created before the run so that a path
/// that cannot be written is refused at once (bad input), not after it.
pub struct HtmlFile {
    path: std::path::PathBuf,
    file: std::fs::File,
}

impl HtmlFile {
    /// Create (truncate) the file `--html` names, if any.
    pub fn create(path: Option<&std::path::Path>) -> Result<Option<HtmlFile>, crate::Failure> {
        let Some(path) = path else {
            return Ok(None);
        };
        let file = std::fs::File::create(path).map_err(|e| {
            crate::Failure::input(format!(
                "--html {}: cannot write the HTML report there: {e}",
                path.display()
            ))
        })?;
        Ok(Some(HtmlFile {
            path: path.to_path_buf(),
            file,
        }))
    }

    /// Write the page.
    pub fn write(mut self, html: &str) -> Result<()> {
        self.file
            .write_all(html.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("cannot write the HTML report to {}", self.path.display()))
    }

    /// Write the page of a run.
    pub fn write_run(
        self,
        result: &RunResult,
        loaded: &fusion_scenario::LoadedScenario,
        names_9i: bool,
    ) -> Result<()> {
        let opts = fusion_report::html::HtmlOptions {
            names_9i,
            program: Some(program()),
        };
        self.write(&fusion_report::html::run_page(result, loaded, &opts))
    }
}

/// This program and its version, as the rerun lines print it. (The build
/// does not know its git commit, so only the version.)
pub fn program() -> String {
    format!("fusionlab {}", env!("CARGO_PKG_VERSION"))
}

/// Print a run's report to `out` (JSON, or text followed by what ran), its
/// problems to `err`; the exit status.
pub fn print_run(
    result: &RunResult,
    outcomes: &[VariantOutcome],
    a: &RunArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    if a.json {
        let json = serde_json::to_string_pretty(&fusion_report::to_json(result))
            .context("cannot serialize the report")?;
        writeln!(out, "{json}")?;
        // stdout holds only the JSON: what the checkers checked goes to stderr.
        if a.check {
            err.write_all(run_summary(outcomes).as_bytes())?;
        }
    } else {
        out.write_all(text_report(result, outcomes, a).as_bytes())?;
    }
    let problems = problem_lines(outcomes);
    for p in &problems {
        writeln!(err, "{p}")?;
    }
    Ok(if problems.is_empty() {
        exit::OK
    } else {
        exit::SIM_ERRORS
    })
}

/// The text report as `run` prints it: the report, a blank line, what ran.
pub fn text_report(result: &RunResult, outcomes: &[VariantOutcome], a: &RunArgs) -> String {
    let text = TextOptions {
        names_9i: a.names_9i,
        phases: (!a.phases.is_empty()).then(|| a.phases.clone()),
        program: Some(program()),
    };
    let mut s = fusion_report::render(result, &text);
    s.push('\n');
    s.push_str(&run_summary(outcomes));
    s
}

/// One line per variant: what ran (simulated time and events, or live), and
/// what the checkers checked.
pub fn run_summary(outcomes: &[VariantOutcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        let name = &o.result.name;
        let transfers = grouped(o.transfers as f64, 0);
        s.push_str(&match o.ran {
            Ran::Simulated {
                events,
                simulated_ns,
            } => format!(
                "simulated {name}: {:.1} s of cluster time, {} events, {transfers} block transfers\n",
                simulated_ns as f64 / 1e9,
                grouped(events as f64, 0),
            ),
            Ran::Live => format!("ran live {name}: {transfers} block transfers\n"),
        });
        if let Some(c) = &o.check {
            let verdict = match c.violations.len() {
                0 => "no violation".to_string(),
                1 => "1 VIOLATION".to_string(),
                count => format!("{count} VIOLATIONS"),
            };
            // Coherence is checked after every event where the driver sees
            // every instance at once (the simulator), not live.
            let coherence = if c.events_checked > 0 {
                format!(
                    "{} events (coherence), ",
                    grouped(c.events_checked as f64, 0)
                )
            } else {
                String::new()
            };
            s.push_str(&format!(
                "checked {name}: {coherence}{} consistent reads, {} rows, {} index entries, {} commits: {verdict}\n",
                grouped(c.reads_checked as f64, 0),
                grouped(c.rows_checked as f64, 0),
                grouped(c.index_entries_checked as f64, 0),
                grouped(c.commits as f64, 0),
            ));
            // Only a run where instances died (or a commit was lost) says more.
            if c.commits_in_doubt + c.transactions_rolled_back + c.commits_lost > 0 {
                s.push_str(&format!(
                    "checked {name} across failures: {} commits acknowledged, {} lost, {} in doubt \
                     (not acknowledged when their instance died), {} open transactions of dead \
                     instances rolled back\n",
                    grouped(c.commits_acknowledged as f64, 0),
                    grouped(c.commits_lost as f64, 0),
                    grouped(c.commits_in_doubt as f64, 0),
                    grouped(c.transactions_rolled_back as f64, 0),
                ));
            }
        }
    }
    s
}

/// Every problem of the run (protocol errors, a cluster that did not come
/// to rest, checker violations), as `fusionlab: VARIANT: what: detail`.
pub fn problem_lines(outcomes: &[VariantOutcome]) -> Vec<String> {
    let mut lines = Vec::new();
    for o in outcomes {
        for e in &o.errors {
            let what = if o.is_violation(e) {
                "check violation"
            } else {
                "protocol error"
            };
            lines.push(format!("fusionlab: {}: {what}: {e}", o.result.name));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_check::CheckReport;
    use fusion_report::VariantResult;

    fn outcome(ran: Ran) -> VariantOutcome {
        VariantOutcome::new(
            VariantResult {
                name: "v".into(),
                phases: Vec::new(),
                series: None,
            },
            ran,
        )
    }

    #[test]
    fn both_drivers_summarize_and_report_problems_alike() {
        let mut sim = outcome(Ran::Simulated {
            events: 1_234_567,
            simulated_ns: 2_500_000_000,
        });
        sim.errors.push("inst1: bad message".into());
        let mut live = outcome(Ran::Live);
        live.set_check(CheckReport {
            reads_checked: 10,
            violations: vec!["lost write: table 0 key 5".into()],
            ..CheckReport::default()
        });
        let summary = run_summary(&[sim.clone(), live.clone()]);
        assert_eq!(
            summary,
            "simulated v: 2.5 s of cluster time, 1,234,567 events, 0 block transfers\n\
             ran live v: 0 block transfers\n\
             checked v: 10 consistent reads, 0 rows, 0 index entries, 0 commits: 1 VIOLATION\n"
        );
        assert_eq!(
            problem_lines(&[sim, live]),
            vec![
                "fusionlab: v: protocol error: inst1: bad message".to_string(),
                "fusionlab: v: check violation: lost write: table 0 key 5".to_string(),
            ]
        );
    }
}
