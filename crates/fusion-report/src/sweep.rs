//! `fusionlab sweep`: one scenario over many seeds and, optionally, several
//! values of some keys. Whether a verdict holds beyond its one seed is a
//! distribution: REPRODUCED on how many seeds, each expectation's pass rate,
//! and each expectation's figure (median and range) per combination of the
//! varied values.

use serde_json::{Value, json};

use crate::model::{Measured, Verdict};

/// Every run of a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepResult {
    pub scenario: String,
    /// The seeds, in order (every combination ran each).
    pub seeds: Vec<u64>,
    /// The varied keys, in the order given.
    pub keys: Vec<String>,
    /// Threads the runs went over.
    pub threads: usize,
    /// The command that replays one run, without `--seed` and the varied
    /// values (`fusionlab run NAME --set ...`).
    pub replay: String,
    pub runs: Vec<SweepRun>,
}

/// One run: a seed and one value per varied key.
#[derive(Clone, Debug, Default)]
pub struct SweepRun {
    pub seed: u64,
    /// One value per key of [`SweepResult::keys`].
    pub values: Vec<String>,
    pub verdicts: Vec<Verdict>,
    /// Protocol errors: the run counts as not reproduced.
    pub errors: Vec<String>,
}

impl SweepRun {
    pub fn reproduced(&self) -> bool {
        self.errors.is_empty()
            && !self.verdicts.is_empty()
            && self.verdicts.iter().all(|v| v.passed)
    }
}

/// The runs of one combination of varied values.
pub struct Cell<'a> {
    pub values: &'a [String],
    pub runs: Vec<&'a SweepRun>,
}

/// Median, low and high of some figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &mut [f64]) -> Option<Spread> {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let (&min, &max) = (values.first()?, values.last()?);
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Some(Spread { median, min, max })
    }
}

/// One expectation over a cell's runs.
pub struct ExpectationSummary {
    pub name: String,
    pub passed: usize,
    pub runs: usize,
    pub measured: Option<Spread>,
    pub target: Option<Spread>,
    /// The unit to show the spreads in (the first run's).
    unit: Option<Measured>,
}

impl SweepResult {
    /// The runs grouped by their varied values, in the order they ran.
    pub fn cells(&self) -> Vec<Cell<'_>> {
        let mut cells: Vec<Cell<'_>> = Vec::new();
        for r in &self.runs {
            match cells.iter_mut().find(|c| c.values == r.values.as_slice()) {
                Some(c) => c.runs.push(r),
                None => cells.push(Cell {
                    values: &r.values,
                    runs: vec![r],
                }),
            }
        }
        cells
    }

    fn seeds_text(&self) -> String {
        match (self.seeds.first(), self.seeds.last()) {
            (Some(a), _) if self.seeds.len() == 1 => format!("seed {a}"),
            (Some(a), Some(b)) => format!("seeds {a}..{b}"),
            _ => "no seed".to_string(),
        }
    }
}

impl Cell<'_> {
    pub fn reproduced(&self) -> usize {
        self.runs.iter().filter(|r| r.reproduced()).count()
    }

    pub fn not_reproduced(&self) -> Vec<u64> {
        self.runs
            .iter()
            .filter(|r| !r.reproduced())
            .map(|r| r.seed)
            .collect()
    }

    /// Each expectation (by verdict name, in the first run's order).
    pub fn expectations(&self) -> Vec<ExpectationSummary> {
        let mut names: Vec<&str> = Vec::new();
        for r in &self.runs {
            for v in &r.verdicts {
                if !names.contains(&v.name.as_str()) {
                    names.push(&v.name);
                }
            }
        }
        names
            .into_iter()
            .map(|name| {
                let found: Vec<&Verdict> = self
                    .runs
                    .iter()
                    .filter_map(|r| r.verdicts.iter().find(|v| v.name == name))
                    .collect();
                let mut measured: Vec<f64> = found
                    .iter()
                    .filter_map(|v| v.measured.map(|m| m.value))
                    .collect();
                let mut target: Vec<f64> = found
                    .iter()
                    .filter_map(|v| v.measured.map(|m| m.target))
                    .collect();
                ExpectationSummary {
                    name: name.to_string(),
                    passed: found.iter().filter(|v| v.passed).count(),
                    runs: self.runs.len(),
                    measured: Spread::of(&mut measured),
                    target: Spread::of(&mut target),
                    unit: found.iter().find_map(|v| v.measured),
                }
            })
            .collect()
    }
}

impl ExpectationSummary {
    fn show(&self, s: Option<Spread>) -> String {
        match (s, self.unit) {
            (Some(s), Some(u)) if s.min == s.max => u.show(s.median),
            (Some(s), Some(u)) => format!(
                "{} [{} .. {}]",
                u.show(s.median),
                u.show(s.min),
                u.show(s.max)
            ),
            _ => "-".to_string(),
        }
    }
}

/// Seeds listed at most in a line.
const SEEDS_SHOWN_MAX: usize = 12;

fn seed_list(seeds: &[u64]) -> String {
    let mut s: Vec<String> = seeds
        .iter()
        .take(SEEDS_SHOWN_MAX)
        .map(u64::to_string)
        .collect();
    if seeds.len() > SEEDS_SHOWN_MAX {
        s.push(format!("... ({} in all)", seeds.len()));
    }
    s.join(", ")
}

/// The replay command of one run of a cell.
fn replay(r: &SweepResult, values: &[String], seed: u64) -> String {
    let mut cmd = format!("{} --seed {seed}", r.replay);
    for (k, v) in r.keys.iter().zip(values) {
        cmd.push_str(&format!(" --set {k}={v}"));
    }
    cmd
}

pub fn text(r: &SweepResult) -> String {
    let mut s = String::new();
    let cells = r.cells();
    s.push_str(&format!(
        "Sweep: {}, {}, {} run{} on {} thread{}\n",
        r.scenario,
        r.seeds_text(),
        r.runs.len(),
        if r.runs.len() == 1 { "" } else { "s" },
        r.threads,
        if r.threads == 1 { "" } else { "s" },
    ));
    for c in &cells {
        s.push('\n');
        if !r.keys.is_empty() {
            let values: Vec<String> = r
                .keys
                .iter()
                .zip(c.values)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            s.push_str(&format!("{}\n", values.join("  ")));
        }
        s.push_str(&format!(
            "REPRODUCED on {} of {} seeds\n",
            c.reproduced(),
            c.runs.len()
        ));
        let missed = c.not_reproduced();
        if let Some(&first) = missed.first() {
            s.push_str(&crate::fmt::wrapped(
                &seed_list(&missed),
                "  not reproduced: seeds ",
                "    ",
            ));
            s.push('\n');
            s.push_str(&crate::fmt::wrapped(
                &replay(r, c.values, first),
                "  replay: ",
                "    ",
            ));
            s.push('\n');
        }
        // Each expectation: its pass count, its name (wrapped), then its
        // figure and what it was held against, median [range].
        let width = format!("{0}/{0}", c.runs.len()).len();
        let indent = " ".repeat(width + 4);
        for e in c.expectations() {
            let passed = format!("{}/{}", e.passed, e.runs);
            s.push_str(&crate::fmt::wrapped(
                &e.name,
                &format!("  {passed:>width$}  "),
                &indent,
            ));
            s.push('\n');
            if e.measured.is_some() {
                s.push_str(&crate::fmt::wrapped(
                    &format!("{}, against {}", e.show(e.measured), e.show(e.target)),
                    &format!("{indent}measured "),
                    &indent,
                ));
                s.push('\n');
            }
        }
        for run in c.runs.iter().filter(|r| !r.errors.is_empty()).take(3) {
            s.push_str(&crate::fmt::wrapped(
                &run.errors.join("; "),
                &format!("  seed {} protocol errors: ", run.seed),
                "    ",
            ));
            s.push('\n');
        }
    }
    s
}

fn spread_json(s: Option<Spread>) -> Value {
    match s {
        Some(s) => json!({ "median": s.median, "min": s.min, "max": s.max }),
        None => Value::Null,
    }
}

pub fn json(r: &SweepResult) -> Value {
    let cells: Vec<Value> = r
        .cells()
        .iter()
        .map(|c| {
            let values: serde_json::Map<String, Value> = r
                .keys
                .iter()
                .zip(c.values)
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            json!({
                "values": values,
                "runs": c.runs.len(),
                "reproduced": c.reproduced(),
                "not_reproduced_seeds": c.not_reproduced(),
                "expectations": c.expectations().iter().map(|e| json!({
                    "name": e.name,
                    "passed": e.passed,
                    "runs": e.runs,
                    "measured": spread_json(e.measured),
                    "target": spread_json(e.target),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "scenario": r.scenario,
        "seeds": r.seeds,
        "keys": r.keys,
        "runs": r.runs.len(),
        "reproduced": r.runs.iter().filter(|x| x.reproduced()).count(),
        "threads": r.threads,
        "cells": cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_take_the_middle_of_an_even_count() {
        assert_eq!(
            Spread::of(&mut [4.0, 1.0, 3.0, 2.0]),
            Some(Spread {
                median: 2.5,
                min: 1.0,
                max: 4.0
            })
        );
        assert_eq!(Spread::of(&mut [7.0]).map(|s| s.median), Some(7.0));
        assert_eq!(Spread::of(&mut []), None);
    }
}
