//! Redo and writes: LGWR and the redo it flushes (lgwr.rs, its answers
//! routed in lgwr_route.rs), DBWR, its writers and I/O slaves (dbwr.rs,
//! routed in dbwr_route.rs), and the writes past images ask for, with
//! checkpoints (checkpoint.rs).
//!
//! Every method of [`Redo`] takes the kernel and what it reads of the rest
//! (the buffer cache, membership's `Net` to send); what it needs the other
//! subsystems to do (wake the waiters a write released, ask a master for a
//! write, tell a master a block is on disk) it answers, and the instance's
//! dispatcher (dispatch.rs) does it in order.

mod checkpoint;
mod dbwr;
mod dbwr_route;
mod lgwr;
mod lgwr_route;
mod pi_writes;

pub(super) use dbwr::DBWR_TICK_NS;
pub(super) use lgwr::{FlushWaiter, LGWR_TIMEOUT_NS, Lgwr};

use crate::cpu::ProcId;
use crate::types::Scn;

pub(super) struct Redo {
    lgwr: Lgwr,
    dbwr: dbwr::Dbwr,
    /// DBWR's I/O slaves (`dbwr_io_slaves`; none by default).
    slaves: dbwr::IoSlaves,
    /// Writes asked for because of past images (checkpoint.rs).
    pi_writes: pi_writes::PiWrites,
}

impl Redo {
    /// LGWR is process `lgwr`; DBWR's writers start with the instance (`start_writers`).
    pub fn new(lgwr: ProcId) -> Redo {
        Redo {
            lgwr: Lgwr::new(lgwr),
            dbwr: dbwr::Dbwr::new([], None),
            slaves: dbwr::IoSlaves::default(),
            pi_writes: pi_writes::PiWrites::default(),
        }
    }

    /// LGWR, to read (the holder's side of a transfer asks it whether redo is on disk).
    #[inline(always)]
    pub fn lgwr(&self) -> &Lgwr {
        &self.lgwr
    }

    /// Whether redo up to `rba` is still to be written.
    #[inline(always)]
    pub fn redo_pending(&self, rba: u64) -> bool {
        self.lgwr.redo_pending(rba)
    }

    /// The redo address of the first record after `scn`, if any is buffered.
    #[inline]
    pub fn rba_after(&self, scn: Scn) -> Option<u64> {
        self.lgwr.rba_after(scn)
    }

    /// Where the redo generated so far ends.
    pub fn end_rba(&self) -> u64 {
        self.lgwr.end_rba()
    }
}

#[cfg(test)]
mod tests;
