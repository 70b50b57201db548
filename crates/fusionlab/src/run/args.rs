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
    pub recording: Recording,
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
    /// `--hold PHASE` (live): that phase runs until a signal or `hold_ns`.
    pub hold: Option<String>,
    /// `--duration`: the held phase's longest run, ns.
    pub hold_ns: Option<u64>,
}

/// Whether and where a run is recorded.
#[derive(Clone, Debug, Default)]
pub enum Recording {
    /// Not recorded (`--no-store`, and runs made through the library).
    #[default]
    Off,
    Into(std::path::PathBuf),
    /// Asked for, but there is no directory (no HOME): said once, run goes on.
    Unavailable(String),
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

/// A duration as a chaos user writes it: `90s`, `10m`, `1h`, `500ms`, or
/// plain seconds; in nanoseconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, unit_ns): (&str, u64) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1_000_000)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000_000_000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000_000_000)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000_000_000)
    } else {
        (t, 1_000_000_000)
    };
    let n: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (90s, 10m, 1h, 500ms or seconds)"))?;
    let ns = n
        .checked_mul(unit_ns)
        .filter(|&ns| ns > 0)
        .ok_or_else(|| format!("{text:?}: a duration above 0 and below 584 years"))?;
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ns;

    #[test]
    fn durations_read_as_a_chaos_user_writes_them() {
        assert_eq!(parse_duration_ns("90s"), Ok(90_000_000_000));
        assert_eq!(parse_duration_ns("10m"), Ok(600_000_000_000));
        assert_eq!(parse_duration_ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration_ns("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("12"), Ok(12_000_000_000));
        assert!(parse_duration_ns("0s").is_err());
        assert!(parse_duration_ns("-3s").is_err());
        assert!(parse_duration_ns("soon").is_err());
        assert!(parse_duration_ns("99999999999h").is_err());
    }
}
