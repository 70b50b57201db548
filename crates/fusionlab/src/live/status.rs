//! `fusionlab status`: each instance as its process answers (alive or
//! evicted, what it runs, the cluster as it sees it, what its sessions wait
//! on), and whether the block store answers.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use comfy_table::{Table, presets::ASCII_FULL_CONDENSED};
use fusion_core::types::InstSet;
use fusion_live::admin_client::Admin;
use fusion_live::cluster::ClusterFile;
use fusion_live::pb;

use super::async_runtime::runtime;
use crate::{Failure, exit};

/// How long `status` waits for each process's answer.
pub(super) const STATUS_PATIENCE: Duration = Duration::from_secs(2);

/// `fusionlab status`: one line per instance, and whether the store answers.
pub fn status(file: &Path, out: &mut dyn Write) -> Result<u8> {
    let c = ClusterFile::read(file).map_err(Failure::input)?;
    let rt = runtime()?;
    let rows = rt.block_on(async {
        let mut rows = Vec::new();
        for m in &c.instances {
            let name = format!("inst{}", m.id);
            let a = Admin::new(&name, &m.admin, &c.token);
            let s = match a {
                Ok(a) => a.status(STATUS_PATIENCE).await,
                Err(e) => Err(e),
            };
            rows.push((m.clone(), s));
        }
        rows
    });
    let mut t = Table::new();
    t.load_style(ASCII_FULL_CONDENSED);
    t.set_header(vec![
        "instance",
        "pid",
        "alive",
        "scenario",
        "cluster",
        "buffers",
        "LMS",
        "active",
        "waiting on",
        "links",
        "problems",
    ]);
    let mut down = 0;
    for (m, s) in rows {
        match s {
            Ok(s) => {
                let waits = s
                    .waits
                    .iter()
                    .map(|w| format!("{} ({})", w.event, w.sessions))
                    .collect::<Vec<_>>()
                    .join(", ");
                let up = s.links.iter().filter(|l| l.up).count();
                t.add_row(vec![
                    format!("inst{}", m.id),
                    s.pid.to_string(),
                    alive_cell(&s).into(),
                    if s.loaded {
                        s.scenario.clone()
                    } else {
                        "(none loaded)".into()
                    },
                    cluster_cell(&s),
                    format!("{}/{}", s.buffers_used, s.buffers),
                    s.lms.to_string(),
                    s.active_sessions.to_string(),
                    waits,
                    format!("{up}/{}", s.links.len()),
                    s.errors.len().to_string(),
                ]);
            }
            Err(e) => {
                down += 1;
                t.add_row(vec![
                    format!("inst{}", m.id),
                    m.pid.to_string(),
                    "NO".into(),
                    e,
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    writeln!(out, "{t}")?;
    // Asked, not looked up by pid: a process that is there but does not
    // serve (stopped, its port taken by another) is not alive either.
    let store = rt.block_on(async {
        let client =
            fusion_store::StoreClient::connect(&c.store.address, &c.token, STATUS_PATIENCE).await?;
        client.ping().await
    });
    let store_answers = store.is_ok();
    match store {
        Ok(p) => {
            let moved = if c.store.pid != 0 && p.pid != c.store.pid {
                format!(" (the cluster file says pid {})", c.store.pid)
            } else {
                String::new()
            };
            writeln!(
                out,
                "block store {} (pid {}{moved}): answering, {}",
                c.store.address,
                p.pid,
                if p.formatted {
                    "formatted"
                } else {
                    "not formatted yet (no run has loaded it)"
                }
            )?;
        }
        Err(e) => writeln!(
            out,
            "block store {} (pid {}): NOT ANSWERING: {e}",
            c.store.address, c.store.pid
        )?,
    }
    Ok(if down == 0 && store_answers {
        exit::OK
    } else {
        exit::LIVE_FAILED
    })
}

/// "yes", or "evicted" for a process that answers but whose instance the
/// cluster evicted (it stopped itself: what it shows is its last moment).
fn alive_cell(s: &pb::StatusResponse) -> &'static str {
    if s.halted.is_empty() {
        "yes"
    } else {
        "evicted"
    }
}

/// The cluster as the instance sees it: its incarnation and members, and
/// the dead instances whose redo threads no recovery has finished (their
/// committed changes are only in their redo until then).
fn cluster_cell(s: &pb::StatusResponse) -> String {
    if !s.loaded {
        return String::new();
    }
    let names = |set: u64| {
        InstSet(set)
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut cell = format!("incarnation {}: {}", s.incarnation, names(s.members));
    if s.unrecovered != 0 {
        cell.push_str(&format!("; {} not recovered", names(s.unrecovered)));
    }
    cell
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_cell_names_members_and_threads_not_recovered() {
        let s = pb::StatusResponse {
            loaded: true,
            incarnation: 2,
            members: 0b011,
            unrecovered: 0b100,
            ..Default::default()
        };
        assert_eq!(
            cluster_cell(&s),
            "incarnation 2: inst1,inst2; inst3 not recovered"
        );
        let recovered = pb::StatusResponse {
            unrecovered: 0,
            ..s.clone()
        };
        assert_eq!(cluster_cell(&recovered), "incarnation 2: inst1,inst2");
        assert_eq!(alive_cell(&s), "yes");
        let evicted = pb::StatusResponse {
            halted: "evicted by the cluster".into(),
            ..s
        };
        assert_eq!(alive_cell(&evicted), "evicted");
        assert_eq!(cluster_cell(&pb::StatusResponse::default()), "");
    }
}
