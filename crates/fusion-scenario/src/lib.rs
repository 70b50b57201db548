//! Scenario files (TOML): loading, validation with file:line:column errors,
//! `--set` overrides and variants. The format is described in docs/scenarios.md.
//!
//! ```no_run
//! let loaded = fusion_scenario::load_file(
//!     std::path::Path::new("scenarios/myth-cpu-starvation.toml"),
//!     &["parameters.cpu_count=8".to_string()],
//! )?;
//! for v in &loaded.variants {
//!     println!("{}: {} phases", v.name, v.scenario.phases.len());
//! }
//! # Ok::<(), fusion_scenario::ScenarioError>(())
//! ```

mod error;
pub mod estimate;
mod load;
pub mod model;
mod plan;
mod sizes;
mod tree;

pub use error::{At, Problem, ScenarioError};
pub use load::{INSTANCES_MAX, load_file, load_str};
pub use model::*;
