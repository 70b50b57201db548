//! The myth tour: every shipped scenario with a `[tour]` section, in tour
//! order, run on the simulator (or, with `--live`, on a live cluster: see
//! `live::tour_live`); a compact block per myth, then one table with a line
//! per myth: its verdict and key figure next to what the deck measured.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use anyhow::Result;
use fusion_driver::{Driver, VariantOutcome};
use fusion_report::{RunResult, TourRow, render_node_tour, render_tour};
use fusion_scenario::estimate::{MemoryEstimate, estimate};
use fusion_scenario::{LoadedScenario, TourPart, TourSpec};
use fusion_sim::SimOptions;

use crate::memory::{LOWER, MemoryLimit, parts_text, size_text};
use crate::run::report::{problem_lines, program, run_summary};
use crate::{Failure, exit, shipped};
use fusion_report::figures::{key_figures, measure, px_figures, with_unit};
use fusion_report::wrapped;

const RULE: &str = "==============================================================================";

/// What `fusionlab tour` was asked.
#[derive(Clone, Debug, Default)]
pub struct TourArgs {
    /// Wait events under their 9i names.
    pub names_9i: bool,
    /// Replace every scenario's seed.
    pub seed: Option<u64>,
    /// `--interval-ms`: the time series' interval (default 1 s).
    pub interval_ms: Option<u64>,
    /// `--html FILE`: also write the tour as one HTML page there.
    pub html: Option<std::path::PathBuf>,
}

impl TourArgs {
    /// The time series' interval of cluster time.
    pub fn interval_ns(&self) -> u64 {
        crate::run::args::interval_ns(self.interval_ms)
    }
}

/// One myth after its run.
pub struct MythRun {
    pub loaded: LoadedScenario,
    pub result: RunResult,
    /// What ran, a line per variant: simulated time and events, or live transfers.
    pub summary: String,
    /// Protocol errors and check violations, as `fusionlab: NAME: what: detail`.
    pub errors: Vec<String>,
}

impl MythRun {
    /// A myth that ran (simulated or live): its result and what the driver reported.
    pub fn new(loaded: LoadedScenario, result: RunResult, outcomes: &[VariantOutcome]) -> MythRun {
        MythRun {
            loaded,
            result,
            summary: run_summary(outcomes),
            errors: problem_lines(outcomes),
        }
    }
}

/// The shipped scenarios of the tour's first part (a `[tour]` section of
/// the myths part), by tour order then name; and the messages of those
/// that do not load.
pub fn shipped_myths() -> (Vec<LoadedScenario>, Vec<String>) {
    shipped_part(Some(TourPart::Myths))
}

/// The shipped scenarios of the tour's second part, inside one node.
pub fn shipped_node() -> (Vec<LoadedScenario>, Vec<String>) {
    let (node, _) = shipped_part(Some(TourPart::Node));
    (node, Vec::new())
}

/// The shipped scenarios with a `[tour]` section of `part` (`None`: any).
fn shipped_part(part: Option<TourPart>) -> (Vec<LoadedScenario>, Vec<String>) {
    let mut myths = Vec::new();
    let mut broken = Vec::new();
    for s in shipped::all() {
        match s.load(&[]) {
            Ok(l)
                if l.tour
                    .as_ref()
                    .is_some_and(|t| part.is_none_or(|p| t.part == p)) =>
            {
                myths.push(l)
            }
            Ok(_) => {}
            Err(e) => broken.push(e.to_string()),
        }
    }
    sort_myths(&mut myths);
    (myths, broken)
}

/// Tour order, then name; scenarios without `[tour]` last.
pub fn sort_myths(myths: &mut [LoadedScenario]) {
    myths.sort_by(|a, b| {
        let key = |s: &LoadedScenario| {
            (
                s.tour.as_ref().map_or(u32::MAX, |t| t.order),
                s.name.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
}

/// The myths `driver` measures every figure of; the others are left out
/// with a message among `broken`, as a myth that does not load.
pub fn measurable_by(
    driver: Driver,
    myths: Vec<LoadedScenario>,
    broken: &mut Vec<String>,
) -> Vec<LoadedScenario> {
    myths
        .into_iter()
        .filter(|m| {
            match fusion_driver::refusal(m, driver)
                .and_then(|()| fusion_driver::fault_refusal(m, driver))
            {
                Ok(()) => true,
                Err(why) => {
                    broken.push(why);
                    false
                }
            }
        })
        .collect()
}

/// `fusionlab tour`: the shipped myths, then the figures inside one node.
pub fn tour(args: &TourArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let (myths, mut broken) = shipped_myths();
    let myths = measurable_by(Driver::Simulator, myths, &mut broken);
    let (node, _) = shipped_node();
    let node = measurable_by(Driver::Simulator, node, &mut broken);
    for b in &broken {
        writeln!(err, "{b}")?;
    }
    let mut code = tour_of(myths, args, out, err)?;
    if !node.is_empty() {
        let node_code = node_tour_of(node, args, out, err)?;
        if code == exit::OK {
            code = node_code;
        }
    }
    Ok(if code == exit::OK && !broken.is_empty() {
        exit::INVALID
    } else {
        code
    })
}

/// The tour's second part, inside one node: these scenarios (in the order
/// given) and their summary beside the seed papers' figures.
pub fn node_tour_of(
    runs_of: Vec<LoadedScenario>,
    args: &TourArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let total = runs_of.len();
    writeln!(out)?;
    writeln!(out, "{RULE}")?;
    writeln!(
        out,
        "Inside one node: {total} figure{} of the NUMA and CMT papers, run on the simulator",
        if total == 1 { "" } else { "s" }
    )?;
    writeln!(out, "{RULE}")?;
    writeln!(out)?;
    let mut runs = Vec::with_capacity(total);
    let mut errors = 0;
    let opts = SimOptions {
        seed: args.seed,
        check: false,
        interval_ns: args.interval_ns(),
        // The tour runs its scenarios side by side, one thread each.
        threads: 1,
    };
    in_parallel(runs_of, &opts, |i, run| -> Result<()> {
        errors += show_run_in(TourPart::Node, i, total, &run, args, out, err)?;
        runs.push(run);
        Ok(())
    })?;
    writeln!(out, "{RULE}")?;
    writeln!(out, "Inside one node: summary")?;
    writeln!(out, "{RULE}")?;
    let rows: Vec<TourRow> = runs.iter().map(tour_row).collect();
    out.write_all(render_node_tour(&rows).as_bytes())?;
    let seeds: Vec<String> = runs
        .iter()
        .map(|r| format!("{} {}", r.loaded.name, seeds_of(r, args.seed)))
        .collect();
    for line in wrap_list("seeds: ", &seeds) {
        writeln!(out, "{line}")?;
    }
    Ok(if errors > 0 {
        exit::SIM_ERRORS
    } else {
        exit::OK
    })
}

/// `items` after `head`, comma-separated, in lines of at most 100 columns.
fn wrap_list(head: &str, items: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = head.to_string();
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        if line.len() + 1 + piece.len() > 100 && line.len() > head.len() {
            lines.push(line);
            line = format!("{}{piece}", " ".repeat(head.len()));
        } else {
            if line.len() > head.len() {
                line.push(' ');
            }
            line.push_str(&piece);
        }
    }
    lines.push(line);
    lines
}

/// Run these myths (in the order given) and print the tour. Exit status 0
/// whatever the verdicts; [`exit::SIM_ERRORS`] when the simulator reported
/// protocol errors.
pub fn tour_of(
    myths: Vec<LoadedScenario>,
    args: &TourArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let total = myths.len();
    let html = crate::run::report::HtmlFile::create(args.html.as_deref())?;
    tour_header(total, "on the simulator", out)?;
    let mut runs = Vec::with_capacity(total);
    let mut errors = 0;
    let opts = SimOptions {
        seed: args.seed,
        check: false,
        interval_ns: args.interval_ns(),
        // The tour runs its scenarios side by side, one thread each.
        threads: 1,
    };
    in_parallel(myths, &opts, |i, run| -> Result<()> {
        errors += show_run(i, total, &run, args, out, err)?;
        runs.push(run);
        Ok(())
    })?;
    tour_summary(&runs, args.seed, out)?;
    if let Some(h) = html {
        write_tour_html(h, &runs, args)?;
    }
    Ok(if errors > 0 {
        exit::SIM_ERRORS
    } else {
        exit::OK
    })
}

/// The tour's first lines.
pub fn tour_header(total: usize, on: &str, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "Fusionlab myth tour: {total} myth{}, run {on}",
        if total == 1 { "" } else { "s" }
    )?;
    if total == 0 {
        writeln!(out, "(no shipped scenario has a [tour] section)")?;
    }
    writeln!(out)?;
    Ok(())
}

/// Print myth `i`'s block (and its errors on `err`); the number of errors.
pub fn show_run(
    i: usize,
    total: usize,
    run: &MythRun,
    args: &TourArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<usize> {
    show_run_in(TourPart::Myths, i, total, run, args, out, err)
}

/// [`show_run`] in one part of the tour (its blocks say `Myth` or `Figure`).
fn show_run_in(
    part: TourPart,
    i: usize,
    total: usize,
    run: &MythRun,
    args: &TourArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<usize> {
    out.write_all(myth_block_in(part, i + 1, total, run, args).as_bytes())?;
    out.flush()?;
    for e in &run.errors {
        writeln!(err, "{e}")?;
    }
    Ok(run.errors.len())
}

/// The summary table and the seeds.
pub fn tour_summary(runs: &[MythRun], seed: Option<u64>, out: &mut dyn Write) -> Result<()> {
    writeln!(out, "{RULE}")?;
    writeln!(out, "Tour summary")?;
    writeln!(out, "{RULE}")?;
    let rows: Vec<TourRow> = runs.iter().map(tour_row).collect();
    out.write_all(render_tour(&rows).as_bytes())?;
    writeln!(out, "{}", wrapped(&seeds_line(runs, seed), "", "  "))?;
    Ok(())
}

/// The tour as one HTML page.
pub fn write_tour_html(
    html: crate::run::report::HtmlFile,
    runs: &[MythRun],
    args: &TourArgs,
) -> Result<()> {
    let rows: Vec<TourRow> = runs.iter().map(tour_row).collect();
    let myths: Vec<fusion_report::html::TourMyth<'_>> = runs
        .iter()
        .zip(&rows)
        .map(|(r, row)| fusion_report::html::TourMyth {
            loaded: &r.loaded,
            result: &r.result,
            row,
            ran: &r.summary,
        })
        .collect();
    let opts = fusion_report::html::HtmlOptions {
        names_9i: args.names_9i,
        program: Some(program()),
    };
    html.write(&fusion_report::html::tour_page(
        &myths,
        &seeds_line(runs, args.seed),
        &opts,
    ))
}

/// Threads the tour runs myths on.
fn tour_threads(myths: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(myths)
        .max(1)
}

/// Refuse the tour when the myths that may run at once (the largest, one
/// per thread; one at a time `live`) are estimated above `limit`.
pub fn within_memory(limit: &MemoryLimit, live: bool) -> Result<(), Failure> {
    let (myths, _) = shipped_part(if live { Some(TourPart::Myths) } else { None });
    let mut estimates: Vec<(MemoryEstimate, &LoadedScenario)> =
        myths.iter().map(|m| (estimate(m, false), m)).collect();
    estimates.sort_by_key(|e| std::cmp::Reverse(e.0.bytes));
    let threads = if live { 1 } else { tour_threads(myths.len()) };
    let at_once = estimates
        .iter()
        .take(threads)
        .fold(0u64, |t, e| t.saturating_add(e.0.bytes));
    match estimates.first() {
        Some((e, first)) if at_once > limit.bytes => Err(Failure::input(format!(
            "fusionlab: the tour runs {threads} myth{} at once, estimated to need {} of memory, more than the limit of {} ({}); the largest myth, {}, needs {}:{}{}",
            if threads == 1 { "" } else { "s" },
            size_text(at_once),
            size_text(limit.bytes),
            limit.origin,
            first.name,
            size_text(e.bytes),
            parts_text(e),
            LOWER
        ))),
        _ => Ok(()),
    }
}

/// Simulate every myth on a few threads; `each` sees the runs in the order
/// of `myths`, each as soon as it and those before it are done.
fn in_parallel(
    myths: Vec<LoadedScenario>,
    opts: &SimOptions,
    mut each: impl FnMut(usize, MythRun) -> Result<()>,
) -> Result<()> {
    let threads = tour_threads(myths.len());
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<LoadedScenario>>> =
        myths.into_iter().map(|m| Mutex::new(Some(m))).collect();
    let (tx, rx) = mpsc::channel::<(usize, MythRun)>();
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, slots) = (&next, &slots);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = slots.get(i) else { break };
                    let taken = slot.lock().ok().and_then(|mut s| s.take());
                    let Some(loaded) = taken else { continue };
                    let (result, outcomes) = fusion_sim::run_scenario(&loaded, opts);
                    let run = MythRun::new(loaded, result, &outcomes);
                    if tx.send((i, run)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut pending: Vec<Option<MythRun>> = (0..slots.len()).map(|_| None).collect();
        let mut shown = 0;
        for (i, run) in rx {
            if let Some(p) = pending.get_mut(i) {
                *p = Some(run);
            }
            while let Some(run) = pending.get_mut(shown).and_then(Option::take) {
                each(shown, run)?;
                shown += 1;
            }
        }
        Ok(())
    })
}

/// The compact block of one myth: claim and title, key figures per phase
/// and instance, expectations with their details, the verdict.
pub fn myth_block(number: usize, total: usize, run: &MythRun, args: &TourArgs) -> String {
    myth_block_in(TourPart::Myths, number, total, run, args)
}

fn myth_block_in(
    part: TourPart,
    number: usize,
    total: usize,
    run: &MythRun,
    args: &TourArgs,
) -> String {
    let (l, r) = (&run.loaded, &run.result);
    let mut s = String::new();
    let claim = l.myth.as_deref().unwrap_or(&l.title);
    let word = match part {
        TourPart::Myths => "Myth",
        TourPart::Node => "Figure",
    };
    let heading = format!("{word} {number} of {total}: ");
    s.push_str(&format!(
        "{RULE}\n{}\n{RULE}\n",
        wrapped(claim, &heading, &" ".repeat(heading.len()))
    ));
    s.push_str(&wrapped(&format!("{}: {}", l.name, l.title), "", "  "));
    s.push('\n');
    for line in run.summary.lines() {
        s.push_str(&wrapped(line, "", "  "));
        s.push('\n');
    }
    s.push_str(&format!("seed: {}\n\n", seeds_of(run, args.seed)));
    s.push_str(&key_figures(r, args.names_9i));
    s.push_str(&px_figures(r));
    s.push_str("\nExpectations:\n");
    if r.verdicts.is_empty() {
        s.push_str("  (none declared: nothing was checked)\n");
    }
    for v in &r.verdicts {
        let result = if v.passed { "PASS" } else { "FAIL" };
        s.push_str(&wrapped(&v.name, &format!("  {result}  "), "        "));
        s.push('\n');
        for line in v.detail.lines() {
            s.push_str(&wrapped(line, "        ", "          "));
            s.push('\n');
        }
    }
    let verdict = if r.reproduced() {
        "REPRODUCED"
    } else {
        "NOT REPRODUCED"
    };
    s.push_str(&format!("\nVERDICT: {verdict}\n\n"));
    s
}

/// The summary line of one myth: the `[tour]` figure as measured, and the deck's.
pub fn tour_row(run: &MythRun) -> TourRow {
    let (l, r) = (&run.loaded, &run.result);
    let (label, key_figure, deck_figure) = match &l.tour {
        Some(t) => (t.label.clone(), measured(r, t), t.deck.clone()),
        None => ("-".to_string(), "-".to_string(), "-".to_string()),
    };
    TourRow {
        myth: l.myth.clone().unwrap_or_else(|| l.title.clone()),
        scenario: l.name.clone(),
        reproduced: r.reproduced(),
        label,
        key_figure,
        deck_figure,
    }
}

/// `63.3 ms`, or `0.670 ms vs 0.030 ms` with `versus` figures; `n/a` for a
/// figure with nothing to measure.
fn measured(r: &RunResult, t: &TourSpec) -> String {
    std::iter::once(&t.measured)
        .chain(&t.versus)
        .map(|m| match measure(r, m) {
            Some(v) => with_unit(m.metric, v),
            None => "n/a".to_string(),
        })
        .collect::<Vec<_>>()
        .join(" vs ")
}

/// The seed(s) a myth ran with: `forced` (`--seed`), else each variant's
/// own; one number when they agree, else one per variant.
fn seeds_of(run: &MythRun, forced: Option<u64>) -> String {
    let seeds: Vec<(&str, u64)> = run
        .loaded
        .variants
        .iter()
        .map(|v| (v.name.as_str(), forced.unwrap_or(v.scenario.seed)))
        .collect();
    match seeds.first() {
        None => run.result.seed.to_string(),
        Some((_, first)) if seeds.iter().all(|(_, s)| s == first) => first.to_string(),
        Some(_) => seeds
            .iter()
            .map(|(n, s)| format!("{s} ({n})"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The seeds of the tour and the program's version, to rerun a myth exactly.
fn seeds_line(runs: &[MythRun], forced: Option<u64>) -> String {
    let program = program();
    if let Some(seed) = forced {
        return format!("seed: {seed} for every myth (--seed; {program})");
    }
    let list: Vec<String> = runs
        .iter()
        .map(|r| format!("{} {}", r.loaded.name, seeds_of(r, forced)))
        .collect();
    format!(
        "seeds: {} ({program}; rerun one: fusionlab run NAME --seed N)",
        if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        }
    )
}
