//! Parallel execution in the reports: per statement, the QC's figures, then
//! a `gv$px_session`-style listing of the QC and its slaves (instance, name,
//! server set, requested and actual DOP) with the table-queue bytes each sent
//! and received across the interconnect, the deck's "PQ allocation" tables
//! with its dtrace-measured SIZE column; then bytes per instance pair.

use fusion_core::px::{PxSessionRow, PxView};
use serde_json::{Value, json};

use crate::fmt::count;

const NS_PER_MS: f64 = 1_000_000.0;

/// The text block for a phase (cluster-wide, like a `gv$` view); empty when
/// no parallel statement ended in it.
pub fn text(view: &PxView) -> String {
    if view.queries.is_empty() && view.sessions.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let title =
        "Parallel execution (gv$px_session; bytes = table-queue buffers across the interconnect)";
    out.push_str(title);
    out.push('\n');
    out.push_str(&"~".repeat(title.len()));
    out.push('\n');
    let mut queries = view.queries.clone();
    queries.sort_by_key(|q| (q.qc_inst, q.exec));
    for q in &queries {
        let slaves: Vec<String> = q
            .slaves
            .iter()
            .map(|(i, n)| format!("inst{i} {n}"))
            .collect();
        let placed = if q.dop <= 1 {
            "ran serially in the QC".to_string()
        } else {
            format!(
                "{} server set{}, slaves on {}",
                q.sets,
                if q.sets == 1 { "" } else { "s" },
                slaves.join(", ")
            )
        };
        let statement = format!(
            "Statement {} ({}): QC inst{} sid {}, requested DOP {}, DOP {}, {placed}",
            q.query, q.plan, q.qc_inst, q.qc_sid, q.requested_dop, q.dop
        );
        out.push('\n');
        out.push_str(&crate::fmt::wrapped(&statement, "", "  "));
        out.push('\n');
        let leaves = if q.leaves > 0 {
            format!(", {} index leaves", count(q.leaves as f64))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  elapsed {:.2} ms, queued {:.2} ms, {} result rows{leaves}\n\n",
            q.elapsed_ns as f64 / NS_PER_MS,
            q.queued_ns as f64 / NS_PER_MS,
            count(q.result_rows as f64)
        ));
        let mut rows: Vec<&PxSessionRow> = view
            .sessions
            .iter()
            .filter(|s| s.qc_inst == q.qc_inst && s.exec == q.exec)
            .collect();
        rows.sort_by(|a, b| {
            (a.set != 0, a.inst, a.set, &a.name).cmp(&(b.set != 0, b.inst, b.set, &b.name))
        });
        out.push_str(
            "INST  QC/Slave    Set  QC SID  Req DOP   DOP         Rows   Sent across   Rcvd across\n",
        );
        out.push_str(
            "----  ----------  ---  ------  -------  ----  -----------  ------------  ------------\n",
        );
        for s in rows {
            let (name, set, req, dop) = if s.set == 0 {
                (
                    "QC".to_string(),
                    String::new(),
                    String::new(),
                    String::new(),
                )
            } else {
                (
                    format!(" - {}", s.name),
                    s.set.to_string(),
                    s.requested_dop.to_string(),
                    s.dop.to_string(),
                )
            };
            out.push_str(&format!(
                "{:<4}  {:<10}  {:>3}  {:>6}  {:>7}  {:>4}  {:>11}  {:>12}  {:>12}\n",
                s.inst,
                name,
                set,
                s.qc_sid,
                req,
                dop,
                count(s.rows as f64),
                count(s.bytes_sent_remote as f64),
                count(s.bytes_recv_remote as f64)
            ));
        }
    }
    if !view.pairs.is_empty() {
        let pairs: Vec<String> = view
            .pairs
            .iter()
            .map(|p| {
                format!(
                    "inst{} -> inst{} {} bytes ({} buffers)",
                    p.from,
                    p.to,
                    count(p.bytes as f64),
                    count(p.buffers as f64)
                )
            })
            .collect();
        let traffic = format!("Table-queue traffic by instance pair: {}", pairs.join("; "));
        out.push('\n');
        out.push_str(&crate::fmt::wrapped(&traffic, "", "  "));
        out.push('\n');
    }
    out
}

/// The JSON of a phase's parallel execution (present only when there was some).
pub fn json(view: &PxView) -> Value {
    let statements: Vec<Value> = view
        .queries
        .iter()
        .map(|q| {
            let slaves: serde_json::Map<String, Value> = q
                .slaves
                .iter()
                .map(|(i, n)| (i.to_string(), json!(n)))
                .collect();
            json!({
                "query": q.query, "plan": q.plan, "qc_instance": q.qc_inst, "qc_sid": q.qc_sid,
                "requested_dop": q.requested_dop, "dop": q.dop, "server_sets": q.sets,
                "slaves": slaves, "queued_us": q.queued_ns / 1_000,
                "elapsed_us": q.elapsed_ns / 1_000, "result_rows": q.result_rows,
                "index_leaves": q.leaves,
            })
        })
        .collect();
    let sessions: Vec<Value> = view
        .sessions
        .iter()
        .map(|s| {
            json!({
                "query": s.query, "qc_instance": s.qc_inst, "qc_sid": s.qc_sid,
                "instance": s.inst, "name": s.name, "server_set": s.set,
                "requested_dop": s.requested_dop, "dop": s.dop, "rows": s.rows,
                "bytes_sent_remote": s.bytes_sent_remote,
                "bytes_received_remote": s.bytes_recv_remote,
                "bytes_sent_local": s.bytes_sent_local,
            })
        })
        .collect();
    let pairs: Vec<Value> = view
        .pairs
        .iter()
        .map(|p| json!({ "from": p.from, "to": p.to, "bytes": p.bytes, "buffers": p.buffers }))
        .collect();
    json!({ "statements": statements, "sessions": sessions, "pairs": pairs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::px::{PxQueryRow, PxSessionRow};

    fn row(inst: u8, name: &str, set: u8, sent: u64, recv: u64) -> PxSessionRow {
        PxSessionRow {
            qc_inst: 1,
            qc_sid: 4,
            exec: 1,
            query: "sql1".into(),
            inst,
            name: name.into(),
            set,
            requested_dop: 16,
            dop: 16,
            rows: 12_000,
            bytes_sent_remote: sent,
            bytes_recv_remote: recv,
            bytes_sent_local: 0,
        }
    }

    fn view() -> PxView {
        let mut v = PxView {
            sessions: vec![
                row(2, "p000", 1, 2148, 0),
                row(1, "p000", 1, 0, 0),
                row(1, "QC", 0, 0, 2148),
            ],
            queries: vec![PxQueryRow {
                qc_inst: 1,
                qc_sid: 4,
                exec: 1,
                query: "sql1".into(),
                plan: "scan_aggregate",
                requested_dop: 16,
                dop: 16,
                sets: 1,
                slaves: vec![(1, 1), (2, 1)],
                queued_ns: 0,
                elapsed_ns: 25_910_000,
                result_rows: 1,
                leaves: 0,
            }],
            pairs: Vec::new(),
        };
        v.add_pair(2, 1, 2148, 1);
        v
    }

    #[test]
    fn px_session_listing_qc_first_then_by_instance() {
        let t = text(&view());
        let lines: Vec<&str> = t.lines().collect();
        let head = lines
            .iter()
            .position(|l| l.starts_with("INST  QC/Slave"))
            .expect("a header");
        assert!(lines[head + 2].starts_with("1     QC "), "{t}");
        assert!(lines[head + 3].starts_with("1      - p000"), "{t}");
        assert!(lines[head + 4].starts_with("2      - p000"), "{t}");
        assert!(lines[head + 4].ends_with("2,148             0"), "{t}");
        // The statement's line wraps under itself at 100 columns.
        assert!(t.lines().all(|l| l.len() <= crate::fmt::TEXT_WIDTH), "{t}");
        assert!(
            t.replace("\n  ", " ")
                .contains("requested DOP 16, DOP 16, 1 server set, slaves on inst1 1, inst2 1"),
            "{t}"
        );
        assert!(t.contains("elapsed 25.91 ms"));
        assert!(t.contains("inst2 -> inst1 2,148 bytes (1 buffers)"));
        assert_eq!(text(&PxView::default()), "");
    }

    #[test]
    fn json_rows() {
        let j = json(&view());
        assert_eq!(j["statements"][0]["dop"], 16);
        assert_eq!(j["statements"][0]["slaves"]["2"], 1);
        assert_eq!(j["sessions"][0]["bytes_sent_remote"], 2148);
        assert_eq!(j["pairs"][0]["from"], 2);
    }
}
