//! The timeline: `[[phase]]`s with the workloads they run, the parameters
//! they change, and their `[[phase.fault]]`s (CPU stress, disk latency,
//! interconnect latency and bandwidth).

use fusion_core::config::{NS_PER_MS, NS_PER_S, Nanos, ParamValue, WorkloadSpec};

use super::limits::{TIMELINE_NS_MAX, TIMELINE_WHY, WORKERS_MAX, WORKERS_WHY};
use super::problems::{Validator, names_list, quoted_list, suggest};
use super::read::TableView;
use crate::model::{Device, Fault, LinkTarget, Phase};
use crate::tree::{KeyPath, Node, Val};

const PHASE_KEYS: &[&str] = &["name", "duration_s", "workloads", "parameters", "fault"];
const FAULT_KINDS: &[&str] = &["stress_cpu", "disk_latency", "latency", "bandwidth"];

/// The keys a fault of `kind` may have; `None` for an unknown kind.
fn fault_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "stress_cpu" => &["kind", "instance", "workers", "load_pct"],
        "disk_latency" => &["kind", "instance", "device", "latency_ms", "jitter_ms"],
        "latency" => &["kind", "target", "latency_ms", "jitter_ms"],
        "bandwidth" => &["kind", "target", "rate_mbps"],
        _ => return None,
    })
}

impl Validator<'_> {
    pub(super) fn phases(
        &mut self,
        node: &Node,
        instance_count: Option<u8>,
        workloads: &[WorkloadSpec],
    ) -> Vec<Phase> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let mut timeline: Nanos = 0;
        let workload_names: Vec<String> = workloads.iter().map(|w| w.name.clone()).collect();
        for (item, path) in self.tables(node, &KeyPath::root().key("phase"), "phase") {
            let Some(phase) = self.table(item, &path, PHASE_KEYS) else {
                continue;
            };
            let name = self.req(&phase, "name").and_then(|v| {
                let name = self.name(v, &phase.at("name"))?;
                self.unique(&mut seen, &name, v, &phase.at("name"), "phase");
                Some(name)
            });
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
            if let Some(list) = phase.get("fault") {
                for (fault_node, fault_path) in self.tables(list, &phase.at("fault"), "phase.fault")
                {
                    if let Some(fault) = self.fault(fault_node, &fault_path, instance_count) {
                        faults.push(fault);
                    }
                }
            }
            out.push(Phase {
                name: name.unwrap_or_default(),
                duration,
                parameters,
                faults,
                workloads: selected,
            });
        }
        out
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
            _ => self.bandwidth_fault(&fault, instance_count),
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
        let instance = self
            .req(fault, "instance")
            .and_then(|v| self.instance(v, &fault.at("instance"), instance_count));
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
        let instance = self
            .req(fault, "instance")
            .and_then(|v| self.instance(v, &fault.at("instance"), instance_count));
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
        let target = self
            .req(fault, "target")
            .and_then(|v| self.link_target(v, &fault.at("target"), instance_count));
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
        let target = self
            .req(fault, "target")
            .and_then(|v| self.link_target(v, &fault.at("target"), instance_count));
        let rate = self
            .req(fault, "rate_mbps")
            .and_then(|v| self.rate(v, &fault.at("rate_mbps"), 1e6));
        Some(Fault::Bandwidth {
            target: target?,
            rate_bps: rate?,
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
