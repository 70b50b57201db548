//! What `fusionlab chaos` prints: the runs with random failures summed up
//! (runs, faults by kind, commits acknowledged and lost, violations,
//! protocol errors, failing seeds), as a table or one JSON object, and for
//! each failing run its faults, its first problems and how to replay it.

use fusion_core::config::{NS_PER_S, Nanos};
use fusion_scenario::{Fault, LinkTarget};
use serde_json::{Value, json};

use crate::fmt::grouped;

/// The runs of one `fusionlab chaos`, in seed order.
#[derive(Clone, Debug, Default)]
pub struct ChaosResult {
    pub scenario: String,
    /// What carried the runs out: `simulator`, or `live` (real processes).
    pub driver: String,
    /// The command that reruns the scenario, before `--runs 1 --seed X`.
    pub replay: String,
    /// The first run's seed (run i has seed + i).
    pub seed: u64,
    /// Every kind `chaos` knows, in order (the JSON's `faults` keys).
    pub kinds: Vec<String>,
    pub kinds_drawn: Vec<String>,
    /// Kinds not drawn, and why (the loader's reason).
    pub kinds_not_drawn: Vec<(String, String)>,
    pub runs: Vec<ChaosRun>,
}

/// One run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChaosRun {
    pub seed: u64,
    /// (kind, the fault in a line), in time order.
    pub faults: Vec<(String, String)>,
    pub acknowledged: u64,
    pub lost: u64,
    pub violations: Vec<String>,
    /// Protocol errors (and a cluster that did not come to rest).
    pub errors: Vec<String>,
}

impl ChaosRun {
    /// Lost an acknowledged commit, broke a check or hit a protocol error.
    pub fn failed(&self) -> bool {
        self.lost > 0 || !self.violations.is_empty() || !self.errors.is_empty()
    }
}

impl ChaosResult {
    /// Faults drawn per kind, every kind of [`ChaosResult::kinds`].
    fn faults(&self) -> Vec<(&str, u64)> {
        self.kinds
            .iter()
            .map(|k| {
                let n = self
                    .runs
                    .iter()
                    .flat_map(|r| &r.faults)
                    .filter(|f| &f.0 == k)
                    .count();
                (k.as_str(), n as u64)
            })
            .collect()
    }

    fn sum(&self, f: impl Fn(&ChaosRun) -> u64) -> u64 {
        self.runs.iter().map(f).sum()
    }

    fn failing(&self) -> Vec<u64> {
        self.runs
            .iter()
            .filter(|r| r.failed())
            .map(|r| r.seed)
            .collect()
    }
}

/// A fault in a line: `kill inst2 at 3.200 s of "baseline"`.
pub fn describe_fault(fault: &Fault, phase: &str) -> String {
    let s = |ns: Nanos| format!("{:.3} s", ns as f64 / NS_PER_S as f64);
    let target = |t: LinkTarget| match t {
        LinkTarget::All => "all links".to_string(),
        LinkTarget::Instance(i) => format!("inst{i}'s links"),
        LinkTarget::Link { from, to } => format!("inst{from}->inst{to}"),
    };
    match *fault {
        Fault::Kill { instance, at } => format!("kill inst{instance} at {} of {phase:?}", s(at)),
        Fault::Restart { instance, at } => {
            format!("restart inst{instance} at {} of {phase:?}", s(at))
        }
        Fault::Pause {
            instance,
            at,
            duration,
        } => format!(
            "pause inst{instance} at {} of {phase:?} for {}",
            s(at),
            s(duration)
        ),
        Fault::Loss {
            target: t,
            loss_ppm,
            ..
        } => format!(
            "loss of {:.0} % on {} in {phase:?}",
            f64::from(loss_ppm) / 10_000.0,
            target(t)
        ),
        Fault::Partition { target: t, .. } => format!("partition of {} in {phase:?}", target(t)),
        Fault::StressCpu {
            instance,
            workers,
            load_pct,
        } => format!("stress_cpu inst{instance}: {workers} workers at {load_pct} % in {phase:?}"),
        Fault::DiskLatency {
            instance,
            device,
            latency,
            ..
        } => format!(
            "disk_latency inst{instance} {}: {} ms in {phase:?}",
            match device {
                fusion_scenario::Device::Redo => "redo",
                fusion_scenario::Device::Data => "data",
            },
            grouped(latency as f64 / 1e6, 1)
        ),
        Fault::NetworkLatency {
            target: t, latency, ..
        } => format!(
            "latency +{} ms on {} in {phase:?}",
            grouped(latency as f64 / 1e6, 1),
            target(t)
        ),
        Fault::Bandwidth {
            target: t,
            rate_bps,
        } => format!(
            "bandwidth {} Mbit/s on {} in {phase:?}",
            grouped(rate_bps as f64 / 1e6, 0),
            target(t)
        ),
    }
}

/// The JSON object: `{scenario, driver, seed, runs, kinds_drawn, kinds_not_drawn,
/// faults, commits_acknowledged, commits_lost, violations, protocol_errors,
/// failing_seeds, per_run}`.
pub fn json(r: &ChaosResult) -> Value {
    let faults: serde_json::Map<String, Value> = r
        .faults()
        .into_iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    json!({
        "scenario": r.scenario,
        "driver": r.driver,
        "seed": r.seed,
        "runs": r.runs.len(),
        "kinds_drawn": r.kinds_drawn,
        "kinds_not_drawn": r
            .kinds_not_drawn
            .iter()
            .map(|(k, why)| json!({ "kind": k, "why": why }))
            .collect::<Vec<_>>(),
        "faults": faults,
        "commits_acknowledged": r.sum(|x| x.acknowledged),
        "commits_lost": r.sum(|x| x.lost),
        "violations": r.sum(|x| x.violations.len() as u64),
        "protocol_errors": r.sum(|x| x.errors.len() as u64),
        "failing_seeds": r.failing(),
        "per_run": r
            .runs
            .iter()
            .map(|o| json!({
                "seed": o.seed,
                "faults": o.faults.iter().map(|f| &f.1).collect::<Vec<_>>(),
                "commits_acknowledged": o.acknowledged,
                "commits_lost": o.lost,
                "violations": o.violations,
                "protocol_errors": o.errors,
            }))
            .collect::<Vec<_>>(),
    })
}

/// The table, then each failing run.
pub fn text(r: &ChaosResult) -> String {
    let mut s = String::new();
    let runs = r.runs.len();
    s.push_str(&format!(
        "Chaos: {}, {runs} run{} from seed {} (run i has seed {} + i), checked\n",
        r.scenario,
        if runs == 1 { "" } else { "s" },
        r.seed,
        r.seed
    ));
    // Long lines wrap under themselves: the summary fits 100 columns.
    let mut line = |text: &str, first: &str, rest: &str| {
        s.push_str(&crate::fmt::wrapped(text, first, rest));
        s.push('\n');
    };
    let kinds = if r.kinds_drawn.is_empty() {
        "none".to_string()
    } else {
        r.kinds_drawn.join(", ")
    };
    let driver = if r.driver == "live" {
        "live (each run on a local cluster of real processes, one after the other)"
    } else {
        r.driver.as_str()
    };
    line(driver, "driver: ", "  ");
    line(&kinds, "kinds drawn: ", "  ");
    for (k, why) in &r.kinds_not_drawn {
        line(&format!("{k}: {why}"), "not drawn: ", "  ");
    }
    s.push('\n');
    let by_kind = r.faults();
    let drawn: Vec<String> = by_kind
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let total: u64 = by_kind.iter().map(|f| f.1).sum();
    let failing: Vec<String> = r.failing().iter().map(u64::to_string).collect();
    let count = |v: u64| grouped(v as f64, 0);
    let rows = [
        ("runs", count(runs as u64)),
        (
            "faults",
            if drawn.is_empty() {
                "0".to_string()
            } else {
                format!("{total} ({})", drawn.join(", "))
            },
        ),
        ("commits acknowledged", count(r.sum(|x| x.acknowledged))),
        ("commits lost", count(r.sum(|x| x.lost))),
        ("violations", count(r.sum(|x| x.violations.len() as u64))),
        ("protocol errors", count(r.sum(|x| x.errors.len() as u64))),
        (
            "failing seeds",
            if failing.is_empty() {
                "none".to_string()
            } else {
                failing.join(", ")
            },
        ),
    ];
    for (what, v) in rows {
        s.push_str(&crate::fmt::wrapped(
            &v,
            &format!("{what:<22}"),
            &" ".repeat(22),
        ));
        s.push('\n');
    }
    for o in r.runs.iter().filter(|o| o.failed()) {
        s.push_str(&format!(
            "\nseed {}: {} acknowledged, {} lost, {} violations, {} protocol errors\n",
            o.seed,
            o.acknowledged,
            o.lost,
            o.violations.len(),
            o.errors.len()
        ));
        for line in o
            .faults
            .iter()
            .map(|f| &f.1)
            .chain(o.violations.iter().chain(&o.errors).take(3))
        {
            s.push_str(&crate::fmt::wrapped(line, "  ", "    "));
            s.push('\n');
        }
        s.push_str(&format!(
            "  replay: {} --runs 1 --seed {}\n",
            r.replay, o.seed
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_long_faults_say_what_they_do() {
        let said = |f: Fault| describe_fault(&f, "p");
        assert_eq!(
            said(Fault::StressCpu {
                instance: 2,
                workers: 8,
                load_pct: 100
            }),
            "stress_cpu inst2: 8 workers at 100 % in \"p\""
        );
        assert_eq!(
            said(Fault::DiskLatency {
                instance: 2,
                device: fusion_scenario::Device::Redo,
                latency: 20_000_000,
                jitter: 0
            }),
            "disk_latency inst2 redo: 20.0 ms in \"p\""
        );
        assert_eq!(
            said(Fault::NetworkLatency {
                target: LinkTarget::Instance(1),
                latency: 2_500_000,
                jitter: 0
            }),
            "latency +2.5 ms on inst1's links in \"p\""
        );
        assert_eq!(
            said(Fault::Bandwidth {
                target: LinkTarget::All,
                rate_bps: 100_000_000
            }),
            "bandwidth 100 Mbit/s on all links in \"p\""
        );
    }

    #[test]
    fn a_failing_run_is_listed_with_its_faults_and_replay() {
        let run = |seed, lost| ChaosRun {
            seed,
            faults: vec![("kill".into(), "kill inst2 at 1.000 s of \"a\"".into())],
            acknowledged: 10,
            lost,
            violations: if lost > 0 {
                vec!["lost write: table 0 key 1".into()]
            } else {
                Vec::new()
            },
            errors: Vec::new(),
        };
        let r = ChaosResult {
            scenario: "s".into(),
            driver: "live".into(),
            replay: "fusionlab chaos s.toml".into(),
            seed: 5,
            kinds: vec!["kill".into(), "pause".into()],
            kinds_drawn: vec!["kill".into()],
            kinds_not_drawn: vec![("pause".into(), "no".into())],
            runs: vec![run(5, 0), run(6, 1)],
        };
        let t = text(&r);
        for line in [
            "faults                2 (kill 2)",
            "commits acknowledged  20",
            "commits lost          1",
            "failing seeds         6",
            "seed 6: 10 acknowledged, 1 lost, 1 violations, 0 protocol errors",
            "  kill inst2 at 1.000 s of \"a\"",
            "  replay: fusionlab chaos s.toml --runs 1 --seed 6",
            "not drawn: pause: no",
            "driver: live (each run on a local cluster of real processes",
        ] {
            assert!(t.contains(line), "`{line}` missing:\n{t}");
        }
        assert!(!t.contains("seed 5:"), "{t}");
        let j = json(&r);
        assert_eq!(j["faults"], json!({ "kill": 2, "pause": 0 }));
        assert_eq!(j["failing_seeds"], json!([6]));
        assert_eq!(j["commits_lost"], 1);
        assert_eq!(j["driver"], "live");
    }
}
