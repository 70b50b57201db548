//! Parallel execution in scenario files: `[[query]]`, `parallel_query` steps
//! and the parallel parameters as loaded (their errors are in `load_errors.rs`).

use fusion_core::config::Step;
use fusion_core::px::{Degree, DegreePolicy, JoinDistribution, PxPlan};
use fusion_scenario::{LoadedScenario, load_str};

/// Parallel queries and the parallel parameters (the base of the `px:`
/// error cases in `load_errors.rs`).
const PX: &str = include_str!("data/px.toml");

fn ok(text: &str) -> LoadedScenario {
    match load_str(text, "t.toml", &[]) {
        Ok(s) => s,
        Err(e) => panic!("expected the scenario to load, got:\n{e}"),
    }
}

#[test]
fn queries_steps_and_parameters_load() {
    let s = ok(PX);
    let sc = &s.variants[0].scenario;
    let Step::ParallelQuery(q) = &sc.workloads[0].transactions[0].steps[0] else {
        panic!("not a parallel query step");
    };
    assert_eq!(q.name, "sql2");
    assert_eq!(q.plan, PxPlan::HashJoinGroupBy);
    assert_eq!(q.tables, [0, 1]);
    assert_eq!(q.degree, Degree::Fixed(16));
    assert_eq!(q.distribution, JoinDistribution::Hash);
    assert_eq!(q.group_mod, 100);
    let p1 = &sc.instances[0].px;
    assert_eq!(p1.instance_groups, ["inst1", "all", "inst12"]);
    assert_eq!(p1.instance_group, "inst12");
    assert_eq!(
        sc.instances[1].px.instance_groups,
        ["inst2", "all", "inst12"]
    );
    assert!(sc.instances[2].px.instance_groups.is_empty());
    assert_eq!(p1.message_size, 2148);
    // Derived defaults (T-series formulas).
    assert_eq!(p1.max_servers(4), 40);
    assert_eq!(p1.servers_target(4), 32);
    assert_eq!(p1.degree_policy, DegreePolicy::Manual);
}

#[test]
fn parallel_parameters_load() {
    // Seconds with decimals for the threshold (and only there).
    let text = PX.replace(
        "cpu_count = 4",
        "cpu_count = 4\nparallel_min_time_threshold = 0.5",
    );
    let p = &ok(&text).variants[0].scenario.instances[0].px;
    assert_eq!(p.min_time_threshold(), 500_000_000);
    // `parallel_force_local = true` is a TOML boolean.
    let text = PX.replace(
        "cpu_count = 4",
        "cpu_count = 4\nparallel_force_local = true",
    );
    assert!(ok(&text).variants[0].scenario.instances[0].px.force_local);
}

#[test]
fn phases_change_dynamic_parallel_parameters() {
    let text = PX.replace(
        "duration_s = 1",
        "duration_s = 1\n\n[phase.parameters]\nparallel_servers_target = 8\nparallel_force_local = true",
    );
    ok(&text);
}
