//! `fusionlab sweep`: one scenario over many seeds and, optionally, several
//! values of some keys. Whether a verdict holds beyond its one seed is a
//! distribution: REPRODUCED on how many seeds, each expectation's pass rate,
//! and each expectation's figure (median and range) per combination of the
//! varied values.
//!
//! A sweep split over machines (`--parts`) prints its slice; its JSON
//! keeps every run (`per_run`) so that [`merge`] puts the slices back into
//! what the whole sweep prints.

use serde_json::{Value, json};

use crate::campaign::{
    Slice, array_of, bool_of, field, figure_json, figure_of, in_part_order, str_of, strings_of,
    u64_of,
};
use crate::fmt::Shown;
use crate::model::{Measured, Verdict};

/// Every run of a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepResult {
    pub scenario: String,
    /// The seeds, in order (every combination ran each).
    pub seeds: Vec<u64>,
    /// The varied keys, in the order given.
    pub keys: Vec<String>,
    /// The values tried, per key of `keys`.
    pub vary: Vec<Vec<String>>,
    /// The checkers ran too.
    pub check: bool,
    /// Threads the runs went over.
    pub threads: usize,
    /// The command that replays one run, without `--seed` and the varied
    /// values (`fusionlab run NAME --set ...`).
    pub replay: String,
    pub runs: Vec<SweepRun>,
    /// The slice of the sweep's runs these are (`--parts`), if not all.
    pub slice: Option<Slice>,
}

/// Every combination of the varied values (one list per key), the first
/// key's slowest: the order a sweep runs them in, each over every seed.
pub fn combinations(vary: &[Vec<String>]) -> Vec<Vec<String>> {
    vary.iter().fold(vec![Vec::new()], |acc, values| {
        acc.iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut c = prefix.clone();
                    c.push(v.clone());
                    c
                })
            })
            .collect()
    })
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
    if let Some(slice) = &r.slice {
        s.push_str(&crate::fmt::wrapped(&slice.describe(), "", "  "));
        s.push('\n');
    }
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
    let mut o = json!({
        "scenario": r.scenario,
        "seeds": r.seeds,
        "keys": r.keys,
        "vary": r.keys.iter().zip(&r.vary).map(|(k, v)| json!({ "key": k, "values": v }))
            .collect::<Vec<_>>(),
        "check": r.check,
        "replay": r.replay,
        "runs": r.runs.len(),
        "reproduced": r.runs.iter().filter(|x| x.reproduced()).count(),
        "threads": r.threads,
        "cells": cells,
        "per_run": r.runs.iter().map(|run| run_json(r, run)).collect::<Vec<_>>(),
    });
    if let Some(slice) = &r.slice {
        o["part"] = slice.json();
    }
    o
}

/// What one run gave, all that [`merge`] needs to count it again.
fn run_json(r: &SweepResult, run: &SweepRun) -> Value {
    let values: serde_json::Map<String, Value> = r
        .keys
        .iter()
        .zip(&run.values)
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    json!({
        "seed": run.seed,
        "values": values,
        "verdicts": run.verdicts.iter().map(|v| json!({
            "name": v.name,
            "passed": v.passed,
            "detail": v.detail,
            "measured": v.measured.map(|m| json!({
                "value": figure_json(m.value),
                "target": figure_json(m.target),
                "unit": m.shown.name(),
            })),
        })).collect::<Vec<_>>(),
        "errors": run.errors,
    })
}

/// A sweep's JSON read back (a whole sweep's or a slice's).
pub fn from_json(v: &Value) -> Result<SweepResult, String> {
    let keys = strings_of(field(v, "keys")?, "keys")?;
    let vary = array_of(field(v, "vary")?, "vary")?
        .iter()
        .map(|kv| strings_of(field(kv, "values")?, "vary.values"))
        .collect::<Result<Vec<_>, _>>()?;
    if vary.len() != keys.len() {
        return Err("`vary` and `keys` differ in length".to_string());
    }
    let seeds = array_of(field(v, "seeds")?, "seeds")?
        .iter()
        .map(|s| u64_of(s, "seeds"))
        .collect::<Result<Vec<_>, _>>()?;
    let runs = array_of(field(v, "per_run")?, "per_run")?
        .iter()
        .map(|run| run_from_json(run, &keys))
        .collect::<Result<Vec<_>, _>>()?;
    let slice = v.get("part").map(Slice::from_json).transpose()?;
    if let Some(s) = &slice
        && s.range().len() != runs.len()
    {
        return Err(format!(
            "part {} of {} holds {} runs, not the {} of its slice",
            s.part,
            s.parts,
            runs.len(),
            s.range().len()
        ));
    }
    Ok(SweepResult {
        scenario: str_of(field(v, "scenario")?, "scenario")?.to_string(),
        seeds,
        keys,
        vary,
        check: bool_of(field(v, "check")?, "check")?,
        threads: usize::try_from(u64_of(field(v, "threads")?, "threads")?)
            .map_err(|_| "`threads`: too large".to_string())?,
        replay: str_of(field(v, "replay")?, "replay")?.to_string(),
        runs,
        slice,
    })
}

fn run_from_json(v: &Value, keys: &[String]) -> Result<SweepRun, String> {
    let values = field(v, "values")?;
    let verdicts = array_of(field(v, "verdicts")?, "verdicts")?
        .iter()
        .map(|x| {
            let measured = match field(x, "measured")? {
                Value::Null => None,
                m => {
                    let unit = str_of(field(m, "unit")?, "measured.unit")?;
                    Some(Measured {
                        value: figure_of(field(m, "value")?, "measured.value")?,
                        target: figure_of(field(m, "target")?, "measured.target")?,
                        shown: Shown::from_name(unit)
                            .ok_or_else(|| format!("measured.unit {unit:?}: not a unit"))?,
                    })
                }
            };
            Ok(Verdict {
                name: str_of(field(x, "name")?, "verdicts.name")?.to_string(),
                passed: bool_of(field(x, "passed")?, "verdicts.passed")?,
                detail: str_of(field(x, "detail")?, "verdicts.detail")?.to_string(),
                measured,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SweepRun {
        seed: u64_of(field(v, "seed")?, "per_run.seed")?,
        values: keys
            .iter()
            .map(|k| str_of(field(values, k)?, "per_run.values").map(str::to_string))
            .collect::<Result<_, _>>()?,
        verdicts,
        errors: strings_of(field(v, "errors")?, "per_run.errors")?,
    })
}

/// The slices of one sweep (file name, what it holds) put back together:
/// what the whole sweep prints, its threads the slices' added up.
pub fn merge(slices: Vec<(String, SweepResult)>) -> Result<SweepResult, String> {
    let mut parts = Vec::with_capacity(slices.len());
    for (file, r) in &slices {
        let s = r.slice.ok_or_else(|| {
            format!("{file}: a whole sweep, not a part of one (run with --parts N --part K)")
        })?;
        parts.push((file.clone(), s));
    }
    let order = in_part_order(&parts)?;
    let (first_file, first) = &slices[order[0]];
    for (file, r) in &slices {
        let differs = [
            ("scenario", r.scenario != first.scenario),
            ("seeds", r.seeds != first.seeds),
            ("--vary", r.keys != first.keys || r.vary != first.vary),
            ("--check", r.check != first.check),
            ("--set (replay)", r.replay != first.replay),
        ]
        .into_iter()
        .find_map(|(what, d)| d.then_some(what));
        if let Some(what) = differs {
            return Err(format!(
                "{file} and {first_file}: not the same sweep (their {what} differ)"
            ));
        }
    }
    let combos = combinations(&first.vary);
    let runs_total = combos.len().saturating_mul(first.seeds.len());
    if parts[0].1.runs_total != runs_total {
        return Err(format!(
            "{first_file}: a split of {} runs, but its seeds and values make {runs_total}",
            parts[0].1.runs_total
        ));
    }
    let mut merged = SweepResult {
        threads: 0,
        runs: Vec::with_capacity(parts[0].1.runs_total),
        slice: None,
        ..first.clone()
    };
    for &i in &order {
        let (file, r) = &slices[i];
        merged.threads = merged.threads.saturating_add(r.threads);
        let range = parts[i].1.range();
        for (at, run) in range.zip(&r.runs) {
            let seed = first.seeds.get(at % first.seeds.len().max(1));
            let values = combos.get(at / first.seeds.len().max(1));
            if seed != Some(&run.seed) || values != Some(&run.values) {
                return Err(format!(
                    "{file}: run {} (seed {} {}) is not the sweep's run {} there",
                    at + 1,
                    run.seed,
                    run.values.join(" "),
                    at + 1
                ));
            }
            merged.runs.push(run.clone());
        }
    }
    Ok(merged)
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

    /// Six runs over two values and three seeds; some fail, one has no figure.
    fn whole() -> SweepResult {
        let vary = vec![vec!["2".to_string(), "4".to_string()]];
        let runs = combinations(&vary)
            .into_iter()
            .flat_map(|values| (1..=3u64).map(move |seed| (seed, values.clone())))
            .map(|(seed, values)| SweepRun {
                seed,
                verdicts: vec![Verdict {
                    name: "grows".into(),
                    passed: seed != 2,
                    detail: format!("seed {seed}"),
                    measured: (seed != 3).then_some(Measured {
                        value: 0.1 * seed as f64 + 1e-9,
                        target: if seed == 1 { f64::INFINITY } else { 1.0 / 3.0 },
                        shown: Shown::Ms,
                    }),
                }],
                errors: if seed == 3 && values[0] == "4" {
                    vec!["a protocol error".into()]
                } else {
                    Vec::new()
                },
                values,
            })
            .collect();
        SweepResult {
            scenario: "s".into(),
            seeds: vec![1, 2, 3],
            keys: vec!["parameters.cpu_count".into()],
            vary,
            check: true,
            threads: 2,
            replay: "fusionlab run s".into(),
            runs,
            slice: None,
        }
    }

    /// The whole sweep cut as `--parts` cuts it, each slice through its JSON.
    fn sliced(w: &SweepResult, parts: u32) -> Vec<(String, SweepResult)> {
        (1..=parts)
            .map(|part| {
                let slice = Slice::new(part, parts, w.runs.len()).expect("valid");
                let r = SweepResult {
                    threads: 1,
                    runs: w.runs[slice.range()].to_vec(),
                    slice: Some(slice),
                    ..w.clone()
                };
                let text = serde_json::to_string(&json(&r)).expect("serializes");
                let back: Value = serde_json::from_str(&text).expect("parses");
                (
                    format!("part{part}.json"),
                    from_json(&back).expect("reads back"),
                )
            })
            .collect()
    }

    #[test]
    fn slices_merge_into_the_whole_sweep() {
        let w = whole();
        for parts in [1, 2, 4, 6] {
            let mut slices = sliced(&w, parts);
            slices.reverse();
            let m = merge(slices).expect("merges");
            assert_eq!(m.threads, parts as usize);
            let m = SweepResult { threads: 2, ..m };
            assert_eq!(text(&m), text(&w));
            assert_eq!(json(&m), json(&w));
        }
        let part = &sliced(&w, 2)[0].1;
        assert!(
            text(part).contains("part 1 of 2: runs 1 to 3 of 6"),
            "{}",
            text(part)
        );
    }

    #[test]
    fn slices_of_other_sweeps_or_missing_runs_are_refused() {
        let w = whole();
        let mut slices = sliced(&w, 3);
        slices[1].1.check = false;
        let e = merge(slices).unwrap_err();
        assert!(e.contains("--check"), "{e}");
        let mut slices = sliced(&w, 3);
        slices.remove(2);
        assert!(
            merge(slices)
                .unwrap_err()
                .contains("part 3 of 3 is missing")
        );
        let mut slices = sliced(&w, 2);
        slices[1].1.runs[0].seed = 9;
        let e = merge(slices).unwrap_err();
        assert!(e.contains("run 4 (seed 9 4)"), "{e}");
        let e = merge(vec![("w.json".into(), w)]).unwrap_err();
        assert!(e.contains("a whole sweep"), "{e}");
    }
}
