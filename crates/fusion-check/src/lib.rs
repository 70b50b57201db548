//! Correctness checks of a run, kept apart from the model they check and
//! from the driver that ran it: the simulator and the live runner feed the
//! same [`ConsistencyChecker`].
//!
//! - Coherence (after every event): at most one instance holds a block in X,
//!   and nobody holds it in S while someone holds it in X.
//! - CR consistency (as the run goes): every consistent read returned exactly
//!   the value committed as of its snapshot SCN (or the reader's own change).
//! - Lost writes (at the end): the newest image of every row (a current
//!   buffer somewhere, else the store) holds the last value written to it.
//! - Indexes (at the end): every index is a valid B-tree holding each
//!   committed row's key exactly once (`index_check.rs`).
//!
//! Crashes (`crash.rs`): a killed or evicted instance
//! ([`ConsistencyChecker::instance_down`], `Instance::halted`, or left out
//! of the newest incarnation of the cluster's membership) holds no
//! cache and no horizon any more; its acknowledged commits must survive,
//! its open transactions must be rolled back, and a commit of it that was
//! not acknowledged yet is in doubt (either outcome is right).
//!
//! The checker keeps no observation beyond the moment it can verify it: a
//! read waits (`pending.rs`) only until every instance's SCN passed its
//! snapshot, so that no commit it must see can still arrive, and is checked
//! against the rows' committed versions (`rows.rs`), of which only those a
//! snapshot may still see are kept. Its memory grows with the rows written,
//! not with the length of the run.

mod coherence;
mod crash;
mod index_check;
mod pending;
mod rows;

use std::sync::Arc;

use fusion_core::block::Block;
use fusion_core::instance::{BufState, Horizon, Instance, Observation};
use fusion_core::layout::Layout;
use fusion_core::types::{BlockAddr, InstId, Scn, Xid};
use rustc_hash::FxHashMap;

use crash::LifeChange;
pub use crash::MemberView;
pub use pending::PENDING_READS_MAX;
use pending::{Pending, Read};
use rows::{RowKey, Rows};

#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub events_checked: u64,
    pub reads_checked: u64,
    pub rows_checked: u64,
    /// Index leaf entries walked by the index check.
    pub index_entries_checked: u64,
    pub commits: u64,
    /// Commits acknowledged to their session (`log file sync` ended).
    pub commits_acknowledged: u64,
    /// Commits of an instance that died before acknowledging them: kept or
    /// lost, either is right.
    pub commits_in_doubt: u64,
    /// Acknowledged commits with a change missing at the end (by the
    /// row's last writer; each is also a lost-write violation).
    pub commits_lost: u64,
    /// Open transactions of instances that died: their changes must not
    /// survive.
    pub transactions_rolled_back: u64,
    pub violations: Vec<String>,
}

/// What one instance's history promised at its last complete drain.
#[derive(Clone, Copy, Debug, Default)]
struct Mark {
    /// Every commit of it not taken yet has a higher SCN.
    scn: Option<Scn>,
    /// Every read of it not taken yet has a snapshot at or above this.
    snapshot: Option<Scn>,
}

/// Checks a cluster's buffers after every event (coherence) and its history
/// of reads, writes and commits as it is drained from the instances (CR
/// consistency) and at the end (lost writes, indexes): whether the run kept
/// the data consistent.
pub struct ConsistencyChecker {
    layout: Arc<Layout>,
    report: CheckReport,
    /// Latest value each open transaction wrote to each row. A commit folds
    /// them into `rows`, so this holds the transactions open at once.
    open: FxHashMap<Xid, Vec<(usize, u64, i64)>>,
    /// Every written row: its last write and the committed versions a
    /// snapshot may still see.
    rows: Rows,
    /// Reads waiting until no commit they could see can still arrive.
    pending: Pending,
    /// Per instance, what its last complete drain promised.
    marks: Vec<Mark>,
    /// Reads verified early because too many waited (`PENDING_READS_MAX`):
    /// per row, the highest snapshot among them. A commit at or below it
    /// that arrives later is one they should have seen.
    early: FxHashMap<RowKey, Scn>,
    coherence: coherence::Coherence,
    /// The simulator's drains, reused from event to event.
    buf: Vec<Observation>,
    /// What the instances' deaths leave to check (crash.rs).
    crash: crash::Crashes,
}

/// Violations kept in the report (the first ones; the checks go on counting).
const VIOLATIONS_MAX: usize = 20;

impl ConsistencyChecker {
    pub fn new(layout: Arc<Layout>) -> ConsistencyChecker {
        ConsistencyChecker::with_pending_limit(layout, PENDING_READS_MAX)
    }

    /// A checker that lets at most `limit` reads wait (tests lower it).
    pub fn with_pending_limit(layout: Arc<Layout>, limit: usize) -> ConsistencyChecker {
        let blocks = layout.total_blocks as usize;
        let instances = usize::from(layout.instances.max(1));
        ConsistencyChecker {
            layout,
            report: CheckReport::default(),
            open: FxHashMap::default(),
            rows: Rows::default(),
            pending: Pending::new(limit),
            marks: vec![Mark::default(); instances],
            early: FxHashMap::default(),
            coherence: coherence::Coherence::new(blocks),
            buf: Vec::new(),
            crash: crash::Crashes::new(instances),
        }
    }

    fn violation(&mut self, v: String) {
        if self.report.violations.len() < VIOLATIONS_MAX {
            self.report.violations.push(v);
        }
    }

    /// Reads waiting now, and committed versions kept now (for tests and
    /// measurements).
    pub fn kept(&self) -> (usize, usize) {
        (self.pending.len(), self.rows.versions())
    }

    /// Take in observations, each instance's in the order it recorded them,
    /// without a horizon (tests; a live drain's chunks but the last): a read
    /// is verified at once if every instance's last horizon passed its
    /// snapshot, else it waits until one does, or the end.
    pub fn take(&mut self, history: &[Observation]) {
        for o in history {
            self.take_one(o);
        }
    }

    /// Take in a chunk drained from `inst`'s history (the oldest it had not
    /// handed over, in order). `caught_up`: the chunk emptied the
    /// instance's log, and its [`Horizon`] as of then
    /// (`Instance::drain_history`). A live runner drains in chunks; only
    /// the last of a drain comes with the horizon.
    pub fn take_drained(
        &mut self,
        inst: InstId,
        history: &[Observation],
        caught_up: Option<Horizon>,
    ) {
        // What an instance the cluster evicted still does (a frozen one
        // waking up before it finds itself fenced) counts for nothing, as
        // on the simulator (`after_event`).
        if self.is_down(inst) {
            return;
        }
        if let Some(h) = caught_up {
            self.mark(inst, h.scn, Some(h.snapshot));
        }
        self.take(history);
        self.settle();
        if caught_up.is_some() && self.rows.wants_trim() {
            self.trim();
        }
    }

    /// The simulator's step: drain every instance's history, then check
    /// coherence.
    pub fn after_event(&mut self, instances: &mut [Instance]) {
        // A horizon looks at every session: asked for only when a trim is due.
        let trim = self.rows.wants_trim();
        let mut buf = std::mem::take(&mut self.buf);
        self.note_evictions(instances);
        for inst in instances.iter_mut() {
            let h = inst.drain_history(&mut buf, usize::MAX);
            let snapshot = if trim { h.map(|h| h.snapshot) } else { None };
            // What an instance the cluster already evicted still does (a
            // frozen one waking up before it finds itself fenced) counts
            // for nothing: the cluster has moved on without it.
            if !self.is_down(inst.id) {
                self.mark(inst.id, inst.scn(), snapshot);
                self.take(&buf);
            }
            buf.clear();
            if inst.halted().is_some() && !self.is_down(inst.id) {
                self.instance_down(inst.id);
            }
        }
        self.buf = buf;
        self.settle();
        if trim {
            self.trim();
        }
        self.report.events_checked += 1;
        let mut counted = self.coherence.counted_buffer();
        self.counted(instances, &mut counted);
        let found = self.coherence.after_event(instances, counted);
        self.report_conflicts(found);
    }

    /// `inst` handed over everything it recorded: every later commit of it
    /// comes after `scn`, every later read at or above `snapshot` (when
    /// known). A mark only moves up.
    fn mark(&mut self, inst: InstId, scn: Scn, snapshot: Option<Scn>) {
        let i = inst.idx();
        if i >= self.marks.len() {
            self.marks.resize(i + 1, Mark::default());
        }
        let m = &mut self.marks[i];
        m.scn = Some(m.scn.map_or(scn, |s| s.max(scn)));
        if let Some(snap) = snapshot {
            m.snapshot = Some(m.snapshot.map_or(snap, |s| s.max(snap)));
        }
    }

    /// The SCN at or below which no commit is still to come: the lowest
    /// mark, once every instance has one.
    fn settled(&self) -> Option<Scn> {
        self.live_marks().map(|m| m.scn).min().flatten()
    }

    /// Verify every waiting read no commit to come can change.
    fn settle(&mut self) {
        let Some(upto) = self.settled() else {
            return;
        };
        while let Some(r) = self.pending.pop_upto(upto) {
            self.verify(&r);
        }
    }

    /// Forget the versions no read still to come can see: below the lowest
    /// snapshot an instance may still read at and the lowest one waiting.
    fn trim(&mut self) {
        let Some(floor) = self.live_marks().map(|m| m.snapshot).min().flatten() else {
            return;
        };
        let horizon = self.pending.lowest().map_or(floor, |p| p.min(floor));
        self.rows.trim(horizon);
    }

    fn take_one(&mut self, o: &Observation) {
        match *o {
            Observation::Write {
                xid,
                table,
                key,
                val,
            } => {
                let w = self.open.entry(xid).or_default();
                match w.iter_mut().find(|(t, k, _)| *t == table && *k == key) {
                    Some(e) => e.2 = val,
                    None => w.push((table, key, val)),
                }
                self.rows.written((table, key), xid);
            }
            Observation::Acknowledged { xid } => self.acknowledged(xid),
            Observation::Commit { xid, scn } => {
                self.report.commits += 1;
                let writes = self.open.remove(&xid).unwrap_or_default();
                for &(t, k, v) in &writes {
                    if let Some(&seen) = self.early.get(&(t, k))
                        && scn <= seen
                    {
                        self.violation(format!(
                            "CR read of table {t} key {k} at snapshot {seen} was verified before \
                             the commit at SCN {scn} it should have seen arrived (more than {} \
                             reads waited)",
                            self.pending.limit()
                        ));
                    }
                    self.rows.committed((t, k), scn, v);
                }
                self.committed(xid, scn, writes);
            }
            Observation::Read {
                xid,
                snapshot,
                table,
                key,
                val,
            } => {
                self.report.reads_checked += 1;
                let own = if xid.is_none() {
                    None
                } else {
                    self.open
                        .get(&xid)
                        .and_then(|w| w.iter().find(|(t, k, _)| *t == table && *k == key))
                        .map(|e| e.2)
                };
                if let Some(v) = own {
                    if val != Some(v) {
                        self.violation(format!(
                            "CR read by {xid} of table {table} key {key} returned {val:?}, its own change was {v}"
                        ));
                    }
                    return;
                }
                let read = Read {
                    snapshot,
                    seq: 0,
                    table,
                    key,
                    val,
                    xid,
                };
                if self.settled().is_some_and(|s| snapshot <= s) {
                    self.verify(&read);
                } else if let Some(r) = self.pending.push(read) {
                    // Too many wait: the one with the oldest snapshot is
                    // verified now, and a commit it should have seen that
                    // arrives later is reported then.
                    let e = self.early.entry((r.table, r.key)).or_insert(Scn::ZERO);
                    *e = (*e).max(r.snapshot);
                    self.verify(&r);
                }
            }
        }
    }

    /// A consistent read returned the newest version committed at or before
    /// its snapshot (a row that was never written: its initial 0, if it
    /// exists).
    fn verify(&mut self, r: &Read) {
        let exists = self
            .layout
            .tables
            .get(r.table)
            .is_some_and(|t| r.key >= 1 && r.key <= t.initial_rows);
        let expected = self
            .rows
            .get(&(r.table, r.key))
            .and_then(|row| row.seen_at(r.snapshot))
            .or(exists.then_some(0));
        if r.val != expected && !self.doubtful_read(r, exists) {
            self.violation(format!(
                "CR read by {} at snapshot {} of table {} key {} returned {:?}, expected {:?}",
                r.xid, r.snapshot, r.table, r.key, r.val, expected
            ));
        }
    }

    /// Coherence now: at most one instance holds a block in X, and nobody in
    /// S beside it, over every buffer. Counts as one event checked.
    pub fn coherence(&mut self, instances: &[Instance]) {
        self.report.events_checked += 1;
        let mut counted = Vec::new();
        self.counted(instances, &mut counted);
        let found = self.coherence.full(instances, &counted);
        self.report_conflicts(found);
    }

    /// Whose buffers count, by position: the newest incarnation's members.
    /// An instance it evicted (frozen, or cut off and not yet stopped) holds
    /// nothing any more in its eyes and is fenced from the store; one down
    /// (killed, stopped) holds nothing at all.
    fn counted(&self, instances: &[Instance], out: &mut Vec<bool>) {
        let cluster = instances
            .iter()
            .filter(|x| x.halted().is_none())
            .map(Instance::membership)
            .max_by_key(|&(incarnation, _)| incarnation)
            .map(|(_, members)| members);
        out.extend(instances.iter().map(|inst| {
            !(self.is_down(inst.id)
                || inst.halted().is_some()
                || cluster.is_some_and(|m| !m.contains(inst.id)))
        }));
    }

    fn report_conflicts(&mut self, found: Vec<coherence::Conflict>) {
        for c in found {
            self.violation(format!(
                "coherence: {} held in X by {} and in S by {} instances at event {}",
                c.blk, c.x, c.s, self.report.events_checked
            ));
        }
    }

    /// Checks over the whole run of instances at hand (the simulator's),
    /// after taking what their histories still hold: the newest image of a
    /// block is a current buffer of one of them, else `stored[blk]`, the
    /// block store's image.
    pub fn finish(mut self, instances: &mut [Instance], stored: &[Block]) -> CheckReport {
        for inst in instances.iter_mut() {
            let mut buf = Vec::new();
            let h = inst.drain_history(&mut buf, usize::MAX);
            self.take_drained(inst.id, &buf, h);
        }
        let instances: &[Instance] = instances;
        let up: Vec<&Instance> = instances
            .iter()
            .filter(|i| !self.is_down(i.id) && i.halted().is_none())
            .collect();
        self.finish_with(|blk| {
            let current = up.iter().find_map(|i| {
                i.buffers_of(blk)
                    .find(|b| matches!(b.state(), BufState::Xcur | BufState::Scur))
                    .map(|b| (b.image.clone(), i.id.to_string()))
            });
            current.or_else(|| {
                stored
                    .get(blk.idx())
                    .map(|b| (b.clone(), "the store".to_string()))
            })
        })
    }

    /// Checks over the whole run, wherever it ran, once every history was
    /// taken: the reads still waiting, then `newest(blk)`, the newest image
    /// of a block (a current buffer somewhere, else the store's) and where
    /// it is.
    pub fn finish_with(
        mut self,
        newest: impl Fn(BlockAddr) -> Option<(Block, String)>,
    ) -> CheckReport {
        // Nothing more comes: every read can be verified.
        for r in self.pending.take_all() {
            self.verify(&r);
        }
        let rows = self.rows.sorted();
        // Keys inserted during the run (beyond a table's initial rows), and
        // whether a committed transaction wrote them.
        let mut written: index_check::Written = Vec::new();
        for &(&(t, k), row) in &rows {
            let initial = self.layout.tables.get(t).map_or(0, |x| x.initial_rows);
            if k > initial {
                written.push((t, k, row.committed()));
            }
        }
        let mut problems = Vec::new();
        self.report.index_entries_checked =
            index_check::check_indexes(&self.layout, &written, &newest, &mut problems);
        drop(written);
        // The newest image of each written row holds its last written value:
        // that of the committed writer with the highest commit SCN (row locks
        // order writers, and a later writer commits later). The live runtime's
        // history comes instance by instance, not in one global order, so
        // arrival order only decides for a writer that never committed.
        let mut lost = Vec::new();
        // The writers of rows found lost whose commit was acknowledged.
        let mut lost_by: Vec<Xid> = Vec::new();
        for &(&(table, key), row) in &rows {
            self.report.rows_checked += 1;
            let uncommitted = self.open.get(&row.last).and_then(|w| {
                w.iter()
                    .find(|(t, k, _)| (*t, *k) == (table, key))
                    .map(|e| e.2)
            });
            let initial = self
                .layout
                .tables
                .get(table)
                .is_some_and(|t| key >= 1 && key <= t.initial_rows)
                .then_some(0);
            // A row only rolled-back transactions wrote holds its initial value.
            let rolled_back = self.crash.rolled_back_row(&(table, key));
            let Some(want) = uncommitted
                .or(row.newest())
                .or(initial.filter(|_| rolled_back))
            else {
                continue;
            };
            let Some(rowid) = self.layout.initial_rowid(table, key) else {
                continue;
            };
            let image = newest(rowid.blk);
            let got = image
                .as_ref()
                .and_then(|(b, _)| b.row(rowid.slot))
                .map(|r| r.val);
            if got == Some(want)
                || (uncommitted.is_none()
                    && self.crash.doubtful_value(&(table, key), row, got, initial))
            {
                continue;
            }
            let acked_writer = uncommitted.is_none() && row.newest().is_some();
            if acked_writer && !lost_by.contains(&row.last) {
                lost_by.push(row.last);
            }
            // Only the first ones are reported.
            if lost.len() < VIOLATIONS_MAX {
                let at = image.map_or("nowhere".to_string(), |(_, at)| at);
                lost.push(match self.crash.rolled_back_value(&(table, key), got) {
                    Some(xid) => format!(
                        "rolled-back change survives: table {table} key {key} holds {got:?} in \
                         {at}, written by {xid} of an instance that died, expected {want}"
                    ),
                    None => format!(
                        "lost write: table {table} key {key} holds {got:?} in {at}, last written {want} \
                         (by {})",
                        row.last
                    ),
                });
            }
        }
        drop(rows);
        self.report.commits_lost = lost_by.len() as u64;
        for p in problems.into_iter().chain(lost) {
            self.violation(p);
        }
        self.report
    }
}

/// Crashes: what the checker does when an instance dies or comes back;
/// `crash::Crashes` keeps what the deaths leave to check.
impl ConsistencyChecker {
    /// `inst` crashed (killed) or was evicted: from now on its buffers and
    /// its horizon do not count, its open transactions are expected rolled
    /// back, and its commits not acknowledged yet are in doubt.
    pub fn instance_down(&mut self, inst: InstId) {
        let Some(in_doubt) = self.crash.down(inst) else {
            return;
        };
        let mut open: Vec<Xid> = self
            .open
            .keys()
            .filter(|x| x.inst() == inst)
            .copied()
            .collect();
        open.sort_unstable();
        for xid in open {
            let Some(writes) = self.open.remove(&xid) else {
                continue;
            };
            self.report.transactions_rolled_back += 1;
            self.crash.rolled_back(xid, writes);
        }
        self.report.commits_in_doubt += in_doubt;
        // Reads waiting only for it can be verified now.
        self.settle();
    }

    /// Every instance the newest incarnation of the cluster (as the
    /// instances that are up see it) leaves out is down: evicted, even if
    /// it is frozen and does not know it yet.
    pub(crate) fn note_evictions(&mut self, instances: &[Instance]) {
        let views: Vec<MemberView> = instances
            .iter()
            .map(|i| {
                let (incarnation, members) = i.membership();
                MemberView {
                    inst: i.id,
                    halted: i.halted().is_some(),
                    incarnation,
                    members,
                    unrecovered: i.unrecovered(),
                }
            })
            .collect();
        self.note_membership(&views);
    }

    /// [`ConsistencyChecker::note_evictions`] from what each instance says
    /// of the cluster (the live runner reads it from their status; an
    /// instance that cannot answer, killed or frozen, is left out). An
    /// instance the newest incarnation leaves out is down whether or not it
    /// answered: one frozen (SIGSTOP) while the others evicted it is down
    /// from then on, as on the simulator, so that what it had committed
    /// without acknowledging is in doubt and what it does once it wakes,
    /// before it finds itself fenced, counts for nothing (found by `chaos
    /// --live`, seed 2022: such a frozen instance was never taken as down,
    /// and its commits whose redo the fence refused counted as lost).
    pub fn note_membership(&mut self, views: &[MemberView]) {
        for change in self.crash.membership(views) {
            match change {
                LifeChange::Down(inst) => self.instance_down(inst),
                LifeChange::Up(inst) => self.instance_up(inst),
            }
        }
    }

    /// `inst` started again (a new incarnation, empty cache): its buffers
    /// and horizon count again, the horizon from its next drain.
    pub fn instance_up(&mut self, inst: InstId) {
        self.crash.up(inst);
        if let Some(m) = self.marks.get_mut(inst.idx()) {
            *m = Mark::default();
        }
    }

    /// Whether `inst` is down (killed or evicted, not restarted).
    pub fn is_down(&self, inst: InstId) -> bool {
        self.crash.is_down(inst)
    }

    /// The marks of the instances that are not down.
    fn live_marks(&self) -> impl Iterator<Item = &Mark> {
        self.marks
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.crash.is_down_at(*i))
            .map(|(_, m)| m)
    }

    /// `xid` committed at `scn` with `writes`: in doubt until acknowledged.
    fn committed(&mut self, xid: Xid, scn: Scn, writes: crash::Writes) {
        self.crash.committed(xid, scn, writes);
    }

    /// `xid`'s commit was acknowledged to its session.
    fn acknowledged(&mut self, xid: Xid) {
        self.report.commits_acknowledged += 1;
        self.crash.acknowledged(xid);
    }

    /// Whether a read that did not return the expected value returned one
    /// a commit in doubt explains (the version before a lost one).
    fn doubtful_read(&self, r: &Read, exists: bool) -> bool {
        let key = (r.table, r.key);
        let (Some(d), Some(row)) = (self.crash.doubt(&key), self.rows.get(&key)) else {
            return false;
        };
        row.seen_at_doubtful(r.snapshot, d, exists.then_some(0))
            .contains(&r.val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::config::{Catalog, TableDef};

    fn layout(instances: u8) -> Arc<Layout> {
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
        Arc::new(Layout::new(&catalog, instances, 1))
    }

    fn write(inst: u8, seq: u64, val: i64) -> Observation {
        Observation::Write {
            xid: Xid::new(InstId(inst), seq),
            table: 0,
            key: 5,
            val,
        }
    }

    fn commit(inst: u8, seq: u64, scn: Scn) -> Observation {
        Observation::Commit {
            xid: Xid::new(InstId(inst), seq),
            scn,
        }
    }

    fn read(snapshot: Scn, val: i64) -> Observation {
        Observation::Read {
            xid: Xid::NONE,
            snapshot,
            table: 0,
            key: 5,
            val: Some(val),
        }
    }

    fn horizon(scn: Scn) -> Option<Horizon> {
        Some(Horizon { scn, snapshot: scn })
    }

    fn finish(c: ConsistencyChecker) -> CheckReport {
        let stored = c.layout.initial_blocks();
        c.finish_with(|blk| {
            stored
                .get(blk.idx())
                .map(|b| (b.clone(), "the store".to_string()))
        })
    }

    /// A read waits for a commit from an instance whose SCN lags behind its
    /// snapshot: judged as at the end of the run, against that commit too.
    #[test]
    fn a_read_waits_for_the_commits_a_lagging_instance_may_still_send() {
        for (returned, violations) in [(2, 0), (1, 1)] {
            let mut c = ConsistencyChecker::new(layout(2));
            c.take_drained(
                InstId(0),
                &[write(0, 1, 1), commit(0, 1, Scn(10))],
                horizon(Scn(12)),
            );
            c.take_drained(InstId(1), &[read(Scn(25), returned)], horizon(Scn(30)));
            assert_eq!(c.kept().0, 1, "inst1's read waits: inst0 is at 12");
            // inst0 commits at 20 <= 25: the read must see it.
            c.take_drained(
                InstId(0),
                &[write(0, 2, 2), commit(0, 2, Scn(20))],
                horizon(Scn(31)),
            );
            assert_eq!(c.kept().0, 0, "verified once inst0 passed 25");
            c.take_drained(
                InstId(0),
                &[write(0, 3, 0), commit(0, 3, Scn(40))],
                horizon(Scn(41)),
            );
            let r = finish(c);
            assert_eq!(r.violations.len(), violations, "{:?}", r.violations);
            if violations > 0 {
                assert!(
                    r.violations[0].contains("returned Some(1), expected Some(2)"),
                    "{:?}",
                    r.violations
                );
            }
        }
    }

    /// A long run of one hot row: what the checker keeps stays bounded (a
    /// read is verified as soon as both instances passed its snapshot, old
    /// versions are forgotten), and a wrong read deep into it is still
    /// caught.
    #[test]
    fn a_long_run_keeps_little_and_still_catches_a_wrong_read() {
        let mut c = ConsistencyChecker::new(layout(2));
        let mut most = (0, 0);
        let n: u64 = 300_000;
        for i in 1..=n {
            let scn = 10 * i;
            let val = (i % 1000) as i64;
            c.take_drained(
                InstId(0),
                &[write(0, i, val), commit(0, i, Scn(scn))],
                horizon(Scn(scn + 1)),
            );
            let seen = if i == n / 2 { val + 1 } else { val };
            c.take_drained(
                InstId(1),
                &[read(Scn(scn + 5), seen)],
                horizon(Scn(scn + 6)),
            );
            let k = c.kept();
            most = (most.0.max(k.0), most.1.max(k.1));
        }
        c.take_drained(
            InstId(0),
            &[write(0, n + 1, 0), commit(0, n + 1, Scn(10 * n + 10))],
            horizon(Scn(10 * n + 11)),
        );
        assert!(most.0 <= 1, "reads waiting: {}", most.0);
        assert!(most.1 <= 1 << 17, "versions kept: {}", most.1);
        let r = finish(c);
        assert_eq!(r.reads_checked, n);
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
        assert!(
            r.violations[0].contains(&format!("at snapshot {}", 10 * (n / 2) + 5)),
            "{:?}",
            r.violations
        );
    }

    /// Past the limit on waiting reads the oldest is verified early; a
    /// commit it should have seen arriving afterwards is reported.
    #[test]
    fn past_the_pending_limit_reads_are_verified_early_and_a_late_commit_is_caught() {
        let mut c = ConsistencyChecker::with_pending_limit(layout(2), 2);
        c.take(&[write(0, 1, 1), commit(0, 1, Scn(10))]);
        // Nobody drained: the reads wait, the third pushes the oldest out.
        c.take(&[read(Scn(15), 1), read(Scn(16), 1), read(Scn(17), 1)]);
        assert_eq!(c.kept().0, 2);
        // Fine so far; then a commit at 14 <= 15 arrives.
        c.take(&[write(0, 2, 2), commit(0, 2, Scn(14))]);
        c.take(&[write(0, 3, 0), commit(0, 3, Scn(40))]);
        let r = finish(c);
        assert_eq!(r.reads_checked, 3);
        let late: Vec<&String> = r
            .violations
            .iter()
            .filter(|v| v.contains("was verified before the commit at SCN 14"))
            .collect();
        assert_eq!(late.len(), 1, "{:?}", r.violations);
        assert!(late[0].contains("more than 2 reads waited"), "{late:?}");
        // The two that waited are judged against the late commit, as usual.
        assert_eq!(
            r.violations
                .iter()
                .filter(|v| v.contains("expected Some(2)"))
                .count(),
            2,
            "{:?}",
            r.violations
        );
    }
}
