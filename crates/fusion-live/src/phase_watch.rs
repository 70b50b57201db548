//! Watching a live phase while it runs: how often, the hung-cluster watch,
//! the counters at its edges, an open-ended (held) phase and the progress
//! lines. Shared by the runner and a variant's run.

use std::time::Duration;

use fusion_core::stats::Stats;
use indicatif::{ProgressBar, ProgressStyle};

use crate::pb;

/// How often a running phase looks at every instance.
pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(250);
/// Longest a running cluster may go without any progress (no logical read,
/// commit or message anywhere) while sessions are active before the run is
/// declared hung.
pub(crate) const STALL_MAX: Duration = Duration::from_secs(20);

/// An open-ended phase: it runs until `end` turns true (the operator's
/// Ctrl-C or SIGTERM, or `--duration`); the phases and variants after it do
/// not run, and the run ends with its report and checks.
#[derive(Clone, Debug)]
pub struct Hold {
    pub phase: String,
    pub end: tokio::sync::watch::Receiver<bool>,
}

/// Notices a hung cluster: sessions active, yet no instance has done any
/// work (logical reads, commits, messages) for `limit`.
pub(crate) struct StallWatch {
    limit: Duration,
    progress: u64,
    since: std::time::Instant,
}

impl StallWatch {
    pub(crate) fn new(limit: Duration) -> StallWatch {
        StallWatch {
            limit,
            progress: 0,
            since: std::time::Instant::now(),
        }
    }

    pub(crate) fn check(
        &mut self,
        st: &[pb::StatusResponse],
        now: std::time::Instant,
    ) -> Result<(), String> {
        let progress: u64 = st.iter().map(|s| s.progress).sum();
        let active = st.iter().any(|s| s.active_sessions > 0);
        if progress != self.progress || !active {
            self.progress = progress;
            self.since = now;
            return Ok(());
        }
        if now.duration_since(self.since) < self.limit {
            return Ok(());
        }
        let waits: Vec<String> = st
            .iter()
            .map(|s| {
                let w: Vec<String> = s
                    .waits
                    .iter()
                    .map(|w| format!("{} ({} sessions)", w.event, w.sessions))
                    .collect();
                format!("in flight on inst{}: {}", s.instance + 1, w.join(", "))
            })
            .collect();
        Err(format!(
            "no progress anywhere for {} s while sessions are active (hung):\n{}",
            self.limit.as_secs(),
            waits.join("\n")
        ))
    }
}

/// One phase's counters on every instance, before and after it.
pub(crate) struct PhaseSnapshots {
    pub(crate) name: String,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) before: Vec<Stats>,
    pub(crate) after: Vec<Stats>,
}

/// The progress line of a held phase: how long it has run, and every
/// instance's state (set at each look).
pub(crate) fn held_bar(variant: &str, phase: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) =
        ProgressStyle::with_template("{prefix:>28} held {elapsed_precise} (Ctrl-C ends it)  {msg}")
    {
        bar.set_style(style);
    }
    bar.set_prefix(format!("{variant}: {phase}"));
    bar
}

pub(crate) fn phase_bar(variant: &str, phase: &str, duration_ns: u64) -> ProgressBar {
    let b = ProgressBar::new(duration_ns / 1_000_000);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>28} [{bar:40}] {pos}/{len} ms") {
        b.set_style(style.progress_chars("=> "));
    }
    b.set_prefix(format!("{variant}: {phase}"));
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(inst: u32, progress: u64, active: u32) -> pb::StatusResponse {
        pb::StatusResponse {
            instance: inst,
            progress,
            active_sessions: active,
            waits: vec![pb::WaitNow {
                event: "gc cr request".into(),
                sessions: active,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_cluster_without_progress_is_hung_only_after_the_limit() {
        let t0 = std::time::Instant::now();
        let mut w = StallWatch::new(Duration::from_secs(20));
        let st = [status(0, 100, 4), status(1, 50, 4)];
        assert!(w.check(&st, t0).is_ok());
        assert!(w.check(&st, t0 + Duration::from_secs(19)).is_ok());
        let e = w.check(&st, t0 + Duration::from_secs(21)).unwrap_err();
        assert!(
            e.contains("hung") && e.contains("inst2: gc cr request (4 sessions)"),
            "{e}"
        );
    }

    #[test]
    fn progress_or_idle_sessions_reset_the_watch() {
        let t0 = std::time::Instant::now();
        let mut w = StallWatch::new(Duration::from_secs(20));
        assert!(w.check(&[status(0, 100, 4)], t0).is_ok());
        // Work happened: the clock starts again.
        assert!(
            w.check(&[status(0, 101, 4)], t0 + Duration::from_secs(15))
                .is_ok()
        );
        assert!(
            w.check(&[status(0, 101, 4)], t0 + Duration::from_secs(30))
                .is_ok()
        );
        // Nobody active (think time, a disabled workload): never hung.
        assert!(
            w.check(&[status(0, 101, 0)], t0 + Duration::from_secs(60))
                .is_ok()
        );
        assert!(
            w.check(&[status(0, 101, 0)], t0 + Duration::from_secs(120))
                .is_ok()
        );
    }
}
