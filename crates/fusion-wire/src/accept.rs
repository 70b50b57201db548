//! Accepting TCP connections so that a listener outlives its own failures
//! and its strangers. Every server of the live cluster (the interconnect,
//! the admin service, the block store) takes its connections through an
//! [`Acceptor`]:
//!
//! - An accept error that is about the listener or the process (EMFILE,
//!   ENFILE, ENOBUFS, ENOMEM, ...) does not end the server: it is reported
//!   once per streak of failures, and accepting is tried again every
//!   [`ACCEPT_RETRY_PAUSE`] (retrying at once would spin: the pending
//!   connection keeps the listener readable). tonic's own loop over an
//!   incoming stream skips errors without a pause, so it would spin too.
//! - An error that is about one connection (ECONNABORTED, ECONNRESET: it
//!   went away before it was taken) is skipped silently.
//! - At most `limit` admitted connections are held at once, each holding a
//!   slot ([`Admitted::slot`]) until it is dropped: for the gRPC services
//!   that is the connection's life, for the interconnect until the peer's
//!   `Hello` is accepted. A connection past the limit is closed at once;
//!   the first of a burst is reported, with how many the burst closed
//!   reported when a connection is admitted again.
//!
//! [`grpc_server`] sets the limits of the gRPC services on top: a deadline
//! on every call, calls per connection, HTTP/2 keepalive.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// How long an acceptor waits after an accept error before it tries again.
pub const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How often a gRPC server pings an idle client, and how long it waits for
/// the answer before it closes the connection (a client that vanished
/// without closing would hold its slot for ever).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// A tonic server whose calls end after `call_timeout` (DEADLINE_EXCEEDED)
/// and which runs at most `calls_per_connection` calls of one connection
/// at once (HTTP/2 streams past it are refused to the client, which waits).
/// Serve it with an [`Acceptor`]'s [`Incoming`] for a connection limit.
pub fn grpc_server(
    call_timeout: Duration,
    calls_per_connection: usize,
) -> tonic::transport::Server {
    tonic::transport::Server::builder()
        .timeout(call_timeout)
        .concurrency_limit_per_connection(calls_per_connection)
        .max_concurrent_streams(u32::try_from(calls_per_connection).unwrap_or(u32::MAX))
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
}

/// What an acceptor has to say about its listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenerNews {
    /// Something the operator must know: accepting fails, or connections
    /// are being closed over the limit. Said once per streak or burst.
    Trouble(String),
    /// The trouble is over (worth a log line, not a problem).
    Recovered(String),
}

/// Where an acceptor says it (a log, an instance's problems).
pub type Reporter = Arc<dyn Fn(ListenerNews) + Send + Sync>;

/// A connection the acceptor admitted, holding one of its slots.
pub struct Admitted {
    pub stream: TcpStream,
    /// Dropping it frees the slot for the next connection.
    pub slot: OwnedSemaphorePermit,
}

/// A listener that never fails and admits at most a limit of connections.
pub struct Acceptor {
    listener: TcpListener,
    /// The listener in messages, e.g. `inst1: interconnect listener 127.0.0.1:7001`.
    what: String,
    slots: Arc<Semaphore>,
    limit: usize,
    report: Reporter,
    /// Accept errors in the current streak (reported at the first).
    failures: u64,
    /// Connections closed over the limit in the current burst (reported at the first).
    closed_over_limit: u64,
    /// The pause after an accept error, while it runs.
    pause: Option<Pin<Box<Sleep>>>,
}

impl Acceptor {
    /// Take connections from `listener`, at most `limit` admitted at once.
    pub fn new(listener: TcpListener, what: String, limit: usize, report: Reporter) -> Acceptor {
        Acceptor {
            listener,
            what,
            slots: Arc::new(Semaphore::new(limit)),
            limit,
            report,
            failures: 0,
            closed_over_limit: 0,
            pause: None,
        }
    }

    /// The next admitted connection (with TCP_NODELAY: every service here
    /// sends small messages that must not wait for Nagle). Never fails.
    pub async fn accept(&mut self) -> Admitted {
        std::future::poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// The same as a stream for tonic's `serve_with_incoming`, each
    /// connection holding its slot for its whole life.
    pub fn into_incoming(self) -> Incoming {
        Incoming(self)
    }

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<Admitted> {
        loop {
            if let Some(pause) = self.pause.as_mut() {
                ready!(pause.as_mut().poll(cx));
                self.pause = None;
            }
            let (stream, peer) = match ready!(self.listener.poll_accept(cx)) {
                Ok(x) => x,
                Err(e) if gone_before_taken(&e) => continue,
                Err(e) => {
                    if self.failures == 0 {
                        (self.report)(ListenerNews::Trouble(format!(
                            "{}: cannot accept connections: {e}; trying again every {} ms",
                            self.what,
                            ACCEPT_RETRY_PAUSE.as_millis()
                        )));
                    }
                    self.failures += 1;
                    self.pause = Some(Box::pin(tokio::time::sleep(ACCEPT_RETRY_PAUSE)));
                    continue;
                }
            };
            if self.failures > 0 {
                (self.report)(ListenerNews::Recovered(format!(
                    "{}: accepting again after {} failed attempts",
                    self.what, self.failures
                )));
                self.failures = 0;
            }
            let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                if self.closed_over_limit == 0 {
                    (self.report)(ListenerNews::Trouble(format!(
                        "{}: {} connections are already held (at most {}): closing further \
                         ones at once, the first from {peer}",
                        self.what, self.limit, self.limit
                    )));
                }
                self.closed_over_limit += 1;
                drop(stream);
                continue;
            };
            if self.closed_over_limit > 0 {
                (self.report)(ListenerNews::Recovered(format!(
                    "{}: admitting connections again after closing {} over the limit of {}",
                    self.what, self.closed_over_limit, self.limit
                )));
                self.closed_over_limit = 0;
            }
            // Best effort: a socket that refuses it still works, only slower.
            let _ = stream.set_nodelay(true);
            return Poll::Ready(Admitted { stream, slot });
        }
    }
}

/// The connection went away between the kernel's handshake and accept:
/// nothing is wrong with the listener.
fn gone_before_taken(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// An [`Acceptor`] as the stream of connections tonic serves; it never
/// yields an error.
pub struct Incoming(Acceptor);

impl tokio_stream::Stream for Incoming {
    type Item = io::Result<Admitted>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_accept(cx).map(|a| Some(Ok(a)))
    }
}

impl AsyncRead for Admitted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Admitted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for Admitted {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::io::AsyncReadExt;

    use super::*;

    fn collecting() -> (Reporter, Arc<Mutex<Vec<ListenerNews>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let report: Reporter = Arc::new(move |n| s.lock().expect("not poisoned").push(n));
        (report, seen)
    }

    /// Does the server end close this connection (rather than keep it)?
    async fn closed_by_server(c: &mut TcpStream) -> bool {
        let mut b = [0u8; 1];
        matches!(c.read(&mut b).await, Ok(0) | Err(_))
    }

    #[tokio::test]
    async fn connections_over_the_limit_are_closed_and_reported_once_per_burst() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("address");
        let (report, seen) = collecting();
        let mut acceptor = Acceptor::new(listener, "test listener".into(), 2, report);

        let mut clients = Vec::new();
        for _ in 0..5 {
            clients.push(TcpStream::connect(addr).await.expect("connects"));
        }
        let first = acceptor.accept().await;
        let second = acceptor.accept().await;
        // The other three are closed while the acceptor waits for one it
        // may admit; a slot freed, the next connection is admitted.
        let taker = tokio::spawn(async move {
            let third = acceptor.accept().await;
            (acceptor, third)
        });
        for c in &mut clients[2..] {
            assert!(
                closed_by_server(c).await,
                "a connection over the limit stays open"
            );
        }
        drop(first);
        let sixth = TcpStream::connect(addr).await.expect("connects");
        let (mut acceptor, third) = taker.await.expect("accepts");
        let peer = third.stream.peer_addr().expect("peer");
        assert_eq!(peer, sixth.local_addr().expect("local"));

        let news = seen.lock().expect("not poisoned").clone();
        assert_eq!(news.len(), 2, "{news:?}");
        assert!(
            matches!(&news[0], ListenerNews::Trouble(t)
                if t.contains("test listener") && t.contains("at most 2")),
            "{news:?}"
        );
        assert!(
            matches!(&news[1], ListenerNews::Recovered(r) if r.contains("closing 3 over the limit")),
            "{news:?}"
        );

        // Still two held (second, third): the next burst is reported again.
        let mut seventh = TcpStream::connect(addr).await.expect("connects");
        let taker = tokio::spawn(async move { acceptor.accept().await });
        assert!(closed_by_server(&mut seventh).await);
        drop((second, third));
        let eighth = TcpStream::connect(addr).await.expect("connects");
        let admitted = taker.await.expect("accepts");
        assert_eq!(
            admitted.stream.peer_addr().expect("peer"),
            eighth.local_addr().expect("local")
        );
        let troubles = seen
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|n| matches!(n, ListenerNews::Trouble(_)))
            .count();
        assert_eq!(troubles, 2);
    }

    #[test]
    fn a_connection_gone_before_it_was_taken_is_not_trouble() {
        for kind in [
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::ConnectionReset,
        ] {
            assert!(gone_before_taken(&io::Error::from(kind)));
        }
        // EMFILE, ENFILE, ENOBUFS: the listener's or the process's trouble.
        for errno in [24, 23, 105] {
            assert!(!gone_before_taken(&io::Error::from_raw_os_error(errno)));
        }
    }
}
