//! Inserts and index splits as they interleave with the rest of the
//! instance: the foregrounds decide each step (`session/insert.rs`); here
//! the split enqueue is taken and released, blocks are asked for, pins go
//! and the CPU is asked for, in the order the work happens.

use super::super::cache::BufId;
use super::super::execution::ExecPoint;
use super::super::session::Acquired;
use super::super::session::insert::{Leaf, Spare, split_res, x_ready};
use super::Dispatch;
use crate::msg::{LockMode, ReqKind};
use crate::stats::Wait;
use crate::types::{BlockAddr, Rowid};

impl Dispatch {
    /// Format a never-used block for inserts; returns true when the session can go on.
    pub(in crate::instance) fn format_new(
        &mut self,
        sid: u32,
        table: usize,
        key: u64,
        blk: BlockAddr,
    ) -> bool {
        let (k, cache, redo) = (&mut self.k, &mut self.cache, &mut self.redo);
        if self.fg.format_new(k, cache, redo, sid, table, key, blk) {
            return true;
        }
        self.request_new(sid, blk);
        false
    }

    fn request_new(&mut self, sid: u32, blk: BlockAddr) {
        if self.fg.sessions().has_request(blk) {
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
        let (k, cache) = (&mut self.k, &mut self.cache);
        match self
            .fg
            .leaf_entry(k, cache, sid, buf, ix, table, key, rowid, blk)
        {
            Leaf::Go(next) => next,
            Leaf::Entered(e) => {
                self.split_unlock(sid, e.ix());
                let (k, cache, redo) = (&mut self.k, &mut self.cache, &mut self.redo);
                self.fg.leaf_logged(k, cache, redo, sid, e)
            }
        }
    }

    /// Get `blk` in X (waiting if needed). True when it is ready now.
    fn want_x(&mut self, sid: u32, blk: BlockAddr) -> bool {
        if x_ready(&self.cache, blk) {
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

    /// Let go of the index's split enqueue if this session holds it.
    fn split_unlock(&mut self, sid: u32, ix: usize) {
        let res = split_res(ix);
        if self.enq_holds(sid, res) {
            self.enq_release(res, None);
        }
    }

    /// One step of the splitting descent. True when the session can go on at once.
    pub(in crate::instance) fn split_step(&mut self, sid: u32) -> bool {
        let Some((ix, parent, node)) = self.fg.split_at(sid) else {
            return true;
        };
        if !self.split_locked(sid, ix) {
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
        if self.fg.split_descend(&self.k, &self.cache, sid, nbuf) {
            return true;
        }
        // A full block: it needs new blocks (two for the root, which never moves).
        let needed = if parent.is_none() { 2 } else { 1 };
        let spares = self.fg.spares(sid);
        if let Some(go_on) = self.gather_spares(sid, ix, &spares, needed) {
            return go_on;
        }
        let spares = &spares[..needed];
        let (k, cache) = (&self.k, &mut self.cache);
        let (proc, demand) = self.fg.pin_for_split(k, cache, sid, nbuf, parent, spares);
        self.cpu(proc, demand);
        false
    }

    /// Hold the index's split enqueue, or queue for it. False when the
    /// session waits; it then resumes with an ordinary descent.
    fn split_locked(&mut self, sid: u32, ix: usize) -> bool {
        let res = split_res(ix);
        if self.enq_holds(sid, res) {
            return true;
        }
        let split = self.fg.split_queue(&self.k, sid);
        if !self.enq_get(sid, res, LockMode::X, Wait::EnqTxIndexContention) {
            return false;
        }
        self.fg.sessions_mut().go_to(sid, split);
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
            if !x_ready(&self.cache, s) && !self.want_x(sid, s) {
                return Some(false);
            }
        }
        if spares.len() >= needed {
            return None;
        }
        match self.fg.next_spare(&mut self.k, &self.cache, sid, ix) {
            Spare::OutOfSpace => {
                self.split_unlock(sid, ix);
                self.fg.sessions_mut().go_to(sid, ExecPoint::None);
                Some(true)
            }
            Spare::Taken => Some(true),
            Spare::Ask(blk) => {
                self.request_new(sid, blk);
                Some(false)
            }
        }
    }

    /// The split's CPU step is over: do it, then go on descending.
    pub(in crate::instance) fn split_done(&mut self, sid: u32) {
        let (k, cache, redo) = (&mut self.k, &mut self.cache, &mut self.redo);
        let (next, pins) = self.fg.split_done(k, cache, redo, sid);
        for id in pins {
            self.unpin(id);
        }
        self.fg.sessions_mut().go_to(sid, next);
        self.resume(sid);
    }
}
