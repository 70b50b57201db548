//! A block image: its body, ITL and undo, as the buffer cache, the store
//! and the wire carry it, and the changes a session makes to it (each
//! recording its undo).

use std::sync::Arc;

use super::parts::{Body, Itl, LeafEntry, Piece, Row, UndoLog, UndoOp};
use crate::types::{BlockAddr, Rowid, Scn, Xid};

/// A block image: what the buffer cache, the store and the wire carry.
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    pub addr: BlockAddr,
    /// SCN of the last change.
    pub scn: Scn,
    /// Shared, copy on write, between the images of one block version: a
    /// buffer, its past image, the store's copy, a CR copy nothing had to be
    /// rolled back in, what is shipped. Changed only through
    /// [`Block::body_mut`], which copies it first if another image shares it.
    pub body: Arc<Body>,
    pub itl: Vec<Itl>,
    /// Oldest first.
    pub undo: UndoLog,
    /// Highest commit SCN whose undo was trimmed: reads older than this cannot be built.
    pub trimmed_scn: Scn,
}

impl Clone for Block {
    fn clone(&self) -> Block {
        Block {
            addr: self.addr,
            scn: self.scn,
            body: Arc::clone(&self.body),
            itl: self.itl.clone(),
            undo: self.undo.clone(),
            trimmed_scn: self.trimmed_scn,
        }
    }

    /// Shares the body and copies the ITL and undo into this image's own
    /// vectors where they fit (a past image taking over an older one's
    /// allocations), rather than allocating anew. Unlike `clone`, the undo
    /// is not shared: the source keeps its list to itself, to change it
    /// in place.
    fn clone_from(&mut self, src: &Block) {
        self.addr = src.addr;
        self.scn = src.scn;
        self.body = Arc::clone(&src.body);
        self.itl.clone_from(&src.itl);
        self.undo.copy_from(&src.undo);
        self.trimmed_scn = src.trimmed_scn;
    }
}

impl Block {
    pub fn new(addr: BlockAddr, body: Body) -> Block {
        Block::with_body(addr, Arc::new(body))
    }

    /// An image of an unchanged block whose body another image holds.
    pub fn sharing(addr: BlockAddr, body: &Arc<Body>) -> Block {
        Block::with_body(addr, Arc::clone(body))
    }

    fn with_body(addr: BlockAddr, body: Arc<Body>) -> Block {
        Block {
            addr,
            scn: Scn::ZERO,
            body,
            itl: Vec::new(),
            undo: UndoLog::default(),
            trimmed_scn: Scn::ZERO,
        }
    }

    /// The body to change: this image's own, copied first if another image
    /// still shares it.
    pub fn body_mut(&mut self) -> &mut Body {
        Arc::make_mut(&mut self.body)
    }

    /// The row lock on a slot, if the slot holds a row.
    pub fn row(&self, slot: u16) -> Option<&Row> {
        match &*self.body {
            Body::Table { rows } => rows.get(slot as usize).and_then(|r| r.as_ref()),
            _ => None,
        }
    }

    /// Change a row's value under transaction `xid` (the caller checked the lock).
    pub(super) fn update_row(&mut self, slot: u16, xid: Xid, val: i64, scn: Scn) -> bool {
        let Body::Table { rows } = self.body_mut() else {
            return false;
        };
        let Some(Some(row)) = rows.get_mut(slot as usize) else {
            return false;
        };
        let before = *row;
        row.val = val;
        row.lock = xid;
        self.record(
            xid,
            UndoOp::Row {
                slot,
                before: Some(before),
            },
            scn,
        );
        true
    }

    /// Append a row; returns its slot.
    pub(super) fn insert_row(&mut self, key: u64, val: i64, xid: Xid, scn: Scn) -> Option<u16> {
        let Body::Table { rows } = self.body_mut() else {
            return None;
        };
        let slot = u16::try_from(rows.len()).ok()?;
        rows.push(Some(Row {
            key,
            val,
            lock: xid,
        }));
        self.record(xid, UndoOp::Row { slot, before: None }, scn);
        Some(slot)
    }

    /// Rows physically in the block (visible or not).
    pub fn row_slots(&self) -> usize {
        match &*self.body {
            Body::Table { rows } => rows.len(),
            _ => 0,
        }
    }

    /// Insert a leaf entry in key order.
    pub(super) fn insert_entry(&mut self, key: u64, rowid: Rowid, xid: Xid, scn: Scn) -> bool {
        let Body::Leaf { entries, .. } = self.body_mut() else {
            return false;
        };
        let pos = match search_entries(entries, key) {
            Ok(_) => return false,
            Err(p) => p,
        };
        entries.insert(
            pos,
            LeafEntry {
                key,
                rowid,
                lock: xid,
                val: 0,
            },
        );
        self.record(xid, UndoOp::EntryInsert { key }, scn);
        true
    }

    /// Change the value of the entry for `key` (an index on key and value:
    /// the key leads, so the entry keeps its place). False if there is none.
    pub(super) fn update_entry(&mut self, key: u64, val: i64, xid: Xid, scn: Scn) -> bool {
        let Body::Leaf { entries, .. } = self.body_mut() else {
            return false;
        };
        let Ok(pos) = search_entries(entries, key) else {
            return false;
        };
        let before = entries[pos];
        entries[pos].val = val;
        entries[pos].lock = xid;
        self.record(xid, UndoOp::Entry { before }, scn);
        true
    }

    /// The bitmap piece at `at` (see `Piece::at`), if this leaf holds it.
    pub fn piece(&self, at: u64) -> Option<&Piece> {
        let Body::Bitmap { pieces, .. } = &*self.body else {
            return None;
        };
        pieces
            .binary_search_by_key(&at, Piece::at)
            .ok()
            .map(|i| &pieces[i])
    }

    /// Set (`on`) or clear the bit of row `key` in the piece at `at`, under
    /// `xid`, which then holds the piece locked. False if there is no such piece.
    pub(super) fn change_piece(&mut self, at: u64, key: u64, on: bool, xid: Xid, scn: Scn) -> bool {
        let Body::Bitmap { pieces, .. } = self.body_mut() else {
            return false;
        };
        let Ok(pos) = pieces.binary_search_by_key(&at, Piece::at) else {
            return false;
        };
        let was = pieces[pos].bits.binary_search(&key).is_ok();
        let lock = pieces[pos].lock;
        pieces[pos].set(key, on);
        pieces[pos].lock = xid;
        self.record(xid, UndoOp::Bit { at, key, was, lock }, scn);
        true
    }

    /// Replace the body as one logged change (block splits), keeping the old body as undo.
    pub(super) fn replace_body(&mut self, body: Body, xid: Xid, scn: Scn) {
        let before = std::mem::replace(&mut self.body, Arc::new(body));
        // Moved out when no other image shares it, copied otherwise.
        self.record_body(xid, Arc::unwrap_or_clone(before), scn);
    }

    /// Entries in a leaf or branch (for split decisions).
    pub fn entry_count(&self) -> usize {
        match &*self.body {
            Body::Leaf { entries, .. } => entries.len(),
            Body::Branch { entries } => entries.len(),
            _ => 0,
        }
    }

    /// Index search: in a branch, the child covering `key`; in a leaf, the entry.
    /// (Bitmap indexes descend by `Piece::at` keys the same way.)
    pub fn child_for(&self, key: u64) -> Option<BlockAddr> {
        let Body::Branch { entries } = &*self.body else {
            return None;
        };
        let pos = entries.partition_point(|(k, _)| *k <= key);
        entries.get(pos.saturating_sub(1)).map(|(_, c)| *c)
    }

    /// Does this leaf cover `key` (a split may have moved it elsewhere)?
    pub fn leaf_covers(&self, key: u64) -> bool {
        match &*self.body {
            Body::Leaf { low, high, .. } => key >= *low && high.is_none_or(|h| key < h),
            _ => false,
        }
    }

    pub fn leaf_lookup(&self, key: u64) -> Option<&LeafEntry> {
        let Body::Leaf { entries, .. } = &*self.body else {
            return None;
        };
        search_entries(entries, key).ok().map(|i| &entries[i])
    }

    /// Approximate encoded size (redo size accounting, wire size before padding).
    pub fn encoded_len(&self) -> usize {
        let body = match &*self.body {
            Body::Unformatted => 0,
            Body::Table { rows } => rows.len() * 25,
            Body::Leaf { entries, .. } => entries.len() * 22,
            Body::SegHeader { used } => used.len() * 4,
            Body::Branch { entries } => entries.len() * 12,
            Body::Bitmap { pieces, .. } => pieces.iter().map(Piece::encoded_len).sum(),
        };
        32 + body + self.itl.len() * 24 + self.undo.len() * 32
    }
}

/// Where `key` is in leaf entries sorted by unique keys: exactly what
/// `binary_search_by_key` answers, found faster. Keys in a leaf are mostly
/// evenly spread, so interpolating between the first and last key lands on
/// or next to the entry (one or two cache lines instead of a binary search's
/// eight or so, each a likely miss); a gallop from the guess then bounds a
/// binary search, so an uneven leaf costs at most about twice the probes.
fn search_entries(entries: &[LeafEntry], key: u64) -> Result<usize, usize> {
    let len = entries.len();
    if len < 8 {
        return entries.binary_search_by_key(&key, |e| e.key);
    }
    let (first, last) = (entries[0].key, entries[len - 1].key);
    if key <= first {
        return if key == first { Ok(0) } else { Err(0) };
    }
    if key >= last {
        return if key == last { Ok(len - 1) } else { Err(len) };
    }
    // first < key < last, so 0 <= guess < len - 1.
    let guess = (u128::from(key - first) * (len as u128 - 1) / u128::from(last - first)) as usize;
    let g = entries[guess].key;
    if g == key {
        return Ok(guess);
    }
    let (lo, hi) = if g < key {
        // Everything before `lo` is below the key; entries[len - 1] is above it.
        let (mut lo, mut p, mut step) = (guess + 1, guess + 1, 1);
        while entries[p].key < key {
            lo = p + 1;
            p = (p + step).min(len - 1);
            step *= 2;
        }
        (lo, p)
    } else {
        // Everything after `hi` is above the key; entries[0] is below it.
        let (mut hi, mut p, mut step) = (guess - 1, guess - 1, 1);
        while entries[p].key > key {
            hi = p - 1;
            p -= step.min(p);
            step *= 2;
        }
        (p, hi)
    };
    match entries[lo..=hi].binary_search_by_key(&key, |e| e.key) {
        Ok(i) => Ok(lo + i),
        Err(i) => Err(lo + i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_search_agrees_with_binary_search() {
        let rid = Rowid {
            blk: BlockAddr(1),
            slot: 0,
        };
        // Even, clustered and uneven key spreads, every key around them.
        let spreads: Vec<Vec<u64>> = vec![
            (10..260).collect(),
            (0..50).map(|i| i * 7 + 3).collect(),
            (0..40).map(|i| i * i * i).collect(),
            (0..30).map(|i| if i < 25 { i } else { 1000 + i }).collect(),
            (0..9).map(|i| 1 << (i * 6)).collect(),
            vec![1, 2, 3],
            vec![],
        ];
        for keys in spreads {
            let entries: Vec<LeafEntry> = keys
                .iter()
                .map(|&key| LeafEntry {
                    key,
                    rowid: rid,
                    lock: Xid::NONE,
                    val: 0,
                })
                .collect();
            let max = keys.last().copied().unwrap_or(0);
            let probes = keys
                .iter()
                .flat_map(|&k| [k.saturating_sub(1), k, k + 1])
                .chain([0, max + 100, u64::MAX]);
            for key in probes {
                assert_eq!(
                    search_entries(&entries, key),
                    entries.binary_search_by_key(&key, |e| e.key),
                    "key {key} in {keys:?}"
                );
            }
        }
    }
}
