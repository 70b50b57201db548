//! `fusionlab compare`: two stored runs side by side, as AWR's "Compare
//! Periods" report puts two periods: every figure of a phase and instance
//! with its value in the 1st and the 2nd run, the difference and the
//! difference in percent, the largest differences first.
//!
//! It reads the runs' JSON reports (the `run --json` contract, see json.rs),
//! so any two stored runs compare, of one scenario or of two: phases match
//! by name, instances by number, variants by name.

use fusion_core::stats::{Stat, Unit};
use serde_json::Value;

use crate::fmt::grouped;
use crate::sheet::Out;

/// How a run is named in the comparison's heading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunLabel {
    pub id: i64,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub time: String,
    pub scenario: String,
    pub seed: u64,
    pub sets: Vec<String>,
    pub driver: String,
    pub verdict: String,
}

/// What to compare.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// Only these phases (all the phases both runs have when empty).
    pub phases: Vec<String>,
    /// Every statistic that differs, not only the largest differences.
    pub all_statistics: bool,
}

/// Statistics shown per block unless `all_statistics`.
pub const STATISTICS_SHOWN: usize = 20;
/// Wait events shown per block: those with the most time in either run.
pub const EVENTS_SHOWN: usize = 12;

/// Two runs compared.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub first: RunLabel,
    pub second: RunLabel,
    pub blocks: Vec<Block>,
    /// `variant/phase` names only one of the runs has.
    pub only_first: Vec<String>,
    pub only_second: Vec<String>,
}

/// One phase of one instance (of one variant).
#[derive(Clone, Debug)]
pub struct Block {
    pub variant: Option<String>,
    pub phase: String,
    pub instance: u64,
    pub elapsed_s: [f64; 2],
    pub sections: Vec<Section>,
}

/// Figures of one kind, the largest differences first.
#[derive(Clone, Debug)]
pub struct Section {
    pub title: &'static str,
    pub rows: Vec<Row>,
    /// Figures that differ but were left out (beyond [`STATISTICS_SHOWN`]).
    pub left_out: usize,
}

/// One figure in both runs (`None`: the run has no value, e.g. an average
/// over no blocks).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub figure: String,
    pub first: Option<f64>,
    pub second: Option<f64>,
}

impl Row {
    /// 2nd - 1st.
    pub fn diff(&self) -> Option<f64> {
        Some(self.second? - self.first?)
    }

    /// The difference in percent of the 1st (`None` when the 1st is 0).
    pub fn pct(&self) -> Option<f64> {
        let first = self.first?;
        (first != 0.0).then(|| self.diff().map(|d| 100.0 * d / first.abs()))?
    }

    /// The order of rows: both values before one, then the largest |%Diff|
    /// (from 0 to something counts as the largest), then the largest |Diff|.
    fn rank(&self) -> (bool, f64, f64) {
        let pct = match (self.first, self.diff()) {
            (Some(f), Some(d)) if f == 0.0 && d != 0.0 => f64::INFINITY,
            _ => self.pct().map_or(0.0, f64::abs),
        };
        (
            self.diff().is_none(),
            -pct,
            -self.diff().map_or(0.0, f64::abs),
        )
    }

    /// Whether the two runs differ in this figure. A ratio computed from
    /// different counts (0.03 against 0.030000000000000002 ms) is the same
    /// figure: only a difference beyond floating-point rounding counts.
    fn differs(&self) -> bool {
        match (self.first, self.second) {
            (Some(a), Some(b)) => (a - b).abs() > 1e-9 * a.abs().max(b.abs()),
            (None, None) => false,
            _ => true,
        }
    }
}

/// Both values before one, then the largest |Diff| first.
fn by_diff(a: &Row, b: &Row) -> std::cmp::Ordering {
    let d = |r: &Row| r.diff().map_or(-1.0, f64::abs);
    d(b).total_cmp(&d(a)).then_with(|| a.figure.cmp(&b.figure))
}

/// [`Row::rank`]'s order: for figures of different units.
fn by_rank(a: &Row, b: &Row) -> std::cmp::Ordering {
    let (x, y) = (a.rank(), b.rank());
    x.0.cmp(&y.0)
        .then(x.1.total_cmp(&y.1))
        .then(x.2.total_cmp(&y.2))
        .then_with(|| a.figure.cmp(&b.figure))
}

/// The variants of a report: `(Some(name), phases)` each when it declared
/// variants, else `(None, phases)`.
fn variants(report: &Value) -> Vec<(Option<String>, &Vec<Value>)> {
    if let Some(vs) = report.get("variants").and_then(Value::as_array) {
        return vs
            .iter()
            .filter_map(|v| {
                let name = v.get("name")?.as_str()?.to_string();
                Some((Some(name), v.get("phases")?.as_array()?))
            })
            .collect();
    }
    report
        .get("phases")
        .and_then(Value::as_array)
        .map(|p| vec![(None, p)])
        .unwrap_or_default()
}

fn name_of(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("?")
}

fn phase_key(variant: &Option<String>, phase: &str) -> String {
    match variant {
        Some(v) => format!("{v}/{phase}"),
        None => phase.to_string(),
    }
}

/// Compare two `run --json` reports. An error names what is missing: a
/// report without phases, or a `--phase` neither run has.
pub fn compare(
    first: (&RunLabel, &Value),
    second: (&RunLabel, &Value),
    opts: &CompareOptions,
) -> Result<Comparison, String> {
    let (a, b) = (variants(first.1), variants(second.1));
    for (label, v) in [(first.0, &a), (second.0, &b)] {
        if v.is_empty() {
            return Err(format!("run {}: the stored report has no phases", label.id));
        }
    }
    // Variants match by name; runs without variants (or of different
    // variants) compare their first ones.
    let both_variants = a[0].0.is_some() && b[0].0.is_some();
    let pairs: Vec<(Option<String>, &Vec<Value>, &Vec<Value>)> = if both_variants {
        a.iter()
            .filter_map(|(n, pa)| {
                b.iter()
                    .find(|(m, _)| m == n)
                    .map(|(_, pb)| (n.clone(), *pa, *pb))
            })
            .collect()
    } else {
        vec![(None, a[0].1, b[0].1)]
    };
    let mut known: Vec<&str> = Vec::new();
    for name in a
        .iter()
        .chain(&b)
        .flat_map(|(_, ps)| ps.iter().map(name_of))
    {
        if !known.contains(&name) {
            known.push(name);
        }
    }
    for p in &opts.phases {
        if !known.contains(&p.as_str()) {
            return Err(format!(
                "--phase {p}: neither run has a phase `{p}` (phases: {})",
                known.join(", ")
            ));
        }
    }
    let wanted = |name: &str| opts.phases.is_empty() || opts.phases.iter().any(|p| p == name);
    let mut blocks = Vec::new();
    let mut only_first = Vec::new();
    let mut only_second = Vec::new();
    for (variant, pa, pb) in &pairs {
        for p in pa.iter().filter(|p| wanted(name_of(p))) {
            let Some(q) = pb.iter().find(|q| name_of(q) == name_of(p)) else {
                only_first.push(phase_key(variant, name_of(p)));
                continue;
            };
            blocks.extend(phase_blocks(variant, p, q, opts));
        }
        for q in pb.iter().filter(|q| wanted(name_of(q))) {
            if !pa.iter().any(|p| name_of(p) == name_of(q)) {
                only_second.push(phase_key(variant, name_of(q)));
            }
        }
    }
    Ok(Comparison {
        first: first.0.clone(),
        second: second.0.clone(),
        blocks,
        only_first,
        only_second,
    })
}

fn elapsed_s(phase: &Value) -> f64 {
    phase
        .get("elapsed_us")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
        / 1e6
}

/// The blocks of one phase both runs have: one per instance both have.
fn phase_blocks(
    variant: &Option<String>,
    p: &Value,
    q: &Value,
    opts: &CompareOptions,
) -> Vec<Block> {
    let empty = Vec::new();
    let instances = |v: &Value| -> Vec<Value> {
        v.get("instances")
            .and_then(Value::as_array)
            .unwrap_or(&empty)
            .clone()
    };
    let (ia, ib) = (instances(p), instances(q));
    let id = |i: &Value| i.get("id").and_then(Value::as_u64).unwrap_or(0);
    ia.iter()
        .filter_map(|i| {
            let j = ib.iter().find(|j| id(j) == id(i))?;
            Some(Block {
                variant: variant.clone(),
                phase: name_of(p).to_string(),
                instance: id(i),
                elapsed_s: [elapsed_s(p), elapsed_s(q)],
                sections: vec![
                    awr_section(i, j),
                    event_section(i, j),
                    stat_section(i, j, opts),
                ],
            })
        })
        .collect()
}

/// The AWR lines (Workload Characteristics), as the report labels them.
fn awr_section(i: &Value, j: &Value) -> Section {
    let (a, b) = (&i["awr"], &j["awr"]);
    let mut rows: Vec<Row> = a
        .as_object()
        .into_iter()
        .flatten()
        .map(|(label, v)| Row {
            figure: label.clone(),
            first: v.as_f64(),
            second: b.get(label).and_then(Value::as_f64),
        })
        .filter(Row::differs)
        .collect();
    // Milliseconds and percentages: the difference itself ranks them.
    rows.sort_by(by_diff);
    Section {
        title: "Global Cache Workload Characteristics",
        rows,
        left_out: 0,
    }
}

/// Wait events: time waited (ms) of the events with the most time in either
/// run, the largest difference in time first.
fn event_section(i: &Value, j: &Value) -> Section {
    let time_s = |inst: &Value, event: &str| {
        inst["events"]
            .get(event)
            .and_then(|e| e.get("time_us"))
            .and_then(Value::as_f64)
            .map_or(0.0, |us| us / 1e3)
    };
    let mut names: Vec<&String> = Vec::new();
    for inst in [i, j] {
        for name in inst["events"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let mut rows: Vec<Row> = names
        .iter()
        .map(|n| Row {
            figure: (*n).clone(),
            first: Some(time_s(i, n)),
            second: Some(time_s(j, n)),
        })
        .collect();
    // The events that matter: most time in either run.
    rows.sort_by(|x, y| {
        let most = |r: &Row| r.first.unwrap_or(0.0).max(r.second.unwrap_or(0.0));
        most(y)
            .total_cmp(&most(x))
            .then_with(|| x.figure.cmp(&y.figure))
    });
    rows.truncate(EVENTS_SHOWN);
    rows.retain(Row::differs);
    rows.sort_by(by_diff);
    Section {
        title: "Wait Events (time waited, ms)",
        rows,
        left_out: 0,
    }
}

/// v$sysstat figures that differ (times in milliseconds), the largest
/// differences in percent first; the first [`STATISTICS_SHOWN`] unless asked for all.
fn stat_section(i: &Value, j: &Value, opts: &CompareOptions) -> Section {
    let (a, b) = (&i["sysstat"], &j["sysstat"]);
    let mut rows: Vec<Row> = a
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, v)| {
            let time = Stat::from_name(name).is_some_and(|s| s.unit() == Unit::Time);
            let value = |v: Option<&Value>| {
                v.and_then(Value::as_f64)
                    .map(|us| if time { us / 1e3 } else { us })
            };
            Row {
                figure: if time {
                    format!("{name} (ms)")
                } else {
                    name.clone()
                },
                first: value(Some(v)),
                second: value(b.get(name)),
            }
        })
        .filter(Row::differs)
        .collect();
    rows.sort_by(by_rank);
    let left_out = if opts.all_statistics {
        0
    } else {
        rows.len().saturating_sub(STATISTICS_SHOWN)
    };
    rows.truncate(rows.len() - left_out);
    Section {
        title: "Statistics (v$sysstat)",
        rows,
        left_out,
    }
}

/// Width of the figure column; a longer name goes on a line of its own.
const FIGURE_WIDTH: usize = 52;
const NUMBER_WIDTH: usize = 11;
const PCT_WIDTH: usize = 8;

/// A value as the comparison prints it: thousands separators, two decimals
/// below 1,000 unless whole, and in exponent form when it would not fit its
/// column (with a sign: the Diff column's `+`).
pub fn number(v: f64) -> String {
    let text = if v.fract() == 0.0 || v.abs() >= 1000.0 {
        grouped(v, 0)
    } else {
        grouped(v, 2)
    };
    if text.len() < NUMBER_WIDTH {
        text
    } else {
        format!("{v:.3e}")
    }
}

/// `+12.5`, `-3.0`, `new` (from 0), `-` (no value); in exponent form past
/// the column's width.
pub fn pct_text(r: &Row) -> String {
    match (r.first, r.diff()) {
        (Some(f), Some(d)) if f == 0.0 && d != 0.0 => "new".into(),
        _ => r.pct().map_or("-".into(), |p| {
            let text = format!("{p:+.1}");
            if text.len() <= PCT_WIDTH {
                text
            } else {
                format!("{p:+.1e}")
            }
        }),
    }
}

/// The cells of a row after its figure: 1st, 2nd, Diff, %Diff.
pub fn cells(r: &Row) -> [String; 4] {
    let v = |x: Option<f64>| x.map_or("-".into(), number);
    [
        v(r.first),
        v(r.second),
        r.diff().map_or("-".into(), |d| {
            if d > 0.0 {
                format!("+{}", number(d))
            } else {
                number(d)
            }
        }),
        pct_text(r),
    ]
}

/// One run's line of the heading.
fn run_line(which: &str, r: &RunLabel) -> String {
    format!(
        "{which}  run {}  {} UTC  {}  seed {}  {}  {}",
        r.id, r.time, r.scenario, r.seed, r.driver, r.verdict
    )
}

/// The run's overrides under its line, as many to a line as fit in 100
/// columns (one alone when it is longer).
fn sets_lines(o: &mut Out, r: &RunLabel) {
    const INDENT: &str = "     ";
    if r.sets.is_empty() {
        o.line(format!("{INDENT}no --set"));
        return;
    }
    let mut line = String::new();
    for s in r.sets.iter().map(|s| format!("--set {s}")) {
        if !line.is_empty() && INDENT.len() + line.len() + 1 + s.len() > LINE_MAX {
            o.line(format!("{INDENT}{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&s);
    }
    o.line(format!("{INDENT}{line}"));
}

/// The widest line of the text comparison.
const LINE_MAX: usize = 100;

/// A block's heading: `Phase lms-starved, inst1 (variant v)`.
pub fn block_title(b: &Block) -> String {
    let variant = b
        .variant
        .as_ref()
        .map_or(String::new(), |v| format!(" (variant {v})"));
    format!("Phase {}, inst{}{variant}", b.phase, b.instance)
}

/// The comparison as text, every line at most 100 characters (figure names
/// longer than the column go on a line of their own, as AWR wraps them).
pub fn render_text(c: &Comparison) -> String {
    let mut o = Out::default();
    o.title("AWR Compare Periods Report", '=');
    o.line(run_line("1st", &c.first));
    sets_lines(&mut o, &c.first);
    o.line(run_line("2nd", &c.second));
    sets_lines(&mut o, &c.second);
    o.line("Diff = 2nd - 1st; %Diff = Diff / 1st (new: from 0).");
    o.line("Largest Diff first (statistics: largest %Diff first).");
    for (which, list) in [("1st", &c.only_first), ("2nd", &c.only_second)] {
        if !list.is_empty() {
            o.line(format!(
                "Only in the {which} run (not compared): {}",
                list.join(", ")
            ));
        }
    }
    if c.blocks.is_empty() {
        o.blank();
        o.line("The runs have no phase and instance in common.");
    }
    for b in &c.blocks {
        o.blank();
        let title = format!(
            "{} (elapsed 1st {:.1} s, 2nd {:.1} s)",
            block_title(b),
            b.elapsed_s[0],
            b.elapsed_s[1]
        );
        o.title(&title, '~');
        for s in &b.sections {
            o.blank();
            section_text(&mut o, s);
        }
    }
    o.0
}

fn section_text(o: &mut Out, s: &Section) {
    let head = |name: &str, cells: [&str; 4]| {
        format!(
            "{name:<FIGURE_WIDTH$} {:>NUMBER_WIDTH$} {:>NUMBER_WIDTH$} {:>NUMBER_WIDTH$} {:>PCT_WIDTH$}",
            cells[0], cells[1], cells[2], cells[3]
        )
    };
    o.line(head(s.title, ["1st", "2nd", "Diff", "%Diff"]));
    o.line(head(
        &"-".repeat(FIGURE_WIDTH),
        [
            &"-".repeat(NUMBER_WIDTH),
            &"-".repeat(NUMBER_WIDTH),
            &"-".repeat(NUMBER_WIDTH),
            &"-".repeat(PCT_WIDTH),
        ],
    ));
    if s.rows.is_empty() {
        o.line("(no difference)");
    }
    for r in &s.rows {
        let c = cells(r);
        let name = if r.figure.chars().count() > FIGURE_WIDTH {
            o.line(&r.figure);
            ""
        } else {
            r.figure.as_str()
        };
        o.line(head(name, [&c[0], &c[1], &c[2], &c[3]]).trim_end());
    }
    if s.left_out > 0 {
        o.line(format!(
            "({} more statistics differ; --all shows them)",
            s.left_out
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn label(id: i64) -> RunLabel {
        RunLabel {
            id,
            time: "2026-01-02 03:04:05".into(),
            scenario: "s".into(),
            seed: 1,
            sets: Vec::new(),
            driver: "simulator".into(),
            verdict: "REPRODUCED".into(),
        }
    }

    fn report(receive_ms: f64, commits: u64, phases: &[&str]) -> Value {
        let phase = |name: &str| {
            json!({ "name": name, "elapsed_us": 2_000_000, "instances": [ {
                "id": 1,
                "awr": { "Avg global cache cr block receive time (ms)": receive_ms,
                         "Avg global enqueue get time (ms)": null },
                "events": { "gc cr block 2-way": { "time_us": commits * 100 } },
                "sysstat": { "user commits": commits, "DB time": 1_500_000, "redo size": 0 },
            } ] })
        };
        json!({ "phases": phases.iter().map(|p| phase(p)).collect::<Vec<_>>() })
    }

    #[test]
    fn rows_rank_by_percent_then_difference_and_new_first() {
        let row = |f: &str, a: f64, b: f64| Row {
            figure: f.into(),
            first: Some(a),
            second: Some(b),
        };
        let mut rows = [
            row("small", 100.0, 110.0),
            row("big", 10.0, 40.0),
            row("new", 0.0, 5.0),
            Row {
                figure: "one-sided".into(),
                first: None,
                second: Some(1.0),
            },
            row("down", 100.0, 20.0),
        ];
        rows.sort_by(by_rank);
        let order: Vec<&str> = rows.iter().map(|r| r.figure.as_str()).collect();
        assert_eq!(order, ["new", "big", "down", "small", "one-sided"]);
        assert_eq!(cells(&rows[1]), ["10", "40", "+30", "+300.0"]);
        assert_eq!(cells(&rows[2]), ["100", "20", "-80", "-80.0"]);
        assert_eq!(cells(&rows[0])[3], "new");
        assert_eq!(cells(&rows[4]), ["-", "1", "-", "-"]);
    }

    #[test]
    fn a_ratio_rounded_differently_is_no_difference() {
        let a = report(0.03, 100, &["baseline"]);
        let b = report(0.030000000000000002, 100, &["baseline"]);
        let c = compare((&label(1), &a), (&label(2), &b), &CompareOptions::default())
            .expect("compares");
        assert!(c.blocks[0].sections[0].rows.is_empty());
        let b = report(0.031, 100, &["baseline"]);
        let c = compare((&label(1), &a), (&label(2), &b), &CompareOptions::default())
            .expect("compares");
        assert_eq!(c.blocks[0].sections[0].rows.len(), 1, "a real difference");
    }

    #[test]
    fn phases_match_by_name_and_unknown_phases_are_named() {
        let a = report(0.5, 100, &["baseline", "starved"]);
        let b = report(20.0, 80, &["baseline", "other"]);
        let c = compare((&label(1), &a), (&label(2), &b), &CompareOptions::default())
            .expect("compares");
        assert_eq!(c.blocks.len(), 1);
        assert_eq!(c.only_first, ["starved"]);
        assert_eq!(c.only_second, ["other"]);
        let awr = &c.blocks[0].sections[0];
        assert_eq!(awr.rows.len(), 1, "a null in both runs is no difference");
        assert_eq!(awr.rows[0].diff(), Some(19.5));
        let stats = &c.blocks[0].sections[2];
        assert_eq!(stats.rows.len(), 1, "equal figures are left out");
        assert_eq!(stats.rows[0].figure, "user commits");
        let events = &c.blocks[0].sections[1];
        assert_eq!(events.rows[0].first, Some(10.0), "ms");

        let e = compare(
            (&label(1), &a),
            (&label(2), &b),
            &CompareOptions {
                phases: vec!["nope".into()],
                ..Default::default()
            },
        )
        .expect_err("no such phase");
        assert!(
            e.contains("--phase nope: neither run has a phase `nope`"),
            "{e}"
        );
    }

    #[test]
    fn every_text_line_fits_100_columns() {
        let a = report(0.5, 100, &["baseline"]);
        let b = report(1234567.25, 99_999_999, &["baseline"]);
        let mut many = label(2);
        many.sets = (0..12)
            .map(|i| format!("phase.phase-number-{i}.duration_s=1"))
            .collect();
        let c =
            compare((&label(1), &a), (&many, &b), &CompareOptions::default()).expect("compares");
        let text = render_text(&c);
        assert!(text.starts_with("AWR Compare Periods Report\n"));
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "too long: {line:?}");
        }
        assert!(text.contains("Avg global cache cr block receive time (ms)"));
        assert_eq!(text.matches("--set phase.phase-number-").count(), 12);
    }
}
