//! A run's time series: per instance, the figures of every fixed interval
//! of cluster time (1 s by default), as a monitor would chart them: gc
//! blocks received and their average receive time, commits, the time waited
//! per wait class and the top waits of the interval, and two gauges read at
//! its end (the CPU run queue and the LMS backlog).
//!
//! Plain data: the drivers fill it (`fusion_driver::series` differences the
//! counters), the JSON and HTML reports show it.

use fusion_core::stats::WaitClass;

/// The wait classes a point keeps the time of, in this order (every class
/// but Idle).
pub const SERIES_WAIT_CLASSES: [WaitClass; 9] = [
    WaitClass::Cluster,
    WaitClass::Commit,
    WaitClass::UserIo,
    WaitClass::SystemIo,
    WaitClass::Concurrency,
    WaitClass::Application,
    WaitClass::Configuration,
    WaitClass::Scheduler,
    WaitClass::Other,
];

/// Waits a point names at most (the interval's largest by time).
pub const TOP_WAITS_MAX: usize = 5;

/// One variant's series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// The interval asked for (a live run's points are as close to it as
    /// its looks at the cluster allow: each point has its own length).
    pub interval_ns: u64,
    /// Per instance, in instance order.
    pub instances: Vec<InstanceSeries>,
    /// Sampling stopped at the limit of points kept (`POINTS_MAX`).
    pub truncated: bool,
}

/// One instance's points, in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InstanceSeries {
    /// 1-based instance number.
    pub id: u8,
    pub points: Vec<SeriesPoint>,
}

/// The figures of one interval, ending at `end_ns` (cluster time).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesPoint {
    pub end_ns: u64,
    /// The interval's length (the point covers `end_ns - length_ns` to `end_ns`).
    pub length_ns: u64,
    /// Whether the instance was up at the end (not killed, evicted or frozen).
    pub up: bool,
    pub gc_cr_blocks_received: u64,
    pub gc_cr_receive_ns: u64,
    pub gc_current_blocks_received: u64,
    pub gc_current_receive_ns: u64,
    /// `user commits` in the interval.
    pub user_commits: u64,
    /// Time waited per class, indexed like [`SERIES_WAIT_CLASSES`].
    pub wait_class_ns: [u64; SERIES_WAIT_CLASSES.len()],
    /// The interval's largest waits by time (non-idle, every session's),
    /// at most [`TOP_WAITS_MAX`], largest first.
    pub top_waits: Vec<TopWait>,
    /// Processes waiting for a CPU at the end of the interval.
    pub run_queue: u32,
    /// Requests the LMS workers held unfinished at the end of the interval.
    pub lms_backlog: u32,
}

/// One wait event's share of an interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopWait {
    pub event: &'static str,
    pub waits: u64,
    pub time_ns: u64,
}

impl SeriesPoint {
    /// The interval's start (cluster time).
    pub fn start_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.length_ns)
    }

    fn seconds(&self) -> f64 {
        self.length_ns as f64 / 1e9
    }

    /// Average gc cr block receive time in the interval (ms); `None` without a block.
    pub fn gc_cr_receive_ms(&self) -> Option<f64> {
        avg_ms(self.gc_cr_receive_ns, self.gc_cr_blocks_received)
    }

    /// Average gc current block receive time in the interval (ms).
    pub fn gc_current_receive_ms(&self) -> Option<f64> {
        avg_ms(self.gc_current_receive_ns, self.gc_current_blocks_received)
    }

    /// gc blocks (cr and current) received per second.
    pub fn blocks_received_per_s(&self) -> f64 {
        per_s(
            self.gc_cr_blocks_received + self.gc_current_blocks_received,
            self.seconds(),
        )
    }

    /// `user commits` per second.
    pub fn commits_per_s(&self) -> f64 {
        per_s(self.user_commits, self.seconds())
    }

    /// Time waited in `class` (ms); 0 for a class not kept (Idle).
    pub fn wait_class_ms(&self, class: WaitClass) -> f64 {
        SERIES_WAIT_CLASSES
            .iter()
            .position(|c| *c == class)
            .map_or(0.0, |k| self.wait_class_ns[k] as f64 / 1e6)
    }
}

fn avg_ms(time_ns: u64, count: u64) -> Option<f64> {
    (count > 0).then(|| time_ns as f64 / count as f64 / 1e6)
}

fn per_s(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_averages_come_from_the_interval() {
        let p = SeriesPoint {
            end_ns: 3_000_000_000,
            length_ns: 500_000_000,
            gc_cr_blocks_received: 40,
            gc_cr_receive_ns: 40 * 2_500_000,
            gc_current_blocks_received: 10,
            user_commits: 7,
            ..SeriesPoint::default()
        };
        assert_eq!(p.start_ns(), 2_500_000_000);
        assert_eq!(p.gc_cr_receive_ms(), Some(2.5));
        assert_eq!(p.gc_current_receive_ms(), Some(0.0));
        assert_eq!(SeriesPoint::default().gc_current_receive_ms(), None);
        assert_eq!(p.blocks_received_per_s(), 100.0);
        assert_eq!(p.commits_per_s(), 14.0);
        assert_eq!(p.wait_class_ms(WaitClass::Idle), 0.0);
    }
}
