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
//!
//! The work is done by a [`PxStep`]: parallel execution's state with the
//! kernel, membership's `Net`, the foregrounds (the QC is a session) and the
//! observer. What it needs of the foregrounds that only the instance can do
//! yet (a QC session's waits, making it ready, the PS enqueue) it returns as
//! [`PxEffect`]s, in the order the work happens, and the dispatcher applies
//! them. Its own sends, reads and trace records go out at once; a debug
//! assertion checks that none overtakes an effect not applied yet on the
//! same channel (the outbox, the trace, a session's state). Where one
//! would, the step ends with a continuation effect ([`PxEffect::Continue`],
//! [`PxEffect::Execute`]) and the dispatcher runs the rest after.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

mod alloc;
mod effect;
mod host;
mod slave;
#[cfg(test)]
mod tests;

use super::execution::ExecPoint;
use super::kernel::Kernel;
use super::membership::Net;
use super::observe::Observer;
use super::session::{Foregrounds, Session, SessionState};
use crate::config::{NS_PER_S, Nanos, Step};
use crate::cpu::ProcId;
use crate::msg::{EnqKind, Msg, ResName};
use crate::px::rows::{Final, output_width};
use crate::px::{
    Batch, ExecId, PxMsg, PxQuery, PxQueryRow, PxResult, PxSessionRow, QueryRef, SlaveId,
};
use crate::stats::{Stat, Wait};
use crate::types::InstId;
use alloc::{Ask, Decision, Offer, decide};
pub(in crate::instance) use effect::PxEffect;
use slave::{Host, Role, Worker};

/// The PS enqueue every allocation of slaves takes (in X mode, waited for
/// as `enq: PS - contention`).
pub(in crate::instance) const PS: ResName = ResName {
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
struct Qc {
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
    #[inline(always)]
    pub fn has_kicks(&self) -> bool {
        !self.kick.is_empty()
    }

    /// The next worker with something to do, taken off the list.
    #[inline(always)]
    pub fn next_kick(&mut self) -> Option<usize> {
        self.kick.pop_front()
    }

    /// Keep every parallel statement's result for [`PxState::take_results`].
    pub fn log_results(&mut self, on: bool) {
        self.results = on.then(Vec::new);
    }

    /// Results of the statements this instance coordinated since the last call.
    pub fn take_results(&mut self) -> Vec<PxResult> {
        self.results
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// PX servers in use now, and the most ever in use at once.
    pub fn servers_busy(&self) -> (u32, u32) {
        (self.busy, self.busy_high)
    }

    /// Whether any parallel statement is coordinated or hosted here.
    pub fn active(&self) -> bool {
        !self.qcs.is_empty() || !self.hosted.is_empty()
    }

    /// The session coordinating `exec`, when this instance (`me`) is its QC.
    fn qc_of(&self, me: InstId, exec: ExecId) -> Option<u32> {
        (exec.qc == me)
            .then(|| self.qc_by_serial.get(&exec.serial).copied())
            .flatten()
    }
}

/// How a QC session's parallel step went ([`PxStep::qc_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum QcStep {
    /// The statement is not in the workload (an error is logged): the
    /// session goes on with its next execution.
    GoOn,
    /// It takes the PS enqueue (X, `enq: PS - contention`) now, and probes
    /// ([`PxStep::probe`]) once it holds it.
    TakePs,
    /// It waits: for the probes, in the queue, for its slaves.
    Wait,
}

/// One step of parallel execution: its state with what it uses of the rest
/// of the instance, and the effects found so far (see the module comment).
pub(in crate::instance) struct PxStep<'a, 'n> {
    px: &'a mut PxState,
    k: &'a mut Kernel,
    net: Net<'n>,
    fg: &'a mut Foregrounds,
    obs: &'a mut Observer,
    effects: Vec<PxEffect>,
}

impl<'a, 'n> PxStep<'a, 'n> {
    pub fn new(
        px: &'a mut PxState,
        k: &'a mut Kernel,
        net: Net<'n>,
        fg: &'a mut Foregrounds,
        obs: &'a mut Observer,
    ) -> Self {
        PxStep {
            px,
            k,
            net,
            fg,
            obs,
            effects: Vec::new(),
        }
    }

    /// What the rest of the instance must do now, in order.
    pub fn effects(self) -> Vec<PxEffect> {
        self.effects
    }

    #[inline]
    fn effect(&mut self, e: PxEffect) {
        self.effects.push(e);
    }

    // ----- what px does itself, in order with its effects -----------------------------------

    /// Send a PX message to another instance (counted).
    fn send(&mut self, to: InstId, m: PxMsg) {
        debug_assert!(
            !self.effects.iter().any(PxEffect::may_send),
            "a PX message to {to} would overtake {:?}",
            self.effects
        );
        self.k.incr(Stat::PxRemoteMessagesSent);
        self.net.send(self.k, to, Msg::Px(m));
    }

    /// A server's wait of `took` on `event` ended now: the trace's record.
    fn trace_wait(&mut self, proc: ProcId, event: Wait, took: Nanos) {
        debug_assert!(
            !self.effects.iter().any(PxEffect::may_trace),
            "a PX server's wait would overtake {:?} in the trace",
            self.effects
        );
        self.obs.trace_wait(self.k.now(), proc, event, took);
    }

    /// What session `sid` is doing now.
    fn session_state(&self, sid: u32) -> SessionState {
        debug_assert!(
            !self.effects.iter().any(|e| e.touches(sid)),
            "session {sid} read before {:?}",
            self.effects
        );
        self.fg.sessions().session(sid).state()
    }

    /// Session `sid`, to move it between waiting and running.
    fn session_mut(&mut self, sid: u32) -> &mut Session {
        debug_assert!(
            !self.effects.iter().any(|e| e.touches(sid)),
            "session {sid} changed before {:?}",
            self.effects
        );
        self.fg.sessions_mut().session_mut(sid)
    }

    /// Sessions that are not idle (a probe's load figure).
    fn active_sessions(&self) -> usize {
        // No effect makes a session idle or thinking: no order to keep.
        self.fg.sessions().iter().filter(|s| !s.is_idle()).count()
    }

    // ----- the coordinator ------------------------------------------------------------------

    /// Drive session `sid`'s parallel statement: begun here when it is new.
    pub fn qc_step(&mut self, sid: u32, qref: QueryRef) -> QcStep {
        if !self.px.qcs.contains_key(&sid) {
            let Some(query) = self.query(qref) else {
                self.k.error(&format!(
                    "session {sid} runs a parallel query that is not in its workload"
                ));
                self.fg.sessions_mut().go_to(sid, ExecPoint::None);
                return QcStep::GoOn;
            };
            self.px.next_serial += 1;
            let exec = ExecId {
                qc: self.k.id(),
                serial: self.px.next_serial,
            };
            let plan = query.plan;
            let earlier = self.px.qc_by_serial.insert(exec.serial, sid);
            debug_assert_eq!(earlier, None, "{exec:?} numbered twice");
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
        match self.px.qcs.get(&sid).map(|q| q.st) {
            Some(QcState::Lock) => QcStep::TakePs,
            _ => QcStep::Wait,
        }
    }

    /// The statement a workload step declares.
    fn query(&self, r: QueryRef) -> Option<PxQuery> {
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
    fn offer(&self, group: &str) -> Offer {
        let p = &self.k.params().px;
        let cpu = self.k.params().cpu_count;
        let max = p.max_servers(cpu);
        let target = p.servers_target(cpu);
        Offer {
            inst: self.k.id(),
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

    /// Session `sid` holds the PS enqueue: ask every instance what it offers.
    pub fn probe(&mut self, sid: u32) {
        let force_local = self.k.params().px.force_local;
        let group = self.k.params().px.instance_group.clone();
        let mut local = self.offer(&group);
        if force_local {
            local.member = true;
        }
        let (n, me) = (self.k.instance_count(), self.k.id());
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        debug_assert_eq!(qc.st, QcState::Lock, "session {sid} probes twice");
        qc.offers = vec![local];
        qc.st = QcState::Probing;
        let exec = qc.exec;
        let others: Vec<InstId> = if force_local {
            Vec::new()
        } else {
            (0..n).map(InstId).filter(|&i| i != me).collect()
        };
        qc.pending = others.len();
        if others.is_empty() {
            self.decide(sid);
            return;
        }
        self.effect(PxEffect::BeginWait {
            sid,
            event: Wait::EnqPsContention,
        });
        for i in others {
            self.send(
                i,
                PxMsg::Probe {
                    exec,
                    group: group.clone(),
                },
            );
        }
    }

    /// Every offer is in: queue, run serially, or start the slaves.
    fn decide(&mut self, sid: u32) {
        let Some(qc) = self.px.qcs.get(&sid) else {
            return;
        };
        debug_assert_eq!(qc.st, QcState::Probing, "session {sid} decides unasked");
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
                self.effect(PxEffect::ReleasePs);
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
                    self.effect(PxEffect::Resume(sid));
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
                self.effect(PxEffect::BeginWait {
                    sid,
                    event: Wait::ResmgrPqQueued,
                });
            }
            Decision::Serial { requested } => {
                self.effect(PxEffect::ReleasePs);
                self.admitted(sid);
                self.run_serial(sid, requested);
            }
            Decision::Parallel {
                requested,
                dop,
                placement,
            } => {
                self.admitted(sid);
                self.start(sid, requested, dop, placement);
            }
        }
    }

    /// The statement leaves the queue; the next one may try its luck.
    fn admitted(&mut self, sid: u32) {
        let was_head = self.px.queue.front() == Some(&sid);
        self.px.queue.retain(|&s| s != sid);
        if was_head {
            self.wake_queue();
        }
    }

    /// Let the statement at the head of the queue try again.
    fn wake_queue(&mut self) {
        let Some(&sid) = self.px.queue.front() else {
            return;
        };
        let now = self.k.now();
        debug_assert!(
            self.px.qcs.contains_key(&sid),
            "session {sid} is queued with no statement"
        );
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
        self.effect(PxEffect::Wake(sid));
    }

    fn start(&mut self, sid: u32, requested: u32, dop: u32, placement: Vec<InstId>) {
        let mut insts: Vec<InstId> = placement.clone();
        insts.sort();
        insts.dedup();
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        debug_assert_eq!(qc.st, QcState::Probing, "session {sid} starts unasked");
        qc.st = QcState::Joining;
        qc.requested = requested;
        qc.dop = dop;
        qc.placement = placement.clone();
        qc.pending = insts.len();
        qc.fin = Final::new(qc.query.plan, dop as usize);
        let (exec, qref) = (qc.exec, qc.qref);
        self.effect(PxEffect::BeginWait {
            sid,
            event: Wait::PxDeqJoinAck,
        });
        // The slaves here join at once only when they need no new server
        // and the statement runs here alone: no `Start` follows then (the
        // sends below assert it).
        let me = self.k.id();
        for i in insts {
            if i == me {
                self.host_start(exec, sid, qref, requested, dop, placement.clone());
            } else {
                self.send(
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

    /// An instance's slaves joined.
    fn qc_joined(&mut self, exec: ExecId) {
        let Some(sid) = self.px.qc_of(self.k.id(), exec) else {
            self.k
                .error(&format!("join for unknown execution {exec:?}"));
            return;
        };
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        if qc.st != QcState::Joining {
            return;
        }
        // A peer's `Joined` counts once per instance, whatever it sends.
        qc.pending = qc.pending.saturating_sub(1);
        if qc.pending > 0 {
            return;
        }
        qc.st = QcState::Running;
        let mut insts = qc.placement.clone();
        insts.sort();
        insts.dedup();
        self.effect(PxEffect::EndWait(sid));
        self.effect(PxEffect::ReleasePs);
        self.effect(PxEffect::BeginWait {
            sid,
            event: Wait::PxDeqExecuteReply,
        });
        self.effect(PxEffect::Execute { exec, insts });
    }

    /// The slaves of `exec` start executing: here, and on the other `insts`.
    pub fn execute(&mut self, exec: ExecId, insts: &[InstId]) {
        let me = self.k.id();
        for &i in insts {
            if i == me {
                self.host_execute(exec);
            } else {
                self.send(i, PxMsg::Execute { exec });
            }
        }
    }

    /// A buffer for the QC arrived (from this instance or another).
    fn qc_receive(&mut self, batch: Box<Batch>, remote: bool) {
        let Some(sid) = self.px.qc_of(self.k.id(), batch.exec) else {
            self.k.error(&format!(
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
            self.k.error(&format!(
                "bad table-queue buffer for the QC of {:?} from {:?}",
                batch.exec, batch.from
            ));
            return;
        }
        if remote && !batch.values.is_empty() {
            qc.recv_remote += u64::from(batch.bytes);
        }
        qc.inbox.push_back((batch, remote));
        if self.session_state(sid) == SessionState::WaitPx {
            self.qc_next(sid);
        }
    }

    /// Merge the next buffer, or finish, or wait.
    fn qc_next(&mut self, sid: u32) {
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        let Some((batch, remote)) = qc.inbox.pop_front() else {
            if qc.eofs >= qc.dop {
                self.qc_finish(sid);
            } else if self.session_state(sid) != SessionState::WaitPx {
                self.effect(PxEffect::BeginWait {
                    sid,
                    event: Wait::PxDeqExecuteReply,
                });
            }
            return;
        };
        let rows = qc.fin.apply(usize::from(batch.from.idx), &batch.values);
        qc.rows += rows;
        if batch.eof {
            qc.eofs += 1;
        }
        let waited = self.session_state(sid) == SessionState::WaitPx;
        let msg = if remote {
            self.k.costs().px_message_remote_ns
        } else {
            self.k.costs().px_message_local_ns
        };
        let cpu = rows * self.k.costs().px_row_receive_ns + msg;
        let proc = self.session_mut(sid).run_px_step();
        self.k.cpu(proc, cpu);
        if waited {
            // After the CPU is asked for, before the instance did: its wait's
            // record is neither the session's state nor the CPU run queue.
            self.effect(PxEffect::EndWait(sid));
        }
    }

    /// The QC session's CPU step ended (merging a buffer, or its serial work).
    pub fn qc_cpu_done(&mut self, sid: u32) {
        let serial = self.px.qcs.get(&sid).and_then(|q| q.serial_worker);
        match serial {
            Some(w) => self.worker_cpu_done(w),
            None => self.qc_next(sid),
        }
    }

    fn run_serial(&mut self, sid: u32, requested: u32) {
        let me = self.k.id();
        let Some(qc) = self.px.qcs.get_mut(&sid) else {
            return;
        };
        debug_assert_eq!(qc.st, QcState::Probing, "session {sid} runs unasked");
        qc.st = QcState::Serial;
        qc.requested = requested;
        qc.dop = 1;
        qc.placement = vec![me];
        let (exec, query) = (qc.exec, qc.query.clone());
        // A session's process never changes: no effect to wait for.
        let proc = self.fg.sessions().session(sid).proc();
        let earlier = self.px.hosted.insert(
            exec,
            Hosted {
                query: query.clone(),
                qc_sid: sid,
                requested,
                dop: 1,
                placement: vec![me],
                workers: Vec::new(),
                starting: 0,
            },
        );
        debug_assert!(earlier.is_none(), "{exec:?} hosted twice");
        let slave = SlaveId { set: 0, idx: 0 };
        let w = self.px.add_worker(Worker::new(
            exec,
            slave,
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
        self.worker_start(w);
    }

    /// The serial execution finished: its result is the QC's.
    fn qc_serial_done(&mut self, sid: u32, fin: Final, rows: u64) {
        if let Some(qc) = self.px.qcs.get_mut(&sid) {
            debug_assert_eq!(
                qc.st,
                QcState::Serial,
                "session {sid} ran no serial execution"
            );
            qc.fin = fin;
            qc.rows = rows;
        }
        self.qc_finish(sid);
    }

    fn qc_finish(&mut self, sid: u32) {
        let Some(qc) = self.px.qcs.remove(&sid) else {
            return;
        };
        debug_assert!(
            matches!(qc.st, QcState::Running | QcState::Serial),
            "session {sid} finished a statement that was not running ({:?})",
            qc.st
        );
        let numbered = self.px.qc_by_serial.remove(&qc.exec.serial);
        debug_assert_eq!(numbered, Some(sid), "{:?} was not numbered", qc.exec);
        let me = self.k.id();
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
            qc_inst: me.number(),
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
            qc_inst: me.number(),
            qc_sid: sid,
            exec: qc.exec.serial,
            query: qc.query.name.clone(),
            inst: me.number(),
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
            if i == me {
                self.host_release(qc.exec);
            } else {
                self.send(i, PxMsg::Release { exec: qc.exec });
            }
        }
        self.fg.sessions_mut().go_to(sid, ExecPoint::None);
        self.effect(PxEffect::EndPxWait(sid));
        self.effect(PxEffect::Resume(sid));
    }

    // ----- messages -------------------------------------------------------------------------

    /// A PX message from `from`.
    pub fn on_message(&mut self, from: InstId, m: PxMsg) {
        if !matches!(m, PxMsg::Batch(_)) {
            self.k.incr(Stat::PxRemoteMessagesRecv);
        }
        match m {
            PxMsg::Probe { exec, group } => {
                if let Err(i) = self.px.watchers.binary_search(&from) {
                    self.px.watchers.insert(i, from);
                }
                let o = self.offer(&group);
                self.send(
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
                let Some(sid) = self.px.qc_of(self.k.id(), exec) else {
                    self.k.error(&format!("probe reply for unknown {exec:?}"));
                    return;
                };
                let Some(qc) = self.px.qcs.get_mut(&sid) else {
                    return;
                };
                if qc.st != QcState::Probing || qc.offers.iter().any(|o| o.inst == from) {
                    self.k.error(&format!("unexpected probe reply from {from}"));
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
                    self.effect(PxEffect::EndWait(sid));
                    self.decide(sid);
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
                    self.k
                        .error(&format!("{from} started another QC's {exec:?}"));
                    return;
                }
                self.host_start(exec, qc_sid, query, requested, dop, placement);
            }
            PxMsg::Joined { exec } => self.qc_joined(exec),
            PxMsg::Execute { exec } => self.host_execute(exec),
            PxMsg::Batch(b) => self.receive(b, true),
            PxMsg::Credit {
                exec,
                producer,
                consumer,
            } => self.credit(exec, producer, consumer),
            PxMsg::Release { exec } => self.host_release(exec),
            PxMsg::Freed => self.wake_queue(),
        }
    }
}
