//! Roll-forward for instance recovery, as pure functions over a dead
//! instance's redo thread (rac-internals §8): the first pass finds the
//! recovery set, the second applies a block's redo to an image, and the
//! dead instance's uncommitted transactions are then rolled back from the
//! blocks' own undo ([`Block::roll_back`]).
//!
//! A change is replayed with [`Block::apply`], the very function the session
//! made it with, so the block recovered holds the same rows, entries and
//! undo. What recovery does not rebuild is delayed block cleanout (commit
//! SCNs written into ITLs, undo trimmed), which the model logs nowhere:
//! a recovered block may know fewer commits than the lost one did.

use rustc_hash::FxHashMap;

use crate::block::Block;
use crate::config::Nanos;
use crate::msg::RedoRecord;
use crate::types::{BlockAddr, InstId, Scn, Xid};

/// What one instance recovery did, as the recovering instance reports it
/// ([`crate::instance::Instance::take_recoveries`]): the figures of the
/// recovery summary and of JSON `recovery`. Times are the instance's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryReport {
    pub dead_instance: InstId,
    pub recovered_by: InstId,
    /// The survivors declared it dead (the reconfiguration began).
    pub detected_at: Nanos,
    /// The directory was frozen from `detected_at` until here (rebuilt and
    /// the recovery set claimed).
    pub unfrozen_at: Nanos,
    /// Cache recovery ended: every block of the recovery set recovered and written.
    pub cache_recovered_at: Nanos,
    /// The dead instance's uncommitted transactions were rolled back.
    pub completed_at: Nanos,
    pub redo_bytes_read: u64,
    pub blocks_recovered: u64,
    pub transactions_rolled_back: u64,
}

/// A block of the recovery set: changed in the thread after the last block
/// written record that covers it, or changed by a transaction that did not
/// commit (written or not, that change is to be rolled back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryBlock {
    pub blk: BlockAddr,
    /// SCN of its first change to redo (not covered by a block written
    /// record) or to undo (an uncommitted transaction's).
    pub first_dirty: Scn,
    /// Its changes to redo or undo.
    pub changes: u32,
}

/// What the first pass found in a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoverySet {
    /// The blocks to recover, by first-dirty SCN (then address).
    pub blocks: Vec<RecoveryBlock>,
    /// Redo bytes read (`redo k-bytes read` in the alert log).
    pub redo_bytes: u64,
    /// Records read.
    pub records: u64,
    /// Transactions with a commit record in the thread, with their commit SCN, by xid.
    pub committed: Vec<(Xid, Scn)>,
    /// Transactions with changes in the thread and no commit record, by xid:
    /// the ones to roll back.
    pub uncommitted: Vec<Xid>,
}

/// The first pass over a thread's redo from its checkpoint on (or from the
/// first change of its oldest active transaction, if older): the blocks
/// changed after the last block written record (BWR) that covers them (a
/// BWR at SCN s covers the block's changes up to s), and the blocks an
/// uncommitted transaction changed even where a BWR covers the change
/// (DBWR wrote the change, which is rolled back all the same; found by
/// chaos: a transaction that waited long for a row lock had its other
/// changes written, and they survived on disk), sorted by first-dirty
/// SCN; and the thread's committed and uncommitted transactions.
pub fn first_pass<'a>(records: impl IntoIterator<Item = &'a RedoRecord>) -> RecoverySet {
    struct Seen {
        written: Scn,
        changes: Vec<(Scn, Xid)>,
    }
    let mut blocks: FxHashMap<BlockAddr, Seen> = FxHashMap::default();
    let mut committed: FxHashMap<Xid, Scn> = FxHashMap::default();
    let mut changed: Vec<Xid> = Vec::new();
    let mut set = RecoverySet::default();
    for r in records {
        set.records += 1;
        set.redo_bytes += u64::from(r.bytes);
        if r.commit {
            committed.insert(r.xid, r.scn);
            continue;
        }
        let Some(blk) = r.blk else {
            continue;
        };
        let seen = blocks.entry(blk).or_insert(Seen {
            written: Scn::ZERO,
            changes: Vec::new(),
        });
        if r.written {
            seen.written = seen.written.max(r.scn);
        } else if r.change.is_some() {
            seen.changes.push((r.scn, r.xid));
            changed.push(r.xid);
        }
    }
    changed.sort_unstable();
    changed.dedup();
    set.uncommitted = changed
        .into_iter()
        .filter(|x| !committed.contains_key(x))
        .collect();
    for (blk, seen) in blocks {
        let to_recover = seen.changes.iter().filter(|&&(scn, xid)| {
            scn > seen.written || set.uncommitted.binary_search(&xid).is_ok()
        });
        let (first, n) = to_recover.fold((Scn::MAX, 0u32), |(f, n), &(scn, _)| {
            (f.min(scn), n.saturating_add(1))
        });
        if n > 0 {
            set.blocks.push(RecoveryBlock {
                blk,
                first_dirty: first,
                changes: n,
            });
        }
    }
    set.blocks.sort_unstable_by_key(|b| (b.first_dirty, b.blk));
    set.committed = committed.into_iter().collect();
    set.committed.sort_unstable();
    set
}

/// A change that did not fit the image it was replayed on (the image is not
/// the block the change was made to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollForwardError {
    pub blk: BlockAddr,
    pub scn: Scn,
    pub change: &'static str,
}

impl std::fmt::Display for RollForwardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the {} change at SCN {} does not fit the block",
            self.blk, self.change, self.scn
        )
    }
}

/// The second pass for one block: apply, in order, the records of `records`
/// that change `image`'s block and are newer than the image (SCN above
/// `image.scn`; older ones are already in it). Several threads' records
/// must come merged by SCN. Returns the recovered image and the changes
/// applied.
pub fn roll_forward<'a>(
    mut image: Block,
    records: impl IntoIterator<Item = &'a RedoRecord>,
) -> Result<(Block, u32), RollForwardError> {
    let mut applied = 0u32;
    for r in records {
        let Some(change) = &r.change else {
            continue;
        };
        if r.blk != Some(image.addr) || r.scn <= image.scn {
            continue;
        }
        if !image.apply(change, r.xid, r.scn) {
            return Err(RollForwardError {
                blk: image.addr,
                scn: r.scn,
                change: change.kind(),
            });
        }
        applied = applied.saturating_add(1);
    }
    Ok((image, applied))
}

/// Roll back, in a recovered block, the changes of the transactions the
/// first pass found uncommitted, at `scn` (see [`Block::roll_back`]).
/// Returns the undo records applied.
pub fn roll_back_uncommitted(image: &mut Block, uncommitted: &[Xid], scn: Scn) -> u32 {
    uncommitted
        .iter()
        .map(|&x| image.roll_back(x, scn))
        .fold(0u32, u32::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{Body, Change, LeafEntry, Row, TxState};
    use crate::types::{InstId, Rowid};

    fn x(seq: u64) -> Xid {
        Xid::new(InstId(1), seq)
    }

    fn table(blk: u32, rows: &[(u64, i64)]) -> Block {
        Block::new(
            BlockAddr(blk),
            Body::Table {
                rows: rows
                    .iter()
                    .map(|&(key, val)| {
                        Some(Row {
                            key,
                            val,
                            lock: Xid::NONE,
                        })
                    })
                    .collect(),
            },
        )
    }

    fn change(scn: Scn, xid: Xid, blk: u32, c: Change) -> RedoRecord {
        RedoRecord::change(scn, xid, BlockAddr(blk), 200, c)
    }

    #[test]
    fn first_pass_finds_blocks_not_covered_by_a_bwr() {
        let upd = |slot, val| Change::UpdateRow { slot, val };
        let thread = vec![
            change(Scn(10), x(1), 5, upd(0, 1)),
            change(Scn(11), x(1), 6, upd(0, 1)),
            RedoRecord::commit(Scn(12), x(1), 100),
            change(Scn(13), x(2), 7, upd(0, 2)),
            // Block 5 written at 10: its change is on disk.
            RedoRecord::block_written(BlockAddr(5), Scn(10)),
            change(Scn(14), x(3), 6, upd(1, 3)),
            // Written at 13 while block 6 changed again at 14: 6 stays.
            RedoRecord::block_written(BlockAddr(6), Scn(13)),
            change(Scn(15), x(2), 5, upd(1, 4)),
        ];
        let set = first_pass(&thread);
        assert_eq!(set.records, 8);
        assert_eq!(set.redo_bytes, 5 * 200 + 100);
        let blocks: Vec<(u32, u64, u32)> = set
            .blocks
            .iter()
            .map(|b| (b.blk.0, b.first_dirty.0, b.changes))
            .collect();
        assert_eq!(blocks, vec![(7, 13, 1), (6, 14, 1), (5, 15, 1)]);
        assert_eq!(set.committed, vec![(x(1), Scn(12))]);
        assert_eq!(set.uncommitted, vec![x(2), x(3)]);
    }

    #[test]
    fn a_bwr_does_not_cover_an_uncommitted_change() {
        let upd = |slot, val| Change::UpdateRow { slot, val };
        let thread = vec![
            change(Scn(10), x(1), 5, upd(0, 1)),
            change(Scn(11), x(2), 6, upd(0, 2)),
            // DBWR wrote both blocks: x(1)'s change and x(2)'s are on disk.
            RedoRecord::block_written(BlockAddr(5), Scn(11)),
            RedoRecord::block_written(BlockAddr(6), Scn(11)),
            RedoRecord::commit(Scn(12), x(2), 100),
        ];
        let set = first_pass(&thread);
        // x(2) committed: block 6 needs nothing. x(1) did not: block 5 is
        // recovered to roll its change back, though no redo is applied.
        let blocks: Vec<(u32, u64, u32)> = set
            .blocks
            .iter()
            .map(|b| (b.blk.0, b.first_dirty.0, b.changes))
            .collect();
        assert_eq!(blocks, vec![(5, 10, 1)]);
        assert_eq!(set.uncommitted, vec![x(1)]);
        let mut disk = table(5, &[(1, 0)]);
        assert!(disk.apply(&upd(0, 1), x(1), Scn(10)));
        let (mut image, applied) = roll_forward(disk, &thread).expect("fits");
        assert_eq!(applied, 0, "the disk image already holds the change");
        assert_eq!(
            roll_back_uncommitted(&mut image, &set.uncommitted, Scn(13)),
            1
        );
        assert_eq!(image.row(0).map(|r| (r.val, r.lock)), Some((0, Xid::NONE)));
    }

    #[test]
    fn roll_forward_replays_newer_changes_only() {
        let disk = table(5, &[(1, 10), (2, 20)]);
        // What the session did, from the same image.
        let mut live = disk.clone();
        let thread = vec![
            change(Scn(10), x(1), 5, Change::UpdateRow { slot: 0, val: 11 }),
            change(Scn(11), x(1), 6, Change::UpdateRow { slot: 0, val: 99 }),
            change(
                Scn(12),
                x(2),
                5,
                Change::InsertRow {
                    slot: 2,
                    key: 3,
                    val: 0,
                },
            ),
            change(Scn(13), x(2), 5, Change::UpdateRow { slot: 1, val: 21 }),
        ];
        for r in thread.iter().filter(|r| r.blk == Some(BlockAddr(5))) {
            assert!(live.apply(r.change.as_ref().unwrap(), r.xid, r.scn));
        }
        let (got, n) = roll_forward(disk.clone(), &thread).unwrap();
        assert_eq!(n, 3);
        assert_eq!(got, live, "undo and ITL included");
        // From an image written at 12, only the change at 13 is applied.
        let mut at12 = disk.clone();
        for r in &thread[..3] {
            if r.blk == Some(BlockAddr(5)) {
                at12.apply(r.change.as_ref().unwrap(), r.xid, r.scn);
            }
        }
        let (got, n) = roll_forward(at12, &thread).unwrap();
        assert_eq!((n, &got), (1, &live));
        // A change that does not fit is an error, not a panic.
        let bad = vec![change(
            Scn(20),
            x(3),
            5,
            Change::UpdateRow { slot: 9, val: 0 },
        )];
        let err = roll_forward(disk, &bad).unwrap_err();
        assert_eq!((err.scn, err.change), (Scn(20), "update_row"));
    }

    #[test]
    fn rollback_undoes_one_transaction_and_keeps_the_others() {
        let mut b = table(5, &[(1, 10), (2, 20)]);
        b.apply(&Change::UpdateRow { slot: 0, val: 11 }, x(1), Scn(5));
        b.clean_out(x(1), Scn(6));
        b.apply(&Change::UpdateRow { slot: 0, val: 12 }, x(2), Scn(7));
        b.apply(&Change::UpdateRow { slot: 1, val: 21 }, x(2), Scn(8));
        b.apply(
            &Change::InsertRow {
                slot: 2,
                key: 3,
                val: 0,
            },
            x(3),
            Scn(9),
        );
        let n = roll_back_uncommitted(&mut b, &[x(2)], Scn(20));
        assert_eq!(n, 2);
        assert_eq!(
            b.row(0),
            Some(&Row {
                key: 1,
                val: 11,
                lock: x(1)
            })
        );
        assert_eq!(b.row(1).map(|r| (r.val, r.lock)), Some((20, Xid::NONE)));
        assert_eq!(b.row(2).map(|r| r.key), Some(3), "x(3)'s insert stays");
        assert!(b.itl.iter().all(|e| e.xid != x(2)));
        assert!(b.undo.iter().all(|u| u.xid != x(2)));
        assert_eq!(b.scn, Scn(20));
        // Nobody needs to ask about x(2) here any more.
        let lookup = |xid: Xid| {
            if xid == x(3) {
                TxState::Committed(Scn(10))
            } else {
                TxState::Unknown
            }
        };
        assert!(b.unknown_txns(&lookup).is_empty());
        // A transaction the block never saw: nothing to do.
        assert_eq!(b.roll_back(x(9), Scn(21)), 0);
        assert_eq!(b.scn, Scn(20));
    }

    #[test]
    fn rollback_removes_an_uncommitted_entry_after_a_split() {
        let rid = Rowid {
            blk: BlockAddr(1),
            slot: 0,
        };
        let entry = |key| LeafEntry {
            key,
            rowid: rid,
            lock: Xid::NONE,
            val: 0,
        };
        let mut leaf = Block::new(
            BlockAddr(3),
            Body::Leaf {
                entries: vec![entry(1), entry(2), entry(4)],
                next: None,
                low: 0,
                high: None,
            },
        );
        leaf.apply(&Change::InsertEntry { key: 3, rowid: rid }, x(1), Scn(5));
        // A committed split (another transaction) keeps the lower half.
        let split = Change::SplitLower {
            keep: 3,
            high: 4,
            next: Some(BlockAddr(9)),
        };
        assert!(leaf.apply(&split, x(2), Scn(6)));
        leaf.clean_out(x(2), Scn(7));
        assert_eq!(leaf.roll_back(x(1), Scn(8)), 1);
        assert_eq!(leaf.leaf_lookup(3), None);
        assert_eq!(leaf.entry_count(), 2);
        assert!(leaf.leaf_covers(3) && !leaf.leaf_covers(4));
    }
}
