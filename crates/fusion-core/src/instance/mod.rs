//! One instance as a sans-IO state machine.
//!
//! Drive it like this (the simulator and the live runtime both do):
//! 1. feed inputs: [`Instance::handle_message`], [`Instance::handle_io`],
//!    [`Instance::handle_timeout`] when [`Instance::next_deadline`] is reached,
//!    and [`Instance::apply`] for administrative commands (faults, parameters);
//! 2. after each input, drain [`Instance::poll_action`] and perform every action;
//! 3. re-arm the timer with [`Instance::next_deadline`].
//!
//! Time only moves through the `now` given to each input, and must not go back.

mod cache;
mod dispatch;
mod events;
mod execution;
mod gc;
mod input;
mod kernel;
mod maintenance;
mod membership;
mod numa;
mod observe;
mod px;
mod redo;
mod session;

pub use cache::{BufState, Buffer};
pub use gc::PfMaster;
pub use input::{Command, InstanceConfig};
pub use membership::Delivery;
pub use observe::{
    ALERT_LINES_MAX, AlertLine, Hop, Horizon, Observation, TRACE_PENDING_MAX, TraceRecord,
    TransferId,
};
pub use session::{DeadlockSeen, LIFE_XIDS};

use crate::block::Block;
use crate::config::{Nanos, Params};
use crate::cpu::ProcId;
use crate::msg::{Action, Envelope, IoResult};
use crate::stats::Stats;
use crate::types::{BlockAddr, InstId, Scn, Xid};

/// The instance.
pub struct Instance {
    pub id: InstId,
    /// The kernel and the subsystems whose steps the dispatcher sequences
    /// (dispatch/).
    d: dispatch::Dispatch,
    /// RMAN and the CPU hogs (maintenance/).
    maint: maintenance::Maintenance,
}

impl Instance {
    pub fn new(cfg: InstanceConfig) -> Instance {
        Instance {
            id: cfg.id,
            d: dispatch::Dispatch::new(cfg),
            maint: maintenance::Maintenance::default(),
        }
    }

    // ----- the driver's interface -------------------------------------------------
    /// A message from another instance arrived.
    pub fn handle_message(&mut self, now: Nanos, env: Envelope) {
        self.d.handle_message(&mut self.maint, now, env)
    }

    /// An I/O the instance asked for completed.
    pub fn handle_io(&mut self, now: Nanos, id: u64, result: IoResult) {
        self.d.handle_io(&mut self.maint, now, id, result)
    }

    /// Time reached [`Instance::next_deadline`] (calling it early is harmless).
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.d.handle_timeout(&mut self.maint, now)
    }

    /// A deadline the driver hands over right after the input before it,
    /// nothing else happening in between (the simulator's wake-up due
    /// before anything it has queued): [`Instance::handle_timeout`] at
    /// `now`, then at each later deadline before `quiet_until` for as long
    /// as the one before asked nothing of the driver. The driver promises
    /// that nothing reaches the instance before `quiet_until`, so these are
    /// the deadlines it would have handed over next, one call each with
    /// nothing to perform in between: the same calls, without a round trip
    /// through the driver's event loop for each (a session's CPU steps one
    /// after another, mostly). Returns how many deadlines it handled (at
    /// least one) and the time of the last, at which the driver performs
    /// what it asked for.
    pub fn handle_timeouts_folded(&mut self, now: Nanos, quiet_until: Nanos) -> (u32, Nanos) {
        self.d
            .handle_timeouts_folded(&mut self.maint, now, quiet_until)
    }

    /// The transport's connection to `peer` broke and is back (live): what
    /// it did not acknowledge goes again now, since that is all a broken
    /// connection can have lost. A peer that is no longer a member was
    /// forgotten at its eviction: nothing goes to it.
    pub fn handle_reconnect(&mut self, now: Nanos, peer: InstId) {
        self.d.handle_reconnect(&mut self.maint, now, peer)
    }

    /// The block store failed an I/O of this instance or stopped answering
    /// it (live: a network cut between them, the store's machine gone):
    /// as Oracle's LGWR or DBWR on an I/O error, the instance terminates.
    /// Its redo in the store is what the survivors recover; a driver may
    /// start it again as its next life.
    pub fn terminate_on_io_error(&mut self, now: Nanos, error: &str) {
        self.d.terminate_on_io_error(now, error)
    }

    /// The instance was killed (SIGKILL of every process): it stops at once.
    pub fn crash(&mut self, now: Nanos) {
        self.d.crash(now)
    }

    /// A restarted instance takes over the counters of its earlier life, so
    /// that a phase's figures (differences of counters) stay whole across
    /// the restart; Oracle's would start from zero, and AWR would refuse a
    /// snapshot pair across it.
    pub fn carry_over(&mut self, earlier: &Instance) {
        self.d.carry_over(&earlier.d)
    }

    /// [`Instance::carry_over`] from the earlier life's counters as its
    /// last [`Instance::stats`] showed them (the live runner keeps them
    /// across the process's death; they include its CPU busy time).
    pub fn carry_over_stats(&mut self, earlier: crate::stats::Stats) {
        self.d.carry_over_stats(earlier)
    }

    /// Apply an administrative command.
    pub fn apply(&mut self, now: Nanos, cmd: Command) {
        self.d.apply(&mut self.maint, now, cmd)
    }

    /// The next action to perform, if any.
    // Called for every event by the driver, from another crate.
    #[inline]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.d.poll_action()
    }

    /// When [`Instance::handle_timeout`] must next be called.
    // Called for every event by the driver, from another crate.
    #[inline]
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.d.next_deadline()
    }

    // ----- what drivers, checkers and `status` read ----------------------------------
    /// Counters as `v$sysstat` / `v$system_event` would show them now.
    pub fn stats(&self) -> Stats {
        self.d.stats()
    }

    pub fn params(&self) -> &Params {
        self.d.params()
    }

    pub fn scn(&self) -> Scn {
        self.d.scn()
    }

    /// Why this instance stopped (evicted by the cluster), if it did.
    pub fn halted(&self) -> Option<&str> {
        self.d.halted()
    }

    /// The cluster incarnation and its members as this instance sees them.
    pub fn membership(&self) -> (u32, crate::types::InstSet) {
        self.d.membership()
    }

    /// Dead instances whose redo threads no recovery has finished yet, as
    /// this instance knows (its own recoveries, its peers' word): their
    /// blocks are whole again only once this is empty.
    pub fn unrecovered(&self) -> crate::types::InstSet {
        self.d.unrecovered()
    }

    /// Alert log lines written since the last call.
    pub fn take_alert_log(&mut self) -> Vec<AlertLine> {
        self.d.take_alert_log()
    }

    /// Alert log lines written since the last [`take_alert_log`](Self::take_alert_log),
    /// left for it (a live host logs them as they come).
    pub fn alert_log(&self) -> &[AlertLine] {
        self.d.alert_log()
    }

    /// The deadlocks LMD broke here (the newest 64): when, and each
    /// cycle's waits as they were confirmed.
    pub fn deadlocks(&self) -> Vec<DeadlockSeen> {
        self.d.deadlocks()
    }

    /// The row lock waits now, as edges of the wait-for graph: (session,
    /// the transaction it runs, the transaction it waits for).
    pub fn row_lock_waits(&self) -> Vec<(u32, crate::types::Xid, crate::types::Xid)> {
        self.d.row_lock_waits()
    }

    /// Global enqueue locks kept: this instance's, and the resources it masters.
    pub fn enqueue_sizes(&self) -> (usize, usize) {
        self.d.enqueue_sizes()
    }

    /// `V$GCSPFMASTER_INFO`: the objects dynamic remastering moved since
    /// the last reconfiguration (by pkey, `Layout::object_of`), with their
    /// current and previous masters and remaster counts.
    pub fn gcspfmaster_info(&self) -> Vec<PfMaster> {
        self.d.gcspfmaster_info()
    }

    /// Whether a reconfiguration holds the resource directory frozen.
    pub fn reconfiguring(&self) -> bool {
        self.d.reconfiguring()
    }

    /// Instance recoveries this instance performed since the last call.
    pub fn take_recoveries(&mut self) -> Vec<crate::recovery::RecoveryReport> {
        self.d.take_recoveries()
    }

    /// Problems with peers' messages or I/O seen so far.
    pub fn errors(&self) -> &[String] {
        self.d.errors()
    }

    /// Count the timers and CPU steps time handles, by kind (the
    /// benchmark's events by kind; off by default: it costs a map update
    /// per timer and step).
    pub fn count_events(&mut self) {
        self.d.count_events()
    }

    /// What [`Instance::count_events`] counted so far.
    pub fn event_tally(&self) -> Option<&EventTally> {
        self.d.event_tally()
    }

    /// Keep the sequence values handed out for [`Instance::take_nextvals`]
    /// (the simulator checks them; off by default so nothing grows unread).
    pub fn log_nextvals(&mut self, on: bool) {
        self.d.log_nextvals(on)
    }

    /// Sequence values handed out since the last call: (sequence, value), in order.
    pub fn take_nextvals(&mut self) -> Vec<(u32, i64)> {
        self.d.take_nextvals()
    }

    // ----- parallel execution (k-px) -----------------------------------------------------
    /// Keep every parallel statement's result for [`Instance::take_px_results`].
    pub fn log_px_results(&mut self, on: bool) {
        self.d.log_px_results(on)
    }

    /// Results of the statements this instance coordinated since the last call.
    pub fn take_px_results(&mut self) -> Vec<crate::px::PxResult> {
        self.d.take_px_results()
    }

    /// PX servers in use now, and the most ever in use at once.
    pub fn px_servers_busy(&self) -> (u32, u32) {
        self.d.px_servers_busy()
    }

    /// Whether any parallel statement is coordinated or hosted here.
    pub fn px_active(&self) -> bool {
        self.d.px_active()
    }

    /// The master's view of a global enqueue this instance masters: holders and queue length.
    pub fn enqueue_entry(
        &self,
        res: crate::msg::ResName,
    ) -> Option<(Vec<(InstId, crate::msg::LockMode)>, usize)> {
        self.d.enqueue_entry(res)
    }

    /// The buffers of a block in this cache (for checkers and `status`).
    pub fn buffers_of(&self, blk: BlockAddr) -> impl Iterator<Item = &Buffer> {
        self.d.buffers_of(blk)
    }

    /// All buffers (for checkers).
    pub fn buffers(&self) -> impl Iterator<Item = &Buffer> {
        self.d.buffers()
    }

    /// The blocks whose current holding changed since the last call (for a
    /// checker's coherence check); false when `out` may miss some (the first
    /// call, or too many changes between two), see [`Cache::take_current_changes`].
    ///
    /// [`Cache::take_current_changes`]: cache::Cache::take_current_changes
    pub fn take_current_changes(&mut self, out: &mut Vec<BlockAddr>) -> bool {
        self.d.take_current_changes(out)
    }

    /// Buffers in use and the cache's capacity.
    pub fn cache_usage(&self) -> (usize, usize) {
        self.d.cache_usage()
    }

    /// The master's view of a block this instance masters: (X holder, S holders, PI holders).
    pub fn directory_entry(
        &self,
        blk: BlockAddr,
    ) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.d.directory_entry(blk)
    }

    /// Whether a transaction of this instance has committed, and at which SCN.
    pub fn commit_scn(&self, xid: Xid) -> Option<Scn> {
        self.d.commit_scn(xid)
    }

    pub fn lms_count(&self) -> usize {
        self.d.lms_count()
    }

    /// Processes waiting for a CPU now (the run queue, both classes).
    pub fn run_queue_len(&self) -> usize {
        self.d.run_queue_len()
    }

    /// LMS work not done yet: jobs queued, running, and set aside for a
    /// flush or a pin, over every LMS worker.
    pub fn lms_backlog(&self) -> usize {
        self.d.lms_backlog()
    }

    /// Every session has stopped (its workload is disabled or done) and holds nothing.
    pub fn sessions_at_rest(&self) -> bool {
        self.d.sessions_at_rest()
    }

    /// Sessions that are not idle.
    pub fn active_sessions(&self) -> usize {
        self.d.active_sessions()
    }

    /// What sessions wait on right now: (event, sessions), by event.
    pub fn current_waits(&self) -> Vec<(crate::stats::Wait, u32)> {
        self.d.current_waits()
    }

    /// Sessions that finished their iterations (finite workloads).
    pub fn sessions_finished(&self) -> bool {
        self.d.sessions_finished()
    }

    // ----- the checkers' history and the timeline trace ----------------------------------
    /// Reads, writes and commits recorded since the last drain (when enabled).
    pub fn take_history(&mut self) -> Vec<Observation> {
        self.d.take_history()
    }

    /// Move at most `max` of the oldest observations not yet drained to the
    /// end of `out`, in the order they were recorded. Returns the instance's
    /// [`Horizon`] when that emptied the log (nothing recorded is left
    /// behind), `None` when more are left.
    pub fn drain_history(&mut self, out: &mut Vec<Observation>, max: usize) -> Option<Horizon> {
        self.d.drain_history(out, max)
    }

    /// The instance's [`Horizon`] now, for a driver that drained the whole
    /// log (see [`Instance::drain_history`]). Looks at every session: the
    /// simulator asks only now and then (a horizon stays true as the run
    /// goes on, only less tight), and takes [`Instance::scn`] otherwise.
    pub fn history_horizon(&self) -> Horizon {
        self.d.history_horizon()
    }

    /// How this instance's messages reach its peers.
    pub fn delivery(&self) -> Delivery {
        self.d.delivery()
    }

    /// Keep trace records from now on (`on`), or stop and forget them.
    pub fn set_tracing(&mut self, on: bool) {
        self.d.set_tracing(on)
    }

    /// Whether trace records are kept.
    pub fn tracing(&self) -> bool {
        self.d.tracing()
    }

    /// Move the records made since the last drain to `out`, in the order
    /// they were made; returns how many were dropped since (the log full).
    pub fn drain_trace(&mut self, out: &mut Vec<TraceRecord>) -> u64 {
        self.d.drain_trace(out)
    }

    /// The name of a process (`oracle3`, `LMS0`, `LGWR`, `DBW0`, `stress1`, `P000`).
    pub fn process_name(&self, proc: ProcId) -> Option<&str> {
        self.d.process_name(proc)
    }
}

pub use kernel::{ERRORS_MAX, EventTally};

/// Check a block image against what a reader expected (used by checkers).
pub fn row_value(block: &Block, key: u64) -> Option<i64> {
    match &*block.body {
        crate::block::Body::Table { rows } => {
            rows.iter().flatten().find(|r| r.key == key).map(|r| r.val)
        }
        _ => None,
    }
}
