//! Who masters a block or a global enqueue now. The layout's fixed hash
//! (`Layout::master`, `Layout::ges_master`) gives every resource a master
//! among all instances; after a reconfiguration only the resources of the
//! instances that left move, lazily, to the survivors (rac-internals.md §8:
//! "only the dead instance's are redistributed"), spread by the same hash so
//! every survivor computes the same map. While everyone is a member this is
//! the layout's answer, unchanged.
//!
//! Dynamic remastering (drm.rs) gives an object's blocks one master, kept
//! here as an override of the hash until the next reconfiguration, which
//! drops them all: the rebuilt directory is the hash's again on every
//! member (a restarted instance knows no override), so no member has to
//! learn the others' history.

use crate::layout::Layout;
use crate::msg::ResName;
use crate::types::{BlockAddr, InstId, InstSet};

/// An object remastered by DRM (a row of `V$GCSPFMASTER_INFO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfMaster {
    /// The object (pkey, `Layout::object_of`).
    pub object: u32,
    pub current: InstId,
    /// Its master before the last remaster; `None` when that was the hash.
    pub previous: Option<InstId>,
    pub remasters: u32,
}

/// The members that master resources, and the cluster's size.
#[derive(Clone, Debug)]
pub(super) struct Masters {
    members: InstSet,
    /// Every instance is a member: the layout's hash answers alone.
    all: bool,
    /// Objects remastered since the last reconfiguration, by pkey (a few).
    remastered: Vec<PfMaster>,
}

impl Masters {
    pub(super) fn new(instances: u8) -> Masters {
        let mut members = InstSet::default();
        for i in 0..instances {
            members.insert(InstId(i));
        }
        Masters {
            members,
            all: true,
            remastered: Vec::new(),
        }
    }

    /// The members after a reconfiguration: every remastered object goes
    /// back to the hash.
    pub(super) fn set_members(&mut self, members: InstSet) {
        self.all = false;
        self.members = members;
        self.remastered.clear();
    }

    /// DRM moved `object` to `to`.
    pub(super) fn remaster(&mut self, object: u32, to: InstId) {
        match self.remastered.iter_mut().find(|p| p.object == object) {
            Some(p) => {
                p.previous = Some(p.current);
                p.current = to;
                p.remasters += 1;
            }
            None => {
                let at = self.remastered.partition_point(|p| p.object < object);
                let row = PfMaster {
                    object,
                    current: to,
                    previous: None,
                    remasters: 1,
                };
                self.remastered.insert(at, row);
            }
        }
    }

    /// The objects remastered since the last reconfiguration, by pkey.
    pub(super) fn remastered(&self) -> &[PfMaster] {
        &self.remastered
    }

    /// The master DRM gave `object`, if it moved.
    pub(super) fn object(&self, object: u32) -> Option<InstId> {
        self.remastered
            .iter()
            .find(|p| p.object == object)
            .map(|p| p.current)
    }

    /// The master of a block.
    #[inline(always)]
    pub(super) fn block(&self, layout: &Layout, blk: BlockAddr) -> InstId {
        if !self.remastered.is_empty()
            && let Some(m) = layout.object_of(blk).and_then(|o| self.object(o))
        {
            return m;
        }
        let home = layout.master(blk);
        if self.all || self.members.contains(home) {
            return home;
        }
        self.heir(u64::from(blk.0 / layout.contiguous))
    }

    /// The master of a global enqueue resource.
    pub(super) fn enqueue(&self, layout: &Layout, res: ResName) -> InstId {
        let home = layout.ges_master(res);
        if self.all || self.members.contains(home) {
            return home;
        }
        self.heir((res.kind as u64) << 32 | res.id)
    }

    /// The survivor that takes over a departed master's resource `key`.
    fn heir(&self, key: u64) -> InstId {
        let n = u64::from(self.members.len().max(1));
        let h = key
            .wrapping_add(0x632B_E59B_D9B4_E019)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let pick = ((h ^ (h >> 29)) >> 32) % n;
        // `pick` is below the member count, a small number.
        self.members.iter().nth(pick as usize).unwrap_or(InstId(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Catalog;

    #[test]
    fn only_the_departed_masters_resources_move_and_all_survivors_agree() {
        let layout = Layout::new(&Catalog::default(), 3, 4);
        let mut m = Masters::new(3);
        let before: Vec<InstId> = (0..4_000).map(|a| m.block(&layout, BlockAddr(a))).collect();
        let mut survivors = InstSet::default();
        survivors.insert(InstId(0));
        survivors.insert(InstId(1));
        m.set_members(survivors);
        let mut moved_to = [0u32; 3];
        for (a, old) in before.iter().enumerate() {
            let now = m.block(&layout, BlockAddr(a as u32));
            if *old == InstId(2) {
                assert_ne!(now, InstId(2));
                moved_to[now.idx()] += 1;
            } else {
                assert_eq!(now, *old, "block {a} kept its living master");
            }
        }
        // The dead master's resources spread over both survivors.
        assert!(moved_to[0] > 100 && moved_to[1] > 100, "{moved_to:?}");
        // Another survivor's copy of the map answers the same.
        let mut other = Masters::new(3);
        other.set_members(survivors);
        assert!(
            (0..4_000)
                .all(|a| other.block(&layout, BlockAddr(a)) == m.block(&layout, BlockAddr(a)))
        );
    }
}
