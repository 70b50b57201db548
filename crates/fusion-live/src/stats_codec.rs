//! Statistics over the admin service, by the names a DBA reads (the same
//! names as the JSON contract), so a snapshot survives a change in the order
//! of the enums between two builds — and an unknown name is an error, not a
//! silently wrong counter.

use fusion_core::px::{PxPair, PxPlan, PxQueryRow, PxSessionRow, PxView};
use fusion_core::stats::{EventStat, HISTOGRAM_BUCKETS, Stat, Stats, Wait};
use fusion_core::tkprof::{StmtStat, StmtWait};

use crate::pb;

pub fn encode(stats: &Stats, now_ns: u64) -> pb::StatsResponse {
    let sysstat = Stat::ALL
        .iter()
        .map(|&s| (s.name().to_string(), stats.get(s)))
        .collect();
    let events = Wait::ALL
        .iter()
        .map(|&w| {
            let e = stats.event(w);
            pb::EventRow {
                name: w.name().to_string(),
                waits: e.waits,
                time_ns: e.time_ns,
                waits_fg: e.waits_fg,
                time_fg_ns: e.time_fg_ns,
                max_ns: e.max_ns,
                histogram: e.histogram.to_vec(),
            }
        })
        .collect();
    let statements = stats.statements.iter().map(encode_statement).collect();
    let (px_sessions, px_queries, px_pairs) = encode_px(&stats.px);
    pb::StatsResponse {
        sysstat,
        events,
        now_ns,
        statements,
        px_sessions,
        px_queries,
        px_pairs,
    }
}

fn encode_px(v: &PxView) -> (Vec<pb::PxSessionRow>, Vec<pb::PxQueryRow>, Vec<pb::PxPair>) {
    let sessions = v
        .sessions
        .iter()
        .map(|s| pb::PxSessionRow {
            qc_inst: u32::from(s.qc_inst),
            qc_sid: s.qc_sid,
            exec: s.exec,
            query: s.query.clone(),
            inst: u32::from(s.inst),
            name: s.name.clone(),
            set: u32::from(s.set),
            requested_dop: s.requested_dop,
            dop: s.dop,
            rows: s.rows,
            bytes_sent_remote: s.bytes_sent_remote,
            bytes_recv_remote: s.bytes_recv_remote,
            bytes_sent_local: s.bytes_sent_local,
        })
        .collect();
    let queries = v
        .queries
        .iter()
        .map(|q| pb::PxQueryRow {
            qc_inst: u32::from(q.qc_inst),
            qc_sid: q.qc_sid,
            exec: q.exec,
            query: q.query.clone(),
            plan: q.plan.to_string(),
            requested_dop: q.requested_dop,
            dop: q.dop,
            sets: u32::from(q.sets),
            slaves: q
                .slaves
                .iter()
                .map(|&(inst, count)| pb::PxSlaves {
                    inst: u32::from(inst),
                    count,
                })
                .collect(),
            queued_ns: q.queued_ns,
            elapsed_ns: q.elapsed_ns,
            result_rows: q.result_rows,
            leaves: q.leaves,
        })
        .collect();
    let pairs = v
        .pairs
        .iter()
        .map(|p| pb::PxPair {
            from: u32::from(p.from),
            to: u32::from(p.to),
            bytes: p.bytes,
            buffers: p.buffers,
        })
        .collect();
    (sessions, queries, pairs)
}

/// An instance number (1-based) from a peer's snapshot.
fn inst(v: u32, what: &str, from: &str) -> Result<u8, String> {
    u8::try_from(v)
        .ok()
        .filter(|&i| i >= 1)
        .ok_or_else(|| format!("{from}: {what} {v} is not an instance number"))
}

fn decode_px(r: &pb::StatsResponse, from: &str) -> Result<PxView, String> {
    let mut v = PxView::default();
    for s in &r.px_sessions {
        v.sessions.push(PxSessionRow {
            qc_inst: inst(s.qc_inst, "px_sessions.qc_inst", from)?,
            qc_sid: s.qc_sid,
            exec: s.exec,
            query: s.query.clone(),
            inst: inst(s.inst, "px_sessions.inst", from)?,
            name: s.name.clone(),
            set: u8::try_from(s.set)
                .map_err(|_| format!("{from}: px_sessions.set {} out of range", s.set))?,
            requested_dop: s.requested_dop,
            dop: s.dop,
            rows: s.rows,
            bytes_sent_remote: s.bytes_sent_remote,
            bytes_recv_remote: s.bytes_recv_remote,
            bytes_sent_local: s.bytes_sent_local,
        });
    }
    for q in &r.px_queries {
        let plan = PxPlan::from_name(&q.plan)
            .ok_or_else(|| format!("{from}: unknown plan {:?} in px_queries", q.plan))?;
        let mut slaves = Vec::new();
        for s in &q.slaves {
            slaves.push((inst(s.inst, "px_queries.slaves.inst", from)?, s.count));
        }
        v.queries.push(PxQueryRow {
            qc_inst: inst(q.qc_inst, "px_queries.qc_inst", from)?,
            qc_sid: q.qc_sid,
            exec: q.exec,
            query: q.query.clone(),
            plan: plan.name(),
            requested_dop: q.requested_dop,
            dop: q.dop,
            sets: u8::try_from(q.sets)
                .map_err(|_| format!("{from}: px_queries.sets {} out of range", q.sets))?,
            slaves,
            queued_ns: q.queued_ns,
            elapsed_ns: q.elapsed_ns,
            result_rows: q.result_rows,
            leaves: q.leaves,
        });
    }
    for p in &r.px_pairs {
        let pair = PxPair {
            from: inst(p.from, "px_pairs.from", from)?,
            to: inst(p.to, "px_pairs.to", from)?,
            bytes: p.bytes,
            buffers: p.buffers,
        };
        v.add_pair(pair.from, pair.to, pair.bytes, pair.buffers);
    }
    Ok(v)
}

fn encode_statement(st: &StmtStat) -> pb::StatementRow {
    pb::StatementRow {
        sql: st.sql.clone(),
        recursive: st.recursive,
        parses: st.parses,
        executions: st.executions,
        fetches: st.fetches,
        cpu_ns: st.cpu_ns,
        elapsed_ns: st.elapsed_ns,
        disk: st.disk,
        query: st.query,
        current: st.current,
        rows: st.rows,
        waits: Wait::ALL
            .iter()
            .filter_map(|&w| {
                let x = st.waits.get(w as usize).copied().unwrap_or_default();
                (x.waits > 0).then(|| pb::StatementWait {
                    event: w.name().to_string(),
                    waits: x.waits,
                    time_ns: x.time_ns,
                    max_ns: x.max_ns,
                })
            })
            .collect(),
    }
}

fn decode_statement(r: &pb::StatementRow, from: &str) -> Result<StmtStat, String> {
    let mut st = StmtStat::new(r.sql.clone(), r.recursive);
    st.parses = r.parses;
    st.executions = r.executions;
    st.fetches = r.fetches;
    st.cpu_ns = r.cpu_ns;
    st.elapsed_ns = r.elapsed_ns;
    st.disk = r.disk;
    st.query = r.query;
    st.current = r.current;
    st.rows = r.rows;
    for w in &r.waits {
        let e = Wait::from_name(&w.event).ok_or_else(|| {
            format!(
                "{from}: unknown wait event {:?} in statement {:?}",
                w.event, r.sql
            )
        })?;
        st.waits[e as usize] = StmtWait {
            waits: w.waits,
            time_ns: w.time_ns,
            max_ns: w.max_ns,
        };
    }
    Ok(st)
}

/// Rebuild a snapshot; `from` names the sender for messages.
pub fn decode(r: &pb::StatsResponse, from: &str) -> Result<Stats, String> {
    let mut stats = Stats::default();
    for (name, v) in &r.sysstat {
        let s = Stat::from_name(name)
            .ok_or_else(|| format!("{from}: unknown statistic {name:?} in a stats snapshot"))?;
        stats.set(s, *v);
    }
    for row in &r.events {
        let w = Wait::from_name(&row.name).ok_or_else(|| {
            format!(
                "{from}: unknown wait event {:?} in a stats snapshot",
                row.name
            )
        })?;
        if row.histogram.len() != HISTOGRAM_BUCKETS {
            return Err(format!(
                "{from}: event {:?} has {} histogram buckets, expected {HISTOGRAM_BUCKETS}",
                row.name,
                row.histogram.len()
            ));
        }
        let mut histogram = [0; HISTOGRAM_BUCKETS];
        histogram.copy_from_slice(&row.histogram);
        stats.set_event(
            w,
            EventStat {
                waits: row.waits,
                time_ns: row.time_ns,
                waits_fg: row.waits_fg,
                time_fg_ns: row.time_fg_ns,
                max_ns: row.max_ns,
                histogram,
            },
        );
    }
    stats.px = decode_px(r, from)?;
    stats.statements = r
        .statements
        .iter()
        .map(|st| decode_statement(st, from))
        .collect::<Result<_, _>>()?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_unknown_names() {
        let mut s = Stats::default();
        s.add(Stat::GcCrBlocksReceived, 42);
        s.wait(Wait::GcCrBlock2Way, 1_500, true);
        s.px.add_pair(2, 1, 2148, 1);
        s.px.sessions.push(PxSessionRow {
            qc_inst: 1,
            qc_sid: 0,
            exec: 1,
            query: "sql1".into(),
            inst: 2,
            name: "p000".into(),
            set: 1,
            requested_dop: 16,
            dop: 16,
            rows: 10,
            bytes_sent_remote: 2148,
            bytes_recv_remote: 0,
            bytes_sent_local: 0,
        });
        let mut st = StmtStat::new("SELECT VAL FROM T WHERE KEY = :B1".into(), false);
        st.executions = 3;
        st.query = 9;
        st.cpu_ns = 90_000;
        st.wait(Wait::GcCrBlock2Way, 1_500);
        s.statements.push(st);
        let wire = encode(&s, 7);
        assert_eq!(decode(&wire, "inst1").unwrap(), s);
        let mut bad = wire.clone();
        bad.sysstat.insert("no such statistic".into(), 1);
        let e = decode(&bad, "inst1").unwrap_err();
        assert!(
            e.contains("inst1") && e.contains("no such statistic"),
            "{e}"
        );
        let mut bad = wire;
        bad.events[0].histogram.pop();
        assert!(decode(&bad, "inst2").unwrap_err().contains("histogram"));
    }
}
