//! A PX slave at work (or the QC running a statement serially): producers
//! read their granules (`direct path read`, or buffered reads under
//! `parallel_degree_policy = AUTO`, which is in-memory parallel execution),
//! project the rows and put them into one table-queue buffer per consumer;
//! a full buffer is sent when the consumer has a credit for it (else `PX Deq
//! Credit: send blkd`). Consumers take buffers in arrival order (waiting on
//! `PX Deq: Table Q Normal`), hold the probe side of a join until the build
//! side is complete, and send their output to the QC when every producer has
//! sent its last buffer. A buffer to a process of the same instance costs CPU;
//! one to another instance also crosses the interconnect as a message of
//! `parallel_execution_message_size` bytes.
//!
//! The worker's state is here; its steps, `PxState`'s and `PxStep`'s
//! methods, are in slave/route.rs (below this file, so that it sees the
//! worker's fields and px/mod.rs names nothing that names it back).

use std::collections::VecDeque;

mod route;

use crate::block::Block;
use crate::config::Nanos;
use crate::cpu::ProcId;
use crate::px::rows::{Final, Stage};
use crate::px::{Batch, ExecId, PxPlan, PxQuery, SlaveId};
use crate::stats::Wait;
use crate::types::InstId;

/// Buffers a producer may have outstanding to one consumer before it waits
/// for a credit.
pub const TQ_CREDITS: u32 = 3;
/// Block-range granules a scan is cut into, per slave (Oracle's
/// `_px_min_granules_per_slave`).
pub const GRANULES_PER_SLAVE: u32 = 13;
/// Direct path reads a slave keeps in flight (they are asynchronous);
/// buffered reads (in-memory parallel execution) are one at a time.
pub const DIRECT_READ_DEPTH: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Host {
    /// A PX server (its index in the pool).
    Server(usize),
    /// The QC session itself (serial execution).
    Qc(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// Scans; with two sets sends rows to the consumers, with one set
    /// aggregates and sends the QC its partial result.
    Producer,
    Consumer,
    /// Everything, alone, in the QC.
    Serial,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WorkerState {
    /// Started, waiting for `Execute`.
    Idle,
    /// Has something to do (or to find out).
    Ready,
    Reading,
    Cpu,
    Done,
}

/// What to do when the current CPU step ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    Continue,
    /// Return a credit to this producer (on that instance).
    Credit(u16, InstId),
    /// The serial execution is complete.
    SerialDone,
}

#[derive(Clone, Copy, Debug)]
struct Read {
    side: u8,
    first: u32,
    count: u32,
}

#[derive(Clone, Debug, Default)]
struct TqBuf {
    values: Vec<i64>,
    bytes: u32,
}

/// What a worker moved: rows read or received, and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Traffic {
    pub rows: u64,
    pub sent_remote: u64,
    pub recv_remote: u64,
    pub sent_local: u64,
}

#[derive(Debug)]
pub(super) struct Worker {
    exec: ExecId,
    me: SlaveId,
    host: Host,
    proc: ProcId,
    role: Role,
    plan: PxPlan,
    dop: u32,
    st: WorkerState,
    wait: Option<(Wait, Nanos)>,
    after: After,
    /// Reads not issued yet, in scan order.
    reads: VecDeque<Read>,
    /// Reads issued, in scan order, with their blocks once they arrived.
    inflight: VecDeque<(u64, Read, Option<Vec<Block>>)>,
    next_read: u64,
    nsides: u8,
    cur_side: u8,
    bufs: Vec<TqBuf>,
    outq: VecDeque<Batch>,
    credits: Vec<u32>,
    rr: usize,
    stage: Stage,
    inbox: VecDeque<(Box<Batch>, bool)>,
    parked: VecDeque<(Box<Batch>, bool)>,
    eofs: [u32; 2],
    finished: bool,
    /// The serial execution's merged result, until the QC takes it.
    fin: Option<Final>,
    /// Rows read (producers) or received (consumers).
    rows: u64,
    sent_remote: u64,
    recv_remote: u64,
    sent_local: u64,
    /// Time not spent in idle waits (DB time).
    db_ns: u64,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        exec: ExecId,
        me: SlaveId,
        host: Host,
        proc: ProcId,
        role: Role,
        q: &PxQuery,
        dop: u32,
    ) -> Worker {
        let consumers = if role == Role::Producer && q.plan.sets() == 2 {
            dop as usize
        } else {
            1
        };
        Worker {
            exec,
            me,
            host,
            proc,
            role,
            plan: q.plan,
            dop,
            st: WorkerState::Idle,
            wait: None,
            after: After::Continue,
            reads: VecDeque::new(),
            inflight: VecDeque::new(),
            next_read: 0,
            // A plan reads one or two tables (`PxPlan::tables`; the loader
            // gives every query as many).
            nsides: u8::try_from(q.tables.len()).expect("a plan reads at most two tables"),
            cur_side: 0,
            bufs: vec![TqBuf::default(); consumers],
            outq: VecDeque::new(),
            credits: vec![TQ_CREDITS; consumers],
            rr: me.idx as usize,
            stage: Stage::new(q),
            inbox: VecDeque::new(),
            parked: VecDeque::new(),
            eofs: [0; 2],
            finished: false,
            fin: None,
            rows: 0,
            sent_remote: 0,
            recv_remote: 0,
            sent_local: 0,
            db_ns: 0,
        }
    }

    /// The slave this worker is: (execution, slave number).
    pub(super) fn key(&self) -> (ExecId, SlaveId) {
        (self.exec, self.me)
    }

    /// Where it runs.
    pub(super) fn host(&self) -> Host {
        self.host
    }

    /// The event it waits on and since when, if it waits.
    pub(super) fn wait(&self) -> Option<(Wait, Nanos)> {
        self.wait
    }

    /// A CPU step of `ns` ended: DB time.
    pub(super) fn add_db_ns(&mut self, ns: Nanos) {
        self.db_ns += ns;
    }

    /// Its DB time (time not spent in idle waits).
    pub(super) fn db_ns(&self) -> Nanos {
        self.db_ns
    }

    /// What it moved, for its `v$px_session` row.
    pub(super) fn traffic(&self) -> Traffic {
        Traffic {
            rows: self.rows,
            sent_remote: self.sent_remote,
            recv_remote: self.recv_remote,
            sent_local: self.sent_local,
        }
    }

    /// Does this producer send rows to a consumer set (two-set plans)?
    fn feeds_consumers(&self) -> bool {
        self.role == Role::Producer && self.plan.sets() == 2
    }
}
