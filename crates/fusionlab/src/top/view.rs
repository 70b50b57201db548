//! `fusionlab top`'s screen as a pure function: two samples of every
//! instance (counters and status, taken about a second apart) to ratatui
//! widgets. The figures are the interval's, as oratop shows them: gc cr and
//! current average receive time, blocks received and commits per second,
//! the top foreground waits; beside them what is true now: run queue, LMS
//! backlog, active sessions, the phase and the faults in force.

use fusion_core::stats::{Stat, Stats, Wait, WaitClass};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Wrap};

/// What `status` said of an instance, as `top` shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopStatus {
    pub scenario: String,
    pub phase: String,
    pub faults: Vec<String>,
    pub run_queue: u32,
    pub lms_backlog: u32,
    pub lms: u32,
    pub active_sessions: u32,
    /// Why the instance stopped (evicted), empty while it runs.
    pub halted: String,
}

/// One instance at one moment.
#[derive(Clone, Debug, Default)]
pub struct InstanceSample {
    /// 1-based.
    pub id: u8,
    /// The instance's clock when its counters were taken (ns).
    pub at_ns: u64,
    pub stats: Stats,
    /// `None`: no scenario loaded.
    pub status: Option<TopStatus>,
    /// Why it did not answer, when it did not.
    pub error: Option<String>,
}

/// Every instance at one moment.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub instances: Vec<InstanceSample>,
}

/// Waits shown per instance.
pub const TOP_WAITS: usize = 3;

/// One instance's line of figures over the interval between two samples.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceFigures {
    pub id: u8,
    /// Average receive times (ms), `None` with no block received.
    pub cr_ms: Option<f64>,
    pub current_ms: Option<f64>,
    /// gc cr + current blocks received per second.
    pub blocks_per_s: f64,
    pub commits_per_s: f64,
    /// The foreground waits with the most time in the interval: (event,
    /// time waited per second in ms, average wait in ms).
    pub top_waits: Vec<(&'static str, f64, f64)>,
}

/// The interval's figures of instance `now` against its earlier sample.
pub fn figures(before: &InstanceSample, now: &InstanceSample) -> InstanceFigures {
    let (a, b) = (&before.stats, &now.stats);
    // A counter that went down (the scenario was loaded again) starts over.
    let d = |s: Stat| b.get(s).checked_sub(a.get(s)).unwrap_or(b.get(s));
    let secs = now.at_ns.saturating_sub(before.at_ns) as f64 / 1e9;
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let avg_ms = |time: Stat, count: Stat| {
        let n = d(count);
        (n > 0).then(|| d(time) as f64 / 1e6 / n as f64)
    };
    let mut waits: Vec<(&'static str, f64, f64)> = Wait::ALL
        .iter()
        .filter(|w| w.class() != WaitClass::Idle)
        .filter_map(|&w| {
            let (ea, eb) = (a.event(w), b.event(w));
            let time = eb
                .time_fg_ns
                .checked_sub(ea.time_fg_ns)
                .unwrap_or(eb.time_fg_ns);
            let count = eb.waits_fg.checked_sub(ea.waits_fg).unwrap_or(eb.waits_fg);
            (time > 0 && count > 0).then(|| {
                (
                    w.name(),
                    per_s(time) / 1e6,
                    time as f64 / 1e6 / count as f64,
                )
            })
        })
        .collect();
    waits.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(y.0)));
    waits.truncate(TOP_WAITS);
    InstanceFigures {
        id: now.id,
        cr_ms: avg_ms(Stat::GcCrBlockReceiveTime, Stat::GcCrBlocksReceived),
        current_ms: avg_ms(
            Stat::GcCurrentBlockReceiveTime,
            Stat::GcCurrentBlocksReceived,
        ),
        blocks_per_s: per_s(d(Stat::GcCrBlocksReceived) + d(Stat::GcCurrentBlocksReceived)),
        commits_per_s: per_s(d(Stat::UserCommits)),
        top_waits: waits,
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// The screen: a heading (scenario, phase, faults in force), a line per
/// instance, its top waits, and how to quit. `cluster` names the cluster.
pub fn draw(frame: &mut Frame, cluster: &str, before: &Sample, now: &Sample) {
    let status = now.instances.iter().find_map(|i| i.status.as_ref());
    let faults: Vec<String> = status.map(|s| s.faults.clone()).unwrap_or_default();
    let mut heading = vec![Line::from(format!(
        "fusionlab top - {cluster} - {} instances",
        now.instances.len()
    ))];
    heading.push(Line::from(match status {
        Some(s) if !s.scenario.is_empty() => format!(
            "scenario {}  phase {}",
            s.scenario,
            if s.phase.is_empty() { "-" } else { &s.phase }
        ),
        _ => "no scenario loaded".to_string(),
    }));
    heading.push(Line::from(if faults.is_empty() {
        "faults in force: none".to_string()
    } else {
        format!("faults in force: {}", faults.join("; "))
    }));
    let heading_height = u16::try_from(heading.len()).unwrap_or(3) + 1;
    let rows_height = u16::try_from(now.instances.len())
        .unwrap_or(u16::MAX)
        .saturating_add(3);
    let [top, table, waits, help] = Layout::vertical([
        Constraint::Length(heading_height),
        Constraint::Length(rows_height),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(heading).wrap(Wrap { trim: false }), top);

    let figures: Vec<(InstanceFigures, &InstanceSample)> = now
        .instances
        .iter()
        .map(|i| {
            let earlier = before.instances.iter().find(|b| b.id == i.id).unwrap_or(i);
            (figures(earlier, i), i)
        })
        .collect();
    let header = Row::new([
        "Inst",
        "gc cr ms",
        "gc cur ms",
        "blocks/s",
        "commits/s",
        "runq",
        "LMS bklg",
        "active",
        "state",
    ])
    .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = figures.iter().map(|(f, i)| {
        let (runq, backlog, active) =
            i.status
                .as_ref()
                .map_or(("-".into(), "-".into(), "-".into()), |s| {
                    (
                        s.run_queue.to_string(),
                        s.lms_backlog.to_string(),
                        s.active_sessions.to_string(),
                    )
                });
        let state = match (&i.error, &i.status) {
            (Some(e), _) => format!("DOWN: {e}"),
            (None, Some(s)) if !s.halted.is_empty() => format!("HALTED: {}", s.halted),
            (None, Some(_)) => "up".into(),
            (None, None) => "idle".into(),
        };
        Row::new([
            format!("inst{}", f.id),
            ms(f.cr_ms),
            ms(f.current_ms),
            format!("{:.0}", f.blocks_per_s),
            format!("{:.0}", f.commits_per_s),
            runq,
            backlog,
            active,
            state,
        ])
    });
    let widths = [
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Min(10),
    ];
    frame.render_widget(
        Table::new(rows, widths).header(header).block(
            Block::new()
                .borders(Borders::TOP)
                .title(" Global cache (last interval) "),
        ),
        table,
    );

    let mut lines = Vec::new();
    for (f, _) in &figures {
        if f.top_waits.is_empty() {
            lines.push(Line::from(format!("inst{}  (no foreground waits)", f.id)));
        }
        for (k, (event, ms_per_s, avg)) in f.top_waits.iter().enumerate() {
            let who = if k == 0 {
                format!("inst{}", f.id)
            } else {
                String::new()
            };
            lines.push(Line::from(format!(
                "{who:<6}{event:<36} {ms_per_s:>9.0} ms/s  avg {avg:>8.2} ms"
            )));
        }
    }
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::new()
                .borders(Borders::TOP)
                .title(" Top foreground waits (time waited per second) "),
        ),
        waits,
    );
    frame.render_widget(Paragraph::new("q quits; refreshed every second"), help);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn sample(id: u8, at_s: u64, received: u64, receive_ms: u64, waits: u64) -> InstanceSample {
        let mut stats = Stats::default();
        stats.add(Stat::GcCrBlocksReceived, received);
        stats.add(
            Stat::GcCrBlockReceiveTime,
            received * receive_ms * 1_000_000,
        );
        stats.add(Stat::UserCommits, received / 2);
        for _ in 0..waits {
            stats.wait(Wait::GcCrBlockCongested, 20_000_000, true);
            stats.wait(Wait::LogFileSync, 1_000_000, true);
        }
        InstanceSample {
            id,
            at_ns: at_s * 1_000_000_000,
            stats,
            status: Some(TopStatus {
                scenario: "myth-cpu-starvation / base".into(),
                phase: "lms-normal-priority".into(),
                faults: vec!["stress_cpu in \"lms-normal-priority\"".into()],
                run_queue: 12,
                lms_backlog: 40,
                lms: 1,
                active_sessions: 8,
                halted: String::new(),
            }),
            error: None,
        }
    }

    fn screen(before: &Sample, now: &Sample) -> String {
        let mut t = Terminal::new(TestBackend::new(100, 24)).expect("a terminal");
        t.draw(|f| draw(f, "cluster.toml", before, now))
            .expect("draws");
        let buf = t.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_screen_shows_the_intervals_figures_and_what_is_in_force() {
        let before = Sample {
            instances: vec![sample(1, 10, 1000, 1, 10), sample(2, 10, 500, 1, 0)],
        };
        // In the second after: inst1 received 200 blocks more, their
        // receive time rose to 21 ms on average (1000 x 1 ms + 200 x 21 ms
        // is 1200 x 4.5 ms: the interval's own average is what counts).
        let mut later = sample(1, 11, 1200, 0, 60);
        later.stats.add(
            Stat::GcCrBlockReceiveTime,
            1000 * 1_000_000 + 200 * 21_000_000,
        );
        let mut down = sample(2, 11, 500, 1, 0);
        down.error = Some("not reachable".into());
        let now = Sample {
            instances: vec![later, down],
        };
        let f = figures(&before.instances[0], &now.instances[0]);
        assert_eq!(f.cr_ms.map(|v| (v * 100.0).round() / 100.0), Some(21.0));
        assert_eq!(f.blocks_per_s, 200.0);
        assert_eq!(f.commits_per_s, 100.0);
        assert_eq!(f.top_waits[0].0, "gc cr block congested");
        assert_eq!(f.top_waits[0].1, 1000.0, "50 waits of 20 ms in 1 s");
        assert_eq!(f.top_waits[0].2, 20.0);

        let text = screen(&before, &now);
        for expected in [
            "fusionlab top - cluster.toml - 2 instances",
            "scenario myth-cpu-starvation / base  phase lms-normal-priority",
            "faults in force: stress_cpu in \"lms-normal-priority\"",
            "Inst  gc cr ms  gc cur ms blocks/s  commits/s runq  LMS bklg active state",
            "inst1 21.00     -         200       100       12    40       8      up",
            "inst2 -         -         0         0         12    40       8      DOWN: not reachable",
            "inst1 gc cr block congested                     1000 ms/s  avg    20.00 ms",
            "      log file sync                               50 ms/s  avg     1.00 ms",
            "inst2  (no foreground waits)",
            "q quits; refreshed every second",
        ] {
            assert!(
                text.lines().any(|l| l == expected),
                "no line {expected:?} on the screen:\n{text}"
            );
        }
    }

    #[test]
    fn a_counter_that_starts_over_is_not_negative() {
        let before = sample(1, 10, 1000, 1, 10);
        let now = sample(1, 11, 100, 2, 1);
        let f = figures(&before, &now);
        assert_eq!(f.blocks_per_s, 100.0);
        assert_eq!(f.cr_ms, Some(2.0));
    }
}
