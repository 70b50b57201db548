//! Index work beyond the B-tree lookup of session/access.rs: keeping indexes on the
//! value column in step with an update, and answering `count(*) where val =
//! :v` from a bitmap index.
//!
//! An update that changes a row's value must change every index that holds
//! the value: the entry of a B-tree on (key, value) (same key, so the entry
//! stays in its leaf), and in a bitmap index the piece of the old value (its
//! bit cleared) and the piece of the new one (its bit set). Each change is a
//! descent to the leaf in CR mode and a visit of the leaf in current mode,
//! like an insert's; a piece another active transaction holds makes the
//! session wait on `enq: TX - row lock contention`, as for a row lock.
//! Pieces are taken in index order, the same for everybody, so two
//! one-row transactions cannot deadlock (the loader refuses several rows per
//! transaction on a table with a bitmap index).

use super::super::cache::{BufId, Cache};
use super::super::execution::{Change, ExecPoint, IndexChange, Purpose};
use super::super::kernel::Kernel;
use super::super::redo::Redo;
use super::Foregrounds;
use super::state::Changed;
use crate::bitmap::{chunk_of, count_in, piece_at};
use crate::block::{Body, Change as BlockChange, TxState};
use crate::config::{IndexKind, Nanos};
use crate::stats::Stat;
use crate::types::{BlockAddr, Xid};

impl Foregrounds {
    /// The index changes an update of row `key` from `old` to `new` needs,
    /// in the order they are made.
    pub(in crate::instance) fn maintenance(
        k: &Kernel,
        table: usize,
        key: u64,
        old: i64,
        new: i64,
    ) -> Vec<IndexChange> {
        let mut out = Vec::new();
        for (ix, l) in k.layout().indexes.iter().enumerate() {
            if l.table != table || !l.maintained_on_update() || old == new {
                continue;
            }
            match l.kind {
                IndexKind::BTree => out.push(IndexChange {
                    ix,
                    at: key,
                    key,
                    change: Change::Entry(new),
                }),
                IndexKind::Bitmap => {
                    let chunk = chunk_of(key, l.rows_per_piece);
                    let mut pair = [
                        IndexChange {
                            ix,
                            at: piece_at(old, chunk),
                            key,
                            change: Change::Bit(false),
                        },
                        IndexChange {
                            ix,
                            at: piece_at(new, chunk),
                            key,
                            change: Change::Bit(true),
                        },
                    ];
                    pair.sort_by_key(|t| t.at);
                    out.extend(pair);
                }
            }
        }
        out
    }

    /// Begin the next pending index change of session `sid`, or finish.
    pub(in crate::instance) fn next_maintenance(
        &self,
        k: &Kernel,
        sid: u32,
        table: usize,
    ) -> ExecPoint {
        let Some(t) = self.sessions.session(sid).maint.first().copied() else {
            return ExecPoint::None;
        };
        let root = match k.layout().indexes[t.ix].kind {
            IndexKind::BTree => k.layout().index_root(t.ix, t.key),
            IndexKind::Bitmap => k.layout().indexes[t.ix].root,
        };
        ExecPoint::Index {
            ix: t.ix,
            table,
            key: t.at,
            blk: root,
            purpose: Purpose::Maintain,
        }
    }

    /// A descent for a count or a change reached its leaf `blk`.
    pub(in crate::instance) fn leaf_reached(
        cache: &Cache,
        buf: BufId,
        ix: usize,
        table: usize,
        key: u64,
        blk: BlockAddr,
        purpose: Purpose,
    ) -> ExecPoint {
        match purpose {
            Purpose::Count { value } => {
                let (_, _, more) = count_in(&cache.get(buf).image, value);
                match more {
                    // The value's pieces go on in the next leaf.
                    Some(next) => ExecPoint::Index {
                        ix,
                        table,
                        key,
                        blk: next,
                        purpose,
                    },
                    None => ExecPoint::None,
                }
            }
            _ => ExecPoint::MaintLeaf { table, blk },
        }
    }

    /// CPU a visit of `buf` costs beyond the get itself: the pieces a count
    /// reads, or the piece a change rewrites.
    // Inlined into a visit's CPU step: most blocks are not bitmap pieces.
    #[inline(always)]
    pub(in crate::instance) fn bitmap_work(
        &self,
        k: &Kernel,
        cache: &Cache,
        sid: u32,
        buf: BufId,
    ) -> Nanos {
        let img = &cache.get(buf).image;
        if !matches!(*img.body, Body::Bitmap { .. }) {
            return 0;
        }
        match &self.sessions.session(sid).cur {
            ExecPoint::Index {
                purpose: Purpose::Count { value },
                ..
            } => k.costs().bitmap_piece_ns * Nanos::from(count_in(img, *value).1),
            ExecPoint::MaintLeaf { .. } => k.costs().bitmap_piece_ns,
            _ => 0,
        }
    }

    /// The leaf of the next change is pinned in current mode: make the
    /// change, or wait for the transaction holding it. `None` when the session waits.
    pub(in crate::instance) fn maintain_leaf(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        sid: u32,
        buf: BufId,
        table: usize,
    ) -> Changed {
        let Some(t) = self.sessions.session(sid).maint.first().copied() else {
            return Changed::Next(ExecPoint::None);
        };
        let blk = cache.get(buf).blk;
        let img = &cache.get(buf).image;
        let holder = match t.change {
            Change::Entry(_) => {
                if !img.leaf_covers(t.at) {
                    // A split moved the entry since the descent: descend again.
                    self.sessions.session_mut(sid).snapshot = k.scn();
                    return Changed::Next(self.next_maintenance(k, sid, table));
                }
                img.leaf_lookup(t.at).map(|e| e.lock)
            }
            Change::Bit(_) => img.piece(t.at).map(|p| p.lock),
        };
        let Some(holder) = holder else {
            k.error(&format!(
                "index {} has nothing at {} for key {}",
                t.ix, t.at, t.key
            ));
            self.sessions.session_mut(sid).maint.clear();
            return Changed::Next(ExecPoint::None);
        };
        let my = self.sessions.session(sid).xid;
        if !holder.is_none() && holder != my && self.roll_back_dead(k, cache, redo, buf, holder) {
            // A dead instance's transaction recovery rolled back here: look again.
            return self.maintain_leaf(k, cache, redo, sid, buf, table);
        }
        let img = &cache.get(buf).image;
        if !holder.is_none() && holder != my {
            let state = img.state_of(holder, &|x| self.txns.state(x));
            if !matches!(state, TxState::Committed(_)) {
                return Changed::Locked(holder);
            }
        }
        let xid: Xid = self.session_xid(sid);
        let scn = k.next_scn();
        self.clean_out(cache, buf);
        let change = match t.change {
            Change::Entry(val) => BlockChange::UpdateEntry { key: t.at, val },
            Change::Bit(on) => BlockChange::SetBit {
                at: t.at,
                key: t.key,
                on,
            },
        };
        if self.change_block(k, cache, redo, buf, change, xid, scn, 150) {
            self.touch_block(cache, sid, blk);
            if matches!(t.change, Change::Bit(_)) {
                k.incr(Stat::BitmapPiecesChanged);
            }
        }
        self.sessions.session_mut(sid).maint.remove(0);
        Changed::Next(self.next_maintenance(k, sid, table))
    }
}
