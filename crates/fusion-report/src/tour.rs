//! The myth tour summary: one line per myth, what was measured next to what
//! the deck measured.

use comfy_table::{ContentArrangement, Table, presets::ASCII_FULL_CONDENSED};

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

/// One table: # | Myth (scenario) | Verdict | Key figure | Measured | Deck,
/// then a count of myths reproduced.
pub fn render_tour(rows: &[TourRow]) -> String {
    render(rows, ["Myth (scenario)", "Deck"], "myths")
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
        s.push_str(&format!("    {}\n", r.label));
        s.push_str(&format!("    ours:  {}\n", r.key_figure));
        s.push_str(&format!("    paper: {}\n", r.deck_figure));
    }
    let done = rows.iter().filter(|r| r.reproduced).count();
    s.push_str(&format!("{done} of {} figures reproduced\n", rows.len()));
    s
}

fn render(rows: &[TourRow], [claim, source]: [&str; 2], noun: &str) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "#",
            claim,
            "Verdict",
            "Key figure",
            "Measured",
            source,
        ]);
    for (i, r) in rows.iter().enumerate() {
        t.add_row(vec![
            (i + 1).to_string(),
            format!("{} ({})", r.myth, r.scenario),
            if r.reproduced {
                "REPRODUCED"
            } else {
                "NOT REPRODUCED"
            }
            .to_string(),
            r.label.clone(),
            r.key_figure.clone(),
            r.deck_figure.clone(),
        ]);
    }
    let done = rows.iter().filter(|r| r.reproduced).count();
    format!(
        "{}\n{done} of {} {noun} reproduced\n",
        t.trim_fmt(),
        rows.len()
    )
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
        assert!(lines[1].starts_with("| # | Myth (scenario)"), "{text}");
        assert!(
            text.contains(
                "| 1 | GC problems are the interconnect (interconnect) | REPRODUCED     | inst2 cr flush | 4,212.0 ms |"
            ),
            "{text}"
        );
        assert!(text.contains("NOT REPRODUCED"));
        assert!(text.ends_with("1 of 2 myths reproduced\n"));
        assert_eq!(text, render_tour(&rows));
    }
}
