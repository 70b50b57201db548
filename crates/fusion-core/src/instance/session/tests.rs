//! The foregrounds on what they decide for a given input, on a kernel, a
//! membership and an observer of their own (no cluster): the answers to a
//! session's questions about other instances' transactions, and the stray
//! answers a peer may send.

use crate::types::Scn;
use std::sync::Arc;

use super::super::cache::{BufId, BufState, Cache};
use super::super::events::Proc;
use super::super::execution::Purpose;
use super::super::execution::{ExecPoint, SeqStep};
use super::super::kernel::ERRORS_MAX;
use super::super::kernel::Kernel;
use super::super::membership::{Delivery, Membership};
use super::super::observe::Observer;
use super::super::redo::Redo;
use super::insert::{Leaf, Spare};
use super::sequence::SeqNext;
use super::{Acquired, Foregrounds, RowLockWait, Session, SessionState, Sessions};
use crate::block::Body;
use crate::config::{Catalog, SequenceDef};
use crate::layout::{btree, table};
use crate::msg::{EnqKind, LockMode, Lvb, ResName, TxReport};
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Rowid, Xid};

/// Instance 1 of 2 with one session (0) and no workload. `joining`: a
/// restarted instance not admitted yet, to which instance 0 is no member.
struct Rig {
    k: Kernel,
    m: Membership,
    fg: Foregrounds,
    obs: Observer,
}

impl Rig {
    fn new(joining: bool) -> Rig {
        let catalog = Catalog {
            tables: vec![table("t", 100, 10)],
            ..Catalog::default()
        };
        let mut k = Kernel::for_tests(&catalog);
        let m = Membership::new(
            InstId(1),
            2,
            k.params(),
            u32::from(joining),
            Delivery::Direct,
        );
        let mut fg = Foregrounds::new(InstId(1), 2, k.layout(), &catalog, Arc::new(Vec::new()), 0);
        let proc = k.add_proc(Proc::Session(0), "oracle0".into());
        fg.sessions.add(Session::new(proc, 0, 0));
        Rig {
            k,
            m,
            fg,
            obs: Observer::new(false),
        }
    }

    fn state(&self) -> SessionState {
        self.fg.sessions.session(0).state()
    }

    fn answer(&mut self, xid: Xid, token: u64, report: TxReport) {
        self.fg
            .on_tx_status(&mut self.k, &mut self.obs, xid, token, report);
    }
}

/// A transaction of instance 0, the other one (its number in the low bits).
const THEIRS: Xid = Xid(7);

#[test]
fn a_row_lock_of_a_member_waits_on_its_tx_enqueue_and_the_grant_ends_the_wait() {
    let mut r = Rig::new(false);
    let wait = r.fg.wait_for_tx(&mut r.k, r.m.net(), 0, THEIRS);
    let res = crate::msg::ResName::tx(THEIRS);
    assert_eq!(
        wait,
        RowLockWait::Ges(res),
        "the GES is asked, not recovery"
    );
    assert_eq!(r.state(), SessionState::WaitTx);
    // Nothing is sent by the foregrounds: the dispatcher asks the GES.
    assert!(
        r.k.take_actions().is_empty(),
        "no TxWait to the owner any more"
    );
    assert!(r.fg.row_locks().wait_of(0).is_some());
    let lvb = crate::msg::Lvb::tx_end(crate::msg::TxEnd::Committed(Scn(5)));
    r.fg.tx_enqueue_granted(&mut r.k, &mut r.obs, 0, res, lvb);
    assert_eq!(r.state(), SessionState::Ready);
    assert!(r.fg.row_locks().wait_of(0).is_none());
    assert_eq!(
        r.fg.txns().state(THEIRS),
        crate::block::TxState::Committed(Scn(5)),
        "the grant's value block says how it ended"
    );
    assert!(r.k.errors().is_empty(), "{:?}", r.k.errors());
    assert_eq!(r.k.stats().event(Wait::EnqTxRowLockContention).waits_fg, 1);
}

#[test]
fn a_lookup_of_an_instance_no_longer_a_member_is_asked_of_recovery_once_the_session_waits() {
    let mut r = Rig::new(true);
    let (acquired, dead) = r.fg.look_up(&mut r.k, r.m.net(), 0, vec![THEIRS]);
    assert!(matches!(acquired, Acquired::Waiting));
    // Nothing goes to a non-member; the question comes back for recovery,
    // and the session already waits for it: an answer given at once (what
    // recovery knows) finds the question pending.
    assert!(r.k.take_actions().is_empty());
    let [token] = dead.as_slice() else {
        panic!("asked recovery {dead:?}");
    };
    assert_eq!(r.state(), SessionState::WaitTx);
    r.answer(THEIRS, *token, TxReport::Committed(Scn(3)));
    assert_eq!(r.state(), SessionState::Ready);
    assert!(r.k.errors().is_empty(), "{:?}", r.k.errors());
}

#[test]
fn an_answer_for_a_session_that_asked_nothing_is_a_protocol_error() {
    let mut r = Rig::new(false);
    // A question on the books whose session no longer counts it pending.
    let token = r.fg.sessions.start_lookup(0, Scn(0), THEIRS, false);
    r.answer(THEIRS, token, TxReport::Committed(Scn(9)));
    assert_eq!(r.k.errors().len(), 1, "{:?}", r.k.errors());
    assert!(r.k.errors()[0].contains("asked nothing"));
    assert_eq!(r.state(), SessionState::Think, "the session is untouched");
    assert!(
        !matches!(r.fg.txns.state(THEIRS), crate::block::TxState::Committed(_)),
        "nothing is learnt from a stray answer"
    );
}

#[test]
fn ten_thousand_stray_answers_keep_the_error_log_at_its_bound() {
    let mut r = Rig::new(false);
    for k in 0..10_000u64 {
        if k % 2 == 0 {
            // A token never given out: ignored (a late answer to a question
            // a reconfiguration dropped looks the same).
            r.answer(THEIRS, u64::MAX - k, TxReport::Active);
        } else {
            let token = r.fg.sessions.start_lookup(0, Scn(0), THEIRS, false);
            r.answer(THEIRS, token, TxReport::Active);
        }
    }
    let errors = r.k.errors();
    assert_eq!(errors.len(), ERRORS_MAX);
    assert!(errors[ERRORS_MAX - 1].contains("more problems followed"));
    assert_eq!(r.state(), SessionState::Think);
}

#[test]
fn a_tx_enqueue_asked_for_a_transaction_never_begun_is_given_back_at_once() {
    let mut r = Rig::new(false);
    let me = r.k.id();
    let begun = r.fg.txns_mut().begin();
    // Running: given back when it ends, not now.
    assert_eq!(r.fg.tx_owner_asked(begun), None);
    // A peer names one of ours that never began: nothing to wait for.
    let never = Xid::new(me, begun.seq() + 1000);
    assert_eq!(
        r.fg.tx_owner_asked(never),
        Some(crate::msg::TxEnd::RolledBack)
    );
}

// ----- the session table (Sessions keeps the books) ---------------------------------------

fn session_table(n: u32) -> Sessions {
    let mut s = Sessions::default();
    for i in 0..n {
        s.add(Session::new(i, 0, i));
    }
    s
}

#[test]
fn the_ready_queue_keeps_order_and_skips_sessions_no_longer_ready() {
    let mut s = session_table(3);
    s.set_ready(2, 5);
    s.set_ready(0, 6);
    s.set_ready(1, 7);
    assert_eq!(s.session(2).call_start, Some(5));
    s.begin_wait(0, Wait::LogFileSync, SessionState::WaitCommit, 8);
    assert_eq!(s.pop_ready(), Some(2));
    assert_eq!(s.pop_ready(), Some(0));
    assert!(!s.is_ready(0));
    assert_eq!(s.pop_ready(), Some(1));
    assert!(s.is_ready(1));
    assert_eq!(s.pop_ready(), None);
    assert_eq!(s.end_wait(0, 10), Some((Wait::LogFileSync, 2)));
    assert_eq!(s.end_wait(0, 11), None);
}

#[test]
fn block_waiters_are_taken_once_in_order() {
    let mut s = session_table(3);
    let blk = BlockAddr(7);
    assert!(!s.need(blk));
    s.wait_on_block(2, blk, Wait::BufferBusyWaits, 0);
    s.wait_on_block(0, blk, Wait::BufferBusyWaits, 0);
    assert!(s.need(blk));
    assert_eq!(s.session(2).st, SessionState::WaitBlock);
    assert_eq!(s.take_block_waiters(blk), Some(vec![2, 0]));
    assert_eq!(s.take_block_waiters(blk), None);
    assert!(!s.need(blk));
}

#[test]
fn a_request_answers_only_to_its_id() {
    let mut s = session_table(1);
    let blk = BlockAddr(3);
    let id = s.start_request(
        blk,
        0,
        100,
        true,
        crate::msg::ReqKind::Current { new_block: false },
    );
    assert!(s.has_request(blk) && s.need(blk));
    assert!(s.request(blk, id + 1).is_none());
    let r = s.request(blk, id).unwrap();
    assert_eq!((r.owner, r.sent_at, r.scan), (0, 100, true));
    s.end_request(blk);
    assert!(!s.has_request(blk));
    let token = s.start_lookup(0, Scn(42), Xid::NONE, false);
    assert_eq!(s.end_lookup(token), Some((0, Scn(42))));
    assert_eq!(s.end_lookup(token), None);
}

// ----- sequences: what a `nextval` step asks for ------------------------------------------

/// Foregrounds of instance 0 of 2 with one session (0) and sequence 0,
/// `cache` values a refill, `order`ed or not.
fn seq_rig(cache: u32, order: bool) -> (Kernel, Foregrounds) {
    let catalog = Catalog {
        tables: vec![table("t", 100, 10)],
        sequences: vec![SequenceDef {
            name: "s".into(),
            cache,
            order,
            start: 1,
            increment: 1,
        }],
        ..Catalog::default()
    };
    let mut k = Kernel::for_tests(&catalog);
    let mut fg = Foregrounds::new(InstId(0), 2, k.layout(), &catalog, Arc::new(Vec::new()), 0);
    let proc = k.add_proc(Proc::Session(0), "oracle0".into());
    fg.sessions.add(Session::new(proc, 0, 0));
    (k, fg)
}

/// Enqueue `kind` of sequence 0.
fn seq0(kind: EnqKind) -> ResName {
    ResName { kind, id: 0 }
}

const NO_SV: fn(ResName) -> Lvb = |_| panic!("no SV enqueue is read");

#[test]
fn a_cached_sequence_takes_sq_refills_under_it_and_hands_out_what_it_cached() {
    let (mut k, mut fg) = seq_rig(3, false);
    let sq = seq0(EnqKind::Sq);
    // Nothing cached: take SQ, and go on at `HaveSq` once it is granted.
    let next = fg.seq_step(&mut k, NO_SV, 0, 0, SeqStep::Start, None);
    assert_eq!(next, SeqNext::Get(sq, LockMode::X, Wait::EnqSqContention));
    assert_eq!(
        fg.point(0),
        ExecPoint::Seq {
            seq: 0,
            step: SeqStep::HaveSq,
            insert: None
        }
    );
    // Another session refilled 4..=6 meanwhile (handing 4 out itself):
    // release SQ, then hand 5 out.
    fg.seqs.cache(0, 4, 6);
    let next = fg.seq_step(&mut k, NO_SV, 0, 0, SeqStep::HaveSq, None);
    let number = 5;
    assert_eq!(
        next,
        SeqNext::ReleaseThenDeliver {
            res: sq,
            lvb: None,
            number
        }
    );
    fg.seq_deliver(&mut k, 0, 0, number, None);
    // The next `nextval` takes the cached 6 at once, with no enqueue.
    let next = fg.seq_step(&mut k, NO_SV, 0, 0, SeqStep::Start, Some(0));
    assert_eq!(next, SeqNext::Go);
    assert_eq!(fg.point(0), ExecPoint::InsertRow { table: 0, key: 6 });
    assert_eq!(k.stats().get(Stat::SeqValuesHandedOut), 2);
}

#[test]
fn an_ordered_sequence_hands_out_from_the_sv_value_block_or_goes_to_seq_dollar() {
    let (mut k, mut fg) = seq_rig(10, true);
    let sv = seq0(EnqKind::Sv);
    let next = fg.seq_step(&mut k, NO_SV, 0, 0, SeqStep::Start, None);
    assert_eq!(next, SeqNext::Get(sv, LockMode::X, Wait::DfsLockHandle));
    // Values 8..=10 are left in the value block: 8 is taken, the block says so.
    let next = fg.seq_step(
        &mut k,
        |_| Lvb { lo: 7, hi: 10 },
        0,
        0,
        SeqStep::HaveSv,
        None,
    );
    assert_eq!(
        next,
        SeqNext::ReleaseThenDeliver {
            res: sv,
            lvb: Some(Lvb { lo: 8, hi: 10 }),
            number: 8
        }
    );
    // None left: SEQ$ is updated under the row cache lock.
    let next = fg.seq_step(
        &mut k,
        |_| Lvb { lo: 10, hi: 10 },
        0,
        0,
        SeqStep::HaveSv,
        None,
    );
    let row_cache = seq0(EnqKind::RowCache);
    assert_eq!(
        next,
        SeqNext::Get(row_cache, LockMode::X, Wait::RowCacheLock)
    );
}

// ----- inserts and splits: what a visit decides -------------------------------------------

/// Instance 0 of 2 with one session (0), table 0 (20 rows, 10 a block)
/// and a B-tree index on it; the buffer cache and redo of its own.
struct InsertRig {
    k: Kernel,
    fg: Foregrounds,
    cache: Cache,
    redo: Redo,
    obs: Observer,
    blocks: Vec<crate::block::Block>,
}

impl InsertRig {
    fn new() -> InsertRig {
        let catalog = Catalog {
            tables: vec![table("t", 20, 10)],
            indexes: vec![btree("i", 0, 4, 4)],
            ..Catalog::default()
        };
        let mut k = Kernel::for_instance(InstId(0), &catalog);
        let mut fg = Foregrounds::new(InstId(0), 2, k.layout(), &catalog, Arc::new(Vec::new()), 0);
        let proc = k.add_proc(Proc::Session(0), "oracle0".into());
        fg.sessions.add(Session::new(proc, 0, 0));
        let lgwr = k.add_proc(Proc::Lgwr, "LGWR".into());
        let blocks = k.layout().initial_blocks();
        InsertRig {
            cache: Cache::new(64, k.layout().total_blocks),
            redo: Redo::new(lgwr),
            obs: Observer::new(false),
            blocks,
            k,
            fg,
        }
    }

    /// Hold `blk` here in X with its initial image.
    fn hold(&mut self, blk: BlockAddr) -> BufId {
        let image = self.blocks[blk.idx()].clone();
        self.cache.insert(blk, BufState::Xcur, image)
    }
}

#[test]
fn an_insert_fills_its_block_then_takes_the_next_of_its_run_and_formats_it() {
    let mut r = InsertRig::new();
    let t = r.k.layout().tables[0].clone();
    // The last initial block is full: take a new one from the segment header.
    let full = r.hold(BlockAddr(t.base + t.initial_blocks - 1));
    let header = r.hold(t.header);
    let (k, cache, redo, obs) = (&mut r.k, &mut r.cache, &mut r.redo, &mut r.obs);
    let next = r.fg.insert_into_block(k, cache, redo, obs, 0, full, 0, 21);
    assert_eq!(next, ExecPoint::InsertAlloc { table: 0, key: 21 });
    assert_eq!(r.fg.inserts.block(0), None);
    // The header hands out the first block of instance 0's run, once.
    let next = r.fg.take_new_block(k, cache, redo, header, 0, 21);
    let blk = BlockAddr(t.free_base);
    assert_eq!(
        next,
        ExecPoint::InsertNew {
            table: 0,
            key: 21,
            blk
        }
    );
    assert!(
        matches!(&*cache.get(header).image.body, Body::SegHeader { used } if used[..] == [1, 0])
    );
    // Not here: the dispatcher asks its master for it.
    assert!(!r.fg.format_new(k, cache, redo, 0, 0, 21, blk));
    // Here in X: formatted, and the row goes in.
    let new = r.hold(blk);
    let (k, cache, redo) = (&mut r.k, &mut r.cache, &mut r.redo);
    assert!(r.fg.format_new(k, cache, redo, 0, 0, 21, blk));
    assert_eq!(r.fg.point(0), ExecPoint::InsertRow { table: 0, key: 21 });
    assert_eq!(r.fg.inserts.block(0), Some(blk));
    let next =
        r.fg.insert_into_block(k, cache, redo, &mut r.obs, 0, new, 0, 21);
    let rowid = Rowid { blk, slot: 0 };
    assert_eq!(
        next,
        ExecPoint::Index {
            ix: 0,
            table: 0,
            key: 21,
            blk: k.layout().index_root(0, 21),
            purpose: Purpose::Insert(rowid),
        },
        "then into the table's index"
    );
    assert_eq!(k.stats().get(Stat::RowsInserted), 1);
    assert!(k.errors().is_empty(), "{:?}", k.errors());
}

#[test]
fn a_split_asks_for_the_next_block_of_the_index_run_and_takes_it_once_it_is_here() {
    let mut r = InsertRig::new();
    let first = BlockAddr(r.k.layout().indexes[0].free_base);
    let spare = r.fg.next_spare(&mut r.k, &r.cache, 0, 0);
    assert_eq!(spare, Spare::Ask(first));
    r.hold(first);
    let spare = r.fg.next_spare(&mut r.k, &r.cache, 0, 0);
    assert_eq!(spare, Spare::Taken);
    assert_eq!(r.fg.spares(0), vec![first]);
    let spare = r.fg.next_spare(&mut r.k, &r.cache, 0, 0);
    assert_eq!(spare, Spare::Ask(BlockAddr(first.0 + 1)), "the next one");
}

#[test]
fn a_full_leaf_starts_a_split_from_the_root() {
    let mut r = InsertRig::new();
    // Initial leaves are built full (4 entries each here).
    let root = r.k.layout().indexes[0].root;
    let leaf_of_1 = {
        let mut blk = root;
        while let Some(child) = r.blocks[blk.idx()].child_for(r.k.layout().indexes[0].entry_key(1))
        {
            blk = child;
        }
        blk
    };
    let buf = r.hold(leaf_of_1);
    let rowid = Rowid {
        blk: BlockAddr(0),
        slot: 0,
    };
    let leaf =
        r.fg.leaf_entry(&mut r.k, &mut r.cache, 0, buf, 0, 0, 1, rowid, leaf_of_1);
    let Leaf::Go(point) = leaf else {
        panic!("applied to a full leaf: {leaf:?}");
    };
    assert_eq!(
        point,
        ExecPoint::Split {
            ix: 0,
            table: 0,
            key: 1,
            rowid,
            parent: None,
            node: root
        }
    );
}
