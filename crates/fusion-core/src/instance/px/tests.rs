//! Parallel execution on what it emits for a given input, on a kernel, a
//! membership, foregrounds and an observer of its own (no cluster, no
//! sessions): the host's side of a statement another instance coordinates,
//! and the peer messages it refuses.

use std::sync::Arc;

use super::super::kernel::{Fired, Kernel};
use super::super::membership::{Delivery, Membership};
use super::super::observe::Observer;
use super::super::session::Foregrounds;
use super::slave::{DIRECT_READ_DEPTH, GRANULES_PER_SLAVE};
use super::{PxEffect, PxState, PxStep};
use crate::config::{Catalog, ParamValue, Step, TxnTemplate, WorkloadSpec};
use crate::layout::table;
use crate::msg::{Action, Io, Msg};
use crate::px::{
    Batch, Degree, Dest, ExecId, JoinDistribution, PxMsg, PxPlan, PxQuery, QueryRef, SlaveId,
};
use crate::stats::Stat;
use crate::types::InstId;

/// Instance 1 of 2 with one workload whose only step is a parallel scan of
/// table `t` (100 blocks).
struct Rig {
    k: Kernel,
    m: Membership,
    fg: Foregrounds,
    obs: Observer,
    px: PxState,
}

impl Rig {
    fn new() -> Rig {
        let catalog = Catalog {
            tables: vec![table("t", 100 * 50, 50)],
            ..Catalog::default()
        };
        let k = Kernel::for_tests(&catalog);
        let m = Membership::new(InstId(1), 2, k.params(), 0, Delivery::Direct);
        let query = PxQuery {
            name: "scan".into(),
            plan: PxPlan::ScanAggregate,
            tables: vec![0],
            degree: Degree::Fixed(2),
            instances: 1,
            distribution: JoinDistribution::Hash,
            group_mod: 10,
            entries_per_leaf: 100,
        };
        let workloads = Arc::new(vec![WorkloadSpec {
            name: "px".into(),
            instances: vec![1, 2],
            sessions_per_instance: 1,
            think_time: 0,
            transactions: vec![TxnTemplate {
                name: "scan".into(),
                weight: 1,
                steps: vec![Step::ParallelQuery(Box::new(query))],
            }],
            iterations: None,
            row_locks: Default::default(),
        }]);
        let fg = Foregrounds::new(InstId(1), 2, k.layout(), &catalog, workloads, 0);
        Rig {
            k,
            m,
            fg,
            obs: Observer::new(false),
            px: PxState::default(),
        }
    }

    /// One step; it must need nothing of the foregrounds (no QC session here).
    fn step(&mut self, f: impl FnOnce(&mut PxStep)) {
        let mut p = PxStep::new(
            &mut self.px,
            &mut self.k,
            self.m.net(),
            &mut self.fg,
            &mut self.obs,
        );
        f(&mut p);
        let effects: Vec<PxEffect> = p.effects();
        assert!(
            effects.is_empty(),
            "a hosted slave asked the foregrounds: {effects:?}"
        );
    }

    /// A message from instance 0 (the QC's).
    fn hear(&mut self, m: PxMsg) {
        self.step(|p| p.on_message(InstId(0), m));
    }

    /// Run the workers kicked.
    fn run(&mut self) {
        while let Some(w) = self.px.next_kick() {
            self.step(|p| p.worker_next(w));
        }
    }

    /// The PX messages sent, in order: (to, message); nothing else was emitted.
    fn sent(&mut self) -> Vec<(InstId, PxMsg)> {
        self.k
            .take_actions()
            .into_iter()
            .map(|a| match a {
                Action::Send(env) => match env.msg {
                    Msg::Px(m) => (env.to, m),
                    other => panic!("px sent {other:?}"),
                },
                other => panic!("px emitted {other:?}"),
            })
            .collect()
    }
}

const EXEC: ExecId = ExecId {
    qc: InstId(0),
    serial: 1,
};

/// A start of [`EXEC`] at DOP 2 placing slave `k` on `placement[k]`.
fn start(placement: &[u8]) -> PxMsg {
    PxMsg::Start {
        exec: EXEC,
        qc_sid: 7,
        query: QueryRef::at(0, 0, 0),
        requested: 2,
        dop: 2,
        placement: placement.iter().map(|&i| InstId(i)).collect(),
    }
}

#[test]
fn a_hosted_slave_starts_a_server_joins_reads_its_granules_and_frees_it_for_the_prober() {
    let mut r = Rig::new();
    let cpu = r.k.params().cpu_count;
    let (max, target) = (
        r.k.params().px.max_servers(cpu),
        r.k.params().px.servers_target(cpu),
    );
    r.hear(PxMsg::Probe {
        exec: EXEC,
        group: String::new(),
    });
    assert_eq!(
        r.sent(),
        [(
            InstId(0),
            PxMsg::ProbeReply {
                exec: EXEC,
                member: true,
                cpu_dop: r.k.params().px.cpu_dop(cpu),
                free: max,
                room: target,
                target,
                load: 0,
            }
        )]
    );

    // Slave 0 here, slave 1 on the QC's instance: no server yet, one starts.
    r.hear(start(&[1, 0]));
    assert!(
        r.sent().is_empty(),
        "no join before the server's process started"
    );
    assert_eq!(r.px.servers_busy(), (1, 1));
    assert_eq!(r.k.stats().get(Stat::PxServersStarted), 1);
    let Some(Fired::Steps(done)) = r.k.run_until(u64::MAX) else {
        panic!("no server start");
    };
    assert_eq!(done.len(), 1);
    assert_eq!(r.k.proc_name(done[0].proc), Some("P000"));
    assert_eq!(
        done[0].done_at - done[0].requested_at,
        r.k.costs().px_server_start_ns
    );
    r.step(|p| p.server_step_done(0, done[0]));
    assert_eq!(r.sent(), [(InstId(0), PxMsg::Joined { exec: EXEC })]);

    // Execute: every second granule from the first, four direct reads in flight.
    r.hear(PxMsg::Execute { exec: EXEC });
    r.run();
    let t = &r.k.layout().tables[0];
    let granule = t.initial_blocks.div_ceil(2 * GRANULES_PER_SLAVE);
    let expected: Vec<(u32, u32)> = (0..DIRECT_READ_DEPTH as u32)
        .map(|i| (t.base + 2 * i * granule, granule))
        .collect();
    let reads: Vec<(u32, u32)> =
        r.k.take_actions()
            .into_iter()
            .map(|a| match a {
                Action::Io {
                    io: Io::ReadBlocks { first, count },
                    ..
                } => (first.0, count),
                other => panic!("a slave emitted {other:?}"),
            })
            .collect();
    assert_eq!(reads, expected);

    // Released: its v$px_session row, its server free, the prober told.
    r.hear(PxMsg::Release { exec: EXEC });
    assert_eq!(r.px.servers_busy(), (0, 1));
    assert!(!r.px.active());
    let rows = &r.k.stats().px.sessions;
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].name.as_str(), rows[0].qc_sid), ("p000", 7));
    assert_eq!(r.sent(), [(InstId(0), PxMsg::Freed)]);
    assert!(r.k.errors().is_empty(), "{:?}", r.k.errors());
}

#[test]
fn a_start_beyond_the_servers_free_or_from_another_qc_is_refused() {
    let mut r = Rig::new();
    r.k.set_param("parallel_max_servers", &ParamValue::Int(1));
    r.hear(start(&[1, 1]));
    assert_eq!(r.px.servers_busy(), (0, 0), "no server taken");
    assert!(!r.px.active());
    assert_eq!(r.k.stats().get(Stat::PxServersStarted), 0);
    assert!(r.k.take_actions().is_empty());
    assert!(
        r.k.errors()
            .last()
            .is_some_and(|e| e.contains("2 slaves here, 1 servers free")),
        "{:?}",
        r.k.errors()
    );

    // Instance 0 starting an execution instance 1 coordinates.
    let errors = r.k.errors().len();
    r.step(|p| {
        p.on_message(
            InstId(0),
            PxMsg::Start {
                exec: ExecId {
                    qc: InstId(1),
                    serial: 1,
                },
                qc_sid: 7,
                query: QueryRef::at(0, 0, 0),
                requested: 2,
                dop: 2,
                placement: vec![InstId(1), InstId(1)],
            },
        )
    });
    assert_eq!(r.k.errors().len(), errors + 1);
    assert!(!r.px.active());
}

#[test]
fn messages_about_statements_not_here_are_errors_not_panics() {
    let mut r = Rig::new();
    let mine = ExecId {
        qc: InstId(1),
        serial: 9,
    };
    r.hear(PxMsg::ProbeReply {
        exec: mine,
        member: true,
        cpu_dop: 4,
        free: 4,
        room: 4,
        target: 4,
        load: 0,
    });
    r.hear(PxMsg::Joined { exec: mine });
    r.hear(PxMsg::Execute { exec: EXEC });
    r.hear(PxMsg::Batch(Box::new(Batch {
        exec: mine,
        from: SlaveId { set: 0, idx: 0 },
        to: Dest::Qc,
        side: 0,
        values: Vec::new(),
        eof: true,
        bytes: 0,
    })));
    assert_eq!(r.k.errors().len(), 4, "{:?}", r.k.errors());
    // A credit or a release after the statement ended is no error.
    r.hear(PxMsg::Credit {
        exec: EXEC,
        producer: 0,
        consumer: 0,
    });
    r.hear(PxMsg::Release { exec: EXEC });
    assert_eq!(r.k.errors().len(), 4);
    assert!(r.sent().is_empty());
}
