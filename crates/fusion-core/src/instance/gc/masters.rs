//! Who masters a block or a global enqueue now. The layout's fixed hash
//! (`Layout::master`, `Layout::ges_master`) gives every resource a master
//! among all instances; after a reconfiguration only the resources of the
//! instances that left move, lazily, to the survivors (rac-internals.md §8:
//! "only the dead instance's are redistributed"), spread by the same hash so
//! every survivor computes the same map. While everyone is a member this is
//! the layout's answer, unchanged.

use crate::layout::Layout;
use crate::msg::ResName;
use crate::types::{BlockAddr, InstId, InstSet};

/// The members that master resources, and the cluster's size.
#[derive(Clone, Copy, Debug)]
pub(super) struct Masters {
    members: InstSet,
    /// Every instance is a member: the layout's hash answers alone.
    all: bool,
}

impl Masters {
    pub(super) fn new(instances: u8) -> Masters {
        let mut members = InstSet::default();
        for i in 0..instances {
            members.insert(InstId(i));
        }
        Masters { members, all: true }
    }

    /// The members after a reconfiguration.
    pub(super) fn set_members(&mut self, members: InstSet) {
        self.all = false;
        self.members = members;
    }

    /// The master of a block.
    pub(super) fn block(&self, layout: &Layout, blk: BlockAddr) -> InstId {
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
        self.heir((res.kind as u64) << 32 | u64::from(res.id))
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
