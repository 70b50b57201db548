//! The trace's counters: an instance's run queue, written whenever it
//! changes, and LMS's backlog, which goes up and down with every message
//! LMS handles, written as its largest value in each millisecond (and, when
//! it ended the millisecond lower, that value from the next one on): the
//! backlog building up stays visible at a twentieth of the events.

use fusion_core::config::Nanos;

use super::TraceWriter;
use super::event::{Args, Event, us};

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

impl TraceWriter {
    /// Instance `inst`'s run queue and LMS backlog as of `now`.
    pub(super) fn gauge(&mut self, inst: usize, now: Nanos, runq: u64, backlog: u64) {
        let Some(g) = self.gauges.get_mut(inst) else {
            return;
        };
        let prev = g.runq_last.replace(runq);
        let mut writes: Vec<(Nanos, u64)> = Vec::new();
        if self.window.contains(now) {
            if g.runq_written.is_none()
                && now > self.window.from_ns
                && let Some(p) = prev
            {
                // The value at the window's start, before the first change in it.
                writes.push((self.window.from_ns, p));
                g.runq_written = Some(p);
            }
            if g.runq_written != Some(runq) {
                writes.push((now, runq));
                g.runq_written = Some(runq);
            }
        }
        let b = now / BACKLOG_BUCKET_NS;
        let closed = match g.bucket.as_mut() {
            Some((cur, max, last)) if *cur == b => {
                *max = (*max).max(backlog);
                *last = backlog;
                None
            }
            Some(_) => g.bucket.replace((b, backlog, backlog)),
            None => {
                g.bucket = Some((b, backlog, backlog));
                None
            }
        };
        let pid = self.pid(inst);
        for (at, n) in writes {
            self.counter(pid, "run queue", at, Args::Processes { processes: n });
        }
        if let Some(done) = closed {
            self.close_bucket(inst, done);
        }
    }

    /// Write every instance's backlog bucket still being filled.
    pub(super) fn close_gauges(&mut self) {
        for inst in 0..self.gauges.len() {
            if let Some(done) = self.gauges[inst].bucket.take() {
                self.close_bucket(inst, done);
            }
        }
    }

    /// Write a finished backlog bucket: its largest value at its start,
    /// and its last value at the next bucket's start when lower.
    fn close_bucket(&mut self, inst: usize, (bucket, max, last): (Nanos, u64, u64)) {
        let start = bucket.saturating_mul(BACKLOG_BUCKET_NS);
        let next = start.saturating_add(BACKLOG_BUCKET_NS);
        let mut writes: Vec<(Nanos, u64)> = Vec::new();
        let Some(g) = self.gauges.get_mut(inst) else {
            return;
        };
        if self.window.overlaps(start, next) && g.backlog_written != Some(max) {
            writes.push((start.max(self.window.from_ns), max));
            g.backlog_written = Some(max);
        }
        if last != max && self.window.contains(next) {
            writes.push((next, last));
            g.backlog_written = Some(last);
        }
        let pid = self.pid(inst);
        for (at, n) in writes {
            self.counter(pid, "LMS backlog", at, Args::Requests { requests: n });
        }
    }

    fn counter(&mut self, pid: u32, name: &str, at: Nanos, args: Args<'_>) {
        let mut e = Event::new("C", name, pid);
        e.ts = Some(us(at));
        e.args = Some(args);
        self.emit(&e);
    }
}
