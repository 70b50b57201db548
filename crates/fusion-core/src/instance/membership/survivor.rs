//! A survivor's side of instance recovery, in its own buffer cache: where
//! the recovering instance finds this instance's past image of a block, and
//! the dead instances' uncommitted changes rolled back in the blocks held
//! here (SMON's steps are in smon.rs).

use super::super::cache::{BufId, BufState, Cache};
use super::super::kernel::Kernel;
use crate::msg::RecoverSource;
use crate::stats::Stat;
use crate::types::{BlockAddr, Xid};

// ----- the past-image holder's side ------------------------------------------------------

/// Where the recovering instance finds this instance's newest past image of
/// `blk`: the image, or the disk (written and discarded meanwhile).
pub(in crate::instance) fn past_image_source(cache: &Cache, blk: BlockAddr) -> RecoverSource {
    let newest = cache
        .buffers_of(blk)
        .filter(|&id| cache.get(id).state() == BufState::Pi)
        .max_by_key(|&id| cache.get(id).image.scn);
    match newest {
        Some(id) => RecoverSource::Image(Box::new(cache.get(id).image.clone())),
        None => RecoverSource::Disk,
    }
}

// ----- transaction recovery in the cache -------------------------------------------------

/// Transaction recovery once a dead thread is recovered: the dead
/// instances' uncommitted changes in blocks this instance holds current
/// in X (shipped to it before the death, so instance recovery found them
/// current and left them as they were) are rolled back now, as SMON rolls
/// back dead transactions, rather than only when a session meets their
/// row locks (found by chaos: a block nobody touched again kept the
/// change). A buffer in use, or on its way out, is rolled back when its
/// last pin goes (see [`roll_back_dead_at_unpin`]). `dead`: whether a
/// transaction is a dead instance's uncommitted one; `end_rba`: where the
/// redo ends (the rolled-back buffers are dirty from there).
pub(in crate::instance) fn roll_back_dead_in_cache(
    k: &mut Kernel,
    cache: &mut Cache,
    end_rba: u64,
    dead: &impl Fn(Xid) -> bool,
) {
    let ids: Vec<BufId> = cache.iter().map(|(id, _)| id).collect();
    for id in ids {
        roll_back_dead_at_unpin(k, cache, end_rba, id, dead);
    }
}

/// Roll back, in one unpinned current buffer, every change of a dead
/// instance's uncommitted transaction (`dead`, as above). A buffer held in
/// S counts too (found by chaos, seed 40403): the dead instance, holding
/// the block in X, down-converted it and shipped shared copies; instance
/// recovery found the block current at a survivor and left it, and the
/// dead change stayed in every shared copy.
pub(in crate::instance) fn roll_back_dead_at_unpin(
    k: &mut Kernel,
    cache: &mut Cache,
    end_rba: u64,
    buf: BufId,
    dead: &impl Fn(Xid) -> bool,
) {
    let Some(b) = cache.try_get(buf) else {
        return;
    };
    if !b.is_current() || b.pinned() || b.leaving() {
        return;
    }
    let xids: Vec<Xid> = b
        .image
        .itl
        .iter()
        .filter(|e| e.commit.is_none() && dead(e.xid))
        .map(|e| e.xid)
        .collect();
    for xid in xids {
        roll_back_dead(k, cache, end_rba, buf, xid);
    }
}

/// On-demand rollback: `xid`, a dead instance's uncommitted transaction
/// (the caller knows), has changes in current buffer `buf`: roll them back
/// here. Returns whether anything was rolled back (then look at the block
/// again). The buffer is dirty afterwards if this instance writes the
/// block (held in X, or a dirty shared copy it down-converted); a clean
/// shared copy stays clean, as its holder never writes the block: every
/// holder rolls its own copy back, and the disk's image, if it has the
/// change, is rolled back by whoever changes the block next.
pub(in crate::instance) fn roll_back_dead(
    k: &mut Kernel,
    cache: &mut Cache,
    end_rba: u64,
    buf: BufId,
    xid: Xid,
) -> bool {
    let scn = k.next_scn();
    let applied = cache.get_mut(buf).image.roll_back(xid, scn);
    if applied == 0 {
        return false;
    }
    k.add(Stat::RollbackUndoRecordsApplied, u64::from(applied));
    let b = cache.get(buf);
    if b.state() == BufState::Xcur || b.dirty() {
        let now = k.now();
        cache.dirtied(buf, end_rba, now);
    }
    true
}
