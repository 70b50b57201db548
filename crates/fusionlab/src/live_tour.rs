//! `fusionlab tour --live`: the myth tour on a live cluster. The same myths
//! as the simulator's tour, one after the other, each as `run --live` runs
//! it: on a fresh local cluster of the instances it needs (or on the
//! cluster `--cluster FILE` names), each variant's phases in real time; the
//! same blocks and summary table.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use fusion_driver::Driver;
use fusion_live::runner::LiveRun;
use fusion_scenario::LoadedScenario;

use crate::interrupt::Interrupts;
use crate::live::{Ended, cluster_for, leave_cluster, run_until_interrupted};
use crate::tour::{
    MythRun, TourArgs, measurable_by, shipped_myths, show_run, tour_header, tour_summary,
};
use crate::{exit, shipped};

/// Run every shipped myth live. A myth the given cluster is too small for is
/// left out with a message; a live failure, SIGINT or SIGTERM stops the tour
/// (the summary shows the myths that ran; a signal's exit status is 128 plus
/// its number), stopping the cluster it started or quiescing the one given.
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
    let myths = measurable_by(Driver::Live, myths, &mut broken);
    for b in &broken {
        writeln!(err, "{b}")?;
    }
    let needs = |m: &LoadedScenario| m.instances_max().max(1);
    let given = match cluster {
        Some(f) => Some(cluster_for(Some(f), 0, WHAT, err)?.0),
        None => None,
    };
    // Caught from here on, between myths as well as during one.
    let interrupts = Interrupts::install()?;
    let html = crate::report::HtmlFile::create(args.html.as_deref())?;
    let mut interrupted = None;
    let total = myths.len();
    tour_header(total, "on a live cluster, in real time", out)?;
    let (mut runs, mut skipped, mut failed) = (Vec::new(), 0, None);
    for (i, loaded) in myths.into_iter().enumerate() {
        if let Some(c) = &given
            && needs(&loaded) > c.instances.len()
        {
            writeln!(
                err,
                "{WHAT}: {} cannot run on this cluster: it needs {} instances, the cluster has {}",
                loaded.name,
                needs(&loaded),
                c.instances.len()
            )?;
            skipped += 1;
            continue;
        }
        let Some(source) = shipped::find(&loaded.name) else {
            continue;
        };
        if let Some(s) = interrupts.received() {
            interrupted = Some(s);
            break;
        }
        // A fresh cluster per myth unless one was given, as `run --live`.
        let (c, own) = match &given {
            Some(c) => (c.clone(), None),
            None => cluster_for(None, needs(&loaded), WHAT, err)?,
        };
        let label = source.label();
        let ended = run_until_interrupted(
            &interrupts,
            &loaded,
            &LiveRun {
                cluster: &c,
                text: source.text,
                label: &label,
                overrides: &[],
                seed: args.seed,
                interval_ns: args.interval_ns(),
                check: false,
                control: None,
                hold: None,
                progress: true,
            },
        );
        let end = ended
            .as_ref()
            .map_or(crate::live::RunEnd::Failed, Ended::end);
        leave_cluster(&c, own.as_deref(), end, WHAT, err)?;
        match ended? {
            Ended::Ran(Ok((result, outcomes))) => {
                let run = MythRun::new(loaded, result, &outcomes);
                show_run(i, total, &run, args, out, err)?;
                runs.push(run);
            }
            Ended::Ran(Err(e)) => {
                failed = Some(format!("{WHAT}: {}: {e}", loaded.name));
                break;
            }
            Ended::Interrupted(s) => {
                interrupted = Some(s);
                break;
            }
        }
    }
    tour_summary(&runs, args.seed, out)?;
    if let Some(h) = html {
        crate::tour::write_tour_html(h, &runs, args)?;
    }
    if let Some(s) = interrupted {
        writeln!(err, "{WHAT}: interrupted by {s}")?;
        return Ok(s.exit_status());
    }
    if let Some(f) = failed {
        writeln!(err, "{f}")?;
        return Ok(exit::LIVE_FAILED);
    }
    Ok(if skipped > 0 || !broken.is_empty() {
        exit::INVALID
    } else {
        exit::OK
    })
}

const WHAT: &str = "fusionlab tour --live";
