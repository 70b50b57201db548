//! The wire protocol of Fusionlab's live cluster.
//!
//! The live runtime drives the same sans-IO `fusion_core::instance::Instance`
//! as the simulator, but over real processes: its `Action::Send` envelopes go
//! to peers as length-prefixed protobuf frames on plain TCP connections
//! ([`framing`]), and its `Action::Io`
//! requests go to the block store process over `BlockStore`. This crate holds
//! the one definition of both (`proto/fusion.proto`, compiled by `build.rs`
//! with protox, so no system `protoc` is needed), lossless conversions
//! between core and protobuf types ([`Codec`], and `From`/`TryFrom` impls),
//! and the binary block encoding that shipped blocks and datafile slots use
//! ([`encode_block`], [`decode_block`]).
//!
//! Every server of the cluster takes its connections through an
//! [`accept::Acceptor`] (accept errors retried, connections limited).
//!
//! Decoding never trusts a peer: every missing oneof, unknown enum value and
//! out-of-range id is a [`WireError`] naming the field, never a panic.

pub mod accept;
mod block;
mod convert;
mod convert_deadlock;
mod convert_drm;
mod convert_px;
mod convert_reconfig;
mod convert_redo;
mod crc;
pub mod framing;

/// Generated protobuf types, clients (`*_client`) and servers (`*_server`)
/// of package `fusionlab.v1`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("fusionlab.v1");
}

pub use block::{
    BLOCK_FORMAT_VERSION, BLOCK_HEADER_LEN, BlockError, BlockProblem, decode_block, encode_block,
    encode_block_into, image_len, is_blank, oversize_blocks,
};
pub use convert::{Codec, INSTANCES_MAX, Limits, WireError};
pub use crc::crc32;

/// Version of this protocol, exchanged in `Hello`; peers must agree.
pub const PROTOCOL_VERSION: u32 = 3;

/// gRPC metadata key carrying the shared token on every block-store call.
pub const TOKEN_METADATA: &str = "x-fusionlab-token";

/// gRPC metadata key carrying the run an instance was loaded for on its
/// block-store calls: once the store is formatted for a run, a call of
/// another one (an instance host of the last variant still writing) is
/// refused.
pub const RUN_METADATA: &str = "x-fusionlab-run";

impl pb::Hello {
    /// The first frame an instance sends on an interconnect connection,
    /// loaded for `run`.
    pub fn new(instance: fusion_core::types::InstId, cluster_token: &str, run: u64) -> pb::Hello {
        pb::Hello {
            instance: u32::from(instance.0),
            cluster_token: cluster_token.to_string(),
            protocol_version: PROTOCOL_VERSION,
            run,
        }
    }
}

impl Codec {
    /// Check a peer's `Hello` (token, protocol version, instance id) and
    /// return who it is.
    pub fn check_hello(
        &self,
        hello: &pb::Hello,
        cluster_token: &str,
    ) -> Result<fusion_core::types::InstId, WireError> {
        if !constant_time_eq(hello.cluster_token.as_bytes(), cluster_token.as_bytes()) {
            return Err(WireError::Rejected {
                field: "Hello.cluster_token",
                reason: "does not match this cluster's token".to_string(),
            });
        }
        if hello.protocol_version != PROTOCOL_VERSION {
            return Err(WireError::Rejected {
                field: "Hello.protocol_version",
                reason: format!(
                    "peer speaks version {}, this build {PROTOCOL_VERSION}",
                    hello.protocol_version
                ),
            });
        }
        self.limits.inst("Hello.instance", hello.instance)
    }
}

/// Compare secrets without leaking where they differ through timing.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
