//! The driver's inputs, applied: what `Instance`'s API (`mod.rs`, where
//! each is documented) hands over, with maintenance lent for the inputs
//! that move time (a hog's or an RMAN channel's step, a backup's read, a
//! `stress_cpu` or backup command).
//! Time moves here: CPU steps end and timers fire in time order
//! (`advance`), and each input ends by moving the sessions on.

use std::sync::Arc;

use super::Dispatch;
use crate::config::Nanos;
use crate::cpu::{ProcId, StepDone};
use crate::instance::cache::Cache;
use crate::instance::events::{IoPurpose, Proc, Timer};
use crate::instance::input::{Command, InstanceConfig};
use crate::instance::kernel::{Due, Input, Kernel};
use crate::instance::maintenance::Maintenance;
use crate::instance::observe::Observer;
use crate::instance::session::{Foregrounds, LIFE_XIDS};
use crate::instance::{gc, membership, px, redo};
use crate::msg::{Action, Envelope, IoResult, Msg};
use crate::stats::Stat;
use crate::types::InstId;

impl Dispatch {
    /// The kernel and every subsystem of a new instance, its background
    /// processes started and its first timers armed.
    pub(in crate::instance) fn new(cfg: InstanceConfig) -> Dispatch {
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
        let mut d = Dispatch {
            id,
            cache: Cache::new(capacity, layout.total_blocks),
            gc: gc::GlobalCache::new(id, instances),
            redo: redo::Redo::new(0),
            px: px::PxState::default(),
            obs: Observer::new(record_history),
            membership: membership::Membership::new(id, instances, &params, life, delivery),
            fg: Foregrounds::new(
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
            k: Kernel::new(id, instances, params, costs, layout, seed, server),
        };
        // Worker numbers are 8-bit: `gcs_server_processes` and
        // `db_writer_processes` are at most 100 (`Params::set`, the loader),
        // and the LMS count derived from `cpu_count` (at most 1,024) is 34.
        let worker = |i: u32| u8::try_from(i).expect("at most 100 LMS and DBWR processes");
        let lms: Vec<ProcId> = (0..d.k.params().lms_count())
            .map(|i| d.k.add_proc(Proc::Lms(worker(i)), format!("LMS{i}")))
            .collect();
        d.gc.start_lms(lms);
        // Nothing is in it yet but LGWR's process, numbered after the LMSs.
        d.redo = redo::Redo::new(d.k.add_proc(Proc::Lgwr, "LGWR".into()));
        d.redo.start_writers(&mut d.k);
        d.px.prestart(&mut d.k);
        d.fg.register_statements(&mut d.k, &catalog);
        if !d.membership.sessions_wait() {
            d.fg.start_sessions(&mut d.k);
        }
        d.k.arm(redo::LGWR_TIMEOUT_NS, Timer::LgwrTimeout);
        d.k.arm(redo::DBWR_TICK_NS, Timer::DbwrTick);
        d.k.arm(membership::HEARTBEAT_NS, Timer::CssTick);
        d
    }

    // ----- the driver's interface -------------------------------------------------

    pub(in crate::instance) fn handle_message(
        &mut self,
        maint: &mut Maintenance,
        now: Nanos,
        env: Envelope,
    ) {
        if self.k.counting() {
            self.k.tally_input(Input::Message(env.msg.kind()));
        }
        if self.membership.halted().is_some() {
            return;
        }
        self.advance(maint, now);
        if env.to != self.id || env.from.0 >= self.k.instance_count() || env.from == self.id {
            self.k.error(&format!(
                "rejected a message addressed to {} from {} (cluster of {})",
                env.to,
                env.from,
                self.k.instance_count()
            ));
            return;
        }
        if let Msg::Heartbeat {
            incarnation,
            members,
        } = env.msg
        {
            // Clusterware's, not the database's: it carries no SCN to observe.
            self.on_heartbeat(env.from, incarnation, members);
            return;
        }
        if !self.membership.is_member(env.from)
            && env.incarnation <= self.membership.incarnation()
            && !matches!(env.msg, Msg::Rebuild(_))
        {
            // An evicted instance's late messages: it is no longer in the
            // cluster. (A newer incarnation's messages, reports first, may
            // come from members this instance does not know of yet.)
            return;
        }
        if self
            .membership
            .sent_by_earlier_life(env.from, env.incarnation)
        {
            // Its earlier life's late messages, now that a new life of it
            // is a member: that life's links and requests are gone.
            return;
        }
        self.membership.alive(env.from, now);
        if self.membership.is_joining()
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
        if self.membership.links_on() || env.link.seq != 0 || matches!(env.msg, Msg::LinkAck { .. })
        {
            for env in self.membership.link_receive(&mut self.k, env) {
                self.k.observe_scn(env.scn);
                self.receive(env);
            }
        } else {
            self.k.observe_scn(env.scn);
            self.receive(env);
        }
        self.run_ready();
        self.drm_after_input();
    }

    pub(in crate::instance) fn handle_io(
        &mut self,
        maint: &mut Maintenance,
        now: Nanos,
        id: u64,
        result: IoResult,
    ) {
        if self.k.counting() {
            self.k.tally_input(Input::Io);
        }
        if self.membership.halted().is_some() {
            return;
        }
        self.advance(maint, now);
        let Some(purpose) = self.k.io_done(id) else {
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
                self.k.incr(Stat::PhysicalReads);
                self.k.incr(Stat::PhysicalReadsCache);
                self.on_grant_read(blk, req, mode, *block, scan);
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
            ) => self.on_block_written(blk, scn, rba, writer, started),
            (IoPurpose::RedoWrite { upto, started }, IoResult::Written) => {
                self.on_redo_written(upto, started)
            }
            (IoPurpose::PxRead { worker, seq }, IoResult::ReadMany(blocks)) => {
                self.px_read_done(worker, seq, blocks)
            }
            (IoPurpose::BackupRead { channel }, IoResult::ReadMany(blocks)) => {
                maint.backup_read_done(&mut self.k, channel, blocks.len())
            }
            (IoPurpose::Vote, IoResult::Votes(votes)) => self.on_votes(&votes),
            (IoPurpose::Fence, IoResult::Written) => {
                self.membership.fence_done();
                self.membership.smon_read_threads(&mut self.k);
            }
            (IoPurpose::Unfence, IoResult::Written) => self.on_unfenced(),
            (IoPurpose::PromoteCheck { blk }, IoResult::Read(disk)) => {
                self.k.incr(Stat::PhysicalReads);
                self.on_promote_checked(blk, disk.scn);
            }
            (_, IoResult::Fenced) => self.on_fenced(),
            // A recovery started over drops its earlier run's I/O.
            (IoPurpose::RedoScan { run }, IoResult::Redo(records)) => {
                if self.membership.smon_current(run) {
                    self.on_redo_read(records);
                }
            }
            (IoPurpose::RecoverRead { run }, IoResult::Read(block)) => {
                self.k.incr(Stat::PhysicalReads);
                if self.membership.smon_current(run) {
                    self.smon_disk_read(*block);
                }
            }
            (IoPurpose::RecoverWrite { blk, scn, run }, IoResult::Written) => {
                self.k.incr(Stat::PhysicalWrites);
                if self.membership.smon_current(run) {
                    self.smon_block_done(blk, scn, true);
                }
            }
            (p, r) => self
                .k
                .error(&format!("I/O {id} ({p:?}) completed with {r:?}")),
        }
        self.run_ready();
        self.drm_after_input();
    }

    pub(in crate::instance) fn handle_timeout(&mut self, maint: &mut Maintenance, now: Nanos) {
        if self.k.counting() {
            return self.handle_timeout_counted(maint, now);
        }
        if self.membership.halted().is_some() {
            return;
        }
        self.advance(maint, now);
        self.run_ready();
        self.drm_after_input();
    }

    pub(in crate::instance) fn handle_timeouts_folded(
        &mut self,
        maint: &mut Maintenance,
        now: Nanos,
        quiet_until: Nanos,
    ) -> (u32, Nanos) {
        let mut at = now;
        let mut handled = 0u32;
        loop {
            if self.k.counting() {
                self.k.tally_input(Input::Folded);
            }
            if self.membership.halted().is_none() {
                self.advance(maint, at);
                self.run_ready();
                self.drm_after_input();
            }
            handled += 1;
            if self.k.has_actions() {
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

    /// `handle_timeout`, counting whether anything was due.
    #[cold]
    #[inline(never)]
    fn handle_timeout_counted(&mut self, maint: &mut Maintenance, now: Nanos) {
        // Nothing was due: no CPU step ends and no timer fires by `now`.
        let idle = self.k.next_deadline().is_none_or(|d| d > now);
        self.k.tally_input(Input::Wake { idle });
        if self.membership.halted().is_none() {
            self.advance(maint, now);
            self.run_ready();
            self.drm_after_input();
        }
    }

    pub(in crate::instance) fn handle_reconnect(
        &mut self,
        maint: &mut Maintenance,
        now: Nanos,
        peer: InstId,
    ) {
        if self.membership.halted().is_some() {
            return;
        }
        self.advance(maint, now);
        self.membership.reconnected(&mut self.k, peer);
    }

    pub(in crate::instance) fn terminate_on_io_error(&mut self, now: Nanos, error: &str) {
        if self.membership.halted().is_some() {
            return;
        }
        self.k.catch_up(now);
        self.obs.alert(
            self.k.now(),
            format!("I/O error on the block store: {error}"),
        );
        self.obs.alert(
            self.k.now(),
            "Instance terminated due to an I/O error on the block store",
        );
        self.stop(format!("terminated: I/O error on the block store: {error}"));
    }

    pub(in crate::instance) fn crash(&mut self, now: Nanos) {
        if self.membership.halted().is_none() {
            self.k.catch_up(now);
            self.stop("killed".into());
        }
    }

    pub(in crate::instance) fn carry_over(&mut self, earlier: &Dispatch) {
        self.k
            .carry_over(earlier.k.stats().clone(), Some(earlier.k.cpus().busy()));
        if let Some(t) = earlier.k.event_tally() {
            self.k.carry_tally(t.clone());
        }
    }

    pub(in crate::instance) fn carry_over_stats(&mut self, earlier: crate::stats::Stats) {
        self.k.carry_over(earlier, None);
    }

    pub(in crate::instance) fn apply(&mut self, maint: &mut Maintenance, now: Nanos, cmd: Command) {
        if self.membership.halted().is_some() {
            return;
        }
        self.advance(maint, now);
        match cmd {
            Command::SetParameter { name, value } => self.k.set_param(&name, &value),
            Command::StressCpu { workers, load_pct } => {
                maint.set_hogs(&mut self.k, &mut self.obs, workers, load_pct)
            }
            Command::EnableWorkloads(list) => {
                self.fg.enable_workloads(list);
                self.fg.wake_enabled_sessions(&mut self.k);
            }
            Command::ResetPeaks => self.k.stats_mut().reset_peaks(),
            Command::Checkpoint => self.begin_checkpoint(),
            Command::Backup {
                channels,
                section_size_mb,
            } => maint.begin_backup(&mut self.k, &mut self.obs, channels, section_size_mb),
        }
        self.run_ready();
    }

    // Called for every event by the driver, from another crate.
    #[inline]
    pub(in crate::instance) fn poll_action(&mut self) -> Option<Action> {
        self.k.pop_action()
    }

    // Called for every event by the driver, from another crate.
    #[inline]
    pub(in crate::instance) fn next_deadline(&self) -> Option<Nanos> {
        if self.membership.halted().is_some() {
            return None;
        }
        self.k.next_deadline()
    }

    // ----- internals --------------------------------------------------------------

    /// Move time to `now`: finish CPU steps and fire timers in time order.
    fn advance(&mut self, maint: &mut Maintenance, now: Nanos) {
        self.k.begin_advance(now);
        while let Some(due) = self.k.next_due(now) {
            match due {
                Due::Steps => {
                    // Read in place: handling a step never adds one (only
                    // the CPUs' advance does), so no take-and-put-back.
                    let mut k = 0;
                    while let Some(d) = self.k.step_done(k) {
                        k += 1;
                        self.on_step_done(maint, d);
                    }
                    self.k.settle();
                }
                Due::Timer(timer) => self.on_timer(maint, timer),
            }
            self.run_ready();
        }
        self.k.end_advance(now);
    }

    // Out of line: inlined into `advance`'s loop, with a session's CPU step
    // inlined into it, it cost 2.4 % more instructions on the transfer run.
    #[inline(never)]
    fn on_step_done(&mut self, maint: &mut Maintenance, d: StepDone) {
        let Some(proc) = self.k.proc(d.proc) else {
            return;
        };
        self.obs.trace_cpu(d);
        if self.k.numa().is_some() && self.memory_stall_first(proc, d) {
            return;
        }
        self.account_cpu(proc, d);
        match proc {
            Proc::Session(s) => self.session_cpu_done(s, d),
            Proc::Lms(w) => self.lms_step_done(w, d),
            Proc::Lgwr => self.lgwr_step_done(),
            Proc::Dbwr(w) => self.redo.dbwr_step_done(&mut self.k, &self.cache, w),
            Proc::DbwrSlave(i) => self.dbwr_slave_step_done(i),
            Proc::Hog(h) => maint.hog_step_done(&mut self.k, h),
            Proc::PxServer(i) => self.px_server_step_done(i, d),
            Proc::RmanChannel(c) => maint.backup_step_done(&mut self.k, &mut self.obs, c),
        }
    }

    /// The CPU a finished step used and waited for, in the statistics.
    #[inline(always)]
    fn account_cpu(&mut self, proc: Proc, d: StepDone) {
        let ran = (d.done_at - d.requested_at).saturating_sub(d.waited);
        self.k.add(Stat::OsCpuWaitTime, d.waited);
        match proc {
            Proc::Session(s) => {
                self.k.add(Stat::CpuUsedBySession, ran);
                if let Some(st) = self.fg.stmt_target(s) {
                    self.k.stats_mut().statements[st].cpu_ns += ran;
                }
                self.k.add(Stat::ForegroundCpuWaitTime, d.waited);
            }
            Proc::Lms(_) => {
                self.k.add(Stat::BackgroundCpuTime, ran);
                self.k.add(Stat::LmsCpuWaitTime, d.waited);
            }
            Proc::Lgwr => {
                self.k.add(Stat::BackgroundCpuTime, ran);
                self.k.add(Stat::LgwrCpuWaitTime, d.waited);
            }
            Proc::Dbwr(_) | Proc::DbwrSlave(_) | Proc::RmanChannel(_) => {
                self.k.add(Stat::BackgroundCpuTime, ran)
            }
            Proc::Hog(_) => {}
            Proc::PxServer(_) => {
                self.k.add(Stat::CpuUsedBySession, ran);
                self.k.add(Stat::ForegroundCpuWaitTime, d.waited);
            }
        }
    }

    /// With a `[server]`: a step whose computing is done stalls on the
    /// memory it touched, on the CPU it holds (not sharing the core's
    /// pipelines), before the process goes on. True when it does.
    #[cold]
    #[inline(never)]
    fn memory_stall_first(&mut self, proc: Proc, d: StepDone) -> bool {
        let Some(stall) = self.k.memory_stall(d.proc) else {
            return false;
        };
        self.account_cpu(proc, d);
        self.k.stall(d.proc, stall.max(1));
        true
    }

    fn on_timer(&mut self, maint: &mut Maintenance, timer: Timer) {
        match timer {
            Timer::SessionWake(s) => self.fg.session_wake(&mut self.k, s),
            Timer::LgwrTimeout => {
                self.redo.lgwr_timeout(&mut self.k);
                self.k.arm(redo::LGWR_TIMEOUT_NS, Timer::LgwrTimeout);
            }
            Timer::DbwrTick => {
                self.dbwr_tick();
                self.k.arm(redo::DBWR_TICK_NS, Timer::DbwrTick);
            }
            Timer::CssTick => self.membership.css_tick(&mut self.k),
            Timer::LinkResend(peer, epoch) => self.membership.link_resend(&mut self.k, peer, epoch),
            Timer::GcLost(blk, req) => {
                let master = self.gc.block_master(self.k.layout(), blk);
                let net = self.membership.net();
                self.fg
                    .gc_lost(&mut self.k, &mut self.obs, net, master, blk, req);
            }
            Timer::HogWake(h, epoch) => maint.hog_wake(&mut self.k, h, epoch),
            Timer::DeadlockScan(at) => self.deadlock_scan(at),
        }
    }
}
