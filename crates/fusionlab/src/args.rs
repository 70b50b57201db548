//! What `fusionlab run` was asked, simulated or live: read by the commands
//! that run it and by the report that prints it.

/// What `fusionlab run` was asked.
#[derive(Clone, Debug, Default)]
pub struct RunArgs {
    /// `FILE|NAME`.
    pub scenario: String,
    pub json: bool,
    pub seed: Option<u64>,
    /// `--set KEY=VALUE`, in order.
    pub sets: Vec<String>,
    pub names_9i: bool,
    /// `--phase NAME`: only these phases in the text report.
    pub phases: Vec<String>,
    pub check: bool,
    /// `--max-memory`: refuse a run estimated to need more (default: half the machine).
    pub max_memory: Option<u64>,
    /// Whether the run is recorded in the run store (off unless the
    /// command line asked: runs made through the library are not).
    pub recording: crate::runs::Recording,
}
