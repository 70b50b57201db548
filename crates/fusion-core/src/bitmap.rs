//! Bitmap indexes: for each value of the indexed column, bitmap pieces that
//! say which rows hold it. A piece covers a range of consecutive keys (its
//! chunk); Oracle keeps a piece around half a block, so for a column with few
//! values one piece covers thousands of rows. A transaction that changes one
//! row's value changes two pieces (the old value's and the new one's) and
//! holds both locked until it commits: every other row those pieces cover is
//! locked with them. That is why concurrent DML on a bitmap-indexed column
//! serializes, and why a query (`count(*) where col = :v`) needs only the
//! bitmap and never the table.
//!
//! The pieces (`block::Piece`) live in the leaves of a B-tree ordered by [`Piece::at`]
//! (value, then chunk); branches hold the same separators as a B-tree's.

// `Piece` and its key are the block body's data; this module is the index
// logic over them (re-exported so `bitmap::piece_at` keeps working).
pub use crate::block::{Piece, piece_at};

use crate::block::{Block, Body};
use crate::types::{BlockAddr, Xid, block_count};

/// The chunk row `key` falls in, with `rows_per_piece` keys per chunk.
pub fn chunk_of(key: u64, rows_per_piece: u32) -> u32 {
    // A key of the table falls in one of its `BitmapShape::chunks` (a u32);
    // a key beyond them names no piece, and saturating keeps it so.
    u32::try_from(key.saturating_sub(1) / u64::from(rows_per_piece.max(1))).unwrap_or(u32::MAX)
}

/// How a bitmap index over a table is laid out: one piece per value and
/// chunk (present even when no row of the chunk holds the value, so a change
/// never has to insert a piece), `per_leaf` pieces per leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitmapShape {
    pub rows: u64,
    pub distinct: u32,
    pub rows_per_piece: u32,
    pub per_leaf: u32,
    pub per_branch: u32,
}

impl BitmapShape {
    pub fn chunks(&self) -> u32 {
        crate::types::block_count(
            (self.rows.div_ceil(u64::from(self.rows_per_piece.max(1)))).max(1),
        )
    }

    pub fn pieces(&self) -> u64 {
        u64::from(self.distinct.max(1)) * u64::from(self.chunks())
    }

    pub fn leaves(&self) -> u32 {
        crate::types::block_count(
            self.pieces()
                .div_ceil(u64::from(self.per_leaf.max(1)))
                .max(1),
        )
    }

    /// Blocks and height (a one-leaf index still gets a separate root).
    pub fn blocks_and_height(&self) -> (u32, u32) {
        let branch = self.per_branch.max(2);
        let mut level = self.leaves();
        let mut blocks = level;
        let mut height = 1;
        while level > 1 {
            level = level.div_ceil(branch);
            blocks += level;
            height += 1;
        }
        if height == 1 {
            blocks += 1;
            height = 2;
        }
        (blocks, height)
    }

    /// Value and chunk of the `i`-th piece in index order.
    fn nth(&self, i: u64) -> (i64, u32) {
        let chunks = u64::from(self.chunks());
        ((i / chunks) as i64 + 1, (i % chunks) as u32)
    }

    /// The `i`-th piece in index order, with the rows of its chunk that
    /// hold its value initially: row `k` starts with value
    /// `config::initial_value(k, distinct)`, so they are every
    /// `distinct`-th key from the first one holding it.
    fn piece(&self, i: u64) -> Piece {
        let (value, chunk) = self.nth(i);
        let per = u64::from(self.rows_per_piece.max(1));
        let lo = u64::from(chunk) * per + 1;
        let hi = (lo + per - 1).min(self.rows);
        let d = u64::from(self.distinct.max(1));
        assert!(value >= 1, "piece {i} has value {value}: values start at 1");
        // The first key >= lo whose value is `value`: (k - 1) % d == value - 1.
        let want = (value as u64 - 1) % d;
        let first = lo + (want + d - (lo - 1) % d) % d;
        Piece {
            value,
            chunk,
            bits: (first..=hi).step_by(d as usize).collect(),
            lock: Xid::NONE,
        }
    }
}

/// Build a bitmap index bottom-up at `root` (root first, then the levels
/// below it top-down, then the leaves), as `layout::build_index` lays out a B-tree.
pub fn build(root: BlockAddr, shape: &BitmapShape) -> Vec<Block> {
    let leaves = shape.leaves();
    let per_leaf = u64::from(shape.per_leaf.max(1));
    let branch = shape.per_branch.max(2);
    let mut levels = vec![leaves];
    while *levels.last().unwrap_or(&1) > 1 {
        let below = *levels.last().unwrap_or(&1);
        levels.push(below.div_ceil(branch));
    }
    if levels.len() == 1 {
        levels.push(1);
    }
    let mut starts = vec![0u32; levels.len()];
    let mut a = root.0;
    for lvl in (0..levels.len()).rev() {
        starts[lvl] = a;
        a += levels[lvl];
    }
    let total = shape.pieces();
    let mut out = Vec::new();
    let mut firsts = Vec::new();
    for l in 0..leaves {
        let from = u64::from(l) * per_leaf;
        let to = (from + per_leaf).min(total);
        let pieces: Vec<Piece> = (from..to).map(|i| shape.piece(i)).collect();
        let low = if l == 0 {
            0
        } else {
            pieces.first().map_or(0, Piece::at)
        };
        let high = (l + 1 < leaves).then(|| {
            let (value, chunk) = shape.nth(to);
            piece_at(value, chunk)
        });
        let next = (l + 1 < leaves).then(|| BlockAddr(starts[0] + l + 1));
        firsts.push(low);
        out.push(Block::new(
            BlockAddr(starts[0] + l),
            Body::Bitmap {
                pieces,
                next,
                low,
                high,
            },
        ));
    }
    for lvl in 1..levels.len() {
        let children: Vec<(u64, BlockAddr)> = firsts
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, BlockAddr(starts[lvl - 1] + block_count(i as u64))))
            .collect();
        let mut next_firsts = Vec::new();
        for (b, chunk) in children.chunks(branch as usize).enumerate() {
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

/// What a bitmap leaf says about `value`: rows counted, pieces read, and
/// whether the value's pieces may go on in the next leaf.
pub fn count_in(block: &Block, value: i64) -> (u64, u32, Option<BlockAddr>) {
    let Body::Bitmap {
        pieces, next, high, ..
    } = &*block.body
    else {
        return (0, 0, None);
    };
    let lo = piece_at(value, 0);
    let hi = piece_at(value, u32::MAX);
    let from = pieces.partition_point(|p| p.at() < lo);
    let mut rows = 0;
    let mut read = 0;
    for p in pieces[from..].iter().take_while(|p| p.at() <= hi) {
        rows += p.count();
        read += 1;
    }
    let goes_on = high.is_some_and(|h| h <= hi);
    (rows, read, next.filter(|_| goes_on))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::initial_value;
    use crate::types::Scn;

    #[test]
    fn pieces_hold_exactly_the_rows_of_their_value() {
        let shape = BitmapShape {
            rows: 103,
            distinct: 7,
            rows_per_piece: 10,
            per_leaf: 5,
            per_branch: 4,
        };
        for i in 0..shape.pieces() {
            let p = shape.piece(i);
            let lo = u64::from(p.chunk) * 10 + 1;
            let want: Vec<u64> = (lo..=(lo + 9).min(103))
                .filter(|&k| initial_value(k, 7) == p.value)
                .collect();
            assert_eq!(p.bits, want, "piece {i}");
        }
    }

    /// Blocks sorted by address from `root`, which comes first.
    fn descend(blocks: &[Block], root: BlockAddr, at: u64) -> (usize, &Block) {
        let base = root.idx();
        let mut b = &blocks[0];
        let mut visits = 1;
        while let Some(child) = b.child_for(at) {
            b = &blocks[child.idx() - base];
            visits += 1;
        }
        (visits, b)
    }

    fn sorted(mut blocks: Vec<Block>) -> Vec<Block> {
        blocks.sort_by_key(|b| b.addr.0);
        blocks
    }

    #[test]
    fn every_value_is_found_in_one_leaf_below_the_root() {
        let shape = BitmapShape {
            rows: 1000,
            distinct: 50,
            rows_per_piece: 1000,
            per_leaf: 8,
            per_branch: 250,
        };
        let blocks = sorted(build(BlockAddr(10), &shape));
        assert_eq!(blocks.len() as u32, shape.blocks_and_height().0);
        for v in 1..=50 {
            let (visits, leaf) = descend(&blocks, BlockAddr(10), piece_at(v, 0));
            let (rows, read, more) = count_in(leaf, v);
            assert_eq!((visits, rows, read), (2, 20, 1), "value {v}");
            assert_eq!(more, None);
        }
    }

    #[test]
    fn a_value_spread_over_leaves_is_followed_and_bits_change() {
        let shape = BitmapShape {
            rows: 100,
            distinct: 2,
            rows_per_piece: 10,
            per_leaf: 4,
            per_branch: 4,
        };
        let blocks = sorted(build(BlockAddr(0), &shape));
        let (_, leaf) = descend(&blocks, BlockAddr(0), piece_at(1, 0));
        let (rows, read, more) = count_in(leaf, 1);
        assert_eq!((rows, read), (20, 4));
        let next = more.expect("value 1 has 10 pieces: it goes on");
        let (rows, _, _) = count_in(&blocks[next.idx()], 1);
        assert_eq!(rows, 20);
        let mut leaf = leaf.clone();
        let at = piece_at(1, 0);
        let clear = crate::block::Change::SetBit {
            at,
            key: 3,
            on: false,
        };
        assert!(leaf.apply(&clear, Xid(7), Scn(5)));
        assert_eq!(leaf.piece(at).map(Piece::count), Some(4));
        assert_eq!(leaf.piece(at).map(|p| p.lock), Some(Xid(7)));
        let cr = leaf
            .build_cr(Scn(4), Xid::NONE, Scn(10), &|_| {
                crate::block::TxState::Active
            })
            .expect("a CR copy");
        assert_eq!(cr.image.piece(at).map(Piece::count), Some(5));
    }
}
