//! The live cluster as real processes on loopback: the `fusionlab` binary
//! started as a block store and instance processes, a scenario run against
//! them, and what must hold afterwards.
//!
//! - data: every committed change present, every CR read consistent (the
//!   same checkers as the simulator, over the instances' histories);
//! - statistics that must agree across instances (blocks served = received);
//! - the cluster-wide sequence figures (values out of order, duplicated);
//! - a killed instance ends the run with an error naming it, and the store
//!   keeps every redo record it acknowledged.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fusion_core::stats::Stat;
use fusion_core::types::InstId;
use fusion_live::admin_client::Admin;
use fusion_live::cluster::{self, ClusterFile};
use fusion_live::runner::{self, LiveRun};

mod common;
use common::{Cluster, EXE, assert_ok, fusionlab, up};

fn scenario_path() -> PathBuf {
    common::hot_rows()
}

/// `fusionlab status --cluster FILE`.
fn status(file: &Path) -> std::process::Output {
    fusionlab([Path::new("status"), Path::new("--cluster"), file])
}

/// Held by the tests that read real timings and by the one that overloads
/// a CPU on purpose, so that on a small machine the overload does not land
/// in the middle of another test's measured phase (a fault applied late).
static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    // A failed test must not fail the others through a poisoned lock.
    TIMING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn three_instances_keep_data_correct_and_agree_on_transfers() {
    let _timing = timing_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(dir.path(), 3);
    let text = std::fs::read_to_string(scenario_path()).expect("scenario");
    let loaded = fusion_scenario::load_str(&text, "hot_rows.toml", &[]).expect("loads");
    let rt = rt();
    let (result, outcomes) = rt
        .block_on(runner::run(
            &loaded,
            &LiveRun {
                cluster: &c.0,
                text: &text,
                label: "hot_rows.toml",
                overrides: &[],
                seed: None,
                interval_ns: runner::DEFAULT_INTERVAL_NS,
                check: true,
                progress: false,
                control: None,
                hold: None,
            },
        ))
        .expect("the live run completes");

    // Data: the simulator's checkers over the live histories.
    let check = outcomes[0].check.as_ref().expect("checked");
    assert!(check.violations.is_empty(), "{:#?}", check.violations);
    assert!(check.commits > 100, "too little work: {check:?}");
    assert!(check.reads_checked > 100, "too little work: {check:?}");
    assert!(outcomes[0].transfers > 100, "blocks hardly crossed");

    // The report has every phase and instance, with cluster traffic.
    let v = &result.variants[0];
    assert_eq!(v.phases.len(), 3);
    for p in &v.phases {
        assert_eq!(p.instances.len(), 3);
        assert!(
            p.elapsed_ns > 500_000_000,
            "{} lasted {} ns",
            p.name,
            p.elapsed_ns
        );
    }
    for id in 1..=3u8 {
        let s = &v.phases[0].instance(id).expect("instance").stats;
        assert!(
            s.get(Stat::GcCrBlocksReceived) > 0,
            "inst{id} received no CR block"
        );
        assert!(
            s.get(Stat::GcCurrentBlocksReceived) > 0,
            "inst{id} received no current block"
        );
    }
    // Delay on instance 1's links (2 ms each way, applied by the receivers'
    // network model, the simulator's) shows as wire time on both sides of
    // those links.
    let slow_link = v.phase("slow-link-inst1").expect("phase");
    let wire_ms = |p: &fusion_report::PhaseResult, id: u8| {
        let s = &p.instance(id).expect("instance").stats;
        s.get(Stat::DecompCrWire) as f64 / 1e6 / s.get(Stat::GcCrBlocksReceived).max(1) as f64
    };
    // The scenario's own interconnect (the default 50 us one way, 10 us of
    // jitter) is added to the real loopback: no block arrives sooner.
    for id in 1..=3u8 {
        let w = wire_ms(&v.phases[0], id);
        assert!(
            (0.05..1.0).contains(&w),
            "inst{id} cr wire {w:.3} ms with the scenario's 50 us latency"
        );
    }
    // Every block inst1 receives crossed a slowed link; inst2 and inst3
    // receive from inst1 (slowed) and from each other (not).
    assert!(
        wire_ms(slow_link, 1) > 1.5,
        "inst1 cr wire {:.3} ms with 2 ms added on its links",
        wire_ms(slow_link, 1)
    );
    for id in [2u8, 3] {
        assert!(
            wire_ms(slow_link, id) > 3.0 * wire_ms(&v.phases[0], id),
            "inst{id} cr wire {:.3} ms (slow links) vs {:.3} ms (none)",
            wire_ms(slow_link, id),
            wire_ms(&v.phases[0], id)
        );
    }
    assert!(
        wire_ms(&v.phases[0], 1) < 1.0,
        "inst1 cr wire {:.3} ms without a fault",
        wire_ms(&v.phases[0], 1)
    );

    // The slow redo of instance 3 shows as its flush time, not the others'.
    let slow = v.phase("slow-redo-inst3").expect("phase");
    let flush = |id: u8| {
        let s = &slow.instance(id).expect("instance").stats;
        s.event(fusion_core::stats::Wait::GcsLogFlushSync).time_ns as f64
            / s.event(fusion_core::stats::Wait::GcsLogFlushSync)
                .waits
                .max(1) as f64
    };
    assert!(
        flush(3) > 5.0 * flush(1).max(1.0),
        "inst3 {} ns vs inst1 {} ns",
        flush(3),
        flush(1)
    );

    // After the quiesce nothing is on the wire: whatever one instance served,
    // another received, for both kinds of block.
    let totals = rt.block_on(async {
        let mut out = Vec::new();
        for m in &c.0.instances {
            let a = Admin::new(&format!("inst{}", m.id), &m.admin, &c.0.token).expect("admin");
            out.push(a.stats().await.expect("stats"));
        }
        out
    });
    let sum = |name: &str| -> u64 {
        totals
            .iter()
            .map(|s| s.sysstat.get(name).copied().unwrap_or(0))
            .sum()
    };
    assert_eq!(sum("gc cr blocks served"), sum("gc cr blocks received"));
    assert_eq!(
        sum("gc current blocks served"),
        sum("gc current blocks received")
    );
    assert!(sum("gc cr blocks served") > 0);
}

#[test]
fn a_killed_instance_is_noted_lost_the_run_goes_on_and_the_store_keeps_acknowledged_redo() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(dir.path(), 3);
    let text = std::fs::read_to_string(scenario_path()).expect("scenario");
    let overrides = vec!["phase.run.duration_s=8".to_string()];
    let loaded = fusion_scenario::load_str(&text, "hot_rows.toml", &overrides).expect("loads");
    let rt = rt();
    let victim = c.0.instances[1].clone();
    let (outcome, redo_before) = rt.block_on(async {
        let run = LiveRun {
            cluster: &c.0,
            text: &text,
            label: "hot_rows.toml",
            overrides: &overrides,
            seed: None,
            interval_ns: runner::DEFAULT_INTERVAL_NS,
            check: false,
            progress: false,
            control: None,
            hold: None,
        };
        let killer = async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            // Commits inst2 acknowledged so far: each ended a `log file
            // sync` wait once LGWR's write was durable in the store.
            let a = Admin::new("inst2", &victim.admin, &c.0.token).expect("admin");
            let s = a.stats().await.expect("stats before the kill");
            let acked = s
                .events
                .iter()
                .find(|e| e.name == "log file sync")
                .map_or(0, |e| e.waits);
            let _ = Command::new("kill")
                .arg("-9")
                .arg(victim.pid.to_string())
                .status();
            acked
        };
        tokio::join!(runner::run(&loaded, &run), killer)
    });
    // The runner goes on without inst2 (nobody scripted its death), and
    // says in the alert log that it lost it.
    let (result, _) = outcome.expect("the run goes on without inst2");
    let lost = result
        .variants
        .iter()
        .flat_map(|v| &v.phases)
        .flat_map(|p| &p.alert_log)
        .find(|a| a.instance == 2 && a.line.contains("(not in the scenario)"));
    assert!(lost.is_some(), "no alert line for the lost inst2");

    // The store still has inst2's redo: at least every write acknowledged
    // before the kill, readable (no torn record).
    let _in_runtime = rt.enter();
    let layout_codec = fusion_wire::Codec::new(8192, 3, u32::MAX);
    let store = fusion_live::store_client::Store::new(
        &c.0.store.address,
        &c.0.token,
        layout_codec,
        InstId(0),
    )
    .expect("store client");
    let records = rt
        .block_on(store.read_redo(1))
        .expect("inst2's redo thread reads back");
    assert!(
        redo_before > 0,
        "inst2 acknowledged no commit before the kill"
    );
    let commits = records.iter().filter(|r| r.commit).count() as u64;
    assert!(
        commits >= redo_before,
        "inst2 acknowledged {redo_before} commits but its redo thread holds {commits} commit records"
    );
}

#[test]
fn up_status_down_from_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("c");
    let up_args = ["up", "--instances", "2", "--dir"].map(Path::new);
    let out = fusionlab(up_args.iter().copied().chain([d.as_path()]));
    assert_ok(&out);
    let file = d.join("cluster.toml");
    let c = Cluster(ClusterFile::read(&file).expect("cluster file"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("inst2") && text.contains(&c.0.store.address),
        "{text}"
    );

    let st = status(&file);
    let text = String::from_utf8_lossy(&st.stdout);
    assert!(st.status.success(), "{text}");
    assert!(
        text.contains("inst1") && text.contains("inst2") && text.contains("yes"),
        "{text}"
    );

    // A second `up` on the same directory refuses.
    let again = fusionlab(up_args.iter().copied().chain([d.as_path()]));
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already up"));

    assert_ok(&fusionlab([
        Path::new("down"),
        Path::new("--cluster"),
        &file,
    ]));
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.0.instances.iter().any(|m| cluster::alive(m.pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        c.0.instances.iter().all(|m| !cluster::alive(m.pid)),
        "instances still running"
    );
    assert!(!file.exists(), "down leaves the cluster file");

    // Status of a cluster that is gone says so.
    std::fs::write(&file, toml::to_string(&c.0).expect("toml")).expect("write");
    let st = status(&file);
    assert_eq!(st.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&st.stdout).contains("NO"));
}

#[test]
fn run_live_from_the_command_line_prints_the_json_contract() {
    let out = Command::new(EXE)
        .args(["run", "--live", "--json", "--set", "phase.run.duration_s=1"])
        .arg(scenario_path())
        .env("FUSIONLAB_DATA_DIR", common::DATA_DIR)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The cluster it started in a directory of its own is gone with it.
    let cluster_dir = stderr
        .lines()
        .find_map(|l| l.strip_prefix("starting a local cluster of 3 instances in "))
        .expect("where the cluster ran");
    assert!(
        !Path::new(cluster_dir).exists(),
        "{cluster_dir} was left behind"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["scenario"], "live-hot-rows");
    let phases = v["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 3);
    let inst = &phases[0]["instances"][0];
    assert!(inst["sysstat"]["gc cr blocks received"].as_u64().is_some());
    assert!(
        inst["events"]["gc cr block 2-way"]["waits"]
            .as_u64()
            .is_some()
    );
}

#[test]
fn an_instance_that_cannot_keep_up_with_real_time_says_so() {
    let _timing = timing_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(dir.path(), 2);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/overload.toml");
    let text = std::fs::read_to_string(path).expect("scenario");
    let loaded = fusion_scenario::load_str(&text, "overload.toml", &[]).expect("loads");
    let started = Instant::now();
    let outcome = rt().block_on(runner::run(
        &loaded,
        &LiveRun {
            cluster: &c.0,
            text: &text,
            label: "overload.toml",
            overrides: &[],
            seed: None,
            interval_ns: runner::DEFAULT_INTERVAL_NS,
            check: false,
            progress: false,
            control: None,
            hold: None,
        },
    ));
    let err = outcome.expect_err("an instance far behind real time cannot finish the run");
    assert!(
        err.message.contains("inst1") && err.message.contains("behind real time"),
        "unexpected error: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the run took {:?} to stop",
        started.elapsed()
    );
    // Its admin service still answers: the host gives the thread back.
    let inst1 = &c.0.instances[0];
    let status = rt().block_on(async {
        Admin::new("inst1", &inst1.admin, &c.0.token)
            .expect("admin")
            .status(Duration::from_secs(5))
            .await
    });
    assert!(status.is_ok(), "inst1 does not answer: {status:?}");
}

/// One cluster, several loads: two variants of one scenario, then the same
/// scenario again. Every load replaces each instance's host and links while
/// its peers may still be on the previous load; no instance may die or take
/// a link from the previous load for one of the new.
#[test]
fn one_cluster_runs_variants_and_scenarios_back_to_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(&dir.path().join("c"), 3);
    let text = std::fs::read_to_string(scenario_path()).expect("scenario")
        + "\n[[variant]]\nname = \"one-lms\"\n\n[[variant]]\nname = \"two-lms\"\n\
           set = { \"parameters.gcs_server_processes\" = 2 }\n";
    let overrides = vec!["phase.run.duration_s=0.5".to_string()];
    let loaded = fusion_scenario::load_str(&text, "hot_rows+variants.toml", &overrides)
        .expect("scenario with variants loads");
    assert_eq!(loaded.variants.len(), 2);
    let rt = rt();
    for round in 0..2 {
        let run = LiveRun {
            cluster: &c.0,
            text: &text,
            label: "hot_rows+variants.toml",
            overrides: &overrides,
            seed: None,
            interval_ns: runner::DEFAULT_INTERVAL_NS,
            check: false,
            progress: false,
            control: None,
            hold: None,
        };
        let (result, _) = rt
            .block_on(runner::run(&loaded, &run))
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(result.variants.len(), 2, "round {round}");
        for v in &result.variants {
            let received: u64 = v
                .phases
                .iter()
                .flat_map(|p| p.instances.iter())
                .map(|i| {
                    i.stats.get(Stat::GcCrBlocksReceived)
                        + i.stats.get(Stat::GcCurrentBlocksReceived)
                })
                .sum();
            assert!(
                received > 0,
                "round {round}, variant {}: no block crossed",
                v.name
            );
        }
        for (i, m) in c.0.instances.iter().enumerate() {
            assert!(cluster::alive(m.pid), "round {round}: inst{} died", i + 1);
        }
    }
}

/// The cluster-wide sequence figures, measured live as the simulator
/// measures them: with CACHE NOORDER the two instances' ranges interleave,
/// so values come out of order; with CACHE ORDER never (a value is handed
/// out only after the other instance's, through the SV enqueue, so its
/// stamp is later); no value twice. Each phase counts only its own values.
#[test]
fn sequence_values_out_of_order_and_duplicated_are_measured_live() {
    let _timing = timing_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(dir.path(), 2);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/sequence.toml");
    let text = std::fs::read_to_string(path).expect("scenario");
    let loaded = fusion_scenario::load_str(&text, "sequence.toml", &[]).expect("loads");
    let (result, _) = rt()
        .block_on(runner::run(
            &loaded,
            &LiveRun {
                cluster: &c.0,
                text: &text,
                label: "sequence.toml",
                overrides: &[],
                seed: None,
                interval_ns: runner::DEFAULT_INTERVAL_NS,
                check: false,
                progress: false,
                control: None,
                hold: None,
            },
        ))
        .expect("the live run completes");
    let mut out_of_order = Vec::new();
    for v in &result.variants {
        let mut ooo = 0;
        for p in &v.phases {
            for x in &p.instances {
                let handed_out = x.stats.get(Stat::SeqValuesHandedOut);
                let o = x.stats.get(Stat::SeqValuesOutOfOrder);
                let at = format!("{} {} inst{}", v.name, p.name, x.id);
                assert!(handed_out > 0, "{at}: no value handed out");
                assert!(o <= handed_out, "{at}: {o} out of order of {handed_out}");
                assert_eq!(x.stats.get(Stat::SeqValuesDuplicated), 0, "{at}");
                ooo += o;
            }
        }
        out_of_order.push((v.name.as_str(), ooo));
    }
    assert_eq!(out_of_order.len(), 2);
    assert_eq!(out_of_order[0].0, "noorder");
    assert!(out_of_order[0].1 > 0, "{out_of_order:?}");
    assert_eq!(out_of_order[1], ("order", 0), "{out_of_order:?}");
}

/// What a stranger on the interconnect port gets: a refusal that says why
/// (wrong token; right token but another run), nothing at all for garbage,
/// and the instance carries on.
#[test]
fn the_interconnect_refuses_strangers_and_survives_garbage() {
    use std::io::{Read, Write};

    use fusion_wire::framing::{decode_frame, encode_frame, hello_frame};
    use fusion_wire::pb;

    let dir = tempfile::tempdir().expect("tempdir");
    let c = up(&dir.path().join("c"), 3);
    let file = dir.path().join("cluster.toml");
    std::fs::write(&file, toml::to_string(&c.0).expect("toml")).expect("write");
    assert_ok(&fusionlab([
        Path::new("run"),
        Path::new("--live"),
        Path::new("--cluster"),
        &file,
        Path::new("--set"),
        Path::new("phase.run.duration_s=0.3"),
        &scenario_path(),
    ]));
    let ic = &c.0.instances[0].interconnect;
    let refusal = |hello: pb::Hello| -> String {
        let mut s = std::net::TcpStream::connect(ic).expect("connects");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut buf = Vec::new();
        encode_frame(&hello_frame(hello), &mut buf);
        s.write_all(&buf).expect("writes");
        let mut len = [0u8; 4];
        s.read_exact(&mut len).expect("an answer");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).expect("the whole answer");
        match decode_frame(&body).expect("a frame").kind {
            Some(pb::frame::Kind::Refusal(r)) => r.reason,
            other => panic!("a refusal expected, got {other:?}"),
        }
    };
    let why = refusal(pb::Hello::new(InstId(1), "not-the-token", 1));
    assert!(why.contains("Hello.cluster_token"), "{why}");
    let why = refusal(pb::Hello::new(InstId(1), &c.0.token, 1));
    assert!(why.contains("not loaded for run 1"), "{why}");

    // A length no frame may have: the connection is dropped unanswered.
    let mut s = std::net::TcpStream::connect(ic).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(&[0xff; 16]).expect("writes");
    let mut b = [0u8; 8];
    // Closed with our garbage unread: a reset or an end of stream.
    match s.read(&mut b) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the connection should be dropped, got {other:?}"),
    }
    assert_eq!(s.read(&mut b).expect("closed, not timed out"), 0);

    let st = status(&file);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stdout)
    );
}
