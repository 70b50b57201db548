//! The gRPC `BlockStore` service over [`Disk`], with modeled latency and a
//! token check on every call.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use fusion_core::types::{BlockAddr, InstId};
use fusion_core::voting::VotingFile;
use fusion_wire::accept::{Acceptor, ListenerNews, Reporter, grpc_server};
use fusion_wire::pb::block_store_server::{BlockStore, BlockStoreServer};
use fusion_wire::{TOKEN_METADATA, constant_time_eq, pb};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

use crate::disk::{Disk, Durability, Geometry};
use crate::error::StoreError;
use crate::latency::{Delay, Device, Latency, LatencyModel};

/// Connections the store holds at once (one per instance and the runner's,
/// plus `status`): past it new ones are closed at once.
pub const STORE_CONNECTIONS_MAX: usize = 64;
/// Calls in progress on one connection at once. An instance issues its
/// I/Os concurrently on one connection, and a call waits in the store for
/// its modeled latency: the limit is far above what a scenario issues, so
/// that no call waits here unmodeled.
pub const STORE_CALLS_PER_CONNECTION_MAX: usize = 1024;
/// Longest a call may run in the store (clients wait 10 s): past it the call
/// ends with DEADLINE_EXCEEDED instead of holding its connection.
pub const STORE_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest gRPC message either side accepts: a batch of blocks (tonic's
/// default of 4 MiB is 512 blocks of 8 KiB).
pub const MESSAGE_BYTES_MAX: usize = 64 << 20;

/// How to run a store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Directory of the datafile and redo threads (created by Format).
    pub dir: PathBuf,
    /// Shared secret every call must carry in `x-fusionlab-token`.
    pub token: String,
    pub latency: LatencyModel,
    /// Seed of the jitter of disk faults.
    pub seed: u64,
    /// When a write is acknowledged.
    pub durability: Durability,
}

impl StoreConfig {
    pub fn new(dir: impl Into<PathBuf>, token: impl Into<String>) -> StoreConfig {
        StoreConfig {
            dir: dir.into(),
            token: token.into(),
            latency: LatencyModel::ZERO,
            seed: 0,
            durability: Durability::Fsync,
        }
    }
}

struct Shared {
    dir: PathBuf,
    durability: Durability,
    disk: RwLock<Option<Arc<Disk>>>,
    latency: Latency,
    /// Format replaces the files: one at a time.
    formatting: tokio::sync::Mutex<()>,
    /// The run the store was last formatted for (0: any): calls of
    /// another run are refused (`TokenCheck`).
    run: Arc<std::sync::atomic::AtomicU64>,
    /// The voting file (disk heartbeats) and the fenced instances.
    voting: std::sync::Mutex<VotingFile>,
    /// Per instance, held shared while one of its writes is applied and
    /// exclusively while it is fenced: a write checks the fence again under
    /// it, so none lands once `Fence` has returned (the survivors read the
    /// dead thread then), however long its modeled latency held it.
    io_gates: Vec<std::sync::RwLock<()>>,
}

/// The `BlockStore` service. Cheap to clone.
#[derive(Clone)]
pub struct StoreService {
    inner: Arc<Shared>,
}

/// The service wrapped with its token check, ready for a tonic `Server`.
pub type AuthedStore = InterceptedService<BlockStoreServer<StoreService>, TokenCheck>;

/// Rejects a call without the right `x-fusionlab-token` (Unauthenticated).
#[derive(Clone)]
pub struct TokenCheck {
    token: Arc<str>,
    /// The run the store was last formatted for (0: any).
    run: Arc<std::sync::atomic::AtomicU64>,
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        match req.metadata().get(TOKEN_METADATA) {
            Some(v) if constant_time_eq(v.as_bytes(), self.token.as_bytes()) => {
                let current = self.run.load(std::sync::atomic::Ordering::Acquire);
                let theirs = req
                    .metadata()
                    .get(fusion_wire::RUN_METADATA)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok());
                match theirs {
                    Some(r) if current != 0 && r != current => {
                        Err(Status::failed_precondition(format!(
                            "a call of run {r}: the store is formatted for run {current} \
                             (an instance of an earlier run)"
                        )))
                    }
                    _ => Ok(req),
                }
            }
            Some(_) => Err(Status::unauthenticated(format!(
                "wrong {TOKEN_METADATA} for this block store"
            ))),
            None => Err(Status::unauthenticated(format!(
                "missing {TOKEN_METADATA} metadata"
            ))),
        }
    }
}

impl StoreService {
    /// Open the store in `config.dir` if it was formatted; otherwise every
    /// call but Format fails with FailedPrecondition until it is.
    pub fn open(config: &StoreConfig) -> Result<StoreService, StoreError> {
        let durability = config.durability;
        let disk =
            Disk::open_existing(&config.dir)?.map(|d| Arc::new(d.with_durability(durability)));
        Ok(StoreService {
            inner: Arc::new(Shared {
                dir: config.dir.clone(),
                durability,
                disk: RwLock::new(disk),
                latency: Latency::new(config.latency, config.seed),
                formatting: tokio::sync::Mutex::new(()),
                // Sized for the largest cluster: the store is formatted later.
                voting: std::sync::Mutex::new(VotingFile::new(64)),
                io_gates: (0..fusion_wire::INSTANCES_MAX)
                    .map(|_| std::sync::RwLock::new(()))
                    .collect(),
                run: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            }),
        })
    }

    /// The service with the token check and message limits.
    pub fn into_server(self, token: &str) -> AuthedStore {
        let run = self.inner.run.clone();
        let server = BlockStoreServer::new(self)
            .max_decoding_message_size(MESSAGE_BYTES_MAX)
            .max_encoding_message_size(MESSAGE_BYTES_MAX);
        InterceptedService::new(
            server,
            TokenCheck {
                token: Arc::from(token),
                run,
            },
        )
    }

    /// Refuse a call of an evicted instance (I/O fencing).
    fn unfenced(&self, inst: usize) -> Result<(), Status> {
        let voting = self.inner.voting.lock().unwrap_or_else(|p| p.into_inner());
        let fenced = u8::try_from(inst).is_ok_and(|i| voting.is_fenced(InstId(i)));
        if fenced {
            return Err(Status::failed_precondition(format!(
                "{FENCED}: instance {} was evicted from the cluster",
                inst + 1
            )));
        }
        Ok(())
    }

    /// Apply one of `inst`'s writes unless it was fenced meanwhile (see
    /// `io_gates`); runs on a blocking thread, after the modeled wait.
    fn gated<T>(
        &self,
        inst: usize,
        apply: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<Result<T, Status>, StoreError> {
        let gate = self
            .inner
            .io_gates
            .get(inst)
            .map(|g| g.read().unwrap_or_else(|p| p.into_inner()));
        if let Err(fenced) = self.unfenced(inst) {
            return Ok(Err(fenced));
        }
        let out = apply()?;
        drop(gate);
        Ok(Ok(out))
    }

    fn disk(&self) -> Result<Arc<Disk>, Status> {
        self.inner
            .disk
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| StoreError::NotFormatted.into())
    }
}

/// Run blocking file I/O off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, Status> {
    let done = tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!("store I/O task failed: {e}");
        Status::internal(format!("store I/O task failed: {e}"))
    })?;
    done.map_err(|e| {
        tracing::warn!("{e}");
        Status::from(e)
    })
}

/// Modeled latency around a real I/O: wait for the IOPS slot, then the call
/// takes the model's (or a fault's) latency, with the real I/O done inside
/// it. The host's disk shows only where it is slower than the modeled
/// device: added on top, a busy host's `fsync` turned a modeled 1 ms redo
/// write into 3 to 9 ms and moved the live figures away from the model.
async fn modeled<T>(
    delay: Delay,
    io: impl Future<Output = Result<T, Status>>,
) -> Result<T, Status> {
    if let Some(start) = delay.start {
        tokio::time::sleep_until(start.into()).await;
    }
    let done_at = tokio::time::Instant::now() + delay.extra;
    let out = io.await?;
    tokio::time::sleep_until(done_at).await;
    Ok(out)
}

#[tonic::async_trait]
impl BlockStore for StoreService {
    async fn format(
        &self,
        req: Request<pb::FormatRequest>,
    ) -> Result<Response<pb::FormatResponse>, Status> {
        let req = req.into_inner();
        let g = req
            .geometry
            .ok_or_else(|| Status::invalid_argument("missing field `FormatRequest.geometry`"))?;
        if let Some(m) = req.model {
            self.inner.latency.set_model(LatencyModel {
                read_latency: m.read_latency,
                write_latency: m.write_latency,
                log_write_latency: m.log_write_latency,
                iops: m.iops,
            });
        }
        let geometry = Geometry::try_from(g)?;
        let _one = self.inner.formatting.lock().await;
        // Calls in flight keep the old files open; the cluster formats the
        // store before it starts.
        *self.inner.disk.write().unwrap_or_else(|p| p.into_inner()) = None;
        let dir = self.inner.dir.clone();
        let durability = self.inner.durability;
        let disk =
            blocking(move || Disk::format(&dir, geometry).map(|d| d.with_durability(durability)))
                .await?;
        *self.inner.disk.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(disk));
        // A new run: no fence or heartbeat of the last one counts (an
        // instance killed and evicted in it is a member again).
        *self.inner.voting.lock().unwrap_or_else(|p| p.into_inner()) = VotingFile::new(64);
        self.inner
            .run
            .store(req.run, std::sync::atomic::Ordering::Release);
        tracing::info!(run = req.run, "formatted for a new run");
        Ok(Response::new(pb::FormatResponse {}))
    }

    async fn ping(
        &self,
        _req: Request<pb::PingRequest>,
    ) -> Result<Response<pb::PingResponse>, Status> {
        let formatted = self
            .inner
            .disk
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        Ok(Response::new(pb::PingResponse {
            pid: std::process::id(),
            formatted,
        }))
    }

    async fn info(
        &self,
        _req: Request<pb::InfoRequest>,
    ) -> Result<Response<pb::InfoResponse>, Status> {
        let disk = self.disk()?;
        Ok(Response::new(pb::InfoResponse {
            geometry: Some(disk.geometry().into()),
            overflow_writes: disk.overflow_writes(),
        }))
    }

    async fn read_blocks(
        &self,
        req: Request<pb::ReadBlocksRequest>,
    ) -> Result<Response<pb::ReadBlocksResponse>, Status> {
        let req = req.into_inner();
        let disk = self.disk()?;
        let inst = disk.check_instance(req.instance)?;
        self.unfenced(inst)?;
        let most = MESSAGE_BYTES_MAX / disk.geometry().block_size as usize / 2;
        if req.blks.len() > most {
            return Err(Status::invalid_argument(format!(
                "ReadBlocksRequest.blks: {} blocks, at most {most} per call",
                req.blks.len()
            )));
        }
        let delay = self.inner.latency.data(inst, false);
        let blocks = modeled(
            delay,
            blocking(move || {
                req.blks
                    .iter()
                    .map(|&b| disk.read_block(BlockAddr(b)).map(|(bytes, _)| bytes))
                    .collect::<Result<Vec<_>, _>>()
            }),
        )
        .await?;
        Ok(Response::new(pb::ReadBlocksResponse { blocks }))
    }

    async fn write_blocks(
        &self,
        req: Request<pb::WriteBlocksRequest>,
    ) -> Result<Response<pb::WriteBlocksResponse>, Status> {
        let req = req.into_inner();
        let disk = self.disk()?;
        let inst = disk.check_instance(req.instance)?;
        // The initial load is the launcher's, not an instance's.
        if !req.initial {
            self.unfenced(inst)?;
        }
        let codec = *disk.codec();
        let blocks = req
            .blocks
            .iter()
            .map(|b| codec.decode_block("WriteBlocksRequest.blocks", b))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let initial = req.initial;
        let delay = if initial {
            Delay::NONE
        } else {
            self.inner.latency.data(inst, true)
        };
        let svc = self.clone();
        let applied = modeled(
            delay,
            blocking(move || {
                if initial {
                    Ok(Ok(disk.write_blocks(&blocks, initial)?))
                } else {
                    svc.gated(inst, || disk.write_blocks(&blocks, initial))
                }
            }),
        )
        .await??;
        Ok(Response::new(pb::WriteBlocksResponse { applied }))
    }

    async fn append_redo(
        &self,
        req: Request<pb::AppendRedoRequest>,
    ) -> Result<Response<pb::AppendRedoResponse>, Status> {
        let req = req.into_inner();
        let disk = self.disk()?;
        let inst = disk.check_instance(req.instance)?;
        self.unfenced(inst)?;
        let codec = *disk.codec();
        let records = req
            .records
            .into_iter()
            .map(|r| codec.decode_redo(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let (bytes, sync) = (req.bytes, req.sync);
        let delay = self.inner.latency.redo(inst);
        let thread_bytes = modeled(
            delay,
            blocking({
                let svc = self.clone();
                move || svc.gated(inst, || disk.append_redo(inst, &records, bytes, sync))
            }),
        )
        .await??;
        Ok(Response::new(pb::AppendRedoResponse { thread_bytes }))
    }

    async fn flush_redo(
        &self,
        req: Request<pb::FlushRedoRequest>,
    ) -> Result<Response<pb::FlushRedoResponse>, Status> {
        let disk = self.disk()?;
        let inst = disk.check_instance(req.into_inner().instance)?;
        blocking(move || disk.flush_redo(inst)).await?;
        Ok(Response::new(pb::FlushRedoResponse {}))
    }

    async fn read_redo(
        &self,
        req: Request<pb::ReadRedoRequest>,
    ) -> Result<Response<pb::ReadRedoResponse>, Status> {
        let disk = self.disk()?;
        let inst = disk.check_instance(req.into_inner().instance)?;
        let codec = *disk.codec();
        let (records, thread_bytes) = blocking(move || disk.read_redo(inst)).await?;
        Ok(Response::new(pb::ReadRedoResponse {
            records: records.iter().map(|r| codec.encode_redo(r)).collect(),
            thread_bytes,
        }))
    }

    async fn set_fault(
        &self,
        req: Request<pb::SetFaultRequest>,
    ) -> Result<Response<pb::SetFaultResponse>, Status> {
        let req = req.into_inner();
        let disk = self.disk()?;
        let inst = disk.check_instance(req.instance)?;
        let device = match pb::Device::try_from(req.device) {
            Ok(pb::Device::Redo) => Device::Redo,
            Ok(pb::Device::Data) => Device::Data,
            _ => {
                return Err(Status::invalid_argument(format!(
                    "field `SetFaultRequest.device` has unknown enum value {}",
                    req.device
                )));
            }
        };
        self.inner
            .latency
            .set_fault(inst, device, req.latency, req.jitter);
        Ok(Response::new(pb::SetFaultResponse {}))
    }

    async fn clear_faults(
        &self,
        _req: Request<pb::ClearFaultsRequest>,
    ) -> Result<Response<pb::ClearFaultsResponse>, Status> {
        self.inner.latency.clear_faults();
        Ok(Response::new(pb::ClearFaultsResponse {}))
    }

    async fn vote(
        &self,
        req: Request<pb::VoteRequest>,
    ) -> Result<Response<pb::VoteResponse>, Status> {
        let req = req.into_inner();
        let disk = self.disk()?;
        let inst = disk.check_instance(req.instance)?;
        let codec = *disk.codec();
        let vote = req
            .vote
            .ok_or_else(|| Status::invalid_argument("field `VoteRequest.vote` is missing"))
            .and_then(|v| {
                codec
                    .decode_vote(v)
                    .map_err(|e| Status::invalid_argument(e.to_string()))
            })?;
        if vote.inst.idx() != inst {
            return Err(Status::invalid_argument(format!(
                "field `VoteRequest.vote.inst`: instance {} writes only its own record, not {}",
                inst + 1,
                vote.inst.number()
            )));
        }
        let votes = {
            let mut voting = self.inner.voting.lock().unwrap_or_else(|p| p.into_inner());
            voting.heartbeat(vote)
        };
        match votes {
            Ok(votes) => Ok(Response::new(pb::VoteResponse {
                votes: votes.iter().map(|v| codec.encode_vote(v)).collect(),
            })),
            Err(_) => self
                .unfenced(inst)
                .map(|()| Response::new(pb::VoteResponse::default())),
        }
    }

    async fn fence(
        &self,
        req: Request<pb::FenceRequest>,
    ) -> Result<Response<pb::FenceResponse>, Status> {
        let req = req.into_inner();
        let disk = self.disk()?;
        let inst = disk.check_instance(req.instance)?;
        self.unfenced(inst)?;
        let victim = disk.check_instance(req.fence)?;
        let victim = u8::try_from(victim)
            .map_err(|_| Status::invalid_argument("field `FenceRequest.fence` is too large"))?;
        let lift = req.lift;
        let svc = self.clone();
        // Exclusive: the victim's writes under way are applied first, and
        // every later one finds the fence (`gated`).
        blocking(move || {
            let gate = svc
                .inner
                .io_gates
                .get(usize::from(victim))
                .map(|g| g.write().unwrap_or_else(|p| p.into_inner()));
            let mut voting = svc.inner.voting.lock().unwrap_or_else(|p| p.into_inner());
            let by =
                u8::try_from(inst).map_or_else(|_| inst.to_string(), |i| InstId(i).to_string());
            if lift {
                voting.unfence(InstId(victim));
                tracing::info!("fence on {} lifted by {by}", InstId(victim));
            } else {
                voting.fence(InstId(victim));
                tracing::warn!("{} fenced by {by}: its writes are refused", InstId(victim));
            }
            drop(voting);
            drop(gate);
            Ok(())
        })
        .await?;
        Ok(Response::new(pb::FenceResponse {}))
    }
}

/// How a fenced instance's calls fail (FAILED_PRECONDITION, this first).
pub const FENCED: &str = "fenced";

/// Serve the block store on `listener` until `shutdown` completes: at most
/// [`STORE_CONNECTIONS_MAX`] connections, accept errors (EMFILE, ...)
/// logged once and retried, every call ended after [`STORE_CALL_TIMEOUT`].
///
/// Accepted connections get TCP_NODELAY: tonic's own `tcp_nodelay` does not
/// apply to `serve_with_incoming`, and without it a block-sized answer waits
/// for Nagle and delayed ACK (about 40 ms).
pub async fn serve(
    listener: TcpListener,
    config: StoreConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), StoreError> {
    let service = StoreService::open(&config)?;
    serve_service(listener, service, &config.token, shutdown).await
}

async fn serve_service(
    listener: TcpListener,
    service: StoreService,
    token: &str,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), StoreError> {
    let what = match listener.local_addr() {
        Ok(a) => format!("block store listener {a}"),
        Err(_) => "block store listener".to_string(),
    };
    // The store's log is its stderr; `status` asks it with Ping.
    let report: Reporter = Arc::new(|news| match news {
        ListenerNews::Trouble(m) => tracing::warn!("{m}"),
        ListenerNews::Recovered(m) => tracing::info!("{m}"),
    });
    let incoming = Acceptor::new(listener, what, STORE_CONNECTIONS_MAX, report).into_incoming();
    grpc_server(STORE_CALL_TIMEOUT, STORE_CALLS_PER_CONNECTION_MAX)
        .add_service(service.into_server(token))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}

/// A store served on a background task (tests, examples, an in-process
/// cluster).
pub struct StoreHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), StoreError>>,
}

impl StoreHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting, let calls in flight finish (at most `grace`), then
    /// stop. Connections that stay open (a client still alive) are cut.
    pub async fn shutdown(mut self, grace: Duration) -> Result<(), StoreError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match tokio::time::timeout(grace, &mut self.task).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Ok(()), // aborted or panicked: nothing left to wait for
            Err(_) => {
                self.task.abort();
                Ok(())
            }
        }
    }
}

impl Drop for StoreHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serve the store on `listener` on a background task.
pub fn spawn(listener: TcpListener, config: StoreConfig) -> Result<StoreHandle, StoreError> {
    let addr = listener.local_addr().map_err(|source| StoreError::Io {
        path: config.dir.clone(),
        what: "listener address for store",
        source,
    })?;
    // Open before spawning so a bad directory is reported to the caller.
    let service = StoreService::open(&config)?;
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        serve_service(listener, service, &config.token, async {
            let _ = rx.await;
        })
        .await
    });
    Ok(StoreHandle {
        addr,
        stop: Some(tx),
        task,
    })
}
