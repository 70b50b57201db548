//! Data blocks: real rows and index entries, the interested transaction list
//! (ITL) and the undo that lets any holder build a consistent-read copy.
//!
//! Undo records travel inside the block they describe. Oracle keeps them in
//! undo blocks that are themselves fetched through the global cache; keeping
//! them here lets a CR copy be built by really rolling changes back without
//! a second resource type, at the price of a bounded undo history per block
//! (older history is trimmed, and a read that needs it gets "snapshot too old").

use crate::types::{BlockAddr, Rowid, Scn, Xid};

/// Undo records a block keeps before the oldest committed ones are trimmed.
pub const UNDO_KEEP: usize = 32;

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

pub use crate::bitmap::Piece;

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

/// A block image: what the buffer cache, the store and the wire carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub addr: BlockAddr,
    /// SCN of the last change.
    pub scn: Scn,
    pub body: Body,
    pub itl: Vec<Itl>,
    /// Oldest first.
    pub undo: Vec<UndoRec>,
    /// Highest commit SCN whose undo was trimmed: reads older than this cannot be built.
    pub trimmed_scn: Scn,
}

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
    pub fn new(addr: BlockAddr, body: Body) -> Block {
        Block {
            addr,
            scn: 0,
            body,
            itl: Vec::new(),
            undo: Vec::new(),
            trimmed_scn: 0,
        }
    }

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
    /// ITL, then trim undo that no reader can need beyond [`UNDO_KEEP`]. Holders
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
                    hi = hi.min(c - 1);
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
        invisible.seal();
        let mut image = Block {
            addr: self.addr,
            scn: self.scn,
            body: self.body.clone(),
            itl: Vec::new(),
            undo: Vec::new(),
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
        let mut applied = 0;
        // Rows (by slot) and entries (by key) whose newest change is visible.
        let mut settled_slots = SlotSet::default();
        let mut settled_keys: Vec<u64> = Vec::new();
        let mut settled_pieces: Vec<u64> = Vec::new();
        for rec in self.undo.iter().rev() {
            let hidden = invisible.contains(rec.xid);
            match &rec.op {
                UndoOp::Row { slot, before } => {
                    if settled_slots.contains(*slot) {
                        continue;
                    }
                    if !hidden {
                        settled_slots.insert(*slot);
                        continue;
                    }
                    if let Body::Table { rows } = &mut image.body
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
                    if let Body::Leaf { entries, .. } = &mut image.body
                        && let Ok(pos) = entries.binary_search_by_key(key, |e| e.key)
                    {
                        entries.remove(pos);
                        applied += 1;
                    }
                }
                UndoOp::Body(before) => {
                    if hidden {
                        image.body = (**before).clone();
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
                    if let Body::Leaf { entries, .. } = &mut image.body
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
                    if let Body::Bitmap { pieces, .. } = &mut image.body
                        && let Ok(pos) = pieces.binary_search_by_key(at, Piece::at)
                    {
                        pieces[pos].set(*key, *was);
                        pieces[pos].lock = *lock;
                        applied += 1;
                    }
                }
            }
        }
        Ok(CrCopy {
            image,
            undo_applied: applied,
            lo,
            hi,
            private_to,
        })
    }

    fn ensure_itl(&mut self, xid: Xid) {
        if !self.itl.iter().any(|e| e.xid == xid) {
            self.itl.push(Itl { xid, commit: None });
        }
    }

    /// Drop the oldest undo of committed transactions beyond [`UNDO_KEEP`],
    /// and ITL entries nothing refers to any more.
    fn trim(&mut self) {
        // Count first, then shift the rest down once.
        let mut drop = 0;
        while self.undo.len() - drop > UNDO_KEEP {
            let Some(c) = self.itl_state(self.undo[drop].xid) else {
                break;
            };
            self.trimmed_scn = self.trimmed_scn.max(c);
            drop += 1;
        }
        // An empty drain still costs its drop: most records trim nothing.
        if drop > 0 {
            self.undo.drain(..drop);
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
        // Only committed entries can go, so only they are indexed (by
        // position); each reference marks the entry it keeps as a bit.
        let mut committed = 0u64;
        let mut index = XidIndex::default();
        for (i, e) in self.itl.iter().enumerate() {
            if e.commit.is_some() {
                committed |= 1 << i;
                // A repeated xid (never made here) takes the general path.
                if !index.insert(e.xid, i as u8) {
                    return self.trim_itl_large();
                }
            }
        }
        if committed == 0 {
            return;
        }
        let mut marked = 0u64;
        // Consecutive undo records mostly share a transaction: look each run up once.
        let mut last = None;
        for u in &self.undo {
            if last != Some(u.xid) {
                last = Some(u.xid);
                marked |= index.bit(u.xid);
            }
        }
        if marked == committed {
            return;
        }
        // Stop as soon as every committed entry is kept.
        let mut mark = |lock: Xid| {
            marked |= index.bit(lock);
            marked != committed
        };
        let all_kept = match &self.body {
            Body::Table { rows } => !rows.iter().flatten().all(|r| mark(r.lock)),
            Body::Leaf { entries, .. } => !entries.iter().all(|e| mark(e.lock)),
            Body::Bitmap { pieces, .. } => !pieces.iter().all(|p| mark(p.lock)),
            _ => false,
        };
        if all_kept {
            return;
        }
        // Usually one entry or none goes: remove them one by one, the last first.
        let mut doomed = committed & !marked;
        while doomed != 0 {
            let i = 63 - doomed.leading_zeros() as usize;
            doomed &= !(1 << i);
            let e = self.itl.remove(i);
            self.trimmed_scn = self.trimmed_scn.max(e.commit.unwrap_or(0));
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
        match &self.body {
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
        self.itl.retain(|e| {
            let keep = e.commit.is_none() || referenced.contains(e.xid);
            if !keep {
                trimmed = trimmed.max(e.commit.unwrap_or(0));
            }
            keep
        });
        self.trimmed_scn = trimmed;
    }

    fn record(&mut self, xid: Xid, op: UndoOp, scn: Scn) {
        self.ensure_itl(xid);
        self.undo.push(UndoRec { xid, op });
        self.scn = self.scn.max(scn);
        self.trim();
    }

    /// The row lock on a slot, if the slot holds a row.
    pub fn row(&self, slot: u16) -> Option<&Row> {
        match &self.body {
            Body::Table { rows } => rows.get(slot as usize).and_then(|r| r.as_ref()),
            _ => None,
        }
    }

    /// Change a row's value under transaction `xid` (the caller checked the lock).
    pub fn update_row(&mut self, slot: u16, xid: Xid, val: i64, scn: Scn) -> bool {
        let Body::Table { rows } = &mut self.body else {
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
    pub fn insert_row(&mut self, key: u64, val: i64, xid: Xid, scn: Scn) -> Option<u16> {
        let Body::Table { rows } = &mut self.body else {
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
        match &self.body {
            Body::Table { rows } => rows.len(),
            _ => 0,
        }
    }

    /// Insert a leaf entry in key order.
    pub fn insert_entry(&mut self, key: u64, rowid: Rowid, xid: Xid, scn: Scn) -> bool {
        let Body::Leaf { entries, .. } = &mut self.body else {
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
    pub fn update_entry(&mut self, key: u64, val: i64, xid: Xid, scn: Scn) -> bool {
        let Body::Leaf { entries, .. } = &mut self.body else {
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
        let Body::Bitmap { pieces, .. } = &self.body else {
            return None;
        };
        pieces
            .binary_search_by_key(&at, Piece::at)
            .ok()
            .map(|i| &pieces[i])
    }

    /// Set (`on`) or clear the bit of row `key` in the piece at `at`, under
    /// `xid`, which then holds the piece locked. False if there is no such piece.
    pub fn change_piece(&mut self, at: u64, key: u64, on: bool, xid: Xid, scn: Scn) -> bool {
        let Body::Bitmap { pieces, .. } = &mut self.body else {
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
    pub fn replace_body(&mut self, body: Body, xid: Xid, scn: Scn) {
        let before = std::mem::replace(&mut self.body, body);
        self.record(xid, UndoOp::Body(Box::new(before)), scn);
    }

    /// Entries in a leaf or branch (for split decisions).
    pub fn entry_count(&self) -> usize {
        match &self.body {
            Body::Leaf { entries, .. } => entries.len(),
            Body::Branch { entries } => entries.len(),
            _ => 0,
        }
    }

    /// Index search: in a branch, the child covering `key`; in a leaf, the entry.
    /// (Bitmap indexes descend by `Piece::at` keys the same way.)
    pub fn child_for(&self, key: u64) -> Option<BlockAddr> {
        let Body::Branch { entries } = &self.body else {
            return None;
        };
        let pos = entries.partition_point(|(k, _)| *k <= key);
        entries.get(pos.saturating_sub(1)).map(|(_, c)| *c)
    }

    /// Does this leaf cover `key` (a split may have moved it elsewhere)?
    pub fn leaf_covers(&self, key: u64) -> bool {
        match &self.body {
            Body::Leaf { low, high, .. } => key >= *low && high.is_none_or(|h| key < h),
            _ => false,
        }
    }

    pub fn leaf_lookup(&self, key: u64) -> Option<&LeafEntry> {
        let Body::Leaf { entries, .. } = &self.body else {
            return None;
        };
        search_entries(entries, key).ok().map(|i| &entries[i])
    }

    /// Approximate encoded size (redo size accounting, wire size before padding).
    pub fn encoded_len(&self) -> usize {
        let body = match &self.body {
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
    let n = entries.len();
    if n < 8 {
        return entries.binary_search_by_key(&key, |e| e.key);
    }
    let (first, last) = (entries[0].key, entries[n - 1].key);
    if key <= first {
        return if key == first { Ok(0) } else { Err(0) };
    }
    if key >= last {
        return if key == last { Ok(n - 1) } else { Err(n) };
    }
    // first < key < last, so 0 <= guess < n - 1.
    let guess = (u128::from(key - first) * (n as u128 - 1) / u128::from(last - first)) as usize;
    let g = entries[guess].key;
    if g == key {
        return Ok(guess);
    }
    let (lo, hi) = if g < key {
        // Everything before `lo` is below the key; entries[n - 1] is above it.
        let (mut lo, mut p, mut step) = (guess + 1, guess + 1, 1);
        while entries[p].key < key {
            lo = p + 1;
            p = (p + step).min(n - 1);
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

/// The transactions a CR build must hide: mostly none or a few, kept inline
/// (no table to clear); beyond eight they move to an [`XidSet`].
#[derive(Default)]
struct FewXids {
    len: usize,
    few: [u64; 8],
    many: Option<XidSet<64>>,
}

impl FewXids {
    fn insert(&mut self, x: Xid) {
        if let Some(m) = self.many.as_mut() {
            m.insert(x);
        } else if self.len < self.few.len() {
            self.few[self.len] = x.0;
            self.len += 1;
        } else {
            let mut m = XidSet::default();
            self.few.iter().for_each(|&f| m.insert(Xid(f)));
            m.insert(x);
            self.many = Some(m);
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ready the set for [`FewXids::contains`].
    fn seal(&mut self) {
        if let Some(m) = self.many.as_mut() {
            m.seal();
        }
    }

    /// Only valid after [`FewXids::seal`].
    fn contains(&self, x: Xid) -> bool {
        match &self.many {
            Some(m) => m.contains(x),
            None => self.few[..self.len].contains(&x.0),
        }
    }
}

/// ITL positions (up to 64) by transaction id, for [`Block::trim_itl`]:
/// an open-addressing table of 128 slots, at most half full.
struct XidIndex {
    /// Zero marks an empty slot; `Xid::NONE`'s position is `none`.
    keys: [u64; 128],
    pos: [u8; 128],
    none: Option<u8>,
}

impl Default for XidIndex {
    fn default() -> XidIndex {
        XidIndex {
            keys: [0; 128],
            pos: [0; 128],
            none: None,
        }
    }
}

impl XidIndex {
    fn home(x: u64) -> usize {
        (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as usize
    }

    /// Index `x` at `pos`; false if it is there already.
    fn insert(&mut self, x: Xid, pos: u8) -> bool {
        let x = x.0;
        if x == 0 {
            return self.none.replace(pos).is_none();
        }
        let mut i = Self::home(x);
        loop {
            match self.keys[i] {
                0 => {
                    self.keys[i] = x;
                    self.pos[i] = pos;
                    return true;
                }
                k if k == x => return false,
                _ => i = (i + 1) % 128,
            }
        }
    }

    /// The position of `x` as a bit (0 if not indexed).
    fn bit(&self, x: Xid) -> u64 {
        let x = x.0;
        if x == 0 {
            return self.none.map_or(0, |p| 1 << p);
        }
        let mut i = Self::home(x);
        loop {
            match self.keys[i] {
                k if k == x => return 1 << self.pos[i],
                0 => return 0,
                _ => i = (i + 1) % 128,
            }
        }
    }
}

/// A set of transaction ids for the per-block loops above: an open-addressing
/// table of `N` slots (a power of two) on the stack (no allocation, no
/// sorting, and small enough that clearing it is cheap), spilling to a
/// sorted Vec beyond `N / 2`. Fill it, call [`XidSet::seal`], then ask
/// [`XidSet::contains`].
struct XidSet<const N: usize> {
    /// Zero marks an empty slot; `Xid::NONE` itself is `has_none`.
    table: [u64; N],
    len: usize,
    has_none: bool,
    spill: Option<Vec<u64>>,
}

impl<const N: usize> Default for XidSet<N> {
    fn default() -> XidSet<N> {
        XidSet {
            table: [0; N],
            len: 0,
            has_none: false,
            spill: None,
        }
    }
}

impl<const N: usize> XidSet<N> {
    /// At most half full, so probes stay short.
    const MAX: usize = N / 2;

    fn home(x: u64) -> usize {
        // The top bits of a Fibonacci hash: log2(N) of them.
        (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - N.trailing_zeros())) as usize
    }

    fn insert(&mut self, x: Xid) {
        let x = x.0;
        if x == 0 {
            self.has_none = true;
            return;
        }
        if let Some(v) = self.spill.as_mut() {
            v.push(x);
            return;
        }
        if self.len == Self::MAX {
            let mut v: Vec<u64> = self.table.iter().copied().filter(|&t| t != 0).collect();
            v.push(x);
            self.spill = Some(v);
            return;
        }
        let mut i = Self::home(x);
        loop {
            match self.table[i] {
                0 => {
                    self.table[i] = x;
                    self.len += 1;
                    return;
                }
                t if t == x => return,
                _ => i = (i + 1) % N,
            }
        }
    }

    /// Ready the set for [`XidSet::contains`].
    fn seal(&mut self) {
        if let Some(v) = self.spill.as_mut() {
            v.sort_unstable();
        }
    }

    /// Only valid after [`XidSet::seal`].
    fn contains(&self, x: Xid) -> bool {
        let x = x.0;
        if x == 0 {
            return self.has_none;
        }
        if let Some(v) = &self.spill {
            return v.binary_search(&x).is_ok();
        }
        let mut i = Self::home(x);
        loop {
            match self.table[i] {
                0 => return false,
                t if t == x => return true,
                _ => i = (i + 1) % N,
            }
        }
    }
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
    use crate::types::InstId;

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
        b.update_row(0, x(1), 11, 5);
        b.clean_out(x(1), 6);
        b.update_row(1, x(2), 21, 7); // still active
        let lookup = |xid: Xid| {
            if xid == x(2) {
                TxState::Active
            } else {
                TxState::Unknown
            }
        };
        let at5 = b.build_cr(5, Xid::NONE, 100, &lookup).unwrap();
        assert_eq!(at5.image.row(0).unwrap().val, 10);
        assert_eq!(at5.image.row(1).unwrap().val, 20);
        let at6 = b.build_cr(6, Xid::NONE, 100, &lookup).unwrap();
        assert_eq!(at6.image.row(0).unwrap().val, 11);
        assert_eq!(at6.image.row(1).unwrap().val, 20);
        assert_eq!(
            at6.hi, 6,
            "an active transaction bounds the copy to its snapshot"
        );
        assert_eq!(at6.lo, 6);
    }

    #[test]
    fn reader_sees_its_own_changes_over_invisible_older_ones() {
        let mut b = table(&[(1, 10)]);
        b.update_row(0, x(1), 11, 5);
        b.clean_out(x(1), 9); // committed after the reader's snapshot
        b.update_row(0, x(2), 12, 10); // the reader's own change
        let copy = b.build_cr(8, x(2), 100, &|_| TxState::Unknown).unwrap();
        assert_eq!(copy.image.row(0).unwrap().val, 12);
        assert_eq!(copy.private_to, Some(x(2)));
    }

    #[test]
    fn unknown_owner_and_trimmed_undo_are_reported() {
        let mut b = table(&[(1, 10)]);
        let remote = Xid::new(InstId(1), 3);
        b.update_row(0, remote, 11, 5);
        assert_eq!(
            b.build_cr(4, Xid::NONE, 10, &|_| TxState::Unknown)
                .unwrap_err(),
            CrError::Unknown(vec![remote])
        );
        let mut b = table(&[(1, 0)]);
        for i in 1..=(UNDO_KEEP as u64 + 5) {
            b.update_row(0, x(i), i as i64, i * 10);
            b.clean_out(x(i), i * 10 + 1);
        }
        assert!(b.trimmed_scn > 0);
        assert_eq!(
            b.build_cr(3, Xid::NONE, 1000, &|_| TxState::Unknown)
                .unwrap_err(),
            CrError::SnapshotTooOld
        );
        let latest = b
            .build_cr(10_000, Xid::NONE, 20_000, &|_| TxState::Unknown)
            .unwrap();
        assert_eq!(latest.image.row(0).unwrap().val, UNDO_KEEP as i64 + 5);
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
        assert!(leaf.update_entry(4, 11, x(1), 5));
        leaf.clean_out(x(1), 6);
        assert!(leaf.update_entry(4, 12, x(2), 7)); // still active
        assert!(!leaf.update_entry(5, 1, x(2), 7), "no entry for key 5");
        let lookup = |xid: Xid| {
            if xid == x(2) {
                TxState::Active
            } else {
                TxState::Unknown
            }
        };
        let at = |scn| leaf.build_cr(scn, Xid::NONE, 100, &lookup).unwrap().image;
        assert_eq!(at(5).leaf_lookup(4).map(|e| e.val), Some(10));
        assert_eq!(at(6).leaf_lookup(4).map(|e| e.val), Some(11));
        assert_eq!(
            leaf.leaf_lookup(4).map(|e| (e.val, e.lock)),
            Some((12, x(2)))
        );
    }

    impl Block {
        fn body_locks(&self) -> Vec<Xid> {
            match &self.body {
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
                    commit: (next(4) != 0).then_some(i as u64),
                })
                .collect();
            // Up to 90 undo records: sometimes more transactions than the set holds inline.
            b.undo = (0..next(90))
                .map(|_| UndoRec {
                    xid: x(1 + next(150)),
                    op: UndoOp::EntryInsert { key: 0 },
                })
                .collect();
            if let Body::Table { rows } = &mut b.body {
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
                    trimmed = trimmed.max(e.commit.unwrap_or(0));
                }
                keep
            });
            plain.trimmed_scn = trimmed;
            b.trim_itl();
            assert_eq!(b, plain, "seed {seed}");
        }
    }

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
        leaf.insert_entry(5, rid, x(1), 2);
        leaf.clean_out(x(1), 3);
        leaf.insert_entry(9, rid, x(2), 4);
        leaf.replace_body(
            Body::Leaf {
                entries: vec![],
                next: Some(BlockAddr(4)),
                low: 0,
                high: None,
            },
            x(3),
            5,
        );
        leaf.clean_out(x(3), 6);
        let before_split = leaf.build_cr(5, Xid::NONE, 10, &|x2| {
            if x2 == x(2) {
                TxState::Committed(4)
            } else {
                TxState::Unknown
            }
        });
        let img = before_split.unwrap().image;
        assert_eq!(img.entry_count(), 2);
        let old = leaf.build_cr(3, Xid::NONE, 10, &|x2| {
            if x2 == x(2) {
                TxState::Committed(4)
            } else {
                TxState::Unknown
            }
        });
        assert_eq!(old.unwrap().image.leaf_lookup(9), None);
    }
}
