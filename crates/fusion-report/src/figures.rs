//! The compact figures of a run the tour prints (a line per phase and
//! instance, the parallel statements), a scenario's figure with its unit,
//! and a figure at one place of a run.

use fusion_core::metrics::{AwrLine, Metric, SqlColumn};
use fusion_core::stats::{Stats, Unit};
use fusion_scenario::MetricRef;

use crate::RunResult;
use crate::fmt::{TEXT_WIDTH, count, grouped, wrap, wrapped};
use crate::text::top_events;

/// Per variant, phase and instance, one line: gc cr and current receive
/// times, the cr and current flush times of the blocks it served, and its top
/// foreground wait event with its average. A variant's name heads its
/// lines; a top wait too long for 100 columns wraps under its column.
pub fn key_figures(result: &RunResult, names_9i: bool) -> String {
    let variants = result.has_variants && result.variants.len() > 1;
    let heads: [[&str; 7]; 2] = [
        ["", "", "gc cr", "gc cur", "cr", "cur", ""],
        [
            "Phase",
            "Inst",
            "recv ms",
            "recv ms",
            "flush ms",
            "flush ms",
            "Top foreground wait (avg)",
        ],
    ];
    // `None`: a variant's heading.
    let mut rows: Vec<(Option<[String; 7]>, String)> = Vec::new();
    for v in &result.variants {
        if variants {
            rows.push((None, format!("{}:", v.name)));
        }
        for p in &v.phases {
            for (k, i) in p.instances.iter().enumerate() {
                let figure =
                    |line: AwrLine| line.eval(&i.stats).map_or_else(|| "-".to_string(), ms);
                let phase = if k == 0 {
                    p.name.clone()
                } else {
                    String::new()
                };
                rows.push((
                    Some([
                        phase,
                        i.id.to_string(),
                        figure(AwrLine::CrReceiveMs),
                        figure(AwrLine::CurrentReceiveMs),
                        figure(AwrLine::CrFlushMs),
                        figure(AwrLine::CurrentFlushMs),
                        top_wait(&i.stats, names_9i),
                    ]),
                    String::new(),
                ));
            }
        }
    }
    let indent = if variants { "  " } else { "" };
    let mut widths = [0usize; 6];
    for (c, w) in widths.iter_mut().enumerate() {
        let cells = rows.iter().filter_map(|r| r.0.as_ref()).map(|r| &r[c]);
        *w = heads
            .iter()
            .map(|h| h[c].len())
            .chain(cells.map(|x| x.chars().count()))
            .max()
            .unwrap_or(0);
    }
    widths[0] += indent.len();
    let line = |cells: [&str; 7], indent: &str| -> Vec<String> {
        let mut head = format!("{indent}{:<w$}", cells[0], w = widths[0] - indent.len());
        head.push_str(&format!("  {:>w$}", cells[1], w = widths[1]));
        for (c, cell) in cells.iter().enumerate().take(6).skip(2) {
            head.push_str(&format!("  {cell:>w$}", w = widths[c]));
        }
        head.push_str("  ");
        let rest = " ".repeat(head.chars().count());
        wrap(cells[6], TEXT_WIDTH, &head, &rest)
    };
    let mut out: Vec<String> = Vec::new();
    for h in &heads {
        out.extend(line(*h, ""));
    }
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let top_w = rows
        .iter()
        .filter_map(|r| r.0.as_ref())
        .map(|r| r[6].chars().count())
        .chain([heads[1][6].len()])
        .max()
        .unwrap_or(0);
    let used = widths.iter().map(|w| w + 2).sum::<usize>();
    out.push(format!(
        "{}  {}",
        rule.join("  "),
        "-".repeat(top_w.min(TEXT_WIDTH.saturating_sub(used)))
    ));
    for (row, heading) in &rows {
        match row {
            None => out.push(heading.clone()),
            Some(r) => out.extend(line(
                [&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]],
                indent,
            )),
        }
    }
    let mut text: String = out
        .iter()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text
}

/// One line per parallel statement of the run: where it ran, how long it
/// took, the table-queue bytes that crossed the interconnect. Empty when
/// the run had none.
pub fn px_figures(result: &RunResult) -> String {
    let mut out = String::new();
    for v in &result.variants {
        for p in &v.phases {
            let px = p.cluster_stats().px;
            for q in &px.queries {
                let across: u64 = px
                    .sessions
                    .iter()
                    .filter(|s| s.qc_inst == q.qc_inst && s.exec == q.exec)
                    .map(|s| s.bytes_sent_remote)
                    .sum();
                let on: Vec<String> = q
                    .slaves
                    .iter()
                    .map(|(i, n)| format!("inst{i} {n}"))
                    .collect();
                let place = if on.is_empty() {
                    "serial".to_string()
                } else {
                    on.join(" + ")
                };
                let variant = if result.has_variants {
                    format!("{} ", v.name)
                } else {
                    String::new()
                };
                let line = format!(
                    "{variant}{}: {} DOP {} (requested {}), slaves {place}, {} ms, {} bytes across",
                    p.name,
                    q.query,
                    q.dop,
                    q.requested_dop,
                    ms(q.elapsed_ns as f64 / 1e6),
                    grouped(across as f64, 0)
                );
                out.push_str(&wrapped(&line, "  ", "    "));
                out.push('\n');
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\nParallel statements:\n{out}")
}

/// The foreground wait event with the most time, with its average wait.
fn top_wait(s: &Stats, names_9i: bool) -> String {
    top_events(s, names_9i)
        .into_iter()
        .find_map(|e| {
            let waits = e.waits.filter(|w| *w > 0)?;
            let avg = e.time_ns as f64 / 1e6 / waits as f64;
            Some(format!("{} {} ms", e.name, ms(avg)))
        })
        .unwrap_or_else(|| "-".to_string())
}

/// A figure in milliseconds: two decimals below 10, one above.
pub fn ms(v: f64) -> String {
    if v.abs() < 10.0 {
        format!("{v:.2}")
    } else {
        grouped(v, 1)
    }
}

/// A figure with its unit, as the tour prints a scenario's measured figure.
pub fn with_unit(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Awr(line) if line.label().ends_with('%') => format!("{v:.1} %"),
        Metric::Awr(_) | Metric::EventTimeMs(_) | Metric::EventAvgMs(_) | Metric::DecompMs(..) => {
            format!("{} ms", ms(v))
        }
        Metric::Stat(stat) => match stat.unit() {
            Unit::Time => format!("{} ms", ms(v)),
            Unit::Bytes => format!("{} bytes", grouped(v, 0)),
            Unit::Count => count(v),
        },
        Metric::EventWaits(_) => format!("{} waits", count(v)),
        Metric::PerSecond(_) => format!("{}/s", grouped(v, 1)),
        Metric::DecompShare(..) => format!("{:.1} %", v * 100.0),
        Metric::ClassTimeMs(_) => format!("{} ms", ms(v)),
        Metric::ClassTimeMsPerExec(_) => format!("{} ms", fine_ms(v)),
        Metric::Recovery(f) if f.is_ms() => format!("{} ms", ms(v)),
        Metric::Recovery(fusion_core::metrics::RecoveryFigure::DetectedS) => format!("{v:.3} s"),
        Metric::Recovery(_) => count(v),
        Metric::Node(f) if f.is_pct() => format!("{v:.1} %"),
        Metric::Node(_) => format!("{v:.1} ns"),
        Metric::Sql(c) | Metric::SqlPerExec(c) => match c {
            _ if c.is_time() => format!("{} ms", fine_ms(v)),
            SqlColumn::Query | SqlColumn::Current => format!("{} gets", count(v)),
            SqlColumn::Disk => format!("{} reads", count(v)),
            SqlColumn::Rows => format!("{} rows", count(v)),
            _ => format!("{} executions", count(v)),
        },
    }
}

/// Milliseconds with three decimals below 1 ms (a statement's CPU per
/// execution is tens of microseconds), as [`ms`] above.
fn fine_ms(v: f64) -> String {
    if v.abs() < 1.0 {
        format!("{v:.3}")
    } else {
        ms(v)
    }
}

/// A figure at one place of a run: the variant, phase and instance (or the
/// cluster, summed) `m` names. `None` when that place is not in the run or
/// the figure has nothing to measure.
pub fn measure(result: &RunResult, m: &MetricRef) -> Option<f64> {
    let variant = match &m.variant {
        Some(name) => name.as_str(),
        None => result.variants.first()?.name.as_str(),
    };
    crate::verdict::value_of(m, variant, &result.variants).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::stats::{Stat, Wait};

    #[test]
    fn numbers() {
        assert_eq!(grouped(1_234_567.0, 0), "1,234,567");
        assert_eq!(grouped(-4_380.04, 1), "-4,380.0");
        assert_eq!(grouped(12.0, 2), "12.00");
        assert_eq!(count(5_413.0), "5,413");
        assert_eq!(count(0.5), "0.50");
        assert_eq!(ms(0.391), "0.39");
        assert_eq!(ms(63.34), "63.3");
        assert_eq!(ms(4380.0), "4,380.0");
    }

    #[test]
    fn units() {
        let cr = Metric::Awr(AwrLine::CrReceiveMs);
        assert_eq!(with_unit(cr, 63.3), "63.3 ms");
        assert_eq!(with_unit(Metric::Awr(AwrLine::CrFlushPct), 5.0), "5.0 %");
        assert_eq!(
            with_unit(Metric::EventWaits(Wait::LogFileSync), 5413.0),
            "5,413 waits"
        );
        assert_eq!(
            with_unit(Metric::Stat(Stat::RedoSize), 4096.0),
            "4,096 bytes"
        );
        assert_eq!(
            with_unit(Metric::Stat(Stat::GcCrBlockReceiveTime), 1.5),
            "1.50 ms"
        );
        assert_eq!(with_unit(Metric::Stat(Stat::UserCommits), 10.0), "10");
        assert_eq!(
            with_unit(Metric::PerSecond(Stat::UserCommits), 10.0),
            "10.0/s"
        );
        let share = Metric::DecompShare(
            fusion_core::metrics::BlockKind::Cr,
            fusion_core::metrics::Part::Wire,
        );
        assert_eq!(with_unit(share, 0.034), "3.4 %");
        assert_eq!(
            with_unit(Metric::SqlPerExec(SqlColumn::Cpu), 0.67),
            "0.670 ms"
        );
        assert_eq!(
            with_unit(Metric::SqlPerExec(SqlColumn::Query), 31.0),
            "31 gets"
        );
        assert_eq!(
            with_unit(
                Metric::ClassTimeMs(fusion_core::stats::WaitClass::Cluster),
                1234.5
            ),
            "1,234.5 ms"
        );
    }
}
