//! An instance process: the interconnect and admin servers around one
//! [`host`](crate::host). `fusionlab instance` runs this.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fusion_core::block::Block;
use fusion_core::instance::Command;
use fusion_core::instance::Instance;
use fusion_core::msg::{Envelope, Io};
use fusion_core::types::InstId;
use fusion_driver::Interconnect;
use fusion_scenario::{Fault, Scenario};
use fusion_wire::Codec;
use fusion_wire::accept::{Acceptor, grpc_server};
use rand_core::SeedableRng;
use tokio::net::TcpListener;
use tokio::sync::{Notify, oneshot};
use tonic::{Request, Response, Status};

use crate::clock::Clock;
use crate::host::{self, HostSender, Input, Query};
use crate::links::{self, InterconnectService, LinkHandle, LinkSpec, Wiring};
use crate::observation_codec::encode_observation;
use crate::pb;
use crate::pb::admin_server::{Admin, AdminServer};
use crate::stats_codec;
use crate::store_client::Store;

/// How long an admin call waits for the instance host.
const HOST_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections the admin service holds at once (the runner's, `status`,
/// `down`): past it new ones are closed at once.
pub const ADMIN_CONNECTIONS_MAX: usize = 32;
/// Calls in progress on one admin connection at once (the runner makes one
/// per instance at a time); more wait.
pub const ADMIN_CALLS_PER_CONNECTION_MAX: usize = 16;
/// Longest an admin call may run on the server (the clients' deadlines are
/// 3 to 60 s): a call stuck past it ends with DEADLINE_EXCEEDED.
pub const ADMIN_CALL_TIMEOUT: Duration = Duration::from_secs(90);
/// Most observations one `History` answer carries: 64 Ki, about 2 MB on
/// the wire. The runner drains an instance's history in such chunks.
pub const HISTORY_CHUNK: usize = 1 << 16;

/// What `fusionlab instance` is given.
#[derive(Clone, Debug)]
pub struct InstanceOptions {
    /// 0-based instance id.
    pub id: InstId,
    pub token: String,
    /// Where the host keeps its history journal when a run records history
    /// (journal.rs): the runner reads it back if the process dies from
    /// outside. None: no journal.
    pub journal_dir: Option<std::path::PathBuf>,
}

struct Loaded {
    host: HostSender,
    task: Option<tokio::task::JoinHandle<()>>,
    scenario: Scenario,
    name: String,
    links: Vec<Option<LinkHandle>>,
    received: Arc<Vec<AtomicU64>>,
    codec: Codec,
    /// The phase the runner began last and its faults, a line each (what
    /// `status` tells `fusionlab top`).
    phase: String,
    faults: Vec<String>,
    /// The log's span of this run (scenario, variant, life).
    span: tracing::Span,
}

struct State {
    opts: InstanceOptions,
    wiring: Arc<Mutex<Option<Wiring>>>,
    loaded: tokio::sync::Mutex<Option<Loaded>>,
    shutdown: Notify,
}

/// Serve an instance on its listeners until `Shutdown` is called: the
/// interconnect, the admin service and, when given, the metrics.
pub async fn serve(
    opts: InstanceOptions,
    interconnect: TcpListener,
    admin: TcpListener,
    metrics: Option<TcpListener>,
) -> Result<(), String> {
    let wiring = Arc::new(Mutex::new(None));
    let state = Arc::new(State {
        opts: opts.clone(),
        wiring: wiring.clone(),
        loaded: tokio::sync::Mutex::new(None),
        shutdown: Notify::new(),
    });
    let ic = InterconnectService::new(opts.id, opts.token.clone(), wiring.clone());
    let token = opts.token.clone();
    let check = move |req: Request<()>| crate::check_token(&req, &token);
    let admin_svc = tonic::service::interceptor::InterceptedService::new(
        AdminServer::new(AdminService(state.clone()))
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20),
        check,
    );
    let stop = state.clone();
    let ic_server = ic.serve(interconnect);
    let admin_what = match admin.local_addr() {
        Ok(a) => format!("{}: admin listener {a}", opts.id),
        Err(_) => format!("{}: admin listener", opts.id),
    };
    let admin_incoming = Acceptor::new(
        admin,
        admin_what,
        ADMIN_CONNECTIONS_MAX,
        links::instance_reporter(wiring.clone()),
    )
    .into_incoming();
    let metrics_server = async {
        match metrics {
            Some(l) => {
                let id = opts.id.0.saturating_add(1);
                let sampler = sampler(state.clone());
                let report = links::instance_reporter(wiring.clone());
                crate::metrics::serve(id, l, sampler, report, std::future::pending()).await;
            }
            None => std::future::pending().await,
        }
    };
    let admin_server = grpc_server(ADMIN_CALL_TIMEOUT, ADMIN_CALLS_PER_CONNECTION_MAX)
        .add_service(admin_svc)
        .serve_with_incoming_shutdown(
            admin_incoming,
            async move { stop.shutdown.notified().await },
        );
    tokio::select! {
        () = ic_server => {}
        () = metrics_server => {}
        r = admin_server => r.map_err(|e| format!("{}: admin server: {e}", opts.id))?,
    }
    // Stop the instance host before the process ends.
    if let Some(l) = state.loaded.lock().await.take() {
        stop_host(l).await;
    }
    Ok(())
}

/// What a scrape of the metrics asks the host: its counters and status.
fn sampler(state: Arc<State>) -> crate::metrics::Sampler {
    Arc::new(move || {
        let admin = AdminService(state.clone());
        Box::pin(async move {
            let (stats, _) = admin.ask(Query::Stats).await.ok()?;
            let status = admin.ask(Query::Status).await.ok()?;
            Some(crate::metrics::Sample { stats, status })
        })
    })
}

async fn stop_host(mut l: Loaded) {
    let _ = l.host.send(Input::Stop);
    if let Some(t) = l.task.take() {
        let _ = t.await;
    }
}

/// The host's way out: links, the store, problems back to itself.
struct LiveOutputs {
    me: InstId,
    links: Vec<Option<links::LinkSender>>,
    store: Store,
    host: HostSender,
    rt: tokio::runtime::Handle,
}

impl host::Outputs for LiveOutputs {
    fn send(&mut self, env: Envelope) {
        let to = env.to;
        let sent = self
            .links
            .get(to.idx())
            .and_then(Option::as_ref)
            .is_some_and(|tx| tx.send(env));
        if !sent {
            let _ = self.host.send(Input::Problem(format!(
                "{}: no interconnect to {to}: a message was dropped",
                self.me
            )));
        }
    }

    fn flush(&mut self) {
        for l in self.links.iter().flatten() {
            l.flush();
        }
    }

    fn io(&mut self, id: u64, io: Io) {
        let store = self.store.clone();
        let host = self.host.clone();
        self.rt.spawn(async move {
            let result = store.perform(io).await;
            let _ = host.send(Input::IoDone { id, result });
        });
    }
}

struct AdminService(Arc<State>);

impl AdminService {
    /// Ask the instance host something and wait for the answer.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Query) -> Result<T, Status> {
        let host = {
            let l = self.0.loaded.lock().await;
            l.as_ref()
                .map(|l| l.host.clone())
                .ok_or_else(|| Status::failed_precondition("no scenario loaded"))?
        };
        let (tx, rx) = oneshot::channel();
        host.send(Input::Query(make(tx)))
            .map_err(|_| Status::unavailable("the instance host has stopped"))?;
        tokio::time::timeout(HOST_TIMEOUT, rx)
            .await
            .map_err(|_| Status::deadline_exceeded("the instance host did not answer in 10 s"))?
            .map_err(|_| Status::unavailable("the instance host has stopped"))
    }

    async fn load(&self, r: pb::LoadRequest) -> Result<pb::LoadResponse, String> {
        let me = self.0.opts.id;
        let loaded = fusion_scenario::load_str(&r.scenario_text, &r.label, &r.overrides)
            .map_err(|e| e.to_string())?;
        let scenario = loaded
            .variants
            .into_iter()
            .find(|v| v.name == r.variant)
            .map(|v| v.scenario)
            .ok_or_else(|| format!("{}: no variant {:?}", r.label, r.variant))?;
        let instance_count = scenario.instances.len();
        if me.idx() >= instance_count {
            return Err(format!(
                "{me} is not in this scenario's cluster of {instance_count}"
            ));
        }
        if r.peers.len() != instance_count {
            return Err(format!(
                "the scenario has {instance_count} instances but {} interconnect addresses were given",
                r.peers.len()
            ));
        }
        let layout = scenario.layout();
        let mut cfg = scenario
            .instance_configs(&layout, r.seed, r.record_history)
            .swap_remove(me.idx());
        cfg.life = r.life;
        // Over real sockets a connection can break under the run (an
        // outside fault the scenario does not know of): what it loses is
        // sent again when it is back, whatever the scenario declares.
        cfg.delivery = cfg.delivery.over_transport();
        let carried = r
            .carried
            .as_ref()
            .map(|c| stats_codec::decode(c, "LoadRequest.carried"))
            .transpose()?;
        let codec = Codec::new(
            scenario.block_size(),
            instance_count as u8,
            layout.total_blocks,
        );
        let here = crate::clock::boot_id();
        let epoch = crate::clock::local_epoch(
            r.epoch_ns,
            r.epoch_realtime_ns,
            &r.boot_id,
            &here,
            crate::clock::now_both(),
        );
        if epoch != r.epoch_ns {
            tracing::info!(
                runner_boot_id = %r.boot_id,
                boot_id = %here,
                "the runner is on another host: the cluster clock counts from the \
                 runner's origin by the realtime clock"
            );
        }
        let clock = Clock::new(epoch);
        let store = Store::new(&r.store, &self.0.opts.token, codec, me)?.for_run(r.epoch_ns);

        // A previous scenario's host and links go first.
        if let Some(old) = self.0.loaded.lock().await.take() {
            if let Ok(mut w) = self.0.wiring.lock() {
                *w = None;
            }
            stop_host(old).await;
        }
        let (host_tx, host_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for i in 0..instance_count {
            if i == me.idx() {
                senders.push(None);
                receivers.push(None);
            } else {
                let (tx, rx) = links::channel(codec, clock);
                senders.push(Some(tx));
                receivers.push(Some(rx));
            }
        }
        let outputs = LiveOutputs {
            me,
            links: senders,
            store,
            host: host_tx.clone(),
            rt: tokio::runtime::Handle::current(),
        };
        // The links into this instance, with its own jitter stream.
        let net = Interconnect::new(
            scenario.network.clone(),
            instance_count,
            rand_chacha::ChaCha8Rng::seed_from_u64(
                r.seed ^ 0x6e65_7477_6f72_6b00 ^ me.idx() as u64,
            ),
        );
        let mut inst = Instance::new(cfg);
        if let Some(c) = carried {
            inst.carry_over_stats(c);
        }
        // The runner counts the values handed out across the cluster, as
        // the simulator does (`fusion_driver::SeqOrder`).
        inst.log_nextvals(!scenario.catalog.sequences.is_empty());
        let journal = match (&self.0.opts.journal_dir, r.record_history) {
            (Some(dir), true) => Some(
                crate::journal::Journal::create(dir, me, r.epoch_ns, r.life).map_err(|e| {
                    format!(
                        "{me}: cannot create the history journal in {}: {e}",
                        dir.display()
                    )
                })?,
            ),
            _ => None,
        };
        let span = tracing::info_span!(
            "run",
            scenario = %loaded.name,
            variant = %r.variant,
            life = r.life
        );
        span.in_scope(|| {
            tracing::info!(
                epoch_ns = r.epoch_ns,
                instances = instance_count,
                store = %r.store,
                "scenario loaded"
            );
        });
        let task = host::spawn(inst, clock, outputs, host_rx, net, journal, span.clone())
            .map_err(|e| format!("{me}: could not start the instance host: {e}"))?;
        let received: Arc<Vec<AtomicU64>> =
            Arc::new((0..instance_count).map(|_| AtomicU64::new(0)).collect());
        if let Ok(mut w) = self.0.wiring.lock() {
            *w = Some(Wiring {
                host: host_tx.clone(),
                clock,
                codec,
                received: received.clone(),
                run: r.epoch_ns,
            });
        }
        let mut links: Vec<Option<LinkHandle>> = (0..instance_count).map(|_| None).collect();
        let mut first_up = Vec::new();
        for (i, rx) in receivers.into_iter().enumerate() {
            let Some(rx) = rx else { continue };
            let spec = LinkSpec {
                me,
                peer: InstId(i as u8),
                address: r.peers[i].clone(),
                token: self.0.opts.token.clone(),
                codec,
                run: r.epoch_ns,
                host: host_tx.clone(),
            };
            let (handle, up) = links::open(spec, rx);
            links[i] = Some(handle);
            first_up.push(up);
        }
        // A run starts with every link up. A restarted instance does not
        // wait: some peers may be dead, and its links reach them when (if)
        // they come back.
        let mut failed = Vec::new();
        if r.life == 0 {
            for up in first_up {
                match up.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => failed.push(e),
                    Err(_) => failed.push(format!("{me}: a link task ended")),
                }
            }
        }
        let blocks = layout.total_blocks;
        *self.0.loaded.lock().await = Some(Loaded {
            host: host_tx,
            task: Some(task),
            scenario,
            name: format!("{} / {}", loaded.name, r.variant),
            links,
            received,
            codec,
            phase: String::new(),
            faults: Vec::new(),
            span,
        });
        if !failed.is_empty() {
            return Err(failed.join("; "));
        }
        Ok(pb::LoadResponse {
            instances: instance_count as u32,
            blocks,
        })
    }

    /// Remember the phase begun, for `status`.
    async fn in_phase(&self, name: String, faults: Vec<String>) {
        if let Some(l) = self.0.loaded.lock().await.as_mut() {
            l.phase = name;
            l.faults = faults;
        }
    }

    /// Start a phase on the host: the faults on the links into this
    /// instance (the scenario's network model is applied where messages
    /// arrive) and this instance's commands.
    async fn begin(
        &self,
        name: &str,
        faults: Vec<Fault>,
        commands: Vec<Command>,
    ) -> Result<(), Status> {
        let run = self.run_span().await;
        let span = tracing::info_span!(parent: &run, "phase", name = %name);
        span.in_scope(|| {
            let described: Vec<String> = faults
                .iter()
                .map(|f| fusion_report::chaos::describe_fault(f, name))
                .collect();
            tracing::info!(faults = ?described, "phase begun");
        });
        self.ask(|reply| Query::BeginPhase {
            faults,
            commands,
            span,
            reply,
        })
        .await
    }

    /// The span of the run loaded (none when nothing is loaded).
    async fn run_span(&self) -> tracing::Span {
        self.0
            .loaded
            .lock()
            .await
            .as_ref()
            .map_or_else(tracing::Span::none, |l| l.span.clone())
    }

    /// Log an order of the runner under the run's span.
    async fn log_order(&self, what: &str) {
        self.run_span().await.in_scope(|| tracing::info!("{what}"));
    }
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn load(
        &self,
        req: Request<pb::LoadRequest>,
    ) -> Result<Response<pb::LoadResponse>, Status> {
        AdminService::load(self, req.into_inner())
            .await
            .map(Response::new)
            .map_err(Status::failed_precondition)
    }

    async fn begin_phase(
        &self,
        req: Request<pb::PhaseRequest>,
    ) -> Result<Response<pb::Empty>, Status> {
        let req = req.into_inner();
        let index = req.index as usize;
        let me = self.0.opts.id.idx();
        let phase = {
            let l = self.0.loaded.lock().await;
            let l = l
                .as_ref()
                .ok_or_else(|| Status::failed_precondition("no scenario loaded"))?;
            l.scenario
                .phases
                .get(index)
                .cloned()
                .ok_or_else(|| Status::out_of_range(format!("no phase {index}")))?
        };
        let commands = phase.commands_for(me);
        // What the runner carries out in the kernel is not the model's.
        let by_kernel = |j: usize| {
            req.kernel_faults.iter().any(|&k| k as usize == j)
                && phase.faults.get(j).is_some_and(crate::netfault::is_network)
        };
        let faults: Vec<String> = phase
            .faults
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let d = fusion_report::chaos::describe_fault(f, &phase.name);
                if by_kernel(j) {
                    format!("{d} (by the kernel)")
                } else {
                    d
                }
            })
            .collect();
        let modeled: Vec<Fault> = phase
            .faults
            .iter()
            .enumerate()
            .filter(|(j, _)| !by_kernel(*j))
            .map(|(_, f)| f.clone())
            .collect();
        self.begin(&phase.name, modeled, commands).await?;
        self.in_phase(phase.name, faults).await;
        Ok(Response::new(pb::Empty {}))
    }

    async fn quiesce(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        self.begin("quiesce", Vec::new(), fusion_driver::quiesce_commands())
            .await?;
        self.in_phase("quiesce".into(), Vec::new()).await;
        Ok(Response::new(pb::Empty {}))
    }

    async fn stats(&self, _: Request<pb::Empty>) -> Result<Response<pb::StatsResponse>, Status> {
        let (stats, now) = self.ask(Query::Stats).await?;
        Ok(Response::new(stats_codec::encode(&stats, now)))
    }

    async fn status(&self, _: Request<pb::Empty>) -> Result<Response<pb::StatusResponse>, Status> {
        let me = self.0.opts.id;
        let mut out = pb::StatusResponse {
            instance: u32::from(me.0),
            pid: std::process::id(),
            ..Default::default()
        };
        let (name, links) = {
            let l = self.0.loaded.lock().await;
            match l.as_ref() {
                None => return Ok(Response::new(out)),
                Some(l) => (
                    {
                        out.phase = l.phase.clone();
                        out.faults = l.faults.clone();
                        l.name.clone()
                    },
                    l.links
                        .iter()
                        .enumerate()
                        .filter_map(|(i, h)| {
                            h.as_ref().map(|h| pb::LinkState {
                                peer: i as u32,
                                address: h.address.clone(),
                                up: h.state.up.load(Ordering::Relaxed),
                                sent: h.state.sent.load(Ordering::Relaxed),
                                received: l
                                    .received
                                    .get(i)
                                    .map_or(0, |c| c.load(Ordering::Relaxed)),
                            })
                        })
                        .collect::<Vec<_>>(),
                ),
            }
        };
        let s = self.ask(Query::Status).await?;
        out.loaded = true;
        out.scenario = name;
        out.buffers_used = s.buffers_used as u32;
        out.buffers = s.buffers as u32;
        out.lms = s.lms as u32;
        out.active_sessions = s.active_sessions as u32;
        out.at_rest = s.at_rest;
        out.waits = s
            .waits
            .iter()
            .map(|(wait, sessions)| pb::WaitNow {
                event: wait.name().to_string(),
                sessions: *sessions,
            })
            .collect();
        out.errors = s.errors;
        out.links = links;
        out.io_in_flight = s.io_in_flight as u64;
        out.messages_held = s.messages_held as u64;
        out.progress = s.progress;
        out.halted = s.halted.unwrap_or_default();
        out.incarnation = s.incarnation;
        out.members = s.members;
        out.unrecovered = s.unrecovered;
        out.user_commits = s.user_commits;
        out.now_ns = s.now;
        out.run_queue = u32::try_from(s.run_queue).unwrap_or(u32::MAX);
        out.lms_backlog = u32::try_from(s.lms_backlog).unwrap_or(u32::MAX);
        Ok(Response::new(out))
    }

    async fn history(
        &self,
        req: Request<pb::HistoryRequest>,
    ) -> Result<Response<pb::HistoryResponse>, Status> {
        let asked = usize::try_from(req.into_inner().max).unwrap_or(HISTORY_CHUNK);
        let max = if asked == 0 {
            HISTORY_CHUNK
        } else {
            asked.min(HISTORY_CHUNK)
        };
        let (obs, horizon) = self.ask(|reply| Query::History(max, reply)).await?;
        Ok(Response::new(pb::HistoryResponse {
            observations: obs.iter().map(encode_observation).collect(),
            caught_up: horizon.is_some(),
            scn: horizon.map_or(0, |h| h.scn.0),
            snapshot: horizon.map_or(0, |h| h.snapshot.0),
        }))
    }

    async fn images(&self, _: Request<pb::Empty>) -> Result<Response<pb::ImagesResponse>, Status> {
        let codec = {
            let l = self.0.loaded.lock().await;
            l.as_ref()
                .map(|l| l.codec)
                .ok_or_else(|| Status::failed_precondition("no scenario loaded"))?
        };
        let images: Vec<Block> = self.ask(Query::Images).await?;
        Ok(Response::new(pb::ImagesResponse {
            blocks: images.iter().map(|b| codec.encode_block(b)).collect(),
        }))
    }

    async fn transfers(
        &self,
        req: Request<pb::TransfersRequest>,
    ) -> Result<Response<pb::TransfersResponse>, Status> {
        let reset = req.into_inner().reset;
        let t = self.ask(|tx| Query::Transfers(reset, tx)).await?;
        let kinds = ["cr", "current"]
            .iter()
            .zip(t)
            .map(|(k, s)| pb::TransferLatency {
                kind: k.to_string(),
                count: s.count,
                p50_us: s.p50_us,
                p90_us: s.p90_us,
                p99_us: s.p99_us,
                max_us: s.max_us,
                mean_us: s.mean_us,
            })
            .collect();
        Ok(Response::new(pb::TransfersResponse { kinds }))
    }

    async fn nextvals(
        &self,
        _: Request<pb::Empty>,
    ) -> Result<Response<pb::NextvalsResponse>, Status> {
        let b = self.ask(Query::Nextvals).await?;
        let mut out = pb::NextvalsResponse {
            first: b.first,
            at_ns: Vec::with_capacity(b.values.len()),
            sequence: Vec::with_capacity(b.values.len()),
            values: Vec::with_capacity(b.values.len()),
        };
        for (at, seq, v) in b.values {
            out.at_ns.push(at);
            out.sequence.push(seq);
            out.values.push(v);
        }
        Ok(Response::new(out))
    }

    async fn hold(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        self.log_order("held by the runner (it freezes the process next)")
            .await;
        self.ask(Query::Hold).await?;
        Ok(Response::new(pb::Empty {}))
    }

    async fn release(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        self.log_order("released by the runner").await;
        self.ask(Query::Release).await?;
        Ok(Response::new(pb::Empty {}))
    }

    async fn crash(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        self.run_span().await.in_scope(|| {
            tracing::warn!("crashing on the runner's order (the scenario's kill: SIGKILL follows)")
        });
        self.ask(Query::Crash).await?;
        Ok(Response::new(pb::Empty {}))
    }

    async fn events(&self, _: Request<pb::Empty>) -> Result<Response<pb::EventsResponse>, Status> {
        let e = self.ask(Query::Events).await?;
        Ok(Response::new(pb::EventsResponse {
            alerts: e
                .alerts
                .into_iter()
                .map(|a| pb::AlertLine {
                    at_ns: a.at,
                    line: a.line,
                })
                .collect(),
            recoveries: e
                .recoveries
                .iter()
                .map(|r| pb::RecoveryRow {
                    dead_instance: u32::from(r.dead_instance.0),
                    recovered_by: u32::from(r.recovered_by.0),
                    detected_ns: r.detected_at,
                    unfrozen_ns: r.unfrozen_at,
                    cache_recovered_ns: r.cache_recovered_at,
                    completed_ns: r.completed_at,
                    redo_bytes_read: r.redo_bytes_read,
                    blocks_recovered: r.blocks_recovered,
                    transactions_rolled_back: r.transactions_rolled_back,
                })
                .collect(),
        }))
    }

    async fn shutdown(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        tracing::info!("shutdown asked over the admin service: stopping");
        // Answer first, then stop serving.
        let s = self.0.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            s.shutdown.notify_one();
        });
        Ok(Response::new(pb::Empty {}))
    }
}
