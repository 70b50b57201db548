//! Property tests of parallel execution through the simulator: random small
//! clusters (1-3 instances, random `instance_groups`, parallel_* parameters
//! and degree policies) run random parallel statements (every plan shape,
//! random degrees, distributions, message sizes) from one or more QC
//! sessions at once, and must show
//!
//! - every statement's result equals the serial result on the same data;
//! - slaves only on instances of the QC's `parallel_instance_group` (its own
//!   instance only with `parallel_force_local`; serial when no instance is in
//!   the group);
//! - the DOP never exceeds what was asked, `parallel_degree_limit` (automatic
//!   DOP), nor what `parallel_max_servers` (and under AUTO
//!   `parallel_servers_target`) allow;
//! - no instance ever has more servers busy than `parallel_max_servers`, nor
//!   under AUTO more than `parallel_servers_target`: statements queue instead;
//!
//! and no protocol error, every statement finished.

use fusion_core::config::{NS_PER_MS, NS_PER_S, ParamValue, Params, Step, WorkloadSpec};
use fusion_core::px::rows::serial_result;
use fusion_core::px::{Degree, DegreePolicy, JoinDistribution, PxPlan, PxQuery};
use fusion_scenario::Scenario;
use fusion_sim::{Sim, SimOptions};
use fusion_testkit::{ScenarioBuilder, phase, table, txn, workload};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Config {
    seed: u64,
    instances: u8,
    cpu_count: u32,
    /// Per instance: member of g1, of g2.
    groups: Vec<(bool, bool)>,
    /// 0 = every instance, 1 = g1, 2 = g2, 3 = a group nobody is in.
    group: u8,
    force_local: bool,
    policy: DegreePolicy,
    max_servers: u32,
    target: u32,
    plan: PxPlan,
    degree: Option<u32>,
    hint_instances: u32,
    broadcast: bool,
    group_mod: u64,
    rows: (u64, u64),
    rows_per_block: (u32, u32),
    message_size: u32,
    mbrc: u32,
    /// QC sessions per instance that runs them, and statements each.
    sessions: u32,
    iterations: u64,
    qc_everywhere: bool,
}

fn plan() -> impl Strategy<Value = PxPlan> {
    prop_oneof![
        Just(PxPlan::ScanAggregate),
        Just(PxPlan::HashJoinGroupBy),
        Just(PxPlan::Sort),
        Just(PxPlan::IndexBuild),
    ]
}

fn policy() -> impl Strategy<Value = DegreePolicy> {
    prop_oneof![
        Just(DegreePolicy::Manual),
        Just(DegreePolicy::Limited),
        Just(DegreePolicy::Auto),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        (
            any::<u64>(),
            1u8..=3,
            1u32..=4,
            prop::collection::vec((any::<bool>(), any::<bool>()), 3),
            0u8..=3,
            prop::bool::weighted(0.2),
        ),
        (policy(), 0u32..=12, 0u32..=12),
        (
            plan(),
            prop::option::weighted(0.8, 1u32..=8),
            1u32..=2,
            any::<bool>(),
            1u64..=40,
        ),
        (
            (1u64..=2_500, 1u64..=2_500),
            (1u32..=40, 1u32..=40),
            2148u32..=6000,
            1u32..=16,
        ),
        (1u32..=3, 1u64..=2, any::<bool>()),
    )
        .prop_map(|(a, b, c, d, e)| Config {
            seed: a.0,
            instances: a.1,
            cpu_count: a.2,
            groups: a.3,
            group: a.4,
            force_local: a.5,
            policy: b.0,
            max_servers: b.1,
            target: b.2.min(b.1),
            plan: c.0,
            degree: c.1,
            hint_instances: c.2,
            broadcast: c.3,
            group_mod: c.4,
            rows: d.0,
            rows_per_block: d.1,
            message_size: d.2,
            mbrc: d.3,
            sessions: e.0,
            iterations: e.1,
            qc_everywhere: e.2,
        })
}

fn group_name(g: u8) -> &'static str {
    ["", "g1", "g2", "nobody"][g as usize]
}

fn params(c: &Config, inst: usize) -> Params {
    let mut p = Params {
        cpu_count: c.cpu_count,
        ..Params::default()
    };
    let (g1, g2) = c.groups[inst];
    let mut groups = vec![format!("inst{}", inst + 1)];
    if g1 {
        groups.push("g1".into());
    }
    if g2 {
        groups.push("g2".into());
    }
    let set = |p: &mut Params, n: &str, v: ParamValue| p.set(n, &v).expect(n);
    set(
        &mut p,
        "instance_groups",
        ParamValue::Text(groups.join(",")),
    );
    set(
        &mut p,
        "parallel_instance_group",
        ParamValue::Text(group_name(c.group).into()),
    );
    set(
        &mut p,
        "parallel_force_local",
        ParamValue::Text(c.force_local.to_string()),
    );
    set(
        &mut p,
        "parallel_degree_policy",
        ParamValue::Text(c.policy.name().into()),
    );
    set(
        &mut p,
        "parallel_max_servers",
        ParamValue::Int(c.max_servers.into()),
    );
    set(
        &mut p,
        "parallel_servers_target",
        ParamValue::Int(c.target.into()),
    );
    set(
        &mut p,
        "parallel_execution_message_size",
        ParamValue::Int(c.message_size.into()),
    );
    set(
        &mut p,
        "db_file_multiblock_read_count",
        ParamValue::Int(c.mbrc.into()),
    );
    // Tiny tables still get an automatic DOP above 1 (see the scenario docs).
    set(
        &mut p,
        "parallel_min_time_threshold",
        ParamValue::Text("0.00001".into()),
    );
    p
}

fn query(c: &Config) -> PxQuery {
    PxQuery {
        name: "q".into(),
        plan: c.plan,
        tables: if c.plan == PxPlan::HashJoinGroupBy {
            vec![0, 1]
        } else {
            vec![0]
        },
        degree: c.degree.map_or(Degree::Default, Degree::Fixed),
        instances: if c.degree.is_some() {
            c.hint_instances
        } else {
            1
        },
        distribution: if c.broadcast {
            JoinDistribution::Broadcast
        } else {
            JoinDistribution::Hash
        },
        group_mod: c.group_mod,
        entries_per_leaf: 7,
    }
}

fn scenario(c: &Config) -> Scenario {
    let qcs: Vec<u8> = if c.qc_everywhere {
        (1..=c.instances).collect()
    } else {
        vec![1]
    };
    let statement = txn("q", 1, vec![Step::ParallelQuery(Box::new(query(c)))]);
    ScenarioBuilder::new(c.instances)
        .seed(c.seed)
        .params_each(|i| params(c, i))
        .table(table("t1", c.rows.0, c.rows_per_block.0))
        .table(table("t2", c.rows.1, c.rows_per_block.1))
        .workload(WorkloadSpec {
            instances: qcs,
            iterations: Some(c.iterations),
            row_locks: Default::default(),
            ..workload("w", c.instances, c.sessions, NS_PER_MS, vec![statement])
        })
        .phase(phase("run", RUN_S * NS_PER_S))
        .build()
}

const RUN_S: u64 = 120;

/// The properties, as a message per failure (empty = all hold).
fn problems(c: &Config) -> Vec<String> {
    let s = scenario(c);
    let layout = s.layout();
    let blocks = layout.initial_blocks();
    let q = query(c);
    let expected = serial_result(&q, |t| {
        let tl = &layout.tables[t];
        (tl.base..tl.base + tl.initial_blocks)
            .map(|b| &blocks[b as usize])
            .collect()
    });
    let mut sim = Sim::new(&s, &SimOptions::default());
    sim.log_px_results();
    sim.run_until(RUN_S * NS_PER_S);
    let mut p = Vec::new();
    for x in sim.instances() {
        p.extend(x.errors().iter().map(|e| format!("error: {e}")));
        if !x.sessions_finished() {
            p.push(format!("{}: sessions did not finish", x.id));
        }
        let (busy, high) = x.px_servers_busy();
        if busy != 0 {
            p.push(format!("{}: {busy} servers still busy", x.id));
        }
        if high > c.max_servers {
            p.push(format!(
                "{}: {high} servers busy at once > parallel_max_servers",
                x.id
            ));
        }
        if c.policy == DegreePolicy::Auto && high > c.target {
            p.push(format!(
                "{}: {high} servers busy at once > parallel_servers_target {}",
                x.id, c.target
            ));
        }
    }
    let members: Vec<u8> = (0..c.instances as usize)
        .filter(|&i| match c.group {
            0 => true,
            1 => c.groups[i].0,
            2 => c.groups[i].1,
            _ => false,
        })
        .map(|i| i as u8 + 1)
        .collect();
    let results = sim.take_px_results();
    let qcs = if c.qc_everywhere {
        u64::from(c.instances)
    } else {
        1
    };
    let want = qcs * u64::from(c.sessions) * c.iterations;
    if results.len() as u64 != want {
        p.push(format!(
            "{} statements finished, expected {want}",
            results.len()
        ));
    }
    let sets = u32::from(c.plan.sets());
    for (qc, r) in &results {
        if r.rows != expected {
            p.push(format!(
                "dop {} on {:?}: result {:?} != serial {:?}",
                r.dop, r.instances, r.rows, expected
            ));
        }
        let allowed: Vec<u8> = if c.force_local {
            vec![*qc as u8 + 1]
        } else {
            members.clone()
        };
        if let Some(i) = r.instances.iter().find(|i| !allowed.contains(i)) {
            p.push(format!("a slave on inst{i}, outside {allowed:?}"));
        }
        if allowed.is_empty() && r.dop != 1 {
            p.push(format!("no instance in the group, yet dop {}", r.dop));
        }
        let asked = match c.degree {
            Some(d) => d * c.hint_instances,
            None => u32::MAX,
        };
        if r.dop > asked {
            p.push(format!("dop {} above the {asked} asked for", r.dop));
        }
        if r.dop > 1 {
            let n = allowed.len() as u32;
            if r.dop * sets > c.max_servers * n {
                p.push(format!(
                    "dop {} x {sets} sets > parallel_max_servers on {n} instances",
                    r.dop
                ));
            }
            if c.policy == DegreePolicy::Auto && r.dop * sets > c.target * n {
                p.push(format!(
                    "dop {} x {sets} sets > parallel_servers_target on {n} instances",
                    r.dop
                ));
            }
            if c.degree.is_none() && c.policy != DegreePolicy::Manual && r.dop > c.cpu_count * 2 {
                p.push(format!("automatic dop {} > parallel_degree_limit", r.dop));
            }
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn parallel_execution_properties(c in config()) {
        let p = problems(&c);
        prop_assert!(p.is_empty(), "{c:?}\n{}", p.join("\n"));
    }
}

/// A run that queues: AUTO, room for one statement at a time, three QCs.
#[test]
fn statements_queue_instead_of_exceeding_the_target() {
    let c = Config {
        seed: 3,
        instances: 2,
        cpu_count: 2,
        groups: vec![(true, false); 3],
        group: 0,
        force_local: false,
        policy: DegreePolicy::Auto,
        max_servers: 12,
        target: 4,
        plan: PxPlan::HashJoinGroupBy,
        degree: Some(4),
        hint_instances: 1,
        broadcast: false,
        group_mod: 10,
        rows: (2_000, 1_500),
        rows_per_block: (20, 30),
        message_size: 2148,
        mbrc: 8,
        sessions: 3,
        iterations: 2,
        qc_everywhere: true,
    };
    assert_eq!(problems(&c), Vec::<String>::new());
    let mut sim = Sim::new(&scenario(&c), &SimOptions::default());
    sim.run_until(RUN_S * NS_PER_S);
    let queued: u64 = sim
        .instances()
        .iter()
        .map(|x| x.stats().get(fusion_core::stats::Stat::PxStatementsQueued))
        .sum();
    assert!(queued > 0, "nothing queued: the test does not test queuing");
}
