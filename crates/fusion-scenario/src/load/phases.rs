//! The timeline: `[[phase]]`s with the workloads they run, the parameters
//! they change, and their `[[phase.fault]]`s: slowdowns (CPU stress, disk
//! latency, interconnect latency and bandwidth) and failures (kill,
//! restart, pause, message loss, partition).

use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos, ParamValue, Step, WorkloadSpec};

use super::limits::{TIMELINE_NS_MAX, TIMELINE_WHY, WORKERS_MAX, WORKERS_WHY};
use super::problems::{Validator, names_list, quoted_list, suggest};
use super::read::{Bound, TableView};
use crate::model::{Backup, Device, Direction, Fault, LinkTarget, Phase};
use crate::tree::{KeyPath, Node, Val};

const PHASE_KEYS: &[&str] = &[
    "name",
    "duration_s",
    "workloads",
    "parameters",
    "fault",
    "checkpoint",
    "backup",
];
/// The keys of a phase's `backup = { ... }` (RMAN `BACKUP DATABASE`).
const BACKUP_KEYS: &[&str] = &["channels", "section_size_mb"];
/// RMAN allocates at most 255 channels per device type.
const BACKUP_CHANNELS_MAX: u32 = 255;
const FAULT_KINDS: &[&str] = &[
    "stress_cpu",
    "disk_latency",
    "latency",
    "bandwidth",
    "kill",
    "restart",
    "pause",
    "loss",
    "partition",
];

/// The keys a fault of `kind` may have; `None` for an unknown kind.
fn fault_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "stress_cpu" => &["kind", "instance", "workers", "load_pct"],
        "disk_latency" => &["kind", "instance", "device", "latency_ms", "jitter_ms"],
        "latency" => &["kind", "target", "latency_ms", "jitter_ms"],
        "bandwidth" => &["kind", "target", "rate_mbps"],
        "kill" | "restart" => &["kind", "instance", "at_s"],
        "pause" => &["kind", "instance", "at_s", "duration_s"],
        "loss" => &["kind", "target", "loss_pct", "correlation_pct"],
        "partition" => &["kind", "target", "direction"],
        _ => return None,
    })
}

impl Validator<'_> {
    pub(super) fn phases(
        &mut self,
        node: &Node,
        instance_count: Option<u8>,
        workloads: &[WorkloadSpec],
        instances: &[fusion_core::config::Params],
    ) -> Vec<Phase> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let mut timeline: Nanos = 0;
        let workload_names: Vec<String> = workloads.iter().map(|w| w.name.clone()).collect();
        let mut life = Life::new(instance_count);
        for (item, path) in self.tables(node, &KeyPath::root().key("phase"), "phase") {
            let Some(phase) = self.table(item, &path, PHASE_KEYS) else {
                continue;
            };
            let name = self.req(&phase, "name").and_then(|v| {
                let name = self.name(v, &phase.at("name"))?;
                self.unique(&mut seen, &name, v, &phase.at("name"), "phase");
                Some(name)
            });
            let before_phase = timeline;
            let duration = self
                .req(&phase, "duration_s")
                .and_then(|v| {
                    let d = self.duration_limited(
                        v,
                        &phase.at("duration_s"),
                        (NS_PER_S, true),
                        (TIMELINE_NS_MAX, "86400 (one day)"),
                        TIMELINE_WHY,
                    )?;
                    // Each phase may be a day, the timeline too: reported
                    // at the phase that takes it past the day.
                    let before = timeline;
                    timeline = timeline.saturating_add(d);
                    if before <= TIMELINE_NS_MAX && timeline > TIMELINE_NS_MAX {
                        self.err(
                            v,
                            &phase.at("duration_s"),
                            format!(
                                "the phases up to this one last {} s; the timeline may last at most 86400 s (one day): {TIMELINE_WHY}",
                                timeline as f64 / NS_PER_S as f64
                            ),
                        );
                    }
                    Some(d)
                })
                .unwrap_or(0);
            let mut selected = None;
            if let Some(list) = phase.get("workloads") {
                selected =
                    Some(self.phase_workloads(list, &phase.at("workloads"), &workload_names));
            }
            let parameters = self.phase_parameters(&phase, instance_count);
            let mut faults = Vec::new();
            let mut timed = Vec::new();
            if let Some(list) = phase.get("fault") {
                for (fault_node, fault_path) in self.tables(list, &phase.at("fault"), "phase.fault")
                {
                    if let Some(fault) = self.fault(fault_node, &fault_path, instance_count)
                        && self.runnable(&fault, fault_node, &fault_path, workloads, instances)
                    {
                        if let Some(at) = fault_at(&fault) {
                            timed.push((at, fault_node, fault_path, faults.len()));
                        }
                        faults.push(fault);
                    }
                }
            }
            // Kills, restarts and pauses in the order they happen.
            timed.sort_by_key(|&(at, _, _, index)| (at, index));
            let phase_name = name.clone().unwrap_or_default();
            for (at, fault_node, fault_path, index) in timed {
                if at >= duration && duration > 0 {
                    self.err(
                        key_node(fault_node, "at_s"),
                        &fault_path.key("at_s"),
                        format!(
                            "at_s = {} s is not inside the phase (duration_s = {} s)",
                            at as f64 / NS_PER_S as f64,
                            duration as f64 / NS_PER_S as f64
                        ),
                    );
                    continue;
                }
                if let Some(fault) = faults.get(index)
                    && let Err(why) = life.apply(fault, &phase_name, before_phase + at)
                {
                    self.err(fault_node, &fault_path, why);
                }
            }
            let checkpoint = self.opt_bool(&phase, "checkpoint", false);
            let backup = phase
                .get("backup")
                .and_then(|node| self.backup(node, &phase.at("backup")));
            out.push(Phase {
                name: name.unwrap_or_default(),
                duration,
                parameters,
                faults,
                workloads: selected,
                checkpoint,
                backup,
            });
        }
        out
    }

    /// `backup = { channels = N, section_size_mb = S }`: RMAN `BACKUP
    /// DATABASE` with `CONFIGURE DEVICE TYPE DISK PARALLELISM N` and, when
    /// `section_size_mb` is given, `SECTION SIZE S M` (multisection).
    fn backup(&mut self, node: &Node, path: &KeyPath) -> Option<Backup> {
        let before = self.problems.len();
        let table = self.table(node, path, BACKUP_KEYS)?;
        let channels = self.opt_u32_limited(
            &table,
            "channels",
            (1, BACKUP_CHANNELS_MAX),
            "RMAN allocates at most 255 channels of a device type",
            1,
        );
        let section_size_mb = table
            .get("section_size_mb")
            .and_then(|v| self.u32_in(v, &table.at("section_size_mb"), 1, 1 << 20));
        (self.problems.len() == before).then_some(Backup {
            channels,
            section_size_mb,
        })
    }

    /// `workloads`: the workloads the phase runs (all when not given).
    fn phase_workloads(&mut self, node: &Node, path: &KeyPath, known: &[String]) -> Vec<String> {
        let Val::Array(items) = &node.val else {
            self.err(
                node,
                path,
                format!(
                    "expected a list of workload names, found {}",
                    node.describe()
                ),
            );
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_path = path.index(i);
            let Some(workload) = self.string(item, &item_path) else {
                continue;
            };
            if !known.contains(&workload) {
                self.err(
                    item,
                    &item_path,
                    format!(
                        "unknown workload `{workload}` (workloads: {})",
                        names_list(known)
                    ),
                );
            } else if out.contains(&workload) {
                self.err(
                    item,
                    &item_path,
                    format!("workload `{workload}` is listed twice"),
                );
            } else {
                out.push(workload);
            }
        }
        out
    }

    /// `[phase.parameters]`: the changes at the phase's start, one per
    /// instance they apply to (settings for every instance first).
    fn phase_parameters(
        &mut self,
        phase: &TableView,
        instance_count: Option<u8>,
    ) -> Vec<(u8, String, ParamValue)> {
        let mut parameters = Vec::new();
        let Some(node) = phase.get("parameters") else {
            return parameters;
        };
        let settings = self.param_settings(node, &phase.at("parameters"), instance_count, true);
        for s in settings.iter().filter(|s| s.instance.is_none()) {
            for instance in 1..=instance_count.unwrap_or(0) {
                parameters.push((instance, s.name.clone(), s.value.clone()));
            }
        }
        for s in settings.iter() {
            if let Some(instance) = s.instance {
                parameters.push((instance, s.name.clone(), s.value.clone()));
            }
        }
        parameters
    }

    /// One `[[phase.fault]]`; `None` if it has any problem.
    fn fault(&mut self, node: &Node, path: &KeyPath, instance_count: Option<u8>) -> Option<Fault> {
        let kind = self.fault_kind(node, path)?;
        let before = self.problems.len();
        let fault = self.table(node, path, fault_keys(&kind)?)?;
        let read = match kind.as_str() {
            "stress_cpu" => self.stress_cpu_fault(&fault, instance_count),
            "disk_latency" => self.disk_latency_fault(&fault, instance_count),
            "latency" => self.network_latency_fault(&fault, instance_count),
            "bandwidth" => self.bandwidth_fault(&fault, instance_count),
            "kill" | "restart" => self.crash_fault(&kind, &fault, instance_count),
            "pause" => self.pause_fault(&fault, instance_count),
            "loss" => self.loss_fault(&fault, instance_count),
            _ => self.partition_fault(&fault, instance_count),
        };
        read.filter(|_| self.problems.len() == before)
    }

    /// The fault's `kind`, one of `FAULT_KINDS`.
    fn fault_kind(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
        let Some(kind_entry) = node.as_table()?.get("kind") else {
            self.err(
                node,
                path,
                format!(
                    "missing required key `kind` (one of: {})",
                    quoted_list(FAULT_KINDS)
                ),
            );
            return None;
        };
        let kind = self.string(&kind_entry.node, &path.key("kind"))?;
        if fault_keys(&kind).is_none() {
            self.err(
                &kind_entry.node,
                &path.key("kind"),
                format!(
                    "unknown fault kind {} (kinds: {}){}",
                    kind_entry.node.describe(),
                    quoted_list(FAULT_KINDS),
                    suggest(&kind, FAULT_KINDS)
                ),
            );
            return None;
        }
        Some(kind)
    }

    /// `kind = "stress_cpu"`: CPU hogs on one instance.
    fn stress_cpu_fault(&mut self, fault: &TableView, instance_count: Option<u8>) -> Option<Fault> {
        let instance = self.fault_instance(fault, instance_count);
        let workers = self
            .req(fault, "workers")
            .and_then(|v| self.u32_limited(v, &fault.at("workers"), 1, WORKERS_MAX, WORKERS_WHY));
        let load_pct = self.opt_u32(fault, "load_pct", 1, 100, 100);
        Some(Fault::StressCpu {
            instance: instance?,
            workers: workers?,
            load_pct,
        })
    }

    /// `kind = "disk_latency"`: one instance's redo or data writes slow down.
    fn disk_latency_fault(
        &mut self,
        fault: &TableView,
        instance_count: Option<u8>,
    ) -> Option<Fault> {
        let instance = self.fault_instance(fault, instance_count);
        let device = self.req(fault, "device").and_then(|v| match &v.val {
            Val::Str(s) if s == "redo" => Some(Device::Redo),
            Val::Str(s) if s == "data" => Some(Device::Data),
            _ => {
                self.err(
                    v,
                    &fault.at("device"),
                    format!("expected \"redo\" or \"data\", found {}", v.describe()),
                );
                None
            }
        });
        let latency = self
            .req(fault, "latency_ms")
            .and_then(|v| self.duration(v, &fault.at("latency_ms"), NS_PER_MS, false));
        let jitter = self.opt_duration(fault, "jitter_ms", NS_PER_MS, false, 0);
        Some(Fault::DiskLatency {
            instance: instance?,
            device: device?,
            latency: latency?,
            jitter,
        })
    }

    /// `kind = "latency"`: interconnect links slow down.
    fn network_latency_fault(
        &mut self,
        fault: &TableView,
        instance_count: Option<u8>,
    ) -> Option<Fault> {
        let target = self.fault_target(fault, instance_count);
        let latency = self
            .req(fault, "latency_ms")
            .and_then(|v| self.duration(v, &fault.at("latency_ms"), NS_PER_MS, false));
        let jitter = self.opt_duration(fault, "jitter_ms", NS_PER_MS, false, 0);
        Some(Fault::NetworkLatency {
            target: target?,
            latency: latency?,
            jitter,
        })
    }

    /// `kind = "bandwidth"`: interconnect links carry less.
    fn bandwidth_fault(&mut self, fault: &TableView, instance_count: Option<u8>) -> Option<Fault> {
        let target = self.fault_target(fault, instance_count);
        let rate = self
            .req(fault, "rate_mbps")
            .and_then(|v| self.rate(v, &fault.at("rate_mbps"), 1e6));
        Some(Fault::Bandwidth {
            target: target?,
            rate_bps: rate?,
        })
    }

    /// Whether the model can run `fault` to the end. A killed, frozen or
    /// cut-off instance is evicted and recovered by the survivors, and a
    /// killed one may start again and rejoin; what the model cannot do yet
    /// is refused rather than run wrong: an eviction while parallel queries
    /// run (their slaves on the dead instance are not failed over).
    fn runnable(
        &mut self,
        fault: &Fault,
        node: &Node,
        path: &KeyPath,
        workloads: &[WorkloadSpec],
        instances: &[fusion_core::config::Params],
    ) -> bool {
        // A pause shorter than css_misscount is waited out: nobody is evicted.
        let evicts = match fault {
            Fault::Pause {
                instance, duration, ..
            } => {
                let misscount_s = instances
                    .get(usize::from(*instance).saturating_sub(1))
                    .map_or(30, |p| p.css_misscount);
                *duration >= Nanos::from(misscount_s) * NS_PER_S
            }
            Fault::Kill { .. } | Fault::Partition { .. } => true,
            // A link that drops everything, or every message after a first
            // drop, is cut: the heartbeats stop and the cluster evicts.
            Fault::Loss {
                loss_ppm,
                correlation_ppm,
                ..
            } => *loss_ppm >= 1_000_000 || (*loss_ppm > 0 && *correlation_ppm >= 1_000_000),
            _ => false,
        };
        let why = match fault {
            Fault::Restart { .. } if workloads.iter().any(is_parallel) => {
                "a workload runs parallel queries, and an instance failure under a \
                 parallel query (its slaves lost with the instance) is not modeled yet"
            }
            _ if evicts && workloads.iter().any(is_parallel) => {
                "a workload runs parallel queries, and an instance failure under a \
                 parallel query (its slaves lost with the instance) is not modeled yet"
            }
            _ => return true,
        };
        self.err(
            key_node(node, "kind"),
            &path.key("kind"),
            format!("kind \"{}\" cannot run yet: {why}", fault.kind()),
        );
        false
    }

    /// `instance`: the instance a fault acts on, required.
    fn fault_instance(&mut self, fault: &TableView, instance_count: Option<u8>) -> Option<u8> {
        self.req(fault, "instance")
            .and_then(|v| self.instance(v, &fault.at("instance"), instance_count))
    }

    /// `target`: the links a network fault acts on, required.
    fn fault_target(
        &mut self,
        fault: &TableView,
        instance_count: Option<u8>,
    ) -> Option<LinkTarget> {
        self.req(fault, "target")
            .and_then(|v| self.link_target(v, &fault.at("target"), instance_count))
    }

    /// `at_s`: when a kill, restart or pause happens, from the phase's start.
    fn fault_at_s(&mut self, fault: &TableView) -> Option<Nanos> {
        match fault.get("at_s") {
            Some(v) => self.duration(v, &fault.at("at_s"), NS_PER_S, false),
            None => Some(0),
        }
    }

    /// `kind = "kill"` or `"restart"`: one instance crashes or starts again.
    fn crash_fault(
        &mut self,
        kind: &str,
        fault: &TableView,
        instance_count: Option<u8>,
    ) -> Option<Fault> {
        let instance = self.fault_instance(fault, instance_count);
        let at = if kind == "restart" {
            // A restart has no natural default time: say when.
            self.req(fault, "at_s")
                .and_then(|v| self.duration(v, &fault.at("at_s"), NS_PER_S, false))
        } else {
            self.fault_at_s(fault)
        };
        let (instance, at) = (instance?, at?);
        Some(if kind == "kill" {
            Fault::Kill { instance, at }
        } else {
            Fault::Restart { instance, at }
        })
    }

    /// `kind = "pause"`: one instance freezes for a while.
    fn pause_fault(&mut self, fault: &TableView, instance_count: Option<u8>) -> Option<Fault> {
        let instance = self.fault_instance(fault, instance_count);
        let at = self.fault_at_s(fault);
        let duration = self.req(fault, "duration_s").and_then(|v| {
            self.duration_limited(
                v,
                &fault.at("duration_s"),
                (NS_PER_S, true),
                (TIMELINE_NS_MAX, "86400 (one day)"),
                TIMELINE_WHY,
            )
        });
        Some(Fault::Pause {
            instance: instance?,
            at: at?,
            duration: duration?,
        })
    }

    /// A percentage in 0..=100, as parts per million.
    fn percent_ppm(&mut self, node: &Node, path: &KeyPath) -> Option<u32> {
        let v = self.number(node, path, Bound::NonNeg)?;
        if v > 100.0 {
            self.err(
                node,
                path,
                format!(
                    "expected a percentage in 0..=100, found {}",
                    node.describe()
                ),
            );
            return None;
        }
        // In 0..=1e6 after the check above: the conversion cannot truncate.
        Some((v * 10_000.0).round() as u32)
    }

    /// `kind = "loss"`: messages on the selected links are dropped.
    fn loss_fault(&mut self, fault: &TableView, instance_count: Option<u8>) -> Option<Fault> {
        let target = self.fault_target(fault, instance_count);
        let loss = self
            .req(fault, "loss_pct")
            .and_then(|v| self.percent_ppm(v, &fault.at("loss_pct")));
        let correlation = match fault.get("correlation_pct") {
            Some(v) => self.percent_ppm(v, &fault.at("correlation_pct")),
            None => Some(0),
        };
        Some(Fault::Loss {
            target: target?,
            loss_ppm: loss?,
            correlation_ppm: correlation?,
        })
    }

    /// `kind = "partition"`: the selected links carry nothing.
    fn partition_fault(&mut self, fault: &TableView, instance_count: Option<u8>) -> Option<Fault> {
        let target = self.fault_target(fault, instance_count);
        let direction = match fault.get("direction") {
            None => Some(Direction::Both),
            Some(v) => match &v.val {
                Val::Str(s) if s == "both" => Some(Direction::Both),
                Val::Str(s) if s == "to" => Some(Direction::To),
                Val::Str(s) if s == "from" => Some(Direction::From),
                _ => {
                    self.err(
                        v,
                        &fault.at("direction"),
                        format!(
                            "expected \"both\", \"to\" or \"from\", found {}",
                            v.describe()
                        ),
                    );
                    None
                }
            },
        };
        Some(Fault::Partition {
            target: target?,
            direction: direction?,
        })
    }

    /// `target`: "all", `{ instance = N }` (its links) or `{ from = A, to = B }` (one link).
    fn link_target(
        &mut self,
        node: &Node,
        path: &KeyPath,
        instance_count: Option<u8>,
    ) -> Option<LinkTarget> {
        match &node.val {
            Val::Str(s) if s == "all" => Some(LinkTarget::All),
            Val::Table(_) => self.link_target_table(node, path, instance_count),
            _ => {
                self.err(
                    node,
                    path,
                    format!(
                        "expected \"all\", {{ instance = N }} or {{ from = A, to = B }}, found {}",
                        node.describe()
                    ),
                );
                None
            }
        }
    }

    fn link_target_table(
        &mut self,
        node: &Node,
        path: &KeyPath,
        instance_count: Option<u8>,
    ) -> Option<LinkTarget> {
        let target = self.table(node, path, &["instance", "from", "to"])?;
        if let Some(instance) = target.get("instance") {
            for key in ["from", "to"] {
                if let Some(e) = target.entry(key) {
                    self.err_key(
                        e,
                        &target.at(key),
                        "give either `instance` or `from` and `to`, not both",
                    );
                    return None;
                }
            }
            return self
                .instance(instance, &target.at("instance"), instance_count)
                .map(LinkTarget::Instance);
        }
        if target.get("from").is_none() && target.get("to").is_none() {
            self.err(
                node,
                path,
                "expected { instance = N } or { from = A, to = B }",
            );
            return None;
        }
        let from = self
            .req(&target, "from")
            .and_then(|v| self.instance(v, &target.at("from"), instance_count));
        let to = self
            .req(&target, "to")
            .and_then(|v| self.instance(v, &target.at("to"), instance_count));
        let (from, to) = (from?, to?);
        if from == to {
            self.err(
                node,
                path,
                format!("a link joins two different instances (from = to = {from})"),
            );
            return None;
        }
        Some(LinkTarget::Link { from, to })
    }
}

/// The node of `key` in the table `node`, or the table itself (for a
/// message's line and column).
fn key_node<'a>(node: &'a Node, key: &str) -> &'a Node {
    node.as_table()
        .and_then(|t| t.get(key))
        .map_or(node, |e| &e.node)
}

/// When a kill, restart or pause happens, from its phase's start.
fn fault_at(fault: &Fault) -> Option<Nanos> {
    match fault {
        Fault::Kill { at, .. } | Fault::Restart { at, .. } | Fault::Pause { at, .. } => Some(*at),
        _ => None,
    }
}

/// Which instances are up along the timeline, to refuse a kill of a dead
/// instance, a restart of a live one, a pause of a dead one, or a timeline
/// that takes every instance down.
struct Life {
    /// Per instance (0-based): `Some((phase, seconds))` where it was killed.
    down: Vec<Option<(String, f64)>>,
}

impl Life {
    fn new(instance_count: Option<u8>) -> Life {
        Life {
            down: vec![None; usize::from(instance_count.unwrap_or(0))],
        }
    }

    /// Apply one timed fault at `at_ns` from the timeline's start.
    fn apply(&mut self, fault: &Fault, phase: &str, at_ns: Nanos) -> Result<(), String> {
        let (instance, verb) = match fault {
            Fault::Kill { instance, .. } => (*instance, "kill"),
            Fault::Restart { instance, .. } => (*instance, "restart"),
            Fault::Pause { instance, .. } => (*instance, "pause"),
            _ => return Ok(()),
        };
        let Some(slot) = usize::from(instance)
            .checked_sub(1)
            .and_then(|i| self.down.get_mut(i))
        else {
            return Ok(());
        };
        let at_s = at_ns as f64 / NS_PER_S as f64;
        match (verb, slot.as_ref()) {
            ("kill" | "pause", Some((when_phase, when_s))) => {
                return Err(format!(
                    "{verb} of instance {instance}, which is down at this point (killed in phase \"{when_phase}\" at {when_s} s of the timeline, not restarted)"
                ));
            }
            ("restart", None) => {
                return Err(format!(
                    "restart of instance {instance}, which is up at this point: a restart follows a kill of the same instance"
                ));
            }
            ("kill", None) => *slot = Some((phase.to_string(), at_s)),
            ("restart", Some(_)) => *slot = None,
            _ => {}
        }
        if !self.down.is_empty() && self.down.iter().all(Option::is_some) {
            return Err(format!(
                "this kill takes down every instance ({} of {}) at {at_s} s of the timeline: at least one must stay up to see the cluster survive",
                self.down.len(),
                self.down.len()
            ));
        }
        Ok(())
    }
}

/// Whether a workload runs parallel queries.
fn is_parallel(w: &WorkloadSpec) -> bool {
    w.transactions
        .iter()
        .any(|t| t.steps.iter().any(|s| matches!(s, Step::ParallelQuery(_))))
}
