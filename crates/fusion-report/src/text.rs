//! The text report: what a DBA reads after a run. Per variant, phase and
//! instance it shows the AWR "Global Cache and Enqueue Services - Workload
//! Characteristics" block, a Global Cache Load Profile, the Top 5 Timed
//! Foreground Events, the emulator's decomposition of received block latency
//! and the background waits behind it; then the variants side by side, the
//! expectations and the verdict.
//!
//! The output is deterministic: same result, same bytes.

use std::collections::BTreeSet;

use fusion_core::metrics::AwrLine;
use fusion_core::stats::Stats;

pub use crate::awr::{
    TopEvent, background, decomposition, load_profile, tkprof, top_events, workload_characteristics,
};
use crate::awr::{deadlocks, pct_db_time, top_events_table};
use crate::fmt::{TEXT_WIDTH, wrapped};
use crate::model::{InstanceResult, PhaseResult, RunResult, VariantResult};
use crate::sheet::{NS_PER_S, Out, table};

/// What the text report shows.
#[derive(Clone, Debug, Default)]
pub struct TextOptions {
    /// Print wait events under the 9i names the RAC myths deck uses
    /// (`global cache cr request`, ...); rows that map to the same 9i name merge.
    pub names_9i: bool,
    /// Only these phases (by name); `None` = all.
    pub phases: Option<Vec<String>>,
    /// The program and version that ran (`fusionlab 0.1.0`), printed with
    /// the seed: what it takes to rerun the run. `None` leaves it out.
    pub program: Option<String>,
}

impl TextOptions {
    fn shows_phase(&self, name: &str) -> bool {
        self.phases
            .as_ref()
            .is_none_or(|p| p.iter().any(|x| x == name))
    }
}

const RULE: &str = "==============================================================================";
const THIN_RULE: &str =
    "------------------------------------------------------------------------------";

/// The whole report.
pub fn render(result: &RunResult, opts: &TextOptions) -> String {
    let mut out = Out::default();
    header(&mut out, result, opts);
    for v in &result.variants {
        variant_section(&mut out, result, v, opts);
    }
    if result.has_variants && result.variants.len() > 1 {
        comparison(&mut out, result, opts);
    }
    verdicts(&mut out, result);
    out.0
}

fn header(out: &mut Out, r: &RunResult, opts: &TextOptions) {
    out.line(RULE);
    out.line(format!("Fusionlab report: {}", r.scenario));
    out.line(RULE);
    out.line(format!("scenario: {}", r.scenario));
    out.line(wrapped(&r.title, "title: ", "       "));
    if let Some(m) = &r.myth {
        out.line(wrapped(m, "myth: ", "      "));
    }
    match &opts.program {
        Some(program) => out.line(format!("seed: {} ({program})", r.seed)),
        None => out.line(format!("seed: {}", r.seed)),
    }
    let names: Vec<&str> = r.variants.iter().map(|v| v.name.as_str()).collect();
    if r.has_variants {
        out.line(wrapped(&names.join(", "), "variants: ", "          "));
    }
    out.blank();
}

fn variant_section(out: &mut Out, r: &RunResult, v: &VariantResult, opts: &TextOptions) {
    if r.has_variants {
        out.line(RULE);
        out.line(format!("Variant: {}", v.name));
        out.line(RULE);
        out.blank();
    }
    let mut shown = 0;
    for p in v.phases.iter().filter(|p| opts.shows_phase(&p.name)) {
        shown += 1;
        phase_section(out, p, opts);
    }
    if shown == 0 {
        out.line("(no phase to show)");
        out.blank();
    }
}

fn phase_section(out: &mut Out, p: &PhaseResult, opts: &TextOptions) {
    let start = p.start_ns as f64 / NS_PER_S;
    let elapsed = p.elapsed_ns as f64 / NS_PER_S;
    out.line(format!(
        "Phase: {}   (simulated {elapsed:.3} s, from {start:.3} s to {:.3} s)",
        p.name,
        start + elapsed
    ));
    out.line(THIN_RULE);
    out.blank();
    if p.instances.is_empty() {
        out.line("(no instance took part)");
        out.blank();
    }
    let px = crate::px::text(&p.cluster_stats().px);
    if !px.is_empty() {
        out.0.push_str(&px);
        out.blank();
    }
    if !p.alert_log.is_empty() {
        alert_log(out, p);
    }
    if !p.recovery.is_empty() {
        recovery(out, p);
    }
    if !p.pf_masters.is_empty() {
        pf_masters(out, p);
    }
    for i in &p.instances {
        instance_section(out, p, i, opts);
    }
}

/// The phase's alert log lines, every instance's in time order.
fn alert_log(out: &mut Out, p: &PhaseResult) {
    out.line("Alert log");
    for a in &p.alert_log {
        // A long line goes on under itself, past the time and instance.
        let head = format!(
            "  {:>10.3} s  inst {:<2}  ",
            a.at_ns as f64 / NS_PER_S,
            a.instance
        );
        let indent = " ".repeat(head.chars().count());
        out.line(wrapped(&a.line, &head, &indent));
    }
    out.blank();
}

/// `V$GCSPFMASTER_INFO` at the phase's end: the objects dynamic
/// remastering moved, their masters numbered from 0 as Oracle's view does
/// (32767: the previous master was the hash's).
fn pf_masters(out: &mut Out, p: &PhaseResult) {
    out.line("V$GCSPFMASTER_INFO (objects remastered, at the end of the phase)");
    out.line(format!(
        "  {:<24}  {:>14}  {:>14}  {:>15}  {:>12}",
        "OBJECT", "DATA_OBJECT_ID", "CURRENT_MASTER", "PREVIOUS_MASTER", "REMASTER_CNT"
    ));
    for r in &p.pf_masters {
        let previous = r.previous_master.map_or(32767, u32::from);
        out.line(format!(
            "  {:<24}  {:>14}  {:>14}  {:>15}  {:>12}",
            r.object, r.pkey, r.current_master, previous, r.remaster_count
        ));
    }
    out.blank();
}

/// The phase's instance recoveries, one line per failure: who died, who
/// recovered it, when it was detected (s from the phase's start), how long
/// the directory was frozen, how long recovery took from detection, the
/// redo it read, the blocks it recovered, the transactions it rolled back,
/// and the survivors' brownout.
fn recovery(out: &mut Out, p: &PhaseResult) {
    use fusion_core::metrics::RecoveryFigure as F;
    out.line("Instance recovery");
    out.line(format!(
        "  {:<6}  {:<9}  {:>8}  {:>7}  {:>8}  {:>9}  {:>9}  {:>11}  {:>8}",
        "dead",
        "recovered",
        "detected",
        "freeze",
        "recovery",
        "redo read",
        "blocks",
        "txns rolled",
        "brownout"
    ));
    out.line(format!(
        "  {:<6}  {:<9}  {:>8}  {:>7}  {:>8}  {:>9}  {:>9}  {:>11}  {:>8}",
        "", "by", "(s)", "(ms)", "(ms)", "(KB)", "recovered", "back", "(ms)"
    ));
    for r in &p.recovery {
        let f = |figure: F| r.figure(figure, p.start_ns);
        let brownout = f(F::BrownoutMs).map_or_else(|| "-".to_string(), |v| format!("{v:.0}"));
        out.line(format!(
            "  {:<6}  {:<9}  {:>8.3}  {:>7.0}  {:>8.0}  {:>9}  {:>9}  {:>11}  {:>8}",
            format!("inst{}", r.dead_instance),
            format!("inst{}", r.recovered_by),
            f(F::DetectedS).unwrap_or_default(),
            f(F::FreezeMs).unwrap_or_default(),
            f(F::RecoveryMs).unwrap_or_default(),
            crate::fmt::count(f(F::RedoKbRead).unwrap_or_default()),
            crate::fmt::count(r.blocks_recovered as f64),
            crate::fmt::count(r.transactions_rolled_back as f64),
            brownout,
        ));
    }
    out.blank();
}

fn instance_section(out: &mut Out, p: &PhaseResult, i: &InstanceResult, opts: &TextOptions) {
    out.line(format!(
        "Instance {}   (phase {}, cpu_count {}, db_block_size {})",
        i.id, p.name, i.cpu_count, i.db_block_size
    ));
    if let Some(t) = i.threads {
        out.line(format!(
            "  cpu_count {} = {} cores x {} hardware threads (each thread is a CPU)",
            i.cpu_count, t.cores, t.threads_per_core
        ));
        out.line(format!(
            "  derived: parallel_max_servers {}, parallel_servers_target {}, \
             parallel_degree_limit {}",
            t.parallel_max_servers, t.parallel_servers_target, t.parallel_degree_limit
        ));
    }
    out.blank();
    out.0.push_str(&workload_characteristics(&i.stats));
    out.blank();
    out.0
        .push_str(&load_profile(&i.stats, p.elapsed_ns, i.db_block_size));
    out.blank();
    out.0.push_str(&top_events_table(&i.stats, opts.names_9i));
    out.blank();
    let dl = deadlocks(&i.stats);
    if !dl.is_empty() {
        out.0.push_str(&dl);
        out.blank();
    }
    out.0.push_str(&decomposition(&i.stats));
    out.blank();
    out.0.push_str(&background(
        &i.stats,
        p.elapsed_ns,
        i.cpu_count,
        opts.names_9i,
    ));
    out.blank();
    let tk = tkprof(&i.stats, opts.names_9i);
    if !tk.is_empty() {
        out.0.push_str(&tk);
    }
}

/// The variants side by side: per phase and instance, the gc receive times and the top event.
fn comparison(out: &mut Out, r: &RunResult, opts: &TextOptions) {
    out.line(RULE);
    out.line("Variants side by side");
    out.line(RULE);
    out.blank();
    let mut phases: Vec<&str> = Vec::new();
    for v in &r.variants {
        for p in &v.phases {
            if opts.shows_phase(&p.name) && !phases.contains(&p.name.as_str()) {
                phases.push(&p.name);
            }
        }
    }
    let mut header = vec![
        "Phase".to_string(),
        "Inst".to_string(),
        "Figure".to_string(),
    ];
    header.extend(r.variants.iter().map(|v| v.name.clone()));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for phase in phases {
        let ids: BTreeSet<u8> = r
            .variants
            .iter()
            .filter_map(|v| v.phase(phase))
            .flat_map(|p| p.instances.iter().map(|i| i.id))
            .collect();
        let mut first_of_phase = true;
        for id in ids {
            // `None` stands for the top event.
            let figures = [
                ("cr receive (ms)", Some(AwrLine::CrReceiveMs)),
                ("current receive (ms)", Some(AwrLine::CurrentReceiveMs)),
                ("top event", None),
            ];
            for (n, (label, f)) in figures.iter().enumerate() {
                let mut row = vec![
                    if first_of_phase {
                        phase.to_string()
                    } else {
                        String::new()
                    },
                    if n == 0 {
                        id.to_string()
                    } else {
                        String::new()
                    },
                    label.to_string(),
                ];
                first_of_phase = false;
                for v in &r.variants {
                    let cell = v
                        .phase(phase)
                        .and_then(|p| p.instance(id))
                        .map(|i| match f {
                            Some(line) => awr_cell(*line, &i.stats),
                            None => top_cell(&i.stats, opts.names_9i),
                        })
                        .unwrap_or_else(|| "n/a".to_string());
                    row.push(cell);
                }
                rows.push(row);
            }
        }
    }
    // As many variants per table as fit the width; the others in the
    // tables below, each with the phase, instance and figure again.
    for columns in column_groups(&header, &rows, 3, TEXT_WIDTH) {
        let pick = |row: &[String]| -> Vec<String> {
            (0..3)
                .chain(columns.iter().copied())
                .filter_map(|c| row.get(c).cloned())
                .collect()
        };
        let head = pick(&header);
        let mut t = table(&head, &(3..head.len()).collect::<Vec<_>>());
        for row in &rows {
            t.add_row(pick(row));
        }
        out.table(&t);
        out.blank();
    }
}

/// The columns after the first `fixed` in groups whose table (one space
/// between columns, the fixed ones repeated) fits `width`; a column too
/// wide for any is alone in its group.
fn column_groups(
    header: &[String],
    rows: &[Vec<String>],
    fixed: usize,
    width: usize,
) -> Vec<Vec<usize>> {
    let column_width = |c: usize| {
        std::iter::once(header)
            .chain(rows.iter().map(Vec::as_slice))
            .filter_map(|r| r.get(c))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let base: usize = (0..fixed).map(|c| column_width(c) + 1).sum();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut used = base;
    for c in fixed..header.len() {
        let w = column_width(c) + 1;
        match groups.last_mut() {
            Some(g) if used + w <= width + 1 => g.push(c),
            _ => {
                groups.push(vec![c]);
                used = base;
            }
        }
        used += w;
    }
    groups
}

fn awr_cell(line: AwrLine, s: &Stats) -> String {
    line.eval(s)
        .map(|v| format!("{v:.2}"))
        .unwrap_or_else(|| "-".to_string())
}

fn top_cell(s: &Stats, names_9i: bool) -> String {
    match top_events(s, names_9i).first() {
        None => "-".to_string(),
        Some(e) => match pct_db_time(e.time_ns, s) {
            Some(p) => format!("{} ({p:.1}% DB time)", e.name),
            None => format!("{} ({:.2} s)", e.name, e.time_ns as f64 / NS_PER_S),
        },
    }
}

fn verdicts(out: &mut Out, r: &RunResult) {
    out.line(RULE);
    out.line("Expectations");
    out.line(RULE);
    out.blank();
    if r.verdicts.is_empty() {
        out.line("(the scenario declares no expectations: nothing was checked)");
    } else {
        // The result, the expectation, and its figures wrapped under it.
        for v in &r.verdicts {
            let result = if v.passed { "PASS" } else { "FAIL" };
            out.line(wrapped(&v.name, &format!("{result}  "), "      "));
            for line in v.detail.lines() {
                out.line(wrapped(line, "      ", "        "));
            }
        }
    }
    out.blank();
    out.line(if r.reproduced() {
        "VERDICT: REPRODUCED"
    } else {
        "VERDICT: NOT REPRODUCED"
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Verdict;
    use fusion_core::metrics::{BlockKind, Metric, Part};
    use fusion_core::stats::{Stat, Wait};

    const MS: u64 = 1_000_000;

    /// The deck's node 2 ("slow log writes, a hardware fault").
    fn deck_node2() -> Stats {
        use Stat::*;
        let mut s = Stats::default();
        s.add(GcCrBlocksReceived, 1_000);
        s.add(GcCrBlockReceiveTime, 10_400 * MS);
        s.add(GcCurrentBlocksReceived, 1_000);
        s.add(GcCurrentBlockReceiveTime, 3_200 * MS);
        s.add(GcCrBlocksServed, 1_000);
        s.add(GcCrBlockBuildTime, 100 * MS);
        s.add(GcCrBlocksFlushed, 50);
        s.add(GcCrBlockFlushTime, 50 * 4_380 * MS);
        s.add(GcCurrentBlocksServed, 1_000);
        s.add(GcCurrentBlockSendTime, 100 * MS);
        s.add(GcCurrentBlocksFlushed, 1);
        s
    }

    #[test]
    fn awr_block_prints_the_deck_node2_figures() {
        let text = workload_characteristics(&deck_node2());
        let expected = "\
Global Cache and Enqueue Services - Workload Characteristics
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

                    Avg global enqueue get time (ms):

         Avg global cache cr block receive time (ms):     10.4
    Avg global cache current block receive time (ms):      3.2

           Avg global cache cr block build time (ms):      0.1
            Avg global cache cr block send time (ms):      0.0

     Global cache log flushes for cr blocks served %:      5.0
           Avg global cache cr block flush time (ms):   4380.0

        Avg global cache current block pin time (ms):      0.0
       Avg global cache current block send time (ms):      0.1

Global cache log flushes for current blocks served %:      0.1
      Avg global cache current block flush time (ms):      0.0
";
        assert_eq!(text, expected);
    }

    #[test]
    fn deadlocks_are_shown_only_when_there_were_some() {
        let mut s = Stats::default();
        assert_eq!(deadlocks(&s), "", "nothing printed without a deadlock");
        s.add(Stat::EnqueueDeadlocks, 2);
        s.add(Stat::DeadlockDetectionTime, 21_000 * 1_000_000);
        let text = deadlocks(&s);
        assert!(text.contains("enqueue deadlocks"), "{text}");
        assert!(
            text.contains("10500.0"),
            "the victims' average wait: {text}"
        );
    }

    #[test]
    fn awr_block_leaves_undefined_lines_blank() {
        let text = workload_characteristics(&Stats::default());
        assert!(
            text.contains("\n         Avg global cache cr block receive time (ms):\n"),
            "{text}"
        );
    }

    fn waits() -> Stats {
        let mut s = Stats::default();
        s.add(Stat::DbTime, 10_000 * MS);
        s.add(Stat::CpuUsedBySession, 3_000 * MS);
        for _ in 0..100 {
            s.wait(Wait::GcCrBlock2Way, 20 * MS, true); // 2.0 s
            s.wait(Wait::GcCrBlockBusy, 15 * MS, true); // 1.5 s
            s.wait(Wait::GcCurrentBlock2Way, 10 * MS, true); // 1.0 s
            s.wait(Wait::LogFileSync, 5 * MS, true); // 0.5 s
            s.wait(Wait::DbFileSequentialRead, 2 * MS, true); // 0.2 s
            s.wait(Wait::GcBufferBusyAcquire, MS, true); // 0.1 s
            s.wait(Wait::LogFileParallelWrite, 50 * MS, false); // background only
        }
        s.wait(Wait::FreeBufferWaits, 0, true); // a wait that took no time
        s
    }

    #[test]
    fn top5_orders_by_time_with_db_cpu_and_pct_of_db_time() {
        let rows = top_events(&waits(), false);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "DB CPU",
                "gc cr block 2-way",
                "gc cr block busy",
                "gc current block 2-way",
                "log file sync"
            ]
        );
        assert_eq!(rows[0].waits, None);
        let text = top_events_table(&waits(), false);
        let expected = "\
Top 5 Timed Foreground Events
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Event                  Waits Time(s) Avg wait (ms) % DB time Wait Class
---------------------- ----- ------- ------------- --------- ----------
DB CPU                          3.00                    30.0
gc cr block 2-way        100    2.00         20.00      20.0 Cluster
gc cr block busy         100    1.50         15.00      15.0 Cluster
gc current block 2-way   100    1.00         10.00      10.0 Cluster
log file sync            100    0.50          5.00       5.0 Commit
";
        assert_eq!(text, expected);
        // Background waits are not foreground events.
        assert!(!text.contains("log file parallel write"));
    }

    #[test]
    fn names_9i_merge_rows() {
        let rows = top_events(&waits(), true);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        // gc cr block 2-way (2.0 s) and gc cr block busy (1.5 s) are both `global cache cr request`.
        assert_eq!(
            names,
            [
                "global cache cr request",
                "CPU time",
                "global cache null to x",
                "log file sync",
                "db file sequential read"
            ]
        );
        assert_eq!(rows[0].waits, Some(200));
        assert_eq!(rows[0].time_ns, 3_500 * MS);
        let text = top_events_table(&waits(), true);
        assert!(
            text.contains("global cache cr request   200    3.50         17.50      35.0 Cluster"),
            "{text}"
        );
    }

    #[test]
    fn top5_without_db_time_leaves_pct_blank() {
        let mut s = Stats::default();
        s.wait(Wait::LogFileSync, 2 * MS, true);
        let text = top_events_table(&s, false);
        assert!(
            text.contains("log file sync     1    0.00          2.00           Commit"),
            "{text}"
        );
        assert_eq!(
            top_events_table(&Stats::default(), false).lines().last(),
            Some("(no foreground wait or CPU time)")
        );
    }

    fn decomposed() -> Stats {
        use Stat::*;
        let mut s = Stats::default();
        // 200 cr blocks at 1.0 ms: 0.1 send + 0.05 cpu wait + 0.3 processing + 0.5 flush + 0.05 wire.
        s.add(GcCrBlocksReceived, 200);
        s.add(GcCrBlockReceiveTime, 200 * MS);
        s.add(DecompCrRequestSend, 200 * 100_000);
        s.add(DecompCrLmsCpuWait, 200 * 50_000);
        s.add(DecompCrLmsProcessing, 200 * 300_000);
        s.add(DecompCrLogFlush, 200 * 500_000);
        s.add(DecompCrWire, 200 * 50_000);
        s
    }

    #[test]
    fn decomposition_shares_sum_to_100_and_empty_rows_are_omitted() {
        let s = decomposed();
        let total: f64 = Part::ALL
            .iter()
            .filter_map(|&p| Metric::DecompShare(BlockKind::Cr, p).eval(&s, 0))
            .sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let text = decomposition(&s);
        let expected = "\
Received block latency decomposition (avg ms per block, % of receive time)
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Block Received Avg receive request send lms cpu wait lms processing    log flush         wire
----- -------- ----------- ------------ ------------ -------------- ------------ ------------
cr         200       1.000 0.100  10.0% 0.050   5.0%   0.300  30.0% 0.500  50.0% 0.050   5.0%
";
        assert_eq!(text, expected);
        assert!(decomposition(&Stats::default()).contains("(no gc block received)"));
    }

    #[test]
    fn background_line_and_cpu_busy() {
        let mut s = waits();
        s.wait(Wait::GcsLogFlushSync, 4 * MS, false);
        s.add(Stat::LmsCpuWaitTime, 12_340_000);
        s.add(Stat::OsBusyTime, 6_000 * MS);
        let text = background(&s, 2_000 * MS, 4, false);
        assert_eq!(
            text,
            "Background waits:  gcs log flush sync 1 waits, avg 4.00 ms\n                   \
             log file parallel write 100 waits, avg 50.00 ms\n\
             CPU run queue:     LMS 12.3 ms, LGWR 0.0 ms, foreground 0.0 ms\n\
             CPU busy:          75.0 % of 4 CPUs\n"
        );
        assert!(background(&s, 0, 0, false).contains("CPU busy:          - of 0 CPUs"));
    }

    #[test]
    fn load_profile_traffic() {
        let mut s = Stats::default();
        s.add(Stat::GcCrBlocksReceived, 60);
        s.add(Stat::GcCurrentBlocksServed, 40);
        s.add(Stat::GcsMessagesSent, 512);
        s.add(Stat::GcsMsgsReceived, 512);
        s.add(Stat::UserCommits, 10);
        // (100 * 8192 + 1024 * 200) / 1024 = 1000 KB over 2 s.
        let text = load_profile(&s, 2_000 * MS, 8192);
        assert!(
            text.contains("  Estd Interconnect traffic (KB):            500.00           100.00\n"),
            "{text}"
        );
        assert!(
            text.contains("  Global Cache blocks received:               30.00             6.00\n"),
            "{text}"
        );
        // No elapsed time: per second is blank, per transaction still shown.
        let served = format!(
            "  {:<34}{:>15}  {:>15}\n",
            "Global Cache blocks served:", "", "4.00"
        );
        assert!(load_profile(&s, 0, 8192).contains(&served));
    }

    fn instance(id: u8, slow: u64) -> InstanceResult {
        let mut s = decomposed();
        s.add(Stat::GcCrBlockReceiveTime, slow * 200 * MS);
        s.add(Stat::DecompCrLmsCpuWait, slow * 200 * MS);
        s.add(Stat::GcCurrentBlocksReceived, 50);
        s.add(Stat::GcCurrentBlockReceiveTime, 50 * 2 * MS);
        s.add(Stat::DecompCurrentRequestSend, 50 * 200_000);
        s.add(Stat::DecompCurrentLmsProcessing, 50 * 300_000);
        s.add(Stat::DecompCurrentLogFlush, 50 * 1_400_000);
        s.add(Stat::DecompCurrentWire, 50 * 100_000);
        s.add(Stat::GcCrBlocksServed, 180);
        s.add(Stat::GcCrBlockBuildTime, 180 * 200_000);
        s.add(Stat::GcCrBlocksFlushed, 9);
        s.add(Stat::GcCrBlockFlushTime, 9 * 1_500_000);
        s.add(Stat::GcCurrentBlocksServed, 60);
        s.add(Stat::GcCurrentBlockPinTime, 60 * 100_000);
        s.add(Stat::GcCurrentBlocksFlushed, 60);
        s.add(Stat::GcCurrentBlockFlushTime, 60 * 1_200_000);
        s.add(Stat::GcsMessagesSent, 700);
        s.add(Stat::GcsMsgsReceived, 650);
        s.add(Stat::UserCommits, 400);
        s.add(Stat::DbTime, (6_000 + slow * 200) * MS);
        s.add(Stat::CpuUsedBySession, 1_200 * MS);
        s.add(Stat::OsBusyTime, 9_000 * MS);
        s.add(Stat::LmsCpuWaitTime, slow * 200 * MS);
        for _ in 0..200 {
            s.wait(Wait::GcCrBlock2Way, (1 + slow) * MS, true);
        }
        for _ in 0..50 {
            s.wait(Wait::GcCurrentBlockBusy, 2 * MS, true);
            s.wait(Wait::GcsLogFlushSync, 1_400_000, false);
        }
        for _ in 0..400 {
            s.wait(Wait::LogFileSync, 1_100_000, true);
            s.wait(Wait::LogFileParallelWrite, 1_000_000, false);
        }
        InstanceResult {
            id,
            cpu_count: 4,
            db_block_size: 8192,
            stats: s,
            threads: None,
        }
    }

    fn small_run() -> RunResult {
        let phase = |slow: u64| PhaseResult {
            alert_log: Vec::new(),
            recovery: Vec::new(),
            pf_masters: Vec::new(),
            name: "starved".into(),
            start_ns: 5_000 * MS,
            elapsed_ns: 5_000 * MS,
            instances: vec![instance(1, slow), instance(2, 0)],
        };
        RunResult {
            scenario: "cpu-starvation".into(),
            title: "A starved node slows the whole cluster".into(),
            myth: Some("CPU starvation on one node only hurts that node".into()),
            seed: 42,
            has_variants: true,
            variants: vec![
                VariantResult { name: "normal-priority".into(), phases: vec![phase(20)], series: None },
                VariantResult { name: "rt-lms".into(), phases: vec![phase(0)], series: None },
            ],
            verdicts: vec![
                Verdict {
                    name: "starved LMS slows gc [normal-priority]".into(),
                    passed: true,
                    detail: "inst1 starved: 21.00 ms  >=  5 x inst2 starved: 1.00 ms (= 5.00 ms)  -> ratio 21.0"
                        .into(),
                    measured: None,
                },
                Verdict {
                    name: "starved LMS slows gc [rt-lms]".into(),
                    passed: false,
                    detail: "inst1 starved: 1.00 ms  >=  5 x inst2 starved: 1.00 ms (= 5.00 ms)  -> ratio 1.0"
                        .into(),
                    measured: None,
                },
            ],
        }
    }

    #[test]
    fn full_report_snapshot() {
        let r = small_run();
        let text = render(&r, &TextOptions::default());
        assert_eq!(text, render(&r, &TextOptions::default()), "deterministic");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_seed_line_names_the_program_when_given() {
        let r = small_run();
        let plain = render(&r, &TextOptions::default());
        assert!(plain.contains("\nseed: 42\n"), "{plain}");
        let named = render(
            &r,
            &TextOptions {
                program: Some("fusionlab 9.9.9".into()),
                ..TextOptions::default()
            },
        );
        assert!(named.contains("\nseed: 42 (fusionlab 9.9.9)\n"), "{named}");
        assert_eq!(
            named.replace(" (fusionlab 9.9.9)", ""),
            plain,
            "the seed line is all that changes"
        );
    }

    #[test]
    fn verdict_line_and_phase_filter() {
        let mut r = small_run();
        let text = render(&r, &TextOptions::default());
        assert!(text.ends_with("VERDICT: NOT REPRODUCED\n"));
        r.verdicts.retain(|v| v.passed);
        assert!(render(&r, &TextOptions::default()).ends_with("VERDICT: REPRODUCED\n"));
        r.verdicts.clear();
        let text = render(&r, &TextOptions::default());
        assert!(text.contains("(the scenario declares no expectations: nothing was checked)"));
        assert!(text.ends_with("VERDICT: NOT REPRODUCED\n"));

        let only = TextOptions {
            phases: Some(vec!["baseline".into()]),
            ..TextOptions::default()
        };
        let text = render(&r, &only);
        assert!(!text.contains("Phase: starved"));
        assert!(text.contains("(no phase to show)"));
    }

    #[test]
    fn missing_phase_or_instance_does_not_panic() {
        let mut r = small_run();
        r.variants[1].phases.clear();
        r.variants[0].phases[0].instances.truncate(1);
        let text = render(
            &r,
            &TextOptions {
                names_9i: true,
                ..TextOptions::default()
            },
        );
        assert!(text.contains("n/a"), "{text}");
        r.variants.clear();
        let _ = render(&r, &TextOptions::default());
    }

    #[test]
    fn tkprof_prints_calls_and_waits_per_statement() {
        let mut s = Stats::default();
        let mut st = fusion_core::tkprof::StmtStat::new("INSERT INTO T1".into(), false);
        st.parses = 1;
        st.executions = 10_000;
        st.rows = 10_000;
        st.cpu_ns = 8_020 * MS;
        st.elapsed_ns = 81_230 * MS;
        st.current = 27_191;
        st.wait(Wait::RowCacheLock, 2_930 * MS);
        st.wait(Wait::RowCacheLock, MS);
        s.statements.push(st);
        s.statements
            .push(fusion_core::tkprof::StmtStat::new("unused".into(), true));
        let text = tkprof(&s, false);
        assert!(text.starts_with("INSERT INTO T1\n"), "{text}");
        assert!(
            !text.contains("unused"),
            "statements that never ran are left out"
        );
        assert!(
            text.contains(
                "Execute  10000      8.02      81.23          0          0      27191       10000"
            ),
            "{text}"
        );
        assert!(
            text.contains("total    10001      8.02      81.23"),
            "{text}"
        );
        assert!(
            text.contains(
                "  row cache lock                                  2        2.93          2.93"
            ),
            "{text}"
        );
    }

    /// A phase with one instance recovery: the text section and JSON
    /// `recovery`; a phase without one shows neither.
    #[test]
    fn instance_recovery_is_summarized_only_where_there_was_one() {
        use fusion_core::metrics::RecoveryFigure as F;
        let mut r = small_run();
        let none = render(&r, &TextOptions::default());
        assert!(!none.contains("Instance recovery"));
        let entry = crate::model::RecoveryEntry {
            dead_instance: 3,
            recovered_by: 1,
            detected_ns: 7_250 * MS,
            freeze_ns: 120 * MS,
            recovery_ns: 2_400 * MS,
            redo_bytes_read: 512 * 1024,
            blocks_recovered: 1_234,
            transactions_rolled_back: 5,
            brownout_ns: Some(3_100 * MS),
        };
        r.variants[0].phases[0].recovery = vec![entry.clone()];
        let text = render(&r, &TextOptions::default());
        let at = text.find("Instance recovery").expect("the section");
        let section: Vec<&str> = text[at..].lines().take(4).collect();
        assert_eq!(
            section[3],
            "  inst3   inst1         2.250      120      2400        512      1,234            5      3100",
            "{section:#?}"
        );
        assert!(section.iter().all(|l| l.len() <= TEXT_WIDTH));
        assert_eq!(
            text.matches("Instance recovery").count(),
            1,
            "one phase had one"
        );
        let j = crate::json::to_json(&r);
        let rec = &j["variants"][0]["phases"][0]["recovery"][0];
        for (k, v) in [
            ("dead_instance", 3.0),
            ("recovered_by", 1.0),
            ("detected_s", 2.25),
            ("freeze_ms", 120.0),
            ("recovery_ms", 2400.0),
            ("brownout_ms", 3100.0),
            ("redo_kb_read", 512.0),
            ("blocks_recovered", 1234.0),
        ] {
            assert_eq!(rec[k].as_f64(), Some(v), "{k}: {rec}");
        }
        assert!(j["variants"][1]["phases"][0].get("recovery").is_none());
        // As expectation figures: the largest time, the sum of counts.
        let mut p = r.variants[0].phases[0].clone();
        p.recovery.push(crate::model::RecoveryEntry {
            dead_instance: 2,
            brownout_ns: None,
            recovery_ns: 900 * MS,
            ..entry
        });
        let v = |f, i| crate::verdict::recovery_value(f, i, &p);
        assert_eq!(v(F::RecoveryMs, None), Some(2400.0));
        assert_eq!(v(F::RecoveryMs, Some(2)), Some(900.0));
        assert_eq!(v(F::BlocksRecovered, None), Some(2468.0));
        assert_eq!(v(F::BrownoutMs, Some(2)), None, "no rate before the fault");
        assert_eq!(v(F::FreezeMs, Some(1)), None, "instance 1 did not die");
    }
}
