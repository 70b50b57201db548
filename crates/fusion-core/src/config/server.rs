//! The machine one instance runs on, when a scenario describes it (`[server]`):
//! its locality groups (NUMA-Q quads, Solaris lgroups, Opteron sockets), each
//! with cores, hardware threads per core and memory; the latency of a cache
//! line from a group's own memory and from another group's; optionally the
//! bandwidth of each group's memory and of the link between groups; and
//! where memory is placed. Plain data: `instance/numa.rs` turns it into
//! costs, `cpu.rs` into CPUs. Without a description an instance has
//! `cpu_count` plain CPUs and memory costs nothing beyond `[costs]`.

use super::units::Nanos;

/// Bytes of one cache line: the unit every memory access moves.
pub const LINE_BYTES: u64 = 64;

/// Where the operating system puts memory pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Pages dealt round-robin over the groups (the BIOS's node
    /// interleaving, HP's SUMA): about (n-1)/n of every process's accesses
    /// are remote, whatever the database does.
    Interleaved,
    /// A page lives where the process that first touched it runs: private
    /// memory (PGA, stack) is local; the SGA, created once and shared, is
    /// spread over the groups.
    FirstTouch,
}

impl Placement {
    pub fn name(self) -> &'static str {
        match self {
            Placement::Interleaved => "interleaved",
            Placement::FirstTouch => "first_touch",
        }
    }
}

/// A server's shape and memory costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    /// Locality groups (1 = a uniform SMP).
    pub groups: u32,
    /// Cores in each group.
    pub cores_per_group: u32,
    /// Hardware threads per core; each is a CPU of `cpu_count`.
    pub threads_per_core: u32,
    /// Threads of one core that execute at full speed at once (a T2 core
    /// has two integer pipelines for its eight threads); more running
    /// threads share them.
    pub pipelines_per_core: u32,
    /// A cache line from the group's own memory.
    pub local_latency: Nanos,
    /// A cache line from another group's memory.
    pub remote_latency: Nanos,
    /// Bytes per second one group's memory serves (`None`: unbounded).
    pub memory_bandwidth: Option<u64>,
    /// Bytes per second the link between groups carries, all groups
    /// together (NUMA-Q's IQ-Link ring, HyperTransport; `None`: unbounded).
    pub link_bandwidth: Option<u64>,
    pub placement: Placement,
    /// Cache lines a buffer get misses in the buffer itself (header, rows),
    /// served by the memory the buffer lives in.
    pub buffer_lines_per_get: u32,
    /// Lines a get misses in the process's and session's state objects in
    /// the SGA: spread over the groups, or in the process's own group with
    /// the database's NUMA support.
    pub sga_lines_per_get: u32,
    /// Lines a get misses in the process's private memory (PGA, stack):
    /// local unless memory is interleaved.
    pub private_lines_per_get: u32,
    /// Lines a database writer reads in each buffer it writes (buffer
    /// header, block header, the block's checksum), in the memory the
    /// buffer lives in.
    pub write_lines_per_buffer: u32,
    /// Lines the process that submits a write touches in the buffer's
    /// memory (the kernel locking the page and setting up the transfer);
    /// that process's group's I/O controller then moves the block's bytes
    /// out of the buffer's memory. Like a buffer get's lines, a write's
    /// cost wherever a server is described: one memory model for every
    /// process.
    pub io_lines_per_write: u32,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            groups: 1,
            cores_per_group: 4,
            threads_per_core: 1,
            pipelines_per_core: 1,
            local_latency: 100,
            remote_latency: 300,
            memory_bandwidth: None,
            link_bandwidth: None,
            placement: Placement::FirstTouch,
            buffer_lines_per_get: 8,
            sga_lines_per_get: 2,
            private_lines_per_get: 4,
            write_lines_per_buffer: 36,
            io_lines_per_write: 78,
        }
    }
}

impl Server {
    /// CPUs the operating system shows (Oracle's `cpu_count`): every hardware thread.
    pub fn cpus(&self) -> u32 {
        self.groups
            .saturating_mul(self.cores_per_group)
            .saturating_mul(self.threads_per_core)
    }

    /// CPUs of one group.
    pub fn cpus_per_group(&self) -> u32 {
        self.cores_per_group.saturating_mul(self.threads_per_core)
    }

    /// Nanoseconds a resource of `bytes_per_s` is busy with one cache line.
    pub fn line_service(bytes_per_s: u64) -> Nanos {
        (LINE_BYTES * 1_000_000_000).div_ceil(bytes_per_s.max(1))
    }
}
