//! The machine the scenario runs on: `[cluster]`, `[parameters]` (init.ora,
//! for every instance or one `instN`), `[costs]`, `[network]`, `[storage]`.

use fusion_core::config::{Costs, NS_PER_MS, NS_PER_US, Nanos, ParamValue, Params};

use super::INSTANCES_MAX;
use super::limits::{
    COST_NS_MAX, COST_WHY, MESSAGE_BYTES_MAX, MESSAGE_WHY, RATE_BPS_MIN, RATE_WHY, ROW_COST_NS_MAX,
    ROW_COST_WHY,
};
use super::problems::{Validator, suggest};
use super::read::{Bound, TableView};
use crate::model::{NetworkModel, StorageModel};
use crate::tree::{Entry, KeyPath, Node, Origin, Val, format_float};

const COST_KEYS: &[&str] = &[
    "execute_us",
    "consistent_get_us",
    "db_block_get_us",
    "row_examined_us",
    "row_change_us",
    "commit_us",
    "cr_build_us",
    "undo_apply_us",
    "lms_message_us",
    "lms_pin_us",
    "lms_send_us",
    "lgwr_write_us",
    "dbwr_write_us",
    "dbwr_io_submit_us",
    "block_install_us",
    "bitmap_piece_us",
    "time_slice_ms",
    "px_row_send_us",
    "px_row_receive_us",
    "px_message_local_us",
    "px_message_remote_us",
    "px_server_start_ms",
    "rman_block_us",
];
const NETWORK_KEYS: &[&str] = &[
    "latency_us",
    "jitter_us",
    "bandwidth_mbps",
    "bandwidth_gbps",
    "message_bytes",
];
const STORAGE_KEYS: &[&str] = &[
    "read_latency_ms",
    "write_latency_ms",
    "log_write_latency_ms",
    "iops",
];

/// A parameter assignment read from a `parameters` table.
pub(super) struct ParamSetting {
    /// `None`: every instance.
    pub(super) instance: Option<u8>,
    pub(super) name: String,
    pub(super) value: ParamValue,
    node: Node,
    path: KeyPath,
}

/// `instN` -> N (as written; range is checked by the caller).
fn instance_key(key: &str) -> Option<u64> {
    let digits = key.strip_prefix("inst")?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX))
}

impl Validator<'_> {
    /// `[cluster]`: the number of instances, `None` if it is missing or wrong.
    pub(super) fn cluster(&mut self, node: Option<&Node>) -> Option<u8> {
        let Some(node) = node else {
            self.push(
                &None,
                &Origin::File,
                None,
                None,
                "missing required table [cluster]".to_string(),
            );
            return None;
        };
        let cluster = self.table(node, &KeyPath::root().key("cluster"), &["instances"])?;
        let count = self.req(&cluster, "instances")?;
        self.int(count, &cluster.at("instances"), 1, i64::from(INSTANCES_MAX))
            .and_then(|v| u8::try_from(v).ok())
    }

    /// A `parameters` table: `name = value` for every instance and
    /// `[...instN]` tables for one. `phase` limits names to the phase-changeable ones.
    pub(super) fn param_settings(
        &mut self,
        node: &Node,
        path: &KeyPath,
        instance_count: Option<u8>,
        phase: bool,
    ) -> Vec<ParamSetting> {
        let mut out = Vec::new();
        let Some(table) = node.as_table() else {
            self.err(
                node,
                path,
                format!("expected a table of parameters, found {}", node.describe()),
            );
            return out;
        };
        for entry in &table.entries {
            let here = path.key(&entry.key);
            if let Some(number) = instance_key(&entry.key) {
                self.instance_param_settings(entry, &here, number, instance_count, phase, &mut out);
            } else if let Some(s) = self.param(entry, &here, None, phase) {
                out.push(s);
            }
        }
        out
    }

    /// The `instN` table of a `parameters` table (`number` is N).
    fn instance_param_settings(
        &mut self,
        entry: &Entry,
        path: &KeyPath,
        number: u64,
        instance_count: Option<u8>,
        phase: bool,
        out: &mut Vec<ParamSetting>,
    ) {
        let max = instance_count.unwrap_or(INSTANCES_MAX);
        let Some(instance) = u8::try_from(number).ok().filter(|i| (1..=max).contains(i)) else {
            let msg = match instance_count {
                Some(count) => format!(
                    "instance {number} is out of range 1..={count} (cluster.instances = {count})"
                ),
                None => format!("instance {number} is out of range 1..={INSTANCES_MAX}"),
            };
            self.err_key(entry, path, msg);
            return;
        };
        let Some(sub) = entry.node.as_table() else {
            self.err(
                &entry.node,
                path,
                format!(
                    "expected a table of parameters for instance {instance}, found {}",
                    entry.node.describe()
                ),
            );
            return;
        };
        for sub_entry in &sub.entries {
            let sub_path = path.key(&sub_entry.key);
            if let Some(s) = self.param(sub_entry, &sub_path, Some(instance), phase) {
                out.push(s);
            }
        }
    }

    /// One `name = value` of a `parameters` table, checked by the model's own
    /// parameter rules.
    fn param(
        &mut self,
        entry: &Entry,
        path: &KeyPath,
        instance: Option<u8>,
        phase: bool,
    ) -> Option<ParamSetting> {
        let Some(name) = Params::NAMES
            .iter()
            .find(|known| known.eq_ignore_ascii_case(&entry.key))
        else {
            let hint = if instance.is_none() && entry.node.as_table().is_some() {
                "; parameters of one instance go in a table named inst1, inst2, ...".to_string()
            } else {
                suggest(&entry.key, Params::NAMES)
            };
            self.err_key(
                entry,
                path,
                format!(
                    "unknown parameter `{}` (known: {}){hint}",
                    entry.key,
                    Params::NAMES.join(", ")
                ),
            );
            return None;
        };
        if phase && !Params::PHASE_CHANGEABLE.contains(name) {
            self.err_key(entry, path, format!(
                "`{name}` cannot change during a run: it needs an instance restart (phase-changeable: {})",
                Params::PHASE_CHANGEABLE.join(", ")
            ));
            return None;
        }
        let value = self.param_value(name, &entry.node, path)?;
        if let Err(msg) = Params::default().set(name, &value) {
            self.err(&entry.node, path, msg);
            return None;
        }
        Some(ParamSetting {
            instance,
            name: name.to_string(),
            value,
            node: entry.node.clone(),
            path: path.clone(),
        })
    }

    /// The value of parameter `name` as the model takes it: an integer or text.
    fn param_value(&mut self, name: &str, node: &Node, path: &KeyPath) -> Option<ParamValue> {
        match &node.val {
            Val::Int(v) if *v >= 0 => Some(ParamValue::Int(v.unsigned_abs())),
            Val::Str(s) => Some(ParamValue::Text(s.clone())),
            // `parallel_force_local = true` as TOML writes a boolean.
            Val::Bool(b) => Some(ParamValue::Text(
                if *b { "TRUE" } else { "FALSE" }.to_string(),
            )),
            // Seconds with decimals (a scaled-down scenario's threshold).
            Val::Float(f) if name == "parallel_min_time_threshold" => {
                Some(ParamValue::Text(format_float(*f)))
            }
            _ => {
                let what = if matches!(node.val, Val::Int(_)) {
                    "a non-negative integer"
                } else {
                    "an integer"
                };
                self.err(
                    node,
                    path,
                    format!(
                        "expected {what} or text (sizes such as \"64M\"), found {}",
                        node.describe()
                    ),
                );
                None
            }
        }
    }

    /// `[parameters]`: each instance's parameters (none when the cluster
    /// size is unknown).
    pub(super) fn instances(
        &mut self,
        node: Option<&Node>,
        instance_count: Option<u8>,
    ) -> Vec<Params> {
        let settings = match node {
            Some(node) => self.param_settings(
                node,
                &KeyPath::root().key("parameters"),
                instance_count,
                false,
            ),
            None => Vec::new(),
        };
        let Some(count) = instance_count else {
            return Vec::new();
        };
        let mut instances = vec![Params::default(); usize::from(count)];
        // Settings for every instance first, then those of one instance, whatever the file order.
        for s in settings.iter().filter(|s| s.instance.is_none()) {
            for p in &mut instances {
                if let Err(msg) = p.set(&s.name, &s.value) {
                    self.err(&s.node, &s.path, msg);
                }
            }
        }
        for s in settings.iter().filter(|s| s.instance.is_some()) {
            let idx = s.instance.map_or(0, |i| usize::from(i).saturating_sub(1));
            if let Some(p) = instances.get_mut(idx)
                && let Err(msg) = p.set(&s.name, &s.value)
            {
                self.err(&s.node, &s.path, msg);
            }
        }
        self.check_block_sizes(&instances, &settings);
        instances
    }

    /// All instances share one database, so one block size.
    fn check_block_sizes(&mut self, instances: &[Params], settings: &[ParamSetting]) {
        let sizes: Vec<u32> = instances.iter().map(|p| p.db_block_size).collect();
        if !sizes.windows(2).any(|w| w[0] != w[1]) {
            return;
        }
        let list: Vec<String> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| format!("instance {}: {s}", i + 1))
            .collect();
        let message = format!(
            "db_block_size must be the same on every instance ({})",
            list.join(", ")
        );
        match settings
            .iter()
            .find(|s| s.instance.is_some() && s.name == "db_block_size")
        {
            Some(s) => self.err(&s.node, &s.path, message),
            None => self.push(
                &None,
                &Origin::File,
                Some(&KeyPath::root().key("parameters")),
                None,
                message,
            ),
        }
    }

    /// `[costs]`: CPU time of each operation; keys not given keep the model's defaults.
    pub(super) fn costs(&mut self, node: &Node) -> Costs {
        let defaults = Costs::default();
        let Some(costs) = self.table(node, &KeyPath::root().key("costs"), COST_KEYS) else {
            return defaults;
        };
        let cost = |this: &mut Self,
                    key: &str,
                    unit: (u64, bool),
                    max: (Nanos, &str, &str),
                    default: Nanos| {
            let (max_ns, max_text, why) = max;
            costs
                .get(key)
                .and_then(|node| {
                    this.duration_limited(node, &costs.at(key), unit, (max_ns, max_text), why)
                })
                .unwrap_or(default)
        };
        let us = |this: &mut Self, key: &str, default: Nanos| {
            let max = (COST_NS_MAX, "1000000 (one second)", COST_WHY);
            cost(this, key, (NS_PER_US, false), max, default)
        };
        // Costs per row are multiplied by a whole table's rows (a scan, a
        // sort's comparisons).
        let per_row = |this: &mut Self, key: &str, default: Nanos| {
            let max = (ROW_COST_NS_MAX, "1000 (one millisecond)", ROW_COST_WHY);
            cost(this, key, (NS_PER_US, false), max, default)
        };
        let ms = |this: &mut Self, key: &str, positive: bool, default: Nanos| {
            let max = (COST_NS_MAX, "1000 (one second)", COST_WHY);
            cost(this, key, (NS_PER_MS, positive), max, default)
        };
        Costs {
            execute_ns: us(self, "execute_us", defaults.execute_ns),
            consistent_get_ns: us(self, "consistent_get_us", defaults.consistent_get_ns),
            db_block_get_ns: us(self, "db_block_get_us", defaults.db_block_get_ns),
            row_examined_ns: per_row(self, "row_examined_us", defaults.row_examined_ns),
            row_change_ns: us(self, "row_change_us", defaults.row_change_ns),
            commit_ns: us(self, "commit_us", defaults.commit_ns),
            cr_build_ns: us(self, "cr_build_us", defaults.cr_build_ns),
            undo_apply_ns: us(self, "undo_apply_us", defaults.undo_apply_ns),
            lms_message_ns: us(self, "lms_message_us", defaults.lms_message_ns),
            lms_pin_ns: us(self, "lms_pin_us", defaults.lms_pin_ns),
            lms_send_ns: us(self, "lms_send_us", defaults.lms_send_ns),
            lgwr_write_ns: us(self, "lgwr_write_us", defaults.lgwr_write_ns),
            dbwr_write_ns: us(self, "dbwr_write_us", defaults.dbwr_write_ns),
            dbwr_io_submit_ns: us(self, "dbwr_io_submit_us", defaults.dbwr_io_submit_ns),
            rman_block_ns: us(self, "rman_block_us", defaults.rman_block_ns),
            block_install_ns: us(self, "block_install_us", defaults.block_install_ns),
            bitmap_piece_ns: us(self, "bitmap_piece_us", defaults.bitmap_piece_ns),
            time_slice_ns: ms(self, "time_slice_ms", true, defaults.time_slice_ns),
            px_row_send_ns: per_row(self, "px_row_send_us", defaults.px_row_send_ns),
            px_row_receive_ns: per_row(self, "px_row_receive_us", defaults.px_row_receive_ns),
            px_message_local_ns: us(self, "px_message_local_us", defaults.px_message_local_ns),
            px_message_remote_ns: us(self, "px_message_remote_us", defaults.px_message_remote_ns),
            px_server_start_ns: ms(
                self,
                "px_server_start_ms",
                false,
                defaults.px_server_start_ns,
            ),
        }
    }

    /// `[network]`: the interconnect's latency, jitter, bandwidth and message size.
    pub(super) fn network(&mut self, node: &Node) -> NetworkModel {
        let defaults = NetworkModel::default();
        let Some(network) = self.table(node, &KeyPath::root().key("network"), NETWORK_KEYS) else {
            return defaults;
        };
        let latency = self.opt_duration(&network, "latency_us", NS_PER_US, false, defaults.latency);
        let jitter = self.opt_duration(&network, "jitter_us", NS_PER_US, false, defaults.jitter);
        let bandwidth_bps = self.bandwidth(&network, defaults.bandwidth_bps);
        let message_bytes = self.opt_u32_limited(
            &network,
            "message_bytes",
            (1, MESSAGE_BYTES_MAX),
            MESSAGE_WHY,
            defaults.message_bytes,
        );
        NetworkModel {
            latency,
            jitter,
            bandwidth_bps,
            message_bytes,
        }
    }

    /// `bandwidth_mbps` or `bandwidth_gbps`, in bits per second.
    fn bandwidth(&mut self, network: &TableView, default_bps: u64) -> u64 {
        let mut bandwidth_bps = default_bps;
        if network.get("bandwidth_mbps").is_some()
            && let Some(e) = network.entry("bandwidth_gbps")
        {
            self.err_key(
                e,
                &network.at("bandwidth_gbps"),
                "give either bandwidth_mbps or bandwidth_gbps, not both",
            );
        } else {
            for (key, bps_per_unit) in [("bandwidth_mbps", 1e6), ("bandwidth_gbps", 1e9)] {
                if let Some(v) = network.get(key)
                    && let Some(bps) = self.rate(v, &network.at(key), bps_per_unit)
                {
                    bandwidth_bps = bps;
                }
            }
        }
        bandwidth_bps
    }

    /// A link rate written in a unit of `bps_per_unit` bits per second.
    pub(super) fn rate(&mut self, node: &Node, path: &KeyPath, bps_per_unit: f64) -> Option<u64> {
        let v = self.number(node, path, Bound::Pos)?;
        let bps = (v * bps_per_unit).round();
        if bps < RATE_BPS_MIN {
            self.err(
                node,
                path,
                format!(
                    "{} is below the slowest link the model runs, 1 Mbit/s: {RATE_WHY}",
                    node.describe()
                ),
            );
            return None;
        }
        if bps > 1e15 {
            self.err(
                node,
                path,
                format!("{} is out of range (1 Mbit/s to 1 Pbit/s)", node.describe()),
            );
            return None;
        }
        // Within 1e6..=1e15: a whole number of bits per second a u64 holds exactly.
        Some(bps as u64)
    }

    /// `[storage]`: latencies of the block store's devices and its IOPS limit.
    pub(super) fn storage(&mut self, node: &Node) -> StorageModel {
        let defaults = StorageModel::default();
        let Some(storage) = self.table(node, &KeyPath::root().key("storage"), STORAGE_KEYS) else {
            return defaults;
        };
        let ms = |this: &mut Self, key: &str, default: Nanos| {
            this.opt_duration(&storage, key, NS_PER_MS, false, default)
        };
        StorageModel {
            read_latency: ms(self, "read_latency_ms", defaults.read_latency),
            write_latency: ms(self, "write_latency_ms", defaults.write_latency),
            log_write_latency: ms(self, "log_write_latency_ms", defaults.log_write_latency),
            iops: storage
                .get("iops")
                .and_then(|v| self.int(v, &storage.at("iops"), 0, i64::MAX))
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(defaults.iops),
        }
    }
}
