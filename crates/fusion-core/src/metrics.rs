//! Figures derived from statistics the way AWR and Statspack derive them
//! (`sprepins.sql`, RAC section), and the names scenario expectations use to
//! refer to any measured figure.
//!
//! A figure whose denominator is zero is `None`, as AWR prints it blank.

use crate::stats::{Stat, Stats, StmtStat, Wait, WaitClass};

const NS_PER_MS: f64 = 1_000_000.0;

/// Lines of AWR's "Global Cache and Enqueue Services - Workload Characteristics".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AwrLine {
    EnqueueGetMs,
    CrReceiveMs,
    CurrentReceiveMs,
    CrBuildMs,
    CrSendMs,
    CrFlushPct,
    CrFlushMs,
    CurrentPinMs,
    CurrentSendMs,
    CurrentFlushPct,
    CurrentFlushMs,
}

impl AwrLine {
    pub const ALL: &'static [AwrLine] = &[
        AwrLine::EnqueueGetMs,
        AwrLine::CrReceiveMs,
        AwrLine::CurrentReceiveMs,
        AwrLine::CrBuildMs,
        AwrLine::CrSendMs,
        AwrLine::CrFlushPct,
        AwrLine::CrFlushMs,
        AwrLine::CurrentPinMs,
        AwrLine::CurrentSendMs,
        AwrLine::CurrentFlushPct,
        AwrLine::CurrentFlushMs,
    ];

    /// The label exactly as the AWR report prints it.
    pub fn label(self) -> &'static str {
        match self {
            AwrLine::EnqueueGetMs => "Avg global enqueue get time (ms)",
            AwrLine::CrReceiveMs => "Avg global cache cr block receive time (ms)",
            AwrLine::CurrentReceiveMs => "Avg global cache current block receive time (ms)",
            AwrLine::CrBuildMs => "Avg global cache cr block build time (ms)",
            AwrLine::CrSendMs => "Avg global cache cr block send time (ms)",
            AwrLine::CrFlushPct => "Global cache log flushes for cr blocks served %",
            AwrLine::CrFlushMs => "Avg global cache cr block flush time (ms)",
            AwrLine::CurrentPinMs => "Avg global cache current block pin time (ms)",
            AwrLine::CurrentSendMs => "Avg global cache current block send time (ms)",
            AwrLine::CurrentFlushPct => "Global cache log flushes for current blocks served %",
            AwrLine::CurrentFlushMs => "Avg global cache current block flush time (ms)",
        }
    }

    /// AWR's formula over the activity of one interval. Flush times are per
    /// flush, not per block served, exactly as AWR divides them.
    pub fn eval(self, s: &Stats) -> Option<f64> {
        use Stat::*;
        let ms = |t: Stat, n: Stat| ratio(s.get(t) as f64 / NS_PER_MS, s.get(n));
        let pct = |a: Stat, n: Stat| ratio(100.0 * s.get(a) as f64, s.get(n));
        match self {
            AwrLine::EnqueueGetMs => ratio(
                s.get(GlobalEnqueueGetTime) as f64 / NS_PER_MS,
                s.get(GlobalEnqueueGetsSync) + s.get(GlobalEnqueueGetsAsync),
            ),
            AwrLine::CrReceiveMs => ms(GcCrBlockReceiveTime, GcCrBlocksReceived),
            AwrLine::CurrentReceiveMs => ms(GcCurrentBlockReceiveTime, GcCurrentBlocksReceived),
            AwrLine::CrBuildMs => ms(GcCrBlockBuildTime, GcCrBlocksServed),
            AwrLine::CrSendMs => ms(GcCrBlockSendTime, GcCrBlocksServed),
            AwrLine::CrFlushPct => pct(GcCrBlocksFlushed, GcCrBlocksServed),
            AwrLine::CrFlushMs => ms(GcCrBlockFlushTime, GcCrBlocksFlushed),
            AwrLine::CurrentPinMs => ms(GcCurrentBlockPinTime, GcCurrentBlocksServed),
            AwrLine::CurrentSendMs => ms(GcCurrentBlockSendTime, GcCurrentBlocksServed),
            AwrLine::CurrentFlushPct => pct(GcCurrentBlocksFlushed, GcCurrentBlocksServed),
            AwrLine::CurrentFlushMs => ms(GcCurrentBlockFlushTime, GcCurrentBlocksFlushed),
        }
    }
}

fn ratio(num: f64, den: u64) -> Option<f64> {
    (den > 0).then(|| num / den as f64)
}

/// Which kind of received block a decomposition is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Cr,
    Current,
}

impl BlockKind {
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Cr => "cr",
            BlockKind::Current => "current",
        }
    }
}

/// One part of a received block's latency, as the deck decomposes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Request messages on their way to the master and holder, and the master's forwarding.
    RequestSend,
    /// The request waited for the serving LMS to get a CPU.
    LmsCpuWait,
    /// LMS at work: building the CR copy or pinning, and sending.
    LmsProcessing,
    /// LMS waited for LGWR to flush the redo covering the block.
    LogFlush,
    /// The block on the wire back to the requester.
    Wire,
}

impl Part {
    pub const ALL: &'static [Part] = &[
        Part::RequestSend,
        Part::LmsCpuWait,
        Part::LmsProcessing,
        Part::LogFlush,
        Part::Wire,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Part::RequestSend => "request send",
            Part::LmsCpuWait => "lms cpu wait",
            Part::LmsProcessing => "lms processing",
            Part::LogFlush => "log flush",
            Part::Wire => "wire",
        }
    }

    pub fn stat(self, kind: BlockKind) -> Stat {
        use Stat::*;
        match (kind, self) {
            (BlockKind::Cr, Part::RequestSend) => DecompCrRequestSend,
            (BlockKind::Cr, Part::LmsCpuWait) => DecompCrLmsCpuWait,
            (BlockKind::Cr, Part::LmsProcessing) => DecompCrLmsProcessing,
            (BlockKind::Cr, Part::LogFlush) => DecompCrLogFlush,
            (BlockKind::Cr, Part::Wire) => DecompCrWire,
            (BlockKind::Current, Part::RequestSend) => DecompCurrentRequestSend,
            (BlockKind::Current, Part::LmsCpuWait) => DecompCurrentLmsCpuWait,
            (BlockKind::Current, Part::LmsProcessing) => DecompCurrentLmsProcessing,
            (BlockKind::Current, Part::LogFlush) => DecompCurrentLogFlush,
            (BlockKind::Current, Part::Wire) => DecompCurrentWire,
        }
    }
}

impl BlockKind {
    fn received(self) -> (Stat, Stat) {
        match self {
            BlockKind::Cr => (Stat::GcCrBlocksReceived, Stat::GcCrBlockReceiveTime),
            BlockKind::Current => (
                Stat::GcCurrentBlocksReceived,
                Stat::GcCurrentBlockReceiveTime,
            ),
        }
    }
}

/// What a figure in an expectation or a report refers to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// An AWR Workload Characteristics line.
    Awr(AwrLine),
    /// A raw statistic: counts as counted, times in milliseconds, bytes as bytes.
    Stat(Stat),
    /// A statistic per second of the interval.
    PerSecond(Stat),
    EventWaits(Wait),
    EventTimeMs(Wait),
    EventAvgMs(Wait),
    /// Average milliseconds per received block spent in one part.
    DecompMs(BlockKind, Part),
    /// That part's share (0..1) of the received blocks' total receive time.
    DecompShare(BlockKind, Part),
    /// A tkprof column summed over the user's statements (recursive ones
    /// left out): `sql:<column>`.
    Sql(SqlColumn),
    /// The same per execution of those statements: `sql_per_exec:<column>`.
    SqlPerExec(SqlColumn),
    /// Foreground time waited in one wait class, in ms: `class_ms:<class>`.
    ClassTimeMs(WaitClass),
    /// The same per execution of the user's statements (as `v$sql`'s
    /// `cluster_wait_time` over `executions`, for the whole workload):
    /// `class_ms_per_exec:<class>`. Unlike the total over a phase of fixed
    /// length, it does not tend to the sessions' whole time when every
    /// variant waits most of it.
    ClassTimeMsPerExec(WaitClass),
    /// A figure of memory inside one node (a `[server]`): `node:<figure>`.
    Node(NodeFigure),
    /// A figure of the phase's instance recoveries (the recovery summary),
    /// not a statistic: `recovery:<figure>`. [`Metric::eval`] has no value
    /// for it; the report reads it from the phase's recoveries.
    Recovery(RecoveryFigure),
}

/// A figure of memory inside one node, as `node:<name>` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeFigure {
    /// Share of memory accesses (cache lines) served by another locality
    /// group's memory, %.
    RemotePct,
    /// Share served by the process's own group's memory, %.
    LocalPct,
    /// Average time of one `memory_writes` write, ns (the SLB's "Avg nsec/op").
    NsPerMemoryWrite,
    /// Share of the blocks read from disk into a buffer of another group's
    /// memory than the reader's, %.
    RemoteReadPct,
}

impl NodeFigure {
    pub const ALL: &'static [NodeFigure] = &[
        NodeFigure::RemotePct,
        NodeFigure::LocalPct,
        NodeFigure::NsPerMemoryWrite,
        NodeFigure::RemoteReadPct,
    ];

    /// The name after `node:`.
    pub fn name(self) -> &'static str {
        match self {
            NodeFigure::RemotePct => "remote_pct",
            NodeFigure::LocalPct => "local_pct",
            NodeFigure::NsPerMemoryWrite => "ns_per_memory_write",
            NodeFigure::RemoteReadPct => "remote_read_pct",
        }
    }

    /// Whether the figure is a percentage (else nanoseconds).
    pub fn is_pct(self) -> bool {
        matches!(
            self,
            NodeFigure::RemotePct | NodeFigure::LocalPct | NodeFigure::RemoteReadPct
        )
    }

    fn eval(self, s: &Stats) -> Option<f64> {
        let (local, remote) = (
            s.get(Stat::NumaLocalAccesses),
            s.get(Stat::NumaRemoteAccesses),
        );
        match self {
            NodeFigure::RemotePct => ratio(100.0 * remote as f64, local + remote),
            NodeFigure::LocalPct => ratio(100.0 * local as f64, local + remote),
            NodeFigure::NsPerMemoryWrite => ratio(
                s.get(Stat::MemoryWriteOpTime) as f64,
                s.get(Stat::MemoryWriteOps),
            ),
            NodeFigure::RemoteReadPct => ratio(
                100.0 * s.get(Stat::NumaRemoteReads) as f64,
                s.get(Stat::PhysicalReadsCache),
            ),
        }
    }
}

/// A figure of an instance recovery, as `recovery:<name>` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryFigure {
    /// When the survivors declared the instance dead, seconds from the
    /// phase's start.
    DetectedS,
    /// The global resource directory frozen, ms.
    FreezeMs,
    /// From detection to the end of recovery, ms.
    RecoveryMs,
    /// How long the survivors' commits per second stayed below half their
    /// rate before the fault, ms.
    BrownoutMs,
    /// Redo read, KB.
    RedoKbRead,
    BlocksRecovered,
    TransactionsRolledBack,
}

impl RecoveryFigure {
    pub const ALL: &'static [RecoveryFigure] = &[
        RecoveryFigure::DetectedS,
        RecoveryFigure::FreezeMs,
        RecoveryFigure::RecoveryMs,
        RecoveryFigure::BrownoutMs,
        RecoveryFigure::RedoKbRead,
        RecoveryFigure::BlocksRecovered,
        RecoveryFigure::TransactionsRolledBack,
    ];

    /// The name after `recovery:` (and the key in JSON `recovery`).
    pub fn name(self) -> &'static str {
        match self {
            RecoveryFigure::DetectedS => "detected_s",
            RecoveryFigure::FreezeMs => "freeze_ms",
            RecoveryFigure::RecoveryMs => "recovery_ms",
            RecoveryFigure::BrownoutMs => "brownout_ms",
            RecoveryFigure::RedoKbRead => "redo_kb_read",
            RecoveryFigure::BlocksRecovered => "blocks_recovered",
            RecoveryFigure::TransactionsRolledBack => "transactions_rolled_back",
        }
    }

    /// Whether it is a time (ms), else a count (`detected_s` is neither:
    /// seconds).
    pub fn is_ms(self) -> bool {
        matches!(
            self,
            RecoveryFigure::FreezeMs | RecoveryFigure::RecoveryMs | RecoveryFigure::BrownoutMs
        )
    }

    /// Whether recoveries add up (counts) rather than the largest standing
    /// for them all (times).
    pub fn sums(self) -> bool {
        matches!(
            self,
            RecoveryFigure::RedoKbRead
                | RecoveryFigure::BlocksRecovered
                | RecoveryFigure::TransactionsRolledBack
        )
    }
}

/// A column of tkprof's call table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlColumn {
    /// Executions (tkprof's Execute count).
    Count,
    /// CPU, ms.
    Cpu,
    /// Elapsed, ms.
    Elapsed,
    Disk,
    /// Consistent gets.
    Query,
    /// Current-mode gets.
    Current,
    Rows,
}

impl SqlColumn {
    pub const ALL: &'static [SqlColumn] = &[
        SqlColumn::Count,
        SqlColumn::Cpu,
        SqlColumn::Elapsed,
        SqlColumn::Disk,
        SqlColumn::Query,
        SqlColumn::Current,
        SqlColumn::Rows,
    ];

    /// The column's heading in tkprof.
    pub fn name(self) -> &'static str {
        match self {
            SqlColumn::Count => "count",
            SqlColumn::Cpu => "cpu",
            SqlColumn::Elapsed => "elapsed",
            SqlColumn::Disk => "disk",
            SqlColumn::Query => "query",
            SqlColumn::Current => "current",
            SqlColumn::Rows => "rows",
        }
    }

    /// Whether the column is a time (ms).
    pub fn is_time(self) -> bool {
        matches!(self, SqlColumn::Cpu | SqlColumn::Elapsed)
    }

    fn of(self, st: &StmtStat) -> f64 {
        match self {
            SqlColumn::Count => st.executions as f64,
            SqlColumn::Cpu => st.cpu_ns as f64 / NS_PER_MS,
            SqlColumn::Elapsed => st.elapsed_ns as f64 / NS_PER_MS,
            SqlColumn::Disk => st.disk as f64,
            SqlColumn::Query => st.query as f64,
            SqlColumn::Current => st.current as f64,
            SqlColumn::Rows => st.rows as f64,
        }
    }

    /// The column summed over the user's (non-recursive) statements, and their executions.
    fn user_total(self, s: &Stats) -> (f64, u64) {
        s.statements
            .iter()
            .filter(|st| !st.recursive)
            .fold((0.0, 0), |(v, n), st| (v + self.of(st), n + st.executions))
    }
}

impl Metric {
    /// Parse the text form used in scenario files:
    /// an AWR label (`Avg global cache cr block receive time (ms)`),
    /// `stat:<v$sysstat name>`, `rate:<v$sysstat name>`,
    /// `waits:<event>`, `time_ms:<event>`, `avg_ms:<event>`,
    /// `decomp_ms:<cr|current>:<part>`, `decomp_share:<cr|current>:<part>`,
    /// `sql:<column>`, `sql_per_exec:<column>`, `class_ms:<wait class>`,
    /// `class_ms_per_exec:<wait class>`, `recovery:<figure>`, `node:<figure>`.
    pub fn parse(text: &str) -> Result<Metric, String> {
        let t = text.trim();
        if let Some(line) = AwrLine::ALL
            .iter()
            .find(|l| l.label().eq_ignore_ascii_case(t))
        {
            return Ok(Metric::Awr(*line));
        }
        let Some((kind, rest)) = t.split_once(':') else {
            return Err(format!(
                "unknown metric `{t}`: use an AWR line label (e.g. `{}`) or a prefixed name such as \
                 `stat:gc cr blocks received`, `waits:gc cr block congested`, `avg_ms:log file sync`, \
                 `decomp_share:cr:wire`",
                AwrLine::CrReceiveMs.label()
            ));
        };
        let stat = |name: &str| {
            Stat::from_name(name)
                .ok_or_else(|| format!("unknown v$sysstat statistic `{}`", name.trim()))
        };
        let event = |name: &str| {
            Wait::from_name(name).ok_or_else(|| format!("unknown wait event `{}`", name.trim()))
        };
        let decomp = |name: &str| -> Result<(BlockKind, Part), String> {
            let (k, p) = name
                .split_once(':')
                .ok_or_else(|| format!("expected `<cr|current>:<part>`, found `{name}`"))?;
            let kind = match k.trim() {
                "cr" => BlockKind::Cr,
                "current" => BlockKind::Current,
                other => return Err(format!("unknown block kind `{other}` (cr or current)")),
            };
            let part = Part::ALL
                .iter()
                .copied()
                .find(|x| x.name().eq_ignore_ascii_case(p.trim()))
                .ok_or_else(|| {
                    let names: Vec<_> = Part::ALL.iter().map(|x| x.name()).collect();
                    format!("unknown part `{}` (one of: {})", p.trim(), names.join(", "))
                })?;
            Ok((kind, part))
        };
        let column = |name: &str| {
            SqlColumn::ALL
                .iter()
                .copied()
                .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    let names: Vec<_> = SqlColumn::ALL.iter().map(|c| c.name()).collect();
                    format!(
                        "unknown tkprof column `{}` (one of: {})",
                        name.trim(),
                        names.join(", ")
                    )
                })
        };
        let class = |name: &str| {
            WaitClass::ALL
                .iter()
                .copied()
                .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    let names: Vec<_> = WaitClass::ALL.iter().map(|c| c.name()).collect();
                    format!(
                        "unknown wait class `{}` (one of: {})",
                        name.trim(),
                        names.join(", ")
                    )
                })
        };
        let recovery = |name: &str| {
            RecoveryFigure::ALL
                .iter()
                .copied()
                .find(|f| f.name().eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    let names: Vec<_> = RecoveryFigure::ALL.iter().map(|f| f.name()).collect();
                    format!(
                        "unknown recovery figure `{}` (one of: {})",
                        name.trim(),
                        names.join(", ")
                    )
                })
        };
        let node = |name: &str| {
            NodeFigure::ALL
                .iter()
                .copied()
                .find(|f| f.name().eq_ignore_ascii_case(name.trim()))
                .ok_or_else(|| {
                    let names: Vec<_> = NodeFigure::ALL.iter().map(|f| f.name()).collect();
                    format!(
                        "unknown node figure `{}` (one of: {})",
                        name.trim(),
                        names.join(", ")
                    )
                })
        };
        match kind.trim() {
            "recovery" => Ok(Metric::Recovery(recovery(rest)?)),
            "node" => Ok(Metric::Node(node(rest)?)),
            "sql" => Ok(Metric::Sql(column(rest)?)),
            "sql_per_exec" => Ok(Metric::SqlPerExec(column(rest)?)),
            "class_ms" => Ok(Metric::ClassTimeMs(class(rest)?)),
            "class_ms_per_exec" => Ok(Metric::ClassTimeMsPerExec(class(rest)?)),
            "stat" => Ok(Metric::Stat(stat(rest)?)),
            "rate" => Ok(Metric::PerSecond(stat(rest)?)),
            "waits" => Ok(Metric::EventWaits(event(rest)?)),
            "time_ms" => Ok(Metric::EventTimeMs(event(rest)?)),
            "avg_ms" => Ok(Metric::EventAvgMs(event(rest)?)),
            "decomp_ms" => decomp(rest).map(|(k, p)| Metric::DecompMs(k, p)),
            "decomp_share" => decomp(rest).map(|(k, p)| Metric::DecompShare(k, p)),
            other => Err(format!(
                "unknown metric prefix `{other}:` (stat, rate, waits, time_ms, avg_ms, decomp_ms, decomp_share, sql, sql_per_exec, class_ms, class_ms_per_exec, recovery, node)"
            )),
        }
    }

    /// Evaluate over the activity `s` of an interval `elapsed_ns` long
    /// (`None` for a [`Metric::Recovery`] figure: not in the statistics).
    pub fn eval(self, s: &Stats, elapsed_ns: u64) -> Option<f64> {
        match self {
            Metric::Recovery(_) => None,
            Metric::Node(f) => f.eval(s),
            Metric::Awr(line) => line.eval(s),
            Metric::Stat(stat) => Some(stat_value(s, stat)),
            Metric::PerSecond(stat) => {
                (elapsed_ns > 0).then(|| s.get(stat) as f64 / (elapsed_ns as f64 / 1e9))
            }
            Metric::EventWaits(w) => Some(s.event(w).waits as f64),
            Metric::EventTimeMs(w) => Some(s.event(w).time_ns as f64 / NS_PER_MS),
            Metric::EventAvgMs(w) => {
                let e = s.event(w);
                ratio(e.time_ns as f64 / NS_PER_MS, e.waits)
            }
            Metric::DecompMs(kind, part) => ratio(
                s.get(part.stat(kind)) as f64 / NS_PER_MS,
                s.get(kind.received().0),
            ),
            Metric::DecompShare(kind, part) => {
                let total = s.get(kind.received().1);
                (total > 0).then(|| s.get(part.stat(kind)) as f64 / total as f64)
            }
            Metric::Sql(c) => Some(c.user_total(s).0),
            Metric::SqlPerExec(c) => {
                let (v, n) = c.user_total(s);
                ratio(v, n)
            }
            Metric::ClassTimeMs(class) => Some(class_time_ms(s, class)),
            Metric::ClassTimeMsPerExec(class) => {
                ratio(class_time_ms(s, class), SqlColumn::Count.user_total(s).1)
            }
        }
    }
}

/// Foreground time waited in the events of one wait class, ms.
fn class_time_ms(s: &Stats, class: WaitClass) -> f64 {
    Wait::ALL
        .iter()
        .filter(|w| w.class() == class)
        .map(|&w| s.event(w).time_fg_ns)
        .sum::<u64>() as f64
        / NS_PER_MS
}

/// A statistic in the unit expectations and tables use: times in ms.
pub fn stat_value(s: &Stats, stat: Stat) -> f64 {
    match stat.unit() {
        crate::stats::Unit::Time => s.get(stat) as f64 / NS_PER_MS,
        _ => s.get(stat) as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_time_is_divided_by_flushes_not_blocks() {
        let mut s = Stats::default();
        s.add(Stat::GcCrBlocksServed, 100);
        s.add(Stat::GcCrBlocksFlushed, 5);
        s.add(Stat::GcCrBlockFlushTime, 5 * 4_380 * 1_000_000);
        assert_eq!(AwrLine::CrFlushMs.eval(&s), Some(4380.0));
        assert_eq!(AwrLine::CrFlushPct.eval(&s), Some(5.0));
        assert_eq!(AwrLine::CurrentFlushMs.eval(&s), None);
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(
            Metric::parse("avg global cache cr block receive time (ms)"),
            Ok(Metric::Awr(AwrLine::CrReceiveMs))
        );
        assert_eq!(
            Metric::parse("waits:gc cr block congested"),
            Ok(Metric::EventWaits(Wait::GcCrBlockCongested))
        );
        assert_eq!(
            Metric::parse("decomp_share:cr:wire"),
            Ok(Metric::DecompShare(BlockKind::Cr, Part::Wire))
        );
        assert!(
            Metric::parse("stat:no such thing")
                .unwrap_err()
                .contains("no such thing")
        );
        assert!(Metric::parse("bogus").is_err());
        assert_eq!(
            Metric::parse("sql_per_exec:query"),
            Ok(Metric::SqlPerExec(SqlColumn::Query))
        );
        assert_eq!(
            Metric::parse("class_ms:cluster"),
            Ok(Metric::ClassTimeMs(WaitClass::Cluster))
        );
        assert!(Metric::parse("sql:gets").unwrap_err().contains("query"));
        assert_eq!(
            Metric::parse("recovery:brownout_ms"),
            Ok(Metric::Recovery(RecoveryFigure::BrownoutMs))
        );
        assert!(
            Metric::parse("recovery:downtime")
                .unwrap_err()
                .contains("recovery_ms")
        );
    }

    #[test]
    fn sql_figures_leave_recursive_statements_out() {
        let mut s = Stats::default();
        let mut user = StmtStat::new("SELECT".into(), false);
        user.executions = 4;
        user.query = 124;
        user.cpu_ns = 2_000_000;
        let mut rec = StmtStat::new("update seq$".into(), true);
        rec.executions = 4;
        rec.query = 1000;
        s.statements = vec![user, rec];
        assert_eq!(Metric::SqlPerExec(SqlColumn::Query).eval(&s, 0), Some(31.0));
        assert_eq!(Metric::SqlPerExec(SqlColumn::Cpu).eval(&s, 0), Some(0.5));
        assert_eq!(Metric::Sql(SqlColumn::Count).eval(&s, 0), Some(4.0));
        s.wait(Wait::GcCrBlock2Way, 2_000_000, true);
        s.wait(Wait::LogFileSync, 5_000_000, true);
        assert_eq!(
            Metric::ClassTimeMs(WaitClass::Cluster).eval(&s, 0),
            Some(2.0)
        );
        // Per execution of the user's statements (4), the recursive ones' left out.
        assert_eq!(
            Metric::ClassTimeMsPerExec(WaitClass::Cluster).eval(&s, 0),
            Some(0.5)
        );
        assert_eq!(
            Metric::parse("class_ms_per_exec:Cluster"),
            Ok(Metric::ClassTimeMsPerExec(WaitClass::Cluster))
        );
        s.statements.clear();
        assert_eq!(
            Metric::ClassTimeMsPerExec(WaitClass::Cluster).eval(&s, 0),
            None
        );
    }
}
