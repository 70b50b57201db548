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
mod file;
pub mod live;

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos};
use fusion_report::chaos::{ChaosResult, ChaosRun, describe_fault};
use fusion_scenario::{Direction, Fault, LinkTarget, LoadedScenario, Scenario};
use fusion_sim::SimOptions;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::chaos::file::with_faults;
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
    /// `--compose`: each run on a compose project of containers (see
    /// [`crate::chaos::compose`]); implies the live runner.
    pub compose: Option<crate::chaos::compose_project::ComposeOpts>,
}

/// The kinds of fault a run may draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Kill,
    Restart,
    Pause,
    /// A pause of `css_misscount` or more: the cluster evicts the instance.
    LongPause,
    Loss,
    Partition,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::Kill,
        Kind::Restart,
        Kind::Pause,
        Kind::LongPause,
        Kind::Loss,
        Kind::Partition,
    ];

    /// As the output and JSON name it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Restart => "restart",
            Kind::Pause => "pause",
            Kind::LongPause => "long_pause",
            Kind::Loss => "loss",
            Kind::Partition => "partition",
        }
    }

    /// Whether it takes an instance down for good (until a restart).
    fn takes_down(self) -> bool {
        matches!(self, Kind::Kill | Kind::LongPause | Kind::Partition)
    }
}

/// A fault drawn for a run: its kind, the phase (index) it belongs to and
/// the model's fault.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub kind: Kind,
    pub phase: usize,
    pub fault: Fault,
}

/// One run's outcome.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    pub seed: u64,
    pub faults: Vec<Drawn>,
    pub acknowledged: u64,
    pub lost: u64,
    pub violations: Vec<String>,
    pub errors: Vec<String>,
}

impl RunOutcome {
    pub fn failed(&self) -> bool {
        self.lost > 0 || !self.violations.is_empty() || !self.errors.is_empty()
    }
}

/// The scenario as chaos runs it: its text, label, overrides, and what the
/// loader made of it.
pub(crate) struct Base {
    text: String,
    pub(crate) label: String,
    pub(crate) sets: Vec<String>,
    pub(crate) scenario: Scenario,
    variant: String,
}

/// One run's faults drawn and loaded: what a driver carries out.
pub(crate) struct Prepared {
    pub(crate) seed: u64,
    pub(crate) faults: Vec<Drawn>,
    /// The scenario file with the faults in its phases (live instances
    /// load this text), and what the loader made of it.
    pub(crate) text: String,
    pub(crate) loaded: LoadedScenario,
    /// The variant to run, in `loaded`.
    pub(crate) variant: usize,
}

impl Prepared {
    /// The run's outcome from what the driver reports: commits acknowledged
    /// and lost from the checkers, their violations apart from the
    /// protocol's errors.
    pub(crate) fn outcome(self, o: &fusion_driver::VariantOutcome) -> RunOutcome {
        let (violations, errors): (Vec<String>, Vec<String>) =
            o.errors.iter().cloned().partition(|e| o.is_violation(e));
        let (acknowledged, lost) = o
            .check
            .as_ref()
            .map_or((0, 0), |c| (c.commits_acknowledged, c.commits_lost));
        RunOutcome {
            seed: self.seed,
            faults: self.faults,
            acknowledged,
            lost,
            violations,
            errors,
        }
    }

    /// The run could not be carried out (a live cluster failed): a
    /// protocol error of the run, with nothing counted.
    pub(crate) fn failed(self, why: String) -> RunOutcome {
        RunOutcome {
            seed: self.seed,
            faults: self.faults,
            errors: vec![why],
            ..RunOutcome::default()
        }
    }
}

impl Base {
    /// Load the scenario with `faults` added to its phases. Err: the
    /// loader's message.
    fn with(&self, faults: &[Drawn]) -> Result<LoadedScenario, String> {
        self.with_text(faults).map(|(_, loaded)| loaded)
    }

    /// [`Base::with`], and the text it loaded.
    /// The scenario with `faults` in its phases, as its text and loaded.
    pub(crate) fn with_text_of(
        &self,
        faults: &[Drawn],
    ) -> Result<(String, LoadedScenario), String> {
        self.with_text(faults)
    }

    fn with_text(&self, faults: &[Drawn]) -> Result<(String, LoadedScenario), String> {
        let text = with_faults(&self.text, faults)?;
        let loaded =
            fusion_scenario::load_str(&text, &self.label, &self.sets).map_err(|e| e.to_string())?;
        Ok((text, loaded))
    }

    fn instances(&self) -> usize {
        self.scenario.instances.len()
    }

    /// `css_misscount` of instance `i` (0-based), ns.
    fn misscount(&self, i: usize) -> Nanos {
        let s = self
            .scenario
            .instances
            .get(i)
            .map_or(30, |p| p.css_misscount);
        Nanos::from(s) * NS_PER_S
    }
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
    let base = Base {
        text,
        label,
        sets: a.sets.clone(),
        scenario: first.scenario.clone(),
        variant: first.name.clone(),
    };
    // Real processes (--live) or containers (--compose): the live runner.
    let real = a.live || a.compose.is_some();
    let (driver, flag) = match (&a.compose, a.live) {
        (Some(_), _) => ("compose", "--compose "),
        (None, true) => ("live", "--live "),
        (None, false) => ("simulator", ""),
    };
    // A kind the driver refuses is not drawn either, with its reason.
    let driver_refusal = |l: &LoadedScenario| {
        if real {
            crate::chaos::live::refusal(l)
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
    let seeds: Vec<u64> = (0..u64::from(a.runs))
        .map(|i| start.wrapping_add(i))
        .collect();
    let limit = MemoryLimit::new(a.max_memory);
    let workers = crate::pool::workers(None, seeds.len(), estimate.bytes, limit.bytes);
    let (outcomes, interrupted) = if let Some(opts) = &a.compose {
        crate::chaos::compose::run_all(&base, &drawable, &seeds, opts, err)?
    } else if a.live {
        crate::chaos::live::run_all(&base, &drawable, &seeds, err)?
    } else {
        (run_all(&base, &drawable, &seeds, workers)?, None)
    };
    let phases = &base.scenario.phases;
    let result = ChaosResult {
        scenario: loaded.name.clone(),
        driver: driver.to_string(),
        replay: replay_command(&a.scenario, flag, &a.sets),
        seed: start,
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

/// Draws at most before a run gives up finding faults the loader accepts.
const DRAWS_MAX: u32 = 50;

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

/// Draw a run's faults from its seed until the loader accepts them (the
/// same draws whichever driver carries the run out). Err: none did.
pub(crate) fn prepare(base: &Base, drawable: &[Kind], seed: u64) -> Result<Prepared, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Apart from the simulation's own streams of the same seed.
    rng.set_stream(77);
    let mut last = String::new();
    for _ in 0..DRAWS_MAX {
        let faults = draw(base, drawable, &mut rng);
        let (text, loaded) = match base.with_text(&faults) {
            Ok(l) => l,
            Err(why) => {
                last = why;
                continue;
            }
        };
        let Some(variant) = loaded.variants.iter().position(|v| v.name == base.variant) else {
            return Err(format!(
                "chaos seed {seed}: variant {} is gone",
                base.variant
            ));
        };
        return Ok(Prepared {
            seed,
            faults,
            text,
            loaded,
            variant,
        });
    }
    Err(format!(
        "chaos seed {seed}: no set of faults drawn in {DRAWS_MAX} tries loads; the last: {last}"
    ))
}

/// A number in `0..n` (0 when `n` is 0).
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    if n == 0 { 0 } else { rng.next_u64() % n }
}

/// One of `items`, if any.
fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> Option<T> {
    let n = u64::try_from(items.len()).ok()?;
    items.get(usize::try_from(below(rng, n)).ok()?).copied()
}

/// At most this many instances of `n` are ever taken down in a run.
pub fn max_down(n: usize) -> usize {
    if n < 2 { 0 } else { ((n - 1) / 2).max(1) }
}

/// 1 to 3 faults at random times of the timeline, in time order, of the
/// `drawable` kinds, keeping a majority of instances up.
fn draw(base: &Base, drawable: &[Kind], rng: &mut ChaCha8Rng) -> Vec<Drawn> {
    let phases = &base.scenario.phases;
    let total: Nanos = phases.iter().map(|p| p.duration).sum();
    let n = base.instances();
    let count = 1 + below(rng, 3);
    let mut times: Vec<Nanos> = (0..count).map(|_| below(rng, total)).collect();
    times.sort_unstable();
    // Per instance: killed (not restarted), evicted, ever taken down.
    let mut killed = vec![false; n];
    let mut evicted = vec![false; n];
    let mut victims: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for t in times {
        let Some((phase, at)) = locate(phases, t) else {
            continue;
        };
        // Milliseconds, as a file would write it.
        let at = at / NS_PER_MS * NS_PER_MS;
        let up: Vec<usize> = (0..n).filter(|&i| !killed[i] && !evicted[i]).collect();
        let can_fall: Vec<usize> = up
            .iter()
            .copied()
            .filter(|i| victims.contains(i) || victims.len() < max_down(n))
            .filter(|_| up.len() > 1)
            .collect();
        let dead: Vec<usize> = (0..n).filter(|&i| killed[i]).collect();
        let kinds: Vec<Kind> = drawable
            .iter()
            .copied()
            .filter(|k| match k {
                Kind::Kill | Kind::LongPause | Kind::Partition => !can_fall.is_empty(),
                Kind::Restart => !dead.is_empty(),
                Kind::Pause => !up.is_empty(),
                Kind::Loss => n > 1,
            })
            .collect();
        let Some(kind) = pick(rng, &kinds) else {
            continue;
        };
        let who = match kind {
            k if k.takes_down() => pick(rng, &can_fall),
            Kind::Restart => pick(rng, &dead),
            Kind::Pause => pick(rng, &up),
            _ => Some(0),
        };
        let Some(who) = who else {
            continue;
        };
        let instance = u8::try_from(who + 1).unwrap_or(u8::MAX);
        let fault = match kind {
            Kind::Kill => Fault::Kill { instance, at },
            Kind::Restart => Fault::Restart { instance, at },
            Kind::Pause => {
                // 100 ms up to 5 s, below css_misscount.
                let most = base
                    .misscount(who)
                    .saturating_sub(NS_PER_MS)
                    .clamp(100 * NS_PER_MS, 5 * NS_PER_S);
                let duration = 100 * NS_PER_MS + below(rng, most / NS_PER_MS - 99) * NS_PER_MS;
                Fault::Pause {
                    instance,
                    at,
                    duration: duration.min(most),
                }
            }
            Kind::LongPause => Fault::Pause {
                instance,
                at,
                duration: base.misscount(who) + below(rng, 5_000) * NS_PER_MS,
            },
            Kind::Loss => Fault::Loss {
                target: random_target(rng, n),
                loss_ppm: 10_000 * u32::try_from(1 + below(rng, 20)).unwrap_or(1),
                correlation_ppm: 0,
            },
            Kind::Partition => Fault::Partition {
                target: LinkTarget::Instance(instance),
                direction: Direction::Both,
            },
        };
        match kind {
            Kind::Kill => killed[who] = true,
            Kind::Restart => killed[who] = false,
            Kind::LongPause | Kind::Partition => evicted[who] = true,
            _ => {}
        }
        if kind.takes_down() && !victims.contains(&who) {
            victims.push(who);
        }
        out.push(Drawn { kind, phase, fault });
    }
    out
}

/// All links, one instance's, or one link (one direction).
fn random_target(rng: &mut ChaCha8Rng, n: usize) -> LinkTarget {
    let inst = |rng: &mut ChaCha8Rng| {
        u8::try_from(1 + below(rng, u64::try_from(n).unwrap_or(1))).unwrap_or(1)
    };
    match below(rng, 3) {
        0 => LinkTarget::All,
        1 => LinkTarget::Instance(inst(rng)),
        _ => {
            let from = inst(rng);
            let mut to = inst(rng);
            if to == from {
                to = if from as usize >= n { 1 } else { from + 1 };
            }
            LinkTarget::Link { from, to }
        }
    }
}

/// The phase (index) that holds timeline time `t`, and `t` from its start.
fn locate(phases: &[fusion_scenario::Phase], t: Nanos) -> Option<(usize, Nanos)> {
    let mut start: Nanos = 0;
    for (i, p) in phases.iter().enumerate() {
        if t < start + p.duration {
            return Some((i, t - start));
        }
        start += p.duration;
    }
    None
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
    let text = with_faults(&base.text, &run.faults).map_err(Failure::input)?;
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

/// Try each kind once on the scenario: the kinds the loader accepts, and
/// for the others the loader's reason (its first message). `driver` says
/// whether the driver that carries the runs out refuses a
/// scenario the loader accepted (its reason).
fn drawable_kinds(
    base: &Base,
    driver: &dyn Fn(&LoadedScenario) -> Result<(), String>,
) -> (Vec<Kind>, Vec<(Kind, String)>) {
    let n = base.instances();
    let last = u8::try_from(n).unwrap_or(u8::MAX);
    let phase = base
        .scenario
        .phases
        .iter()
        .position(|p| p.duration > 0)
        .unwrap_or(0);
    let half = base
        .scenario
        .phases
        .get(phase)
        .map_or(0, |p| p.duration / 2)
        / NS_PER_MS
        * NS_PER_MS;
    let misscount = base.misscount(n.saturating_sub(1));
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for &kind in Kind::ALL {
        let mut faults = vec![];
        let mut add = |fault: Fault| faults.push(Drawn { kind, phase, fault });
        if n < 2 || (kind.takes_down() && max_down(n) == 0) {
            refused.push((kind, "the cluster has a single instance".to_string()));
            continue;
        }
        match kind {
            Kind::Kill => add(Fault::Kill {
                instance: last,
                at: 0,
            }),
            Kind::Restart => {
                add(Fault::Kill {
                    instance: last,
                    at: 0,
                });
                add(Fault::Restart {
                    instance: last,
                    at: half,
                });
            }
            Kind::Pause => add(Fault::Pause {
                instance: last,
                at: 0,
                duration: (misscount / 2).max(NS_PER_MS),
            }),
            Kind::LongPause => add(Fault::Pause {
                instance: last,
                at: 0,
                duration: misscount,
            }),
            Kind::Loss => add(Fault::Loss {
                target: LinkTarget::All,
                loss_ppm: 10_000,
                correlation_ppm: 0,
            }),
            Kind::Partition => add(Fault::Partition {
                target: LinkTarget::Instance(last),
                direction: Direction::Both,
            }),
        }
        match base.with(&faults).and_then(|l| driver(&l)) {
            Ok(()) => ok.push(kind),
            // Its probe kills first: say so when that is what was refused.
            Err(why) if kind == Kind::Restart && refused.iter().any(|r| r.0 == Kind::Kill) => {
                refused.push((kind, format!("it follows a kill, and {}", reason(&why))));
            }
            Err(why) => refused.push((kind, reason(&why))),
        }
    }
    (ok, refused)
}

/// The heart of a loader message: its first line, without the place.
fn reason(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    // `file:line:col: `key`: what` -> `what`
    match line.split_once("`: ") {
        Some((_, what)) => what.to_string(),
        None => line.to_string(),
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

    const TEXT: &str = r#"[scenario]
name = "c"
title = "chaos"
[cluster]
instances = 5
[[table]]
name = "t"
rows = 200
rows_per_block = 20
[[index]]
name = "t_pk"
table = "t"
[[workload]]
name = "w"
instances = "all"
sessions_per_instance = 1
think_time_ms = 5
[[workload.transaction]]
name = "x"
steps = [{ op = "read", table = "t", via = "t_pk" }, { op = "commit" }]
[[phase]]
name = "a"
duration_s = 2
[[phase]]
name = "b"
duration_s = 3
[[phase.fault]]
kind = "stress_cpu"
instance = 1
workers = 1
"#;

    fn base() -> Base {
        let loaded =
            fusion_scenario::load_str(TEXT, "c.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        Base {
            text: TEXT.to_string(),
            label: "c.toml".into(),
            sets: Vec::new(),
            scenario: loaded.variants[0].scenario.clone(),
            variant: loaded.variants[0].name.clone(),
        }
    }

    /// Whatever is drawable, a run never takes down more than its budget,
    /// restarts only what it killed, and leaves someone up.
    #[test]
    fn draws_keep_a_majority_up_and_restart_only_the_killed() {
        let b = base();
        for seed in 0..300 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let faults = draw(&b, Kind::ALL, &mut rng);
            assert!((1..=3).contains(&faults.len()) || faults.is_empty());
            let (mut killed, mut victims) = (vec![false; 5], Vec::new());
            for d in &faults {
                let inst = match d.fault {
                    Fault::Kill { instance, .. }
                    | Fault::Restart { instance, .. }
                    | Fault::Pause { instance, .. } => usize::from(instance) - 1,
                    Fault::Partition {
                        target: LinkTarget::Instance(i),
                        ..
                    } => usize::from(i) - 1,
                    _ => continue,
                };
                match d.kind {
                    Kind::Restart => assert!(killed[inst], "seed {seed}: {faults:?}"),
                    Kind::Kill => killed[inst] = true,
                    _ => {}
                }
                if d.kind == Kind::Restart {
                    killed[inst] = false;
                }
                if d.kind.takes_down() && !victims.contains(&inst) {
                    victims.push(inst);
                }
            }
            assert!(victims.len() <= max_down(5), "seed {seed}: {faults:?}");
        }
        assert_eq!(
            (max_down(1), max_down(2), max_down(3), max_down(5)),
            (0, 1, 1, 2)
        );
    }

    /// A drawn fault written into the file is the fault the loader reads
    /// back (or one it refuses as not runnable yet, by its kind).
    #[test]
    fn faults_written_into_the_file_load_back_as_drawn() {
        let b = base();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..100 {
            let faults = draw(&b, Kind::ALL, &mut rng);
            match b.with(&faults) {
                Ok(l) => {
                    let phases = &l.variants[0].scenario.phases;
                    for d in &faults {
                        assert!(phases[d.phase].faults.contains(&d.fault), "{d:?}");
                    }
                }
                Err(why) => assert!(
                    why.contains("cannot run yet") || why.contains("css_misscount"),
                    "{why}"
                ),
            }
        }
    }
}
