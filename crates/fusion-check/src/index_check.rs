//! The index check, at the end of a checked run: every index is a valid
//! B-tree over the newest image of each of its blocks, and holds the key of
//! every committed row exactly once.
//!
//! Walking down from the root:
//! - a branch is not empty, its separators ascend strictly and the first is
//!   the lowest key the branch covers (its parent's separator for it);
//! - a leaf covers exactly the range its parents give it (`low`, `high`), its
//!   entries ascend strictly inside that range, and all leaves are at one
//!   depth;
//! - the leaves' `next` links chain them from left to right;
//! - every entry points at a row with its key, in the newest image of the
//!   table block;
//! - each key of the table's initial rows and of a committed insert appears
//!   exactly once, a key only an uncommitted transaction wrote at most once,
//!   and no other key appears.

use fusion_core::block::{Block, Body};
use fusion_core::config::IndexKind;
use fusion_core::layout::{IndexLayout, Layout};
use fusion_core::types::BlockAddr;
use rustc_hash::{FxHashMap, FxHashSet};

/// Keys written during the run, per table: (table, key, committed).
pub(crate) type Written = Vec<(usize, u64, bool)>;

/// One node of the walk: a block and the key range `[lo, hi)` it must cover.
struct Node {
    blk: BlockAddr,
    lo: u64,
    hi: Option<u64>,
    depth: u32,
}

/// Check every index of `layout`; push a message per problem into `out`.
/// Returns the number of leaf entries checked.
pub(crate) fn check_indexes(
    layout: &Layout,
    written: &Written,
    newest: &dyn Fn(BlockAddr) -> Option<(Block, String)>,
    out: &mut Vec<String>,
) -> u64 {
    let mut tables: FxHashMap<BlockAddr, Option<Block>> = FxHashMap::default();
    let mut checked = 0;
    for (ix, index) in layout.indexes.iter().enumerate() {
        // Bitmap pieces are not per-row entries: this check does not cover them.
        if index.kind == IndexKind::Bitmap {
            continue;
        }
        checked += check_index(layout, ix, index, written, newest, &mut tables, out);
    }
    checked
}

fn check_index(
    layout: &Layout,
    ix: usize,
    index: &IndexLayout,
    written: &Written,
    newest: &dyn Fn(BlockAddr) -> Option<(Block, String)>,
    tables: &mut FxHashMap<BlockAddr, Option<Block>>,
    out: &mut Vec<String>,
) -> u64 {
    let name = format!("index {ix}");
    let mut seen: FxHashSet<BlockAddr> = FxHashSet::default();
    let mut counts: FxHashMap<u64, u32> = FxHashMap::default();
    let mut checked = 0;
    // A local index is one B-tree per partition, each over its own keys;
    // between them they hold every key once.
    let roots = if index.part_roots.is_empty() {
        vec![index.root]
    } else {
        index.part_roots.clone()
    };
    for root in roots {
        let mut leaves: Vec<(BlockAddr, Option<BlockAddr>)> = Vec::new();
        let mut leaf_depth: Option<u32> = None;
        // Depth first, children left to right, so leaves come out in key order.
        let mut stack = vec![Node {
            blk: root,
            lo: 0,
            hi: None,
            depth: 0,
        }];
        while let Some(node) = stack.pop() {
            if !seen.insert(node.blk) {
                out.push(format!("{name}: {} is reached twice", node.blk));
                continue;
            }
            let Some((block, at)) = newest(node.blk) else {
                out.push(format!("{name}: no image of {}", node.blk));
                continue;
            };
            match &*block.body {
                Body::Branch { entries } => {
                    if entries.first().map(|e| e.0) != Some(node.lo) {
                        out.push(format!(
                            "{name}: branch {} in {at} starts at {:?}, its parent gives it {}",
                            node.blk,
                            entries.first().map(|e| e.0),
                            node.lo
                        ));
                    }
                    let bad = entries.windows(2).any(|w| w[0].0 >= w[1].0)
                        || entries
                            .last()
                            .is_some_and(|e| node.hi.is_some_and(|h| e.0 >= h));
                    if bad {
                        out.push(format!(
                            "{name}: separators of branch {} in {at} out of order or range",
                            node.blk
                        ));
                        continue;
                    }
                    for (i, &(sep, child)) in entries.iter().enumerate().rev() {
                        stack.push(Node {
                            blk: child,
                            lo: if i == 0 { node.lo } else { sep },
                            hi: entries.get(i + 1).map(|e| e.0).or(node.hi),
                            depth: node.depth + 1,
                        });
                    }
                }
                Body::Leaf {
                    entries,
                    next,
                    low,
                    high,
                } => {
                    if *leaf_depth.get_or_insert(node.depth) != node.depth {
                        out.push(format!(
                            "{name}: leaf {} at depth {}, others at {leaf_depth:?}",
                            node.blk, node.depth
                        ));
                    }
                    if (*low, *high) != (node.lo, node.hi) {
                        out.push(format!(
                        "{name}: leaf {} in {at} covers [{low}, {high:?}), its parent gives it [{}, {:?})",
                        node.blk, node.lo, node.hi
                    ));
                    }
                    let outside = |k: u64| k < node.lo || node.hi.is_some_and(|h| k >= h);
                    if entries.windows(2).any(|w| w[0].key >= w[1].key)
                        || entries.iter().any(|e| outside(e.key))
                    {
                        out.push(format!(
                            "{name}: entries of leaf {} in {at} out of order or range",
                            node.blk
                        ));
                    }
                    leaves.push((node.blk, *next));
                    for e in entries {
                        checked += 1;
                        let key = index.entry_key(e.key);
                        *counts.entry(key).or_default() += 1;
                        let image = tables
                            .entry(e.rowid.blk)
                            .or_insert_with(|| newest(e.rowid.blk).map(|(b, _)| b));
                        let row = image.as_ref().and_then(|b| b.row(e.rowid.slot));
                        if row.is_none_or(|r| r.key != key) {
                            out.push(format!(
                                "{name}: entry for key {key} points at {}.{}, which holds {:?}",
                                e.rowid.blk,
                                e.rowid.slot,
                                row.map(|r| r.key)
                            ));
                        }
                    }
                }
                _ => out.push(format!(
                    "{name}: {} in {at} is not an index block",
                    node.blk
                )),
            }
        }
        for w in leaves.windows(2) {
            if w[0].1 != Some(w[1].0) {
                out.push(format!(
                    "{name}: leaf {} links to {:?}, the next leaf is {}",
                    w[0].0, w[0].1, w[1].0
                ));
            }
        }
        if let Some(&(last, Some(next))) = leaves.last() {
            out.push(format!("{name}: the last leaf {last} links to {next}"));
        }
    }
    check_keys(layout, ix, index, written, &counts, out);
    checked
}

/// Each expected key exactly once, uncommitted ones at most once, no others.
fn check_keys(
    layout: &Layout,
    ix: usize,
    index: &IndexLayout,
    written: &Written,
    counts: &FxHashMap<u64, u32>,
    out: &mut Vec<String>,
) {
    let initial = layout.tables.get(index.table).map_or(0, |t| t.initial_rows);
    let mut maybe: FxHashSet<u64> = FxHashSet::default();
    let mut committed: Vec<u64> = (1..=initial).collect();
    for &(table, key, done) in written {
        if table != index.table || key <= initial {
            continue;
        }
        if done {
            committed.push(key);
        } else {
            maybe.insert(key);
        }
    }
    committed.sort_unstable();
    committed.dedup();
    for &key in &committed {
        let count = counts.get(&key).copied().unwrap_or(0);
        if count != 1 {
            out.push(format!(
                "index {ix}: committed key {key} appears {count} times (0: see `unable to extend errors`)"
            ));
        }
    }
    let mut others: Vec<(u64, u32)> = counts
        .iter()
        .filter(|(k, _)| committed.binary_search(k).is_err())
        .map(|(&k, &count)| (k, count))
        .collect();
    others.sort_unstable();
    for (key, count) in others {
        if !maybe.contains(&key) {
            out.push(format!(
                "index {ix}: key {key} appears {count} times, but no transaction wrote it"
            ));
        } else if count > 1 {
            out.push(format!(
                "index {ix}: uncommitted key {key} appears {count} times"
            ));
        }
    }
}
