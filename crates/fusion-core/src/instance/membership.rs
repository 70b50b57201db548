//! Routing the membership service's decisions (css.rs): heartbeats out,
//! the voting-file I/O, an eviction of others (a reconfiguration) or of
//! this instance (it stops).

use super::css::{HEARTBEAT_NS, Verdict};
use super::{Instance, IoPurpose, Timer};
use crate::msg::{Io, Msg};
use crate::types::{InstId, InstSet};
use crate::voting::Vote;

impl Instance {
    /// Once a second: a network heartbeat to every member and a disk
    /// heartbeat to the voting file (one at a time: a slow store delays it).
    pub(super) fn css_tick(&mut self) {
        let (incarnation, members) = (self.css.incarnation(), self.css.members());
        for peer in self.css.beat_to().iter() {
            self.send(
                peer,
                Msg::Heartbeat {
                    incarnation,
                    members,
                },
            );
        }
        if !self.vote_in_flight {
            self.vote_in_flight = true;
            let vote = self.css.next_vote(self.k.now());
            self.start_io(Io::Vote { vote }, IoPurpose::Vote);
        }
        self.arm(HEARTBEAT_NS, Timer::CssTick);
    }

    /// A member's network heartbeat.
    pub(super) fn on_heartbeat(&mut self, from: InstId, incarnation: u32, members: InstSet) {
        if incarnation == 0 && !self.css.is_joining() {
            self.join_request(from);
        }
        let verdict = self.css.heard(from, self.k.now(), incarnation, members);
        self.act_on(verdict);
    }

    /// A restarted instance beats, asking to join. The lowest-numbered
    /// member admits it once its old life is evicted and recovered and no
    /// reconfiguration is under way: it lifts the instance's fence, then
    /// reconfigures with it (`on_unfenced`).
    fn join_request(&mut self, from: InstId) {
        let lowest = self.css.members().first() == Some(self.id);
        if !lowest
            || self.css.is_member(from)
            || self.grd_frozen()
            || self.smon_running()
            || self.unrecovered.contains(from)
            || self.admitting.is_some()
        {
            return;
        }
        self.admitting = Some(from);
        self.start_io(Io::Unfence { inst: from }, IoPurpose::Unfence);
    }

    /// The store lets the joining instance do I/O again: reconfigure with it.
    pub(super) fn on_unfenced(&mut self) {
        let Some(joiner) = self.admitting.take() else {
            return;
        };
        let mut members = self.css.members();
        members.insert(joiner);
        self.evict(InstSet::default(), members);
    }

    /// The voting file as the disk heartbeat read it.
    pub(super) fn on_votes(&mut self, votes: &[Vote]) {
        self.vote_in_flight = false;
        let verdict = self.css.votes(self.k.now(), votes);
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
    pub(super) fn on_fenced(&mut self) {
        if self.css.is_joining() {
            // Still fenced from its old life until a member admits it.
            self.vote_in_flight = false;
            return;
        }
        self.halt("evicted: the store refused this instance's I/O (fenced by the cluster)".into());
    }

    /// This instance stops at once, as an evicted node's reboot stops it.
    pub(super) fn halt(&mut self, why: String) {
        if self.halted.is_some() {
            return;
        }
        let inc = self.css.incarnation();
        self.alert.write(
            self.k.now(),
            format!("ORA-29740: {why}, group incarnation {inc}"),
        );
        self.alert
            .write(self.k.now(), "Instance terminated by LMON");
        self.stop(why);
    }

    /// The instance was killed (SIGKILL of every process): it stops at once.
    pub fn crash(&mut self, now: crate::config::Nanos) {
        if self.halted.is_none() {
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
        self.halted = Some(why);
        self.k.stop();
        self.cache = super::cache::Cache::new(self.cache.capacity, self.k.layout().total_blocks);
    }

    /// Others are dead or on the losing side (this instance's own finding,
    /// or a survivor's report of the new incarnation): evict them and reconfigure.
    pub(super) fn evict(&mut self, dead: InstSet, survivors: InstSet) {
        let (old, new) = self.css.reconfigure(survivors, self.k.now());
        self.new_incarnation(old, new, dead, survivors);
    }

    /// A member's report brought incarnation `incarnation` of `members`
    /// here first (or admitted this restarted instance): join it.
    pub(super) fn join_incarnation(&mut self, incarnation: u32, members: InstSet) {
        let dead = InstSet(self.css.members().0 & !members.0);
        let (old, new) = self.css.adopt(incarnation, members, self.k.now());
        self.new_incarnation(old, new, dead, members);
    }

    fn new_incarnation(&mut self, old: u32, new: u32, dead: InstSet, survivors: InstSet) {
        // The departed masters' resources move to the survivors.
        self.masters.set_members(survivors);
        self.alert_reconfiguration(old, new, dead);
        // Fence the dead at the store before anyone reads their redo: an
        // evicted instance that is only frozen must not write behind the
        // recovery's back when it wakes.
        for d in dead.iter() {
            self.fences_in_flight += 1;
            self.start_io(Io::Fence { inst: d }, IoPurpose::Fence);
            // Nothing is sent to it again, acknowledged or not.
            self.links.forget(d);
        }
        self.begin_reconfig(dead);
    }
}
