//! What a page is asked to show: the report's options, and a myth of the
//! tour with its run.

use fusion_scenario::LoadedScenario;

use crate::model::RunResult;
use crate::tour::TourRow;

/// What the HTML report shows.
#[derive(Clone, Debug, Default)]
pub struct HtmlOptions {
    /// Wait events under their 9i names.
    pub names_9i: bool,
    /// The program and version that ran (`fusionlab 0.1.0`), in the footer.
    pub program: Option<String>,
}

/// One myth of the tour, after its run.
#[derive(Clone, Copy, Debug)]
pub struct TourMyth<'a> {
    pub loaded: &'a LoadedScenario,
    pub result: &'a RunResult,
    pub row: &'a TourRow,
    /// What ran: simulated time and events, or live transfers, per variant.
    pub ran: &'a str,
}
