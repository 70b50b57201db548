//! Parallel execution in scenario files: `[[query]]`, `parallel_query` steps
//! and the parallel parameters, with the loader's errors (file:line:column and key).

use fusion_core::config::Step;
use fusion_core::px::{Degree, DegreePolicy, JoinDistribution, PxPlan};
use fusion_scenario::{LoadedScenario, load_str};

const PX: &str = r#"[scenario]
name = "px"
title = "Parallel query"

[cluster]
instances = 3

[parameters]
cpu_count = 4
parallel_execution_message_size = 2148

[parameters.inst1]
instance_groups = "inst1, all, inst12"
parallel_instance_group = "inst12"

[parameters.inst2]
instance_groups = "'inst2','all','inst12'"

[[table]]
name = "t1"
rows = 1000
rows_per_block = 10

[[table]]
name = "t2"
rows = 1000
rows_per_block = 10

[[query]]
name = "sql2"
plan = "hash_join_group_by"
tables = ["t1", "t2"]
degree = 16
group_by_mod = 100

[[query]]
name = "agg"
plan = "scan_aggregate"
tables = ["t1"]
degree = 8
instances = 2

[[workload]]
name = "w"
instances = [1]
sessions_per_instance = 1
iterations = 1

[[workload.transaction]]
steps = [{ op = "parallel_query", query = "sql2" }]

[[phase]]
name = "run"
duration_s = 1
"#;

fn ok(text: &str) -> LoadedScenario {
    match load_str(text, "t.toml", &[]) {
        Ok(s) => s,
        Err(e) => panic!("expected the scenario to load, got:\n{e}"),
    }
}

fn err(text: &str) -> String {
    match load_str(text, "t.toml", &[]) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
}

#[track_caller]
fn assert_one(msg: &str, line: usize, key: &str, words: &str) {
    assert_eq!(msg.lines().count(), 1, "expected one problem, got:\n{msg}");
    let prefix = format!("t.toml:{line}:");
    assert!(
        msg.starts_with(&prefix),
        "expected line {line}, got:\n{msg}"
    );
    assert!(
        msg.contains(&format!("`{key}`")),
        "expected key `{key}` in:\n{msg}"
    );
    assert!(msg.contains(words), "expected `{words}` in:\n{msg}");
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
fn bad_plans_tables_and_degrees() {
    let text = PX.replace("plan = \"scan_aggregate\"", "plan = \"scan_agregate\"");
    assert_one(
        &err(&text),
        line_of(&text, "scan_agregate"),
        "query[1].plan",
        "did you mean `scan_aggregate`",
    );
    let text = PX.replace("tables = [\"t1\", \"t2\"]", "tables = [\"t1\"]");
    assert_one(
        &err(&text),
        line_of(&text, "hash_join_group_by") + 1,
        "query[0].tables",
        "reads 2 tables, found 1",
    );
    let text = PX.replace("tables = [\"t1\", \"t2\"]", "tables = [\"t1\", \"t9\"]");
    assert_one(
        &err(&text),
        line_of(&text, "\"t9\""),
        "query[0].tables[1]",
        "unknown table `t9`",
    );
    let text = PX.replace("degree = 16", "degree = 0");
    assert_one(
        &err(&text),
        line_of(&text, "degree = 0"),
        "query[0].degree",
        "1..=4096",
    );
    let text = PX.replace("degree = 16", "degree = \"lots\"");
    assert_one(
        &err(&text),
        line_of(&text, "\"lots\""),
        "query[0].degree",
        "\"default\"",
    );
    let text = PX.replace("instances = 2", "instances = 2\ndistribution = \"hash\"");
    assert_one(
        &err(&text),
        line_of(&text, "distribution"),
        "query[1].distribution",
        "applies to plan \"hash_join_group_by\" only",
    );
    let text = PX.replace(
        "degree = 8\ninstances = 2",
        "degree = \"default\"\ninstances = 2",
    );
    assert_one(
        &err(&text),
        line_of(&text, "instances = 2"),
        "query[1].instances",
        "does not apply",
    );
    let text = PX.replace("group_by_mod = 100", "group_by_mod = 100\ncolour = 1");
    assert_one(
        &err(&text),
        line_of(&text, "colour"),
        "query[0].colour",
        "unknown key `colour`",
    );
}

#[test]
fn steps_name_known_queries() {
    let text = PX.replace("query = \"sql2\"", "query = \"sql9\"");
    assert_one(
        &err(&text),
        line_of(&text, "sql9"),
        "workload[0].transaction[0].steps[0].query",
        "unknown query `sql9` (queries: sql2, agg)",
    );
}

#[test]
fn a_table_a_workload_changes_cannot_be_read_in_parallel() {
    let text = PX.replace(
        "steps = [{ op = \"parallel_query\", query = \"sql2\" }]",
        "steps = [{ op = \"parallel_query\", query = \"sql2\" }, { op = \"insert\", table = \"t2\" }]",
    );
    let msg = err(&text);
    assert_one(
        &msg,
        line_of(&text, "tables = [\"t1\", \"t2\"]"),
        "query[0].tables",
        "table `t2` is changed by workload `w`",
    );
}

#[test]
fn parallel_parameters_are_checked() {
    let text = PX.replace(
        "parallel_execution_message_size = 2148",
        "parallel_execution_message_size = 2148\nparallel_max_servers = 8\nparallel_servers_target = 9",
    );
    let msg = err(&text);
    assert!(
        msg.contains("`parameters.parallel_servers_target`")
            && msg.contains("parallel_servers_target = 9 exceeds parallel_max_servers = 8"),
        "{msg}"
    );
    let text = PX.replace(
        "cpu_count = 4",
        "cpu_count = 4\nparallel_degree_policy = \"sometimes\"",
    );
    assert_one(
        &err(&text),
        line_of(&text, "sometimes"),
        "parameters.parallel_degree_policy",
        "MANUAL, LIMITED or AUTO",
    );
    let text = PX.replace("\"inst1, all, inst12\"", "\"inst1, all, in st12\"");
    assert_one(
        &err(&text),
        line_of(&text, "in st12"),
        "parameters.inst1.instance_groups",
        "not a group name",
    );
    let text = format!("{PX}\n[parameters.inst3]\nparallel_execution_message_size = 4096\n");
    let msg = err(&text);
    assert!(msg.contains("must be the same on every instance"), "{msg}");
    // Seconds with decimals for the threshold (and only there).
    let text = PX.replace(
        "cpu_count = 4",
        "cpu_count = 4\nparallel_min_time_threshold = 0.5",
    );
    let p = &ok(&text).variants[0].scenario.instances[0].px;
    assert_eq!(p.min_time_threshold(), 500_000_000);
    let text = PX.replace("cpu_count = 4", "cpu_count = 4\nparallel_max_servers = 1.5");
    assert!(err(&text).contains("expected an integer or text"));
    // `parallel_force_local = true` is a TOML boolean.
    let text = PX.replace(
        "cpu_count = 4",
        "cpu_count = 4\nparallel_force_local = true",
    );
    assert!(ok(&text).variants[0].scenario.instances[0].px.force_local);
}

#[test]
fn phases_change_dynamic_parallel_parameters_only() {
    let text = PX.replace(
        "duration_s = 1",
        "duration_s = 1\n\n[phase.parameters]\nparallel_servers_target = 8\nparallel_force_local = true",
    );
    ok(&text);
    let text = PX.replace(
        "duration_s = 1",
        "duration_s = 1\n\n[phase.parameters]\ninstance_groups = \"x\"",
    );
    assert_one(
        &err(&text),
        line_of(&text, "instance_groups = \"x\""),
        "phase[0].parameters.instance_groups",
        "needs an instance restart",
    );
    let text = PX.replace(
        "duration_s = 1",
        "duration_s = 1\n\n[phase.parameters]\nparallel_servers_target = 99",
    );
    let msg = err(&text);
    assert!(
        msg.contains("phase `run`") && msg.contains("exceeds parallel_max_servers = 40"),
        "{msg}"
    );
}
