//! The HTML report: one self-contained page (inline CSS, charts as inline
//! SVG drawn by [`svg`], no script, nothing fetched) that a trainer can
//! open in a browser or print. `run --html` writes [`run_page`], `tour
//! --html` writes [`tour_page`].
//!
//! The page is deterministic: the same result gives the same bytes. Every
//! text from a scenario or a result is escaped ([`esc`]).

mod escape;
mod options;
pub(crate) mod sections;
pub mod svg;

pub use escape::esc;
pub use options::{HtmlOptions, TourMyth};

use std::fmt::Write;

use fusion_scenario::LoadedScenario;

use crate::model::RunResult;

const STYLE: &str = include_str!("style.css");

/// The page around `body`.
fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        esc(title)
    )
}

/// The report of one run: its facts and verdict, the expectations, per
/// variant the time-series charts, the latency decomposition and wait
/// classes per phase, and the variants side by side.
pub fn run_page(r: &RunResult, loaded: &LoadedScenario, opts: &HtmlOptions) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<header><h1>{}</h1><p class=\"sub\">{}</p>{}</header>",
        esc(&r.scenario),
        esc(&r.title),
        sections::verdict_badge(r)
    );
    b.push_str(&sections::facts(r, opts));
    b.push_str(&sections::run_body(r, loaded, opts, 2));
    b.push_str(&sections::footer(r, opts));
    page(&format!("Fusionlab report: {}", r.scenario), &b)
}

/// The whole tour on one page: the summary table, then a section per myth
/// with its headline chart, expectations and (folded) full report.
/// `footer`: the seeds line of the text tour.
pub fn tour_page(myths: &[TourMyth<'_>], footer: &str, opts: &HtmlOptions) -> String {
    let mut b = String::new();
    let done = myths.iter().filter(|m| m.result.reproduced()).count();
    let _ = writeln!(
        b,
        "<header><h1>Fusionlab myth tour</h1><p class=\"sub\">{done} of {} myths reproduced</p></header>",
        myths.len()
    );
    b.push_str(&sections::tour_summary(myths));
    for (k, m) in myths.iter().enumerate() {
        b.push_str(&sections::myth_section(k + 1, myths.len(), m, opts));
    }
    let _ = writeln!(b, "<footer><p>{}</p></footer>", esc(footer));
    page("Fusionlab myth tour", &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            esc(r#"<b class="x">Tom & 'Jerry'</b>"#),
            "&lt;b class=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/b&gt;"
        );
        assert_eq!(esc("gc cr block 2-way"), "gc cr block 2-way");
    }
}
