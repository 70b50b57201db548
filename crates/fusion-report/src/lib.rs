//! Reports of a run: AWR-style text, the JSON contract, and verdicts.

pub mod model;
pub use model::*;
