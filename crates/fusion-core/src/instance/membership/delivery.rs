//! Routing the reliable delivery sublayer's decisions (link.rs) when the
//! interconnect may lose messages: numbering what goes out, acknowledging
//! what comes in and handing it to the protocol in the order of its key,
//! and re-sending what was not acknowledged in time or when a broken
//! connection is back. Nothing is re-sent to an instance that is no longer
//! a member: its link is forgotten.

use super::super::kernel::Kernel;
use super::super::{Instance, Timer};
use super::Membership;
use super::css::Css;
use super::link::{Delivery, LinkFull, Links};
use crate::config::Nanos;
use crate::msg::{Action, Envelope, LinkStamp, Msg};
use crate::stats::Stat;
use crate::types::{InstId, InstSet};

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

    /// Send `msg` to `to` (a message to an evicted instance is dropped,
    /// unless it is clusterware's).
    pub fn send(&mut self, k: &mut Kernel, to: InstId, msg: Msg) {
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
                msg_name(&env.msg)
            )),
        }
    }
}

impl Instance {
    /// A message from a member arrived: an acknowledgement, a numbered
    /// message (acknowledged, and handed over with whatever it released),
    /// or an unnumbered one.
    pub(in crate::instance) fn link_receive(&mut self, env: Envelope) {
        let from = env.from;
        if !self.membership.links.on() {
            return self.error(format!(
                "{from} sent a {} with link numbers, but this interconnect loses nothing",
                msg_name(&env.msg)
            ));
        }
        if let Msg::LinkAck { cum, got } = env.msg {
            self.observe_scn(env.scn);
            if let Err(e) = self.membership.links.acked(from, cum, got) {
                self.error(e.0);
            }
            return;
        }
        if env.link.seq == 0 {
            return self.error(format!(
                "{from} sent a {} without a link number",
                msg_name(&env.msg)
            ));
        }
        let arrival = match self.membership.links.receive(env) {
            Ok(a) => a,
            Err(e) => return self.error(e.0),
        };
        if let Some((cum, got)) = arrival.ack {
            let ack = Envelope {
                from: self.id,
                to: from,
                incarnation: self.membership.css.incarnation(),
                scn: self.k.scn(),
                sent_at: self.k.now(),
                msg: Msg::LinkAck { cum, got },
                link: LinkStamp::default(),
            };
            self.k.push_action(Action::Send(ack));
        }
        for env in arrival.deliver {
            self.observe_scn(env.scn);
            self.receive(env);
        }
    }

    /// The re-send timer of the link to `peer` fired.
    pub(in crate::instance) fn link_resend(&mut self, peer: InstId, epoch: u64) {
        if !self.membership.css.is_member(peer) {
            self.membership.links.forget(peer);
            return;
        }
        let (again, arm) = self.membership.links.due(self.k.now(), peer, epoch);
        for env in again {
            self.k.push_action(Action::Send(env));
        }
        if let Some((at, epoch)) = arm {
            self.arm(at - self.k.now(), Timer::LinkResend(peer, epoch));
        }
    }

    /// How this instance's messages reach its peers.
    pub fn delivery(&self) -> Delivery {
        self.membership.links.delivery()
    }

    /// The transport's connection to `peer` broke and is back (live): what
    /// it did not acknowledge goes again now, since that is all a broken
    /// connection can have lost. A peer that is no longer a member was
    /// forgotten at its eviction: nothing goes to it.
    pub fn handle_reconnect(&mut self, now: Nanos, peer: InstId) {
        if self.membership.standing.halted().is_some() {
            return;
        }
        self.advance(now);
        if !self.membership.links.on() || peer == self.id || !self.membership.css.is_member(peer) {
            return;
        }
        for env in self.membership.links.resend_all(self.k.now(), peer) {
            self.k.push_action(Action::Send(env));
        }
    }

    /// Whether this instance's request `req` for `blk` to its master has not
    /// been acknowledged yet: the sublayer sends the requester's own request
    /// again (a retry), rather than a reply being late.
    pub(in crate::instance) fn request_unacked(
        &self,
        master: InstId,
        blk: crate::types::BlockAddr,
        req: u64,
    ) -> bool {
        self.membership
            .links
            .unacked(master)
            .any(|e| matches!(&e.msg, Msg::Request(r) if r.id == req && r.blk == blk))
    }
}

/// A message's kind, for an error message.
fn msg_name(msg: &Msg) -> &'static str {
    match msg {
        Msg::Request(_) => "Request",
        Msg::Forward { .. } => "Forward",
        Msg::Grant { .. } => "Grant",
        Msg::Ship(_) => "Ship",
        Msg::Installed { .. } => "Installed",
        Msg::Invalidate { .. } => "Invalidate",
        Msg::InvalidateAck { .. } => "InvalidateAck",
        Msg::NotHeld { .. } => "NotHeld",
        Msg::DownConverted { .. } => "DownConverted",
        Msg::Relinquish { .. } => "Relinquish",
        Msg::Written { .. } => "Written",
        Msg::DiscardPi { .. } => "DiscardPi",
        Msg::TxQuery { .. } => "TxQuery",
        Msg::TxStatus { .. } => "TxStatus",
        Msg::TxWait { .. } => "TxWait",
        Msg::EnqConvert { .. } => "EnqConvert",
        Msg::EnqGrant { .. } => "EnqGrant",
        Msg::EnqBast { .. } => "EnqBast",
        Msg::EnqDown { .. } => "EnqDown",
        Msg::Px(_) => "Px",
        Msg::ScnBroadcast { .. } => "ScnBroadcast",
        Msg::ScnAck { .. } => "ScnAck",
        Msg::Heartbeat { .. } => "Heartbeat",
        Msg::LinkAck { .. } => "LinkAck",
        Msg::Rebuild(_) => "Rebuild",
        Msg::Promote { .. } => "Promote",
        Msg::RecoverBlock { .. } => "RecoverBlock",
        Msg::SendPi { .. } => "SendPi",
        Msg::RecoverImage { .. } => "RecoverImage",
        Msg::BlockRecovered { .. } => "BlockRecovered",
        Msg::WriteRequest { .. } => "WriteRequest",
        Msg::ThreadsRecovered { .. } => "ThreadsRecovered",
        Msg::WriteCurrent { .. } => "WriteCurrent",
    }
}
