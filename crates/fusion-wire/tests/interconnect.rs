//! The generated Interconnect service over a real loopback stream: Hello
//! first, then envelopes in order, each decoded back to the core message.

use std::pin::Pin;

use fusion_core::block::{Block, Body};
use fusion_core::msg::{Envelope, Msg, ReqKind, Request, ShipKind, Timing};
use fusion_core::types::{BlockAddr, InstId};
use fusion_wire::pb::interconnect_client::InterconnectClient;
use fusion_wire::pb::interconnect_server::{Interconnect, InterconnectServer};
use fusion_wire::{Codec, pb};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_stream::{Stream, StreamExt};
use tonic::{Request as GrpcRequest, Response, Status, Streaming};

const TOKEN: &str = "cluster-secret";

fn codec() -> Codec {
    Codec::new(8192, 2, 100)
}

/// Instance 2 (id 1): answers Hello, then echoes every envelope back to its sender.
struct Peer;

type Frames = Pin<Box<dyn Stream<Item = Result<pb::Frame, Status>> + Send>>;

#[tonic::async_trait]
impl Interconnect for Peer {
    type ExchangeStream = Frames;

    async fn exchange(
        &self,
        req: GrpcRequest<Streaming<pb::Frame>>,
    ) -> Result<Response<Frames>, Status> {
        let mut inbound = req.into_inner();
        let first = inbound
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("stream closed before Hello"))?;
        let Some(pb::frame::Kind::Hello(hello)) = first.kind else {
            return Err(Status::invalid_argument("first frame must be Hello"));
        };
        let from = codec()
            .check_hello(&hello, TOKEN)
            .map_err(|e| Status::unauthenticated(e.to_string()))?;
        let (tx, rx) = mpsc::channel(16);
        tx.send(Ok(pb::Frame {
            kind: Some(pb::frame::Kind::Hello(pb::Hello::new(InstId(1), TOKEN))),
        }))
        .await
        .map_err(|_| Status::internal("closed"))?;
        tokio::spawn(async move {
            while let Ok(Some(frame)) = inbound.message().await {
                let Some(pb::frame::Kind::Envelope(env)) = frame.kind else {
                    break;
                };
                let reply = match codec().decode_envelope(env) {
                    Ok(mut env) => {
                        assert_eq!(env.from, from);
                        env.to = env.from;
                        env.from = InstId(1);
                        Ok(pb::Frame {
                            kind: Some(pb::frame::Kind::Envelope(codec().encode_envelope(&env))),
                        })
                    }
                    Err(e) => Err(Status::invalid_argument(e.to_string())),
                };
                if tx.send(reply).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

fn ship(i: u64) -> Envelope {
    let mut block = Block::new(BlockAddr(7), Body::Unformatted);
    block.scn = i;
    Envelope {
        from: InstId(0),
        to: InstId(1),
        scn: 100 + i,
        sent_at: 1_000 * i,
        msg: Msg::Ship {
            req: Request {
                id: i,
                blk: BlockAddr(7),
                requester: InstId(0),
                kind: ReqKind::Current { new_block: false },
                timing: Timing::default(),
            },
            kind: ShipKind::Current,
            block: Box::new(block),
            pi_kept: false,
            hops: 2,
            congested: false,
        },
    }
}

async fn serve() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = TcpListenerStream::new(listener).map(|c| {
        c.inspect(|s| {
            let _ = s.set_nodelay(true);
        })
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(InterconnectServer::new(Peer))
            .serve_with_incoming(incoming),
    );
    addr
}

#[tokio::test]
async fn envelopes_cross_a_stream_in_order() {
    let addr = serve().await;
    let mut client = InterconnectClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let frames = (0..50u64).map(|i| pb::Frame {
        kind: Some(if i == 0 {
            pb::frame::Kind::Hello(pb::Hello::new(InstId(0), TOKEN))
        } else {
            pb::frame::Kind::Envelope(codec().encode_envelope(&ship(i)))
        }),
    });
    let mut back = client
        .exchange(tokio_stream::iter(frames))
        .await
        .unwrap()
        .into_inner();
    let hello = back.message().await.unwrap().unwrap();
    let Some(pb::frame::Kind::Hello(h)) = hello.kind else {
        panic!("peer answers Hello first");
    };
    assert_eq!(codec().check_hello(&h, TOKEN).unwrap(), InstId(1));
    for i in 1..50u64 {
        let f = back.message().await.unwrap().unwrap();
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
async fn a_wrong_cluster_token_is_refused() {
    let addr = serve().await;
    let mut client = InterconnectClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let hello = pb::Frame {
        kind: Some(pb::frame::Kind::Hello(pb::Hello::new(InstId(0), "other"))),
    };
    let status = client
        .exchange(tokio_stream::iter(vec![hello]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    assert!(status.message().contains("Hello.cluster_token"));
}
