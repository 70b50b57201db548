//! Membership's sending and receiving side on what it emits: two
//! instances' memberships and kernels, envelopes passed by hand.

use super::super::kernel::Kernel;
use super::{Delivery, Membership};
use crate::config::Catalog;
use crate::msg::{Action, Envelope, Mode, Msg};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId};

const A: InstId = InstId(0);
const B: InstId = InstId(1);

fn instance(id: InstId, delivery: Delivery) -> (Kernel, Membership) {
    let k = Kernel::for_instance(id, &Catalog::default());
    let m = Membership::new(id, 2, k.params(), 0, delivery);
    (k, m)
}

fn relinquish(blk: u32) -> Msg {
    Msg::Relinquish {
        blk: BlockAddr(blk),
        mode: Mode::S,
    }
}

/// The envelopes sent so far (taken); anything else emitted fails.
fn sent(k: &mut Kernel) -> Vec<Envelope> {
    k.take_actions()
        .into_iter()
        .map(|a| match a {
            Action::Send(env) => env,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn over_a_transport_a_message_is_numbered_handed_over_once_and_acknowledged() {
    let (mut ka, mut a) = instance(A, Delivery::Transport);
    let (mut kb, mut b) = instance(B, Delivery::Transport);
    a.net().send(&mut ka, B, relinquish(7));
    let [env] = &sent(&mut ka)[..] else { panic!() };
    assert_eq!((env.from, env.to, env.link.seq), (A, B, 1));
    assert_eq!(ka.stats().get(Stat::GcsMessagesSent), 1);
    // Handed over, and acknowledged.
    let got = b.link_receive(&mut kb, env.clone());
    assert_eq!(
        got.iter().map(|e| &e.msg).collect::<Vec<_>>(),
        vec![&relinquish(7)]
    );
    let [ack] = &sent(&mut kb)[..] else { panic!() };
    assert_eq!(ack.to, A);
    assert!(matches!(ack.msg, Msg::LinkAck { cum: 1, .. }), "{ack:?}");
    // A copy (the transport sent it again) is not handed over twice.
    assert!(b.link_receive(&mut kb, env.clone()).is_empty());
    // Not acknowledged yet: a broken connection's return sends it again.
    a.reconnected(&mut ka, B);
    assert_eq!(sent(&mut ka).len(), 1);
    assert!(a.link_receive(&mut ka, ack.clone()).is_empty());
    a.reconnected(&mut ka, B);
    assert!(
        sent(&mut ka).is_empty(),
        "acknowledged: nothing to send again"
    );
    assert!(ka.errors().is_empty() && kb.errors().is_empty());
}

#[test]
fn a_numbered_message_where_nothing_is_numbered_is_an_error_not_a_delivery() {
    let (mut ka, mut a) = instance(A, Delivery::Transport);
    let (mut kb, mut b) = instance(B, Delivery::Direct);
    a.net().send(&mut ka, B, relinquish(7));
    let [env] = &sent(&mut ka)[..] else { panic!() };
    assert!(b.link_receive(&mut kb, env.clone()).is_empty());
    assert!(sent(&mut kb).is_empty());
    assert!(
        kb.errors()[0].contains("with link numbers, but this interconnect loses nothing"),
        "{:?}",
        kb.errors()
    );
    // Unnumbered where messages are: an error too.
    let (mut kc, mut c) = instance(B, Delivery::Transport);
    let mut plain = env.clone();
    plain.link = Default::default();
    assert!(c.link_receive(&mut kc, plain).is_empty());
    assert!(
        kc.errors()[0].contains("without a link number"),
        "{:?}",
        kc.errors()
    );
}

#[test]
fn direct_delivery_sends_unnumbered_and_keeps_nothing() {
    let (mut ka, mut a) = instance(A, Delivery::Direct);
    a.net().send(&mut ka, B, relinquish(7));
    let [env] = &sent(&mut ka)[..] else { panic!() };
    assert_eq!(env.link.seq, 0);
    a.reconnected(&mut ka, B);
    assert!(sent(&mut ka).is_empty());
}

/// The I/Os emitted so far (taken), sends left out.
fn ios(k: &mut Kernel) -> Vec<crate::msg::Io> {
    k.take_actions()
        .into_iter()
        .filter_map(|a| match a {
            Action::Io { io, .. } => Some(io),
            Action::Send(_) => None,
        })
        .collect()
}

#[test]
fn a_tick_beats_to_the_members_and_keeps_one_disk_heartbeat_in_flight() {
    use super::super::events::Timer;
    use crate::msg::Io;
    let (mut k, mut m) = instance(A, Delivery::Direct);
    m.css_tick(&mut k);
    let actions = k.take_actions();
    let [
        Action::Send(beat),
        Action::Io {
            io: Io::Vote { .. },
            ..
        },
    ] = &actions[..]
    else {
        panic!("{actions:?}");
    };
    assert_eq!(beat.to, B);
    assert!(
        matches!(beat.msg, Msg::Heartbeat { incarnation: 1, .. }),
        "{beat:?}"
    );
    assert_eq!(
        k.timers_armed(),
        vec![(super::HEARTBEAT_NS, Timer::CssTick)]
    );
    // The store is slow: the next tick beats, but sends no second vote.
    m.css_tick(&mut k);
    assert!(ios(&mut k).is_empty());
    // Its answer frees the next one.
    assert_eq!(m.on_votes(&k, &[]), super::Verdict::Wait);
    m.css_tick(&mut k);
    assert!(matches!(ios(&mut k)[..], [Io::Vote { .. }]));
}

#[test]
fn the_lowest_member_admits_a_restarted_instance_by_lifting_its_fence_then_reconfigures_with_it() {
    use crate::msg::Io;
    use crate::types::InstSet;
    let (mut k, mut m) = instance(A, Delivery::Direct);
    let mut alone = InstSet::default();
    alone.insert(A);
    assert_eq!(m.reconfigure(&k, alone), (1, 2), "B evicted");
    m.fence(&mut k, InstSet(1 << B.0));
    assert!(matches!(ios(&mut k)[..], [Io::Fence { inst: B }]));
    // B's next life beats with incarnation 0: it asks to join.
    m.on_heartbeat(&mut k, B, 0, InstSet::default());
    assert!(matches!(ios(&mut k)[..], [Io::Unfence { inst: B }]));
    // Once, while that admission runs.
    m.on_heartbeat(&mut k, B, 0, InstSet::default());
    assert!(ios(&mut k).is_empty());
    let mut both = alone;
    both.insert(B);
    assert_eq!(m.on_unfenced(), Some(both));
    assert_eq!(m.on_unfenced(), None, "admitted once");
}

#[test]
fn a_fenced_member_stops_but_a_restarted_instance_not_yet_admitted_goes_on() {
    let (_, mut member) = instance(A, Delivery::Direct);
    assert!(
        member
            .on_fenced()
            .is_some_and(|why| why.starts_with("evicted: the store refused"))
    );
    let k = Kernel::for_instance(B, &Catalog::default());
    let mut joining = Membership::new(B, 2, k.params(), 1, Delivery::Direct);
    assert_eq!(joining.on_fenced(), None);
    assert!(joining.sessions_wait());
}
