//! A parallel statement as a scenario declares it (`[[query]]`): the plan
//! shape, the tables it reads, the requested degree and, for a join, how rows
//! are distributed between the two server sets.

/// The plan shapes the query coordinator knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PxPlan {
    /// `select count(*), sum(key), min(key), max(key), sum(val), max(val) from t`:
    /// one server set scans and aggregates its granules, the QC merges the
    /// partial aggregates (PX SEND QC (RANDOM)).
    ScanAggregate,
    /// `select mod(t1.key, n), count(*), sum(t1.key), sum(t1.val + t2.val),
    /// max(t2.key) from t1, t2 where t1.key = t2.key group by mod(t1.key, n)`:
    /// producers scan both tables and send rows to the consumers (PX SEND HASH
    /// or BROADCAST), consumers join and group, the QC merges the groups.
    HashJoinGroupBy,
    /// `select key, val from t order by key`: producers send rows by key range
    /// (PX SEND RANGE), consumers sort, the QC reads them in order (QC ORDER).
    Sort,
    /// `create index ... on t (key)`: producers send (key, rowid) by range,
    /// consumers sort their range into index leaves, the QC assembles them.
    IndexBuild,
}

impl PxPlan {
    pub const NAMES: &'static [&'static str] = &[
        "scan_aggregate",
        "hash_join_group_by",
        "sort",
        "index_build",
    ];

    pub fn from_name(name: &str) -> Option<PxPlan> {
        Some(match name {
            "scan_aggregate" => PxPlan::ScanAggregate,
            "hash_join_group_by" => PxPlan::HashJoinGroupBy,
            "sort" => PxPlan::Sort,
            "index_build" => PxPlan::IndexBuild,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            PxPlan::ScanAggregate => "scan_aggregate",
            PxPlan::HashJoinGroupBy => "hash_join_group_by",
            PxPlan::Sort => "sort",
            PxPlan::IndexBuild => "index_build",
        }
    }

    /// Server sets the plan needs: one for a scan the QC merges, two (producers
    /// and consumers) when rows are redistributed.
    pub fn sets(self) -> u8 {
        match self {
            PxPlan::ScanAggregate => 1,
            _ => 2,
        }
    }

    /// Tables the plan reads.
    pub fn tables(self) -> usize {
        match self {
            PxPlan::HashJoinGroupBy => 2,
            _ => 1,
        }
    }
}

/// How the join's rows reach the consumers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinDistribution {
    /// Both tables hashed on the join key (PX SEND HASH).
    Hash,
    /// The first table sent to every consumer, the second spread round-robin.
    Broadcast,
}

/// The degree a statement asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Degree {
    /// `parallel(t, n)`.
    Fixed(u32),
    /// `parallel(t)`: the default DOP, or automatic DOP under LIMITED and AUTO.
    Default,
}

/// A parallel statement.
#[derive(Clone, Debug, PartialEq)]
pub struct PxQuery {
    pub name: String,
    pub plan: PxPlan,
    /// Positions in [`Catalog::tables`]; as many as the plan reads.
    pub tables: Vec<usize>,
    pub degree: Degree,
    /// The hint's `instances` argument (`parallel(t, 8, 2)`): Oracle 10g asked
    /// for degree x instances servers per set. 1 unless given.
    pub instances: u32,
    pub distribution: JoinDistribution,
    /// Group by `mod(t1.key, group_mod)` (the join).
    pub group_mod: u64,
    /// Entries per index leaf (the index build).
    pub entries_per_leaf: u32,
}
