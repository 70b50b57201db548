//! What the other subsystems may do with membership (`Membership::net`,
//! in delivery.rs): send through the reliable delivery sublayer when it
//! is on, and know who the members are.

use super::super::events::Timer;
use super::super::kernel::Kernel;
use super::css::Css;
use super::link::{LinkFull, Links};
use crate::msg::{Action, Envelope, Msg};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, InstSet};

/// What the other subsystems may do with membership: send a message to an
/// instance (through the reliable delivery sublayer when it is on) and know
/// who the members are.
pub(in crate::instance) struct Net<'a> {
    css: &'a Css,
    links: &'a mut Links,
}

impl<'a> Net<'a> {
    /// Membership's service and links, lent for a step.
    #[inline(always)]
    pub(super) fn new(css: &'a Css, links: &'a mut Links) -> Net<'a> {
        Net { css, links }
    }
}

impl Net<'_> {
    /// The other members.
    pub fn peers(&self) -> InstSet {
        self.css.peers()
    }

    /// Whether the network under the links drops messages (a request
    /// unanswered in time is then lost, not late).
    #[inline(always)]
    pub fn links_lossy(&self) -> bool {
        self.links.lossy()
    }

    /// Whether this instance's request `req` for `blk` to its master has not
    /// been acknowledged yet: the sublayer sends the requester's own request
    /// again (a retry), rather than a reply being late.
    pub fn request_unacked(&self, master: InstId, blk: BlockAddr, req: u64) -> bool {
        self.links
            .unacked(master)
            .any(|e| matches!(&e.msg, Msg::Request(r) if r.id == req && r.blk == blk))
    }

    /// Whether `inst` is a member of the cluster now.
    #[inline]
    pub fn is_member(&self, inst: InstId) -> bool {
        self.css.is_member(inst)
    }

    /// Send `msg` to `to` (a message to an evicted instance is dropped,
    /// unless it is clusterware's).
    pub fn send(&mut self, k: &mut Kernel, to: InstId, msg: Msg) {
        // The receiver rejects a message from itself: what is mastered or
        // held here is handled without one.
        debug_assert_ne!(to, k.id(), "{} sent itself a message", k.id());
        if !self.css.is_member(to) && !msg.is_css() {
            // An evicted instance: nothing reaches it any more (a waiter of
            // its, say, was answered after it died).
            return;
        }
        if msg.is_gcs() {
            k.incr(Stat::GcsMessagesSent);
        } else if msg.is_ges() {
            k.incr(Stat::GesMessagesSent);
        }
        let env = Envelope {
            from: k.id(),
            to,
            incarnation: self.css.incarnation(),
            scn: k.scn(),
            sent_at: k.now(),
            msg,
            link: Default::default(),
        };
        if self.links.on() {
            return self.link_send(k, env);
        }
        k.push_action(Action::Send(env));
    }

    /// Send a message through the sublayer (it is on).
    fn link_send(&mut self, k: &mut Kernel, mut env: Envelope) {
        if !self.css.is_member(env.to) {
            // Dropped by the network's far end anyway; nothing to keep.
            k.push_action(Action::Send(env));
            return;
        }
        match self.links.send(k.now(), &mut env) {
            Ok(arm) => {
                if let Some((at, epoch)) = arm {
                    k.arm(at - k.now(), Timer::LinkResend(env.to, epoch));
                }
                k.push_action(Action::Send(env));
            }
            Err(LinkFull { unacked, window }) => k.error(&format!(
                "the link to {} is full ({unacked} messages unacknowledged, {window} numbers \
                 beyond its last cumulative acknowledgement): {} stops acknowledging, a {} \
                 message to it was dropped",
                env.to,
                env.to,
                Msg::kind(&env.msg)
            )),
        }
    }
}
