//! `fusionlab bench --live`: what the live runtime costs. A 2-way CR
//! transfer of an 8 KB block between two instance processes, with every
//! modeled cost zero, against a raw TCP ping-pong of the same sizes (a 200
//! byte request, an 8 KB answer) between two processes on loopback, at 1 and
//! at 32 concurrent requesters, in the same run. Raw and live measurements
//! alternate over several rounds: a shared machine's load comes and goes
//! (and an idle virtual CPU wakes slowly), so a raw figure is only
//! comparable with a live one taken next to it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fusion_core::stats::Stat;
use fusion_live::admin_client::Admin;
use fusion_live::cluster::{self, UpOptions};
use fusion_live::runner::{self, LiveRun};

use crate::{Failure, exit};

/// The live benchmark scenario.
const LIVE_CR: &str = include_str!("../../bench/live_cr.toml");

/// Size of a block request on the raw side (a GCS message).
const REQUEST_BYTES: usize = 200;
/// Size of a shipped block.
const BLOCK_BYTES: usize = 8192;
/// Requester counts compared.
const CONCURRENCY: [u32; 2] = [1, 32];

/// Latency percentiles and throughput of one measurement.
#[derive(Clone, Copy, Debug, Default)]
struct Figures {
    p50_us: u64,
    p99_us: u64,
    per_s: f64,
    count: u64,
}

/// `fusionlab bench-echo`: answer every 200-byte request with 8 KB, one
/// thread per connection, until killed (the raw side of `bench --live`).
pub fn echo(listen: &str, addr_file: Option<&Path>) -> Result<u8> {
    let l = TcpListener::bind(listen).with_context(|| format!("cannot listen on {listen}"))?;
    let addr = l.local_addr()?;
    if let Some(f) = addr_file {
        cluster::write_addr_file(f, &[addr]).map_err(Failure::input)?;
    }
    for conn in l.incoming() {
        let Ok(mut c) = conn else { continue };
        std::thread::spawn(move || {
            let _ = c.set_nodelay(true);
            let mut req = [0u8; REQUEST_BYTES];
            let block = vec![7u8; BLOCK_BYTES];
            while c.read_exact(&mut req).is_ok() {
                if c.write_all(&block).is_err() {
                    return;
                }
            }
        });
    }
    Ok(exit::OK)
}

fn histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 3).expect("constant bounds are valid")
}

/// The raw ping-pong at `k` concurrent connections for `secs`.
fn raw(addr: &str, k: u32, secs: f64) -> Result<Figures> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let threads: Vec<_> = (0..k)
        .map(|_| {
            let addr = addr.to_string();
            std::thread::spawn(move || -> Result<hdrhistogram::Histogram<u64>> {
                let mut c = TcpStream::connect(&addr)?;
                c.set_nodelay(true)?;
                let req = [1u8; REQUEST_BYTES];
                let mut block = vec![0u8; BLOCK_BYTES];
                let mut h = histogram();
                while Instant::now() < end {
                    let t = Instant::now();
                    c.write_all(&req)?;
                    c.read_exact(&mut block)?;
                    let _ = h.record((t.elapsed().as_micros() as u64).max(1));
                }
                Ok(h)
            })
        })
        .collect();
    let mut all = histogram();
    for t in threads {
        let h = t
            .join()
            .map_err(|_| anyhow::anyhow!("a ping-pong thread panicked"))??;
        all.add(&h).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(Figures {
        p50_us: all.value_at_quantile(0.5),
        p99_us: all.value_at_quantile(0.99),
        per_s: all.len() as f64 / secs,
        count: all.len(),
    })
}

/// Live CR transfers with `k` reading sessions on instance 1 for `secs`.
async fn live(c: &cluster::ClusterFile, k: u32, secs: f64) -> Result<Figures, String> {
    let overrides = vec![
        format!("workload.readers.sessions_per_instance={k}"),
        format!("phase.measure.duration_s={secs}"),
    ];
    let loaded = fusion_scenario::load_str(LIVE_CR, "bench/live_cr.toml", &overrides)
        .map_err(|e| e.to_string())?;
    let warmup = loaded
        .variants
        .first()
        .and_then(|v| v.scenario.phases.first())
        .map_or(0, |p| p.duration);
    let inst1 = c
        .instances
        .first()
        .ok_or("the cluster has no instance")?
        .clone();
    let admin = Admin::new("inst1", &inst1.admin, &c.token)?;
    let run = LiveRun {
        cluster: c,
        text: LIVE_CR,
        label: "bench/live_cr.toml",
        overrides: &overrides,
        seed: None,
        interval_ns: runner::DEFAULT_INTERVAL_NS,
        check: false,
        control: None,
        hold: None,
        progress: false,
    };
    // Forget the warm-up's round trips once it is over (loading takes a moment too).
    let reset = async {
        tokio::time::sleep(Duration::from_nanos(warmup) + Duration::from_millis(300)).await;
        admin.transfers(true).await
    };
    let (result, reset) = tokio::join!(runner::run(&loaded, &run), reset);
    let (result, _) = result.map_err(|e| e.message)?;
    reset?;
    let t = admin.transfers(false).await?;
    let cr = t
        .kinds
        .iter()
        .find(|x| x.kind == "cr")
        .ok_or("no cr round trips reported")?;
    let measure = result
        .variants
        .first()
        .and_then(|v| v.phase("measure"))
        .ok_or("no measure phase")?;
    let received = measure
        .instance(1)
        .map_or(0, |i| i.stats.get(Stat::GcCrBlocksReceived));
    Ok(Figures {
        p50_us: cr.p50_us,
        p99_us: cr.p99_us,
        per_s: received as f64 / (measure.elapsed_ns as f64 / 1e9).max(1e-9),
        count: received,
    })
}

/// The median of some values (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

pub fn bench_live(secs: f64, rounds: u32, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    if !(secs > 0.0 && secs <= 600.0) {
        return Err(Failure::input(format!("--seconds must be in (0, 600], got {secs}")).into());
    }
    if !(1..=20).contains(&rounds) {
        return Err(Failure::input(format!("--rounds must be in 1..=20, got {rounds}")).into());
    }
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let dir = std::env::temp_dir().join(format!("fusionlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // Raw side: an echo process on loopback.
    let addr_file = dir.join("echo.addr");
    let mut echo = std::process::Command::new(&exe)
        .args(["bench-echo", "--listen", "127.0.0.1:0", "--addr-file"])
        .arg(&addr_file)
        .stdin(std::process::Stdio::null())
        .spawn()
        .context("cannot start the echo process")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr = loop {
        if let Ok(t) = std::fs::read_to_string(&addr_file)
            && let Some(a) = t.lines().next()
        {
            break a.to_string();
        }
        if Instant::now() > deadline {
            let _ = echo.kill();
            return Err(anyhow::anyhow!("the echo process did not start"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };

    // Live side: two instance processes and a store.
    let c = cluster::up(&UpOptions {
        instances: 2,
        dir: dir.join("cluster"),
        base_port: 0,
        exe,
        log_args: Vec::new(),
    })
    .map_err(|e| {
        let _ = echo.kill();
        Failure {
            code: exit::LIVE_FAILED,
            message: format!("bench --live: {e}"),
        }
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // measured[k] = one (raw, live) pair per round at CONCURRENCY[k].
    let mut measured: Vec<Vec<(Figures, Figures)>> = vec![Vec::new(); CONCURRENCY.len()];
    let mut failure = None;
    'rounds: for round in 1..=rounds {
        for (k, &n) in CONCURRENCY.iter().enumerate() {
            writeln!(
                err,
                "round {round}/{rounds}, {n} requester(s): raw TCP ping-pong \
                 ({REQUEST_BYTES} B request, {BLOCK_BYTES} B answer), then live 2-way CR \
                 transfers (all modeled costs zero)..."
            )?;
            let r = match raw(&addr, n, secs) {
                Ok(r) => r,
                Err(e) => {
                    failure = Some(format!("raw ping-pong: {e}"));
                    break 'rounds;
                }
            };
            match rt.block_on(live(&c, n, secs)) {
                Ok(l) => measured[k].push((r, l)),
                Err(e) => {
                    failure = Some(e);
                    break 'rounds;
                }
            }
        }
    }
    drop(rt);
    let _ = echo.kill();
    let _ = echo.wait();
    for m in &c.instances {
        cluster::stop(m.pid, Duration::from_secs(3));
    }
    cluster::stop(c.store.pid, Duration::from_secs(3));
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(e) = failure {
        return Err(Failure {
            code: exit::LIVE_FAILED,
            message: format!("bench --live: {e}"),
        }
        .into());
    }

    writeln!(
        out,
        "Live transfer cost vs raw TCP on this machine ({secs} s per measurement, {rounds} \
         alternating rounds; compare ratios)"
    )?;
    let mut table = comfy_table::Table::new();
    table
        .load_style(fusion_report::AWR_STYLE)
        .force_no_tty()
        .set_header(vec![
            "requesters",
            "round",
            "raw p50",
            "raw p99",
            "raw rt/s",
            "live p50",
            "live p99",
            "live xfer/s",
            "p50 x",
            "xfer/s %",
        ]);
    let row = |n: u32, round: String, r: &Figures, l: &Figures| {
        vec![
            n.to_string(),
            round,
            format!("{}us", r.p50_us),
            format!("{}us", r.p99_us),
            format!("{:.0}", r.per_s),
            format!("{}us", l.p50_us),
            format!("{}us", l.p99_us),
            format!("{:.0}", l.per_s),
            format!("{:.2}", l.p50_us as f64 / r.p50_us.max(1) as f64),
            format!("{:.0}%", 100.0 * l.per_s / r.per_s.max(1e-9)),
        ]
    };
    let mut summary = Vec::new();
    for (k, &n) in CONCURRENCY.iter().enumerate() {
        let pairs = &measured[k];
        for (i, (r, l)) in pairs.iter().enumerate() {
            table.add_row(row(n, (i + 1).to_string(), r, l));
        }
        let p50x = median(
            pairs
                .iter()
                .map(|(r, l)| l.p50_us as f64 / r.p50_us.max(1) as f64)
                .collect(),
        );
        let share = median(
            pairs
                .iter()
                .map(|(r, l)| l.per_s / r.per_s.max(1e-9))
                .collect(),
        );
        summary.push((n, p50x, share));
    }
    for (i, c) in table.column_iter_mut().enumerate() {
        if i != 1 {
            c.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    writeln!(out, "{table}")?;
    for (n, p50x, share) in &summary {
        writeln!(
            out,
            "{n:>2} requester(s), median over the rounds: live p50 {p50x:.2}x raw, live \
             transfers/s {:.0}% of raw round trips/s",
            100.0 * share
        )?;
    }
    writeln!(
        out,
        "targets: live p50 <= 2x raw p50; live transfers/s at 32 requesters >= 50% of raw round trips/s"
    )?;
    let counts: Vec<String> = CONCURRENCY
        .iter()
        .zip(&measured)
        .map(|(n, p)| format!("{} at {n}", p.iter().map(|(_, l)| l.count).sum::<u64>()))
        .collect();
    writeln!(
        out,
        "(live: {} CR round trips timed at instance 1's process boundary)",
        counts.join(" and ")
    )?;
    Ok(exit::OK)
}
