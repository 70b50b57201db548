//! The async runtime the live commands run their clients on.

use anyhow::{Context, Result};

/// A runtime of two worker threads for the live commands' clients.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
