//! `fusionlab probe`: one authenticated call to a block store or an
//! instance's admin service, with a short deadline, for container
//! healthchecks (the image has no shell and no curl; the binary checks
//! itself). Exit status 0 when the service answered, 1 when it did not.
//! With a cluster file, its store and every instance are called; with
//! `--wait`, the calls are tried again every second until all answer or the
//! time is up (a Kubernetes job's init container waiting for its cluster).

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fusion_live::admin_client::Admin;
use fusion_live::cluster::{ClusterFile, TOKEN_ENV, TOKEN_FILE_ENV};
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
    /// The store and every instance a cluster file names.
    Cluster(PathBuf),
}

/// How long `--wait` sleeps between two rounds of calls.
const RETRY_EVERY: Duration = Duration::from_secs(1);

impl Target {
    /// From `--store`, `--admin` and `--cluster`: exactly one of them.
    pub fn new(
        store: Option<String>,
        admin: Option<String>,
        cluster: Option<PathBuf>,
    ) -> Result<Target, Failure> {
        match (store, admin, cluster) {
            (Some(s), None, None) => Ok(Target::Store(s)),
            (None, Some(a), None) => Ok(Target::Admin(a)),
            (None, None, Some(c)) => Ok(Target::Cluster(c)),
            _ => Err(Failure::input(
                "fusionlab probe: give one of --store ADDR, --admin ADDR and --cluster FILE",
            )),
        }
    }

    /// The single services to call (a cluster file read once: a bad one is
    /// bad input, not a service that does not answer).
    fn services(&self) -> Result<Vec<Target>, Failure> {
        match self {
            Target::Cluster(f) => {
                let c = ClusterFile::read(f).map_err(Failure::input)?;
                Ok(std::iter::once(Target::Store(c.store.address.clone()))
                    .chain(c.instances.iter().map(|m| Target::Admin(m.admin.clone())))
                    .collect())
            }
            t => Ok(vec![t.clone()]),
        }
    }
}

/// Call every service of `target` with `timeout` for connecting and
/// answering together, again every second while one does not answer and
/// `wait` is not over; print one line per service saying what answered (or
/// why not, for the last round).
pub fn probe(
    target: &Target,
    timeout: Duration,
    wait: Duration,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    if timeout.is_zero() {
        return Err(Failure::input("--timeout-ms must be above 0").into());
    }
    let token = fusion_live::cluster::token_from_env()
        .map_err(|e| Failure::input(format!("fusionlab probe: {e}")))?
        .ok_or_else(|| {
            Failure::input(format!(
                "fusionlab probe: set the cluster token in the environment variable \
                 {TOKEN_ENV}, or name a file that holds it in {TOKEN_FILE_ENV}"
            ))
        })?;
    let services = target.services()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let end = Instant::now() + wait;
    let mut answered = vec![None; services.len()];
    loop {
        let mut failed = Vec::new();
        for (t, done) in services.iter().zip(answered.iter_mut()) {
            if done.is_some() {
                continue;
            }
            let answer = rt.block_on(async {
                match tokio::time::timeout(timeout, call(t, &token, timeout)).await {
                    Ok(r) => r,
                    Err(_) => Err(format!("{}: no answer within {timeout:?}", name(t))),
                }
            });
            match answer {
                Ok(line) => *done = Some(line),
                Err(why) => failed.push(why),
            }
        }
        if failed.is_empty() {
            for line in answered.iter().flatten() {
                writeln!(out, "{line}")?;
            }
            return Ok(exit::OK);
        }
        if Instant::now() + RETRY_EVERY > end {
            for line in answered.iter().flatten() {
                writeln!(out, "{line}")?;
            }
            for why in failed {
                writeln!(err, "fusionlab probe: {why}")?;
            }
            return Ok(NOT_ANSWERING);
        }
        std::thread::sleep(RETRY_EVERY);
    }
}

/// Each call's deadline while `run --live --wait-for-cluster` waits.
const WAIT_CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// Wait until the store and every instance of a cluster file answer, up to
/// `wait` (`run --live --wait-for-cluster`): a live failure if they do not.
pub fn wait_for_cluster(file: &std::path::Path, wait: Duration, err: &mut dyn Write) -> Result<()> {
    let target = Target::Cluster(file.to_path_buf());
    let code = probe(&target, WAIT_CALL_TIMEOUT, wait, &mut std::io::sink(), err)?;
    if code == exit::OK {
        return Ok(());
    }
    Err(Failure {
        code: exit::LIVE_FAILED,
        message: format!(
            "fusionlab run: the cluster of {} did not answer within {wait:?}",
            file.display()
        ),
    }
    .into())
}

fn name(target: &Target) -> String {
    match target {
        Target::Store(a) => format!("block store at {a}"),
        Target::Admin(a) => format!("instance admin service at {a}"),
        Target::Cluster(f) => format!("cluster {}", f.display()),
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
        Target::Cluster(_) => Err("a cluster is called service by service".to_string()),
    }
}
