//! An instance's Prometheus metrics: `GET /metrics` on its own listener
//! (`fusionlab instance --metrics ADDR`, the cluster file's `metrics`).
//!
//! Every scrape asks the instance host for its counters and status at that
//! moment and writes them in the OpenMetrics text format
//! (`prometheus-client`), under the DBA's names as labels:
//!
//! - `fusionlab_sysstat_total{instance="1",name="gc cr blocks received"}`:
//!   every v$sysstat statistic counted in things or bytes;
//!   `fusionlab_sysstat_seconds_total{...}` the time-valued ones.
//! - `fusionlab_wait_seconds_total{instance="1",event="gc cr block 2-way"}`
//!   and `fusionlab_waits_total{...}`: v$system_event's time waited and
//!   waits, for every event that had a wait.
//! - gauges: `fusionlab_run_queue_length`, `fusionlab_lms_backlog`,
//!   `fusionlab_active_sessions`, `fusionlab_sessions_waiting{event=...}`
//!   (what sessions wait on now), `fusionlab_scenario_loaded`.
//!
//! The counters are the instance's since its scenario was loaded: a new
//! load starts them again, which Prometheus takes as a counter reset.
//! Nothing here needs the cluster token (a scrape reads counters and
//! nothing else); the listener is loopback unless given otherwise, and
//! takes at most [`CONNECTIONS_MAX`] connections at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use bytes::Bytes;
use fusion_core::stats::{Stat, Stats, Unit, Wait};
use fusion_wire::accept::{Acceptor, Reporter};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::host::HostStatus;

/// Scrapers connected at once (Prometheus holds one; a person with curl
/// another): past it, connections are closed at once.
pub const CONNECTIONS_MAX: usize = 8;
/// How long one connection may take to send its request and be answered.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// The content type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What one scrape shows of a loaded instance.
pub struct Sample {
    pub stats: Stats,
    pub status: HostStatus,
}

/// Asks the instance for a [`Sample`] (`None`: no scenario loaded, or the
/// host did not answer).
pub type Sampler =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Option<Sample>> + Send>> + Send + Sync>;

type Labels = Vec<(String, String)>;

/// The metrics of instance `id` (1-based) as OpenMetrics text.
pub fn encode(id: u8, sample: Option<&Sample>) -> String {
    let inst = || vec![("instance".to_string(), id.to_string())];
    let with = |key: &str, value: &str| {
        let mut l = inst();
        l.push((key.to_string(), value.to_string()));
        l
    };
    let mut registry = Registry::default();
    let loaded = Family::<Labels, Gauge>::default();
    loaded
        .get_or_create(&inst())
        .set(i64::from(sample.is_some()));
    registry.register(
        "fusionlab_scenario_loaded",
        "1 when the instance has a scenario loaded (its counters count from then)",
        loaded,
    );
    if let Some(s) = sample {
        let counts = Family::<Labels, Counter>::default();
        let seconds = Family::<Labels, Counter<f64, AtomicU64>>::default();
        for &stat in Stat::ALL {
            let v = s.stats.get(stat);
            match stat.unit() {
                Unit::Time => {
                    seconds
                        .get_or_create(&with("name", stat.name()))
                        .inc_by(v as f64 / 1e9);
                }
                Unit::Count | Unit::Bytes => {
                    counts.get_or_create(&with("name", stat.name())).inc_by(v);
                }
            }
        }
        registry.register(
            "fusionlab_sysstat",
            "v$sysstat statistics counted in things or bytes, by name",
            counts,
        );
        registry.register(
            "fusionlab_sysstat_seconds",
            "v$sysstat statistics that are times, in seconds, by name",
            seconds,
        );
        let waits = Family::<Labels, Counter>::default();
        let waited = Family::<Labels, Counter<f64, AtomicU64>>::default();
        for &w in Wait::ALL {
            let e = s.stats.event(w);
            if e.waits > 0 {
                waits
                    .get_or_create(&with("event", w.name()))
                    .inc_by(e.waits);
                waited
                    .get_or_create(&with("event", w.name()))
                    .inc_by(e.time_ns as f64 / 1e9);
            }
        }
        registry.register(
            "fusionlab_waits",
            "v$system_event total waits, by event",
            waits,
        );
        registry.register(
            "fusionlab_wait_seconds",
            "v$system_event time waited in seconds, by event",
            waited,
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str, v: usize| {
            let g = Family::<Labels, Gauge>::default();
            g.get_or_create(&inst())
                .set(i64::try_from(v).unwrap_or(i64::MAX));
            registry.register(name, help, g);
        };
        let st = &s.status;
        gauge(
            &mut registry,
            "fusionlab_run_queue_length",
            "processes waiting for a CPU now",
            st.run_queue,
        );
        gauge(
            &mut registry,
            "fusionlab_lms_backlog",
            "LMS jobs queued, running or set aside for a flush or a pin",
            st.lms_backlog,
        );
        gauge(
            &mut registry,
            "fusionlab_active_sessions",
            "sessions not idle",
            st.active_sessions,
        );
        let now = Family::<Labels, Gauge>::default();
        for (w, n) in &st.waits {
            now.get_or_create(&with("event", w.name()))
                .set(i64::from(*n));
        }
        registry.register(
            "fusionlab_sessions_waiting",
            "sessions waiting now, by event",
            now,
        );
    }
    let mut text = String::new();
    // Writing into a String does not fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

/// Serve `/metrics` of instance `id` on `listener` until `stop` ends.
pub async fn serve(
    id: u8,
    listener: TcpListener,
    sampler: Sampler,
    report: Reporter,
    stop: impl Future<Output = ()>,
) {
    let what = match listener.local_addr() {
        Ok(a) => format!("inst{id}: metrics listener {a}"),
        Err(_) => format!("inst{id}: metrics listener"),
    };
    let mut acceptor = Acceptor::new(listener, what, CONNECTIONS_MAX, report);
    tokio::pin!(stop);
    loop {
        let admitted = tokio::select! {
            a = acceptor.accept() => a,
            () = &mut stop => return,
        };
        let sampler = sampler.clone();
        tokio::spawn(async move {
            let _slot = admitted.slot;
            let io = hyper_util::rt::TokioIo::new(admitted.stream);
            let service = hyper::service::service_fn(move |req| {
                let sampler = sampler.clone();
                async move { Ok::<_, std::convert::Infallible>(answer(id, &req, &sampler).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(5))
                .serve_connection(io, service);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
        });
    }
}

async fn answer<B>(id: u8, req: &Request<B>, sampler: &Sampler) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "metrics are at /metrics\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n");
    }
    let sample = sampler().await;
    let mut r = Response::new(Full::new(Bytes::from(encode(id, sample.as_ref()))));
    if let Ok(v) = hyper::header::HeaderValue::from_str(CONTENT_TYPE) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_and_events_go_out_under_their_v_dollar_names() {
        let mut stats = Stats::default();
        stats.add(Stat::GcCrBlocksReceived, 12);
        stats.add(Stat::GcCrBlockReceiveTime, 30_000_000);
        stats.wait(Wait::GcCrBlock2Way, 1_500_000, true);
        stats.wait(Wait::GcCrBlock2Way, 500_000, true);
        let status = HostStatus {
            run_queue: 3,
            lms_backlog: 7,
            waits: vec![(Wait::GcCrBlock2Way, 2)],
            ..HostStatus::default()
        };
        let text = encode(2, Some(&Sample { stats, status }));
        for line in [
            "fusionlab_sysstat_total{instance=\"2\",name=\"gc cr blocks received\"} 12",
            "fusionlab_sysstat_seconds_total{instance=\"2\",name=\"gc cr block receive time\"} 0.03",
            "fusionlab_waits_total{instance=\"2\",event=\"gc cr block 2-way\"} 2",
            "fusionlab_wait_seconds_total{instance=\"2\",event=\"gc cr block 2-way\"} 0.002",
            "fusionlab_run_queue_length{instance=\"2\"} 3",
            "fusionlab_lms_backlog{instance=\"2\"} 7",
            "fusionlab_sessions_waiting{instance=\"2\",event=\"gc cr block 2-way\"} 2",
            "fusionlab_scenario_loaded{instance=\"2\"} 1",
            "# TYPE fusionlab_sysstat counter",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        // Every statistic, zero or not; events only when they had waits.
        let stats = text
            .lines()
            .filter(|l| l.starts_with("fusionlab_sysstat"))
            .count();
        assert_eq!(stats, Stat::ALL.len());
        assert!(!text.contains("gc current block 2-way"));
    }

    #[test]
    fn an_instance_without_a_scenario_says_so_and_nothing_else() {
        let text = encode(1, None);
        assert!(text.contains("fusionlab_scenario_loaded{instance=\"1\"} 0"));
        assert!(!text.contains("fusionlab_sysstat"));
    }
}
