//! Time in the core: nanoseconds, and the units a file writes.

/// Nanoseconds, the unit of every time in the core.
pub type Nanos = u64;

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;
