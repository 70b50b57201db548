//! Sequences: `nextval` as Oracle does it in RAC.
//!
//! A sequence's dictionary row is a row of SEQ$ (`Layout::seq_block`), a
//! real block that moves between instances through cache fusion. Its value
//! counts the values allocated so far. Every allocation is a recursive
//! `update seq$` transaction that commits at once, done while holding the
//! sequence's row cache lock (a global enqueue, waited on as `row cache lock`):
//!
//! - NOCACHE: one allocation per `nextval`, so the row cache lock and the
//!   SEQ$ block travel between instances that share the sequence.
//! - CACHE n NOORDER: an allocation takes n values into this instance's own
//!   cache (refills serialized by the SQ enqueue). Instances hand out
//!   interleaved ranges; values cached when the run stops are gaps.
//! - CACHE n ORDER: the cached range lives in the SV enqueue's lock value
//!   block, so every `nextval` takes SV in X (waited on as `DFS lock handle`)
//!   and values follow one order across the cluster.
//!
//! [`Foregrounds`]' methods here decide each step and answer what it asks
//! of the global enqueue service or the cache ([`SeqNext`], the releases
//! after an allocation); the dispatcher (`dispatch/visit.rs`) asks for the
//! enqueues, releases them and visits SEQ$, in this order.

use super::super::cache::{BufId, Cache};
use super::super::execution::{ExecPoint, SeqStep};
use super::super::kernel::Kernel;
use super::super::redo::Redo;
use super::Foregrounds;
use super::sequences::slot_of;
use crate::block::Change;
use crate::msg::{EnqKind, LockMode, Lvb, ResName};
use crate::stats::{Stat, Wait};
use crate::types::BlockAddr;

fn res(kind: EnqKind, seq: usize) -> ResName {
    ResName {
        kind,
        id: u64::from(slot_of(seq)),
    }
}

/// What a `nextval` step asks of the rest of the instance.
#[derive(Debug, PartialEq)]
pub(in crate::instance) enum SeqNext {
    /// Nothing: the session goes on at once.
    Go,
    /// Take `0` in `1`, waiting on `2` until it is granted.
    Get(ResName, LockMode, Wait),
    /// Release `res` (with `lvb`), then hand value number `number` out
    /// ([`Foregrounds::seq_deliver`]); the session goes on at once.
    ReleaseThenDeliver {
        res: ResName,
        lvb: Option<Lvb>,
        number: u64,
    },
    /// Visit SEQ$ in current mode (the row cache lock is held).
    Visit(BlockAddr),
}

/// A refill written to SEQ$: allocation numbers `first..=last` are this
/// instance's; `row_cache`, the lock it was written under, goes next.
pub(in crate::instance) struct Allocated {
    pub row_cache: ResName,
    pub first: u64,
    pub last: u64,
}

impl Foregrounds {
    /// Advance a `nextval`; `sv_value` reads an SV enqueue's value block
    /// (held here in X at `HaveSv`).
    pub(in crate::instance) fn seq_step(
        &mut self,
        k: &mut Kernel,
        sv_value: impl FnOnce(ResName) -> Lvb,
        sid: u32,
        seq: usize,
        step: SeqStep,
        insert: Option<usize>,
    ) -> SeqNext {
        let Some(def) = self.seqs.def(seq) else {
            self.sessions.go_to(sid, ExecPoint::None);
            return SeqNext::Go;
        };
        let (cache, order) = (def.cache, def.order);
        let row_cache = SeqNext::Get(res(EnqKind::RowCache, seq), LockMode::X, Wait::RowCacheLock);
        let mut set = |step: SeqStep| {
            self.sessions
                .go_to(sid, ExecPoint::Seq { seq, step, insert });
        };
        match step {
            SeqStep::Start if cache == 0 => {
                set(SeqStep::Update);
                row_cache
            }
            SeqStep::Start if order => {
                set(SeqStep::HaveSv);
                SeqNext::Get(res(EnqKind::Sv, seq), LockMode::X, Wait::DfsLockHandle)
            }
            SeqStep::Start => {
                if let Some(number) = self.seqs.take_cached(seq) {
                    self.seq_deliver(k, sid, seq, number, insert);
                    return SeqNext::Go;
                }
                set(SeqStep::HaveSq);
                SeqNext::Get(res(EnqKind::Sq, seq), LockMode::X, Wait::EnqSqContention)
            }
            SeqStep::HaveSq => {
                // Another session may have refilled the cache while this one queued.
                if let Some(number) = self.seqs.take_cached(seq) {
                    return SeqNext::ReleaseThenDeliver {
                        res: res(EnqKind::Sq, seq),
                        lvb: None,
                        number,
                    };
                }
                set(SeqStep::Update);
                row_cache
            }
            SeqStep::HaveSv => {
                let r = res(EnqKind::Sv, seq);
                let lvb = sv_value(r);
                if lvb.lo < lvb.hi {
                    let number = lvb.lo + 1;
                    return SeqNext::ReleaseThenDeliver {
                        res: r,
                        lvb: Some(Lvb {
                            lo: number,
                            hi: lvb.hi,
                        }),
                        number,
                    };
                }
                set(SeqStep::Update);
                row_cache
            }
            SeqStep::Update => match k.layout().seq_block {
                Some(blk) => {
                    let now = k.now();
                    let recursive_start = &mut self.sessions.session_mut(sid).recursive_start;
                    if recursive_start.is_none() {
                        // The recursive statement starts: parsed and executed each time.
                        *recursive_start = Some(now);
                        if let Some(st) = self.workloads.update_seq_stmt() {
                            k.stats_mut().statements[st].parses += 1;
                            k.stats_mut().statements[st].executions += 1;
                        }
                    }
                    SeqNext::Visit(blk)
                }
                None => {
                    self.sessions.go_to(sid, ExecPoint::None);
                    SeqNext::Go
                }
            },
        }
    }

    /// The session holds the SEQ$ block in current mode and the row cache
    /// lock: allocate and commit the recursive transaction (posting LGWR).
    /// `None`: nothing was allocated, the execution ends. Then the row
    /// cache lock goes, and [`Foregrounds::seq_allocated`] says what else.
    pub(in crate::instance) fn seq_allocate(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        sid: u32,
        buf: BufId,
        seq: usize,
    ) -> Option<Allocated> {
        let batch = self.seqs.def(seq)?.batch();
        let slot = slot_of(seq);
        let blk = cache.get(buf).blk;
        let (xid, scn) = self.recursive_txn(k);
        // Delayed block cleanout with what this instance knows.
        let txns = &self.txns;
        cache.get_mut(buf).image.clean_out_known(&|x| txns.state(x));
        let old = match cache.get(buf).image.row(slot) {
            Some(r) if r.key == seq as u64 + 1 => r.val.max(0) as u64,
            _ => {
                k.error(&format!("SEQ$ has no row for sequence {seq}"));
                self.sessions.session_mut(sid).recursive_start = None;
                return None;
            }
        };
        let new = old + batch;
        let val = new as i64;
        self.change_block(
            k,
            cache,
            redo,
            buf,
            Change::UpdateRow { slot, val },
            xid,
            scn,
            200,
        );
        k.incr(Stat::RowsUpdated);
        k.add(Stat::SeqValuesAllocated, batch);
        // The commit posts LGWR without waiting for it (no `log file sync`),
        // so the redo is usually on disk when another instance asks for SEQ$.
        let rba = self.commit_recursive(k, cache, redo, xid, &[blk]);
        redo.request_flush(k, rba, None);
        Some(Allocated {
            row_cache: res(EnqKind::RowCache, seq),
            first: old + 1,
            last: new,
        })
    }

    /// The row cache lock is released after an allocation: the recursive
    /// statement ends, and the values go to the SV value block or this
    /// instance's cache. Returns the enqueue to release now, if any; then
    /// the first value is handed out ([`Foregrounds::seq_value`]).
    pub(in crate::instance) fn seq_allocated(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        seq: usize,
        a: &Allocated,
    ) -> Option<(ResName, Option<Lvb>)> {
        let now = k.now();
        if let Some(t) = self.sessions.session_mut(sid).recursive_start.take()
            && let Some(st) = self.workloads.update_seq_stmt()
        {
            k.stats_mut().statements[st].elapsed_ns += now - t;
            k.stats_mut().statements[st].rows += 1;
        }
        let def = self.seqs.def(seq)?;
        let (cache, order) = (def.cache, def.order);
        if cache > 0 && order {
            Some((
                res(EnqKind::Sv, seq),
                Some(Lvb {
                    lo: a.first,
                    hi: a.last,
                }),
            ))
        } else if cache > 0 {
            self.seqs.cache(seq, a.first, a.last);
            Some((res(EnqKind::Sq, seq), None))
        } else {
            None
        }
    }

    /// Hand value number `number` out (no CPU step: part of the execute call).
    pub(in crate::instance) fn seq_deliver(
        &mut self,
        k: &mut Kernel,
        sid: u32,
        seq: usize,
        number: u64,
        insert: Option<usize>,
    ) {
        let next = self.seq_value(k, seq, number, insert);
        self.sessions.go_to(sid, next);
    }

    /// Value number `number` of the sequence, and where the execution goes on.
    pub(in crate::instance) fn seq_value(
        &mut self,
        k: &mut Kernel,
        seq: usize,
        number: u64,
        insert: Option<usize>,
    ) -> ExecPoint {
        let Some(def) = self.seqs.def(seq) else {
            return ExecPoint::None;
        };
        let value = def.value(number);
        k.incr(Stat::SeqValuesHandedOut);
        self.seqs.handed_out(seq, value);
        match insert {
            Some(table) => ExecPoint::InsertRow {
                table,
                key: value.max(1) as u64,
            },
            None => ExecPoint::None,
        }
    }
}
