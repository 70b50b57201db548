//! What the text report's sections are written with: a string built line by
//! line (`Out`), tables in AWR's look, and the units they print in. Shared by
//! text.rs (the report's layout) and awr.rs (its per-instance sections).

use comfy_table::{
    CellAlignment, ContentArrangement, ContentLineStyle, LineStyle, Table, TableStyle,
};

/// AWR's own table look: a dashed line under the header, no rules between
/// columns (one space apart with the report's zero padding).
pub const AWR_STYLE: TableStyle = TableStyle::new()
    .header_lines(ContentLineStyle::none().junction(' '))
    .header_separator(LineStyle::none().fill('-').junction(' '))
    .content_lines(ContentLineStyle::none().junction(' '));

pub(crate) const NS_PER_MS: f64 = 1_000_000.0;
pub(crate) const NS_PER_S: f64 = 1_000_000_000.0;

/// Bytes AWR assumes per GCS/GES message in the estimated interconnect traffic.
pub(crate) const AWR_MESSAGE_BYTES: f64 = 200.0;

/// A string being built line by line.
#[derive(Default)]
pub(crate) struct Out(pub(crate) String);

impl Out {
    pub(crate) fn line(&mut self, s: impl AsRef<str>) {
        self.0.push_str(s.as_ref());
        self.0.push('\n');
    }
    pub(crate) fn blank(&mut self) {
        self.0.push('\n');
    }
    pub(crate) fn title(&mut self, t: &str, underline: char) {
        self.line(t);
        self.line(underline.to_string().repeat(t.chars().count()));
    }
    pub(crate) fn table(&mut self, t: &Table) {
        self.line(t.trim_fmt());
    }
}

/// A table in AWR's look; the columns listed in `right` are right-aligned.
pub(crate) fn table<S: ToString>(header: &[S], right: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_style(AWR_STYLE)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for c in t.column_iter_mut() {
        c.set_padding((0, 0));
    }
    for &i in right {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}
