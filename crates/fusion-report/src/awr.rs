//! The AWR and tkprof sections of a phase's report for one instance:
//! tkprof's per-statement tables, the Global Cache and Enqueue Services
//! Workload Characteristics, the Global Cache Load Profile, the Top 5 Timed
//! Foreground Events, the emulator's decomposition of received block latency
//! and the background waits. text.rs lays them out in the whole report.

use fusion_core::metrics::{AwrLine, BlockKind, Metric, Part};
use fusion_core::stats::{Stat, Stats, Wait};

use crate::fmt::grouped;
use crate::sheet::{AWR_MESSAGE_BYTES, NS_PER_MS, NS_PER_S, Out, table};

/// tkprof's per-statement tables: the call lines (CPU, elapsed and gets are
/// charged to Execute; the model has no separate parse or fetch work), then
/// "Elapsed times include waiting on following events" (seconds).
pub fn tkprof(s: &Stats, names_9i: bool) -> String {
    let mut out = Out::default();
    let secs = |ns: u64| format!("{:.2}", ns as f64 / NS_PER_S);
    let rule = "------- ------  -------- ---------- ---------- ---------- ----------  ----------";
    for st in s.statements.iter().filter(|x| !x.is_empty()) {
        out.line(crate::fmt::wrapped(&st.sql, "", ""));
        if st.recursive {
            out.line("(recursive)");
        }
        out.blank();
        out.line(
            "call     count       cpu    elapsed       disk      query    current        rows",
        );
        out.line(rule);
        let row =
            |name: &str, count: u64, cpu: u64, ela: u64, disk: u64, q: u64, c: u64, rows: u64| {
                format!(
                    "{name:<7} {count:>6}  {:>8} {:>10} {disk:>10} {q:>10} {c:>10}  {rows:>10}",
                    secs(cpu),
                    secs(ela)
                )
            };
        out.line(row("Parse", st.parses, 0, 0, 0, 0, 0, 0));
        out.line(row(
            "Execute",
            st.executions,
            st.cpu_ns,
            st.elapsed_ns,
            st.disk,
            st.query,
            st.current,
            st.rows,
        ));
        out.line(row("Fetch", st.fetches, 0, 0, 0, 0, 0, 0));
        out.line(rule);
        out.line(row(
            "total",
            st.parses + st.executions + st.fetches,
            st.cpu_ns,
            st.elapsed_ns,
            st.disk,
            st.query,
            st.current,
            st.rows,
        ));
        // Events by the name shown: 9i names merge several 10g events.
        let mut waits: Vec<(&str, fusion_core::tkprof::StmtWait)> = Vec::new();
        for (e, w) in Wait::ALL.iter().zip(&st.waits).filter(|(_, w)| w.waits > 0) {
            let name = if names_9i { e.name_9i() } else { e.name() };
            match waits.iter_mut().find(|(n, _)| *n == name) {
                Some((_, x)) => {
                    x.waits += w.waits;
                    x.time_ns += w.time_ns;
                    x.max_ns = x.max_ns.max(w.max_ns);
                }
                None => waits.push((name, *w)),
            }
        }
        waits.sort_by(|a, b| b.1.time_ns.cmp(&a.1.time_ns).then(a.0.cmp(b.0)));
        if !waits.is_empty() {
            out.blank();
            out.line("Elapsed times include waiting on following events:");
            out.line(
                "  Event waited on                             Times   Max. Wait  Total Waited",
            );
            out.line(
                "  ----------------------------------------   Waited  ----------  ------------",
            );
            for (name, w) in waits {
                out.line(format!(
                    "  {name:<40} {:>8}  {:>10}  {:>12}",
                    w.waits,
                    secs(w.max_ns),
                    secs(w.time_ns)
                ));
            }
        }
        out.blank();
    }
    out.0
}

/// AWR's "Global Cache and Enqueue Services - Workload Characteristics":
/// labels right-aligned, a colon, the value in 9 columns with one decimal
/// (blank when its denominator is zero), lines in pairs as the deck shows them.
pub fn workload_characteristics(s: &Stats) -> String {
    let mut out = Out::default();
    out.title(
        "Global Cache and Enqueue Services - Workload Characteristics",
        '~',
    );
    out.blank();
    let width = AwrLine::ALL
        .iter()
        .map(|l| l.label().len())
        .max()
        .unwrap_or(0);
    // The enqueue line stands alone, then the cache lines in pairs.
    for (n, line) in AwrLine::ALL.iter().enumerate() {
        if n == 1 || (n > 1 && n % 2 == 1) {
            out.blank();
        }
        let value = line
            .eval(s)
            .map(|v| format!("{v:>9.1}"))
            .unwrap_or_default();
        out.line(format!("{:>width$}:{value}", line.label()));
    }
    out.0
}

/// The deadlocks LMD broke here, as AWR's Instance Activity Stats show
/// `enqueue deadlocks` (with how long the victims had waited); empty when
/// there were none, so a report without deadlocks prints what it always did.
pub fn deadlocks(s: &Stats) -> String {
    let count = s.get(Stat::EnqueueDeadlocks);
    if count == 0 {
        return String::new();
    }
    let waited_ms = s.get(Stat::DeadlockDetectionTime) as f64 / NS_PER_MS;
    let mut out = Out::default();
    out.line("Instance Activity Stats - deadlocks (ORA-00060)");
    out.line(format!(
        "  {:<44}{:>12}",
        "enqueue deadlocks",
        grouped(count as f64, 0)
    ));
    out.line(format!(
        "  {:<44}{:>12.1}",
        "avg wait of a victim until rolled back (ms)",
        waited_ms / count as f64
    ));
    out.0
}

/// AWR's "Global Cache Load Profile", per second and per transaction.
pub fn load_profile(s: &Stats, elapsed_ns: u64, db_block_size: u32) -> String {
    use Stat::*;
    let secs = elapsed_ns as f64 / NS_PER_S;
    let txns = s.get(UserCommits) as f64;
    let received = (s.get(GcCrBlocksReceived) + s.get(GcCurrentBlocksReceived)) as f64;
    let served = (s.get(GcCrBlocksServed) + s.get(GcCurrentBlocksServed)) as f64;
    let msgs_received = s.get(GcsMsgsReceived) as f64;
    let msgs_sent = s.get(GcsMessagesSent) as f64;
    let traffic_kb = ((received + served) * f64::from(db_block_size)
        + (msgs_sent + msgs_received) * AWR_MESSAGE_BYTES)
        / 1024.0;
    let rows = [
        ("Global Cache blocks received:", received),
        ("Global Cache blocks served:", served),
        ("GCS messages received:", msgs_received),
        ("GCS messages sent:", msgs_sent),
        ("DBWR Fusion writes:", s.get(DbwrFusionWrites) as f64),
        ("Estd Interconnect traffic (KB):", traffic_kb),
    ];
    let per = |v: f64, den: f64| {
        if den > 0.0 {
            grouped(v / den, 2)
        } else {
            String::new()
        }
    };
    let mut out = Out::default();
    out.line(format!(
        "{:<36}{:>15}  {:>15}",
        "Global Cache Load Profile", "Per Second", "Per Transaction"
    ));
    out.line(format!(
        "{:<36}{:>15}  {:>15}",
        "~~~~~~~~~~~~~~~~~~~~~~~~~",
        "-".repeat(15),
        "-".repeat(15)
    ));
    for (label, v) in rows {
        let line = format!("  {label:<34}{:>15}  {:>15}", per(v, secs), per(v, txns));
        out.line(line.trim_end());
    }
    out.0
}

/// One row of the Top 5 table.
#[derive(Clone, Debug, PartialEq)]
pub struct TopEvent {
    pub name: String,
    /// `None` for the CPU row.
    pub waits: Option<u64>,
    pub time_ns: u64,
    pub class: &'static str,
}

/// Foreground waits and CPU by time, the largest first, at most five, rows
/// with no time left out. With `names_9i`, events sharing a 9i name merge.
pub fn top_events(s: &Stats, names_9i: bool) -> Vec<TopEvent> {
    let mut rows: Vec<TopEvent> = Vec::new();
    for &w in Wait::ALL {
        let e = s.event(w);
        // AWR leaves idle waits (waiting for work, e.g. `PX Deq: ...`) out.
        if e.time_fg_ns == 0 || w.class() == fusion_core::stats::WaitClass::Idle {
            continue;
        }
        let name = if names_9i { w.name_9i() } else { w.name() };
        match rows.iter_mut().find(|r| r.name == name) {
            Some(r) => {
                r.waits = Some(r.waits.unwrap_or(0) + e.waits_fg);
                r.time_ns += e.time_fg_ns;
            }
            None => rows.push(TopEvent {
                name: name.to_string(),
                waits: Some(e.waits_fg),
                time_ns: e.time_fg_ns,
                class: w.class().name(),
            }),
        }
    }
    let cpu = s.get(Stat::CpuUsedBySession);
    if cpu > 0 {
        let name = if names_9i { "CPU time" } else { "DB CPU" };
        rows.push(TopEvent {
            name: name.to_string(),
            waits: None,
            time_ns: cpu,
            class: "",
        });
    }
    rows.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then_with(|| a.name.cmp(&b.name)));
    rows.truncate(5);
    rows
}

/// Share of DB time in percent, if there was any DB time.
pub(crate) fn pct_db_time(time_ns: u64, s: &Stats) -> Option<f64> {
    let db = s.get(Stat::DbTime);
    (db > 0).then(|| 100.0 * time_ns as f64 / db as f64)
}

pub(crate) fn top_events_table(s: &Stats, names_9i: bool) -> String {
    let mut out = Out::default();
    out.title("Top 5 Timed Foreground Events", '~');
    let rows = top_events(s, names_9i);
    if rows.is_empty() {
        out.line("(no foreground wait or CPU time)");
        return out.0;
    }
    let mut t = table(
        &[
            "Event",
            "Waits",
            "Time(s)",
            "Avg wait (ms)",
            "% DB time",
            "Wait Class",
        ],
        &[1, 2, 3, 4],
    );
    for r in rows {
        let avg = r
            .waits
            .filter(|w| *w > 0)
            .map(|w| format!("{:.2}", r.time_ns as f64 / NS_PER_MS / w as f64))
            .unwrap_or_default();
        t.add_row(vec![
            r.name.clone(),
            r.waits.map(|w| grouped(w as f64, 0)).unwrap_or_default(),
            grouped(r.time_ns as f64 / NS_PER_S, 2),
            avg,
            pct_db_time(r.time_ns, s)
                .map(|p| format!("{p:.1}"))
                .unwrap_or_default(),
            r.class.to_string(),
        ]);
    }
    out.table(&t);
    out.0
}

/// The emulator's decomposition of received block latency (the deck's
/// "GC CR latency ~= message + LMS processing + LGWR flush + wire"):
/// average ms per received block of each part, and its share of the receive time.
pub fn decomposition(s: &Stats) -> String {
    let mut out = Out::default();
    out.title(
        "Received block latency decomposition (avg ms per block, % of receive time)",
        '~',
    );
    let mut header = vec!["Block", "Received", "Avg receive"];
    header.extend(Part::ALL.iter().map(|p| p.name()));
    let mut t = table(&header, &(1..header.len()).collect::<Vec<_>>());
    let mut any = false;
    for kind in [BlockKind::Cr, BlockKind::Current] {
        let (count, time) = match kind {
            BlockKind::Cr => (Stat::GcCrBlocksReceived, Stat::GcCrBlockReceiveTime),
            BlockKind::Current => (
                Stat::GcCurrentBlocksReceived,
                Stat::GcCurrentBlockReceiveTime,
            ),
        };
        let blocks = s.get(count);
        if blocks == 0 {
            continue;
        }
        any = true;
        let mut row = vec![
            kind.name().to_string(),
            grouped(blocks as f64, 0),
            format!("{:.3}", s.get(time) as f64 / NS_PER_MS / blocks as f64),
        ];
        for &part in Part::ALL {
            let ms = Metric::DecompMs(kind, part).eval(s, 0).unwrap_or(0.0);
            let share = Metric::DecompShare(kind, part)
                .eval(s, 0)
                .map(|x| format!("{:>5.1}%", 100.0 * x))
                .unwrap_or_else(|| "    -".to_string());
            // Three significant decimals at most, so that the table fits
            // 100 columns even with seconds-long flushes.
            row.push(format!("{} {share}", short_ms(ms)));
        }
        t.add_row(row);
    }
    if any {
        out.table(&t);
    } else {
        out.line("(no gc block received)");
    }
    out.0
}

/// Milliseconds in at most 6 characters below 10 s: `0.116`, `22.24`, `238.1`.
fn short_ms(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.3}")
    } else if ms < 100.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.1}")
    }
}

/// The background waits behind gc latency and the CPU run queue.
pub fn background(s: &Stats, elapsed_ns: u64, cpu_count: u32, names_9i: bool) -> String {
    let event = |w: Wait| {
        let e = s.event(w);
        let name = if names_9i { w.name_9i() } else { w.name() };
        let avg = if e.waits > 0 {
            format!(
                "avg {:.2} ms",
                e.time_ns as f64 / NS_PER_MS / e.waits as f64
            )
        } else {
            "avg -".to_string()
        };
        format!("{name} {} waits, {avg}", grouped(e.waits as f64, 0))
    };
    let ms = |st: Stat| format!("{} ms", grouped(s.get(st) as f64 / NS_PER_MS, 1));
    let capacity = f64::from(cpu_count) * elapsed_ns as f64;
    let busy = if capacity > 0.0 {
        format!("{:.1} %", 100.0 * s.get(Stat::OsBusyTime) as f64 / capacity)
    } else {
        "-".to_string()
    };
    // One figure a line: each fits a terminal whatever its numbers.
    let mut out = Out::default();
    out.line(format!(
        "Background waits:  {}",
        event(Wait::GcsLogFlushSync)
    ));
    out.line(format!(
        "                   {}",
        event(Wait::LogFileParallelWrite)
    ));
    out.line(format!(
        "CPU run queue:     LMS {}, LGWR {}, foreground {}",
        ms(Stat::LmsCpuWaitTime),
        ms(Stat::LgwrCpuWaitTime),
        ms(Stat::ForegroundCpuWaitTime)
    ));
    out.line(format!("CPU busy:          {busy} of {cpu_count} CPUs"));
    out.0
}
