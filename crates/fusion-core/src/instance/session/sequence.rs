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

use super::super::execution::{ExecPoint, SeqStep};
use super::super::{Instance, cache::BufId};
use crate::block::Change;
use crate::config::SequenceDef;
use crate::msg::{EnqKind, LockMode, Lvb, ResName};
use crate::stats::{Stat, Wait};

use super::sequences::slot_of;

fn res(kind: EnqKind, seq: usize) -> ResName {
    ResName {
        kind,
        id: u64::from(slot_of(seq)),
    }
}

impl Instance {
    fn seq_def(&self, seq: usize) -> Option<&SequenceDef> {
        self.fg.seqs.def(seq)
    }

    /// Advance a `nextval`. True when the session can go on at once.
    pub(in crate::instance) fn seq_step(
        &mut self,
        sid: u32,
        seq: usize,
        step: SeqStep,
        insert: Option<usize>,
    ) -> bool {
        let Some(def) = self.seq_def(seq) else {
            self.fg.sessions.go_to(sid, ExecPoint::None);
            return true;
        };
        let (cache, order) = (def.cache, def.order);
        let set = |me: &mut Instance, step: SeqStep| {
            me.fg
                .sessions
                .go_to(sid, ExecPoint::Seq { seq, step, insert });
        };
        match step {
            SeqStep::Start if cache == 0 => {
                set(self, SeqStep::Update);
                self.enq_get(
                    sid,
                    res(EnqKind::RowCache, seq),
                    LockMode::X,
                    Wait::RowCacheLock,
                )
            }
            SeqStep::Start if order => {
                set(self, SeqStep::HaveSv);
                self.enq_get(sid, res(EnqKind::Sv, seq), LockMode::X, Wait::DfsLockHandle)
            }
            SeqStep::Start => {
                if let Some(number) = self.fg.seqs.take_cached(seq) {
                    self.seq_deliver(sid, seq, number, insert);
                    return true;
                }
                set(self, SeqStep::HaveSq);
                self.enq_get(
                    sid,
                    res(EnqKind::Sq, seq),
                    LockMode::X,
                    Wait::EnqSqContention,
                )
            }
            SeqStep::HaveSq => {
                // Another session may have refilled the cache while this one queued.
                if let Some(number) = self.fg.seqs.take_cached(seq) {
                    self.enq_release(res(EnqKind::Sq, seq), None);
                    self.seq_deliver(sid, seq, number, insert);
                    return true;
                }
                set(self, SeqStep::Update);
                self.enq_get(
                    sid,
                    res(EnqKind::RowCache, seq),
                    LockMode::X,
                    Wait::RowCacheLock,
                )
            }
            SeqStep::HaveSv => {
                let r = res(EnqKind::Sv, seq);
                let lvb = self.gc.enqueue_value(r);
                if lvb.lo < lvb.hi {
                    let number = lvb.lo + 1;
                    self.enq_release(
                        r,
                        Some(Lvb {
                            lo: number,
                            hi: lvb.hi,
                        }),
                    );
                    self.seq_deliver(sid, seq, number, insert);
                    return true;
                }
                set(self, SeqStep::Update);
                self.enq_get(
                    sid,
                    res(EnqKind::RowCache, seq),
                    LockMode::X,
                    Wait::RowCacheLock,
                )
            }
            SeqStep::Update => match self.k.layout().seq_block {
                Some(blk) => {
                    let now = self.k.now();
                    let recursive_start = &mut self.fg.sessions.session_mut(sid).recursive_start;
                    if recursive_start.is_none() {
                        // The recursive statement starts: parsed and executed each time.
                        *recursive_start = Some(now);
                        if let Some(st) = self.fg.workloads.update_seq_stmt() {
                            self.k.stats_mut().statements[st].parses += 1;
                            self.k.stats_mut().statements[st].executions += 1;
                        }
                    }
                    self.visit(sid, blk, true)
                }
                None => {
                    self.fg.sessions.go_to(sid, ExecPoint::None);
                    true
                }
            },
        }
    }

    /// The session holds the SEQ$ block in current mode and the row cache
    /// lock: allocate, commit the recursive transaction, release the locks.
    pub(in crate::instance) fn seq_updated(
        &mut self,
        sid: u32,
        buf: BufId,
        seq: usize,
        insert: Option<usize>,
    ) -> ExecPoint {
        let Some(def) = self.seq_def(seq) else {
            return ExecPoint::None;
        };
        let (batch, cache, order) = (def.batch(), def.cache, def.order);
        let slot = slot_of(seq);
        let blk = self.cache.get(buf).blk;
        let (xid, scn) = self.fg.recursive_txn(&mut self.k);
        self.clean_out_buffer(buf);
        let old = match self.cache.get(buf).image.row(slot) {
            Some(r) if r.key == seq as u64 + 1 => r.val.max(0) as u64,
            _ => {
                self.error(format!("SEQ$ has no row for sequence {seq}"));
                self.fg.sessions.session_mut(sid).recursive_start = None;
                return ExecPoint::None;
            }
        };
        let new = old + batch;
        let val = new as i64;
        self.fg.change_block(
            &mut self.k,
            &mut self.cache,
            &mut self.redo,
            buf,
            Change::UpdateRow { slot, val },
            xid,
            scn,
            200,
        );
        self.k.incr(Stat::RowsUpdated);
        self.k.add(Stat::SeqValuesAllocated, batch);
        // The commit posts LGWR without waiting for it (no `log file sync`),
        // so the redo is usually on disk when another instance asks for SEQ$.
        let rba =
            self.fg
                .commit_recursive(&mut self.k, &mut self.cache, &mut self.redo, xid, &[blk]);
        self.request_flush(rba, None);
        self.enq_release(res(EnqKind::RowCache, seq), None);
        let now = self.k.now();
        if let Some(t) = self.fg.sessions.session_mut(sid).recursive_start.take()
            && let Some(st) = self.fg.workloads.update_seq_stmt()
        {
            self.k.stats_mut().statements[st].elapsed_ns += now - t;
            self.k.stats_mut().statements[st].rows += 1;
        }
        // The first of the values just allocated is handed out here.
        let first = old + 1;
        if cache > 0 && order {
            self.enq_release(res(EnqKind::Sv, seq), Some(Lvb { lo: first, hi: new }));
        } else if cache > 0 {
            self.fg.seqs.cache(seq, first, new);
            self.enq_release(res(EnqKind::Sq, seq), None);
        }
        self.seq_value(sid, seq, first, insert)
    }

    /// Hand value number `number` out (no CPU step: part of the execute call).
    fn seq_deliver(&mut self, sid: u32, seq: usize, number: u64, insert: Option<usize>) {
        let next = self.seq_value(sid, seq, number, insert);
        self.fg.sessions.go_to(sid, next);
    }

    /// Value number `number` of the sequence, and where the execution goes on.
    fn seq_value(
        &mut self,
        _sid: u32,
        seq: usize,
        number: u64,
        insert: Option<usize>,
    ) -> ExecPoint {
        let Some(def) = self.seq_def(seq) else {
            return ExecPoint::None;
        };
        let value = def.value(number);
        self.k.incr(Stat::SeqValuesHandedOut);
        self.fg.seqs.handed_out(seq, value);
        match insert {
            Some(table) => ExecPoint::InsertRow {
                table,
                key: value.max(1) as u64,
            },
            None => ExecPoint::None,
        }
    }
}
