//! Two processes recording runs into one store at once, each opening the
//! store for every run as `fusionlab run` does (the first opens race to
//! create the schema too): every run of both is there, numbered once.
//!
//! The writers are this test binary again, started with `WRITER_DIR` set.

use std::process::Command;

use fusion_history::{Access, NewRun, RunStore};

const RUNS_EACH: usize = 150;

fn writer(dir: &str, name: &str) {
    for i in 0..RUNS_EACH {
        let store = RunStore::open(std::path::Path::new(dir), Access::Write)
            .unwrap_or_else(|e| panic!("{name} run {i}: {e}"));
        let run = NewRun {
            scenario: name.to_string(),
            seed: i as u64,
            report_json: "{}".into(),
            // A report of a realistic size: the write takes a while.
            report_text: "x".repeat(64 * 1024),
            ..NewRun::default()
        };
        store
            .record(&run)
            .unwrap_or_else(|e| panic!("{name} run {i}: {e}"));
    }
}

#[test]
fn two_processes_record_at_once() {
    if let (Ok(dir), Ok(name)) = (std::env::var("WRITER_DIR"), std::env::var("WRITER_NAME")) {
        writer(&dir, &name);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("this test binary");
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            Command::new(&exe)
                .args(["two_processes_record_at_once", "--exact", "--nocapture"])
                .env("WRITER_DIR", dir.path())
                .env("WRITER_NAME", name)
                .spawn()
                .expect("a writer starts")
        })
        .collect();
    for mut c in children {
        let status = c.wait().expect("a writer ends");
        assert!(status.success(), "a writer failed: {status}");
    }
    let store = RunStore::open(dir.path(), Access::Read).expect("opens");
    let rows = store.list(None).expect("lists");
    assert_eq!(rows.len(), 2 * RUNS_EACH);
    for name in ["a", "b"] {
        let mut seeds: Vec<u64> = rows
            .iter()
            .filter(|r| r.scenario == name)
            .map(|r| r.seed)
            .collect();
        seeds.sort_unstable();
        assert_eq!(seeds, (0..RUNS_EACH as u64).collect::<Vec<_>>(), "{name}");
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    assert_eq!(ids, (1..=(2 * RUNS_EACH) as i64).collect::<Vec<_>>());
    // The two writers' runs interleave: they did write at once.
    let switches = rows
        .windows(2)
        .filter(|w| w[0].scenario != w[1].scenario)
        .count();
    eprintln!("writers took turns {switches} times");
}

/// Processes started together on a directory with no store yet: each
/// opens it once (they race to turn on the write-ahead log and create the
/// schema, which SQLite answers with "busy" at once rather than waiting)
/// and records one run. Every one gets in, in every round.
#[test]
fn processes_creating_one_store_at_once_all_get_in() {
    const ROUNDS: usize = 12;
    const PROCESSES: usize = 6;
    if let (Ok(dir), Ok(go)) = (std::env::var("CREATOR_DIR"), std::env::var("CREATOR_GO")) {
        // All start together: when the parent makes the file `go`.
        let waited = std::time::Instant::now();
        while !std::path::Path::new(&go).exists() {
            assert!(waited.elapsed().as_secs() < 10, "no go in 10 s");
            std::thread::yield_now();
        }
        let store = RunStore::open(std::path::Path::new(&dir), Access::Write)
            .unwrap_or_else(|e| panic!("open: {e}"));
        store
            .record(&NewRun {
                scenario: "c".into(),
                ..NewRun::default()
            })
            .unwrap_or_else(|e| panic!("record: {e}"));
        return;
    }
    let exe = std::env::current_exe().expect("this test binary");
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().expect("tempdir");
        let signal = tempfile::tempdir().expect("tempdir");
        let go = signal.path().join("go");
        let children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                Command::new(&exe)
                    .args([
                        "processes_creating_one_store_at_once_all_get_in",
                        "--exact",
                        "--nocapture",
                    ])
                    .env("CREATOR_DIR", dir.path())
                    .env("CREATOR_GO", &go)
                    .spawn()
                    .expect("a creator starts")
            })
            .collect();
        // Give the last one started time to reach its wait.
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::fs::write(&go, b"").expect("go");
        for mut c in children {
            let status = c.wait().expect("a creator ends");
            assert!(
                status.success(),
                "round {round}: a creator failed: {status}"
            );
        }
        let store = RunStore::open(dir.path(), Access::Read).expect("opens");
        assert_eq!(
            store.list(None).expect("lists").len(),
            PROCESSES,
            "round {round}"
        );
    }
}
