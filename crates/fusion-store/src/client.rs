//! A client of the block store for instances and the cluster launcher: every
//! call has a deadline, carries the token, and fails with an error that says
//! which store, which call, and whether it timed out, was refused or failed.

use std::error::Error as _;
use std::fmt;
use std::time::Duration;

use fusion_core::block::Block;
use fusion_core::msg::{Io, IoResult, RedoRecord};
use fusion_core::types::{BlockAddr, InstId};
use fusion_core::voting::Vote;
use fusion_wire::pb::block_store_client::BlockStoreClient;
use fusion_wire::{Codec, TOKEN_METADATA, WireError, pb};
use thiserror::Error;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};

use crate::disk::Geometry;
use crate::latency::Device;
use crate::server::MESSAGE_BYTES_MAX;

/// Blocks per `WriteBlocks` call when loading initial images, by encoded size.
const LOAD_BATCH_BYTES: usize = 4 << 20;

/// What went wrong with a call.
#[derive(Debug, Error)]
pub enum ClientErrorKind {
    /// The deadline passed. A write may still have been applied: the store
    /// finishes an I/O it started, so its outcome is unknown.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("connection refused (is the store running?)")]
    Refused,
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("the store rejected the token: {0}")]
    Unauthenticated(String),
    #[error("the token is not valid metadata (printable ASCII only)")]
    BadToken,
    #[error("{code:?}: {message}")]
    Status { code: Code, message: String },
    #[error("bad answer: {0}")]
    Wire(#[from] WireError),
}

/// A failed call to the block store at `addr`.
#[derive(Debug, Error)]
pub struct ClientError {
    pub addr: String,
    pub call: &'static str,
    #[source]
    pub kind: ClientErrorKind,
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block store {}: {}: {}", self.addr, self.call, self.kind)
    }
}

impl ClientError {
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, ClientErrorKind::Timeout(_))
    }
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, ClientErrorKind::Refused)
    }
}

/// Was the connection refused, anywhere down the error chain?
fn refused(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        cur = e.source();
    }
    false
}

fn classify(status: Status) -> ClientErrorKind {
    match status.code() {
        Code::Unauthenticated => ClientErrorKind::Unauthenticated(status.message().to_string()),
        Code::Unavailable if status.source().is_some_and(refused) => ClientErrorKind::Refused,
        code => ClientErrorKind::Status {
            code,
            message: status.message().to_string(),
        },
    }
}

/// Store statistics and shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreInfo {
    pub geometry: Geometry,
    /// Datafile writes whose image did not fit a slot since the store opened.
    pub overflow_writes: u64,
}

/// What a store says to a Ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorePing {
    /// The store process's id.
    pub pid: u32,
    /// Whether a run formatted it (its datafile and redo threads exist).
    pub formatted: bool,
}

/// A connection to one block store. Cheap to clone (one HTTP/2 connection,
/// shared; it reconnects by itself after a failure).
#[derive(Clone)]
pub struct StoreClient {
    addr: String,
    token: AsciiMetadataValue,
    timeout: Duration,
    inner: BlockStoreClient<Channel>,
}

impl fmt::Debug for StoreClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreClient")
            .field("addr", &self.addr)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl StoreClient {
    /// Connect to the store at `addr` (`host:port`); `timeout` bounds the
    /// connection and then every call.
    pub async fn connect(
        addr: impl Into<String>,
        token: &str,
        timeout: Duration,
    ) -> Result<StoreClient, ClientError> {
        let addr = addr.into();
        let fail = |kind| ClientError {
            addr: addr.clone(),
            call: "connect",
            kind,
        };
        let token: AsciiMetadataValue =
            token.parse().map_err(|_| fail(ClientErrorKind::BadToken))?;
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| fail(ClientErrorKind::Connect(e.to_string())))?
            .connect_timeout(timeout)
            .tcp_nodelay(true);
        let channel = match tokio::time::timeout(timeout, endpoint.connect()).await {
            Err(_) => return Err(fail(ClientErrorKind::Timeout(timeout))),
            Ok(Err(e)) if refused(&e) => return Err(fail(ClientErrorKind::Refused)),
            Ok(Err(e)) => {
                let mut msg = e.to_string();
                let mut src = e.source();
                while let Some(s) = src {
                    msg.push_str(": ");
                    msg.push_str(&s.to_string());
                    src = s.source();
                }
                return Err(fail(ClientErrorKind::Connect(msg)));
            }
            Ok(Ok(c)) => c,
        };
        let inner = BlockStoreClient::new(channel)
            .max_decoding_message_size(MESSAGE_BYTES_MAX)
            .max_encoding_message_size(MESSAGE_BYTES_MAX);
        Ok(StoreClient {
            addr,
            token,
            timeout,
            inner,
        })
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The same connection with another per-call deadline.
    pub fn with_timeout(&self, timeout: Duration) -> StoreClient {
        StoreClient {
            timeout,
            ..self.clone()
        }
    }

    fn err(&self, call: &'static str, kind: ClientErrorKind) -> ClientError {
        ClientError {
            addr: self.addr.clone(),
            call,
            kind,
        }
    }

    /// One call with the token and the deadline.
    async fn call<Q, A, F, Fut>(&self, name: &'static str, msg: Q, f: F) -> Result<A, ClientError>
    where
        F: FnOnce(BlockStoreClient<Channel>, Request<Q>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<A>, Status>>,
    {
        let mut req = Request::new(msg);
        req.metadata_mut()
            .insert(TOKEN_METADATA, self.token.clone());
        req.set_timeout(self.timeout);
        match tokio::time::timeout(self.timeout, f(self.inner.clone(), req)).await {
            Err(_) => Err(self.err(name, ClientErrorKind::Timeout(self.timeout))),
            Ok(Err(status))
                if status.code() == Code::Cancelled
                    && status.message().contains("Timeout expired") =>
            {
                Err(self.err(name, ClientErrorKind::Timeout(self.timeout)))
            }
            Ok(Err(status)) => Err(self.err(name, classify(status))),
            Ok(Ok(resp)) => Ok(resp.into_inner()),
        }
    }

    /// Create (or recreate, erasing it) the store's files.
    pub async fn format(&self, geometry: Geometry) -> Result<(), ClientError> {
        let msg = pb::FormatRequest {
            geometry: Some(geometry.into()),
            model: None,
            // Any run: this client's calls carry none.
            run: 0,
        };
        self.call("Format", msg, |mut c, r| async move { c.format(r).await })
            .await
            .map(drop)
    }

    /// Whether the store answers (and accepts the token), without touching its files.
    pub async fn ping(&self) -> Result<StorePing, ClientError> {
        let r = self
            .call("Ping", pb::PingRequest {}, |mut c, r| async move {
                c.ping(r).await
            })
            .await?;
        Ok(StorePing {
            pid: r.pid,
            formatted: r.formatted,
        })
    }

    pub async fn info(&self) -> Result<StoreInfo, ClientError> {
        let r = self
            .call("Info", pb::InfoRequest {}, |mut c, r| async move {
                c.info(r).await
            })
            .await?;
        let g = r.geometry.ok_or_else(|| {
            self.err(
                "Info",
                ClientErrorKind::Wire(WireError::Missing {
                    field: "InfoResponse.geometry",
                }),
            )
        })?;
        let geometry = Geometry::try_from(g).map_err(|e| {
            self.err(
                "Info",
                ClientErrorKind::Status {
                    code: Code::InvalidArgument,
                    message: e.to_string(),
                },
            )
        })?;
        Ok(StoreInfo {
            geometry,
            overflow_writes: r.overflow_writes,
        })
    }

    /// Read blocks for instance `inst` (its data-device faults apply).
    pub async fn read_blocks(
        &self,
        inst: InstId,
        blks: &[BlockAddr],
    ) -> Result<Vec<Block>, ClientError> {
        let msg = pb::ReadBlocksRequest {
            instance: u32::from(inst.0),
            blks: blks.iter().map(|b| b.0).collect(),
        };
        let r = self
            .call("ReadBlocks", msg, |mut c, r| async move {
                c.read_blocks(r).await
            })
            .await?;
        if r.blocks.len() != blks.len() {
            return Err(self.err(
                "ReadBlocks",
                ClientErrorKind::Status {
                    code: Code::Internal,
                    message: format!("asked for {} blocks, got {}", blks.len(), r.blocks.len()),
                },
            ));
        }
        let mut out = Vec::with_capacity(blks.len());
        for (bytes, want) in r.blocks.iter().zip(blks) {
            let b = Codec::UNPADDED
                .decode_block("ReadBlocksResponse.blocks", bytes)
                .map_err(|e| self.err("ReadBlocks", e.into()))?;
            if b.addr != *want {
                return Err(self.err(
                    "ReadBlocks",
                    ClientErrorKind::Wire(WireError::OutOfRange {
                        field: "ReadBlocksResponse.blocks",
                        value: u64::from(b.addr.0),
                        expected: format!("block {}", want.0),
                    }),
                ));
            }
            out.push(b);
        }
        Ok(out)
    }

    pub async fn read_block(&self, inst: InstId, blk: BlockAddr) -> Result<Block, ClientError> {
        let mut v = self.read_blocks(inst, &[blk]).await?;
        v.pop().ok_or_else(|| {
            self.err(
                "ReadBlocks",
                ClientErrorKind::Wire(WireError::Missing {
                    field: "ReadBlocksResponse.blocks",
                }),
            )
        })
    }

    /// Write blocks, durable when this returns. Per block: false when the
    /// store already held a newer image (a late write never goes back).
    pub async fn write_blocks(
        &self,
        inst: InstId,
        blocks: &[Block],
    ) -> Result<Vec<bool>, ClientError> {
        self.write("WriteBlocks", inst, blocks, false).await
    }

    async fn write(
        &self,
        call: &'static str,
        inst: InstId,
        blocks: &[Block],
        initial: bool,
    ) -> Result<Vec<bool>, ClientError> {
        // Unpadded: the store pads into its slots.
        let msg = pb::WriteBlocksRequest {
            instance: u32::from(inst.0),
            blocks: blocks
                .iter()
                .map(|b| Codec::UNPADDED.encode_block(b))
                .collect(),
            initial,
        };
        let r = self
            .call(call, msg, |mut c, r| async move { c.write_blocks(r).await })
            .await?;
        Ok(r.applied)
    }

    /// Load initial images (a freshly formatted store), in batches, without
    /// modeled latency.
    pub async fn load_images(&self, blocks: &[Block]) -> Result<(), ClientError> {
        let mut start = 0;
        while start < blocks.len() {
            let mut end = start;
            let mut size = 0;
            while end < blocks.len() && (end == start || size < LOAD_BATCH_BYTES) {
                size += blocks[end].encoded_len();
                end += 1;
            }
            self.write("WriteBlocks(initial)", InstId(0), &blocks[start..end], true)
                .await?;
            start = end;
        }
        Ok(())
    }

    /// Append to the redo thread of `inst`; with `sync`, durable when this
    /// returns. Returns the thread's redo bytes so far.
    pub async fn append_redo(
        &self,
        inst: InstId,
        records: &[RedoRecord],
        bytes: u64,
        sync: bool,
    ) -> Result<u64, ClientError> {
        let msg = pb::AppendRedoRequest {
            instance: u32::from(inst.0),
            records: records.iter().map(pb::RedoRecord::from).collect(),
            bytes,
            sync,
        };
        let r = self
            .call("AppendRedo", msg, |mut c, r| async move {
                c.append_redo(r).await
            })
            .await?;
        Ok(r.thread_bytes)
    }

    pub async fn flush_redo(&self, inst: InstId) -> Result<(), ClientError> {
        let msg = pb::FlushRedoRequest {
            instance: u32::from(inst.0),
        };
        self.call(
            "FlushRedo",
            msg,
            |mut c, r| async move { c.flush_redo(r).await },
        )
        .await
        .map(drop)
    }

    /// The whole redo thread of `inst` and its redo bytes.
    pub async fn read_redo(&self, inst: InstId) -> Result<(Vec<RedoRecord>, u64), ClientError> {
        let msg = pb::ReadRedoRequest {
            instance: u32::from(inst.0),
        };
        let r = self
            .call(
                "ReadRedo",
                msg,
                |mut c, r| async move { c.read_redo(r).await },
            )
            .await?;
        let records = r
            .records
            .into_iter()
            .map(RedoRecord::try_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err("ReadRedo", e.into()))?;
        Ok((records, r.thread_bytes))
    }

    /// A `disk_latency` fault on `inst`'s `device` (replaces the model's latency).
    pub async fn set_fault(
        &self,
        inst: InstId,
        device: Device,
        latency: u64,
        jitter: u64,
    ) -> Result<(), ClientError> {
        let msg = pb::SetFaultRequest {
            instance: u32::from(inst.0),
            device: match device {
                Device::Redo => pb::Device::Redo,
                Device::Data => pb::Device::Data,
            } as i32,
            latency,
            jitter,
        };
        self.call(
            "SetFault",
            msg,
            |mut c, r| async move { c.set_fault(r).await },
        )
        .await
        .map(drop)
    }

    pub async fn clear_faults(&self) -> Result<(), ClientError> {
        self.call(
            "ClearFaults",
            pb::ClearFaultsRequest {},
            |mut c, r| async move { c.clear_faults(r).await },
        )
        .await
        .map(drop)
    }

    /// Perform an instance's `Action::Io` and return what to hand back to
    /// `Instance::handle_io`. A redo write is synced (LGWR's write).
    pub async fn io(&self, inst: InstId, io: Io) -> Result<IoResult, ClientError> {
        match io {
            Io::ReadBlock { blk } => {
                Ok(IoResult::Read(Box::new(self.read_block(inst, blk).await?)))
            }
            Io::ReadBlocks { first, count } => {
                let blks: Vec<BlockAddr> = (first.0..first.0.saturating_add(count))
                    .map(BlockAddr)
                    .collect();
                Ok(IoResult::ReadMany(self.read_blocks(inst, &blks).await?))
            }
            Io::WriteBlock { block } => {
                self.write_blocks(inst, std::slice::from_ref(&*block))
                    .await?;
                Ok(IoResult::Written)
            }
            Io::WriteRedo { records, bytes, .. } => {
                self.append_redo(inst, &records, bytes, true).await?;
                Ok(IoResult::Written)
            }
            Io::Vote { vote } => Ok(IoResult::Votes(self.vote(inst, &vote).await?)),
            Io::Fence { inst: victim } => {
                self.fence(inst, victim).await?;
                Ok(IoResult::Written)
            }
            Io::ReadRedo { thread } => Ok(IoResult::Redo(self.read_redo(thread).await?.0)),
            Io::Unfence { inst: victim } => {
                self.unfence(inst, victim).await?;
                Ok(IoResult::Written)
            }
        }
    }

    /// The disk heartbeat: write `inst`'s record, read every record.
    pub async fn vote(&self, inst: InstId, vote: &Vote) -> Result<Vec<Vote>, ClientError> {
        let msg = pb::VoteRequest {
            instance: u32::from(inst.0),
            vote: Some(Codec::UNPADDED.encode_vote(vote)),
        };
        let r = self
            .call("Vote", msg, |mut c, r| async move { c.vote(r).await })
            .await?;
        r.votes
            .into_iter()
            .map(|v| Codec::UNPADDED.decode_vote(v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err("Vote", e.into()))
    }

    /// Fence `victim`: the store refuses its later calls.
    pub async fn fence(&self, inst: InstId, victim: InstId) -> Result<(), ClientError> {
        self.fence_call(inst, victim, false).await
    }

    /// Lift `victim`'s fence: it was restarted and joins the cluster again.
    pub async fn unfence(&self, inst: InstId, victim: InstId) -> Result<(), ClientError> {
        self.fence_call(inst, victim, true).await
    }

    async fn fence_call(
        &self,
        inst: InstId,
        victim: InstId,
        lift: bool,
    ) -> Result<(), ClientError> {
        let msg = pb::FenceRequest {
            instance: u32::from(inst.0),
            fence: u32::from(victim.0),
            lift,
        };
        self.call("Fence", msg, |mut c, r| async move { c.fence(r).await })
            .await
            .map(drop)
    }
}

impl ClientError {
    /// The store refused the call because the caller was fenced (evicted).
    pub fn is_fenced(&self) -> bool {
        matches!(&self.kind, ClientErrorKind::Status { code: Code::FailedPrecondition, message }
            if message.starts_with(crate::server::FENCED))
    }
}
