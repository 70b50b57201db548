//! The instance side of the block store: the I/O the core asks for, as
//! store calls with a deadline each, and their results back to the host.

use std::time::Duration;

use fusion_core::msg::{Io, IoResult};
use fusion_core::types::InstId;
use fusion_wire::pb::block_store_client::BlockStoreClient;
use fusion_wire::pb::{AppendRedoRequest, ReadBlocksRequest, WriteBlocksRequest};
use fusion_wire::{Codec, TOKEN_METADATA};
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

/// Longest a store call may take before the instance reports it (modeled
/// latencies of slow-disk faults stay far below this).
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct Store {
    client: BlockStoreClient<Channel>,
    token: MetadataValue<tonic::metadata::Ascii>,
    address: String,
    codec: Codec,
    me: InstId,
    /// The run this client's calls belong to (`RUN_METADATA`), if any.
    run: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Store {
    /// A lazily connected client: the first call connects. Call it inside a
    /// tokio runtime (the channel's connection task needs one).
    pub fn new(address: &str, token: &str, codec: Codec, me: InstId) -> Result<Store, String> {
        let channel = Endpoint::from_shared(format!("http://{address}"))
            .map_err(|e| format!("bad store address {address:?}: {e}"))?
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(2))
            .connect_lazy();
        let token = token
            .parse()
            .map_err(|_| "the cluster token is not valid metadata".to_string())?;
        Ok(Store {
            client: BlockStoreClient::new(channel).max_decoding_message_size(64 << 20),
            token,
            address: address.to_string(),
            codec,
            me,
            run: None,
        })
    }

    /// The calls of this client belong to `run`: once the store is
    /// formatted for another run, they are refused (an instance host of an
    /// earlier variant must not write into the next one's files).
    pub fn for_run(mut self, run: u64) -> Store {
        self.run = run.to_string().parse().ok();
        self
    }

    fn request<T>(&self, msg: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(msg);
        r.metadata_mut().insert(TOKEN_METADATA, self.token.clone());
        if let Some(run) = &self.run {
            r.metadata_mut()
                .insert(fusion_wire::RUN_METADATA, run.clone());
        }
        r.set_timeout(IO_TIMEOUT);
        r
    }

    /// Perform one I/O of the core. A call the store refuses because this
    /// instance was fenced (evicted) is [`IoResult::Fenced`]: the core stops.
    pub async fn perform(&self, io: Io) -> Result<IoResult, String> {
        match self.perform_call(io).await {
            Err((code, message))
                if code == tonic::Code::FailedPrecondition
                    && message.starts_with(fusion_store::FENCED) =>
            {
                Ok(IoResult::Fenced)
            }
            Err((_, message)) => Err(message),
            Ok(r) => Ok(r),
        }
    }

    async fn perform_call(&self, io: Io) -> Result<IoResult, (tonic::Code, String)> {
        let mut c = self.client.clone();
        let me = u32::from(self.me.0);
        let what = match &io {
            Io::ReadBlock { blk } => format!("read of {blk}"),
            Io::ReadBlocks { first, count } => format!("read of {count} blocks from {first}"),
            Io::WriteBlock { block } => format!("write of {}", block.addr),
            Io::WriteRedo { records, .. } => format!("redo write of {} records", records.len()),
            Io::Vote { .. } => "disk heartbeat".to_string(),
            Io::Fence { inst } => format!("fence of {inst}"),
            Io::Unfence { inst } => format!("lifting the fence of {inst}"),
            Io::ReadRedo { thread } => format!("read of redo thread {}", thread.number()),
        };
        let fail = |s: tonic::Status| {
            if s.code() == tonic::Code::FailedPrecondition {
                return (s.code(), s.message().to_string());
            }
            (
                s.code(),
                format!(
                    "{}: store at {}: {what} failed: {} ({:?})",
                    self.me,
                    self.address,
                    s.message(),
                    s.code()
                ),
            )
        };
        let bad = |m: String| (tonic::Code::Internal, m);
        match io {
            Io::ReadBlock { blk } => {
                let r = c
                    .read_blocks(self.request(ReadBlocksRequest {
                        instance: me,
                        blks: vec![blk.0],
                    }))
                    .await
                    .map_err(fail)?
                    .into_inner();
                let bytes = r.blocks.first().ok_or_else(|| {
                    bad(format!("{}: store returned no image for {blk}", self.me))
                })?;
                let block = self
                    .codec
                    .decode_block("ReadBlocksResponse.blocks", bytes)
                    .map_err(|e| {
                        bad(format!("{}: store sent a bad image of {blk}: {e}", self.me))
                    })?;
                Ok(IoResult::Read(Box::new(block)))
            }
            Io::ReadBlocks { first, count } => {
                // One call is one I/O at the store, as one multiblock read.
                let blks: Vec<u32> = (first.0..first.0.saturating_add(count)).collect();
                let r = c
                    .read_blocks(self.request(ReadBlocksRequest {
                        instance: me,
                        blks: blks.clone(),
                    }))
                    .await
                    .map_err(fail)?
                    .into_inner();
                if r.blocks.len() != blks.len() {
                    return Err(bad(format!(
                        "{}: store returned {} images for {count} blocks from {first}",
                        self.me,
                        r.blocks.len()
                    )));
                }
                let mut out = Vec::with_capacity(blks.len());
                for (bytes, want) in r.blocks.iter().zip(&blks) {
                    let block = self
                        .codec
                        .decode_block("ReadBlocksResponse.blocks", bytes)
                        .map_err(|e| {
                            bad(format!(
                                "{}: store sent a bad image of dba {want}: {e}",
                                self.me
                            ))
                        })?;
                    if block.addr.0 != *want {
                        return Err(bad(format!(
                            "{}: store sent dba {} for dba {want}",
                            self.me, block.addr.0
                        )));
                    }
                    out.push(block);
                }
                Ok(IoResult::ReadMany(out))
            }
            Io::WriteBlock { block } => {
                c.write_blocks(self.request(WriteBlocksRequest {
                    instance: me,
                    blocks: vec![self.codec.encode_block(&block)],
                    initial: false,
                }))
                .await
                .map_err(fail)?;
                Ok(IoResult::Written)
            }
            Io::WriteRedo { records, bytes, .. } => {
                c.append_redo(self.request(AppendRedoRequest {
                    instance: me,
                    records: records.iter().map(|r| self.codec.encode_redo(r)).collect(),
                    bytes,
                    sync: true,
                }))
                .await
                .map_err(fail)?;
                Ok(IoResult::Written)
            }
            Io::Vote { vote } => {
                let r = c
                    .vote(self.request(fusion_wire::pb::VoteRequest {
                        instance: me,
                        vote: Some(self.codec.encode_vote(&vote)),
                    }))
                    .await
                    .map_err(fail)?
                    .into_inner();
                let votes = r
                    .votes
                    .into_iter()
                    .map(|v| self.codec.decode_vote(v))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| bad(format!("{}: store sent a bad vote: {e}", self.me)))?;
                Ok(IoResult::Votes(votes))
            }
            Io::Fence { inst } | Io::Unfence { inst } => {
                let lift = matches!(io, Io::Unfence { .. });
                c.fence(self.request(fusion_wire::pb::FenceRequest {
                    instance: me,
                    fence: u32::from(inst.0),
                    lift,
                }))
                .await
                .map_err(fail)?;
                Ok(IoResult::Written)
            }
            Io::ReadRedo { thread } => {
                let r = c
                    .read_redo(self.request(fusion_wire::pb::ReadRedoRequest {
                        instance: u32::from(thread.0),
                    }))
                    .await
                    .map_err(fail)?
                    .into_inner();
                let records = r
                    .records
                    .into_iter()
                    .map(|rec| self.codec.decode_redo(rec))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| bad(format!("{}: store sent a bad redo record: {e}", self.me)))?;
                Ok(IoResult::Redo(records))
            }
        }
    }
}

impl Store {
    /// Erase the store and give it the geometry of a scenario.
    pub async fn format(
        &self,
        block_size: u32,
        total_blocks: u32,
        instances: u32,
        model: &fusion_scenario::StorageModel,
        run: u64,
    ) -> Result<(), String> {
        let mut c = self.client.clone();
        c.format(self.request(fusion_wire::pb::FormatRequest {
            geometry: Some(fusion_wire::pb::Geometry {
                block_size,
                total_blocks,
                instances,
            }),
            model: Some(fusion_wire::pb::StorageModel {
                read_latency: model.read_latency,
                write_latency: model.write_latency,
                log_write_latency: model.log_write_latency,
                iops: model.iops,
            }),
            run,
        }))
        .await
        .map_err(|s| format!("store at {}: format: {}", self.address, s.message()))?;
        Ok(())
    }

    /// Write the initial images of every block (no modeled latency).
    pub async fn load_initial(&self, blocks: &[fusion_core::block::Block]) -> Result<(), String> {
        for chunk in blocks.chunks(256) {
            let mut c = self.client.clone();
            c.write_blocks(self.request(WriteBlocksRequest {
                instance: 0,
                blocks: chunk.iter().map(|b| self.codec.encode_block(b)).collect(),
                initial: true,
            }))
            .await
            .map_err(|s| {
                format!(
                    "store at {}: loading initial blocks: {}",
                    self.address,
                    s.message()
                )
            })?;
        }
        Ok(())
    }

    /// Every block, in address order (for the end-of-run checks), read in
    /// the name of instance index `instance` (the store refuses a fenced one).
    pub async fn read_all(
        &self,
        instance: u32,
        total: u32,
    ) -> Result<Vec<fusion_core::block::Block>, String> {
        let mut out = Vec::with_capacity(total as usize);
        let all: Vec<u32> = (0..total).collect();
        for chunk in all.chunks(256) {
            let mut c = self.client.clone();
            let r = c
                .read_blocks(self.request(ReadBlocksRequest {
                    instance,
                    blks: chunk.to_vec(),
                }))
                .await
                .map_err(|s| format!("store at {}: reading blocks: {}", self.address, s.message()))?
                .into_inner();
            for bytes in &r.blocks {
                out.push(
                    self.codec
                        .decode_block("ReadBlocksResponse.blocks", bytes)
                        .map_err(|e| format!("store at {}: {e}", self.address))?,
                );
            }
        }
        Ok(out)
    }

    /// Redo records of one instance's thread, as durably written.
    pub async fn read_redo(&self, inst: u32) -> Result<Vec<fusion_core::msg::RedoRecord>, String> {
        let mut c = self.client.clone();
        let r = c
            .read_redo(self.request(fusion_wire::pb::ReadRedoRequest { instance: inst }))
            .await
            .map_err(|s| {
                format!(
                    "store at {}: reading redo of thread {}: {}",
                    self.address,
                    inst + 1,
                    s.message()
                )
            })?
            .into_inner();
        r.records
            .into_iter()
            .map(|x| self.codec.decode_redo(x).map_err(|e| e.to_string()))
            .collect()
    }

    /// Apply a phase's disk faults (clearing the previous phase's).
    pub async fn set_faults(&self, faults: &[fusion_scenario::Fault]) -> Result<(), String> {
        use fusion_wire::pb::{ClearFaultsRequest, Device, SetFaultRequest};
        let mut c = self.client.clone();
        let err =
            |s: tonic::Status| format!("store at {}: disk fault: {}", self.address, s.message());
        c.clear_faults(self.request(ClearFaultsRequest {}))
            .await
            .map_err(err)?;
        for f in faults {
            if let fusion_scenario::Fault::DiskLatency {
                instance,
                device,
                latency,
                jitter,
            } = f
            {
                let device = match device {
                    fusion_scenario::Device::Redo => Device::Redo,
                    fusion_scenario::Device::Data => Device::Data,
                };
                c.set_fault(self.request(SetFaultRequest {
                    instance: u32::from(instance.saturating_sub(1)),
                    device: device as i32,
                    latency: *latency,
                    jitter: *jitter,
                }))
                .await
                .map_err(err)?;
            }
        }
        Ok(())
    }

    /// Whether the store answers (its `Ping`: touches no file), within 2 s.
    pub async fn ping(&self) -> Result<(), String> {
        let mut c = self.client.clone();
        let mut r = self.request(fusion_wire::pb::PingRequest {});
        r.set_timeout(Duration::from_secs(2));
        c.ping(r)
            .await
            .map(|_| ())
            .map_err(|s| format!("block store {}: {}", self.address, s.message()))
    }
}
