//! Where every segment lives in the block address space, who masters each
//! block, and the initial images the store is loaded with.

use crate::block::{Block, Body, LeafEntry, Row};
use crate::config::{Catalog, IndexDef, TableDef};
use crate::types::{BlockAddr, InstId, Rowid, Xid};

/// A table's blocks: the segment header at `header`, then `[base, base +
/// initial)` with the initial rows; each instance then has its own run of free
/// blocks for inserts (like ASSM space with instance affinity). The header
/// records how many of its run each instance has formatted.
#[derive(Clone, Debug)]
pub struct TableLayout {
    pub header: BlockAddr,
    pub base: u32,
    pub initial_blocks: u32,
    pub free_base: u32,
    pub free_per_instance: u32,
    pub rows_per_block: u32,
    pub initial_rows: u64,
}

/// An index's blocks: the root at `root` (it never moves), then the initial
/// branches and leaves, then per-instance free blocks for splits.
#[derive(Clone, Debug)]
pub struct IndexLayout {
    pub table: usize,
    pub root: BlockAddr,
    pub initial_blocks: u32,
    pub free_base: u32,
    pub free_per_instance: u32,
    pub entries_per_leaf: u32,
    pub entries_per_branch: u32,
    pub height: u32,
    /// A reverse key index: see [`IndexLayout::entry_key`].
    pub reverse: bool,
}

impl IndexLayout {
    /// The key an index entry holds for table key `key`: the key itself, or
    /// for a reverse key index its eight bytes in reverse order (as Oracle
    /// reverses the bytes of the key column), so keys that differ only in
    /// their last byte lie far apart. Its own inverse.
    pub fn entry_key(&self, key: u64) -> u64 {
        if self.reverse { key.swap_bytes() } else { key }
    }
}

/// The physical layout of the whole schema.
#[derive(Clone, Debug)]
pub struct Layout {
    pub instances: u8,
    pub tables: Vec<TableLayout>,
    pub indexes: Vec<IndexLayout>,
    pub total_blocks: u32,
    pub contiguous: u32,
    /// SEQ$, the dictionary block holding one row per sequence (key: the
    /// sequence's position + 1, value: values allocated so far). Placed after
    /// every segment so schemas without sequences keep their addresses.
    pub seq_block: Option<BlockAddr>,
    pub sequences: usize,
}

impl Layout {
    pub fn new(catalog: &Catalog, instances: u8, contiguous: u32) -> Layout {
        let mut next = 0u32;
        let n = u32::from(instances.max(1));
        let mut tables = Vec::new();
        for t in &catalog.tables {
            let rpb = t.rows_per_block.max(1);
            let initial_blocks = t.rows.div_ceil(u64::from(rpb)).max(1) as u32;
            let header = BlockAddr(next);
            next += 1;
            let base = next;
            next += initial_blocks;
            let free_base = next;
            next += t.free_blocks_per_instance * n;
            tables.push(TableLayout {
                header,
                base,
                initial_blocks,
                free_base,
                free_per_instance: t.free_blocks_per_instance,
                rows_per_block: rpb,
                initial_rows: t.rows,
            });
        }
        let mut indexes = Vec::new();
        for ix in &catalog.indexes {
            let rows = catalog.tables.get(ix.table).map_or(0, |t| t.rows);
            let (blocks, height) = index_shape(rows, ix);
            let base = next;
            next += blocks;
            let free_base = next;
            next += ix.free_blocks_per_instance * n;
            indexes.push(IndexLayout {
                table: ix.table,
                root: BlockAddr(base),
                initial_blocks: blocks,
                free_base,
                free_per_instance: ix.free_blocks_per_instance,
                entries_per_leaf: ix.entries_per_leaf.max(4),
                entries_per_branch: ix.entries_per_branch.max(4),
                height,
                reverse: ix.reverse,
            });
        }
        let sequences = catalog.sequences.len();
        let seq_block = (sequences > 0).then(|| {
            next += 1;
            BlockAddr(next - 1)
        });
        Layout {
            instances,
            tables,
            indexes,
            total_blocks: next,
            contiguous: contiguous.max(1),
            seq_block,
            sequences,
        }
    }

    /// The master of a block: ranges of `_lm_contiguous_res_count` blocks hash
    /// to an instance. The hash is fixed so every instance computes the same.
    pub fn master(&self, blk: BlockAddr) -> InstId {
        let bucket = u64::from(blk.0 / self.contiguous);
        let h = bucket.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) ^ 0x5851_F42D_4C95_7F2D;
        let h = h.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        InstId(((h >> 32) % u64::from(self.instances.max(1))) as u8)
    }

    /// The master of a global enqueue resource: a fixed hash of its name, so
    /// every instance computes the same (resources spread like blocks).
    pub fn ges_master(&self, res: crate::msg::ResName) -> InstId {
        let key = (res.kind as u64) << 32 | u64::from(res.id);
        let h = key
            .wrapping_add(0x2545_F491_4F6C_DD1D)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = (h ^ (h >> 31)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        InstId(((h >> 32) % u64::from(self.instances.max(1))) as u8)
    }

    /// The block and slot of an initial row (keys `1..=rows`).
    pub fn initial_rowid(&self, table: usize, key: u64) -> Option<Rowid> {
        let t = self.tables.get(table)?;
        if key == 0 || key > t.initial_rows {
            return None;
        }
        let i = key - 1;
        Some(Rowid {
            blk: BlockAddr(t.base + (i / u64::from(t.rows_per_block)) as u32),
            slot: (i % u64::from(t.rows_per_block)) as u16,
        })
    }

    /// Free blocks of a segment reserved for `inst`.
    pub fn free_range(base: u32, per: u32, inst: InstId) -> std::ops::Range<u32> {
        let start = base + per * u32::from(inst.0);
        start..start + per
    }

    /// All blocks with their initial images, in address order.
    pub fn initial_blocks(&self) -> Vec<Block> {
        let mut out: Vec<Block> = (0..self.total_blocks)
            .map(|a| Block::new(BlockAddr(a), Body::Unformatted))
            .collect();
        for t in &self.tables {
            out[t.header.idx()].body = Body::SegHeader {
                used: vec![0; usize::from(self.instances.max(1))],
            };
            for b in 0..t.initial_blocks {
                let first = u64::from(b) * u64::from(t.rows_per_block) + 1;
                let last = (first + u64::from(t.rows_per_block) - 1).min(t.initial_rows);
                let rows = (first..=last)
                    .map(|key| {
                        Some(Row {
                            key,
                            val: 0,
                            lock: Xid::NONE,
                        })
                    })
                    .collect();
                out[(t.base + b) as usize].body = Body::Table { rows };
            }
        }
        for ix in &self.indexes {
            for blk in build_index(self, ix) {
                let a = blk.addr.idx();
                out[a] = blk;
            }
        }
        if let Some(b) = self.seq_block {
            let rows = (1..=self.sequences as u64)
                .map(|key| {
                    Some(Row {
                        key,
                        val: 0,
                        lock: Xid::NONE,
                    })
                })
                .collect();
            out[b.idx()].body = Body::Table { rows };
        }
        out
    }
}

/// Blocks and height of a B-tree over `rows` keys, built full to the entry limits.
fn index_shape(rows: u64, ix: &IndexDef) -> (u32, u32) {
    let leaf = u64::from(ix.entries_per_leaf.max(4));
    let branch = u64::from(ix.entries_per_branch.max(4));
    let mut level = rows.div_ceil(leaf).max(1);
    let mut blocks = level;
    let mut height = 1;
    while level > 1 {
        level = level.div_ceil(branch);
        blocks += level;
        height += 1;
    }
    // A one-level index still gets a separate root so the root never moves.
    if height == 1 {
        blocks += 1;
        height = 2;
    }
    (blocks as u32, height)
}

/// Build an index bottom-up: the root at the segment's first block, then
/// upper levels, then leaves.
fn build_index(layout: &Layout, ix: &IndexLayout) -> Vec<Block> {
    let rows = layout.tables.get(ix.table).map_or(0, |t| t.initial_rows);
    let leaf_cap = u64::from(ix.entries_per_leaf);
    let n_leaves = rows.div_ceil(leaf_cap).max(1) as u32;
    // Levels from the leaves up, each a list of (first key, block index within level).
    let mut levels: Vec<u32> = vec![n_leaves];
    while *levels.last().unwrap_or(&1) > 1 {
        let below = *levels.last().unwrap_or(&1);
        levels.push(below.div_ceil(ix.entries_per_branch));
    }
    if levels.len() == 1 {
        levels.push(1);
    }
    // Addresses: root first, then levels top-down.
    let mut starts = vec![0u32; levels.len()];
    let mut a = ix.root.0;
    for lvl in (0..levels.len()).rev() {
        starts[lvl] = a;
        a += levels[lvl];
    }
    let mut out = Vec::new();
    let mut firsts: Vec<u64> = Vec::new();
    // Entry keys in index order, cut into full leaves; a leaf covers from its
    // first key up to the next leaf's first key.
    let mut keys: Vec<u64> = (1..=rows).map(|k| ix.entry_key(k)).collect();
    if ix.reverse {
        keys.sort_unstable();
    }
    let chunks: Vec<&[u64]> = keys.chunks(leaf_cap.max(1) as usize).collect();
    for l in 0..n_leaves {
        let chunk = chunks.get(l as usize).copied().unwrap_or(&[]);
        let entries = chunk
            .iter()
            .filter_map(|&key| {
                layout
                    .initial_rowid(ix.table, ix.entry_key(key))
                    .map(|rowid| LeafEntry {
                        key,
                        rowid,
                        lock: Xid::NONE,
                    })
            })
            .collect();
        let first_of = |l: u32| {
            chunks
                .get(l as usize)
                .and_then(|c| c.first())
                .copied()
                .unwrap_or(0)
        };
        let next = (l + 1 < n_leaves).then(|| BlockAddr(starts[0] + l + 1));
        let low = if l == 0 { 0 } else { first_of(l) };
        let high = (l + 1 < n_leaves).then(|| first_of(l + 1));
        out.push(Block::new(
            BlockAddr(starts[0] + l),
            Body::Leaf {
                entries,
                next,
                low,
                high,
            },
        ));
        firsts.push(low);
    }
    for lvl in 1..levels.len() {
        let per = ix.entries_per_branch as usize;
        let mut next_firsts = Vec::new();
        let children: Vec<(u64, BlockAddr)> = firsts
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, BlockAddr(starts[lvl - 1] + i as u32)))
            .collect();
        for (b, chunk) in children.chunks(per.max(1)).enumerate() {
            next_firsts.push(chunk.first().map_or(0, |c| c.0));
            out.push(Block::new(
                BlockAddr(starts[lvl] + b as u32),
                Body::Branch {
                    entries: chunk.to_vec(),
                },
            ));
        }
        firsts = next_firsts;
    }
    out
}

/// Convenience for tests and the simulator: a table definition.
pub fn table(name: &str, rows: u64, rows_per_block: u32) -> TableDef {
    TableDef {
        name: name.to_string(),
        rows,
        rows_per_block,
        free_blocks_per_instance: 256,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog {
            sequences: Vec::new(),
            tables: vec![table("t", 1000, 10)],
            indexes: vec![IndexDef {
                name: "t_pk".into(),
                table: 0,
                entries_per_leaf: 20,
                entries_per_branch: 8,
                free_blocks_per_instance: 4,
                reverse: false,
            }],
        }
    }

    #[test]
    fn index_finds_every_initial_row() {
        let layout = Layout::new(&catalog(), 2, 128);
        let blocks = layout.initial_blocks();
        let ix = &layout.indexes[0];
        assert_eq!(ix.height, 3); // 50 leaves, 7 branches, 1 root
        for key in [1u64, 2, 19, 20, 21, 500, 999, 1000] {
            let mut b = &blocks[ix.root.idx()];
            while let Some(child) = b.child_for(key) {
                b = &blocks[child.idx()];
            }
            let e = b
                .leaf_lookup(key)
                .unwrap_or_else(|| panic!("key {key} missing"));
            assert_eq!(Some(e.rowid), layout.initial_rowid(0, key));
            let row = blocks[e.rowid.blk.idx()].row(e.rowid.slot).unwrap();
            assert_eq!(row.key, key);
        }
    }

    #[test]
    fn a_reverse_key_index_finds_every_row_and_spreads_consecutive_keys() {
        let mut cat = catalog();
        cat.indexes[0].reverse = true;
        let layout = Layout::new(&cat, 2, 128);
        let blocks = layout.initial_blocks();
        let ix = &layout.indexes[0];
        let leaf_of = |key: u64| {
            let ekey = ix.entry_key(key);
            let mut b = &blocks[ix.root.idx()];
            while let Some(child) = b.child_for(ekey) {
                b = &blocks[child.idx()];
            }
            assert!(b.leaf_covers(ekey), "key {key}");
            let e = b
                .leaf_lookup(ekey)
                .unwrap_or_else(|| panic!("key {key} missing"));
            assert_eq!(Some(e.rowid), layout.initial_rowid(0, key));
            b.addr
        };
        for key in 1..=1000u64 {
            leaf_of(key);
        }
        // Consecutive keys differ in their last byte, the first of the entry
        // key: 256 of them spread over every leaf (50), not over 13 in a row.
        let mut leaves: Vec<BlockAddr> = (500..756).map(leaf_of).collect();
        leaves.sort_unstable();
        leaves.dedup();
        assert_eq!(leaves.len(), 50);
        let plain = Layout::new(&catalog(), 2, 128);
        assert_eq!(plain.indexes[0].entry_key(505), 505);
        assert_eq!(ix.entry_key(ix.entry_key(505)), 505);
    }

    #[test]
    fn masters_spread_over_instances_in_ranges() {
        let layout = Layout::new(&catalog(), 3, 4);
        let mut seen = [0; 3];
        for a in 0..1200 {
            seen[layout.master(BlockAddr(a)).idx()] += 1;
        }
        assert!(seen.iter().all(|&n| n > 200), "{seen:?}");
        assert_eq!(layout.master(BlockAddr(0)), layout.master(BlockAddr(3)));
    }
}
