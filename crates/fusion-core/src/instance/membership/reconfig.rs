//! Reconfiguration after an eviction (rac-internals.md §8, steps 2–3 and 11).
//!
//! Every survivor, when it evicts the dead (membership.rs) or first hears of
//! the new incarnation from another survivor's report:
//! 1. drops the old incarnation's global cache state: its part of the
//!    directory, the enqueues it masters, the LMS jobs under way (a message
//!    of an older incarnation is discarded on arrival from now on);
//! 2. freezes the directory ("Global Resource Directory frozen"): until every
//!    member has reported, requests for blocks and enqueues mastered here
//!    are held;
//! 3. reports to every member what it holds of the resources that member
//!    masters now (current blocks, past images, enqueue locks); the
//!    recovering instance first reads the dead threads (smon.rs) and adds
//!    the blocks it claims and the dead instances' transactions;
//! 4. asks again, of the new masters, everything it had outstanding: block
//!    requests, enqueue conversions, transaction lookups, SCN broadcasts.
//!
//! Once every member's report is in, the directory promotes the newest past
//! image of each block nobody holds current, unfreezes ("Reconfiguration
//! complete") and serves what it held.
//!
//! `Reconfig` (in mod.rs, below the files that change it) owns the
//! freeze, the held work, this instance's reports and the questions about
//! dead transactions; [`Membership`]'s methods here change it. The steps that cross the subsystems (freeze the directory,
//! report holdings, resubmit requests, rebroadcast) are sequenced by the
//! dispatcher (dispatch.rs).

use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::css::names;
use super::{HELD_MESSAGES_MAX, HeldWork, Membership, Newer};
use crate::msg::{DeadThread, Envelope, LockMode, Msg, Rebuild, Request, ResName};
use crate::types::{BlockAddr, InstId, InstSet};

impl Membership {
    /// The alert log's lines at the start of a reconfiguration.
    pub fn alert_reconfiguration(
        &self,
        k: &Kernel,
        obs: &mut Observer,
        old: u32,
        new: u32,
        dead: InstSet,
    ) {
        let now = k.now();
        let members = self.css.members();
        obs.alert(
            now,
            format!("Reconfiguration started (old inc {old}, new inc {new})"),
        );
        obs.alert(
            now,
            format!(
                "List of instances: {} (myinst: {})",
                names(members),
                k.id().number()
            ),
        );
        if !dead.is_empty() {
            obs.alert(
                now,
                format!("Evicting instance {} from cluster", names(dead)),
            );
        }
        obs.alert(now, "Global Resource Directory frozen");
        if !dead.is_empty() {
            obs.alert(now, "* dead instance detected - domain 0 invalid = TRUE");
        }
    }

    // ----- messages and the incarnation --------------------------------------------------

    /// What `env`, of a newer incarnation than this instance's, means.
    pub fn newer_incarnation(&self, k: &Kernel, env: &Envelope) -> Newer {
        debug_assert!(env.incarnation > self.css.incarnation());
        match &env.msg {
            Msg::Rebuild(r) if r.members.contains(k.id()) => Newer::Join {
                incarnation: env.incarnation,
                members: r.members,
            },
            Msg::Rebuild(_) => Newer::Evicted(format!(
                "evicted by instance {}: incarnation {} does not include this instance",
                env.from.number(),
                env.incarnation
            )),
            _ => Newer::Early,
        }
    }

    /// Keep a message of a newer incarnation until this instance joins it.
    pub fn keep_early(&mut self, env: Envelope) {
        if self.reconfig.early.len() < HELD_MESSAGES_MAX {
            self.reconfig.early.push(env);
        } else {
            self.reconfig.dropped += 1;
        }
    }

    /// The messages kept before this instance joined the incarnation it
    /// now has, to receive again in the order they came.
    pub fn take_early(&mut self) -> Vec<Envelope> {
        std::mem::take(&mut self.reconfig.early)
    }

    // ----- the freeze ----------------------------------------------------------------------

    /// The directory freezes for the new incarnation: every member (this
    /// one too) is to report, and what an earlier freeze held is dropped
    /// (its incarnation ended).
    pub fn freeze(&mut self, k: &Kernel) {
        let members = self.css.members();
        debug_assert!(
            members.contains(k.id()),
            "{} froze without being a member",
            k.id()
        );
        self.reconfig.waiting = Some(members);
        self.reconfig.frozen_at = k.now();
        self.reconfig.held.clear();
        debug_assert!(self.reconfig.frozen());
    }

    /// A message of the current incarnation, held while frozen.
    pub fn hold_message(&mut self, env: Envelope) {
        debug_assert!(self.reconfig.frozen(), "held a message while not frozen");
        self.reconfig.hold(HeldWork::Message(env));
    }

    /// A block request for the master here, held while frozen.
    pub fn hold_request(&mut self, req: Request) {
        debug_assert!(self.reconfig.frozen(), "held a request while not frozen");
        self.reconfig.hold(HeldWork::Request(req));
    }

    /// An enqueue conversion for the master here, held while frozen.
    pub fn hold_convert(&mut self, res: ResName, mode: LockMode, token: u64) {
        self.reconfig.hold(HeldWork::Convert(res, mode, token));
    }

    // ----- the reports ---------------------------------------------------------------------

    /// This instance's reports to the other members, kept until they go
    /// ([`Membership::send_reports`]).
    pub fn keep_reports(&mut self, reports: Vec<(InstId, Rebuild)>) {
        self.reconfig.reports = reports;
    }

    /// The recovering instance's claim of `blk`, for the report to its master `master`.
    pub fn add_claim(&mut self, master: InstId, blk: BlockAddr) {
        if let Some((_, r)) = self.reconfig.reports.iter_mut().find(|(i, _)| *i == master) {
            r.claims.push(blk);
        }
    }

    /// What recovery learned of the dead transactions, for every report.
    pub fn add_dead(&mut self, dead: &[DeadThread]) {
        for (_, r) in &mut self.reconfig.reports {
            r.dead.extend(dead.iter().cloned());
        }
    }

    /// Send this instance's reports: its own is complete then. True when
    /// that was the last report waited for (the directory unfreezes).
    pub fn send_reports(&mut self, k: &mut Kernel) -> bool {
        let reports = std::mem::take(&mut self.reconfig.reports);
        for (to, report) in reports {
            self.net().send(k, to, Msg::Rebuild(Box::new(report)));
        }
        self.reported(k.id())
    }

    /// Whether a report from `from` is waited for.
    pub fn awaits_report(&self, from: InstId) -> bool {
        self.reconfig.waiting.is_some_and(|w| w.contains(from))
    }

    /// `from`'s report is complete. True when every member's is (the
    /// directory unfreezes).
    pub fn reported(&mut self, from: InstId) -> bool {
        let Some(waiting) = self.reconfig.waiting.as_mut() else {
            return false;
        };
        waiting.remove(from);
        waiting.is_empty()
    }

    // ----- unfreezing ----------------------------------------------------------------------

    /// Every member reported: the directory is no longer frozen.
    pub fn thaw(&mut self) {
        debug_assert!(
            self.reconfig.waiting.is_some_and(|w| w.is_empty()),
            "unfrozen before every member reported"
        );
        self.reconfig.waiting = None;
        debug_assert!(!self.reconfig.frozen());
    }

    /// The alert log's lines at the end of a reconfiguration, and the
    /// messages dropped past the bound while frozen reported.
    pub fn alert_unfrozen(&mut self, k: &mut Kernel, obs: &mut Observer) {
        let now = k.now();
        if self.reconfig.dropped > 0 {
            let n = std::mem::take(&mut self.reconfig.dropped);
            k.error(&format!(
                "{n} messages dropped while the directory was frozen (at most {HELD_MESSAGES_MAX} are held)"
            ));
        }
        obs.alert(now, "Submitted all GCS remote-cache requests");
        obs.alert(
            now,
            format!(
                "Reconfiguration complete (total time {:.1} secs)",
                now.saturating_sub(self.reconfig.frozen_at) as f64 / 1e9
            ),
        );
    }

    /// What was held while frozen, to carry out in the order it came.
    pub fn take_held(&mut self) -> Vec<HeldWork> {
        std::mem::take(&mut self.reconfig.held)
    }

    /// A restarted instance joined: true once (its sessions log on now),
    /// and the alert log says so.
    pub fn join_done(&mut self, k: &Kernel, obs: &mut Observer) -> bool {
        if !self.standing.join_done() {
            return false;
        }
        obs.alert(k.now(), "Instance joined the cluster: sessions start");
        true
    }

    // ----- instance recovery and the dead's transactions -----------------------------------

    /// A reconfiguration to `members` after `dead` died: the lowest-numbered
    /// member recovers every thread no recovery finished (the recovering
    /// instance of an earlier reconfiguration may be among the dead). True
    /// when that is this instance: its reports wait for the dead threads'
    /// first pass.
    pub fn start_recovery(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        dead: InstSet,
        members: InstSet,
    ) -> bool {
        let to_recover = self.standing.threads_to_recover(dead, members);
        if members.first() != Some(k.id()) || to_recover.is_empty() {
            return false;
        }
        obs.alert(k.now(), "Post SMON to start 1st pass IR");
        self.smon_start(k, obs, to_recover);
        true
    }

    /// A question about a transaction of an instance that is no longer a
    /// member (lookup `token`): answered once recovery says what it found.
    pub fn ask_dead(&mut self, token: u64) {
        self.reconfig.dead_lookups.push(token);
    }

    /// The questions about dead instances' transactions not answered yet.
    pub fn take_dead_lookups(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.reconfig.dead_lookups)
    }

    /// The questions recovery has no answer to yet: asked again later.
    pub fn keep_dead_lookups(&mut self, tokens: Vec<u64>) {
        self.reconfig.dead_lookups = tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::super::Delivery;
    use super::*;
    use crate::config::Catalog;
    use crate::msg::{Action, EnqKind, Io, Mode, ReqKind, Timing};
    use crate::types::Scn;

    const ME: InstId = InstId(0);
    const PEER: InstId = InstId(1);

    fn rig() -> (Kernel, Membership, Observer) {
        let k = Kernel::for_instance(ME, &Catalog::default());
        let m = Membership::new(ME, 2, k.params(), 0, Delivery::Direct);
        (k, m, Observer::new(false))
    }

    fn envelope(incarnation: u32, msg: Msg) -> Envelope {
        Envelope {
            from: PEER,
            to: ME,
            incarnation,
            scn: Scn(1),
            sent_at: 0,
            msg,
            link: Default::default(),
        }
    }

    fn relinquish() -> Msg {
        Msg::Relinquish {
            blk: BlockAddr(9),
            mode: Mode::S,
        }
    }

    fn set(of: &[InstId]) -> InstSet {
        let mut s = InstSet::default();
        for &i in of {
            s.insert(i);
        }
        s
    }

    #[test]
    fn frozen_until_every_member_reported_then_what_was_held_comes_back_in_order() {
        let (mut k, mut m, mut obs) = rig();
        m.freeze(&k);
        assert!(m.reconfiguring());
        let req = Request {
            id: 4,
            blk: BlockAddr(9),
            requester: PEER,
            kind: ReqKind::Current { new_block: false },
            timing: Timing::default(),
        };
        let res = ResName {
            kind: EnqKind::Sq,
            id: 1,
        };
        let msg = envelope(m.incarnation(), relinquish());
        m.hold_request(req);
        m.hold_message(msg.clone());
        m.hold_convert(res, LockMode::X, 5);
        m.keep_reports(vec![(
            PEER,
            Rebuild {
                members: m.members(),
                ..Rebuild::default()
            },
        )]);
        m.add_claim(PEER, BlockAddr(3));
        assert!(
            !m.send_reports(&mut k),
            "the peer's report is still to come"
        );
        let actions = k.take_actions();
        let [Action::Send(env)] = &actions[..] else {
            panic!("{actions:?}")
        };
        let Msg::Rebuild(r) = &env.msg else {
            panic!("{env:?}")
        };
        assert_eq!((env.to, &r.claims[..]), (PEER, &[BlockAddr(3)][..]));
        assert!(m.awaits_report(PEER) && !m.awaits_report(ME));
        assert!(m.reported(PEER), "the last report");
        m.thaw();
        assert!(!m.reconfiguring());
        m.alert_unfrozen(&mut k, &mut obs);
        assert!(
            obs.alert_lines()
                .iter()
                .any(|l| l.line.starts_with("Reconfiguration complete")),
            "{:?}",
            obs.alert_lines()
        );
        assert_eq!(
            m.take_held(),
            vec![
                HeldWork::Request(req),
                HeldWork::Message(msg),
                HeldWork::Convert(res, LockMode::X, 5)
            ]
        );
        assert!(!m.reported(PEER), "not frozen: no report is waited for");
    }

    #[test]
    fn a_newer_incarnations_report_is_joined_or_evicts_and_anything_else_waits() {
        let (k, mut m, _) = rig();
        let next = m.incarnation() + 1;
        let report = |members: InstSet| {
            envelope(
                next,
                Msg::Rebuild(Box::new(Rebuild {
                    members,
                    ..Rebuild::default()
                })),
            )
        };
        assert_eq!(
            m.newer_incarnation(&k, &report(set(&[ME, PEER]))),
            Newer::Join {
                incarnation: next,
                members: set(&[ME, PEER])
            }
        );
        assert!(matches!(
            m.newer_incarnation(&k, &report(set(&[PEER]))),
            Newer::Evicted(why) if why.contains("does not include this instance")
        ));
        let early = envelope(next, relinquish());
        assert_eq!(m.newer_incarnation(&k, &early), Newer::Early);
        m.keep_early(early.clone());
        assert_eq!(m.take_early(), vec![early]);
        assert!(m.take_early().is_empty());
    }

    #[test]
    fn the_lowest_member_recovers_every_thread_no_recovery_finished() {
        let (mut k, mut m, mut obs) = rig();
        assert!(m.start_recovery(&mut k, &mut obs, set(&[PEER]), set(&[ME])));
        assert!(matches!(
            &k.take_actions()[..],
            [Action::Io {
                io: Io::ReadRedo { thread: PEER },
                ..
            }]
        ));
        // A new reconfiguration before it finished: it starts over.
        assert!(m.start_recovery(&mut k, &mut obs, InstSet::default(), set(&[ME])));
        assert_eq!(k.take_actions().len(), 1);
        // Once recovered, nothing is left to read.
        m.recovered(set(&[PEER]));
        assert!(!m.start_recovery(&mut k, &mut obs, InstSet::default(), set(&[ME])));
        assert!(k.take_actions().is_empty());
    }
}
