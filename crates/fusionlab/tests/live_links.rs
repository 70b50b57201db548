//! The live interconnect loses nothing to a TCP connection broken under the
//! instances by something the scenario does not know of. Instance 2's
//! interconnect is reached through a proxy in this test (toxiproxy's
//! `reset_peer`, in spirit) that, again and again while the workload runs,
//! cuts every connection through it in the middle of the traffic: it
//! forwards half of what it just read, throws the rest away and closes both
//! ends. Whatever the proxy threw away (and whatever the senders' buffers
//! held) is sent again by the instances when their links connect again:
//! the run comes to rest, the checkers find every commit and every
//! consistent read right, and every block served was received.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fusion_live::admin_client::Admin;
use fusion_live::runner::{self, LiveRun};

mod common;
use common::up;

/// Connection resets the test makes (bounded), and the pause between two.
const RESETS: u64 = 8;
const RESET_EVERY: Duration = Duration::from_millis(400);

/// A TCP proxy whose connections can all be cut at once, mid-stream.
struct CuttingProxy {
    address: String,
    /// Bumped by [`CuttingProxy::cut`]: a connection opened under an older
    /// one is cut at its next bytes.
    generation: Arc<AtomicU64>,
    /// Connections taken, and bytes read but never forwarded.
    accepted: Arc<AtomicU64>,
    discarded: Arc<AtomicU64>,
    /// Connections cut (one per pair of sockets).
    cuts: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    /// Every socket, to close at the end.
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl CuttingProxy {
    fn start(upstream: String) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind on loopback");
        let address = listener.local_addr().expect("address").to_string();
        let p = CuttingProxy {
            address,
            generation: Arc::new(AtomicU64::new(0)),
            accepted: Arc::new(AtomicU64::new(0)),
            discarded: Arc::new(AtomicU64::new(0)),
            cuts: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            sockets: Arc::new(Mutex::new(Vec::new())),
        };
        let (generation, accepted, discarded, cuts, stop, sockets) = (
            p.generation.clone(),
            p.accepted.clone(),
            p.discarded.clone(),
            p.cuts.clone(),
            p.stop.clone(),
            p.sockets.clone(),
        );
        std::thread::spawn(move || {
            for down in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(down) = down else { continue };
                let Ok(up) = TcpStream::connect(&upstream) else {
                    continue;
                };
                accepted.fetch_add(1, Ordering::Relaxed);
                let born = generation.load(Ordering::Relaxed);
                let clone = |s: &TcpStream| s.try_clone().expect("clone a socket");
                if let Ok(mut all) = sockets.lock() {
                    all.extend([clone(&down), clone(&up)]);
                }
                // The peer's bytes towards instance 2 (the traffic), and
                // instance 2's Hello back.
                let pump = |from: TcpStream, to: TcpStream, cutting: bool| {
                    let generation = generation.clone();
                    let discarded = discarded.clone();
                    let cuts = cuts.clone();
                    move || pump(from, to, born, &generation, cutting, &discarded, &cuts)
                };
                std::thread::spawn(pump(clone(&down), clone(&up), true));
                std::thread::spawn(pump(up, down, false));
            }
        });
        p
    }

    /// Cut every connection open now, at its next bytes.
    fn cut(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    fn close(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.cut();
        if let Ok(all) = self.sockets.lock() {
            for s in all.iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        // Wake the accept loop so it sees `stop`.
        let _ = TcpStream::connect(&self.address);
    }
}

/// Copy `from` to `to` until either ends; when cutting and the proxy's
/// generation moved past `born`, forward half of the bytes just read, drop
/// the rest, and close both connections (the frame they belong to is
/// broken: its sender must send it again).
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    born: u64,
    generation: &AtomicU64,
    cutting: bool,
    discarded: &AtomicU64,
    cuts: &AtomicU64,
) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if cutting && generation.load(Ordering::Relaxed) != born {
            let half = n / 2;
            let _ = to.write_all(&buf[..half]);
            discarded.fetch_add((n - half) as u64, Ordering::Relaxed);
            cuts.fetch_add(1, Ordering::Relaxed);
            break;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

#[test]
fn connections_cut_under_a_running_workload_lose_no_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(dir.path(), 3);
    let proxy = CuttingProxy::start(c.0.instances[1].interconnect.clone());
    // Instances 1 and 3 reach instance 2 through the proxy.
    let mut cluster = c.0.clone();
    cluster.instances[1].interconnect = proxy.address.clone();

    let text = std::fs::read_to_string(common::hot_rows()).expect("scenario");
    let overrides = vec!["phase.run.duration_s=6".to_string()];
    let loaded =
        fusion_scenario::load_str(&text, "hot_rows.toml", &overrides).expect("scenario loads");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let run = LiveRun {
        cluster: &cluster,
        text: &text,
        label: "hot_rows.toml",
        overrides: &overrides,
        seed: None,
        interval_ns: runner::DEFAULT_INTERVAL_NS,
        check: true,
        progress: false,
        control: None,
        hold: None,
    };
    let ran = std::thread::scope(|s| {
        let cutter = s.spawn(|| {
            // Once both links into instance 2 are up (the run is loaded),
            // cut them again and again in the first phase.
            let started = Instant::now();
            while proxy.accepted.load(Ordering::Relaxed) < 2 {
                if started.elapsed() > Duration::from_secs(30) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_secs(1));
            for _ in 0..RESETS {
                proxy.cut();
                std::thread::sleep(RESET_EVERY);
            }
        });
        let ran = rt
            .block_on(runner::run(&loaded, &run))
            .map_err(|e| e.message);
        cutter.join().expect("the cutter ends");
        ran
    });
    let (result, outcomes) = ran.unwrap_or_else(|e| panic!("the live run failed: {e}"));

    // The faults happened: connections were cut with bytes thrown away,
    // and the links connected again each time.
    let cuts = proxy.cuts.load(Ordering::Relaxed);
    assert!(cuts >= RESETS, "only {cuts} connections were cut");
    assert!(proxy.discarded.load(Ordering::Relaxed) > 0, "nothing lost");
    assert!(
        proxy.accepted.load(Ordering::Relaxed) >= 2 + cuts,
        "the links did not connect again"
    );

    // Nothing hung (the cluster came to rest), no protocol error, and the
    // data is right.
    let o = &outcomes[0];
    assert!(o.errors.is_empty(), "{:#?}", o.errors);
    let check = o.check.as_ref().expect("checked");
    assert!(check.violations.is_empty(), "{:#?}", check.violations);
    assert!(check.commits > 100, "too little work: {check:?}");
    let v = &result.variants[0];
    assert_eq!(v.phases.len(), 3, "every phase ran");

    // Every block one instance served, another received: none was lost
    // with a connection, none handed over twice.
    let sums = rt.block_on(async {
        let mut out = Vec::new();
        for m in &c.0.instances {
            let a = Admin::new(&format!("inst{}", m.id), &m.admin, &c.0.token).expect("admin");
            let s = a.stats().await.expect("stats");
            assert!(
                s.sysstat.get("gc blocks lost").copied().unwrap_or(0) == 0,
                "inst{}: a block request was called lost",
                m.id
            );
            out.push(s);
        }
        out
    });
    let sum = |name: &str| -> u64 {
        sums.iter()
            .map(|s| s.sysstat.get(name).copied().unwrap_or(0))
            .sum()
    };
    assert_eq!(sum("gc cr blocks served"), sum("gc cr blocks received"));
    assert_eq!(
        sum("gc current blocks served"),
        sum("gc current blocks received")
    );
    assert!(sum("gc current blocks served") > 0);
    proxy.close();
}
