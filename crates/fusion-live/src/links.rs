//! The interconnect of one instance process: an outbound TCP connection to
//! each peer, carrying length-prefixed protobuf frames
//! ([`fusion_wire::framing`]), and the listener that takes the peers'
//! connections in. Messages on one connection never overtake each other, as
//! on the simulator's links.
//!
//! Why plain TCP and not a gRPC stream: on loopback a block transfer costs a
//! few microseconds of real work, and HTTP/2 (its framing, flow control and
//! the task hops between the host, the stream and the connection) cost
//! several times that per message. Here the host appends a message's bytes
//! to the link and writes them itself, with one `write` per batch, before it
//! waits; a message that arrives is read, decoded and handed to the host on
//! the same thread.
//!
//! The scenario's network (`[network]` and the phases' interconnect faults)
//! is not applied here: the receiving host holds each message until the
//! model delivers it (`host.rs`), as the simulator schedules it.
//!
//! A connection that breaks loses what was in flight on it (in this
//! process's buffer and the kernels'), and a link whose connection is down
//! drops what it is given; the link connects again and tells its host
//! ([`Input::Reconnected`]), whose instance sends again everything the peer
//! has not acknowledged (`Delivery::Transport`, fusion-core's link.rs). So
//! no message is lost to a broken connection, whoever broke it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use fusion_core::config::Nanos;
use fusion_core::msg::Envelope;
use fusion_core::types::InstId;
use fusion_wire::Codec;
use fusion_wire::accept::{Acceptor, Admitted, ListenerNews, Reporter};
use fusion_wire::framing::{self, decode_frame, encode_frame, envelope_frame, hello_frame};
use fusion_wire::pb::{self, Hello, frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::host::{HostSender, Input};

/// Bytes a link keeps waiting to be written at most (the peer reads them too
/// slowly, or not at all): past this the link is reported lost rather than
/// buffering without end.
pub const UNWRITTEN_BYTES_MAX: usize = 64 << 20;
/// Messages a link queues at most before its connection is up.
pub const QUEUED_MESSAGES_MAX: usize = 1 << 16;

/// Counters and state of one outbound link, shared with `status`.
#[derive(Debug, Default)]
pub struct LinkState {
    pub up: AtomicBool,
    /// It was up once: a message sent while it is down again is dropped (as
    /// a network drops it), not queued for a peer that may never return;
    /// the instance sends it again when the connection is back.
    pub was_up: AtomicBool,
    pub sent: AtomicU64,
    pub received: AtomicU64,
    /// Messages dropped while the connection was down (the peer died, was
    /// killed, its process restarts, or the connection was reset).
    pub dropped: AtomicU64,
    /// Times the connection was lost (each loss is followed by a
    /// reconnection attempt, and a re-send of what is unacknowledged once
    /// it succeeds).
    pub losses: AtomicU64,
}

/// What the admin service shows of a link (`status`).
pub struct LinkHandle {
    pub state: Arc<LinkState>,
    pub address: String,
}

/// What the host's end and the link's tasks share.
struct Shared {
    codec: Codec,
    /// The connection while it is up.
    stream: Mutex<Option<Arc<TcpStream>>>,
    /// Messages the host sent since the last flush, encoded when it
    /// flushes (so that they carry the time they really leave); the host
    /// flushes every turn.
    unsent: Mutex<Vec<Envelope>>,
    /// Encoded frames not yet written, in order; at most
    /// [`UNWRITTEN_BYTES_MAX`].
    out: Mutex<BytesMut>,
    clock: Clock,
    /// The writer task has bytes to push once the socket takes them again.
    wake: Notify,
    /// Envelopes queued before the connection was up, not written yet (at
    /// most [`QUEUED_MESSAGES_MAX`]); a message that could skip them must not.
    queued: AtomicUsize,
    state: Arc<LinkState>,
    /// The host's end is gone (a new scenario, the process stops): the
    /// link's tasks end and the connection closes.
    closed: CancellationToken,
}

impl Shared {
    /// Write what the socket takes now; the writer task is woken for the
    /// rest. Err: the connection is broken, or the peer has not taken
    /// [`UNWRITTEN_BYTES_MAX`] bytes.
    fn flush(&self) -> std::io::Result<()> {
        let Some(stream) = self.stream.lock().ok().and_then(|s| s.clone()) else {
            return Ok(());
        };
        let Ok(mut out) = self.out.lock() else {
            return Ok(());
        };
        self.encode_unsent(&mut out);
        if out.len() > UNWRITTEN_BYTES_MAX {
            return Err(std::io::Error::other(format!(
                "{} bytes wait to be written (at most {UNWRITTEN_BYTES_MAX}): the peer does not \
                 read",
                out.len()
            )));
        }
        while !out.is_empty() {
            match stream.try_write(&out) {
                Ok(n) => out.advance(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wake.notify_one();
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Encode the held messages into `out`, stamped with the time they
    /// leave: a message waited here while its host ran other steps, and
    /// that wait is the sender's, not the network's (it stays in the
    /// receive time, outside the decomposition's wire share).
    fn encode_unsent(&self, out: &mut BytesMut) {
        if let Ok(mut unsent) = self.unsent.lock()
            && !unsent.is_empty()
        {
            let now = self.clock.now();
            for mut env in unsent.drain(..) {
                env.sent_at = env.sent_at.max(now);
                encode_frame(&envelope_frame(self.codec.encode_envelope(&env)), out);
            }
        }
    }

    /// Encode a message for the next write, after any held ones, with the
    /// time it was sent (waiting for the connection is wire time: it stays in).
    fn append(&self, env: &Envelope) {
        let frame = envelope_frame(self.codec.encode_envelope(env));
        if let Ok(mut out) = self.out.lock() {
            self.encode_unsent(&mut out);
            encode_frame(&frame, &mut *out);
        }
        self.state.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// The connection is gone: what waited to be written to it is lost
    /// with it, as on a network (the instance sends it again once a new
    /// connection is up).
    fn lose_connection(&self) {
        self.state.up.store(false, Ordering::Relaxed);
        self.state.losses.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut s) = self.stream.lock() {
            *s = None;
        }
        if let Ok(mut out) = self.out.lock() {
            out.clear();
        }
        if let Ok(mut unsent) = self.unsent.lock() {
            unsent.clear();
        }
    }

    /// Keep a message for the next flush, which stamps and encodes it.
    fn hold(&self, env: Envelope) {
        if let Ok(mut unsent) = self.unsent.lock() {
            unsent.push(env);
        }
        self.state.sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// The host's end of a link. A connected link encodes the host's messages
/// straight into its output buffer, and the host writes the buffer
/// ([`flush`](Self::flush)) before it waits. Before the connection is up
/// they queue for the link's writer task, and the direct path waits until
/// that queue is empty.
pub struct LinkSender {
    shared: Arc<Shared>,
    delayed: mpsc::UnboundedSender<Envelope>,
}

/// The writer's end of a link, until [`open`] connects it.
pub struct LinkReceiver {
    shared: Arc<Shared>,
    delayed: mpsc::UnboundedReceiver<Envelope>,
}

/// A link's two ends, before it is connected.
pub fn channel(codec: Codec, clock: Clock) -> (LinkSender, LinkReceiver) {
    let shared = Arc::new(Shared {
        codec,
        stream: Mutex::new(None),
        unsent: Mutex::new(Vec::new()),
        out: Mutex::new(BytesMut::with_capacity(64 << 10)),
        clock,
        wake: Notify::new(),
        queued: AtomicUsize::new(0),
        state: Arc::new(LinkState::default()),
        closed: CancellationToken::new(),
    });
    let (tx, rx) = mpsc::unbounded_channel();
    (
        LinkSender {
            shared: shared.clone(),
            delayed: tx,
        },
        LinkReceiver {
            shared,
            delayed: rx,
        },
    )
}

impl LinkSender {
    /// Send (or queue) one message; false when its queue before the first
    /// connection is full. What is sent directly leaves at the next
    /// [`flush`](Self::flush). While a connection that was up is down again
    /// (the peer died or restarts, the connection was reset) the message is
    /// dropped, as a network drops it: the instance sends it again when the
    /// connection is back, and the cluster's membership decides whether a
    /// peer that stays away is dead.
    pub fn send(&self, env: Envelope) -> bool {
        let s = &self.shared;
        if s.queued.load(Ordering::Acquire) == 0 && s.state.was_up.load(Ordering::Relaxed) {
            if s.state.up.load(Ordering::Relaxed) {
                s.hold(env);
            } else {
                s.state.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return true;
        }
        if s.queued.fetch_add(1, Ordering::AcqRel) >= QUEUED_MESSAGES_MAX {
            s.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        if self.delayed.send(env).is_err() {
            s.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Write what was sent; a broken connection is reported by the writer.
    pub fn flush(&self) {
        if self.shared.flush().is_err() {
            // The writer task finds the same error and reports it.
            self.shared.wake.notify_one();
        }
    }
}

impl Drop for LinkSender {
    fn drop(&mut self) {
        self.shared.closed.cancel();
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
    /// The run both ends must be loaded for (see `Hello.run`).
    pub run: u64,
    /// The instance host, told when a lost connection is back.
    pub host: HostSender,
}

/// How long a link keeps trying to reach a peer that is not up or not loaded yet.
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(15);
/// How long either end waits for the other's Hello.
const HELLO_PATIENCE: Duration = Duration::from_secs(5);
/// Connections an instance lets wait for their `Hello` at once (a cluster
/// has at most a few peers connecting, each retrying one at a time):
/// further ones are closed at once, so strangers cannot pile them up.
pub const HELLOS_PENDING_MAX: usize = 64;

/// Start the link `me -> peer`: a task that connects (trying again while
/// the peer is not up or not loaded), writes what the host queued before
/// the connection was up and whatever the socket did not take at once,
/// notices the peer going away, and connects again (a restarted peer
/// answers for the same run), telling the host once it has. The answer says whether the first connection
/// came up within [`CONNECT_PATIENCE`]; the task goes on trying either way.
pub fn open(
    spec: LinkSpec,
    rx: LinkReceiver,
) -> (
    LinkHandle,
    tokio::sync::oneshot::Receiver<Result<(), String>>,
) {
    let LinkReceiver {
        shared,
        delayed: mut rx,
    } = rx;
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    let handle = LinkHandle {
        state: shared.state.clone(),
        address: spec.address.clone(),
    };
    tokio::spawn(async move {
        let mut first = Some(first_tx);
        let started = tokio::time::Instant::now();
        loop {
            let stream = tokio::select! {
                _ = shared.closed.cancelled() => return,
                s = connect_until_up(&spec, started, &mut first) => Arc::new(s),
            };
            if let Ok(mut s) = shared.stream.lock() {
                *s = Some(stream.clone());
            }
            shared.state.up.store(true, Ordering::Relaxed);
            shared.state.was_up.store(true, Ordering::Relaxed);
            if let Some(f) = first.take() {
                let _ = f.send(Ok(()));
            }
            if shared.state.losses.load(Ordering::Relaxed) > 0 {
                // After the connection is up: what the host sends from now
                // on goes through, so the re-send covers every loss.
                let _ = spec.host.send(Input::Reconnected(spec.peer));
            }
            if carry(&shared, &stream, &mut rx).await.is_none() {
                return;
            }
            shared.lose_connection();
        }
    });
    (handle, first_rx)
}

/// Connect and say hello, again and again until it works; past
/// [`CONNECT_PATIENCE`] since `started`, the first caller hears why not
/// (once), and the tries go on more slowly.
async fn connect_until_up(
    spec: &LinkSpec,
    started: tokio::time::Instant,
    first: &mut Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
) -> TcpStream {
    let mut pause = Duration::from_millis(50);
    loop {
        match try_connect(
            spec.me,
            spec.peer,
            &spec.address,
            &spec.token,
            spec.codec,
            spec.run,
        )
        .await
        {
            Ok(s) => return s,
            Err(last) if started.elapsed() >= CONNECT_PATIENCE => {
                if let Some(f) = first.take() {
                    let _ = f.send(Err(format!(
                        "{}: could not open the interconnect to {} at {} within {}s: {last}",
                        spec.me,
                        spec.peer,
                        spec.address,
                        CONNECT_PATIENCE.as_secs()
                    )));
                }
                pause = Duration::from_millis(500);
            }
            Err(_) => {}
        }
        tokio::time::sleep(pause).await;
    }
}

/// Carry one connection: write what the host queued before it was up (in
/// order) and what the socket did not take when the host flushed, and
/// watch its read side (the callee sends nothing after its Hello, so
/// anything that ends the read side means the peer died or dropped us).
/// `Some(why)` when the connection is lost; `None` when the host's end is
/// gone.
async fn carry(
    s: &Shared,
    stream: &TcpStream,
    rx: &mut mpsc::UnboundedReceiver<Envelope>,
) -> Option<String> {
    let mut buf = [0u8; 64];
    loop {
        tokio::select! {
            _ = s.closed.cancelled() => return None,
            env = rx.recv() => {
                let env = env?;
                s.append(&env);
                s.queued.fetch_sub(1, Ordering::AcqRel);
            }
            _ = s.wake.notified() => {}
            r = stream.readable() => {
                if let Err(e) = r {
                    return Some(e.to_string());
                }
                match stream.try_read(&mut buf) {
                    Ok(0) => return Some("the peer closed the connection".to_string()),
                    Ok(_) => return Some("the peer sent data after its Hello".to_string()),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => return Some(e.to_string()),
                }
            }
        }
        // Push out what is buffered, waiting for the socket as needed.
        loop {
            if let Err(e) = s.flush() {
                return Some(e.to_string());
            }
            let empty = s.out.lock().map_or(true, |o| o.is_empty());
            if empty {
                break;
            }
            tokio::select! {
                _ = s.closed.cancelled() => return None,
                r = stream.writable() => if let Err(e) = r {
                    return Some(e.to_string());
                }
            }
        }
    }
}

/// Write one frame (handshakes only; messages go through [`Shared`]).
async fn write_frame(s: &mut TcpStream, f: &pb::Frame) -> std::io::Result<()> {
    let mut buf = Vec::new();
    encode_frame(f, &mut buf);
    s.write_all(&buf).await
}

/// Read one handshake frame (`Hello` or `Refusal`, before the peer is
/// known): at most [`framing::PRE_AUTH_FRAME_BYTES_MAX`] bytes, whatever the
/// length the peer announces.
async fn read_handshake(s: &mut TcpStream) -> Result<pb::Frame, String> {
    let announced = s.read_u32().await.map_err(|e| e.to_string())?;
    let len = usize::try_from(announced)
        .ok()
        .filter(|&len| len <= framing::PRE_AUTH_FRAME_BYTES_MAX)
        .ok_or_else(|| {
            format!(
                "a handshake frame of {announced} bytes (at most {})",
                framing::PRE_AUTH_FRAME_BYTES_MAX
            )
        })?;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.map_err(|e| e.to_string())?;
    decode_frame(&body).map_err(|e| e.to_string())
}

async fn try_connect(
    me: InstId,
    peer: InstId,
    address: &str,
    token: &str,
    codec: Codec,
    run: u64,
) -> Result<TcpStream, String> {
    let mut s = tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(address))
        .await
        .map_err(|_| "no answer to connect within 2 s".to_string())?
        .map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    write_frame(&mut s, &hello_frame(Hello::new(me, token, run)))
        .await
        .map_err(|e| e.to_string())?;
    let answer = tokio::time::timeout(HELLO_PATIENCE, read_handshake(&mut s))
        .await
        .map_err(|_| {
            format!(
                "no Hello from the peer within {}s",
                HELLO_PATIENCE.as_secs()
            )
        })??;
    match answer.kind {
        Some(frame::Kind::Hello(h)) => {
            let who = codec.check_hello(&h, token).map_err(|e| e.to_string())?;
            if who != peer {
                return Err(format!("{address} answered as {who}, not {peer}"));
            }
            if h.run != run {
                return Err(format!("{peer} answered for another run ({})", h.run));
            }
            Ok(s)
        }
        Some(frame::Kind::Refusal(r)) => Err(format!("refused: {}", r.reason)),
        _ => Err("the peer did not answer with Hello".into()),
    }
}

/// What the interconnect listener needs once a scenario is loaded.
#[derive(Clone)]
pub struct Wiring {
    pub host: HostSender,
    pub clock: Clock,
    pub codec: Codec,
    /// Messages received, per peer.
    pub received: Arc<Vec<AtomicU64>>,
    /// The run this instance is loaded for (see `Hello.run`).
    pub run: u64,
}

/// The interconnect listener of one instance.
#[derive(Clone)]
pub struct InterconnectService {
    me: InstId,
    token: String,
    wiring: Arc<Mutex<Option<Wiring>>>,
}

/// How an instance process reports trouble with one of its listeners: in
/// its log, and as a problem of the instance (which `status` shows and
/// which stops a run) while a scenario is loaded.
pub fn instance_reporter(wiring: Arc<Mutex<Option<Wiring>>>) -> Reporter {
    Arc::new(move |news| match news {
        ListenerNews::Trouble(t) => {
            tracing::warn!("{t}");
            let host = wiring
                .lock()
                .ok()
                .and_then(|w| w.as_ref().map(|w| w.host.clone()));
            if let Some(host) = host {
                let _ = host.send(Input::Problem(t));
            }
        }
        ListenerNews::Recovered(r) => tracing::info!("{r}"),
    })
}

impl InterconnectService {
    pub fn new(me: InstId, token: String, wiring: Arc<Mutex<Option<Wiring>>>) -> Self {
        InterconnectService { me, token, wiring }
    }

    /// Take the peers' connections until the process ends: accept errors
    /// are reported and retried, at most [`HELLOS_PENDING_MAX`] connections
    /// wait for their Hello at once.
    pub async fn serve(self, listener: TcpListener) {
        let what = match listener.local_addr() {
            Ok(a) => format!("{}: interconnect listener {a}", self.me),
            Err(_) => format!("{}: interconnect listener", self.me),
        };
        let report = instance_reporter(self.wiring.clone());
        let mut acceptor = Acceptor::new(listener, what, HELLOS_PENDING_MAX, report);
        loop {
            let conn = acceptor.accept().await;
            let svc = self.clone();
            tokio::spawn(async move { svc.take(conn).await });
        }
    }

    /// One peer's connection: check its Hello (holding a slot of the
    /// connections waiting for one), then hand every message to the host.
    async fn take(self, conn: Admitted) {
        let Admitted {
            stream: mut conn,
            slot: hello_slot,
        } = conn;
        let me = self.me;
        let hello = match tokio::time::timeout(HELLO_PATIENCE, read_handshake(&mut conn)).await {
            Ok(Ok(pb::Frame {
                kind: Some(frame::Kind::Hello(h)),
            })) => h,
            Ok(Ok(_)) => {
                let why = "the first frame of an interconnect connection must be Hello";
                let _ = write_frame(&mut conn, &framing::refusal_frame(why)).await;
                return;
            }
            // Not a peer (or it gave up): nothing to answer.
            Ok(Err(_)) | Err(_) => return,
        };
        let wiring = self.wiring.lock().ok().and_then(|w| w.clone());
        let checked = match &wiring {
            None => Err("instance not loaded yet".to_string()),
            Some(w) => match w.codec.check_hello(&hello, &self.token) {
                Ok(from) if from == me => Err(format!("Hello.instance: {from} is this instance")),
                // The peer is ahead of (or behind) this instance's loads:
                // it tries again until both are on the same run.
                Ok(_) if hello.run != w.run => Err(format!(
                    "instance not loaded for run {} yet (loaded: run {})",
                    hello.run, w.run
                )),
                Ok(from) => Ok(from),
                Err(e) => Err(e.to_string()),
            },
        };
        let (wiring, from) = match (wiring, checked) {
            (Some(w), Ok(from)) => (w, from),
            (_, Err(why)) => {
                let _ = write_frame(&mut conn, &framing::refusal_frame(why)).await;
                return;
            }
            (None, Ok(_)) => return,
        };
        if write_frame(
            &mut conn,
            &hello_frame(Hello::new(me, &self.token, wiring.run)),
        )
        .await
        .is_err()
        {
            return;
        }
        // An instance of the cluster: it no longer counts as waiting.
        drop(hello_slot);
        // When the kernel received what the process reads: without the
        // timestamps (not Linux?) arrival is when the frame is read.
        let stamps = crate::rx_stamp::enable(std::os::fd::AsFd::as_fd(&conn)).is_ok();
        let mut codec = framing::frame_codec();
        let mut buf = BytesMut::with_capacity(64 << 10);
        let mut scratch = vec![0u8; 64 << 10];
        // (at the socket, read by this process) of the last bytes read.
        let mut times: (Nanos, Nanos) = (0, 0);
        let problem = loop {
            let body = match codec.decode(&mut buf) {
                Ok(Some(b)) => b,
                Ok(None) => {
                    // Nothing whole buffered: read more (the connection
                    // ending here is the peer going away: its own links
                    // report it, and ours to it fail on the next send).
                    if conn.readable().await.is_err() {
                        return;
                    }
                    let read = conn.try_io(tokio::io::Interest::READABLE, || {
                        crate::rx_stamp::recv(std::os::fd::AsFd::as_fd(&conn), &mut scratch)
                    });
                    match read {
                        Ok((0, _)) => return,
                        Ok((n, stamp)) => {
                            buf.extend_from_slice(&scratch[..n]);
                            let now = wiring.clock.now();
                            let at_socket = match stamp {
                                Some(t) if stamps => now.saturating_sub(
                                    crate::rx_stamp::realtime_ns().saturating_sub(t),
                                ),
                                _ => now,
                            };
                            times = (at_socket, now);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => return,
                    }
                    continue;
                }
                Err(e) => break format!("{me}: bad frame from {from}: {e}"),
            };
            let env = match decode_frame(&body) {
                Ok(pb::Frame {
                    kind: Some(frame::Kind::Envelope(e)),
                }) => wiring.codec.decode_envelope(e),
                Ok(_) => {
                    break format!(
                        "{me}: unexpected frame from {from} (not a message after Hello)"
                    );
                }
                Err(e) => break format!("{me}: bad frame from {from}: {e}"),
            };
            match env {
                Ok(env) if env.from == from && env.to == me => {
                    if let Some(c) = wiring.received.get(from.idx()) {
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                    let (at_socket, read) = times;
                    if wiring
                        .host
                        .send(Input::Envelope(env, at_socket, read))
                        .is_err()
                    {
                        return; // the host was replaced or stopped
                    }
                }
                Ok(env) => {
                    break format!(
                        "{me}: dropped a message from {from} claiming to be from {} to {}",
                        env.from, env.to
                    );
                }
                Err(e) => break format!("{me}: bad message from {from}: {e}"),
            }
        };
        // A peer that speaks nonsense is cut off: its connection ends here.
        let _ = wiring.host.send(Input::Problem(problem));
    }
}
