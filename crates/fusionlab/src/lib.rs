//! The `fusionlab` command line as a library: the binary parses arguments
//! and calls these; tests call them in-process.
//!
//! By command, a folder where a command has several parts:
//!
//! - [`cli`]: the grammar (clap) and its dispatch to the commands below.
//! - [`run`]: `run`, `validate`, `list`; [`run::args`] what a run was asked,
//!   [`run::report`] what it prints (simulator and live alike),
//!   [`run::trace`] `--trace`.
//! - [`runs`]: the run store: `run` records, `runs`, `show`, `compare`.
//! - [`tour`]: the myth tour.
//! - [`bench`]: the simulator speed benchmark.
//! - [`sweep`]: `fusionlab sweep`, a scenario over seeds and varied values, the verdicts' distribution.
//! - [`chaos`]: `fusionlab chaos`, runs with random failures and the checkers on;
//!   [`chaos::live`] on real processes (`--live`), [`chaos::compose`] on a
//!   compose cluster (`--compose`, the project is [`chaos::compose_project`]);
//!   `chaos::file` writes a run's faults into the scenario file.
//! - [`live`]: the live cluster (`store`, `instance`, `up`, `status`, `down`,
//!   `restart`, `run --live`); [`live::tour`] `tour --live`, [`live::bench`]
//!   `bench --live`, [`live::probe`] `probe`, [`live::interrupt`] SIGINT and
//!   SIGTERM, [`live::logs`] the live processes' logs.
//! - [`merge`]: `fusionlab merge`, the parts of a campaign split over
//!   machines put back together ([`parts`]: `--parts N --part K`).
//! - [`compose`]: `fusionlab compose`, the container files (compose and
//!   Swarm) of a cluster of N instances.
//! - [`top`]: `fusionlab top`, a live cluster's screen refreshed every second
//!   ([`top::view`] draws it).
//!
//! Shared by several commands:
//!
//! - [`shipped`]: the scenarios embedded at build time, and finding one by file or name.
//! - [`memory`]: `--max-memory`, refusing a run estimated not to fit.
//! - [`pool`]: independent simulator runs over the cores, results in order (`chaos`, `sweep`).

pub mod bench;
pub mod chaos;
pub mod cli;
pub mod compose;
pub mod live;
pub mod memory;
pub mod merge;
pub mod parts;
pub mod pool;
pub mod run;
pub mod runs;
pub mod shipped;
pub mod sweep;
pub mod top;
pub mod tour;

/// A failure the user caused or must know about, with the exit status it maps to.
/// Its message is printed to stderr as is (loader messages already name
/// file, line, column and key).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad input: a missing file, an invalid scenario, a bad `--set` or `--phase`.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            code: exit::BAD_INPUT,
            message: message.into(),
        }
    }
}

/// Exit statuses.
pub mod exit {
    /// Everything ran (whatever the verdicts).
    pub const OK: u8 = 0;
    /// `validate`: the scenario has problems. `list`: a shipped scenario does not load.
    pub const INVALID: u8 = 1;
    /// Bad input: missing file or name, invalid scenario, bad `--set`, unknown `--phase`
    /// (and command-line usage errors).
    pub const BAD_INPUT: u8 = 2;
    /// The simulator reported protocol errors or the checkers found violations.
    pub const SIM_ERRORS: u8 = 3;
    /// A live cluster failed: an instance or the store died or did not answer.
    pub const LIVE_FAILED: u8 = 4;
    /// A live run or tour was stopped by SIGINT (Ctrl-C): 128 + 2.
    pub const INTERRUPTED: u8 = 130;
    /// A live run or tour was stopped by SIGTERM: 128 + 15.
    pub const TERMINATED: u8 = 143;
}
