//! Charts drawn as inline SVG, by hand: a line chart over time (phases as
//! shaded bands, faults as labelled vertical lines) and horizontal stacked
//! bars. No script, no external resource: the page stays one file. Every
//! number is printed with a fixed precision, so the same data give the
//! same bytes.

use std::fmt::Write;

use super::escape::esc;

/// Width and height of a line chart's viewBox (it scales to its box).
const LINE_W: f64 = 640.0;
const LINE_H: f64 = 230.0;
/// Room around the plot: left for the y labels, top for the title and
/// the phase names, bottom for the x labels.
const LEFT: f64 = 52.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 30.0;

/// A phase: a band from `start` to `end` (x units: seconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub start: f64,
    pub end: f64,
    pub label: String,
}

/// A fault or change at `at` (seconds), drawn as a vertical line.
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub at: f64,
    pub label: String,
}

/// One line: its points (x, y); a `None` y breaks the line there.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, Option<f64>)>,
}

/// A chart of lines over time.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_max: f64,
    pub bands: Vec<Band>,
    pub marks: Vec<Mark>,
    pub lines: Vec<Line>,
}

/// One bar of a [`StackedBars`] chart: a label and a value per segment.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub values: Vec<f64>,
}

/// Horizontal bars, each split into the same segments.
#[derive(Clone, Debug, PartialEq)]
pub struct StackedBars {
    pub title: String,
    /// The unit of the values, shown after each bar's total.
    pub unit: String,
    /// Segment names and colours, in stacking order.
    pub segments: Vec<(String, &'static str)>,
    pub bars: Vec<Bar>,
}

/// Colours told apart in print and by most colour-blind readers (Okabe-Ito).
pub const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#8a7a00", "#555555",
];

/// A number for a label: no more digits than it needs.
pub fn num(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    trim_zeros(&s)
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// A coordinate, to a tenth of a unit.
fn c(v: f64) -> String {
    trim_zeros(&format!("{v:.1}"))
}

/// A step for about `target` ticks over `0..max`: 1, 2 or 5 times a power of ten.
pub fn nice_step(max: f64, target: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / target.max(1.0);
    let pow = 10f64.powf(raw.log10().floor());
    let m = raw / pow;
    let f = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    f * pow
}

/// The line chart as an `<svg>` element.
pub fn line_chart(chart: &LineChart) -> String {
    let (pw, ph) = (LINE_W - LEFT - RIGHT, LINE_H - TOP - BOTTOM);
    let x_max = if chart.x_max > 0.0 { chart.x_max } else { 1.0 };
    let y_top = chart
        .lines
        .iter()
        .flat_map(|l| l.points.iter().filter_map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let y_step = nice_step(y_top, 4.0);
    let y_max = if y_top > 0.0 {
        (y_top / y_step).ceil() * y_step
    } else {
        y_step
    };
    let x = |v: f64| LEFT + pw * (v / x_max).clamp(0.0, 1.0);
    let y = |v: f64| TOP + ph * (1.0 - (v / y_max).clamp(0.0, 1.0));
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        c(LINE_W),
        c(LINE_H),
        esc(&chart.title)
    );
    let _ = write!(s, "<title>{}</title>", esc(&chart.title));
    let _ = write!(
        s,
        "<text class=\"ct\" x=\"{}\" y=\"14\">{}</text>",
        c(LEFT),
        esc(&chart.title)
    );
    // Phases: alternating bands, their names along the top.
    for (k, b) in chart.bands.iter().enumerate() {
        let (x0, x1) = (x(b.start), x(b.end));
        let _ = write!(
            s,
            "<rect class=\"band{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            k % 2,
            c(x0),
            c(TOP),
            c((x1 - x0).max(0.0)),
            c(ph)
        );
        let _ = write!(
            s,
            "<text class=\"bl\" x=\"{}\" y=\"{}\">{}</text>",
            c(x0 + 3.0),
            c(TOP - 4.0),
            esc(&clip(&b.label, ((x1 - x0) / 5.5) as usize))
        );
    }
    // Grid and y labels.
    let mut v = 0.0;
    while v <= y_max + y_step / 2.0 {
        let yy = y(v);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\
             <text class=\"yl\" x=\"{}\" y=\"{}\">{}</text>",
            c(LEFT),
            c(yy),
            c(LEFT + pw),
            c(yy),
            c(LEFT - 4.0),
            c(yy + 3.5),
            num(v)
        );
        v += y_step;
    }
    // x labels (seconds).
    let x_step = nice_step(x_max, 8.0);
    let mut t = 0.0;
    while t <= x_max + x_step / 1000.0 {
        let _ = write!(
            s,
            "<text class=\"xl\" x=\"{}\" y=\"{}\">{}</text>",
            c(x(t)),
            c(TOP + ph + 13.0),
            num(t)
        );
        t += x_step;
    }
    let _ = write!(
        s,
        "<text class=\"xl\" x=\"{}\" y=\"{}\">s</text>",
        c(LEFT + pw),
        c(TOP + ph + 25.0)
    );
    let _ = write!(
        s,
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        c(LEFT),
        c(TOP),
        c(pw),
        c(ph)
    );
    // Faults: a dashed line and a numbered tag; the label in its title
    // (hover) and in the legend below the chart.
    for (k, m) in chart.marks.iter().enumerate() {
        let xx = x(m.at);
        let _ = write!(
            s,
            "<g class=\"mark\"><title>{}</title><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\
             <text x=\"{}\" y=\"{}\">{}</text></g>",
            esc(&m.label),
            c(xx),
            c(TOP),
            c(xx),
            c(TOP + ph),
            c(xx + 2.0),
            c(TOP + 10.0 + 10.0 * (k % 3) as f64),
            k + 1
        );
    }
    for l in &chart.lines {
        let mut d = String::new();
        let mut pen_down = false;
        for &(px, py) in &l.points {
            match py.filter(|v| v.is_finite()) {
                Some(py) => {
                    let _ = write!(
                        d,
                        "{}{} {}",
                        if pen_down { " L" } else { " M" },
                        c(x(px)),
                        c(y(py))
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        if !d.is_empty() {
            let _ = write!(
                s,
                "<path class=\"ln\" stroke=\"{}\" d=\"{}\"><title>{}</title></path>",
                l.color,
                d.trim_start(),
                esc(&l.name)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// Shorten `s` to `max` characters with an ellipsis.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max <= 1 {
        return String::new();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// The legend of a chart: a coloured key per line and the numbered faults.
pub fn legend(lines: &[(String, &'static str)], marks: &[Mark]) -> String {
    let mut s = String::from("<div class=\"legend\">");
    for (name, color) in lines {
        let _ = write!(
            s,
            "<span><i style=\"background:{color}\"></i>{}</span>",
            esc(name)
        );
    }
    for (k, m) in marks.iter().enumerate() {
        let _ = write!(
            s,
            "<span class=\"fault\"><b>{}</b> {} s: {}</span>",
            k + 1,
            num(m.at),
            esc(&m.label)
        );
    }
    s.push_str("</div>");
    s
}

/// The stacked bars as an `<svg>` element (with its legend on top).
pub fn stacked_bars(chart: &StackedBars) -> String {
    const W: f64 = 640.0;
    const LABEL_W: f64 = 200.0;
    const TOTAL_W: f64 = 76.0;
    const ROW: f64 = 20.0;
    let pw = W - LABEL_W - TOTAL_W;
    // Legend keys along the top, wrapped onto more rows when they do not fit.
    let mut keys = Vec::new();
    let (mut lx, mut ly) = (0.0, 22.0);
    for (name, color) in &chart.segments {
        let w = 22.0 + 6.4 * name.chars().count() as f64;
        if lx > 0.0 && lx + w > W {
            lx = 0.0;
            ly += 15.0;
        }
        keys.push((lx, ly, name, color));
        lx += w;
    }
    let head = ly + 18.0;
    let total = |b: &Bar| b.values.iter().filter(|v| v.is_finite()).sum::<f64>();
    let max = chart.bars.iter().map(total).fold(0.0f64, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    let h = head + ROW * chart.bars.len() as f64 + 6.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart bars\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\"><title>{}</title>\
         <text class=\"ct\" x=\"0\" y=\"14\">{}</text>",
        c(W),
        c(h),
        esc(&chart.title),
        esc(&chart.title),
        esc(&chart.title)
    );
    for (lx, ly, name, color) in keys {
        let _ = write!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{color}\"/>\
             <text class=\"lg\" x=\"{}\" y=\"{}\">{}</text>",
            c(lx),
            c(ly),
            c(lx + 13.0),
            c(ly + 9.0),
            esc(name)
        );
    }
    for (k, b) in chart.bars.iter().enumerate() {
        let y = head + ROW * k as f64;
        let _ = write!(
            s,
            "<text class=\"yl\" x=\"{}\" y=\"{}\">{}</text>",
            c(LABEL_W - 6.0),
            c(y + 13.0),
            esc(&clip(&b.label, 34))
        );
        let mut x = LABEL_W;
        for (v, (name, color)) in b.values.iter().zip(&chart.segments) {
            if !v.is_finite() || *v <= 0.0 {
                continue;
            }
            let w = pw * v / max;
            let _ = write!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{color}\">\
                 <title>{}: {} {}</title></rect>",
                c(x),
                c(y + 2.0),
                c(w),
                c(ROW - 5.0),
                esc(name),
                num(*v),
                esc(&chart.unit)
            );
            x += w;
        }
        let _ = write!(
            s,
            "<text class=\"tv\" x=\"{}\" y=\"{}\">{} {}</text>",
            c(x + 4.0),
            c(y + 13.0),
            num(total(b)),
            esc(&chart.unit)
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> LineChart {
        LineChart {
            title: "gc cr receive <ms> & more".into(),
            x_max: 10.0,
            bands: vec![
                Band {
                    start: 0.0,
                    end: 4.0,
                    label: "baseline".into(),
                },
                Band {
                    start: 4.0,
                    end: 10.0,
                    label: "starved".into(),
                },
            ],
            marks: vec![Mark {
                at: 4.0,
                label: "stress_cpu inst2".into(),
            }],
            lines: vec![Line {
                name: "inst1".into(),
                color: PALETTE[0],
                points: vec![
                    (1.0, Some(0.4)),
                    (2.0, None),
                    (3.0, Some(0.5)),
                    (4.0, Some(23.0)),
                ],
            }],
        }
    }

    #[test]
    fn a_line_chart_scales_its_points_into_the_plot_and_breaks_at_gaps() {
        let svg = line_chart(&chart());
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
        // The title is escaped.
        assert!(svg.contains("gc cr receive &lt;ms&gt; &amp; more"), "{svg}");
        assert!(!svg.contains("<ms>"));
        // y: 23 rounds up to 30 with steps of 10; x: 10 s over the plot.
        assert!(
            svg.contains(">30</text>") && !svg.contains(">40</text>"),
            "{svg}"
        );
        // Point (4 s, 23): x = 52 + 574 x 0.4, y = 44 + 156 x (1 - 23/30).
        assert!(
            svg.contains("M109.4 197.9 M224.2 197.4 L281.6 80.4"),
            "{svg}"
        );
        // The gap at 2 s starts a new segment.
        assert_eq!(svg.matches(" M").count() + svg.matches("d=\"M").count(), 2);
        assert_eq!(svg.matches("<rect class=\"band").count(), 2);
        assert!(svg.contains("<title>stress_cpu inst2</title>"));
        assert_eq!(svg, line_chart(&chart()), "deterministic");
    }

    #[test]
    fn an_empty_chart_still_draws_its_axes() {
        let svg = line_chart(&LineChart {
            title: "nothing".into(),
            x_max: 0.0,
            bands: Vec::new(),
            marks: Vec::new(),
            lines: Vec::new(),
        });
        assert!(svg.contains("class=\"frame\""));
        assert!(!svg.contains("<path"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn stacked_bars_are_proportional_to_the_largest_total() {
        let svg = stacked_bars(&StackedBars {
            title: "decomposition".into(),
            unit: "ms".into(),
            segments: vec![("a".into(), PALETTE[0]), ("b".into(), PALETTE[1])],
            bars: vec![
                Bar {
                    label: "inst1".into(),
                    values: vec![1.0, 3.0],
                },
                Bar {
                    label: "inst2".into(),
                    values: vec![2.0, 0.0],
                },
            ],
        });
        // The plot is 364 wide: 4 ms fills it, 1 ms is a quarter.
        assert!(svg.contains("width=\"91\""), "{svg}");
        assert!(svg.contains("width=\"273\""), "{svg}");
        assert!(svg.contains("width=\"182\""), "{svg}");
        // A zero segment draws nothing: three rectangles and two legend keys.
        assert_eq!(svg.matches("<rect").count(), 5);
        assert!(svg.contains(">4 ms</text>") && svg.contains(">2 ms</text>"));
    }

    #[test]
    fn numbers_and_steps_are_short_and_round() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(0.3914), "0.391");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(22.89), "22.9");
        assert_eq!(num(1234.4), "1234");
        assert_eq!(nice_step(23.0, 4.0), 10.0);
        assert_eq!(nice_step(45.0, 8.0), 10.0);
        assert_eq!(nice_step(0.9, 4.0), 0.5);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
        assert_eq!(clip("lms-normal-priority", 8), "lms-nor…");
    }
}
