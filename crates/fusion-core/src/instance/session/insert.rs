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

use super::super::cache::{BufId, BufState, Cache};
use super::super::execution::{ExecPoint, Purpose};
use super::super::kernel::Kernel;
use super::super::observe::{Observation, Observer};
use super::super::redo::Redo;
use super::{AfterCpu, Foregrounds, SessionState, record};
use crate::block::{Block, Body, Change, Itl, SplitBlock, UndoOp};
use crate::config::Nanos;
use crate::cpu::ProcId;
use crate::layout::Layout;
use crate::msg::{EnqKind, ResName};
use crate::stats::Stat;
use crate::types::{BlockAddr, Rowid, Scn, Xid};

/// A leaf visit's answer ([`Foregrounds::leaf_entry`]).
#[derive(Debug)]
pub(in crate::instance) enum Leaf {
    /// No entry now (the key moved, or the leaf is full): go on at this point.
    Go(ExecPoint),
    /// The entry is in the block: the split enqueue goes (if held), then
    /// [`Foregrounds::leaf_logged`].
    Entered(Entered),
}

/// An index entry applied to its leaf, not logged yet.
#[derive(Debug)]
pub(in crate::instance) struct Entered {
    /// False: the key was there already (a bug or a corrupt index).
    inserted: bool,
    entry: Change,
    xid: Xid,
    scn: Scn,
    ix: usize,
    table: usize,
    key: u64,
    rowid: Rowid,
    buf: BufId,
    blk: BlockAddr,
}

impl Entered {
    pub fn ix(&self) -> usize {
        self.ix
    }
}

/// What a split needs next of its new blocks ([`Foregrounds::next_spare`]).
#[derive(Debug, PartialEq)]
pub(in crate::instance) enum Spare {
    /// The index's free run for this instance is used up (counted): the
    /// split enqueue goes and the insert ends.
    OutOfSpace,
    /// One more block was here in X and taken: the session goes on at once.
    Taken,
    /// Ask for this never-used block (the session waits).
    Ask(BlockAddr),
}

/// The first B-tree index on `table` after position `after` (`None`: from
/// the start). Bitmap indexes take no inserts: the loader refuses inserts
/// into a table that has one.
fn next_index(layout: &Layout, table: usize, after: Option<usize>) -> Option<usize> {
    let start = after.map_or(0, |a| a + 1);
    (start..layout.indexes.len()).find(|&i| {
        let l = &layout.indexes[i];
        l.table == table && l.kind == crate::config::IndexKind::BTree
    })
}

fn index_cursor(layout: &Layout, ix: usize, table: usize, key: u64, rowid: Rowid) -> ExecPoint {
    ExecPoint::Index {
        ix,
        table,
        key,
        blk: layout.index_root(ix, key),
        purpose: Purpose::Insert(rowid),
    }
}

/// Is `blk` held here in X and free to change right now?
pub(in crate::instance) fn x_ready(cache: &Cache, blk: BlockAddr) -> bool {
    cache.current(blk).is_some_and(|id| {
        let b = cache.get(id);
        b.state() == BufState::Xcur && !b.leaving() && !b.pinned()
    })
}

fn capacity(layout: &Layout, ix: usize, block: &Block) -> usize {
    let l = &layout.indexes[ix];
    match *block.body {
        Body::Leaf { .. } => l.entries_per_leaf as usize,
        _ => l.entries_per_branch as usize,
    }
}

impl Foregrounds {
    /// Visit of the insert block (pinned in X): add the row.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn insert_into_block(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        obs: &mut Observer,
        sid: u32,
        buf: BufId,
        table: usize,
        key: u64,
    ) -> ExecPoint {
        let per_block = k.layout().tables[table].rows_per_block as usize;
        let b = cache.get(buf);
        if !matches!(*b.image.body, Body::Table { .. }) || b.image.row_slots() >= per_block {
            self.inserts.insert_into(table, None);
            return ExecPoint::InsertAlloc { table, key };
        }
        let blk = b.blk;
        let slot = u16::try_from(b.image.row_slots()).ok();
        let xid = self.session_xid(sid);
        let scn = k.next_scn();
        let Some(slot) = slot.filter(|&slot| {
            let row = Change::InsertRow { slot, key, val: 0 };
            self.change_block(k, cache, redo, buf, row, xid, scn, 150)
        }) else {
            self.inserts.insert_into(table, None);
            return ExecPoint::InsertAlloc { table, key };
        };
        k.incr(Stat::RowsInserted);
        self.touch_block(cache, sid, blk);
        record(
            k,
            obs,
            Observation::Write {
                xid,
                table,
                key,
                val: 0,
            },
        );
        let rowid = Rowid { blk, slot };
        match next_index(k.layout(), table, None) {
            Some(ix) => index_cursor(k.layout(), ix, table, key, rowid),
            None => ExecPoint::None,
        }
    }

    /// Visit of the segment header (pinned in X): take the next block of this instance's run.
    pub(in crate::instance) fn take_new_block(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        buf: BufId,
        table: usize,
        key: u64,
    ) -> ExecPoint {
        let me = k.id();
        let t = k.layout().tables[table].clone();
        let Body::SegHeader { used } = &*cache.get(buf).image.body else {
            k.error(&format!("segment header of table {table} is corrupt"));
            return ExecPoint::None;
        };
        let mine = used.get(me.idx()).copied().unwrap_or(u32::MAX);
        if mine >= t.free_per_instance {
            // ORA-01653: the table's free space for this instance is used up.
            k.incr(Stat::SpaceErrors);
            return ExecPoint::None;
        }
        let header = cache.get(buf).blk;
        let (xid, scn) = self.recursive_txn(k);
        let take = Change::UseBlocks {
            inst: me.0,
            used: mine + 1,
        };
        self.change_block(k, cache, redo, buf, take, xid, scn, 100);
        self.commit_recursive(k, cache, redo, xid, &[header]);
        let blk = BlockAddr(Layout::free_range(t.free_base, t.free_per_instance, me).start + mine);
        ExecPoint::InsertNew { table, key, blk }
    }

    /// Format a never-used block for inserts if it is here in X (then the
    /// session goes on at once); false when it has to be asked for.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn format_new(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        sid: u32,
        table: usize,
        key: u64,
        blk: BlockAddr,
    ) -> bool {
        let Some(id) = cache.current(blk) else {
            return false;
        };
        if cache.get(id).state() != BufState::Xcur {
            return false;
        }
        if matches!(*cache.get(id).image.body, Body::Unformatted) {
            let (xid, scn) = self.recursive_txn(k);
            let format = Change::Format(Box::new(Body::Table { rows: Vec::new() }));
            self.change_block(k, cache, redo, id, format, xid, scn, 100);
            self.commit_recursive(k, cache, redo, xid, &[blk]);
        }
        self.inserts.insert_into(table, Some(blk));
        self.sessions
            .go_to(sid, ExecPoint::InsertRow { table, key });
        true
    }

    /// Visit of an index leaf (pinned in X): apply the entry, or go on
    /// to a split or a fresh descent.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn leaf_entry(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        sid: u32,
        buf: BufId,
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        blk: BlockAddr,
    ) -> Leaf {
        let cap = k.layout().indexes[ix].entries_per_leaf as usize;
        let ekey = k.layout().indexes[ix].entry_key(key);
        let img = &cache.get(buf).image;
        if !img.leaf_covers(ekey) {
            // A split moved the key since our snapshot: descend again with a fresh one.
            self.sessions.session_mut(sid).snapshot = k.scn();
            return Leaf::Go(index_cursor(k.layout(), ix, table, key, rowid));
        }
        if img.entry_count() >= cap {
            let root = k.layout().indexes[ix].root;
            return Leaf::Go(ExecPoint::Split {
                ix,
                table,
                key,
                rowid,
                parent: None,
                node: root,
            });
        }
        let xid = self.session_xid(sid);
        let scn = k.next_scn();
        let entry = Change::InsertEntry { key: ekey, rowid };
        let inserted = cache.get_mut(buf).image.apply(&entry, xid, scn);
        Leaf::Entered(Entered {
            inserted,
            entry,
            xid,
            scn,
            ix,
            table,
            key,
            rowid,
            buf,
            blk,
        })
    }

    /// Log an entry [`Foregrounds::leaf_entry`] applied; where the insert goes on.
    pub(in crate::instance) fn leaf_logged(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        sid: u32,
        e: Entered,
    ) -> ExecPoint {
        let Entered {
            inserted,
            entry,
            xid,
            scn,
            ix,
            table,
            key,
            rowid,
            buf,
            blk,
        } = e;
        if !inserted {
            k.error(&format!("duplicate key {key} in index {ix}"));
            return ExecPoint::None;
        }
        self.log_change(k, cache, redo, buf, entry, xid, scn, 120);
        self.touch_block(cache, sid, blk);
        match next_index(k.layout(), table, Some(ix)) {
            Some(next) => index_cursor(k.layout(), next, table, key, rowid),
            None => ExecPoint::None,
        }
    }

    /// Where session `sid`'s split is: the index, the parent and the node
    /// (`None`: it is not splitting).
    pub(in crate::instance) fn split_at(
        &self,
        sid: u32,
    ) -> Option<(usize, Option<BlockAddr>, BlockAddr)> {
        match self.sessions.session(sid).cur {
            ExecPoint::Split {
                ix, parent, node, ..
            } => Some((ix, parent, node)),
            _ => None,
        }
    }

    /// The session queues for index `ix`'s split enqueue: should it wait,
    /// it resumes with an ordinary descent; returns the split's point, to
    /// go on at once should the enqueue be granted now.
    pub(in crate::instance) fn split_queue(&mut self, k: &Kernel, sid: u32) -> ExecPoint {
        let s = self.sessions.session_mut(sid);
        let ExecPoint::Split {
            ix,
            table,
            key,
            rowid,
            ..
        } = s.cur
        else {
            return s.cur;
        };
        let again = index_cursor(k.layout(), ix, table, key, rowid);
        std::mem::replace(&mut s.cur, again)
    }

    /// The split's node `nbuf` is here in X: if it is not full, the descent
    /// goes on below it (true); false when it is full and must split.
    pub(in crate::instance) fn split_descend(
        &mut self,
        k: &Kernel,
        cache: &Cache,
        sid: u32,
        nbuf: BufId,
    ) -> bool {
        let ExecPoint::Split {
            ix,
            table,
            key,
            rowid,
            node,
            ..
        } = self.sessions.session(sid).cur
        else {
            return true;
        };
        let img = &cache.get(nbuf).image;
        if img.entry_count() >= capacity(k.layout(), ix, img) {
            return false;
        }
        let next = match img.child_for(k.layout().indexes[ix].entry_key(key)) {
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
        self.sessions.go_to(sid, next);
        true
    }

    /// The new blocks session `sid` has gathered for its split.
    pub(in crate::instance) fn spares(&self, sid: u32) -> Vec<BlockAddr> {
        self.sessions.session(sid).spares.clone()
    }

    /// The next new block of a split of index `ix` (the gathered ones are
    /// here in X, but not enough of them).
    pub(in crate::instance) fn next_spare(
        &mut self,
        k: &mut Kernel,
        cache: &Cache,
        sid: u32,
        ix: usize,
    ) -> Spare {
        let l = &k.layout().indexes[ix];
        let range = Layout::free_range(l.free_base, l.free_per_instance, k.id());
        let next = range.start + self.inserts.index_used(ix);
        if next >= range.end {
            k.incr(Stat::SpaceErrors);
            return Spare::OutOfSpace;
        }
        let blk = BlockAddr(next);
        if x_ready(cache, blk) {
            self.inserts.index_block_taken(ix);
            self.sessions.session_mut(sid).spares.push(blk);
            return Spare::Taken;
        }
        Spare::Ask(blk)
    }

    /// Everything is here: pin the node, its parent and the new blocks for
    /// one CPU step; the process and the CPU it asks for.
    pub(in crate::instance) fn pin_for_split(
        &mut self,
        k: &Kernel,
        cache: &mut Cache,
        sid: u32,
        nbuf: BufId,
        parent: Option<BlockAddr>,
        spares: &[BlockAddr],
    ) -> (ProcId, Nanos) {
        let mut pins = vec![nbuf];
        if let Some(p) = parent
            && let Some(id) = cache.current(p)
        {
            pins.push(id);
        }
        for &s in spares {
            if let Some(id) = cache.current(s) {
                pins.push(id);
            }
        }
        for &id in &pins {
            cache.pin_exclusive(id);
        }
        let s = self.sessions.session_mut(sid);
        s.split_pins = pins;
        s.st = SessionState::Cpu(AfterCpu::Split);
        let costs = k.costs();
        (s.proc, costs.row_change_ns * 4 + costs.db_block_get_ns * 3)
    }

    /// The split's CPU step is over: split, and answer where the descent
    /// goes on and the pins to release.
    pub(in crate::instance) fn split_done(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        sid: u32,
    ) -> (ExecPoint, Vec<BufId>) {
        let pins = std::mem::take(&mut self.sessions.session_mut(sid).split_pins);
        let point = self.sessions.session(sid).cur;
        let next = match point {
            ExecPoint::Split {
                ix,
                table,
                key,
                rowid,
                parent,
                node,
            } => self.split(k, cache, redo, sid, ix, table, key, rowid, parent, node),
            other => other,
        };
        (next, pins)
    }

    /// Split the full `node` (pinned, with its parent and the new blocks)
    /// in a recursive transaction; returns where the descent goes on.
    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
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
            node: k.layout().indexes[ix].root,
        };
        let Some(nbuf) = cache.current(node) else {
            return restart;
        };
        let pbuf = parent.and_then(|p| cache.current(p));
        if !split_still_due(k.layout(), cache, ix, node, nbuf, pbuf) {
            return restart;
        }
        let (xid, scn) = self.recursive_txn(k);
        let ekey = k.layout().indexes[ix].entry_key(key);
        let spares = std::mem::take(&mut self.sessions.session_mut(sid).spares);
        let mut changed = vec![node];
        let halves = split_body(&cache.get(nbuf).image.body);
        let sep = halves.sep;
        let mut sp = Splitting {
            fg: self,
            k: &mut *k,
            cache: &mut *cache,
            redo: &mut *redo,
            xid,
            scn,
        };
        let cont = match pbuf {
            Some(pb) => {
                let Some(&new) = spares.first() else {
                    return restart;
                };
                sp.under_parent(nbuf, pb, new, halves);
                changed.push(new);
                changed.extend(parent);
                self.sessions.session_mut(sid).spares = spares[1..].to_vec();
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
                sp.root(nbuf, a, b, halves);
                changed.push(a);
                changed.push(b);
                self.sessions.session_mut(sid).spares = spares[2..].to_vec();
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
        let leaf = matches!(*cache.get(nbuf).image.body, Body::Leaf { .. });
        k.incr(if leaf {
            Stat::LeafNodeSplits
        } else {
            Stat::BranchNodeSplits
        });
        self.commit_recursive(k, cache, redo, xid, &changed);
        cont
    }
}

/// Is the split still as the descent saw it? The node must still be
/// full, and its parent must point to it and have room.
fn split_still_due(
    layout: &Layout,
    cache: &Cache,
    ix: usize,
    node: BlockAddr,
    nbuf: BufId,
    pbuf: Option<BufId>,
) -> bool {
    let cap = capacity(layout, ix, &cache.get(nbuf).image);
    if cache.get(nbuf).image.entry_count() < cap {
        return false;
    }
    match pbuf {
        Some(pb) => {
            let pimg = &cache.get(pb).image;
            let points = matches!(&*pimg.body, Body::Branch { entries } if entries.iter().any(|e| e.1 == node));
            points && pimg.entry_count() < layout.indexes[ix].entries_per_branch as usize
        }
        None => true,
    }
}

/// One split's changes, in its recursive transaction `xid` at `scn`.
struct Splitting<'a> {
    fg: &'a mut Foregrounds,
    k: &'a mut Kernel,
    cache: &'a mut Cache,
    redo: &'a mut Redo,
    xid: Xid,
    scn: Scn,
}

impl Splitting<'_> {
    /// A node below the root: its upper half moves to block `new`, which
    /// the parent now points to as well.
    fn under_parent(&mut self, nbuf: BufId, pbuf: BufId, new: BlockAddr, halves: Halves) {
        let Halves { keep, upper, sep } = halves;
        // Uncommitted entries keep their undo in the block they move to.
        let moved = moved_undo(&self.cache.get(nbuf).image, &upper);
        let lower = lower_of(&self.cache.get(nbuf).image.body, keep, sep, new);
        self.change(nbuf, lower);
        self.format_index_block(new, upper, moved);
        self.change(pbuf, Change::AddChild { sep, child: new });
    }

    /// The root: its halves go to the new blocks `a` and `b`; it stays the
    /// root and points to them.
    fn root(&mut self, nbuf: BufId, a: BlockAddr, b: BlockAddr, halves: Halves) {
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
        self.format_index_block(a, lower, moved_a);
        self.format_index_block(b, upper, moved_b);
        let root = Body::Branch {
            entries: vec![(first, a), (sep, b)],
        };
        self.change(nbuf, Change::Format(Box::new(root)));
    }

    /// One block's part of a split, logged as half a block of redo.
    fn change(&mut self, buf: BufId, change: Change) {
        let bytes = self.k.params().db_block_size / 2;
        let (xid, scn) = (self.xid, self.scn);
        self.fg
            .change_block(self.k, self.cache, self.redo, buf, change, xid, scn, bytes);
    }

    fn format_index_block(
        &mut self,
        blk: BlockAddr,
        body: Body,
        moved: (Vec<Itl>, Vec<crate::block::UndoRec>),
    ) {
        let Some(id) = self.cache.current(blk) else {
            return;
        };
        // The split's own undo (restore "unformatted") comes after the moved
        // entries' undo: it is newest, so a rollback reaches it first.
        let (itl, undo) = moved;
        let new = Change::SplitNew(Box::new(SplitBlock { body, itl, undo }));
        self.change(id, new);
    }
}

/// The enqueue that serializes the splits of index `ix`.
pub(in crate::instance) fn split_res(ix: usize) -> ResName {
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
