//! Routing the membership service's decisions (css.rs): heartbeats out,
//! the voting-file I/O, an eviction of others (a reconfiguration) or of
//! this instance (it stops); and [`Standing`], what that work has in flight.

use super::super::{Instance, IoPurpose, Timer};
use super::css::{HEARTBEAT_NS, Verdict};
use crate::msg::{Io, Msg};
use crate::recovery::RecoveryReport;
use crate::types::{InstId, InstSet};
use crate::voting::Vote;

/// What this instance's membership work has in flight and what came of it:
/// the disk heartbeat, the fences of the evicted, the restarted instance
/// being admitted, the dead threads no recovery has finished, and whether
/// this instance stopped.
#[derive(Debug, Default)]
pub(super) struct Standing {
    /// A disk heartbeat is in flight (one at a time: a slow store delays it).
    vote_in_flight: bool,
    /// Fences of evicted instances not yet up at the store.
    fences_in_flight: u32,
    /// A restarted instance this one is admitting (its fence being lifted).
    admitting: Option<InstId>,
    /// A restarted instance's sessions wait until it has joined.
    sessions_pending: bool,
    /// Why this instance stopped (evicted, killed), if it did: it does nothing more.
    halted: Option<String>,
    /// Dead instances whose threads no recovery has finished yet: a new
    /// reconfiguration recovers them too (the recovering instance may die).
    unrecovered: InstSet,
    /// Instance recoveries completed here since the driver last took them
    /// (one per dead instance recovered: as few as the cluster's restarts).
    recoveries: Vec<RecoveryReport>,
}

impl Standing {
    /// `joining`: a restarted instance, whose sessions wait until it has joined.
    pub fn new(joining: bool) -> Standing {
        Standing {
            sessions_pending: joining,
            ..Standing::default()
        }
    }

    #[inline(always)]
    pub fn halted(&self) -> Option<&str> {
        self.halted.as_deref()
    }

    /// Stop for `why`; false when already stopped (the first reason stays).
    fn halt(&mut self, why: String) -> bool {
        if self.halted.is_some() {
            return false;
        }
        self.halted = Some(why);
        true
    }

    /// Start a disk heartbeat unless one is in flight: true when it starts.
    fn start_vote(&mut self) -> bool {
        !std::mem::replace(&mut self.vote_in_flight, true)
    }

    fn vote_done(&mut self) {
        self.vote_in_flight = false;
    }

    fn fence_started(&mut self) {
        self.fences_in_flight += 1;
    }

    /// A fence is up at the store.
    pub fn fence_done(&mut self) {
        // The I/O table matched the completion to a fence of ours.
        debug_assert!(self.fences_in_flight > 0, "a fence completed twice");
        self.fences_in_flight = self.fences_in_flight.saturating_sub(1);
    }

    /// Every fence asked for is up: the dead threads may be read.
    pub fn fences_up(&self) -> bool {
        self.fences_in_flight == 0
    }

    /// Whether `from` may be admitted now (as far as this state knows): its
    /// old life recovered, nobody else being admitted.
    fn may_admit(&self, from: InstId) -> bool {
        !self.unrecovered.contains(from) && self.admitting.is_none()
    }

    fn admit(&mut self, from: InstId) {
        debug_assert!(self.admitting.is_none(), "admitting two instances at once");
        self.admitting = Some(from);
    }

    fn admitted(&mut self) -> Option<InstId> {
        self.admitting.take()
    }

    /// The instance joined: true once, when its sessions were waiting.
    pub fn join_done(&mut self) -> bool {
        std::mem::take(&mut self.sessions_pending)
    }

    /// The sessions wait until this restarted instance has joined.
    pub fn sessions_wait(&self) -> bool {
        self.sessions_pending
    }

    /// A reconfiguration to `members` after `dead` died: the threads to
    /// recover (the dead, and earlier ones no recovery finished).
    pub fn threads_to_recover(&mut self, dead: InstSet, members: InstSet) -> InstSet {
        self.unrecovered = InstSet((self.unrecovered.0 | dead.0) & !members.0);
        self.unrecovered
    }

    /// Nobody needs to read these threads again (a recovery finished here or
    /// a peer's said so).
    pub fn recovered(&mut self, threads: InstSet) {
        self.unrecovered = InstSet(self.unrecovered.0 & !threads.0);
    }

    pub fn report_recovery(&mut self, report: RecoveryReport) {
        self.recoveries.push(report);
    }

    pub fn take_recoveries(&mut self) -> Vec<RecoveryReport> {
        std::mem::take(&mut self.recoveries)
    }
}

impl Instance {
    /// Once a second: a network heartbeat to every member and a disk
    /// heartbeat to the voting file (one at a time: a slow store delays it).
    pub(in crate::instance) fn css_tick(&mut self) {
        let (incarnation, members) = (
            self.membership.css.incarnation(),
            self.membership.css.members(),
        );
        for peer in self.membership.css.beat_to().iter() {
            self.send(
                peer,
                Msg::Heartbeat {
                    incarnation,
                    members,
                },
            );
        }
        if self.membership.standing.start_vote() {
            let vote = self.membership.css.next_vote(self.k.now());
            self.start_io(Io::Vote { vote }, IoPurpose::Vote);
        }
        self.arm(HEARTBEAT_NS, Timer::CssTick);
    }

    /// A member's network heartbeat.
    pub(in crate::instance) fn on_heartbeat(
        &mut self,
        from: InstId,
        incarnation: u32,
        members: InstSet,
    ) {
        if incarnation == 0 && !self.membership.css.is_joining() {
            self.join_request(from);
        }
        let verdict = self
            .membership
            .css
            .heard(from, self.k.now(), incarnation, members);
        self.act_on(verdict);
    }

    /// A restarted instance beats, asking to join. The lowest-numbered
    /// member admits it once its old life is evicted and recovered and no
    /// reconfiguration is under way: it lifts the instance's fence, then
    /// reconfigures with it (`on_unfenced`).
    fn join_request(&mut self, from: InstId) {
        let lowest = self.membership.css.members().first() == Some(self.id);
        if !lowest
            || self.membership.css.is_member(from)
            || self.grd_frozen()
            || self.smon_running()
            || !self.membership.standing.may_admit(from)
        {
            return;
        }
        self.membership.standing.admit(from);
        self.start_io(Io::Unfence { inst: from }, IoPurpose::Unfence);
    }

    /// The store lets the joining instance do I/O again: reconfigure with it.
    pub(in crate::instance) fn on_unfenced(&mut self) {
        let Some(joiner) = self.membership.standing.admitted() else {
            return;
        };
        let mut members = self.membership.css.members();
        members.insert(joiner);
        self.evict(InstSet::default(), members);
    }

    /// The voting file as the disk heartbeat read it.
    pub(in crate::instance) fn on_votes(&mut self, votes: &[Vote]) {
        self.membership.standing.vote_done();
        let verdict = self.membership.css.votes(self.k.now(), votes);
        self.act_on(verdict);
    }

    fn act_on(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Wait => {}
            Verdict::Stop(why) => self.halt(why),
            Verdict::Evict { dead, survivors } => self.evict(dead, survivors),
        }
    }

    /// The store refused an I/O: this instance was fenced by the others.
    pub(in crate::instance) fn on_fenced(&mut self) {
        if self.membership.css.is_joining() {
            // Still fenced from its old life until a member admits it.
            self.membership.standing.vote_done();
            return;
        }
        self.halt("evicted: the store refused this instance's I/O (fenced by the cluster)".into());
    }

    /// This instance stops at once, as an evicted node's reboot stops it.
    pub(in crate::instance) fn halt(&mut self, why: String) {
        if self.membership.standing.halted().is_some() {
            return;
        }
        let inc = self.membership.css.incarnation();
        self.obs.alert(
            self.k.now(),
            format!("ORA-29740: {why}, group incarnation {inc}"),
        );
        self.obs.alert(self.k.now(), "Instance terminated by LMON");
        self.stop(why);
    }

    /// The block store failed an I/O of this instance or stopped answering
    /// it (live: a network cut between them, the store's machine gone):
    /// as Oracle's LGWR or DBWR on an I/O error, the instance terminates.
    /// Its redo in the store is what the survivors recover; a driver may
    /// start it again as its next life.
    pub fn terminate_on_io_error(&mut self, now: crate::config::Nanos, error: &str) {
        if self.membership.standing.halted().is_some() {
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

    /// The instance was killed (SIGKILL of every process): it stops at once.
    pub fn crash(&mut self, now: crate::config::Nanos) {
        if self.membership.standing.halted().is_none() {
            self.k.catch_up(now);
            self.stop("killed".into());
        }
    }

    /// A restarted instance takes over the counters of its earlier life, so
    /// that a phase's figures (differences of counters) stay whole across
    /// the restart; Oracle's would start from zero, and AWR would refuse a
    /// snapshot pair across it.
    pub fn carry_over(&mut self, earlier: &Instance) {
        self.k
            .carry_over(earlier.k.stats().clone(), Some(earlier.k.cpus().busy()));
    }

    /// [`Instance::carry_over`] from the earlier life's counters as its
    /// last [`Instance::stats`] showed them (the live runner keeps them
    /// across the process's death; they include its CPU busy time).
    pub fn carry_over_stats(&mut self, earlier: crate::stats::Stats) {
        self.k.carry_over(earlier, None);
    }

    /// Every process stops; what was only in memory (the buffer cache, the
    /// undo in it) is gone, what was written is in the store.
    fn stop(&mut self, why: String) {
        self.membership.standing.halt(why);
        self.k.stop();
        self.cache =
            super::super::cache::Cache::new(self.cache.capacity, self.k.layout().total_blocks);
    }

    /// Others are dead or on the losing side (this instance's own finding,
    /// or a survivor's report of the new incarnation): evict them and reconfigure.
    pub(in crate::instance) fn evict(&mut self, dead: InstSet, survivors: InstSet) {
        let now = self.k.now();
        let (old, new) = self.membership.css.reconfigure(survivors, now);
        self.new_incarnation(old, new, dead, survivors);
    }

    /// A member's report brought incarnation `incarnation` of `members`
    /// here first (or admitted this restarted instance): join it.
    pub(in crate::instance) fn join_incarnation(&mut self, incarnation: u32, members: InstSet) {
        let dead = InstSet(self.membership.css.members().0 & !members.0);
        let (old, new) = self
            .membership
            .css
            .adopt(incarnation, members, self.k.now());
        self.new_incarnation(old, new, dead, members);
    }

    fn new_incarnation(&mut self, old: u32, new: u32, dead: InstSet, survivors: InstSet) {
        // The departed masters' resources move to the survivors.
        self.gc.set_members(survivors);
        self.alert_reconfiguration(old, new, dead);
        // Fence the dead at the store before anyone reads their redo: an
        // evicted instance that is only frozen must not write behind the
        // recovery's back when it wakes.
        for d in dead.iter() {
            self.membership.standing.fence_started();
            self.start_io(Io::Fence { inst: d }, IoPurpose::Fence);
            // Nothing is sent to it again, acknowledged or not.
            self.membership.links.forget(d);
        }
        self.begin_reconfig(dead);
    }
}
