//! `fusionlab tour --live`: the myth tour on a live cluster. The same myths
//! as the simulator's tour, one after the other on one cluster (started here
//! with as many instances as the largest myth needs, or `--cluster FILE`),
//! each variant's phases in real time; the same blocks and summary table.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use fusion_live::runner::{self, LiveRun};

use crate::live::{cluster_for, runtime, stop_cluster};
use crate::tour::{MythRun, TourArgs, shipped_myths, show_run, tour_header, tour_summary};
use crate::{exit, shipped};

/// Run every shipped myth live. A myth the cluster is too small for is left
/// out with a message; a live failure stops the tour (the summary shows the
/// myths that ran).
pub fn tour_live(
    args: &TourArgs,
    cluster: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let (myths, broken) = shipped_myths();
    for b in &broken {
        writeln!(err, "{b}")?;
    }
    let needs = |m: &fusion_scenario::LoadedScenario| {
        m.variants
            .iter()
            .map(|v| v.scenario.instances.len())
            .max()
            .unwrap_or(1)
    };
    let needed = myths.iter().map(needs).max().unwrap_or(1);
    let (c, own) = cluster_for(cluster, needed, "fusionlab tour --live", err)?;
    let total = myths.len();
    tour_header(total, "on a live cluster, in real time", out)?;
    let rt = runtime()?;
    let (mut runs, mut skipped, mut failed) = (Vec::new(), 0, None);
    for (i, loaded) in myths.into_iter().enumerate() {
        if needs(&loaded) > c.instances.len() {
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
        let label = source.label();
        let ran = rt.block_on(runner::run(
            &loaded,
            &LiveRun {
                cluster: &c,
                text: source.text,
                label: &label,
                overrides: &[],
                seed: args.seed,
                check: false,
                progress: true,
            },
        ));
        match ran {
            Ok((result, outcomes)) => {
                let summary = outcomes
                    .iter()
                    .map(|o| {
                        format!(
                            "ran live {}: {} block transfers\n",
                            o.result.name, o.transfers
                        )
                    })
                    .collect();
                let run = MythRun {
                    loaded,
                    result,
                    summary,
                    errors: Vec::new(),
                };
                show_run(i, total, &run, args, out, err)?;
                runs.push(run);
            }
            Err(e) => {
                failed = Some(format!("fusionlab tour --live: {}: {e}", loaded.name));
                break;
            }
        }
    }
    drop(rt);
    tour_summary(&runs, args.seed, out)?;
    if let Some((c, dir)) = own {
        stop_cluster(&c);
        if failed.is_none() {
            let _ = std::fs::remove_dir_all(dir);
        } else {
            writeln!(err, "logs of the cluster kept in {}", dir.display())?;
        }
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
