//! What `fusionlab chaos` prints: the runs with random failures summed up
//! (runs, faults by kind, commits acknowledged and lost, violations,
//! protocol errors, failing seeds), as a table or one JSON object, and for
//! each failing run its faults, its first problems and how to replay it.
//! A campaign split over machines (`--parts`) prints its slice; [`merge`]
//! puts the slices' JSON back into what the whole campaign prints.

use fusion_core::config::{NS_PER_S, Nanos};
use fusion_scenario::{Fault, LinkTarget};
use serde_json::{Value, json};

use crate::campaign::{
    Slice, array_of, field, first_difference, in_part_order, str_of, strings_of, u64_of,
};
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
    /// The slice of the campaign's runs these are (`--parts`), if not all.
    pub slice: Option<Slice>,
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

/// The JSON object: `{scenario, driver, replay, seed, runs, kinds,
/// kinds_drawn, kinds_not_drawn, faults, commits_acknowledged, commits_lost,
/// violations, protocol_errors, failing_seeds, per_run}`, and `part` for a
/// slice of a campaign.
pub fn json(r: &ChaosResult) -> Value {
    let faults: serde_json::Map<String, Value> = r
        .faults()
        .into_iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    let mut o = json!({
        "scenario": r.scenario,
        "driver": r.driver,
        "replay": r.replay,
        "seed": r.seed,
        "runs": r.runs.len(),
        "kinds": r.kinds,
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
                "fault_kinds": o.faults.iter().map(|f| &f.0).collect::<Vec<_>>(),
                "commits_acknowledged": o.acknowledged,
                "commits_lost": o.lost,
                "violations": o.violations,
                "protocol_errors": o.errors,
            }))
            .collect::<Vec<_>>(),
    });
    if let Some(slice) = &r.slice {
        o["part"] = slice.json();
    }
    o
}

/// A campaign's JSON read back (a whole campaign's or a slice's).
pub fn from_json(v: &Value) -> Result<ChaosResult, String> {
    let runs = array_of(field(v, "per_run")?, "per_run")?
        .iter()
        .map(|o| {
            let faults = strings_of(field(o, "faults")?, "per_run.faults")?;
            let kinds = strings_of(field(o, "fault_kinds")?, "per_run.fault_kinds")?;
            if kinds.len() != faults.len() {
                return Err("per_run: `faults` and `fault_kinds` differ in length".to_string());
            }
            Ok(ChaosRun {
                seed: u64_of(field(o, "seed")?, "per_run.seed")?,
                faults: kinds.into_iter().zip(faults).collect(),
                acknowledged: u64_of(field(o, "commits_acknowledged")?, "commits_acknowledged")?,
                lost: u64_of(field(o, "commits_lost")?, "commits_lost")?,
                violations: strings_of(field(o, "violations")?, "per_run.violations")?,
                errors: strings_of(field(o, "protocol_errors")?, "per_run.protocol_errors")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let slice = v.get("part").map(Slice::from_json).transpose()?;
    if let Some(s) = &slice
        && s.range().len() != runs.len()
    {
        return Err(format!(
            "part {} of {} holds {} runs, not the {} of its slice",
            s.part,
            s.parts,
            runs.len(),
            s.range().len()
        ));
    }
    Ok(ChaosResult {
        scenario: str_of(field(v, "scenario")?, "scenario")?.to_string(),
        driver: str_of(field(v, "driver")?, "driver")?.to_string(),
        replay: str_of(field(v, "replay")?, "replay")?.to_string(),
        seed: u64_of(field(v, "seed")?, "seed")?,
        kinds: strings_of(field(v, "kinds")?, "kinds")?,
        kinds_drawn: strings_of(field(v, "kinds_drawn")?, "kinds_drawn")?,
        kinds_not_drawn: array_of(field(v, "kinds_not_drawn")?, "kinds_not_drawn")?
            .iter()
            .map(|k| {
                Ok((
                    str_of(field(k, "kind")?, "kinds_not_drawn.kind")?.to_string(),
                    str_of(field(k, "why")?, "kinds_not_drawn.why")?.to_string(),
                ))
            })
            .collect::<Result<Vec<_>, String>>()?,
        runs,
        slice,
    })
}

/// The slices of one campaign (file name, its JSON) put back together: what
/// the whole campaign prints. Run i of the whole has the first part's seed + i.
pub fn merge(slices: &[(String, Value)]) -> Result<ChaosResult, String> {
    let mut read = Vec::with_capacity(slices.len());
    let mut parts = Vec::with_capacity(slices.len());
    for (file, v) in slices {
        let r = from_json(v).map_err(|e| format!("{file}: {e}"))?;
        let s = r.slice.ok_or_else(|| {
            format!("{file}: a whole campaign, not a part of one (run with --parts N --part K)")
        })?;
        parts.push((file.clone(), s));
        read.push(r);
    }
    let order = in_part_order(&parts)?;
    let (first_file, first_json) = &slices[order[0]];
    let settings = [
        "scenario",
        "driver",
        "replay",
        "kinds",
        "kinds_drawn",
        "kinds_not_drawn",
    ];
    for (file, v) in slices {
        if let Some(what) = first_difference(v, first_json, &settings) {
            return Err(format!(
                "{file} and {first_file}: not the same campaign (their `{what}` differ)"
            ));
        }
    }
    let first = &read[order[0]];
    let mut merged = ChaosResult {
        runs: Vec::with_capacity(parts[0].1.runs_total),
        slice: None,
        ..first.clone()
    };
    for &i in &order {
        let (file, s) = &parts[i];
        for (at, run) in s.range().zip(&read[i].runs) {
            let seed = first.seed.wrapping_add(at as u64);
            if run.seed != seed {
                return Err(format!(
                    "{file}: run {} has seed {}, not {seed}: not the campaign that starts \
                     at seed {} (another --seed?)",
                    at + 1,
                    run.seed,
                    first.seed
                ));
            }
            merged.runs.push(run.clone());
        }
    }
    Ok(merged)
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
    if let Some(slice) = &r.slice {
        s.push_str(&crate::fmt::wrapped(&slice.describe(), "", "  "));
        s.push('\n');
    }
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
    let driver = match r.driver.as_str() {
        "live" => "live (each run on a local cluster of real processes, one after the other)",
        "live-cluster" => "live (every run on the running cluster given, one after the other)",
        other => other,
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
            slice: None,
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
        // Sliced as `--parts 2` slices it, each through its JSON text.
        let parts: Vec<(String, Value)> = (1..=2)
            .rev()
            .map(|part| {
                let slice = Slice::new(part, 2, 2).expect("valid");
                let p = ChaosResult {
                    seed: 5 + u64::from(part) - 1,
                    runs: r.runs[slice.range()].to_vec(),
                    slice: Some(slice),
                    ..r.clone()
                };
                let text = serde_json::to_string(&json(&p)).expect("serializes");
                let back = serde_json::from_str(&text).expect("parses");
                (format!("part{part}.json"), back)
            })
            .collect();
        let m = merge(&parts).expect("merges");
        assert_eq!(text(&m), t);
        assert_eq!(json(&m), j);
        let mut other = parts.clone();
        other[0].1["replay"] = json!("fusionlab chaos s.toml --set a=1");
        assert!(merge(&other).unwrap_err().contains("`replay` differ"));
        let mut shifted = parts.clone();
        shifted[0].1["per_run"][0]["seed"] = json!(60);
        assert!(merge(&shifted).unwrap_err().contains("has seed 60, not 6"));
        assert!(
            merge(&parts[1..])
                .unwrap_err()
                .contains("part 2 of 2 is missing")
        );
    }
}
