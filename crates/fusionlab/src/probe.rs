//! `fusionlab probe`: one authenticated call to a block store or an
//! instance's admin service, with a short deadline, for container
//! healthchecks (the image has no shell and no curl; the binary checks
//! itself). Exit status 0 when the service answered, 1 when it did not.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result};
use fusion_live::admin_client::Admin;
use fusion_live::cluster::TOKEN_ENV;
use fusion_store::{ClientErrorKind, StoreClient};

use crate::{Failure, exit};

/// Exit status of a probe whose service did not answer (what Docker reads
/// as "unhealthy").
pub const NOT_ANSWERING: u8 = 1;

/// What to probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A block store at `host:port`: its `Info` call.
    Store(String),
    /// An instance's admin service at `host:port`: its `Status` call.
    Admin(String),
}

impl Target {
    /// From `--store` and `--admin`: exactly one of them.
    pub fn new(store: Option<String>, admin: Option<String>) -> Result<Target, Failure> {
        match (store, admin) {
            (Some(s), None) => Ok(Target::Store(s)),
            (None, Some(a)) => Ok(Target::Admin(a)),
            _ => Err(Failure::input(
                "fusionlab probe: give one of --store ADDR and --admin ADDR",
            )),
        }
    }
}

/// Make one call to `target` with `timeout` for connecting and answering
/// together; print one line saying what answered (or why not).
pub fn probe(
    target: &Target,
    timeout: Duration,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    if timeout.is_zero() {
        return Err(Failure::input("--timeout-ms must be above 0").into());
    }
    let token = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            Failure::input(format!(
                "fusionlab probe: set the cluster token in the environment variable {TOKEN_ENV}"
            ))
        })?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let answer = rt.block_on(async {
        match tokio::time::timeout(timeout, call(target, &token, timeout)).await {
            Ok(r) => r,
            Err(_) => Err(format!("{}: no answer within {timeout:?}", name(target))),
        }
    });
    match answer {
        Ok(line) => {
            writeln!(out, "{line}")?;
            Ok(exit::OK)
        }
        Err(why) => {
            writeln!(err, "fusionlab probe: {why}")?;
            Ok(NOT_ANSWERING)
        }
    }
}

fn name(target: &Target) -> String {
    match target {
        Target::Store(a) => format!("block store at {a}"),
        Target::Admin(a) => format!("instance admin service at {a}"),
    }
}

async fn call(target: &Target, token: &str, timeout: Duration) -> Result<String, String> {
    match target {
        Target::Store(addr) => {
            let c = StoreClient::connect(addr.as_str(), token, timeout)
                .await
                .map_err(|e| e.to_string())?;
            match c.info().await {
                Ok(i) => Ok(format!(
                    "{}: answers (formatted, {} blocks of {} bytes)",
                    name(target),
                    i.geometry.total_blocks,
                    i.geometry.block_size
                )),
                // It answered, with the token accepted: a store that waits
                // for its first run is healthy.
                Err(e)
                    if matches!(
                        e.kind,
                        ClientErrorKind::Status {
                            code: tonic::Code::FailedPrecondition,
                            ..
                        }
                    ) =>
                {
                    Ok(format!("{}: answers (not formatted yet)", name(target)))
                }
                Err(e) => Err(e.to_string()),
            }
        }
        Target::Admin(addr) => {
            let a = Admin::new("instance", addr, token)?;
            let s = a.status(timeout).await?;
            Ok(format!(
                "{}: answers ({})",
                a.who,
                if s.loaded {
                    format!("scenario {}", s.scenario)
                } else {
                    "no scenario loaded".to_string()
                }
            ))
        }
    }
}
