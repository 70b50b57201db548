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

/// The largest degree of parallelism an execution may have: a slave's
/// number in its set is 16-bit ([`SlaveId::idx`]). A QC never asks for
/// more: every instance has at most `parallel_max_servers` servers (at most
/// 3,600, `config::px_params::SERVERS_MAX`) and a cluster at most 16
/// instances, 57,600 in all; a `Start` asking for more is refused.
pub const DOP_MAX: u32 = u16::MAX as u32;

impl SlaveId {
    /// Slave `k` of an execution's placement (`placement[set * dop + idx]`).
    /// `None` when `dop` is 0 or above [`DOP_MAX`], or `k` is beyond the
    /// two sets.
    pub fn of_placement(k: usize, dop: u32) -> Option<SlaveId> {
        if dop == 0 || dop > DOP_MAX {
            return None;
        }
        let dop = usize::try_from(dop).ok()?;
        Some(SlaveId {
            set: u8::try_from(k / dop).ok().filter(|&s| s <= 1)?,
            idx: u16::try_from(k % dop).ok()?,
        })
    }

    /// Consumer `c` of a producer's table queue, `c` below the execution's
    /// degree (at most [`DOP_MAX`], checked when the execution started).
    pub fn consumer(c: usize) -> SlaveId {
        SlaveId {
            set: 1,
            idx: u16::try_from(c).expect("a consumer's number is below the DOP, at most DOP_MAX"),
        }
    }
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

impl QueryRef {
    /// Step `step` of transaction `txn` of workload `workload` (positions in
    /// the scenario's vectors). Each position counts items of a loaded
    /// scenario, which the memory estimate (`--max-memory`) keeps far below
    /// 2^32: every step takes more than 16 bytes, so 2^32 of them would
    /// need over 64 GiB before the run began.
    pub fn at(workload: usize, txn: usize, step: usize) -> QueryRef {
        let pos =
            |p: usize| u32::try_from(p).expect("fewer than 2^32 workloads, transactions and steps");
        QueryRef {
            workload: pos(workload),
            txn: pos(txn),
            step: pos(step),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_position_is_a_set_and_a_number_in_it() {
        let at = |k, dop| SlaveId::of_placement(k, dop).map(|s| (s.set, s.idx));
        assert_eq!(at(0, 4), Some((0, 0)));
        assert_eq!(at(5, 4), Some((1, 1)));
        assert_eq!(at(8, 4), None, "beyond the two sets");
        assert_eq!(at(0, 0), None);
        let last = usize::try_from(2 * DOP_MAX - 1).unwrap();
        assert_eq!(at(last, DOP_MAX), Some((1, u16::MAX - 1)));
        assert_eq!(at(0, DOP_MAX + 1), None, "a number would not fit 16 bits");
    }
}
