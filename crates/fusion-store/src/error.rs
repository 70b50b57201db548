//! Errors of the store (server side) and how they map to gRPC statuses.

use std::io;
use std::path::PathBuf;

use thiserror::Error;
use tonic::Status;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("{} is corrupt: {what}", path.display())]
    Corrupt { path: PathBuf, what: String },
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("{0}")]
    OutOfRange(String),
    #[error("the store is not formatted (call Format first)")]
    NotFormatted,
    #[error("server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

impl StoreError {
    pub(crate) fn invalid(msg: String) -> StoreError {
        StoreError::Invalid(msg)
    }
}

impl From<StoreError> for Status {
    fn from(e: StoreError) -> Status {
        let msg = e.to_string();
        match e {
            StoreError::Io { .. } | StoreError::Transport(_) => Status::internal(msg),
            StoreError::Corrupt { .. } => Status::data_loss(msg),
            StoreError::Invalid(_) => Status::invalid_argument(msg),
            StoreError::OutOfRange(_) => Status::out_of_range(msg),
            StoreError::NotFormatted => Status::failed_precondition(msg),
        }
    }
}
