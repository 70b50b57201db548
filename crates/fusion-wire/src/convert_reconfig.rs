//! Reconfiguration and instance recovery messages on the wire: the members'
//! reports to the new masters (`Rebuild`), past-image promotion, and the
//! recovering instance's questions and answers about claimed blocks, and
//! the write requests past images make.
//! Everything a peer sends is checked as the other messages are (instance
//! numbers, block addresses, transaction ids within the cluster's limits).

use fusion_core::msg::{DeadThread, Held, Msg, Rebuild, RecoverSource};
use fusion_core::types::{BlockAddr, Scn};

use crate::convert::{
    Codec, WireError, lock_mode_core, lock_mode_pb, lvb_core, lvb_pb, missing, mode_core, mode_pb,
    res_core, res_pb,
};
use crate::pb;
use crate::pb::msg::Kind as K;

/// Blocks a member holds, as a report carries them.
pub(crate) fn held_blocks_pb(blocks: &[(BlockAddr, Held)]) -> Vec<pb::HeldBlock> {
    blocks
        .iter()
        .map(|&(blk, held)| pb::HeldBlock {
            blk: blk.0,
            held: Some(match held {
                Held::X { dirty } => pb::held_block::Held::XDirty(dirty),
                Held::S { dirty } => pb::held_block::Held::SDirty(dirty),
                Held::Pi { scn } => pb::held_block::Held::PiScn(scn.0),
                Held::Reading { mode, req } => pb::held_block::Held::Reading(pb::HeldReading {
                    mode: mode_pb(mode).into(),
                    req,
                }),
            }),
        })
        .collect()
}

impl Codec {
    /// Blocks a peer reports holding, checked.
    pub(crate) fn held_blocks_core(
        &self,
        blocks: Vec<pb::HeldBlock>,
    ) -> Result<Vec<(BlockAddr, Held)>, WireError> {
        let mut out = Vec::with_capacity(blocks.len().min(1 << 16));
        for b in blocks {
            let held = match b.held.ok_or(missing("HeldBlock.held"))? {
                pb::held_block::Held::XDirty(dirty) => Held::X { dirty },
                pb::held_block::Held::SDirty(dirty) => Held::S { dirty },
                pb::held_block::Held::PiScn(scn) => Held::Pi { scn: Scn(scn) },
                pb::held_block::Held::Reading(r) => Held::Reading {
                    mode: mode_core("HeldReading.mode", r.mode)?,
                    req: r.req,
                },
            };
            out.push((self.limits.blk("HeldBlock.blk", b.blk)?, held));
        }
        Ok(out)
    }

    /// A reconfiguration message (the caller matched one).
    pub(crate) fn encode_reconfig(&self, msg: &Msg) -> K {
        match msg {
            Msg::Rebuild(r) => K::Rebuild(pb::Rebuild {
                members: r.members.0,
                blocks: held_blocks_pb(&r.blocks),
                locks: r
                    .locks
                    .iter()
                    .map(|&(res, mode, lvb)| pb::HeldLock {
                        res: Some(res_pb(res)),
                        mode: lock_mode_pb(mode) as i32,
                        lvb: Some(lvb_pb(lvb)),
                    })
                    .collect(),
                claims: r.claims.iter().map(|b| b.0).collect(),
                dead: r
                    .dead
                    .iter()
                    .map(|d| pb::DeadThread {
                        inst: u32::from(d.inst.0),
                        committed: d
                            .committed
                            .iter()
                            .map(|&(xid, scn)| pb::CommittedTxn {
                                xid: xid.0,
                                scn: scn.0,
                            })
                            .collect(),
                        uncommitted: d.uncommitted.iter().map(|x| x.0).collect(),
                        floor_scn: d.floor_scn.0,
                        xids_below: d.xids_below,
                    })
                    .collect(),
                xid_base: r.xid_base,
            }),
            Msg::Promote { blk } => K::Promote(pb::Promote { blk: blk.0 }),
            Msg::RecoverBlock { blk } => K::RecoverBlock(pb::RecoverBlock { blk: blk.0 }),
            Msg::SendPi { blk, to } => K::SendPi(pb::SendPi {
                blk: blk.0,
                to: u32::from(to.0),
            }),
            Msg::RecoverImage { blk, source } => K::RecoverImage(pb::RecoverImage {
                blk: blk.0,
                source: Some(match source {
                    RecoverSource::Current => pb::recover_image::Source::Current(true),
                    RecoverSource::Disk => pb::recover_image::Source::Disk(true),
                    RecoverSource::Image(b) => {
                        pb::recover_image::Source::Image(self.encode_block(b))
                    }
                }),
            }),
            Msg::BlockRecovered { blk, scn } => K::BlockRecovered(pb::BlockRecovered {
                blk: blk.0,
                scn: scn.0,
            }),
            Msg::WriteRequest { blk } => K::WriteRequest(pb::WriteRequest { blk: blk.0 }),
            Msg::ThreadsRecovered { threads } => {
                K::ThreadsRecovered(pb::ThreadsRecovered { threads: threads.0 })
            }
            Msg::WriteCurrent { blk } => K::WriteCurrent(pb::WriteCurrent { blk: blk.0 }),
            // The caller routes only the messages above here.
            other => unreachable!("not a reconfiguration message: {other:?}"),
        }
    }

    /// A reconfiguration message from a peer, checked.
    pub(crate) fn decode_reconfig(&self, kind: K) -> Result<Msg, WireError> {
        let l = &self.limits;
        Ok(match kind {
            K::Rebuild(r) => {
                let blocks = self.held_blocks_core(r.blocks)?;
                let mut locks = Vec::with_capacity(r.locks.len().min(1 << 16));
                for k in r.locks {
                    locks.push((
                        res_core("HeldLock.res", k.res)?,
                        lock_mode_core("HeldLock.mode", k.mode)?,
                        lvb_core(k.lvb.ok_or(missing("HeldLock.lvb"))?),
                    ));
                }
                let claims = r
                    .claims
                    .into_iter()
                    .map(|b| l.blk("Rebuild.claims", b))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut dead = Vec::with_capacity(r.dead.len().min(64));
                for d in r.dead {
                    let committed = d
                        .committed
                        .into_iter()
                        .map(|c| Ok((l.xid("CommittedTxn.xid", c.xid)?, Scn(c.scn))))
                        .collect::<Result<Vec<_>, WireError>>()?;
                    let uncommitted = d
                        .uncommitted
                        .into_iter()
                        .map(|x| l.xid("DeadThread.uncommitted", x))
                        .collect::<Result<Vec<_>, _>>()?;
                    dead.push(DeadThread {
                        inst: l.inst("DeadThread.inst", d.inst)?,
                        committed,
                        uncommitted,
                        floor_scn: Scn(d.floor_scn),
                        xids_below: d.xids_below,
                    });
                }
                Msg::Rebuild(Box::new(Rebuild {
                    members: l.inst_set("Rebuild.members", r.members)?,
                    blocks,
                    locks,
                    claims,
                    dead,
                    xid_base: r.xid_base,
                }))
            }
            K::Promote(p) => Msg::Promote {
                blk: l.blk("Promote.blk", p.blk)?,
            },
            K::RecoverBlock(r) => Msg::RecoverBlock {
                blk: l.blk("RecoverBlock.blk", r.blk)?,
            },
            K::SendPi(s) => Msg::SendPi {
                blk: l.blk("SendPi.blk", s.blk)?,
                to: l.inst("SendPi.to", s.to)?,
            },
            K::RecoverImage(r) => Msg::RecoverImage {
                blk: l.blk("RecoverImage.blk", r.blk)?,
                source: match r.source.ok_or(missing("RecoverImage.source"))? {
                    pb::recover_image::Source::Current(_) => RecoverSource::Current,
                    pb::recover_image::Source::Disk(_) => RecoverSource::Disk,
                    pb::recover_image::Source::Image(bytes) => RecoverSource::Image(Box::new(
                        self.decode_block("RecoverImage.image", &bytes)?,
                    )),
                },
            },
            K::BlockRecovered(b) => Msg::BlockRecovered {
                blk: l.blk("BlockRecovered.blk", b.blk)?,
                scn: Scn(b.scn),
            },
            K::ThreadsRecovered(t) => Msg::ThreadsRecovered {
                threads: l.inst_set("ThreadsRecovered.threads", t.threads)?,
            },
            K::WriteRequest(w) => Msg::WriteRequest {
                blk: l.blk("WriteRequest.blk", w.blk)?,
            },
            K::WriteCurrent(w) => Msg::WriteCurrent {
                blk: l.blk("WriteCurrent.blk", w.blk)?,
            },
            other => {
                return Err(WireError::OutOfRange {
                    field: "Msg.kind",
                    value: 0,
                    expected: format!("a reconfiguration message, not {other:?}"),
                });
            }
        })
    }
}
