//! Where this instance's inserts go (its steps are in insert.rs).

use crate::layout::Layout;
use crate::types::{BlockAddr, InstId};

/// Where this instance's inserts go: per table, the block it inserts into
/// and the next key it gives a row; per index, how much of its free run
/// splits have used.
#[derive(Debug)]
pub(super) struct InsertPoints {
    block: Vec<Option<BlockAddr>>,
    next_key: Vec<u64>,
    /// Keys of inserted rows interleave by instance above the initial rows:
    /// each instance steps by the cluster's size.
    key_step: u64,
    index_used: Vec<u32>,
}

impl InsertPoints {
    pub fn new(layout: &Layout, me: InstId, instances: u8) -> InsertPoints {
        debug_assert!(me.0 < instances, "{me} outside a cluster of {instances}");
        InsertPoints {
            block: vec![None; layout.tables.len()],
            next_key: layout
                .tables
                .iter()
                .map(|t| t.initial_rows + 1 + u64::from(me.0))
                .collect(),
            key_step: u64::from(instances),
            index_used: vec![0; layout.indexes.len()],
        }
    }

    /// The block `table`'s inserts go into, if this instance has one.
    pub fn block(&self, table: usize) -> Option<BlockAddr> {
        self.block[table]
    }

    /// The key the next row inserted into `table` here gets.
    pub fn next_key(&mut self, table: usize) -> u64 {
        let key = self.next_key[table];
        self.next_key[table] += self.key_step;
        key
    }

    pub(super) fn insert_into(&mut self, table: usize, blk: Option<BlockAddr>) {
        self.block[table] = blk;
    }

    /// Blocks of index `ix`'s free run this instance's splits took.
    pub(super) fn index_used(&self, ix: usize) -> u32 {
        self.index_used[ix]
    }

    pub(super) fn index_block_taken(&mut self, ix: usize) {
        self.index_used[ix] += 1;
    }
}
