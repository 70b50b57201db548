//! The largest cluster the model takes (64 instances) runs clean, and one
//! more is refused with the limit named.

use fusion_core::stats::Stat;
use fusionlab_tests::{CPU_STARVATION, run_clean, shipped_text};

#[test]
fn sixty_four_instances_run_and_every_one_commits() {
    let loaded = fusionlab_tests::shipped_short(
        CPU_STARVATION,
        0.1,
        &[
            "cluster.instances=64",
            "workload.oltp.sessions_per_instance=2",
            "parameters.db_cache_size=8M",
        ],
    );
    let (result, _) = run_clean(&loaded, Some(1));
    let variant = &result.variants[0];
    let last = variant.phases.last().expect("phases ran");
    assert_eq!(last.instances.len(), 64);
    let committed: Vec<u64> = (0..64)
        .map(|i| {
            variant
                .phases
                .iter()
                .map(|p| p.instances[i].stats.get(Stat::UserCommits))
                .sum()
        })
        .collect();
    assert!(
        committed.iter().all(|&c| c > 0),
        "an instance of 64 committed nothing: {committed:?}"
    );
    // Blocks move between instances far apart in number.
    let received: u64 = variant
        .phases
        .iter()
        .map(|p| {
            p.instances[63].stats.get(Stat::GcCrBlocksReceived)
                + p.instances[63].stats.get(Stat::GcCurrentBlocksReceived)
        })
        .sum();
    assert!(received > 0, "instance 64 received no block");
}

#[test]
fn sixty_five_instances_are_refused_with_the_limit_named() {
    let e = fusion_scenario::load_str(
        shipped_text(CPU_STARVATION),
        "scenarios/myth-cpu-starvation.toml",
        &["cluster.instances=65".to_string()],
    )
    .expect_err("65 instances are more than the model takes");
    let text = e.to_string();
    assert!(
        text.contains("cluster.instances") && text.contains("1..=64") && text.contains("65"),
        "{text}"
    );
}
