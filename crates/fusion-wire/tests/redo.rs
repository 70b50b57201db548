//! Redo records on the wire (the live store's redo threads): every kind of
//! change vector round-trips, and a malformed record from a peer is a
//! `WireError` naming the field, never a panic.

use fusion_core::block::{Block, Body, Change, Itl, LeafEntry, Row, SplitBlock, UndoOp, UndoRec};
use fusion_core::msg::RedoRecord;
use fusion_core::types::Scn;
use fusion_core::types::{BlockAddr, InstId, Rowid, Xid};
use fusion_wire::{Codec, WireError, encode_block, pb};
use proptest::prelude::*;
use prost::Message;

fn x(seq: u64) -> Xid {
    Xid::new(InstId(1), seq)
}

fn rid() -> Rowid {
    Rowid {
        blk: BlockAddr(4),
        slot: 7,
    }
}

fn leaf(keys: &[u64]) -> Body {
    Body::Leaf {
        entries: keys
            .iter()
            .map(|&key| LeafEntry {
                key,
                rowid: rid(),
                lock: x(2),
                val: -1,
            })
            .collect(),
        next: Some(BlockAddr(12)),
        low: 10,
        high: Some(90),
    }
}

/// One change of every kind.
fn every_change() -> Vec<Change> {
    vec![
        Change::UpdateRow { slot: 3, val: -42 },
        Change::InsertRow {
            slot: 65_535,
            key: u64::MAX,
            val: i64::MIN,
        },
        Change::InsertEntry {
            key: 77,
            rowid: rid(),
        },
        Change::UpdateEntry { key: 5, val: 9 },
        Change::SetBit {
            at: 1 << 40,
            key: 33,
            on: true,
        },
        Change::UseBlocks { inst: 2, used: 17 },
        Change::SplitLower {
            keep: 8,
            high: 50,
            next: Some(BlockAddr(13)),
        },
        Change::SplitLower {
            keep: 4,
            high: 0,
            next: None,
        },
        Change::AddChild {
            sep: 50,
            child: BlockAddr(13),
        },
        Change::Format(Box::new(Body::Table { rows: Vec::new() })),
        Change::Format(Box::new(Body::Branch {
            entries: vec![(0, BlockAddr(5)), (50, BlockAddr(6))],
        })),
        Change::SplitNew(Box::new(SplitBlock {
            body: leaf(&[50, 60, 70]),
            itl: vec![Itl {
                xid: x(2),
                commit: None,
            }],
            undo: vec![UndoRec {
                xid: x(2),
                op: UndoOp::EntryInsert { key: 60 },
            }],
        })),
    ]
}

fn codec() -> Codec {
    Codec::new(8192, 4, 1000)
}

fn through_bytes(codec: &Codec, r: &RedoRecord) -> Result<RedoRecord, WireError> {
    let p = codec.encode_redo(r);
    let p = pb::RedoRecord::decode(p.encode_to_vec().as_slice()).expect("protobuf");
    codec.decode_redo(p)
}

#[test]
fn every_change_kind_round_trips() {
    let c = codec();
    let mut kinds = Vec::new();
    for (i, change) in every_change().into_iter().enumerate() {
        kinds.push(change.kind());
        let r = RedoRecord::change(Scn(100 + i as u64), x(3), BlockAddr(9), 200, change);
        assert_eq!(through_bytes(&c, &r), Ok(r.clone()), "{:?}", r.change);
        // And through the From/TryFrom impls (no limits).
        let p: pb::RedoRecord = (&r).into();
        assert_eq!(RedoRecord::try_from(p), Ok(r));
    }
    kinds.dedup();
    assert_eq!(kinds.len(), 10, "one of each kind: {kinds:?}");
    // Commits and block written records carry no change.
    let commit = RedoRecord::commit(Scn(7), x(3), 100);
    assert_eq!(through_bytes(&c, &commit), Ok(commit));
    let bwr = RedoRecord::block_written(BlockAddr(999), Scn(8));
    assert_eq!(through_bytes(&c, &bwr), Ok(bwr));
}

fn encoded(change: Change) -> pb::RedoRecord {
    codec().encode_redo(&RedoRecord::change(Scn(5), x(3), BlockAddr(9), 200, change))
}

fn kind_mut(r: &mut pb::RedoRecord) -> &mut pb::redo_change::Kind {
    r.change
        .as_mut()
        .and_then(|c| c.kind.as_mut())
        .expect("a change")
}

fn field_of(r: pb::RedoRecord) -> &'static str {
    codec().decode_redo(r).expect_err("malformed").field()
}

#[test]
fn malformed_changes_name_the_field() {
    use pb::redo_change::Kind as K;
    // A slot beyond 16 bits.
    let mut r = encoded(Change::UpdateRow { slot: 1, val: 1 });
    if let K::UpdateRow(u) = kind_mut(&mut r) {
        u.slot = 70_000;
    }
    assert_eq!(field_of(r), "RedoChange.update_row.slot");
    // A rowid outside the datafile.
    let mut r = encoded(Change::InsertEntry {
        key: 1,
        rowid: rid(),
    });
    if let K::InsertEntry(e) = kind_mut(&mut r) {
        e.rowid_blk = 1000;
    }
    assert_eq!(field_of(r), "RedoChange.insert_entry.rowid_blk");
    // An instance outside the cluster.
    let mut r = encoded(Change::UseBlocks { inst: 1, used: 1 });
    if let K::UseBlocks(u) = kind_mut(&mut r) {
        u.inst = 4;
    }
    assert_eq!(field_of(r), "RedoChange.use_blocks.inst");
    let mut r = encoded(Change::AddChild {
        sep: 1,
        child: BlockAddr(1),
    });
    if let K::AddChild(a) = kind_mut(&mut r) {
        a.child = u32::MAX;
    }
    assert_eq!(field_of(r), "RedoChange.add_child.child");
    let mut r = encoded(Change::SplitLower {
        keep: 1,
        high: 1,
        next: Some(BlockAddr(1)),
    });
    if let K::SplitLower(s) = kind_mut(&mut r) {
        s.next = Some(5000);
    }
    assert_eq!(field_of(r), "RedoChange.split_lower.next");
    // A change without its oneof.
    let mut r = encoded(Change::UpdateEntry { key: 1, val: 1 });
    r.change = Some(pb::RedoChange { kind: None });
    assert_eq!(field_of(r), "RedoChange.kind");
    // A truncated body image.
    let mut r = encoded(Change::Format(Box::new(leaf(&[1, 2]))));
    if let K::Format(bytes) = kind_mut(&mut r) {
        bytes.truncate(bytes.len() - 3);
    }
    let e = codec().decode_redo(r).expect_err("truncated");
    assert!(
        matches!(
            e,
            WireError::Block {
                field: "RedoChange.format",
                ..
            }
        ),
        "{e}"
    );
    // A split's moved undo naming a transaction of an instance outside the cluster.
    let mut r = encoded(Change::UpdateEntry { key: 1, val: 1 });
    let mut b = Block::new(BlockAddr(0), leaf(&[1]));
    b.undo.push(UndoRec {
        xid: Xid::new(InstId(9), 1),
        op: UndoOp::EntryInsert { key: 1 },
    });
    *kind_mut(&mut r) = K::SplitNew(encode_block(&b, 0));
    assert_eq!(field_of(r), "Block.undo.xid");
    // A formatted body may not carry undo.
    let mut r = encoded(Change::UpdateEntry { key: 1, val: 1 });
    let mut b = Block::new(BlockAddr(0), Body::Table { rows: vec![] });
    b.undo.push(UndoRec {
        xid: x(1),
        op: UndoOp::Row {
            slot: 0,
            before: Some(Row {
                key: 1,
                val: 1,
                lock: Xid::NONE,
            }),
        },
    });
    *kind_mut(&mut r) = K::Format(encode_block(&b, 0));
    assert_eq!(field_of(r), "RedoChange.format");
}

#[test]
fn malformed_records_name_the_field() {
    // A change on a commit record.
    let mut r = encoded(Change::UpdateRow { slot: 1, val: 1 });
    r.commit = true;
    assert_eq!(field_of(r), "RedoRecord.change");
    // A change without its block.
    let mut r = encoded(Change::UpdateRow { slot: 1, val: 1 });
    r.blk = None;
    assert_eq!(field_of(r), "RedoRecord.blk");
    // A block written record counts no bytes.
    let mut r = codec().encode_redo(&RedoRecord::block_written(BlockAddr(1), Scn(3)));
    r.bytes = 10;
    assert_eq!(field_of(r), "RedoRecord.bytes");
    let mut r = codec().encode_redo(&RedoRecord::commit(Scn(3), x(1), 100));
    r.xid = Xid::new(InstId(4), 1).0;
    assert_eq!(field_of(r), "RedoRecord.xid");
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (any::<u16>(), any::<i64>()).prop_map(|(slot, val)| Change::UpdateRow { slot, val }),
        (any::<u16>(), any::<u64>(), any::<i64>()).prop_map(|(slot, key, val)| Change::InsertRow {
            slot,
            key,
            val
        }),
        (any::<u64>(), 0u32..1000, any::<u16>()).prop_map(|(key, blk, slot)| {
            Change::InsertEntry {
                key,
                rowid: Rowid {
                    blk: BlockAddr(blk),
                    slot,
                },
            }
        }),
        (any::<u64>(), any::<i64>()).prop_map(|(key, val)| Change::UpdateEntry { key, val }),
        (any::<u64>(), any::<u64>(), any::<bool>()).prop_map(|(at, key, on)| Change::SetBit {
            at,
            key,
            on
        }),
        (0u8..4, any::<u32>()).prop_map(|(inst, used)| Change::UseBlocks { inst, used }),
        (any::<u32>(), any::<u64>(), proptest::option::of(0u32..1000)).prop_map(
            |(keep, high, next)| Change::SplitLower {
                keep,
                high,
                next: next.map(BlockAddr),
            }
        ),
        (any::<u64>(), 0u32..1000).prop_map(|(sep, child)| Change::AddChild {
            sep,
            child: BlockAddr(child),
        }),
        proptest::collection::vec(any::<u64>(), 0..20).prop_map(|mut keys| {
            keys.sort_unstable();
            keys.dedup();
            Change::Format(Box::new(leaf(&keys)))
        }),
    ]
}

proptest! {
    #[test]
    fn redo_records_round_trip(scn in any::<u64>(), seq in 0u64..(1 << 56), blk in 0u32..1000, bytes in any::<u32>(), c in proptest::option::of(change()), commit in any::<bool>()) {
        let r = match (c, commit) {
            (Some(c), _) => RedoRecord::change(Scn(scn), x(seq), BlockAddr(blk), bytes, c),
            (None, true) => RedoRecord::commit(Scn(scn), x(seq), bytes),
            (None, false) => RedoRecord::block_written(BlockAddr(blk), Scn(scn)),
        };
        prop_assert_eq!(through_bytes(&codec(), &r), Ok(r));
    }

    /// Random bytes never panic the redo decoder.
    #[test]
    fn garbage_redo_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(r) = pb::RedoRecord::decode(bytes.as_slice()) {
            let _ = codec().decode_redo(r);
        }
    }
}
