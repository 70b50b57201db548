//! Redo records (`fusion_core::msg::RedoRecord`) and their change vectors
//! (`fusion_core::block::Change`) on the wire, as the live store writes them
//! to a redo thread and reads them back. A change that formats a block
//! carries its body as a block image (the block encoding, unpadded), so it is
//! checked as every shipped block is.

use std::sync::Arc;

use fusion_core::block::{Block, Body, Change, SplitBlock};
use fusion_core::msg::RedoRecord;
use fusion_core::types::{BlockAddr, Rowid, Scn};

use crate::block::encode_block;
use crate::convert::{Codec, WireError, missing};
use crate::pb;
use crate::pb::redo_change::Kind as K;

fn out_of_range(field: &'static str, value: u64, expected: &str) -> WireError {
    WireError::OutOfRange {
        field,
        value,
        expected: expected.to_string(),
    }
}

fn u16_of(field: &'static str, v: u32) -> Result<u16, WireError> {
    u16::try_from(v).map_err(|_| out_of_range(field, u64::from(v), "at most 65535"))
}

/// A body (and the ITL and undo that go with it) as a block image.
fn image(
    body: &Body,
    itl: &[fusion_core::block::Itl],
    undo: &[fusion_core::block::UndoRec],
) -> Vec<u8> {
    let block = Block {
        addr: BlockAddr(0),
        scn: Scn(0),
        body: Arc::new(body.clone()),
        itl: itl.to_vec(),
        undo: undo.to_vec().into(),
        trimmed_scn: Scn(0),
    };
    encode_block(&block, 0)
}

impl Codec {
    pub fn encode_redo(&self, r: &RedoRecord) -> pb::RedoRecord {
        pb::RedoRecord {
            scn: r.scn.0,
            xid: r.xid.0,
            blk: r.blk.map(|b| b.0),
            bytes: r.bytes,
            commit: r.commit,
            change: r.change.as_ref().map(|c| pb::RedoChange {
                kind: Some(change_pb(c)),
            }),
            written: r.written,
        }
    }

    pub fn decode_redo(&self, r: pb::RedoRecord) -> Result<RedoRecord, WireError> {
        let l = &self.limits;
        let blk = r.blk.map(|b| l.blk("RedoRecord.blk", b)).transpose()?;
        let change = r.change.map(|c| self.decode_change(c)).transpose()?;
        if change.is_some() && (r.commit || r.written) {
            return Err(WireError::Rejected {
                field: "RedoRecord.change",
                reason: "a commit or block written record carries no change".to_string(),
            });
        }
        if (change.is_some() || r.written) && blk.is_none() {
            return Err(missing("RedoRecord.blk"));
        }
        if r.written && r.bytes != 0 {
            return Err(out_of_range(
                "RedoRecord.bytes",
                u64::from(r.bytes),
                "0 for a block written record",
            ));
        }
        Ok(RedoRecord {
            scn: Scn(r.scn),
            xid: l.xid("RedoRecord.xid", r.xid)?,
            blk,
            bytes: r.bytes,
            commit: r.commit,
            change,
            written: r.written,
        })
    }

    fn decode_change(&self, c: pb::RedoChange) -> Result<Change, WireError> {
        let l = &self.limits;
        Ok(match c.kind.ok_or(missing("RedoChange.kind"))? {
            K::UpdateRow(u) => Change::UpdateRow {
                slot: u16_of("RedoChange.update_row.slot", u.slot)?,
                val: u.val,
            },
            K::InsertRow(i) => Change::InsertRow {
                slot: u16_of("RedoChange.insert_row.slot", i.slot)?,
                key: i.key,
                val: i.val,
            },
            K::InsertEntry(e) => Change::InsertEntry {
                key: e.key,
                rowid: Rowid {
                    blk: l.blk("RedoChange.insert_entry.rowid_blk", e.rowid_blk)?,
                    slot: u16_of("RedoChange.insert_entry.rowid_slot", e.rowid_slot)?,
                },
            },
            K::UpdateEntry(e) => Change::UpdateEntry {
                key: e.key,
                val: e.val,
            },
            K::SetBit(b) => Change::SetBit {
                at: b.at,
                key: b.key,
                on: b.on,
            },
            K::UseBlocks(u) => Change::UseBlocks {
                inst: l.inst("RedoChange.use_blocks.inst", u.inst)?.0,
                used: u.used,
            },
            K::SplitLower(s) => Change::SplitLower {
                keep: s.keep,
                high: s.high,
                next: s
                    .next
                    .map(|n| l.blk("RedoChange.split_lower.next", n))
                    .transpose()?,
            },
            K::AddChild(a) => Change::AddChild {
                sep: a.sep,
                child: l.blk("RedoChange.add_child.child", a.child)?,
            },
            K::Format(bytes) => {
                let b = self.decode_block("RedoChange.format", &bytes)?;
                if !b.itl.is_empty() || !b.undo.is_empty() {
                    return Err(WireError::Rejected {
                        field: "RedoChange.format",
                        reason: "a formatted body carries no ITL or undo".to_string(),
                    });
                }
                Change::Format(Box::new(Arc::unwrap_or_clone(b.body)))
            }
            K::SplitNew(bytes) => {
                let b = self.decode_block("RedoChange.split_new", &bytes)?;
                if b.undo
                    .iter()
                    .any(|u| matches!(u.op, fusion_core::block::UndoOp::Body(_)))
                {
                    return Err(WireError::Rejected {
                        field: "RedoChange.split_new",
                        reason: "a split's new block restores no whole body".to_string(),
                    });
                }
                Change::SplitNew(Box::new(SplitBlock {
                    body: Arc::unwrap_or_clone(b.body),
                    itl: b.itl,
                    undo: b.undo.to_vec(),
                }))
            }
        })
    }
}

fn change_pb(c: &Change) -> K {
    match c {
        Change::UpdateRow { slot, val } => K::UpdateRow(pb::UpdateRowChange {
            slot: u32::from(*slot),
            val: *val,
        }),
        Change::InsertRow { slot, key, val } => K::InsertRow(pb::InsertRowChange {
            slot: u32::from(*slot),
            key: *key,
            val: *val,
        }),
        Change::InsertEntry { key, rowid } => K::InsertEntry(pb::InsertEntryChange {
            key: *key,
            rowid_blk: rowid.blk.0,
            rowid_slot: u32::from(rowid.slot),
        }),
        Change::UpdateEntry { key, val } => K::UpdateEntry(pb::UpdateEntryChange {
            key: *key,
            val: *val,
        }),
        Change::SetBit { at, key, on } => K::SetBit(pb::SetBitChange {
            at: *at,
            key: *key,
            on: *on,
        }),
        Change::UseBlocks { inst, used } => K::UseBlocks(pb::UseBlocksChange {
            inst: u32::from(*inst),
            used: *used,
        }),
        Change::SplitLower { keep, high, next } => K::SplitLower(pb::SplitLowerChange {
            keep: *keep,
            high: *high,
            next: next.map(|n| n.0),
        }),
        Change::AddChild { sep, child } => K::AddChild(pb::AddChildChange {
            sep: *sep,
            child: child.0,
        }),
        Change::Format(body) => K::Format(image(body, &[], &[])),
        Change::SplitNew(new) => K::SplitNew(image(&new.body, &new.itl, &new.undo)),
    }
}
