//! `fusionlab chaos SCENARIO --runs N [--seed S] [--json]`: in the spirit of
//! TigerBeetle's VOPR and Jepsen, run a scenario's workload N times, each
//! time with a few failures drawn at random over its timeline, with the
//! checkers on, and count what was acknowledged and what was lost.
//!
//! - **Seeds.** Run `i` (0-based) has seed `S + i` (wrapping; `S` defaults
//!   to the scenario's seed). That seed draws the run's faults and is the
//!   simulation's seed, so `fusionlab chaos SCENARIO --runs 1 --seed X`
//!   replays the run that printed seed `X` exactly.
//! - **Faults.** Each run draws 1 to 3 faults at times spread uniformly over
//!   the timeline, in time order: `kill` (an instance crashes), `restart` (a
//!   killed one comes back), `pause` (a freeze below `css_misscount`), a
//!   pause of `css_misscount` or more (it ends in an eviction), `loss` (1 to
//!   20 % of the messages of all links, one instance's or one link's, for
//!   the phase) and `partition` (one instance cut off for the phase). At
//!   most `max(1, (n - 1) / 2)` of the `n` instances are ever taken down
//!   (killed, or evicted by a long pause or a partition) in one run, so a
//!   majority stays (with 2 instances: one, the tie goes to the survivor's
//!   cohort) and at least one instance is always up.
//! - **Validation.** The faults are the scenario model's `Fault`s written
//!   into the scenario's own `[[phase.fault]]` tables and loaded by the
//!   loader, as a file would be: a drawn set the loader refuses is redrawn.
//!   A kind the loader refuses outright (one the model cannot run yet) is
//!   not drawn at all: each kind is tried once on the scenario before the
//!   runs, and the output says which kinds were drawn and why the others
//!   were not. So the kinds drawn follow what the loader accepts.
//! - **Runs** go over the machine's cores (`std::thread::scope`); the
//!   results are put in seed order, so the output does not depend on it.
//!
//! Exit status 3 when any run lost an acknowledged commit, broke a check or
//! hit a protocol error.

pub mod compose;
pub mod compose_project;
pub mod drawn;
mod file;
pub mod live;
mod prepare;

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use fusion_report::chaos::{ChaosResult, ChaosRun, describe_fault};
use fusion_scenario::LoadedScenario;
use fusion_sim::SimOptions;

use crate::chaos::drawn::Kind;
use crate::chaos::prepare::{Base, RunOutcome, drawable_kinds, prepare};
use crate::memory::{MemoryLimit, within_limit};
use crate::{Failure, exit, shipped};

/// What `fusionlab chaos` was asked.
#[derive(Clone, Debug, Default)]
pub struct ChaosArgs {
    /// `FILE|NAME`.
    pub scenario: String,
    pub runs: u32,
    /// The first run's seed (default: the scenario's).
    pub seed: Option<u64>,
    pub json: bool,
    /// `--set KEY=VALUE`, applied before the faults are added.
    pub sets: Vec<String>,
    pub max_memory: Option<u64>,
    /// `--save-scenario FILE` (only with one run).
    pub save_scenario: Option<std::path::PathBuf>,
    /// `--live`: each run on a local cluster of real processes, one after
    /// the other (see [`crate::chaos::live`]).
    pub live: bool,
    /// `--cluster FILE` (with --live): every run on this running cluster.
    pub cluster: Option<std::path::PathBuf>,
    /// `--swarm STACK` (with --cluster): its kill, pause and restart
    /// through Docker and Swarm.
    pub swarm: Option<String>,
    /// `--compose`: each run on a compose project of containers (see
    /// [`crate::chaos::compose`]); implies the live runner.
    pub compose: Option<crate::chaos::compose_project::ComposeOpts>,
    /// `--parts N --part K`: run one slice of the runs.
    pub part: crate::parts::PartArgs,
}

/// Run `fusionlab chaos`.
pub fn chaos(a: &ChaosArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    if a.runs == 0 {
        return Err(Failure::input("--runs: give at least 1 run").into());
    }
    if a.save_scenario.is_some() && a.runs != 1 {
        return Err(Failure::input(format!(
            "--save-scenario writes one run's scenario: give --runs 1, not {}",
            a.runs
        ))
        .into());
    }
    // u32 runs fit a usize.
    let slice = a
        .part
        .slice(usize::try_from(a.runs).unwrap_or(usize::MAX))?;
    let source = shipped::resolve(&a.scenario)?;
    let (text, label) = source.text()?;
    let loaded = source
        .load(&a.sets)
        .map_err(|e| Failure::input(e.to_string()))?;
    let estimate = within_limit(&loaded, true, &MemoryLimit::new(a.max_memory))?;
    let Some(first) = loaded.variants.first() else {
        return Err(Failure::input(format!("{label}: no variant to run")).into());
    };
    if first.scenario.phases.iter().all(|p| p.duration == 0) {
        return Err(Failure::input(format!("{label}: the timeline is empty")).into());
    }
    let base = Base::new(text, label, a.sets.clone(), first);
    // Real processes (--live) or containers (--compose): the live runner.
    let real = a.live || a.compose.is_some();
    let (driver, flag) = match (&a.compose, a.live) {
        (Some(_), _) => ("compose", "--compose "),
        (None, true) if a.cluster.is_some() => ("live-cluster", "--live "),
        (None, true) => ("live", "--live "),
        (None, false) => ("simulator", ""),
    };
    // A kind the driver refuses is not drawn either, with its reason.
    let given = crate::chaos::live::Given::new(a.cluster.as_deref(), a.swarm.as_deref())?;
    let driver_refusal = |l: &LoadedScenario| {
        if real {
            crate::chaos::live::refusal(l, given.as_ref())
        } else {
            Ok(())
        }
    };
    if real {
        // Figures a live cluster does not measure: refused before any run.
        let plain = base.with(&[]).map_err(Failure::input)?;
        fusion_driver::refusal(&plain, fusion_driver::Driver::Live)
            .map_err(|e| Failure::input(format!("fusionlab chaos --live: {e}")))?;
    }
    let (drawable, refused) = drawable_kinds(&base, &driver_refusal);
    let start = a.seed.unwrap_or(base.scenario.seed);
    let runs = slice.map_or(0..a.runs, |s| {
        // Within 0..runs, so u32s.
        let r = s.range();
        u32::try_from(r.start).unwrap_or(a.runs)..u32::try_from(r.end).unwrap_or(a.runs)
    });
    let seeds: Vec<u64> = runs.map(|i| start.wrapping_add(u64::from(i))).collect();
    let limit = MemoryLimit::new(a.max_memory);
    let workers = crate::pool::workers(None, seeds.len(), estimate.bytes, limit.bytes);
    let (outcomes, interrupted) = if let Some(opts) = &a.compose {
        crate::chaos::compose::run_all(&base, &drawable, &seeds, opts, err)?
    } else if a.live {
        crate::chaos::live::run_all(&base, &drawable, &seeds, given.as_ref(), err)?
    } else {
        (run_all(&base, &drawable, &seeds, workers)?, None)
    };
    let phases = &base.scenario.phases;
    let result = ChaosResult {
        scenario: loaded.name.clone(),
        driver: driver.to_string(),
        replay: replay_command(&a.scenario, flag, &a.sets),
        // The slice's first run's: run i of these has this seed + i too.
        seed: seeds.first().copied().unwrap_or(start),
        kinds_drawn: drawable.iter().map(|k| k.name().to_string()).collect(),
        kinds_not_drawn: refused
            .iter()
            .map(|(k, why)| (k.name().to_string(), why.clone()))
            .collect(),
        kinds: Kind::ALL.iter().map(|k| k.name().to_string()).collect(),
        runs: outcomes
            .iter()
            .map(|o| ChaosRun {
                seed: o.seed,
                faults: o
                    .faults
                    .iter()
                    .map(|d| {
                        let phase = phases.get(d.phase).map_or("?", |p| p.name.as_str());
                        (d.kind.name().to_string(), describe_fault(&d.fault, phase))
                    })
                    .collect(),
                acknowledged: o.acknowledged,
                lost: o.lost,
                violations: o.violations.clone(),
                errors: o.errors.clone(),
            })
            .collect(),
        slice,
    };
    if let (Some(path), Some(run)) = (&a.save_scenario, outcomes.first()) {
        let file = saved_scenario(&base, run, &result.replay, real, path)?;
        std::fs::write(path, file)
            .map_err(|e| Failure::input(format!("{}: cannot write: {e}", path.display())))?;
    }
    if a.json {
        let v = fusion_report::chaos::json(&result);
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).context("cannot serialize the summary")?
        )?;
    } else {
        out.write_all(fusion_report::chaos::text(&result).as_bytes())?;
    }
    for o in outcomes.iter().filter(|o| o.failed()) {
        for line in o.violations.iter().chain(&o.errors) {
            writeln!(err, "fusionlab: chaos seed {}: {line}", o.seed)?;
        }
    }
    if let Some(s) = interrupted {
        writeln!(
            err,
            "fusionlab chaos {flag}: interrupted by {s} after {} of {} runs",
            outcomes.len(),
            seeds.len()
        )?;
        return Ok(s.exit_status());
    }
    Ok(if outcomes.iter().any(RunOutcome::failed) {
        exit::SIM_ERRORS
    } else {
        exit::OK
    })
}

/// Run every seed on `workers` threads; outcomes in seed order.
fn run_all(
    base: &Base,
    drawable: &[Kind],
    seeds: &[u64],
    workers: usize,
) -> Result<Vec<RunOutcome>> {
    let results = crate::pool::map_ordered(
        seeds,
        workers,
        |&seed| one_run(base, drawable, seed),
        |seed| format!("chaos run with seed {seed}"),
    )?;
    results
        .into_iter()
        .map(|r| r.map_err(|why| Failure::input(why).into()))
        .collect()
}

/// One run on the simulator: draw faults the loader accepts, simulate
/// with the checkers on.
fn one_run(base: &Base, drawable: &[Kind], seed: u64) -> Result<RunOutcome, String> {
    let run = prepare(base, drawable, seed)?;
    let v = &run.loaded.variants[run.variant];
    let opts = SimOptions {
        seed: Some(seed),
        check: true,
        ..SimOptions::default()
    };
    let o = fusion_sim::run_variant(&v.name, &v.scenario, &opts);
    Ok(run.outcome(&o))
}

/// The scenario file of one run: the drawn faults in its phases, and a
/// header saying how `run` replays it (the same seed, sets and checkers).
fn saved_scenario(
    base: &Base,
    run: &RunOutcome,
    replay: &str,
    live: bool,
    path: &Path,
) -> Result<String> {
    let text = base.file_with(&run.faults).map_err(Failure::input)?;
    let mut sets = String::new();
    for set in &base.sets {
        sets.push_str(" --set ");
        sets.push_str(&shell_word(set));
    }
    Ok(format!(
        "# Written by `{replay} --runs 1 --seed {seed} --save-scenario ...`: \
         the run's faults are in its phases.\n\
         # Replay it: fusionlab run{driver} {file} --seed {seed} --check{sets}\n{text}",
        seed = run.seed,
        driver = if live { " --live" } else { "" },
        file = shell_word(&path.display().to_string()),
    ))
}

/// The command that runs this scenario again with the same `--set`
/// values (the table adds `--runs 1 --seed X`): a replay without them would
/// run another timeline.
fn replay_command(scenario: &str, driver: &str, sets: &[String]) -> String {
    let mut command = format!("fusionlab chaos {driver}{}", shell_word(scenario));
    for set in sets {
        command.push_str(" --set ");
        command.push_str(&shell_word(set));
    }
    command
}

/// `word` as one shell word: quoted when it holds anything a shell reads.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_command_keeps_the_sets_quoted_for_a_shell() {
        let sets = vec![
            "phase.crash.duration_s=12".to_string(),
            "scenario.title=a b's".to_string(),
        ];
        assert_eq!(
            replay_command("my scenarios/x.toml", "", &sets),
            "fusionlab chaos 'my scenarios/x.toml' --set phase.crash.duration_s=12 \
             --set 'scenario.title=a b'\\''s'"
        );
        assert_eq!(
            replay_command("split-brain", "", &[]),
            "fusionlab chaos split-brain"
        );
        assert_eq!(
            replay_command("split-brain", "--live ", &[]),
            "fusionlab chaos --live split-brain"
        );
    }
}
