//! What drivers, checkers and `status` read, each documented at
//! `Instance`'s method of the same name (`mod.rs`), which forwards here.
//! Nothing here changes the instance, except taking the lines and reports
//! handed out once. What takes more than a field's read is the
//! subsystem's own (`Kernel::stats_now`, `session/views.rs`).

use super::Dispatch;
use crate::config::Params;
use crate::cpu::ProcId;
use crate::instance::cache::Buffer;
use crate::instance::gc::PfMaster;
use crate::instance::kernel::EventTally;
use crate::instance::membership::Delivery;
use crate::instance::observe::{AlertLine, Horizon, Observation, TraceRecord};
use crate::instance::session::DeadlockSeen;
use crate::stats::Stats;
use crate::types::{BlockAddr, InstId, Scn, Xid};

impl Dispatch {
    pub(in crate::instance) fn stats(&self) -> Stats {
        self.k.stats_now()
    }

    pub(in crate::instance) fn params(&self) -> &Params {
        self.k.params()
    }

    pub(in crate::instance) fn scn(&self) -> Scn {
        self.k.scn()
    }

    pub(in crate::instance) fn halted(&self) -> Option<&str> {
        self.membership.halted()
    }

    pub(in crate::instance) fn membership(&self) -> (u32, crate::types::InstSet) {
        (self.membership.incarnation(), self.membership.members())
    }

    pub(in crate::instance) fn unrecovered(&self) -> crate::types::InstSet {
        self.membership.unrecovered()
    }

    pub(in crate::instance) fn take_alert_log(&mut self) -> Vec<AlertLine> {
        self.obs.take_alert_log(self.k.now())
    }

    pub(in crate::instance) fn alert_log(&self) -> &[AlertLine] {
        self.obs.alert_lines()
    }

    pub(in crate::instance) fn deadlocks(&self) -> Vec<DeadlockSeen> {
        self.fg.row_locks().deadlocks().cloned().collect()
    }

    pub(in crate::instance) fn row_lock_waits(
        &self,
    ) -> Vec<(u32, crate::types::Xid, crate::types::Xid)> {
        self.fg.row_lock_waits()
    }

    pub(in crate::instance) fn enqueue_sizes(&self) -> (usize, usize) {
        self.gc.enqueue_sizes()
    }

    pub(in crate::instance) fn gcspfmaster_info(&self) -> Vec<PfMaster> {
        self.gc.remastered().to_vec()
    }

    pub(in crate::instance) fn reconfiguring(&self) -> bool {
        self.membership.reconfiguring()
    }

    pub(in crate::instance) fn take_recoveries(&mut self) -> Vec<crate::recovery::RecoveryReport> {
        self.membership.take_recoveries()
    }

    pub(in crate::instance) fn errors(&self) -> &[String] {
        self.k.errors()
    }

    pub(in crate::instance) fn count_events(&mut self) {
        self.k.count_events();
    }

    pub(in crate::instance) fn event_tally(&self) -> Option<&EventTally> {
        self.k.event_tally()
    }

    pub(in crate::instance) fn log_nextvals(&mut self, on: bool) {
        self.fg.log_nextvals(on);
    }

    pub(in crate::instance) fn take_nextvals(&mut self) -> Vec<(u32, i64)> {
        self.fg.take_nextvals()
    }

    // ----- parallel execution (k-px) -----------------------------------------------------

    pub(in crate::instance) fn log_px_results(&mut self, on: bool) {
        self.px.log_results(on);
    }

    pub(in crate::instance) fn take_px_results(&mut self) -> Vec<crate::px::PxResult> {
        self.px.take_results()
    }

    pub(in crate::instance) fn px_servers_busy(&self) -> (u32, u32) {
        self.px.servers_busy()
    }

    pub(in crate::instance) fn px_active(&self) -> bool {
        self.px.active()
    }

    pub(in crate::instance) fn enqueue_entry(
        &self,
        res: crate::msg::ResName,
    ) -> Option<(Vec<(InstId, crate::msg::LockMode)>, usize)> {
        self.gc.enqueue_view(res)
    }

    pub(in crate::instance) fn buffers_of(&self, blk: BlockAddr) -> impl Iterator<Item = &Buffer> {
        self.cache.buffers_of(blk).map(|id| self.cache.get(id))
    }

    pub(in crate::instance) fn buffers(&self) -> impl Iterator<Item = &Buffer> {
        self.cache.iter().map(|(_, b)| b)
    }

    pub(in crate::instance) fn take_current_changes(&mut self, out: &mut Vec<BlockAddr>) -> bool {
        self.cache.take_current_changes(out)
    }

    pub(in crate::instance) fn cache_usage(&self) -> (usize, usize) {
        (self.cache.used(), self.cache.capacity())
    }

    pub(in crate::instance) fn directory_entry(
        &self,
        blk: BlockAddr,
    ) -> Option<(Option<InstId>, Vec<InstId>, Vec<InstId>)> {
        self.gc.block_view(blk)
    }

    pub(in crate::instance) fn commit_scn(&self, xid: Xid) -> Option<Scn> {
        self.fg.txns().commit_scn(xid)
    }

    pub(in crate::instance) fn lms_count(&self) -> usize {
        self.gc.lms_count()
    }

    pub(in crate::instance) fn run_queue_len(&self) -> usize {
        self.k.cpus().queued()
    }

    pub(in crate::instance) fn lms_backlog(&self) -> usize {
        self.gc.lms_backlog()
    }

    pub(in crate::instance) fn sessions_at_rest(&self) -> bool {
        self.fg.all_at_rest()
    }

    pub(in crate::instance) fn active_sessions(&self) -> usize {
        self.fg.active()
    }

    pub(in crate::instance) fn current_waits(&self) -> Vec<(crate::stats::Wait, u32)> {
        self.fg.current_waits()
    }

    pub(in crate::instance) fn sessions_finished(&self) -> bool {
        self.fg.all_finished()
    }

    // ----- the checkers' history and the timeline trace ----------------------------------

    pub(in crate::instance) fn take_history(&mut self) -> Vec<Observation> {
        let mut out = Vec::new();
        self.obs.drain_history(&mut out, usize::MAX);
        out
    }

    pub(in crate::instance) fn drain_history(
        &mut self,
        out: &mut Vec<Observation>,
        max: usize,
    ) -> Option<Horizon> {
        self.obs
            .drain_history(out, max)
            .then(|| self.history_horizon())
    }

    pub(in crate::instance) fn history_horizon(&self) -> Horizon {
        let open = self.fg.oldest_open_snapshot();
        Horizon {
            scn: self.k.scn(),
            snapshot: open.map_or(self.k.scn(), |s| s.min(self.k.scn())),
        }
    }

    pub(in crate::instance) fn delivery(&self) -> Delivery {
        self.membership.delivery()
    }

    pub(in crate::instance) fn set_tracing(&mut self, on: bool) {
        self.obs.set_tracing(on);
    }

    pub(in crate::instance) fn tracing(&self) -> bool {
        self.obs.tracing()
    }

    pub(in crate::instance) fn drain_trace(&mut self, out: &mut Vec<TraceRecord>) -> u64 {
        self.obs.drain_trace(out)
    }

    pub(in crate::instance) fn process_name(&self, proc: ProcId) -> Option<&str> {
        self.k.proc_name(proc)
    }
}
