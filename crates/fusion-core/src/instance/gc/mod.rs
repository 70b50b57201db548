//! The global cache: the part of the global resource directory mastered
//! here (gcs.rs, routed in route.rs), who masters what (masters.rs), the
//! LMS processes and their queues (lms.rs, the holder's side of a
//! transfer in serve.rs with the boxes reused on that path in spares.rs),
//! dynamic remastering (drm.rs, its steps in drm/route.rs) and the global
//! enqueue service (ges.rs, its steps in ges_route.rs).
//!
//! The rest of the instance asks [`GlobalCache`]'s methods who masters a
//! block or an enqueue; the reconfiguration clears, claims and rebuilds
//! through them; only the files here route requests. This file names no
//! type of a file that has `impl GlobalCache` (serve.rs, ges_route.rs,
//! drm/route.rs, ...): those name it, and the dispatcher reaches their
//! steps by their paths (`gc::serve::Holder`), so no import goes round.

mod drm;
mod gcs;
mod ges;
pub(super) mod ges_route;
mod lms;
mod masters;
mod report;
mod route;
pub(super) mod serve;
mod spares;

pub(super) use gcs::{Drained, PROMOTE_REQ, Route, Source, UnexpectedAck};
pub(super) use lms::CONGESTED_AFTER_NS;
pub use masters::PfMaster;

use crate::cpu::ProcId;
use crate::layout::Layout;
use crate::msg::{Held, LockMode, Lvb, ResName};
use crate::types::{BlockAddr, InstId, InstSet};

pub(super) struct GlobalCache {
    directory: gcs::Directory,
    lms: lms::Lms,
    /// Who masters each block and enqueue (moves at a reconfiguration, and
    /// an object's blocks at a DRM).
    masters: masters::Masters,
    /// Dynamic remastering: the policy statistics, the DRM in progress.
    drm: drm::Drm,
    /// Resources mastered here and this instance's locks.
    ges: ges::Ges,
    /// Boxes kept for reuse on the transfer path.
    spares: spares::Spares,
}

impl GlobalCache {
    /// With no LMS yet: they start with the instance (`start_lms`).
    pub fn new(me: InstId, instances: u8) -> GlobalCache {
        GlobalCache {
            directory: gcs::Directory::new(me),
            lms: lms::Lms::new([]),
            masters: masters::Masters::new(instances),
            drm: drm::Drm::default(),
            ges: ges::Ges::new(me),
            spares: spares::Spares::default(),
        }
    }

    /// The LMS processes are `procs`.
    pub fn start_lms(&mut self, procs: Vec<ProcId>) {
        debug_assert_eq!(self.lms.count(), 0, "LMS started twice");
        self.lms = lms::Lms::new(procs);
    }

    // ----- masters ----------------------------------------------------------------

    /// The master of a block now.
    #[inline(always)]
    pub fn block_master(&self, layout: &Layout, blk: BlockAddr) -> InstId {
        self.masters.block(layout, blk)
    }

    /// The master of a global enqueue resource now.
    #[inline]
    pub fn enqueue_master(&self, layout: &Layout, res: ResName) -> InstId {
        self.masters.enqueue(layout, res)
    }

    /// The departed masters' resources move to `survivors`.
    pub fn set_members(&mut self, survivors: InstSet) {
        self.masters.set_members(survivors);
    }

    // ----- the reconfiguration ------------------------------------------------------

    /// A reconfiguration freezes the cache: what is mastered here is
    /// rebuilt from the members' reports, LMS's queues are dropped.
    pub fn freeze(&mut self) {
        self.directory.clear();
        self.ges.clear_master();
        self.lms.purge();
    }

    /// A member's report of a block it holds, for the rebuilt directory.
    pub fn rebuild(&mut self, from: InstId, blk: BlockAddr, held: Held) {
        self.directory.rebuild(from, blk, held);
    }

    /// A member's report of an enqueue it holds.
    pub fn rebuild_enqueue(&mut self, from: InstId, res: ResName, mode: LockMode, lvb: Lvb) {
        self.ges.rebuild(from, res, mode, lvb);
    }

    /// A block to recover: requests for it queue until it is.
    pub fn claim(&mut self, blk: BlockAddr) {
        self.directory.claim(blk);
    }

    /// Every report is in: the past images to promote, by block.
    pub fn finish_rebuild(&mut self) -> Vec<(BlockAddr, InstId)> {
        self.directory.finish_rebuild()
    }

    /// Where instance recovery starts a block from.
    pub fn recover_source(&mut self, blk: BlockAddr) -> Source {
        self.directory.recover_source(blk)
    }

    /// A block is recovered (`written`: to disk): the holders of its past images.
    pub fn recovered(&mut self, blk: BlockAddr, written: bool) -> InstSet {
        self.directory.recovered(blk, written)
    }

    /// This instance's locks, for its report.
    pub fn held_enqueues(&mut self) -> Vec<(ResName, LockMode, Lvb)> {
        self.ges.held()
    }

    /// This instance's conversions not granted yet, to ask again.
    pub fn pending_converts(&self) -> Vec<(ResName, LockMode, u64)> {
        self.ges.pending_converts()
    }

    // ----- past images ------------------------------------------------------------------

    /// `from` keeps a past image of `blk`.
    pub fn note_pi(&mut self, blk: BlockAddr, from: InstId) {
        self.directory.note_pi(blk, from);
    }

    /// The instance that writes `blk` (its current holder), if any.
    pub fn writer(&self, blk: BlockAddr) -> Option<InstId> {
        self.directory.writer(blk)
    }

    // ----- reading ------------------------------------------------------------------------

    /// A lock's value block as this instance holds it.
    /// Global enqueue locks kept: this instance's, and the resources it masters.
    pub fn enqueue_sizes(&self) -> (usize, usize) {
        self.ges.sizes()
    }

    /// Forget the TX enqueues this instance waits for whose owner is
    /// gone: their waiting sessions (see `Ges::drop_tx_of`).
    pub fn drop_tx_enqueues(&mut self, gone: impl Fn(InstId) -> bool) -> Vec<(ResName, Vec<u32>)> {
        self.ges.drop_tx_of(gone)
    }

    pub fn enqueue_value(&self, res: ResName) -> Lvb {
        self.ges.value(res)
    }

    /// (X holder, S holders, PI holders) of a block mastered here.
    pub fn block_view(&self, blk: BlockAddr) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.directory.view(blk)
    }

    /// Holders and queue length of an enqueue mastered here.
    pub fn enqueue_view(&self, res: ResName) -> Option<(Vec<(InstId, LockMode)>, usize)> {
        self.ges.view(res)
    }

    pub fn lms_count(&self) -> usize {
        self.lms.count()
    }

    pub fn lms_backlog(&self) -> usize {
        self.lms.backlog()
    }
}
