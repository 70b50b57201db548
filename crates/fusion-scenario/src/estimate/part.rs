//! One part of a memory estimate, and a figure of bytes in whole numbers.

/// One part of an estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPart {
    /// What it is, e.g. `datafile images (120,000 blocks)`.
    pub what: String,
    pub bytes: u64,
    /// The sizes that make it large, as the file names them.
    pub lower: String,
}

/// A non-negative estimate in bytes or counts, saturated at `u64::MAX` (an
/// infinite rate is a run too large to hold).
pub(super) fn to_u64(v: f64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= u64::MAX as f64 {
        u64::MAX
    } else {
        // Finite and within range: the conversion only drops the fraction.
        v as u64
    }
}
