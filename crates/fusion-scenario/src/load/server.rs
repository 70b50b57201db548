//! `[server]`: the machine each instance runs on, inside one node: its
//! locality groups (CPUs and memory), hardware threads per core, memory
//! latencies and bandwidths, and where memory pages go. See
//! `fusion_core::config::server`.

use fusion_core::config::{Params, Placement, Server};

use super::limits::{
    GROUPS_MAX, GROUPS_WHY, LATENCY_NS_MAX, LATENCY_WHY, LINES_PER_GET_MAX, LINES_WHY,
    THREADS_PER_CORE_MAX, THREADS_WHY,
};
use super::problems::Validator;
use super::read::{Bound, TableView};
use crate::tree::{KeyPath, Node, Table};

const SERVER_KEYS: &[&str] = &[
    "locality_groups",
    "cores_per_group",
    "threads_per_core",
    "pipelines_per_core",
    "local_latency_ns",
    "remote_latency_ns",
    "memory_bandwidth_mb_s",
    "link_bandwidth_mb_s",
    "memory",
    "buffer_lines_per_get",
    "sga_lines_per_get",
    "private_lines_per_get",
    "write_lines_per_buffer",
    "io_lines_per_write",
];

/// The largest `cpu_count` (Params' range).
const CPUS_MAX: u32 = 1024;

impl Validator<'_> {
    /// `[server]`, `None` if it has problems.
    pub(super) fn server(&mut self, node: &Node) -> Option<Server> {
        let before = self.problems.len();
        let path = KeyPath::root().key("server");
        let t = self.table(node, &path, SERVER_KEYS)?;
        let d = Server::default();
        let groups =
            self.opt_u32_limited(&t, "locality_groups", (1, GROUPS_MAX), GROUPS_WHY, d.groups);
        let cores = self.opt_u32(&t, "cores_per_group", 1, CPUS_MAX, d.cores_per_group);
        let threads = self.opt_u32_limited(
            &t,
            "threads_per_core",
            (1, THREADS_PER_CORE_MAX),
            THREADS_WHY,
            d.threads_per_core,
        );
        let pipelines = self.opt_u32(
            &t,
            "pipelines_per_core",
            1,
            threads,
            d.pipelines_per_core.min(threads),
        );
        let latency = |v: &mut Self, key: &str, default: u64| {
            u64::from(v.opt_u32_limited(&t, key, (1, LATENCY_NS_MAX), LATENCY_WHY, default as u32))
        };
        let local = latency(self, "local_latency_ns", d.local_latency);
        let remote = latency(self, "remote_latency_ns", d.remote_latency);
        if remote < local
            && let Some(n) = t.get("remote_latency_ns")
        {
            self.err(
                n,
                &t.at("remote_latency_ns"),
                format!(
                    "remote_latency_ns ({remote}) is below local_latency_ns ({local}): \
                     another group's memory is never nearer than the group's own"
                ),
            );
        }
        let memory_bandwidth = self.bytes_per_s(&t, "memory_bandwidth_mb_s");
        let link_bandwidth = self.bytes_per_s(&t, "link_bandwidth_mb_s");
        let placement = match t.get("memory") {
            None => d.placement,
            Some(n) => match self.string(n, &t.at("memory"))?.as_str() {
                "interleaved" => Placement::Interleaved,
                "first_touch" => Placement::FirstTouch,
                other => {
                    self.err(
                        n,
                        &t.at("memory"),
                        format!("unknown memory placement `{other}` (interleaved or first_touch)"),
                    );
                    d.placement
                }
            },
        };
        let lines = |v: &mut Self, key: &str, default: u32| {
            v.opt_u32_limited(&t, key, (0, LINES_PER_GET_MAX), LINES_WHY, default)
        };
        let server = Server {
            groups,
            cores_per_group: cores,
            threads_per_core: threads,
            pipelines_per_core: pipelines,
            local_latency: local,
            remote_latency: remote,
            memory_bandwidth,
            link_bandwidth,
            placement,
            buffer_lines_per_get: lines(self, "buffer_lines_per_get", d.buffer_lines_per_get),
            sga_lines_per_get: lines(self, "sga_lines_per_get", d.sga_lines_per_get),
            private_lines_per_get: lines(self, "private_lines_per_get", d.private_lines_per_get),
            write_lines_per_buffer: lines(self, "write_lines_per_buffer", d.write_lines_per_buffer),
            io_lines_per_write: lines(self, "io_lines_per_write", d.io_lines_per_write),
        };
        if server.cpus() > CPUS_MAX {
            self.err(
                node,
                &path,
                format!(
                    "the server has {} CPUs (locality_groups x cores_per_group x threads_per_core), \
                     more than cpu_count allows ({CPUS_MAX})",
                    server.cpus()
                ),
            );
        }
        (self.problems.len() == before).then_some(server)
    }

    /// A bandwidth in MB/s (10^6 bytes a second), as bytes a second.
    fn bytes_per_s(&mut self, t: &TableView, key: &str) -> Option<u64> {
        let node = t.get(key)?;
        let v = self.number(node, &t.at(key), Bound::Pos)?;
        if !(1.0..=1e9).contains(&v) {
            self.err(
                node,
                &t.at(key),
                format!("{} is out of range (1 MB/s to 1 PB/s)", node.describe()),
            );
            return None;
        }
        Some((v * 1e6).round() as u64)
    }

    /// With a server, `cpu_count` is its hardware threads: derived when
    /// `[parameters]` does not set it, an error when it sets another number.
    pub(super) fn server_cpus(&mut self, server: &Server, instances: &mut [Params], root: &Table) {
        let cpus = server.cpus();
        let params = root.get("parameters").and_then(|e| e.node.as_table());
        let mut set: Vec<(&Node, KeyPath)> = Vec::new();
        if let Some(p) = params {
            for e in &p.entries {
                let here = KeyPath::root().key("parameters").key(&e.key);
                if e.key.eq_ignore_ascii_case("cpu_count") {
                    set.push((&e.node, here));
                } else if let Some(sub) = e.node.as_table()
                    && let Some(c) = sub
                        .entries
                        .iter()
                        .find(|s| s.key.eq_ignore_ascii_case("cpu_count"))
                {
                    set.push((&c.node, here.key(&c.key)));
                }
            }
        }
        for (node, path) in set {
            if !matches!(node.val, crate::tree::Val::Int(v) if v == i64::from(cpus)) {
                self.err(
                    node,
                    &path,
                    format!(
                        "cpu_count is {} but [server] has {cpus} CPUs (locality_groups x \
                         cores_per_group x threads_per_core): leave cpu_count out, it is derived",
                        node.describe()
                    ),
                );
            }
        }
        for p in instances {
            p.cpu_count = cpus;
        }
    }
}
