//! The interconnect of one instance process: an outbound gRPC stream to each
//! peer (messages on one stream never overtake each other, as on the
//! simulator's links) and the server that takes the peers' streams in.
//!
//! Interconnect faults of a phase (extra latency, jitter, a bandwidth cap) are
//! applied here, on the sending side, to the real messages.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use fusion_core::config::Nanos;
use fusion_core::msg::Envelope;
use fusion_core::types::InstId;
use fusion_wire::Codec;
use fusion_wire::pb::interconnect_client::InterconnectClient;
use fusion_wire::pb::interconnect_server::Interconnect;
use fusion_wire::pb::{Frame, Hello, frame};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Endpoint;
use tonic::{Request, Response, Status, Streaming};

use crate::clock::Clock;
use crate::host::{HostSender, Input};

/// How a link is slowed in the current phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkFault {
    pub latency: Nanos,
    pub jitter: Nanos,
    /// Bits per second; 0 = no cap.
    pub rate_bps: u64,
}

/// Counters and state of one outbound link, shared with `status`.
#[derive(Debug, Default)]
pub struct LinkState {
    pub up: AtomicBool,
    pub sent: AtomicU64,
    pub received: AtomicU64,
}

/// A link's controls, held by the admin service (faults, `status`).
pub struct LinkHandle {
    pub fault: Arc<Mutex<LinkFault>>,
    /// A fault is set: every message goes through the delaying writer.
    pub faulted: Arc<AtomicBool>,
    pub state: Arc<LinkState>,
    pub address: String,
}

impl LinkHandle {
    pub fn set_fault(&self, f: LinkFault) {
        if let Ok(mut g) = self.fault.lock() {
            *g = f;
        }
        self.faulted
            .store(f != LinkFault::default(), Ordering::Release);
    }
}

/// The host's end of a link. A healthy, unfaulted link takes the host's
/// frames straight onto the gRPC stream (no task hop per message); while a
/// fault delays messages, or before the stream is up,
/// they queue for the writer task, and the direct path waits until that
/// queue is empty, so messages never overtake each other.
#[derive(Clone)]
pub struct LinkSender {
    codec: Codec,
    direct: Arc<OnceLock<mpsc::Sender<Frame>>>,
    delayed: mpsc::UnboundedSender<Envelope>,
    /// Envelopes given to the writer and not yet on the stream.
    queued: Arc<AtomicUsize>,
    faulted: Arc<AtomicBool>,
    state: Arc<LinkState>,
}

/// The writer's end of a link, until [`open`] connects it.
pub struct LinkReceiver {
    direct: Arc<OnceLock<mpsc::Sender<Frame>>>,
    delayed: mpsc::UnboundedReceiver<Envelope>,
    queued: Arc<AtomicUsize>,
    faulted: Arc<AtomicBool>,
    state: Arc<LinkState>,
}

/// A link's two ends, before it is connected.
pub fn channel(codec: Codec) -> (LinkSender, LinkReceiver) {
    let direct = Arc::new(OnceLock::new());
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let faulted = Arc::new(AtomicBool::new(false));
    let state = Arc::new(LinkState::default());
    (
        LinkSender {
            codec,
            direct: direct.clone(),
            delayed: tx,
            queued: queued.clone(),
            faulted: faulted.clone(),
            state: state.clone(),
        },
        LinkReceiver {
            direct,
            delayed: rx,
            queued,
            faulted,
            state,
        },
    )
}

impl LinkSender {
    /// Send (or queue) one message; false when the link is gone.
    pub fn send(&self, env: Envelope) -> bool {
        if self.queued.load(Ordering::Acquire) == 0
            && !self.faulted.load(Ordering::Acquire)
            && let Some(frames) = self.direct.get()
        {
            let frame = Frame {
                kind: Some(frame::Kind::Envelope(self.codec.encode_envelope(&env))),
            };
            match frames.try_send(frame) {
                Ok(()) => {
                    self.state.sent.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                // The stream is backed up: queue behind it instead of blocking the host.
                Err(mpsc::error::TrySendError::Full(_)) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => return false,
            }
        }
        self.queued.fetch_add(1, Ordering::AcqRel);
        if self.delayed.send(env).is_err() {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }
}

/// Who a link joins and how it talks.
#[derive(Clone)]
pub struct LinkSpec {
    pub me: InstId,
    pub peer: InstId,
    pub address: String,
    pub token: String,
    pub codec: Codec,
    pub clock: Clock,
    /// Seed of the jitter of interconnect faults.
    pub seed: u64,
}

/// How long a link keeps trying to reach a peer that is not up or not loaded yet.
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(15);

/// Connect the link `me -> peer` and start its writer, which sends what the
/// host queued (before the stream was up, or while a fault delays it).
pub async fn open(
    spec: LinkSpec,
    rx: LinkReceiver,
    host: HostSender,
) -> Result<LinkHandle, String> {
    let LinkReceiver {
        direct,
        delayed: mut rx,
        queued,
        faulted,
        state,
    } = rx;
    let LinkSpec {
        me,
        peer,
        address,
        token,
        codec,
        clock,
        seed,
    } = spec;
    let fault = Arc::new(Mutex::new(LinkFault::default()));
    let (frames, mut responses) = connect(me, peer, &address, &token).await?;
    state.up.store(true, Ordering::Relaxed);
    let _ = direct.set(frames.clone());

    // Writer: delay by the phase's fault, keep order, encode, send.
    let (w_fault, w_state, w_host, w_addr) =
        (fault.clone(), state.clone(), host.clone(), address.clone());
    tokio::spawn(async move {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut last_release: Nanos = 0;
        while let Some(env) = rx.recv().await {
            let f = w_fault.lock().map(|g| *g).unwrap_or_default();
            if f != LinkFault::default() {
                let jitter = if f.jitter > 0 {
                    rng.next_u64() % (f.jitter + 1)
                } else {
                    0
                };
                let bytes = env.msg.wire_bytes(codec.block_size, 200);
                // A rate of 0 means no cap: no serialization delay.
                let serialize = (bytes * 8 * 1_000_000_000)
                    .checked_div(f.rate_bps)
                    .unwrap_or(0);
                let release = (clock.now() + f.latency + jitter + serialize).max(last_release);
                last_release = release;
                let wait = release.saturating_sub(clock.now());
                if wait > 0 {
                    tokio::time::sleep(Duration::from_nanos(wait)).await;
                }
            }
            let frame = Frame {
                kind: Some(frame::Kind::Envelope(codec.encode_envelope(&env))),
            };
            let lost = frames.send(frame).await.is_err();
            queued.fetch_sub(1, Ordering::AcqRel);
            if lost {
                w_state.up.store(false, Ordering::Relaxed);
                let _ = w_host.send(Input::Problem(format!(
                    "{me}: interconnect to {peer} ({w_addr}) lost after {} messages; \
                     requests to {peer} in flight stay unanswered",
                    w_state.sent.load(Ordering::Relaxed)
                )));
                return;
            }
            w_state.sent.fetch_add(1, Ordering::Relaxed);
        }
    });

    // Reader of the peer's answers: only its end matters (the peer died or
    // dropped us). A link we close ourselves ends its host first.
    let (r_state, r_addr) = (state.clone(), address.clone());
    tokio::spawn(async move {
        let why = loop {
            match responses.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => break "the peer closed the stream".to_string(),
                Err(s) => break s.message().to_string(),
            }
        };
        if r_state.up.swap(false, Ordering::Relaxed) {
            let _ = host.send(Input::Problem(format!(
                "{me}: interconnect to {peer} ({r_addr}) lost: {why}"
            )));
        }
    });
    Ok(LinkHandle {
        fault,
        faulted,
        state,
        address,
    })
}

/// Connect and say hello, retrying while the peer is not up or not loaded.
async fn connect(
    me: InstId,
    peer: InstId,
    address: &str,
    token: &str,
) -> Result<(mpsc::Sender<Frame>, Streaming<Frame>), String> {
    let deadline = tokio::time::Instant::now() + CONNECT_PATIENCE;
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| format!("{me}: bad address of {peer}: {address:?}: {e}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(2));
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        match try_connect(me, &endpoint, token).await {
            Ok(x) => return Ok(x),
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!(
        "{me}: could not open the interconnect to {peer} at {address} within {}s: {last}",
        CONNECT_PATIENCE.as_secs()
    ))
}

async fn try_connect(
    me: InstId,
    endpoint: &Endpoint,
    token: &str,
) -> Result<(mpsc::Sender<Frame>, Streaming<Frame>), String> {
    let channel = endpoint.connect().await.map_err(|e| e.to_string())?;
    let mut client = InterconnectClient::new(channel);
    let (frames, rx) = mpsc::channel::<Frame>(4096);
    frames
        .send(Frame {
            kind: Some(frame::Kind::Hello(Hello::new(me, token))),
        })
        .await
        .map_err(|e| e.to_string())?;
    let mut responses = client
        .exchange(ReceiverStream::new(rx))
        .await
        .map_err(|s| s.message().to_string())?
        .into_inner();
    match tokio::time::timeout(Duration::from_secs(5), responses.message()).await {
        Ok(Ok(Some(Frame {
            kind: Some(frame::Kind::Hello(_)),
        }))) => Ok((frames, responses)),
        Ok(Ok(_)) => Err("the peer did not answer with Hello".into()),
        Ok(Err(s)) => Err(s.message().to_string()),
        Err(_) => Err("no Hello from the peer within 5 s".into()),
    }
}

/// What the interconnect server needs once a scenario is loaded.
#[derive(Clone)]
pub struct Wiring {
    pub host: HostSender,
    pub clock: Clock,
    pub codec: Codec,
    /// Messages received, per peer.
    pub received: Arc<Vec<AtomicU64>>,
}

/// The interconnect server of one instance.
#[derive(Clone)]
pub struct InterconnectService {
    pub me: InstId,
    pub token: String,
    pub wiring: Arc<Mutex<Option<Wiring>>>,
}

#[tonic::async_trait]
impl Interconnect for InterconnectService {
    type ExchangeStream = ReceiverStream<Result<Frame, Status>>;

    async fn exchange(
        &self,
        req: Request<Streaming<Frame>>,
    ) -> Result<Response<Self::ExchangeStream>, Status> {
        let mut inbound = req.into_inner();
        let first = tokio::time::timeout(Duration::from_secs(5), inbound.message())
            .await
            .map_err(|_| Status::deadline_exceeded("no Hello within 5 s"))??;
        let Some(Frame {
            kind: Some(frame::Kind::Hello(hello)),
        }) = first
        else {
            return Err(Status::invalid_argument(
                "the first frame of an interconnect stream must be Hello",
            ));
        };
        let wiring = self
            .wiring
            .lock()
            .ok()
            .and_then(|w| w.clone())
            .ok_or_else(|| Status::failed_precondition("instance not loaded yet"))?;
        let from = wiring
            .codec
            .check_hello(&hello, &self.token)
            .map_err(|e| Status::permission_denied(e.to_string()))?;
        if from == self.me {
            return Err(Status::permission_denied(format!(
                "Hello.instance: {from} is this instance"
            )));
        }
        let (tx, rx) = mpsc::channel(1);
        tx.send(Ok(Frame {
            kind: Some(frame::Kind::Hello(Hello::new(self.me, &self.token))),
        }))
        .await
        .map_err(|_| Status::cancelled("stream closed"))?;
        let me = self.me;
        tokio::spawn(async move {
            // Holding `tx` keeps our answer stream open while the peer talks.
            let _answer = tx;
            loop {
                let frame = match inbound.message().await {
                    Ok(Some(f)) => f,
                    // The peer went away: its own links report it, and ours
                    // to it fail on the next send.
                    Ok(None) | Err(_) => return,
                };
                let problem = match frame.kind {
                    Some(frame::Kind::Envelope(e)) => match wiring.codec.decode_envelope(e) {
                        Ok(env) if env.from == from && env.to == me => {
                            if let Some(c) = wiring.received.get(from.idx()) {
                                c.fetch_add(1, Ordering::Relaxed);
                            }
                            let arrived = wiring.clock.now();
                            if wiring.host.send(Input::Envelope(env, arrived)).is_err() {
                                return; // the host was replaced or stopped
                            }
                            continue;
                        }
                        Ok(env) => format!(
                            "{me}: dropped a message from {from} claiming to be from {} to {}",
                            env.from, env.to
                        ),
                        Err(e) => format!("{me}: bad message from {from}: {e}"),
                    },
                    Some(frame::Kind::Hello(_)) | None => {
                        format!(
                            "{me}: unexpected frame from {from} (a second Hello or an empty frame)"
                        )
                    }
                };
                // A peer that speaks nonsense is cut off: its stream ends here.
                let _ = wiring.host.send(Input::Problem(problem));
                return;
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}
