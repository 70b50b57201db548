//! Which figures each driver measures. A figure a driver does not measure
//! would read 0 there, and an expectation on it would pass (or fail) without
//! anything having been measured, so a run refuses such an expectation up
//! front ([`refusal`]), naming it and its metric.
//!
//! Almost every figure is counted by the instances' state machine
//! (`fusion-core`), which both drivers run unchanged, and carried whole by
//! both (the live statistics snapshot holds every statistic, event,
//! statement and parallel query by name). The exceptions are in [`TABLE`]:
//! figures only a view of the whole cluster can count, which each driver
//! counts itself, and figures the model does not count at all.

use fusion_core::metrics::Metric;
use fusion_core::stats::{Stat, Wait};
use fusion_scenario::{LoadedScenario, MetricRef, Operand};

/// A driver of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// `fusion-sim`: every instance in one process on a virtual clock.
    Simulator,
    /// `fusion-live`: one process per instance, in real time.
    Live,
}

impl Driver {
    pub const ALL: &'static [Driver] = &[Driver::Simulator, Driver::Live];

    /// As a message names it.
    pub fn name(self) -> &'static str {
        match self {
            Driver::Simulator => "the simulator",
            Driver::Live => "a live cluster",
        }
    }
}

/// A statistic or a wait event (every metric reads one or more of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    Stat(Stat),
    Wait(Wait),
}

/// A figure the instances do not count, and who measures it.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub figure: Figure,
    /// The drivers that measure it.
    pub measured_by: &'static [Driver],
    /// How it is measured, or why it is not.
    pub how: &'static str,
}

const BOTH: &[Driver] = &[Driver::Simulator, Driver::Live];
const NOBODY: &[Driver] = &[];

/// Every figure the instances' state machine does not count itself. A
/// figure not listed here is counted by the instances and measured by every
/// driver.
pub const TABLE: &[Entry] = &[
    Entry {
        figure: Figure::Stat(Stat::SeqValuesOutOfOrder),
        measured_by: BOTH,
        how: "counted by the driver over every instance's values in the cluster's order \
              (fusion_driver::SeqOrder: the simulator's event order, a live cluster's hand-out times)",
    },
    Entry {
        figure: Figure::Stat(Stat::SeqValuesDuplicated),
        measured_by: BOTH,
        how: "counted by the driver over every instance's values (fusion_driver::SeqOrder)",
    },
    Entry {
        figure: Figure::Stat(Stat::RowCacheGets),
        measured_by: NOBODY,
        how: "row cache gets are not counted (the lock's waits are: `waits:row cache lock`)",
    },
    Entry {
        figure: Figure::Stat(Stat::RowCacheGetMisses),
        measured_by: NOBODY,
        how: "row cache misses are not counted (the lock's waits are: `waits:row cache lock`)",
    },
    Entry {
        figure: Figure::Wait(Wait::FreeBufferWaits),
        measured_by: NOBODY,
        how: "a session never waits for a free buffer in the model (a full cache of dirty or \
              pinned buffers runs over capacity until DBWR catches up)",
    },
    Entry {
        figure: Figure::Wait(Wait::GcCrGrantBusy),
        measured_by: NOBODY,
        how: "the model names a grant `2-way` or `congested`, never `busy`",
    },
    Entry {
        figure: Figure::Wait(Wait::GcCurrentGrantBusy),
        measured_by: NOBODY,
        how: "the model names a grant `2-way` or `congested`, never `busy`",
    },
];

/// Why `driver` does not measure `metric`, if it does not.
pub fn unmeasured(metric: Metric, driver: Driver) -> Option<&'static str> {
    let figure = match metric {
        Metric::Stat(s) | Metric::PerSecond(s) => Figure::Stat(s),
        Metric::EventWaits(w) | Metric::EventTimeMs(w) | Metric::EventAvgMs(w) => Figure::Wait(w),
        // The recovery summary: both drivers gather the instances' reports
        // and measure the brownout on the commits they sample.
        Metric::Recovery(_) => return None,
        // Formulas over figures the instances count (AWR lines, the latency
        // decomposition, the tkprof columns) and sums over every event of a
        // wait class (some never waited on, as in Oracle).
        Metric::Awr(_)
        | Metric::DecompMs(..)
        | Metric::DecompShare(..)
        | Metric::Sql(_)
        | Metric::SqlPerExec(_)
        | Metric::ClassTimeMs(_)
        | Metric::ClassTimeMsPerExec(_)
        | Metric::Node(_) => return None,
    };
    TABLE
        .iter()
        .find(|e| e.figure == figure)
        .filter(|e| !e.measured_by.contains(&driver))
        .map(|e| e.how)
}

/// Every figure of `loaded` that `driver` does not measure: each side of
/// each expectation and the tour's figures, one line each naming the
/// expectation (or the tour) and the metric as the file wrote it.
pub fn unmeasurable(loaded: &LoadedScenario, driver: Driver) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut note = |whose: String, m: &MetricRef| {
        if let Some(why) = unmeasured(m.metric, driver) {
            let line = format!("{whose} reads `{}`: {why}", m.text.trim());
            if !out.contains(&line) {
                out.push(line);
            }
        }
    };
    for e in &loaded.expectations {
        note(format!("expectation {:?}", e.name), &e.left);
        if let Operand::Metric(m) = &e.right {
            note(format!("expectation {:?}", e.name), m);
        }
    }
    if let Some(t) = &loaded.tour {
        for m in std::iter::once(&t.measured).chain(&t.versus) {
            note("the tour's figure".to_string(), m);
        }
    }
    out
}

/// Err: a fault of `loaded` that `driver` cannot carry out when it cannot
/// signal the instances' processes: a live runner on a cluster it did not
/// start (containers) does not kill, freeze or start them.
pub fn fault_refusal(loaded: &LoadedScenario, driver: Driver) -> Result<(), String> {
    fault_refusal_through(loaded, driver, None)
}

/// [`fault_refusal`] for a run that ends with phase `last` (a held run:
/// the phases after it do not run, so their faults are not carried out).
pub fn fault_refusal_through(
    loaded: &LoadedScenario,
    driver: Driver,
    last: Option<&str>,
) -> Result<(), String> {
    match unrunnable_fault(loaded, driver, last) {
        Some(why) => Err(format!("{}: {why}", loaded.path)),
        None => Ok(()),
    }
}

fn unrunnable_fault(loaded: &LoadedScenario, driver: Driver, last: Option<&str>) -> Option<String> {
    if driver != Driver::Live {
        return None;
    }
    let v = loaded.variants.first()?;
    let phases = &v.scenario.phases;
    let runs = match last.and_then(|l| phases.iter().position(|p| p.name == l)) {
        Some(i) => &phases[..=i],
        None => &phases[..],
    };
    runs.iter().find_map(|p| {
        p.faults
            .iter()
            .find(|f| {
                matches!(
                    f,
                    fusion_scenario::Fault::Kill { .. }
                        | fusion_scenario::Fault::Pause { .. }
                        | fusion_scenario::Fault::Restart { .. }
                )
            })
            .map(|f| {
                format!(
                    "phase {:?} has a `{}` fault, which needs a runner that can kill, freeze \
                     and start the instances' processes: a cluster started by `fusionlab up` or \
                     by `run --live` itself (or the simulator: run it without --live)",
                    p.name,
                    f.kind()
                )
            })
    })
}

/// Err: `loaded` names figures `driver` does not measure, and which (a
/// message for the user, as for a scenario that does not load).
pub fn refusal(loaded: &LoadedScenario, driver: Driver) -> Result<(), String> {
    let lines = unmeasurable(loaded, driver);
    if lines.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: {} does not measure {} this scenario reads, so {} would hold or fail on a 0 \
         nobody measured:\n  {}",
        loaded.path,
        driver.name(),
        if lines.len() == 1 {
            "a figure"
        } else {
            "figures"
        },
        if lines.len() == 1 { "it" } else { "they" },
        lines.join("\n  ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driver_measures_what_the_instances_count() {
        for &d in Driver::ALL {
            assert_eq!(unmeasured(Metric::Stat(Stat::GcCrBlocksReceived), d), None);
            assert_eq!(unmeasured(Metric::EventWaits(Wait::RowCacheLock), d), None);
            // Counted by each driver over the whole cluster.
            assert_eq!(unmeasured(Metric::Stat(Stat::SeqValuesOutOfOrder), d), None);
            assert_eq!(
                unmeasured(Metric::PerSecond(Stat::SeqValuesDuplicated), d),
                None
            );
        }
    }

    #[test]
    fn a_figure_nothing_counts_is_unmeasured_in_every_form() {
        for &d in Driver::ALL {
            assert!(unmeasured(Metric::Stat(Stat::RowCacheGets), d).is_some());
            assert!(unmeasured(Metric::PerSecond(Stat::RowCacheGets), d).is_some());
            for m in [
                Metric::EventWaits(Wait::FreeBufferWaits),
                Metric::EventTimeMs(Wait::FreeBufferWaits),
                Metric::EventAvgMs(Wait::FreeBufferWaits),
            ] {
                assert!(unmeasured(m, d).is_some(), "{m:?}");
            }
        }
    }

    #[test]
    fn both_drivers_report_recoveries() {
        use fusion_core::metrics::RecoveryFigure;
        let m = Metric::Recovery(RecoveryFigure::BrownoutMs);
        assert_eq!(unmeasured(m, Driver::Simulator), None);
        assert_eq!(unmeasured(m, Driver::Live), None);
    }

    #[test]
    fn a_held_run_is_refused_only_the_faults_of_the_phases_it_runs() {
        let text = include_str!("../../../scenarios/instance-crash-recovery.toml");
        let loaded = fusion_scenario::load_str(text, "instance-crash-recovery.toml", &[])
            .expect("the shipped scenario loads");
        // Its "crash" phase kills instance 3: a whole live run on a cluster
        // the runner cannot signal is refused, and so is a run held there.
        let whole = fault_refusal(&loaded, Driver::Live).expect_err("a kill is refused");
        assert!(
            whole.contains("phase \"crash\" has a `kill` fault"),
            "{whole}"
        );
        assert!(fault_refusal_through(&loaded, Driver::Live, Some("crash")).is_err());
        // Held at "baseline", the kill never comes (faults from outside do).
        assert_eq!(
            fault_refusal_through(&loaded, Driver::Live, Some("baseline")),
            Ok(())
        );
        assert_eq!(fault_refusal(&loaded, Driver::Simulator), Ok(()));
    }

    #[test]
    fn each_figure_is_listed_once() {
        for (i, e) in TABLE.iter().enumerate() {
            assert!(
                TABLE[i + 1..].iter().all(|o| o.figure != e.figure),
                "{:?} twice",
                e.figure
            );
        }
    }
}
