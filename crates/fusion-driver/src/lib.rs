//! What both drivers of the protocol share, the simulator (`fusion-sim`)
//! and the live runtime (`fusion-live`), so that a scenario means the same
//! on both: the scenario's network model ([`net`]), the end of a run and
//! the check that it came to rest ([`settle`]), and how the counters
//! snapshotted at phase edges become the run's result ([`outcome`]).
//!
//! No I/O and no clock: the drivers pass times in.

pub mod net;
pub mod outcome;
pub mod settle;

pub use net::{Interconnect, LinkFault};
pub use outcome::{Ran, VariantOutcome, phase_result, run_result};
pub use settle::{Activity, SETTLE_NS_MAX, quiesce_commands, settled};
