//! The schema's sizes in 64-bit arithmetic: the blocks, rows and index
//! entries of every segment, as `fusion_core::layout::Layout::new` lays them
//! out but without its 32-bit block addresses. The loader refuses a schema
//! whose blocks do not fit them; the memory estimate prices the rest.

use fusion_core::config::{Catalog, IndexDef, IndexKind};

/// What a segment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    /// The table at this position of the catalog (all its partitions).
    Table(usize),
    /// The index at this position (all its local segments).
    Index(usize),
    /// SEQ$, the block of the sequences.
    SeqDollar,
}

/// One segment's blocks and contents at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentSize {
    pub segment: Segment,
    /// Blocks formatted at start: headers, the rows' blocks, every level of
    /// an index.
    pub formatted: u64,
    /// Blocks reserved for inserts or splits, every instance's together.
    pub free: u64,
    /// Blocks holding the rows (a table) or the entries (an index's leaves).
    pub leaves: u64,
    /// Rows of a table, entries of a B-tree, pieces of a bitmap index.
    pub items: u64,
    /// Levels of an index from the root to the leaves; 1 for a table.
    pub height: u64,
}

impl SegmentSize {
    pub(crate) fn blocks(&self) -> u64 {
        self.formatted.saturating_add(self.free)
    }
}

/// Rows of partition `p` among keys `1..=rows` interleaved over `orgs`.
fn part_rows(rows: u64, orgs: u64, p: u64) -> u64 {
    if rows <= p {
        0
    } else {
        (rows - p).div_ceil(orgs.max(1))
    }
}

/// Blocks, leaves and height of a tree over `items` entries, `leaf` to a
/// leaf and `branch` to a branch; a one-level tree still gets a root.
fn tree(items: u64, leaf: u64, branch: u64) -> (u64, u64, u64) {
    let leaves = items.div_ceil(leaf.max(1)).max(1);
    let (mut level, mut blocks, mut height) = (leaves, leaves, 1);
    while level > 1 {
        level = level.div_ceil(branch.max(2));
        blocks = blocks.saturating_add(level);
        height += 1;
    }
    if height == 1 {
        blocks += 1;
        height = 2;
    }
    (blocks, leaves, height)
}

/// Pieces of a bitmap index: one per value and chunk of `rows_per_piece` keys.
pub(crate) fn bitmap_pieces(rows: u64, distinct: u32, rows_per_piece: u32) -> u64 {
    let chunks = rows.div_ceil(u64::from(rows_per_piece.max(1))).max(1);
    u64::from(distinct.max(1)).saturating_mul(chunks)
}

/// Every segment of the catalog on a cluster of `instances`, in address order.
pub(crate) fn segment_sizes(catalog: &Catalog, instances: u64) -> Vec<SegmentSize> {
    let n = instances.max(1);
    let mut out = Vec::new();
    let mut parts_of: Vec<Vec<u64>> = Vec::new();
    for (i, t) in catalog.tables.iter().enumerate() {
        let rpb = u64::from(t.rows_per_block.max(1));
        let parts: Vec<u64> = if t.partition_by_org && t.orgs > 1 {
            (0..u64::from(t.orgs))
                .map(|p| part_rows(t.rows, u64::from(t.orgs), p))
                .collect()
        } else {
            Vec::new()
        };
        let (formatted, free, leaves) = if parts.is_empty() {
            let blocks = t.rows.div_ceil(rpb).max(1);
            let free = u64::from(t.free_blocks_per_instance).saturating_mul(n);
            (blocks.saturating_add(1), free, blocks)
        } else {
            let leaves = parts
                .iter()
                .fold(0u64, |s, &r| s.saturating_add(r.div_ceil(rpb).max(1)));
            (leaves.saturating_add(parts.len() as u64), 0, leaves)
        };
        out.push(SegmentSize {
            segment: Segment::Table(i),
            formatted,
            free,
            leaves,
            items: t.rows,
            height: 1,
        });
        parts_of.push(parts);
    }
    for (i, ix) in catalog.indexes.iter().enumerate() {
        let table = catalog.tables.get(ix.table);
        let rows = table.map_or(0, |t| t.rows);
        let parts = parts_of.get(ix.table).filter(|p| !p.is_empty());
        let local = ix.local && parts.is_some();
        let segments: Vec<u64> = match parts {
            Some(p) if local => p.clone(),
            _ => vec![rows],
        };
        let mut size = SegmentSize {
            segment: Segment::Index(i),
            formatted: 0,
            free: 0,
            leaves: 0,
            items: 0,
            height: 0,
        };
        for seg_rows in segments {
            let (blocks, leaves, height, items) = shape(ix, seg_rows, table);
            size.formatted = size.formatted.saturating_add(blocks);
            size.leaves = size.leaves.saturating_add(leaves);
            size.items = size.items.saturating_add(items);
            size.height = size.height.max(height);
        }
        if ix.kind == IndexKind::BTree && !local {
            size.free = u64::from(ix.free_blocks_per_instance).saturating_mul(n);
        }
        out.push(size);
    }
    if !catalog.sequences.is_empty() {
        out.push(SegmentSize {
            segment: Segment::SeqDollar,
            formatted: 1,
            free: 0,
            leaves: 1,
            items: catalog.sequences.len() as u64,
            height: 1,
        });
    }
    out
}

/// Blocks, leaves, height and entries of one index segment over `rows` keys.
fn shape(
    ix: &IndexDef,
    rows: u64,
    table: Option<&fusion_core::config::TableDef>,
) -> (u64, u64, u64, u64) {
    let leaf = u64::from(ix.entries_per_leaf.max(4));
    let branch = u64::from(ix.entries_per_branch.max(4));
    match ix.kind {
        IndexKind::BTree => {
            let (blocks, leaves, height) = tree(rows, leaf, branch);
            (blocks, leaves, height, rows)
        }
        IndexKind::Bitmap => {
            // A bitmap index covers the whole table (it is never local).
            let (rows, distinct) = table.map_or((0, 1), |t| (t.rows, t.distinct_values));
            let pieces = bitmap_pieces(rows, distinct, ix.rows_per_piece);
            let (blocks, leaves, height) = tree(pieces, leaf, branch);
            (blocks, leaves, height, pieces)
        }
    }
}

/// `12,345,678`, for messages.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::config::{IndexDef, SequenceDef, TableDef};
    use fusion_core::layout::{self, Layout};

    fn catalog() -> Catalog {
        Catalog {
            tables: vec![
                layout::table("t", 1000, 10),
                TableDef {
                    orgs: 3,
                    partition_by_org: true,
                    distinct_values: 7,
                    ..layout::table("p", 1001, 7)
                },
            ],
            indexes: vec![
                layout::btree("t_pk", 0, 20, 8),
                IndexDef {
                    local: true,
                    ..layout::btree("p_local", 1, 30, 5)
                },
                IndexDef {
                    kind: IndexKind::Bitmap,
                    rows_per_piece: 100,
                    ..layout::btree("p_bitmap", 1, 6, 4)
                },
            ],
            sequences: vec![SequenceDef {
                name: "s".into(),
                cache: 20,
                order: false,
                start: 1,
                increment: 1,
            }],
        }
    }

    /// The sizes add up to the layout's blocks, segment by segment.
    #[test]
    fn sizes_match_the_layout() {
        let cat = catalog();
        for n in [1u8, 2, 5] {
            let layout = Layout::new(&cat, n, 128);
            let sizes = segment_sizes(&cat, u64::from(n));
            let total: u64 = sizes.iter().map(SegmentSize::blocks).sum();
            assert_eq!(total, u64::from(layout.total_blocks), "{n} instances");
            let t = &layout.tables[0];
            assert_eq!(sizes[0].formatted, 1 + u64::from(t.initial_blocks));
            assert_eq!(sizes[0].free, u64::from(t.free_per_instance) * u64::from(n));
            let ix = &layout.indexes[0];
            assert_eq!(sizes[2].height, u64::from(ix.height));
            assert_eq!(
                sizes[2].free,
                u64::from(ix.free_per_instance) * u64::from(n)
            );
            assert_eq!(sizes[4].height, u64::from(layout.indexes[2].height));
        }
    }
}
