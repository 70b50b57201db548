//! `fusionlab tour --live`: the myth tour on a live cluster. The same myths
//! as the simulator's tour, one after the other, each as `run --live` runs
//! it: on a fresh local cluster of the instances it needs (or on the
//! cluster `--cluster FILE` names), each variant's phases in real time; the
//! same blocks and summary table.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use fusion_driver::Driver;
use fusion_live::runner::{self, LiveRun};
use fusion_scenario::LoadedScenario;

use crate::live::{cluster_for, runtime, stop_cluster};
use crate::tour::{
    MythRun, TourArgs, measurable_by, shipped_myths, show_run, tour_header, tour_summary,
};
use crate::{exit, shipped};

/// Run every shipped myth live. A myth the given cluster is too small for is
/// left out with a message; a live failure stops the tour (the summary shows
/// the myths that ran).
pub fn tour_live(
    args: &TourArgs,
    cluster: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let (myths, mut broken) = shipped_myths();
    // A myth with a figure a live cluster does not measure is left out, as
    // one that does not load: its verdict would rest on a 0.
    let myths = measurable_by(Driver::Live, myths, &mut broken);
    for b in &broken {
        writeln!(err, "{b}")?;
    }
    let needs = |m: &LoadedScenario| {
        m.variants
            .iter()
            .map(|v| v.scenario.instances.len())
            .max()
            .unwrap_or(1)
    };
    let given = match cluster {
        Some(f) => Some(cluster_for(Some(f), 0, "fusionlab tour --live", err)?.0),
        None => None,
    };
    let total = myths.len();
    tour_header(total, "on a live cluster, in real time", out)?;
    let (mut runs, mut skipped, mut failed) = (Vec::new(), 0, None);
    for (i, loaded) in myths.into_iter().enumerate() {
        if let Some(c) = &given
            && needs(&loaded) > c.instances.len()
        {
            writeln!(
                err,
                "fusionlab tour --live: {} cannot run on this cluster: it needs {} instances, the cluster has {}",
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
        // A fresh cluster per myth unless one was given, as `run --live`.
        let (c, own) = match &given {
            Some(c) => (c.clone(), None),
            None => cluster_for(None, needs(&loaded), "fusionlab tour --live", err)?,
        };
        let label = source.label();
        let rt = runtime()?;
        let ran = rt.block_on(runner::run(
            &loaded,
            &LiveRun {
                cluster: &c,
                text: source.text,
                label: &label,
                overrides: &[],
                seed: args.seed,
                check: false,
                control: None,
                progress: true,
            },
        ));
        drop(rt);
        if let Some((c, cluster_dir)) = own {
            stop_cluster(&c);
            if ran.is_ok() {
                let _ = std::fs::remove_dir_all(cluster_dir);
            } else {
                writeln!(err, "logs of the cluster kept in {}", cluster_dir.display())?;
            }
        }
        match ran {
            Ok((result, outcomes)) => {
                let run = MythRun::new(loaded, result, &outcomes);
                show_run(i, total, &run, args, out, err)?;
                runs.push(run);
            }
            Err(e) => {
                failed = Some(format!("fusionlab tour --live: {}: {e}", loaded.name));
                break;
            }
        }
    }
    tour_summary(&runs, args.seed, out)?;
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
