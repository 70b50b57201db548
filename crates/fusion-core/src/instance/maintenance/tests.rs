//! Maintenance jobs on what they emit: the I/O, CPU, timers, alert lines
//! and trace records a command or a completion yields, on a kernel of
//! their own (no cluster).

use super::super::events::Timer;
use super::super::kernel::{Fired, Kernel};
use super::super::observe::{Observer, TraceRecord};
use super::Maintenance;
use crate::config::{Catalog, NS_PER_MS};
use crate::layout::table;
use crate::msg::{Action, Io};
use crate::stats::Stat;

/// Two datafiles: `big` of 300 blocks and `small` of 10.
fn catalog() -> Catalog {
    Catalog {
        tables: vec![table("small", 10 * 50, 50), table("big", 300 * 50, 50)],
        ..Catalog::default()
    }
}

/// A kernel over [`catalog`], an observer, and the maintenance jobs.
fn rig() -> (Kernel, Observer, Maintenance) {
    (
        Kernel::for_tests(&catalog()),
        Observer::new(false),
        Maintenance::default(),
    )
}

/// The multiblock reads emitted: (first block, count).
fn reads(k: &mut Kernel) -> Vec<(u32, u32)> {
    k.take_actions()
        .into_iter()
        .map(|a| match a {
            Action::Io {
                io: Io::ReadBlocks { first, count },
                ..
            } => (first.0, count),
            other => panic!("a backup emitted {other:?}"),
        })
        .collect()
}

/// (first block, blocks) of table `t`'s file, which must be one run.
fn file(k: &Kernel, t: usize) -> (u32, u32) {
    let runs = k.layout().tables[t].initial_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    (runs[0].0, runs[0].1 - runs[0].0)
}

fn alert(obs: &Observer) -> Vec<String> {
    obs.alert_lines().iter().map(|l| l.line.clone()).collect()
}

#[test]
fn a_backup_starts_every_channel_on_the_largest_files_first() {
    let (mut k, mut obs, mut m) = rig();
    let (big, small) = (file(&k, 1), file(&k, 0));
    assert!(big.1 > 128 && small.1 < 128, "{big:?} {small:?}");
    m.begin_backup(&mut k, &mut obs, 2, None);
    // 1 MB reads of 8 KB blocks: 128 at most.
    assert_eq!(reads(&mut k), vec![(big.0, 128), (small.0, small.1)]);
    assert_eq!(
        alert(&obs),
        vec!["RMAN: Starting backup: 2 channel(s) (ORA_DISK_1..2), 2 unit(s)"]
    );
    assert!(
        k.find_proc("ORA_DISK_2").is_some(),
        "two channels allocated"
    );
    // A second backup while this one runs is refused, and emits nothing.
    m.begin_backup(&mut k, &mut obs, 4, None);
    assert!(reads(&mut k).is_empty());
    assert_eq!(
        alert(&obs).last().map(String::as_str),
        Some("RMAN: BACKUP DATABASE not started: a backup is already running")
    );
    assert!(k.find_proc("ORA_DISK_3").is_none(), "no channel allocated");
}

#[test]
fn a_section_size_cuts_a_file_into_units_for_every_channel() {
    let (mut k, mut obs, mut m) = rig();
    let big = file(&k, 1);
    // 1 MB sections: 128 blocks each.
    m.begin_backup(&mut k, &mut obs, 2, Some(1));
    assert_eq!(reads(&mut k), vec![(big.0, 128), (big.0 + 128, 128)]);
    let units = big.1.div_ceil(128) + 1;
    assert_eq!(
        alert(&obs),
        vec![format!(
            "RMAN: Starting backup: 2 channel(s) (ORA_DISK_1..2), {units} unit(s) section size 1 M"
        )]
    );
}

#[test]
fn a_channel_checks_what_it_read_then_reads_on_until_the_backup_is_done() {
    let (mut k, mut obs, mut m) = rig();
    let total = file(&k, 0).1 + file(&k, 1).1;
    m.begin_backup(&mut k, &mut obs, 1, None);
    let mut read = 0;
    let mut steps = 0;
    while let Some((_, count)) = reads(&mut k).pop() {
        read += count;
        m.backup_read_done(&mut k, 0, count as usize);
        // Checking and compressing the blocks is CPU, `rman_block` each.
        let Some(Fired::Steps(done)) = k.run_until(u64::MAX) else {
            panic!("no CPU step");
        };
        let [d] = done[..] else { panic!("{done:?}") };
        assert_eq!(Some(d.proc), k.find_proc("ORA_DISK_1"));
        assert_eq!(
            d.done_at - d.requested_at,
            k.costs().rman_block_ns * u64::from(count)
        );
        m.backup_step_done(&mut k, &mut obs, 0);
        steps += 1;
        assert!(steps <= 10, "a backup of {total} blocks in 128-block reads");
    }
    assert_eq!(read, total);
    let stats = k.stats();
    assert_eq!(stats.get(Stat::RmanBlocksBackedUp), u64::from(total));
    assert_eq!(stats.get(Stat::RmanWorkUnits), 2);
    assert_eq!(stats.get(Stat::RmanBackupsCompleted), 1);
    assert_eq!(stats.get(Stat::RmanChannelsUsed), 1);
    assert_eq!(stats.get(Stat::RmanChannelBlocksMax), u64::from(total));
    assert!(
        alert(&obs)
            .last()
            .is_some_and(|l| l.starts_with("RMAN: Finished backup, elapsed time")),
        "{:?}",
        alert(&obs)
    );
    // A completion for a channel that is not one is ignored.
    m.backup_read_done(&mut k, 9, 1);
    m.backup_step_done(&mut k, &mut obs, 9);
    assert!(reads(&mut k).is_empty());
}

#[test]
fn fully_loaded_hogs_ask_for_a_cpu_for_ever_and_are_traced_while_they_do() {
    let (mut k, mut obs, mut m) = rig();
    obs.set_tracing(true);
    m.set_hogs(&mut k, &mut obs, 2, 100);
    let (p0, p1) = (
        k.find_proc("stress0").unwrap(),
        k.find_proc("stress1").unwrap(),
    );
    m.set_hogs(&mut k, &mut obs, 1, 100);
    assert_eq!(
        k.find_proc("stress0"),
        Some(p0),
        "a hog's process is reused"
    );
    let mut out = Vec::new();
    obs.drain_trace(&mut out);
    let hogs: Vec<_> = out
        .iter()
        .filter_map(|r| match *r {
            TraceRecord::Hog { proc, busy, .. } => Some((proc, busy)),
            _ => None,
        })
        .collect();
    assert_eq!(
        hogs,
        vec![(p0, true), (p1, true), (p0, false), (p1, false), (p0, true)]
    );
    assert!(
        k.timers_armed().is_empty(),
        "a fully-loaded hog never sleeps"
    );
}

#[test]
fn a_partly_loaded_hog_sleeps_the_rest_of_its_period_and_an_old_wake_up_is_ignored() {
    let (mut k, mut obs, mut m) = rig();
    m.set_hogs(&mut k, &mut obs, 1, 30);
    let p = k.find_proc("stress0").unwrap();
    // Busy 30 ms of every 100 ms.
    let step = |k: &mut Kernel| match k.run_until(u64::MAX) {
        Some(Fired::Steps(done)) if done.len() == 1 && done[0].proc == p => done[0].done_at,
        other => panic!("{other:?}"),
    };
    assert_eq!(step(&mut k), 30 * NS_PER_MS);
    m.hog_step_done(&mut k, 0);
    let armed = k.timers_armed();
    let [(at, Timer::HogWake(0, epoch))] = armed[..] else {
        panic!("{armed:?}");
    };
    assert_eq!(at, 100 * NS_PER_MS, "asleep the other 70 ms");
    assert_eq!(
        k.run_until(u64::MAX),
        Some(Fired::Timer(Timer::HogWake(0, epoch)))
    );
    m.hog_wake(&mut k, 0, epoch);
    assert_eq!(step(&mut k), 130 * NS_PER_MS);
    // The hogs restart: a wake-up armed for the earlier set does nothing.
    m.hog_step_done(&mut k, 0);
    m.set_hogs(&mut k, &mut obs, 1, 30);
    assert_eq!(step(&mut k), 160 * NS_PER_MS);
    assert_eq!(
        k.run_until(u64::MAX),
        Some(Fired::Timer(Timer::HogWake(0, epoch)))
    );
    m.hog_wake(&mut k, 0, epoch);
    assert_eq!(k.run_until(u64::MAX), None, "nothing asked for");
}
