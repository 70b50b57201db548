//! `fusionlab bench`: how fast the simulator runs. Block transfers and
//! events per wall-clock second on a transfer-heavy scenario, and simulated
//! seconds per wall second for every shipped myth scenario. Wall time is
//! measured here, outside the simulator (which never reads a clock).

use std::io::Write;
use std::time::Instant;

use anyhow::Result;
use fusion_sim::SimOptions;

use crate::{Failure, exit, shipped};

/// The transfer-heavy benchmark scenario.
pub(crate) const TRANSFERS: &str = include_str!("../../bench/transfers.toml");

pub mod events;

pub struct BenchArgs {
    /// Simulated seconds of the transfer benchmark.
    pub seconds: f64,
}

struct Row {
    name: String,
    simulated_s: f64,
    wall_s: f64,
    events: u64,
    transfers: u64,
}

fn measure(name: &str, loaded: &fusion_scenario::LoadedScenario) -> Row {
    let t0 = Instant::now();
    let (_, outcomes) = fusion_sim::run_scenario(loaded, &SimOptions::default());
    let wall_s = t0.elapsed().as_secs_f64();
    Row {
        name: name.to_string(),
        simulated_s: outcomes.iter().map(|o| o.simulated_ns() as f64 / 1e9).sum(),
        wall_s,
        events: outcomes.iter().map(|o| o.events()).sum(),
        transfers: outcomes.iter().map(|o| o.transfers).sum(),
    }
}

pub fn bench(a: &BenchArgs, out: &mut dyn Write, _err: &mut dyn Write) -> Result<u8> {
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(
            Failure::input(format!("--seconds must be in (0, 3600], got {}", a.seconds)).into(),
        );
    }
    let set = format!("phase.run.duration_s={}", a.seconds);
    let transfers = fusion_scenario::load_str(TRANSFERS, "bench/transfers.toml", &[set])
        .map_err(|e| Failure::input(e.to_string()))?;
    let mut rows = vec![measure("bench-transfers", &transfers)];
    for s in shipped::SHIPPED {
        let loaded = fusion_scenario::load_str(s.text, s.file, &[]).map_err(|e| Failure {
            code: exit::INVALID,
            message: format!("shipped scenario {} does not load: {e}", s.file),
        })?;
        if loaded.tour.is_some() {
            rows.push(measure(s.name, &loaded));
        }
    }
    writeln!(
        out,
        "Simulator speed (one thread; wall time of this machine, so compare ratios within one run)"
    )?;
    writeln!(
        out,
        "{:<26} {:>10} {:>9} {:>12} {:>13} {:>12} {:>14} {:>12}",
        "scenario",
        "simulated",
        "wall",
        "events",
        "events/s",
        "transfers",
        "transfers/s",
        "sim s/wall s"
    )?;
    for r in &rows {
        let per = |n: f64| if r.wall_s > 0.0 { n / r.wall_s } else { 0.0 };
        writeln!(
            out,
            "{:<26} {:>9.1}s {:>8.2}s {:>12} {:>13.0} {:>12} {:>14.0} {:>12.1}",
            r.name,
            r.simulated_s,
            r.wall_s,
            r.events,
            per(r.events as f64),
            r.transfers,
            per(r.transfers as f64),
            per(r.simulated_s)
        )?;
    }
    Ok(exit::OK)
}
