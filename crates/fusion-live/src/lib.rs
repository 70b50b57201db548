//! The live runtime: instance processes that drive the same sans-IO core as
//! the simulator, over gRPC, sharing a block store process; the launcher of a
//! local cluster (`fusionlab up/status/down`) and the live scenario runner
//! (`fusionlab run --live`). See docs/live-cluster.md.

pub mod admin_client;
mod answers;
pub mod clock;
pub mod cluster;
pub mod command;
pub mod deadline;
mod drain;
pub mod host;
pub mod journal;
pub mod links;
pub mod lives;
pub mod metrics;
pub mod netfault;
mod nextvals;
mod observation_codec;
mod pace;
mod phase_watch;
pub mod process;
pub mod runner;
mod rx_stamp;
mod variant_run;

/// Most instances a cluster may have (the wire protocol's limit).
pub const INSTANCES_MAX: u32 = fusion_wire::INSTANCES_MAX;
mod stats_codec;
pub mod store_client;

/// Generated admin service types (proto/admin.proto).
pub mod pb {
    tonic::include_proto!("fusionlab.admin.v1");
}

/// Check the shared token of an admin or store call.
pub fn check_token(
    req: &tonic::Request<()>,
    token: &str,
) -> Result<tonic::Request<()>, tonic::Status> {
    let given = req
        .metadata()
        .get(fusion_wire::TOKEN_METADATA)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if fusion_wire::constant_time_eq(given.as_bytes(), token.as_bytes()) {
        Ok(tonic::Request::from_parts(
            req.metadata().clone(),
            req.extensions().clone(),
            (),
        ))
    } else {
        Err(tonic::Status::unauthenticated(
            "missing or wrong cluster token (x-fusionlab-token)",
        ))
    }
}
