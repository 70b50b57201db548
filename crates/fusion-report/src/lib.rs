//! Reports of a run: AWR-style text, the JSON contract, the HTML page with
//! charts, verdicts and the myth tour; and the summaries of `fusionlab chaos`
//! and `fusionlab sweep` runs.

pub mod awr;
pub mod campaign;
pub mod chaos;
pub mod compare;
pub mod compare_html;
pub mod figures;
mod fmt;
pub mod html;
pub mod json;
pub mod model;
pub mod px;
pub mod series;
mod sheet;
pub mod sweep;
pub mod text;
pub mod tour;
pub mod trace;
pub mod verdict;

pub use fmt::{TEXT_WIDTH, grouped, wrap, wrapped};
pub use json::to_json;
pub use model::*;
pub use series::{InstanceSeries, Series, SeriesPoint, TopWait};
pub use sheet::AWR_STYLE;
pub use text::{TextOptions, render};
pub use tour::{TourRow, render_node_tour, render_tour};
pub use verdict::evaluate;
