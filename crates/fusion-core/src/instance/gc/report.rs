//! The global cache's side of a reconfiguration's reports: what this
//! instance holds, one report per new master (current blocks, past images,
//! blocks granted and still being read, enqueue locks), and a member's
//! report rebuilt into the directory mastered here. The reconfiguration
//! (membership/reconfig.rs) sends and waits for them; the dispatcher adds
//! the transaction table's part.

use super::super::cache::{BufState, Cache};
use super::super::events::IoPurpose;
use super::super::kernel::Kernel;
use super::GlobalCache;
use crate::msg::{DeadThread, Held, LockMode, Lvb, Rebuild, ResName};
use crate::types::{BlockAddr, InstId, InstSet};

impl GlobalCache {
    /// What this instance holds, as one report per member of the new
    /// incarnation `members` (by the new masters: call after
    /// [`GlobalCache::set_members`]), each with what recovery found so far
    /// (`dead`, for an instance that joins) and this life's first
    /// transaction number.
    pub fn holdings(
        &mut self,
        k: &Kernel,
        cache: &Cache,
        members: InstSet,
        dead: &[DeadThread],
        xid_base: u64,
    ) -> Vec<(InstId, Rebuild)> {
        debug_assert!(
            members.contains(k.id()),
            "{} reports to others only",
            k.id()
        );
        let mut reports: Vec<(InstId, Rebuild)> = members
            .iter()
            .map(|m| {
                (
                    m,
                    Rebuild {
                        members,
                        dead: dead.to_vec(),
                        xid_base,
                        ..Rebuild::default()
                    },
                )
            })
            .collect();
        let slot = |reports: &[(InstId, Rebuild)], m: InstId| {
            reports.iter().position(|(i, _)| *i == m).unwrap_or(0)
        };
        for (blk, held) in held_blocks(k, cache) {
            let m = self.block_master(k.layout(), blk);
            // The masters are members: every block has its report.
            debug_assert!(members.contains(m), "{blk} mastered by {m}, not a member");
            let i = slot(&reports, m);
            reports[i].1.blocks.push((blk, held));
        }
        for (res, mode, lvb) in self.held_enqueues() {
            let m = self.enqueue_master(k.layout(), res);
            debug_assert!(members.contains(m), "{res:?} mastered by {m}, not a member");
            let i = slot(&reports, m);
            reports[i].1.locks.push((res, mode, lvb));
        }
        reports
    }

    /// `from`'s report of what it holds of the resources mastered here,
    /// and the blocks claimed for recovery here, into the rebuilt directory.
    pub fn rebuild_from(
        &mut self,
        from: InstId,
        blocks: Vec<(BlockAddr, Held)>,
        locks: Vec<(ResName, LockMode, Lvb)>,
        claims: Vec<BlockAddr>,
    ) {
        for (blk, held) in blocks {
            self.rebuild(from, blk, held);
        }
        for (res, mode, lvb) in locks {
            self.rebuild_enqueue(from, res, mode, lvb);
        }
        for blk in claims {
            self.claim(blk);
        }
    }
}

/// Every block this instance holds current or as a past image (a block
/// granted and still being read from disk is held in the mode granted:
/// its master recorded it so, and waits for its `Installed`), by address.
pub(super) fn held_blocks(k: &Kernel, cache: &Cache) -> Vec<(BlockAddr, Held)> {
    let mut blocks: Vec<(BlockAddr, Held)> = Vec::new();
    for (_, b) in cache.iter() {
        let held = match b.state() {
            BufState::Xcur => Held::X { dirty: b.dirty() },
            BufState::Scur => Held::S { dirty: b.dirty() },
            BufState::Pi => Held::Pi { scn: b.image.scn },
            BufState::Cr { .. } => continue,
        };
        blocks.push((b.blk, held));
    }
    for purpose in k.io_in_flight() {
        if let IoPurpose::GrantRead { blk, req, mode, .. } = *purpose {
            blocks.push((blk, Held::Reading { mode, req }));
        }
    }
    blocks.sort_unstable_by_key(|&(b, _)| b);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{Block, Body};
    use crate::config::Catalog;
    use crate::msg::{Io, Mode};
    use crate::types::Scn;

    const ME: InstId = InstId(0);

    #[test]
    fn each_master_gets_what_is_held_of_its_blocks_and_rebuilds_it() {
        let mut k = Kernel::for_instance(ME, &Catalog::default());
        let mut gc = GlobalCache::new(ME, 2);
        let mut cache = Cache::new(16, 64);
        let image = |a: u32| Block::new(BlockAddr(a), Body::Table { rows: vec![] });
        let x = cache.insert(BlockAddr(1), BufState::Xcur, image(1));
        cache.set_dirty(x, true, 0);
        cache.insert(BlockAddr(2), BufState::Pi, image(2));
        let cr = BufState::Cr {
            lo: Scn(0),
            hi: Scn(5),
            private_to: None,
        };
        cache.insert(BlockAddr(3), cr, image(3));
        // Granted in S and still being read from disk.
        k.start_io(
            Io::ReadBlock { blk: BlockAddr(4) },
            IoPurpose::GrantRead {
                blk: BlockAddr(4),
                req: 1,
                mode: Mode::S,
                scan: false,
            },
        );
        let mut members = InstSet::default();
        members.insert(ME);
        members.insert(InstId(1));
        let reports = gc.holdings(&k, &cache, members, &[], 42);
        assert_eq!(
            reports.iter().map(|(m, _)| *m).collect::<Vec<_>>(),
            [ME, InstId(1)]
        );
        let mut reported: Vec<(BlockAddr, Held)> = Vec::new();
        for (m, r) in &reports {
            assert_eq!((r.members, r.xid_base), (members, 42));
            for &(blk, held) in &r.blocks {
                assert_eq!(gc.block_master(k.layout(), blk), *m, "{blk} to its master");
                reported.push((blk, held));
            }
        }
        reported.sort_unstable_by_key(|&(b, _)| b);
        assert_eq!(
            reported,
            [
                (BlockAddr(1), Held::X { dirty: true }),
                (BlockAddr(2), Held::Pi { scn: Scn(0) }),
                (
                    BlockAddr(4),
                    Held::Reading {
                        mode: Mode::S,
                        req: 1
                    }
                ),
            ],
            "a CR copy is nobody's business"
        );
        // The master rebuilds from the report: a claimed block is not promoted.
        let mut master = GlobalCache::new(ME, 2);
        master.freeze();
        let blocks = reported.clone();
        master.rebuild_from(InstId(1), blocks, Vec::new(), vec![BlockAddr(2)]);
        assert_eq!(
            master.block_view(BlockAddr(1)),
            Some((Some(InstId(1)), vec![], vec![]))
        );
        assert!(master.finish_rebuild().is_empty());
    }
}
