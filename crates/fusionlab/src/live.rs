//! The live cluster commands: `store` and `instance` (the processes `up`
//! starts, or containers run), `up`, `status`, `down`, and `run --live`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use comfy_table::{Table, presets::ASCII_FULL_CONDENSED};
use fusion_core::types::InstId;
use fusion_driver::Driver;
use fusion_live::admin_client::Admin;
use fusion_live::cluster::{self, ClusterFile, TOKEN_ENV, UpOptions};
use fusion_live::lives::{LocalProcesses, ProcessControl};
use fusion_live::runner::{self, LiveRun};

use crate::args::RunArgs;
use crate::commands::check_phases;
use crate::memory::MemoryLimit;
use crate::shipped;
use crate::{Failure, exit};

/// Where `up` puts a cluster and `status`/`down` look for it by default.
pub const DEFAULT_DIR: &str = ".fusionlab";

/// The cluster file of a cluster directory.
pub fn cluster_file(cluster_dir: &Path) -> PathBuf {
    cluster_dir.join("cluster.toml")
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn token_from_env() -> Result<String, Failure> {
    std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            Failure::input(format!(
                "set the cluster token in the environment variable {TOKEN_ENV}"
            ))
        })
}

async fn bind(addr: &str, what: &str) -> Result<tokio::net::TcpListener> {
    let a: SocketAddr = addr.parse().map_err(|_| {
        Failure::input(format!(
            "--{what} {addr}: not an address like 127.0.0.1:7001"
        ))
    })?;
    tokio::net::TcpListener::bind(a)
        .await
        .with_context(|| format!("cannot listen on {addr} ({what})"))
}

/// Stop on SIGTERM or Ctrl-C.
async fn terminated() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// `fusionlab store`: serve the block store.
pub fn store(
    listen: &str,
    store_dir: &Path,
    addr_file: Option<&Path>,
    err: &mut dyn Write,
) -> Result<u8> {
    let token = token_from_env()?;
    let rt = runtime()?;
    rt.block_on(async {
        let l = bind(listen, "listen").await?;
        let addr = l.local_addr()?;
        if let Some(f) = addr_file {
            cluster::write_addr_file(f, &[addr]).map_err(Failure::input)?;
        }
        writeln!(
            err,
            "fusionlab store: listening on {addr}, files in {}",
            store_dir.display()
        )?;
        let config = fusion_store::StoreConfig::new(store_dir, token);
        fusion_store::serve(l, config, terminated())
            .await
            .map_err(|e| anyhow::anyhow!("store: {e}"))?;
        Ok(exit::OK)
    })
}

/// `fusionlab instance`: serve one instance (interconnect and admin).
pub fn instance(
    id: u8,
    interconnect: &str,
    admin: &str,
    addr_file: Option<&Path>,
    err: &mut dyn Write,
) -> Result<u8> {
    if id == 0 || u32::from(id) > fusion_wire_max() {
        return Err(Failure::input(format!(
            "--id {id}: instance ids are 1..={}",
            fusion_wire_max()
        ))
        .into());
    }
    let token = token_from_env()?;
    // One thread for the network and the admin service: the HTTP/2 tasks of
    // a message then hand it to each other without waking another thread
    // (the host thread runs the instance beside it).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let ic = bind(interconnect, "interconnect").await?;
        let ad = bind(admin, "admin").await?;
        let (ica, ada) = (ic.local_addr()?, ad.local_addr()?);
        if let Some(f) = addr_file {
            cluster::write_addr_file(f, &[ica, ada]).map_err(Failure::input)?;
        }
        writeln!(
            err,
            "fusionlab instance {id}: interconnect {ica}, admin {ada}"
        )?;
        let opts = fusion_live::process::InstanceOptions {
            id: InstId(id - 1),
            token,
        };
        tokio::select! {
            r = fusion_live::process::serve(opts, ic, ad) => r.map_err(|e| anyhow::anyhow!(e))?,
            _ = terminated() => {}
        }
        Ok(exit::OK)
    })
}

fn fusion_wire_max() -> u32 {
    fusion_live::MAX_INSTANCES
}

/// `fusionlab up`: start a local cluster and write its cluster file.
pub fn up(instances: u8, cluster_dir: &Path, base_port: u16, out: &mut dyn Write) -> Result<u8> {
    let file = cluster_file(cluster_dir);
    if file.exists()
        && let Ok(c) = ClusterFile::read(&file)
        && c.instances.iter().any(|m| cluster::alive(m.pid))
    {
        return Err(Failure::input(format!(
            "a cluster is already up ({}); `fusionlab down` first",
            file.display()
        ))
        .into());
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let cluster_dir =
        std::path::absolute(cluster_dir).unwrap_or_else(|_| cluster_dir.to_path_buf());
    let c = cluster::up(&UpOptions {
        instances,
        dir: cluster_dir.clone(),
        base_port,
        exe,
    })
    .map_err(|e| Failure {
        code: exit::LIVE_FAILED,
        message: format!("fusionlab up: {e}"),
    })?;
    c.write(&file).map_err(Failure::input)?;
    writeln!(
        out,
        "block store  {}  (pid {})",
        c.store.address, c.store.pid
    )?;
    for m in &c.instances {
        writeln!(
            out,
            "inst{}        interconnect {}  admin {}  (pid {})",
            m.id, m.interconnect, m.admin, m.pid
        )?;
    }
    writeln!(out, "cluster file {}", file.display())?;
    writeln!(out, "logs         {}", cluster_dir.display())?;
    Ok(exit::OK)
}

/// `fusionlab status`: one line per process.
pub fn status(file: &Path, out: &mut dyn Write) -> Result<u8> {
    let c = ClusterFile::read(file).map_err(Failure::input)?;
    let rt = runtime()?;
    let rows = rt.block_on(async {
        let mut rows = Vec::new();
        for m in &c.instances {
            let name = format!("inst{}", m.id);
            let a = Admin::new(&name, &m.admin, &c.token);
            let s = match a {
                Ok(a) => a.status(Duration::from_secs(2)).await,
                Err(e) => Err(e),
            };
            rows.push((m.clone(), s));
        }
        rows
    });
    let mut t = Table::new();
    t.load_style(ASCII_FULL_CONDENSED);
    t.set_header(vec![
        "instance",
        "pid",
        "alive",
        "scenario",
        "buffers",
        "LMS",
        "active",
        "waiting on",
        "links",
        "problems",
    ]);
    let mut down = 0;
    for (m, s) in rows {
        match s {
            Ok(s) => {
                let waits = s
                    .waits
                    .iter()
                    .map(|w| format!("{} ({})", w.event, w.sessions))
                    .collect::<Vec<_>>()
                    .join(", ");
                let up = s.links.iter().filter(|l| l.up).count();
                t.add_row(vec![
                    format!("inst{}", m.id),
                    s.pid.to_string(),
                    "yes".into(),
                    if s.loaded {
                        s.scenario.clone()
                    } else {
                        "(none loaded)".into()
                    },
                    format!("{}/{}", s.buffers_used, s.buffers),
                    s.lms.to_string(),
                    s.active_sessions.to_string(),
                    waits,
                    format!("{up}/{}", s.links.len()),
                    s.errors.len().to_string(),
                ]);
            }
            Err(e) => {
                down += 1;
                t.add_row(vec![
                    format!("inst{}", m.id),
                    m.pid.to_string(),
                    "NO".into(),
                    e,
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    writeln!(out, "{t}")?;
    let store_alive = c.store.pid == 0 || cluster::alive(c.store.pid);
    writeln!(
        out,
        "block store {} (pid {}): {}",
        c.store.address,
        c.store.pid,
        if store_alive { "alive" } else { "NOT RUNNING" }
    )?;
    Ok(if down == 0 && store_alive {
        exit::OK
    } else {
        exit::LIVE_FAILED
    })
}

/// `fusionlab down`: stop every process of the cluster and remove its file.
pub fn down(file: &Path, out: &mut dyn Write) -> Result<u8> {
    let c = ClusterFile::read(file).map_err(Failure::input)?;
    stop_cluster(&c);
    let _ = std::fs::remove_file(file);
    writeln!(
        out,
        "stopped {} instances and the block store",
        c.instances.len()
    )?;
    Ok(exit::OK)
}

pub(crate) fn stop_cluster(c: &ClusterFile) {
    if let Ok(rt) = runtime() {
        rt.block_on(async {
            for m in &c.instances {
                if let Ok(a) = Admin::new(&format!("inst{}", m.id), &m.admin, &c.token) {
                    let _ = a.shutdown().await;
                }
            }
        });
    }
    for m in &c.instances {
        if m.pid != 0 {
            cluster::stop(m.pid, Duration::from_secs(3));
        }
    }
    if c.store.pid != 0 {
        cluster::stop(c.store.pid, Duration::from_secs(3));
    }
}

/// The cluster a live command runs on: the one `file` describes, or one of
/// `needed` instances started here (returned with its directory, for the
/// caller to stop and clean up).
pub(crate) fn cluster_for(
    file: Option<&Path>,
    needed: usize,
    what: &str,
    err: &mut dyn Write,
) -> Result<(ClusterFile, Option<(ClusterFile, PathBuf)>)> {
    if let Some(f) = file {
        return Ok((ClusterFile::read(f).map_err(Failure::input)?, None));
    }
    let cluster_dir = std::env::temp_dir().join(format!("fusionlab-live-{}", std::process::id()));
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    writeln!(
        err,
        "starting a local cluster of {needed} instances in {}",
        cluster_dir.display()
    )?;
    // A loaded scenario has at most 16 instances; refuse rather than wrap.
    let instances = u8::try_from(needed).map_err(|_| {
        Failure::input(format!(
            "{what}: {needed} instances, a cluster has at most 255"
        ))
    })?;
    let c = cluster::up(&UpOptions {
        instances,
        dir: cluster_dir.clone(),
        base_port: 0,
        exe,
    })
    .map_err(|e| Failure {
        code: exit::LIVE_FAILED,
        message: format!("{what}: {e}"),
    })?;
    Ok((c.clone(), Some((c, cluster_dir))))
}

/// `fusionlab run --live`: run a scenario on a cluster (its own, or `--cluster FILE`).
pub fn run_live(
    a: &RunArgs,
    cluster: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let source = shipped::resolve(&a.scenario)?;
    let (text, label) = source.text()?;
    let loaded = source
        .load(&a.sets)
        .map_err(|e| Failure::input(e.to_string()))?;
    check_phases(&loaded, &a.phases)?;
    // A figure a live cluster does not measure would read 0: refused before
    // any process starts.
    fusion_driver::refusal(&loaded, Driver::Live)
        .map_err(|e| Failure::input(format!("fusionlab run --live: {e}")))?;
    // The instances and the store hold what the simulator would, in several
    // processes of (by default) this machine.
    crate::memory::within_limit(&loaded, a.check, &MemoryLimit::new(a.max_memory))?;
    let needed = loaded
        .variants
        .iter()
        .map(|v| v.scenario.instances.len())
        .max()
        .unwrap_or(1);
    // A given cluster whose processes this runner cannot signal (containers)
    // cannot carry out kill, pause or restart: refused before anything runs.
    let given = cluster
        .map(|f| ClusterFile::read(f).map_err(Failure::input))
        .transpose()?;
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    if let Some(c) = &given
        && let Err(why) = LocalProcesses::new(c, exe.clone())
    {
        fusion_driver::fault_refusal(&loaded, Driver::Live)
            .map_err(|e| Failure::input(format!("fusionlab run --live: {e} ({why})")))?;
    }
    // Our own cluster unless one is given; stopped whatever happens.
    let (c, own) = cluster_for(cluster, needed, "fusionlab run --live", err)?;
    let control = LocalProcesses::new(&c, exe).ok().map(|p| match cluster {
        Some(f) => p.with_file(f.to_path_buf()),
        None => p,
    });
    let rt = runtime()?;
    let result = rt.block_on(runner::run(
        &loaded,
        &LiveRun {
            cluster: &c,
            text: &text,
            label: &label,
            overrides: &a.sets,
            seed: a.seed,
            check: a.check,
            progress: !a.json,
            control: control.as_ref().map(|c| c as &dyn ProcessControl),
        },
    ));
    drop(rt);
    if let Some((c, cluster_dir)) = own {
        // With the instances restarted during the run, not the first ones.
        let c = control.as_ref().and_then(|p| p.cluster().ok()).unwrap_or(c);
        stop_cluster(&c);
        if result.is_ok() {
            let _ = std::fs::remove_dir_all(cluster_dir);
        } else {
            writeln!(err, "logs of the cluster kept in {}", cluster_dir.display())?;
        }
    }
    let (result, outcomes) = match result {
        Ok(r) => r,
        Err(failure) => {
            // What finished is still reported, then what stopped the run.
            if let Some((result, outcomes)) = &failure.partial {
                crate::report::print_run(result, outcomes, a, out, err)?;
            }
            return Err(Failure {
                code: exit::LIVE_FAILED,
                message: format!("fusionlab run --live: {}", failure.message),
            }
            .into());
        }
    };
    crate::report::print_run(&result, &outcomes, a, out, err)
}
