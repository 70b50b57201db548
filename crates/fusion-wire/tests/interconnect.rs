//! Interconnect framing over a real loopback connection: Hello first, then
//! envelopes in order, each decoded back to the core message; refusals and
//! bad frames are errors that say what was wrong.

use fusion_core::block::{Block, Body};
use fusion_core::msg::{Envelope, Msg, ReqKind, Request, ShipKind, Shipment, Timing};
use fusion_core::types::Scn;
use fusion_core::types::{BlockAddr, InstId};
use fusion_wire::framing::{
    FRAME_BYTES_MAX, decode_frame, encode_frame, envelope_frame, frame_codec, hello_frame,
    refusal_frame,
};
use fusion_wire::{Codec, pb};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_stream::StreamExt;
use tokio_util::codec::FramedRead;

const TOKEN: &str = "cluster-secret";

fn codec() -> Codec {
    Codec::new(8192, 2, 100)
}

async fn write(s: &mut (impl AsyncWriteExt + Unpin), f: &pb::Frame) {
    let mut buf = Vec::new();
    encode_frame(f, &mut buf);
    s.write_all(&buf).await.unwrap();
}

/// Instance 2 (id 1): answers Hello (or refuses it), then echoes every
/// envelope back to its sender.
async fn serve() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (r, mut w) = s.into_split();
                let mut frames = FramedRead::new(r, frame_codec());
                let Some(Ok(first)) = frames.next().await else {
                    return;
                };
                let Ok(pb::Frame {
                    kind: Some(pb::frame::Kind::Hello(hello)),
                }) = decode_frame(&first)
                else {
                    return;
                };
                if let Err(e) = codec().check_hello(&hello, TOKEN) {
                    write(&mut w, &refusal_frame(e.to_string())).await;
                    return;
                }
                write(&mut w, &hello_frame(pb::Hello::new(InstId(1), TOKEN, 7))).await;
                while let Some(Ok(body)) = frames.next().await {
                    let Ok(pb::Frame {
                        kind: Some(pb::frame::Kind::Envelope(env)),
                    }) = decode_frame(&body)
                    else {
                        return;
                    };
                    let mut env = codec().decode_envelope(env).unwrap();
                    env.to = env.from;
                    env.from = InstId(1);
                    write(&mut w, &envelope_frame(codec().encode_envelope(&env))).await;
                }
            });
        }
    });
    addr
}

fn ship(i: u64) -> Envelope {
    let mut block = Block::new(BlockAddr(7), Body::Unformatted);
    block.scn = Scn(i);
    Envelope {
        from: InstId(0),
        to: InstId(1),
        incarnation: 1,
        scn: Scn(100 + i),
        sent_at: 1_000 * i,
        msg: Msg::Ship(Box::new(Shipment {
            req: Request {
                id: i,
                blk: BlockAddr(7),
                requester: InstId(0),
                kind: ReqKind::Current { new_block: false },
                timing: Timing::default(),
            },
            kind: ShipKind::Current,
            block,
            pi_kept: false,
            hops: 2,
            congested: false,
        })),
        link: Default::default(),
    }
}

#[tokio::test]
async fn envelopes_cross_a_connection_in_order() {
    let addr = serve().await;
    let s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let (r, mut w) = s.into_split();
    // Everything at once: frames are split and joined by TCP at will.
    let mut all = Vec::new();
    encode_frame(&hello_frame(pb::Hello::new(InstId(0), TOKEN, 7)), &mut all);
    for i in 1..50u64 {
        encode_frame(&envelope_frame(codec().encode_envelope(&ship(i))), &mut all);
    }
    w.write_all(&all).await.unwrap();
    let mut back = FramedRead::new(r, frame_codec());
    let hello = decode_frame(&back.next().await.unwrap().unwrap()).unwrap();
    let Some(pb::frame::Kind::Hello(h)) = hello.kind else {
        panic!("peer answers Hello first");
    };
    assert_eq!(codec().check_hello(&h, TOKEN).unwrap(), InstId(1));
    for i in 1..50u64 {
        let f = decode_frame(&back.next().await.unwrap().unwrap()).unwrap();
        let Some(pb::frame::Kind::Envelope(env)) = f.kind else {
            panic!("envelope expected");
        };
        if let Some(pb::msg::Kind::Ship(s)) = env.msg.as_ref().and_then(|m| m.kind.as_ref()) {
            assert_eq!(s.block.len(), 8192, "a shipped block is padded");
        }
        let env = codec().decode_envelope(env).unwrap();
        let mut want = ship(i);
        want.to = InstId(0);
        want.from = InstId(1);
        assert_eq!(env, want);
    }
}

#[tokio::test]
async fn a_wrong_cluster_token_is_refused_with_the_reason() {
    let addr = serve().await;
    let s = TcpStream::connect(addr).await.unwrap();
    let (r, mut w) = s.into_split();
    write(&mut w, &hello_frame(pb::Hello::new(InstId(0), "other", 7))).await;
    let mut back = FramedRead::new(r, frame_codec());
    let f = decode_frame(&back.next().await.unwrap().unwrap()).unwrap();
    let Some(pb::frame::Kind::Refusal(refusal)) = f.kind else {
        panic!("a refusal expected, got {f:?}");
    };
    assert!(
        refusal.reason.contains("Hello.cluster_token"),
        "{}",
        refusal.reason
    );
    assert!(
        back.next().await.is_none(),
        "the callee closes after refusing"
    );
}

#[tokio::test]
async fn an_oversized_or_garbled_frame_is_an_error_not_a_panic() {
    let (mut a, b) = tokio::io::duplex(1 << 16);
    let mut frames = FramedRead::new(b, frame_codec());
    a.write_all(&((FRAME_BYTES_MAX as u32) + 1).to_be_bytes())
        .await
        .unwrap();
    let e = frames.next().await.unwrap().unwrap_err();
    assert!(e.to_string().contains("frame size too big"), "{e}");

    let e = decode_frame(&[0xff, 0xff, 0xff]).unwrap_err();
    assert_eq!(e.field(), "Frame");
    assert!(e.to_string().contains("not a protobuf Frame"), "{e}");
}
