//! `fusionlab bench --events`: the simulator's events by kind, per block
//! transfer, on the transfer run and every myth of the tour (or the
//! scenarios named): what the queue carried (messages by kind, wake-ups,
//! I/O) and the work the instances started inside them (timers armed by
//! kind, CPU steps asked for by process class). Where the events go is counted
//! before any is cut (docs/benchmarks.md).

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use fusion_report::grouped;
use fusion_scenario::LoadedScenario;
use fusion_sim::{EventKinds, SimOptions};

use super::{BenchArgs, TRANSFERS};
use crate::{Failure, exit, shipped};

/// One scenario's counts, its variants summed.
struct Counted {
    name: String,
    transfers: u64,
    events: u64,
    kinds: EventKinds,
}

fn count(name: &str, loaded: &LoadedScenario) -> Counted {
    let mut c = Counted {
        name: name.to_string(),
        transfers: 0,
        events: 0,
        kinds: EventKinds::default(),
    };
    for v in &loaded.variants {
        let (outcome, kinds) =
            fusion_sim::run_variant_counted(&v.name, &v.scenario, &SimOptions::default());
        c.transfers += outcome.transfers;
        c.events += outcome.events();
        c.kinds.merge(&kinds);
    }
    c
}

/// A map's counts as rows, the largest first, each named by `label`.
fn sorted(map: &BTreeMap<&'static str, u64>, label: impl Fn(&str) -> String) -> Vec<(String, u64)> {
    let mut rows: Vec<(String, u64)> = map.iter().map(|(k, n)| (label(k), *n)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows
}

/// The events of the queue by kind.
fn rows(k: &EventKinds) -> Vec<(String, u64)> {
    let t = &k.tally;
    let mut rows: Vec<(String, u64)> = vec![
        ("wake-up".into(), t.wakes),
        ("  of which found nothing due".into(), t.wakes_idle),
        ("i/o completion".into(), t.ios),
    ];
    rows.extend(sorted(&t.messages, |m| format!("message {m}")));
    rows.push(("not handled (instance frozen or down)".into(), k.dropped));
    rows
}

/// Deadlines handed over inside those events: folded, not events.
fn folded_rows(k: &EventKinds) -> Vec<(String, u64)> {
    vec![(
        "deadline folded into the event before".into(),
        k.tally.folded,
    )]
}

/// The work started inside those events.
fn handled_rows(k: &EventKinds) -> Vec<(String, u64)> {
    let t = &k.tally;
    let mut rows = sorted(&t.steps, |c| format!("CPU steps asked for by {c}"));
    rows.extend(sorted(&t.timers, |k| format!("timer armed: {k}")));
    rows
}

fn write_counted(out: &mut dyn Write, c: &Counted) -> Result<()> {
    let per = |n: u64| {
        if c.transfers == 0 {
            "-".to_string()
        } else {
            grouped(n as f64 / c.transfers as f64, 2)
        }
    };
    writeln!(
        out,
        "{}: {} events for {} block transfers ({} per transfer)",
        c.name,
        grouped(c.events as f64, 0),
        grouped(c.transfers as f64, 0),
        per(c.events)
    )?;
    writeln!(
        out,
        "  {:<44} {:>12} {:>13}",
        "event", "count", "per transfer"
    )?;
    for (name, n) in rows(&c.kinds) {
        writeln!(
            out,
            "  {name:<44} {:>12} {:>13}",
            grouped(n as f64, 0),
            per(n)
        )?;
    }
    writeln!(
        out,
        "  handled inside those events, not events of their own:"
    )?;
    for (name, n) in folded_rows(&c.kinds) {
        writeln!(
            out,
            "  {name:<44} {:>12} {:>13}",
            grouped(n as f64, 0),
            per(n)
        )?;
    }
    writeln!(out, "  work started inside those events:")?;
    for (name, n) in handled_rows(&c.kinds) {
        writeln!(
            out,
            "  {name:<44} {:>12} {:>13}",
            grouped(n as f64, 0),
            per(n)
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// `fusionlab bench --events [--scenario S]... [--set K=V]...`.
pub fn bench_events(
    a: &BenchArgs,
    scenarios: &[String],
    sets: &[String],
    out: &mut dyn Write,
) -> Result<u8> {
    let mut loaded: Vec<(String, LoadedScenario)> = Vec::new();
    if scenarios.is_empty() {
        if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
            return Err(Failure::input(format!(
                "--seconds must be in (0, 3600], got {}",
                a.seconds
            ))
            .into());
        }
        let set = format!("phase.run.duration_s={}", a.seconds);
        let transfers = fusion_scenario::load_str(TRANSFERS, "bench/transfers.toml", &[set])
            .map_err(|e| Failure::input(e.to_string()))?;
        loaded.push(("bench-transfers".into(), transfers));
        for s in shipped::SHIPPED {
            let l = fusion_scenario::load_str(s.text, s.file, &[]).map_err(|e| Failure {
                code: exit::INVALID,
                message: format!("shipped scenario {} does not load: {e}", s.file),
            })?;
            if l.tour.is_some() {
                loaded.push((s.name.to_string(), l));
            }
        }
    } else {
        for name in scenarios {
            let l = shipped::resolve(name)?
                .load(sets)
                .map_err(|e| Failure::input(e.to_string()))?;
            fusion_driver::refusal(&l, fusion_driver::Driver::Simulator).map_err(Failure::input)?;
            loaded.push((l.name.clone(), l));
        }
    }
    writeln!(
        out,
        "Simulator events by kind (counted serially; the same runs as `bench`, not timed)\n"
    )?;
    for (name, l) in &loaded {
        let c = count(name, l);
        // Every event of the queue is one of the kinds counted.
        debug_assert_eq!(c.kinds.total(), c.events, "{name}: events uncounted");
        write_counted(out, &c)?;
    }
    Ok(exit::OK)
}
