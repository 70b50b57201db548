//! Change vectors: what one change does to one block. A session builds a
//! [`Change`], makes it with [`Block::apply`] and puts the same value in its
//! redo record; instance recovery replays the record with the same
//! [`Block::apply`], so the block it rebuilds, undo record included, is the
//! one the session made.
//!
//! A change vector names the change, not the block it leaves: only a block
//! formatted whole (a new table block, a split's new block, the root's new
//! branch) carries a body. A split's lower half is a truncation and its
//! parent gains one separator, so redo kept for recovery stays small.

use std::sync::Arc;

use super::image::Block;
use super::parts::{Body, Itl, UndoLog, UndoRec};
use crate::types::{BlockAddr, Rowid, Scn, Xid};

/// One change to one block. The transaction and SCN come with it (the redo
/// record's `xid` and `scn`), and every change records its undo in the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A row's value changes; the changer takes the row lock.
    UpdateRow { slot: u16, val: i64 },
    /// A row is appended at `slot` (the block held `slot` rows before).
    InsertRow { slot: u16, key: u64, val: i64 },
    /// An index leaf entry is inserted in key order.
    InsertEntry { key: u64, rowid: Rowid },
    /// The value of the leaf entry for `key` changes (an index on key and
    /// value); the changer takes the entry's lock.
    UpdateEntry { key: u64, val: i64 },
    /// The bit of row `key` in the bitmap piece at `at` is set (`on`) or
    /// cleared; the changer locks the piece.
    SetBit { at: u64, key: u64, on: bool },
    /// A segment header records that instance `inst` has taken `used`
    /// blocks of its free run.
    UseBlocks { inst: u8, used: u32 },
    /// A full index block keeps its lower `keep` entries (a split); a leaf
    /// then ends at `high` and points to `next`, the block its upper half
    /// went to.
    SplitLower {
        keep: u32,
        high: u64,
        next: Option<BlockAddr>,
    },
    /// A branch gains the child `child` for keys from `sep` on (a split below it).
    AddChild { sep: u64, child: BlockAddr },
    /// The body is replaced by a new one: a never-used block formatted for
    /// rows, or a root that split and now points to its two halves.
    Format(Box<Body>),
    /// A block a split moved entries into: its new body, with the ITL
    /// entries and undo of the uncommitted entries that moved with them.
    SplitNew(Box<SplitBlock>),
}

/// What a split's new block holds (see [`Change::SplitNew`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitBlock {
    pub body: Body,
    pub itl: Vec<Itl>,
    pub undo: Vec<UndoRec>,
}

impl Change {
    /// The change's name, as errors and the wire name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::UpdateRow { .. } => "update_row",
            Change::InsertRow { .. } => "insert_row",
            Change::InsertEntry { .. } => "insert_entry",
            Change::UpdateEntry { .. } => "update_entry",
            Change::SetBit { .. } => "set_bit",
            Change::UseBlocks { .. } => "use_blocks",
            Change::SplitLower { .. } => "split_lower",
            Change::AddChild { .. } => "add_child",
            Change::Format(_) => "format",
            Change::SplitNew(_) => "split_new",
        }
    }
}

impl Body {
    /// The lower `keep` entries of a leaf or branch, as
    /// [`Change::SplitLower`] leaves them (a leaf ends at `high` and points
    /// to `next`); `None` for another body or too few entries.
    pub fn split_lower(&self, keep: u32, high: u64, next: Option<BlockAddr>) -> Option<Body> {
        let keep = usize::try_from(keep).ok()?;
        match self {
            Body::Leaf { entries, low, .. } if keep <= entries.len() => Some(Body::Leaf {
                entries: entries[..keep].to_vec(),
                next,
                low: *low,
                high: Some(high),
            }),
            Body::Branch { entries } if keep <= entries.len() => Some(Body::Branch {
                entries: entries[..keep].to_vec(),
            }),
            _ => None,
        }
    }
}

impl Block {
    /// Make `change` under transaction `xid` at `scn`, recording its undo
    /// and ITL entry. This is the only way a block's body changes, in a
    /// session as in recovery. False when the change does not fit the block
    /// (no such row, entry or piece, or another kind of block): then
    /// nothing changed.
    pub fn apply(&mut self, change: &Change, xid: Xid, scn: Scn) -> bool {
        match change {
            Change::UpdateRow { slot, val } => self.update_row(*slot, xid, *val, scn),
            Change::InsertRow { slot, key, val } => {
                // `insert_row` appends: the slot says where the row went.
                usize::from(*slot) == self.row_slots()
                    && self.insert_row(*key, *val, xid, scn).is_some()
            }
            Change::InsertEntry { key, rowid } => self.insert_entry(*key, *rowid, xid, scn),
            Change::UpdateEntry { key, val } => self.update_entry(*key, *val, xid, scn),
            Change::SetBit { at, key, on } => self.change_piece(*at, *key, *on, xid, scn),
            Change::UseBlocks { inst, used } => {
                let Body::SegHeader { used: now } = &*self.body else {
                    return false;
                };
                let mut next = now.clone();
                let Some(n) = next.get_mut(usize::from(*inst)) else {
                    return false;
                };
                *n = *used;
                self.replace_body(Body::SegHeader { used: next }, xid, scn);
                true
            }
            Change::SplitLower { keep, high, next } => {
                let Some(lower) = self.body.split_lower(*keep, *high, *next) else {
                    return false;
                };
                self.replace_body(lower, xid, scn);
                true
            }
            Change::AddChild { sep, child } => {
                let Body::Branch { entries } = &*self.body else {
                    return false;
                };
                let mut entries = entries.clone();
                let pos = entries.partition_point(|e| e.0 <= *sep);
                entries.insert(pos, (*sep, *child));
                self.replace_body(Body::Branch { entries }, xid, scn);
                true
            }
            Change::Format(body) => {
                self.replace_body((**body).clone(), xid, scn);
                true
            }
            Change::SplitNew(new) => {
                // Unformatted until now: its undo restores that, and comes
                // after the moved entries' undo, so a rollback reaches it first.
                self.body = Arc::new(Body::Unformatted);
                self.itl = new.itl.clone();
                self.undo = UndoLog::from(new.undo.clone());
                self.replace_body(new.body.clone(), xid, scn);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{LeafEntry, Piece, Row, TxState, UndoOp};
    use crate::types::InstId;

    fn x(seq: u64) -> Xid {
        Xid::new(InstId(0), seq)
    }

    fn rid(slot: u16) -> Rowid {
        Rowid {
            blk: BlockAddr(1),
            slot,
        }
    }

    fn leaf(keys: &[u64]) -> Block {
        Block::new(
            BlockAddr(3),
            Body::Leaf {
                entries: keys
                    .iter()
                    .map(|&key| LeafEntry {
                        key,
                        rowid: rid(0),
                        lock: Xid::NONE,
                        val: 0,
                    })
                    .collect(),
                next: None,
                low: 0,
                high: None,
            },
        )
    }

    /// Images of one block version share their body; a change to one
    /// (a session's, a rollback's, a CR build's) never shows in another.
    #[test]
    fn images_share_a_body_until_one_of_them_changes() {
        let mut buffer = leaf(&[10, 20]);
        let past_image = buffer.clone();
        assert!(Arc::ptr_eq(&buffer.body, &past_image.body));
        assert!(buffer.apply(
            &Change::InsertEntry {
                key: 15,
                rowid: rid(1)
            },
            x(1),
            Scn(7)
        ));
        assert!(!Arc::ptr_eq(&buffer.body, &past_image.body));
        assert_eq!(
            past_image.entry_count(),
            2,
            "the past image keeps the old version"
        );
        assert_eq!(buffer.entry_count(), 3);

        // A CR copy that rolls nothing back shares the body it was built from.
        let committed = |_: Xid| TxState::Committed(Scn(7));
        let same = buffer
            .build_cr(Scn(9), Xid::NONE, Scn(9), &committed)
            .expect("buildable");
        assert!(Arc::ptr_eq(&same.image.body, &buffer.body));
        // One that rolls a change back has its own, and the buffer keeps the change.
        let older = buffer
            .build_cr(Scn(9), Xid::NONE, Scn(9), &|_| TxState::Active)
            .expect("buildable");
        assert!(!Arc::ptr_eq(&older.image.body, &buffer.body));
        assert_eq!(older.image.entry_count(), 2);
        assert_eq!(buffer.entry_count(), 3);

        // Rolling the transaction back in the buffer leaves the CR copy alone.
        let shared = buffer.clone();
        assert_eq!(buffer.roll_back(x(1), Scn(10)), 1);
        assert_eq!(buffer.entry_count(), 2);
        assert_eq!(shared.entry_count(), 3);
    }

    #[test]
    fn each_change_makes_its_undo() {
        let mut t = Block::new(BlockAddr(1), Body::Table { rows: vec![] });
        assert!(t.apply(
            &Change::InsertRow {
                slot: 0,
                key: 5,
                val: 1
            },
            x(1),
            Scn(3)
        ));
        assert!(
            !t.apply(
                &Change::InsertRow {
                    slot: 0,
                    key: 6,
                    val: 1
                },
                x(1),
                Scn(4)
            ),
            "slot 0 is taken"
        );
        assert!(t.apply(&Change::UpdateRow { slot: 0, val: 9 }, x(2), Scn(5)));
        assert!(!t.apply(&Change::UpdateRow { slot: 3, val: 9 }, x(2), Scn(6)));
        assert_eq!(
            t.row(0),
            Some(&Row {
                key: 5,
                val: 9,
                lock: x(2)
            })
        );
        assert_eq!(t.scn, Scn(5));
        assert_eq!(t.undo.len(), 2);

        let mut l = leaf(&[10, 20, 30, 40]);
        assert!(l.apply(
            &Change::InsertEntry {
                key: 25,
                rowid: rid(4)
            },
            x(3),
            Scn(7)
        ));
        assert!(l.apply(&Change::UpdateEntry { key: 30, val: -2 }, x(3), Scn(8)));
        assert!(l.apply(
            &Change::SplitLower {
                keep: 2,
                high: 25,
                next: Some(BlockAddr(9))
            },
            x(4),
            Scn(9)
        ));
        assert_eq!(
            *l.body,
            Body::Leaf {
                entries: vec![
                    LeafEntry {
                        key: 10,
                        rowid: rid(0),
                        lock: Xid::NONE,
                        val: 0
                    },
                    LeafEntry {
                        key: 20,
                        rowid: rid(0),
                        lock: Xid::NONE,
                        val: 0
                    },
                ],
                next: Some(BlockAddr(9)),
                low: 0,
                high: Some(25),
            }
        );
        assert!(matches!(
            l.undo.last().map(|u| &u.op),
            Some(UndoOp::Body(_))
        ));

        let mut b = Block::new(
            BlockAddr(2),
            Body::Branch {
                entries: vec![(0, BlockAddr(3)), (50, BlockAddr(4))],
            },
        );
        assert!(b.apply(
            &Change::AddChild {
                sep: 25,
                child: BlockAddr(9)
            },
            x(4),
            Scn(9)
        ));
        assert_eq!(b.child_for(30), Some(BlockAddr(9)));
        assert!(!l.apply(
            &Change::AddChild {
                sep: 1,
                child: BlockAddr(8)
            },
            x(4),
            Scn(9)
        ));

        let mut h = Block::new(BlockAddr(0), Body::SegHeader { used: vec![0, 0] });
        assert!(h.apply(&Change::UseBlocks { inst: 1, used: 3 }, x(5), Scn(10)));
        assert!(!h.apply(&Change::UseBlocks { inst: 2, used: 1 }, x(5), Scn(11)));
        assert_eq!(*h.body, Body::SegHeader { used: vec![0, 3] });

        let mut bm = Block::new(
            BlockAddr(6),
            Body::Bitmap {
                pieces: vec![Piece {
                    value: 1,
                    chunk: 0,
                    bits: vec![1, 2],
                    lock: Xid::NONE,
                }],
                next: None,
                low: 0,
                high: None,
            },
        );
        let at = crate::block::piece_at(1, 0);
        assert!(bm.apply(
            &Change::SetBit {
                at,
                key: 2,
                on: false
            },
            x(6),
            Scn(12)
        ));
        assert_eq!(bm.piece(at).map(|p| p.bits.clone()), Some(vec![1]));
    }

    #[test]
    fn a_split_block_keeps_the_moved_undo_below_its_own() {
        let mut spare = Block::new(BlockAddr(9), Body::Unformatted);
        let moved = UndoRec {
            xid: x(1),
            op: UndoOp::EntryInsert { key: 30 },
        };
        let new = Change::SplitNew(Box::new(SplitBlock {
            body: Arc::unwrap_or_clone(leaf(&[30, 40]).body),
            itl: vec![Itl {
                xid: x(1),
                commit: None,
            }],
            undo: vec![moved],
        }));
        assert!(spare.apply(&new, x(2), Scn(9)));
        assert_eq!(spare.undo.first(), Some(&moved));
        assert!(matches!(
            spare.undo.last().map(|u| &u.op),
            Some(UndoOp::Body(b)) if *spare.undo.body(*b) == Body::Unformatted
        ));
        // Before the split the block did not exist for any reader.
        let lookup = |xid: Xid| {
            if xid == x(2) {
                TxState::Committed(Scn(10))
            } else {
                TxState::Active
            }
        };
        let cr = spare.build_cr(Scn(8), Xid::NONE, Scn(20), &lookup).unwrap();
        assert_eq!(*cr.image.body, Body::Unformatted);
    }
}
