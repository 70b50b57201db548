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
    /// The figure that decided, as measured, e.g. `inst1 gc cr receive 38.2 ms vs 0.4 ms`.
    pub key_figure: String,
    /// What the deck measured for the same figure.
    pub deck_figure: String,
}

/// One table: Myth | Verdict | Measured | Deck, then a count of myths reproduced.
pub fn render_tour(rows: &[TourRow]) -> String {
    let mut t = Table::new();
    t.load_style(ASCII_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec!["Myth", "Verdict", "Measured", "Deck"]);
    for r in rows {
        t.add_row(vec![
            format!("{} ({})", r.myth, r.scenario),
            if r.reproduced {
                "REPRODUCED"
            } else {
                "NOT REPRODUCED"
            }
            .to_string(),
            r.key_figure.clone(),
            r.deck_figure.clone(),
        ]);
    }
    let done = rows.iter().filter(|r| r.reproduced).count();
    format!(
        "{}\n{done} of {} myths reproduced\n",
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
                key_figure: "inst2 cr flush 4,212.0 ms".into(),
                deck_figure: "node 2 cr flush 4380.0 ms".into(),
            },
            TourRow {
                myth: "NOCACHE sequences are fine in RAC".into(),
                scenario: "nocache-seq".into(),
                reproduced: false,
                key_figure: "row cache lock 12 waits".into(),
                deck_figure: "row cache lock 5,413 waits / 62.86 s".into(),
            },
        ];
        let text = render_tour(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("| Myth"), "{text}");
        assert!(
            text.contains("| GC problems are the interconnect (interconnect) | REPRODUCED     |"),
            "{text}"
        );
        assert!(text.contains("NOT REPRODUCED"));
        assert!(text.ends_with("1 of 2 myths reproduced\n"));
        assert_eq!(text, render_tour(&rows));
    }
}
