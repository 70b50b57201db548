//! Coherence: at most one instance holds a block in X, and nobody holds it
//! in S beside an X holder. Checked after every event; looking at every
//! buffer of every instance each time cost more than the run itself, so
//! between full looks only the blocks whose current holding changed are
//! counted again (`Instance::take_current_changes`).

use fusion_core::instance::{BufState, Instance};
use fusion_core::types::BlockAddr;

/// Incremental checks between two full looks: a full look now and then
/// costs little and does not rest on the change logs being complete.
const CHECKS_PER_FULL_LOOK: u32 = 1024;

/// A block held against the rule: its X and S holder counts.
pub(crate) struct Conflict {
    pub blk: BlockAddr,
    pub x: u8,
    pub s: u8,
}

pub(crate) struct Coherence {
    x_holders: Vec<u8>,
    s_holders: Vec<u8>,
    /// Blocks to count again, reused from check to check.
    changed: Vec<BlockAddr>,
    /// Whose buffers counted at the last check, by position.
    counted: Vec<bool>,
    /// The one before, reused (`counted_buffer`).
    spare: Vec<bool>,
    checks_since_full: u32,
}

impl Coherence {
    pub fn new(blocks: usize) -> Coherence {
        Coherence {
            x_holders: vec![0; blocks],
            s_holders: vec![0; blocks],
            changed: Vec::new(),
            counted: Vec::new(),
            spare: Vec::new(),
            checks_since_full: 0,
        }
    }

    /// A full look: count every buffer of the instances `counted` names.
    pub fn full(&mut self, instances: &[Instance], counted: &[bool]) -> Vec<Conflict> {
        self.checks_since_full = 0;
        self.count_all(instances, counted)
    }

    fn count_all(&mut self, instances: &[Instance], counted: &[bool]) -> Vec<Conflict> {
        let mut touched: Vec<usize> = Vec::new();
        for (inst, _) in instances.iter().zip(counted).filter(|(_, c)| **c) {
            for b in inst.buffers() {
                let a = b.blk.idx();
                match b.state() {
                    BufState::Xcur => self.x_holders[a] += 1,
                    BufState::Scur => self.s_holders[a] += 1,
                    _ => continue,
                }
                touched.push(a);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        let mut found = Vec::new();
        for a in touched {
            let (x, s) = (self.x_holders[a], self.s_holders[a]);
            if x > 1 || (x == 1 && s > 0) {
                found.push(Conflict {
                    blk: BlockAddr(a as u32),
                    x,
                    s,
                });
            }
            self.x_holders[a] = 0;
            self.s_holders[a] = 0;
        }
        found
    }

    /// A vector for the caller to fill with whose buffers count now (by
    /// position) and hand to [`Coherence::after_event`]: the one used two
    /// checks ago, so that no check allocates.
    pub fn counted_buffer(&mut self) -> Vec<bool> {
        let mut v = std::mem::take(&mut self.spare);
        v.clear();
        v
    }

    /// Count again the blocks whose current holding changed since the last
    /// check; everything when a log may be incomplete, when whose buffers
    /// count changed (an eviction, a rejoin), and every
    /// [`CHECKS_PER_FULL_LOOK`] checks.
    pub fn after_event(&mut self, instances: &mut [Instance], counted: Vec<bool>) -> Vec<Conflict> {
        let mut changed = std::mem::take(&mut self.changed);
        changed.clear();
        let mut complete = true;
        for inst in instances.iter_mut() {
            complete &= inst.take_current_changes(&mut changed);
        }
        self.checks_since_full += 1;
        let full =
            !complete || counted != self.counted || self.checks_since_full >= CHECKS_PER_FULL_LOOK;
        self.spare = std::mem::replace(&mut self.counted, counted);
        let counted = std::mem::take(&mut self.counted);
        let found = if full {
            self.full(instances, &counted)
        } else {
            changed.sort_unstable_by_key(|b| b.0);
            changed.dedup();
            let found: Vec<Conflict> = changed
                .iter()
                .filter_map(|&blk| count(instances, &counted, blk))
                .collect();
            // Test builds check the logs against a full look now and then: a
            // change the cache forgot to log would hide a conflict until the
            // next full look.
            if cfg!(debug_assertions) && self.checks_since_full.is_multiple_of(64) {
                let all = self.count_all(instances, &counted);
                let blocks = |c: &[Conflict]| c.iter().map(|c| c.blk.0).collect::<Vec<_>>();
                debug_assert!(
                    blocks(&all).iter().all(|b| blocks(&found).contains(b)),
                    "coherence: a full look found conflicts at {:?}, the changed blocks only at {:?}",
                    blocks(&all),
                    blocks(&found)
                );
            }
            found
        };
        self.counted = counted;
        self.changed = changed;
        found
    }
}

/// One block's holders among the counted instances, when against the rule.
fn count(instances: &[Instance], counted: &[bool], blk: BlockAddr) -> Option<Conflict> {
    let (mut x, mut s) = (0u8, 0u8);
    for (inst, _) in instances.iter().zip(counted).filter(|(_, c)| **c) {
        for b in inst.buffers_of(blk) {
            match b.state() {
                BufState::Xcur => x = x.saturating_add(1),
                BufState::Scur => s = s.saturating_add(1),
                _ => {}
            }
        }
    }
    (x > 1 || (x == 1 && s > 0)).then_some(Conflict { blk, x, s })
}
