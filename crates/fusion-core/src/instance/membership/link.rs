//! Reliable delivery of the database's messages over an interconnect that
//! may lose them: `Links`, one sender and one receiver per peer, as the
//! instance's sublayer under the protocol ([`Delivery`] says when it is on:
//! a scenario with a `loss` or `partition` fault, and every live run, whose
//! TCP connections may break under it).
//!
//! Oracle's IPC over UDP loses a datagram now and then; the requester of a
//! block notices after 500 ms (`gc cr block lost`) and the block is sent
//! again. Here the re-sending is this sublayer's, so the protocol above it
//! never sees a message go missing, only late:
//!
//! - **Sequence numbers.** Every database message to a peer carries the next
//!   number of that link ([`LinkStamp::seq`], from 1; Clusterware's
//!   heartbeats and the acknowledgements themselves carry 0 and are not
//!   re-sent).
//! - **Acknowledgements.** The receiver answers every sequenced message with
//!   `Msg::LinkAck { cum, got }`: everything up to `cum` arrived, and so did
//!   `got` (which may be beyond `cum`: the message after a lost one). The
//!   sender forgets what either covers. A duplicate (a re-sent message whose
//!   first copy arrived, or whose acknowledgement was lost) is discarded and
//!   acknowledged again.
//! - **Re-sending.** On a lossy interconnect, what is not acknowledged
//!   500 ms ([`RETRANSMIT_NS`]) after it was sent goes again (one timer per
//!   peer, at the oldest copy's due time), with the send time of the new
//!   copy (so the wire time the requester measures is the copy's that
//!   arrived; the time lost is in the receive time, not on the wire). Over
//!   a transport that loses nothing while its connection is up, a copy is
//!   lost only with a connection that broke, so everything unacknowledged
//!   goes again at once when the connection is back ([`Links::resend_all`],
//!   on both kinds): no timer, and no copy re-sent while the first is merely
//!   slow.
//! - **Order.** The protocol relies on the order of the messages about one
//!   thing (a block, an enqueue, a transaction, the commit broadcasts,
//!   parallel execution): each message names the previous one of the same
//!   [`OrderKey`] on its link ([`LinkStamp::after`]), and the receiver
//!   holds a message until that one was handed over. Messages about
//!   different things overtake a lost one, so one loss stalls one block,
//!   not the whole link (a TCP-like in-order stream would stall every
//!   message behind it for 500 ms).
//!
//! Bounds: a sender keeps at most [`UNACKED_MAX`] unacknowledged messages
//! per peer and numbers at most [`WINDOW_MAX`] beyond the peer's cumulative
//! acknowledgement; past either the message is refused
//! ([`LinkFull`]): the instance drops it and records an error of the run
//! (a peer that no longer acknowledges). A receiver keeps at most
//! [`AHEAD_MAX`] numbers (and held messages) beyond its cumulative point;
//! a message past that is dropped unacknowledged, and the sender sends it
//! again.
//!
//! A link is reset with [`Links::forget`] when its peer leaves the cluster
//! (eviction: nothing is re-sent to a non-member) or comes back as a new
//! incarnation, which starts numbering from 1 again.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use crate::config::{NS_PER_MS, Nanos};
use crate::msg::{Envelope, LinkStamp, Msg, ResName};
use crate::types::{BlockAddr, InstId, Xid};

/// How an instance's database messages reach its peers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Delivery {
    /// Straight through, unnumbered: the simulator's network without a
    /// `loss` or `partition` fault delivers every message, in order.
    #[default]
    Direct,
    /// Numbered and acknowledged, and sent again when the transport's
    /// broken connection to the peer is back (`Instance::handle_reconnect`):
    /// the live runtime's TCP, which loses nothing while a connection is up
    /// but whatever was in flight when it breaks (an outside fault: a reset,
    /// a firewall, `ss -K`, a restarted proxy).
    Transport,
    /// The network drops messages (a phase has a `loss` or a `partition`
    /// fault): also sent again 500 ms after the last copy went, and a block
    /// request unanswered for 500 ms is `lost` (both drivers).
    Lossy,
}

impl Delivery {
    /// What a scenario's delivery becomes over real sockets: never less
    /// than [`Delivery::Transport`].
    pub fn over_transport(self) -> Delivery {
        self.max(Delivery::Transport)
    }
}

/// A message not acknowledged this long after it was sent goes again; the
/// requester of a block calls it lost after the same time (rac-internals
/// §1.10).
pub const RETRANSMIT_NS: Nanos = 500 * NS_PER_MS;

/// Over a transport, a message not acknowledged this long after it was
/// sent goes again: the connection is up (a broken one re-sends at once),
/// but the receiver did not take it. A restarted instance drops what the
/// members number for it before the report that admits it reaches it, and
/// a receiver drops what is past [`AHEAD_MAX`]; without this a commit's
/// broadcast so dropped left `log file sync` waiting for ever (found by
/// `cluster/outside-chaos`: 4 runs in 13). Long against a live round trip,
/// so that a copy that is merely slow is rarely sent twice (and a second
/// copy is discarded as a duplicate anyway); no request counts as lost.
pub const TRANSPORT_RETRANSMIT_NS: Nanos = 2_000 * NS_PER_MS;

/// Unacknowledged messages a sender keeps per peer.
pub const UNACKED_MAX: usize = 4096;

/// Sequence numbers a sender may be ahead of the peer's cumulative
/// acknowledgement (what a receiver may hold per sender is bounded by it).
pub const WINDOW_MAX: u64 = 65_536;

/// Numbers a receiver keeps beyond its cumulative point (received out of
/// order, and the messages held for an earlier one of the same key).
pub const AHEAD_MAX: usize = 65_536;

/// What keeps its order on a link: the messages about one block, one
/// enqueue resource, one transaction; the commit broadcasts and their
/// acknowledgements; parallel execution's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderKey {
    Block(BlockAddr),
    Enqueue(ResName),
    Tx(Xid),
    Scn,
    Px,
    /// A reconfiguration report.
    Reconfig,
    /// Dynamic remastering's steps, in the order they were sent.
    Drm,
    /// LMD's deadlock searches.
    Deadlock,
}

impl OrderKey {
    /// The key of a database message; `None` for what is never sequenced
    /// (Clusterware's heartbeats, the acknowledgements).
    pub fn of(msg: &Msg) -> Option<OrderKey> {
        use OrderKey::*;
        if let Some(blk) = msg.blk() {
            return Some(Block(blk));
        }
        Some(match msg {
            Msg::Rebuild(_) | Msg::ThreadsRecovered { .. } => Reconfig,
            Msg::TxQuery { xid, .. } | Msg::TxStatus { xid, .. } | Msg::TxWait { xid, .. } => {
                Tx(*xid)
            }
            Msg::EnqConvert { res, .. }
            | Msg::EnqGrant { res, .. }
            | Msg::EnqBast { res, .. }
            | Msg::EnqDown { res, .. } => Enqueue(*res),
            Msg::Px(_) => Px,
            Msg::Drm(_) => Drm,
            Msg::Deadlock(_) => Deadlock,
            Msg::ScnBroadcast { .. } | Msg::ScnAck { .. } => Scn,
            // Heartbeats and acknowledgements (the block messages returned above).
            _ => return None,
        })
    }
}

/// The sender's limit was reached: the message was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkFull {
    pub unacked: usize,
    pub window: u64,
}

/// A peer broke the sublayer's rules (reported as the peer's error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkError(pub String);

/// What a sequenced message that arrived comes to.
#[derive(Debug, Default)]
pub struct Arrival {
    /// The acknowledgement to send back: `(cum, got)`.
    pub ack: Option<(u64, u64)>,
    /// Messages to hand to the protocol now, in order (none for a
    /// duplicate: a copy of a message that had already arrived).
    pub deliver: Vec<Envelope>,
}

/// A message kept until it is acknowledged.
#[derive(Debug)]
struct Kept {
    env: Envelope,
    /// When its last copy went out.
    sent: Nanos,
}

/// One peer's link, both ways.
#[derive(Debug, Default)]
struct Peer {
    // Sending.
    /// The last number given out (0: none yet).
    sent_seq: u64,
    /// Everything up to here arrived at the peer.
    acked: u64,
    unacked: BTreeMap<u64, Kept>,
    /// The last number of each key not yet covered by `acked`, and the same
    /// in number order (to forget them as `acked` moves).
    last_of_key: FxHashMap<OrderKey, u64>,
    keyed: VecDeque<(u64, OrderKey)>,
    /// The re-send timer's generation (a later arming makes an earlier
    /// timer stale) and whether one is armed.
    timer_epoch: u64,
    timer_armed: bool,
    // Receiving.
    /// Every number up to here arrived (and was handed over).
    cum: u64,
    /// Numbers beyond `cum` that arrived: handed over (true) or held.
    ahead: BTreeMap<u64, bool>,
    /// Held messages by the number they wait for.
    held: FxHashMap<u64, Envelope>,
}

impl Peer {
    fn handed_over(&self, seq: u64) -> bool {
        seq <= self.cum || self.ahead.get(&seq) == Some(&true)
    }
}

/// The sublayer of one instance: off for [`Delivery::Direct`], else one
/// [`Peer`] per instance of the cluster.
#[derive(Debug)]
pub struct Links {
    delivery: Delivery,
    peers: Vec<Peer>,
}

impl Links {
    pub fn new(instances: u8, delivery: Delivery) -> Links {
        let peers = if delivery == Delivery::Direct {
            Vec::new()
        } else {
            (0..instances).map(|_| Peer::default()).collect()
        };
        Links { delivery, peers }
    }

    /// Whether database messages are sequenced, acknowledged and re-sent.
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.delivery != Delivery::Direct
    }

    /// Whether the network itself drops messages: copies go again on a
    /// timer, and a block request can be `lost`.
    #[inline(always)]
    pub fn lossy(&self) -> bool {
        self.delivery == Delivery::Lossy
    }

    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// Number an outgoing database message to `env.to` and keep a copy
    /// until it is acknowledged. Answers when to arm the peer's re-send
    /// timer (and its generation), if it must be armed.
    pub fn send(
        &mut self,
        now: Nanos,
        env: &mut Envelope,
    ) -> Result<Option<(Nanos, u64)>, LinkFull> {
        let Some(key) = OrderKey::of(&env.msg) else {
            return Ok(None);
        };
        let retransmit_ns = self.retransmit_ns();
        let Some(p) = self.peers.get_mut(env.to.idx()) else {
            return Ok(None);
        };
        let window = p.sent_seq - p.acked;
        if p.unacked.len() >= UNACKED_MAX || window >= WINDOW_MAX {
            return Err(LinkFull {
                unacked: p.unacked.len(),
                window,
            });
        }
        p.sent_seq += 1;
        let seq = p.sent_seq;
        let after = p.last_of_key.insert(key, seq).unwrap_or(0);
        p.keyed.push_back((seq, key));
        env.link = LinkStamp { seq, after };
        p.unacked.insert(
            seq,
            Kept {
                env: env.clone(),
                sent: now,
            },
        );
        Ok(Self::arm(p, now + retransmit_ns))
    }

    /// How long an unacknowledged message waits before it goes again.
    fn retransmit_ns(&self) -> Nanos {
        match self.delivery {
            Delivery::Lossy => RETRANSMIT_NS,
            Delivery::Transport | Delivery::Direct => TRANSPORT_RETRANSMIT_NS,
        }
    }

    fn arm(p: &mut Peer, at: Nanos) -> Option<(Nanos, u64)> {
        if p.timer_armed {
            return None;
        }
        p.timer_armed = true;
        p.timer_epoch += 1;
        Some((at, p.timer_epoch))
    }

    /// A sequenced message from a peer arrived.
    pub fn receive(&mut self, env: Envelope) -> Result<Arrival, LinkError> {
        let LinkStamp { seq, after } = env.link;
        let from = env.from;
        let Some(p) = self.peers.get_mut(from.idx()) else {
            return Err(LinkError(format!(
                "{from} sent message {seq} on a link that does not exist"
            )));
        };
        if after >= seq {
            return Err(LinkError(format!(
                "{from}'s message {seq} says it follows message {after}"
            )));
        }
        if seq <= p.cum || p.ahead.contains_key(&seq) {
            return Ok(Arrival {
                ack: Some((p.cum, seq)),
                deliver: Vec::new(),
            });
        }
        if p.ahead.len() >= AHEAD_MAX && seq != p.cum + 1 {
            // Not acknowledged: it comes again once the gap is filled (the
            // number that fills it is always taken).
            return Ok(Arrival::default());
        }
        let mut out = Arrival::default();
        if after == 0 || p.handed_over(after) {
            p.ahead.insert(seq, true);
            out.deliver.push(env);
            let mut last = seq;
            while let Some(next) = p.held.remove(&last) {
                last = next.link.seq;
                p.ahead.insert(last, true);
                out.deliver.push(next);
            }
        } else {
            if p.held.contains_key(&after) {
                return Err(LinkError(format!(
                    "{from}'s messages {seq} and another both follow message {after}"
                )));
            }
            p.ahead.insert(seq, false);
            p.held.insert(after, env);
        }
        // Everything up to `cum` was handed over: a number just past it
        // waits for nothing before it (its predecessor is at most `cum`).
        while let Some(entry) = p.ahead.first_entry() {
            if *entry.key() != p.cum + 1 {
                break;
            }
            debug_assert!(
                *entry.get(),
                "a held message right after the cumulative point"
            );
            entry.remove();
            p.cum += 1;
        }
        out.ack = Some((p.cum, seq));
        Ok(out)
    }

    /// `from` acknowledged everything up to `cum`, and `got`.
    pub fn acked(&mut self, from: InstId, cum: u64, got: u64) -> Result<(), LinkError> {
        let Some(p) = self.peers.get_mut(from.idx()) else {
            return Err(LinkError(format!(
                "{from} acknowledged on a link that does not exist"
            )));
        };
        if cum > p.sent_seq || got > p.sent_seq {
            return Err(LinkError(format!(
                "{from} acknowledged messages {cum} and {got}; only {} were sent",
                p.sent_seq
            )));
        }
        p.unacked.remove(&got);
        if cum > p.acked {
            p.acked = cum;
            p.unacked = p.unacked.split_off(&(cum + 1));
            while let Some(&(seq, key)) = p.keyed.front() {
                if seq > cum {
                    break;
                }
                p.keyed.pop_front();
                if p.last_of_key.get(&key) == Some(&seq) {
                    p.last_of_key.remove(&key);
                }
            }
        }
        Ok(())
    }

    /// The re-send timer of `peer` (generation `epoch`) fired at `now`: the
    /// copies to send again (their send time is now), and when to arm the
    /// timer next, if anything is still unacknowledged.
    pub fn due(
        &mut self,
        now: Nanos,
        peer: InstId,
        epoch: u64,
    ) -> (Vec<Envelope>, Option<(Nanos, u64)>) {
        let retransmit_ns = self.retransmit_ns();
        let Some(p) = self.peers.get_mut(peer.idx()) else {
            return (Vec::new(), None);
        };
        if !p.timer_armed || epoch != p.timer_epoch {
            return (Vec::new(), None);
        }
        p.timer_armed = false;
        let mut again = Vec::new();
        let mut next: Option<Nanos> = None;
        for kept in p.unacked.values_mut() {
            if kept.sent + retransmit_ns <= now {
                kept.sent = now;
                kept.env.sent_at = now;
                again.push(kept.env.clone());
            }
            let at = kept.sent + retransmit_ns;
            next = Some(next.map_or(at, |n| n.min(at)));
        }
        let arm = next.and_then(|at| Self::arm(p, at));
        (again, arm)
    }

    /// The connection to `peer` broke and is back: every unacknowledged
    /// message to it goes again now, oldest first (what was in flight on
    /// the broken one, or given while it was down, is lost; a copy that did
    /// arrive comes as a duplicate, which the peer discards and
    /// acknowledges again). A re-send timer then counts from now.
    pub fn resend_all(&mut self, now: Nanos, peer: InstId) -> Vec<Envelope> {
        let Some(p) = self.peers.get_mut(peer.idx()) else {
            return Vec::new();
        };
        p.unacked
            .values_mut()
            .map(|kept| {
                kept.sent = now;
                kept.env.sent_at = now;
                kept.env.clone()
            })
            .collect()
    }

    /// The unacknowledged messages to `peer`, oldest first.
    pub fn unacked(&self, peer: InstId) -> impl Iterator<Item = &Envelope> {
        self.peers
            .get(peer.idx())
            .into_iter()
            .flat_map(|p| p.unacked.values().map(|k| &k.env))
    }

    /// Forget everything about the link to and from `peer`: it left the
    /// cluster (nothing is re-sent to it) or comes back as a new
    /// incarnation (numbering starts again at 1 both ways). A timer armed
    /// before is stale afterwards.
    pub fn forget(&mut self, peer: InstId) {
        if let Some(p) = self.peers.get_mut(peer.idx()) {
            let epoch = p.timer_epoch;
            *p = Peer::default();
            p.timer_epoch = epoch + 1;
        }
    }
}

#[cfg(test)]
mod tests;
