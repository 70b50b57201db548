//! LMD's deadlock searches on the wire (`Msg::Deadlock`): the path of
//! wait-for edges followed so far. Instances and transaction ids are
//! checked as elsewhere; a path longer than any cluster's sessions is
//! refused here, what does not fit the receiver's waits is its to ignore.

use fusion_core::msg::{DeadlockMsg, Msg, WaitHop};

use crate::convert::{Codec, WireError, missing};
use crate::pb;
use crate::pb::deadlock::Kind as K;

/// Hops a path may have on the wire (the instance refuses longer ones too).
const PATH_MAX: usize = 4096;

impl Codec {
    pub(crate) fn encode_deadlock(&self, msg: &DeadlockMsg) -> pb::Deadlock {
        let path = msg
            .path()
            .iter()
            .map(|h| pb::WaitHop {
                inst: u32::from(h.inst.0),
                sid: h.sid,
                xid: h.xid.0,
                holder: h.holder.0,
                wait_id: h.wait_id,
                since_ns: h.since,
                abandonable: h.abandonable,
            })
            .collect();
        let kind = match msg {
            DeadlockMsg::Search { .. } => K::Search(pb::Unit {}),
            DeadlockMsg::Found { .. } => K::Found(pb::Unit {}),
            DeadlockMsg::Confirm { at, .. } => K::ConfirmAt(*at),
        };
        pb::Deadlock {
            path,
            kind: Some(kind),
        }
    }

    pub(crate) fn decode_deadlock(&self, d: pb::Deadlock) -> Result<Msg, WireError> {
        if d.path.len() > PATH_MAX {
            return Err(WireError::OutOfRange {
                field: "Deadlock.path",
                value: d.path.len() as u64,
                expected: format!("at most {PATH_MAX} hops"),
            });
        }
        let mut path = Vec::with_capacity(d.path.len());
        for h in d.path {
            path.push(WaitHop {
                inst: self.limits.inst("WaitHop.inst", h.inst)?,
                sid: h.sid,
                xid: self.limits.xid("WaitHop.xid", h.xid)?,
                holder: self.limits.xid("WaitHop.holder", h.holder)?,
                wait_id: h.wait_id,
                since: h.since_ns,
                abandonable: h.abandonable,
            });
        }
        let msg = match d.kind.ok_or(missing("Deadlock.kind"))? {
            K::Search(_) => DeadlockMsg::Search { path },
            K::Found(_) => DeadlockMsg::Found { path },
            K::ConfirmAt(at) => DeadlockMsg::Confirm { path, at },
        };
        Ok(Msg::Deadlock(Box::new(msg)))
    }
}
