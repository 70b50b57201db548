//! Messages of parallel execution between instances: slave allocation (the
//! QC's probes under the PS enqueue), starting and releasing server sets,
//! and table-queue buffers with their flow-control credits.

use crate::types::InstId;

/// One execution of a parallel statement: the QC's instance and a number it
/// gives each execution it coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExecId {
    pub qc: InstId,
    pub serial: u32,
}

/// A slave of an execution: its server set (0 = the first, printed 1) and
/// its number inside the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlaveId {
    pub set: u8,
    pub idx: u16,
}

/// Where a table-queue buffer goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    Slave(SlaveId),
    Qc,
}

/// The workload step that declares the statement; every instance has the
/// same workloads, so this names the statement without sending it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryRef {
    pub workload: u32,
    pub txn: u32,
    pub step: u32,
}

/// A table-queue buffer: rows of one side (table) of the plan, from a slave
/// to a slave or to the QC. `eof` marks the sender's last buffer of that
/// side; `bytes` is what it occupies on the wire (a whole
/// `parallel_execution_message_size` buffer when it holds rows).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub exec: ExecId,
    pub from: SlaveId,
    pub to: Dest,
    pub side: u8,
    pub values: Vec<i64>,
    pub eof: bool,
    pub bytes: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PxMsg {
    /// QC to an instance (under the PS enqueue): are you in `group`, and how
    /// many servers could you give? Registers the QC's instance for a `Freed`.
    Probe {
        exec: ExecId,
        group: String,
    },
    ProbeReply {
        exec: ExecId,
        member: bool,
        /// `cpu_count x parallel_threads_per_cpu` there.
        cpu_dop: u32,
        /// Servers below `parallel_max_servers` not in use.
        free: u32,
        /// Servers below `parallel_servers_target` not in use.
        room: u32,
        /// `parallel_servers_target` there.
        target: u32,
        /// Busy servers and active sessions: how loaded the instance is.
        load: u32,
    },
    /// QC to an instance: start the slaves `placement` puts there
    /// (`placement[set * dop + idx]` is the instance of each slave).
    Start {
        exec: ExecId,
        qc_sid: u32,
        query: QueryRef,
        requested: u32,
        dop: u32,
        placement: Vec<InstId>,
    },
    /// The instance's slaves are ready.
    Joined {
        exec: ExecId,
    },
    /// Every slave is ready: begin.
    Execute {
        exec: ExecId,
    },
    Batch(Box<Batch>),
    /// A consumer processed a buffer: the producer may send it another.
    Credit {
        exec: ExecId,
        producer: u16,
        consumer: u16,
    },
    /// The statement is over: free its servers.
    Release {
        exec: ExecId,
    },
    /// Servers were freed here: a queued statement may try again.
    Freed,
}

impl PxMsg {
    /// Bytes on the wire: a buffer with rows is a whole message buffer; the
    /// rest are control messages of the interconnect's message size.
    pub fn wire_bytes(&self, message_bytes: u32) -> u64 {
        match self {
            PxMsg::Batch(b) if !b.values.is_empty() => u64::from(b.bytes),
            _ => u64::from(message_bytes),
        }
    }
}
