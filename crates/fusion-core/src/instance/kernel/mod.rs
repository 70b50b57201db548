//! The services every part of the instance shares.

mod errors;

pub use errors::ERRORS_KEPT;
pub(super) use errors::ErrorLog;
