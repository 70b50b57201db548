//! The cluster-membership service of one instance (Clusterware's CSS): a
//! network heartbeat to every member each second, a disk heartbeat to the
//! voting file on the store each second, and the decision that a silent
//! member is dead.
//!
//! `Css` owns the membership and answers with decisions; the instance sends
//! the heartbeats, does the voting I/O and acts on a [`Verdict`].
//!
//! The rules (rac-internals.md §8):
//! - a member whose network heartbeat has not been heard for
//!   `css_misscount` is silent;
//! - a silent member whose disk heartbeat also stopped is dead (killed, or
//!   frozen longer than `css_misscount`);
//! - a silent member whose disk heartbeat goes on is alive on the other side
//!   of a network partition: the members that still beat on disk split into
//!   cohorts by whom they hear, the largest cohort survives (a tie: the one
//!   with the lowest instance number) and the others are evicted;
//! - a member that finds, on disk or in a heartbeat, a newer incarnation
//!   without itself was evicted and stops.
//!
//! A decision needs a voting-file read made after the silence was noticed,
//! and views that agree (they converge within a heartbeat or two); until
//! then the members wait, as Clusterware does.

use crate::config::{NS_PER_S, Nanos};
use crate::types::{InstId, InstSet};
use crate::voting::Vote;

/// Network and disk heartbeats go out this often.
pub const HEARTBEAT_NS: Nanos = NS_PER_S;

/// What the membership service decided after a voting-file read or a heartbeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Everyone is heard, or the views do not agree yet.
    Wait,
    /// These members are dead or on the losing side: evict them and
    /// reconfigure with `survivors` as the new incarnation.
    Evict { dead: InstSet, survivors: InstSet },
    /// This instance must stop (evicted by the others, or on the losing side).
    Stop(String),
}

/// One instance's view of the cluster membership.
#[derive(Debug)]
pub struct Css {
    me: InstId,
    members: InstSet,
    incarnation: u32,
    misscount: Nanos,
    /// Per instance: when its network heartbeat (or any message) was last heard.
    heard: Vec<Nanos>,
    /// Per instance: its last disk heartbeat counter and when it last moved.
    disk: Vec<Option<(u64, Nanos)>>,
    beat: u64,
    /// A restarted instance that has not joined the cluster yet: it beats
    /// (incarnation 0, members itself) until a member's report admits it,
    /// and decides nothing meanwhile.
    joining: bool,
    /// Per instance: the incarnation that admitted its current life (0 for
    /// a member since the start). A message it sent in an older one is its
    /// earlier life's, late (live: stalled on a connection a firewall held,
    /// delivered once the rule went).
    admitted_in: Vec<u32>,
}

impl Css {
    /// A member of a cluster of `instances`, all up at `now`.
    pub fn new(me: InstId, instances: u8, misscount_s: u32, now: Nanos) -> Css {
        let mut members = InstSet::default();
        for i in 0..instances {
            members.insert(InstId(i));
        }
        Css {
            me,
            members,
            incarnation: 1,
            misscount: Nanos::from(misscount_s) * NS_PER_S,
            heard: vec![now; usize::from(instances)],
            disk: vec![None; usize::from(instances)],
            beat: 0,
            joining: false,
            admitted_in: vec![0; usize::from(instances)],
        }
    }

    /// A restarted instance of a cluster of `instances`, asking to join.
    pub fn joining(me: InstId, instances: u8, misscount_s: u32) -> Css {
        let mut css = Css::new(me, instances, misscount_s, 0);
        css.members = InstSet::default();
        css.members.insert(me);
        css.incarnation = 0;
        css.joining = true;
        css
    }

    pub fn is_joining(&self) -> bool {
        self.joining
    }

    /// Whom to send a network heartbeat: the other members, or, while
    /// joining, every other instance (whoever is up answers by admitting it).
    pub fn beat_to(&self) -> InstSet {
        if self.joining {
            let mut all = InstSet::default();
            for i in 0..self.heard.len() {
                all.insert(InstId(i as u8));
            }
            all.without(self.me)
        } else {
            self.peers()
        }
    }

    /// Join incarnation `incarnation` with `members` (a member's report
    /// said so): returns the old and the new incarnation.
    pub fn adopt(&mut self, incarnation: u32, members: InstSet, now: Nanos) -> (u32, u32) {
        let old = self.incarnation;
        self.incarnation = incarnation;
        self.welcome(members, now);
        if self.joining {
            // Everyone is heard from now on: nobody was silent while we booted.
            self.heard.iter_mut().for_each(|t| *t = now);
            self.joining = false;
        }
        (old, incarnation)
    }

    pub fn members(&self) -> InstSet {
        self.members
    }

    /// Whether a message `from` a member, sent in `incarnation`, comes from
    /// an earlier life of it: sent before the incarnation that admitted the
    /// life it has now.
    pub fn sent_by_earlier_life(&self, from: InstId, incarnation: u32) -> bool {
        self.admitted_in
            .get(from.idx())
            .is_some_and(|&a| incarnation < a)
    }

    pub fn incarnation(&self) -> u32 {
        self.incarnation
    }

    pub fn is_member(&self, inst: InstId) -> bool {
        self.members.contains(inst)
    }

    /// The members to send a network heartbeat to.
    pub fn peers(&self) -> InstSet {
        self.members.without(self.me)
    }

    /// This instance's next disk heartbeat, what it writes to the voting file.
    pub fn next_vote(&mut self, now: Nanos) -> Vote {
        self.beat += 1;
        Vote {
            inst: self.me,
            beat: self.beat,
            hears: self.hears(now),
            incarnation: self.incarnation,
            members: self.members,
        }
    }

    /// The members heard on the network within `css_misscount` (and this one).
    fn hears(&self, now: Nanos) -> InstSet {
        let mut set = InstSet::default();
        for m in self.members.iter() {
            if m == self.me || !self.silent(m, now) {
                set.insert(m);
            }
        }
        set
    }

    fn silent(&self, m: InstId, now: Nanos) -> bool {
        self.heard
            .get(m.idx())
            .is_some_and(|&t| now.saturating_sub(t) >= self.misscount)
    }

    /// A message from `from` arrived: it is alive on the network. A
    /// heartbeat carries the sender's incarnation and members: a newer one
    /// without this instance means it was evicted.
    pub fn heard(
        &mut self,
        from: InstId,
        now: Nanos,
        incarnation: u32,
        members: InstSet,
    ) -> Verdict {
        if self.joining {
            return Verdict::Wait;
        }
        if incarnation > self.incarnation && !members.contains(self.me) {
            return Verdict::Stop(format!(
                "evicted by instance {}: incarnation {incarnation} does not include this instance",
                from.number()
            ));
        }
        if incarnation == 0 {
            // A restarted instance asking to join: its old life is dead until
            // the cluster evicts it, whatever the new one says. (Once
            // admitted, its silence counts from its admission: `welcome`.)
            return Verdict::Wait;
        }
        if let Some(t) = self.heard.get_mut(from.idx()) {
            *t = (*t).max(now);
        }
        Verdict::Wait
    }

    /// Any message from a member counts as proof of life on the network.
    pub fn alive(&mut self, from: InstId, now: Nanos) {
        if let Some(t) = self.heard.get_mut(from.idx()) {
            *t = (*t).max(now);
        }
    }

    /// The voting file as read by this instance's disk heartbeat at `now`.
    pub fn votes(&mut self, now: Nanos, votes: &[Vote]) -> Verdict {
        if self.joining {
            return Verdict::Wait;
        }
        for v in votes {
            if v.incarnation == 0 {
                // A restarted instance booting: not its old life's heartbeat.
                continue;
            }
            if v.incarnation > self.incarnation && !v.members.contains(self.me) {
                return Verdict::Stop(format!(
                    "evicted by instance {}: incarnation {} does not include this instance",
                    v.inst.number(),
                    v.incarnation
                ));
            }
            if let Some(slot) = self.disk.get_mut(v.inst.idx()) {
                match slot {
                    Some((beat, _)) if *beat == v.beat => {}
                    _ => *slot = Some((v.beat, now)),
                }
            }
        }
        let silent: Vec<InstId> = self
            .peers()
            .iter()
            .filter(|&m| self.silent(m, now))
            .collect();
        if silent.is_empty() {
            return Verdict::Wait;
        }
        // Members still beating on disk, and whom each hears.
        let mut on_disk = InstSet::default();
        on_disk.insert(self.me);
        for m in self.peers().iter() {
            let beating = self
                .disk
                .get(m.idx())
                .copied()
                .flatten()
                .is_some_and(|(_, t)| now.saturating_sub(t) < self.misscount);
            if beating {
                on_disk.insert(m);
            }
        }
        let mut cohorts: Vec<InstSet> = Vec::new();
        for m in on_disk.iter() {
            let view = if m == self.me {
                self.hears(now)
            } else {
                match votes.iter().find(|v| v.inst == m) {
                    Some(v) => v.hears,
                    None => return Verdict::Wait,
                }
            };
            let view = InstSet(view.0 & on_disk.0);
            if !view.contains(m) {
                return Verdict::Wait;
            }
            if cohorts.contains(&view) {
                continue;
            }
            // Views that overlap without being equal are not settled yet.
            if cohorts.iter().any(|c| c.0 & view.0 != 0) {
                return Verdict::Wait;
            }
            cohorts.push(view);
        }
        // The largest cohort survives; a tie goes to the lowest instance number.
        let Some(winner) = cohorts.iter().copied().max_by_key(|c| {
            (
                c.len(),
                std::cmp::Reverse(c.first().map_or(u8::MAX, |f| f.0)),
            )
        }) else {
            return Verdict::Wait;
        };
        if !winner.contains(self.me) {
            return Verdict::Stop(format!(
                "evicted: this instance is on the losing side of a network partition \
                 (the surviving cohort is {})",
                names(winner)
            ));
        }
        let dead = InstSet(self.members.0 & !winner.0);
        if dead.is_empty() {
            return Verdict::Wait;
        }
        Verdict::Evict {
            dead,
            survivors: winner,
        }
    }

    /// The others agreed on `survivors`: the next incarnation.
    pub fn reconfigure(&mut self, survivors: InstSet, now: Nanos) -> (u32, u32) {
        let old = self.incarnation;
        self.incarnation += 1;
        self.welcome(survivors, now);
        (old, self.incarnation)
    }

    /// `members` from now on. One admitted just now (a restarted instance)
    /// was heard at its join request: its silence counts from here, not
    /// from its old life's last heartbeat (which would take it for dead at
    /// the next read of the voting file, before its first beat as a member).
    fn welcome(&mut self, members: InstSet, now: Nanos) {
        for m in members.iter() {
            if !self.members.contains(m) && m != self.me {
                // A joining instance meets the members' lives it has not
                // seen yet; only the members admit a new one.
                if !self.joining
                    && let Some(a) = self.admitted_in.get_mut(m.idx())
                {
                    *a = self.incarnation;
                }
                if let Some(t) = self.heard.get_mut(m.idx()) {
                    *t = now;
                }
                if let Some(d) = self.disk.get_mut(m.idx()) {
                    *d = None;
                }
            }
        }
        self.members = members;
    }
}

/// `1, 2` for the instances of a set, as the alert log names them.
pub fn names(set: InstSet) -> String {
    set.iter()
        .map(|i| i.number().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_S;

    fn set(ids: &[u8]) -> InstSet {
        let mut s = InstSet::default();
        for &i in ids {
            s.insert(InstId(i));
        }
        s
    }

    /// Run members' heartbeats for `seconds`: `links(a, b)` says whether a hears b,
    /// `beating(i)` whether i writes its disk heartbeat. Returns the verdicts of the last read.
    fn run(
        n: u8,
        misscount: u32,
        seconds: u64,
        links: impl Fn(u8, u8) -> bool,
        beating: impl Fn(u8) -> bool,
    ) -> Vec<Verdict> {
        let mut css: Vec<Css> = (0..n)
            .map(|i| Css::new(InstId(i), n, misscount, 0))
            .collect();
        let mut file = crate::voting::VotingFile::new(usize::from(n));
        let mut last = vec![Verdict::Wait; usize::from(n)];
        for t in 1..=seconds {
            let now = t * S;
            for a in 0..n {
                for b in 0..n {
                    if a != b && links(a, b) && beating(b) {
                        let (inc, members) =
                            (css[usize::from(b)].incarnation, css[usize::from(b)].members);
                        css[usize::from(a)].heard(InstId(b), now, inc, members);
                    }
                }
            }
            for i in 0..n {
                if !beating(i) {
                    continue;
                }
                let vote = css[usize::from(i)].next_vote(now);
                let votes = file.heartbeat(vote).unwrap_or_default();
                last[usize::from(i)] = css[usize::from(i)].votes(now, &votes);
            }
        }
        last
    }

    /// A restarted instance admitted by a member beats with incarnation 0
    /// until the news reaches it (live: the report may wait for a link to
    /// reconnect or a re-send): its silence counts from its admission, not
    /// from its old life's last heartbeat. And a restarted instance whose
    /// old life is still a member does not keep that life alive.
    #[test]
    fn an_admitted_instance_is_not_taken_for_dead_before_it_learns_its_incarnation() {
        let mut c = Css::new(InstId(0), 3, 3, 0);
        // Instance 3 died at 0 and was evicted at 4 s.
        for t in 1..=3 {
            c.heard(InstId(1), t * S, 1, set(&[0, 1, 2]));
        }
        c.reconfigure(set(&[0, 1]), 4 * S);
        // Its new life asks to join at 9 s and is admitted.
        c.heard(InstId(2), 9 * S, 0, InstSet::default());
        c.heard(InstId(1), 9 * S, 2, set(&[0, 1]));
        let (_, inc) = c.reconfigure(set(&[0, 1, 2]), 9 * S);
        let mut file = crate::voting::VotingFile::new(3);
        let vote = |file: &mut crate::voting::VotingFile, inst: u8, t: u64, incarnation: u32| {
            let _ = file.heartbeat(Vote {
                inst: InstId(inst),
                beat: t,
                incarnation,
                members: set(&[0, 1, 2]),
                hears: set(&[0, 1, 2]),
            });
        };
        // Two seconds with incarnation 0, then it knows.
        for t in 10..=16 {
            let now = t * S;
            let its = if t < 12 { 0 } else { inc };
            vote(&mut file, 1, t, inc);
            vote(&mut file, 2, t, its);
            c.heard(InstId(1), now, inc, set(&[0, 1, 2]));
            c.heard(InstId(2), now, its, set(&[0, 1, 2]));
            let votes = file.heartbeat(c.next_vote(now)).unwrap_or_default();
            assert_eq!(c.votes(now, &votes), Verdict::Wait, "at {t} s");
        }
        // Killed at 16 s and started again at once: the new life's beats
        // (incarnation 0) do not keep the old one alive. Evicted.
        let mut last = Verdict::Wait;
        for t in 17..=22 {
            let now = t * S;
            vote(&mut file, 1, t, inc);
            vote(&mut file, 2, t, 0);
            c.heard(InstId(1), now, inc, set(&[0, 1, 2]));
            c.heard(InstId(2), now, 0, InstSet::default());
            let votes = file.heartbeat(c.next_vote(now)).unwrap_or_default();
            last = c.votes(now, &votes);
        }
        assert!(
            matches!(last, Verdict::Evict { dead, .. } if dead == set(&[2])),
            "{last:?}"
        );
    }

    /// A message a member's earlier life sent, delivered after its new
    /// life was admitted, is told apart by its incarnation.
    #[test]
    fn an_earlier_life_s_late_message_is_told_apart() {
        let mut c = Css::new(InstId(0), 3, 3, 0);
        assert!(!c.sent_by_earlier_life(InstId(2), 1));
        c.reconfigure(set(&[0, 1]), 4 * S);
        let (_, admitted) = c.reconfigure(set(&[0, 1, 2]), 9 * S);
        assert!(
            c.sent_by_earlier_life(InstId(2), 1),
            "sent by the life evicted in 2"
        );
        assert!(!c.sent_by_earlier_life(InstId(2), admitted));
        assert!(!c.sent_by_earlier_life(InstId(1), 1), "inst2 never left");
        // A joining instance adopting the cluster admits nobody.
        let mut j = Css::joining(InstId(2), 3, 3);
        j.adopt(admitted, set(&[0, 1, 2]), 9 * S);
        assert!(!j.sent_by_earlier_life(InstId(0), admitted - 1));
    }

    #[test]
    fn everyone_heard_means_no_verdict() {
        let v = run(3, 5, 20, |_, _| true, |_| true);
        assert!(v.iter().all(|v| *v == Verdict::Wait), "{v:?}");
    }

    #[test]
    fn a_dead_member_is_evicted_after_misscount_and_not_before() {
        // Instance 3 (index 2) stops at t = 0; misscount 5 s.
        let early = run(3, 5, 4, |_, _| true, |i| i != 2);
        assert_eq!(early[0], Verdict::Wait);
        let late = run(3, 5, 8, |_, _| true, |i| i != 2);
        assert_eq!(
            late[0],
            Verdict::Evict {
                dead: set(&[2]),
                survivors: set(&[0, 1])
            }
        );
        assert_eq!(late[0], late[1]);
    }

    #[test]
    fn a_partition_evicts_the_smaller_side_which_stops_itself() {
        // {1, 2} | {3}: both sides beat on disk.
        let cut = |a: u8, b: u8| (a == 2) == (b == 2);
        let v = run(3, 5, 10, cut, |_| true);
        assert_eq!(
            v[0],
            Verdict::Evict {
                dead: set(&[2]),
                survivors: set(&[0, 1])
            }
        );
        assert!(
            matches!(&v[2], Verdict::Stop(why) if why.contains("losing side")),
            "{v:?}"
        );
    }

    #[test]
    fn a_tie_goes_to_the_side_with_the_lowest_instance() {
        // {1, 2} | {3, 4}
        let cut = |a: u8, b: u8| (a < 2) == (b < 2);
        let v = run(4, 5, 10, cut, |_| true);
        assert!(
            matches!(v[0], Verdict::Evict { dead, .. } if dead == set(&[2, 3])),
            "{v:?}"
        );
        assert!(matches!(v[3], Verdict::Stop(_)), "{v:?}");
    }

    #[test]
    fn a_newer_incarnation_without_me_stops_me() {
        let mut c = Css::new(InstId(1), 3, 30, 0);
        let v = c.heard(InstId(0), S, 2, set(&[0, 2]));
        assert!(matches!(v, Verdict::Stop(_)));
        assert_eq!(c.heard(InstId(0), S, 1, set(&[0, 1, 2])), Verdict::Wait);
    }
}
