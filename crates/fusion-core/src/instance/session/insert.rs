//! Inserts: a row goes into the instance's current insert block (taking a new
//! block from the segment header when it fills), then into each index on the
//! table. A full index block is split: the session descends from the root in
//! current mode and splits every full block on the way, so a split always
//! finds room in its parent. A split is a recursive transaction that commits
//! at once (as Oracle's index splits do), with full undo so older snapshots
//! still read the blocks as they were.
//!
//! Splits of one index are serialized across the cluster by the index's
//! split enqueue (`EnqKind::IndexSplit`), taken in X when a session finds its
//! leaf full and held until its entry is in. Without it two instances
//! splitting the same right-hand leaf take each other's blocks away for ever:
//! the descent needs the parent, the node and the new blocks in X at once,
//! and gives each one up while it fetches the next. A session that has to
//! wait for the enqueue waits on `enq: TX - index contention` (Oracle's
//! waiters queue on the splitting transaction's TX) and then descends again
//! the ordinary way, since the split it waited for has usually made room.

use super::super::Instance;
use super::super::cache::{BufId, BufState};
use super::super::execution::{ExecPoint, Purpose};
use super::super::observe::Observation;
use super::{Acquired, AfterCpu, SessionState};
use crate::block::{Block, Body, Change, Itl, SplitBlock, UndoOp};
use crate::layout::Layout;
use crate::msg::{EnqKind, LockMode, ReqKind, ResName};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, Rowid, Scn, Xid};

impl Instance {
    /// The first B-tree index on `table` after position `after` (`None`:
    /// from the start). Bitmap indexes take no inserts: the loader refuses
    /// inserts into a table that has one.
    fn next_index(&self, table: usize, after: Option<usize>) -> Option<usize> {
        let start = after.map_or(0, |a| a + 1);
        (start..self.k.layout().indexes.len()).find(|&i| {
            let l = &self.k.layout().indexes[i];
            l.table == table && l.kind == crate::config::IndexKind::BTree
        })
    }

    fn index_cursor(&self, ix: usize, table: usize, key: u64, rowid: Rowid) -> ExecPoint {
        ExecPoint::Index {
            ix,
            table,
            key,
            blk: self.k.layout().index_root(ix, key),
            purpose: Purpose::Insert(rowid),
        }
    }

    /// Visit of the insert block (pinned in X): add the row.
    pub(in crate::instance) fn insert_into_block(
        &mut self,
        sid: u32,
        buf: BufId,
        table: usize,
        key: u64,
    ) -> ExecPoint {
        let per_block = self.k.layout().tables[table].rows_per_block as usize;
        let b = self.cache.get(buf);
        if !matches!(*b.image.body, Body::Table { .. }) || b.image.row_slots() >= per_block {
            self.fg.inserts.insert_into(table, None);
            return ExecPoint::InsertAlloc { table, key };
        }
        let blk = b.blk;
        let slot = u16::try_from(b.image.row_slots()).ok();
        let xid = self.fg.session_xid(sid);
        let scn = self.next_scn();
        let Some(slot) = slot.filter(|&slot| {
            let row = Change::InsertRow { slot, key, val: 0 };
            self.fg.change_block(
                &mut self.k,
                &mut self.cache,
                &mut self.redo,
                buf,
                row,
                xid,
                scn,
                150,
            )
        }) else {
            self.fg.inserts.insert_into(table, None);
            return ExecPoint::InsertAlloc { table, key };
        };
        self.k.incr(Stat::RowsInserted);
        self.fg.touch_block(&mut self.cache, sid, blk);
        self.record(Observation::Write {
            xid,
            table,
            key,
            val: 0,
        });
        let rowid = Rowid { blk, slot };
        match self.next_index(table, None) {
            Some(ix) => self.index_cursor(ix, table, key, rowid),
            None => ExecPoint::None,
        }
    }

    /// Visit of the segment header (pinned in X): take the next block of this instance's run.
    pub(in crate::instance) fn take_new_block(
        &mut self,
        sid: u32,
        buf: BufId,
        table: usize,
        key: u64,
    ) -> ExecPoint {
        let me = self.id.idx();
        let t = self.k.layout().tables[table].clone();
        let Body::SegHeader { used } = &*self.cache.get(buf).image.body else {
            self.error(format!("segment header of table {table} is corrupt"));
            return ExecPoint::None;
        };
        let mine = used.get(me).copied().unwrap_or(u32::MAX);
        if mine >= t.free_per_instance {
            // ORA-01653: the table's free space for this instance is used up.
            self.k.incr(Stat::SpaceErrors);
            return ExecPoint::None;
        }
        let header = self.cache.get(buf).blk;
        let (xid, scn) = self.fg.recursive_txn(&mut self.k);
        let take = Change::UseBlocks {
            inst: self.id.0,
            used: mine + 1,
        };
        self.fg.change_block(
            &mut self.k,
            &mut self.cache,
            &mut self.redo,
            buf,
            take,
            xid,
            scn,
            100,
        );
        self.fg
            .commit_recursive(&mut self.k, &mut self.cache, &mut self.redo, xid, &[header]);
        let _ = sid;
        let blk =
            BlockAddr(Layout::free_range(t.free_base, t.free_per_instance, self.id).start + mine);
        ExecPoint::InsertNew { table, key, blk }
    }

    /// Format a never-used block for inserts; returns true when the session can go on.
    pub(in crate::instance) fn format_new(
        &mut self,
        sid: u32,
        table: usize,
        key: u64,
        blk: BlockAddr,
    ) -> bool {
        if let Some(id) = self.cache.current(blk)
            && self.cache.get(id).state() == BufState::Xcur
        {
            if matches!(*self.cache.get(id).image.body, Body::Unformatted) {
                let (xid, scn) = self.fg.recursive_txn(&mut self.k);
                let format = Change::Format(Box::new(Body::Table { rows: Vec::new() }));
                self.fg.change_block(
                    &mut self.k,
                    &mut self.cache,
                    &mut self.redo,
                    id,
                    format,
                    xid,
                    scn,
                    100,
                );
                self.fg
                    .commit_recursive(&mut self.k, &mut self.cache, &mut self.redo, xid, &[blk]);
            }
            self.fg.inserts.insert_into(table, Some(blk));
            self.fg
                .sessions
                .go_to(sid, ExecPoint::InsertRow { table, key });
            return true;
        }
        self.request_new(sid, blk);
        false
    }

    fn request_new(&mut self, sid: u32, blk: BlockAddr) {
        if self.fg.sessions.has_request(blk) {
            self.wait_on_block(sid, blk, Wait::GcBufferBusyAcquire);
        } else {
            self.gc_request(sid, blk, ReqKind::Current { new_block: true }, false);
        }
    }

    /// Visit of an index leaf (pinned in X): add the entry, or start a split.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn insert_into_leaf(
        &mut self,
        sid: u32,
        buf: BufId,
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        blk: BlockAddr,
    ) -> ExecPoint {
        let cap = self.k.layout().indexes[ix].entries_per_leaf as usize;
        let ekey = self.k.layout().indexes[ix].entry_key(key);
        let img = &self.cache.get(buf).image;
        if !img.leaf_covers(ekey) {
            // A split moved the key since our snapshot: descend again with a fresh one.
            self.fg.sessions.session_mut(sid).snapshot = self.k.scn();
            return self.index_cursor(ix, table, key, rowid);
        }
        if img.entry_count() >= cap {
            let root = self.k.layout().indexes[ix].root;
            return ExecPoint::Split {
                ix,
                table,
                key,
                rowid,
                parent: None,
                node: root,
            };
        }
        let xid = self.fg.session_xid(sid);
        let scn = self.next_scn();
        let entry = Change::InsertEntry { key: ekey, rowid };
        let inserted = self.cache.get_mut(buf).image.apply(&entry, xid, scn);
        self.split_unlock(sid, ix);
        if !inserted {
            self.error(format!("duplicate key {key} in index {ix}"));
            return ExecPoint::None;
        }
        self.fg.log_change(
            &mut self.k,
            &mut self.cache,
            &mut self.redo,
            buf,
            entry,
            xid,
            scn,
            120,
        );
        self.fg.touch_block(&mut self.cache, sid, blk);
        match self.next_index(table, Some(ix)) {
            Some(next) => self.index_cursor(next, table, key, rowid),
            None => ExecPoint::None,
        }
    }

    /// Is `blk` held here in X and free to change right now?
    fn x_ready(&self, blk: BlockAddr) -> bool {
        self.cache.current(blk).is_some_and(|id| {
            let b = self.cache.get(id);
            b.state() == BufState::Xcur && !b.leaving() && !b.pinned()
        })
    }

    /// Get `blk` in X (waiting if needed). True when it is ready now.
    fn want_x(&mut self, sid: u32, blk: BlockAddr) -> bool {
        if self.x_ready(blk) {
            return true;
        }
        match self.acquire_current(sid, blk) {
            Acquired::Pinned { buf, .. } => {
                self.unpin(buf);
                true
            }
            _ => false,
        }
    }

    fn capacity(&self, ix: usize, block: &Block) -> usize {
        let l = &self.k.layout().indexes[ix];
        match *block.body {
            Body::Leaf { .. } => l.entries_per_leaf as usize,
            _ => l.entries_per_branch as usize,
        }
    }

    /// Let go of the index's split enqueue if this session holds it.
    fn split_unlock(&mut self, sid: u32, ix: usize) {
        let res = split_res(ix);
        if self.enq_holds(sid, res) {
            self.enq_release(res, None);
        }
    }

    /// One step of the splitting descent. True when the session can go on at once.
    pub(in crate::instance) fn split_step(&mut self, sid: u32) -> bool {
        let ExecPoint::Split {
            ix,
            table,
            key,
            rowid,
            parent,
            node,
        } = self.fg.sessions.session(sid).cur
        else {
            return true;
        };
        if !self.split_locked(sid, ix, table, key, rowid) {
            return false;
        }
        if let Some(p) = parent
            && !self.want_x(sid, p)
        {
            return false;
        }
        if !self.want_x(sid, node) {
            return false;
        }
        let Some(nbuf) = self.cache.current(node) else {
            return false;
        };
        let img = &self.cache.get(nbuf).image;
        let full = img.entry_count() >= self.capacity(ix, img);
        if !full {
            let next = match img.child_for(self.k.layout().indexes[ix].entry_key(key)) {
                Some(child) => ExecPoint::Split {
                    ix,
                    table,
                    key,
                    rowid,
                    parent: Some(node),
                    node: child,
                },
                None => ExecPoint::IndexLeaf {
                    ix,
                    table,
                    key,
                    rowid,
                    blk: node,
                },
            };
            self.fg.sessions.go_to(sid, next);
            return true;
        }
        // A full block: it needs new blocks (two for the root, which never moves).
        let needed = if parent.is_none() { 2 } else { 1 };
        let spares: Vec<BlockAddr> = self.fg.sessions.session(sid).spares.clone();
        if let Some(go_on) = self.gather_spares(sid, ix, &spares, needed) {
            return go_on;
        }
        self.pin_for_split(sid, nbuf, parent, &spares[..needed]);
        false
    }

    /// Hold the index's split enqueue, or queue for it. False when the
    /// session waits; it then resumes with an ordinary descent.
    fn split_locked(&mut self, sid: u32, ix: usize, table: usize, key: u64, rowid: Rowid) -> bool {
        let res = split_res(ix);
        if self.enq_holds(sid, res) {
            return true;
        }
        let again = self.index_cursor(ix, table, key, rowid);
        let split = std::mem::replace(&mut self.fg.sessions.session_mut(sid).cur, again);
        if !self.enq_get(sid, res, LockMode::X, Wait::EnqTxIndexContention) {
            return false;
        }
        self.fg.sessions.go_to(sid, split);
        true
    }

    /// Get the `needed` new blocks of a split in X: `None` once they are all
    /// here, else whether the session can go on at once (it took one more, or
    /// the index is out of space) or waits.
    fn gather_spares(
        &mut self,
        sid: u32,
        ix: usize,
        spares: &[BlockAddr],
        needed: usize,
    ) -> Option<bool> {
        for &s in spares {
            if !self.x_ready(s) && !self.want_x(sid, s) {
                return Some(false);
            }
        }
        if spares.len() >= needed {
            return None;
        }
        let l = &self.k.layout().indexes[ix];
        let range = Layout::free_range(l.free_base, l.free_per_instance, self.id);
        let next = range.start + self.fg.inserts.index_used(ix);
        if next >= range.end {
            self.k.incr(Stat::SpaceErrors);
            self.split_unlock(sid, ix);
            self.fg.sessions.go_to(sid, ExecPoint::None);
            return Some(true);
        }
        let blk = BlockAddr(next);
        if self.x_ready(blk) {
            self.fg.inserts.index_block_taken(ix);
            self.fg.sessions.session_mut(sid).spares.push(blk);
            return Some(true);
        }
        self.request_new(sid, blk);
        Some(false)
    }

    /// Everything is here: pin the node, its parent and the new blocks, and
    /// split in one CPU step.
    fn pin_for_split(
        &mut self,
        sid: u32,
        nbuf: BufId,
        parent: Option<BlockAddr>,
        spares: &[BlockAddr],
    ) {
        let mut pins = vec![nbuf];
        if let Some(p) = parent
            && let Some(id) = self.cache.current(p)
        {
            pins.push(id);
        }
        for &s in spares {
            if let Some(id) = self.cache.current(s) {
                pins.push(id);
            }
        }
        for &id in &pins {
            self.cache.pin_exclusive(id);
        }
        let s = self.fg.sessions.session_mut(sid);
        s.split_pins = pins;
        s.st = SessionState::Cpu(AfterCpu::Split);
        let proc = s.proc;
        self.cpu(
            proc,
            self.k.costs().row_change * 4 + self.k.costs().db_block_get * 3,
        );
    }

    /// The split's CPU step is over: do it, then go on descending.
    pub(in crate::instance) fn split_done(&mut self, sid: u32) {
        let pins = std::mem::take(&mut self.fg.sessions.session_mut(sid).split_pins);
        let point = self.fg.sessions.session(sid).cur;
        let next = match point {
            ExecPoint::Split {
                ix,
                table,
                key,
                rowid,
                parent,
                node,
            } => self.split(sid, ix, table, key, rowid, parent, node),
            other => other,
        };
        for id in pins {
            self.unpin(id);
        }
        self.fg.sessions.go_to(sid, next);
        self.resume(sid);
    }

    /// Split the full `node` (pinned, with its parent and the new blocks)
    /// in a recursive transaction; returns where the descent goes on.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        sid: u32,
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        parent: Option<BlockAddr>,
        node: BlockAddr,
    ) -> ExecPoint {
        let restart = ExecPoint::Split {
            ix,
            table,
            key,
            rowid,
            parent: None,
            node: self.k.layout().indexes[ix].root,
        };
        let Some(nbuf) = self.cache.current(node) else {
            return restart;
        };
        let pbuf = parent.and_then(|p| self.cache.current(p));
        if !self.split_still_due(ix, node, nbuf, pbuf) {
            return restart;
        }
        let (xid, scn) = self.fg.recursive_txn(&mut self.k);
        let ekey = self.k.layout().indexes[ix].entry_key(key);
        let spares = std::mem::take(&mut self.fg.sessions.session_mut(sid).spares);
        let mut changed = vec![node];
        let halves = split_body(&self.cache.get(nbuf).image.body);
        let sep = halves.sep;
        let cont = match pbuf {
            Some(pb) => {
                let Some(&new) = spares.first() else {
                    return restart;
                };
                self.split_under_parent(nbuf, pb, new, halves, xid, scn);
                changed.push(new);
                changed.extend(parent);
                self.fg.sessions.session_mut(sid).spares = spares[1..].to_vec();
                let child = if ekey >= sep { new } else { node };
                ExecPoint::Split {
                    ix,
                    table,
                    key,
                    rowid,
                    parent,
                    node: child,
                }
            }
            None => {
                let (Some(&a), Some(&b)) = (spares.first(), spares.get(1)) else {
                    return restart;
                };
                self.split_root(nbuf, a, b, halves, xid, scn);
                changed.push(a);
                changed.push(b);
                self.fg.sessions.session_mut(sid).spares = spares[2..].to_vec();
                ExecPoint::Split {
                    ix,
                    table,
                    key,
                    rowid,
                    parent: Some(node),
                    node: if ekey >= sep { b } else { a },
                }
            }
        };
        let leaf = matches!(*self.cache.get(nbuf).image.body, Body::Leaf { .. });
        self.k.incr(if leaf {
            Stat::LeafNodeSplits
        } else {
            Stat::BranchNodeSplits
        });
        self.fg
            .commit_recursive(&mut self.k, &mut self.cache, &mut self.redo, xid, &changed);
        cont
    }

    /// Is the split still as the descent saw it? The node must still be
    /// full, and its parent must point to it and have room.
    fn split_still_due(
        &self,
        ix: usize,
        node: BlockAddr,
        nbuf: BufId,
        pbuf: Option<BufId>,
    ) -> bool {
        let cap = self.capacity(ix, &self.cache.get(nbuf).image);
        if self.cache.get(nbuf).image.entry_count() < cap {
            return false;
        }
        match pbuf {
            Some(pb) => {
                let pimg = &self.cache.get(pb).image;
                let points = matches!(&*pimg.body, Body::Branch { entries } if entries.iter().any(|e| e.1 == node));
                points
                    && pimg.entry_count() < self.k.layout().indexes[ix].entries_per_branch as usize
            }
            None => true,
        }
    }

    /// A node below the root: its upper half moves to block `new`, which
    /// the parent now points to as well.
    fn split_under_parent(
        &mut self,
        nbuf: BufId,
        pbuf: BufId,
        new: BlockAddr,
        halves: Halves,
        xid: Xid,
        scn: Scn,
    ) {
        let Halves { keep, upper, sep } = halves;
        // Uncommitted entries keep their undo in the block they move to.
        let moved = moved_undo(&self.cache.get(nbuf).image, &upper);
        let lower = lower_of(&self.cache.get(nbuf).image.body, keep, sep, new);
        self.split_change(nbuf, lower, xid, scn);
        self.format_index_block(new, upper, moved, xid, scn);
        let child = Change::AddChild { sep, child: new };
        self.split_change(pbuf, child, xid, scn);
    }

    /// The root: its halves go to the new blocks `a` and `b`; it stays the
    /// root and points to them.
    fn split_root(
        &mut self,
        nbuf: BufId,
        a: BlockAddr,
        b: BlockAddr,
        halves: Halves,
        xid: Xid,
        scn: Scn,
    ) {
        let Halves { keep, upper, sep } = halves;
        let node = &*self.cache.get(nbuf).image.body;
        let lower = node
            .split_lower(keep, sep, Some(b))
            .unwrap_or_else(|| node.clone());
        let first = match &lower {
            Body::Branch { entries } => entries.first().map_or(0, |e| e.0),
            Body::Leaf { low, .. } => *low,
            _ => 0,
        };
        let moved_a = moved_undo(&self.cache.get(nbuf).image, &lower);
        let moved_b = moved_undo(&self.cache.get(nbuf).image, &upper);
        self.format_index_block(a, lower, moved_a, xid, scn);
        self.format_index_block(b, upper, moved_b, xid, scn);
        let root = Body::Branch {
            entries: vec![(first, a), (sep, b)],
        };
        self.split_change(nbuf, Change::Format(Box::new(root)), xid, scn);
    }

    /// One block's part of a split, logged as half a block of redo.
    fn split_change(&mut self, buf: BufId, change: Change, xid: Xid, scn: Scn) {
        let bytes = self.k.params().db_block_size / 2;
        self.fg.change_block(
            &mut self.k,
            &mut self.cache,
            &mut self.redo,
            buf,
            change,
            xid,
            scn,
            bytes,
        );
    }

    fn format_index_block(
        &mut self,
        blk: BlockAddr,
        body: Body,
        moved: (Vec<Itl>, Vec<crate::block::UndoRec>),
        xid: Xid,
        scn: Scn,
    ) {
        let Some(id) = self.cache.current(blk) else {
            return;
        };
        // The split's own undo (restore "unformatted") comes after the moved
        // entries' undo: it is newest, so a rollback reaches it first.
        let (itl, undo) = moved;
        let new = Change::SplitNew(Box::new(SplitBlock { body, itl, undo }));
        self.split_change(id, new, xid, scn);
    }
}

/// The enqueue that serializes the splits of index `ix`.
fn split_res(ix: usize) -> ResName {
    ResName {
        kind: EnqKind::IndexSplit,
        // A position in the catalog's list of indexes (usize fits u64).
        id: ix as u64,
    }
}

/// How a full index block splits: the entries its lower half keeps, its
/// upper half and the key that separates them.
struct Halves {
    keep: u32,
    upper: Body,
    sep: u64,
}

/// Split a full leaf or branch body: the upper half (a leaf keeps pointing
/// to the old next; the lower half will point to it, see `split_lower`).
fn split_body(body: &Body) -> Halves {
    match body {
        Body::Leaf {
            entries,
            next,
            low,
            high,
        } => {
            let mid = entries.len() / 2;
            let sep = entries.get(mid).map_or(*low, |e| e.key);
            Halves {
                keep: u32::try_from(mid).unwrap_or(u32::MAX),
                upper: Body::Leaf {
                    entries: entries[mid..].to_vec(),
                    next: *next,
                    low: sep,
                    high: *high,
                },
                sep,
            }
        }
        Body::Branch { entries } => {
            let mid = entries.len() / 2;
            let sep = entries.get(mid).map_or(0, |e| e.0);
            Halves {
                keep: u32::try_from(mid).unwrap_or(u32::MAX),
                upper: Body::Branch {
                    entries: entries[mid..].to_vec(),
                },
                sep,
            }
        }
        _ => Halves {
            keep: 0,
            upper: Body::Unformatted,
            sep: 0,
        },
    }
}

/// The change that leaves a split node its lower half, chained (a leaf)
/// to `upper_at`, where the upper half goes. A node that is neither leaf
/// nor branch (never split) is formatted as it is.
fn lower_of(node: &Body, keep: u32, sep: u64, upper_at: BlockAddr) -> Change {
    match node {
        Body::Leaf { .. } | Body::Branch { .. } => Change::SplitLower {
            keep,
            high: sep,
            next: Some(upper_at),
        },
        other => Change::Format(Box::new(other.clone())),
    }
}

/// ITL entries and undo of transactions whose entries move into `body`.
fn moved_undo(from: &Block, body: &Body) -> (Vec<Itl>, Vec<crate::block::UndoRec>) {
    let Body::Leaf { entries, .. } = body else {
        return (Vec::new(), Vec::new());
    };
    let undo: Vec<_> = from
        .undo
        .iter()
        .filter(
            |u| matches!(u.op, UndoOp::EntryInsert { key } if entries.iter().any(|e| e.key == key)),
        )
        .cloned()
        .collect();
    let itl = from
        .itl
        .iter()
        .filter(|i| undo.iter().any(|u| u.xid == i.xid))
        .copied()
        .collect();
    (itl, undo)
}
