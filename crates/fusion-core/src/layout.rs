//! Where every segment lives in the block address space, who masters each
//! block, and the initial images the store is loaded with.

use std::sync::Arc;

use crate::bitmap::{self, BitmapShape};
use crate::block::{Block, Body, LeafEntry, Row};
use crate::config::{Catalog, IndexDef, IndexKind, TableDef, org_of};
use crate::types::{BlockAddr, InstId, Rowid, Xid, block_count};

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
    /// Organisations of the rows (`TableDef::orgs`).
    pub orgs: u32,
    /// The value column's domain (`TableDef::distinct_values`).
    pub distinct_values: u32,
    /// Partitioned by organisation: partition `p` holds organisation `p + 1`
    /// (the fields above then describe partition 1; partitions have no free
    /// blocks for inserts). Empty for a table that is not partitioned.
    pub parts: Vec<Partition>,
}

/// One partition of a table: a segment of its own.
#[derive(Clone, Debug)]
pub struct Partition {
    pub header: BlockAddr,
    pub base: u32,
    pub initial_blocks: u32,
    pub rows: u64,
}

impl TableLayout {
    /// The initial value of row `key`.
    pub fn initial_value(&self, key: u64) -> i64 {
        crate::config::initial_value(key, self.distinct_values)
    }

    /// The value an update gives a row that holds `old` (see `TableDef::updated_value`).
    pub fn updated_value(&self, old: i64) -> i64 {
        if self.distinct_values == 0 {
            old + 1
        } else {
            old.rem_euclid(i64::from(self.distinct_values)) + 1
        }
    }

    /// Block runs holding the initial rows: the table, or each partition.
    pub fn initial_runs(&self) -> Vec<(u32, u32)> {
        if self.parts.is_empty() {
            vec![(self.base, self.base + self.initial_blocks)]
        } else {
            self.parts
                .iter()
                .map(|p| (p.base, p.base + p.initial_blocks))
                .collect()
        }
    }
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
    pub kind: IndexKind,
    /// A B-tree on (key, value): updates of the value change the entry.
    pub includes_value: bool,
    /// Bitmap indexes: keys per bitmap piece.
    pub rows_per_piece: u32,
    /// A local index: the root of each partition's index segment (the
    /// fields above describe partition 1's). Empty for a global index.
    pub part_roots: Vec<BlockAddr>,
}

impl IndexLayout {
    /// The key an index entry holds for table key `key`: the key itself, or
    /// for a reverse key index its eight bytes in reverse order (as Oracle
    /// reverses the bytes of the key column), so keys that differ only in
    /// their last byte lie far apart. Its own inverse.
    pub fn entry_key(&self, key: u64) -> u64 {
        if self.reverse { key.swap_bytes() } else { key }
    }

    /// Whether an update of a row's value changes this index.
    pub fn maintained_on_update(&self) -> bool {
        self.includes_value || self.kind == IndexKind::Bitmap
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
        let instance_count = u32::from(instances.max(1));
        let mut tables = Vec::new();
        for t in &catalog.tables {
            let rpb = t.rows_per_block.max(1);
            let mut parts = Vec::new();
            if t.partition_by_org && t.orgs > 1 {
                for p in 0..t.orgs {
                    let rows = part_rows(t.rows, t.orgs, p);
                    let initial_blocks =
                        crate::types::block_count(rows.div_ceil(u64::from(rpb)).max(1));
                    parts.push(Partition {
                        header: BlockAddr(next),
                        base: next + 1,
                        initial_blocks,
                        rows,
                    });
                    next += 1 + initial_blocks;
                }
            }
            let layout = match parts.first() {
                Some(p1) => TableLayout {
                    header: p1.header,
                    base: p1.base,
                    initial_blocks: p1.initial_blocks,
                    free_base: next,
                    free_per_instance: 0,
                    rows_per_block: rpb,
                    initial_rows: t.rows,
                    orgs: t.orgs,
                    distinct_values: t.distinct_values,
                    parts,
                },
                None => {
                    let initial_blocks =
                        crate::types::block_count(t.rows.div_ceil(u64::from(rpb)).max(1));
                    let header = BlockAddr(next);
                    next += 1;
                    let base = next;
                    next += initial_blocks;
                    let free_base = next;
                    next += t.free_blocks_per_instance * instance_count;
                    TableLayout {
                        header,
                        base,
                        initial_blocks,
                        free_base,
                        free_per_instance: t.free_blocks_per_instance,
                        rows_per_block: rpb,
                        initial_rows: t.rows,
                        orgs: t.orgs.max(1),
                        distinct_values: t.distinct_values,
                        parts: Vec::new(),
                    }
                }
            };
            tables.push(layout);
        }
        let mut indexes = Vec::new();
        for ix in &catalog.indexes {
            let table = catalog.tables.get(ix.table);
            let rows = table.map_or(0, |t| t.rows);
            let local = ix.local && tables.get(ix.table).is_some_and(|t| !t.parts.is_empty());
            // One segment per partition for a local index, else one; a
            // segment's initial blocks, then (global B-trees only) free
            // blocks for splits.
            let segments: Vec<u64> = match tables.get(ix.table) {
                Some(t) if local => t.parts.iter().map(|p| p.rows).collect(),
                _ => vec![rows],
            };
            let mut roots = Vec::new();
            let mut first = (0, 0);
            for seg_rows in segments {
                let (blocks, height) = match ix.kind {
                    IndexKind::BTree => index_shape(seg_rows, ix),
                    IndexKind::Bitmap => bitmap_shape(table, ix).blocks_and_height(),
                };
                if roots.is_empty() {
                    first = (blocks, height);
                }
                roots.push(BlockAddr(next));
                next += blocks;
            }
            let splits = ix.kind == IndexKind::BTree && !local;
            let free_per_instance = if splits {
                ix.free_blocks_per_instance
            } else {
                0
            };
            let free_base = next;
            next += free_per_instance * instance_count;
            indexes.push(IndexLayout {
                table: ix.table,
                root: roots[0],
                initial_blocks: first.0,
                free_base,
                free_per_instance,
                entries_per_leaf: ix.entries_per_leaf.max(4),
                entries_per_branch: ix.entries_per_branch.max(4),
                height: first.1,
                reverse: ix.reverse,
                kind: ix.kind,
                includes_value: ix.includes_value,
                rows_per_piece: ix.rows_per_piece.max(1),
                part_roots: if local { roots } else { Vec::new() },
            });
        }
        let sequences = catalog.sequences.len();
        let seq_block = (sequences > 0).then(|| {
            next += 1;
            BlockAddr(next - 1)
        });
        let layout = Layout {
            instances,
            tables,
            indexes,
            total_blocks: next,
            contiguous: contiguous.max(1),
            seq_block,
            sequences,
        };
        layout.assert_within_the_database();
        layout
    }

    /// Every segment, its free blocks included, lies below `total_blocks`
    /// (the images, the cache's per-block tables and the store are sized by it).
    fn assert_within_the_database(&self) {
        let instances = u64::from(self.instances.max(1));
        let total = u64::from(self.total_blocks);
        let free_end = |base: u32, per: u32| u64::from(base) + u64::from(per) * instances;
        for (i, t) in self.tables.iter().enumerate() {
            assert!(
                t.header.0 < self.total_blocks
                    && u64::from(t.base) + u64::from(t.initial_blocks) <= total
                    && free_end(t.free_base, t.free_per_instance) <= total
                    && t.parts.iter().all(|p| {
                        p.header.0 < self.total_blocks
                            && u64::from(p.base) + u64::from(p.initial_blocks) <= total
                    }),
                "table {i}'s blocks run past the {total} blocks laid out"
            );
        }
        for (i, ix) in self.indexes.iter().enumerate() {
            assert!(
                ix.root.0 < self.total_blocks
                    && ix.part_roots.iter().all(|r| r.0 < self.total_blocks)
                    && free_end(ix.free_base, ix.free_per_instance) <= total,
                "index {i}'s blocks run past the {total} blocks laid out"
            );
        }
    }

    /// The objects (segments) in pkey order: the tables in catalog order,
    /// then the indexes. Dynamic remastering moves an object's blocks as one.
    pub fn object_count(&self) -> u32 {
        // Both lists come from the catalog, a few dozen entries at most.
        (self.tables.len() + self.indexes.len()) as u32
    }

    /// The object (pkey, see [`Layout::object_count`]) a block belongs to;
    /// `None` for SEQ$, which no object owns. Segments lie in pkey order,
    /// each from its first block to the next one's.
    pub fn object_of(&self, blk: BlockAddr) -> Option<u32> {
        if self.seq_block.is_some_and(|s| blk >= s) || blk.0 >= self.total_blocks {
            return None;
        }
        let starts = self
            .tables
            .iter()
            .map(|t| t.header)
            .chain(self.indexes.iter().map(|ix| ix.root));
        let mut object = None;
        for (pkey, start) in starts.enumerate() {
            if start > blk {
                break;
            }
            object = Some(pkey as u32);
        }
        object
    }

    /// The master of a block: ranges of `_lm_contiguous_res_count` blocks hash
    /// to an instance. The hash is fixed so every instance computes the same.
    pub fn master(&self, blk: BlockAddr) -> InstId {
        let bucket = u64::from(blk.0 / self.contiguous);
        let h = bucket.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) ^ 0x5851_F42D_4C95_7F2D;
        let h = h.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let master = InstId(((h >> 32) % u64::from(self.instances.max(1))) as u8);
        debug_assert!(
            master.0 < self.instances.max(1),
            "{blk} mastered by {master}, beyond the {} instances",
            self.instances
        );
        master
    }

    /// The master of a global enqueue resource: a fixed hash of its name, so
    /// every instance computes the same (resources spread like blocks).
    pub fn ges_master(&self, res: crate::msg::ResName) -> InstId {
        let key = (res.kind as u64) << 32 | res.id;
        let h = key
            .wrapping_add(0x2545_F491_4F6C_DD1D)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = (h ^ (h >> 31)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        InstId(((h >> 32) % u64::from(self.instances.max(1))) as u8)
    }

    /// The block and slot of an initial row (keys `1..=rows`). In a
    /// partitioned table a row is the `(key - 1) / orgs`-th of its
    /// organisation's partition.
    pub fn initial_rowid(&self, table: usize, key: u64) -> Option<Rowid> {
        let t = self.tables.get(table)?;
        if key == 0 || key > t.initial_rows {
            return None;
        }
        let (base, blocks, i) = if t.parts.is_empty() {
            (t.base, t.initial_blocks, key - 1)
        } else {
            let p = t.parts.get(org_of(key, t.orgs) as usize - 1)?;
            (p.base, p.initial_blocks, (key - 1) / u64::from(t.orgs))
        };
        // The loader caps rows_per_block at 1,000 (a 16-bit slot) and the
        // schema at 2^32 blocks (`block_count`).
        let rowid = Rowid {
            blk: BlockAddr(base + block_count(i / u64::from(t.rows_per_block))),
            slot: u16::try_from(i % u64::from(t.rows_per_block))
                .expect("rows_per_block is at most 1,000"),
        };
        // An initial row lies in its segment's run of initial blocks.
        debug_assert!(
            rowid.blk.0 - base < blocks,
            "row {key} of table {table} placed in {}, past its segment's {blocks} blocks",
            rowid.blk
        );
        Some(rowid)
    }

    /// The root to descend from to find `key` in index `ix`: a local index
    /// has one per partition, chosen by the key's organisation.
    pub fn index_root(&self, ix: usize, key: u64) -> BlockAddr {
        let l = &self.indexes[ix];
        if l.part_roots.is_empty() {
            return l.root;
        }
        let orgs = self.tables.get(l.table).map_or(1, |t| t.orgs);
        // A local index has a root per partition, one per organisation, and
        // every key has an organisation: no fallback to a global root.
        l.part_roots[org_of(key, orgs) as usize - 1]
    }

    /// Free blocks of a segment reserved for `inst`.
    pub fn free_range(base: u32, per: u32, inst: InstId) -> std::ops::Range<u32> {
        let start = base + per * u32::from(inst.0);
        start..start + per
    }

    /// All blocks with their initial images, in address order.
    pub fn initial_blocks(&self) -> Vec<Block> {
        // Free space is most of a big datafile: its blocks share one empty
        // body until they are formatted.
        let unformatted = Arc::new(Body::Unformatted);
        let mut out: Vec<Block> = (0..self.total_blocks)
            .map(|a| Block::sharing(BlockAddr(a), &unformatted))
            .collect();
        for (ti, t) in self.tables.iter().enumerate() {
            let headers: Vec<BlockAddr> = if t.parts.is_empty() {
                vec![t.header]
            } else {
                t.parts.iter().map(|p| p.header).collect()
            };
            for h in headers {
                *out[h.idx()].body_mut() = Body::SegHeader {
                    used: vec![0; usize::from(self.instances.max(1))],
                };
            }
            // Every initial row in its block, slots in key order.
            for key in 1..=t.initial_rows {
                let rowid = self
                    .initial_rowid(ti, key)
                    .expect("every initial key has a row");
                let row = Row {
                    key,
                    val: t.initial_value(key),
                    lock: Xid::NONE,
                };
                let body = out[rowid.blk.idx()].body_mut();
                if !matches!(body, Body::Table { .. }) {
                    *body = Body::Table { rows: Vec::new() };
                }
                if let Body::Table { rows } = body {
                    rows.push(Some(row));
                }
            }
            for (first, end) in t.initial_runs() {
                for a in first..end {
                    let body = out[a as usize].body_mut();
                    if matches!(body, Body::Unformatted) {
                        *body = Body::Table { rows: Vec::new() };
                    }
                }
            }
        }
        for ix in &self.indexes {
            let blocks = match ix.kind {
                IndexKind::BTree => build_index(self, ix),
                IndexKind::Bitmap => {
                    let t = self.tables.get(ix.table);
                    let shape = BitmapShape {
                        rows: t.map_or(0, |t| t.initial_rows),
                        distinct: t.map_or(1, |t| t.distinct_values.max(1)),
                        rows_per_piece: ix.rows_per_piece,
                        per_leaf: ix.entries_per_leaf,
                        per_branch: ix.entries_per_branch,
                    };
                    bitmap::build(ix.root, &shape)
                }
            };
            for blk in blocks {
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
            *out[b.idx()].body_mut() = Body::Table { rows };
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
    (crate::types::block_count(blocks), height)
}

/// The rows of partition `p` (organisation `p + 1`) among keys `1..=rows`.
fn part_rows(rows: u64, orgs: u32, p: u32) -> u64 {
    let (orgs, p) = (u64::from(orgs.max(1)), u64::from(p));
    if rows <= p {
        0
    } else {
        (rows - p).div_ceil(orgs)
    }
}

/// The shape of a bitmap index on `table`.
fn bitmap_shape(table: Option<&TableDef>, ix: &IndexDef) -> BitmapShape {
    BitmapShape {
        rows: table.map_or(0, |t| t.rows),
        distinct: table.map_or(1, |t| t.distinct_values.max(1)),
        rows_per_piece: ix.rows_per_piece.max(1),
        per_leaf: ix.entries_per_leaf.max(4),
        per_branch: ix.entries_per_branch.max(4),
    }
}

/// Build a B-tree index: a global one over every key of its table, a local
/// one per partition over that organisation's keys.
fn build_index(layout: &Layout, ix: &IndexLayout) -> Vec<Block> {
    let Some(t) = layout.tables.get(ix.table) else {
        return Vec::new();
    };
    if ix.part_roots.is_empty() {
        let keys: Vec<u64> = (1..=t.initial_rows).collect();
        return build_btree(layout, ix, ix.root, keys);
    }
    let orgs = u64::from(t.orgs.max(1));
    let mut out = Vec::new();
    for (p, &root) in ix.part_roots.iter().enumerate() {
        let keys: Vec<u64> = (p as u64 + 1..=t.initial_rows)
            .step_by(orgs as usize)
            .collect();
        out.extend(build_btree(layout, ix, root, keys));
    }
    out
}

/// Build one B-tree segment over the table keys `keys` (ascending)
/// bottom-up: the root at `root`, then upper levels, then leaves. `keys`
/// becomes the entry keys in place (a table of millions of rows has no
/// second list of them at its set-up's peak).
fn build_btree(
    layout: &Layout,
    ix: &IndexLayout,
    root: BlockAddr,
    mut keys: Vec<u64>,
) -> Vec<Block> {
    let leaf_cap = u64::from(ix.entries_per_leaf);
    let leaf_count = crate::types::block_count((keys.len() as u64).div_ceil(leaf_cap).max(1));
    let table = layout.tables.get(ix.table);
    // Levels from the leaves up, each a list of (first key, block index within level).
    let mut levels: Vec<u32> = vec![leaf_count];
    while *levels.last().unwrap_or(&1) > 1 {
        let below = *levels.last().unwrap_or(&1);
        levels.push(below.div_ceil(ix.entries_per_branch));
    }
    if levels.len() == 1 {
        levels.push(1);
    }
    // Addresses: root first, then levels top-down.
    let mut starts = vec![0u32; levels.len()];
    let mut a = root.0;
    for lvl in (0..levels.len()).rev() {
        starts[lvl] = a;
        a += levels[lvl];
    }
    let mut out = Vec::new();
    let mut firsts: Vec<u64> = Vec::new();
    // Entry keys in index order, cut into full leaves; a leaf covers from its
    // first key up to the next leaf's first key. A reverse key index orders
    // the reversed keys.
    if ix.reverse {
        keys.iter_mut().for_each(|k| *k = ix.entry_key(*k));
        keys.sort_unstable();
    }
    for l in 0..leaf_count {
        let from = (u64::from(l) * leaf_cap) as usize;
        let to = (from + leaf_cap as usize).min(keys.len());
        let entries = keys[from..to]
            .iter()
            .map(|&key| {
                // The table key of an entry key (reversing is its own inverse).
                let row_key = ix.entry_key(key);
                let rowid = layout
                    .initial_rowid(ix.table, row_key)
                    .expect("every initial key has a row");
                LeafEntry {
                    key,
                    rowid,
                    lock: Xid::NONE,
                    val: if ix.includes_value {
                        table.map_or(0, |t| t.initial_value(row_key))
                    } else {
                        0
                    },
                }
            })
            .collect();
        let next = (l + 1 < leaf_count).then(|| BlockAddr(starts[0] + l + 1));
        let first = keys.get(from).copied().unwrap_or(0);
        let low = if l == 0 { 0 } else { first };
        let high = (l + 1 < leaf_count).then(|| keys[to]);
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
            .map(|(i, k)| (*k, BlockAddr(starts[lvl - 1] + block_count(i as u64))))
            .collect();
        for (b, chunk) in children.chunks(per.max(1)).enumerate() {
            next_firsts.push(chunk.first().map_or(0, |c| c.0));
            out.push(Block::new(
                BlockAddr(starts[lvl] + block_count(b as u64)),
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
        orgs: 1,
        partition_by_org: false,
        distinct_values: 0,
    }
}

/// Convenience for tests: a B-tree index on a table's key.
pub fn btree(name: &str, table: usize, entries_per_leaf: u32, entries_per_branch: u32) -> IndexDef {
    IndexDef {
        name: name.to_string(),
        table,
        entries_per_leaf,
        entries_per_branch,
        free_blocks_per_instance: 64,
        reverse: false,
        kind: IndexKind::BTree,
        local: false,
        includes_value: false,
        rows_per_piece: 1,
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
                free_blocks_per_instance: 4,
                reverse: false,
                ..btree("t_pk", 0, 20, 8)
            }],
        }
    }

    /// A table of two organisations partitioned by org, with a global and a
    /// local index on (key, value).
    fn partitioned() -> Catalog {
        Catalog {
            sequences: Vec::new(),
            tables: vec![TableDef {
                orgs: 2,
                partition_by_org: true,
                distinct_values: 7,
                ..table("t", 1001, 10)
            }],
            indexes: vec![
                IndexDef {
                    includes_value: true,
                    ..btree("t_global", 0, 20, 8)
                },
                IndexDef {
                    includes_value: true,
                    local: true,
                    ..btree("t_local", 0, 20, 8)
                },
            ],
        }
    }

    /// Follow index `ix` from its root to `key`'s leaf entry.
    fn find(layout: &Layout, blocks: &[Block], ix: usize, key: u64) -> LeafEntry {
        let mut b = &blocks[layout.index_root(ix, key).idx()];
        while let Some(child) = b.child_for(key) {
            b = &blocks[child.idx()];
        }
        *b.leaf_lookup(key)
            .unwrap_or_else(|| panic!("key {key} missing from index {ix}"))
    }

    #[test]
    fn partitions_keep_each_organisation_in_its_own_blocks() {
        let cat = partitioned();
        let layout = Layout::new(&cat, 2, 128);
        let blocks = layout.initial_blocks();
        let t = &layout.tables[0];
        assert_eq!(t.parts.len(), 2);
        assert_eq!((t.parts[0].rows, t.parts[1].rows), (501, 500));
        let run = |p: usize| t.parts[p].base..t.parts[p].base + t.parts[p].initial_blocks;
        for key in 1..=1001u64 {
            let rowid = layout.initial_rowid(0, key).unwrap();
            let org = cat.tables[0].org_of(key) as usize;
            assert!(run(org - 1).contains(&rowid.blk.0), "key {key}");
            let row = blocks[rowid.blk.idx()].row(rowid.slot).unwrap();
            assert_eq!((row.key, row.val), (key, cat.tables[0].initial_value(key)));
            for ix in [0, 1] {
                let e = find(&layout, &blocks, ix, key);
                assert_eq!((e.rowid, e.val), (rowid, row.val), "index {ix} key {key}");
            }
        }
        // The local index's segments hold one organisation each; the global one both.
        let l = &layout.indexes[1];
        assert_eq!(l.part_roots.len(), 2);
        assert!(layout.indexes[0].part_roots.is_empty());
        let leaf_of = |ix: usize, key: u64| {
            let mut b = &blocks[layout.index_root(ix, key).idx()];
            while let Some(child) = b.child_for(key) {
                b = &blocks[child.idx()];
            }
            b.addr
        };
        assert_eq!(
            leaf_of(0, 1),
            leaf_of(0, 2),
            "global: both orgs share a leaf"
        );
        assert_ne!(leaf_of(1, 1), leaf_of(1, 2), "local: each org its own");
    }

    #[test]
    fn unpartitioned_rows_of_both_orgs_share_blocks() {
        let mut cat = partitioned();
        cat.tables[0].partition_by_org = false;
        let layout = Layout::new(&cat, 2, 128);
        assert!(layout.tables[0].parts.is_empty());
        assert!(
            layout.indexes[1].part_roots.is_empty(),
            "no partitions, no local index"
        );
        assert_eq!(
            layout.initial_rowid(0, 1).unwrap().blk,
            layout.initial_rowid(0, 2).unwrap().blk
        );
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
