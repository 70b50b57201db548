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

use events::{IoPurpose, Proc, Timer};
use kernel::{Due, Input};

use std::sync::Arc;

use cache::Cache;
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
use crate::cpu::{ProcId, StepDone};
use crate::msg::{Action, Envelope, IoResult, Msg};
use crate::stats::{Stat, Stats};
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
        let InstanceConfig {
            id,
            instances,
            params,
            costs,
            catalog,
            layout,
            workloads,
            seed,
            record_history,
            delivery,
            life,
            server,
        } = cfg;
        let capacity = params.buffers();
        let mut inst = Instance {
            id,
            maint: maintenance::Maintenance::default(),
            d: dispatch::Dispatch {
                id,
                cache: Cache::new(capacity, layout.total_blocks),
                gc: gc::GlobalCache::new(id, instances),
                redo: redo::Redo::new(0),
                px: px::PxState::default(),
                obs: observe::Observer::new(record_history),
                membership: membership::Membership::new(id, instances, &params, life, delivery),
                fg: session::Foregrounds::new(
                    id,
                    instances,
                    &layout,
                    &catalog,
                    // An instance's own copy: a session takes a handle on it per
                    // execution, and a count shared by instances running on other
                    // threads (a parallel simulation) would bounce between cores.
                    Arc::new(Vec::clone(&workloads)),
                    u64::from(life).saturating_mul(LIFE_XIDS),
                ),
                k: kernel::Kernel::new(id, instances, params, costs, layout, seed, server),
            },
        };
        // Worker numbers are 8-bit: `gcs_server_processes` and
        // `db_writer_processes` are at most 100 (`Params::set`, the loader),
        // and the LMS count derived from `cpu_count` (at most 1,024) is 34.
        let worker = |i: u32| u8::try_from(i).expect("at most 100 LMS and DBWR processes");
        let lms: Vec<ProcId> = (0..inst.d.k.params().lms_count())
            .map(|i| inst.add_proc(Proc::Lms(worker(i)), format!("LMS{i}")))
            .collect();
        inst.d.gc.start_lms(lms);
        // Nothing is in it yet but LGWR's process, numbered after the LMSs.
        inst.d.redo = redo::Redo::new(inst.add_proc(Proc::Lgwr, "LGWR".into()));
        inst.d.redo.start_writers(&mut inst.d.k);
        inst.d.px.prestart(&mut inst.d.k);
        inst.d.fg.register_statements(&mut inst.d.k, &catalog);
        if !inst.d.membership.sessions_wait() {
            inst.d.fg.start_sessions(&mut inst.d.k);
        }
        inst.d.k.arm(redo::LGWR_TIMEOUT_NS, Timer::LgwrTimeout);
        inst.d.k.arm(redo::DBWR_TICK_NS, Timer::DbwrTick);
        inst.d.k.arm(membership::HEARTBEAT_NS, Timer::CssTick);
        inst
    }

    fn add_proc(&mut self, p: Proc, name: String) -> ProcId {
        self.d.k.add_proc(p, name)
    }

    // ----- the driver's interface -------------------------------------------------

    /// A message from another instance arrived.
    pub fn handle_message(&mut self, now: Nanos, env: Envelope) {
        if self.d.k.counting() {
            self.d.k.tally_input(Input::Message(env.msg.kind()));
        }
        if self.d.membership.halted().is_some() {
            return;
        }
        self.advance(now);
        if env.to != self.id || env.from.0 >= self.d.k.instance_count() || env.from == self.id {
            self.d.k.error(&format!(
                "rejected a message addressed to {} from {} (cluster of {})",
                env.to,
                env.from,
                self.d.k.instance_count()
            ));
            return;
        }
        if let Msg::Heartbeat {
            incarnation,
            members,
        } = env.msg
        {
            // Clusterware's, not the database's: it carries no SCN to observe.
            self.d.on_heartbeat(env.from, incarnation, members);
            return;
        }
        if !self.d.membership.is_member(env.from)
            && env.incarnation <= self.d.membership.incarnation()
            && !matches!(env.msg, Msg::Rebuild(_))
        {
            // An evicted instance's late messages: it is no longer in the
            // cluster. (A newer incarnation's messages, reports first, may
            // come from members this instance does not know of yet.)
            return;
        }
        if self
            .d
            .membership
            .sent_by_earlier_life(env.from, env.incarnation)
        {
            // Its earlier life's late messages, now that a new life of it
            // is a member: that life's links and requests are gone.
            return;
        }
        self.d.membership.alive(env.from, now);
        if self.d.membership.is_joining()
            && (env.link.seq != 0 || matches!(env.msg, Msg::LinkAck { .. }))
            && !matches!(&env.msg, Msg::Rebuild(r) if r.members.contains(self.id))
        {
            // A restarted instance not admitted yet: what the members number
            // for it was meant for its earlier life (they have not evicted
            // it yet), or comes before the report that admits it. Neither is
            // taken or acknowledged: numbering it here would run ahead of
            // the members', who start again at the admission (found by
            // chaos). What is meant for this life is sent again.
            return;
        }
        if self.d.membership.links_on()
            || env.link.seq != 0
            || matches!(env.msg, Msg::LinkAck { .. })
        {
            for env in self.d.membership.link_receive(&mut self.d.k, env) {
                self.d.k.observe_scn(env.scn);
                self.d.receive(env);
            }
        } else {
            self.d.k.observe_scn(env.scn);
            self.d.receive(env);
        }
        self.d.run_ready();
        self.d.drm_after_input();
    }

    /// An I/O the instance asked for completed.
    pub fn handle_io(&mut self, now: Nanos, id: u64, result: IoResult) {
        if self.d.k.counting() {
            self.d.k.tally_input(Input::Io);
        }
        if self.d.membership.halted().is_some() {
            return;
        }
        self.advance(now);
        let Some(purpose) = self.d.k.io_done(id) else {
            return;
        };
        match (purpose, result) {
            (
                IoPurpose::GrantRead {
                    blk,
                    req,
                    mode,
                    scan,
                },
                IoResult::Read(block),
            ) => {
                self.d.k.incr(Stat::PhysicalReads);
                self.d.k.incr(Stat::PhysicalReadsCache);
                self.d.on_grant_read(blk, req, mode, *block, scan);
            }
            (
                IoPurpose::DbwrWrite {
                    blk,
                    scn,
                    rba,
                    writer,
                    started,
                },
                IoResult::Written,
            ) => self.d.on_block_written(blk, scn, rba, writer, started),
            (IoPurpose::RedoWrite { upto, started }, IoResult::Written) => {
                self.d.on_redo_written(upto, started)
            }
            (IoPurpose::PxRead { worker, seq }, IoResult::ReadMany(blocks)) => {
                self.d.px_read_done(worker, seq, blocks)
            }
            (IoPurpose::BackupRead { channel }, IoResult::ReadMany(blocks)) => self
                .maint
                .backup_read_done(&mut self.d.k, channel, blocks.len()),
            (IoPurpose::Vote, IoResult::Votes(votes)) => self.d.on_votes(&votes),
            (IoPurpose::Fence, IoResult::Written) => {
                self.d.membership.fence_done();
                self.d.membership.smon_read_threads(&mut self.d.k);
            }
            (IoPurpose::Unfence, IoResult::Written) => self.d.on_unfenced(),
            (IoPurpose::PromoteCheck { blk }, IoResult::Read(disk)) => {
                self.d.k.incr(Stat::PhysicalReads);
                self.d.on_promote_checked(blk, disk.scn);
            }
            (_, IoResult::Fenced) => self.d.on_fenced(),
            // A recovery started over drops its earlier run's I/O.
            (IoPurpose::RedoScan { run }, IoResult::Redo(records)) => {
                if self.d.membership.smon_current(run) {
                    self.d.on_redo_read(records);
                }
            }
            (IoPurpose::RecoverRead { run }, IoResult::Read(block)) => {
                self.d.k.incr(Stat::PhysicalReads);
                if self.d.membership.smon_current(run) {
                    self.d.smon_disk_read(*block);
                }
            }
            (IoPurpose::RecoverWrite { blk, scn, run }, IoResult::Written) => {
                self.d.k.incr(Stat::PhysicalWrites);
                if self.d.membership.smon_current(run) {
                    self.d.smon_block_done(blk, scn, true);
                }
            }
            (p, r) => self
                .d
                .k
                .error(&format!("I/O {id} ({p:?}) completed with {r:?}")),
        }
        self.d.run_ready();
        self.d.drm_after_input();
    }

    /// Time reached [`Instance::next_deadline`] (calling it early is harmless).
    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.d.k.counting() {
            return self.handle_timeout_counted(now);
        }
        if self.d.membership.halted().is_some() {
            return;
        }
        self.advance(now);
        self.d.run_ready();
        self.d.drm_after_input();
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
        let mut at = now;
        let mut handled = 0u32;
        loop {
            if self.d.k.counting() {
                self.d.k.tally_input(Input::Folded);
            }
            if self.d.membership.halted().is_none() {
                self.advance(at);
                self.d.run_ready();
                self.d.drm_after_input();
            }
            handled += 1;
            if self.d.k.has_actions() {
                return (handled, at);
            }
            // `None` once halted.
            match self.next_deadline() {
                Some(d) if d < quiet_until => {
                    // Everything due by `at` was handled.
                    debug_assert!(d > at, "a deadline at {d} ns left after {at} ns");
                    at = d;
                }
                _ => return (handled, at),
            }
        }
    }

    /// [`Instance::handle_timeout`], counting whether anything was due.
    #[cold]
    #[inline(never)]
    fn handle_timeout_counted(&mut self, now: Nanos) {
        // Nothing was due: no CPU step ends and no timer fires by `now`.
        let idle = self.d.k.next_deadline().is_none_or(|d| d > now);
        self.d.k.tally_input(Input::Wake { idle });
        if self.d.membership.halted().is_none() {
            self.advance(now);
            self.d.run_ready();
            self.d.drm_after_input();
        }
    }

    /// The transport's connection to `peer` broke and is back (live): what
    /// it did not acknowledge goes again now, since that is all a broken
    /// connection can have lost. A peer that is no longer a member was
    /// forgotten at its eviction: nothing goes to it.
    pub fn handle_reconnect(&mut self, now: Nanos, peer: InstId) {
        if self.d.membership.halted().is_some() {
            return;
        }
        self.advance(now);
        self.d.membership.reconnected(&mut self.d.k, peer);
    }

    /// The block store failed an I/O of this instance or stopped answering
    /// it (live: a network cut between them, the store's machine gone):
    /// as Oracle's LGWR or DBWR on an I/O error, the instance terminates.
    /// Its redo in the store is what the survivors recover; a driver may
    /// start it again as its next life.
    pub fn terminate_on_io_error(&mut self, now: Nanos, error: &str) {
        if self.d.membership.halted().is_some() {
            return;
        }
        self.d.k.catch_up(now);
        self.d.obs.alert(
            self.d.k.now(),
            format!("I/O error on the block store: {error}"),
        );
        self.d.obs.alert(
            self.d.k.now(),
            "Instance terminated due to an I/O error on the block store",
        );
        self.d
            .stop(format!("terminated: I/O error on the block store: {error}"));
    }

    /// The instance was killed (SIGKILL of every process): it stops at once.
    pub fn crash(&mut self, now: Nanos) {
        if self.d.membership.halted().is_none() {
            self.d.k.catch_up(now);
            self.d.stop("killed".into());
        }
    }

    /// A restarted instance takes over the counters of its earlier life, so
    /// that a phase's figures (differences of counters) stay whole across
    /// the restart; Oracle's would start from zero, and AWR would refuse a
    /// snapshot pair across it.
    pub fn carry_over(&mut self, earlier: &Instance) {
        self.d
            .k
            .carry_over(earlier.d.k.stats().clone(), Some(earlier.d.k.cpus().busy()));
        if let Some(t) = earlier.d.k.event_tally() {
            self.d.k.carry_tally(t.clone());
        }
    }

    /// [`Instance::carry_over`] from the earlier life's counters as its
    /// last [`Instance::stats`] showed them (the live runner keeps them
    /// across the process's death; they include its CPU busy time).
    pub fn carry_over_stats(&mut self, earlier: crate::stats::Stats) {
        self.d.k.carry_over(earlier, None);
    }

    /// Apply an administrative command.
    pub fn apply(&mut self, now: Nanos, cmd: Command) {
        if self.d.membership.halted().is_some() {
            return;
        }
        self.advance(now);
        match cmd {
            Command::SetParameter { name, value } => self.d.k.set_param(&name, &value),
            Command::StressCpu { workers, load_pct } => {
                self.maint
                    .set_hogs(&mut self.d.k, &mut self.d.obs, workers, load_pct)
            }
            Command::EnableWorkloads(list) => {
                self.d.fg.enable_workloads(list);
                self.d.fg.wake_enabled_sessions(&mut self.d.k);
            }
            Command::ResetPeaks => self.d.k.stats_mut().reset_peaks(),
            Command::Checkpoint => self.d.begin_checkpoint(),
            Command::Backup {
                channels,
                section_size_mb,
            } => self
                .maint
                .begin_backup(&mut self.d.k, &mut self.d.obs, channels, section_size_mb),
        }
        self.d.run_ready();
    }

    /// The next action to perform, if any.
    // Called for every event by the driver, from another crate.
    #[inline]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.d.k.pop_action()
    }

    /// When [`Instance::handle_timeout`] must next be called.
    // Called for every event by the driver, from another crate.
    #[inline]
    pub fn next_deadline(&self) -> Option<Nanos> {
        if self.d.membership.halted().is_some() {
            return None;
        }
        self.d.k.next_deadline()
    }

    // ----- internals --------------------------------------------------------------

    /// Move time to `now`: finish CPU steps and fire timers in time order.
    fn advance(&mut self, now: Nanos) {
        self.d.k.begin_advance(now);
        while let Some(due) = self.d.k.next_due(now) {
            match due {
                Due::Steps => {
                    // Read in place: handling a step never adds one (only
                    // the CPUs' advance does), so no take-and-put-back.
                    let mut k = 0;
                    while let Some(d) = self.d.k.step_done(k) {
                        k += 1;
                        self.on_step_done(d);
                    }
                    self.d.k.settle();
                }
                Due::Timer(timer) => self.on_timer(timer),
            }
            self.d.run_ready();
        }
        self.d.k.end_advance(now);
    }

    // Out of line: inlined into `advance`'s loop, with a session's CPU step
    // inlined into it, it cost 2.4 % more instructions on the transfer run.
    #[inline(never)]
    fn on_step_done(&mut self, d: StepDone) {
        let Some(proc) = self.d.k.proc(d.proc) else {
            return;
        };
        self.d.obs.trace_cpu(d);
        if self.d.k.numa().is_some() && self.memory_stall_first(proc, d) {
            return;
        }
        self.account_cpu(proc, d);
        match proc {
            Proc::Session(s) => self.d.session_cpu_done(s, d),
            Proc::Lms(w) => self.d.lms_step_done(w, d),
            Proc::Lgwr => self.d.lgwr_step_done(),
            Proc::Dbwr(w) => self.d.redo.dbwr_step_done(&mut self.d.k, &self.d.cache, w),
            Proc::DbwrSlave(i) => self.d.dbwr_slave_step_done(i),
            Proc::Hog(h) => self.maint.hog_step_done(&mut self.d.k, h),
            Proc::PxServer(i) => self.d.px_server_step_done(i, d),
            Proc::RmanChannel(c) => self
                .maint
                .backup_step_done(&mut self.d.k, &mut self.d.obs, c),
        }
    }

    /// The CPU a finished step used and waited for, in the statistics.
    #[inline(always)]
    fn account_cpu(&mut self, proc: Proc, d: StepDone) {
        let ran = (d.done_at - d.requested_at).saturating_sub(d.waited);
        self.d.k.add(Stat::OsCpuWaitTime, d.waited);
        match proc {
            Proc::Session(s) => {
                self.d.k.add(Stat::CpuUsedBySession, ran);
                if let Some(st) = self.d.fg.stmt_target(s) {
                    self.d.k.stats_mut().statements[st].cpu_ns += ran;
                }
                self.d.k.add(Stat::ForegroundCpuWaitTime, d.waited);
            }
            Proc::Lms(_) => {
                self.d.k.add(Stat::BackgroundCpuTime, ran);
                self.d.k.add(Stat::LmsCpuWaitTime, d.waited);
            }
            Proc::Lgwr => {
                self.d.k.add(Stat::BackgroundCpuTime, ran);
                self.d.k.add(Stat::LgwrCpuWaitTime, d.waited);
            }
            Proc::Dbwr(_) | Proc::DbwrSlave(_) | Proc::RmanChannel(_) => {
                self.d.k.add(Stat::BackgroundCpuTime, ran)
            }
            Proc::Hog(_) => {}
            Proc::PxServer(_) => {
                self.d.k.add(Stat::CpuUsedBySession, ran);
                self.d.k.add(Stat::ForegroundCpuWaitTime, d.waited);
            }
        }
    }

    /// With a `[server]`: a step whose computing is done stalls on the
    /// memory it touched, on the CPU it holds (not sharing the core's
    /// pipelines), before the process goes on. True when it does.
    #[cold]
    #[inline(never)]
    fn memory_stall_first(&mut self, proc: Proc, d: StepDone) -> bool {
        let Some(stall) = self.d.k.memory_stall(d.proc) else {
            return false;
        };
        self.account_cpu(proc, d);
        self.d.k.stall(d.proc, stall.max(1));
        true
    }

    fn on_timer(&mut self, timer: Timer) {
        match timer {
            Timer::SessionWake(s) => self.d.fg.session_wake(&mut self.d.k, s),
            Timer::LgwrTimeout => {
                self.d.redo.lgwr_timeout(&mut self.d.k);
                self.d.k.arm(redo::LGWR_TIMEOUT_NS, Timer::LgwrTimeout);
            }
            Timer::DbwrTick => {
                self.d.dbwr_tick();
                self.d.k.arm(redo::DBWR_TICK_NS, Timer::DbwrTick);
            }
            Timer::CssTick => self.d.membership.css_tick(&mut self.d.k),
            Timer::LinkResend(peer, epoch) => {
                self.d.membership.link_resend(&mut self.d.k, peer, epoch)
            }
            Timer::GcLost(blk, req) => {
                let master = self.d.gc.block_master(self.d.k.layout(), blk);
                let net = self.d.membership.net();
                self.d
                    .fg
                    .gc_lost(&mut self.d.k, &mut self.d.obs, net, master, blk, req);
            }
            Timer::HogWake(h, epoch) => self.maint.hog_wake(&mut self.d.k, h, epoch),
            Timer::DeadlockScan(at) => self.d.deadlock_scan(at),
        }
    }
}

// ----- what drivers, checkers and `status` read ----------------------------------
//
// Nothing here changes the instance, except taking the lines and reports
// handed out once. What takes more than a field's read is the subsystem's
// own (`Kernel::stats_now`, `session/views.rs`).

impl Instance {
    /// Counters as `v$sysstat` / `v$system_event` would show them now.
    pub fn stats(&self) -> Stats {
        self.d.k.stats_now()
    }

    pub fn params(&self) -> &Params {
        self.d.k.params()
    }

    pub fn scn(&self) -> Scn {
        self.d.k.scn()
    }

    /// Why this instance stopped (evicted by the cluster), if it did.
    pub fn halted(&self) -> Option<&str> {
        self.d.membership.halted()
    }

    /// The cluster incarnation and its members as this instance sees them.
    pub fn membership(&self) -> (u32, crate::types::InstSet) {
        (self.d.membership.incarnation(), self.d.membership.members())
    }

    /// Alert log lines written since the last call.
    pub fn take_alert_log(&mut self) -> Vec<AlertLine> {
        self.d.obs.take_alert_log(self.d.k.now())
    }

    /// Alert log lines written since the last [`take_alert_log`](Self::take_alert_log),
    /// left for it (a live host logs them as they come).
    pub fn alert_log(&self) -> &[AlertLine] {
        self.d.obs.alert_lines()
    }

    /// The deadlocks LMD broke here (the newest 64): when, and each
    /// cycle's waits as they were confirmed.
    pub fn deadlocks(&self) -> Vec<DeadlockSeen> {
        self.d.fg.row_locks().deadlocks().cloned().collect()
    }

    /// The row lock waits now, as edges of the wait-for graph: (session,
    /// the transaction it runs, the transaction it waits for).
    pub fn row_lock_waits(&self) -> Vec<(u32, crate::types::Xid, crate::types::Xid)> {
        self.d.fg.row_lock_waits()
    }

    /// Global enqueue locks kept: this instance's, and the resources it masters.
    pub fn enqueue_sizes(&self) -> (usize, usize) {
        self.d.gc.enqueue_sizes()
    }

    /// `V$GCSPFMASTER_INFO`: the objects dynamic remastering moved since
    /// the last reconfiguration (by pkey, `Layout::object_of`), with their
    /// current and previous masters and remaster counts.
    pub fn gcspfmaster_info(&self) -> Vec<PfMaster> {
        self.d.gc.remastered().to_vec()
    }

    /// Whether a reconfiguration holds the resource directory frozen.
    pub fn reconfiguring(&self) -> bool {
        self.d.membership.reconfiguring()
    }

    /// Instance recoveries this instance performed since the last call.
    pub fn take_recoveries(&mut self) -> Vec<crate::recovery::RecoveryReport> {
        self.d.membership.take_recoveries()
    }

    /// Problems with peers' messages or I/O seen so far.
    pub fn errors(&self) -> &[String] {
        self.d.k.errors()
    }

    /// Count the timers and CPU steps time handles, by kind (the
    /// benchmark's events by kind; off by default: it costs a map update
    /// per timer and step).
    pub fn count_events(&mut self) {
        self.d.k.count_events();
    }

    /// What [`Instance::count_events`] counted so far.
    pub fn event_tally(&self) -> Option<&EventTally> {
        self.d.k.event_tally()
    }

    /// Keep the sequence values handed out for [`Instance::take_nextvals`]
    /// (the simulator checks them; off by default so nothing grows unread).
    pub fn log_nextvals(&mut self, on: bool) {
        self.d.fg.log_nextvals(on);
    }

    /// Sequence values handed out since the last call: (sequence, value), in order.
    pub fn take_nextvals(&mut self) -> Vec<(u32, i64)> {
        self.d.fg.take_nextvals()
    }

    // ----- parallel execution (k-px) -----------------------------------------------------

    /// Keep every parallel statement's result for [`Instance::take_px_results`].
    pub fn log_px_results(&mut self, on: bool) {
        self.d.px.log_results(on);
    }

    /// Results of the statements this instance coordinated since the last call.
    pub fn take_px_results(&mut self) -> Vec<crate::px::PxResult> {
        self.d.px.take_results()
    }

    /// PX servers in use now, and the most ever in use at once.
    pub fn px_servers_busy(&self) -> (u32, u32) {
        self.d.px.servers_busy()
    }

    /// Whether any parallel statement is coordinated or hosted here.
    pub fn px_active(&self) -> bool {
        self.d.px.active()
    }

    /// The master's view of a global enqueue this instance masters: holders and queue length.
    pub fn enqueue_entry(
        &self,
        res: crate::msg::ResName,
    ) -> Option<(Vec<(InstId, crate::msg::LockMode)>, usize)> {
        self.d.gc.enqueue_view(res)
    }

    /// The buffers of a block in this cache (for checkers and `status`).
    pub fn buffers_of(&self, blk: BlockAddr) -> impl Iterator<Item = &Buffer> {
        self.d.cache.buffers_of(blk).map(|id| self.d.cache.get(id))
    }

    /// All buffers (for checkers).
    pub fn buffers(&self) -> impl Iterator<Item = &Buffer> {
        self.d.cache.iter().map(|(_, b)| b)
    }

    /// The blocks whose current holding changed since the last call (for a
    /// checker's coherence check); false when `out` may miss some (the first
    /// call, or too many changes between two), see [`Cache::take_current_changes`].
    ///
    /// [`Cache::take_current_changes`]: cache::Cache::take_current_changes
    pub fn take_current_changes(&mut self, out: &mut Vec<BlockAddr>) -> bool {
        self.d.cache.take_current_changes(out)
    }

    /// Buffers in use and the cache's capacity.
    pub fn cache_usage(&self) -> (usize, usize) {
        (self.d.cache.used(), self.d.cache.capacity)
    }

    /// The master's view of a block this instance masters: (X holder, S holders, PI holders).
    pub fn directory_entry(
        &self,
        blk: BlockAddr,
    ) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.d.gc.block_view(blk)
    }

    /// Whether a transaction of this instance has committed, and at which SCN.
    pub fn commit_scn(&self, xid: Xid) -> Option<Scn> {
        self.d.fg.txns().commit_scn(xid)
    }

    pub fn lms_count(&self) -> usize {
        self.d.gc.lms_count()
    }

    /// Processes waiting for a CPU now (the run queue, both classes).
    pub fn run_queue_len(&self) -> usize {
        self.d.k.cpus().queued()
    }

    /// LMS work not done yet: jobs queued, running, and set aside for a
    /// flush or a pin, over every LMS worker.
    pub fn lms_backlog(&self) -> usize {
        self.d.gc.lms_backlog()
    }

    /// Every session has stopped (its workload is disabled or done) and holds nothing.
    pub fn sessions_at_rest(&self) -> bool {
        self.d.fg.all_at_rest()
    }

    /// Sessions that are not idle.
    pub fn active_sessions(&self) -> usize {
        self.d.fg.active()
    }

    /// What sessions wait on right now: (event, sessions), by event.
    pub fn current_waits(&self) -> Vec<(crate::stats::Wait, u32)> {
        self.d.fg.current_waits()
    }

    /// Sessions that finished their iterations (finite workloads).
    pub fn sessions_finished(&self) -> bool {
        self.d.fg.all_finished()
    }

    // ----- the checkers' history and the timeline trace ----------------------------------

    /// Reads, writes and commits recorded since the last drain (when enabled).
    pub fn take_history(&mut self) -> Vec<Observation> {
        let mut out = Vec::new();
        self.d.obs.drain_history(&mut out, usize::MAX);
        out
    }

    /// Move at most `max` of the oldest observations not yet drained to the
    /// end of `out`, in the order they were recorded. Returns the instance's
    /// [`Horizon`] when that emptied the log (nothing recorded is left
    /// behind), `None` when more are left.
    pub fn drain_history(&mut self, out: &mut Vec<Observation>, max: usize) -> Option<Horizon> {
        self.d
            .obs
            .drain_history(out, max)
            .then(|| self.history_horizon())
    }

    /// The instance's [`Horizon`] now, for a driver that drained the whole
    /// log (see [`Instance::drain_history`]). Looks at every session: the
    /// simulator asks only now and then (a horizon stays true as the run
    /// goes on, only less tight), and takes [`Instance::scn`] otherwise.
    pub fn history_horizon(&self) -> Horizon {
        let open = self.d.fg.oldest_open_snapshot();
        Horizon {
            scn: self.d.k.scn(),
            snapshot: open.map_or(self.d.k.scn(), |s| s.min(self.d.k.scn())),
        }
    }

    /// How this instance's messages reach its peers.
    pub fn delivery(&self) -> Delivery {
        self.d.membership.delivery()
    }

    /// Keep trace records from now on (`on`), or stop and forget them.
    pub fn set_tracing(&mut self, on: bool) {
        self.d.obs.set_tracing(on);
    }

    /// Whether trace records are kept.
    pub fn tracing(&self) -> bool {
        self.d.obs.tracing()
    }

    /// Move the records made since the last drain to `out`, in the order
    /// they were made; returns how many were dropped since (the log full).
    pub fn drain_trace(&mut self, out: &mut Vec<TraceRecord>) -> u64 {
        self.d.obs.drain_trace(out)
    }

    /// The name of a process (`oracle3`, `LMS0`, `LGWR`, `DBW0`, `stress1`, `P000`).
    pub fn process_name(&self, proc: ProcId) -> Option<&str> {
        self.d.k.proc_name(proc)
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
