//! Turn a scenario's expectations into verdicts over a run's results.
//!
//! An expectation reads `left op factor * right`. Each side names a figure
//! (a [`Metric`]) at one place of the run: a variant, a phase, an instance or
//! the whole cluster.
//!
//! Variants: a side naming a variant is measured there. A left side without a
//! variant is measured in the only variant, or, when the run has several, once
//! per variant (the verdict is then named `<name> [<variant>]`). A right side
//! without a variant is measured in the same variant as the left side.

use fusion_core::metrics::{AwrLine, BlockKind, Metric};
use fusion_core::stats::Stats;
use fusion_scenario::{Expectation, LoadedScenario, MetricRef, Operand};

use crate::fmt::{Shown, factor};
use crate::model::{Measured, VariantResult, Verdict};

/// One verdict per expectation (per variant when the left side names none and
/// the run has several variants), in the order the scenario declares them.
pub fn evaluate(loaded: &LoadedScenario, variants: &[VariantResult]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for e in &loaded.expectations {
        match (&e.left.variant, variants) {
            (Some(v), _) => out.push(evaluate_one(e, v, variants, e.name.clone())),
            (None, []) => out.push(Verdict {
                name: e.name.clone(),
                passed: false,
                detail: "the run produced no results to measure".to_string(),
                measured: None,
            }),
            (None, [only]) => out.push(evaluate_one(e, &only.name, variants, e.name.clone())),
            (None, several) => {
                for v in several {
                    out.push(evaluate_one(
                        e,
                        &v.name,
                        variants,
                        format!("{} [{}]", e.name, v.name),
                    ));
                }
            }
        }
    }
    out
}

/// A measured side: where it was measured, and its value or why there is none.
struct Side {
    place: String,
    value: Result<f64, String>,
}

fn evaluate_one(
    e: &Expectation,
    left_variant: &str,
    variants: &[VariantResult],
    name: String,
) -> Verdict {
    let shown = Shown::of(e.left.metric);
    let right_ref = match &e.right {
        Operand::Metric(m) => Some(m),
        Operand::Value(_) => None,
    };
    let right_variant = right_ref
        .and_then(|m| m.variant.as_deref())
        .unwrap_or(left_variant);
    let show_variant = right_ref.is_some() && right_variant != left_variant;
    // The metric text is only worth repeating when the two sides measure different things.
    let show_text = right_ref.is_none_or(|m| m.text != e.left.text);

    let left = measure(&e.left, left_variant, variants, show_variant, show_text);
    let right = right_ref.map(|m| measure(m, right_variant, variants, show_variant, show_text));

    let op = e.op.symbol();
    match (&left.value, right.as_ref().map(|r| &r.value)) {
        (Ok(l), None) => {
            let Operand::Value(c) = e.right else {
                return missing(name, &[left]);
            };
            let target = e.factor * c;
            let rhs = if e.factor == 1.0 {
                shown.show(c)
            } else {
                format!(
                    "{} x {} (= {})",
                    factor(e.factor),
                    shown.show(c),
                    shown.show(target)
                )
            };
            Verdict {
                name,
                passed: e.op.holds(*l, target),
                detail: format!("{}: {}  {op}  {rhs}", left.place, shown.show(*l)),
                measured: Some(Measured {
                    value: *l,
                    target,
                    shown,
                }),
            }
        }
        (Ok(l), Some(Ok(r))) => {
            let right = right.as_ref().map(|s| s.place.as_str()).unwrap_or_default();
            let rshown = right_ref.map(|m| Shown::of(m.metric)).unwrap_or(shown);
            let target = e.factor * r;
            let rhs = if e.factor == 1.0 {
                format!("{right}: {}", rshown.show(*r))
            } else {
                format!(
                    "{} x {right}: {} (= {})",
                    factor(e.factor),
                    rshown.show(*r),
                    rshown.show(target)
                )
            };
            let ratio = if *r != 0.0 {
                format!("  -> ratio {:.1}", l / r)
            } else {
                String::new()
            };
            Verdict {
                name,
                passed: e.op.holds(*l, target),
                detail: format!("{}: {}  {op}  {rhs}{ratio}", left.place, shown.show(*l)),
                measured: Some(Measured {
                    value: *l,
                    target,
                    shown,
                }),
            }
        }
        _ => {
            let mut sides = vec![left];
            sides.extend(right);
            missing(name, &sides)
        }
    }
}

/// A failed verdict listing every side that had no value.
fn missing(name: String, sides: &[Side]) -> Verdict {
    let reasons: Vec<String> = sides
        .iter()
        .filter_map(|s| {
            s.value
                .as_ref()
                .err()
                .map(|why| format!("{}: {why}", s.place))
        })
        .collect();
    Verdict {
        name,
        passed: false,
        detail: reasons.join("; "),
        measured: None,
    }
}

fn measure(
    m: &MetricRef,
    variant: &str,
    variants: &[VariantResult],
    show_variant: bool,
    show_text: bool,
) -> Side {
    let who = match m.instance {
        Some(i) => format!("inst{i}"),
        None => "cluster".to_string(),
    };
    let mut place = format!("{who} {}", m.phase);
    if show_variant {
        place = format!("[{variant}] {place}");
    }
    if show_text {
        place = format!("{place} {}", m.text);
    }
    let value = value_of(m, variant, variants);
    Side { place, value }
}

/// The value `m` names in `variant` of the run, or why there is none.
pub(crate) fn value_of(
    m: &MetricRef,
    variant: &str,
    variants: &[VariantResult],
) -> Result<f64, String> {
    let v = variants
        .iter()
        .find(|v| v.name == variant)
        .ok_or_else(|| format!("variant `{variant}` is not in the run"))?;
    let phase = v.phase(&m.phase).ok_or_else(|| {
        format!(
            "phase `{}` is not in the run (variant `{variant}`)",
            m.phase
        )
    })?;
    if let Metric::Recovery(figure) = m.metric {
        return recovery_value(figure, m.instance, phase).ok_or_else(|| {
            format!(
                "`{}` had nothing to measure ({})",
                m.text,
                match m.instance {
                    Some(id) => format!("no recovery of instance {id} in phase `{}`", m.phase),
                    None => format!("no instance recovery in phase `{}`", m.phase),
                }
            )
        });
    }
    let stats: Stats = match m.instance {
        Some(id) => phase
            .instance(id)
            .map(|i| i.stats.clone())
            .ok_or_else(|| format!("instance {id} did not take part in phase `{}`", m.phase))?,
        None => phase.cluster_stats(),
    };
    m.metric.eval(&stats, phase.elapsed_ns).ok_or_else(|| {
        format!(
            "`{}` had nothing to measure ({})",
            m.text,
            nothing_because(m.metric)
        )
    })
}

/// A `recovery:<figure>` of `phase`: of the recoveries of dead instance
/// `instance` (1-based), or of every recovery of the phase when `None`.
/// Several recoveries add up for counts (redo, blocks, transactions) and
/// the largest stands for them for times. `None`: no such recovery (or no
/// brownout known for any of them).
pub fn recovery_value(
    figure: fusion_core::metrics::RecoveryFigure,
    instance: Option<u8>,
    phase: &crate::model::PhaseResult,
) -> Option<f64> {
    let values = phase
        .recovery
        .iter()
        .filter(|r| instance.is_none_or(|i| r.dead_instance == i))
        .filter_map(|r| r.figure(figure, phase.start_ns));
    if figure.sums() {
        values.reduce(|a, b| a + b)
    } else {
        values.reduce(f64::max)
    }
}

/// Why a figure has no value: its denominator was zero.
fn nothing_because(metric: Metric) -> String {
    let kind = |k: BlockKind| k.name();
    match metric {
        Metric::Awr(line) => match line {
            AwrLine::EnqueueGetMs => "no global enqueue gets".into(),
            AwrLine::CrReceiveMs => "no gc cr blocks received".into(),
            AwrLine::CurrentReceiveMs => "no gc current blocks received".into(),
            AwrLine::CrBuildMs | AwrLine::CrSendMs | AwrLine::CrFlushPct => {
                "no gc cr blocks served".into()
            }
            AwrLine::CrFlushMs => "no log flush for a cr block served".into(),
            AwrLine::CurrentPinMs | AwrLine::CurrentSendMs | AwrLine::CurrentFlushPct => {
                "no gc current blocks served".into()
            }
            AwrLine::CurrentFlushMs => "no log flush for a current block served".into(),
        },
        Metric::PerSecond(_) => "the phase lasted no time".into(),
        Metric::EventAvgMs(w) => format!("no `{}` waits", w.name()),
        Metric::DecompMs(k, _) => format!("no gc {} blocks received", kind(k)),
        Metric::DecompShare(k, _) => format!("no gc {} block receive time", kind(k)),
        Metric::SqlPerExec(_) | Metric::ClassTimeMsPerExec(_) => {
            "no execution of a user statement".into()
        }
        Metric::Recovery(_) => "no instance recovery".into(),
        Metric::Node(_) => "no memory access counted (is there a [server]?)".into(),
        Metric::Stat(_)
        | Metric::EventWaits(_)
        | Metric::EventTimeMs(_)
        | Metric::Sql(_)
        | Metric::ClassTimeMs(_) => "no data".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{InstanceResult, PhaseResult};
    use fusion_core::metrics::AwrLine;
    use fusion_core::stats::{Stat, Wait};
    use fusion_scenario::CmpOp;

    const MS: u64 = 1_000_000;

    fn cr_receive(blocks: u64, avg_us: u64) -> Stats {
        let mut s = Stats::default();
        s.add(Stat::GcCrBlocksReceived, blocks);
        s.add(Stat::GcCrBlockReceiveTime, blocks * avg_us * 1_000);
        s
    }

    fn inst(id: u8, stats: Stats) -> InstanceResult {
        InstanceResult {
            id,
            cpu_count: 4,
            db_block_size: 8192,
            stats,
            threads: None,
        }
    }

    fn phase(name: &str, instances: Vec<InstanceResult>) -> PhaseResult {
        PhaseResult {
            alert_log: Vec::new(),
            recovery: Vec::new(),
            pf_masters: Vec::new(),
            name: name.into(),
            start_ns: 0,
            elapsed_ns: 10_000 * MS,
            instances,
        }
    }

    fn variant(name: &str, phases: Vec<PhaseResult>) -> VariantResult {
        VariantResult {
            name: name.into(),
            phases,
            series: None,
        }
    }

    fn mref(
        metric: Metric,
        text: &str,
        phase: &str,
        instance: Option<u8>,
        variant: Option<&str>,
    ) -> MetricRef {
        MetricRef {
            metric,
            text: text.into(),
            variant: variant.map(Into::into),
            phase: phase.into(),
            instance,
        }
    }

    fn cr_ms(phase: &str, instance: Option<u8>, variant: Option<&str>) -> MetricRef {
        mref(
            Metric::Awr(AwrLine::CrReceiveMs),
            AwrLine::CrReceiveMs.label(),
            phase,
            instance,
            variant,
        )
    }

    fn scenario(expectations: Vec<Expectation>) -> LoadedScenario {
        LoadedScenario {
            path: "t.toml".into(),
            name: "t".into(),
            title: "test".into(),
            myth: None,
            description: String::new(),
            variants: vec![],
            expectations,
            has_variants: false,
            tour: None,
        }
    }

    fn ratio_expectation(op: CmpOp, factor: f64) -> Expectation {
        Expectation {
            name: "starved LMS slows the others".into(),
            left: cr_ms("starved", Some(1), None),
            op,
            right: Operand::Metric(cr_ms("baseline", Some(1), None)),
            factor,
        }
    }

    /// Baseline 0.5 ms, starved 2.0 ms: exactly 4 times.
    fn two_phases() -> Vec<VariantResult> {
        vec![variant(
            "only",
            vec![
                phase(
                    "baseline",
                    vec![inst(1, cr_receive(100, 500)), inst(2, cr_receive(100, 500))],
                ),
                phase(
                    "starved",
                    vec![inst(1, cr_receive(100, 2_000)), inst(2, Stats::default())],
                ),
            ],
        )]
    }

    #[test]
    fn ratio_across_phases_at_the_boundary() {
        let run = two_phases();
        let pass = evaluate(&scenario(vec![ratio_expectation(CmpOp::Ge, 4.0)]), &run);
        assert_eq!(pass.len(), 1);
        assert!(pass[0].passed, "{}", pass[0].detail);
        assert_eq!(pass[0].name, "starved LMS slows the others");
        assert_eq!(
            pass[0].detail,
            "inst1 starved: 2.00 ms  >=  4 x inst1 baseline: 0.50 ms (= 2.00 ms)  -> ratio 4.0"
        );
        let fail = evaluate(&scenario(vec![ratio_expectation(CmpOp::Gt, 4.0)]), &run);
        assert!(!fail[0].passed);
        let fail = evaluate(&scenario(vec![ratio_expectation(CmpOp::Ge, 4.5)]), &run);
        assert!(!fail[0].passed);
    }

    #[test]
    fn constant_right_side_uses_the_left_unit() {
        let mut s = Stats::default();
        s.add(Stat::GcCrBlocksServed, 100);
        s.add(Stat::GcCrBlocksFlushed, 5);
        s.add(Stat::GcCrBlockFlushTime, 5 * 4_380 * MS);
        let run = vec![variant("only", vec![phase("slow-redo", vec![inst(2, s)])])];
        let e = Expectation {
            name: "flushes are slow".into(),
            left: mref(
                Metric::Awr(AwrLine::CrFlushMs),
                "Avg global cache cr block flush time (ms)",
                "slow-redo",
                Some(2),
                None,
            ),
            op: CmpOp::Ge,
            right: Operand::Value(1000.0),
            factor: 1.0,
        };
        let v = evaluate(&scenario(vec![e]), &run);
        assert!(v[0].passed);
        assert_eq!(
            v[0].detail,
            "inst2 slow-redo Avg global cache cr block flush time (ms): 4380.00 ms  >=  1000.00 ms"
        );
    }

    #[test]
    fn missing_data_fails_and_says_which_figure() {
        let run = two_phases();
        // Instance 2 received nothing in the starved phase.
        let e = Expectation {
            name: "inst2 slowed".into(),
            left: cr_ms("starved", Some(2), None),
            op: CmpOp::Ge,
            right: Operand::Metric(cr_ms("baseline", Some(2), None)),
            factor: 2.0,
        };
        let v = evaluate(&scenario(vec![e]), &run);
        assert!(!v[0].passed);
        assert!(
            v[0].detail.starts_with("inst2 starved: "),
            "{}",
            v[0].detail
        );
        assert!(
            v[0].detail
                .contains("had nothing to measure (no gc cr blocks received)"),
            "{}",
            v[0].detail
        );
        assert!(
            !v[0].detail.contains("baseline"),
            "only the empty side is named: {}",
            v[0].detail
        );

        // A phase that does not exist, and an event with no waits.
        let e = Expectation {
            name: "typo".into(),
            left: cr_ms("nope", None, None),
            op: CmpOp::Lt,
            right: Operand::Metric(mref(
                Metric::EventAvgMs(Wait::GcsLogFlushSync),
                "avg_ms:gcs log flush sync",
                "baseline",
                None,
                None,
            )),
            factor: 1.0,
        };
        let v = evaluate(&scenario(vec![e]), &run);
        assert!(!v[0].passed);
        assert!(
            v[0].detail.contains("phase `nope` is not in the run"),
            "{}",
            v[0].detail
        );
        assert!(
            v[0].detail.contains("no `gcs log flush sync` waits"),
            "{}",
            v[0].detail
        );
    }

    #[test]
    fn one_verdict_per_variant_when_none_is_named() {
        let normal = variant(
            "normal-priority",
            vec![phase("starved", vec![inst(1, cr_receive(10, 40_000))])],
        );
        let rt = variant(
            "rt-lms",
            vec![phase("starved", vec![inst(1, cr_receive(10, 800))])],
        );
        let run = vec![normal, rt];
        let e = Expectation {
            name: "gc receive stays under 5 ms".into(),
            left: cr_ms("starved", None, None),
            op: CmpOp::Lt,
            right: Operand::Value(5.0),
            factor: 1.0,
        };
        let v = evaluate(&scenario(vec![e]), &run);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "gc receive stays under 5 ms [normal-priority]");
        assert!(!v[0].passed);
        assert_eq!(v[1].name, "gc receive stays under 5 ms [rt-lms]");
        assert!(v[1].passed);

        // Naming both variants gives one verdict comparing them.
        let e = Expectation {
            name: "RT priority fixes it".into(),
            left: cr_ms("starved", None, Some("normal-priority")),
            op: CmpOp::Ge,
            right: Operand::Metric(cr_ms("starved", None, Some("rt-lms"))),
            factor: 10.0,
        };
        let v = evaluate(&scenario(vec![e]), &run);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].name, "RT priority fixes it");
        assert!(v[0].passed);
        assert_eq!(
            v[0].detail,
            "[normal-priority] cluster starved: 40.00 ms  >=  10 x [rt-lms] cluster starved: 0.80 ms (= 8.00 ms)  -> ratio 50.0"
        );
    }

    #[test]
    fn cluster_sums_instances_and_shares_show_as_percent() {
        let mut a = cr_receive(100, 1_000);
        a.add(Stat::DecompCrWire, 100 * 100_000);
        let mut b = cr_receive(100, 1_000);
        b.add(Stat::DecompCrWire, 100 * 300_000);
        let run = vec![variant(
            "only",
            vec![phase("p", vec![inst(1, a), inst(2, b)])],
        )];
        let e = Expectation {
            name: "wire is a small fraction".into(),
            left: mref(
                Metric::DecompShare(BlockKind::Cr, fusion_core::metrics::Part::Wire),
                "decomp_share:cr:wire",
                "p",
                None,
                None,
            ),
            op: CmpOp::Lt,
            right: Operand::Value(0.25),
            factor: 1.0,
        };
        let v = evaluate(&scenario(vec![e]), &run);
        assert!(v[0].passed);
        assert_eq!(
            v[0].detail,
            "cluster p decomp_share:cr:wire: 20.00 %  <  25.00 %"
        );
    }
}
