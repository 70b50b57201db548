//! `Numa`: the memory of a server with locality groups (`[server]`), as the
//! instance's processes see it. It owns where memory lives (each buffer's
//! group, each process's home group), the queues of each group's memory and
//! of the link between groups, and answers, for the cache lines a CPU step
//! touches, how long the step stalls on them.
//!
//! A step's stall is the larger of two times, both from the model: the
//! lines' latencies one after another (local or remote by where the line
//! lives and where the process runs), and the time until every memory and
//! the link have served the step's lines behind what they already had to
//! serve (a FIFO per resource: `busy_until` moves by the work). So a lightly
//! used link costs only its latency, and a saturated one makes every step
//! wait its turn: the stall grows with the traffic, not with a number.
//!
//! Placement (`Placement`, `_enable_NUMA_support`):
//! - interleaved: every page round-robin over the groups;
//! - first touch: private memory local; the SGA spread over the groups
//!   (buffer `b` in group `b mod n`; state objects striped);
//! - first touch with NUMA support: a process takes a free buffer of its own
//!   group first (quad-local buffer preference, one LRU per group: see
//!   `Numa::prefers`) and a new buffer's memory comes from its group; the
//!   process's state objects live in its group.

use crate::config::Nanos;
use crate::config::server::{LINE_BYTES, Placement, Server};
use crate::cpu::ProcId;
use crate::stats::{Stat, Stats};

/// No group recorded yet.
const UNPLACED: u8 = u8::MAX;

/// Where the lines of a step live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// All in one group's memory.
    In(u8),
    /// Spread evenly over every group (interleaved pages, a striped SGA).
    Striped,
}

/// What a CPU step touches in memory; its stall is worked out when the
/// step's computing is done, on the CPU it ran on (so the queues are asked
/// when the lines are, not while the step still waits for a CPU).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Touch {
    /// A buffer get on buffer slot `buf` (pinned until the visit ends).
    Get { buf: u32 },
    /// `ops` lines of the process's private memory.
    Private { ops: u32 },
    /// A database writer's batch or an I/O slave's write: per group, the
    /// blocks it handles from that group's memory, the `lines` of each it
    /// reads (the CPU waits for them), and with `transfer` the blocks'
    /// bytes moved to the process's group's I/O controller (only the
    /// queues feel them).
    Write {
        blocks_by_group: Vec<u32>,
        lines: u32,
        transfer: bool,
    },
}

#[derive(Debug)]
pub struct Numa {
    server: Server,
    /// `_enable_NUMA_support` on a first-touch server.
    aware: bool,
    /// Per process: its home group.
    home: Vec<u8>,
    /// Per buffer slot: the group its memory is in.
    slot_group: Vec<u8>,
    /// Buffer slots each group's memory holds (a group holds at most its share).
    per_group: Vec<u32>,
    share: u32,
    /// Per buffer slot: a block read from disk whose bytes have not yet
    /// reached the buffer's memory from the reader's group.
    dma_pending: Vec<bool>,
    /// Per group: when its memory has served everything asked of it.
    memory_busy_until: Vec<Nanos>,
    link_busy_until: Nanos,
    memory_line_ns: Option<Nanos>,
    link_line_ns: Option<Nanos>,
    /// Next group a striped line goes to.
    stripe: u64,
    block_lines: u32,
    /// Per process: what its step running now touches, if anything.
    pending: Vec<Option<Touch>>,
}

impl Numa {
    pub fn new(server: Server, numa_support: bool, buffers: usize, block_size: u32) -> Numa {
        let groups = server.groups.clamp(1, u32::from(UNPLACED) - 1) as usize;
        Numa {
            aware: numa_support && server.placement == Placement::FirstTouch,
            home: Vec::new(),
            slot_group: Vec::new(),
            per_group: vec![0; groups],
            share: u32::try_from(buffers.div_ceil(groups)).unwrap_or(u32::MAX),
            dma_pending: Vec::new(),
            memory_busy_until: vec![0; groups],
            link_busy_until: 0,
            memory_line_ns: server.memory_bandwidth.map(Server::line_service),
            link_line_ns: server.link_bandwidth.map(Server::line_service),
            stripe: 0,
            pending: Vec::new(),
            block_lines: (u64::from(block_size) / LINE_BYTES).max(1) as u32,
            server,
        }
    }

    fn groups(&self) -> usize {
        self.per_group.len()
    }

    /// The database places its memory by locality group (`_enable_NUMA_support`).
    pub fn aware(&self) -> bool {
        self.aware
    }

    /// A new process: its home group, round-robin (or `group` when given).
    pub fn add_proc(&mut self, proc: ProcId, group: Option<u8>) -> u8 {
        let g = group.map_or(proc as usize % self.groups(), |g| {
            usize::from(g) % self.groups()
        }) as u8;
        let i = proc as usize;
        if self.home.len() <= i {
            self.home.resize(i + 1, 0);
        }
        self.home[i] = g;
        g
    }

    pub fn home(&self, proc: ProcId) -> u8 {
        // Every process is placed when the process table adds it.
        debug_assert!(
            (proc as usize) < self.home.len(),
            "process {proc} has no home group"
        );
        self.home.get(proc as usize).copied().unwrap_or(0)
    }

    /// The group buffer slot `buf` lives in; a slot seen for the first time
    /// is placed now, by the process `toucher` that uses it first.
    pub fn buffer_group(&mut self, buf: u32, toucher: u8) -> u8 {
        let i = buf as usize;
        if let Some(&g) = self.slot_group.get(i)
            && g != UNPLACED
        {
            return g;
        }
        let n = self.groups();
        let g = if self.server.placement == Placement::FirstTouch && self.aware {
            // From the toucher's group while it has free memory, else the
            // emptiest group.
            let own = usize::from(toucher) % n;
            if self.per_group[own] < self.share {
                own
            } else {
                (0..n).min_by_key(|&k| self.per_group[k]).unwrap_or(own)
            }
        } else {
            i % n
        };
        if self.slot_group.len() <= i {
            self.slot_group.resize(i + 1, UNPLACED);
        }
        self.slot_group[i] = g as u8;
        self.per_group[g] += 1;
        g as u8
    }

    /// Whether a process of `group` takes buffer slot `buf` before others
    /// when it needs a free one: with NUMA support, the LRU lists of its own
    /// group first (quad-local buffer preference); without, any.
    pub fn prefers(&self, buf: u32, group: u8) -> bool {
        !self.aware
            || self
                .slot_group
                .get(buf as usize)
                .is_none_or(|&g| g == group || g == UNPLACED)
    }

    /// A block was read from disk into buffer `buf` through the reader's
    /// group's I/O controller: its bytes cross to the buffer's memory
    /// before the reader's next step on it can use them.
    pub fn read_into(&mut self, buf: u32) {
        let i = buf as usize;
        if self.dma_pending.len() <= i {
            self.dma_pending.resize(i + 1, false);
        }
        self.dma_pending[i] = true;
    }

    /// The stall of a buffer get by a process of group `home` on buffer
    /// `buf`: the buffer's lines, the SGA state objects' and the private
    /// memory's, and the bytes of a disk read still to cross.
    fn buffer_get(&mut self, now: Nanos, home: u8, buf: u32, stats: &mut Stats) -> Nanos {
        let at = self.buffer_group(buf, home);
        let s = &self.server;
        let (b, sga, private) = (
            s.buffer_lines_per_get,
            s.sga_lines_per_get,
            s.private_lines_per_get,
        );
        let sga_at = if self.aware {
            Lines::In(home)
        } else {
            Lines::Striped
        };
        let private_at = self.private_lines(home);
        let read = self
            .dma_pending
            .get_mut(buf as usize)
            .is_some_and(std::mem::take);
        let dma: &[(u8, u32)] = if read {
            if usize::from(at) != usize::from(home) % self.groups() {
                stats.add(Stat::NumaRemoteReads, 1);
            }
            &[(at, self.block_lines)]
        } else {
            &[]
        };
        self.stall(
            now,
            home,
            &[(Lines::In(at), b), (sga_at, sga), (private_at, private)],
            dma,
            stats,
        )
    }

    /// Process `proc`'s step touches `touch`: its stall comes after its computing.
    pub fn defer(&mut self, proc: ProcId, touch: Touch) {
        let i = proc as usize;
        if self.pending.len() <= i {
            self.pending.resize(i + 1, None);
        }
        self.pending[i] = Some(touch);
    }

    /// Process `proc`'s computing is done: the stall of what it touched
    /// (`None`: nothing deferred, the step is over).
    pub fn stall_after(&mut self, now: Nanos, proc: ProcId, stats: &mut Stats) -> Option<Nanos> {
        let touch = self.pending.get_mut(proc as usize)?.take()?;
        let home = self.home(proc);
        Some(match touch {
            Touch::Get { buf } => self.buffer_get(now, home, buf, stats),
            Touch::Private { ops } => {
                let at = self.private_lines(home);
                self.stall(now, home, &[(at, ops)], &[], stats)
            }
            Touch::Write {
                blocks_by_group,
                lines,
                transfer,
            } => self.write(now, home, &blocks_by_group, lines, transfer, stats),
        })
    }

    /// The lines a writer reads per buffer, and those the process that
    /// submits a write touches.
    pub fn write_lines(&self) -> (u32, u32) {
        (
            self.server.write_lines_per_buffer,
            self.server.io_lines_per_write,
        )
    }

    /// Locality groups.
    pub fn group_count(&self) -> usize {
        self.groups()
    }

    /// The group buffer slot `buf`'s memory is in (a slot nobody placed yet
    /// counts where plain placement would put it).
    pub fn group_of(&self, buf: u32) -> u8 {
        match self.slot_group.get(buf as usize) {
            Some(&g) if g != UNPLACED => g,
            _ => (buf as usize % self.groups()) as u8,
        }
    }

    /// The stall of a write step by a process of group `home` (see `Touch::Write`).
    fn write(
        &mut self,
        now: Nanos,
        home: u8,
        blocks_by_group: &[u32],
        lines: u32,
        transfer: bool,
        stats: &mut Stats,
    ) -> Nanos {
        let home_g = usize::from(home) % self.groups();
        let mut touches: Vec<(Lines, u32)> = Vec::with_capacity(blocks_by_group.len());
        let mut dma: Vec<(u8, u32)> = Vec::new();
        for (g, &blocks) in blocks_by_group.iter().enumerate() {
            if blocks == 0 {
                continue;
            }
            let g8 = (g % self.groups()) as u8;
            touches.push((Lines::In(g8), blocks.saturating_mul(lines)));
            if transfer {
                dma.push((g8, blocks.saturating_mul(self.block_lines)));
                if g % self.groups() != home_g {
                    stats.add(Stat::NumaRemoteWrites, u64::from(blocks));
                }
            }
        }
        self.stall(now, home, &touches, &dma, stats)
    }

    /// Where a process of group `home` finds its private memory.
    pub fn private_lines(&self, home: u8) -> Lines {
        match self.server.placement {
            Placement::Interleaved => Lines::Striped,
            Placement::FirstTouch => Lines::In(home),
        }
    }

    /// The stall of a step by a process of group `home` touching `touches`
    /// (where, how many lines), plus `dma`: blocks' lines the I/O controller
    /// of `home` moves to or from group `.0`'s memory (no latency of the
    /// CPU's own, only the queues).
    pub fn stall(
        &mut self,
        now: Nanos,
        home: u8,
        touches: &[(Lines, u32)],
        dma: &[(u8, u32)],
        stats: &mut Stats,
    ) -> Nanos {
        let n = self.groups();
        let mut per_group = [0u64; 64];
        let per_group = &mut per_group[..n.min(64)];
        let mut latency: Nanos = 0;
        let (mut local, mut remote) = (0u64, 0u64);
        let home_g = usize::from(home) % per_group.len();
        for &(at, lines) in touches {
            let lines = u64::from(lines);
            match at {
                Lines::In(g) => per_group[usize::from(g) % per_group.len()] += lines,
                Lines::Striped => {
                    let len = per_group.len() as u64;
                    let (each, rest) = (lines / len, lines % len);
                    for (k, slot) in per_group.iter_mut().enumerate() {
                        let extra = u64::from((k as u64 + len - self.stripe % len) % len < rest);
                        *slot += each + extra;
                    }
                    self.stripe = self.stripe.wrapping_add(rest);
                }
            }
        }
        for (g, &lines) in per_group.iter().enumerate() {
            if g == home_g {
                local += lines;
                latency += lines * self.server.local_latency;
            } else {
                remote += lines;
                latency += lines * self.server.remote_latency;
            }
        }
        stats.add(Stat::NumaLocalAccesses, local);
        stats.add(Stat::NumaRemoteAccesses, remote);
        // The queues: each memory serves its lines, the link the remote ones.
        let mut done_at = now;
        let mut remote_moved = remote;
        for &(to, lines) in dma {
            let to = usize::from(to) % per_group.len();
            per_group[to] += u64::from(lines);
            if to != home_g {
                remote_moved += u64::from(lines);
            }
        }
        if let Some(ns) = self.memory_line_ns {
            for (g, &lines) in per_group.iter().enumerate() {
                if lines > 0 {
                    let start = self.memory_busy_until[g].max(now);
                    self.memory_busy_until[g] = start + lines * ns;
                    done_at = done_at.max(self.memory_busy_until[g]);
                }
            }
        }
        if let Some(ns) = self.link_line_ns
            && remote_moved > 0
        {
            let start = self.link_busy_until.max(now);
            self.link_busy_until = start + remote_moved * ns;
            done_at = done_at.max(self.link_busy_until);
        }
        let stall = latency.max(done_at - now);
        stats.add(Stat::NumaStallTime, stall);
        stall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(groups: u32, placement: Placement) -> Server {
        Server {
            groups,
            cores_per_group: 1,
            local_latency: 100,
            remote_latency: 300,
            placement,
            ..Server::default()
        }
    }

    #[test]
    fn interleaved_private_memory_is_remote_n_minus_1_in_n() {
        let mut n = Numa::new(server(4, Placement::Interleaved), false, 64, 8192);
        let mut st = Stats::default();
        n.add_proc(0, None);
        let stall = n.stall(0, 0, &[(Lines::Striped, 400)], &[], &mut st);
        assert_eq!(st.get(Stat::NumaRemoteAccesses), 300);
        assert_eq!(st.get(Stat::NumaLocalAccesses), 100);
        assert_eq!(
            stall,
            100 * 100 + 300 * 300,
            "latency-bound: no bandwidth given"
        );
        let n = Numa::new(server(4, Placement::FirstTouch), false, 64, 8192);
        let at = n.private_lines(2);
        assert_eq!(at, Lines::In(2), "first touch: private memory is local");
    }

    #[test]
    fn a_full_link_makes_a_step_wait_for_its_turn() {
        let mut sv = server(2, Placement::FirstTouch);
        // 64 bytes at 640 MB/s: 100 ns a line on the link.
        sv.link_bandwidth = Some(640_000_000);
        let mut n = Numa::new(sv, false, 64, 8192);
        let mut st = Stats::default();
        // 10 remote lines: latency 3,000 ns, link 1,000 ns: latency-bound.
        assert_eq!(n.stall(0, 0, &[(Lines::In(1), 10)], &[], &mut st), 3_000);
        // A block's 128 lines moved by DMA cost no latency of the CPU's own,
        // only the link's queue: behind the 1,000 ns queued, its 12,800 ns.
        let t = n.stall(0, 0, &[], &[(1, 128)], &mut st);
        assert_eq!(
            t,
            1_000 + 12_800,
            "behind the 10 lines queued, then its own 128"
        );
    }

    #[test]
    fn a_remote_write_costs_its_lines_remote_and_crosses_the_link() {
        let mut sv = server(2, Placement::FirstTouch);
        // 100 ns a line on the link.
        sv.link_bandwidth = Some(640_000_000);
        let mut n = Numa::new(sv, false, 64, 4096);
        let mut st = Stats::default();
        // One block of group 0 written by a process of group 0: 4 lines local.
        let local = n.write(0, 0, &[1, 0], 4, true, &mut st);
        assert_eq!(local, 4 * 100);
        assert_eq!(st.get(Stat::NumaRemoteWrites), 0);
        // One block of group 1: 4 remote lines, and its 64 lines on the link
        // (6,400 ns) behind the 4 (400 ns): the queue, not the latency, bounds it.
        let remote = n.write(1_000_000, 0, &[0, 1], 4, true, &mut st);
        assert_eq!(remote, (4 + 64) * 100);
        assert_eq!(st.get(Stat::NumaRemoteWrites), 1);
        // Without the transfer (the writer only reads): latency only.
        let read = n.write(2_000_000, 0, &[0, 1], 4, false, &mut st);
        assert_eq!(read, 4 * 300);
    }

    #[test]
    fn numa_support_takes_free_buffers_of_the_own_group() {
        let mut n = Numa::new(server(4, Placement::FirstTouch), true, 64, 8192);
        // Slots placed by their first toucher's group while it has room.
        assert_eq!(n.buffer_group(0, 3), 3);
        assert_eq!(n.buffer_group(1, 3), 3);
        assert!(n.prefers(0, 3) && !n.prefers(0, 1));
        // Without support: slot `b` lives in group `b mod n`, any is taken.
        let mut plain = Numa::new(server(4, Placement::FirstTouch), false, 64, 8192);
        assert_eq!(plain.buffer_group(5, 3), 1);
        assert!(plain.prefers(5, 3));
    }
}
