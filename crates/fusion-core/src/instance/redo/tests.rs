//! LGWR and DBWR on what they emit for a given input: CPU steps, the redo
//! write, SCN broadcasts, the waiters released, alert lines; on a kernel,
//! a membership and a cache of their own (no cluster).

use super::super::cache::Cache;
use super::super::events::Proc;
use super::super::kernel::{Fired, Kernel};
use super::super::membership::{Delivery, Membership};
use super::super::observe::Observer;
use super::{FlushWaiter, Redo};
use crate::config::Catalog;
use crate::msg::{Action, Io, Msg, RedoRecord};
use crate::stats::Stat;
use crate::types::Scn;
use crate::types::{InstId, Xid};

struct Rig {
    k: Kernel,
    m: Membership,
    obs: Observer,
    redo: Redo,
}

/// Instance 1 of 2; `broadcast`: commits are broadcast (the default
/// `max_commit_propagation_delay` of 0).
fn rig(broadcast: bool) -> Rig {
    let mut k = Kernel::for_tests(&Catalog::default());
    if !broadcast {
        k.set_param(
            "max_commit_propagation_delay",
            &crate::config::ParamValue::Int(100),
        );
    }
    let m = Membership::new(InstId(1), 2, k.params(), 0, Delivery::Direct);
    let lgwr = k.add_proc(Proc::Lgwr, "LGWR".into());
    let redo = Redo::new(lgwr);
    Rig {
        k,
        m,
        obs: Observer::new(false),
        redo,
    }
}

fn commit(bytes: u32) -> RedoRecord {
    RedoRecord::commit(Scn(5), Xid::new(InstId(1), 1), bytes)
}

/// The one CPU step that ends next: (process, its length).
fn cpu_step(k: &mut Kernel) -> (u32, u64) {
    match k.run_until(u64::MAX) {
        Some(Fired::Steps(done)) if done.len() == 1 => {
            (done[0].proc, done[0].done_at - done[0].requested_at)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_commit_is_released_once_its_redo_is_on_disk_and_every_peer_acknowledged_it() {
    let mut r = rig(true);
    let rba = r.redo.append(&mut r.k, commit(100));
    assert_eq!(rba, 100);
    assert_eq!(
        r.k.run_until(u64::MAX),
        None,
        "a small record waits in the log buffer"
    );
    assert!(
        !r.redo
            .request_flush(&mut r.k, rba, Some(FlushWaiter::Session(3)))
    );
    assert_eq!(
        cpu_step(&mut r.k),
        (r.redo.lgwr().proc(), r.k.costs().lgwr_write_ns)
    );
    r.redo.lgwr_step_done(&mut r.k, &mut r.m.net(), None);
    let actions = r.k.take_actions();
    let [
        Action::Send(env),
        Action::Io {
            io: Io::WriteRedo { records, bytes, .. },
            ..
        },
    ] = &actions[..]
    else {
        panic!("{actions:?}");
    };
    assert_eq!(
        (env.to, &env.msg),
        (InstId(0), &Msg::ScnBroadcast { seq: 1 })
    );
    assert_eq!((records.len(), *bytes), (1, 100));
    let started = r.k.now();
    r.redo.redo_written(&mut r.k, &mut r.obs, rba, started);
    assert_eq!(
        r.redo.next_released(),
        None,
        "on disk, not yet known to the peer"
    );
    r.redo.resume_lgwr(&mut r.k);
    assert_eq!(r.k.run_until(u64::MAX), None, "nothing more to write");
    r.redo.scn_ack(&mut r.k, 1);
    assert_eq!(r.redo.next_acked(), Some(3));
    assert_eq!(r.redo.next_acked(), None);
    assert!(r.redo.request_flush(&mut r.k, rba, None), "durable now");
}

#[test]
fn without_a_broadcast_a_write_releases_its_waiters_in_the_order_of_their_redo() {
    let mut r = rig(false);
    let first = r.redo.append(&mut r.k, commit(100));
    let second = r.redo.append(&mut r.k, commit(50));
    assert!(
        !r.redo
            .request_flush(&mut r.k, second, Some(FlushWaiter::Session(8)))
    );
    assert!(
        !r.redo
            .request_flush(&mut r.k, first, Some(FlushWaiter::Lms(0, 4)))
    );
    cpu_step(&mut r.k);
    r.redo.lgwr_step_done(&mut r.k, &mut r.m.net(), None);
    let actions = r.k.take_actions();
    assert!(
        matches!(
            &actions[..],
            [Action::Io {
                io: Io::WriteRedo { bytes: 150, .. },
                ..
            }]
        ),
        "no broadcast: {actions:?}"
    );
    r.redo.redo_written(&mut r.k, &mut r.obs, second, 0);
    assert_eq!(r.redo.next_released(), Some(FlushWaiter::Lms(0, 4)));
    assert_eq!(r.redo.next_released(), Some(FlushWaiter::Session(8)));
    assert_eq!(r.redo.next_released(), None);
    assert_eq!(r.k.stats().get(Stat::RedoWrites), 1);
}

#[test]
fn a_record_that_fills_a_third_of_the_log_buffer_starts_a_write_and_the_timeout_writes_the_rest() {
    let mut r = rig(false);
    let third = u32::try_from(r.k.params().log_buffer / 3).unwrap();
    r.redo.append(&mut r.k, commit(third));
    assert_eq!(
        cpu_step(&mut r.k).0,
        r.redo.lgwr().proc(),
        "LGWR runs at once"
    );
    r.redo.lgwr_step_done(&mut r.k, &mut r.m.net(), None);
    r.k.take_actions();
    r.redo
        .redo_written(&mut r.k, &mut r.obs, u64::from(third), 0);
    r.redo.lgwr_timeout(&mut r.k);
    assert_eq!(
        r.k.run_until(u64::MAX),
        None,
        "all on disk: the timeout writes nothing"
    );
    r.redo.append(&mut r.k, commit(10));
    r.redo.lgwr_timeout(&mut r.k);
    assert_eq!(cpu_step(&mut r.k).0, r.redo.lgwr().proc());
}

#[test]
fn a_checkpoint_of_a_clean_cache_is_complete_at_once() {
    let mut r = rig(false);
    let mut cache = Cache::new(16, 64);
    assert!(
        !r.redo.begin_checkpoint(&mut r.k, &mut r.obs, &mut cache),
        "no pass"
    );
    let lines: Vec<_> = r
        .obs
        .alert_lines()
        .iter()
        .map(|l| l.line.as_str())
        .collect();
    assert_eq!(
        lines,
        vec![
            "Beginning global checkpoint up to RBA 0, SCN: 1",
            "Completed checkpoint up to RBA 0"
        ]
    );
    assert_eq!(r.k.stats().get(Stat::DbwrCheckpoints), 1);
    assert!(!r.redo.checkpointing());
    assert!(r.k.take_actions().is_empty());
}
