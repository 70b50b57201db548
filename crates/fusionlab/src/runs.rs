//! The run store on the command line: `run` records every run (unless
//! `--no-store`); `runs` lists them, `show ID` prints one again, `compare
//! ID1 ID2` puts two side by side (AWR Compare Periods). The store itself is
//! `fusion_history`; the comparison is `fusion_report::compare`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use fusion_driver::VariantOutcome;
use fusion_history::{Access, DATA_DIR_ENV, HistoryError, NewRun, RunRow, RunStore};
use fusion_report::RunResult;
use fusion_report::compare::{CompareOptions, RunLabel};

use crate::run::args::{Recording, RunArgs};
use crate::{Failure, exit};

/// Where `run` records, as the command line asked.
#[derive(Args, Clone, Debug, Default)]
pub struct StoreArgs {
    /// Do not record this run in the run store.
    #[arg(long)]
    pub no_store: bool,
    #[command(flatten)]
    pub dir: StoreDir,
}

/// `--store-dir`, shared by `run`, `runs`, `show` and `compare`.
#[derive(Args, Clone, Debug, Default)]
pub struct StoreDir {
    /// The run store's directory (default: $XDG_DATA_HOME/fusionlab, else
    /// ~/.local/share/fusionlab).
    #[arg(long, value_name = "DIR", env = DATA_DIR_ENV)]
    pub store_dir: Option<PathBuf>,
}

impl StoreDir {
    /// The directory, or why there is none.
    pub fn resolve(&self) -> Result<PathBuf, String> {
        match &self.store_dir {
            Some(d) => Ok(d.clone()),
            None => fusion_history::data_dir(|v| std::env::var_os(v)),
        }
    }

    fn open_for_reading(&self) -> Result<RunStore> {
        let dir = self.resolve().map_err(Failure::input)?;
        RunStore::open(&dir, Access::Read).map_err(input)
    }
}

fn input(e: HistoryError) -> anyhow::Error {
    Failure::input(e.to_string()).into()
}

impl StoreArgs {
    pub fn recording(&self) -> Recording {
        if self.no_store {
            return Recording::Off;
        }
        match self.dir.resolve() {
            Ok(d) => Recording::Into(d),
            Err(e) => Recording::Unavailable(e),
        }
    }
}

/// The scenario as it will be run, read before the run (a file edited
/// during a long run is stored as it was run): its text and label.
pub fn scenario_text(a: &RunArgs) -> Result<Option<(String, String)>> {
    if matches!(a.recording, Recording::Off) {
        return Ok(None);
    }
    Ok(Some(crate::shipped::resolve(&a.scenario)?.text()?))
}

/// What a run stores: its verdict word.
fn verdict(result: &RunResult) -> &'static str {
    if result.verdicts.is_empty() {
        "no expectations"
    } else if result.reproduced() {
        "REPRODUCED"
    } else {
        "NOT REPRODUCED"
    }
}

/// Record a run that printed its report with exit status `code`. A store
/// that cannot be written is reported on `err` and the run's status stands.
pub fn record(
    a: &RunArgs,
    scenario: Option<(String, String)>,
    driver: &str,
    run: (&RunResult, &[VariantOutcome]),
    code: u8,
    err: &mut dyn Write,
) -> Result<()> {
    let (result, outcomes) = run;
    let dir = match &a.recording {
        Recording::Off => return Ok(()),
        Recording::Unavailable(why) => {
            writeln!(err, "fusionlab: the run was not stored: {why}")?;
            return Ok(());
        }
        Recording::Into(d) => d,
    };
    let Some((scenario_text, source)) = scenario else {
        return Ok(());
    };
    let report_json = serde_json::to_string_pretty(&fusion_report::to_json(result))
        .context("cannot serialize the report")?;
    let new = NewRun {
        scenario: result.scenario.clone(),
        source,
        scenario_text,
        sets: a.sets.clone(),
        seed: result.seed,
        version: crate::run::report::program(),
        driver: driver.to_string(),
        verdict: verdict(result).to_string(),
        exit_status: code,
        report_json,
        report_text: crate::run::report::text_report(result, outcomes, a),
    };
    match RunStore::open(dir, Access::Write).and_then(|s| s.record(&new)) {
        // Said only to a person: scripts and `.ci/figures` read stderr too.
        Ok(id) if std::io::stderr().is_terminal() => {
            writeln!(err, "fusionlab: stored as run {id} (fusionlab show {id})")?;
        }
        Ok(_) => {}
        Err(e) => writeln!(err, "fusionlab: the run was not stored: {e}")?,
    }
    Ok(())
}

#[derive(Args)]
pub struct RunsCmd {
    /// Only the last N runs (0: all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub last: usize,
    /// Print a JSON array instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreDir,
}

#[derive(Args)]
pub struct ShowCmd {
    /// The run's id (see `fusionlab runs`).
    pub id: i64,
    /// Print the stored `run --json` report instead of the text.
    #[arg(long, conflicts_with = "scenario")]
    pub json: bool,
    /// Print the scenario file as it was run (its --set overrides follow as comments).
    #[arg(long)]
    pub scenario: bool,
    /// Also write the report as an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreDir,
}

#[derive(Args)]
pub struct CompareCmd {
    /// The 1st run's id.
    pub first: i64,
    /// The 2nd run's id.
    pub second: i64,
    /// Only this phase (repeatable).
    #[arg(long = "phase", value_name = "NAME")]
    pub phases: Vec<String>,
    /// Every statistic that differs, not only the 20 largest differences.
    #[arg(long)]
    pub all: bool,
    /// Also write the comparison as an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreDir,
}

/// Widest line of `runs` before the overrides move under the row.
const LINE_MAX: usize = 100;

/// `fusionlab runs`.
pub fn runs(c: &RunsCmd, out: &mut dyn Write) -> Result<u8> {
    let store = c.store.open_for_reading()?;
    let rows = store.list((c.last > 0).then_some(c.last)).map_err(input)?;
    if c.json {
        let list: Vec<serde_json::Value> = rows.iter().map(row_json).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        writeln!(out, "no runs stored in {}", store.path().display())?;
        return Ok(exit::OK);
    }
    let width = |f: fn(&RunRow) -> String, title: &str| {
        rows.iter()
            .map(|r| f(r).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (wi, ws, wd, wv) = (
        width(|r| r.id.to_string(), "ID"),
        width(|r| r.scenario.clone(), "Scenario"),
        width(|r| r.seed.to_string(), "Seed"),
        width(verdict_cell, "Verdict"),
    );
    let line = |id: &str, time: &str, scenario: &str, seed: &str, verdict: &str, sets: &str| {
        format!("{id:>wi$}  {time:<19}  {scenario:<ws$}  {seed:>wd$}  {verdict:<wv$}  {sets}")
            .trim_end()
            .to_string()
    };
    writeln!(
        out,
        "{}",
        line("ID", "Time (UTC)", "Scenario", "Seed", "Verdict", "--set")
    )?;
    for r in &rows {
        let sets = r.sets.join(" ");
        let full = line(
            &r.id.to_string(),
            &r.time,
            &r.scenario,
            &r.seed.to_string(),
            &verdict_cell(r),
            &sets,
        );
        if full.chars().count() <= LINE_MAX || sets.is_empty() {
            writeln!(out, "{full}")?;
        } else {
            // As AWR wraps: the long part on its own lines, under the row.
            let head = line(
                &r.id.to_string(),
                &r.time,
                &r.scenario,
                &r.seed.to_string(),
                &verdict_cell(r),
                "",
            );
            writeln!(out, "{head}")?;
            for s in &r.sets {
                writeln!(out, "{:wi$}  --set {s}", "")?;
            }
        }
    }
    let shown = rows.len();
    let first = rows.first().map_or(0, |r| r.id);
    if c.last > 0 && shown == c.last && first > 1 {
        writeln!(out, "(the last {shown} runs; --last 0 lists every run)")?;
    }
    Ok(exit::OK)
}

/// `REPRODUCED`, with `live` and a non-zero exit status when there is one.
fn verdict_cell(r: &RunRow) -> String {
    let mut s = r.verdict.clone();
    if r.driver != "simulator" {
        s.push_str(&format!(" ({})", r.driver));
    }
    if r.exit_status != exit::OK {
        s.push_str(&format!(" [exit {}]", r.exit_status));
    }
    s
}

fn row_json(r: &RunRow) -> serde_json::Value {
    serde_json::json!({
        "id": r.id, "time": r.time, "scenario": r.scenario, "seed": r.seed, "sets": r.sets,
        "driver": r.driver, "verdict": r.verdict, "exit_status": r.exit_status,
    })
}

/// `fusionlab show ID`.
pub fn show(c: &ShowCmd, out: &mut dyn Write) -> Result<u8> {
    let store = c.store.open_for_reading()?;
    let run = store.get(c.id).map_err(input)?;
    if c.json {
        writeln!(out, "{}", run.report_json.trim_end())?;
    } else if c.scenario {
        out.write_all(run.scenario_text.as_bytes())?;
        if !run.scenario_text.ends_with('\n') {
            writeln!(out)?;
        }
        for s in &run.row.sets {
            writeln!(out, "# --set {s}")?;
        }
    } else {
        out.write_all(run.report_text.as_bytes())?;
    }
    if let Some(path) = &c.html {
        let title = format!(
            "Run {}: {} (seed {}, {} UTC)",
            run.row.id, run.row.scenario, run.row.seed, run.row.time
        );
        write_file(
            path,
            &fusion_report::compare_html::text_page(&title, &run.report_text),
        )?;
    }
    Ok(exit::OK)
}

/// `fusionlab compare ID1 ID2`.
pub fn compare(c: &CompareCmd, out: &mut dyn Write) -> Result<u8> {
    let store = c.store.open_for_reading()?;
    let load = |id: i64| -> Result<(RunLabel, serde_json::Value)> {
        let run = store.get(id).map_err(input)?;
        let json: serde_json::Value = serde_json::from_str(&run.report_json).map_err(|e| {
            Failure::input(format!(
                "{}: run {id}: the stored report is not JSON: {e}",
                store.path().display()
            ))
        })?;
        let r = run.row;
        Ok((
            RunLabel {
                id: r.id,
                time: r.time,
                scenario: r.scenario,
                seed: r.seed,
                sets: r.sets,
                driver: r.driver,
                verdict: r.verdict,
            },
            json,
        ))
    };
    let (first, second) = (load(c.first)?, load(c.second)?);
    let opts = CompareOptions {
        phases: c.phases.clone(),
        all_statistics: c.all,
    };
    let cmp = fusion_report::compare::compare((&first.0, &first.1), (&second.0, &second.1), &opts)
        .map_err(Failure::input)?;
    out.write_all(fusion_report::compare::render_text(&cmp).as_bytes())?;
    if let Some(path) = &c.html {
        write_file(path, &fusion_report::compare_html::render_html(&cmp))?;
    }
    Ok(exit::OK)
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|e| Failure::input(format!("{}: cannot write: {e}", path.display())).into())
}
