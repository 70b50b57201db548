//! How much memory a run needs at its peak, estimated from the scenario's
//! sizes before it runs, so `fusionlab` can refuse a run the machine cannot
//! hold instead of dying in the middle of it.
//!
//! The parts are what the simulator keeps: the datafile images (every block
//! with its rows or entries), each instance's per-block maps and buffer
//! cache, sessions and processes, what parallel statements hold (the rows
//! they hash or sort, a table-queue buffer per producer and consumer), and
//! what grows with the timeline (every redo record the store keeps, the
//! sequence values handed out) and under `--check` the rows written. The
//! constants below are calibrated against the maximum resident set size of
//! real runs (docs/benchmarks.md, "Memory estimate"). Each part is an upper
//! bound of its kind: transactions at the rate the CPUs and the sessions'
//! think times and commits allow, every copy of a changed block a cache may
//! hold, so the estimate errs high.

use fusion_core::config::{Access, Catalog, IndexKind, Params, Step};
use fusion_core::px::{Degree, DegreePolicy, PxPlan, PxQuery};

use crate::model::{Fault, LoadedScenario, Scenario};
use crate::sizes::{Segment, SegmentSize, grouped, segment_sizes};

mod part;
mod timeline;

pub use part::MemoryPart;
use part::to_u64;
use timeline::{Churn, timeline_part};

/// The program itself: code, the embedded scenarios, the allocator's start.
const PROGRAM: u64 = 12 << 20;
/// A block image without its contents (`Block`: address, SCN, body, ITL,
/// undo), and the allocator's share of the contents of a formatted one.
const BLOCK: u64 = 136;
const ALLOC: u64 = 48;
/// One row slot of a table block (`Option<Row>`).
const ROW: u64 = 32;
/// One entry of a B-tree leaf (`LeafEntry`).
const ENTRY: u64 = 32;
/// One entry of a branch (key and child).
const BRANCH_ENTRY: u64 = 16;
/// One bitmap piece without its bits (`Piece`), and one set bit (a key).
const PIECE: u64 = 48;
const BIT: u64 = 8;
/// An undo record a changed block carries (`UndoRec`, with its ITL
/// entry's share), in every copy of the block; a block keeps at most
/// `UNDO_RECORDS_MAX` of them.
const UNDO: u64 = 64;
const UNDO_RECORDS_MAX: u64 = 32;
/// Each instance's maps from a block to its buffers (chain head, current).
const BLOCK_MAP: u64 = 8;
/// A buffer beyond its image: the `Buffer` in its slot (168 bytes), its LRU
/// link (12), its reusable mark (1) and up to two checkpoint-queue entries
/// (16 each), rounded up.
const BUFFER: u64 = 240;
/// Copies of a changed block one cache may hold: the current one, a past
/// image and `CR_PER_BLOCK_MAX` (6) consistent-read copies; without
/// readers that want a consistent read of it, the first two.
const COPIES_READ: u64 = 8;
const COPIES_UNREAD: u64 = 2;
/// A session or PX server: its state, process, name and run-queue entry.
const SESSION: u64 = 640;
/// A CPU hog's process (hogs of every phase stay in the process table).
const HOG: u64 = 128;
/// A row a parallel statement holds: a hash join's build and groups, a
/// sort's or an index build's runs (an aggregate holds none).
const PX_JOIN_ROW: u64 = 64;
const PX_SORT_ROW: u64 = 32;
/// A pair of producer and consumer: the table-queue buffer being filled and
/// the credits between them.
const PX_PAIR: u64 = 400;
/// The allocator's free chunks at the peak: one byte for every
/// `SLACK_DIVISOR` of live data.
const SLACK_DIVISOR: u64 = 10;
/// A statement's tkprof figures on one instance, and each phase's snapshot of
/// an instance's statistics.
const STATEMENT: u64 = 2 << 10;
const SNAPSHOT: u64 = 16 << 10;

/// The estimate of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    /// Bytes at the peak: the program and the largest variant (variants run
    /// one after the other).
    pub bytes: u64,
    /// The variant the peak comes from.
    pub variant: String,
    /// The variant's parts, largest first.
    pub parts: Vec<MemoryPart>,
}

/// The estimate of a loaded scenario's run on the simulator (`check`: with
/// `--check`).
pub fn estimate(loaded: &LoadedScenario, check: bool) -> MemoryEstimate {
    let mut best = MemoryEstimate {
        bytes: PROGRAM,
        variant: String::new(),
        parts: Vec::new(),
    };
    for v in &loaded.variants {
        let parts = estimate_parts(&v.scenario, check);
        let bytes = parts.iter().fold(PROGRAM, |s, p| s.saturating_add(p.bytes));
        if best.variant.is_empty() || bytes > best.bytes {
            best = MemoryEstimate {
                bytes,
                variant: v.name.clone(),
                parts,
            };
        }
    }
    best
}

/// The parts of one variant, largest first.
pub fn estimate_parts(s: &Scenario, check: bool) -> Vec<MemoryPart> {
    let n = s.instances.len() as u64;
    let sizes = segment_sizes(&s.catalog, n);
    let (timeline, churn) = timeline_part(s, &sizes);
    let visits = visit_rates(s, &sizes);
    let segments: Vec<SegmentMemory> = sizes
        .iter()
        .zip(visits)
        .map(|(size, v)| SegmentMemory::of(s, size, &churn, v))
        .collect();
    let blocks = sizes.iter().fold(0u64, |t, x| t.saturating_add(x.blocks()));
    let mut parts = vec![
        store_part(&s.catalog, &segments, blocks),
        MemoryPart {
            what: format!("block maps ({} blocks x {n} instances)", grouped(blocks)),
            bytes: blocks
                .saturating_mul(n)
                .saturating_mul(BLOCK_MAP + if check { 2 * BLOCK_MAP } else { 0 }),
            lower: "the schema's blocks (tables' rows, free_blocks_per_instance)".to_string(),
        },
        cache_part(s, &segments),
        process_part(s),
        px_part(s),
        timeline,
        statistics_part(s),
    ];
    if check {
        parts.push(timeline::check_part(s, &churn));
    }
    // What the allocator holds beyond the live data: freed chunks it has not
    // returned, on each thread's arena. Block contents are copied on write
    // and dropped all run long, so that is about a tenth of the rest at the
    // peak (docs/benchmarks.md, "Memory estimate").
    let live = parts.iter().fold(0u64, |t, p| t.saturating_add(p.bytes));
    parts.push(MemoryPart {
        what: "allocator's free chunks (a tenth of the rest)".to_string(),
        bytes: live / SLACK_DIVISOR,
        lower: "the sizes above".to_string(),
    });
    parts.retain(|p| p.bytes > 0);
    parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    parts
}

/// Slots a vector built by pushing `n` items has (it doubles from 4).
fn slots(n: u64) -> u64 {
    n.max(4).checked_next_power_of_two().unwrap_or(n)
}

/// One segment in memory: its blocks by kind and what one of each weighs.
struct SegmentMemory {
    segment: Segment,
    /// A full block (rows, leaf entries, pieces) and any other (a header, a
    /// branch), each with its contents.
    full: u64,
    other: u64,
    /// Formatted blocks: full ones (free blocks inserts or splits filled
    /// included) and others.
    fulls: u64,
    others: u64,
    /// Free blocks still unformatted.
    unformatted: u64,
    /// Blocks the run changes at most (a cache may hold several copies of
    /// each), and the undo records they carry at most.
    changed: u64,
    undo: u64,
    /// Copies of a changed block a cache may hold.
    copies: u64,
    /// Bits of a bitmap index, outside its blocks' own size.
    extra: u64,
    /// How often sessions visit its blocks through the cache, relative to
    /// the other segments (parallel queries read straight from the
    /// datafiles: a table only they read is never visited).
    visits: f64,
}

impl SegmentMemory {
    fn of(s: &Scenario, size: &SegmentSize, churn: &Churn, visits: f64) -> SegmentMemory {
        let catalog = &s.catalog;
        let n = s.instances.len() as u64;
        let formatted_others = size.formatted.saturating_sub(size.leaves);
        let mut m = SegmentMemory {
            segment: size.segment,
            full: BLOCK,
            other: BLOCK,
            fulls: size.leaves,
            others: formatted_others,
            unformatted: size.free,
            changed: 0,
            undo: 0,
            copies: if read_consistently(s, size.segment) {
                COPIES_READ
            } else {
                COPIES_UNREAD
            },
            extra: 0,
            visits,
        };
        // Free blocks an insert or a split formats, at most: every instance
        // starts its own, then one per `per_block` rows.
        let fill = |m: &mut SegmentMemory, rows: f64, per_block: u64| {
            if rows > 0.0 {
                let filled = to_u64(rows / per_block.max(1) as f64).saturating_add(n);
                let filled = filled.min(size.free);
                m.fulls = m.fulls.saturating_add(filled);
                m.unformatted -= filled;
                m.changed = m.changed.saturating_add(filled);
            }
        };
        match size.segment {
            Segment::Table(t) => {
                let Some(def) = catalog.tables.get(t) else {
                    return m;
                };
                let rpb = u64::from(def.rows_per_block);
                m.full = BLOCK + ALLOC + slots(rpb.min(size.items.max(1))) * ROW;
                m.other = BLOCK + ALLOC;
                let updated = churn.updated.get(t).copied().unwrap_or(0.0);
                let inserted = churn.inserted.get(t).copied().unwrap_or(0.0);
                m.changed = size.leaves.min(to_u64(updated));
                fill(&mut m, inserted, rpb);
                m.undo = to_u64(updated + inserted);
            }
            Segment::Index(i) => {
                let Some(ix) = catalog.indexes.get(i) else {
                    return m;
                };
                let per_leaf = u64::from(ix.entries_per_leaf).min(size.items.max(1));
                m.other = BLOCK + ALLOC + u64::from(ix.entries_per_branch) * BRANCH_ENTRY;
                let updated = churn.updated.get(ix.table).copied().unwrap_or(0.0);
                let inserted = churn.inserted.get(ix.table).copied().unwrap_or(0.0);
                let maintained = ix.includes_value || ix.kind == IndexKind::Bitmap;
                // An update of a bitmap-indexed value changes two pieces.
                let entries = inserted + if maintained { 2.0 * updated } else { 0.0 };
                m.changed = size.formatted.min(to_u64(entries));
                m.undo = to_u64(entries);
                match ix.kind {
                    IndexKind::BTree => {
                        m.full = BLOCK + ALLOC + slots(per_leaf) * ENTRY;
                        // A split leaves two half-full leaves.
                        fill(&mut m, inserted, (per_leaf / 2).max(1));
                    }
                    IndexKind::Bitmap => {
                        let rows = catalog.tables.get(ix.table).map_or(0, |t| t.rows);
                        let bits_per_leaf = rows.div_ceil(size.leaves.max(1)) * BIT;
                        m.full = BLOCK + ALLOC + slots(per_leaf) * PIECE + bits_per_leaf;
                        m.extra = rows.saturating_mul(BIT);
                    }
                }
            }
            Segment::SeqDollar => {
                m.full = BLOCK + ALLOC + slots(size.items) * ROW;
                m.changed = u64::from(churn.nextvals > 0.0);
                m.undo = to_u64(churn.nextvals);
            }
        }
        m.undo = m.undo.min(m.changed.saturating_mul(UNDO_RECORDS_MAX));
        m
    }

    /// Bytes of the segment in the datafiles.
    fn store(&self) -> u64 {
        self.fulls
            .saturating_mul(self.full)
            .saturating_add(self.others.saturating_mul(self.other))
            .saturating_add(self.unformatted.saturating_mul(BLOCK))
            .saturating_add(self.undo.saturating_mul(UNDO))
            .saturating_add(self.extra)
    }

    /// Buffers a cache may hold of the segment, and their bytes: one copy of
    /// each block, more of a changed one (each with its undo). A block no
    /// workload changes shares its contents with its datafile image in
    /// every cache (`Block::body` is copied on write only), so its buffer
    /// weighs the buffer and the image's header alone; each copy of a
    /// changed block may hold contents of its own.
    fn buffers(&self) -> (u64, u64) {
        if self.visits <= 0.0 {
            return (0, 0);
        }
        let count = self
            .fulls
            .saturating_add(self.others)
            .saturating_add(self.changed.saturating_mul(self.copies - 1));
        let contents = {
            let all = self.fulls.saturating_add(self.others).max(1);
            self.fulls
                .saturating_mul(self.full.saturating_sub(BLOCK))
                .saturating_add(self.others.saturating_mul(self.other.saturating_sub(BLOCK)))
                / all
        };
        let owned = self.changed.saturating_mul(self.copies).min(count);
        let bytes = count
            .saturating_mul(BUFFER + BLOCK)
            .saturating_add(owned.saturating_mul(contents))
            .saturating_add(self.undo.saturating_mul(self.copies).saturating_mul(UNDO));
        (count, bytes)
    }
}

/// How often sessions visit each segment's blocks through the cache, in
/// block visits per transaction summed over the workloads' sessions: an
/// index lookup visits every level of the index and a table block, a full
/// scan every block of the table, an insert a table block and every level
/// of each index on the table, a count two blocks of the bitmap index.
fn visit_rates(s: &Scenario, sizes: &[SegmentSize]) -> Vec<f64> {
    let position = |seg: Segment| sizes.iter().position(|x| x.segment == seg);
    let height = |seg: Segment| {
        position(seg)
            .and_then(|i| sizes.get(i))
            .map_or(1.0, |x| x.height as f64)
    };
    let mut rates = vec![0.0; sizes.len()];
    let mut add = |seg: Segment, visits: f64| {
        if let Some(r) = position(seg).and_then(|i| rates.get_mut(i)) {
            *r += visits;
        }
    };
    for w in &s.workloads {
        let sessions = f64::from(w.sessions_per_instance) * w.instances.len() as f64;
        let total: f64 = w
            .transactions
            .iter()
            .map(|t| f64::from(t.weight.max(1)))
            .sum();
        for t in &w.transactions {
            let share = sessions * f64::from(t.weight.max(1)) / total.max(1.0);
            for step in &t.steps {
                match step {
                    Step::Read {
                        table,
                        access,
                        rows,
                        ..
                    }
                    | Step::Update {
                        table,
                        access,
                        rows,
                        ..
                    } => {
                        let r = f64::from(*rows) * share;
                        match access {
                            Access::Index(ix) => {
                                let seg = Segment::Index(*ix);
                                add(seg, r * height(seg));
                                add(Segment::Table(*table), r);
                            }
                            Access::FullScan => {
                                let blocks = position(Segment::Table(*table))
                                    .and_then(|i| sizes.get(i))
                                    .map_or(1.0, |x| x.formatted as f64);
                                add(Segment::Table(*table), share * blocks);
                            }
                        }
                        if let Step::Update { table, .. } = step {
                            for (i, ix) in s.catalog.indexes.iter().enumerate() {
                                let maintained = ix.includes_value || ix.kind == IndexKind::Bitmap;
                                if ix.table == *table && maintained {
                                    add(Segment::Index(i), 2.0 * r);
                                }
                            }
                        }
                    }
                    Step::Insert { table, rows } | Step::InsertSeq { table, rows, .. } => {
                        let r = f64::from(*rows) * share;
                        add(Segment::Table(*table), r);
                        for (i, ix) in s.catalog.indexes.iter().enumerate() {
                            if ix.table == *table {
                                let seg = Segment::Index(i);
                                add(seg, r * height(seg));
                            }
                        }
                        if let Step::InsertSeq { .. } = step {
                            add(Segment::SeqDollar, r);
                        }
                    }
                    Step::NextVal { rows, .. } => {
                        add(Segment::SeqDollar, f64::from(*rows) * share);
                    }
                    Step::Count { index, rows, .. } => {
                        add(Segment::Index(*index), 2.0 * f64::from(*rows) * share);
                    }
                    Step::ParallelQuery(_)
                    | Step::Commit
                    | Step::Think { .. }
                    | Step::MemoryWrites { .. } => {}
                }
            }
        }
    }
    rates
}

/// Whether a session may want a consistent read of a block of `seg` it
/// does not hold current: a read of the table, any use of an index (an
/// insert descends it in CR mode), SEQ$ (read by every `nextval`).
fn read_consistently(s: &Scenario, seg: Segment) -> bool {
    match seg {
        Segment::Table(t) => s
            .workloads
            .iter()
            .flat_map(|w| w.transactions.iter().flat_map(|x| x.steps.iter()))
            .any(|st| matches!(st, Step::Read { table, .. } if *table == t)),
        Segment::Index(_) | Segment::SeqDollar => true,
    }
}

/// The name of a segment and the keys that size it.
fn segment_keys(catalog: &Catalog, seg: Segment) -> String {
    match seg {
        Segment::Table(t) => catalog.tables.get(t).map_or(String::new(), |d| {
            format!(
                "table `{}` (rows, rows_per_block, free_blocks_per_instance)",
                d.name
            )
        }),
        Segment::Index(i) => catalog.indexes.get(i).map_or(String::new(), |d| {
            if d.kind == IndexKind::Bitmap {
                format!(
                    "bitmap index `{}` (its table's rows and distinct_values, rows_per_piece)",
                    d.name
                )
            } else {
                format!(
                    "index `{}` (its table's rows, entries_per_leaf, free_blocks_per_instance)",
                    d.name
                )
            }
        }),
        Segment::SeqDollar => "the sequences".to_string(),
    }
}

/// The datafile images the store holds.
fn store_part(catalog: &Catalog, segments: &[SegmentMemory], blocks: u64) -> MemoryPart {
    let mut per: Vec<(u64, Segment)> = segments.iter().map(|m| (m.store(), m.segment)).collect();
    let bytes = per.iter().fold(0u64, |t, p| t.saturating_add(p.0));
    per.sort_by_key(|p| std::cmp::Reverse(p.0));
    let lower: Vec<String> = per
        .iter()
        .take(2)
        .map(|(_, seg)| segment_keys(catalog, *seg))
        .collect();
    MemoryPart {
        what: format!("datafile images ({} blocks)", grouped(blocks)),
        bytes,
        lower: lower.join("; "),
    }
}

/// Each instance's buffer cache: at most `db_cache_size / db_block_size`
/// buffers of the blocks sessions visit (see [`SegmentMemory::buffers`]).
/// When they do not all fit, the cache holds what was visited last: with
/// the least recently used going first, a segment of `n` buffers visited
/// at rate `r` keeps about `n (1 - e^(-r T / n))` of them, where `T` is the
/// time a buffer stays after its last visit and the kept buffers fill the
/// cache (Che's approximation of an LRU cache). Small, often visited
/// segments (an index's leaves) stay; large, rarely visited ones share
/// what is left.
fn cache_part(s: &Scenario, segments: &[SegmentMemory]) -> MemoryPart {
    // Per segment: buffers, bytes of one, visits.
    let groups: Vec<(f64, f64, f64)> = segments
        .iter()
        .filter(|m| m.visits > 0.0)
        .map(|m| {
            let (count, bytes) = m.buffers();
            let each = bytes.checked_div(count).unwrap_or(0);
            (count as f64, each as f64, m.visits)
        })
        .filter(|g| g.0 > 0.0)
        .collect();
    let kept = |t: f64| -> (f64, f64) {
        groups
            .iter()
            .fold((0.0, 0.0), |(n, b), &(count, each, rate)| {
                let k = count * (1.0 - (-rate * t / count).exp());
                (n + k, b + k * each)
            })
    };
    let all: f64 = groups.iter().map(|g| g.0).sum();
    let mut bytes = 0u64;
    let mut buffers_max = 0u64;
    for p in &s.instances {
        let capacity = p.buffers().max(16) as f64;
        let held = if all <= capacity {
            groups.iter().map(|g| g.0 * g.1).sum()
        } else {
            // The kept buffers grow with `T`: find where they fill the cache.
            let (mut lo, mut hi) = (0.0f64, 1.0f64);
            while kept(hi).0 < capacity && hi < 1e300 {
                hi *= 2.0;
            }
            for _ in 0..100 {
                let mid = (lo + hi) / 2.0;
                if kept(mid).0 < capacity {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            kept(hi).1
        };
        buffers_max = buffers_max.max(to_u64(all.min(capacity)));
        bytes = bytes.saturating_add(to_u64(held));
    }
    MemoryPart {
        what: format!(
            "buffer caches ({} instances, up to {} buffers each)",
            s.instances.len(),
            grouped(buffers_max)
        ),
        bytes,
        lower: "parameters.db_cache_size, or the tables' rows".to_string(),
    }
}

/// Each instance's tkprof figures per statement, and the snapshot of its
/// statistics each phase keeps for the report.
fn statistics_part(s: &Scenario) -> MemoryPart {
    let n = s.instances.len() as u64;
    let statements: u64 = s
        .workloads
        .iter()
        .flat_map(|w| w.transactions.iter())
        .map(|t| t.steps.len() as u64)
        .sum();
    let snapshots = (s.phases.len() as u64 + 1).saturating_mul(n);
    MemoryPart {
        what: format!(
            "statistics ({} statements, {} snapshots)",
            grouped(statements),
            grouped(snapshots)
        ),
        bytes: statements
            .saturating_mul(n)
            .saturating_mul(STATEMENT)
            .saturating_add(
                snapshots.saturating_mul(SNAPSHOT + statements.saturating_mul(STATEMENT)),
            ),
        lower: "the workloads' steps, the phases".to_string(),
    }
}

/// Every instance's parameters at start and after each phase's changes.
fn params_over_time(s: &Scenario) -> Vec<Vec<Params>> {
    let mut running = s.instances.clone();
    let mut out = vec![running.clone()];
    for phase in &s.phases {
        for (instance, name, value) in &phase.parameters {
            if let Some(p) = running.get_mut(usize::from(*instance).saturating_sub(1)) {
                let _ = p.set(name, value);
            }
        }
        out.push(running.clone());
    }
    out
}

/// The most PX servers each instance may start, over the run.
fn max_servers(s: &Scenario) -> Vec<u64> {
    let mut out = vec![0u64; s.instances.len()];
    for ps in params_over_time(s) {
        for (m, p) in out.iter_mut().zip(&ps) {
            *m = (*m).max(u64::from(p.px.max_servers(p.cpu_count)));
        }
    }
    out
}

/// Sessions, PX servers and CPU hogs.
fn process_part(s: &Scenario) -> MemoryPart {
    let sessions: u64 = s
        .workloads
        .iter()
        .map(|w| u64::from(w.sessions_per_instance).saturating_mul(w.instances.len() as u64))
        .sum();
    let servers: u64 = max_servers(s).iter().sum();
    let hogs: u64 = s
        .phases
        .iter()
        .flat_map(|p| p.faults.iter())
        .map(|f| match f {
            Fault::StressCpu { workers, .. } => u64::from(*workers),
            _ => 0,
        })
        .sum();
    MemoryPart {
        what: format!(
            "processes ({} sessions, up to {} PX servers, {} CPU hogs)",
            grouped(sessions),
            grouped(servers),
            grouped(hogs)
        ),
        bytes: (sessions + servers)
            .saturating_mul(SESSION)
            .saturating_add(hogs.saturating_mul(HOG)),
        lower: "workloads' sessions_per_instance, parallel_max_servers, stress_cpu workers"
            .to_string(),
    }
}

/// The most DOP a query can get: what it asks for, within the servers of
/// every instance (two sets for a plan that redistributes rows).
fn dop_max(q: &PxQuery, s: &Scenario, servers: u64) -> u64 {
    let sets = u64::from(q.plan.sets().max(1));
    let asked = match q.degree {
        Degree::Fixed(d) => u64::from(d).saturating_mul(u64::from(q.instances.max(1))),
        Degree::Default => params_over_time(s)
            .iter()
            .map(|ps| {
                let cpu: u64 = ps
                    .iter()
                    .map(|p| u64::from(p.px.cpu_dop(p.cpu_count)))
                    .sum();
                let limit = ps
                    .iter()
                    .filter(|p| p.px.degree_policy != DegreePolicy::Manual)
                    .map(|p| u64::from(p.px.degree_limit(p.cpu_count)))
                    .max()
                    .unwrap_or(0);
                cpu.max(limit)
            })
            .max()
            .unwrap_or(1),
    };
    asked.min(servers / sets)
}

/// What parallel statements hold: each QC's rows (a serial plan holds them
/// all), and a buffer between every producer and consumer. Running
/// statements share the servers, so their pairs are at most the largest
/// DOP times the servers of one set. A statement may outlast its phase, so
/// each phase counts the workloads of the phase before it too.
fn px_part(s: &Scenario) -> MemoryPart {
    let servers: u64 = max_servers(s).iter().sum();
    // Per workload with parallel steps: its QCs, the most bytes of rows one
    // of its statements holds, its largest DOP and that query's sets.
    let mut per: Vec<(&str, u64, u64, u64, u64)> = Vec::new();
    let mut biggest: Option<(u64, String)> = None;
    for w in &s.workloads {
        let mut most = (0u64, 0u64, 1u64);
        let mut any = false;
        for t in &w.transactions {
            for st in &t.steps {
                let Step::ParallelQuery(q) = st else {
                    continue;
                };
                any = true;
                let rows = q.tables.iter().fold(0u64, |t, &i| {
                    t.saturating_add(s.catalog.tables.get(i).map_or(0, |d| d.rows))
                });
                let rows = rows.saturating_mul(match q.plan {
                    PxPlan::ScanAggregate => 0,
                    PxPlan::HashJoinGroupBy => PX_JOIN_ROW,
                    PxPlan::Sort | PxPlan::IndexBuild => PX_SORT_ROW,
                });
                let d = dop_max(q, s, servers);
                most.0 = most.0.max(rows);
                if d >= most.1 {
                    most.1 = d;
                    most.2 = u64::from(q.plan.sets().max(1));
                }
                let bytes = rows.saturating_add(d.saturating_mul(d).saturating_mul(PX_PAIR));
                if biggest.as_ref().is_none_or(|b| bytes > b.0) {
                    biggest = Some((bytes, q.name.clone()));
                }
            }
        }
        if any {
            let qcs = u64::from(w.sessions_per_instance).saturating_mul(w.instances.len() as u64);
            per.push((w.name.as_str(), qcs, most.0, most.1, most.2));
        }
    }
    let runs = |phase: &crate::model::Phase, name: &str| {
        phase
            .workloads
            .as_ref()
            .is_none_or(|l| l.iter().any(|x| x == name))
    };
    let mut bytes = 0u64;
    let (mut qcs_max, mut dop_top) = (0u64, 0u64);
    for (i, phase) in s.phases.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|j| s.phases.get(j));
        let live: Vec<&(&str, u64, u64, u64, u64)> = per
            .iter()
            .filter(|x| runs(phase, x.0) || before.is_some_and(|b| runs(b, x.0)))
            .collect();
        let qcs = live.iter().fold(0u64, |t, x| t.saturating_add(x.1));
        let rows = live
            .iter()
            .fold(0u64, |t, x| t.saturating_add(x.1.saturating_mul(x.2)));
        let (dop, sets) = live.iter().map(|x| (x.3, x.4)).max().unwrap_or((0, 1));
        // A set of producers sends to a set of consumers (or, one set, to the QC).
        let consumers = if sets >= 2 { dop } else { 1 };
        let running = qcs.saturating_mul(dop).min(servers / sets.max(1));
        let pairs = running.saturating_mul(consumers + 1);
        let here = rows.saturating_add(pairs.saturating_mul(PX_PAIR));
        if here > bytes {
            bytes = here;
        }
        qcs_max = qcs_max.max(qcs);
        dop_top = dop_top.max(dop);
    }
    MemoryPart {
        what: format!(
            "parallel queries ({} coordinators, DOP up to {})",
            grouped(qcs_max),
            grouped(dop_top)
        ),
        bytes,
        lower: match biggest {
            Some((_, q)) => format!(
                "query `{q}`'s degree or its tables' rows, parallel_max_servers, the sessions running it"
            ),
            None => String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::timeline::{CHECK_FIXED, CHECK_ROW};

    /// A table `t` of `rows` rows, ten to a block, with an index, and a
    /// table `p` of one block a parallel query reads; `steps` for the one
    /// workload, on instance 1.
    fn scenario(rows: u64, steps: &str) -> LoadedScenario {
        let text = format!(
            r#"
[scenario]
name = "e"
title = "e"
[cluster]
instances = 2
[[table]]
name = "t"
rows = {rows}
rows_per_block = 10
free_blocks_per_instance = 0
[[index]]
name = "t_pk"
table = "t"
free_blocks_per_instance = 0
[[table]]
name = "p"
rows = 10
rows_per_block = 10
free_blocks_per_instance = 0
[[query]]
name = "q"
plan = "scan_aggregate"
tables = ["p"]
degree = 2
[[workload]]
name = "w"
instances = [1]
sessions_per_instance = 1
think_time_ms = 1
[[workload.transaction]]
steps = {steps}
[[phase]]
name = "p"
duration_s = 1
"#
        );
        match crate::load_str(&text, "e.toml", &[]) {
            Ok(l) => l,
            Err(e) => panic!("{e}"),
        }
    }

    const SCAN: &str = r#"[{ op = "read", table = "t", via = "full_scan" }]"#;

    fn part<'e>(e: &'e MemoryEstimate, what: &str) -> &'e MemoryPart {
        match e.parts.iter().find(|p| p.what.starts_with(what)) {
            Some(p) => p,
            None => panic!("no part `{what}` in {:#?}", e.parts),
        }
    }

    /// A header, and a table block of 10 rows (16 slots as the vector grew).
    const HEADER: u64 = BLOCK + ALLOC;
    const FULL: u64 = BLOCK + ALLOC + 16 * ROW;

    /// The datafile images are each block with its rows or entries.
    #[test]
    fn datafile_images_are_blocks_and_their_contents() {
        let e = estimate(&scenario(1000, SCAN), false);
        // t: a header and 100 blocks; t_pk: a root and 4 leaves of 250
        // entries (256 slots); p: a header and a block.
        let store = part(&e, "datafile images (108 blocks)");
        let root = BLOCK + ALLOC + 250 * BRANCH_ENTRY;
        let leaf = BLOCK + ALLOC + 256 * ENTRY;
        assert_eq!(store.bytes, 2 * HEADER + 101 * FULL + root + 4 * leaf);
        assert!(
            store.lower.starts_with("table `t` (rows, rows_per_block"),
            "{}",
            store.lower
        );
        let sum: u64 = e.parts.iter().map(|p| p.bytes).sum();
        assert_eq!(e.bytes, sum + PROGRAM);
    }

    /// A table only a parallel query reads is never cached; one a session
    /// scans is, one copy per block (nobody changes it), on every instance.
    #[test]
    fn only_blocks_sessions_visit_fill_the_caches() {
        let px = estimate(
            &scenario(1000, r#"[{ op = "parallel_query", query = "q" }]"#),
            false,
        );
        let cached =
            |e: &MemoryEstimate| e.parts.iter().any(|p| p.what.starts_with("buffer caches"));
        assert!(!cached(&px), "{:#?}", px.parts);
        // Nobody changes it: every buffer shares its rows with the datafile
        // image, and weighs the buffer and the image's header.
        let scan = estimate(&scenario(1000, SCAN), false);
        assert_eq!(
            part(&scan, "buffer caches").bytes,
            2 * 101 * (BUFFER + BLOCK)
        );
    }

    /// When the blocks do not all fit, a cache holds as many as it has
    /// buffers (8,192 on each of the two instances), whatever it keeps of
    /// the index's leaves and the table's blocks; nobody changes them, so
    /// each is a buffer and an image header sharing the datafile's rows.
    #[test]
    fn a_full_cache_holds_its_buffers_and_no_more() {
        let lookups = r#"[{ op = "read", table = "t", via = "t_pk" }]"#;
        let e = estimate(&scenario(1_000_000, lookups), false);
        let per_instance = part(&e, "buffer caches").bytes / 2;
        let each = BUFFER + BLOCK;
        assert!(per_instance > 8150 * each, "{per_instance}");
        assert!(per_instance <= 8192 * each, "{per_instance}");
    }

    /// A block a workload changes may be held several times in a cache
    /// (current, past image, CR copies), each copy with rows of its own.
    #[test]
    fn a_changed_block_costs_its_rows_in_every_copy() {
        let read = estimate(&scenario(1000, SCAN), false);
        let update = estimate(
            &scenario(
                1000,
                r#"[{ op = "update", table = "t", via = "t_pk" }, { op = "commit" }]"#,
            ),
            false,
        );
        let rows = |e: &MemoryEstimate| part(e, "buffer caches").bytes;
        assert!(
            rows(&update) > rows(&read) + 100 * (FULL - BLOCK),
            "update {} read {}",
            rows(&update),
            rows(&read)
        );
    }

    /// `--check` keeps the rows written, not the reads: a longer run of
    /// full scans costs it nothing more; inserts cost it a row each.
    #[test]
    fn check_keeps_the_rows_written_not_the_reads() {
        let longer = |mut l: LoadedScenario| {
            for v in &mut l.variants {
                for p in &mut v.scenario.phases {
                    p.duration *= 10;
                }
            }
            l
        };
        let check = |e: &MemoryEstimate| part(e, "--check history").bytes;
        let scans = estimate(&scenario(1000, SCAN), true);
        assert_eq!(check(&scans), CHECK_FIXED);
        assert_eq!(
            check(&estimate(&longer(scenario(1000, SCAN)), true)),
            CHECK_FIXED
        );
        assert!(
            !estimate(&scenario(1000, SCAN), false)
                .parts
                .iter()
                .any(|p| p.what.starts_with("--check"))
        );
        let inserts = r#"[{ op = "insert", table = "t" }, { op = "commit" }]"#;
        let one = estimate(&scenario(1000, inserts), true);
        let ten = estimate(&longer(scenario(1000, inserts)), true);
        let rows = |e: &MemoryEstimate| (check(e) - CHECK_FIXED) / CHECK_ROW;
        assert!(rows(&one) > 0);
        assert!(
            rows(&ten).abs_diff(10 * rows(&one)) <= 10,
            "{} vs {}",
            rows(&ten),
            rows(&one)
        );
    }

    /// Redo grows with the timeline: twice the phase, twice the redo.
    #[test]
    fn redo_grows_with_the_timeline() {
        let inserts = r#"[{ op = "insert", table = "t" }, { op = "commit" }]"#;
        let one = estimate(&scenario(1000, inserts), false);
        let mut longer = scenario(1000, inserts);
        for v in &mut longer.variants {
            for p in &mut v.scenario.phases {
                p.duration *= 2;
            }
        }
        let two = estimate(&longer, false);
        let redo = |e: &MemoryEstimate| part(e, "redo").bytes;
        assert!(redo(&one) > 0);
        assert!(
            redo(&two).abs_diff(2 * redo(&one)) <= 1,
            "{} vs {}",
            redo(&two),
            redo(&one)
        );
    }
}
