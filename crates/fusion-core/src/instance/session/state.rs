//! A session's state, what it has outstanding, and what a visit comes to:
//! values the rest of the instance reads and the dispatcher applies. The
//! table that keeps them, `Sessions`, is in mod.rs beside `Session`.

use super::super::cache::BufId;
use super::super::execution::ExecPoint;
use crate::block::{CrCopy, CrError};
use crate::config::Nanos;
use crate::msg::ReqKind;
use crate::types::{Scn, Xid};

/// What a session is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum SessionState {
    /// Its workload is not running (or it finished).
    Idle,
    Think,
    Ready,
    Cpu(AfterCpu),
    /// Waiting on a block (its own request, or behind another session or a pin).
    WaitBlock,
    /// Waiting for a transaction: a row lock, or a lookup of its state.
    WaitTx,
    /// `log file sync`.
    WaitCommit,
    /// A global enqueue (`row cache lock`, `DFS lock handle`, `enq: SQ - contention`).
    WaitEnq,
    /// Coordinating a parallel statement (waiting for its slaves or running it serially).
    WaitPx,
}

/// What a session's CPU step was for: what to do when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum AfterCpu {
    /// The execute call's overhead.
    Exec,
    /// Visiting a pinned buffer.
    Visit(BufId),
    Commit,
    /// An index block split over several pinned buffers.
    Split,
    /// Parallel execution work of the QC (merging a buffer, or running serially).
    Px,
    /// Writes to the session's private memory (`memory_writes`).
    Memory {
        ops: u32,
    },
}

/// A request this instance has outstanding for a block.
#[derive(Clone, Copy, Debug)]
pub(in crate::instance) struct PendingRequest {
    pub id: u64,
    /// The session that asked (others wait behind it on the block).
    pub owner: u32,
    pub sent_at: Nanos,
    /// For a full scan: a granted read is `db file scattered read`.
    pub scan: bool,
    /// What was asked: a reconfiguration asks the new master again.
    pub kind: crate::msg::ReqKind,
}

/// A question about another instance's transaction, until it is answered.
#[derive(Clone, Copy, Debug)]
pub(in crate::instance) struct Lookup {
    pub sid: u32,
    /// Our SCN when we asked.
    pub asked_at: Scn,
    pub xid: Xid,
    /// A row lock wait (`TxWait`: answered when it ends), else a state query.
    pub wait: bool,
}

/// What trying to pin a block for a visit gave.
pub(in crate::instance) enum Acquired {
    /// The buffer is pinned; the visit costs `cpu_ns` for the get and
    /// `extra_ns` for work on top (building a CR copy).
    Pinned {
        buf: BufId,
        extra_ns: Nanos,
        cpu_ns: Nanos,
    },
    /// The session waits (for its request, behind another session, or for an answer).
    Waiting,
    /// Snapshot too old: the statement restarts with a new snapshot.
    Restart,
    /// Nobody here has it or asked for it: the session asks its master
    /// (the dispatcher sends the request, or routes it here).
    Ask { kind: ReqKind, scan: bool },
    /// A CR copy was built here (or could not be: a transaction's state is
    /// unknown, or the snapshot is too old): the dispatcher frees a buffer
    /// for it, or asks the transactions' owners.
    Built(Result<CrCopy, CrError>),
}

/// What a visit that changes a row or an index piece came to.
pub(in crate::instance) enum Changed {
    /// Done (or nothing to change): the execution goes on at this point.
    Next(ExecPoint),
    /// Another transaction holds it: the session waits for `0` to end
    /// (the caller releases the pin first).
    Locked(Xid),
}
