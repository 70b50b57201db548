//! A peer's message this instance did not expect is a protocol error the
//! instance reports (`Instance::errors`), never a panic, and a peer that
//! sends such messages for ever cannot grow the error log past its bound.
//! Run in a debug build, so a `debug_assert!` on a peer's message would fail here.

mod harness;

use fusion_core::block::{Block, Body};
use fusion_core::config::{NS_PER_MS, Nanos};
use fusion_core::instance::{ERRORS_MAX, Instance};
use fusion_core::msg::{
    Envelope, GrantKind, Installed, Mode, Msg, ReqKind, Request, ShipKind, Shipment,
};
use fusion_core::types::Scn;
use fusion_core::types::{BlockAddr, InstId};

const INST1: InstId = InstId(0);
const INST2: InstId = InstId(1);

/// Instance 1 of two, with a table and no workload: nothing of its own in flight.
fn instance() -> Instance {
    let cfg = harness::configs(2, harness::catalog(40, 10), Vec::new())
        .into_iter()
        .next()
        .expect("two configurations");
    Instance::new(cfg)
}

/// Deliver `msg` from instance 2 at `at`, then run instance 1 for a
/// millisecond (the LMS that takes it needs a CPU step), dropping what it sends.
fn deliver(inst: &mut Instance, at: Nanos, msg: Msg) {
    inst.handle_message(at, from_peer(msg));
    while inst.poll_action().is_some() {}
    let until = at + NS_PER_MS;
    while let Some(t) = inst.next_deadline().filter(|&t| t <= until) {
        inst.handle_timeout(t);
        while inst.poll_action().is_some() {}
    }
}

fn from_peer(msg: Msg) -> Envelope {
    Envelope {
        from: INST2,
        to: INST1,
        incarnation: 1,
        scn: Scn(1),
        sent_at: 0,
        msg,
        link: Default::default(),
    }
}

fn request(blk: BlockAddr, id: u64) -> Request {
    Request {
        id,
        blk,
        requester: INST1,
        kind: ReqKind::Current { new_block: false },
        timing: Default::default(),
    }
}

/// A block instance 1 masters (the harness gives each block its own master).
fn mastered_here() -> BlockAddr {
    let layout = harness::layout(2, &harness::catalog(40, 10));
    harness::key_mastered_by(&layout, INST1).1
}

fn unexpected(blk: BlockAddr, k: u64) -> Msg {
    match k % 3 {
        0 => Msg::InvalidateAck { blk, req: k },
        1 => Msg::Ship(Box::new(Shipment {
            req: request(blk, k),
            kind: ShipKind::Current,
            block: Block::new(blk, Body::Table { rows: Vec::new() }),
            pi_kept: false,
            hops: 2,
            congested: false,
        })),
        _ => Msg::Grant {
            req: request(blk, k),
            grant: GrantKind::Disk(Mode::X),
        },
    }
}

#[test]
fn an_unexpected_invalidate_ack_ship_or_grant_is_a_protocol_error() {
    let blk = mastered_here();
    for (k, what) in ["InvalidateAck", "Ship", "Grant"].into_iter().enumerate() {
        let mut inst = instance();
        deliver(&mut inst, NS_PER_MS, unexpected(blk, k as u64));
        let errors = inst.errors();
        assert_eq!(errors.len(), 1, "{what}: {errors:?}");
        assert!(
            errors[0].contains(&blk.to_string()),
            "{what}: the error names the block: {errors:?}"
        );
        assert!(inst.halted().is_none(), "{what}: the instance goes on");
    }
}

#[test]
fn ten_thousand_bad_messages_keep_the_error_log_at_its_bound() {
    let blk = mastered_here();
    let mut inst = instance();
    for k in 0..10_000u64 {
        deliver(&mut inst, (k + 1) * NS_PER_MS, unexpected(blk, k));
    }
    let errors = inst.errors();
    assert_eq!(errors.len(), ERRORS_MAX);
    assert!(errors[ERRORS_MAX - 1].contains("more problems followed"));
}

#[test]
fn a_peer_asking_for_a_block_it_holds_in_x_is_a_protocol_error() {
    let blk = mastered_here();
    let mut inst = instance();
    let asked = |id| Request {
        requester: INST2,
        ..request(blk, id)
    };
    // Instance 2 reads the block from disk in X and says so ...
    deliver(&mut inst, NS_PER_MS, Msg::Request(asked(1)));
    deliver(
        &mut inst,
        3 * NS_PER_MS,
        Msg::Installed(Installed {
            blk,
            req: 1,
            mode: Mode::X,
            prev_holder: None,
            pi_kept: false,
        }),
    );
    assert_eq!(inst.errors(), &[] as &[String]);
    // ... then asks for it again.
    deliver(&mut inst, 5 * NS_PER_MS, Msg::Request(asked(2)));
    let errors = inst.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("holds in X"), "{errors:?}");
    assert!(errors[0].contains(&blk.to_string()), "{errors:?}");
    assert_eq!(
        inst.directory_entry(blk).map(|(x, _, _)| x),
        Some(Some(INST2)),
        "the directory still names instance 2 the X holder"
    );
}
