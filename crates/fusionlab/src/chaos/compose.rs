//! `fusionlab chaos --compose SCENARIO --runs N`: the simulator's chaos
//! runs (the same draws from the same seeds, see [`crate::chaos`]) carried
//! out on the compose cluster of `cluster/docker-compose.yml`, one project
//! per run ([`crate::chaos::compose_project`]): `kill` is `docker kill`, `pause`
//! `docker pause` then `unpause`, `restart` `docker start`, `partition`
//! `docker network disconnect` of the instance from the interconnect
//! network for the phase (the real partition: the hosts drop nothing for
//! it), `loss` the live interconnect's, as `--live` does it. The runner
//! stays on the host, checks every run as `--live` does, and brings the
//! project down before the next run.

use std::io::Write;

use anyhow::{Context, Result};
use fusion_live::lives::ProcessControl;
use fusion_live::runner::LiveRun;
use fusion_scenario::{Fault, LinkTarget};

use crate::Failure;
use crate::chaos::compose_project::{ComposeOpts, Project, engine_answers};
use crate::chaos::drawn::{Drawn, Kind};
use crate::chaos::live::announce;
use crate::chaos::prepare::{Base, Prepared, RunOutcome, prepare};
use crate::live::interrupt::{Interruption, Interrupts};
use crate::live::{Ended, run_until_interrupted};

const WHAT: &str = "fusionlab chaos --compose";

/// The instance (0-based) a drawn partition cuts off, if it is one.
fn cut_of(d: &Drawn) -> Option<(usize, usize)> {
    match d.fault {
        Fault::Partition {
            target: LinkTarget::Instance(i),
            ..
        } => Some((d.phase, usize::from(i).checked_sub(1)?)),
        _ => None,
    }
}

/// A run's scenario text as the instances load it, what the loader made
/// of it, and the (phase, instance) cuts the containers carry out.
type Unpartitioned = (String, fusion_scenario::LoadedScenario, Vec<(usize, usize)>);

/// The run as the instances load it: its partitions taken out of the
/// scenario (the containers are cut off instead), with the phases and
/// instances they cut.
fn without_partitions(base: &Base, run: &Prepared) -> Result<Unpartitioned, String> {
    let cuts: Vec<(usize, usize)> = run.faults.iter().filter_map(cut_of).collect();
    if cuts.is_empty() {
        return Ok((run.text.clone(), run.loaded.clone(), cuts));
    }
    let rest: Vec<Drawn> = run
        .faults
        .iter()
        .filter(|d| cut_of(d).is_none())
        .cloned()
        .collect();
    let (text, loaded) = base.with_text_of(&rest)?;
    Ok((text, loaded, cuts))
}

/// Carry out the run of each seed, one after the other, each on a compose
/// project of its own. Returns the outcomes in seed order, and the signal
/// that cut the campaign short.
pub(crate) fn run_all(
    base: &Base,
    drawable: &[Kind],
    seeds: &[u64],
    opts: &ComposeOpts,
    err: &mut dyn Write,
) -> Result<(Vec<RunOutcome>, Option<Interruption>)> {
    engine_answers()
        .map_err(|e| Failure::input(format!("{WHAT}: no Docker engine answers: {e}")))?;
    let interrupts = Interrupts::install()?;
    let needed = base.scenario.instances.len();
    let mut outcomes = Vec::with_capacity(seeds.len());
    for (i, &seed) in seeds.iter().enumerate() {
        if let Some(s) = interrupts.received() {
            return Ok((outcomes, Some(s)));
        }
        let run = prepare(base, drawable, seed).map_err(Failure::input)?;
        announce(err, WHAT, (i, seeds.len()), seed, &run)?;
        let (text, loaded, cuts) = without_partitions(base, &run).map_err(Failure::input)?;
        let project = match Project::start(opts, needed, seed, cuts) {
            Ok(p) => p,
            Err(e) => {
                outcomes.push(run.failed(format!("the compose cluster did not start: {e}")));
                continue;
            }
        };
        let c = project.cluster();
        let ended = run_until_interrupted(
            &interrupts,
            &loaded,
            &LiveRun {
                interval_ns: fusion_driver::series::DEFAULT_INTERVAL_NS,
                cluster: &c,
                text: &text,
                label: &base.label,
                overrides: &base.sets,
                seed: Some(seed),
                check: true,
                progress: false,
                control: Some(&project as &dyn ProcessControl),
                hold: None,
            },
        );
        let outcome = match ended {
            Err(e) => {
                let _ = project.down(true);
                return Err(e);
            }
            Ok(Ended::Interrupted(s)) => {
                let _ = project.down(false);
                return Ok((outcomes, Some(s)));
            }
            Ok(Ended::Ran(Ok((_, variants)))) => match variants.first() {
                Some(o) => {
                    carried_out(err, seed, &loaded, o)?;
                    run.outcome(o)
                }
                None => run.failed("the live run reported no variant".into()),
            },
            Ok(Ended::Ran(Err(failure))) => {
                run.failed(format!("the compose cluster failed: {}", failure.message))
            }
        };
        writeln!(
            err,
            "{WHAT}: seed {seed}: {} acknowledged, {} lost, {} violations, {} protocol errors",
            outcome.acknowledged,
            outcome.lost,
            outcome.violations.len(),
            outcome.errors.len()
        )?;
        let dir = project.dir().to_path_buf();
        match project.down(outcome.failed()) {
            Ok(Some(kept)) => {
                writeln!(err, "{WHAT}: the services' logs kept in {}", kept.display())?
            }
            Ok(None) => {}
            Err(e) => writeln!(
                err,
                "{WHAT}: seed {seed}: bringing the project down failed ({}): {e}",
                dir.display()
            )?,
        }
        outcomes.push(outcome);
    }
    Ok((outcomes, None))
}

/// Say how each network fault of the run was carried out (the kernel in
/// the containers' namespaces, or the instances), as its alert log does.
fn carried_out(
    err: &mut dyn Write,
    seed: u64,
    loaded: &fusion_scenario::LoadedScenario,
    o: &fusion_driver::VariantOutcome,
) -> std::io::Result<()> {
    let Some(v) = loaded.variants.first() else {
        return Ok(());
    };
    for (phase, ran) in v.scenario.phases.iter().zip(&o.result.phases) {
        for line in fusion_live::netfault::carried_out(phase, &ran.alert_log) {
            writeln!(err, "{WHAT}: seed {seed}: {line}")?;
        }
    }
    Ok(())
}

/// The compose file and image: `--compose-file` (default
/// `cluster/docker-compose.yml` under the current directory) and
/// `--image` (default FUSIONLAB_IMAGE, else `fusionlab:local`).
pub(crate) fn opts(file: Option<std::path::PathBuf>, image: Option<String>) -> Result<ComposeOpts> {
    let file = match file {
        Some(f) => f,
        None => std::env::current_dir()
            .context("cannot find the current directory")?
            .join("cluster/docker-compose.yml"),
    };
    let image = image
        .or_else(|| std::env::var("FUSIONLAB_IMAGE").ok())
        .unwrap_or_else(|| "fusionlab:local".to_string());
    Ok(ComposeOpts { file, image })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_scenario::Direction;

    #[test]
    fn a_partition_of_one_instance_is_a_cut_of_its_container_for_the_phase() {
        let d = |phase, fault| Drawn {
            kind: Kind::Partition,
            phase,
            fault,
        };
        let cut = d(
            2,
            Fault::Partition {
                target: LinkTarget::Instance(3),
                direction: Direction::Both,
            },
        );
        assert_eq!(cut_of(&cut), Some((2, 2)));
        let kill = Drawn {
            kind: Kind::Kill,
            phase: 1,
            fault: Fault::Kill { instance: 1, at: 0 },
        };
        assert_eq!(cut_of(&kill), None);
    }
}
