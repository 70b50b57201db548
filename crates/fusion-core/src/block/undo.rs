//! A block's undo: the records that roll its changes back, what a reader
//! knows about the transactions in its ITL, consistent-read builds
//! (`Block::build_cr`), delayed block cleanout (`Block::clean_out_known`)
//! and the trimming that keeps the history bounded.

use super::image::Block;
use super::parts::{Body, Itl, Piece, UNDO_RECORDS_MAX, UndoLog, UndoOp, UndoRec};
use super::xid_set::{FewXids, XidSet};
use std::sync::Arc;

use crate::types::{Scn, Xid};

/// What a reader knows about a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxState {
    Active,
    Committed(Scn),
    /// Owned by another instance and not known here: someone must ask the owner.
    Unknown,
}

/// Why a CR copy could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrError {
    /// These transactions' states must be looked up first.
    Unknown(Vec<Xid>),
    /// The undo needed was trimmed (ORA-01555).
    SnapshotTooOld,
}

/// A consistent-read copy and the snapshots it is valid for.
#[derive(Clone, Debug)]
pub struct CrCopy {
    pub image: Block,
    pub undo_applied: u32,
    /// Valid for snapshots in `lo..=hi`.
    pub lo: Scn,
    pub hi: Scn,
    /// Holds the reader's own uncommitted changes: usable by that transaction only.
    pub private_to: Option<Xid>,
}

impl Block {
    fn itl_state(&self, xid: Xid) -> Option<Scn> {
        self.itl
            .iter()
            .find(|e| e.xid == xid)
            .and_then(|e| e.commit)
    }

    /// Resolve a transaction's state: the block's own ITL first, then `lookup`.
    pub fn state_of(&self, xid: Xid, lookup: &impl Fn(Xid) -> TxState) -> TxState {
        match self.itl_state(xid) {
            Some(scn) => TxState::Committed(scn),
            None => lookup(xid),
        }
    }

    /// Record a commit SCN learned elsewhere (commit cleanout).
    pub fn clean_out(&mut self, xid: Xid, scn: Scn) {
        if let Some(e) = self.itl.iter_mut().find(|e| e.xid == xid) {
            e.commit = Some(scn);
        }
    }

    /// Delayed block cleanout: record every commit SCN `lookup` knows in the
    /// ITL, then trim undo that no reader can need beyond [`UNDO_RECORDS_MAX`]. Holders
    /// do this whenever they take or give up the current block, so a block that
    /// travels keeps a bounded history.
    pub fn clean_out_known(&mut self, lookup: &impl Fn(Xid) -> TxState) {
        let mut changed = false;
        for e in &mut self.itl {
            if e.commit.is_none()
                && let TxState::Committed(scn) = lookup(e.xid)
            {
                e.commit = Some(scn);
                changed = true;
            }
        }
        if changed {
            self.trim();
        }
    }

    /// Transactions with an open ITL entry whose state `lookup` cannot tell.
    pub fn unknown_txns(&self, lookup: &impl Fn(Xid) -> TxState) -> Vec<Xid> {
        self.itl
            .iter()
            .filter(|e| e.commit.is_none() && lookup(e.xid) == TxState::Unknown)
            .map(|e| e.xid)
            .collect()
    }

    /// Can a reader at `snapshot` use this current image as it is?
    pub fn visible_as_is(
        &self,
        snapshot: Scn,
        reader: Xid,
        lookup: &impl Fn(Xid) -> TxState,
    ) -> Result<bool, CrError> {
        if self.trimmed_scn > snapshot {
            return Ok(false);
        }
        let mut unknown = Vec::new();
        for e in &self.itl {
            if e.xid == reader {
                continue;
            }
            match e
                .commit
                .map(TxState::Committed)
                .unwrap_or_else(|| lookup(e.xid))
            {
                TxState::Committed(c) if c <= snapshot => {}
                TxState::Unknown => unknown.push(e.xid),
                _ => return Ok(false),
            }
        }
        if unknown.is_empty() {
            Ok(true)
        } else {
            Err(CrError::Unknown(unknown))
        }
    }

    /// Build a consistent-read copy as of `snapshot` for `reader` by rolling
    /// back, newest first, every change the reader must not see. A row is
    /// rolled back only until its newest remaining change is visible, so the
    /// reader's own changes survive. `horizon` is the SCN of the builder: no
    /// change after the build can carry a lower commit SCN.
    pub fn build_cr(
        &self,
        snapshot: Scn,
        reader: Xid,
        horizon: Scn,
        lookup: &impl Fn(Xid) -> TxState,
    ) -> Result<CrCopy, CrError> {
        // Visibility of every transaction in the ITL, resolved once.
        let mut unknown = Vec::new();
        let mut lo = self.trimmed_scn;
        let mut hi = horizon.max(snapshot);
        let mut private_to = None;
        let mut invisible = FewXids::default();
        for e in &self.itl {
            if e.xid == reader {
                private_to = Some(reader);
                continue;
            }
            match e
                .commit
                .map(TxState::Committed)
                .unwrap_or_else(|| lookup(e.xid))
            {
                TxState::Committed(c) if c <= snapshot => lo = lo.max(c),
                TxState::Committed(c) => {
                    hi = hi.min(Scn(c.0 - 1));
                    invisible.insert(e.xid);
                }
                TxState::Active => {
                    hi = hi.min(snapshot);
                    invisible.insert(e.xid);
                }
                TxState::Unknown => unknown.push(e.xid),
            }
        }
        if !unknown.is_empty() {
            return Err(CrError::Unknown(unknown));
        }
        if self.trimmed_scn > snapshot {
            return Err(CrError::SnapshotTooOld);
        }
        // Every bound above is on its own side of the snapshot, so the copy
        // is valid at least for the snapshot it was built for.
        debug_assert!(
            lo <= snapshot && snapshot <= hi,
            "{} CR copy for {snapshot} valid for {lo}..={hi}",
            self.addr
        );
        invisible.seal();
        let mut image = Block {
            addr: self.addr,
            scn: self.scn,
            body: Arc::clone(&self.body),
            itl: Vec::new(),
            undo: UndoLog::default(),
            trimmed_scn: self.trimmed_scn,
        };
        // Every change is visible (the common case): nothing to roll back.
        if invisible.is_empty() {
            return Ok(CrCopy {
                image,
                undo_applied: 0,
                lo,
                hi,
                private_to,
            });
        }
        let applied = roll_back_body(&self.undo, image.body_mut(), |x| invisible.contains(x));
        Ok(CrCopy {
            image,
            undo_applied: applied,
            lo,
            hi,
            private_to,
        })
    }

    /// Roll back every change transaction `xid` still has in this block, the
    /// newest first, from the block's own undo (as [`Block::build_cr`] does
    /// for a reader), at `scn`: instance recovery's rollback of a dead
    /// instance's uncommitted transaction. Its undo records and ITL entry go
    /// with it, so no reader ever asks about it here again. Returns the
    /// undo records applied.
    pub fn roll_back(&mut self, xid: Xid, scn: Scn) -> u32 {
        if !self.itl.iter().any(|e| e.xid == xid) {
            return 0;
        }
        // `body_mut` would borrow all of `self`, and the undo is read meanwhile.
        let applied = roll_back_body(&self.undo, Arc::make_mut(&mut self.body), |x| x == xid);
        self.undo.retain(|u| u.xid != xid);
        self.itl.retain(|e| e.xid != xid);
        self.scn = self.scn.max(scn);
        applied
    }

    fn ensure_itl(&mut self, xid: Xid) {
        if !self.itl.iter().any(|e| e.xid == xid) {
            self.itl.push(Itl { xid, commit: None });
        }
    }

    /// Drop the oldest undo of committed transactions beyond [`UNDO_RECORDS_MAX`],
    /// and ITL entries nothing refers to any more.
    fn trim(&mut self) {
        // Count first, then shift the rest down once.
        let mut drop = 0;
        while self.undo.len() - drop > UNDO_RECORDS_MAX {
            let Some(c) = self.itl_state(self.undo[drop].xid) else {
                break;
            };
            self.trimmed_scn = self.trimmed_scn.max(c);
            drop += 1;
        }
        // An empty drain still costs its drop: most records trim nothing.
        if drop > 0 {
            self.undo.drop_oldest(drop);
        }
        if self.itl.len() > 16 {
            self.trim_itl();
        }
    }

    /// Drop ITL entries of committed transactions that neither the undo nor a
    /// lock in the body refers to any more.
    fn trim_itl(&mut self) {
        if self.itl.len() > 64 {
            return self.trim_itl_large();
        }
        // The ITL lists its transactions in the order of their first undo
        // records (both are appended by the same change), so one walk of the
        // two side by side finds most references: an entry whose xid starts
        // the next run of undo records is referenced. The committed entries
        // the walk leaves (mostly those only a row lock keeps) are checked
        // in full below, so any order gives the same result; hashing every
        // entry cost more than this.
        let undo: &[UndoRec] = &self.undo;
        let mut left = 0u64;
        let mut next = 0;
        for (i, e) in self.itl.iter().enumerate() {
            let start = next;
            while let Some(u) = undo.get(next)
                && u.xid == e.xid
            {
                next += 1;
            }
            if next == start && e.commit.is_some() {
                left |= 1 << i;
            }
        }
        if left == 0 {
            return;
        }
        // A lock in the body or any undo record keeps an entry.
        let mut doomed = 0u64;
        while left != 0 {
            let i = left.trailing_zeros() as usize;
            left &= left - 1;
            let xid = self.itl[i].xid;
            let locked = match &*self.body {
                Body::Table { rows } => rows.iter().flatten().any(|r| r.lock == xid),
                Body::Leaf { entries, .. } => entries.iter().any(|e| e.lock == xid),
                Body::Bitmap { pieces, .. } => pieces.iter().any(|p| p.lock == xid),
                _ => false,
            };
            if !locked && !undo.iter().any(|u| u.xid == xid) {
                doomed |= 1 << i;
            }
        }
        // Remove them one by one, the last first.
        while doomed != 0 {
            let i = 63 - doomed.leading_zeros() as usize;
            doomed &= !(1 << i);
            let commit = self.itl.remove(i).commit;
            let commit = commit.expect("only committed ITL entries are marked doomed");
            self.trimmed_scn = self.trimmed_scn.max(commit);
        }
    }

    /// [`Block::trim_itl`] for an ITL too long for its position bits.
    fn trim_itl_large(&mut self) {
        // Only committed entries can go: nothing to collect if there are none.
        if self.itl.iter().all(|e| e.commit.is_none()) {
            return;
        }
        // Transactions the undo or a lock in the body still refers to,
        // collected once (not scanned again for every ITL entry).
        let mut referenced = XidSet::<128>::default();
        for u in &self.undo {
            referenced.insert(u.xid);
        }
        match &*self.body {
            Body::Table { rows } => rows
                .iter()
                .flatten()
                .for_each(|r| referenced.insert(r.lock)),
            Body::Leaf { entries, .. } => entries.iter().for_each(|e| referenced.insert(e.lock)),
            Body::Bitmap { pieces, .. } => pieces.iter().for_each(|p| referenced.insert(p.lock)),
            _ => {}
        }
        referenced.seal();
        let mut trimmed = self.trimmed_scn;
        self.itl.retain(|e| match e.commit {
            Some(commit) if !referenced.contains(e.xid) => {
                trimmed = trimmed.max(commit);
                false
            }
            _ => true,
        });
        self.trimmed_scn = trimmed;
    }

    /// Log a change `xid` made at `scn`: its undo record and ITL entry, then
    /// trim what no reader can need any more.
    pub(super) fn record(&mut self, xid: Xid, op: UndoOp, scn: Scn) {
        self.ensure_itl(xid);
        self.undo.push(UndoRec { xid, op });
        self.scn = self.scn.max(scn);
        self.trim();
    }

    /// [`Block::record`] of a change that replaced the whole body: `before`
    /// is the body it restores.
    pub(super) fn record_body(&mut self, xid: Xid, before: Body, scn: Scn) {
        self.ensure_itl(xid);
        self.undo.push_body(xid, before);
        self.scn = self.scn.max(scn);
        self.trim();
    }
}

/// Roll `body` back through `undo` (oldest first), newest first, undoing
/// the changes of the transactions `hidden` picks. A row, entry or piece is
/// rolled back only until its newest remaining change is one `hidden` does
/// not pick, so the other transactions' changes survive. Returns the records
/// applied. Consistent reads (`Block::build_cr`) and transaction rollback
/// (`Block::roll_back`) both undo this way.
fn roll_back_body(undo: &UndoLog, body: &mut Body, hidden: impl Fn(Xid) -> bool) -> u32 {
    let mut applied = 0;
    // Rows (by slot) and entries (by key) whose newest change is visible.
    let mut settled_slots = SlotSet::default();
    let mut settled_keys: Vec<u64> = Vec::new();
    let mut settled_pieces: Vec<u64> = Vec::new();
    for rec in undo.iter().rev() {
        let hidden = hidden(rec.xid);
        match &rec.op {
            UndoOp::Row { slot, before } => {
                if settled_slots.contains(*slot) {
                    continue;
                }
                if !hidden {
                    settled_slots.insert(*slot);
                    continue;
                }
                if let Body::Table { rows } = &mut *body
                    && let Some(r) = rows.get_mut(*slot as usize)
                {
                    *r = *before;
                    applied += 1;
                }
            }
            UndoOp::EntryInsert { key } => {
                if settled_keys.contains(key) {
                    continue;
                }
                if !hidden {
                    settled_keys.push(*key);
                    continue;
                }
                if let Body::Leaf { entries, .. } = &mut *body
                    && let Ok(pos) = entries.binary_search_by_key(key, |e| e.key)
                {
                    entries.remove(pos);
                    applied += 1;
                }
            }
            UndoOp::Body(before) => {
                if hidden {
                    *body = undo.body(*before).clone();
                    applied += 1;
                    settled_slots.clear();
                    settled_keys.clear();
                    settled_pieces.clear();
                }
            }
            UndoOp::Entry { before } => {
                if settled_keys.contains(&before.key) {
                    continue;
                }
                if !hidden {
                    settled_keys.push(before.key);
                    continue;
                }
                if let Body::Leaf { entries, .. } = &mut *body
                    && let Ok(pos) = entries.binary_search_by_key(&before.key, |e| e.key)
                {
                    entries[pos] = *before;
                    applied += 1;
                }
            }
            // A piece's lock serializes the transactions changing it,
            // so once one change is visible every older one is too.
            UndoOp::Bit { at, key, was, lock } => {
                if settled_pieces.contains(at) {
                    continue;
                }
                if !hidden {
                    settled_pieces.push(*at);
                    continue;
                }
                if let Body::Bitmap { pieces, .. } = &mut *body
                    && let Ok(pos) = pieces.binary_search_by_key(at, Piece::at)
                {
                    pieces[pos].set(*key, *was);
                    pieces[pos].lock = *lock;
                    applied += 1;
                }
            }
        }
    }
    applied
}

/// Table slots as a bit set: inline for the first 256, spilling beyond.
#[derive(Default)]
struct SlotSet {
    low: [u64; 4],
    high: Vec<u64>,
}

impl SlotSet {
    fn word(&self, slot: u16) -> Option<&u64> {
        let w = usize::from(slot / 64);
        if w < 4 {
            self.low.get(w)
        } else {
            self.high.get(w - 4)
        }
    }

    fn contains(&self, slot: u16) -> bool {
        self.word(slot).is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }

    fn insert(&mut self, slot: u16) {
        let w = usize::from(slot / 64);
        let word = if w < 4 {
            &mut self.low[w]
        } else {
            if self.high.len() <= w - 4 {
                self.high.resize(w - 3, 0);
            }
            &mut self.high[w - 4]
        };
        *word |= 1 << (slot % 64);
    }

    fn clear(&mut self) {
        self.low = [0; 4];
        self.high.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::parts::{LeafEntry, Row};
    use crate::types::{BlockAddr, InstId, Rowid};

    fn table(rows: &[(u64, i64)]) -> Block {
        Block::new(
            BlockAddr(7),
            Body::Table {
                rows: rows
                    .iter()
                    .map(|&(key, val)| {
                        Some(Row {
                            key,
                            val,
                            lock: Xid::NONE,
                        })
                    })
                    .collect(),
            },
        )
    }

    fn x(seq: u64) -> Xid {
        Xid::new(InstId(0), seq)
    }

    #[test]
    fn cr_rolls_back_uncommitted_and_later_commits() {
        let mut b = table(&[(1, 10), (2, 20)]);
        b.update_row(0, x(1), 11, Scn(5));
        b.clean_out(x(1), Scn(6));
        b.update_row(1, x(2), 21, Scn(7)); // still active
        let lookup = |xid: Xid| {
            if xid == x(2) {
                TxState::Active
            } else {
                TxState::Unknown
            }
        };
        let at5 = b.build_cr(Scn(5), Xid::NONE, Scn(100), &lookup).unwrap();
        assert_eq!(at5.image.row(0).unwrap().val, 10);
        assert_eq!(at5.image.row(1).unwrap().val, 20);
        let at6 = b.build_cr(Scn(6), Xid::NONE, Scn(100), &lookup).unwrap();
        assert_eq!(at6.image.row(0).unwrap().val, 11);
        assert_eq!(at6.image.row(1).unwrap().val, 20);
        assert_eq!(
            at6.hi,
            Scn(6),
            "an active transaction bounds the copy to its snapshot"
        );
        assert_eq!(at6.lo, Scn(6));
    }

    #[test]
    fn reader_sees_its_own_changes_over_invisible_older_ones() {
        let mut b = table(&[(1, 10)]);
        b.update_row(0, x(1), 11, Scn(5));
        b.clean_out(x(1), Scn(9)); // committed after the reader's snapshot
        b.update_row(0, x(2), 12, Scn(10)); // the reader's own change
        let copy = b
            .build_cr(Scn(8), x(2), Scn(100), &|_| TxState::Unknown)
            .unwrap();
        assert_eq!(copy.image.row(0).unwrap().val, 12);
        assert_eq!(copy.private_to, Some(x(2)));
    }

    #[test]
    fn unknown_owner_and_trimmed_undo_are_reported() {
        let mut b = table(&[(1, 10)]);
        let remote = Xid::new(InstId(1), 3);
        b.update_row(0, remote, 11, Scn(5));
        assert_eq!(
            b.build_cr(Scn(4), Xid::NONE, Scn(10), &|_| TxState::Unknown)
                .unwrap_err(),
            CrError::Unknown(vec![remote])
        );
        let mut b = table(&[(1, 0)]);
        for i in 1..=(UNDO_RECORDS_MAX as u64 + 5) {
            b.update_row(0, x(i), i as i64, Scn(i * 10));
            b.clean_out(x(i), Scn(i * 10 + 1));
        }
        assert!(b.trimmed_scn > Scn(0));
        assert_eq!(
            b.build_cr(Scn(3), Xid::NONE, Scn(1000), &|_| TxState::Unknown)
                .unwrap_err(),
            CrError::SnapshotTooOld
        );
        let latest = b
            .build_cr(Scn(10_000), Xid::NONE, Scn(20_000), &|_| TxState::Unknown)
            .unwrap();
        assert_eq!(
            latest.image.row(0).unwrap().val,
            UNDO_RECORDS_MAX as i64 + 5
        );
    }

    #[test]
    fn an_entry_value_change_rolls_back() {
        let rid = Rowid {
            blk: BlockAddr(1),
            slot: 0,
        };
        let mut leaf = Block::new(
            BlockAddr(3),
            Body::Leaf {
                entries: vec![LeafEntry {
                    key: 4,
                    rowid: rid,
                    lock: Xid::NONE,
                    val: 10,
                }],
                next: None,
                low: 0,
                high: None,
            },
        );
        assert!(leaf.update_entry(4, 11, x(1), Scn(5)));
        leaf.clean_out(x(1), Scn(6));
        assert!(leaf.update_entry(4, 12, x(2), Scn(7))); // still active
        assert!(!leaf.update_entry(5, 1, x(2), Scn(7)), "no entry for key 5");
        let lookup = |xid: Xid| {
            if xid == x(2) {
                TxState::Active
            } else {
                TxState::Unknown
            }
        };
        let at = |scn| {
            leaf.build_cr(scn, Xid::NONE, Scn(100), &lookup)
                .unwrap()
                .image
        };
        assert_eq!(at(Scn(5)).leaf_lookup(4).map(|e| e.val), Some(10));
        assert_eq!(at(Scn(6)).leaf_lookup(4).map(|e| e.val), Some(11));
        assert_eq!(
            leaf.leaf_lookup(4).map(|e| (e.val, e.lock)),
            Some((12, x(2)))
        );
    }

    impl Block {
        fn body_locks(&self) -> Vec<Xid> {
            match &*self.body {
                Body::Table { rows } => rows.iter().flatten().map(|r| r.lock).collect(),
                _ => Vec::new(),
            }
        }
    }

    #[test]
    fn itl_trim_keeps_open_and_referenced_entries() {
        // A table block whose ITL, undo and row locks overlap in many ways.
        for seed in 0..200u64 {
            let mut r = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = |m: u64| {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                r % m
            };
            let n_itl = 17 + next(100) as usize;
            let mut b = table(&[(1, 1); 20]);
            b.itl = (0..n_itl)
                .map(|i| Itl {
                    // Repeated xids and `Xid::NONE` too.
                    xid: if next(10) == 0 {
                        Xid::NONE
                    } else {
                        x(1 + next(150))
                    },
                    commit: (next(4) != 0).then_some(Scn(i as u64)),
                })
                .collect();
            // Up to 90 undo records: sometimes more transactions than the set holds inline.
            b.undo = (0..next(90))
                .map(|_| UndoRec {
                    xid: x(1 + next(150)),
                    op: UndoOp::EntryInsert { key: 0 },
                })
                .collect();
            if let Body::Table { rows } = b.body_mut() {
                for row in rows.iter_mut().flatten() {
                    row.lock = if next(3) == 0 {
                        Xid::NONE
                    } else {
                        x(1 + next(150))
                    };
                }
            }
            // The plain definition: keep open entries and those referenced.
            let mut plain = b.clone();
            let referenced: Vec<Xid> = plain
                .undo
                .iter()
                .map(|u| u.xid)
                .chain(plain.body_locks())
                .collect();
            let mut trimmed = plain.trimmed_scn;
            plain.itl.retain(|e| {
                let keep = e.commit.is_none() || referenced.contains(&e.xid);
                if !keep {
                    trimmed = trimmed.max(e.commit.unwrap_or(Scn(0)));
                }
                keep
            });
            plain.trimmed_scn = trimmed;
            b.trim_itl();
            assert_eq!(b, plain, "seed {seed}");
        }
    }

    #[test]
    fn inserts_and_splits_roll_back() {
        let mut leaf = Block::new(
            BlockAddr(3),
            Body::Leaf {
                entries: vec![],
                next: None,
                low: 0,
                high: None,
            },
        );
        let rid = Rowid {
            blk: BlockAddr(1),
            slot: 0,
        };
        leaf.insert_entry(5, rid, x(1), Scn(2));
        leaf.clean_out(x(1), Scn(3));
        leaf.insert_entry(9, rid, x(2), Scn(4));
        leaf.replace_body(
            Body::Leaf {
                entries: vec![],
                next: Some(BlockAddr(4)),
                low: 0,
                high: None,
            },
            x(3),
            Scn(5),
        );
        leaf.clean_out(x(3), Scn(6));
        let before_split = leaf.build_cr(Scn(5), Xid::NONE, Scn(10), &|x2| {
            if x2 == x(2) {
                TxState::Committed(Scn(4))
            } else {
                TxState::Unknown
            }
        });
        let img = before_split.unwrap().image;
        assert_eq!(img.entry_count(), 2);
        let old = leaf.build_cr(Scn(3), Xid::NONE, Scn(10), &|x2| {
            if x2 == x(2) {
                TxState::Committed(Scn(4))
            } else {
                TxState::Unknown
            }
        });
        assert_eq!(old.unwrap().image.leaf_lookup(9), None);
    }
}
