//! Watching a live cluster. Metrics: each instance of a cluster `up` started serves
//! `GET /metrics` at the address its cluster file names. While a scenario
//! runs, a plain HTTP GET finds the v$ statistics and wait events under
//! their names, and the counters grow between two scrapes. When Debian's
//! `prometheus` is installed, a real Prometheus server scrapes the three
//! instances and answers a query over them (skipped with a note if not).
//! `fusionlab top --once` shows the phase, its faults and every instance's
//! figures of the interval.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Cluster, DATA_DIR, EXE, hot_rows, up};

/// `GET path` on `addr` with a plain HTTP/1.1 request: status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request sent");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("an answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("headers and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status");
    (status, body.to_string())
}

/// The value of the sample line that starts with `series` (name and labels).
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// A live run of the hot-rows scenario against `cluster`, its first phase
/// `secs` long, and `sets`.
fn start_run_with(cluster: &Cluster, dir: &Path, secs: u32, sets: &[&str]) -> Child {
    let file = dir.join("cluster.toml");
    cluster.0.write(&file).expect("cluster file");
    Command::new(EXE)
        .args(["run", "--live", "--no-store", "--cluster"])
        .arg(&file)
        .arg(hot_rows())
        .args(["--set", &format!("phase.run.duration_s={secs}")])
        .args(sets.iter().flat_map(|s| ["--set", s]))
        .env("FUSIONLAB_DATA_DIR", DATA_DIR)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fusionlab starts")
}

fn start_run(cluster: &Cluster, dir: &Path, secs: u32) -> Child {
    start_run_with(cluster, dir, secs, &[])
}

fn finish(run: Child) {
    let out = run.wait_with_output().expect("the run ends");
    assert!(
        out.status.success(),
        "the run failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const RECEIVED: &str = "fusionlab_sysstat_total{instance=\"1\",name=\"gc cr blocks received\"}";

#[test]
fn instances_serve_their_statistics_and_waits_to_a_plain_get() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = up(&dir.path().join("cluster"), 3);
    for m in &cluster.0.instances {
        assert!(m.metrics.starts_with("127.0.0.1:"), "{m:?}");
    }
    let addr = cluster.0.instances[0].metrics.clone();
    // Before a scenario: it answers, with nothing to count yet.
    let (status, body) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    assert!(
        body.contains("fusionlab_scenario_loaded{instance=\"1\"} 0"),
        "{body}"
    );
    assert_eq!(get(&addr, "/").0, 404);

    let run = start_run(&cluster, dir.path(), 4);
    // The first scrape that sees blocks received, then one a second later.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (first, body) = loop {
        let (_, body) = get(&addr, "/metrics");
        if let Some(v) = value(&body, RECEIVED).filter(|&v| v > 0.0) {
            break (v, body);
        }
        assert!(
            Instant::now() < deadline,
            "no blocks received in 30 s:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for series in [
        "fusionlab_scenario_loaded{instance=\"1\"} 1",
        "fusionlab_sysstat_total{instance=\"1\",name=\"gc current blocks received\"}",
        "fusionlab_sysstat_total{instance=\"1\",name=\"user commits\"}",
        "fusionlab_sysstat_seconds_total{instance=\"1\",name=\"gc cr block receive time\"}",
        "fusionlab_waits_total{instance=\"1\",event=\"gc cr block 2-way\"}",
        "fusionlab_wait_seconds_total{instance=\"1\",event=\"gc cr block 2-way\"}",
        "fusionlab_run_queue_length{instance=\"1\"}",
        "fusionlab_lms_backlog{instance=\"1\"}",
        "# TYPE fusionlab_sysstat counter",
    ] {
        assert!(body.contains(series), "no {series} in\n{body}");
    }
    std::thread::sleep(Duration::from_secs(1));
    let (_, later) = get(&addr, "/metrics");
    let second = value(&later, RECEIVED).expect("still counted");
    assert!(
        second > first,
        "gc cr blocks received did not grow: {first} then {second}"
    );
    // Every instance serves its own.
    for m in &cluster.0.instances[1..] {
        let (_, body) = get(&m.metrics, "/metrics");
        let mine = format!(
            "fusionlab_sysstat_total{{instance=\"{}\",name=\"user commits\"}}",
            m.id
        );
        assert!(body.contains(&mine), "{}: {body}", m.metrics);
    }
    finish(run);
}

/// A port free on loopback now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A Prometheus server this test started, stopped when the test ends.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_every_instance() {
    let Ok(prometheus) = which("prometheus") else {
        eprintln!("skipped: no `prometheus` on PATH (apt-get install prometheus)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = up(&dir.path().join("cluster"), 3);
    let targets: Vec<String> = cluster
        .0
        .instances
        .iter()
        .map(|m| format!("'{}'", m.metrics))
        .collect();
    // The shipped configuration (cluster/prometheus.yml), its compose
    // targets replaced by this cluster's.
    let shipped = std::fs::read_to_string(repo().join("cluster/prometheus.yml")).expect("shipped");
    let compose_targets = r#"["inst1:9100", "inst2:9100", "inst3:9100"]"#;
    assert!(shipped.contains(compose_targets), "{shipped}");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        shipped.replace(compose_targets, &format!("[{}]", targets.join(", "))),
    )
    .expect("config");
    let web = format!("127.0.0.1:{}", free_port());
    let _server = Prometheus(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).expect("log"))
            .spawn()
            .expect("prometheus starts"),
    );
    let run = start_run(&cluster, dir.path(), 5);
    finish(run);
    // What Prometheus scraped: the blocks each instance received.
    let query =
        "/api/v1/query?query=fusionlab_sysstat_total%7Bname%3D%22gc%20cr%20blocks%20received%22%7D";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = TcpStream::connect(&web).ok().map(|_| get(&web, query));
        if let Some((200, body)) = answer {
            let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
            let mut seen: Vec<(String, f64)> = result
                .iter()
                .map(|r| {
                    let value = r["value"][1].as_str().and_then(|s| s.parse().ok());
                    (
                        r["metric"]["instance"].as_str().unwrap_or("?").to_string(),
                        value.unwrap_or(0.0),
                    )
                })
                .collect();
            seen.sort_by(|a, b| a.0.cmp(&b.0));
            if seen.len() == 3 && seen.iter().all(|(_, v)| *v > 0.0) {
                let names: Vec<&str> = seen.iter().map(|(i, _)| i.as_str()).collect();
                assert_eq!(names, ["1", "2", "3"], "{body}");
                eprintln!("prometheus scraped gc cr blocks received: {seen:?}");
                dashboard_queries_answer(&web);
                break;
            }
        }
        let log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "prometheus did not scrape the three instances in 30 s; its log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every query of the shipped Grafana dashboard is one Prometheus answers
/// with data (Grafana's `$__rate_interval` as 5 s).
fn dashboard_queries_answer(web: &str) {
    let text =
        std::fs::read_to_string(repo().join("cluster/grafana-dashboard.json")).expect("dashboard");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6);
    for p in panels {
        for t in p["targets"].as_array().expect("targets") {
            let expr = t["expr"]
                .as_str()
                .expect("expr")
                .replace("$__rate_interval", "5s");
            let (status, body) = get(web, &format!("/api/v1/query?query={}", url_encode(&expr)));
            let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(
                (status, v["status"].as_str()),
                (200, Some("success")),
                "{expr}: {body}"
            );
            // A gauge of now may be empty after the run (no session waits);
            // every counter and rate has series.
            if !expr.starts_with("fusionlab_sessions_waiting") {
                let n = v["data"]["result"].as_array().map_or(0, Vec::len);
                assert!(n > 0, "{}: no series for {expr}", p["title"]);
            }
        }
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The path of `program` on PATH.
fn which(program: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or(())
}

#[test]
fn top_shows_the_phase_its_faults_and_each_instances_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = up(&dir.path().join("cluster"), 3);
    let file = dir.path().join("cluster.toml");
    let run = start_run_with(
        &cluster,
        dir.path(),
        1,
        &["phase.slow-link-inst1.duration_s=5"],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let screen = loop {
        let out = Command::new(EXE)
            .args(["top", "--once", "--interval-ms", "500", "--cluster"])
            .arg(&file)
            .output()
            .expect("top runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        if screen.contains("phase slow-link-inst1") {
            break screen;
        }
        assert!(
            Instant::now() < deadline,
            "never in the faulted phase:\n{screen}"
        );
    };
    for line in [
        "scenario live-hot-rows / live-hot-rows  phase slow-link-inst1",
        "faults in force: latency +2.0 ms on inst1's links in \"slow-link-inst1\"",
        "Inst  gc cr ms  gc cur ms blocks/s  commits/s runq  LMS bklg active state",
    ] {
        assert!(
            screen.lines().any(|l| l == line),
            "no {line:?} in\n{screen}"
        );
    }
    // A line per instance, up, with blocks received in the interval.
    for id in 1..=3 {
        let row = screen
            .lines()
            .find(|l| l.starts_with(&format!("inst{id} ")) && l.ends_with(" up"))
            .unwrap_or_else(|| panic!("no row for inst{id}:\n{screen}"));
        let blocks: f64 = row
            .split_whitespace()
            .nth(3)
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("blocks/s in {row:?}"));
        assert!(blocks > 0.0, "{row}");
    }
    assert!(screen.contains("ms/s  avg"), "top waits:\n{screen}");
    assert!(screen.lines().all(|l| l.chars().count() <= 100));
    finish(run);
}
