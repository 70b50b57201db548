//! The myth tour summary: one line per myth, what was measured next to what
//! the deck measured.

use crate::fmt::{TEXT_WIDTH, wrap};

/// One myth of the tour, after its scenario ran.
#[derive(Clone, Debug, PartialEq)]
pub struct TourRow {
    /// The myth as the deck states it.
    pub myth: String,
    /// The scenario that tested it.
    pub scenario: String,
    pub reproduced: bool,
    /// What the key figure is, e.g. `inst1 avg gc cr block receive, inst2's LMS starved`.
    pub label: String,
    /// The key figure as measured, e.g. `38.2 ms`, or `0.670 ms vs 0.030 ms`.
    pub key_figure: String,
    /// What the deck measured for the same figure.
    pub deck_figure: String,
}

/// One row per myth, AWR style: its number, verdict and claim (with the
/// scenario), and under it the key figure, as measured and as the deck
/// measured it, wrapped to fit 100 columns; then a count of myths
/// reproduced.
pub fn render_tour(rows: &[TourRow]) -> String {
    const VERDICT_W: usize = 14;
    let indent = " ".repeat(4 + VERDICT_W + 2);
    let mut out = format!(
        "{:>2}  {:<VERDICT_W$}  Myth (scenario)\n{}  {}  {}\n",
        "#",
        "Verdict",
        "-".repeat(2),
        "-".repeat(VERDICT_W),
        "-".repeat(TEXT_WIDTH - indent.len())
    );
    for (i, r) in rows.iter().enumerate() {
        let verdict = if r.reproduced {
            "REPRODUCED"
        } else {
            "NOT REPRODUCED"
        };
        let head = format!("{:>2}  {verdict:<VERDICT_W$}  ", i + 1);
        let lines = [
            wrap(
                &format!("{} ({})", r.myth, r.scenario),
                TEXT_WIDTH,
                &head,
                &indent,
            ),
            labelled(&indent, "key figure: ", &r.label),
            labelled(&indent, "measured:   ", &r.key_figure),
            labelled(&indent, "deck:       ", &r.deck_figure),
        ];
        for line in lines.iter().flatten() {
            out.push_str(line);
            out.push('\n');
        }
    }
    let done = rows.iter().filter(|r| r.reproduced).count();
    out.push_str(&format!("{done} of {} myths reproduced\n", rows.len()));
    out
}

/// The second part's summary, inside one node: per scenario its verdict,
/// then the key figure, ours and the seed paper's, a line each (so that
/// every line stays short; `deck_figure` holds the paper's figure).
pub fn render_node_tour(rows: &[TourRow]) -> String {
    let mut s = String::new();
    for (i, r) in rows.iter().enumerate() {
        let verdict = if r.reproduced {
            "REPRODUCED"
        } else {
            "NOT REPRODUCED"
        };
        s.push_str(&format!("{:>2}. {}: {verdict}\n", i + 1, r.scenario));
        // Each line wrapped under itself: the summary fits TEXT_WIDTH.
        for (label, text) in [
            ("", &r.label),
            ("ours:  ", &r.key_figure),
            ("paper: ", &r.deck_figure),
        ] {
            for line in labelled("    ", label, text) {
                s.push_str(&line);
                s.push('\n');
            }
        }
    }
    let done = rows.iter().filter(|r| r.reproduced).count();
    s.push_str(&format!("{done} of {} figures reproduced\n", rows.len()));
    s
}

/// `label` then `text` at `indent`, wrapped under itself.
fn labelled(indent: &str, label: &str, text: &str) -> Vec<String> {
    let first = format!("{indent}{label}");
    let rest = " ".repeat(first.chars().count());
    wrap(text, TEXT_WIDTH, &first, &rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_myth_and_a_count() {
        let rows = vec![
            TourRow {
                myth: "GC problems are the interconnect".into(),
                scenario: "interconnect".into(),
                reproduced: true,
                label: "inst2 cr flush".into(),
                key_figure: "4,212.0 ms".into(),
                deck_figure: "node 2 cr flush 4380.0 ms".into(),
            },
            TourRow {
                myth: "NOCACHE sequences are fine in RAC".into(),
                scenario: "nocache-seq".into(),
                reproduced: false,
                label: "row cache lock".into(),
                key_figure: "12 waits".into(),
                deck_figure: "row cache lock 5,413 waits / 62.86 s".into(),
            },
        ];
        let text = render_tour(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with(" #  Verdict         Myth (scenario)"),
            "{text}"
        );
        assert_eq!(
            lines[2], " 1  REPRODUCED      GC problems are the interconnect (interconnect)",
            "{text}"
        );
        assert_eq!(lines[3], "                    key figure: inst2 cr flush");
        assert_eq!(lines[4], "                    measured:   4,212.0 ms");
        assert_eq!(
            lines[5],
            "                    deck:       node 2 cr flush 4380.0 ms"
        );
        assert!(
            lines[6].starts_with(" 2  NOT REPRODUCED  NOCACHE"),
            "{text}"
        );
        assert!(text.ends_with("1 of 2 myths reproduced\n"));
        assert!(
            text.lines().all(|l| l.chars().count() <= TEXT_WIDTH),
            "{text}"
        );
        // A long text wraps under its row.
        let long = TourRow {
            deck_figure: "word ".repeat(40),
            ..rows[0].clone()
        };
        let wrapped = render_tour(&[long]);
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= TEXT_WIDTH),
            "{wrapped}"
        );
        assert!(
            wrapped
                .lines()
                .filter(|l| l.trim_start().starts_with("word"))
                .count()
                >= 2,
            "{wrapped}"
        );
        assert_eq!(text, render_tour(&rows));
    }

    #[test]
    fn the_node_summary_wraps_long_figures_under_themselves() {
        let long = "1 channel 2:25:10; 4 channels 0:58:46 (no better than 3); 50 channels with SECTION SIZE 1M 0:17:00 (8.5 times)";
        let rows = vec![TourRow {
            myth: String::new(),
            scenario: "rman-multisection".into(),
            reproduced: true,
            label: "backup elapsed".into(),
            key_figure: "34,098.0 ms vs 2,337.5 ms".into(),
            deck_figure: long.into(),
        }];
        let text = render_node_tour(&rows);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], " 1. rman-multisection: REPRODUCED");
        assert!(
            lines[3].starts_with("    paper: 1 channel 2:25:10;"),
            "{text}"
        );
        assert!(lines[4].starts_with("           "), "{text}");
        assert_eq!(
            text.split_whitespace().collect::<Vec<_>>().join(" "),
            format!(
                "1. rman-multisection: REPRODUCED backup elapsed ours: 34,098.0 ms vs 2,337.5 ms paper: {long} 1 of 1 figures reproduced"
            )
        );
    }
}
