//! Routing the reliable delivery sublayer's decisions (link.rs) when the
//! interconnect may lose messages: numbering what goes out, acknowledging
//! what comes in and handing it to the protocol in the order of its key,
//! and re-sending what was not acknowledged in time or when a broken
//! connection is back. Nothing is re-sent to an instance that is no longer
//! a member: its link is forgotten.

use super::super::events::Timer;
use super::super::kernel::Kernel;
use super::Membership;
use super::css::Css;
use super::link::{Delivery, LinkFull, Links};
use crate::msg::{Action, Envelope, LinkStamp, Msg};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, InstSet};

/// What the other subsystems may do with membership: send a message to an
/// instance (through the reliable delivery sublayer when it is on) and know
/// who the members are.
pub(in crate::instance) struct Net<'a> {
    css: &'a Css,
    links: &'a mut Links,
}

impl Membership {
    /// Membership as the other subsystems see it.
    #[inline(always)]
    pub fn net(&mut self) -> Net<'_> {
        Net {
            css: &self.css,
            links: &mut self.links,
        }
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

impl Membership {
    /// A message from a member arrived through the sublayer: an
    /// acknowledgement, a numbered message (acknowledged), or an
    /// unnumbered one. Returns what to hand to the protocol now, in order:
    /// the message and whatever it released.
    pub fn link_receive(&mut self, k: &mut Kernel, env: Envelope) -> Vec<Envelope> {
        let from = env.from;
        if !self.links.on() {
            k.error(&format!(
                "{from} sent a {} with link numbers, but this interconnect loses nothing",
                Msg::kind(&env.msg)
            ));
            return Vec::new();
        }
        if let Msg::LinkAck { cum, got } = env.msg {
            k.observe_scn(env.scn);
            if let Err(e) = self.links.acked(from, cum, got) {
                k.error(&e.0);
            }
            return Vec::new();
        }
        if env.link.seq == 0 {
            k.error(&format!(
                "{from} sent a {} without a link number",
                Msg::kind(&env.msg)
            ));
            return Vec::new();
        }
        let arrival = match self.links.receive(env) {
            Ok(a) => a,
            Err(e) => {
                k.error(&e.0);
                return Vec::new();
            }
        };
        if let Some((cum, got)) = arrival.ack {
            let ack = Envelope {
                from: k.id(),
                to: from,
                incarnation: self.css.incarnation(),
                scn: k.scn(),
                sent_at: k.now(),
                msg: Msg::LinkAck { cum, got },
                link: LinkStamp::default(),
            };
            k.push_action(Action::Send(ack));
        }
        arrival.deliver
    }

    /// The re-send timer of the link to `peer` fired.
    pub fn link_resend(&mut self, k: &mut Kernel, peer: InstId, epoch: u64) {
        if !self.css.is_member(peer) {
            self.links.forget(peer);
            return;
        }
        let (again, arm) = self.links.due(k.now(), peer, epoch);
        for env in again {
            k.push_action(Action::Send(env));
        }
        if let Some((at, epoch)) = arm {
            k.arm(at - k.now(), Timer::LinkResend(peer, epoch));
        }
    }

    /// How this instance's messages reach its peers.
    pub fn delivery(&self) -> Delivery {
        self.links.delivery()
    }

    /// The transport's connection to `peer` broke and is back (live): what
    /// it did not acknowledge goes again now, since that is all a broken
    /// connection can have lost. A peer that is no longer a member was
    /// forgotten at its eviction: nothing goes to it.
    pub fn reconnected(&mut self, k: &mut Kernel, peer: InstId) {
        if !self.links.on() || peer == k.id() || !self.css.is_member(peer) {
            return;
        }
        for env in self.links.resend_all(k.now(), peer) {
            k.push_action(Action::Send(env));
        }
    }
}
