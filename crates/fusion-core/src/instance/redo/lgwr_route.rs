//! LGWR's answers routed: redo appended, flushes asked for, the write
//! issued on LGWR's CPU and its completion releasing the waiters (sessions'
//! `log file sync`, LMS's `gcs log flush sync`, DBWR), the SCN broadcast.

use super::super::Instance;
use super::super::events::IoPurpose;
use super::lgwr::{Flush, FlushWaiter};
use crate::config::Nanos;
use crate::msg::{Io, Msg, RedoRecord};
use crate::stats::Wait;
use crate::types::InstSet;

impl Instance {
    /// Append one redo record; returns the address a flush must reach to cover it.
    pub(in crate::instance) fn redo(&mut self, record: RedoRecord) -> u64 {
        let (xid, bytes, change) = (record.xid, record.bytes, record.change.is_some());
        let (rba, write_now) =
            self.redo
                .lgwr
                .append(record, self.k.params().log_buffer, self.k.stats_mut());
        if change && xid.inst() == self.id && !xid.is_none() {
            self.fg
                .txns_mut()
                .changed_at(xid, rba.saturating_sub(u64::from(bytes)));
        }
        if write_now {
            self.request_flush(rba, None);
        }
        rba
    }

    /// Make sure redo up to `rba` gets written; `waiter` is told when it is.
    /// Returns true when it already is on disk (nobody is queued then).
    pub(in crate::instance) fn request_flush(
        &mut self,
        rba: u64,
        waiter: Option<FlushWaiter>,
    ) -> bool {
        match self.redo.lgwr.request_flush(rba, waiter) {
            Flush::Durable => true,
            Flush::Queued { start_write } => {
                if start_write {
                    self.lgwr_run();
                }
                false
            }
        }
    }

    fn lgwr_run(&mut self) {
        let (proc, cost) = (self.redo.lgwr.proc(), self.k.costs().lgwr_write);
        self.cpu(proc, cost);
    }

    /// LGWR got its CPU: write everything buffered, and broadcast the SCN of
    /// a write that carries commits.
    pub(in crate::instance) fn lgwr_step_done(&mut self) {
        let broadcast = self.k.params().broadcast_on_commit();
        // The members of the incarnation acknowledge (all instances, until one dies).
        let others = self.membership.peers();
        let write = self
            .redo
            .lgwr
            .take_write(broadcast, others.len(), self.k.stats_mut());
        if let Some(seq) = write.broadcast {
            for to in others.iter() {
                self.send(to, Msg::ScnBroadcast { seq });
            }
        }
        let started = self.k.now();
        self.start_io(
            Io::WriteRedo {
                records: write.records,
                bytes: write.bytes,
                // The store keeps the redo from here on: the checkpoint, or
                // the first change of the oldest transaction still active.
                checkpoint: self
                    .fg
                    .txns()
                    .oldest_active_rba()
                    .map_or(self.redo.dbwr.checkpoint(), |r| {
                        r.min(self.redo.dbwr.checkpoint())
                    }),
            },
            IoPurpose::RedoWrite {
                upto: write.upto,
                started,
            },
        );
    }

    pub(in crate::instance) fn on_redo_written(&mut self, upto: u64, started: Nanos) {
        let took = self.k.now() - started;
        self.redo
            .lgwr
            .written(upto, took, self.k.now(), self.k.stats_mut());
        self.obs.trace_background_wait(
            self.k.now(),
            self.redo.lgwr.proc(),
            Wait::LogFileParallelWrite,
            took,
        );
        let mut dbwr_waited = false;
        while let Some(waiter) = self.redo.lgwr.next_released() {
            match waiter {
                FlushWaiter::Session(s) => self.session_flushed(s),
                FlushWaiter::Lms(worker, job) => self.lms_flushed(worker, job),
                FlushWaiter::Dbwr => dbwr_waited = true,
            }
        }
        if dbwr_waited && self.redo.dbwr.checkpointing() {
            // The redo a checkpoint's buffers waited for is on disk.
            self.dbwr_pass(false);
        }
        if self.redo.lgwr.resume() {
            self.lgwr_run();
        }
    }

    /// An instance acknowledged broadcast `seq` (LMS passes it on).
    pub(in crate::instance) fn on_scn_ack(&mut self, seq: u64) {
        self.redo
            .lgwr
            .scn_ack(seq, self.k.now(), self.k.stats_mut());
        while let Some(s) = self.redo.lgwr.next_acked() {
            self.session_flushed(s);
        }
    }

    pub(in crate::instance) fn lgwr_timeout(&mut self) {
        if let Some(rba) = self.redo.lgwr.timeout() {
            self.request_flush(rba, None);
        }
    }

    /// A reconfiguration to `members`: broadcasts not acknowledged go again
    /// to the members (the dead will not answer).
    pub(in crate::instance) fn lgwr_rebroadcast(&mut self, members: InstSet) {
        let others = members.len().saturating_sub(1);
        let now = self.k.now();
        for seq in self.redo.lgwr.rebroadcast(others, now, self.k.stats_mut()) {
            for to in members.without(self.id).iter() {
                self.send(to, Msg::ScnBroadcast { seq });
            }
        }
        while let Some(s) = self.redo.lgwr.next_acked() {
            self.session_flushed(s);
        }
    }
}
