//! Scenario files (TOML): loading, validation with file:line:column errors,
//! `--set` overrides and variants.

pub mod model;
pub use model::*;
