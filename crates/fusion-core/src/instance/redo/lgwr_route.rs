//! LGWR's work on the kernel: redo appended, flushes asked for, the write
//! issued on LGWR's CPU and its completion, the SCN broadcast. The waiters
//! a write or an acknowledgement releases (sessions' `log file sync`,
//! LMS's `gcs log flush sync`, DBWR) are handed out one at a time
//! ([`Redo::next_released`], [`Redo::next_acked`]) for the instance to wake
//! in order.

use super::super::events::IoPurpose;
use super::super::kernel::Kernel;
use super::super::membership::Net;
use super::super::observe::Observer;
use super::Redo;
use super::lgwr::{Flush, FlushWaiter};
use crate::config::Nanos;
use crate::msg::{Io, Msg, RedoRecord};
use crate::stats::Wait;
use crate::types::InstSet;

impl Redo {
    /// Append one redo record; returns the address a flush must reach to
    /// cover it. A log buffer filled past its threshold starts a write.
    pub fn append(&mut self, k: &mut Kernel, record: RedoRecord) -> u64 {
        let (rba, write_now) = self
            .lgwr
            .append(record, k.params().log_buffer, k.stats_mut());
        if write_now {
            self.request_flush(k, rba, None);
        }
        rba
    }

    /// Make sure redo up to `rba` gets written; `waiter` is released when it
    /// is. Returns true when it already is on disk (nobody is queued then).
    pub fn request_flush(&mut self, k: &mut Kernel, rba: u64, waiter: Option<FlushWaiter>) -> bool {
        match self.lgwr.request_flush(rba, waiter) {
            Flush::Durable => true,
            Flush::Queued { start_write } => {
                if start_write {
                    self.lgwr_run(k);
                }
                false
            }
        }
    }

    fn lgwr_run(&mut self, k: &mut Kernel) {
        let (proc, cost) = (self.lgwr.proc(), k.costs().lgwr_write_ns);
        k.cpu(proc, cost);
    }

    /// LGWR got its CPU: write everything buffered, and broadcast the SCN
    /// of a write that carries commits. `oldest_active`: where the oldest
    /// transaction still active began its redo (the store keeps the redo
    /// from there or from the checkpoint, whichever is older).
    pub fn lgwr_step_done(&mut self, k: &mut Kernel, net: &mut Net, oldest_active: Option<u64>) {
        let broadcast = k.params().broadcast_on_commit();
        // The members of the incarnation acknowledge (all instances, until one dies).
        let others = net.peers();
        let write = self.lgwr.take_write(broadcast, others.len(), k.stats_mut());
        if let Some(seq) = write.broadcast {
            for to in others.iter() {
                net.send(k, to, Msg::ScnBroadcast { seq });
            }
        }
        let started = k.now();
        let checkpoint = self.dbwr.checkpoint();
        k.start_io(
            Io::WriteRedo {
                records: write.records,
                bytes: write.bytes,
                checkpoint: oldest_active.map_or(checkpoint, |r| r.min(checkpoint)),
            },
            IoPurpose::RedoWrite {
                upto: write.upto,
                started,
            },
        );
    }

    /// LGWR's write of the redo up to `upto`, started at `started`, is on
    /// disk: its waiters are released ([`Redo::next_released`]).
    pub fn redo_written(&mut self, k: &mut Kernel, obs: &mut Observer, upto: u64, started: Nanos) {
        let took = k.now() - started;
        self.lgwr.written(upto, took, k.now(), k.stats_mut());
        obs.trace_background_wait(k.now(), self.lgwr.proc(), Wait::LogFileParallelWrite, took);
    }

    /// The next waiter a write released, in the order they asked.
    #[inline]
    pub fn next_released(&mut self) -> Option<FlushWaiter> {
        self.lgwr.next_released()
    }

    /// The released waiters are woken: LGWR writes again if more redo waits.
    pub fn resume_lgwr(&mut self, k: &mut Kernel) {
        if self.lgwr.resume() {
            self.lgwr_run(k);
        }
    }

    /// An instance acknowledged broadcast `seq`: the sessions it releases
    /// follow from [`Redo::next_acked`].
    pub fn scn_ack(&mut self, k: &mut Kernel, seq: u64) {
        self.lgwr.scn_ack(seq, k.now(), k.stats_mut());
    }

    /// The next session whose commit every member acknowledged.
    #[inline]
    pub fn next_acked(&mut self) -> Option<u32> {
        self.lgwr.next_acked()
    }

    /// LGWR's timeout: buffered redo is written.
    pub fn lgwr_timeout(&mut self, k: &mut Kernel) {
        if let Some(rba) = self.lgwr.timeout() {
            self.request_flush(k, rba, None);
        }
    }

    /// A reconfiguration to `members`: broadcasts not acknowledged go again
    /// to the members (the dead will not answer); the sessions this
    /// releases follow from [`Redo::next_acked`].
    pub fn rebroadcast(&mut self, k: &mut Kernel, net: &mut Net, members: InstSet) {
        let others = members.len().saturating_sub(1);
        let now = k.now();
        for seq in self.lgwr.rebroadcast(others, now, k.stats_mut()) {
            for to in members.without(k.id()).iter() {
                net.send(k, to, Msg::ScnBroadcast { seq });
            }
        }
    }
}
