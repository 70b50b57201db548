//! One event of the Trace Event Format (the JSON Chrome's `about:tracing`
//! and ui.perfetto.dev read), written one at a time with serde_json.

use serde::Serialize;

/// An event. Times are in microseconds (fractions keep nanoseconds).
#[derive(Serialize)]
pub(super) struct Event<'a> {
    pub name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cat: Option<&'a str>,
    pub ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// A flow's end binds to the slice around it (`"e"`), not the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bp: Option<&'static str>,
    /// An instant event's scope (`"g"`: across the whole trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Args<'a>>,
}

impl<'a> Event<'a> {
    pub fn new(ph: &'static str, name: &'a str, pid: u32) -> Event<'a> {
        Event {
            name,
            cat: None,
            ph,
            ts: None,
            dur: None,
            pid,
            tid: None,
            id: None,
            bp: None,
            s: None,
            args: None,
        }
    }
}

/// What an event carries besides its times.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Args<'a> {
    /// Metadata: a process's or thread's name.
    Name { name: &'a str },
    /// Metadata: where a process or thread goes in the list.
    SortIndex { sort_index: u32 },
    /// The run queue: processes waiting for or on a CPU.
    Processes { processes: u64 },
    /// LMS's backlog: requests queued, running or parked.
    Requests { requests: u64 },
    /// A CPU step that waited in the run queue (after preemptions too).
    Runnable { runnable_us: f64 },
}

/// Nanoseconds as the format's microseconds.
pub(super) fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}
