//! A PX slave's steps, as `PxState`'s and `PxStep`'s methods (the worker's
//! state is in slave.rs).

use std::collections::VecDeque;

use super::super::{PxEffect, PxState, PxStep};
use super::{
    After, DIRECT_READ_DEPTH, GRANULES_PER_SLAVE, Host, Read, Role, TqBuf, Worker, WorkerState,
};
use crate::block::Block;
use crate::config::Nanos;
use crate::instance::events::IoPurpose;
use crate::msg::Io;
use crate::px::rows::{self, BUFFER_HEADER, Final, Route, SCAN_WIDTH, row_bytes};
use crate::px::{Batch, DegreePolicy, Dest, ExecId, PxMsg, PxPlan, SlaveId};
use crate::stats::{Stat, Wait, WaitClass};
use crate::types::{BlockAddr, InstId};

impl PxState {
    /// Worker `w`, while it exists.
    pub(in crate::instance::px) fn worker_mut(&mut self, w: usize) -> Option<&mut Worker> {
        self.workers.get_mut(w).and_then(Option::as_mut)
    }
}

impl PxStep<'_, '_> {
    /// Begin a wait of worker `w` (the session's own wait when it is the QC).
    pub(in crate::instance::px) fn worker_begin_wait(&mut self, w: usize, ev: Wait) {
        let now = self.k.now();
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        match wk.host {
            Host::Qc(sid) => self.effect(PxEffect::BeginWait { sid, event: ev }),
            Host::Server(_) => {
                if wk.wait.is_none() {
                    wk.wait = Some((ev, now));
                }
            }
        }
    }

    fn worker_end_wait(&mut self, w: usize) {
        let now = self.k.now();
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        match wk.host {
            Host::Qc(sid) => self.effect(PxEffect::EndPxWait(sid)),
            Host::Server(_) => {
                if let Some((ev, since)) = wk.wait.take() {
                    let took = now - since;
                    if ev.class() != WaitClass::Idle {
                        wk.db_ns += took;
                    }
                    let proc = wk.proc;
                    self.k.wait(ev, took, true);
                    self.trace_wait(proc, ev, took);
                }
            }
        }
    }

    /// Ask for CPU for worker `w`.
    fn worker_cpu(&mut self, w: usize, demand: Nanos, after: After) {
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        wk.st = WorkerState::Cpu;
        wk.after = after;
        let (proc, host) = (wk.proc, wk.host);
        if let Host::Qc(sid) = host {
            self.session_mut(sid).run_px_step();
        }
        self.k.cpu(proc, demand.max(1));
    }

    /// `Execute` arrived: the worker's granules, then off it goes.
    pub(in crate::instance::px) fn worker_start(&mut self, w: usize) {
        self.worker_end_wait(w);
        let Some(wk) = self.px.workers.get(w).and_then(Option::as_ref) else {
            return;
        };
        let (exec, me, role, dop) = (wk.exec, wk.me, wk.role, wk.dop);
        let Some(h) = self.px.hosted.get(&exec) else {
            return;
        };
        let mut reads = VecDeque::new();
        if role != Role::Consumer {
            let mbrc = self.k.params().px.multiblock_read_count.max(1);
            for (side, &t) in h.query.tables.iter().enumerate() {
                let Some(tl) = self.k.layout().tables.get(t) else {
                    continue;
                };
                let blocks = tl.initial_blocks;
                let granule = if role == Role::Serial {
                    blocks.max(1)
                } else {
                    blocks.div_ceil(dop * GRANULES_PER_SLAVE).max(1)
                };
                let granules = blocks.div_ceil(granule);
                let mut k = u32::from(me.idx);
                while k < granules {
                    let start = k * granule;
                    let len = granule.min(blocks - start);
                    let mut off = 0;
                    while off < len {
                        let count = mbrc.min(len - off);
                        reads.push_back(Read {
                            side: u8::try_from(side).expect("a plan reads at most two tables"),
                            first: tl.base + start + off,
                            count,
                        });
                        off += count;
                    }
                    k += if role == Role::Serial { 1 } else { dop };
                }
            }
        }
        if let Some(wk) = self.px.worker_mut(w) {
            wk.reads = reads;
            wk.st = WorkerState::Ready;
        }
        self.px.kick.push_back(w);
    }

    /// Worker `w` (kicked) does what it can until it has to wait.
    pub fn worker_next(&mut self, w: usize) {
        loop {
            let Some(wk) = self.px.worker_mut(w) else {
                return;
            };
            if wk.st != WorkerState::Ready {
                return;
            }
            // 1. Buffers ready to go, in order.
            if let Some(b) = wk.outq.front() {
                if let Dest::Slave(to) = b.to {
                    let c = to.idx as usize;
                    if wk.credits.get(c).copied().unwrap_or(0) == 0 {
                        if wk.wait.is_none() {
                            self.worker_begin_wait(w, Wait::PxDeqCreditSendBlkd);
                        }
                        return;
                    }
                    wk.credits[c] -= 1;
                }
                let Some(b) = wk.outq.pop_front() else {
                    return;
                };
                self.worker_end_wait_if(w, Wait::PxDeqCreditSendBlkd);
                self.transmit(w, b);
                if !self.effects.is_empty() {
                    // The buffer went to the QC here and ended its wait:
                    // the worker goes on once that is recorded.
                    self.effect(PxEffect::Continue(w));
                    return;
                }
                continue;
            }
            let go_on = match wk.role {
                Role::Consumer => self.consumer_next(w),
                Role::Producer | Role::Serial => self.producer_next(w),
            };
            if !go_on {
                return;
            }
        }
    }

    fn worker_end_wait_if(&mut self, w: usize, ev: Wait) {
        if self
            .px
            .worker_mut(w)
            .is_some_and(|wk| wk.wait.is_some_and(|(e, _)| e == ev))
        {
            self.worker_end_wait(w);
        }
    }

    /// Are slaves' scans buffered reads (in-memory parallel execution)?
    fn buffered(&self) -> bool {
        self.k.params().px.degree_policy == DegreePolicy::Auto
    }

    /// A producer's (or the serial execution's) next move. True to go on at once.
    fn producer_next(&mut self, w: usize) -> bool {
        let buffered = self.buffered();
        let depth = if buffered { 1 } else { DIRECT_READ_DEPTH };
        // Keep the reads in flight topped up.
        loop {
            let Some(wk) = self.px.worker_mut(w) else {
                return false;
            };
            if wk.inflight.len() >= depth {
                break;
            }
            let Some(r) = wk.reads.pop_front() else { break };
            let seq = wk.next_read;
            wk.next_read += 1;
            wk.inflight.push_back((seq, r, None));
            debug_assert!(
                !self.effects.iter().any(PxEffect::may_send),
                "a PX read would overtake {:?}",
                self.effects
            );
            self.k.start_io(
                Io::ReadBlocks {
                    first: BlockAddr(r.first),
                    count: r.count,
                },
                IoPurpose::PxRead { worker: w, seq },
            );
        }
        let Some(wk) = self.px.worker_mut(w) else {
            return false;
        };
        if let Some((_, r, data)) = wk.inflight.front()
            && r.side == wk.cur_side
        {
            if data.is_none() {
                // The next blocks to process are still on their way.
                let ev = match (buffered, r.count) {
                    (false, _) => Wait::DirectPathRead,
                    (true, 1) => Wait::DbFileSequentialRead,
                    (true, _) => Wait::DbFileScatteredRead,
                };
                wk.st = WorkerState::Reading;
                self.worker_begin_wait(w, ev);
                return false;
            }
            let Some((_, _, Some(blocks))) = wk.inflight.pop_front() else {
                return false;
            };
            self.scan_blocks(w, blocks);
            return false;
        }
        if wk.cur_side < wk.nsides {
            // The side is scanned: its last buffers go out, marked as the end.
            let side = wk.cur_side;
            wk.cur_side += 1;
            if !wk.feeds_consumers() {
                return true;
            }
            let bufs: Vec<TqBuf> = wk.bufs.iter_mut().map(std::mem::take).collect();
            let buffers = bufs.len() as u64;
            for (c, buf) in bufs.into_iter().enumerate() {
                let to = Dest::Slave(SlaveId::consumer(c));
                self.queue_buffer(w, to, side, buf.values, true);
            }
            let cost = self.send_cost(w, buffers);
            self.worker_cpu(w, cost, After::Continue);
            return false;
        }
        if wk.finished {
            wk.st = WorkerState::Done;
            return false;
        }
        wk.finished = true;
        let (role, feeds, plan) = (wk.role, wk.feeds_consumers(), wk.plan);
        if feeds {
            wk.st = WorkerState::Done;
            return false;
        }
        let (out, width, work) = wk.stage.finish();
        if role == Role::Serial {
            let mut fin = Final::new(plan, 1);
            fin.apply(0, &out);
            wk.fin = Some(fin);
            let cost = work.rows * self.k.costs().px_row_receive_ns
                + work.compares * self.k.costs().row_examined_ns;
            self.worker_cpu(w, cost, After::SerialDone);
            return false;
        }
        // One set: the partial result goes to the QC.
        let buffers = self.output_to_qc(w, out, width);
        let cost = work.rows * self.k.costs().px_row_send_ns + self.send_cost(w, buffers);
        self.worker_cpu(w, cost, After::Continue);
        false
    }

    /// A consumer's next move. True to go on at once.
    fn consumer_next(&mut self, w: usize) -> bool {
        let me = self.k.id();
        let Some(wk) = self.px.worker_mut(w) else {
            return false;
        };
        let producers = wk.dop;
        if let Some((b, remote)) = wk.inbox.pop_front() {
            if wk.plan == PxPlan::HashJoinGroupBy && b.side == 1 && wk.eofs[0] < producers {
                // The probe side waits until the hash table is built.
                wk.parked.push_back((b, remote));
                return true;
            }
            let work = wk.stage.apply(b.side, &b.values);
            wk.rows += work.rows;
            if b.eof {
                wk.eofs[b.side.min(1) as usize] += 1;
                if b.side == 0 && wk.eofs[0] == producers {
                    while let Some(x) = wk.parked.pop_back() {
                        wk.inbox.push_front(x);
                    }
                }
            }
            let producer = b.from.idx;
            let from_inst = self
                .px
                .hosted
                .get(&b.exec)
                .and_then(|h| h.placement.get(usize::from(producer)).copied())
                .unwrap_or(me);
            self.worker_end_wait_if(w, Wait::PxDeqTableQNormal);
            let msg = if remote {
                self.k.costs().px_message_remote_ns
            } else {
                self.k.costs().px_message_local_ns
            };
            let cost = work.rows * self.k.costs().px_row_receive_ns + msg;
            self.worker_cpu(w, cost, After::Credit(producer, from_inst));
            return false;
        }
        let complete = (0..wk.nsides as usize).all(|s| wk.eofs[s] >= producers);
        if complete && wk.parked.is_empty() && !wk.finished {
            wk.finished = true;
            let (out, width, work) = wk.stage.finish();
            let buffers = self.output_to_qc(w, out, width);
            let cost = work.rows * self.k.costs().px_row_send_ns
                + work.compares * self.k.costs().row_examined_ns
                + self.send_cost(w, buffers);
            self.worker_end_wait_if(w, Wait::PxDeqTableQNormal);
            self.worker_cpu(w, cost, After::Continue);
            return false;
        }
        if wk.finished {
            wk.st = WorkerState::Done;
            self.worker_end_wait_if(w, Wait::PxDeqTableQNormal);
            return false;
        }
        if wk.wait.is_none() {
            self.worker_begin_wait(w, Wait::PxDeqTableQNormal);
        }
        false
    }

    /// CPU a producer spends handing `n` buffers to its table queue.
    fn send_cost(&self, w: usize, buffers: u64) -> Nanos {
        let Some(wk) = self.px.workers.get(w).and_then(Option::as_ref) else {
            return 0;
        };
        let me = self.k.id();
        // Each buffer costs by where it goes; what is queued last tells.
        let remote = wk
            .outq
            .iter()
            .rev()
            .take(buffers as usize)
            .filter(|b| self.dest_inst(b) != Some(me))
            .count() as u64;
        remote * self.k.costs().px_message_remote_ns
            + (buffers - remote.min(buffers)) * self.k.costs().px_message_local_ns
    }

    /// The instance a buffer goes to.
    fn dest_inst(&self, b: &Batch) -> Option<InstId> {
        match b.to {
            Dest::Qc => Some(b.exec.qc),
            Dest::Slave(s) => {
                let h = self.px.hosted.get(&b.exec)?;
                h.placement
                    .get(usize::from(s.set) * h.dop as usize + usize::from(s.idx))
                    .copied()
            }
        }
    }

    /// Queue one buffer (possibly only an end marker) for sending.
    fn queue_buffer(&mut self, w: usize, to: Dest, side: u8, values: Vec<i64>, eof: bool) {
        let size = self.k.params().px.message_size;
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        let b = Batch {
            exec: wk.exec,
            from: wk.me,
            to,
            side,
            values,
            eof,
            bytes: size,
        };
        wk.outq.push_back(b);
    }

    /// Cut a stage's output into buffers for the QC; the last is marked.
    fn output_to_qc(&mut self, w: usize, out: Vec<i64>, width: usize) -> u64 {
        let cap = self.k.params().px.message_size - BUFFER_HEADER;
        let mut batches: Vec<Vec<i64>> = Vec::new();
        let mut cur: Vec<i64> = Vec::new();
        let mut used = 0;
        for r in out.chunks_exact(width.max(1)) {
            let rb = row_bytes(r);
            if used + rb > cap && !cur.is_empty() {
                batches.push(std::mem::take(&mut cur));
                used = 0;
            }
            cur.extend_from_slice(r);
            used += rb;
        }
        batches.push(cur);
        let count = batches.len();
        for (i, v) in batches.into_iter().enumerate() {
            self.queue_buffer(w, Dest::Qc, 0, v, i + 1 == count);
        }
        count as u64
    }

    /// A read of worker `w` completed.
    pub fn read_done(&mut self, w: usize, seq: u64, blocks: Vec<Block>) {
        let buffered = self.buffered();
        let n = blocks.len() as u64;
        self.k.add(Stat::PhysicalReads, n);
        self.k.incr(Stat::PhysicalReadIoRequests);
        self.k.add(
            if buffered {
                Stat::PhysicalReadsCache
            } else {
                Stat::PhysicalReadsDirect
            },
            n,
        );
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        let Some(slot) = wk.inflight.iter_mut().find(|(s, _, _)| *s == seq) else {
            self.k
                .error(&format!("read {seq} of a PX worker never issued"));
            return;
        };
        slot.2 = Some(blocks);
        let front_ready = wk.inflight.front().is_some_and(|f| f.0 == seq);
        if wk.st == WorkerState::Reading && front_ready {
            wk.st = WorkerState::Ready;
            self.worker_end_wait(w);
            self.px.kick.push_back(w);
        }
    }

    /// Process the blocks of a read: project their rows, aggregate them or
    /// route them into the table queue, and spend the CPU it takes.
    fn scan_blocks(&mut self, w: usize, blocks: Vec<Block>) {
        let buffered = self.buffered();
        let n = blocks.len() as u64;
        self.k.add(Stat::ConsistentGets, n);
        if !buffered {
            self.k.add(Stat::ConsistentGetsDirect, n);
        }
        self.k.add(Stat::SessionLogicalReads, n);
        self.k.add(Stat::TableScanBlocksGotten, n);
        let Some(wk) = self.px.workers.get(w).and_then(Option::as_ref) else {
            return;
        };
        let (plan, side, exec) = (wk.plan, wk.cur_side, wk.exec);
        let mut values = Vec::new();
        let mut rows = 0;
        for b in &blocks {
            rows += rows::project(plan, b, &mut values);
        }
        self.k.add(Stat::TableScanRowsGotten, rows);
        let per_block =
            self.k.costs().consistent_get_ns * n + self.k.costs().row_examined_ns * rows;
        let feeds = wk.feeds_consumers();
        if !feeds {
            let Some(wk) = self.px.worker_mut(w) else {
                return;
            };
            let work = wk.stage.apply(side, &values);
            wk.rows += rows;
            let cost = per_block + work.rows * self.k.costs().px_row_receive_ns;
            self.worker_cpu(w, cost, After::Continue);
            return;
        }
        // Route each row into its consumer's buffer; full buffers are queued.
        let (lo, hi) = self
            .px
            .hosted
            .get(&exec)
            .and_then(|h| h.query.tables.first())
            .and_then(|&t| self.k.layout().tables.get(t))
            .map_or((1, 1), |t| (1, t.initial_rows.max(1) as i64));
        let q = self.px.hosted.get(&exec).map(|h| h.query.clone());
        let Some(q) = q else { return };
        let cap = self.k.params().px.message_size - BUFFER_HEADER;
        let mut full: Vec<(usize, Vec<i64>)> = Vec::new();
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        wk.rows += rows;
        let n_cons = wk.bufs.len();
        for r in values.chunks_exact(SCAN_WIDTH) {
            let rb = row_bytes(r);
            let targets = match rows::route(&q, side, r[0], n_cons, &mut wk.rr, (lo, hi)) {
                Route::One(c) => c..c + 1,
                Route::All => 0..n_cons,
            };
            for c in targets {
                let buf = &mut wk.bufs[c];
                if buf.bytes + rb > cap && !buf.values.is_empty() {
                    full.push((c, std::mem::take(&mut buf.values)));
                    buf.bytes = 0;
                }
                buf.values.extend_from_slice(r);
                buf.bytes += rb;
            }
        }
        let msgs = full.len() as u64;
        for (c, v) in full {
            self.queue_buffer(w, Dest::Slave(SlaveId::consumer(c)), side, v, false);
        }
        let cost = per_block + rows * self.k.costs().px_row_send_ns + self.send_cost(w, msgs);
        self.worker_cpu(w, cost, After::Continue);
    }

    /// Worker `w`'s CPU step ended.
    pub(in crate::instance::px) fn worker_cpu_done(&mut self, w: usize) {
        let me = self.k.id();
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        let after = std::mem::replace(&mut wk.after, After::Continue);
        wk.st = WorkerState::Ready;
        let (host, exec, consumer, rows) = (wk.host, wk.exec, wk.me.idx, wk.rows);
        let fin = if after == After::SerialDone {
            wk.fin.take()
        } else {
            None
        };
        if let Host::Qc(sid) = host {
            self.session_mut(sid).wait_for_slaves();
        }
        match after {
            After::Continue => {}
            After::Credit(producer, inst) => {
                if inst == me {
                    self.credit(exec, producer, consumer);
                } else {
                    self.send(
                        inst,
                        PxMsg::Credit {
                            exec,
                            producer,
                            consumer,
                        },
                    );
                }
            }
            After::SerialDone => {
                if let (Host::Qc(sid), Some(fin)) = (host, fin) {
                    self.qc_serial_done(sid, fin, rows);
                }
                return;
            }
        }
        self.px.kick.push_back(w);
    }

    /// Send one buffer: to a process here, or over the interconnect.
    fn transmit(&mut self, w: usize, b: Batch) {
        let Some(to) = self.dest_inst(&b) else {
            self.k
                .error(&format!("buffer for an unplaced slave {:?}", b.to));
            return;
        };
        let bytes = if b.values.is_empty() {
            0
        } else {
            u64::from(b.bytes)
        };
        let me = self.k.id();
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        if to == me {
            wk.sent_local += bytes;
            self.k.incr(Stat::PxLocalMessagesSent);
            self.k.add(Stat::PxLocalBytesSent, bytes);
            self.receive(Box::new(b), false);
        } else {
            wk.sent_remote += bytes;
            self.k.add(Stat::PxRemoteBytesSent, bytes);
            self.k
                .stats_mut()
                .px
                .add_pair(me.number(), to.number(), bytes, u64::from(bytes > 0));
            self.send(to, PxMsg::Batch(Box::new(b)));
        }
    }

    /// A buffer arrived for a process of this instance.
    pub(in crate::instance::px) fn receive(&mut self, b: Box<Batch>, remote: bool) {
        let bytes = if b.values.is_empty() {
            0
        } else {
            u64::from(b.bytes)
        };
        if remote {
            self.k.incr(Stat::PxRemoteMessagesRecv);
            self.k.add(Stat::PxRemoteBytesReceived, bytes);
        } else {
            self.k.incr(Stat::PxLocalMessagesRecv);
        }
        let to = match b.to {
            Dest::Qc => return self.qc_receive(b, remote),
            Dest::Slave(s) => s,
        };
        let Some(&w) = self.px.by_slave.get(&(b.exec, to)) else {
            self.k.error(&format!(
                "table-queue buffer for unknown slave {to:?} of {:?}",
                b.exec
            ));
            return;
        };
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        if wk.role != Role::Consumer
            || !b.values.len().is_multiple_of(SCAN_WIDTH)
            || b.side >= wk.nsides
            || u32::from(b.from.idx) >= wk.dop
            || b.from.set != 0
        {
            self.k.error(&format!(
                "bad table-queue buffer for {to:?} of {:?}",
                b.exec
            ));
            return;
        }
        if remote {
            wk.recv_remote += bytes;
        }
        wk.inbox.push_back((b, remote));
        if wk.st == WorkerState::Ready {
            self.px.kick.push_back(w);
        }
    }

    /// A consumer gave a producer of this instance a buffer back.
    pub(in crate::instance::px) fn credit(&mut self, exec: ExecId, producer: u16, consumer: u16) {
        // A credit can arrive after the statement ended (the release came first).
        let Some(&w) = self.px.by_slave.get(&(
            exec,
            SlaveId {
                set: 0,
                idx: producer,
            },
        )) else {
            return;
        };
        let Some(wk) = self.px.worker_mut(w) else {
            return;
        };
        match wk.credits.get_mut(usize::from(consumer)) {
            Some(c) => *c += 1,
            None => {
                self.k
                    .error(&format!("credit from unknown consumer {consumer}"));
                return;
            }
        }
        if wk.st == WorkerState::Ready {
            self.px.kick.push_back(w);
        }
    }
}
