//! What a parallel plan computes, row by row: the rows a producer projects
//! from a block, where each goes (the table queue's distribution), what a
//! consumer accumulates and outputs, and how the query coordinator merges the
//! consumers' output into the result. A serial execution runs the same
//! functions with one consumer, which is what makes "parallel result ==
//! serial result" a meaningful test of the distribution and the merge.
//!
//! Rows are flat `i64` columns; every table queue of a plan has a fixed width.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::query::{JoinDistribution, PxPlan, PxQuery};
use crate::block::{Block, Body};

/// Columns of a scanned row: (key, val), or (key, rowid) for an index build.
pub const SCAN_WIDTH: usize = 2;
/// A partial aggregate: count, sum(key), min(key), max(key), sum(val), max(val).
pub const AGG_WIDTH: usize = 6;
/// A group: grp, count, sum(t1.key), sum(t1.val + t2.val), max(t2.key).
pub const GROUP_WIDTH: usize = 5;
/// An index range: entries, digest, first key, last key, leaves.
pub const INDEX_WIDTH: usize = 5;

/// Bytes a table-queue buffer spends on its own header.
pub const BUFFER_HEADER: u32 = 64;

/// Bytes of an Oracle NUMBER holding `v`: an exponent byte, one byte per
/// base-100 digit pair (trailing zero pairs dropped) and a sign byte for
/// negatives; zero is one byte.
pub fn number_bytes(v: i64) -> u32 {
    if v == 0 {
        return 1;
    }
    let mut m = v.unsigned_abs();
    while m.is_multiple_of(100) {
        m /= 100;
    }
    let mut pairs = 0;
    while m > 0 {
        m /= 100;
        pairs += 1;
    }
    1 + pairs + u32::from(v < 0)
}

/// Bytes of one row in a table-queue buffer: a row header, then a length
/// byte and the NUMBER of each column.
pub fn row_bytes(row: &[i64]) -> u32 {
    2 + row.iter().map(|&v| 1 + number_bytes(v)).sum::<u32>()
}

/// The rowid of a slot as one number (block address and slot).
pub fn rowid(blk: u32, slot: usize) -> i64 {
    (i64::from(blk) << 16) | slot as i64
}

/// Rows a producer projects from a block it scanned: (key, val), or
/// (key, rowid) for an index build. Returns the rows.
pub fn project(plan: PxPlan, block: &Block, out: &mut Vec<i64>) -> u64 {
    let Body::Table { rows } = &*block.body else {
        return 0;
    };
    let mut projected = 0;
    for (slot, r) in rows.iter().enumerate() {
        let Some(r) = r else { continue };
        out.push(r.key as i64);
        out.push(match plan {
            PxPlan::IndexBuild => rowid(block.addr.0, slot),
            _ => r.val,
        });
        projected += 1;
    }
    projected
}

/// Where a row goes among the consumers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    One(usize),
    All,
}

/// Spread keys over consumers (a fixed multiplicative hash).
pub fn hash_key(key: i64, consumers: usize) -> usize {
    let h = (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 32) % consumers.max(1) as u64) as usize
}

/// The consumer owning `key` when keys `lo..=hi` are split into `consumers` ranges.
pub fn range_of(key: i64, lo: i64, hi: i64, consumers: usize) -> usize {
    let span = (hi - lo + 1).max(1) as i128;
    let off = (i128::from(key) - i128::from(lo)).clamp(0, span - 1);
    ((off * consumers as i128) / span) as usize
}

/// The distribution of the producers' table queue for one row.
/// `rr` is the producer's round-robin counter; `keys` the key range of the
/// first table (for range distribution).
pub fn route(
    q: &PxQuery,
    side: u8,
    key: i64,
    consumers: usize,
    rr: &mut usize,
    keys: (i64, i64),
) -> Route {
    match q.plan {
        PxPlan::HashJoinGroupBy => match (q.distribution, side) {
            (JoinDistribution::Hash, _) => Route::One(hash_key(key, consumers)),
            (JoinDistribution::Broadcast, 0) => Route::All,
            (JoinDistribution::Broadcast, _) => {
                *rr = (*rr + 1) % consumers.max(1);
                Route::One(*rr)
            }
        },
        PxPlan::Sort | PxPlan::IndexBuild => Route::One(range_of(key, keys.0, keys.1, consumers)),
        PxPlan::ScanAggregate => Route::One(0),
    }
}

/// An order-sensitive hash of a sequence that two halves can be combined
/// into: `hash = sum x_i * P^(len-1-i)` (wrapping), so
/// `hash(a ++ b) = hash(a) * P^|b| + hash(b)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digest {
    /// Elements hashed.
    pub len: u64,
    pub hash: u64,
}

const DIGEST_P: u64 = 0x0100_0000_01B3;

fn mix(a: i64, b: i64) -> u64 {
    let x = (a as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (b as u64).rotate_left(29);
    x ^ (x >> 31)
}

fn pow(mut b: u64, mut e: u64) -> u64 {
    let mut r = 1u64;
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    r
}

impl Digest {
    pub fn push(&mut self, a: i64, b: i64) {
        self.hash = self.hash.wrapping_mul(DIGEST_P).wrapping_add(mix(a, b));
        self.len += 1;
    }
    pub fn concat(self, next: Digest) -> Digest {
        Digest {
            len: self.len + next.len,
            hash: self
                .hash
                .wrapping_mul(pow(DIGEST_P, next.len))
                .wrapping_add(next.hash),
        }
    }
}

/// What a consumer (or a single-set producer, or a serial execution)
/// accumulates from the rows it receives.
#[derive(Clone, Debug)]
pub enum Stage {
    Agg([i64; AGG_WIDTH]),
    Join {
        build: FxHashMap<i64, Vec<i64>>,
        groups: BTreeMap<i64, [i64; 4]>,
        group_mod: i64,
    },
    Sort(Vec<(i64, i64)>),
    Index {
        entries: Vec<(i64, i64)>,
        per_leaf: u32,
    },
}

const AGG_EMPTY: [i64; AGG_WIDTH] = [0, 0, i64::MAX, i64::MIN, 0, i64::MIN];

fn merge_agg(a: &mut [i64; AGG_WIDTH], r: &[i64]) {
    a[0] = a[0].wrapping_add(r[0]);
    a[1] = a[1].wrapping_add(r[1]);
    a[2] = a[2].min(r[2]);
    a[3] = a[3].max(r[3]);
    a[4] = a[4].wrapping_add(r[4]);
    a[5] = a[5].max(r[5]);
}

fn merge_group(groups: &mut BTreeMap<i64, [i64; 4]>, r: &[i64]) {
    let g = groups.entry(r[0]).or_insert([0, 0, 0, i64::MIN]);
    g[0] = g[0].wrapping_add(r[1]);
    g[1] = g[1].wrapping_add(r[2]);
    g[2] = g[2].wrapping_add(r[3]);
    g[3] = g[3].max(r[4]);
}

/// Work a stage did, for the CPU it costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Rows touched (hashed, probed, aggregated, output).
    pub rows: u64,
    /// Comparisons of a sort.
    pub compares: u64,
}

impl Stage {
    pub fn new(q: &PxQuery) -> Stage {
        match q.plan {
            PxPlan::ScanAggregate => Stage::Agg(AGG_EMPTY),
            PxPlan::HashJoinGroupBy => Stage::Join {
                build: FxHashMap::default(),
                groups: BTreeMap::new(),
                group_mod: q.group_mod.clamp(1, i64::MAX as u64) as i64,
            },
            PxPlan::Sort => Stage::Sort(Vec::new()),
            PxPlan::IndexBuild => Stage::Index {
                entries: Vec::new(),
                per_leaf: q.entries_per_leaf.max(1),
            },
        }
    }

    /// Take scanned rows (`SCAN_WIDTH` columns) from table `side`.
    pub fn apply(&mut self, side: u8, values: &[i64]) -> Work {
        let rows = values.chunks_exact(SCAN_WIDTH);
        let row_count = rows.len() as u64;
        match self {
            Stage::Agg(a) => {
                for r in rows {
                    merge_agg(a, &[1, r[0], r[0], r[0], r[1], r[1]]);
                }
            }
            Stage::Join {
                build,
                groups,
                group_mod,
            } => {
                if side == 0 {
                    for r in rows {
                        build.entry(r[0]).or_default().push(r[1]);
                    }
                } else {
                    for r in rows {
                        if let Some(vals) = build.get(&r[0]) {
                            for v in vals {
                                let grp = r[0].rem_euclid(*group_mod);
                                merge_group(groups, &[grp, 1, r[0], v.wrapping_add(r[1]), r[0]]);
                            }
                        }
                    }
                }
            }
            Stage::Sort(list) | Stage::Index { entries: list, .. } => {
                list.extend(rows.map(|r| (r[0], r[1])));
            }
        }
        Work {
            rows: row_count,
            compares: 0,
        }
    }

    /// The stage's output rows (to the QC) and its width, once every input
    /// has arrived.
    pub fn finish(&mut self) -> (Vec<i64>, usize, Work) {
        match self {
            Stage::Agg(a) => {
                let out = if a[0] == 0 { Vec::new() } else { a.to_vec() };
                (
                    out,
                    AGG_WIDTH,
                    Work {
                        rows: 1,
                        compares: 0,
                    },
                )
            }
            Stage::Join { groups, .. } => {
                let mut out = Vec::with_capacity(groups.len() * GROUP_WIDTH);
                for (g, v) in groups.iter() {
                    out.extend([*g, v[0], v[1], v[2], v[3]]);
                }
                let group_count = groups.len() as u64;
                (
                    out,
                    GROUP_WIDTH,
                    Work {
                        rows: group_count,
                        compares: 0,
                    },
                )
            }
            Stage::Sort(list) => {
                let compares = sort_compares(list.len());
                list.sort_unstable();
                let mut out = Vec::with_capacity(list.len() * SCAN_WIDTH);
                for (k, v) in list.iter() {
                    out.extend([*k, *v]);
                }
                let row_count = list.len() as u64;
                (
                    out,
                    SCAN_WIDTH,
                    Work {
                        rows: row_count,
                        compares,
                    },
                )
            }
            Stage::Index { entries, per_leaf } => {
                let compares = sort_compares(entries.len());
                entries.sort_unstable();
                let mut d = Digest::default();
                for (k, r) in entries.iter() {
                    d.push(*k, *r);
                }
                let entry_count = entries.len() as u64;
                let out = if entry_count == 0 {
                    Vec::new()
                } else {
                    vec![
                        entry_count as i64,
                        d.hash as i64,
                        entries[0].0,
                        entries[entries.len() - 1].0,
                        entry_count.div_ceil(u64::from(*per_leaf)) as i64,
                    ]
                };
                (
                    out,
                    INDEX_WIDTH,
                    Work {
                        rows: entry_count,
                        compares,
                    },
                )
            }
        }
    }
}

/// Comparisons a sort of `rows` rows makes (rows log2 rows).
fn sort_compares(rows: usize) -> u64 {
    let rows = rows as u64;
    rows * u64::from(u64::BITS - rows.leading_zeros())
}

/// The width of the rows a consumer (or single-set producer) sends the QC.
pub fn output_width(plan: PxPlan) -> usize {
    match plan {
        PxPlan::ScanAggregate => AGG_WIDTH,
        PxPlan::HashJoinGroupBy => GROUP_WIDTH,
        PxPlan::Sort => SCAN_WIDTH,
        PxPlan::IndexBuild => INDEX_WIDTH,
    }
}

/// What the query coordinator merges from the consumers' output.
#[derive(Clone, Debug)]
pub enum Final {
    Agg([i64; AGG_WIDTH]),
    Groups(BTreeMap<i64, [i64; 4]>),
    /// Per consumer, in range order: digest, first and last key of its rows.
    Ordered(Vec<(Digest, Option<i64>, Option<i64>)>),
    /// Per consumer: its index range summary, if it had rows.
    Index(Vec<Option<[i64; INDEX_WIDTH]>>),
}

impl Final {
    pub fn new(plan: PxPlan, consumers: usize) -> Final {
        match plan {
            PxPlan::ScanAggregate => Final::Agg(AGG_EMPTY),
            PxPlan::HashJoinGroupBy => Final::Groups(BTreeMap::new()),
            PxPlan::Sort => Final::Ordered(vec![(Digest::default(), None, None); consumers]),
            PxPlan::IndexBuild => Final::Index(vec![None; consumers]),
        }
    }

    /// Rows from consumer `from` (its output width). Returns rows taken.
    pub fn apply(&mut self, from: usize, values: &[i64]) -> u64 {
        let mut taken = 0;
        match self {
            Final::Agg(a) => {
                for r in values.chunks_exact(AGG_WIDTH) {
                    merge_agg(a, r);
                    taken += 1;
                }
            }
            Final::Groups(g) => {
                for r in values.chunks_exact(GROUP_WIDTH) {
                    merge_group(g, r);
                    taken += 1;
                }
            }
            Final::Ordered(parts) => {
                if let Some((d, first, last)) = parts.get_mut(from) {
                    for r in values.chunks_exact(SCAN_WIDTH) {
                        d.push(r[0], r[1]);
                        first.get_or_insert(r[0]);
                        *last = Some(r[0]);
                        taken += 1;
                    }
                }
            }
            Final::Index(parts) => {
                if let Some(slot) = parts.get_mut(from) {
                    for r in values.chunks_exact(INDEX_WIDTH) {
                        let mut row = [0; INDEX_WIDTH];
                        row.copy_from_slice(r);
                        *slot = Some(row);
                        taken += 1;
                    }
                }
            }
        }
        taken
    }

    /// The statement's result rows.
    pub fn result(&self) -> Vec<Vec<i64>> {
        match self {
            Final::Agg(a) => {
                if a[0] == 0 {
                    vec![vec![0, 0, 0, 0, 0, 0]]
                } else {
                    vec![a.to_vec()]
                }
            }
            Final::Groups(g) => g
                .iter()
                .map(|(k, v)| vec![*k, v[0], v[1], v[2], v[3]])
                .collect(),
            Final::Ordered(parts) => {
                let d = parts
                    .iter()
                    .fold(Digest::default(), |acc, (x, _, _)| acc.concat(*x));
                let first = parts.iter().find_map(|p| p.1).unwrap_or(0);
                let last = parts.iter().rev().find_map(|p| p.2).unwrap_or(0);
                vec![vec![d.len as i64, d.hash as i64, first, last]]
            }
            Final::Index(parts) => {
                let mut d = Digest::default();
                let (mut first, mut last) = (None, 0);
                for p in parts.iter().flatten() {
                    d = d.concat(Digest {
                        len: p[0] as u64,
                        hash: p[1] as u64,
                    });
                    first.get_or_insert(p[2]);
                    last = p[3];
                }
                vec![vec![d.len as i64, d.hash as i64, first.unwrap_or(0), last]]
            }
        }
    }

    /// Index leaves the consumers built (each packs its own range).
    pub fn leaves(&self) -> u64 {
        match self {
            Final::Index(parts) => parts.iter().flatten().map(|p| p[4] as u64).sum(),
            _ => 0,
        }
    }
}

/// The result of `q` computed serially over table images (`blocks_of(t)` gives
/// the blocks of table `t`): the reference a parallel execution must match.
pub fn serial_result<'a>(
    q: &PxQuery,
    blocks_of: impl Fn(usize) -> Vec<&'a Block>,
) -> Vec<Vec<i64>> {
    let mut stage = Stage::new(q);
    let mut rows = Vec::new();
    for (side, &t) in q.tables.iter().enumerate() {
        for b in blocks_of(t) {
            rows.clear();
            project(q.plan, b, &mut rows);
            stage.apply(
                u8::try_from(side).expect("a plan reads at most two tables"),
                &rows,
            );
        }
    }
    let (out, _, _) = stage.finish();
    let mut fin = Final::new(q.plan, 1);
    fin.apply(0, &out);
    fin.result()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oracle_number_sizes() {
        assert_eq!(number_bytes(0), 1);
        assert_eq!(number_bytes(7), 2);
        assert_eq!(number_bytes(100), 2);
        assert_eq!(number_bytes(123_456), 4);
        assert_eq!(number_bytes(-5), 3);
        assert_eq!(row_bytes(&[123_456, 0]), 2 + 5 + 2);
    }

    #[test]
    fn digests_concatenate() {
        let mut all = Digest::default();
        let (mut a, mut b) = (Digest::default(), Digest::default());
        for i in 0..10 {
            all.push(i, i * 3);
            if i < 4 {
                a.push(i, i * 3);
            } else {
                b.push(i, i * 3);
            }
        }
        assert_eq!(a.concat(b), all);
        assert_ne!(b.concat(a), all);
    }

    #[test]
    fn ranges_cover_every_consumer_in_order() {
        let owners: Vec<usize> = (1..=100).map(|k| range_of(k, 1, 100, 4)).collect();
        assert_eq!(owners[0], 0);
        assert_eq!(owners[99], 3);
        assert!(owners.windows(2).all(|w| w[0] <= w[1]));
    }
}
