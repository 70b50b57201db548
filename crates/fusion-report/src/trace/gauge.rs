//! The trace's counters: an instance's run queue, written whenever it
//! changes, and LMS's backlog, which goes up and down with every message
//! LMS handles, written as its largest value in each millisecond (and, when
//! it ended the millisecond lower, that value from the next one on): the
//! backlog building up stays visible at a twentieth of the events.

use fusion_core::config::Nanos;

use super::event::Args;
use super::out::TraceWindow;

/// The LMS backlog's bucket of time.
pub(super) const BACKLOG_BUCKET_NS: Nanos = 1_000_000;

/// One instance's counters: what was read last and what was written.
#[derive(Clone, Copy, Default)]
pub(super) struct Gauge {
    runq_last: Option<u64>,
    runq_written: Option<u64>,
    /// The backlog's bucket being filled: its index, largest and last value.
    bucket: Option<(Nanos, u64, u64)>,
    backlog_written: Option<u64>,
}

/// A counter's value to write: its name, time and value.
pub(super) type Reading = (&'static str, Nanos, Args<'static>);

impl Gauge {
    /// The run queue and LMS backlog as of `now`: the values to write.
    pub(super) fn sample(
        &mut self,
        window: &TraceWindow,
        now: Nanos,
        runq: u64,
        backlog: u64,
    ) -> Vec<Reading> {
        let prev = self.runq_last.replace(runq);
        let mut out: Vec<Reading> = Vec::new();
        let mut run_queue = |at: Nanos, n: u64| {
            out.push(("run queue", at, Args::Processes { processes: n }));
        };
        if window.contains(now) {
            if self.runq_written.is_none()
                && now > window.from_ns
                && let Some(p) = prev
            {
                // The value at the window's start, before the first change in it.
                run_queue(window.from_ns, p);
                self.runq_written = Some(p);
            }
            if self.runq_written != Some(runq) {
                run_queue(now, runq);
                self.runq_written = Some(runq);
            }
        }
        let b = now / BACKLOG_BUCKET_NS;
        let closed = match self.bucket.as_mut() {
            Some((cur, max, last)) if *cur == b => {
                *max = (*max).max(backlog);
                *last = backlog;
                None
            }
            Some(_) => self.bucket.replace((b, backlog, backlog)),
            None => {
                self.bucket = Some((b, backlog, backlog));
                None
            }
        };
        if let Some(done) = closed {
            self.close_bucket(window, done, &mut out);
        }
        out
    }

    /// The backlog's bucket still being filled, closed: the values to write.
    pub(super) fn close(&mut self, window: &TraceWindow) -> Vec<Reading> {
        let mut out = Vec::new();
        if let Some(done) = self.bucket.take() {
            self.close_bucket(window, done, &mut out);
        }
        out
    }

    /// A finished backlog bucket: its largest value at its start, and its
    /// last value at the next bucket's start when lower.
    fn close_bucket(
        &mut self,
        window: &TraceWindow,
        (bucket, max, last): (Nanos, u64, u64),
        out: &mut Vec<Reading>,
    ) {
        let start = bucket.saturating_mul(BACKLOG_BUCKET_NS);
        let next = start.saturating_add(BACKLOG_BUCKET_NS);
        let mut backlog = |at: Nanos, n: u64| {
            out.push(("LMS backlog", at, Args::Requests { requests: n }));
        };
        if window.overlaps(start, next) && self.backlog_written != Some(max) {
            backlog(start.max(window.from_ns), max);
            self.backlog_written = Some(max);
        }
        if last != max && window.contains(next) {
            backlog(next, last);
            self.backlog_written = Some(last);
        }
    }
}
