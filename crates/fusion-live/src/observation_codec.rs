//! The checkers' observations over the admin service and in the history
//! journal: one encoding for both, so a journal written by a process that
//! died reads back as the process would have answered.

use fusion_core::instance::Observation;
use fusion_core::types::Scn;

use crate::pb;

pub fn encode_observation(o: &Observation) -> pb::Observation {
    match *o {
        Observation::Read {
            xid,
            snapshot,
            table,
            key,
            val,
        } => pb::Observation {
            kind: 0,
            xid: xid.0,
            snapshot: snapshot.0,
            table: table as u32,
            key,
            has_val: val.is_some(),
            val: val.unwrap_or(0),
        },
        Observation::Write {
            xid,
            table,
            key,
            val,
        } => pb::Observation {
            kind: 1,
            xid: xid.0,
            table: table as u32,
            key,
            has_val: true,
            val,
            ..Default::default()
        },
        Observation::Commit { xid, scn } => pb::Observation {
            kind: 2,
            xid: xid.0,
            snapshot: scn.0,
            ..Default::default()
        },
        Observation::Acknowledged { xid } => pb::Observation {
            kind: 3,
            xid: xid.0,
            ..Default::default()
        },
    }
}

/// Rebuild an observation; `from` names the sender for messages.
pub fn decode_observation(o: &pb::Observation, from: &str) -> Result<Observation, String> {
    use fusion_core::types::Xid;
    let xid = Xid(o.xid);
    Ok(match o.kind {
        0 => Observation::Read {
            xid,
            snapshot: Scn(o.snapshot),
            table: o.table as usize,
            key: o.key,
            val: o.has_val.then_some(o.val),
        },
        1 => Observation::Write {
            xid,
            table: o.table as usize,
            key: o.key,
            val: o.val,
        },
        2 => Observation::Commit {
            xid,
            scn: Scn(o.snapshot),
        },
        3 => Observation::Acknowledged { xid },
        k => return Err(format!("{from}: unknown observation kind {k}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::types::{InstId, Xid};

    #[test]
    fn every_observation_survives_the_wire() {
        let xid = Xid::new(InstId(1), 7);
        for o in [
            Observation::Read {
                xid,
                snapshot: Scn(9),
                table: 2,
                key: 5,
                val: None,
            },
            Observation::Write {
                xid,
                table: 2,
                key: 5,
                val: -3,
            },
            Observation::Commit { xid, scn: Scn(11) },
            Observation::Acknowledged { xid },
        ] {
            assert_eq!(decode_observation(&encode_observation(&o), "inst2"), Ok(o));
        }
    }
}
