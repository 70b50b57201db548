//! The timeline trace (`fusionlab run --trace FILE`): a Chrome/Perfetto
//! JSON trace (Trace Event Format) of what every process of every instance
//! did, built from the records the instances keep when asked
//! (`Instance::set_tracing`, `Instance::drain_trace`). See docs/trace.md.
//!
//! - an instance is a process (`inst1`, ...); its sessions (`oracleN`),
//!   `LMSn`, `LGWR`, `DBWn`, PX servers and CPU hogs (`stressN`) are its
//!   threads; a `cluster` process has the phases and the faults;
//! - a CPU step is a `CPU` slice, with a `run queue` slice inside it for
//!   the time it waited for a CPU before it first ran; a foreground wait is
//!   a slice named as `v$system_event` names it (`gc cr block 2-way`);
//!   a background process's waits (`gcs log flush sync`, `log file
//!   parallel write`, `db file parallel write`), which overlap its own CPU
//!   steps, are async slices of its instance;
//! - a block request is a flow arrow from the session that asked, through
//!   the master's LMS and the holder's LMS, to the session that received
//!   the block (or the grant);
//! - the run queue is a counter written when it changes; LMS's backlog,
//!   which changes with every message, a counter of its largest value in
//!   each millisecond (and the value it ended the millisecond with).
//!
//! The writer streams: each event is serialized on its own into a buffered
//! file (gzipped when the name ends in `.gz`), nothing is kept but the
//! requests still on their way and the names already written.

mod event;
mod gauge;
mod out;

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use fusion_core::config::Nanos;
use fusion_core::cpu::ProcId;
use fusion_core::instance::{Hop, Instance, TraceRecord, TransferId};
use fusion_scenario::Fault;

use event::{Args, Event, us};
use gauge::{Gauge, Reading};
pub use out::{TraceOut, TraceWindow};

/// Block requests on their way kept at most; past it the oldest are
/// forgotten (a request whose reply was lost for good, a requester that
/// died) and counted as unfinished.
pub const TRANSFERS_PENDING_MAX: usize = 1 << 16;

/// A fully-loaded CPU hog's slice: it wants a CPU all along, and runs or
/// waits in the run queue as the scheduler decides.
const HOG_SLICE: &str = "stress_cpu (runnable or running)";

/// How many processes a variant's pids leave room for: the cluster and
/// its instances (at most 64).
const PIDS_PER_VARIANT: u32 = 100;

/// What was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Events written (metadata included).
    pub events: u64,
    /// Bytes of JSON (before compression).
    pub json_bytes: u64,
    /// Block requests drawn as flow arrows.
    pub transfers: u64,
    /// Requests with no end in the trace: still on their way when the run
    /// ended, lost, or partly outside the window.
    pub transfers_unfinished: u64,
    /// Records an instance dropped because the driver fell behind.
    pub records_dropped: u64,
}

/// One request's hops so far: (hop, pid, tid, time).
type Hops = Vec<(Hop, u32, u32, Nanos)>;

/// A thread's CPU slice still growing: back-to-back steps (the next asked
/// for the moment the last ended, as a session's block visits are) are one
/// slice, which keeps a CPU-bound run's trace small.
#[derive(Clone, Copy)]
struct OpenCpu {
    start: Nanos,
    end: Nanos,
    /// Time runnable but not running, over the steps.
    waited: Nanos,
}

/// Writes a trace as the run goes.
pub struct TraceWriter {
    out: TraceOut,
    window: TraceWindow,
    wrote_any: bool,
    error: Option<io::Error>,
    /// The variant being written (0, 1, ...) and its name, when a run has several.
    variant: u32,
    label: Option<String>,
    threads_named: HashSet<(u32, u32)>,
    /// Per thread (pid, tid): its CPU slice not written yet.
    cpu_open: HashMap<(u32, u32), OpenCpu>,
    /// Per fully-loaded hog's thread: since when it has asked for a CPU.
    hogs_busy: HashMap<(u32, u32), Nanos>,
    /// The latest time drained (where busy hogs' slices end with the variant).
    last_now: Nanos,
    gauges: Vec<Gauge>,
    flows: HashMap<(u32, TransferId), Hops>,
    next_id: u64,
    scratch: Vec<TraceRecord>,
    /// The faults of the previous phase: a phase-long fault that goes on is not marked again.
    previous_faults: Vec<Fault>,
    summary: TraceSummary,
}

impl TraceWriter {
    /// Start a trace into `out`, keeping the events in `window`.
    pub fn new(out: TraceOut, window: TraceWindow) -> TraceWriter {
        let mut w = TraceWriter {
            out,
            window,
            wrote_any: false,
            error: None,
            variant: 0,
            label: None,
            threads_named: HashSet::new(),
            cpu_open: HashMap::new(),
            hogs_busy: HashMap::new(),
            last_now: 0,
            gauges: Vec::new(),
            flows: HashMap::new(),
            next_id: 1,
            scratch: Vec::new(),
            previous_faults: Vec::new(),
            summary: TraceSummary::default(),
        };
        w.raw(b"{\"traceEvents\":[");
        w
    }

    /// A variant's run begins (`index` of `count`): its cluster and
    /// instances get pids of their own, named after it when there are several.
    pub fn begin_variant(&mut self, index: usize, count: usize, name: &str, instances: usize) {
        self.close_cpu_slices();
        self.close_gauges();
        self.variant = u32::try_from(index).unwrap_or(u32::MAX);
        self.label = (count > 1).then(|| name.to_string());
        self.gauges = vec![Gauge::default(); instances];
        self.previous_faults.clear();
        let cluster = self.cluster_pid();
        self.name_process(cluster, "cluster");
        self.name_thread(cluster, 1, "phases", 0);
        self.name_thread(cluster, 2, "faults", 1);
        for i in 0..instances {
            let pid = self.pid(i);
            self.name_process(pid, &format!("inst{}", i + 1));
        }
    }

    /// A phase of the variant: a slice on the `phases` track, its faults
    /// marks across the whole trace at the times they act.
    pub fn phase(&mut self, name: &str, start: Nanos, duration: Nanos, faults: &[Fault]) {
        let pid = self.cluster_pid();
        self.slice(pid, 1, name, start, start.saturating_add(duration), None);
        for f in faults {
            let (at, label) = crate::html::sections::fault_mark(f);
            let timed = matches!(
                f,
                Fault::Kill { .. } | Fault::Restart { .. } | Fault::Pause { .. }
            );
            if !timed && self.previous_faults.contains(f) {
                continue;
            }
            let at = start.saturating_add(at);
            if self.window.contains(at) {
                let mut e = Event::new("i", &label, pid);
                e.ts = Some(us(at));
                e.tid = Some(2);
                e.s = Some("g");
                self.emit(&e);
            }
        }
        self.previous_faults = faults.to_vec();
    }

    /// Write what instance `inst` recorded since the last drain, and its
    /// run queue and LMS backlog as of `now` if they changed.
    pub fn drain(&mut self, inst: usize, now: Nanos, x: &mut Instance) {
        let mut records = std::mem::take(&mut self.scratch);
        self.summary.records_dropped += x.drain_trace(&mut records);
        let pid = self.pid(inst);
        for r in records.drain(..) {
            self.record(pid, r, x);
        }
        self.scratch = records;
        self.last_now = self.last_now.max(now);
        let runq = x.run_queue_len() as u64;
        let backlog = x.lms_backlog() as u64;
        self.gauge(inst, now, runq, backlog);
    }

    /// End the trace: what it holds, or the first error writing it.
    pub fn finish(mut self) -> io::Result<(TraceSummary, Vec<u8>)> {
        self.close_cpu_slices();
        self.close_gauges();
        self.summary.transfers_unfinished += self.flows.len() as u64;
        self.flows.clear();
        let other = serde_json::json!({
            "producer": "fusionlab",
            "window_s": [
                self.window.from_ns as f64 / 1e9,
                (self.window.to_ns != Nanos::MAX).then(|| self.window.to_ns as f64 / 1e9),
            ],
            "transfers": self.summary.transfers,
            "transfers_unfinished": self.summary.transfers_unfinished,
            "records_dropped": self.summary.records_dropped,
        });
        self.raw(b"\n],\"displayTimeUnit\":\"ms\",\"otherData\":");
        if self.error.is_none()
            && let Err(e) = serde_json::to_writer(&mut self.out, &other)
        {
            self.error = Some(e.into());
        }
        self.raw(b"}\n");
        if let Some(e) = self.error {
            return Err(e);
        }
        self.summary.json_bytes = self.out.json_bytes();
        let bytes = self.out.finish()?;
        Ok((self.summary, bytes))
    }

    // ----- records -------------------------------------------------------------------

    fn record(&mut self, pid: u32, r: TraceRecord, x: &Instance) {
        match r {
            TraceRecord::Cpu {
                proc,
                requested_at,
                started_at,
                done_at,
                waited,
            } => {
                let tid = self.thread(pid, proc, x);
                let step = OpenCpu {
                    start: requested_at,
                    end: done_at,
                    waited,
                };
                match self.cpu_open.get_mut(&(pid, tid)) {
                    Some(open) if open.end == requested_at => {
                        open.end = done_at;
                        open.waited += waited;
                    }
                    Some(open) => {
                        let done = std::mem::replace(open, step);
                        self.cpu_slice(pid, tid, done);
                    }
                    None => {
                        self.cpu_open.insert((pid, tid), step);
                    }
                }
                // Inside the CPU slice, however far it grows.
                if started_at > requested_at {
                    self.slice(pid, tid, "run queue", requested_at, started_at, None);
                }
            }
            TraceRecord::Wait {
                proc,
                event,
                began,
                ended,
            } => {
                let tid = self.thread(pid, proc, x);
                self.slice(pid, tid, event.name(), began, ended, None);
            }
            TraceRecord::BackgroundWait {
                proc,
                event,
                began,
                ended,
            } => {
                if began < ended && self.window.overlaps(began, ended) {
                    let tid = self.thread(pid, proc, x);
                    let (began, ended) = self.window.clip(began, ended);
                    let id = self.next_id();
                    for (ph, at) in [("b", began), ("e", ended)] {
                        let mut e = Event::new(ph, event.name(), pid);
                        e.cat = Some("background wait");
                        e.ts = Some(us(at));
                        e.tid = Some(tid);
                        e.id = Some(id);
                        self.emit(&e);
                    }
                }
            }
            TraceRecord::Hog { proc, busy, at } => {
                let tid = self.thread(pid, proc, x);
                if busy {
                    self.hogs_busy.insert((pid, tid), at);
                } else if let Some(since) = self.hogs_busy.remove(&(pid, tid)) {
                    self.slice(pid, tid, HOG_SLICE, since, at, None);
                }
            }
            TraceRecord::Transfer { id, hop, proc, at } => {
                let tid = self.thread(pid, proc, x);
                self.hop((self.variant, id), hop, pid, tid, at);
            }
        }
    }

    /// A request's hop; at its end, the whole arrow is written (when all of
    /// it is in the window).
    fn hop(&mut self, key: (u32, TransferId), hop: Hop, pid: u32, tid: u32, at: Nanos) {
        match hop {
            Hop::Request => {
                if self.flows.len() >= TRANSFERS_PENDING_MAX {
                    self.forget_oldest_flows(at);
                }
                if self.flows.insert(key, vec![(hop, pid, tid, at)]).is_some() {
                    // Asked again under the same number (a new life of the requester).
                    self.summary.transfers_unfinished += 1;
                }
            }
            Hop::Master | Hop::Holder => {
                if let Some(hops) = self.flows.get_mut(&key) {
                    hops.push((hop, pid, tid, at));
                }
            }
            Hop::Abandoned => {
                self.flows.remove(&key);
            }
            Hop::Received { event } | Hop::Granted { event } => {
                let Some(mut hops) = self.flows.remove(&key) else {
                    return;
                };
                hops.push((hop, pid, tid, at));
                if hops.iter().all(|h| self.window.contains(h.3)) {
                    self.arrow(event.name(), &hops);
                } else {
                    self.summary.transfers_unfinished += 1;
                }
            }
        }
    }

    /// Forget the requests asked longest ago (half of them), to make room.
    #[cold]
    fn forget_oldest_flows(&mut self, _now: Nanos) {
        let mut asked: Vec<Nanos> = self.flows.values().map(|h| h[0].3).collect();
        asked.sort_unstable();
        let cut = asked[asked.len() / 2];
        let before = self.flows.len();
        self.flows.retain(|_, h| h[0].3 > cut);
        self.summary.transfers_unfinished += (before - self.flows.len()) as u64;
    }

    /// A flow arrow through `hops`: it starts just inside the requester's
    /// wait, steps just inside each LMS step that handled it, and ends just
    /// inside the wait it ended (1 ns inside, so each binds to its slice).
    fn arrow(&mut self, name: &str, hops: &Hops) {
        let id = self.next_id();
        self.summary.transfers += 1;
        let last = hops.len() - 1;
        let mut prev = 0.0f64;
        for (k, &(hop, pid, tid, at)) in hops.iter().enumerate() {
            let (ph, at) = match (k, hop) {
                (0, _) => ("s", at.saturating_add(1)),
                (k, _) if k == last => ("f", at.saturating_sub(1)),
                _ => ("t", at.saturating_sub(1)),
            };
            let ts = us(at).max(prev);
            prev = ts;
            let mut e = Event::new(ph, name, pid);
            e.cat = Some("transfer");
            e.ts = Some(ts);
            e.tid = Some(tid);
            e.id = Some(id);
            if ph == "f" {
                e.bp = Some("e");
            }
            self.emit(&e);
        }
    }

    fn cpu_slice(&mut self, pid: u32, tid: u32, c: OpenCpu) {
        let runnable = (c.waited > 0).then(|| Args::Runnable {
            runnable_us: us(c.waited),
        });
        self.slice(pid, tid, "CPU", c.start, c.end, runnable);
    }

    /// Write every thread's CPU slice still open, and the busy hogs' up
    /// to the last time drained (in thread order, so that the same run
    /// writes the same file).
    fn close_cpu_slices(&mut self) {
        let mut open: Vec<((u32, u32), OpenCpu)> = self.cpu_open.drain().collect();
        open.sort_unstable_by_key(|(k, _)| *k);
        for ((pid, tid), c) in open {
            self.cpu_slice(pid, tid, c);
        }
        let mut hogs: Vec<((u32, u32), Nanos)> = self.hogs_busy.drain().collect();
        hogs.sort_unstable();
        let end = self.last_now;
        for ((pid, tid), since) in hogs {
            self.slice(pid, tid, HOG_SLICE, since, end, None);
        }
        self.last_now = 0;
    }

    // ----- writing -------------------------------------------------------------------

    /// A complete slice `[start, end]` on a thread, cut to the window;
    /// nothing for an empty one.
    fn slice(
        &mut self,
        pid: u32,
        tid: u32,
        name: &str,
        start: Nanos,
        end: Nanos,
        args: Option<Args<'_>>,
    ) {
        if start >= end || !self.window.overlaps(start, end) {
            return;
        }
        let (start, end) = self.window.clip(start, end);
        let mut e = Event::new("X", name, pid);
        e.ts = Some(us(start));
        e.dur = Some(us(end - start));
        e.tid = Some(tid);
        e.args = args;
        self.emit(&e);
    }

    fn cluster_pid(&self) -> u32 {
        self.variant
            .saturating_mul(PIDS_PER_VARIANT)
            .saturating_add(1)
    }

    /// Instance `inst`'s run queue and LMS backlog as of `now`.
    fn gauge(&mut self, inst: usize, now: Nanos, runq: u64, backlog: u64) {
        let Some(g) = self.gauges.get_mut(inst) else {
            return;
        };
        let readings = g.sample(&self.window, now, runq, backlog);
        self.counters(inst, readings);
    }

    /// Write every instance's backlog bucket still being filled.
    fn close_gauges(&mut self) {
        for inst in 0..self.gauges.len() {
            let readings = self.gauges[inst].close(&self.window);
            self.counters(inst, readings);
        }
    }

    /// Write instance `inst`'s counter values.
    fn counters(&mut self, inst: usize, readings: Vec<Reading>) {
        let pid = self.pid(inst);
        for (name, at, args) in readings {
            let mut e = Event::new("C", name, pid);
            e.ts = Some(us(at));
            e.args = Some(args);
            self.emit(&e);
        }
    }

    fn pid(&self, inst: usize) -> u32 {
        let inst = u32::try_from(inst).unwrap_or(PIDS_PER_VARIANT);
        self.cluster_pid().saturating_add(1 + inst)
    }

    /// The thread of process `proc` of the instance `pid` is, named the
    /// first time it appears.
    fn thread(&mut self, pid: u32, proc: ProcId, x: &Instance) -> u32 {
        let tid = proc.saturating_add(1);
        if !self.threads_named.contains(&(pid, tid)) {
            let name = x.process_name(proc).unwrap_or("process").to_string();
            self.name_thread(pid, tid, &name, proc);
        }
        tid
    }

    fn name_process(&mut self, pid: u32, name: &str) {
        let name = match &self.label {
            Some(variant) => format!("{name} ({variant})"),
            None => name.to_string(),
        };
        let mut e = Event::new("M", "process_name", pid);
        e.args = Some(Args::Name { name: &name });
        self.emit(&e);
        let mut e = Event::new("M", "process_sort_index", pid);
        e.args = Some(Args::SortIndex { sort_index: pid });
        self.emit(&e);
    }

    fn name_thread(&mut self, pid: u32, tid: u32, name: &str, sort: u32) {
        self.threads_named.insert((pid, tid));
        let mut e = Event::new("M", "thread_name", pid);
        e.tid = Some(tid);
        e.args = Some(Args::Name { name });
        self.emit(&e);
        let mut e = Event::new("M", "thread_sort_index", pid);
        e.tid = Some(tid);
        e.args = Some(Args::SortIndex { sort_index: sort });
        self.emit(&e);
    }

    fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn emit(&mut self, e: &Event<'_>) {
        if self.error.is_some() {
            return;
        }
        let sep: &[u8] = if self.wrote_any { b",\n" } else { b"\n" };
        self.wrote_any = true;
        let r = self
            .out
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut self.out, e).map_err(io::Error::from));
        match r {
            Ok(()) => self.summary.events += 1,
            Err(err) => self.error = Some(err),
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(e) = self.out.write_all(bytes)
        {
            self.error = Some(e);
        }
    }
}
