//! What the instances' admin answers say, as the model's values: a status
//! as a member's view of the cluster (for the checker and the end-of-run
//! settle), an events answer as alert lines and recovery reports. A value
//! the model cannot hold is an error or left out, never truncated.

use fusion_check::MemberView;
use fusion_core::recovery::RecoveryReport;
use fusion_core::types::{InstId, InstSet};
use fusion_report::AlertEntry;

use crate::pb;

/// What each instance that answered says of the cluster (a status naming
/// no instance the model can have is left out).
pub(crate) fn member_views<'a>(
    statuses: impl IntoIterator<Item = &'a pb::StatusResponse>,
) -> Vec<MemberView> {
    statuses
        .into_iter()
        .filter_map(|s| {
            Some(MemberView {
                inst: InstId(u8::try_from(s.instance).ok()?),
                halted: !s.halted.is_empty(),
                incarnation: s.incarnation,
                members: InstSet(s.members),
                unrecovered: InstSet(s.unrecovered),
            })
        })
        .collect()
}

/// Alert lines and recoveries of instance `i` (0-based) from its answer.
pub(crate) fn collect_events(
    i: usize,
    e: pb::EventsResponse,
    alerts: &mut Vec<AlertEntry>,
    recoveries: &mut Vec<RecoveryReport>,
) -> Result<(), String> {
    let instance = u8::try_from(i + 1).map_err(|_| format!("inst{}: too many instances", i + 1))?;
    alerts.extend(e.alerts.into_iter().map(|a| AlertEntry {
        at_ns: a.at_ns,
        instance,
        line: a.line,
    }));
    for r in e.recoveries {
        let inst = |n: u32, what: &str| {
            u8::try_from(n)
                .map(InstId)
                .map_err(|_| format!("inst{}: events: {what} {n} is not an instance", i + 1))
        };
        recoveries.push(RecoveryReport {
            dead_instance: inst(r.dead_instance, "dead_instance")?,
            recovered_by: inst(r.recovered_by, "recovered_by")?,
            detected_at: r.detected_ns,
            unfrozen_at: r.unfrozen_ns,
            cache_recovered_at: r.cache_recovered_ns,
            completed_at: r.completed_ns,
            redo_bytes_read: r.redo_bytes_read,
            blocks_recovered: r.blocks_recovered,
            transactions_rolled_back: r.transactions_rolled_back,
        });
    }
    Ok(())
}
