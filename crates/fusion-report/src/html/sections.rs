//! The sections of the HTML report: the run's facts and verdict, the
//! expectations, per variant the time-series charts (phases as bands,
//! faults as marks), the latency decomposition and the wait classes per
//! phase as stacked bars, the variants side by side; and the tour's
//! summary and myth sections.

use std::collections::BTreeSet;
use std::fmt::Write;

use fusion_core::config::ParamValue;
use fusion_core::metrics::{AwrLine, BlockKind, Metric, Part};
use fusion_core::stats::{Stat, WaitClass};
use fusion_scenario::{Device, Fault, LinkTarget, LoadedScenario, Scenario};

use super::escape::esc;
use super::options::{HtmlOptions, TourMyth};
use super::svg::{self, Band, Bar, Line, LineChart, Mark, PALETTE, StackedBars};
use crate::model::{RunResult, VariantResult};
use crate::series::{SERIES_WAIT_CLASSES, SeriesPoint};

const NS_PER_S: f64 = 1e9;

/// `REPRODUCED` or `NOT REPRODUCED`, as a badge.
pub(super) fn verdict_badge(r: &RunResult) -> String {
    if r.reproduced() {
        "<span class=\"verdict ok\">REPRODUCED</span>".to_string()
    } else {
        "<span class=\"verdict bad\">NOT REPRODUCED</span>".to_string()
    }
}

/// The run's facts: the myth, the seed, the variants.
pub(super) fn facts(r: &RunResult, opts: &HtmlOptions) -> String {
    let mut s = String::from("<dl class=\"facts\">");
    if let Some(m) = &r.myth {
        let _ = write!(s, "<dt>Myth</dt><dd>{}</dd>", esc(m));
    }
    let seed = match &opts.program {
        Some(p) => format!("{} ({p})", r.seed),
        None => r.seed.to_string(),
    };
    let _ = write!(s, "<dt>Seed</dt><dd>{}</dd>", esc(&seed));
    if r.has_variants {
        let names: Vec<&str> = r.variants.iter().map(|v| v.name.as_str()).collect();
        let _ = write!(s, "<dt>Variants</dt><dd>{}</dd>", esc(&names.join(", ")));
    }
    s.push_str("</dl>\n");
    s
}

pub(super) fn footer(r: &RunResult, opts: &HtmlOptions) -> String {
    let program = opts.program.as_deref().unwrap_or("fusionlab");
    format!(
        "<footer><p>{}: rerun with <code>fusionlab run {} --seed {}</code></p></footer>\n",
        esc(program),
        esc(&r.scenario),
        r.seed
    )
}

/// Expectations, then per variant its charts and bars, then the variants
/// side by side; headings from level `h`.
pub(super) fn run_body(
    r: &RunResult,
    loaded: &LoadedScenario,
    opts: &HtmlOptions,
    h: usize,
) -> String {
    let mut s = String::new();
    let _ = write!(s, "<section><h{h}>Expectations</h{h}>");
    s.push_str(&expectations(r));
    s.push_str("</section>\n");
    for v in &r.variants {
        let scenario = loaded
            .variants
            .iter()
            .find(|x| x.name == v.name)
            .map(|x| &x.scenario);
        s.push_str("<section class=\"variant\">");
        if r.has_variants {
            let _ = write!(s, "<h{h}>Variant {}</h{h}>", esc(&v.name));
        } else {
            let _ = write!(s, "<h{h}>Over time</h{h}>");
        }
        s.push_str(&variant_charts(v, scenario, h + 1));
        s.push_str(&phase_bars(v, h + 1));
        s.push_str("</section>\n");
    }
    if r.has_variants && r.variants.len() > 1 {
        let _ = write!(s, "<section><h{h}>Variants side by side</h{h}>");
        s.push_str(&side_by_side(r, opts));
        s.push_str("</section>\n");
    }
    s
}

fn expectations(r: &RunResult) -> String {
    if r.verdicts.is_empty() {
        return "<p>The scenario declares no expectations: nothing was checked.</p>".to_string();
    }
    let mut s = String::from(
        "<table class=\"exp\"><thead><tr><th>Result</th><th>Expectation</th></tr></thead><tbody>",
    );
    for v in &r.verdicts {
        let (class, word) = if v.passed {
            ("ok", "PASS")
        } else {
            ("bad", "FAIL")
        };
        let _ = write!(
            s,
            "<tr><td><span class=\"pf {class}\">{word}</span></td><td>{}<div class=\"detail\">{}</div></td></tr>",
            esc(&v.name),
            esc(&v.detail)
        );
    }
    let _ = write!(
        s,
        "</tbody></table><p class=\"overall\">Verdict: {}</p>",
        verdict_badge(r)
    );
    s
}

/// The time axis of a variant: where it starts (ns), its length (s), its
/// phases as bands and its faults and parameter changes as marks.
struct Timeline {
    origin_ns: u64,
    x_max: f64,
    bands: Vec<Band>,
    marks: Vec<Mark>,
}

fn timeline(v: &VariantResult, scenario: Option<&Scenario>) -> Timeline {
    let origin_ns = v.phases.first().map_or(0, |p| p.start_ns);
    let secs = |ns: u64| ns.saturating_sub(origin_ns) as f64 / NS_PER_S;
    let bands: Vec<Band> = v
        .phases
        .iter()
        .map(|p| Band {
            start: secs(p.start_ns),
            end: secs(p.start_ns.saturating_add(p.elapsed_ns)),
            label: p.name.clone(),
        })
        .collect();
    let mut marks = Vec::new();
    if let Some(sc) = scenario {
        // The scenario's phases in order: the result has them (or the
        // first of them, when the run stopped early) at its own times.
        // A parameter set again to its value, or a phase-long fault the
        // previous phase had too, changes nothing: not marked again.
        let mut params: Vec<(u8, &str, &ParamValue)> = Vec::new();
        let mut previous: &[Fault] = &[];
        for (p, sp) in v.phases.iter().zip(&sc.phases) {
            let start = secs(p.start_ns);
            for (inst, name, value) in &sp.parameters {
                match params.iter_mut().find(|x| x.0 == *inst && x.1 == name) {
                    Some(x) if x.2 == value => continue,
                    Some(x) => x.2 = value,
                    None => params.push((*inst, name, value)),
                }
                let value = match value {
                    ParamValue::Int(n) => n.to_string(),
                    ParamValue::Text(t) => format!("'{t}'"),
                };
                marks.push(Mark {
                    at: start,
                    label: format!("inst{inst} {name} = {value}"),
                });
            }
            for f in &sp.faults {
                let (at, label) = fault_mark(f);
                let timed = matches!(
                    f,
                    Fault::Kill { .. } | Fault::Restart { .. } | Fault::Pause { .. }
                );
                if !timed && previous.contains(f) {
                    continue;
                }
                marks.push(Mark {
                    at: start + at as f64 / NS_PER_S,
                    label,
                });
            }
            previous = &sp.faults;
        }
    }
    let series_end = v
        .series
        .iter()
        .flat_map(|s| &s.instances)
        .filter_map(|i| i.points.last())
        .map(|p| secs(p.end_ns))
        .fold(0.0f64, f64::max);
    let x_max = bands.last().map_or(0.0, |b| b.end).max(series_end);
    Timeline {
        origin_ns,
        x_max,
        bands,
        marks,
    }
}

/// A fault as a mark: when in its phase (ns) and what.
pub(crate) fn fault_mark(f: &Fault) -> (u64, String) {
    let ms = |ns: u64| format!("{} ms", svg::num(ns as f64 / 1e6));
    let target = |t: &LinkTarget| match t {
        LinkTarget::All => "all links".to_string(),
        LinkTarget::Instance(i) => format!("inst{i}'s links"),
        LinkTarget::Link { from, to } => format!("inst{from} to inst{to}"),
    };
    match f {
        Fault::StressCpu {
            instance,
            workers,
            load_pct,
        } => (
            0,
            format!("stress_cpu inst{instance}: {workers} workers at {load_pct} %"),
        ),
        Fault::DiskLatency {
            instance,
            device,
            latency,
            ..
        } => {
            let device = match device {
                Device::Redo => "redo",
                Device::Data => "data",
            };
            (
                0,
                format!("disk_latency inst{instance} {device}: {}", ms(*latency)),
            )
        }
        Fault::NetworkLatency {
            target: t, latency, ..
        } => (0, format!("latency {}: +{}", target(t), ms(*latency))),
        Fault::Bandwidth {
            target: t,
            rate_bps,
        } => (
            0,
            format!(
                "bandwidth {}: {} Mbit/s",
                target(t),
                svg::num(*rate_bps as f64 / 1e6)
            ),
        ),
        Fault::Kill { instance, at } => (*at, format!("kill inst{instance}")),
        Fault::Restart { instance, at } => (*at, format!("restart inst{instance}")),
        Fault::Pause {
            instance,
            at,
            duration,
        } => (
            *at,
            format!(
                "pause inst{instance} for {} s",
                svg::num(*duration as f64 / 1e9)
            ),
        ),
        Fault::Loss {
            target: t,
            loss_ppm,
            ..
        } => (
            0,
            format!("loss {}: {} %", target(t), svg::num(*loss_ppm as f64 / 1e4)),
        ),
        Fault::Partition { target: t, .. } => (0, format!("partition {}", target(t))),
    }
}

/// One figure of a point, or `None` where it has no value.
type Figure = fn(&SeriesPoint) -> Option<f64>;

/// The figures charted over time, with their titles.
const CHARTS: [(&str, Figure, bool); 6] = [
    (
        "avg gc cr block receive time (ms)",
        SeriesPoint::gc_cr_receive_ms,
        true,
    ),
    (
        "avg gc current block receive time (ms)",
        SeriesPoint::gc_current_receive_ms,
        true,
    ),
    (
        "gc blocks received per second",
        |p| Some(p.blocks_received_per_s()),
        true,
    ),
    ("user commits per second", |p| Some(p.commits_per_s()), true),
    (
        "CPU run queue (processes waiting)",
        |p| Some(f64::from(p.run_queue)),
        false,
    ),
    (
        "LMS backlog (requests held)",
        |p| Some(f64::from(p.lms_backlog)),
        false,
    ),
];

/// Chart `k` of [`CHARTS`] for a variant, `None` when it has no value
/// above zero anywhere and `skip_empty` (the gauges are always drawn).
fn series_chart(v: &VariantResult, t: &Timeline, k: usize) -> Option<(LineChart, String)> {
    let (title, figure, skip_empty) = CHARTS.get(k)?;
    let series = v.series.as_ref()?;
    let lines: Vec<Line> = series
        .instances
        .iter()
        .enumerate()
        .map(|(n, i)| Line {
            name: format!("inst{}", i.id),
            color: PALETTE[n % PALETTE.len()],
            points: i
                .points
                .iter()
                .map(|p| {
                    let x = p.end_ns.saturating_sub(t.origin_ns) as f64 / NS_PER_S;
                    // A down instance measured nothing: a gap.
                    (x, figure(p).filter(|_| p.up))
                })
                .collect(),
        })
        .collect();
    let any = lines
        .iter()
        .flat_map(|l| &l.points)
        .any(|p| p.1.is_some_and(|v| v > 0.0));
    if *skip_empty && !any {
        return None;
    }
    let keys: Vec<(String, &'static str)> =
        lines.iter().map(|l| (l.name.clone(), l.color)).collect();
    let chart = LineChart {
        title: title.to_string(),
        x_max: t.x_max,
        bands: t.bands.clone(),
        marks: t.marks.clone(),
        lines,
    };
    Some((chart, svg::legend(&keys, &[])))
}

fn figure(chart: &LineChart, legend: &str) -> String {
    format!(
        "<figure>{}<figcaption>{legend}</figcaption></figure>",
        svg::line_chart(chart)
    )
}

/// The variant's time-series charts in a grid.
fn variant_charts(v: &VariantResult, scenario: Option<&Scenario>, h: usize) -> String {
    let Some(series) = &v.series else {
        return String::new();
    };
    let t = timeline(v, scenario);
    let mut s = String::new();
    let _ = write!(
        s,
        "<h{h}>Time series</h{h}><p class=\"note\">Each point is one interval of {} s of cluster time, per instance; phases are shaded, faults and parameter changes are numbered lines.{}</p>",
        svg::num(series.interval_ns as f64 / NS_PER_S),
        if series.truncated {
            " Sampling stopped at its limit of points: the series ends early."
        } else {
            ""
        }
    );
    s.push_str(&marks_list(&t.marks));
    s.push_str("<div class=\"grid\">");
    for k in 0..CHARTS.len() {
        if let Some((chart, legend)) = series_chart(v, &t, k) {
            s.push_str(&figure(&chart, &legend));
        }
    }
    s.push_str("</div>");
    s
}

/// The numbered faults and parameter changes the charts mark.
fn marks_list(marks: &[Mark]) -> String {
    if marks.is_empty() {
        return String::new();
    }
    format!("<div class=\"marks\">{}</div>", svg::legend(&[], marks))
}

/// The myth's headline chart: the first of gc cr receive, gc current
/// receive, commits per second that has data.
fn headline_chart(v: &VariantResult, scenario: Option<&Scenario>) -> String {
    let t = timeline(v, scenario);
    [0, 1, 3]
        .iter()
        .find_map(|&k| series_chart(v, &t, k))
        .map(|(c, l)| figure(&c, &format!("{l}{}", marks_list(&t.marks))))
        .unwrap_or_default()
}

/// Per phase and instance: the received block latency decomposition (cr
/// and current) and the foreground time per wait class, as stacked bars.
fn phase_bars(v: &VariantResult, h: usize) -> String {
    let mut s = String::new();
    let parts: Vec<(String, &'static str)> = Part::ALL
        .iter()
        .enumerate()
        .map(|(k, p)| (p.name().to_string(), PALETTE[k % PALETTE.len()]))
        .collect();
    let mut charts = Vec::new();
    for kind in [BlockKind::Cr, BlockKind::Current] {
        let blocks = match kind {
            BlockKind::Cr => Stat::GcCrBlocksReceived,
            BlockKind::Current => Stat::GcCurrentBlocksReceived,
        };
        let bars: Vec<Bar> = v
            .phases
            .iter()
            .flat_map(|p| p.instances.iter().map(move |i| (p, i)))
            .filter(|(_, i)| i.stats.get(blocks) > 0)
            .map(|(p, i)| Bar {
                label: format!("{} · inst{}", p.name, i.id),
                values: Part::ALL
                    .iter()
                    .map(|&part| {
                        Metric::DecompMs(kind, part)
                            .eval(&i.stats, 0)
                            .unwrap_or(0.0)
                    })
                    .collect(),
            })
            .collect();
        if !bars.is_empty() {
            charts.push(svg::stacked_bars(&StackedBars {
                title: format!(
                    "gc {} block receive time by part (avg ms per block)",
                    kind.name()
                ),
                unit: "ms".into(),
                segments: parts.clone(),
                bars,
            }));
        }
    }
    let _ = write!(s, "<h{h}>Latency decomposition per phase</h{h}>");
    if charts.is_empty() {
        s.push_str("<p class=\"note\">No gc block was received.</p>");
    } else {
        s.push_str("<div class=\"grid\">");
        for c in charts {
            let _ = write!(s, "<figure>{c}</figure>");
        }
        s.push_str("</div>");
    }
    let classes: Vec<(String, &'static str)> = SERIES_WAIT_CLASSES
        .iter()
        .enumerate()
        .map(|(k, c)| (c.name().to_string(), class_color(*c, k)))
        .collect();
    let bars: Vec<Bar> = v
        .phases
        .iter()
        .flat_map(|p| p.instances.iter().map(move |i| (p, i)))
        .map(|(p, i)| Bar {
            label: format!("{} · inst{}", p.name, i.id),
            values: SERIES_WAIT_CLASSES
                .iter()
                .map(|&c| {
                    Metric::ClassTimeMs(c)
                        .eval(&i.stats, p.elapsed_ns)
                        .unwrap_or(0.0)
                        / 1e3
                })
                .collect(),
        })
        .collect();
    let _ = write!(s, "<h{h}>Wait classes per phase</h{h}>");
    if bars.iter().all(|b| b.values.iter().all(|v| *v <= 0.0)) {
        s.push_str("<p class=\"note\">No foreground wait.</p>");
    } else {
        let _ = write!(
            s,
            "<figure class=\"wide\">{}</figure>",
            svg::stacked_bars(&StackedBars {
                title: "foreground time waited per wait class (s)".into(),
                unit: "s".into(),
                segments: classes,
                bars,
            })
        );
    }
    s
}

/// A fixed colour per wait class (Cluster always blue).
fn class_color(c: WaitClass, k: usize) -> &'static str {
    match c {
        WaitClass::Cluster => PALETTE[0],
        WaitClass::Commit => PALETTE[1],
        WaitClass::UserIo => PALETTE[2],
        WaitClass::SystemIo => PALETTE[5],
        WaitClass::Concurrency => PALETTE[3],
        WaitClass::Application => PALETTE[4],
        WaitClass::Configuration => PALETTE[6],
        _ => PALETTE[7 - (k % 2)],
    }
}

/// Per phase and instance, the gc receive times and the top event of each
/// variant, side by side (as the text report's table).
fn side_by_side(r: &RunResult, opts: &HtmlOptions) -> String {
    let mut phases: Vec<&str> = Vec::new();
    for v in &r.variants {
        for p in &v.phases {
            if !phases.contains(&p.name.as_str()) {
                phases.push(&p.name);
            }
        }
    }
    let mut s = String::from(
        "<div class=\"scroll\"><table class=\"num\"><thead><tr><th>Phase</th><th>Inst</th><th>Figure</th>",
    );
    for v in &r.variants {
        let _ = write!(s, "<th>{}</th>", esc(&v.name));
    }
    s.push_str("</tr></thead><tbody>");
    for phase in phases {
        let ids: BTreeSet<u8> = r
            .variants
            .iter()
            .filter_map(|v| v.phase(phase))
            .flat_map(|p| p.instances.iter().map(|i| i.id))
            .collect();
        for id in ids {
            for (label, line) in [
                ("cr receive (ms)", Some(AwrLine::CrReceiveMs)),
                ("current receive (ms)", Some(AwrLine::CurrentReceiveMs)),
                ("top event", None),
            ] {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{id}</td><td>{label}</td>",
                    esc(phase)
                );
                for v in &r.variants {
                    let cell = v
                        .phase(phase)
                        .and_then(|p| p.instance(id))
                        .map(|i| match line {
                            Some(l) => l
                                .eval(&i.stats)
                                .map_or("-".to_string(), |x| format!("{x:.2}")),
                            None => crate::awr::top_events(&i.stats, opts.names_9i)
                                .first()
                                .map_or("-".to_string(), |e| e.name.clone()),
                        })
                        .unwrap_or_else(|| "n/a".to_string());
                    let _ = write!(s, "<td>{}</td>", esc(&cell));
                }
                s.push_str("</tr>");
            }
        }
    }
    s.push_str("</tbody></table></div>");
    s
}

/// The tour's summary table.
pub(super) fn tour_summary(myths: &[TourMyth<'_>]) -> String {
    let mut s = String::from(
        "<section><h2>Summary</h2><table class=\"tour\"><thead><tr><th>#</th><th>Myth</th><th>Verdict</th>\
         <th>Key figure</th><th>Measured</th><th>Deck</th></tr></thead><tbody>",
    );
    for (k, m) in myths.iter().enumerate() {
        let row = m.row;
        let verdict = if row.reproduced {
            "<span class=\"pf ok\">REPRODUCED</span>"
        } else {
            "<span class=\"pf bad\">NOT REPRODUCED</span>"
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td><a href=\"#myth-{}\">{}</a> <span class=\"scen\">({})</span></td><td>{verdict}</td>\
             <td>{}</td><td class=\"fig\">{}</td><td>{}</td></tr>",
            k + 1,
            k + 1,
            esc(&row.myth),
            esc(&row.scenario),
            esc(&row.label),
            esc(&row.key_figure),
            esc(&row.deck_figure)
        );
    }
    s.push_str("</tbody></table></section>\n");
    s
}

/// One myth of the tour: claim, scenario, verdict, key figure, headline
/// chart, expectations, and the full report folded.
pub(super) fn myth_section(
    number: usize,
    total: usize,
    m: &TourMyth<'_>,
    opts: &HtmlOptions,
) -> String {
    let (l, r) = (m.loaded, m.result);
    let claim = l.myth.as_deref().unwrap_or(&l.title);
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"myth\" id=\"myth-{number}\"><h2><span class=\"num\">Myth {number} of {total}</span> {}</h2>\
         <p class=\"sub\"><b>{}</b>: {} {}</p>",
        esc(claim),
        esc(&l.name),
        esc(&l.title),
        verdict_badge(r)
    );
    let _ = write!(
        s,
        "<table class=\"key\"><tr><th>Key figure</th><td>{}</td></tr><tr><th>Measured</th><td class=\"fig\">{}</td></tr>\
         <tr><th>Deck</th><td>{}</td></tr></table>",
        esc(&m.row.label),
        esc(&m.row.key_figure),
        esc(&m.row.deck_figure)
    );
    // The variant the tour's figure is measured in.
    let wanted = l.tour.as_ref().and_then(|t| t.measured.variant.as_deref());
    let headline = r
        .variants
        .iter()
        .find(|v| Some(v.name.as_str()) == wanted)
        .or(r.variants.first());
    if let Some(v) = headline {
        let scenario = l
            .variants
            .iter()
            .find(|x| x.name == v.name)
            .map(|x| &x.scenario);
        let chart = headline_chart(v, scenario);
        if !chart.is_empty() {
            if r.has_variants {
                let _ = write!(s, "<p class=\"note\">Variant {}:</p>", esc(&v.name));
            }
            let _ = write!(s, "<div class=\"headline\">{chart}</div>");
        }
    }
    s.push_str("<h3>Expectations</h3>");
    s.push_str(&expectations(r));
    let _ = write!(
        s,
        "<details><summary>Full report: charts per variant, latency decomposition, wait classes</summary>\
         <pre class=\"ran\">{}</pre>",
        esc(m.ran.trim_end())
    );
    // The expectations were shown above: the rest of the run's body.
    let body = run_body(r, l, opts, 3);
    let rest = body
        .split_once("</section>\n")
        .map_or(body.as_str(), |(_, rest)| rest);
    s.push_str(rest);
    s.push_str("</details></section>\n");
    s
}
