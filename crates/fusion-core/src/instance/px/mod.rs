//! Parallel execution inside an instance: the query coordinator (a session
//! running a `parallel_query` step), the pool of PX servers (`P000`, ...,
//! processes in the CPU run queue), the executions this instance hosts
//! slaves for, and the PX messages between instances.
//!
//! A statement's life at its QC:
//! 1. take the PS enqueue (`enq: PS - contention`): allocations are serialized
//!    cluster-wide, so two statements never count the same free servers;
//! 2. probe every instance (its group membership, free servers, room below
//!    `parallel_servers_target`, load) and decide DOP and placement
//!    (px_alloc.rs): queue (`resmgr:pq queued`), run serially, or go parallel;
//! 3. `Start` the slaves on their instances and wait for each to join
//!    (`PX Deq: Join ACK`; new servers cost a process start), release PS;
//! 4. `Execute`: producers scan their granules, table queues carry row
//!    buffers to the consumers and on to the QC (`PX Deq: Execute Reply`);
//! 5. merge the result, `Release` the servers (which tells instances with a
//!    queued statement that servers are free).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

mod alloc;
mod host;
mod slave;

use super::Instance;
use super::execution::ExecPoint;
use super::session::SessionState;
use crate::config::{NS_PER_S, Nanos, Step};
use crate::cpu::ProcId;
use crate::msg::{EnqKind, LockMode, Msg, ResName};
use crate::px::rows::{Final, output_width};
use crate::px::{
    Batch, DegreePolicy, ExecId, PxMsg, PxQuery, PxQueryRow, PxResult, PxSessionRow, QueryRef,
    SlaveId,
};
use crate::stats::{Stat, Wait};
use crate::types::InstId;
use alloc::{Ask, Decision, Offer, decide};
use slave::{Host, Role, Worker};

/// The PS enqueue every allocation of slaves takes.
const PS: ResName = ResName {
    kind: EnqKind::Ps,
    id: 0,
};

/// What the optimizer assumes one process reads per second when the I/O
/// system has not been calibrated (Oracle 11.2: 200 MB/s), for automatic DOP.
const SERIAL_READ_BYTES_PER_S: u64 = 200 << 20;

/// A PX server process of this instance.
#[derive(Debug)]
struct Server {
    proc: ProcId,
    /// The worker it runs for a statement, while busy.
    worker: Option<usize>,
    /// Being started for this execution (its process start is a CPU step).
    starting: Option<ExecId>,
}

/// An execution this instance runs slaves for.
#[derive(Debug)]
struct Hosted {
    query: PxQuery,
    qc_sid: u32,
    requested: u32,
    dop: u32,
    placement: Vec<InstId>,
    workers: Vec<usize>,
    starting: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QcState {
    /// Taking the PS enqueue.
    Lock,
    /// Waiting for the probes' answers.
    Probing,
    /// In the statement queue.
    Queued,
    /// Waiting for the slaves to join.
    Joining,
    /// Merging what the last server set sends.
    Running,
    /// Executing the statement alone.
    Serial,
}

/// A statement this instance's session coordinates.
#[derive(Debug)]
pub(super) struct Qc {
    exec: ExecId,
    query: PxQuery,
    qref: QueryRef,
    st: QcState,
    started: Nanos,
    queued_since: Option<Nanos>,
    queued_ns: Nanos,
    offers: Vec<Offer>,
    pending: usize,
    requested: u32,
    dop: u32,
    placement: Vec<InstId>,
    inbox: VecDeque<(Box<Batch>, bool)>,
    fin: Final,
    eofs: u32,
    rows: u64,
    recv_remote: u64,
    serial_worker: Option<usize>,
}

/// Parallel execution state of an instance.
#[derive(Debug, Default)]
pub(super) struct PxState {
    servers: Vec<Server>,
    /// Servers in use (starting or running a worker).
    busy: u32,
    busy_high: u32,
    workers: Vec<Option<Worker>>,
    free_slots: Vec<usize>,
    by_slave: FxHashMap<(ExecId, SlaveId), usize>,
    hosted: FxHashMap<ExecId, Hosted>,
    qcs: FxHashMap<u32, Qc>,
    qc_by_serial: FxHashMap<u32, u32>,
    /// Sessions whose statements wait in the statement queue, first come first.
    queue: VecDeque<u32>,
    /// Instances that probed here since servers were last freed (ascending).
    watchers: Vec<InstId>,
    /// Workers with something to do.
    kick: VecDeque<usize>,
    next_serial: u32,
    /// Servers were freed while the head of the queue was not waiting (it was
    /// probing): if it decides to queue on what it saw, it tries again at once.
    wake_pending: bool,
    results: Option<Vec<PxResult>>,
}

impl PxState {
    /// Do workers have something to do (the session loop runs them)?
    pub(super) fn has_kicks(&self) -> bool {
        !self.kick.is_empty()
    }
}

impl Instance {
    // ----- the coordinator ------------------------------------------------------------------

    /// Drive session `sid`'s parallel statement. True when the session can go on at once.
    pub(super) fn px_qc_step(&mut self, sid: u32, qref: QueryRef) -> bool {
        if !self.px.qcs.contains_key(&sid) {
            let Some(query) = self.px_query(qref) else {
                self.error(format!(
                    "session {sid} runs a parallel query that is not in its workload"
                ));
                self.fg.sessions_mut().go_to(sid, ExecPoint::None);
                return true;
            };
            self.px.next_serial += 1;
            let exec = ExecId {
                qc: self.id,
                serial: self.px.next_serial,
            };
            let plan = query.plan;
            self.px.qc_by_serial.insert(exec.serial, sid);
            self.px.qcs.insert(
                sid,
                Qc {
                    exec,
                    query,
                    qref,
                    st: QcState::Lock,
                    started: self.k.now(),
                    queued_since: None,
                    queued_ns: 0,
                    offers: Vec::new(),
                    pending: 0,
                    requested: 1,
                    dop: 1,
                    placement: Vec::new(),
                    inbox: VecDeque::new(),
                    fin: Final::new(plan, 1),
                    eofs: 0,
                    rows: 0,
                    recv_remote: 0,
                    serial_worker: None,
                },
            );
        }
        let st = self.px.qcs.get(&sid).map(|q| q.st);
        if st == Some(QcState::Lock) {
            if !self.enq_get(sid, PS, LockMode::X, Wait::EnqPsContention) {
                return false;
            }
            self.px_probe(sid);
        }
        false
    }

    /// The statement a workload step declares.
    pub(super) fn px_query(&self, r: QueryRef) -> Option<PxQuery> {
        let step = self
            .fg
            .workload(r.workload as usize)?
            .transactions
            .get(r.txn as usize)?
            .steps
            .get(r.step as usize)?;
        match step {
            Step::ParallelQuery(q) => Some((**q).clone()),
            _ => None,
        }
    }

    /// What this instance offers a QC.
    fn px_offer(&self, group: &str) -> Offer {
        let p = &self.k.params().px;
        let cpu = self.k.params().cpu_count;
        let max = p.max_servers(cpu);
        let target = p.servers_target(cpu);
        Offer {
            inst: self.id,
            member: p.in_group(group),
            cpu_dop: p.cpu_dop(cpu),
            free: max.saturating_sub(self.px.busy),
            room: target.saturating_sub(self.px.busy),
            target,
            // Sessions are at most SESSIONS_PER_INSTANCE_MAX (60,000); a load
            // figure saturates rather than wraps anyway.
            load: self
                .px
                .busy
                .saturating_add(u32::try_from(self.active_sessions()).unwrap_or(u32::MAX)),
        }
    }

    fn px_probe(&mut self, sid: u32) {
        let force_local = self.k.params().px.force_local;
        let group = self.k.params().px.instance_group.clone();
        let mut local = self.px_offer(&group);
        if force_local {
            local.member = true;
        }
        let n = self.k.instance_count();
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        qc.offers = vec![local];
        qc.st = QcState::Probing;
        let exec = qc.exec;
        let others: Vec<InstId> = if force_local {
            Vec::new()
        } else {
            (0..n).map(InstId).filter(|&i| i != self.id).collect()
        };
        qc.pending = others.len();
        if others.is_empty() {
            self.px_decide(sid);
            return;
        }
        self.begin_session_wait(sid, Wait::EnqPsContention, SessionState::WaitPx);
        for i in others {
            self.px_send(
                i,
                PxMsg::Probe {
                    exec,
                    group: group.clone(),
                },
            );
        }
    }

    pub(super) fn px_send(&mut self, to: InstId, m: PxMsg) {
        self.k.incr(Stat::PxRemoteMessagesSent);
        self.send(to, Msg::Px(m));
    }

    fn px_decide(&mut self, sid: u32) {
        let Some(qc) = self.px.qcs.get(&sid) else {
            return;
        };
        let p = &self.k.params().px;
        let q = &qc.query;
        let bytes: u64 = q
            .tables
            .iter()
            .filter_map(|&t| self.k.layout().tables.get(t))
            .map(|t| u64::from(t.initial_blocks) * u64::from(self.k.params().db_block_size))
            .sum();
        let ask = Ask {
            sets: q.plan.sets(),
            degree: q.degree,
            instances: q.instances,
            policy: p.degree_policy,
            degree_limit: p.degree_limit(self.k.params().cpu_count),
            threshold: p.min_time_threshold(),
            est_serial: (u128::from(bytes) * u128::from(NS_PER_S)
                / u128::from(SERIAL_READ_BYTES_PER_S)) as Nanos,
        };
        let mut offers = qc.offers.clone();
        offers.sort_by_key(|o| o.inst);
        match decide(&ask, &offers) {
            Decision::Queue { requested } => {
                self.enq_release(PS, None);
                if std::mem::take(&mut self.px.wake_pending) {
                    // What the probes saw is already out of date: look again.
                    if let Some(qc) = self.px.qcs.get_mut(&sid) {
                        qc.st = QcState::Lock;
                        qc.requested = requested;
                    }
                    if !self.px.queue.contains(&sid) {
                        self.px.queue.push_back(sid);
                        self.k.incr(Stat::PxStatementsQueued);
                    }
                    self.resume(sid);
                    return;
                }
                let now = self.k.now();
                if let Some(qc) = self.px.qcs.get_mut(&sid) {
                    qc.st = QcState::Queued;
                    qc.requested = requested;
                    qc.queued_since = Some(now);
                }
                if !self.px.queue.contains(&sid) {
                    self.px.queue.push_back(sid);
                    self.k.incr(Stat::PxStatementsQueued);
                }
                self.begin_session_wait(sid, Wait::ResmgrPqQueued, SessionState::WaitPx);
            }
            Decision::Serial { requested } => {
                self.enq_release(PS, None);
                self.px_admitted(sid);
                self.px_run_serial(sid, requested);
            }
            Decision::Parallel {
                requested,
                dop,
                placement,
            } => {
                self.px_admitted(sid);
                self.px_start(sid, requested, dop, placement);
            }
        }
    }

    /// The statement leaves the queue; the next one may try its luck.
    fn px_admitted(&mut self, sid: u32) {
        let was_head = self.px.queue.front() == Some(&sid);
        self.px.queue.retain(|&s| s != sid);
        if was_head {
            self.px_wake_queue();
        }
    }

    /// Let the statement at the head of the queue try again.
    pub(super) fn px_wake_queue(&mut self) {
        let Some(&sid) = self.px.queue.front() else {
            return;
        };
        let now = self.k.now();
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        if qc.st != QcState::Queued {
            self.px.wake_pending = true;
            return;
        }
        qc.st = QcState::Lock;
        if let Some(t) = qc.queued_since.take() {
            qc.queued_ns += now - t;
        }
        self.end_session_wait(sid);
    }

    fn px_start(&mut self, sid: u32, requested: u32, dop: u32, placement: Vec<InstId>) {
        let mut insts: Vec<InstId> = placement.clone();
        insts.sort();
        insts.dedup();
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        qc.st = QcState::Joining;
        qc.requested = requested;
        qc.dop = dop;
        qc.placement = placement.clone();
        qc.pending = insts.len();
        qc.fin = Final::new(qc.query.plan, dop as usize);
        let (exec, qref) = (qc.exec, qc.qref);
        self.begin_session_wait(sid, Wait::PxDeqJoinAck, SessionState::WaitPx);
        for i in insts {
            if i == self.id {
                self.px_host_start(exec, sid, qref, requested, dop, placement.clone());
            } else {
                self.px_send(
                    i,
                    PxMsg::Start {
                        exec,
                        qc_sid: sid,
                        query: qref,
                        requested,
                        dop,
                        placement: placement.clone(),
                    },
                );
            }
        }
    }

    pub(super) fn px_qc_of(&self, exec: ExecId) -> Option<u32> {
        (exec.qc == self.id)
            .then(|| self.px.qc_by_serial.get(&exec.serial).copied())
            .flatten()
    }

    /// An instance's slaves joined.
    pub(super) fn px_qc_joined(&mut self, exec: ExecId) {
        let Some(sid) = self.px_qc_of(exec) else {
            self.error(format!("join for unknown execution {exec:?}"));
            return;
        };
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        if qc.st != QcState::Joining {
            return;
        }
        qc.pending = qc.pending.saturating_sub(1);
        if qc.pending > 0 {
            return;
        }
        qc.st = QcState::Running;
        let mut insts = qc.placement.clone();
        insts.sort();
        insts.dedup();
        self.end_wait(sid, None);
        self.enq_release(PS, None);
        self.begin_session_wait(sid, Wait::PxDeqExecuteReply, SessionState::WaitPx);
        for i in insts {
            if i == self.id {
                self.px_host_execute(exec);
            } else {
                self.px_send(i, PxMsg::Execute { exec });
            }
        }
    }

    /// A buffer for the QC arrived (from this instance or another).
    pub(super) fn px_qc_receive(&mut self, batch: Box<Batch>, remote: bool) {
        let Some(sid) = self.px_qc_of(batch.exec) else {
            self.error(format!(
                "table-queue buffer for unknown execution {:?}",
                batch.exec
            ));
            return;
        };
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        let width = output_width(qc.query.plan);
        if qc.st != QcState::Running
            || !batch.values.len().is_multiple_of(width)
            || u32::from(batch.from.idx) >= qc.dop
        {
            self.error(format!(
                "bad table-queue buffer for the QC of {:?} from {:?}",
                batch.exec, batch.from
            ));
            return;
        }
        if remote && !batch.values.is_empty() {
            qc.recv_remote += u64::from(batch.bytes);
        }
        qc.inbox.push_back((batch, remote));
        if self.fg.sessions().session(sid).state() == SessionState::WaitPx {
            self.px_qc_next(sid);
        }
    }

    /// Merge the next buffer, or finish, or wait.
    fn px_qc_next(&mut self, sid: u32) {
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        let Some((batch, remote)) = qc.inbox.pop_front() else {
            if qc.eofs >= qc.dop {
                self.px_qc_finish(sid);
            } else if self.fg.sessions().session(sid).state() != SessionState::WaitPx {
                self.begin_session_wait(sid, Wait::PxDeqExecuteReply, SessionState::WaitPx);
            }
            return;
        };
        let rows = qc.fin.apply(usize::from(batch.from.idx), &batch.values);
        qc.rows += rows;
        if batch.eof {
            qc.eofs += 1;
        }
        if self.fg.sessions().session(sid).state() == SessionState::WaitPx {
            self.end_wait(sid, None);
        }
        let msg = if remote {
            self.k.costs().px_message_remote
        } else {
            self.k.costs().px_message_local
        };
        let cpu = rows * self.k.costs().px_row_receive + msg;
        let proc = self.fg.sessions_mut().session_mut(sid).run_px_step();
        self.cpu(proc, cpu);
    }

    /// The QC session's CPU step ended (merging a buffer, or its serial work).
    pub(super) fn px_qc_cpu_done(&mut self, sid: u32) {
        let serial = self.px.qcs.get(&sid).and_then(|q| q.serial_worker);
        match serial {
            Some(w) => self.px_worker_cpu_done(w),
            None => self.px_qc_next(sid),
        }
    }

    fn px_run_serial(&mut self, sid: u32, requested: u32) {
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        qc.st = QcState::Serial;
        qc.requested = requested;
        qc.dop = 1;
        qc.placement = vec![self.id];
        let (exec, query) = (qc.exec, qc.query.clone());
        let proc = self.fg.sessions().session(sid).proc();
        self.px.hosted.insert(
            exec,
            Hosted {
                query: query.clone(),
                qc_sid: sid,
                requested,
                dop: 1,
                placement: vec![self.id],
                workers: Vec::new(),
                starting: 0,
            },
        );
        let me = SlaveId { set: 0, idx: 0 };
        let w = self.px_add_worker(Worker::new(
            exec,
            me,
            Host::Qc(sid),
            proc,
            Role::Serial,
            &query,
            1,
        ));
        if let Some(h) = self.px.hosted.get_mut(&exec) {
            h.workers.push(w);
        }
        if let Some(qc) = self.px.qcs.get_mut(&sid) {
            qc.serial_worker = Some(w);
        }
        self.px_worker_start(w);
    }

    /// The serial execution finished: its result is the QC's.
    pub(super) fn px_qc_serial_done(&mut self, sid: u32, fin: Final, rows: u64) {
        if let Some(qc) = self.px.qcs.get_mut(&sid) {
            qc.fin = fin;
            qc.rows = rows;
        }
        self.px_qc_finish(sid);
    }

    fn px_qc_finish(&mut self, sid: u32) {
        let Some(qc) = self.px.qcs.remove(&sid) else {
            return;
        };
        self.px.qc_by_serial.remove(&qc.exec.serial);
        let now = self.k.now();
        let elapsed = now - qc.started;
        let result = qc.fin.result();
        let mut per_inst: Vec<(u8, u32)> = Vec::new();
        if qc.serial_worker.is_none() {
            for i in &qc.placement {
                match per_inst.iter_mut().find(|(n, _)| *n == i.number()) {
                    Some((_, c)) => *c += 1,
                    None => per_inst.push((i.number(), 1)),
                }
            }
            per_inst.sort();
        }
        // v$sysstat's parallel-operation counts.
        if qc.serial_worker.is_some() {
            if qc.requested > 1 {
                self.k.incr(Stat::ParallelOpsDowngradedToSerial);
            }
        } else {
            self.k.incr(Stat::QueriesParallelized);
            self.k.incr(Stat::DfoTreesParallelized);
            let pct = 100 * u64::from(qc.requested - qc.dop.min(qc.requested))
                / u64::from(qc.requested.max(1));
            self.k.incr(match pct {
                0 => Stat::ParallelOpsNotDowngraded,
                1..=24 => Stat::ParallelOpsDowngraded1To25,
                25..=49 => Stat::ParallelOpsDowngraded25To50,
                50..=74 => Stat::ParallelOpsDowngraded50To75,
                _ => Stat::ParallelOpsDowngraded75To99,
            });
        }
        self.k.incr(Stat::PxStatementsCompleted);
        self.k.add(Stat::PxStatementElapsedTime, elapsed);
        let sets = if qc.serial_worker.is_some() {
            0
        } else {
            qc.query.plan.sets()
        };
        self.k.stats_mut().px.queries.push(PxQueryRow {
            qc_inst: self.id.number(),
            qc_sid: sid,
            exec: qc.exec.serial,
            query: qc.query.name.clone(),
            plan: qc.query.plan.name(),
            requested_dop: qc.requested,
            dop: qc.dop,
            sets,
            slaves: per_inst.clone(),
            queued_ns: qc.queued_ns,
            elapsed_ns: elapsed,
            result_rows: result.len() as u64,
            leaves: qc.fin.leaves(),
        });
        self.k.stats_mut().px.sessions.push(PxSessionRow {
            qc_inst: self.id.number(),
            qc_sid: sid,
            exec: qc.exec.serial,
            query: qc.query.name.clone(),
            inst: self.id.number(),
            name: "QC".into(),
            set: 0,
            requested_dop: qc.requested,
            dop: qc.dop,
            rows: qc.rows,
            bytes_sent_remote: 0,
            bytes_recv_remote: qc.recv_remote,
            bytes_sent_local: 0,
        });
        if let Some(r) = self.px.results.as_mut() {
            r.push(PxResult {
                query: qc.query.name.clone(),
                dop: qc.dop,
                instances: per_inst.iter().map(|(i, _)| *i).collect(),
                rows: result,
            });
        }
        // Free the servers everywhere (the serial execution "hosts" itself).
        let mut insts = qc.placement.clone();
        insts.sort();
        insts.dedup();
        for i in insts {
            if i == self.id {
                self.px_host_release(qc.exec);
            } else {
                self.px_send(i, PxMsg::Release { exec: qc.exec });
            }
        }
        self.fg.sessions_mut().go_to(sid, ExecPoint::None);
        if self.fg.sessions().session(sid).state() == SessionState::WaitPx {
            self.end_wait(sid, None);
        }
        self.resume(sid);
    }

    // ----- messages -------------------------------------------------------------------------

    pub(super) fn on_px(&mut self, from: InstId, m: PxMsg) {
        if !matches!(m, PxMsg::Batch(_)) {
            self.k.incr(Stat::PxRemoteMessagesRecv);
        }
        match m {
            PxMsg::Probe { exec, group } => {
                if let Err(i) = self.px.watchers.binary_search(&from) {
                    self.px.watchers.insert(i, from);
                }
                let o = self.px_offer(&group);
                self.px_send(
                    from,
                    PxMsg::ProbeReply {
                        exec,
                        member: o.member,
                        cpu_dop: o.cpu_dop,
                        free: o.free,
                        room: o.room,
                        target: o.target,
                        load: o.load,
                    },
                );
            }
            PxMsg::ProbeReply {
                exec,
                member,
                cpu_dop,
                free,
                room,
                target,
                load,
            } => {
                let Some(sid) = self.px_qc_of(exec) else {
                    self.error(format!("probe reply for unknown {exec:?}"));
                    return;
                };
                let Some(qc) = self.px.qcs.get_mut(&sid) else {
                    return;
                };
                if qc.st != QcState::Probing || qc.offers.iter().any(|o| o.inst == from) {
                    self.error(format!("unexpected probe reply from {from}"));
                    return;
                }
                qc.offers.push(Offer {
                    inst: from,
                    member,
                    cpu_dop,
                    free,
                    room,
                    target,
                    load,
                });
                qc.pending = qc.pending.saturating_sub(1);
                if qc.pending == 0 {
                    self.end_wait(sid, None);
                    self.px_decide(sid);
                }
            }
            PxMsg::Start {
                exec,
                qc_sid,
                query,
                requested,
                dop,
                placement,
            } => {
                if exec.qc != from {
                    self.error(format!("{from} started another QC's {exec:?}"));
                    return;
                }
                self.px_host_start(exec, qc_sid, query, requested, dop, placement);
            }
            PxMsg::Joined { exec } => self.px_qc_joined(exec),
            PxMsg::Execute { exec } => self.px_host_execute(exec),
            PxMsg::Batch(b) => self.px_receive(b, true),
            PxMsg::Credit {
                exec,
                producer,
                consumer,
            } => self.px_credit(exec, producer, consumer),
            PxMsg::Release { exec } => self.px_host_release(exec),
            PxMsg::Freed => self.px_wake_queue(),
        }
    }

    // ----- for drivers and tests --------------------------------------------------------------

    /// Keep every parallel statement's result for [`Instance::take_px_results`].
    pub fn log_px_results(&mut self, on: bool) {
        self.px.results = on.then(Vec::new);
    }

    /// Results of the statements this instance coordinated since the last call.
    pub fn take_px_results(&mut self) -> Vec<PxResult> {
        self.px
            .results
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// PX servers in use now, and the most ever in use at once.
    pub fn px_servers_busy(&self) -> (u32, u32) {
        (self.px.busy, self.px.busy_high)
    }

    /// Whether any parallel statement is coordinated or hosted here.
    pub fn px_active(&self) -> bool {
        !self.px.qcs.is_empty() || !self.px.hosted.is_empty()
    }

    pub(super) fn px_policy(&self) -> DegreePolicy {
        self.k.params().px.degree_policy
    }
}
