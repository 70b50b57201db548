//! Round trips (core -> proto -> bytes -> proto -> core) for every message
//! variant and for random blocks, and what malformed input from a peer gives.

use fusion_core::block::{
    Block, Body, Change, Itl, LeafEntry, Piece, Row, UndoLog, UndoOp, UndoRec,
};
use fusion_core::msg::{
    DeadlockMsg, DrmMsg, EnqKind, Envelope, GrantKind, Held, Installed, LockMode, Lvb, Mode, Msg,
    ReqKind, Request, ResName, ShipKind, Shipment, Timing, TxReport, WaitHop,
};
use fusion_core::types::Scn;
use fusion_core::types::{BlockAddr, InstId, Rowid, Xid};
use fusion_wire::{
    BlockProblem, Codec, WireError, decode_block, encode_block, oversize_blocks, pb,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use prost::Message;

fn inst() -> impl Strategy<Value = InstId> {
    (0u8..64).prop_map(InstId)
}

fn xid() -> impl Strategy<Value = Xid> {
    prop_oneof![
        Just(Xid::NONE),
        (0u64..64, 0u64..(1 << 56)).prop_map(|(i, s)| Xid((i << 56) | s)),
    ]
}

fn addr() -> impl Strategy<Value = BlockAddr> {
    any::<u32>().prop_map(BlockAddr)
}

fn row() -> impl Strategy<Value = Row> {
    (any::<u64>(), any::<i64>(), xid()).prop_map(|(key, val, lock)| Row { key, val, lock })
}

fn entry() -> impl Strategy<Value = LeafEntry> {
    (any::<u64>(), addr(), any::<u16>(), xid(), any::<i64>()).prop_map(
        |(key, blk, slot, lock, val)| LeafEntry {
            key,
            rowid: Rowid { blk, slot },
            lock,
            val,
        },
    )
}

fn piece() -> impl Strategy<Value = Piece> {
    (any::<i64>(), any::<u32>(), xid(), vec(any::<u64>(), 0..20)).prop_map(
        |(value, chunk, lock, mut bits)| {
            bits.sort_unstable();
            bits.dedup();
            Piece {
                value,
                chunk,
                bits,
                lock,
            }
        },
    )
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        Just(Body::Unformatted),
        vec(option::of(row()), 0..20).prop_map(|rows| Body::Table { rows }),
        (
            vec(piece(), 0..8),
            option::of(addr()),
            any::<u64>(),
            option::of(any::<u64>()),
        )
            .prop_map(|(pieces, next, low, high)| Body::Bitmap {
                pieces,
                next,
                low,
                high
            }),
        (
            vec(entry(), 0..20),
            option::of(addr()),
            any::<u64>(),
            option::of(any::<u64>()),
        )
            .prop_map(|(entries, next, low, high)| Body::Leaf {
                entries,
                next,
                low,
                high
            }),
        vec(any::<u32>(), 0..10).prop_map(|used| Body::SegHeader { used }),
        vec((any::<u64>(), addr()), 0..20).prop_map(|entries| Body::Branch { entries }),
    ]
}

/// An undo record: its op, or (`Err`) the whole body it restores.
fn undo() -> impl Strategy<Value = (Xid, Result<UndoOp, Body>)> {
    let op = prop_oneof![
        (any::<u16>(), option::of(row()))
            .prop_map(|(slot, before)| Ok(UndoOp::Row { slot, before })),
        any::<u64>().prop_map(|key| Ok(UndoOp::EntryInsert { key })),
        body().prop_map(Err),
        entry().prop_map(|before| Ok(UndoOp::Entry { before })),
        (any::<u64>(), any::<u64>(), any::<bool>(), xid())
            .prop_map(|(at, key, was, lock)| Ok(UndoOp::Bit { at, key, was, lock })),
    ];
    (xid(), op)
}

fn undo_log(records: Vec<(Xid, Result<UndoOp, Body>)>) -> UndoLog {
    let mut log = UndoLog::default();
    for (xid, op) in records {
        match op {
            Ok(op) => log.push(UndoRec { xid, op }),
            Err(body) => log.push_body(xid, body),
        }
    }
    log
}

fn block() -> impl Strategy<Value = Block> {
    (
        addr(),
        any::<u64>(),
        body(),
        vec(
            (xid(), option::of(any::<u64>())).prop_map(|(xid, commit)| Itl {
                xid,
                commit: commit.map(Scn),
            }),
            0..8,
        ),
        vec(undo(), 0..8),
        any::<u64>(),
    )
        .prop_map(|(addr, scn, body, itl, undo, trimmed_scn)| Block {
            addr,
            scn: Scn(scn),
            body: std::sync::Arc::new(body),
            itl,
            undo: undo_log(undo),
            trimmed_scn: Scn(trimmed_scn),
        })
}

fn timing() -> impl Strategy<Value = Timing> {
    (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(request, lms_wait, lms_proc, flush, pin)| Timing {
            request,
            lms_wait,
            lms_proc,
            flush,
            pin,
        })
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::S), Just(Mode::X)]
}

fn request() -> impl Strategy<Value = Request> {
    let kind = prop_oneof![
        (any::<u64>(), xid()).prop_map(|(snapshot, reader)| ReqKind::Cr {
            snapshot: Scn(snapshot),
            reader
        }),
        any::<bool>().prop_map(|new_block| ReqKind::Current { new_block }),
    ];
    (any::<u64>(), addr(), inst(), kind, timing()).prop_map(|(id, blk, requester, kind, timing)| {
        Request {
            id,
            blk,
            requester,
            kind,
            timing,
        }
    })
}

fn res_name() -> impl Strategy<Value = ResName> {
    let kind = prop_oneof![
        Just(EnqKind::RowCache),
        Just(EnqKind::Sq),
        Just(EnqKind::Sv),
        Just(EnqKind::IndexSplit)
    ];
    prop_oneof![
        (kind, any::<u32>()).prop_map(|(kind, id)| ResName {
            kind,
            id: u64::from(id)
        }),
        xid().prop_map(ResName::tx),
    ]
}

fn deadlock_msg() -> impl Strategy<Value = Msg> {
    let hop = (
        inst(),
        any::<u32>(),
        xid(),
        xid(),
        any::<u64>(),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(
            |(inst, sid, xid, holder, wait_id, since, abandonable)| WaitHop {
                inst,
                sid,
                xid,
                holder,
                wait_id,
                since,
                abandonable,
            },
        );
    (vec(hop, 1..6), 0u8..3, any::<u32>())
        .prop_map(|(path, kind, at)| match kind {
            0 => DeadlockMsg::Search { path },
            1 => DeadlockMsg::Found { path },
            _ => DeadlockMsg::Confirm { path, at },
        })
        .prop_map(|m| Msg::Deadlock(Box::new(m)))
}

fn lock_mode() -> impl Strategy<Value = LockMode> {
    prop_oneof![
        Just(LockMode::Nl),
        Just(LockMode::Ss),
        Just(LockMode::Sx),
        Just(LockMode::S),
        Just(LockMode::Ssx),
        Just(LockMode::X),
    ]
}

fn lvb() -> impl Strategy<Value = Lvb> {
    (any::<u64>(), any::<u64>()).prop_map(|(lo, hi)| Lvb { lo, hi })
}

/// The global enqueue messages.
fn ges_msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        (res_name(), lock_mode(), any::<u64>()).prop_map(|(res, mode, token)| Msg::EnqConvert {
            res,
            mode,
            token
        }),
        (res_name(), lock_mode(), any::<u64>(), lvb()).prop_map(|(res, mode, token, lvb)| {
            Msg::EnqGrant {
                res,
                mode,
                token,
                lvb,
            }
        }),
        (res_name(), lock_mode()).prop_map(|(res, mode)| Msg::EnqBast { res, mode }),
        (res_name(), lock_mode(), option::of(lvb())).prop_map(|(res, mode, lvb)| Msg::EnqDown {
            res,
            mode,
            lvb
        }),
        any::<u64>().prop_map(|seq| Msg::ScnBroadcast { seq }),
        any::<u64>().prop_map(|seq| Msg::ScnAck { seq }),
        (any::<u64>(), any::<u64>()).prop_map(|(cum, got)| Msg::LinkAck { cum, got }),
    ]
}

fn drm_msg() -> impl Strategy<Value = Msg> {
    let held = prop_oneof![
        any::<bool>().prop_map(|dirty| Held::X { dirty }),
        any::<bool>().prop_map(|dirty| Held::S { dirty }),
        any::<u64>().prop_map(|scn| Held::Pi { scn: Scn(scn) }),
        (any::<bool>(), any::<u64>()).prop_map(|(x, req)| Held::Reading {
            mode: if x { Mode::X } else { Mode::S },
            req
        }),
    ];
    let m = prop_oneof![
        (any::<u64>(), vec((any::<u32>(), any::<u64>()), 0..4))
            .prop_map(|(window, objects)| DrmMsg::Stats { window, objects }),
        (any::<u32>(), any::<u32>(), inst()).prop_map(|(drm, object, to)| DrmMsg::Freeze {
            drm,
            object,
            to
        }),
        any::<u32>().prop_map(|drm| DrmMsg::Quiet { drm }),
        any::<u32>().prop_map(|drm| DrmMsg::Transfer { drm }),
        (any::<u32>(), vec((addr(), held), 0..4))
            .prop_map(|(drm, blocks)| DrmMsg::Rebuild { drm, blocks }),
        any::<u32>().prop_map(|drm| DrmMsg::Done { drm }),
    ];
    m.prop_map(|m| Msg::Drm(Box::new(m)))
}

fn msg() -> impl Strategy<Value = Msg> {
    let grant = prop_oneof![
        mode().prop_map(GrantKind::Disk),
        Just(GrantKind::Upgrade),
        Just(GrantKind::New),
    ];
    let ship_kind = prop_oneof![
        (any::<u64>(), any::<u64>(), any::<bool>()).prop_map(|(lo, hi, private)| ShipKind::Cr {
            lo: Scn(lo),
            hi: Scn(hi),
            private
        }),
        Just(ShipKind::Raw),
        Just(ShipKind::Shared),
        Just(ShipKind::Current),
    ];
    let report = prop_oneof![
        Just(TxReport::Active),
        any::<u64>().prop_map(|s| TxReport::Committed(Scn(s))),
    ];
    prop_oneof![
        request().prop_map(Msg::Request),
        (request(), inst(), any::<bool>()).prop_map(|(req, master, shared)| Msg::Forward {
            req,
            master,
            shared
        }),
        (request(), grant).prop_map(|(req, grant)| Msg::Grant { req, grant }),
        (
            request(),
            ship_kind,
            block(),
            any::<bool>(),
            any::<u8>(),
            any::<bool>()
        )
            .prop_map(
                |(req, kind, block, pi_kept, hops, congested)| Msg::Ship(Box::new(Shipment {
                    req,
                    kind,
                    block,
                    pi_kept,
                    hops,
                    congested
                }))
            ),
        (
            addr(),
            any::<u64>(),
            mode(),
            option::of(inst()),
            any::<bool>()
        )
            .prop_map(
                |(blk, req, mode, prev_holder, pi_kept)| Msg::Installed(Installed {
                    blk,
                    req,
                    mode,
                    prev_holder,
                    pi_kept
                })
            ),
        (addr(), any::<u64>()).prop_map(|(blk, req)| Msg::Invalidate { blk, req }),
        (addr(), any::<u64>()).prop_map(|(blk, req)| Msg::InvalidateAck { blk, req }),
        request().prop_map(|req| Msg::NotHeld { req }),
        request().prop_map(|req| Msg::DownConverted { req }),
        (addr(), mode()).prop_map(|(blk, mode)| Msg::Relinquish { blk, mode }),
        (addr(), any::<u64>()).prop_map(|(blk, scn)| Msg::Written { blk, scn: Scn(scn) }),
        (addr(), any::<u64>()).prop_map(|(blk, scn)| Msg::DiscardPi { blk, scn: Scn(scn) }),
        (xid(), any::<u64>()).prop_map(|(xid, token)| Msg::TxQuery { xid, token }),
        (xid(), any::<u64>(), report).prop_map(|(xid, token, report)| Msg::TxStatus {
            xid,
            token,
            report
        }),
        (xid(), any::<u64>()).prop_map(|(xid, token)| Msg::TxWait { xid, token }),
        ges_msg(),
        drm_msg(),
        deadlock_msg(),
    ]
}

fn envelope() -> impl Strategy<Value = Envelope> {
    (
        inst(),
        inst(),
        any::<u64>(),
        any::<u64>(),
        msg(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(from, to, scn, sent_at, msg, seq, after)| Envelope {
            from,
            to,
            incarnation: 1,
            scn: Scn(scn),
            sent_at,
            msg,
            link: fusion_core::msg::LinkStamp { seq, after },
        })
}

/// Core -> proto -> bytes -> proto -> core with `codec`.
fn through_bytes(codec: &Codec, env: &Envelope) -> Result<Envelope, WireError> {
    let bytes = codec.encode_envelope(env).encode_to_vec();
    let back = pb::Envelope::decode(bytes.as_slice()).expect("prost decodes its own encoding");
    codec.decode_envelope(back)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_msg_round_trips(env in envelope()) {
        prop_assert_eq!(&through_bytes(&Codec::UNPADDED, &env).unwrap(), &env);
        // Padded to a block size, as a live cluster sends it.
        let padded = Codec { block_size: 8192, ..Codec::UNPADDED };
        prop_assert_eq!(&through_bytes(&padded, &env).unwrap(), &env);
        // And through the From/TryFrom impls.
        let via: pb::Msg = (&env.msg).into();
        let via = pb::Msg::decode(via.encode_to_vec().as_slice()).unwrap();
        prop_assert_eq!(Msg::try_from(via).unwrap(), env.msg);
    }

    #[test]
    fn blocks_round_trip_padded_and_unpadded(b in block(), size in prop_oneof![Just(0u32), Just(2048), Just(8192)]) {
        let bytes = encode_block(&b, size);
        if size > 0 && bytes.len() != size as usize {
            prop_assert!(bytes.len() > size as usize, "only an oversize image is unpadded");
        }
        prop_assert_eq!(decode_block(&bytes).unwrap(), b);
    }

    /// Any prefix of an image, and any single corrupted byte, is an error, not a panic.
    #[test]
    fn damaged_blocks_are_rejected(b in block(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let bytes = encode_block(&b, 0);
        let at = cut.index(bytes.len());
        prop_assert!(decode_block(&bytes[..at]).is_err());
        let mut bad = bytes.clone();
        let i = flip.index(bad.len());
        bad[i] ^= 1 << bit;
        prop_assert!(decode_block(&bad).is_err());
    }

    /// Random bytes from a peer never panic the decoders.
    #[test]
    fn garbage_never_panics(bytes in vec(any::<u8>(), 0..512)) {
        let _ = decode_block(&bytes);
        if let Ok(env) = pb::Envelope::decode(bytes.as_slice()) {
            let _ = Envelope::try_from(env);
        }
    }
}

fn sample_block() -> Block {
    let mut b = Block::new(
        BlockAddr(9),
        Body::Table {
            rows: vec![Some(Row {
                key: 1,
                val: -5,
                lock: Xid::NONE,
            })],
        },
    );
    let change = Change::UpdateRow { slot: 0, val: 7 };
    assert!(b.apply(&change, Xid::new(InstId(1), 3), Scn(42)));
    b
}

fn sample_request() -> Request {
    Request {
        id: 1,
        blk: BlockAddr(9),
        requester: InstId(1),
        kind: ReqKind::Cr {
            snapshot: Scn(10),
            reader: Xid::NONE,
        },
        timing: Timing::default(),
    }
}

fn sample_envelope(msg: Msg) -> pb::Envelope {
    Codec::UNPADDED.encode_envelope(&Envelope {
        from: InstId(0),
        to: InstId(1),
        incarnation: 1,
        scn: Scn(5),
        sent_at: 6,
        msg,
        link: Default::default(),
    })
}

fn decode_err(env: pb::Envelope) -> WireError {
    Codec::new(8192, 4, 1000)
        .decode_envelope(env)
        .expect_err("malformed envelope must be rejected")
}

#[test]
fn padded_block_fills_the_block_size() {
    let b = sample_block();
    let bytes = encode_block(&b, 8192);
    assert_eq!(bytes.len(), 8192);
    assert_eq!(decode_block(&bytes).unwrap(), b);
}

#[test]
fn oversize_block_is_sent_unpadded_and_counted() {
    let rows = (0..1000)
        .map(|k| {
            Some(Row {
                key: u64::MAX - k,
                val: i64::MIN,
                lock: Xid::new(InstId(3), 1 << 50),
            })
        })
        .collect();
    let b = Block::new(BlockAddr(1), Body::Table { rows });
    let before = oversize_blocks();
    let bytes = encode_block(&b, 2048);
    assert!(bytes.len() > 2048);
    assert!(oversize_blocks() > before);
    assert_eq!(decode_block(&bytes).unwrap(), b);
}

#[test]
fn truncated_block_names_the_field() {
    let bytes = encode_block(&sample_block(), 0);
    let e = decode_block(&bytes[..5]).unwrap_err();
    assert_eq!(e.field, "header");
    assert!(matches!(e.problem, BlockProblem::Truncated { .. }));
    let e = decode_block(&bytes[..bytes.len() - 1]).unwrap_err();
    assert_eq!(e.field, "payload");
    assert!(e.to_string().contains("payload"), "{e}");
    assert!(e.to_string().contains("truncated"), "{e}");

    // Inside a message, the error names the message field and the block field.
    let mut env = sample_envelope(Msg::Ship(Box::new(Shipment {
        req: sample_request(),
        kind: ShipKind::Current,
        block: sample_block(),
        pi_kept: false,
        hops: 2,
        congested: false,
    })));
    if let Some(pb::msg::Kind::Ship(s)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        s.block.truncate(20);
    }
    let e = decode_err(env);
    assert_eq!(e.field(), "Ship.block");
    assert!(e.to_string().contains("Ship.block"), "{e}");
}

#[test]
fn corrupt_padding_and_checksum_are_rejected() {
    let mut bytes = encode_block(&sample_block(), 8192);
    bytes[8000] = 1;
    assert_eq!(
        decode_block(&bytes).unwrap_err().problem,
        BlockProblem::NonZeroPadding
    );
    let mut bytes = encode_block(&sample_block(), 0);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    assert!(matches!(
        decode_block(&bytes).unwrap_err().problem,
        BlockProblem::Checksum { .. }
    ));
    let mut bytes = encode_block(&sample_block(), 0);
    bytes[3] = 99;
    assert_eq!(
        decode_block(&bytes).unwrap_err().problem,
        BlockProblem::UnsupportedVersion(99)
    );
    assert_eq!(
        decode_block(&[0; 64]).unwrap_err().problem,
        BlockProblem::BadMagic
    );
}

#[test]
fn missing_oneofs_name_the_field() {
    let mut env = sample_envelope(Msg::Request(sample_request()));
    env.msg = None;
    assert_eq!(decode_err(env).to_string(), "missing field `Envelope.msg`");

    let mut env = sample_envelope(Msg::Request(sample_request()));
    env.msg = Some(pb::Msg { kind: None });
    assert_eq!(decode_err(env).field(), "Msg.kind");

    let mut env = sample_envelope(Msg::Request(sample_request()));
    if let Some(pb::msg::Kind::Request(r)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        r.kind = None;
    }
    assert_eq!(decode_err(env).field(), "Request.kind");

    let mut env = sample_envelope(Msg::Ship(Box::new(Shipment {
        req: sample_request(),
        kind: ShipKind::Raw,
        block: sample_block(),
        pi_kept: true,
        hops: 3,
        congested: true,
    })));
    if let Some(pb::msg::Kind::Ship(s)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        s.kind = None;
    }
    assert_eq!(decode_err(env).field(), "Ship.kind");

    let mut env = sample_envelope(Msg::TxStatus {
        xid: Xid::new(InstId(2), 4),
        token: 1,
        report: TxReport::Committed(Scn(3)),
    });
    if let Some(pb::msg::Kind::TxStatus(s)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        s.report = None;
    }
    assert_eq!(decode_err(env).field(), "TxStatus.report");

    let mut env = sample_envelope(Msg::DownConverted {
        req: sample_request(),
    });
    if let Some(pb::msg::Kind::DownConverted(d)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        d.req = None;
    }
    assert_eq!(decode_err(env).field(), "DownConverted.req");
}

#[test]
fn bad_enum_values_name_the_field() {
    let mut env = sample_envelope(Msg::Installed(Installed {
        blk: BlockAddr(3),
        req: 1,
        mode: Mode::X,
        prev_holder: None,
        pi_kept: false,
    }));
    if let Some(pb::msg::Kind::Installed(i)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        i.mode = 7;
    }
    let e = decode_err(env);
    assert_eq!(
        e,
        WireError::BadEnum {
            field: "Installed.mode",
            value: 7
        }
    );
    assert!(e.to_string().contains("Installed.mode"));

    // UNSPECIFIED (an unset field) is refused too.
    let mut env = sample_envelope(Msg::Grant {
        req: sample_request(),
        grant: GrantKind::New,
    });
    if let Some(pb::msg::Kind::Grant(g)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        g.grant = 0;
    }
    assert_eq!(decode_err(env).field(), "Grant.grant");

    // Global enqueues: a lock mode or resource kind out of range, a missing resource.
    let mut env = sample_envelope(Msg::EnqConvert {
        res: ResName {
            kind: EnqKind::Sv,
            id: 1,
        },
        mode: LockMode::X,
        token: 1,
    });
    if let Some(pb::msg::Kind::EnqConvert(c)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        c.mode = 9;
    }
    assert_eq!(decode_err(env).field(), "EnqConvert.mode");
    let mut env = sample_envelope(Msg::EnqBast {
        res: ResName {
            kind: EnqKind::RowCache,
            id: 1,
        },
        mode: LockMode::X,
    });
    if let Some(pb::msg::Kind::EnqBast(b)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        b.res = Some(pb::ResName { kind: 0, id: 1 });
    }
    assert_eq!(decode_err(env).field(), "EnqBast.res");
    let mut env = sample_envelope(Msg::EnqGrant {
        res: ResName {
            kind: EnqKind::Sq,
            id: 1,
        },
        mode: LockMode::X,
        token: 1,
        lvb: Lvb::default(),
    });
    if let Some(pb::msg::Kind::EnqGrant(g)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        g.lvb = None;
    }
    assert_eq!(decode_err(env).field(), "EnqGrant.lvb");
}

#[test]
fn out_of_range_ids_name_the_field() {
    // Four instances: inst ids 0..4.
    let mut env = sample_envelope(Msg::Request(sample_request()));
    env.from = 4;
    let e = decode_err(env);
    assert_eq!(e.field(), "Envelope.from");
    assert!(e.to_string().contains("below 4"), "{e}");

    // Beyond any cluster, even with no limits given.
    let mut env = sample_envelope(Msg::Request(sample_request()));
    env.to = 300;
    assert_eq!(Envelope::try_from(env).unwrap_err().field(), "Envelope.to");

    let mut env = sample_envelope(Msg::Request(sample_request()));
    if let Some(pb::msg::Kind::Request(r)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        r.requester = 9;
    }
    assert_eq!(decode_err(env).field(), "Request.requester");

    let mut env = sample_envelope(Msg::Written {
        blk: BlockAddr(3),
        scn: Scn(1),
    });
    if let Some(pb::msg::Kind::Written(w)) = env.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        w.blk = 1000;
    }
    assert_eq!(decode_err(env).field(), "Written.blk");

    let env = sample_envelope(Msg::TxQuery {
        xid: Xid::new(InstId(5), 1),
        token: 1,
    });
    assert_eq!(decode_err(env).field(), "TxQuery.xid");

    let env = sample_envelope(Msg::Ship(Box::new(Shipment {
        req: sample_request(),
        kind: ShipKind::Shared,
        block: sample_block(),
        pi_kept: false,
        hops: 2,
        congested: false,
    })));
    let mut env2 = env.clone();
    if let Some(pb::msg::Kind::Ship(s)) = env2.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        s.hops = 256;
    }
    assert_eq!(decode_err(env2).field(), "Ship.hops");
    // A block whose ITL names an instance outside the cluster.
    let mut b = sample_block();
    b.itl.push(Itl {
        xid: Xid::new(InstId(7), 1),
        commit: None,
    });
    let mut env3 = env;
    if let Some(pb::msg::Kind::Ship(s)) = env3.msg.as_mut().and_then(|m| m.kind.as_mut()) {
        s.block = encode_block(&b, 8192);
    }
    assert_eq!(decode_err(env3).field(), "Block.itl.xid");

    // Dynamic remastering: a new master outside the cluster, a reported
    // block beyond the database.
    let env = sample_envelope(Msg::Drm(Box::new(DrmMsg::Freeze {
        drm: 1,
        object: 0,
        to: InstId(7),
    })));
    assert_eq!(decode_err(env).field(), "DrmFreeze.to");
    let env = sample_envelope(Msg::Drm(Box::new(DrmMsg::Rebuild {
        drm: 1,
        blocks: vec![(BlockAddr(1000), Held::X { dirty: true })],
    })));
    assert_eq!(decode_err(env).field(), "HeldBlock.blk");
}

#[test]
fn hello_is_checked() {
    let codec = Codec::new(8192, 4, 1000);
    let hello = pb::Hello::new(InstId(2), "secret", 1);
    assert_eq!(codec.check_hello(&hello, "secret").unwrap(), InstId(2));
    assert_eq!(
        codec.check_hello(&hello, "other").unwrap_err().field(),
        "Hello.cluster_token"
    );
    let mut old = hello.clone();
    old.protocol_version = 0;
    assert_eq!(
        codec.check_hello(&old, "secret").unwrap_err().field(),
        "Hello.protocol_version"
    );
    let far = pb::Hello::new(InstId(4), "secret", 1);
    assert_eq!(
        codec.check_hello(&far, "secret").unwrap_err().field(),
        "Hello.instance"
    );
}
