//! The buffer cache: buffers of blocks in their states (current exclusive or
//! shared, consistent-read copies, past images), dirty tracking, pins and LRU.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::block::{Block, Body};
use crate::config::Nanos;
use crate::types::{BlockAddr, Scn, Xid};

#[cfg(test)]
mod tests;
pub(super) mod victim;

pub type BufId = u32;
const NIL: u32 = u32::MAX;

/// Slot `i` of the cache as a [`BufId`]. The slots are the buffers in use
/// plus the few a foreground runs over capacity with while everything is
/// dirty or pinned: `db_cache_size` is at most 1 TB (2^29 buffers of the
/// smallest block size), and a run whose memory estimate exceeds
/// `--max-memory` is refused, so the table never reaches `NIL` (2^32 - 1
/// slots would hold at least 8 TiB of block images).
fn buf_id(i: usize) -> BufId {
    BufId::try_from(i)
        .ok()
        .filter(|&id| id != NIL)
        .expect("a buffer cache has fewer than 2^32 - 1 buffers")
}
/// Buffers a foreground inspects from the cold end before giving up.
const SCAN_MAX: u32 = 256;
/// CR copies kept per block (`_db_block_max_cr_dba`).
pub const CR_PER_BLOCK_MAX: usize = 6;

/// `v$bh.status` of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufState {
    /// `xcur`: the current block, held in X mode.
    Xcur,
    /// `scur`: the current block, held in S mode.
    Scur,
    /// `cr`: a consistent-read copy valid for snapshots `lo..=hi`.
    Cr {
        lo: Scn,
        hi: Scn,
        private_to: Option<Xid>,
    },
    /// `pi`: a past image kept after shipping a dirty block, until a write covers it.
    Pi,
}

#[derive(Clone, Debug)]
pub struct Buffer {
    pub blk: BlockAddr,
    /// Read with [`Buffer::state`]; set through [`Cache::set_state`] (it
    /// keeps the per-block current-buffer index and the reusable marks right).
    state: BufState,
    pub image: Block,
    /// Changed since it was last written. Read with [`Buffer::dirty`] and
    /// set through the cache, as are the pins and `leaving` below (the
    /// cache keeps its [`Cache::reusable`] marks right).
    dirty: bool,
    pub dirty_since: Nanos,
    /// Redo byte address of this instance's last change to the block.
    pub last_rba: u64,
    /// Redo byte address where this instance's first change not yet on disk
    /// begins (its first-dirty RBA), for a current buffer or a past image
    /// this instance changed; `None` when it holds no such change (clean, or
    /// dirtied only by other instances). The checkpoint is the lowest one.
    /// Read with [`Buffer::first_rba`], set with [`Cache::set_first_rba`]
    /// (it keeps the checkpoint queue).
    first_rba: Option<u64>,
    /// Dirtied in more than one cache (shipped while dirty): its write is a fusion write.
    pub global: bool,
    /// Readers holding a shared pin.
    pins: u16,
    /// A session changing the block holds the exclusive pin.
    xpin: bool,
    /// LMS decided to ship it current; local changes wait (`gc buffer busy release`).
    leaving: bool,
    /// The fairness counter of an xcur buffer: CR requests LMS served from
    /// it since this instance last changed the block (`_fairness_threshold`).
    cr_served: u32,
    chain: u32,
}

/// A buffer's neighbours on the LRU list, kept apart from the buffers so
/// that moving one touches two plain words, not three whole buffers.
#[derive(Clone, Copy, Debug)]
struct Link {
    prev: u32,
    next: u32,
    /// Equal to [`StuckTail::epoch`] while the buffer is in the stuck tail.
    stuck: u32,
}

const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
    stuck: 0,
};

impl Buffer {
    /// `v$bh.status`; changed only through [`Cache::set_state`].
    pub fn state(&self) -> BufState {
        self.state
    }
    pub fn is_current(&self) -> bool {
        matches!(self.state, BufState::Xcur | BufState::Scur)
    }
    pub fn pinned(&self) -> bool {
        self.pins > 0 || self.xpin
    }
    /// A session changing the block holds it pinned exclusively.
    pub fn pinned_exclusive(&self) -> bool {
        self.xpin
    }
    pub fn dirty(&self) -> bool {
        self.dirty
    }
    pub fn first_rba(&self) -> Option<u64> {
        self.first_rba
    }
    /// LMS is shipping it current; local changes wait.
    pub fn leaving(&self) -> bool {
        self.leaving
    }
    /// Whether the buffer could be replaced once nobody pins it: a CR copy
    /// or a current buffer, clean and staying. (Dirty buffers and past
    /// images wait for DBWR.)
    fn reusable(&self) -> bool {
        !self.leaving && !self.dirty && self.state != BufState::Pi
    }
    /// Whether the buffer could be replaced now, whoever needs its block
    /// (the plain walk the victim scan is checked against asks).
    #[cfg(any(test, debug_assertions))]
    fn replaceable(&self) -> bool {
        self.reusable() && !self.pinned()
    }
}

/// What the last victim scans learnt about the cold end of the LRU: its
/// `len` coldest buffers, up to `last`, are not reusable. A full cache
/// with a dirty tail is scanned again and again while DBWR writes; each
/// scan then starts past this run of buffers instead of walking it (it
/// still counts them as inspected, as the walk would have). The run stays
/// true until one of its buffers leaves the list or becomes reusable,
/// which starts a new epoch: the stamps of the old run no longer match.
#[derive(Clone, Copy, Debug)]
struct StuckTail {
    len: u32,
    last: u32,
    epoch: u32,
}

impl StuckTail {
    /// Nothing known yet: the first scan walks from the tail.
    fn new() -> StuckTail {
        StuckTail {
            len: 0,
            last: NIL,
            epoch: 1,
        }
    }

    /// How many of the coldest buffers are known not to be reusable.
    #[cfg(test)]
    fn len(&self) -> u32 {
        self.len
    }
}

/// Buffers indexed by slot, chained per block, on one LRU list (head = most recent).
#[derive(Clone, Debug)]
pub struct Cache {
    slots: Vec<Option<Buffer>>,
    /// The LRU links of each slot.
    links: Vec<Link>,
    /// [`Buffer::reusable`] of each slot, kept apart like the links: the
    /// victim scan inspects up to [`SCAN_MAX`] buffers of a full cache with
    /// a dirty tail, and reads a byte of each instead of a whole buffer.
    /// (Pins come and go with every visit: the scan reads them from the
    /// few reusable buffers it finds.)
    reusable: Vec<bool>,
    stuck_tail: StuckTail,
    free: Vec<u32>,
    heads: Vec<u32>,
    /// Per block, its current (xcur or scur) buffer, so finding it does not
    /// walk the block's chain of CR copies and past images.
    currents: Vec<u32>,
    lru_head: u32,
    lru_tail: u32,
    used: usize,
    /// Buffers that are CR copies private to a transaction, so that
    /// [`Cache::forget_private`] walks no chain when there are none.
    private_crs: usize,
    capacity: usize,
    /// Blocks whose current holding (xcur, scur or none) changed, kept only
    /// once a checker asked for them ([`Cache::take_current_changes`]).
    current_changes: Option<CurrentChanges>,
    /// The body of [`Cache::placeholder`]s: one per cache, so that a block
    /// image moved out of a buffer or a box allocates nothing in its stead.
    empty_body: Arc<Body>,
    /// The checkpoint queue: `(first-dirty RBA, buffer)` for every buffer
    /// holding one, lowest first, so the checkpoint position is read off
    /// its top instead of a scan of the cache after every DBWR batch. An
    /// entry whose buffer went or moved on is dropped when it comes to the
    /// top; the queue is rebuilt when such entries outnumber the buffers.
    first_dirty: BinaryHeap<Reverse<(u64, BufId)>>,
}

/// The change log behind [`Cache::take_current_changes`].
#[derive(Clone, Debug, Default)]
struct CurrentChanges {
    blocks: Vec<BlockAddr>,
    /// More changes than [`CURRENT_CHANGES_MAX`] came between two takes:
    /// the log was dropped and the taker must look at everything.
    overflowed: bool,
}

/// Changes logged between two takes before the log gives up (a checker takes
/// them after every event, which changes a handful).
const CURRENT_CHANGES_MAX: usize = 4096;

impl Cache {
    pub fn new(capacity: usize, total_blocks: u32) -> Cache {
        Cache {
            slots: Vec::new(),
            links: Vec::new(),
            reusable: Vec::new(),
            stuck_tail: StuckTail::new(),
            free: Vec::new(),
            heads: vec![NIL; total_blocks as usize],
            currents: vec![NIL; total_blocks as usize],
            lru_head: NIL,
            lru_tail: NIL,
            used: 0,
            private_crs: 0,
            capacity: capacity.max(16),
            current_changes: None,
            empty_body: Arc::new(Body::Unformatted),
            first_dirty: BinaryHeap::new(),
        }
    }

    /// An empty image of `blk`, to leave where an image was moved out.
    pub fn placeholder(&self, blk: BlockAddr) -> Block {
        Block::sharing(blk, &self.empty_body)
    }

    /// Moves into `out` the blocks whose current holding changed since the
    /// last call, so that a coherence check looks at those only. Returns
    /// whether `out` got every change: not on the first call (the log starts
    /// then) nor after more than [`CURRENT_CHANGES_MAX`] changes between two
    /// calls; the caller then looks at every buffer.
    pub fn take_current_changes(&mut self, out: &mut Vec<BlockAddr>) -> bool {
        match &mut self.current_changes {
            Some(log) => {
                out.append(&mut log.blocks);
                !std::mem::take(&mut log.overflowed)
            }
            None => {
                self.current_changes = Some(CurrentChanges::default());
                false
            }
        }
    }

    fn note_current_change(&mut self, blk: BlockAddr) {
        if let Some(log) = &mut self.current_changes {
            if log.blocks.len() < CURRENT_CHANGES_MAX {
                log.blocks.push(blk);
            } else {
                log.blocks.clear();
                log.overflowed = true;
            }
        }
    }

    pub fn used(&self) -> usize {
        self.used
    }

    /// Buffers the cache holds at most (`db_cache_size` in buffers).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn get(&self, id: BufId) -> &Buffer {
        match self.slots.get(id as usize) {
            Some(Some(b)) => b,
            _ => panic!("buffer {id} is not allocated"),
        }
    }

    pub fn get_mut(&mut self, id: BufId) -> &mut Buffer {
        match self.slots.get_mut(id as usize) {
            Some(Some(b)) => b,
            _ => panic!("buffer {id} is not allocated"),
        }
    }

    pub fn try_get(&self, id: BufId) -> Option<&Buffer> {
        self.slots.get(id as usize).and_then(|b| b.as_ref())
    }

    /// Buffers of one block, most recently inserted first.
    pub fn buffers_of(&self, blk: BlockAddr) -> BufIter<'_> {
        BufIter {
            cache: self,
            at: self.heads.get(blk.idx()).copied().unwrap_or(NIL),
        }
    }

    /// The current (xcur or scur) buffer of a block.
    pub fn current(&self, blk: BlockAddr) -> Option<BufId> {
        let found = match self.currents.get(blk.idx()) {
            Some(&id) if id != NIL => Some(id),
            Some(_) => None,
            // A block outside the layout has no index entry (and no chain).
            None => self.scan_current(blk),
        };
        debug_assert_eq!(found, self.scan_current(blk));
        found
    }

    /// The first current buffer on the block's chain (most recently inserted first).
    fn scan_current(&self, blk: BlockAddr) -> Option<BufId> {
        self.buffers_of(blk).find(|&id| self.get(id).is_current())
    }

    /// Bring the current-buffer index of `blk` up to date after a change.
    fn reindex_current(&mut self, blk: BlockAddr) {
        let found = self.scan_current(blk).unwrap_or(NIL);
        if let Some(c) = self.currents.get_mut(blk.idx()) {
            *c = found;
        }
    }

    /// Change a buffer's state.
    pub fn set_state(&mut self, id: BufId, state: BufState) {
        let b = self.get_mut(id);
        let was_current = b.is_current();
        let was_private = is_private(b.state);
        b.state = state;
        self.private_crs =
            self.private_crs + usize::from(is_private(state)) - usize::from(was_private);
        let b = self.get(id);
        let blk = b.blk;
        let is_current = b.is_current();
        self.set_reusable(id, b.reusable());
        if was_current != is_current {
            self.reindex_current(blk);
        }
        if was_current || is_current {
            self.note_current_change(blk);
        }
    }

    /// Add a buffer (the caller made room first with [`Cache::victim`]).
    pub fn insert(&mut self, blk: BlockAddr, state: BufState, image: Block) -> BufId {
        let chain = self.heads.get(blk.idx()).copied().unwrap_or(NIL);
        let buf = Buffer {
            blk,
            state,
            image,
            dirty: false,
            dirty_since: 0,
            last_rba: 0,
            first_rba: None,
            global: false,
            pins: 0,
            xpin: false,
            leaving: false,
            cr_served: 0,
            chain,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = Some(buf);
                id
            }
            None => {
                self.slots.push(Some(buf));
                self.links.push(UNLINKED);
                self.reusable.push(false);
                buf_id(self.slots.len() - 1)
            }
        };
        // At the head of the list: not in the stuck tail.
        self.reusable[id as usize] = state != BufState::Pi;
        if let Some(h) = self.heads.get_mut(blk.idx()) {
            *h = id;
        }
        if matches!(state, BufState::Xcur | BufState::Scur)
            && let Some(c) = self.currents.get_mut(blk.idx())
        {
            // The newest current buffer is the one the chain finds first.
            *c = id;
        }
        if matches!(state, BufState::Xcur | BufState::Scur) {
            self.note_current_change(blk);
        }
        self.used += 1;
        self.private_crs += usize::from(is_private(state));
        self.link_head(id);
        debug_assert_eq!(
            self.used + self.free.len(),
            self.slots.len(),
            "after inserting buffer {id}, the buffers in use and the free slots do not add up"
        );
        id
    }

    /// Remove a buffer and return its contents.
    pub fn remove(&mut self, id: BufId) -> Buffer {
        self.detach(id);
        match self.slots.get_mut(id as usize).and_then(|s| s.take()) {
            Some(b) => b,
            None => panic!("buffer {id} removed twice"),
        }
    }

    /// Remove a buffer, dropping its contents where they are (a buffer is
    /// large: not copied out only to be dropped).
    fn discard(&mut self, id: BufId) {
        self.detach(id);
        if let Some(s) = self.slots.get_mut(id as usize) {
            *s = None;
        }
    }

    /// Take a buffer off the LRU list and its block's chain, and free its id
    /// (the caller empties the slot).
    fn detach(&mut self, id: BufId) {
        self.unlink(id);
        let (blk, chain, private, current) = {
            let b = self.get(id);
            (b.blk, b.chain, is_private(b.state), b.is_current())
        };
        if current {
            self.note_current_change(blk);
        }
        // Unchain.
        let head = &mut self.heads[blk.idx()];
        if *head == id {
            *head = chain;
        } else {
            let mut at = *head;
            while at != NIL {
                let next = self.slots[at as usize].as_ref().map_or(NIL, |b| b.chain);
                if next == id {
                    if let Some(b) = self.slots[at as usize].as_mut() {
                        b.chain = chain;
                    }
                    break;
                }
                at = next;
            }
        }
        if self.currents.get(blk.idx()) == Some(&id) {
            self.reindex_current(blk);
        }
        self.free.push(id);
        self.used -= 1;
        self.private_crs -= usize::from(private);
        debug_assert_eq!(
            self.used + self.free.len(),
            self.slots.len(),
            "after detaching buffer {id}, the buffers in use and the free slots do not add up"
        );
    }

    /// Mark a buffer most recently used.
    pub fn touch(&mut self, id: BufId) {
        if self.lru_head != id {
            self.unlink(id);
            self.link_head(id);
        }
    }

    /// Drop the oldest unpinned CR copies of `blk` beyond [`CR_PER_BLOCK_MAX`] - 1,
    /// making room for one more.
    pub fn limit_cr(&mut self, blk: BlockAddr) {
        // The chain is newest first: the oldest are at the end. Walked in
        // place (the next link is read before a copy is removed).
        let mut at = self.heads.get(blk.idx()).copied().unwrap_or(NIL);
        let mut seen = 0;
        while at != NIL {
            let b = self.get(at);
            let next = b.chain;
            if matches!(b.state, BufState::Cr { .. }) {
                if seen >= CR_PER_BLOCK_MAX - 1 && !b.pinned() {
                    self.discard(at);
                }
                seen += 1;
            }
            at = next;
        }
        debug_assert!(
            self.buffers_of(blk)
                .filter(|&id| {
                    let b = self.get(id);
                    matches!(b.state, BufState::Cr { .. }) && !b.pinned()
                })
                .count()
                < CR_PER_BLOCK_MAX,
            "{blk} keeps no room for another CR copy"
        );
    }

    /// Remove the buffers of `blk` that `doomed` picks (walking the chain in
    /// place, no list first); returns how many went.
    pub fn remove_where(&mut self, blk: BlockAddr, doomed: impl Fn(BufId, &Buffer) -> bool) -> u64 {
        let mut at = self.heads.get(blk.idx()).copied().unwrap_or(NIL);
        let mut removed = 0;
        while at != NIL {
            let b = self.get(at);
            let next = b.chain;
            if doomed(at, b) {
                self.discard(at);
                removed += 1;
            }
            at = next;
        }
        removed
    }

    /// A transaction changed `blk` again: CR copies built for it show its older
    /// changes only, so none may serve it any more. A pinned copy stays for
    /// its reader with an empty range; the others go.
    pub fn forget_private(&mut self, blk: BlockAddr, xid: Xid) {
        if self.private_crs == 0 {
            return;
        }
        let mut at = self.heads.get(blk.idx()).copied().unwrap_or(NIL);
        while at != NIL {
            let b = self.get(at);
            let next = b.chain;
            if matches!(b.state, BufState::Cr { private_to: Some(p), .. } if p == xid) {
                if b.pinned() {
                    self.set_state(
                        at,
                        BufState::Cr {
                            lo: Scn(1),
                            hi: Scn::ZERO,
                            private_to: Some(xid),
                        },
                    );
                } else {
                    self.discard(at);
                }
            }
            at = next;
        }
    }

    /// The current block leaves for another instance: a dirty one stays as
    /// this cache's only past image (the image travels, the copy stays);
    /// a clean one is dropped. Returns the image and whether a PI was kept.
    pub fn give_up_current(&mut self, id: BufId) -> (Block, bool) {
        let blk = self.get(id).blk;
        debug_assert!(
            self.get(id).is_current(),
            "{blk} leaves from buffer {id}, which is not current"
        );
        // The image of the older past image this one replaces: the copy
        // kept here reuses its vectors instead of allocating its own.
        let mut spare = None;
        if self.get(id).dirty {
            // A newer past image makes an older one useless: keep one per
            // block. It holds the older one's changes too, so it keeps the
            // lowest first-dirty address (the checkpoint must not pass them).
            let older = self
                .buffers_of(blk)
                .filter(|&other| other != id && self.get(other).state == BufState::Pi)
                .filter_map(|other| self.get(other).first_rba)
                .min();
            if let Some(o) = older {
                let first = self.get(id).first_rba.map_or(o, |f| f.min(o));
                self.set_first_rba(id, Some(first));
            }
            if let Some(old) = self
                .buffers_of(blk)
                .find(|&other| other != id && self.get(other).state == BufState::Pi)
            {
                let empty = self.placeholder(blk);
                spare = Some(std::mem::replace(&mut self.get_mut(old).image, empty));
            }
            self.remove_where(blk, |other, b| other != id && b.state == BufState::Pi);
        }
        self.get_mut(id).leaving = false;
        if self.get(id).dirty {
            // The original, whose vectors have room to grow and whose undo
            // no other image shares, travels to the next holder, which
            // changes it; the copy kept here is the past image's own.
            let mut copy = spare.unwrap_or_else(|| self.placeholder(blk));
            let b = self.get_mut(id);
            copy.clone_from(&b.image);
            let image = std::mem::replace(&mut b.image, copy);
            self.set_state(id, BufState::Pi);
            debug_assert!(
                self.buffers_of(blk)
                    .all(|other| other == id || self.get(other).state != BufState::Pi),
                "{blk} keeps more than one past image here"
            );
            (image, true)
        } else {
            (self.remove(id).image, false)
        }
    }

    /// LMS served a CR request from current buffer `id`: one more on its
    /// fairness counter.
    pub fn cr_served(&mut self, id: BufId) {
        let b = self.get_mut(id);
        b.cr_served = b.cr_served.saturating_add(1);
    }

    /// Whether LMS should down-convert xcur buffer `id` rather than build
    /// another CR copy from it: it served `threshold` CR requests since the
    /// block was last changed here (`_fairness_threshold`; 0 never) and no
    /// session is changing it or shipping it away right now.
    pub fn fairness_due(&self, id: BufId, threshold: u32) -> bool {
        let b = self.get(id);
        threshold > 0
            && b.cr_served >= threshold
            && b.state == BufState::Xcur
            && !b.xpin
            && !b.leaving
    }

    /// Down-convert xcur buffer `id` to scur for fairness. It stays as it
    /// is otherwise (dirty or not: this instance still writes it).
    pub fn down_convert(&mut self, id: BufId) {
        debug_assert_eq!(self.get(id).state, BufState::Xcur);
        self.get_mut(id).cr_served = 0;
        self.set_state(id, BufState::Scur);
    }

    /// Mark current buffer `id` changed by redo at `rba`: dirty since `now`
    /// unless it already was. Returns whether the change cleared a fairness
    /// counter (CR requests had been served since the last change).
    pub fn dirtied(&mut self, id: BufId, rba: u64, now: Nanos) -> bool {
        let b = self.get_mut(id);
        debug_assert!(
            b.is_current(),
            "{} changed in buffer {id}, which is not current",
            b.blk
        );
        // This instance's redo only grows, and only it changes the buffer.
        debug_assert!(
            rba >= b.last_rba,
            "{}'s last change went back from RBA {} to {rba}",
            b.blk,
            b.last_rba
        );
        if !b.dirty {
            b.dirty = true;
            b.dirty_since = now;
        }
        b.last_rba = rba;
        let cleared = std::mem::take(&mut b.cr_served) > 0;
        self.set_reusable(id, false);
        cleared
    }

    /// Set whether buffer `id` holds changes not yet on disk (a block
    /// installed dirty, or written), dirty since `since`.
    pub fn set_dirty(&mut self, id: BufId, dirty: bool, since: Nanos) {
        let b = self.get_mut(id);
        b.dirty = dirty;
        b.dirty_since = since;
        self.remark(id);
    }

    /// DBWR wrote buffer `id`'s image: it is clean.
    pub fn set_clean(&mut self, id: BufId) {
        self.get_mut(id).dirty = false;
        self.remark(id);
    }

    /// A reader pins buffer `id` (shared).
    pub fn pin_shared(&mut self, id: BufId) {
        let b = self.get_mut(id);
        b.pins += 1;
    }

    /// A session about to change the block pins buffer `id` exclusively.
    pub fn pin_exclusive(&mut self, id: BufId) {
        self.get_mut(id).xpin = true;
    }

    /// Release one pin of buffer `id`: the exclusive one if held, else a
    /// shared one. Returns whether the buffer is still pinned.
    pub fn unpin(&mut self, id: BufId) -> bool {
        let b = self.get_mut(id);
        if b.xpin {
            b.xpin = false;
        } else {
            debug_assert!(b.pins > 0, "unpin of {}'s unpinned buffer {id}", b.blk);
            b.pins -= 1;
        }
        b.pinned()
    }

    /// LMS decided to ship current buffer `id` (or gave up doing so).
    pub fn set_leaving(&mut self, id: BufId, leaving: bool) {
        self.get_mut(id).leaving = leaving;
        self.remark(id);
    }

    /// Bring buffer `id`'s [`Cache::reusable`] mark up to date.
    #[inline]
    fn remark(&mut self, id: BufId) {
        self.set_reusable(id, self.get(id).reusable());
    }

    /// A newer current image of the block replaces current buffer `id`: it
    /// goes, unless a reader still holds it pinned; then it stays for that
    /// reader only (an empty CR range) until the pin goes.
    pub fn retire_current(&mut self, id: BufId) {
        debug_assert!(
            self.get(id).is_current(),
            "buffer {id} retired as current while it is not"
        );
        if self.get(id).pinned() {
            self.set_state(
                id,
                BufState::Cr {
                    lo: Scn(1),
                    hi: Scn::ZERO,
                    private_to: None,
                },
            );
        } else {
            self.discard(id);
        }
    }

    /// The master invalidates this cache's shared copy of `blk`. Returns
    /// true when that copy was dirty: the master never invalidates the S
    /// holder that writes the block, so that is a protocol error (the copy
    /// stays as a past image, so the change is not lost with it).
    pub fn invalidate_shared(&mut self, blk: BlockAddr) -> bool {
        if let Some(id) = self.current(blk)
            && self.get(id).state == BufState::Scur
        {
            if self.get(id).dirty {
                self.set_state(id, BufState::Pi);
                return true;
            }
            // A reader may still hold it pinned; nobody else may use it
            // (its valid range was never worked out): an empty range.
            self.set_state(
                id,
                BufState::Cr {
                    lo: Scn(1),
                    hi: Scn::ZERO,
                    private_to: None,
                },
            );
        }
        false
    }

    /// A write at `scn` covered the past images of `blk`: drop them. Returns how many.
    pub fn discard_past_images(&mut self, blk: BlockAddr, scn: Scn) -> u64 {
        self.remove_where(blk, |_, b| b.state == BufState::Pi && b.image.scn <= scn)
    }

    /// This instance's changes to `blk` below redo address `rba` are on
    /// disk: its past images' first-dirty addresses move up to it.
    pub fn past_images_on_disk_below(&mut self, blk: BlockAddr, rba: u64) {
        let mut at = self.heads.get(blk.idx()).copied().unwrap_or(NIL);
        while at != NIL {
            let id = buf_id(at as usize);
            let b = self.get(id);
            let next = b.chain;
            if b.state == BufState::Pi
                && let Some(first) = b.first_rba
                && first < rba
            {
                self.set_first_rba(id, Some(rba));
            }
            at = next;
        }
    }

    /// Set where buffer `id`'s first change not yet on disk begins
    /// ([`Buffer::first_rba`]).
    pub fn set_first_rba(&mut self, id: BufId, first_rba: Option<u64>) {
        let b = self.get_mut(id);
        if b.first_rba == first_rba {
            return;
        }
        b.first_rba = first_rba;
        if let Some(rba) = first_rba {
            if self.first_dirty.len() > 2 * self.slots.len() + 64 {
                self.rebuild_first_dirty();
            } else {
                self.first_dirty.push(Reverse((rba, id)));
            }
        }
    }

    /// The lowest first-dirty RBA of the buffers (the checkpoint position,
    /// when there is one).
    pub fn first_dirty_rba(&mut self) -> Option<u64> {
        while let Some(&Reverse((rba, id))) = self.first_dirty.peek() {
            if self.try_get(id).and_then(|b| b.first_rba) == Some(rba) {
                break;
            }
            self.first_dirty.pop();
        }
        let lowest = self.first_dirty.peek().map(|&Reverse((rba, _))| rba);
        debug_assert_eq!(
            lowest,
            self.iter().filter_map(|(_, b)| b.first_rba).min(),
            "the checkpoint queue's top is not the lowest first-dirty RBA"
        );
        lowest
    }

    /// The checkpoint queue anew from the buffers (it holds too many
    /// entries of buffers that went or moved on).
    #[cold]
    fn rebuild_first_dirty(&mut self) {
        let entries: Vec<_> = self
            .iter()
            .filter_map(|(id, b)| b.first_rba.map(|rba| Reverse((rba, id))))
            .collect();
        self.first_dirty = BinaryHeap::from(entries);
    }

    /// Dirty current buffers DBWR may write, with when they were dirtied:
    /// those dirty for `age` or longer (the checkpoint), and with `cold`, the
    /// coldest `cold` buffers whatever their age (sorted as 0, written first).
    pub fn write_candidates(
        &self,
        now: Nanos,
        age: Nanos,
        cold: Option<usize>,
    ) -> Vec<(Nanos, BufId)> {
        // A dirty scur buffer is one this instance down-converted for
        // fairness: it still writes it.
        debug_assert_eq!(
            self.lru_len(),
            self.used,
            "the LRU list does not list every buffer in use"
        );
        let writable = |b: &Buffer| b.dirty && b.is_current() && !b.leaving;
        let mut candidates: Vec<(Nanos, BufId)> = self
            .iter()
            .filter(|(_, b)| writable(b) && now.saturating_sub(b.dirty_since) >= age)
            .map(|(id, b)| (b.dirty_since, id))
            .collect();
        if let Some(n) = cold {
            for id in self.coldest(n) {
                if writable(self.get(id)) {
                    candidates.push((0, id));
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup_by_key(|c| c.1);
        candidates
    }

    /// Every allocated buffer (for checkers and DBWR scans), in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (BufId, &Buffer)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|b| (buf_id(i), b)))
    }

    /// Buffers from the cold end of the LRU, at most `n`.
    pub fn coldest(&self, n: usize) -> Vec<BufId> {
        let mut out = Vec::new();
        let mut at = self.lru_tail;
        while at != NIL && out.len() < n {
            out.push(at);
            at = self.links[at as usize].prev;
        }
        out
    }

    /// Buffers on the LRU list, walked from the head (checks).
    fn lru_len(&self) -> usize {
        let mut n = 0;
        let mut at = self.lru_head;
        while at != NIL {
            n += 1;
            at = self.links[at as usize].next;
        }
        n
    }

    #[inline]
    fn unlink(&mut self, id: BufId) {
        debug_assert!(self.try_get(id).is_some(), "buffer {id} is not allocated");
        if self.in_stuck_tail(id) {
            // The run from the tail is broken (or shortened at its end):
            // walk it again next time.
            self.forget_stuck_tail();
        }
        let Link { prev, next, .. } = self.links[id as usize];
        if prev != NIL {
            self.links[prev as usize].next = next;
        } else if self.lru_head == id {
            self.lru_head = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        } else if self.lru_tail == id {
            self.lru_tail = prev;
        }
        self.links[id as usize] = UNLINKED;
    }

    fn link_head(&mut self, id: BufId) {
        let old = self.lru_head;
        self.links[id as usize] = Link {
            prev: NIL,
            next: old,
            stuck: 0,
        };
        if old != NIL {
            self.links[old as usize].prev = id;
        } else {
            self.lru_tail = id;
        }
        self.lru_head = id;
    }
}

fn is_private(state: BufState) -> bool {
    matches!(
        state,
        BufState::Cr {
            private_to: Some(_),
            ..
        }
    )
}

pub struct BufIter<'a> {
    cache: &'a Cache,
    at: u32,
}

impl Iterator for BufIter<'_> {
    type Item = BufId;
    fn next(&mut self) -> Option<BufId> {
        if self.at == NIL {
            return None;
        }
        let id = self.at;
        self.at = self.cache.get(id).chain;
        Some(id)
    }
}
