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
    /// `--interval-ms`: the time series' interval (default 1 s).
    pub interval_ms: Option<u64>,
    /// `--html FILE`: also write the HTML report there.
    pub html: Option<std::path::PathBuf>,
    /// `--trace FILE`: also write the timeline trace there (simulator only).
    pub trace: Option<std::path::PathBuf>,
    /// `--trace-window A..B`: the cluster time the trace keeps (default: all).
    pub trace_window: Option<fusion_report::trace::TraceWindow>,
    /// `--threads N`: the simulator's threads (default: chosen by the cluster's size).
    pub threads: Option<usize>,
}

impl RunArgs {
    /// The time series' interval of cluster time.
    pub fn interval_ns(&self) -> u64 {
        interval_ns(self.interval_ms)
    }
}

/// `--interval-ms` in nanoseconds; the default without it.
pub fn interval_ns(interval_ms: Option<u64>) -> u64 {
    interval_ms.map_or(fusion_driver::series::DEFAULT_INTERVAL_NS, |ms| {
        ms.saturating_mul(1_000_000)
    })
}
