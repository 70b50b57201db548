//! What both drivers of the protocol share, the simulator (`fusion-sim`)
//! and the live runtime (`fusion-live`), so that a scenario means the same
//! on both: the scenario's network model ([`net`]), the end of a run and
//! the check that it came to rest ([`settle`]), how the counters
//! snapshotted at phase edges become the run's result ([`outcome`]), the
//! cluster-wide count of sequence values out of order and duplicated
//! ([`seq_order`]), which figures each driver measures ([`measured`]), and
//! the brownout of an instance failure from the commits sampled ([`brownout`]),
//! the failure faults of a phase as a timeline of kills, pauses and
//! restarts ([`timeline`]), and the run's time series from the counters
//! sampled at a fixed interval ([`series`]).
//!
//! No I/O and no clock: the drivers pass times in.

pub mod brownout;
pub mod measured;
pub mod net;
pub mod outcome;
pub mod seq_order;
pub mod series;
pub mod settle;
pub mod timeline;

pub use measured::{Driver, fault_refusal, fault_refusal_through, refusal};
pub use net::{Interconnect, LinkFault};
pub use outcome::{Ran, VariantOutcome, pf_master_rows, phase_result, run_result};
pub use seq_order::{SEQ_VALUES_MAX, SeqOrder};
pub use series::{InstantSample, SeriesRecorder};
pub use settle::{Activity, SETTLE_NS_MAX, not_recovered, quiesce_commands, settled, unrecovered};
pub use timeline::{LifeEvent, timeline_of};
