//! What an instance is told at start: its init.ora parameters, the cost model,
//! the schema (catalog) and the workloads its sessions run. Plain data; the
//! scenario loader builds it from a file and both drivers hand it to the core.
//! The parallel-execution parameters are in `px_params`, the machine an
//! instance runs on in `server`, the time units in `units` and a parameter's
//! value as written in `value`.

pub mod px_params;
pub mod server;
mod units;
mod value;

pub use px_params::PxParams;
pub use server::{Placement, Server};
pub use units::{NS_PER_MS, NS_PER_S, NS_PER_US, Nanos};
pub use value::{ParamValue, parse_size};

/// init.ora parameters of one instance, under their Oracle names (see
/// [`Params::NAMES`]). Defaults follow Oracle's where it has one.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// `cpu_count`: CPUs in the instance's run queue model.
    pub cpu_count: u32,
    /// `gcs_server_processes`: LMS workers. 0 means derive from `cpu_count` as Oracle does.
    pub gcs_server_processes: u32,
    /// `db_writer_processes`.
    pub db_writer_processes: u32,
    /// `dbwr_io_slaves`: above 0, one DBWR (`DBW0`, whatever
    /// `db_writer_processes` says, as Oracle does) builds every write
    /// batch and hands each write to one of this many I/O slaves (`I101`,
    /// ...), which only submit it.
    pub dbwr_io_slaves: u32,
    /// `db_cache_size` in bytes (the buffer cache holds `db_cache_size / db_block_size` buffers).
    pub db_cache_size: u64,
    /// `db_block_size` in bytes (cluster-wide; the padded size of a shipped block).
    pub db_block_size: u32,
    /// `_high_priority_processes`: processes that run in the real-time class.
    pub high_priority_processes: String,
    /// `_os_sched_high_priority`: 0 turns the real-time class off for everyone.
    pub os_sched_high_priority: u32,
    /// `_fairness_threshold`: CR copies an X holder serves before it down-converts.
    pub fairness_threshold: u32,
    /// `log_buffer` in bytes: LGWR starts a write when a third of it is full.
    pub log_buffer: u64,
    /// `_lm_contiguous_res_count`: contiguous blocks that hash to the same master.
    pub lm_contiguous_res_count: u32,
    /// Parallel execution: `parallel_*`, `instance_groups`, `db_file_multiblock_read_count`.
    pub px: PxParams,
    /// `max_commit_propagation_delay` in centiseconds: 0 (the 10.2+
    /// behaviour) broadcasts every commit's SCN to the other instances and
    /// the commit waits for their acknowledgements; above 0 (8i-10.1, whose
    /// default was 700) SCNs travel only on other messages (Lamport).
    pub max_commit_propagation_delay: u32,
    /// `css_misscount` in seconds: how long a member may miss its network
    /// heartbeat before the cluster-membership service declares it dead
    /// (Clusterware's `misscount`, 30 s since 11gR2).
    pub css_misscount: u32,
    /// `fast_start_mttr_target` in seconds: 0 (the default) leaves DBWR's
    /// checkpoint to the age of dirty buffers; above 0 DBWR also writes the
    /// buffers whose first change is more than this many seconds of
    /// recovery behind the end of redo (see `instance/checkpoint.rs`).
    pub fast_start_mttr_target: u32,
    /// `_enable_NUMA_support`: on a server with locality groups the
    /// database places its memory by group (one LRU per group, a process
    /// takes a free buffer of its own group first, state objects near their
    /// process, each DBWR writing the buffers of its own group: one writer
    /// per group when `db_writer_processes` is the group count). No effect
    /// without a `[server]` description.
    pub numa_support: bool,
    /// `_gc_policy_time`: dynamic remastering's observation window
    /// (Oracle's unit is minutes, 10 by default; 0 switches DRM and its
    /// statistics off). A scenario may give a shorter window with a unit
    /// (`"2s"`, `"500ms"`) to fit the simulator's time scale.
    pub gc_policy_time_ns: u64,
    /// `_gc_policy_minimum`: the gc activity per minute (opens of an
    /// object's blocks by one instance) for an object to be remastered.
    pub gc_policy_minimum: u64,
    /// `_lm_dd_interval`: how long a row lock wait lasts before LMD looks
    /// for a global deadlock through it, and how often it looks again (10 s
    /// since 11g; a single instance, not RAC, checks every 3 s).
    pub lm_dd_interval_ns: u64,
}

/// How long a single instance (not RAC) lets a TX enqueue wait before it
/// looks for a deadlock: Oracle's 3-second enqueue timeout.
pub const SINGLE_INSTANCE_DD_NS: u64 = 3 * NS_PER_S;

impl Default for Params {
    fn default() -> Self {
        Params {
            cpu_count: 4,
            gcs_server_processes: 0,
            db_writer_processes: 1,
            dbwr_io_slaves: 0,
            db_cache_size: 64 << 20,
            db_block_size: 8192,
            high_priority_processes: "LMS*|VKTM*".to_string(),
            os_sched_high_priority: 1,
            fairness_threshold: 4,
            log_buffer: 16 << 20,
            lm_contiguous_res_count: 128,
            px: PxParams::default(),
            max_commit_propagation_delay: 0,
            css_misscount: 30,
            fast_start_mttr_target: 0,
            numa_support: false,
            gc_policy_time_ns: 10 * 60 * NS_PER_S,
            gc_policy_minimum: 1500,
            lm_dd_interval_ns: 10 * NS_PER_S,
        }
    }
}

impl Params {
    /// Parameter names the loader accepts, as a user writes them.
    pub const NAMES: &'static [&'static str] = &[
        "cpu_count",
        "gcs_server_processes",
        "db_writer_processes",
        "dbwr_io_slaves",
        "db_cache_size",
        "db_block_size",
        "_high_priority_processes",
        "_os_sched_high_priority",
        "_fairness_threshold",
        "log_buffer",
        "_lm_contiguous_res_count",
        // Parallel execution (PxParams::NAMES).
        "parallel_threads_per_cpu",
        "parallel_max_servers",
        "parallel_min_servers",
        "parallel_servers_target",
        "parallel_degree_policy",
        "parallel_degree_limit",
        "parallel_min_time_threshold",
        "parallel_force_local",
        "instance_groups",
        "parallel_instance_group",
        "parallel_execution_message_size",
        "db_file_multiblock_read_count",
        "max_commit_propagation_delay",
        "css_misscount",
        "fast_start_mttr_target",
        "_enable_NUMA_support",
        "_gc_policy_time",
        "_gc_policy_minimum",
        "_lm_dd_interval",
    ];

    /// Parameters that may change at a phase boundary of a running instance.
    /// Priorities are what an administrator changes online with `priocntl`;
    /// the parallel ones are dynamic (`alter system`) in Oracle too;
    /// everything else would need a restart.
    pub const PHASE_CHANGEABLE: &'static [&'static str] = &[
        "_high_priority_processes",
        "_os_sched_high_priority",
        "parallel_max_servers",
        "parallel_servers_target",
        "parallel_degree_policy",
        "parallel_degree_limit",
        "parallel_min_time_threshold",
        "parallel_force_local",
        "parallel_instance_group",
        "db_file_multiblock_read_count",
        "fast_start_mttr_target",
    ];

    /// LMS count Oracle 11.2-19c derives from `cpu_count`.
    pub fn lms_count(&self) -> u32 {
        if self.gcs_server_processes > 0 {
            return self.gcs_server_processes;
        }
        match self.cpu_count {
            0..=3 => 1,
            4..=15 => 2,
            n => 2 + n / 32,
        }
    }

    /// Commits broadcast their SCN (broadcast on commit, BOC).
    pub fn broadcast_on_commit(&self) -> bool {
        self.max_commit_propagation_delay == 0
    }

    pub fn buffers(&self) -> usize {
        (self.db_cache_size / u64::from(self.db_block_size.max(1))) as usize
    }

    /// Set one parameter from its text value, with the check Oracle would make.
    pub fn set(&mut self, name: &str, value: &ParamValue) -> Result<(), String> {
        let int = |v: &ParamValue, min: u64, max: u64| -> Result<u64, String> {
            let n = match v {
                ParamValue::Int(n) => *n,
                ParamValue::Text(t) => parse_size(t)?,
            };
            if n < min || n > max {
                return Err(format!("value {n} out of range {min}..={max}"));
            }
            Ok(n)
        };
        match name.to_ascii_lowercase().as_str() {
            "cpu_count" => self.cpu_count = int(value, 1, 1024)? as u32,
            "gcs_server_processes" => self.gcs_server_processes = int(value, 1, 100)? as u32,
            "db_writer_processes" => self.db_writer_processes = int(value, 1, 100)? as u32,
            "dbwr_io_slaves" => self.dbwr_io_slaves = int(value, 0, 100)? as u32,
            "db_cache_size" => self.db_cache_size = int(value, 1 << 16, 1 << 40)?,
            "db_block_size" => {
                let n = int(value, 2048, 32768)?;
                if !n.is_power_of_two() {
                    return Err(format!("db_block_size must be a power of two, got {n}"));
                }
                self.db_block_size = n as u32
            }
            "_high_priority_processes" => match value {
                ParamValue::Text(t) => self.high_priority_processes = t.clone(),
                ParamValue::Int(_) => {
                    return Err("expected a pattern such as \"LMS*|VKTM*\"".into());
                }
            },
            "_os_sched_high_priority" => self.os_sched_high_priority = int(value, 0, 1)? as u32,
            "_fairness_threshold" => self.fairness_threshold = int(value, 0, 1_000_000)? as u32,
            "log_buffer" => self.log_buffer = int(value, 1 << 16, 1 << 32)?,
            "_lm_contiguous_res_count" => {
                self.lm_contiguous_res_count = int(value, 1, 1 << 20)? as u32
            }
            n if PxParams::NAMES.contains(&n) => self.px.set(n, value)?,
            "max_commit_propagation_delay" => {
                self.max_commit_propagation_delay = int(value, 0, 90_000)? as u32
            }
            // At least two heartbeats must be missed: one second apart.
            "css_misscount" => self.css_misscount = int(value, 2, 600)? as u32,
            "fast_start_mttr_target" => self.fast_start_mttr_target = int(value, 0, 3600)? as u32,
            "_enable_numa_support" => self.numa_support = boolean(value)?,
            "_gc_policy_time" => self.gc_policy_time_ns = policy_time(value)?,
            "_gc_policy_minimum" => self.gc_policy_minimum = int(value, 1, 1 << 40)?,
            "_lm_dd_interval" => self.lm_dd_interval_ns = int(value, 1, 3600)? * NS_PER_S,
            _ => {
                return Err(format!(
                    "unknown parameter `{name}` (known: {})",
                    Params::NAMES.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Whether the process named `process` (e.g. `LMS0`, `LGWR`) runs in the
    /// real-time class under these parameters.
    pub fn is_high_priority(&self, process: &str) -> bool {
        self.os_sched_high_priority != 0
            && self
                .high_priority_processes
                .split('|')
                .any(|pat| glob_match(pat.trim(), process))
    }
}

/// `_gc_policy_time`: minutes as Oracle counts them (at most a day), or a
/// shorter window with its unit (`"2s"`, `"500ms"`, `"3min"`).
fn policy_time(value: &ParamValue) -> Result<u64, String> {
    const MINUTE_NS: u64 = 60 * NS_PER_S;
    let ns = match value {
        ParamValue::Int(minutes) if *minutes <= 24 * 60 => minutes * MINUTE_NS,
        ParamValue::Int(minutes) => {
            return Err(format!("value {minutes} out of range 0..=1440 (minutes)"));
        }
        ParamValue::Text(t) => {
            let t = t.trim();
            let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (n, unit) = t.split_at(digits);
            let n: u64 = n
                .parse()
                .map_err(|_| format!("expected minutes or a duration such as \"2s\", got {t:?}"))?;
            let unit_ns = match unit.trim() {
                "ms" => NS_PER_MS,
                "s" => NS_PER_S,
                "" | "min" => MINUTE_NS,
                other => return Err(format!("unknown unit {other:?} (ms, s or min)")),
            };
            n.checked_mul(unit_ns)
                .filter(|&ns| ns <= 24 * 60 * MINUTE_NS)
                .ok_or_else(|| format!("{t:?} is longer than a day"))?
        }
    };
    Ok(ns)
}

/// A boolean parameter: `TRUE`/`FALSE` (as TOML's `true`/`false` arrive) or 1/0.
fn boolean(value: &ParamValue) -> Result<bool, String> {
    match value {
        ParamValue::Int(0) => Ok(false),
        ParamValue::Int(1) => Ok(true),
        ParamValue::Text(t) if t.trim().eq_ignore_ascii_case("true") => Ok(true),
        ParamValue::Text(t) if t.trim().eq_ignore_ascii_case("false") => Ok(false),
        ParamValue::Int(n) => Err(format!("expected TRUE or FALSE, got `{n}`")),
        ParamValue::Text(t) => Err(format!("expected TRUE or FALSE, got `{}`", t.trim())),
    }
}

/// `*` matches any run of characters; the match ignores case, as Oracle's does.
fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(pattern: &[u8], name: &[u8]) -> bool {
        match pattern.split_first() {
            None => name.is_empty(),
            Some((b'*', rest)) => (0..=name.len()).any(|i| go(rest, &name[i..])),
            Some((c, rest)) => {
                name.first().is_some_and(|d| d.eq_ignore_ascii_case(c)) && go(rest, &name[1..])
            }
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// CPU costs of the work the model does, in nanoseconds of CPU. Each is a
/// step in the instance's run queue. Defaults and where they come from are in
/// docs/scenarios.md.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    /// Parse/execute overhead of one SQL execution.
    pub execute_ns: Nanos,
    /// One consistent get (a buffer visited in CR mode).
    pub consistent_get_ns: Nanos,
    /// One db block get (a buffer visited in current mode).
    pub db_block_get_ns: Nanos,
    /// Examining one row in a block (full scans).
    pub row_examined_ns: Nanos,
    /// Changing one row or index entry, redo and undo generation included.
    pub row_change_ns: Nanos,
    /// The commit call (before the log file sync wait).
    pub commit_ns: Nanos,
    /// Building a CR copy: the clone.
    pub cr_build_ns: Nanos,
    /// Applying one undo record while building a CR copy.
    pub undo_apply_ns: Nanos,
    /// LMS handling one GCS message (lookup, forward, grant).
    pub lms_message_ns: Nanos,
    /// LMS pinning a current block to ship it.
    pub lms_pin_ns: Nanos,
    /// LMS sending one block.
    pub lms_send_ns: Nanos,
    /// LGWR CPU for one write.
    pub lgwr_write_ns: Nanos,
    /// DBWR CPU for one block written: building the write batch, freeing
    /// the buffer and posting its waiters.
    pub dbwr_write_ns: Nanos,
    /// Submitting one write to the operating system (the system call and
    /// the driver's set-up): the writer's CPU, or an I/O slave's with
    /// `dbwr_io_slaves`. 0 by default (folded into `dbwr_write`).
    pub dbwr_io_submit_ns: Nanos,
    /// Installing a received block in the buffer cache.
    pub block_install_ns: Nanos,
    /// Reading or rewriting one bitmap piece of a bitmap index (counting
    /// its bits, or changing one bit).
    pub bitmap_piece_ns: Nanos,
    /// The OS time slice of the time-sharing class.
    pub time_slice_ns: Nanos,
    /// A PX producer hashing or ranging one row and copying it into a table-queue buffer.
    pub px_row_send_ns: Nanos,
    /// A PX consumer or QC taking one row from a buffer (hash build or probe, group, sort input).
    pub px_row_receive_ns: Nanos,
    /// Passing one table-queue buffer to a process of the same instance (each end).
    pub px_message_local_ns: Nanos,
    /// Sending or receiving one table-queue buffer over the interconnect (each end).
    pub px_message_remote_ns: Nanos,
    /// Starting a PX server process beyond `parallel_min_servers`.
    pub px_server_start_ns: Nanos,
    /// An RMAN channel backing up one block it read: checking it (the
    /// block checksum, skipping unused blocks) and compressing it into the
    /// backup piece's buffer.
    pub rman_block_ns: Nanos,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            execute_ns: 15 * NS_PER_US,
            consistent_get_ns: 5 * NS_PER_US,
            db_block_get_ns: 6 * NS_PER_US,
            row_examined_ns: 50,
            row_change_ns: 20 * NS_PER_US,
            commit_ns: 20 * NS_PER_US,
            cr_build_ns: 60 * NS_PER_US,
            undo_apply_ns: 5 * NS_PER_US,
            lms_message_ns: 20 * NS_PER_US,
            lms_pin_ns: 10 * NS_PER_US,
            lms_send_ns: 30 * NS_PER_US,
            lgwr_write_ns: 50 * NS_PER_US,
            dbwr_write_ns: 30 * NS_PER_US,
            dbwr_io_submit_ns: 0,
            rman_block_ns: 100 * NS_PER_US,
            block_install_ns: 10 * NS_PER_US,
            bitmap_piece_ns: 2 * NS_PER_US,
            time_slice_ns: 10 * NS_PER_MS,
            px_row_send_ns: 100,
            px_row_receive_ns: 250,
            px_message_local_ns: 5 * NS_PER_US,
            px_message_remote_ns: 20 * NS_PER_US,
            px_server_start_ns: 5 * NS_PER_MS,
        }
    }
}

/// A heap table: rows `key = 1..=rows`, each with a numeric value.
///
/// Rows belong to organisations `1..=orgs`, interleaved by key (row `k`
/// belongs to `org_of(k)`), so without partitioning every block holds rows of
/// every organisation. Partitioned by organisation, each organisation's rows
/// are a segment of their own.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDef {
    pub name: String,
    pub rows: u64,
    pub rows_per_block: u32,
    /// Blocks reserved above the initial high-water mark for inserts, per instance.
    pub free_blocks_per_instance: u32,
    /// Organisations the rows belong to (the `org` column); 1 = one organisation.
    pub orgs: u32,
    /// Partitioned by `org`: one segment per organisation.
    pub partition_by_org: bool,
    /// The value column's domain: 0 = it starts at 0 and counts up; `n` =
    /// values `1..=n`, row `k` starting at `value_of(k)`, an update moving a
    /// row to the next value (mod n), as a status column does.
    pub distinct_values: u32,
}

impl TableDef {
    /// The organisation of row `key`.
    pub fn org_of(&self, key: u64) -> u32 {
        org_of(key, self.orgs)
    }

    /// The initial value of row `key`.
    pub fn initial_value(&self, key: u64) -> i64 {
        initial_value(key, self.distinct_values)
    }
}

/// The organisation of row `key` among `orgs`, interleaved: 1, 2, ..., orgs, 1, ...
pub fn org_of(key: u64, orgs: u32) -> u32 {
    let n = u64::from(orgs.max(1));
    (key.saturating_sub(1) % n) as u32 + 1
}

/// The initial value of row `key` with `distinct` values (0: every row starts at 0).
pub fn initial_value(key: u64, distinct: u32) -> i64 {
    if distinct == 0 {
        0
    } else {
        (key.saturating_sub(1) % u64::from(distinct)) as i64 + 1
    }
}

/// The kind of an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexKind {
    /// A B-tree on the key (and the value too when `IndexDef::includes_value`).
    #[default]
    BTree,
    /// A bitmap index on the value column: per value, bitmap pieces each
    /// covering `IndexDef::rows_per_piece` consecutive keys.
    Bitmap,
}

/// A B-tree index on a table's key.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDef {
    pub name: String,
    /// Position of the indexed table in [`Catalog::tables`].
    pub table: usize,
    pub entries_per_leaf: u32,
    pub entries_per_branch: u32,
    /// Blocks reserved for leaf and branch splits, per instance.
    pub free_blocks_per_instance: u32,
    /// A reverse key index (`create index ... reverse`): entries are ordered
    /// by the key's bytes reversed, so consecutive keys land in different leaves.
    pub reverse: bool,
    pub kind: IndexKind,
    /// Local to the table's partitions: one index segment per organisation.
    pub local: bool,
    /// A B-tree on (key, value): an update of the value changes the entry.
    pub includes_value: bool,
    /// Bitmap indexes: consecutive keys one bitmap piece covers (a piece
    /// locks all of them while a transaction changes one).
    pub rows_per_piece: u32,
}

/// A sequence (`create sequence ... cache n | nocache, order | noorder`).
/// Its dictionary row lives in SEQ$, a real block (see `Layout::seq_block`).
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceDef {
    pub name: String,
    /// Values an instance takes per SEQ$ update; 0 is NOCACHE.
    pub cache: u32,
    /// One order across the cluster (through the SV enqueue when cached).
    pub order: bool,
    pub start: i64,
    pub increment: i64,
}

impl SequenceDef {
    /// Values one SEQ$ update allocates.
    pub fn batch(&self) -> u64 {
        u64::from(self.cache.max(1))
    }

    /// The value of the `allocation`-th allocation (1-based) of this sequence.
    pub fn value(&self, allocation: u64) -> i64 {
        self.start
            .saturating_add((allocation.saturating_sub(1) as i64).saturating_mul(self.increment))
    }
}

/// The schema every instance shares (the data dictionary).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Catalog {
    pub tables: Vec<TableDef>,
    pub indexes: Vec<IndexDef>,
    pub sequences: Vec<SequenceDef>,
}

/// How a step chooses its keys.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyDist {
    /// Every key in the range equally likely.
    Uniform,
    /// `share` of the accesses go to the first `fraction` of the range.
    Hot { fraction: f64, share: f64 },
    /// Each session walks the range in order, starting at its own offset.
    Sequential,
}

/// Which keys a step draws from, and how.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySpec {
    pub dist: KeyDist,
    /// Inclusive key range; `None` means the table's initial rows.
    pub range: Option<(u64, u64)>,
    /// Only rows of this organisation (`where org = :b2`); `None`: any row.
    pub org: Option<u32>,
}

/// How a read finds its rows.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    /// Through the index at this position of [`Catalog::indexes`].
    Index(usize),
    /// Every block below the high-water mark.
    FullScan,
}

/// One step of a transaction.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `select ... where key = :k`, `rows` times with different keys (or one full scan).
    Read {
        table: usize,
        access: Access,
        keys: KeySpec,
        rows: u32,
    },
    /// `update ... set val = val + 1 where key = :k`, for `rows` keys.
    Update {
        table: usize,
        access: Access,
        keys: KeySpec,
        rows: u32,
    },
    /// `insert` of `rows` new rows with keys above the current maximum.
    Insert {
        table: usize,
        rows: u32,
    },
    /// `select count(*) ... where val = :v` through a bitmap index, `rows`
    /// times; `values` draws `v` from the value domain.
    Count {
        table: usize,
        index: usize,
        values: KeySpec,
        rows: u32,
    },
    /// `select seq.nextval from dual`, `rows` times.
    NextVal {
        sequence: usize,
        rows: u32,
    },
    /// `insert ... values (seq.nextval, ...)`: `rows` rows keyed by the sequence.
    InsertSeq {
        table: usize,
        rows: u32,
        sequence: usize,
    },
    /// A parallel statement; the executing session is its query coordinator.
    ParallelQuery(Box<crate::px::PxQuery>),
    Commit,
    /// The session idles (user think time).
    Think {
        time: Nanos,
    },
    /// `ops` writes of one cache line each, at random places of the
    /// session's private memory (the SLB's `memhammer`): no SQL, only the
    /// memory of a `[server]`, placed by its policy.
    MemoryWrites {
        ops: u32,
    },
}

/// A transaction shape and how often a session picks it.
#[derive(Clone, Debug, PartialEq)]
pub struct TxnTemplate {
    pub name: String,
    pub weight: u32,
    pub steps: Vec<Step>,
}

/// Sessions running the same mix of transactions on some instances.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    pub name: String,
    /// 1-based instance numbers the sessions run on.
    pub instances: Vec<u8>,
    pub sessions_per_instance: u32,
    /// Pause between two transactions of a session.
    pub think_time: Nanos,
    pub transactions: Vec<TxnTemplate>,
    /// Transactions each session runs before it stops; `None` runs forever.
    pub iterations: Option<u64>,
    /// The order a transaction takes its rows in, and what it does when
    /// its statement is a deadlock's victim.
    pub row_locks: RowLockSpec,
}

/// How a workload's transactions take their row locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowLockSpec {
    pub order: LockOrder,
    pub on_deadlock: OnDeadlock,
}

/// The order a transaction updates the rows it drew.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockOrder {
    /// Ascending keys: two transactions never wait for each other in a
    /// circle (the classic way to avoid deadlocks).
    #[default]
    Ascending,
    Descending,
    /// As drawn: any order, so deadlocks happen.
    Drawn,
}

/// What a session does when its statement is rolled back with ORA-00060.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDeadlock {
    /// Goes on with the transaction's next statement (the failed row is
    /// left alone), as an application that logs the error and carries on.
    #[default]
    Continue,
    /// Runs the failed statement again, still holding its locks.
    Retry,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_priority_patterns() {
        let mut p = Params::default();
        assert!(p.is_high_priority("LMS0"));
        assert!(p.is_high_priority("lms12"));
        assert!(!p.is_high_priority("LGWR"));
        p.set(
            "_high_priority_processes",
            &ParamValue::Text("LMS*|LGWR*".into()),
        )
        .unwrap();
        assert!(p.is_high_priority("LGWR"));
        p.set("_os_sched_high_priority", &ParamValue::Int(0))
            .unwrap();
        assert!(!p.is_high_priority("LMS0"));
    }

    #[test]
    fn lms_defaults_follow_cpu_count() {
        let mut p = Params {
            cpu_count: 2,
            ..Params::default()
        };
        assert_eq!(p.lms_count(), 1);
        p.cpu_count = 8;
        assert_eq!(p.lms_count(), 2);
        p.cpu_count = 64;
        assert_eq!(p.lms_count(), 4);
    }

    #[test]
    fn sizes_and_errors() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("8192"), Ok(8192));
        assert!(parse_size("lots").is_err());
        let mut p = Params::default();
        assert!(p.set("db_block_size", &ParamValue::Int(3000)).is_err());
        assert!(
            p.set("no_such", &ParamValue::Int(1))
                .unwrap_err()
                .contains("unknown parameter")
        );
    }
}
