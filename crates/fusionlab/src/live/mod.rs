//! The live cluster commands: `store` and `instance` (the processes `up`
//! starts, or containers run), `up`, `status`, `down`, and `run --live`.

mod async_runtime;
pub mod bench;
pub mod interrupt;
pub mod logs;
pub mod probe;
mod status;
pub mod swarm;
pub mod tour;

pub(crate) use async_runtime::runtime;
use status::STATUS_PATIENCE;
pub use status::status;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use fusion_core::types::InstId;
use fusion_driver::Driver;
use fusion_live::admin_client::Admin;
use fusion_live::cluster::{self, ClusterFile, TOKEN_ENV, UpOptions};
use fusion_live::lives::{LocalProcesses, ProcessControl};
use fusion_live::runner::{self, LiveRun};
use fusion_report::RunResult;
use fusion_scenario::LoadedScenario;

use crate::live::interrupt::{Interruption, Interrupts};
use crate::memory::MemoryLimit;
use crate::run::args::RunArgs;
use crate::run::check_phases;
use crate::shipped;
use crate::{Failure, exit};

/// Where `up` puts a cluster and `status`/`down` look for it by default.
pub const DEFAULT_DIR: &str = ".fusionlab";

/// The cluster file of a cluster directory.
pub fn cluster_file(cluster_dir: &Path) -> PathBuf {
    cluster_dir.join("cluster.toml")
}

fn token_from_env() -> Result<String, Failure> {
    cluster::token_from_env()
        .map_err(Failure::input)?
        .ok_or_else(|| {
            Failure::input(format!(
                "set the cluster token in the environment variable {TOKEN_ENV}, or name \
                 a file that holds it in {}",
                cluster::TOKEN_FILE_ENV
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

/// Stop on SIGTERM or Ctrl-C, saying so in the log.
async fn terminated() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    let signal = tokio::select! {
        _ = term => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    };
    tracing::info!(signal, "received {signal}: stopping");
}

/// `fusionlab store`: serve the block store.
pub fn store(listen: &str, store_dir: &Path, addr_file: Option<&Path>, fsync: bool) -> Result<u8> {
    let token = token_from_env()?;
    let rt = runtime()?;
    rt.block_on(async {
        let l = bind(listen, "listen").await?;
        let addr = l.local_addr()?;
        if let Some(f) = addr_file {
            cluster::write_addr_file(f, &[addr]).map_err(Failure::input)?;
        }
        tracing::info!(
            pid = std::process::id(),
            "fusionlab store: listening on {addr}, files in {}{}",
            store_dir.display(),
            if fsync { "" } else { " (fsync off)" }
        );
        let mut config = fusion_store::StoreConfig::new(store_dir, token);
        if !fsync {
            config.durability = fusion_store::Durability::PageCache;
        }
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
    metrics: Option<&str>,
    addr_file: Option<&Path>,
    journal_dir: Option<&Path>,
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
        let me = match metrics {
            Some(m) => Some(bind(m, "metrics").await?),
            None => None,
        };
        let (ica, ada) = (ic.local_addr()?, ad.local_addr()?);
        let mea = me.as_ref().map(|l| l.local_addr()).transpose()?;
        if let Some(f) = addr_file {
            let addrs: Vec<SocketAddr> = [ica, ada].into_iter().chain(mea).collect();
            cluster::write_addr_file(f, &addrs).map_err(Failure::input)?;
        }
        let metrics_line = mea.map_or(String::new(), |a| format!(", metrics http://{a}/metrics"));
        tracing::info!(
            pid = std::process::id(),
            "fusionlab instance {id}: interconnect {ica}, admin {ada}{metrics_line}"
        );
        let opts = fusion_live::process::InstanceOptions {
            id: InstId(id - 1),
            token,
            journal_dir: journal_dir.map(Path::to_path_buf),
        };
        tokio::select! {
            r = fusion_live::process::serve(opts, ic, ad, me) => r.map_err(|e| anyhow::anyhow!(e))?,
            _ = terminated() => {}
        }
        Ok(exit::OK)
    })
}

fn fusion_wire_max() -> u32 {
    fusion_live::INSTANCES_MAX
}

/// `fusionlab up`: start a local cluster and write its cluster file.
pub fn up(instances: u8, cluster_dir: &Path, base_port: u16, out: &mut dyn Write) -> Result<u8> {
    let file = cluster_file(cluster_dir);
    if file.exists()
        && let Ok(c) = ClusterFile::read(&file)
        && c.instances
            .iter()
            .any(|m| cluster::alive(m.pid) && cluster::runs_in(m.pid, &c.dir))
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
        log_args: crate::live::logs::child_args(),
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
            "inst{}        interconnect {}  admin {}  metrics {}  (pid {})",
            m.id, m.interconnect, m.admin, m.metrics, m.pid
        )?;
    }
    writeln!(out, "cluster file {}", file.display())?;
    writeln!(out, "logs         {}", cluster_dir.display())?;
    Ok(exit::OK)
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

/// Stop every process of a cluster: each instance is asked to shut down
/// (all at once), then every process `up` started that is still there is
/// sent SIGTERM, and SIGKILL 3 s later. A pid whose process does not name
/// the cluster's directory is someone else's by now and left alone.
pub(crate) fn stop_cluster(c: &ClusterFile) {
    if let Ok(rt) = runtime() {
        rt.block_on(async {
            let mut asked = tokio::task::JoinSet::new();
            for m in &c.instances {
                if let Ok(a) = Admin::new(&format!("inst{}", m.id), &m.admin, &c.token) {
                    asked.spawn(async move { a.shutdown().await });
                }
            }
            while asked.join_next().await.is_some() {}
        });
    }
    let pids: Vec<u32> = c
        .instances
        .iter()
        .map(|m| m.pid)
        .chain([c.store.pid])
        .filter(|&pid| pid != 0 && cluster::runs_in(pid, &c.dir))
        .collect();
    cluster::stop_all(&pids, Duration::from_secs(3));
}

/// Stop what a run left going on a cluster it was given: every instance's
/// workloads and faults (admin Quiesce) and the store's disk faults. Returns
/// what could not be done, one line each (an instance that has nothing
/// loaded has nothing to stop).
pub(crate) fn quiesce_cluster(c: &ClusterFile) -> Vec<String> {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return vec![format!("{e:#}")],
    };
    rt.block_on(async {
        let mut asked = tokio::task::JoinSet::new();
        for m in &c.instances {
            match Admin::new(&format!("inst{}", m.id), &m.admin, &c.token) {
                Ok(a) => {
                    asked.spawn(async move { a.quiesce().await });
                }
                Err(e) => {
                    asked.spawn(async move { Err(e) });
                }
            }
        }
        let mut problems = Vec::new();
        while let Some(done) = asked.join_next().await {
            match done {
                Ok(Ok(())) => {}
                Ok(Err(e)) if e.ends_with("no scenario loaded") => {}
                Ok(Err(e)) => problems.push(e),
                Err(e) => problems.push(format!("quiesce: {e}")),
            }
        }
        let store =
            fusion_store::StoreClient::connect(&c.store.address, &c.token, STATUS_PATIENCE).await;
        if let Err(e) = match store {
            Ok(s) => s.clear_faults().await,
            Err(e) => Err(e),
        } {
            problems.push(e.to_string());
        }
        problems.sort();
        problems
    })
}

/// How a run on a cluster ended, for [`leave_cluster`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunEnd {
    Completed,
    Failed,
    Interrupted,
}

/// Leave the cluster a run used. One started for the run (`own`, its
/// directory) is stopped, every process of it, and its directory removed
/// unless the run failed (then its logs are kept and named). One the run
/// was given is quiesced if the run did not complete, so that no workload
/// of an abandoned run keeps going.
pub(crate) fn leave_cluster(
    c: &ClusterFile,
    own: Option<&Path>,
    end: RunEnd,
    what: &str,
    err: &mut dyn Write,
) -> Result<()> {
    match own {
        Some(cluster_dir) => {
            stop_cluster(c);
            if end == RunEnd::Failed {
                writeln!(err, "logs of the cluster kept in {}", cluster_dir.display())?;
            } else if let Err(e) = std::fs::remove_dir_all(cluster_dir) {
                writeln!(
                    err,
                    "{what}: cannot remove the cluster directory {}: {e}",
                    cluster_dir.display()
                )?;
            }
        }
        None if end == RunEnd::Completed => {}
        None => {
            let problems = quiesce_cluster(c);
            if problems.is_empty() {
                writeln!(
                    err,
                    "{what}: stopped the workloads and faults of the run on the cluster's {} \
                     instances",
                    c.instances.len()
                )?;
            } else {
                writeln!(
                    err,
                    "{what}: could not stop everything the run left going on the cluster:\n{}",
                    problems.join("\n")
                )?;
            }
        }
    }
    Ok(())
}

/// A live run, or the signal that cut it short.
pub(crate) enum Ended {
    Ran(Result<(RunResult, Vec<fusion_driver::VariantOutcome>), runner::LiveFailure>),
    Interrupted(Interruption),
}

impl Ended {
    pub(crate) fn end(&self) -> RunEnd {
        match self {
            Ended::Ran(Ok(_)) => RunEnd::Completed,
            Ended::Ran(Err(_)) => RunEnd::Failed,
            Ended::Interrupted(_) => RunEnd::Interrupted,
        }
    }
}

/// Run `loaded` live unless SIGINT or SIGTERM comes first (or came while
/// the cluster started): then the run is dropped where it is.
pub(crate) fn run_until_interrupted(
    interrupts: &Interrupts,
    loaded: &LoadedScenario,
    run: &LiveRun<'_>,
) -> Result<Ended> {
    let rt = runtime()?;
    let ended = rt.block_on(async {
        tokio::select! {
            r = runner::run(loaded, run) => Ended::Ran(r),
            s = interrupts.wait() => Ended::Interrupted(s),
        }
    });
    // The runner's tasks end with its runtime, before the cluster is left.
    drop(rt);
    Ok(ended)
}

/// Run `loaded` live with its held phase open-ended: the first SIGINT or
/// SIGTERM (or `duration_ns`) ends that phase and the run finishes with its
/// report and checks; a second signal drops it where it is.
pub(crate) fn run_held(
    interrupts: &Interrupts,
    loaded: &LoadedScenario,
    run: &LiveRun<'_>,
    end: &tokio::sync::watch::Sender<bool>,
    duration_ns: Option<u64>,
    err: &mut dyn Write,
) -> Result<Ended> {
    let rt = runtime()?;
    let (ended, why) = rt.block_on(async {
        let mut running = std::pin::pin!(runner::run(loaded, run));
        let over = async {
            match duration_ns {
                Some(ns) => tokio::time::sleep(std::time::Duration::from_nanos(ns)).await,
                None => std::future::pending().await,
            }
        };
        let why = tokio::select! {
            r = &mut running => return (Ended::Ran(r), None),
            s = interrupts.wait_for(1) => format!("{s}"),
            () = over => "--duration".to_string(),
        };
        let _ = end.send(true);
        let ended = tokio::select! {
            r = &mut running => Ended::Ran(r),
            s = interrupts.wait_for(2) => Ended::Interrupted(s),
        };
        (ended, Some(why))
    });
    drop(rt);
    if let Some(why) = why {
        writeln!(
            err,
            "{WHAT}: the held phase ended ({why}); the report follows"
        )?;
    }
    Ok(ended)
}

/// The cluster a live command runs on: the one `file` describes, or one of
/// `needed` instances started here in a new private directory with an
/// unpredictable name (returned, for the caller to stop the cluster and
/// clean up with [`leave_cluster`]).
pub(crate) fn cluster_for(
    file: Option<&Path>,
    needed: usize,
    what: &str,
    err: &mut dyn Write,
) -> Result<(ClusterFile, Option<PathBuf>)> {
    if let Some(f) = file {
        return Ok((ClusterFile::read(f).map_err(Failure::input)?, None));
    }
    // A loaded scenario has at most 16 instances; refuse rather than wrap.
    let instances = u8::try_from(needed).map_err(|_| {
        Failure::input(format!(
            "{what}: {needed} instances, a cluster has at most 255"
        ))
    })?;
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    // Created 0700 under a random name: nobody else can read the logs or
    // plant files where the processes will write theirs.
    let cluster_dir = {
        use std::os::unix::fs::PermissionsExt;
        tempfile::Builder::new()
            .prefix("fusionlab-live-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| Failure {
                code: exit::LIVE_FAILED,
                message: format!(
                    "{what}: cannot create a cluster directory in {}: {e}",
                    std::env::temp_dir().display()
                ),
            })?
            .keep()
    };
    writeln!(
        err,
        "starting a local cluster of {needed} instances in {}",
        cluster_dir.display()
    )?;
    let c = cluster::up(&UpOptions {
        instances,
        dir: cluster_dir.clone(),
        base_port: 0,
        exe,
        log_args: crate::live::logs::child_args(),
    })
    .map_err(|e| Failure {
        code: exit::LIVE_FAILED,
        message: format!(
            "{what}: {e}\nlogs of the cluster kept in {}",
            cluster_dir.display()
        ),
    })?;
    Ok((c, Some(cluster_dir)))
}

/// `fusionlab run --live`: run a scenario on a cluster (its own, or `--cluster FILE`).
pub fn run_live(
    a: &RunArgs,
    cluster: Option<&Path>,
    swarm: Option<&str>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    if let Some(path) = &a.trace {
        return Err(Failure::input(format!(
            "--trace {}: the timeline trace is simulator-only for now; run without --live",
            path.display()
        ))
        .into());
    }
    let source = shipped::resolve(&a.scenario)?;
    let (text, label) = source.text()?;
    let loaded = source
        .load(&a.sets)
        .map_err(|e| Failure::input(e.to_string()))?;
    check_phases(&loaded, &a.phases)?;
    if let Some(h) = &a.hold {
        check_phases(&loaded, std::slice::from_ref(h))
            .map_err(|e| Failure::input(e.message.replacen("--phase", "--hold", 1)))?;
    }
    // A figure a live cluster does not measure would read 0: refused before
    // any process starts.
    fusion_driver::refusal(&loaded, Driver::Live)
        .map_err(|e| Failure::input(format!("fusionlab run --live: {e}")))?;
    // A given cluster whose processes this runner cannot signal (containers)
    // cannot carry out kill, pause or restart: refused before anything runs.
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    // A Swarm stack's instances are killed, paused and restarted through
    // Docker and Swarm (swarm.rs).
    let swarm = match (swarm, cluster) {
        (Some(stack), Some(f)) => {
            let given = ClusterFile::read(f).map_err(Failure::input)?;
            Some(swarm::SwarmControl::new(stack, &given).map_err(Failure::input)?)
        }
        _ => None,
    };
    if let (Some(f), None) = (cluster, &swarm) {
        let given = ClusterFile::read(f).map_err(Failure::input)?;
        if let Err(why) = LocalProcesses::new(&given, exe.clone()) {
            // A held run carries out the phases up to the held one only.
            fusion_driver::fault_refusal_through(&loaded, Driver::Live, a.hold.as_deref())
                .map_err(|e| Failure::input(format!("fusionlab run --live: {e} ({why})")))?;
        }
    }
    // The instances and the store hold what the simulator would, in several
    // processes of (by default) this machine.
    crate::memory::within_limit(&loaded, a.check, &MemoryLimit::new(a.max_memory))?;
    let html = crate::run::report::HtmlFile::create(a.html.as_deref())?;
    let needed = loaded.instances_max().max(1);
    // Caught from before the cluster starts, so that a Ctrl-C at any point
    // stops what this command started.
    let interrupts = Interrupts::install()?;
    // Our own cluster unless one is given; stopped whatever happens.
    let (c, own) = cluster_for(cluster, needed, WHAT, err)?;
    let control = LocalProcesses::new(&c, exe)
        .ok()
        .filter(|_| swarm.is_none())
        .map(|p| match cluster {
            Some(f) => p.with_file(f.to_path_buf()),
            None => p,
        });
    let (hold_tx, hold_rx) = tokio::sync::watch::channel(false);
    let run = LiveRun {
        cluster: &c,
        text: &text,
        label: &label,
        overrides: &a.sets,
        seed: a.seed,
        interval_ns: a.interval_ns(),
        // A held run ends with the lost-commit check of `chaos`.
        check: a.check || a.hold.is_some(),
        progress: !a.json,
        control: match &swarm {
            Some(s) => Some(s as &dyn ProcessControl),
            None => control.as_ref().map(|p| p as &dyn ProcessControl),
        },
        hold: a.hold.as_ref().map(|phase| runner::Hold {
            phase: phase.clone(),
            end: hold_rx,
        }),
    };
    let ended = match a.hold {
        Some(_) => run_held(&interrupts, &loaded, &run, &hold_tx, a.hold_ns, err),
        None => run_until_interrupted(&interrupts, &loaded, &run),
    };
    let end = ended.as_ref().map_or(RunEnd::Failed, Ended::end);
    // With the instances restarted during the run, not the first ones.
    let c = control.as_ref().and_then(|p| p.cluster().ok()).unwrap_or(c);
    if let Some(Err(e)) = swarm.as_ref().map(|s| s.restore(c.instances.len())) {
        writeln!(err, "{WHAT}: --swarm: {e}")?;
    }
    leave_cluster(&c, own.as_deref(), end, WHAT, err)?;
    match ended? {
        Ended::Interrupted(s) => {
            writeln!(err, "{WHAT}: interrupted by {s}")?;
            Ok(s.exit_status())
        }
        Ended::Ran(Ok((result, outcomes))) => {
            let code = crate::run::report::print_run(&result, &outcomes, a, out, err)?;
            let scenario = Some((text, label))
                .filter(|_| !matches!(a.recording, crate::run::args::Recording::Off));
            crate::runs::record(a, scenario, "live", (&result, &outcomes), code, err)?;
            if let Some(h) = html {
                h.write_run(&result, &loaded, a.names_9i)?;
            }
            Ok(code)
        }
        Ended::Ran(Err(failure)) => {
            // What finished is still reported, then what stopped the run.
            if let Some((result, outcomes)) = &failure.partial {
                crate::run::report::print_run(result, outcomes, a, out, err)?;
                if let Some(h) = html {
                    h.write_run(result, &loaded, a.names_9i)?;
                }
            }
            Err(Failure {
                code: exit::LIVE_FAILED,
                message: format!("{WHAT}: {}", failure.message),
            }
            .into())
        }
    }
}

const WHAT: &str = "fusionlab run --live";

/// `fusionlab restart instN`: restart one instance of a cluster `up`
/// started, on its addresses, and record its new pid in the cluster file.
pub fn restart(instance: &str, file: &Path, out: &mut dyn Write) -> Result<u8> {
    let id = instance
        .strip_prefix("inst")
        .unwrap_or(instance)
        .parse::<u8>()
        .ok()
        .filter(|&id| id > 0)
        .ok_or_else(|| {
            Failure::input(format!(
                "fusionlab restart: {instance:?} is not an instance (inst1, inst2, ...)"
            ))
        })?;
    let c = ClusterFile::read(file).map_err(Failure::input)?;
    let mut stored = ClusterFile::read_stored(file).map_err(Failure::input)?;
    let Some(k) = usize::from(id)
        .checked_sub(1)
        .filter(|&k| k < stored.instances.len())
    else {
        return Err(Failure::input(format!(
            "fusionlab restart: {}: the cluster has inst1 to inst{}, no inst{id}",
            file.display(),
            stored.instances.len()
        ))
        .into());
    };
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let was = stored.instances[k].pid;
    let pid = cluster::restart_instance(&c, id, &exe).map_err(|e| Failure {
        code: exit::LIVE_FAILED,
        message: format!("fusionlab restart: {e}"),
    })?;
    stored.instances[k].pid = pid;
    stored.write(file).map_err(|e| Failure {
        code: exit::LIVE_FAILED,
        message: format!(
            "fusionlab restart: inst{id} runs as pid {pid}, but the cluster file was not updated: {e}"
        ),
    })?;
    let m = &stored.instances[k];
    writeln!(
        out,
        "inst{id} restarted: pid {pid} (was {was}), interconnect {}, admin {}; no scenario is \
         loaded on it until the next run",
        m.interconnect, m.admin
    )?;
    Ok(exit::OK)
}
