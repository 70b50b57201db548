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
            Metric::Sql(c) | Metric::SqlPerExec(c) if c.is_time() => Shown::FineMs,
            Metric::Sql(_) | Metric::SqlPerExec(_) => Shown::Count,
            Metric::Recovery(f) if f.is_ms() => Shown::Ms,
            Metric::Recovery(fusion_core::metrics::RecoveryFigure::DetectedS) => Shown::Seconds,
            Metric::Recovery(_) => Shown::Count,
            Metric::Node(f) if f.is_pct() => Shown::Pct,
            Metric::Node(_) => Shown::Ns,
        }
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
pub(crate) fn grouped(v: f64, decimals: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
