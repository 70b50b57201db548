//! `fusionlab chaos --live SCENARIO --runs N`: the simulator's chaos runs
//! (the same draws from the same seeds, see [`crate::chaos`]) carried out
//! on real processes. Each run starts a private local cluster (a block
//! store and one process per instance on 127.0.0.1), runs the drawn
//! variant with the checkers on, `kill` as SIGKILL, `pause` as SIGSTOP and
//! SIGCONT, `restart` as a new process, `loss` and `partition` on the live
//! interconnect, then stops the cluster (its logs kept when the run
//! failed) before the next run. Runs are one after the other: they take
//! real time.
//!
//! The seed fixes a run's faults and their times, not the interleaving of
//! real processes: a live run is not replayed byte for byte.
//!
//! A cluster that fails for a reason the run did not ask for (an instance
//! dies unasked, stops answering) is a protocol error of that run, with
//! its message, and the campaign goes on. SIGINT or SIGTERM stops the
//! cluster of the run under way and ends the campaign with the runs done.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fusion_driver::Driver;
use fusion_live::cluster::ClusterFile;
use fusion_live::lives::{LocalProcesses, ProcessControl};
use fusion_live::runner::LiveRun;
use fusion_scenario::LoadedScenario;

use crate::Failure;
use crate::chaos::drawn::Kind;
use crate::chaos::prepare::{Base, RunOutcome, prepare};
use crate::live::interrupt::{Interruption, Interrupts};
use crate::live::swarm::SwarmControl;
use crate::live::{Ended, RunEnd, cluster_for, leave_cluster, run_until_interrupted};

const WHAT: &str = "fusionlab chaos --live";

/// A running cluster every run uses (`--cluster FILE`), and how the runner
/// reaches its processes: their pids on this host, a Swarm stack
/// (`--swarm`), or not at all (kill, pause and restart not drawn).
pub(crate) struct Given {
    file: PathBuf,
    swarm: Option<SwarmControl>,
    /// Why the runner cannot signal the cluster's processes, if it cannot.
    unsignalled: Option<String>,
}

impl Given {
    pub(crate) fn new(file: Option<&Path>, swarm: Option<&str>) -> Result<Option<Given>> {
        let Some(file) = file else {
            return Ok(None);
        };
        let c = ClusterFile::read(file).map_err(Failure::input)?;
        let swarm = match swarm {
            Some(stack) => Some(SwarmControl::new(stack, &c).map_err(Failure::input)?),
            None => None,
        };
        let exe = std::env::current_exe().context("cannot find this program's path")?;
        let unsignalled = match (&swarm, LocalProcesses::new(&c, exe)) {
            (None, Err(why)) => Some(why),
            _ => None,
        };
        Ok(Some(Given {
            file: file.to_path_buf(),
            swarm,
            unsignalled,
        }))
    }
}

/// The progress line before run `i` (0-based) of `runs`, on stderr:
/// real-time runs take seconds each, so the user sees where the campaign is.
pub(crate) fn announce(
    err: &mut dyn Write,
    what: &str,
    (i, runs): (usize, usize),
    seed: u64,
    run: &crate::chaos::prepare::Prepared,
) -> std::io::Result<()> {
    let n = run.faults.len();
    writeln!(
        err,
        "{what}: run {} of {runs} (seed {seed}), {n} fault{}",
        i + 1,
        if n == 1 { "" } else { "s" }
    )
}

/// Err: the live driver cannot carry out `loaded`'s faults (why): on a
/// cluster of its own it signals every process; on a given one only what
/// its pids or its Swarm stack let it.
pub(crate) fn refusal(loaded: &LoadedScenario, given: Option<&Given>) -> Result<(), String> {
    match given.and_then(|g| g.unsignalled.as_deref()) {
        Some(why) => {
            fusion_driver::fault_refusal(loaded, Driver::Live).map_err(|e| format!("{e} ({why})"))
        }
        None => Ok(()),
    }
}

/// Carry out the run of each seed, one after the other, each on a cluster
/// of its own. Returns the outcomes in seed order, and the signal that cut
/// the campaign short (the runs done before it are returned).
pub(crate) fn run_all(
    base: &Base,
    drawable: &[Kind],
    seeds: &[u64],
    given: Option<&Given>,
    err: &mut dyn Write,
) -> Result<(Vec<RunOutcome>, Option<Interruption>)> {
    // Caught from before the first cluster starts, so that a Ctrl-C at any
    // point stops what this command started.
    let interrupts = Interrupts::install()?;
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let needed = base.scenario.instances.len();
    let mut outcomes = Vec::with_capacity(seeds.len());
    for (i, &seed) in seeds.iter().enumerate() {
        if let Some(s) = interrupts.received() {
            return Ok((outcomes, Some(s)));
        }
        let run = prepare(base, drawable, seed).map_err(Failure::input)?;
        announce(err, WHAT, (i, seeds.len()), seed, &run)?;
        let (c, own) = match cluster_for(given.map(|g| g.file.as_path()), needed, WHAT, err) {
            Ok(started) => started,
            Err(e) => {
                outcomes.push(run.failed(format!("the cluster did not start: {e:#}")));
                continue;
            }
        };
        let control = LocalProcesses::new(&c, exe.clone())
            .ok()
            .filter(|_| given.is_none_or(|g| g.swarm.is_none()))
            .map(|p| match given {
                Some(g) => p.with_file(g.file.clone()),
                None => p,
            });
        let swarm = given.and_then(|g| g.swarm.as_ref());
        let ended = run_until_interrupted(
            &interrupts,
            &run.loaded,
            &LiveRun {
                interval_ns: fusion_driver::series::DEFAULT_INTERVAL_NS,
                cluster: &c,
                text: &run.text,
                label: &base.label,
                overrides: &base.sets,
                seed: Some(seed),
                check: true,
                progress: false,
                control: match swarm {
                    Some(s) => Some(s as &dyn ProcessControl),
                    None => control.as_ref().map(|p| p as &dyn ProcessControl),
                },
                hold: None,
            },
        );
        // With the instances restarted during the run, not the first ones.
        let c = control.as_ref().and_then(|p| p.cluster().ok()).unwrap_or(c);
        // The next run starts on the stack as deployed.
        if let Some(Err(e)) = swarm.map(|s| s.restore(c.instances.len())) {
            writeln!(err, "{WHAT}: --swarm: {e}")?;
        }
        let (outcome, end) = match ended {
            Err(e) => {
                leave_cluster(&c, own.as_deref(), RunEnd::Failed, WHAT, err)?;
                return Err(e);
            }
            Ok(Ended::Interrupted(s)) => {
                leave_cluster(&c, own.as_deref(), RunEnd::Interrupted, WHAT, err)?;
                return Ok((outcomes, Some(s)));
            }
            Ok(Ended::Ran(Ok((_, variants)))) => match variants.first() {
                Some(o) => (run.outcome(o), RunEnd::Completed),
                None => (
                    run.failed("the live run reported no variant".into()),
                    RunEnd::Failed,
                ),
            },
            Ok(Ended::Ran(Err(failure))) => (
                run.failed(format!("the live cluster failed: {}", failure.message)),
                RunEnd::Failed,
            ),
        };
        // A run that lost, broke or failed keeps its cluster's logs.
        let end = if outcome.failed() {
            RunEnd::Failed
        } else {
            end
        };
        writeln!(
            err,
            "{WHAT}: seed {seed}: {} acknowledged, {} lost, {} violations, {} protocol errors",
            outcome.acknowledged,
            outcome.lost,
            outcome.violations.len(),
            outcome.errors.len()
        )?;
        leave_cluster(&c, own.as_deref(), end, WHAT, err)?;
        outcomes.push(outcome);
    }
    Ok((outcomes, None))
}
