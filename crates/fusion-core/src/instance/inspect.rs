//! What the drivers, the checkers and `status` may read of an instance:
//! its counters, membership, alert log and recoveries, buffers, directory
//! and enqueue entries, and its sessions' state. Nothing here changes it,
//! except taking the lines and reports handed out once.

use super::{AlertLine, Buffer, Horizon, Instance, Observation, TraceRecord};
use crate::config::Params;
use crate::cpu::ProcId;
use crate::stats::{Stat, Stats};
use crate::types::{BlockAddr, InstId, Scn, Xid};

impl Instance {
    /// Counters as `v$sysstat` / `v$system_event` would show them now.
    pub fn stats(&self) -> Stats {
        let mut s = self.k.stats().clone();
        s.add(Stat::OsBusyTime, self.k.cpus().busy());
        s
    }

    pub fn params(&self) -> &Params {
        self.k.params()
    }

    pub fn scn(&self) -> Scn {
        self.k.scn()
    }

    /// Why this instance stopped (evicted by the cluster), if it did.
    pub fn halted(&self) -> Option<&str> {
        self.membership.halted()
    }

    /// The cluster incarnation and its members as this instance sees them.
    pub fn membership(&self) -> (u32, crate::types::InstSet) {
        (self.membership.incarnation(), self.membership.members())
    }

    /// Alert log lines written since the last call.
    pub fn take_alert_log(&mut self) -> Vec<AlertLine> {
        self.obs.take_alert_log(self.k.now())
    }

    /// Alert log lines written since the last [`take_alert_log`](Self::take_alert_log),
    /// left for it (a live host logs them as they come).
    pub fn alert_log(&self) -> &[AlertLine] {
        self.obs.alert_lines()
    }

    /// The deadlocks LMD broke here (the newest 64): when, and each
    /// cycle's waits as they were confirmed.
    pub fn deadlocks(&self) -> Vec<super::DeadlockSeen> {
        self.fg.row_locks().deadlocks().cloned().collect()
    }

    /// The row lock waits now, as edges of the wait-for graph: (session,
    /// the transaction it runs, the transaction it waits for).
    pub fn row_lock_waits(&self) -> Vec<(u32, crate::types::Xid, crate::types::Xid)> {
        self.fg
            .row_locks()
            .edges()
            .map(|(sid, holder)| (sid, self.fg.xid_of(sid), holder))
            .collect()
    }

    /// Global enqueue locks kept: this instance's, and the resources it masters.
    pub fn enqueue_sizes(&self) -> (usize, usize) {
        self.gc.enqueue_sizes()
    }

    /// `V$GCSPFMASTER_INFO`: the objects dynamic remastering moved since
    /// the last reconfiguration (by pkey, `Layout::object_of`), with their
    /// current and previous masters and remaster counts.
    pub fn gcspfmaster_info(&self) -> Vec<super::PfMaster> {
        self.gc.remastered().to_vec()
    }

    /// Whether a reconfiguration holds the resource directory frozen.
    pub fn reconfiguring(&self) -> bool {
        self.membership.reconfiguring()
    }

    /// Instance recoveries this instance performed since the last call.
    pub fn take_recoveries(&mut self) -> Vec<crate::recovery::RecoveryReport> {
        self.membership.take_recoveries()
    }

    /// Problems with peers' messages or I/O seen so far.
    pub fn errors(&self) -> &[String] {
        self.k.errors()
    }

    /// Count the timers and CPU steps time handles, by kind (the
    /// benchmark's events by kind; off by default: it costs a map update
    /// per timer and step).
    pub fn count_events(&mut self) {
        self.k.count_events();
    }

    /// What [`Instance::count_events`] counted so far.
    pub fn event_tally(&self) -> Option<&super::EventTally> {
        self.k.event_tally()
    }

    /// Keep the sequence values handed out for [`Instance::take_nextvals`]
    /// (the simulator checks them; off by default so nothing grows unread).
    pub fn log_nextvals(&mut self, on: bool) {
        self.fg.log_nextvals(on);
    }

    /// Sequence values handed out since the last call: (sequence, value), in order.
    pub fn take_nextvals(&mut self) -> Vec<(u32, i64)> {
        self.fg.take_nextvals()
    }

    // ----- parallel execution (k-px) -----------------------------------------------------

    /// Keep every parallel statement's result for [`Instance::take_px_results`].
    pub fn log_px_results(&mut self, on: bool) {
        self.px.log_results(on);
    }

    /// Results of the statements this instance coordinated since the last call.
    pub fn take_px_results(&mut self) -> Vec<crate::px::PxResult> {
        self.px.take_results()
    }

    /// PX servers in use now, and the most ever in use at once.
    pub fn px_servers_busy(&self) -> (u32, u32) {
        self.px.servers_busy()
    }

    /// Whether any parallel statement is coordinated or hosted here.
    pub fn px_active(&self) -> bool {
        self.px.active()
    }

    /// The master's view of a global enqueue this instance masters: holders and queue length.
    pub fn enqueue_entry(
        &self,
        res: crate::msg::ResName,
    ) -> Option<(Vec<(InstId, crate::msg::LockMode)>, usize)> {
        self.gc.enqueue_view(res)
    }

    /// The buffers of a block in this cache (for checkers and `status`).
    pub fn buffers_of(&self, blk: BlockAddr) -> impl Iterator<Item = &Buffer> {
        self.cache.buffers_of(blk).map(|id| self.cache.get(id))
    }

    /// All buffers (for checkers).
    pub fn buffers(&self) -> impl Iterator<Item = &Buffer> {
        self.cache.iter().map(|(_, b)| b)
    }

    /// The blocks whose current holding changed since the last call (for a
    /// checker's coherence check); false when `out` may miss some (the first
    /// call, or too many changes between two), see [`Cache::take_current_changes`].
    ///
    /// [`Cache::take_current_changes`]: super::cache::Cache::take_current_changes
    pub fn take_current_changes(&mut self, out: &mut Vec<BlockAddr>) -> bool {
        self.cache.take_current_changes(out)
    }

    /// Buffers in use and the cache's capacity.
    pub fn cache_usage(&self) -> (usize, usize) {
        (self.cache.used(), self.cache.capacity)
    }

    /// The master's view of a block this instance masters: (X holder, S holders, PI holders).
    pub fn directory_entry(
        &self,
        blk: BlockAddr,
    ) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.gc.block_view(blk)
    }

    /// Whether a transaction of this instance has committed, and at which SCN.
    pub fn commit_scn(&self, xid: Xid) -> Option<Scn> {
        self.fg.txns().commit_scn(xid)
    }

    pub fn lms_count(&self) -> usize {
        self.gc.lms_count()
    }

    /// Processes waiting for a CPU now (the run queue, both classes).
    pub fn run_queue_len(&self) -> usize {
        self.k.cpus().queued()
    }

    /// LMS work not done yet: jobs queued, running, and set aside for a
    /// flush or a pin, over every LMS worker.
    pub fn lms_backlog(&self) -> usize {
        self.gc.lms_backlog()
    }

    /// Sessions that are not idle.
    /// Every session has stopped (its workload is disabled or done) and holds nothing.
    pub fn sessions_at_rest(&self) -> bool {
        self.fg.sessions().iter().all(|s| s.at_rest())
    }

    pub fn active_sessions(&self) -> usize {
        self.fg.sessions().iter().filter(|s| !s.is_idle()).count()
    }

    /// What sessions wait on right now: (event, sessions), by event.
    pub fn current_waits(&self) -> Vec<(crate::stats::Wait, u32)> {
        let mut out: Vec<(crate::stats::Wait, u32)> = Vec::new();
        for w in self.fg.sessions().iter().filter_map(|s| s.waiting_on()) {
            match out.iter_mut().find(|(e, _)| *e == w) {
                Some((_, n)) => *n += 1,
                None => out.push((w, 1)),
            }
        }
        out.sort();
        out
    }

    /// Sessions that finished their iterations (finite workloads).
    pub fn sessions_finished(&self) -> bool {
        self.fg.sessions().iter().all(|s| s.is_finished())
    }

    // ----- the checkers' history and the timeline trace ----------------------------------

    /// Reads, writes and commits recorded since the last drain (when enabled).
    pub fn take_history(&mut self) -> Vec<Observation> {
        let mut out = Vec::new();
        self.obs.drain_history(&mut out, usize::MAX);
        out
    }

    /// Move at most `max` of the oldest observations not yet drained to the
    /// end of `out`, in the order they were recorded. Returns the instance's
    /// [`Horizon`] when that emptied the log (nothing recorded is left
    /// behind), `None` when more are left.
    pub fn drain_history(&mut self, out: &mut Vec<Observation>, max: usize) -> Option<Horizon> {
        self.obs
            .drain_history(out, max)
            .then(|| self.history_horizon())
    }

    /// The instance's [`Horizon`] now, for a driver that drained the whole
    /// log (see [`Instance::drain_history`]). Looks at every session: the
    /// simulator asks only now and then (a horizon stays true as the run
    /// goes on, only less tight), and takes [`Instance::scn`] otherwise.
    pub fn history_horizon(&self) -> Horizon {
        // A session that thinks or idles takes a new snapshot (the SCN of
        // then) before it reads again: its last one no longer counts.
        let open = self
            .fg
            .sessions()
            .iter()
            .filter_map(|s| s.busy_snapshot())
            .min();
        Horizon {
            scn: self.k.scn(),
            snapshot: open.map_or(self.k.scn(), |s| s.min(self.k.scn())),
        }
    }

    /// How this instance's messages reach its peers.
    pub fn delivery(&self) -> super::Delivery {
        self.membership.delivery()
    }

    /// Keep trace records from now on (`on`), or stop and forget them.
    pub fn set_tracing(&mut self, on: bool) {
        self.obs.set_tracing(on);
    }

    /// Whether trace records are kept.
    pub fn tracing(&self) -> bool {
        self.obs.tracing()
    }

    /// Move the records made since the last drain to `out`, in the order
    /// they were made; returns how many were dropped since (the log full).
    pub fn drain_trace(&mut self, out: &mut Vec<TraceRecord>) -> u64 {
        self.obs.drain_trace(out)
    }

    /// The name of a process (`oracle3`, `LMS0`, `LGWR`, `DBW0`, `stress1`, `P000`).
    pub fn process_name(&self, proc: ProcId) -> Option<&str> {
        self.k.proc_name(proc)
    }
}
