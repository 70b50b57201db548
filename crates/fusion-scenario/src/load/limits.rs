//! The model's limits on sizes: what it stores in fixed-width types (block
//! addresses, pin counts, row slots) and the knobs whose cost grows faster
//! than the run is worth (leaf sizes, CPU hogs, the timeline). The readers
//! check each key against its limit; this file holds the limits, their
//! reasons (quoted in the messages), and the checks that need the whole
//! schema or every workload at once.

use fusion_core::config::{Catalog, IndexKind, NS_PER_S, Nanos, WorkloadSpec};

use super::problems::Validator;
pub(super) use crate::sizes::grouped;
use crate::sizes::{Segment, segment_sizes};
use crate::tree::{KeyPath, Node};

/// Blocks of the whole schema: a block address is a `u32` (`BlockAddr`).
pub(super) const BLOCKS_MAX: u64 = u32::MAX as u64;
/// Rows of a table and the ends of a key range. Sequential keys are drawn
/// as `position x keys / sessions` in 64 bits, with up to 960,000 sessions
/// (64 instances x `SESSIONS_PER_INSTANCE_MAX`, about 2^22): 2^40 keys keep
/// that product below 2^64. (Far more rows than memory holds anyway.)
pub(super) const KEYS_MAX: i64 = 1 << 40;
pub(super) const KEYS_WHY: &str = "keys are 40-bit so that drawing sequential keys over every session stays within 64-bit arithmetic";
/// Entries (or bitmap pieces) per index leaf and branch. A 32 KB block holds
/// at most about 2,700 of the smallest B-tree entries; every copy of a leaf
/// (a CR build, a shipped block, an insert) copies all of it, so the run's
/// time grows with the leaf's size times the transfers (1,000,000 took over
/// 120 s where 250 takes 1 s). 10,000 leaves room for compressed keys.
pub(super) const ENTRIES_MAX: u32 = 10_000;
pub(super) const ENTRIES_WHY: &str = "a 32 KB block holds fewer than 3,000 index entries, and every copy of a block copies all of them";
/// Sessions of one instance, all workloads together. A buffer's pin count
/// is 16-bit (`Buffer::pins`, at most 65,535) and every session and PX
/// server (up to 3,600) may pin the same buffer.
pub(super) const SESSIONS_PER_INSTANCE_MAX: u32 = 60_000;
pub(super) const SESSIONS_WHY: &str = "a buffer's pin count is 16-bit and every session and PX server of an instance may pin the same buffer";
/// CPU hogs of one `stress_cpu` fault. stress-ng runs a few workers per
/// CPU; 10,000 is ten per CPU at the largest `cpu_count`. The run queue's
/// work grows with the square of the hogs (100,000 took 21 s for 0.1 s of
/// cluster time).
pub(super) const WORKERS_MAX: u32 = 10_000;
pub(super) const WORKERS_WHY: &str = "ten hogs per CPU at the largest cpu_count; the run queue's work grows with the square of the hogs";
/// Sequences: each has a row in the SEQ$ block, whose row slots are 16-bit.
pub(super) const SEQUENCES_MAX: usize = 1 << 16;
/// The timeline, all phases together: one day. AWR comparisons span hours;
/// the simulator's time grows with the cluster time (the CPU starvation
/// myth simulates about 75 s per wall second) and the store keeps every
/// redo record, so memory grows with it too (estimated before a run).
pub(super) const TIMELINE_NS_MAX: Nanos = 86_400 * NS_PER_S;
pub(super) const TIMELINE_WHY: &str =
    "one day of cluster time; the run's time and the redo it keeps grow with the timeline";
/// CPU of one operation (`[costs]`): one second. No single buffer get,
/// row change or message takes that long; the model multiplies costs by
/// counts (rows examined, undo records, blocks, PX rows), which must stay
/// within its 64-bit nanosecond clock.
pub(super) const COST_NS_MAX: Nanos = NS_PER_S;
pub(super) const COST_WHY: &str = "no single operation takes a second of CPU, and costs are multiplied by counts of rows and blocks in 64-bit nanoseconds";
/// CPU per row (`row_examined_us`, `px_row_send_us`, `px_row_receive_us`):
/// one millisecond, thousands of times what a row costs (0.05 to 0.25 us by
/// default). These multiply a table's rows at once (a serial scan, a
/// sort's comparisons, about rows x 40 for a billion rows), which must stay
/// within 64-bit nanoseconds.
pub(super) const ROW_COST_NS_MAX: Nanos = NS_PER_S / 1000;
pub(super) const ROW_COST_WHY: &str = "a row costs well under a microsecond, and per-row costs are multiplied by a table's rows (a sort's comparisons) in 64-bit nanoseconds";
/// Slowest link: 1 Mbit/s. Slower, a shipped block takes seconds on the
/// wire, and the queue of messages waiting on one link (PX producers may
/// send three buffers to every consumer at once) must stay within the
/// 64-bit nanosecond clock.
pub(super) const RATE_BPS_MIN: f64 = 1e6;
pub(super) const RATE_WHY: &str = "slower, a 32 KB block takes a quarter of a second on the wire, and a link's queue of messages must stay within 64-bit nanoseconds";
/// A GCS message without a block: at most 64 KB, the largest UDP datagram
/// (AWR assumes 200 bytes); with `RATE_BPS_MIN` it keeps a message's
/// serialization under a second.
pub(super) const MESSAGE_BYTES_MAX: u32 = 65_536;
pub(super) const MESSAGE_WHY: &str = "the largest UDP datagram";
/// Locality groups of a server: the memory model keeps a line count per
/// group for every CPU step on the stack.
pub(super) const GROUPS_MAX: u32 = 64;
pub(super) const GROUPS_WHY: &str = "the memory model counts a step's lines per group in a fixed array of 64 (the largest NUMA servers have 64 boards or sockets)";
/// Hardware threads per core: the largest CMT core (SPARC T-series) has 8.
pub(super) const THREADS_PER_CORE_MAX: u32 = 8;
pub(super) const THREADS_WHY: &str =
    "the largest chip-multithreading core (UltraSPARC T2) runs 8 threads";
/// One cache line's latency: a millisecond is a thousand times any real machine's.
pub(super) const LATENCY_NS_MAX: u32 = 1_000_000;
pub(super) const LATENCY_WHY: &str = "a cache line comes in well under a microsecond on any machine, and latencies are multiplied by the lines of every step in 64-bit nanoseconds";
/// Memory writes in one `memory_writes` step (one CPU step).
pub(super) const MEMORY_OPS_MAX: u32 = 1_000_000;
pub(super) const MEMORY_OPS_WHY: &str = "one step is one CPU step: a million writes already take tens of milliseconds; repeat the step for more";
/// Lines one buffer get misses, per kind of memory.
pub(super) const LINES_PER_GET_MAX: u32 = 1024;
pub(super) const LINES_WHY: &str =
    "an 8 KB buffer is 128 lines; each line a get touches is counted per step";

/// The `n`-th element of an array of tables at the root (`[[table]]`, ...).
fn nth_item<'n>(root: &'n Node, section: &str, n: usize) -> Option<&'n Node> {
    match &root.as_table()?.get(section)?.node.val {
        crate::tree::Val::Array(items) => items.get(n),
        _ => None,
    }
}

/// A key of a table node.
fn key_of<'n>(item: &'n Node, key: &str) -> Option<&'n Node> {
    item.as_table()?.get(key).map(|e| &e.node)
}

impl Validator<'_> {
    /// The limits that need the whole schema or every workload at once.
    /// Called only on a variant without other problems, so the catalog's
    /// positions are the file's.
    pub(super) fn check_limits(
        &mut self,
        root: &Node,
        instance_count: u8,
        catalog: &Catalog,
        workloads: &[WorkloadSpec],
    ) {
        self.check_blocks(root, instance_count, catalog);
        self.check_bitmap_chunks(root, catalog);
        self.check_sessions(root, instance_count, workloads);
        if catalog.sequences.len() > SEQUENCES_MAX {
            let path = KeyPath::root().key("sequence").index(SEQUENCES_MAX);
            if let Some(node) = nth_item(root, "sequence", SEQUENCES_MAX) {
                self.err(
                    node,
                    &path,
                    format!(
                        "{} sequences, at most {}: each has a row in the SEQ$ block, whose row slots are 16-bit",
                        grouped(catalog.sequences.len() as u64),
                        grouped(SEQUENCES_MAX as u64)
                    ),
                );
            }
        }
    }

    /// Every block of the schema needs a 32-bit address. Reported at the
    /// largest segment, on the key that gives it most of its blocks.
    fn check_blocks(&mut self, root: &Node, instance_count: u8, catalog: &Catalog) {
        let sizes = segment_sizes(catalog, u64::from(instance_count));
        let total = sizes
            .iter()
            .fold(0u64, |sum, s| sum.saturating_add(s.blocks()));
        if total <= BLOCKS_MAX {
            return;
        }
        let Some(big) = sizes.iter().max_by_key(|s| s.blocks()) else {
            return;
        };
        let limit = format!(
            "the schema needs {} blocks in all, and block addresses are 32-bit: at most {}",
            grouped(total),
            grouped(BLOCKS_MAX)
        );
        match big.segment {
            Segment::Table(t) => {
                let Some(def) = catalog.tables.get(t) else {
                    return;
                };
                let key = if big.free > big.formatted {
                    "free_blocks_per_instance"
                } else {
                    "rows"
                };
                let message = format!(
                    "table `{}` needs {} blocks ({} for {} rows at rows_per_block = {}, {} free for {} instance{}); {limit}",
                    def.name,
                    grouped(big.blocks()),
                    grouped(big.formatted),
                    grouped(def.rows),
                    def.rows_per_block,
                    grouped(big.free),
                    instance_count,
                    if instance_count == 1 { "" } else { "s" },
                );
                self.err_at_item(root, "table", t, key, message);
            }
            Segment::Index(i) => {
                let Some(def) = catalog.indexes.get(i) else {
                    return;
                };
                let key = if big.free > big.formatted {
                    "free_blocks_per_instance"
                } else if def.kind == IndexKind::Bitmap {
                    "rows_per_piece"
                } else {
                    "entries_per_leaf"
                };
                let message = format!(
                    "index `{}` needs {} blocks ({} for {} {} at {} per leaf, {} free); {limit}",
                    def.name,
                    grouped(big.blocks()),
                    grouped(big.formatted),
                    grouped(big.items),
                    if def.kind == IndexKind::Bitmap {
                        "bitmap pieces"
                    } else {
                        "entries"
                    },
                    def.entries_per_leaf,
                    grouped(big.free),
                );
                self.err_at_item(root, "index", i, key, message);
            }
            Segment::SeqDollar => {}
        }
    }

    /// A problem about the `n`-th `[[section]]`, at `key` when the file gives
    /// it, else at the table itself.
    fn err_at_item(&mut self, root: &Node, section: &str, n: usize, key: &str, message: String) {
        let Some(item) = nth_item(root, section, n) else {
            return;
        };
        let path = KeyPath::root().key(section).index(n);
        match key_of(item, key) {
            Some(node) => self.err(node, &path.key(key), message),
            None => self.err(item, &path, message),
        }
    }

    /// A bitmap piece's chunk is a `u32` (`Piece::chunk`), and its position
    /// in the index packs the value and the chunk in 32 bits each.
    fn check_bitmap_chunks(&mut self, root: &Node, catalog: &Catalog) {
        for (i, ix) in catalog.indexes.iter().enumerate() {
            let Some(table) = catalog.tables.get(ix.table) else {
                continue;
            };
            if ix.kind != IndexKind::Bitmap {
                continue;
            }
            let chunks = table.rows.div_ceil(u64::from(ix.rows_per_piece.max(1)));
            if chunks > u64::from(u32::MAX) {
                let message = format!(
                    "{} rows of `{}` in pieces of {} rows make {} chunks; a piece's chunk number is 32-bit: at most {} (raise rows_per_piece)",
                    grouped(table.rows),
                    table.name,
                    grouped(u64::from(ix.rows_per_piece)),
                    grouped(chunks),
                    grouped(u64::from(u32::MAX))
                );
                self.err_at_item(root, "index", i, "rows_per_piece", message);
            }
        }
    }

    /// Sessions of one instance, all workloads running there together.
    fn check_sessions(&mut self, root: &Node, instance_count: u8, workloads: &[WorkloadSpec]) {
        for instance in 1..=instance_count {
            let mut sum = 0u64;
            for (w, spec) in workloads.iter().enumerate() {
                if !spec.instances.contains(&instance) {
                    continue;
                }
                sum += u64::from(spec.sessions_per_instance);
                if sum > u64::from(SESSIONS_PER_INSTANCE_MAX) {
                    let message = format!(
                        "instance {instance} would run {} sessions with workload `{}`'s; at most {} per instance, all workloads together: {SESSIONS_WHY}",
                        grouped(sum),
                        spec.name,
                        grouped(u64::from(SESSIONS_PER_INSTANCE_MAX))
                    );
                    self.err_at_item(root, "workload", w, "sessions_per_instance", message);
                    return;
                }
            }
        }
    }
}
