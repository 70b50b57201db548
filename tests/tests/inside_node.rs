//! Inside one node: sweeps over the shipped NUMA scenarios (shortened) that
//! must move the right way as the machine grows, because the effects come
//! from where memory lives and from the queues of the memory and the link,
//! not from a number in the file.

use fusion_core::metrics::{Metric, NodeFigure};
use fusion_core::stats::Stat;
use fusion_report::RunResult;
use fusion_report::figures::measure;
use fusion_scenario::MetricRef;
use fusionlab_tests::{run_clean, shipped_with};

fn run(name: &str, overrides: &[String]) -> RunResult {
    let o: Vec<&str> = overrides.iter().map(String::as_str).collect();
    run_clean(&shipped_with(name, &o), None).0
}

fn figure(r: &RunResult, metric: Metric, variant: &str, phase: &str) -> f64 {
    let m = MetricRef {
        metric,
        text: String::new(),
        variant: Some(variant.to_string()),
        phase: phase.to_string(),
        instance: None,
    };
    measure(r, &m).unwrap_or_else(|| panic!("no {metric:?} in {variant}/{phase}"))
}

#[test]
fn interleaved_remote_share_grows_with_the_groups() {
    let mut shares = Vec::new();
    for groups in [1u32, 2, 4, 8] {
        let r = run(
            "suma-vs-numa",
            &[
                format!("server.locality_groups={groups}"),
                "phase.hammer.duration_s=0.05".to_string(),
            ],
        );
        let remote = figure(&r, Metric::Node(NodeFigure::RemotePct), "suma-8", "hammer");
        let want = 100.0 * f64::from(groups - 1) / f64::from(groups);
        assert!(
            (remote - want).abs() < 2.0,
            "{groups} groups interleaved: {remote:.1} % remote, about {want:.1} % expected"
        );
        // Bound to their own group's memory, nothing is remote, whatever the groups.
        let bound = figure(&r, Metric::Node(NodeFigure::RemotePct), "numa-8", "hammer");
        assert_eq!(bound, 0.0, "{groups} groups, node-local");
        shares.push(remote);
    }
    assert!(
        shares.windows(2).all(|w| w[1] > w[0]),
        "remote share by groups 1, 2, 4, 8: {shares:?}"
    );
}

#[test]
fn the_quad_local_buffer_gain_grows_with_the_quads() {
    let mut gains = Vec::new();
    for quads in [2u32, 4, 8] {
        let r = run(
            "numa-quad-local-buffers",
            &[
                format!("server.locality_groups={quads}"),
                format!("workload.oltp.sessions_per_instance={}", 48 * quads),
                "phase.warmup.duration_s=0.1".to_string(),
                "phase.run.duration_s=0.2".to_string(),
            ],
        );
        // The -8 variants take the quads of the file (overridden here).
        let tps = |v: &str| figure(&r, Metric::PerSecond(Stat::UserCommits), v, "run");
        let gain = tps("qlbp-8") / tps("off-8");
        let remote_reads = figure(&r, Metric::Node(NodeFigure::RemoteReadPct), "off-8", "run");
        let want = 100.0 * f64::from(quads - 1) / f64::from(quads);
        assert!(
            (remote_reads - want).abs() < 5.0,
            "{quads} quads without QLBP: {remote_reads:.1} % of reads into remote memory, about {want:.1} % expected"
        );
        gains.push(gain);
    }
    assert!(
        gains[0] < 1.04 && gains[1] < 1.04,
        "QLBP gains at 2 and 4 quads: {gains:?} (insignificant expected)"
    );
    assert!(
        gains[2] > gains[1] + 0.08,
        "QLBP gain at 8 quads {:.3} must clearly exceed the one at 4, {:.3}",
        gains[2],
        gains[1]
    );
}

#[test]
fn mpo_placement_raises_the_local_share_and_the_throughput() {
    let r = run(
        "mpo-locality-groups",
        &["phase.run.duration_s=0.15".to_string()],
    );
    let local = |v: &str| figure(&r, Metric::Node(NodeFigure::LocalPct), v, "run");
    let tps = |v: &str| figure(&r, Metric::PerSecond(Stat::UserCommits), v, "run");
    assert!(local("oltp-mpo") > local("oltp") + 8.0);
    assert!(local("dss-mpo") > local("dss"));
    assert!(tps("oltp-mpo") > tps("oltp"));
    assert!(tps("dss-mpo") > tps("dss"));
}

#[test]
fn checkpoint_throughput_grows_with_true_writers_not_with_io_slaves() {
    // Writes per second during the checkpoint, by the number of true
    // writers (variant writers) and of I/O slaves behind one writer
    // (variant io-slaves), at 4, 8 and 16 of each.
    let mut writers = Vec::new();
    let mut slaves = Vec::new();
    for n in [4u32, 8, 16] {
        let r = run(
            "dbwr-writers",
            &[
                format!("parameters.db_writer_processes={n}"),
                format!("variant.io-slaves.set.parameters.dbwr_io_slaves={n}"),
                "phase.checkpoint.duration_s=0.15".to_string(),
            ],
        );
        let rate = |v: &str| figure(&r, Metric::PerSecond(Stat::PhysicalWrites), v, "checkpoint");
        writers.push(rate("writers"));
        slaves.push(rate("io-slaves"));
        let remote = figure(
            &r,
            Metric::Stat(Stat::NumaRemoteWrites),
            "writers",
            "checkpoint",
        );
        let written = figure(
            &r,
            Metric::Stat(Stat::PhysicalWrites),
            "writers",
            "checkpoint",
        );
        assert!(
            remote > 0.8 * written,
            "{n} writers without NUMA support: {remote} of {written} writes from remote memory"
        );
    }
    for w in writers.windows(2) {
        assert!(
            w[1] > 1.6 * w[0],
            "doubling the true writers must nearly double the throughput: {writers:?}"
        );
    }
    for s in slaves.windows(2) {
        assert!(
            s[1] < 1.25 * s[0],
            "the one writer bounds the slaves' throughput: {slaves:?}"
        );
    }
    assert!(
        slaves[2] < writers[0],
        "16 slaves write less than 4 true writers: {slaves:?} vs {writers:?}"
    );
}

#[test]
fn cmt_throughput_grows_with_users_while_threads_fill_the_cores() {
    let r = run(
        "cmt-concurrency",
        &[
            "phase.warmup.duration_s=0.15".to_string(),
            "phase.run.duration_s=0.1".to_string(),
        ],
    );
    let tps: Vec<f64> = ["users-8", "users-16", "users-32", "users-64"]
        .iter()
        .map(|v| figure(&r, Metric::PerSecond(Stat::UserCommits), v, "run"))
        .collect();
    // Up to 16 users every thread has a pipeline of its own: linear.
    assert!(tps[1] > 1.8 * tps[0], "8 -> 16 users: {tps:?}");
    // Beyond, the threads share the cores' pipelines: each doubling of the
    // users gains less than the one before, but still gains.
    let gains: Vec<f64> = tps.windows(2).map(|w| w[1] / w[0]).collect();
    assert!(
        gains.windows(2).all(|g| g[1] < g[0]) && gains.iter().all(|&g| g > 1.15),
        "gains per doubling of the users: {gains:?}"
    );
    let total = tps[3] / tps[0];
    assert!(
        (4.0..6.0).contains(&total),
        "8 -> 64 users: {total:.2} times (paper 5)"
    );
}

#[test]
fn the_index_build_speeds_up_as_parallel_servers_target_comes_down() {
    // On the T5220's 64 threads: the target bounds automatic DOP (half of
    // it per server set); fewer readers read more blocks per I/O on the
    // datafiles' 1,000 IOPS.
    let mut elapsed = Vec::new();
    for target in [256u32, 64, 32] {
        let r = run(
            "parallel-index-build",
            &[format!("parameters.parallel_servers_target={target}")],
        );
        let e = figure(
            &r,
            Metric::Stat(Stat::PxStatementElapsedTime),
            "defaults",
            "build",
        );
        let reads = figure(
            &r,
            Metric::Stat(Stat::PhysicalReadIoRequests),
            "defaults",
            "build",
        );
        elapsed.push((target, e, reads));
    }
    assert!(
        elapsed
            .windows(2)
            .all(|w| w[1].1 < 0.7 * w[0].1 && w[1].2 < w[0].2),
        "(target, elapsed ns, read requests): {elapsed:?}"
    );
}

/// The RMAN backup of `rman-multisection` (variant `channels-1`, the file's
/// own phase) with `backup` set to `backup`: (elapsed ms, blocks of the
/// busiest channel).
fn backup_with(backup: &str) -> (f64, f64) {
    let r = run(
        "rman-multisection",
        &[format!("phase.backup.backup={backup}")],
    );
    let fig = |stat| figure(&r, Metric::Stat(stat), "channels-1", "backup");
    assert_eq!(fig(Stat::RmanBackupsCompleted), 1.0, "{backup}");
    (
        fig(Stat::RmanBackupElapsedTime),
        fig(Stat::RmanChannelBlocksMax),
    )
}

#[test]
fn backup_time_falls_with_channels_until_the_largest_file_bounds_it_unless_multisection() {
    // The file's CPU per block (rman_block_us): a channel backs up its
    // blocks no faster than this, so the busiest channel bounds the backup.
    let per_block_ms = 2.04;
    let whole: Vec<(u32, (f64, f64))> = [1u32, 2, 3, 4, 8, 17]
        .iter()
        .map(|&n| (n, backup_with(&format!("{{ channels = {n} }}"))))
        .collect();
    let e = |i: usize| whole[i].1.0;
    assert!(
        e(1) < 0.7 * e(0) && e(2) < e(1),
        "1 to 3 channels must help: {whole:?}"
    );
    for &(n, (elapsed, busiest)) in &whole[2..] {
        // From 3 channels on, the channel with the largest file (40 % of
        // the blocks) works alone at the end: no faster than 3 channels.
        assert!(elapsed >= 0.95 * e(2), "{n} channels: {whole:?}");
        assert!(elapsed >= busiest * per_block_ms, "{n} channels: {whole:?}");
    }
    let sections: Vec<(u32, (f64, f64))> = [4u32, 8, 16]
        .iter()
        .map(|&n| {
            (
                n,
                backup_with(&format!("{{ channels = {n}, section_size_mb = 1 }}")),
            )
        })
        .collect();
    assert!(
        sections.windows(2).all(|w| w[1].1.0 < 0.75 * w[0].1.0),
        "with sections every channel more helps: {sections:?}"
    );
    // Multisection breaks the bound: 16 channels well under the largest file's time.
    assert!(
        sections[2].1.0 < 0.5 * e(2),
        "sections {sections:?} vs whole files {whole:?}"
    );
}
