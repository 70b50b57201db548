//! The sublayer alone: two `Links` (instances 1 and 2) passing envelopes by
//! hand, so a test decides what is lost, duplicated or reordered.

use super::*;
use crate::msg::{Mode, Msg};
use crate::types::Scn;

const A: InstId = InstId(0);
const B: InstId = InstId(1);

fn env(from: InstId, to: InstId, msg: Msg) -> Envelope {
    Envelope {
        from,
        to,
        incarnation: 1,
        scn: Scn(1),
        sent_at: 0,
        msg,
        link: LinkStamp::default(),
    }
}

/// A message about block `blk` (each block is its own order key).
fn about(blk: u32) -> Msg {
    Msg::Relinquish {
        blk: BlockAddr(blk),
        mode: Mode::S,
    }
}

fn blk_of(e: &Envelope) -> u32 {
    match e.msg {
        Msg::Relinquish { blk, .. } => blk.0,
        _ => u32::MAX,
    }
}

/// `a` numbers a message about `blk` to B.
fn send(a: &mut Links, now: Nanos, blk: u32) -> Envelope {
    let mut e = env(A, B, about(blk));
    a.send(now, &mut e).expect("room");
    e
}

fn pair() -> (Links, Links) {
    (
        Links::new(2, Delivery::Lossy),
        Links::new(2, Delivery::Lossy),
    )
}

/// Two instances over a transport (live TCP).
fn transport_pair() -> (Links, Links) {
    (
        Links::new(2, Delivery::Transport),
        Links::new(2, Delivery::Transport),
    )
}

#[test]
fn in_order_messages_are_handed_over_and_acknowledged() {
    let (mut a, mut b) = pair();
    for k in 1..=3 {
        let e = send(&mut a, 0, k);
        assert_eq!(e.link.seq, u64::from(k));
        let got = b.receive(e).expect("fine");
        assert_eq!(got.deliver.len(), 1);
        assert_eq!(got.ack, Some((u64::from(k), u64::from(k))));
        let (cum, seq) = got.ack.unwrap_or_default();
        a.acked(B, cum, seq).expect("fine");
    }
    assert_eq!(a.unacked(B).count(), 0);
}

#[test]
fn a_duplicate_is_discarded_and_acknowledged_again() {
    let (mut a, mut b) = pair();
    let e = send(&mut a, 0, 7);
    assert_eq!(b.receive(e.clone()).expect("fine").deliver.len(), 1);
    let again = b.receive(e).expect("fine");
    assert!(again.deliver.is_empty(), "the copy is not handed over");
    assert_eq!(
        again.ack,
        Some((1, 1)),
        "but acknowledged again (the ack may be lost)"
    );
}

#[test]
fn a_lost_message_holds_back_only_its_own_key() {
    let (mut a, mut b) = pair();
    let first = send(&mut a, 0, 10); // lost
    let second = send(&mut a, 0, 10); // same block: must wait for the first
    let other = send(&mut a, 0, 11); // another block: overtakes
    assert_eq!(second.link.after, first.link.seq);
    assert_eq!(other.link.after, 0);
    let held = b.receive(second).expect("fine");
    assert!(held.deliver.is_empty(), "held for the lost one");
    assert_eq!(held.ack, Some((0, 2)), "acknowledged selectively");
    a.acked(B, 0, 2).expect("fine");
    let over = b.receive(other).expect("fine");
    assert_eq!(over.deliver.iter().map(blk_of).collect::<Vec<_>>(), [11]);
    a.acked(B, 0, 3).expect("fine");
    // Only the lost one is still unacknowledged; it goes again after 500 ms.
    assert_eq!(a.unacked(B).map(|e| e.link.seq).collect::<Vec<_>>(), [1]);
    let (again, arm) = a.due(RETRANSMIT_NS, B, 1);
    assert_eq!(again.len(), 1);
    assert_eq!(
        again[0].sent_at, RETRANSMIT_NS,
        "the copy carries its own send time"
    );
    assert_eq!(arm.map(|(at, _)| at), Some(2 * RETRANSMIT_NS));
    let filled = b.receive(again[0].clone()).expect("fine");
    assert_eq!(
        filled
            .deliver
            .iter()
            .map(|e| e.link.seq)
            .collect::<Vec<_>>(),
        [1, 2],
        "the lost one, then the one held behind it, in order"
    );
    assert_eq!(filled.ack, Some((3, 1)), "everything up to 3 arrived");
    a.acked(B, 3, 1).expect("fine");
    assert_eq!(a.unacked(B).count(), 0);
    let (nothing, rearm) = a.due(2 * RETRANSMIT_NS, B, 2);
    assert!(nothing.is_empty() && rearm.is_none());
}

#[test]
fn nothing_is_sent_again_before_500_ms_and_a_stale_timer_does_nothing() {
    let (mut a, _) = pair();
    let (arm, epoch) = {
        let mut e = env(A, B, about(1));
        a.send(100, &mut e)
            .expect("room")
            .expect("first message arms the timer")
    };
    assert_eq!(arm, 100 + RETRANSMIT_NS);
    let mut e = env(A, B, about(2));
    assert_eq!(
        a.send(200, &mut e).expect("room"),
        None,
        "one timer per peer"
    );
    let (again, next) = a.due(arm, B, epoch);
    assert_eq!(again.len(), 1, "only the message sent at 100 is due");
    assert_eq!(next.map(|(at, _)| at), Some(200 + RETRANSMIT_NS));
    assert!(
        a.due(arm, B, epoch).0.is_empty(),
        "that timer's generation is over"
    );
}

#[test]
fn the_sender_is_bounded() {
    let (mut a, _) = pair();
    for k in 0..UNACKED_MAX {
        let mut e = env(A, B, about(k as u32));
        assert!(a.send(0, &mut e).is_ok());
    }
    let mut e = env(A, B, about(0));
    let full = a.send(0, &mut e).expect_err("at the limit");
    assert_eq!(full.unacked, UNACKED_MAX);
    // An acknowledgement makes room again.
    a.acked(B, 10, 10).expect("fine");
    assert!(a.send(0, &mut e).is_ok());
}

#[test]
fn the_receiver_is_bounded() {
    // A sender keeps within its window (`WINDOW_MAX`); a peer that does
    // not is cut off at `AHEAD_MAX` numbers beyond the gap at 1.
    let (_, mut b) = pair();
    let numbered = |seq: u64| {
        let mut e = env(A, B, about(seq as u32));
        e.link = LinkStamp { seq, after: 0 };
        e
    };
    for seq in 2..=AHEAD_MAX as u64 + 1 {
        assert!(b.receive(numbered(seq)).expect("fine").ack.is_some());
    }
    let past = b.receive(numbered(AHEAD_MAX as u64 + 2)).expect("fine");
    assert!(
        past.ack.is_none() && past.deliver.is_empty(),
        "dropped, not acknowledged"
    );
    let gap = b.receive(numbered(1)).expect("fine");
    assert_eq!(
        gap.ack,
        Some((AHEAD_MAX as u64 + 1, 1)),
        "the gap filled, all caught up"
    );
}

#[test]
fn wrong_numbers_from_a_peer_are_errors_not_panics() {
    let (mut a, mut b) = pair();
    let mut e = send(&mut a, 0, 1);
    e.link.after = e.link.seq;
    assert!(b.receive(e).is_err());
    assert!(
        a.acked(B, 99, 0).is_err(),
        "an acknowledgement of what was never sent"
    );
    let mut outsider = env(InstId(7), A, about(1));
    outsider.link.seq = 1;
    assert!(b.receive(outsider).is_err());
}

#[test]
fn heartbeats_and_acks_are_not_numbered() {
    let (mut a, _) = pair();
    let mut hb = env(
        A,
        B,
        Msg::Heartbeat {
            incarnation: 1,
            members: crate::types::InstSet::default(),
        },
    );
    assert_eq!(a.send(0, &mut hb).expect("fine"), None);
    assert_eq!(hb.link, LinkStamp::default());
    let mut ack = env(A, B, Msg::LinkAck { cum: 0, got: 0 });
    assert_eq!(a.send(0, &mut ack).expect("fine"), None);
    assert_eq!(a.unacked(B).count(), 0);
}

#[test]
fn forget_starts_the_link_again() {
    let (mut a, mut b) = pair();
    let e = send(&mut a, 0, 1);
    b.receive(e).expect("fine");
    a.forget(B);
    b.forget(A);
    assert_eq!(
        a.unacked(B).count(),
        0,
        "nothing is sent again to a forgotten peer"
    );
    let e = send(&mut a, 0, 1);
    assert_eq!(e.link.seq, 1, "numbering starts again");
    assert_eq!(
        b.receive(e).expect("fine").deliver.len(),
        1,
        "not taken for a duplicate"
    );
}

#[test]
fn over_a_transport_only_what_was_not_taken_goes_again_on_a_slow_timer() {
    let (mut a, mut b) = transport_pair();
    let mut e = env(A, B, about(1));
    let (at, epoch) = a
        .send(100, &mut e)
        .expect("room")
        .expect("a re-send timer, slower than a lossy link's");
    assert_eq!(at, 100 + TRANSPORT_RETRANSMIT_NS);
    const { assert!(TRANSPORT_RETRANSMIT_NS > RETRANSMIT_NS) };
    assert_eq!(e.link.seq, 1, "numbered all the same");
    assert_eq!(a.unacked(B).count(), 1, "and kept until acknowledged");
    assert!(!a.lossy() && a.on());
    // The peer dropped it (a restarted instance before its admission):
    // it goes again when the timer fires.
    let (again, _) = a.due(at, B, epoch);
    assert_eq!(again.len(), 1);
    let got = b.receive(again[0].clone()).expect("fine");
    assert_eq!(got.deliver.len(), 1);
    let (cum, seq) = got.ack.unwrap_or_default();
    a.acked(B, cum, seq).expect("fine");
    assert_eq!(a.unacked(B).count(), 0);
    assert_eq!(Delivery::Direct.over_transport(), Delivery::Transport);
    assert_eq!(Delivery::Lossy.over_transport(), Delivery::Lossy);
}

#[test]
fn a_broken_connection_loses_nothing_once_it_is_back() {
    let (mut a, mut b) = transport_pair();
    // 1 arrives and is acknowledged; 2 and 3 (same block) die with the
    // connection; 4 arrives but its acknowledgement is lost.
    let first = send(&mut a, 0, 1);
    let got = b.receive(first).expect("fine");
    let (cum, seq) = got.ack.expect("acknowledged");
    a.acked(B, cum, seq).expect("fine");
    let _lost = send(&mut a, 10, 2);
    let _lost_too = send(&mut a, 20, 2);
    let arrived = send(&mut a, 30, 3);
    assert_eq!(b.receive(arrived).expect("fine").deliver.len(), 1);
    // The connection is back at 1 s: everything unacknowledged goes again,
    // oldest first, stamped with the time it leaves.
    let again = a.resend_all(1_000_000_000, B);
    assert_eq!(
        again.iter().map(|e| e.link.seq).collect::<Vec<_>>(),
        [2, 3, 4]
    );
    assert!(again.iter().all(|e| e.sent_at == 1_000_000_000));
    let mut handed = Vec::new();
    for e in again {
        let got = b.receive(e).expect("fine");
        handed.extend(got.deliver.iter().map(|e| e.link.seq));
        let (cum, seq) = got.ack.expect("acknowledged, duplicate or not");
        a.acked(B, cum, seq).expect("fine");
    }
    assert_eq!(
        handed,
        [2, 3],
        "the duplicate of 4 is not handed over twice"
    );
    assert_eq!(a.unacked(B).count(), 0, "everything acknowledged");
    assert!(
        a.resend_all(2_000_000_000, B).is_empty(),
        "a second reconnect sends nothing"
    );
}
