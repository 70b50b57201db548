//! Where the time of a starved LMS is booked. The CPU-starvation myth's
//! point is that a starved node's LMS, not the network, slows everyone: so
//! the time a request waits for any serving LMS's CPU — the master's as
//! well as the holder's — must show as `lms cpu wait`, and a transfer that
//! waited more than 1 ms for either must be named congested.

use fusion_core::stats::{Stat, Stats, Wait};
use fusion_report::RunResult;
use fusionlab_tests::{run_clean, shipped_text};

/// The CPU-starvation myth on three instances: the workload runs on 1 and 2,
/// instance 3 only masters a third of the blocks, and its LMS is starved.
fn starved_master() -> RunResult {
    let text = shipped_text("myth-cpu-starvation")
        .replace("[cluster]\ninstances = 2", "[cluster]\ninstances = 3")
        .replace("instances = \"all\"", "instances = [1, 2]")
        .replace("[phase.parameters.inst2]", "[phase.parameters.inst3]")
        .replace(
            "kind = \"stress_cpu\"\ninstance = 2",
            "kind = \"stress_cpu\"\ninstance = 3",
        );
    assert!(text.contains("instances = 3") && text.contains("inst3"));
    let overrides: Vec<String> = [
        "phase.warmup.duration_s=2",
        "phase.baseline.duration_s=4",
        "phase.lms-normal-priority.duration_s=4",
        "phase.lms-realtime.duration_s=1",
        "phase.lms-and-lgwr-realtime.duration_s=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let loaded = fusion_scenario::load_str(&text, "starved-master.toml", &overrides)
        .unwrap_or_else(|e| panic!("{e}"));
    run_clean(&loaded, None).0
}

fn inst1(r: &RunResult, phase: &str) -> Stats {
    let p = r.variants[0]
        .phases
        .iter()
        .find(|p| p.name == phase)
        .unwrap_or_else(|| panic!("no phase {phase}"));
    p.instances[0].stats.clone()
}

#[test]
fn a_starved_master_shows_as_lms_cpu_wait_and_congestion_not_as_request_time() {
    let r = starved_master();
    let (base, starved) = (inst1(&r, "baseline"), inst1(&r, "lms-normal-priority"));
    let per_block =
        |s: &Stats, part: Stat| s.get(part) as f64 / s.get(Stat::GcCrBlocksReceived).max(1) as f64;
    let extra = |part: Stat| per_block(&starved, part) - per_block(&base, part);
    let request = extra(Stat::DecompCrRequestSend);
    let lms_wait = extra(Stat::DecompCrLmsCpuWait);
    let total = per_block(&starved, Stat::GcCrBlockReceiveTime)
        - per_block(&base, Stat::GcCrBlockReceiveTime);
    assert!(
        total > 1e6,
        "instance 1's cr receive time rose by only {total} ns per block"
    );
    assert!(
        lms_wait > 0.8 * total,
        "lms cpu wait is {lms_wait} of the {total} ns per block instance 1 gained"
    );
    assert!(
        request < 0.05 * total,
        "request send is {request} of the {total} ns per block instance 1 gained"
    );
    // A 3-way transfer forwarded by the starved master waited for its LMS:
    // it is congested, so what remains named 3-way is quick.
    let three_way = starved.event(Wait::GcCrBlock3Way);
    let congested = starved.event(Wait::GcCrBlockCongested);
    assert!(
        congested.waits > 0,
        "no gc cr block congested at instance 1"
    );
    if three_way.waits > 0 {
        let avg_ms = three_way.time_ns as f64 / three_way.waits as f64 / 1e6;
        assert!(
            avg_ms < 2.0,
            "gc cr block 3-way still averages {avg_ms:.1} ms"
        );
    }
}

/// One rule for "congested" (docs/design/life-of-a-block-request.md): when the master is also
/// the holder, its LMS's wait comes in the request step, and a transfer it
/// delayed more than 1 ms is congested as much as one the holder delayed.
#[test]
fn a_two_way_transfer_delayed_by_the_masters_lms_is_congested() {
    let overrides: Vec<String> = [
        "phase.warmup.duration_s=2",
        "phase.baseline.duration_s=2",
        "phase.lms-normal-priority.duration_s=4",
        "phase.lms-realtime.duration_s=1",
        "phase.lms-and-lgwr-realtime.duration_s=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let loaded = fusion_scenario::load_str(
        shipped_text("myth-cpu-starvation"),
        "scenarios/myth-cpu-starvation.toml",
        &overrides,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = run_clean(&loaded, None).0;
    let starved = inst1(&r, "lms-normal-priority");
    let two_way = starved.event(Wait::GcCrBlock2Way);
    assert!(starved.event(Wait::GcCrBlockCongested).waits > 0);
    if two_way.waits > 0 {
        let avg_ms = two_way.time_ns as f64 / two_way.waits as f64 / 1e6;
        assert!(
            avg_ms < 2.0,
            "gc cr block 2-way averages {avg_ms:.1} ms while inst2's LMS starves"
        );
    }
}
