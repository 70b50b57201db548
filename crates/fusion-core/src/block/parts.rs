//! What a block image is made of: table rows, index leaf entries, bitmap
//! pieces, the body that holds them, the interested transaction list (ITL)
//! and the undo records that roll its changes back.

use std::ops::Deref;
use std::sync::Arc;

use crate::types::{BlockAddr, Rowid, Scn, Xid};

/// A table row: the key column, a numeric value and the row lock (the
/// transaction that last changed it; the lock is held while that transaction is active).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub key: u64,
    pub val: i64,
    pub lock: Xid,
}

/// An index leaf entry. `val` is the row's value in an index on (key,
/// value) and 0 in an index on the key alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafEntry {
    pub key: u64,
    pub rowid: Rowid,
    pub lock: Xid,
    pub val: i64,
}

/// One bitmap piece: the rows of chunk `chunk` whose value is `value`. It
/// lives with the block body that holds it; `bitmap` builds and reads the
/// index made of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub value: i64,
    pub chunk: u32,
    /// Keys of the rows whose bit is set, ascending (the compressed bitmap).
    pub bits: Vec<u64>,
    /// The transaction that last changed the piece; held while it is active.
    pub lock: Xid,
}

impl Piece {
    /// The piece's position in the index: value, then chunk.
    pub fn at(&self) -> u64 {
        piece_at(self.value, self.chunk)
    }

    /// Rows whose bit is set.
    pub fn count(&self) -> u64 {
        self.bits.len() as u64
    }

    /// Set or clear the bit of row `key`.
    pub fn set(&mut self, key: u64, on: bool) {
        match (self.bits.binary_search(&key), on) {
            (Err(pos), true) => self.bits.insert(pos, key),
            (Ok(pos), false) => {
                self.bits.remove(pos);
            }
            _ => {}
        }
    }

    /// Approximate encoded size (a compressed bitmap: a few bytes per set bit).
    pub fn encoded_len(&self) -> usize {
        16 + self.bits.len() * 2
    }
}

/// The index key of the piece of `value` for `chunk`: value in the high 32
/// bits, chunk in the low 32 (values are `1..=distinct`, both fit).
pub fn piece_at(value: i64, chunk: u32) -> u64 {
    ((value.clamp(0, i64::from(u32::MAX)) as u64) << 32) | u64::from(chunk)
}

/// What a block holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// Never formatted (free space above the high-water mark).
    Unformatted,
    /// Table rows by slot; `None` is a slot whose insert is not visible.
    Table { rows: Vec<Option<Row>> },
    /// Sorted entries for keys in `low..high` (`high: None` is the rightmost
    /// leaf), and the next leaf to the right.
    Leaf {
        entries: Vec<LeafEntry>,
        next: Option<BlockAddr>,
        low: u64,
        high: Option<u64>,
    },
    /// A segment header: blocks each instance has formatted above the initial
    /// high-water mark (its run of free blocks), which full scans must read too.
    SegHeader { used: Vec<u32> },
    /// Sorted separators: child `i` holds keys `>= entries[i].0` (the first covers everything below too).
    Branch { entries: Vec<(u64, BlockAddr)> },
    /// A bitmap index leaf: pieces sorted by `Piece::at` (value, then key
    /// range), covering `low..high` (`high: None` for the rightmost leaf).
    Bitmap {
        pieces: Vec<Piece>,
        next: Option<BlockAddr>,
        low: u64,
        high: Option<u64>,
    },
}

/// One entry of the interested transaction list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Itl {
    pub xid: Xid,
    /// Commit SCN once known here (set by commit cleanout or after a lookup).
    pub commit: Option<Scn>,
}

/// Undo records a block keeps before the oldest committed ones are trimmed.
pub const UNDO_RECORDS_MAX: usize = 32;

/// How to undo one change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UndoOp {
    /// Restore a table slot (`None`: the slot did not exist, it was an insert).
    Row { slot: u16, before: Option<Row> },
    /// Remove the leaf entry with this key (it was inserted).
    EntryInsert { key: u64 },
    /// Restore the whole body (index block splits).
    Body(Box<Body>),
    /// Restore a leaf entry whose value changed (index on key and value).
    Entry { before: LeafEntry },
    /// Undo one bit of a bitmap piece: the bit of row `key` in the piece
    /// at `at` was `was`, and the piece was locked by `lock`.
    Bit {
        at: u64,
        key: u64,
        was: bool,
        lock: Xid,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndoRec {
    pub xid: Xid,
    pub op: UndoOp,
}

/// A block image's undo records, oldest first. Shared, copy on write,
/// between the images of one block version as the body is: the copies of a
/// block shipped for reads into many caches, the one a write or a message
/// carries, hold one list until one of them changes (a past image keeps a
/// copy of its own: [`UndoLog::copy_from`]). Empty holds no allocation.
#[derive(Clone, Debug, Default)]
pub struct UndoLog(Option<Arc<Vec<UndoRec>>>);

impl UndoLog {
    /// The records to change: this image's own, copied first if another
    /// image still shares them. A list grows by doubling up to one record
    /// over [`UNDO_RECORDS_MAX`] (a change's record is pushed before the
    /// oldest is trimmed) and no further, so a hot block's list does not
    /// keep twice the room it can ever use.
    fn records_mut(&mut self, extra: usize) -> &mut Vec<UndoRec> {
        let arc = self.0.get_or_insert_with(Default::default);
        let len = arc.len();
        let room = |cap: usize| {
            let doubled = (cap * 2).max(4);
            // Beyond that bound (transactions still active hold their
            // records), it doubles as any vector does.
            let capped = if len + extra <= UNDO_RECORDS_MAX + 1 {
                doubled.min(UNDO_RECORDS_MAX + 1)
            } else {
                doubled
            };
            capped.max(len + extra)
        };
        // No `Weak` of a list is ever made: one strong reference is this
        // image's alone (read with a plain load, not `get_mut`'s exchange).
        if Arc::strong_count(arc) > 1 {
            let mut own = Vec::with_capacity(room(len));
            own.extend_from_slice(arc);
            *arc = Arc::new(own);
        }
        // Its own by now: `make_mut` copies nothing.
        let v = Arc::make_mut(arc);
        if v.capacity() < len + extra {
            let want = room(v.capacity());
            v.reserve_exact(want - len);
        }
        v
    }

    /// Make this list a copy of `src` of its own, in this list's allocation
    /// when nobody shares it: a past image keeps its copy this way, and the
    /// original, the only holder of its list, travels on to be changed
    /// without copying it again.
    pub fn copy_from(&mut self, src: &UndoLog) {
        match (self.0.as_mut().and_then(Arc::get_mut), src.0.as_deref()) {
            (Some(own), Some(from)) => own.clone_from(from),
            (Some(own), None) => own.clear(),
            (None, _) => *self = UndoLog::from(src.to_vec()),
        }
    }

    pub fn push(&mut self, rec: UndoRec) {
        self.records_mut(1).push(rec);
    }

    /// Keep the records `keep` picks.
    pub fn retain(&mut self, keep: impl FnMut(&UndoRec) -> bool) {
        if !self.is_empty() {
            self.records_mut(0).retain(keep);
        }
    }

    /// Drop the `n` oldest records.
    pub fn drop_oldest(&mut self, n: usize) {
        if n > 0 {
            self.records_mut(0).drain(..n);
        }
    }
}

impl Deref for UndoLog {
    type Target = [UndoRec];
    fn deref(&self) -> &[UndoRec] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl<'a> IntoIterator for &'a UndoLog {
    type Item = &'a UndoRec;
    type IntoIter = std::slice::Iter<'a, UndoRec>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<Vec<UndoRec>> for UndoLog {
    fn from(records: Vec<UndoRec>) -> UndoLog {
        UndoLog((!records.is_empty()).then(|| Arc::new(records)))
    }
}

impl FromIterator<UndoRec> for UndoLog {
    fn from_iter<I: IntoIterator<Item = UndoRec>>(iter: I) -> UndoLog {
        UndoLog::from(iter.into_iter().collect::<Vec<_>>())
    }
}

/// Equal when the records are, however they are held.
impl PartialEq for UndoLog {
    fn eq(&self, other: &UndoLog) -> bool {
        **self == **other
    }
}

impl Eq for UndoLog {}
