//! Number formatting shared by the text report and the verdicts.

use fusion_core::metrics::Metric;
use fusion_core::stats::Unit;

/// How a figure reads on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Milliseconds.
    Ms,
    /// Milliseconds to the microsecond (a statement's figures per execution).
    FineMs,
    /// Already a percentage (AWR `... %` lines).
    Pct,
    /// A 0..1 share, shown as a percentage.
    Share,
    /// Something counted.
    Count,
    /// Per second of the interval.
    PerSecond,
    Bytes,
    Seconds,
    /// Nanoseconds (a memory access).
    Ns,
}

impl Shown {
    pub(crate) fn of(metric: Metric) -> Shown {
        match metric {
            Metric::Awr(line) => {
                if line.label().ends_with('%') {
                    Shown::Pct
                } else {
                    Shown::Ms
                }
            }
            Metric::Stat(stat) => match stat.unit() {
                Unit::Time => Shown::Ms,
                Unit::Bytes => Shown::Bytes,
                Unit::Count => Shown::Count,
            },
            Metric::PerSecond(_) => Shown::PerSecond,
            Metric::EventWaits(_) => Shown::Count,
            Metric::EventTimeMs(_) | Metric::EventAvgMs(_) | Metric::DecompMs(..) => Shown::Ms,
            Metric::DecompShare(..) => Shown::Share,
            Metric::ClassTimeMs(_) => Shown::Ms,
            Metric::ClassTimeMsPerExec(_) => Shown::FineMs,
            Metric::Sql(c) | Metric::SqlPerExec(c) if c.is_time() => Shown::FineMs,
            Metric::Sql(_) | Metric::SqlPerExec(_) => Shown::Count,
            Metric::Recovery(f) if f.is_ms() => Shown::Ms,
            Metric::Recovery(fusion_core::metrics::RecoveryFigure::DetectedS) => Shown::Seconds,
            Metric::Recovery(_) => Shown::Count,
            Metric::Node(f) if f.is_pct() => Shown::Pct,
            Metric::Node(_) => Shown::Ns,
        }
    }

    /// Every unit, for reading one back by its name.
    const ALL: [Shown; 9] = [
        Shown::Ms,
        Shown::FineMs,
        Shown::Pct,
        Shown::Share,
        Shown::Count,
        Shown::PerSecond,
        Shown::Bytes,
        Shown::Seconds,
        Shown::Ns,
    ];

    /// As a sweep's per-run JSON names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Shown::Ms => "ms",
            Shown::FineMs => "fine_ms",
            Shown::Pct => "pct",
            Shown::Share => "share",
            Shown::Count => "count",
            Shown::PerSecond => "per_second",
            Shown::Bytes => "bytes",
            Shown::Seconds => "seconds",
            Shown::Ns => "ns",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Shown> {
        Shown::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The value with its unit, e.g. `38.20 ms`, `5.00 %`, `5,413`.
    pub(crate) fn show(self, v: f64) -> String {
        match self {
            Shown::Ms => format!("{v:.2} ms"),
            Shown::FineMs => format!("{v:.3} ms"),
            Shown::Pct => format!("{v:.2} %"),
            Shown::Ns => format!("{v:.1} ns"),
            Shown::Share => format!("{:.2} %", v * 100.0),
            Shown::Count => count(v),
            Shown::PerSecond => format!("{v:.2}/s"),
            Shown::Bytes => format!("{} bytes", count(v)),
            Shown::Seconds => format!("{v:.3} s"),
        }
    }
}

/// A count: whole numbers with thousands separators, others with 2 decimals.
pub(crate) fn count(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        group(&format!("{v:.0}"))
    } else {
        format!("{v:.2}")
    }
}

/// A number with `decimals` decimals and thousands separators: `1,234.5`.
pub fn grouped(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    match s.split_once('.') {
        Some((int, frac)) => format!("{}.{frac}", group(int)),
        None => group(&s),
    }
}

/// A plain factor without useless zeros: `10`, `0.5`, `1.25`.
pub(crate) fn factor(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Insert thousands separators into an integer string (with optional sign).
fn group(int: &str) -> String {
    let (sign, digits) = match int.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", int),
    };
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// The widest line a text report prints: it fits a 100-column terminal.
pub const TEXT_WIDTH: usize = 100;

/// `text` broken at spaces into lines of at most `width` characters, the
/// first starting with `first`, the others with `rest` (as AWR wraps a long
/// SQL text under its row). A word longer than a line is cut.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    // Each word with the spaces before it: kept inside a line (`a  >=  b`),
    // dropped where the line breaks.
    let mut pieces: Vec<(usize, &str)> = Vec::new();
    let mut spaces = 0;
    for part in text.split(' ') {
        if part.is_empty() {
            spaces += 1;
            continue;
        }
        pieces.push((spaces, part));
        spaces = 1;
    }
    let mut lines = Vec::new();
    let mut line = first.to_string();
    // No word on `line` yet.
    let mut empty = true;
    for (spaces, word) in pieces {
        let used = line.chars().count();
        let need = word.chars().count() + if empty { 0 } else { spaces };
        if !empty && used + need > width {
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            empty = true;
        }
        if !empty {
            line.push_str(&" ".repeat(spaces));
        }
        let mut chars: Vec<char> = word.chars().collect();
        loop {
            let room = width.saturating_sub(line.chars().count()).max(1);
            if chars.len() <= room {
                line.extend(chars);
                break;
            }
            line.extend(chars.drain(..room));
            lines.push(std::mem::replace(&mut line, rest.to_string()));
        }
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines.iter().map(|l| l.trim_end().to_string()).collect()
}

/// [`wrap`] at [`TEXT_WIDTH`], joined with newlines (no last newline).
pub fn wrapped(text: &str, first: &str, rest: &str) -> String {
    wrap(text, TEXT_WIDTH, first, rest).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_back_by_name() {
        for s in Shown::ALL {
            assert_eq!(Shown::from_name(s.name()), Some(s));
        }
        assert_eq!(Shown::from_name("furlongs"), None);
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(count(123725.0), "123,725");
        assert_eq!(count(12.0), "12");
        assert_eq!(count(-1234.0), "-1,234");
        assert_eq!(grouped(4380.04, 1), "4,380.0");
        assert_eq!(grouped(0.5, 2), "0.50");
        assert_eq!(factor(10.0), "10");
        assert_eq!(factor(0.5), "0.5");
    }

    #[test]
    fn long_text_wraps_under_its_row_at_word_boundaries() {
        let lines = wrap("aaa bbb ccc ddd", 10, "  ", "    ");
        assert_eq!(lines, vec!["  aaa bbb", "    ccc", "    ddd"]);
        assert!(lines.iter().all(|l| l.chars().count() <= 10));
        // A word longer than a line is cut, never left over the width.
        let lines = wrap("x abcdefghijklmnop", 8, "", "..");
        assert_eq!(lines, vec!["x", "..abcdef", "..ghijkl", "..mnop"]);
        assert_eq!(wrap("", 8, "> ", ""), vec![">"]);
        assert_eq!(wrapped("short", "  ", ""), "  short");
        // Spacing inside a line is kept; at a break it goes.
        assert_eq!(wrap("a  >=  b  c", 9, "", ""), vec!["a  >=  b", "c"]);
    }
}
