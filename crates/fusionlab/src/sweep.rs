//! `fusionlab sweep SCENARIO [--seeds A..B] [--vary KEY=v1,v2,...]...`:
//! every combination of the varied values, each over every seed, as
//! independent simulator runs on every core (`pool`); the verdicts'
//! distribution is `fusion_report::sweep`'s to print.

use std::io::Write;

use anyhow::{Context, Result};
use fusion_report::sweep::{SweepResult, SweepRun};
use fusion_scenario::LoadedScenario;
use fusion_sim::SimOptions;

use crate::memory::{MemoryLimit, within_limit};
use crate::{Failure, exit, shipped};

/// What `fusionlab sweep` was asked.
#[derive(Clone, Debug, Default)]
pub struct SweepArgs {
    pub scenario: String,
    /// `A..B` (both included) or one seed.
    pub seeds: String,
    /// `KEY=v1,v2,...`, repeatable: every combination runs.
    pub vary: Vec<String>,
    /// `--set KEY=VALUE`, applied to every run before the varied values.
    pub sets: Vec<String>,
    /// Threads (default: every core).
    pub jobs: Option<usize>,
    pub json: bool,
    /// Run the checkers too (a violation makes the run not reproduced).
    pub check: bool,
    pub max_memory: Option<u64>,
    /// `--parts N --part K`: run one slice of the runs.
    pub part: crate::parts::PartArgs,
}

/// More runs than this in one sweep is a typo, not a plan.
pub const SWEEP_RUNS_MAX: u64 = 100_000;

/// `A..B` (inclusive) or `N`.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let number = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|_| format!("--seeds {text}: `{t}` is not a seed (a whole number from 0)"))
    };
    let (first, last) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b.strip_prefix('=').unwrap_or(b))?),
        None => {
            let n = number(text)?;
            (n, n)
        }
    };
    if first > last {
        return Err(format!("--seeds {text}: the first seed is above the last"));
    }
    if last - first >= SWEEP_RUNS_MAX {
        return Err(format!(
            "--seeds {text}: {} seeds, more than a sweep runs ({SWEEP_RUNS_MAX})",
            u128::from(last - first) + 1
        ));
    }
    Ok((first..=last).collect())
}

/// `KEY=v1,v2,...` into the key and its values.
pub fn parse_vary(text: &str) -> Result<(String, Vec<String>), String> {
    let Some((key, values)) = text.split_once('=') else {
        return Err(format!("--vary {text}: expected KEY=v1,v2,..."));
    };
    let key = key.trim();
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if key.is_empty() || values.iter().any(String::is_empty) {
        return Err(format!(
            "--vary {text}: expected KEY=v1,v2,... with no empty key or value"
        ));
    }
    Ok((key.to_string(), values))
}

/// Every combination of the varied values, the first key's slowest.
fn combinations(varied: &[(String, Vec<String>)]) -> Vec<Vec<String>> {
    let values: Vec<Vec<String>> = varied.iter().map(|(_, v)| v.clone()).collect();
    fusion_report::sweep::combinations(&values)
}

pub fn sweep(a: &SweepArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let seeds = parse_seeds(&a.seeds).map_err(Failure::input)?;
    let varied: Vec<(String, Vec<String>)> = a
        .vary
        .iter()
        .map(|v| parse_vary(v))
        .collect::<Result<_, _>>()
        .map_err(Failure::input)?;
    if let Some(k) = varied
        .iter()
        .enumerate()
        .find_map(|(i, (k, _))| varied[..i].iter().any(|(x, _)| x == k).then_some(k))
    {
        return Err(Failure::input(format!("--vary {k}: the key is varied twice")).into());
    }
    let combos = combinations(&varied);
    let runs = (combos.len() as u64).saturating_mul(seeds.len() as u64);
    if runs > SWEEP_RUNS_MAX {
        return Err(Failure::input(format!(
            "{runs} runs ({} combinations of --vary x {} seeds): more than a sweep runs ({SWEEP_RUNS_MAX})",
            combos.len(),
            seeds.len()
        ))
        .into());
    }
    // At most SWEEP_RUNS_MAX, so a usize.
    let slice = a.part.slice(usize::try_from(runs).unwrap_or(usize::MAX))?;
    if a.jobs == Some(0) {
        return Err(Failure::input("--jobs: give at least 1 thread").into());
    }
    // Every combination loads before anything runs: a bad value is bad
    // input, named with the --vary that gave it.
    let source = shipped::resolve(&a.scenario)?;
    let limit = MemoryLimit::new(a.max_memory);
    // The file itself first, so that its own problems are not blamed on a
    // varied value.
    source
        .load(&a.sets)
        .map_err(|e| Failure::input(e.to_string()))?;
    let mut loaded: Vec<LoadedScenario> = Vec::with_capacity(combos.len());
    let mut run_bytes = 0;
    for values in &combos {
        let mut sets = a.sets.clone();
        sets.extend(
            varied
                .iter()
                .zip(values)
                .map(|((k, _), v)| format!("{k}={v}")),
        );
        let l = source.load(&sets).map_err(|e| {
            let which: Vec<String> = varied
                .iter()
                .zip(values)
                .map(|((k, _), v)| format!("--vary {k}={v}"))
                .collect();
            Failure::input(if which.is_empty() {
                e.to_string()
            } else {
                format!("{}: {e}", which.join(" "))
            })
        })?;
        fusion_driver::refusal(&l, fusion_driver::Driver::Simulator).map_err(Failure::input)?;
        run_bytes = run_bytes.max(within_limit(&l, a.check, &limit)?.bytes);
        loaded.push(l);
    }
    let all: Vec<(usize, u64)> = (0..combos.len())
        .flat_map(|c| seeds.iter().map(move |&s| (c, s)))
        .collect();
    // The slice's runs, contiguous in the order the whole sweep runs them.
    let work = slice.map_or(&all[..], |s| &all[s.range()]);
    let threads = crate::pool::workers(a.jobs, work.len(), run_bytes, limit.bytes);
    let results = crate::pool::map_ordered(
        work,
        threads,
        |&(c, seed)| {
            let opts = SimOptions {
                seed: Some(seed),
                check: a.check,
                ..SimOptions::default()
            };
            let (result, outcomes) = fusion_sim::run_scenario(&loaded[c], &opts);
            SweepRun {
                seed,
                values: combos[c].clone(),
                verdicts: result.verdicts,
                errors: outcomes
                    .iter()
                    .flat_map(|o| o.errors.iter().cloned())
                    .collect(),
            }
        },
        |&(c, seed)| format!("the run with seed {seed} {}", combos[c].join(" ")),
    )?;
    let mut replay = format!("fusionlab run {}", crate::chaos::shell_word(&a.scenario));
    for s in &a.sets {
        replay.push_str(&format!(" --set {}", crate::chaos::shell_word(s)));
    }
    let result = SweepResult {
        scenario: loaded
            .first()
            .map_or_else(|| a.scenario.clone(), |l| l.name.clone()),
        seeds,
        keys: varied.iter().map(|(k, _)| k.clone()).collect(),
        vary: varied.into_iter().map(|(_, v)| v).collect(),
        check: a.check,
        threads,
        replay,
        runs: results,
        slice,
    };
    if a.json {
        let v = fusion_report::sweep::json(&result);
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).context("cannot serialize the sweep")?
        )?;
    } else {
        out.write_all(fusion_report::sweep::text(&result).as_bytes())?;
    }
    let failed = result.runs.iter().filter(|r| !r.errors.is_empty()).count();
    if failed > 0 {
        writeln!(
            err,
            "fusionlab sweep: {failed} run(s) reported protocol errors or checker violations"
        )?;
        return Ok(exit::SIM_ERRORS);
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_a_range_with_both_ends_or_one_seed() {
        assert_eq!(parse_seeds("1..5"), Ok(vec![1, 2, 3, 4, 5]));
        assert_eq!(parse_seeds("1..=3"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_seeds("7"), Ok(vec![7]));
        assert!(parse_seeds("5..1").unwrap_err().contains("above the last"));
        assert!(
            parse_seeds("a..3")
                .unwrap_err()
                .contains("`a` is not a seed")
        );
        assert!(
            parse_seeds("0..18446744073709551615")
                .unwrap_err()
                .contains("more than a sweep runs")
        );
        assert!(parse_seeds("-1").is_err());
    }

    #[test]
    fn varied_keys_combine_with_the_first_slowest() {
        let v = vec![
            parse_vary("a=1,2").expect("valid"),
            parse_vary("b = x, y ,z").expect("valid"),
        ];
        assert_eq!(v[1].1, vec!["x", "y", "z"]);
        let c = combinations(&v);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec!["1", "x"]);
        assert_eq!(c[3], vec!["2", "x"]);
        assert_eq!(combinations(&[]), vec![Vec::<String>::new()]);
        assert!(parse_vary("a").is_err());
        assert!(parse_vary("a=1,,2").is_err());
        assert!(parse_vary("=1").is_err());
    }
}
