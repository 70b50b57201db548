//! Property tests of sequences through the simulator: random small clusters
//! (2-4 instances, 1-3 sessions each) call `nextval` on NOCACHE, CACHE n
//! NOORDER and CACHE n ORDER sequences, and the values handed out, in the
//! cluster's event order, must show
//!
//! - no value handed out twice, across instances, in every mode;
//! - ORDER (and NOCACHE, serialized by the row cache lock): values increase
//!   in the global order of the calls;
//! - NOCACHE: no gaps (nothing rolls back or crashes here);
//! - CACHE: gaps bounded by cache size x instances;
//!
//! and no protocol error, with real work done (every session finished).

use fusion_core::config::{
    NS_PER_MS, NS_PER_US, Params, SequenceDef, Step, TableDef, WorkloadSpec,
};
use fusion_scenario::Scenario;
use fusion_sim::{Sim, SimOptions};
use fusion_testkit::{ScenarioBuilder, phase, table, txn, workload};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Config {
    seed: u64,
    instances: u8,
    sessions: u32,
    /// 0 = NOCACHE.
    cache: u32,
    order: bool,
    start: i64,
    increment: i64,
    calls: u64,
    think_us: u64,
    /// Also insert rows keyed by the sequence (the SEQ$ block and the table share the cache).
    insert: bool,
}

fn config() -> impl Strategy<Value = Config> {
    (
        any::<u64>(),
        2u8..=4,
        1u32..=3,
        prop_oneof![Just(0u32), 2u32..=30],
        any::<bool>(),
        1i64..=100,
        1i64..=5,
        5u64..=40,
        0u64..=300,
        any::<bool>(),
    )
        .prop_map(
            |(
                seed,
                instances,
                sessions,
                cache,
                order,
                start,
                increment,
                calls,
                think_us,
                insert,
            )| {
                Config {
                    seed,
                    instances,
                    sessions,
                    cache,
                    order,
                    start,
                    increment,
                    calls,
                    think_us,
                    insert,
                }
            },
        )
}

fn scenario(c: &Config) -> Scenario {
    let step = if c.insert {
        Step::InsertSeq {
            table: 0,
            rows: 1,
            sequence: 0,
        }
    } else {
        Step::NextVal {
            sequence: 0,
            rows: 1,
        }
    };
    let next = txn("next", 1, vec![step, Step::Commit]);
    ScenarioBuilder::new(c.instances)
        .seed(c.seed)
        .params(Params {
            cpu_count: 2,
            db_cache_size: 512 * 8192,
            db_block_size: 8192,
            ..Params::default()
        })
        .table(TableDef {
            free_blocks_per_instance: 64,
            ..table("t", 1, 20)
        })
        .sequence(SequenceDef {
            name: "s".into(),
            cache: c.cache,
            order: c.order,
            start: c.start,
            increment: c.increment,
        })
        .workload(WorkloadSpec {
            iterations: Some(c.calls),
            row_locks: Default::default(),
            ..workload(
                "w",
                c.instances,
                c.sessions,
                c.think_us * NS_PER_US,
                vec![next],
            )
        })
        .phase(phase("run", RUN_MS * NS_PER_MS))
        .build()
}

const RUN_MS: u64 = 5_000;

/// The properties, as a message per failure (empty = all hold).
fn problems(c: &Config) -> Vec<String> {
    let mut sim = Sim::new(&scenario(c), &SimOptions::default());
    sim.log_nextvals();
    sim.run_until(RUN_MS * NS_PER_MS);
    let mut p = Vec::new();
    for x in sim.instances() {
        p.extend(x.errors().iter().map(|e| format!("error: {e}")));
        if !x.sessions_finished() {
            p.push(format!("{}: sessions did not finish", x.id));
        }
    }
    let log = sim.nextvals();
    let expected = u64::from(c.instances) * u64::from(c.sessions) * c.calls;
    if log.len() as u64 != expected {
        p.push(format!(
            "{} values handed out, expected {expected}",
            log.len()
        ));
    }
    let mut values: Vec<i64> = log.iter().map(|&(_, _, _, v)| v).collect();
    let ordered = c.cache == 0 || c.order;
    if ordered && let Some(w) = values.windows(2).find(|w| w[1] <= w[0]) {
        p.push(format!("out of order: {} after {}", w[1], w[0]));
    }
    values.sort_unstable();
    if let Some(w) = values.windows(2).find(|w| w[0] == w[1]) {
        p.push(format!("value {} handed out twice", w[0]));
    }
    if let (Some(&lo), Some(&hi)) = (values.first(), values.last()) {
        if lo < c.start || (lo - c.start) % c.increment != 0 {
            p.push(format!("value {lo} is not start + k x increment"));
        }
        let span = ((hi - c.start) / c.increment + 1) as u64;
        let gaps = span - values.len() as u64;
        let bound = if c.cache == 0 {
            0
        } else {
            u64::from(c.cache) * u64::from(c.instances)
        };
        if gaps > bound {
            p.push(format!("{gaps} gaps, more than {bound}"));
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sequence_values_are_unique_ordered_and_gap_bounded(c in config()) {
        let p = problems(&c);
        prop_assert!(p.is_empty(), "sequence property failed for\n{c:#?}\n{}", p.join("\n"));
    }
}
