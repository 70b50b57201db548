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

/// How to undo one change. Plain data (`Copy`): a list of records is
/// copied as one block of memory; the one record that holds a whole body
/// names it in its list's store ([`UndoLog::body`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UndoOp {
    /// Restore a table slot (`None`: the slot did not exist, it was an insert).
    Row { slot: u16, before: Option<Row> },
    /// Remove the leaf entry with this key (it was inserted).
    EntryInsert { key: u64 },
    /// Restore the whole body (index block splits): the body its list keeps.
    Body(BodyRef),
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

/// Where an [`UndoOp::Body`] record's body is: its place in the store of
/// the [`UndoLog`] that holds the record (meaningless outside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyRef(u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
pub struct UndoLog(Option<Arc<UndoList>>);

/// The records, and the bodies the [`UndoOp::Body`] records restore (an
/// index split's, rare): the records stay plain data, copied in one go.
#[derive(Clone, Debug, Default)]
struct UndoList {
    records: Vec<UndoRec>,
    /// A boxed slice, not a vector: one word less in every list, and a
    /// body is added rarely (rebuilt then).
    bodies: Box<[Body]>,
}

impl UndoList {
    /// Records were dropped: drop the bodies no record names any more,
    /// and name the rest where they move to. Each body has one record
    /// (`push_body`), and records keep their order, so the kept bodies
    /// keep theirs.
    fn collect_bodies(&mut self) {
        if self.bodies.is_empty() {
            return;
        }
        let mut old: Vec<Option<Body>> = std::mem::take(&mut self.bodies)
            .into_vec()
            .into_iter()
            .map(Some)
            .collect();
        let mut kept = Vec::new();
        let mut next = 0u32;
        for u in &mut self.records {
            if let UndoOp::Body(BodyRef(at)) = &mut u.op {
                let body = old[*at as usize].take();
                kept.push(body.expect("each body of a list has one record"));
                *at = next;
                next += 1;
            }
        }
        self.bodies = kept.into_boxed_slice();
    }
}

impl UndoLog {
    /// The records to change: this image's own, copied first if another
    /// image still shares them. A list grows by doubling up to one record
    /// over [`UNDO_RECORDS_MAX`] (a change's record is pushed before the
    /// oldest is trimmed) and no further, so a hot block's list does not
    /// keep twice the room it can ever use.
    fn list_mut(&mut self, extra: usize) -> &mut UndoList {
        let arc = self.0.get_or_insert_with(Default::default);
        let len = arc.records.len();
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
            let mut records = Vec::with_capacity(room(len));
            records.extend_from_slice(&arc.records);
            let bodies = arc.bodies.clone();
            *arc = Arc::new(UndoList { records, bodies });
        }
        // Its own by now: `make_mut` copies nothing.
        let list = Arc::make_mut(arc);
        let v = &mut list.records;
        if v.capacity() < len + extra {
            let want = room(v.capacity());
            v.reserve_exact(want - len);
        }
        list
    }

    /// Make this list a copy of `src` of its own, in this list's allocation
    /// when nobody shares it: a past image keeps its copy this way, and the
    /// original, the only holder of its list, travels on to be changed
    /// without copying it again.
    pub fn copy_from(&mut self, src: &UndoLog) {
        match (self.0.as_mut().and_then(Arc::get_mut), src.0.as_deref()) {
            (Some(own), Some(from)) => {
                own.records.clone_from(&from.records);
                own.bodies.clone_from(&from.bodies);
            }
            (Some(own), None) => {
                own.records.clear();
                own.bodies = Box::default();
            }
            (None, None) => *self = UndoLog::default(),
            (None, Some(from)) => *self = UndoLog(Some(Arc::new(from.clone()))),
        }
    }

    /// Append a record (one that restores a whole body goes in with
    /// [`UndoLog::push_body`]).
    pub fn push(&mut self, rec: UndoRec) {
        assert!(
            !matches!(rec.op, UndoOp::Body(_)),
            "an undo record of a whole body is pushed with its body"
        );
        self.list_mut(1).records.push(rec);
    }

    /// Append a record of `xid` that restores `body`.
    pub fn push_body(&mut self, xid: Xid, body: Body) {
        let list = self.list_mut(1);
        // A list holds at most `UNDO_RECORDS_MAX + 1` records between
        // trims, and one decoded from a peer fits a 64 MiB frame: far
        // fewer bodies than a `u32` counts.
        let at = u32::try_from(list.bodies.len()).expect("fewer than 2^32 bodies in one undo list");
        let mut bodies = std::mem::take(&mut list.bodies).into_vec();
        bodies.push(body);
        list.bodies = bodies.into_boxed_slice();
        list.records.push(UndoRec {
            xid,
            op: UndoOp::Body(BodyRef(at)),
        });
    }

    /// The body an [`UndoOp::Body`] record of this list restores.
    pub fn body(&self, r: BodyRef) -> &Body {
        match self.0.as_deref().and_then(|l| l.bodies.get(r.0 as usize)) {
            Some(b) => b,
            None => panic!("undo body {} is not in its list", r.0),
        }
    }

    /// Keep the records `keep` picks.
    pub fn retain(&mut self, keep: impl FnMut(&UndoRec) -> bool) {
        if !self.is_empty() {
            let list = self.list_mut(0);
            list.records.retain(keep);
            list.collect_bodies();
        }
    }

    /// Drop the `n` oldest records.
    pub fn drop_oldest(&mut self, n: usize) {
        if n > 0 {
            let list = self.list_mut(0);
            list.records.drain(..n);
            list.collect_bodies();
        }
    }
}

impl Deref for UndoLog {
    type Target = [UndoRec];
    fn deref(&self) -> &[UndoRec] {
        self.0.as_deref().map_or(&[], |l| l.records.as_slice())
    }
}

impl<'a> IntoIterator for &'a UndoLog {
    type Item = &'a UndoRec;
    type IntoIter = std::slice::Iter<'a, UndoRec>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Records that restore no whole body (those go in with
/// [`UndoLog::push_body`]: a `BodyRef` names a body of its own list only).
impl From<Vec<UndoRec>> for UndoLog {
    fn from(records: Vec<UndoRec>) -> UndoLog {
        assert!(
            records.iter().all(|u| !matches!(u.op, UndoOp::Body(_))),
            "an undo record of a whole body is pushed with its body"
        );
        UndoLog((!records.is_empty()).then(|| {
            Arc::new(UndoList {
                records,
                bodies: Box::default(),
            })
        }))
    }
}

impl FromIterator<UndoRec> for UndoLog {
    fn from_iter<I: IntoIterator<Item = UndoRec>>(iter: I) -> UndoLog {
        UndoLog::from(iter.into_iter().collect::<Vec<_>>())
    }
}

/// Equal when the records are, however they are held: a record that
/// restores a body compares the body.
impl PartialEq for UndoLog {
    fn eq(&self, other: &UndoLog) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| match (a.op, b.op) {
                    (UndoOp::Body(x), UndoOp::Body(y)) => {
                        a.xid == b.xid && self.body(x) == other.body(y)
                    }
                    _ => a == b,
                })
    }
}

impl Eq for UndoLog {}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(xid: u64, key: u64) -> UndoRec {
        UndoRec {
            xid: Xid(xid),
            op: UndoOp::EntryInsert { key },
        }
    }

    fn body(used: u32) -> Body {
        Body::SegHeader { used: vec![used] }
    }

    /// The bodies a list's records restore, oldest first.
    fn bodies(log: &UndoLog) -> Vec<(Xid, Body)> {
        log.iter()
            .filter_map(|u| match u.op {
                UndoOp::Body(r) => Some((u.xid, log.body(r).clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn body_records_keep_their_bodies_through_drops_and_copies() {
        let mut log = UndoLog::default();
        log.push(rec(1, 10));
        log.push_body(Xid(2), body(2));
        log.push(rec(3, 30));
        log.push_body(Xid(4), body(4));
        log.push_body(Xid(5), body(5));
        assert_eq!(
            bodies(&log),
            vec![(Xid(2), body(2)), (Xid(4), body(4)), (Xid(5), body(5))]
        );
        // A copy shared, then changed: the original keeps its bodies.
        let shared = log.clone();
        log.drop_oldest(2);
        assert_eq!(log.len(), 3);
        assert_eq!(bodies(&log), vec![(Xid(4), body(4)), (Xid(5), body(5))]);
        assert_eq!(bodies(&shared).len(), 3);
        log.retain(|u| u.xid != Xid(4));
        assert_eq!(bodies(&log), vec![(Xid(5), body(5))]);
        // A past image's copy, into a list of its own with other bodies.
        let mut copy = UndoLog::default();
        copy.push_body(Xid(9), body(9));
        copy.copy_from(&shared);
        assert_eq!(copy, shared);
        assert_ne!(copy, log);
        // Equal records naming different bodies are not equal.
        let mut a = UndoLog::default();
        a.push_body(Xid(1), body(1));
        let mut b = UndoLog::default();
        b.push_body(Xid(1), body(2));
        assert_ne!(a, b);
        b.drop_oldest(1);
        b.push_body(Xid(1), body(1));
        assert_eq!(a, b);
    }

    #[test]
    #[should_panic(expected = "pushed with its body")]
    fn a_body_record_is_not_pushed_without_its_body() {
        let mut a = UndoLog::default();
        a.push_body(Xid(1), body(1));
        let mut b = UndoLog::default();
        b.push(a[0]);
    }
}
