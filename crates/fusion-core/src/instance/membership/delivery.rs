//! Routing the reliable delivery sublayer's decisions (link.rs) when the
//! interconnect may lose messages: numbering what goes out, acknowledging
//! what comes in and handing it to the protocol in the order of its key,
//! and re-sending what was not acknowledged in time or when a broken
//! connection is back. Nothing is re-sent to an instance that is no longer
//! a member: its link is forgotten.

use super::super::events::Timer;
use super::super::kernel::Kernel;
use super::Membership;
use super::link::Delivery;
use super::net::Net;
use crate::msg::{Action, Envelope, LinkStamp, Msg};
use crate::types::InstId;

impl Membership {
    /// Membership as the other subsystems see it.
    #[inline(always)]
    pub fn net(&mut self) -> Net<'_> {
        Net::new(&self.css, &mut self.links)
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
