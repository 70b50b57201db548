//! The instance model of Fusionlab, sans-IO: buffer cache, global cache
//! service (GCS), LMS, LGWR, DBWR, sessions and a CPU run queue, as a state
//! machine that takes events and emits actions. It owns no clock, socket or
//! thread: every entry point is given the current time, and the driver (the
//! simulator or the live runtime) performs the actions it asks for.

pub mod bitmap;
pub mod block;
pub mod config;
pub mod cpu;
pub mod cpus;
pub mod instance;
pub mod layout;
pub mod metrics;
pub mod msg;
pub mod px;
pub mod recovery;
pub mod stats;
pub mod tkprof;
pub mod types;
pub mod voting;
