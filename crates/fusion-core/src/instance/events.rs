//! What the instance's own work is keyed by: its processes on the run queue,
//! its timers and the purpose of each outstanding I/O.

use crate::config::Nanos;
use crate::types::{BlockAddr, InstId, Scn};

/// The processes of an instance, each a user of the CPU run queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Proc {
    Session(u32),
    Lms(u8),
    Lgwr,
    Dbwr(u8),
    /// A DBWR I/O slave (`I101`, ...), with `dbwr_io_slaves`.
    DbwrSlave(u8),
    Hog(u32),
    /// A PX server (`P000`, ...), by its index in the instance's pool.
    PxServer(u32),
    /// An RMAN channel (`ORA_DISK_1`, ...), by its index (backup.rs).
    RmanChannel(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    /// A session's think time is over.
    SessionWake(u32),
    /// LGWR's periodic write.
    LgwrTimeout,
    /// DBWR's checkpoint pass.
    DbwrTick,
    /// A partly-loaded CPU hog wakes up.
    HogWake(u32, u64),
    /// The membership service's heartbeats.
    CssTick,
    /// Re-send what a peer has not acknowledged (the peer, the timer's generation).
    LinkResend(InstId, u64),
    /// A block request not answered within 500 ms is lost (the block, the request).
    GcLost(BlockAddr, u64),
    /// LMD's deadlock scan armed for this time (an earlier arming's is stale).
    DeadlockScan(Nanos),
}

impl Proc {
    /// The process's class as `v$process` names it, without its number.
    pub(super) fn class(self) -> &'static str {
        match self {
            Proc::Session(_) => "foreground",
            Proc::Lms(_) => "LMS",
            Proc::Lgwr => "LGWR",
            Proc::Dbwr(_) => "DBWR",
            Proc::DbwrSlave(_) => "DBWR I/O slave",
            Proc::Hog(_) => "CPU hog",
            Proc::PxServer(_) => "PX server",
            Proc::RmanChannel(_) => "RMAN channel",
        }
    }
}

impl Timer {
    /// The timer's kind, without its arguments.
    pub(super) fn kind(self) -> &'static str {
        match self {
            Timer::SessionWake(_) => "session think time",
            Timer::LgwrTimeout => "LGWR timeout",
            Timer::DbwrTick => "DBWR checkpoint tick",
            Timer::HogWake(..) => "CPU hog wake",
            Timer::CssTick => "CSS heartbeat tick",
            Timer::LinkResend(..) => "link resend",
            Timer::GcLost(..) => "gc lost-block timeout",
            Timer::DeadlockScan(_) => "LMD deadlock scan",
        }
    }
}

/// What an outstanding I/O is for.
#[derive(Clone, Copy, Debug)]
pub(super) enum IoPurpose {
    /// A session's read after a grant; `mode` is the lock it was granted.
    GrantRead {
        blk: BlockAddr,
        req: u64,
        mode: crate::msg::Mode,
        scan: bool,
    },
    DbwrWrite {
        blk: BlockAddr,
        scn: Scn,
        /// Where this instance's last change in the written image ends.
        rba: u64,
        writer: u8,
        started: Nanos,
    },
    RedoWrite {
        upto: u64,
        started: Nanos,
    },
    /// A PX slave's (or serial execution's) scan read.
    PxRead {
        worker: usize,
        seq: u64,
    },
    /// An RMAN channel's read of the file or section it backs up.
    BackupRead {
        channel: u32,
    },
    /// The disk heartbeat (voting file).
    Vote,
    /// Fencing an evicted instance at the store.
    Fence,
    /// Lifting a restarted instance's fence before admitting it.
    Unfence,
    /// Before promoting its past image, the holder reads the disk's image.
    PromoteCheck {
        blk: BlockAddr,
    },
    /// Instance recovery reads a dead thread.
    RedoScan {
        run: u32,
    },
    /// Instance recovery reads a block of the recovery set from disk.
    RecoverRead {
        run: u32,
    },
    /// Instance recovery writes a recovered block.
    RecoverWrite {
        blk: BlockAddr,
        scn: Scn,
        run: u32,
    },
}
