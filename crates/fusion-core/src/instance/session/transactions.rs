//! The transaction table: what this instance knows about transactions.
//!
//! Its own transactions get an [`Xid`] here and, when they commit, their
//! commit SCN; whoever waits for one of them to end (a local session on a row
//! lock, another instance's `TxWait`) waits here. Commits of other instances'
//! transactions are learned from their answers (`Msg::TxStatus`). Readers ask
//! [`Transactions::state`] when they roll a block back or clean it out.

use rustc_hash::FxHashMap;

use crate::block::TxState;
use crate::types::{InstId, Scn, Xid};

/// Transaction numbers each life of an instance has to itself.
pub const LIFE_XIDS: u64 = 1 << 40;

/// Who waits for an active transaction of this instance to end.
#[derive(Clone, Copy, Debug)]
pub(in crate::instance) enum TxWaiter {
    /// A local session (`enq: TX - row lock contention`).
    Session(u32),
    /// Another instance's session, answered with `Msg::TxStatus` carrying this token.
    Remote(InstId, u64),
    /// The master of the transaction's TX enqueue asked for it (a blocking
    /// AST): given back when the transaction ends.
    Ges,
}

/// The transaction table of one instance.
#[derive(Clone, Debug)]
pub(in crate::instance) struct Transactions {
    me: InstId,
    /// Commit SCN of each of this instance's transactions, by sequence
    /// from `base`; 0 while active. Grows by one slot per transaction, like
    /// Oracle's undo segment headers' transaction tables would without reuse.
    commit_scns: Vec<Scn>,
    /// The first sequence of this life of the instance (an earlier life's
    /// transactions were recovered by the others; their numbers are not reused).
    base: u64,
    /// The sequence the next transaction gets (0 is `Xid::NONE`'s).
    next_seq: u64,
    /// Who waits for an active transaction to end, by its sequence.
    ///
    /// `pub(super)` only because lms.rs still pushes to it directly; it
    /// becomes private when lms.rs calls [`Transactions::wait_for_end`].
    waiters: FxHashMap<u64, Vec<TxWaiter>>,
    /// Commit SCNs of other instances' transactions learned so far.
    remote_commits: FxHashMap<Xid, Scn>,
    /// Each member's first transaction number of its life, from its
    /// reconfiguration reports: where a recovery of its thread ends.
    member_bases: FxHashMap<InstId, u64>,
    /// Dead instances' transactions, from instance recovery's first pass:
    /// nobody can be asked about them any more.
    dead: FxHashMap<InstId, DeadTxns>,
    /// What recovery reported of each dead thread, as it came: passed on to
    /// an instance that joins later (a restarted one learns its own past).
    dead_threads: Vec<crate::msg::DeadThread>,
    /// The redo address of each active transaction's first change, both
    /// ways: the store must keep the redo from the oldest on, or a crash
    /// would leave that transaction's early changes with no record of who
    /// made them (the model keeps undo only in the blocks).
    first_rba: std::collections::BTreeSet<(u64, Xid)>,
    first_rba_of: FxHashMap<Xid, u64>,
}

/// What recovery learned of a dead instance's transactions.
#[derive(Clone, Debug, Default)]
struct DeadTxns {
    /// Uncommitted at the crash: rolled back by recovery (never visible).
    uncommitted: rustc_hash::FxHashSet<Xid>,
    /// Any other transaction of that instance committed at or before this SCN.
    floor_scn: Scn,
    /// The record covers the transactions numbered below this (the lives
    /// that died); a restarted life's are not the dead one's.
    xids_below: u64,
}

impl Transactions {
    pub(in crate::instance) fn new(me: InstId, base: u64) -> Transactions {
        Transactions {
            me,
            commit_scns: Vec::new(),
            base,
            next_seq: base + 1,
            waiters: FxHashMap::default(),
            remote_commits: FxHashMap::default(),
            member_bases: FxHashMap::default(),
            dead: FxHashMap::default(),
            dead_threads: Vec::new(),
            first_rba: std::collections::BTreeSet::new(),
            first_rba_of: FxHashMap::default(),
        }
    }

    /// Transaction `xid` of this instance wrote redo from `rba` on.
    pub(in crate::instance) fn changed_at(&mut self, xid: Xid, rba: u64) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.first_rba_of.entry(xid) {
            e.insert(rba);
            self.first_rba.insert((rba, xid));
        }
    }

    /// The first redo address of the oldest active transaction that changed something.
    pub(in crate::instance) fn oldest_active_rba(&self) -> Option<u64> {
        self.first_rba.first().map(|&(rba, _)| rba)
    }

    /// A new transaction of this instance, active until [`Transactions::commit`].
    pub(in crate::instance) fn begin(&mut self) -> Xid {
        let xid = Xid::new(self.me, self.next_seq);
        self.next_seq += 1;
        let seq = self.slot(xid);
        if self.commit_scns.len() <= seq {
            self.commit_scns.resize(seq + 1, Scn::ZERO);
        }
        xid
    }

    /// Where one of this life's transactions is in `commit_scns` (its
    /// sequence is above `base`, at most `LIFE_XIDS` above it: it fits).
    fn slot(&self, xid: Xid) -> usize {
        (xid.seq() - self.base) as usize
    }

    /// What this instance knows about a transaction right now.
    pub(in crate::instance) fn state(&self, xid: Xid) -> TxState {
        if xid.inst() == self.me && xid.seq() > self.base {
            match self.commit_scns.get(self.slot(xid)) {
                Some(&s) if s > Scn::ZERO => TxState::Committed(s),
                _ => TxState::Active,
            }
        } else {
            match self.remote_commits.get(&xid) {
                Some(&s) => TxState::Committed(s),
                None => match self.dead.get(&xid.inst()) {
                    Some(d) if xid.seq() >= d.xids_below => TxState::Unknown,
                    Some(d) if d.uncommitted.contains(&xid) => TxState::Active,
                    Some(d) => TxState::Committed(d.floor_scn),
                    None => TxState::Unknown,
                },
            }
        }
    }

    /// Recovery read a dead instance's thread: its transactions are known here now.
    pub(in crate::instance) fn learn_dead(&mut self, thread: &crate::msg::DeadThread) {
        for &(xid, scn) in &thread.committed {
            self.remote_commits.insert(xid, scn);
        }
        let d = self.dead.entry(thread.inst).or_default();
        d.uncommitted.extend(thread.uncommitted.iter().copied());
        d.floor_scn = d.floor_scn.max(thread.floor_scn);
        d.xids_below = d.xids_below.max(thread.xids_below);
        if !self.dead_threads.contains(thread) {
            self.dead_threads.push(thread.clone());
        }
    }

    /// `inst`'s life numbers its transactions from `base` on (its report).
    pub(in crate::instance) fn member_base(&mut self, inst: InstId, base: u64) {
        self.member_bases.insert(inst, base);
    }

    /// The first transaction number after every life of `inst` up to its
    /// latest one known here (the one that died, when it is dead).
    pub(in crate::instance) fn xids_below(&self, inst: InstId) -> u64 {
        let base = if inst == self.me {
            self.base
        } else {
            self.member_bases.get(&inst).copied().unwrap_or(0)
        };
        base.saturating_add(LIFE_XIDS)
    }

    /// This life's first transaction number.
    pub(in crate::instance) fn base(&self) -> u64 {
        self.base
    }

    /// Every dead thread recovery reported, to pass on to a joining instance.
    pub(in crate::instance) fn dead_threads(&self) -> &[crate::msg::DeadThread] {
        &self.dead_threads
    }

    /// Whether recovery told this instance of any dead instance's
    /// transactions (none in a run without failures).
    pub(in crate::instance) fn has_dead(&self) -> bool {
        !self.dead.is_empty()
    }

    /// A dead instance's transaction that recovery rolls back.
    pub(in crate::instance) fn is_dead_uncommitted(&self, xid: Xid) -> bool {
        self.dead
            .get(&xid.inst())
            .is_some_and(|d| d.uncommitted.contains(&xid))
    }

    /// Whether recovery told this instance about `inst`'s transactions.
    pub(in crate::instance) fn knows_dead(&self, inst: InstId) -> bool {
        self.dead.contains_key(&inst)
    }

    /// The commit SCN of a transaction of this instance, once it committed.
    pub(in crate::instance) fn commit_scn(&self, xid: Xid) -> Option<Scn> {
        (xid.inst() == self.me && xid.seq() > self.base)
            .then(|| self.commit_scns.get(self.slot(xid)).copied())
            .flatten()
            .filter(|&s| s > Scn::ZERO)
    }

    /// A transaction this instance began commits at `scn`. Its waiters are
    /// still queued: [`Transactions::take_waiters`] hands them out.
    pub(in crate::instance) fn commit(&mut self, xid: Xid, scn: Scn) {
        // Only `begin` makes transactions of ours, and each commits once.
        assert!(
            xid.inst() == self.me && scn > Scn::ZERO,
            "{}: commit of {xid} at {scn}",
            self.me
        );
        let i = self.slot(xid);
        let slot = &mut self.commit_scns[i];
        assert!(*slot == Scn::ZERO, "{}: {xid} committed twice", self.me);
        *slot = scn;
        if let Some(rba) = self.first_rba_of.remove(&xid) {
            self.first_rba.remove(&(rba, xid));
        }
    }

    /// `waiter` waits until `xid` ends; it is handed back by
    /// [`Transactions::take_waiters`] when it does. (Called for a peer's
    /// `TxWait` too, so a foreign `xid` is queued as it comes, not refused.)
    pub(in crate::instance) fn wait_for_end(&mut self, xid: Xid, waiter: TxWaiter) {
        self.waiters.entry(xid.seq()).or_default().push(waiter);
    }

    /// Whether `xid` is a transaction this life of the instance began.
    pub(in crate::instance) fn began(&self, xid: Xid) -> bool {
        xid.inst() == self.me && xid.seq() > self.base && xid.seq() < self.next_seq
    }

    /// Local session `sid` no longer waits for `xid` (its statement failed).
    pub(in crate::instance) fn cancel_wait(&mut self, xid: Xid, sid: u32) {
        if let Some(w) = self.waiters.get_mut(&xid.seq()) {
            w.retain(|x| !matches!(x, TxWaiter::Session(s) if *s == sid));
        }
    }

    /// Who waited for `xid` to end, in the order they began to wait.
    pub(in crate::instance) fn take_waiters(&mut self, xid: Xid) -> Vec<TxWaiter> {
        self.waiters.remove(&xid.seq()).unwrap_or_default()
    }

    /// Another instance told us one of its transactions committed.
    pub(in crate::instance) fn learn_commit(&mut self, xid: Xid, scn: Scn) {
        self.remote_commits.insert(xid, scn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_transactions_are_active_until_they_commit() {
        let mut t = Transactions::new(InstId(0), 0);
        let x = t.begin();
        assert_eq!(t.state(x), TxState::Active);
        assert_eq!(t.commit_scn(x), None);
        t.wait_for_end(x, TxWaiter::Session(3));
        t.wait_for_end(x, TxWaiter::Remote(InstId(1), 7));
        t.commit(x, Scn(42));
        assert_eq!(t.state(x), TxState::Committed(Scn(42)));
        assert_eq!(t.commit_scn(x), Some(Scn(42)));
        let w = t.take_waiters(x);
        assert!(matches!(
            w.as_slice(),
            [TxWaiter::Session(3), TxWaiter::Remote(InstId(1), 7)]
        ));
        assert!(t.take_waiters(x).is_empty());
    }

    /// Found by chaos: a restarted instance's transactions were taken for
    /// its dead life's, "committed before the redo read", so a consistent
    /// read saw a change committed after its snapshot.
    #[test]
    fn a_dead_thread_answers_for_its_own_lives_only() {
        let mut t = Transactions::new(InstId(0), 0);
        let other = InstId(1);
        // Instance 1 died in its first life: recovery covers that life.
        let dead = crate::msg::DeadThread {
            inst: other,
            committed: vec![(Xid::new(other, 7), Scn(70))],
            uncommitted: vec![Xid::new(other, 8)],
            floor_scn: Scn(50),
            xids_below: t.xids_below(other),
        };
        t.learn_dead(&dead);
        assert_eq!(t.state(Xid::new(other, 3)), TxState::Committed(Scn(50)));
        assert_eq!(t.state(Xid::new(other, 7)), TxState::Committed(Scn(70)));
        assert_eq!(t.state(Xid::new(other, 8)), TxState::Active);
        // It restarted and reported its second life: that life's
        // transactions are its own to answer for.
        let second = LIFE_XIDS;
        t.member_base(other, second);
        t.learn_dead(&dead);
        assert_eq!(t.state(Xid::new(other, second + 2)), TxState::Unknown);
        assert_eq!(t.state(Xid::new(other, 3)), TxState::Committed(Scn(50)));
        // When the second life dies too, its recovery covers it.
        t.learn_dead(&crate::msg::DeadThread {
            inst: other,
            committed: Vec::new(),
            uncommitted: Vec::new(),
            floor_scn: Scn(90),
            xids_below: t.xids_below(other),
        });
        assert_eq!(
            t.state(Xid::new(other, second + 2)),
            TxState::Committed(Scn(90))
        );
    }

    #[test]
    fn other_instances_transactions_are_unknown_until_learned() {
        let mut t = Transactions::new(InstId(0), 0);
        let theirs = Xid::new(InstId(1), 5);
        assert_eq!(t.state(theirs), TxState::Unknown);
        assert_eq!(t.commit_scn(theirs), None);
        t.learn_commit(theirs, Scn(9));
        assert_eq!(t.state(theirs), TxState::Committed(Scn(9)));
    }

    #[test]
    #[should_panic(expected = "committed twice")]
    fn a_transaction_commits_once() {
        let mut t = Transactions::new(InstId(0), 0);
        let x = t.begin();
        t.commit(x, Scn(1));
        t.commit(x, Scn(2));
    }
}
