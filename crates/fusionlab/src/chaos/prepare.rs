//! A chaos run prepared: the scenario as chaos runs it ([`Base`]), the
//! faults drawn from a run's seed until the loader accepts them, and the
//! run's outcome from what the driver reports. The simulator, `--live` and
//! `--compose` carry out the same prepared runs.

use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos};
use fusion_scenario::{Direction, Fault, LinkTarget, LoadedScenario, Scenario};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::chaos::drawn::{Drawn, Kind};
use crate::chaos::file::with_faults;

/// One run's outcome.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    pub seed: u64,
    pub faults: Vec<Drawn>,
    pub acknowledged: u64,
    pub lost: u64,
    pub violations: Vec<String>,
    pub errors: Vec<String>,
}

impl RunOutcome {
    pub fn failed(&self) -> bool {
        self.lost > 0 || !self.violations.is_empty() || !self.errors.is_empty()
    }
}

/// The scenario as chaos runs it: its text, label, overrides, and what the
/// loader made of it.
pub(crate) struct Base {
    text: String,
    pub(crate) label: String,
    pub(crate) sets: Vec<String>,
    pub(crate) scenario: Scenario,
    variant: String,
}

/// One run's faults drawn and loaded: what a driver carries out.
pub(crate) struct Prepared {
    pub(crate) seed: u64,
    pub(crate) faults: Vec<Drawn>,
    /// The scenario file with the faults in its phases (live instances
    /// load this text), and what the loader made of it.
    pub(crate) text: String,
    pub(crate) loaded: LoadedScenario,
    /// The variant to run, in `loaded`.
    pub(crate) variant: usize,
}

impl Prepared {
    /// The run's outcome from what the driver reports: commits acknowledged
    /// and lost from the checkers, their violations apart from the
    /// protocol's errors.
    pub(crate) fn outcome(self, o: &fusion_driver::VariantOutcome) -> RunOutcome {
        let (violations, errors): (Vec<String>, Vec<String>) =
            o.errors.iter().cloned().partition(|e| o.is_violation(e));
        let (acknowledged, lost) = o
            .check
            .as_ref()
            .map_or((0, 0), |c| (c.commits_acknowledged, c.commits_lost));
        RunOutcome {
            seed: self.seed,
            faults: self.faults,
            acknowledged,
            lost,
            violations,
            errors,
        }
    }

    /// The run could not be carried out (a live cluster failed): a
    /// protocol error of the run, with nothing counted.
    pub(crate) fn failed(self, why: String) -> RunOutcome {
        RunOutcome {
            seed: self.seed,
            faults: self.faults,
            errors: vec![why],
            ..RunOutcome::default()
        }
    }
}

impl Base {
    /// The scenario of `text` (`label`, with `sets` applied), as the loader
    /// made its `variant`.
    pub(crate) fn new(
        text: String,
        label: String,
        sets: Vec<String>,
        variant: &fusion_scenario::Variant,
    ) -> Base {
        Base {
            text,
            label,
            sets,
            scenario: variant.scenario.clone(),
            variant: variant.name.clone(),
        }
    }

    /// The scenario file with `faults` in its phases. Err: why they
    /// cannot be written there.
    pub(crate) fn file_with(&self, faults: &[Drawn]) -> Result<String, String> {
        with_faults(&self.text, faults)
    }

    /// Load the scenario with `faults` added to its phases. Err: the
    /// loader's message.
    pub(crate) fn with(&self, faults: &[Drawn]) -> Result<LoadedScenario, String> {
        self.with_text(faults).map(|(_, loaded)| loaded)
    }

    /// [`Base::with`], and the text it loaded.
    /// The scenario with `faults` in its phases, as its text and loaded.
    pub(crate) fn with_text_of(
        &self,
        faults: &[Drawn],
    ) -> Result<(String, LoadedScenario), String> {
        self.with_text(faults)
    }

    fn with_text(&self, faults: &[Drawn]) -> Result<(String, LoadedScenario), String> {
        let text = self.file_with(faults)?;
        let loaded =
            fusion_scenario::load_str(&text, &self.label, &self.sets).map_err(|e| e.to_string())?;
        Ok((text, loaded))
    }

    fn instances(&self) -> usize {
        self.scenario.instances.len()
    }

    /// `css_misscount` of instance `i` (0-based), ns.
    fn misscount(&self, i: usize) -> Nanos {
        let s = self
            .scenario
            .instances
            .get(i)
            .map_or(30, |p| p.css_misscount);
        Nanos::from(s) * NS_PER_S
    }
}

/// Draws at most before a run gives up finding faults the loader accepts.
const DRAWS_MAX: u32 = 50;

/// Draw a run's faults from its seed until the loader accepts them (the
/// same draws whichever driver carries the run out). Err: none did.
pub(crate) fn prepare(base: &Base, drawable: &[Kind], seed: u64) -> Result<Prepared, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Apart from the simulation's own streams of the same seed.
    rng.set_stream(77);
    let mut last = String::new();
    for _ in 0..DRAWS_MAX {
        let faults = draw(base, drawable, &mut rng);
        let (text, loaded) = match base.with_text(&faults) {
            Ok(l) => l,
            Err(why) => {
                last = why;
                continue;
            }
        };
        let Some(variant) = loaded.variants.iter().position(|v| v.name == base.variant) else {
            return Err(format!(
                "chaos seed {seed}: variant {} is gone",
                base.variant
            ));
        };
        return Ok(Prepared {
            seed,
            faults,
            text,
            loaded,
            variant,
        });
    }
    Err(format!(
        "chaos seed {seed}: no set of faults drawn in {DRAWS_MAX} tries loads; the last: {last}"
    ))
}

/// A number in `0..n` (0 when `n` is 0).
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    if n == 0 { 0 } else { rng.next_u64() % n }
}

/// One of `items`, if any.
fn pick<T: Copy>(rng: &mut ChaCha8Rng, items: &[T]) -> Option<T> {
    let n = u64::try_from(items.len()).ok()?;
    items.get(usize::try_from(below(rng, n)).ok()?).copied()
}

/// At most this many instances of `n` are ever taken down in a run.
pub fn max_down(n: usize) -> usize {
    if n < 2 { 0 } else { ((n - 1) / 2).max(1) }
}

/// 1 to 3 faults at random times of the timeline, in time order, of the
/// `drawable` kinds, keeping a majority of instances up.
fn draw(base: &Base, drawable: &[Kind], rng: &mut ChaCha8Rng) -> Vec<Drawn> {
    let phases = &base.scenario.phases;
    let total: Nanos = phases.iter().map(|p| p.duration).sum();
    let n = base.instances();
    let count = 1 + below(rng, 3);
    let mut times: Vec<Nanos> = (0..count).map(|_| below(rng, total)).collect();
    times.sort_unstable();
    // Per instance: killed (not restarted), evicted, ever taken down.
    let mut killed = vec![false; n];
    let mut evicted = vec![false; n];
    let mut victims: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for t in times {
        let Some((phase, at)) = locate(phases, t) else {
            continue;
        };
        // Milliseconds, as a file would write it.
        let at = at / NS_PER_MS * NS_PER_MS;
        let up: Vec<usize> = (0..n).filter(|&i| !killed[i] && !evicted[i]).collect();
        let can_fall: Vec<usize> = up
            .iter()
            .copied()
            .filter(|i| victims.contains(i) || victims.len() < max_down(n))
            .filter(|_| up.len() > 1)
            .collect();
        let dead: Vec<usize> = (0..n).filter(|&i| killed[i]).collect();
        let kinds: Vec<Kind> = drawable
            .iter()
            .copied()
            .filter(|k| match k {
                Kind::Kill | Kind::LongPause | Kind::Partition => !can_fall.is_empty(),
                Kind::Restart => !dead.is_empty(),
                Kind::Pause => !up.is_empty(),
                Kind::Loss => n > 1,
            })
            .collect();
        let Some(kind) = pick(rng, &kinds) else {
            continue;
        };
        let who = match kind {
            k if k.takes_down() => pick(rng, &can_fall),
            Kind::Restart => pick(rng, &dead),
            Kind::Pause => pick(rng, &up),
            _ => Some(0),
        };
        let Some(who) = who else {
            continue;
        };
        let instance = u8::try_from(who + 1).unwrap_or(u8::MAX);
        let fault = match kind {
            Kind::Kill => Fault::Kill { instance, at },
            Kind::Restart => Fault::Restart { instance, at },
            Kind::Pause => {
                // 100 ms up to 5 s, below css_misscount.
                let most = base
                    .misscount(who)
                    .saturating_sub(NS_PER_MS)
                    .clamp(100 * NS_PER_MS, 5 * NS_PER_S);
                let duration = 100 * NS_PER_MS + below(rng, most / NS_PER_MS - 99) * NS_PER_MS;
                Fault::Pause {
                    instance,
                    at,
                    duration: duration.min(most),
                }
            }
            Kind::LongPause => Fault::Pause {
                instance,
                at,
                duration: base.misscount(who) + below(rng, 5_000) * NS_PER_MS,
            },
            Kind::Loss => Fault::Loss {
                target: random_target(rng, n),
                loss_ppm: 10_000 * u32::try_from(1 + below(rng, 20)).unwrap_or(1),
                correlation_ppm: 0,
            },
            Kind::Partition => Fault::Partition {
                target: LinkTarget::Instance(instance),
                direction: Direction::Both,
            },
        };
        match kind {
            Kind::Kill => killed[who] = true,
            Kind::Restart => killed[who] = false,
            Kind::LongPause | Kind::Partition => evicted[who] = true,
            _ => {}
        }
        if kind.takes_down() && !victims.contains(&who) {
            victims.push(who);
        }
        out.push(Drawn { kind, phase, fault });
    }
    out
}

/// All links, one instance's, or one link (one direction).
fn random_target(rng: &mut ChaCha8Rng, n: usize) -> LinkTarget {
    let inst = |rng: &mut ChaCha8Rng| {
        u8::try_from(1 + below(rng, u64::try_from(n).unwrap_or(1))).unwrap_or(1)
    };
    match below(rng, 3) {
        0 => LinkTarget::All,
        1 => LinkTarget::Instance(inst(rng)),
        _ => {
            let from = inst(rng);
            let mut to = inst(rng);
            if to == from {
                to = if from as usize >= n { 1 } else { from + 1 };
            }
            LinkTarget::Link { from, to }
        }
    }
}

/// The phase (index) that holds timeline time `t`, and `t` from its start.
fn locate(phases: &[fusion_scenario::Phase], t: Nanos) -> Option<(usize, Nanos)> {
    let mut start: Nanos = 0;
    for (i, p) in phases.iter().enumerate() {
        if t < start + p.duration {
            return Some((i, t - start));
        }
        start += p.duration;
    }
    None
}

/// Try each kind once on the scenario: the kinds the loader accepts, and
/// for the others the loader's reason (its first message). `driver` says
/// whether the driver that carries the runs out refuses a
/// scenario the loader accepted (its reason).
pub(crate) fn drawable_kinds(
    base: &Base,
    driver: &dyn Fn(&LoadedScenario) -> Result<(), String>,
) -> (Vec<Kind>, Vec<(Kind, String)>) {
    let n = base.instances();
    let last = u8::try_from(n).unwrap_or(u8::MAX);
    let phase = base
        .scenario
        .phases
        .iter()
        .position(|p| p.duration > 0)
        .unwrap_or(0);
    let half = base
        .scenario
        .phases
        .get(phase)
        .map_or(0, |p| p.duration / 2)
        / NS_PER_MS
        * NS_PER_MS;
    let misscount = base.misscount(n.saturating_sub(1));
    let mut ok = Vec::new();
    let mut refused = Vec::new();
    for &kind in Kind::ALL {
        let mut faults = vec![];
        let mut add = |fault: Fault| faults.push(Drawn { kind, phase, fault });
        if n < 2 || (kind.takes_down() && max_down(n) == 0) {
            refused.push((kind, "the cluster has a single instance".to_string()));
            continue;
        }
        match kind {
            Kind::Kill => add(Fault::Kill {
                instance: last,
                at: 0,
            }),
            Kind::Restart => {
                add(Fault::Kill {
                    instance: last,
                    at: 0,
                });
                add(Fault::Restart {
                    instance: last,
                    at: half,
                });
            }
            Kind::Pause => add(Fault::Pause {
                instance: last,
                at: 0,
                duration: (misscount / 2).max(NS_PER_MS),
            }),
            Kind::LongPause => add(Fault::Pause {
                instance: last,
                at: 0,
                duration: misscount,
            }),
            Kind::Loss => add(Fault::Loss {
                target: LinkTarget::All,
                loss_ppm: 10_000,
                correlation_ppm: 0,
            }),
            Kind::Partition => add(Fault::Partition {
                target: LinkTarget::Instance(last),
                direction: Direction::Both,
            }),
        }
        match base.with(&faults).and_then(|l| driver(&l)) {
            Ok(()) => ok.push(kind),
            // Its probe kills first: say so when that is what was refused.
            Err(why) if kind == Kind::Restart && refused.iter().any(|r| r.0 == Kind::Kill) => {
                refused.push((kind, format!("it follows a kill, and {}", reason(&why))));
            }
            Err(why) => refused.push((kind, reason(&why))),
        }
    }
    (ok, refused)
}

/// The heart of a loader message: its first line, without the place.
fn reason(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    // `file:line:col: `key`: what` -> `what`
    match line.split_once("`: ") {
        Some((_, what)) => what.to_string(),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"[scenario]
name = "c"
title = "chaos"
[cluster]
instances = 5
[[table]]
name = "t"
rows = 200
rows_per_block = 20
[[index]]
name = "t_pk"
table = "t"
[[workload]]
name = "w"
instances = "all"
sessions_per_instance = 1
think_time_ms = 5
[[workload.transaction]]
name = "x"
steps = [{ op = "read", table = "t", via = "t_pk" }, { op = "commit" }]
[[phase]]
name = "a"
duration_s = 2
[[phase]]
name = "b"
duration_s = 3
[[phase.fault]]
kind = "stress_cpu"
instance = 1
workers = 1
"#;

    fn base() -> Base {
        let loaded =
            fusion_scenario::load_str(TEXT, "c.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        Base {
            text: TEXT.to_string(),
            label: "c.toml".into(),
            sets: Vec::new(),
            scenario: loaded.variants[0].scenario.clone(),
            variant: loaded.variants[0].name.clone(),
        }
    }

    /// Whatever is drawable, a run never takes down more than its budget,
    /// restarts only what it killed, and leaves someone up.
    #[test]
    fn draws_keep_a_majority_up_and_restart_only_the_killed() {
        let b = base();
        for seed in 0..300 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let faults = draw(&b, Kind::ALL, &mut rng);
            assert!((1..=3).contains(&faults.len()) || faults.is_empty());
            let (mut killed, mut victims) = (vec![false; 5], Vec::new());
            for d in &faults {
                let inst = match d.fault {
                    Fault::Kill { instance, .. }
                    | Fault::Restart { instance, .. }
                    | Fault::Pause { instance, .. } => usize::from(instance) - 1,
                    Fault::Partition {
                        target: LinkTarget::Instance(i),
                        ..
                    } => usize::from(i) - 1,
                    _ => continue,
                };
                match d.kind {
                    Kind::Restart => assert!(killed[inst], "seed {seed}: {faults:?}"),
                    Kind::Kill => killed[inst] = true,
                    _ => {}
                }
                if d.kind == Kind::Restart {
                    killed[inst] = false;
                }
                if d.kind.takes_down() && !victims.contains(&inst) {
                    victims.push(inst);
                }
            }
            assert!(victims.len() <= max_down(5), "seed {seed}: {faults:?}");
        }
        assert_eq!(
            (max_down(1), max_down(2), max_down(3), max_down(5)),
            (0, 1, 1, 2)
        );
    }

    /// A drawn fault written into the file is the fault the loader reads
    /// back (or one it refuses as not runnable yet, by its kind).
    #[test]
    fn faults_written_into_the_file_load_back_as_drawn() {
        let b = base();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..100 {
            let faults = draw(&b, Kind::ALL, &mut rng);
            match b.with(&faults) {
                Ok(l) => {
                    let phases = &l.variants[0].scenario.phases;
                    for d in &faults {
                        assert!(phases[d.phase].faults.contains(&d.fault), "{d:?}");
                    }
                }
                Err(why) => assert!(
                    why.contains("cannot run yet") || why.contains("css_misscount"),
                    "{why}"
                ),
            }
        }
    }
}
