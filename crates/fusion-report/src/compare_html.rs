//! `compare --html` and `show --html`: one self-contained HTML page each
//! (inline style, no script, nothing fetched), tables a browser shows and
//! prints. Kept apart from the run report's HTML so either can change alone.

use crate::compare::{Comparison, Section, block_title, cells};

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em;border-bottom:1px solid #bbb}\
h3{font-size:1em;margin:1.2em 0 .3em}table{border-collapse:collapse;margin-bottom:.5em}\
th,td{padding:2px 10px;border-bottom:1px solid #e4e4e4}th{text-align:left;background:#f3f3f3}\
td.n{text-align:right;font-variant-numeric:tabular-nums}td.up{color:#a40000}\
td.down{color:#006400}pre{font:12px/1.3 ui-monospace,monospace}.note{color:#666}\
@media print{body{margin:0}h2{break-before:auto}table{break-inside:avoid}}";

/// Text made safe for HTML: the HTML report's one escape.
pub use crate::html::esc as escape;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
        escape(title)
    )
}

/// The comparison as an HTML page.
pub fn render_html(c: &Comparison) -> String {
    let mut b = String::new();
    b.push_str("<h1>AWR Compare Periods Report</h1>\n<table>\n");
    b.push_str(
        "<tr><th></th><th>Run</th><th>Time (UTC)</th><th>Scenario</th><th>Seed</th>\
         <th>--set</th><th>Driver</th><th>Verdict</th></tr>\n",
    );
    for (which, r) in [("1st", &c.first), ("2nd", &c.second)] {
        b.push_str(&format!(
            "<tr><th>{which}</th><td class=\"n\">{}</td><td>{}</td><td>{}</td>\
             <td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            r.id,
            escape(&r.time),
            escape(&r.scenario),
            r.seed,
            escape(&r.sets.join(" ")),
            escape(&r.driver),
            escape(&r.verdict)
        ));
    }
    b.push_str("</table>\n<p class=\"note\">Diff = 2nd &minus; 1st; %Diff = Diff / 1st (new: from 0). Largest Diff first; statistics: largest %Diff first.</p>\n");
    for (which, list) in [("1st", &c.only_first), ("2nd", &c.only_second)] {
        if !list.is_empty() {
            b.push_str(&format!(
                "<p class=\"note\">Only in the {which} run (not compared): {}</p>\n",
                escape(&list.join(", "))
            ));
        }
    }
    for block in &c.blocks {
        b.push_str(&format!(
            "<h2>{} <span class=\"note\">(elapsed 1st {:.1} s, 2nd {:.1} s)</span></h2>\n",
            escape(&block_title(block)),
            block.elapsed_s[0],
            block.elapsed_s[1]
        ));
        for s in &block.sections {
            section_html(&mut b, s);
        }
    }
    page("AWR Compare Periods Report", &b)
}

fn section_html(b: &mut String, s: &Section) {
    b.push_str(&format!("<h3>{}</h3>\n", escape(s.title)));
    if s.rows.is_empty() {
        b.push_str("<p class=\"note\">(no difference)</p>\n");
        return;
    }
    b.push_str(
        "<table>\n<tr><th>Figure</th><th>1st</th><th>2nd</th><th>Diff</th><th>%Diff</th></tr>\n",
    );
    for r in &s.rows {
        let c = cells(r);
        let class = match r.diff() {
            Some(d) if d > 0.0 => "n up",
            Some(d) if d < 0.0 => "n down",
            _ => "n",
        };
        b.push_str(&format!(
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"{class}\">{}</td><td class=\"{class}\">{}</td></tr>\n",
            escape(&r.figure),
            escape(&c[0]),
            escape(&c[1]),
            escape(&c[2]),
            escape(&c[3])
        ));
    }
    b.push_str("</table>\n");
    if s.left_out > 0 {
        b.push_str(&format!(
            "<p class=\"note\">({} more statistics differ; --all shows them)</p>\n",
            s.left_out
        ));
    }
}

/// A stored text report as an HTML page (`show --html`).
pub fn text_page(title: &str, text: &str) -> String {
    page(
        title,
        &format!("<h1>{}</h1>\n<pre>{}</pre>\n", escape(title), escape(text)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Block, Row, RunLabel};

    #[test]
    fn a_page_is_self_contained_and_escaped() {
        let c = Comparison {
            first: RunLabel {
                scenario: "<script>".into(),
                ..RunLabel::default()
            },
            second: RunLabel::default(),
            blocks: vec![Block {
                variant: None,
                phase: "p&q".into(),
                instance: 1,
                elapsed_s: [1.0, 2.0],
                sections: vec![Section {
                    title: "Statistics (v$sysstat)",
                    rows: vec![Row {
                        figure: "user commits".into(),
                        first: Some(1.0),
                        second: Some(3.0),
                    }],
                    left_out: 4,
                }],
            }],
            only_first: Vec::new(),
            only_second: Vec::new(),
        };
        let html = render_html(&c);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(!html.contains("<script>"), "user text is escaped");
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("Phase p&amp;q, inst1"));
        assert!(html.contains("<td class=\"n up\">+200.0</td>"));
        assert!(html.contains("4 more statistics differ"));
        for fetch in ["http:", "https:", "src=", "<link"] {
            assert!(!html.contains(fetch), "fetches nothing: {fetch}");
        }
        let page = text_page("run 3", "a < b\n");
        assert!(page.contains("<pre>a &lt; b\n</pre>"));
    }
}
