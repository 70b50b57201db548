//! The membership service's work on the kernel (css.rs decides):
//! heartbeats out, the voting-file I/O, admissions and fences; its verdicts
//! (an eviction of others, a reconfiguration, or of this instance, which
//! stops) are answered for the instance to act on. And [`Standing`], what
//! that work has in flight.

use super::super::events::{IoPurpose, Timer};
use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::Membership;
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

impl Membership {
    /// Once a second: a network heartbeat to every member and a disk
    /// heartbeat to the voting file (one at a time: a slow store delays it).
    pub fn css_tick(&mut self, k: &mut Kernel) {
        let (incarnation, members) = (self.css.incarnation(), self.css.members());
        for peer in self.css.beat_to().iter() {
            self.net().send(
                k,
                peer,
                Msg::Heartbeat {
                    incarnation,
                    members,
                },
            );
        }
        if self.standing.start_vote() {
            let vote = self.css.next_vote(k.now());
            k.start_io(Io::Vote { vote }, IoPurpose::Vote);
        }
        k.arm(HEARTBEAT_NS, Timer::CssTick);
    }

    /// A member's network heartbeat: what membership decides of it.
    pub fn on_heartbeat(
        &mut self,
        k: &mut Kernel,
        from: InstId,
        incarnation: u32,
        members: InstSet,
    ) -> Verdict {
        if incarnation == 0 && !self.css.is_joining() {
            self.join_request(k, from);
        }
        self.css.heard(from, k.now(), incarnation, members)
    }

    /// A restarted instance beats, asking to join. The lowest-numbered
    /// member admits it once its old life is evicted and recovered and no
    /// reconfiguration is under way: it lifts the instance's fence, then
    /// reconfigures with it ([`Membership::on_unfenced`]).
    fn join_request(&mut self, k: &mut Kernel, from: InstId) {
        let lowest = self.css.members().first() == Some(k.id());
        if !lowest
            || self.css.is_member(from)
            || self.reconfig.frozen()
            || self.smon.running()
            || !self.standing.may_admit(from)
        {
            return;
        }
        self.standing.admit(from);
        k.start_io(Io::Unfence { inst: from }, IoPurpose::Unfence);
    }

    /// The store lets the joining instance do I/O again: the members to
    /// reconfigure to (with it).
    pub fn on_unfenced(&mut self) -> Option<InstSet> {
        let joiner = self.standing.admitted()?;
        let mut members = self.css.members();
        members.insert(joiner);
        Some(members)
    }

    /// The voting file as the disk heartbeat read it: what membership decides.
    pub fn on_votes(&mut self, k: &Kernel, votes: &[Vote]) -> Verdict {
        self.standing.vote_done();
        self.css.votes(k.now(), votes)
    }

    /// The store refused an I/O: this instance was fenced by the others.
    /// Why it stops (`None`: a restarted instance still fenced from its
    /// old life until a member admits it goes on).
    pub fn on_fenced(&mut self) -> Option<String> {
        if self.css.is_joining() {
            self.standing.vote_done();
            return None;
        }
        Some("evicted: the store refused this instance's I/O (fenced by the cluster)".into())
    }

    /// This instance stops, evicted by LMON for `why`: the alert log says so.
    pub fn alert_halt(&self, k: &Kernel, obs: &mut Observer, why: &str) {
        let inc = self.css.incarnation();
        obs.alert(
            k.now(),
            format!("ORA-29740: {why}, group incarnation {inc}"),
        );
        obs.alert(k.now(), "Instance terminated by LMON");
    }

    /// This instance stopped for `why` (the first reason stays).
    pub fn halt(&mut self, why: String) {
        self.standing.halt(why);
    }

    /// Others are dead or on the losing side: the incarnation of
    /// `survivors` begins. (old, new) incarnation numbers.
    pub fn reconfigure(&mut self, k: &Kernel, survivors: InstSet) -> (u32, u32) {
        self.css.reconfigure(survivors, k.now())
    }

    /// A member's report brought incarnation `incarnation` of `members`
    /// here first (or admitted this restarted instance): (old, new)
    /// incarnation numbers and the instances that left.
    pub fn adopt(&mut self, k: &Kernel, incarnation: u32, members: InstSet) -> (u32, u32, InstSet) {
        let dead = InstSet(self.css.members().0 & !members.0);
        let (old, new) = self.css.adopt(incarnation, members, k.now());
        (old, new, dead)
    }

    /// Fence the dead at the store before anyone reads their redo: an
    /// evicted instance that is only frozen must not write behind the
    /// recovery's back when it wakes. Nothing is sent to them again,
    /// acknowledged or not.
    pub fn fence(&mut self, k: &mut Kernel, dead: InstSet) {
        debug_assert!(!dead.contains(k.id()), "{} fenced itself", k.id());
        for d in dead.iter() {
            self.standing.fence_started();
            k.start_io(Io::Fence { inst: d }, IoPurpose::Fence);
            self.links.forget(d);
        }
    }
}
