//! The membership service's work on the kernel (css.rs decides):
//! heartbeats out, the voting-file I/O, admissions and fences; its verdicts
//! (an eviction of others, a reconfiguration, or of this instance, which
//! stops) are answered for the instance to act on. What that work has in
//! flight is `Standing` (standing.rs).

use super::super::events::{IoPurpose, Timer};
use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::Membership;
use super::css::{HEARTBEAT_NS, Verdict};
use crate::msg::{Io, Msg};
use crate::types::{InstId, InstSet};
use crate::voting::Vote;

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
