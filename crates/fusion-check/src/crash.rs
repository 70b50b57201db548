//! The checks across crashes. An instance that was killed or evicted is
//! down ([`crate::ConsistencyChecker::instance_down`]; on every event the
//! simulator's checker also takes as down an instance that stopped itself,
//! `Instance::halted`, and one the newest incarnation of the membership
//! leaves out, frozen or not): its memory is
//! gone, so its buffers count neither for coherence nor as the newest image
//! of a block, and its horizon no longer holds back the reads waiting for
//! commits (it will commit nothing more). What it did before stays:
//!
//! - a commit it **acknowledged** to its session (`Observation::Acknowledged`:
//!   the commit record was on disk) must survive, in the store or in a
//!   surviving instance's cache, as any other commit (the lost-write and CR
//!   checks); one that did not is counted in `commits_lost`;
//! - its **open transactions** must be rolled back by the instance recovery:
//!   a row only they wrote must hold its value from before them, and a
//!   change of theirs found at the end is reported as a rolled-back change
//!   that survives;
//! - a commit it made but had **not acknowledged** yet is in doubt: its
//!   record may or may not have reached the disk, so the recovery may keep
//!   or lose it, and both are right. A read or a final image may show the
//!   version it committed or the one before it.
//!
//! A restarted instance is a new life: once the newest incarnation admits
//! it (or [`crate::ConsistencyChecker::instance_up`] says so), its buffers and
//! horizon count again, the horizon from its next drain; what it did before
//! the cluster admitted it counts for nothing.

use fusion_core::types::{InstId, Scn, Xid};
use rustc_hash::FxHashMap;

use super::rows::{Row, RowKey};

/// A transaction's writes: (table, key, value).
pub(crate) type Writes = Vec<(usize, u64, i64)>;

/// What the deaths of instances leave to check.
pub(crate) struct Crashes {
    /// Per instance (0-based): down.
    down: Vec<bool>,
    /// Per instance: the newest incarnation seen when it went down (a
    /// later one that admits it admits a new life).
    down_at: Vec<u32>,
    /// The newest incarnation seen (`note_evictions`).
    newest: u32,
    /// Commits not acknowledged yet, with their SCN and writes: in doubt
    /// if their instance dies now. Holds the commits waiting for their
    /// `log file sync`, a few per session at most.
    unacked: FxHashMap<Xid, (Scn, Writes)>,
    /// Per row, the versions committed in doubt (commit SCN, value).
    doubt: FxHashMap<RowKey, Vec<(Scn, i64)>>,
    /// Per row, the changes of transactions rolled back by a death.
    rolled_back: FxHashMap<RowKey, Vec<(Xid, i64)>>,
}

impl Crashes {
    pub(crate) fn new(instances: usize) -> Crashes {
        Crashes {
            down: vec![false; instances],
            down_at: vec![0; instances],
            newest: 0,
            unacked: FxHashMap::default(),
            doubt: FxHashMap::default(),
            rolled_back: FxHashMap::default(),
        }
    }

    /// Whether only transactions rolled back by a death wrote `row` (or
    /// some did): its value from before them is expected.
    pub(crate) fn rolled_back_row(&self, row: &RowKey) -> bool {
        self.rolled_back.contains_key(row)
    }

    /// The rolled-back transaction that wrote `got` to `row`, if one did.
    pub(crate) fn rolled_back_value(&self, row: &RowKey, got: Option<i64>) -> Option<Xid> {
        let got = got?;
        self.rolled_back
            .get(row)?
            .iter()
            .rev()
            .find(|(_, v)| *v == got)
            .map(|(x, _)| *x)
    }

    /// Whether `got`, the newest image's value of `row`, is right given the
    /// commits in doubt on it: the newest version, or an older one all of
    /// whose successors are in doubt.
    pub(crate) fn doubtful_value(
        &self,
        key: &RowKey,
        row: &Row,
        got: Option<i64>,
        initial: Option<i64>,
    ) -> bool {
        self.doubt
            .get(key)
            .is_some_and(|d| row.seen_at_doubtful(Scn::MAX, d, initial).contains(&got))
    }
}

/// What one instance says of the cluster: whether it stopped (evicted),
/// the incarnation and members it sees, and the dead instances whose redo
/// threads no recovery has finished as it knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberView {
    pub inst: InstId,
    pub halted: bool,
    pub incarnation: u32,
    pub members: fusion_core::types::InstSet,
    pub unrecovered: fusion_core::types::InstSet,
}

impl MemberView {
    /// The newest view of the cluster among the instances that run in it
    /// (not halted): the highest incarnation, the lowest instance on a tie.
    pub fn newest(views: &[MemberView]) -> Option<&MemberView> {
        views
            .iter()
            .filter(|v| !v.halted)
            .max_by_key(|v| (v.incarnation, std::cmp::Reverse(v.inst)))
    }
}

/// A change of an instance's life that the cluster's membership shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LifeChange {
    /// Evicted (or it stopped): down from now on.
    Down(InstId),
    /// A restarted instance a later incarnation admitted: a new life.
    Up(InstId),
}

impl Crashes {
    /// `inst` crashed or was evicted: down from now on, and its commits not
    /// acknowledged yet are in doubt. `None` when it already was down;
    /// otherwise how many commits went into doubt.
    pub(crate) fn down(&mut self, inst: InstId) -> Option<u64> {
        let i = inst.idx();
        if i >= self.down.len() {
            self.down.resize(i + 1, false);
        }
        if self.down[i] {
            return None;
        }
        self.down[i] = true;
        if i >= self.down_at.len() {
            self.down_at.resize(i + 1, 0);
        }
        self.down_at[i] = self.newest;
        let mut doubt: Vec<Xid> = self
            .unacked
            .keys()
            .filter(|x| x.inst() == inst)
            .copied()
            .collect();
        doubt.sort_unstable();
        let mut in_doubt = 0;
        for xid in doubt {
            let Some((scn, writes)) = self.unacked.remove(&xid) else {
                continue;
            };
            in_doubt += 1;
            for (t, k, v) in writes {
                self.doubt.entry((t, k)).or_default().push((scn, v));
            }
        }
        Some(in_doubt)
    }

    /// `xid` was open when its instance died: its `writes` are expected
    /// rolled back.
    pub(crate) fn rolled_back(&mut self, xid: Xid, writes: Writes) {
        for (t, k, v) in writes {
            self.rolled_back.entry((t, k)).or_default().push((xid, v));
        }
    }

    /// `inst` started again: up.
    pub(crate) fn up(&mut self, inst: InstId) {
        if let Some(d) = self.down.get_mut(inst.idx()) {
            *d = false;
        }
    }

    /// Whether `inst` is down (killed or evicted, not restarted).
    pub(crate) fn is_down(&self, inst: InstId) -> bool {
        self.is_down_at(inst.idx())
    }

    /// Whether the instance of index `i` (0-based) is down.
    pub(crate) fn is_down_at(&self, i: usize) -> bool {
        self.down.get(i).copied().unwrap_or(false)
    }

    /// What each instance says of the cluster (see
    /// `ConsistencyChecker::note_membership`): the instances the newest
    /// incarnation leaves out go down, in the order of `views` and then of
    /// their numbers, and a restarted one it admits comes back.
    pub(crate) fn membership(&mut self, views: &[MemberView]) -> Vec<LifeChange> {
        let newest = views
            .iter()
            .filter(|v| !self.is_down(v.inst) && !v.halted)
            .map(|v| (v.incarnation, std::cmp::Reverse(v.inst.0), v.members))
            .max_by_key(|m| (m.0, m.1));
        let Some((incarnation, _, members)) = newest else {
            return Vec::new();
        };
        self.newest = self.newest.max(incarnation);
        let mut changes = Vec::new();
        // An instance going down makes room for its index.
        let mut known = self.down.len();
        for v in views {
            let member = members.contains(v.inst);
            let admitted_since = self
                .down_at
                .get(v.inst.idx())
                .is_some_and(|&at| incarnation > at);
            if !member && !self.is_down(v.inst) {
                changes.push(LifeChange::Down(v.inst));
                known = known.max(v.inst.idx() + 1);
            } else if member && admitted_since && self.is_down(v.inst) && !v.halted {
                changes.push(LifeChange::Up(v.inst));
            }
        }
        let unseen = (0..known)
            .filter_map(|i| u8::try_from(i).ok().map(InstId))
            .filter(|&i| !views.iter().any(|v| v.inst == i))
            .filter(|&i| !members.contains(i) && !self.is_down(i));
        changes.extend(unseen.map(LifeChange::Down));
        changes
    }

    /// `xid` committed at `scn` with `writes`: in doubt until acknowledged.
    pub(crate) fn committed(&mut self, xid: Xid, scn: Scn, writes: Writes) {
        self.unacked.insert(xid, (scn, writes));
    }

    /// `xid`'s commit was acknowledged to its session.
    pub(crate) fn acknowledged(&mut self, xid: Xid) {
        self.unacked.remove(&xid);
    }

    /// The versions of `row` committed in doubt (commit SCN, value).
    pub(crate) fn doubt(&self, row: &RowKey) -> Option<&[(Scn, i64)]> {
        self.doubt.get(row).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fusion_core::config::{Catalog, TableDef};
    use fusion_core::instance::{Horizon, Observation};
    use fusion_core::layout::Layout;
    use fusion_core::types::{InstId, Scn, Xid};

    use crate::{CheckReport, ConsistencyChecker};

    fn layout() -> Arc<Layout> {
        let catalog = Catalog {
            tables: vec![TableDef {
                name: "t".into(),
                rows: 10,
                rows_per_block: 10,
                free_blocks_per_instance: 0,
                orgs: 1,
                partition_by_org: false,
                distinct_values: 0,
            }],
            ..Catalog::default()
        };
        Arc::new(Layout::new(&catalog, 2, 1))
    }

    fn x(inst: u8, seq: u64) -> Xid {
        Xid::new(InstId(inst), seq)
    }

    fn write(xid: Xid, key: u64, val: i64) -> Observation {
        Observation::Write {
            xid,
            table: 0,
            key,
            val,
        }
    }

    fn commit(xid: Xid, scn: u64) -> Observation {
        Observation::Commit { xid, scn: Scn(scn) }
    }

    fn ack(xid: Xid) -> Observation {
        Observation::Acknowledged { xid }
    }

    fn read(snapshot: u64, key: u64, val: i64) -> Observation {
        Observation::Read {
            xid: Xid::NONE,
            snapshot: Scn(snapshot),
            table: 0,
            key,
            val: Some(val),
        }
    }

    fn horizon(scn: u64) -> Option<Horizon> {
        Some(Horizon {
            scn: Scn(scn),
            snapshot: Scn(scn),
        })
    }

    /// Finish with the store holding `images`: (key, value) of table 0's
    /// block (every other row at its initial 0).
    fn finish(c: ConsistencyChecker, images: &[(u64, i64)]) -> CheckReport {
        let layout = layout();
        let mut stored = layout.initial_blocks();
        for &(key, val) in images {
            let rowid = layout.initial_rowid(0, key).expect("a row");
            let block = &mut stored[rowid.blk.idx()];
            let change = fusion_core::block::Change::UpdateRow {
                slot: rowid.slot,
                val,
            };
            assert!(block.apply(&change, Xid::new(InstId(0), 999), Scn(1)));
        }
        c.finish_with(|blk| {
            stored
                .get(blk.idx())
                .map(|b| (b.clone(), "the store".to_string()))
        })
    }

    #[test]
    fn an_acknowledged_commit_of_a_dead_instance_must_survive() {
        for (image, lost) in [(7, 0), (0, 1)] {
            let mut c = ConsistencyChecker::new(layout());
            let a = x(1, 1);
            c.take_drained(
                InstId(1),
                &[write(a, 3, 7), commit(a, 10), ack(a)],
                horizon(11),
            );
            c.instance_down(InstId(1));
            c.take_drained(InstId(0), &[read(20, 3, image)], horizon(21));
            let r = finish(c, &[(3, image)]);
            assert_eq!(r.commits_acknowledged, 1);
            assert_eq!(r.commits_lost, lost, "{:?}", r.violations);
            // Lost: the read after it and the final image both say so.
            assert_eq!(r.violations.len(), 2 * lost as usize, "{:?}", r.violations);
        }
    }

    #[test]
    fn an_open_transaction_of_a_dead_instance_must_be_rolled_back() {
        for (image, violations) in [(0, 0), (9, 1)] {
            let mut c = ConsistencyChecker::new(layout());
            let a = x(1, 1);
            c.take_drained(InstId(1), &[write(a, 4, 9)], horizon(5));
            c.instance_down(InstId(1));
            let r = finish(c, &[(4, image)]);
            assert_eq!(r.transactions_rolled_back, 1);
            assert_eq!(r.violations.len(), violations, "{:?}", r.violations);
            if violations > 0 {
                assert!(
                    r.violations[0].starts_with("rolled-back change survives: table 0 key 4"),
                    "{:?}",
                    r.violations
                );
            }
        }
    }

    #[test]
    fn a_commit_not_acknowledged_before_the_death_is_in_doubt_either_way() {
        for image in [5, 1] {
            let mut c = ConsistencyChecker::new(layout());
            let (a, b) = (x(0, 1), x(1, 1));
            c.take_drained(
                InstId(0),
                &[write(a, 2, 1), commit(a, 10), ack(a)],
                horizon(11),
            );
            c.take_drained(InstId(1), &[write(b, 2, 5), commit(b, 20)], horizon(21));
            c.instance_down(InstId(1));
            c.take_drained(InstId(0), &[read(30, 2, image)], horizon(31));
            let r = finish(c, &[(2, image)]);
            assert_eq!(r.commits_in_doubt, 1);
            assert!(r.violations.is_empty(), "{image}: {:?}", r.violations);
        }
        // But not any value.
        let mut c = ConsistencyChecker::new(layout());
        let b = x(1, 1);
        c.take_drained(InstId(1), &[write(b, 2, 5), commit(b, 20)], horizon(21));
        c.instance_down(InstId(1));
        let r = finish(c, &[(2, 3)]);
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
    }

    /// Seed 2022 of `chaos --live split-brain`: instance 2 is frozen (it
    /// cannot answer, so the live runner has no view of it) while instance
    /// 1 evicts it. It is down from the eviction on: its commit waiting for
    /// its redo is in doubt, its open transaction rolled back, and what it
    /// does once it wakes (a commit on a block it still thinks it holds,
    /// whose redo the fence refuses) counts for nothing.
    #[test]
    fn an_instance_evicted_while_frozen_is_down_though_it_never_answered() {
        let (b, open, zombie) = (x(1, 1), x(1, 2), x(1, 3));
        let mut c = ConsistencyChecker::new(layout());
        // Taken when it was held, just before the freeze.
        c.take_drained(
            InstId(1),
            &[write(b, 2, 5), commit(b, 20), write(open, 4, 9)],
            horizon(21),
        );
        let survivor = |incarnation: u32, members: u64| crate::MemberView {
            inst: InstId(0),
            halted: false,
            incarnation,
            members: fusion_core::types::InstSet(members),
            unrecovered: fusion_core::types::InstSet::default(),
        };
        // Still a member: a short freeze is nothing.
        c.note_membership(&[survivor(1, 0b11)]);
        assert!(!c.is_down(InstId(1)));
        // The survivor's new incarnation leaves it out.
        c.note_membership(&[survivor(2, 0b01)]);
        assert!(c.is_down(InstId(1)), "evicted while frozen");
        // It wakes and commits on its stale copy before it halts.
        c.take_drained(
            InstId(1),
            &[write(zombie, 6, 3), commit(zombie, 30)],
            horizon(31),
        );
        let r = finish(c, &[]);
        assert_eq!(r.commits_in_doubt, 1, "{r:?}");
        assert_eq!(r.transactions_rolled_back, 1, "{r:?}");
        assert_eq!(r.commits_lost, 0, "{:?}", r.violations);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }

    #[test]
    fn a_dead_instance_holds_no_read_back() {
        let mut c = ConsistencyChecker::new(layout());
        let a = x(0, 1);
        c.take_drained(InstId(1), &[], horizon(5));
        c.take_drained(
            InstId(0),
            &[write(a, 1, 2), commit(a, 10), ack(a)],
            horizon(40),
        );
        c.take_drained(InstId(0), &[read(30, 1, 2)], horizon(40));
        assert_eq!(c.kept().0, 1, "waits for instance 1, at 5");
        c.instance_down(InstId(1));
        assert_eq!(c.kept().0, 0, "instance 1 will commit nothing more");
        c.instance_up(InstId(1));
        c.take_drained(InstId(0), &[read(45, 1, 2)], horizon(50));
        assert_eq!(c.kept().0, 1, "a restarted instance counts again");
        let r = finish(c, &[(1, 2)]);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }
}
