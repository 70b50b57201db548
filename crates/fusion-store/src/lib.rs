//! The block store of Fusionlab's live cluster: the shared disk that RAC
//! instances see, as one process serving gRPC `BlockStore`
//! (`fusion_wire::pb`).
//!
//! It holds the datafile blocks and one redo thread per instance in real
//! files under a data directory ([`Disk`]: pread/pwrite, and `sync_data`
//! before any write or flush is acknowledged unless [`Durability`] says
//! the kernel having it is enough), so what an instance was told is written
//! survives that instance, or the store, being killed, and a store reopened
//! on the same directory serves it again. Each call takes the scenario's
//! modeled storage latency ([`LatencyModel`], the simulator's
//! `StorageModel`) or a `disk_latency` fault's, the real I/O inside it, so a
//! live run and a simulated one see the same storage.
//!
//! - Server: [`serve`] (on a `TcpListener` the caller binds; TCP_NODELAY on
//!   every connection; every call must carry the shared token in metadata
//!   `x-fusionlab-token`) or [`spawn`] for a background task.
//! - Client: [`StoreClient`], with a deadline on every call and errors that
//!   name the store, the call, and timeout vs refused; [`StoreClient::io`]
//!   performs an instance's `Action::Io` directly.
//! - Loading: [`StoreClient::format`] then [`StoreClient::load_images`] with
//!   `fusion_core::layout::Layout::initial_blocks()`.

mod client;
mod disk;
mod error;
mod latency;
mod server;

pub use client::{ClientError, ClientErrorKind, StoreClient, StoreInfo, StorePing};
pub use disk::{BLOCK_SIZE_MAX, BLOCK_SIZE_MIN, Disk, Durability, Geometry, TOTAL_BLOCKS_MAX};
pub use error::StoreError;
pub use latency::{Device, LatencyModel};
pub use server::{
    AuthedStore, FENCED, MESSAGE_BYTES_MAX, STORE_CALL_TIMEOUT, STORE_CALLS_PER_CONNECTION_MAX,
    STORE_CONNECTIONS_MAX, StoreConfig, StoreHandle, StoreService, TokenCheck, serve, spawn,
};
