//! `fusionlab tour --live`: the myth tour on a live cluster. The same myths
//! as the simulator's tour, one after the other on one cluster (started
//! here with as many instances as the largest myth needs, or the one
//! `--cluster FILE` names), each variant's phases in real time; the same
//! blocks and summary table.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use fusion_driver::Driver;
use fusion_live::cluster::ClusterFile;
use fusion_live::lives::{LocalProcesses, ProcessControl};
use fusion_live::runner::LiveRun;
use fusion_scenario::LoadedScenario;

use crate::live::interrupt::{Interruption, Interrupts};
use crate::live::{Ended, RunEnd, cluster_for, leave_cluster, run_until_interrupted};
use crate::tour::{
    MythRun, TourArgs, measurable_by, shipped_myths, show_run, tour_header, tour_summary,
};
use crate::{exit, shipped};

/// Run every shipped myth live, all on one cluster. A myth the given
/// cluster is too small for is left out with a message; a live failure,
/// SIGINT or SIGTERM stops the tour (the summary shows the myths that ran; a
/// signal's exit status is 128 plus its number), stopping the cluster it
/// started or quiescing the one given.
pub fn tour_live(
    args: &TourArgs,
    cluster: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    // The myths only: the part inside one node runs on the simulator
    // (`fusionlab tour`); each of its scenarios runs live on its own.
    let (myths, mut broken) = shipped_myths();
    // A myth with a figure a live cluster does not measure is left out, as
    // one that does not load: its verdict would rest on a 0.
    let myths: Vec<LoadedScenario> = myths
        .into_iter()
        .filter(|m| match fusion_driver::refusal(m, Driver::Live) {
            Ok(()) => true,
            Err(why) => {
                broken.push(why);
                false
            }
        })
        .collect();
    let largest = myths.iter().map(needs).max().unwrap_or(1);
    let html = crate::run::report::HtmlFile::create(args.html.as_deref())?;
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    // Caught from here on, between myths as well as during one, and while
    // the cluster starts.
    let interrupts = Interrupts::install()?;
    // One cluster for every myth: the given one, or one started here and
    // stopped at the end whatever happens (its logs kept if a myth failed).
    let (c, own) = cluster_for(cluster, largest, WHAT, err)?;
    // Its processes killed, frozen and restarted by pid for the myths that
    // ask (the cluster file kept up to date); a cluster without pids
    // (containers) cannot, and those myths are left out.
    let control = LocalProcesses::new(&c, exe).ok().map(|p| match cluster {
        Some(f) => p.with_file(f.to_path_buf()),
        None => p,
    });
    let myths = if control.is_some() {
        myths
    } else {
        measurable_by(Driver::Live, myths, &mut broken)
    };
    for b in &broken {
        writeln!(err, "{b}")?;
    }
    let toured = tour_on(
        &c,
        control.as_ref().map(|p| p as &dyn ProcessControl),
        &interrupts,
        myths,
        args,
        out,
        err,
    );
    let end = toured.as_ref().map_or(RunEnd::Failed, |t| t.end);
    // With the instances restarted during the tour, not the first ones.
    let c = control.as_ref().and_then(|p| p.cluster().ok()).unwrap_or(c);
    leave_cluster(&c, own.as_deref(), end, WHAT, err)?;
    let t = toured?;
    tour_summary(&t.runs, args.seed, out)?;
    if let Some(h) = html {
        crate::tour::write_tour_html(h, &t.runs, args)?;
    }
    if let Some(s) = t.interrupted {
        writeln!(err, "{WHAT}: interrupted by {s}")?;
        return Ok(s.exit_status());
    }
    if let Some(f) = t.failed {
        writeln!(err, "{f}")?;
        return Ok(exit::LIVE_FAILED);
    }
    Ok(if t.skipped > 0 || !broken.is_empty() {
        exit::INVALID
    } else {
        exit::OK
    })
}

fn needs(m: &LoadedScenario) -> usize {
    m.instances_max().max(1)
}

/// What the myths did on the cluster.
struct Toured {
    runs: Vec<MythRun>,
    skipped: usize,
    failed: Option<String>,
    interrupted: Option<Interruption>,
    /// How the cluster is left.
    end: RunEnd,
}

/// Run the myths one after the other on `c`, until one fails or a signal
/// comes.
fn tour_on(
    c: &ClusterFile,
    control: Option<&dyn ProcessControl>,
    interrupts: &Interrupts,
    myths: Vec<LoadedScenario>,
    args: &TourArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Toured> {
    let total = myths.len();
    tour_header(total, "on a live cluster, in real time", out)?;
    let mut t = Toured {
        runs: Vec::new(),
        skipped: 0,
        failed: None,
        interrupted: None,
        end: RunEnd::Completed,
    };
    for (i, loaded) in myths.into_iter().enumerate() {
        if needs(&loaded) > c.instances.len() {
            writeln!(
                err,
                "{WHAT}: {} cannot run on this cluster: it needs {} instances, the cluster has {}",
                loaded.name,
                needs(&loaded),
                c.instances.len()
            )?;
            t.skipped += 1;
            continue;
        }
        let Some(source) = shipped::find(&loaded.name) else {
            continue;
        };
        if let Some(s) = interrupts.received() {
            t.interrupted = Some(s);
            t.end = RunEnd::Interrupted;
            break;
        }
        let label = source.label();
        let ended = run_until_interrupted(
            interrupts,
            &loaded,
            &LiveRun {
                cluster: c,
                text: source.text,
                label: &label,
                overrides: &[],
                seed: args.seed,
                interval_ns: args.interval_ns(),
                check: false,
                control,
                hold: None,
                progress: true,
            },
        )?;
        t.end = ended.end();
        match ended {
            Ended::Ran(Ok((result, outcomes))) => {
                let run = MythRun::new(loaded, result, &outcomes);
                show_run(i, total, &run, args, out, err)?;
                t.runs.push(run);
            }
            Ended::Ran(Err(e)) => {
                t.failed = Some(format!("{WHAT}: {}: {e}", loaded.name));
                break;
            }
            Ended::Interrupted(s) => {
                t.interrupted = Some(s);
                break;
            }
        }
    }
    Ok(t)
}

const WHAT: &str = "fusionlab tour --live";
