//! What a trace names: the SQL text of each workload step and of the
//! recursive `update seq$`. The per-statement figures tkprof prints
//! (`StmtStat`) are statistics like any other and live in `stats`, which
//! keeps them in `Stats::statements`; they are re-exported here.

pub use crate::stats::{StmtStat, StmtWait};

use crate::config::Catalog;
use crate::px::{Degree, JoinDistribution, PxPlan, PxQuery};

/// The recursive statement of a sequence allocation, as Oracle's trace shows it.
pub const UPDATE_SEQ: &str = "update seq$ set increment$=:2,minvalue=:3,maxvalue=:4,cycle#=:5,order$=:6,cache=:7,highwater=:8,audit$=:9,flags=:10 where obj#=:1";

/// The SQL text a workload step runs, as a trace would show it.
pub fn sql_of(step: &crate::config::Step, cat: &crate::config::Catalog) -> Option<String> {
    use crate::config::{Access, Step};
    let table = |t: usize| {
        cat.tables
            .get(t)
            .map_or("?", |x| x.name.as_str())
            .to_uppercase()
    };
    let seq = |s: usize| {
        cat.sequences
            .get(s)
            .map_or("?", |x| x.name.as_str())
            .to_uppercase()
    };
    // A batch for one organisation binds it as a second variable.
    let org = |k: &crate::config::KeySpec| {
        if k.org.is_some() {
            "ORG = :B2 AND "
        } else {
            ""
        }
    };
    Some(match step {
        Step::Read {
            table: t,
            access: Access::FullScan,
            ..
        } => format!("SELECT COUNT(*) FROM {}", table(*t)),
        Step::Read { table: t, keys, .. } => {
            format!("SELECT VAL FROM {} WHERE {}KEY = :B1", table(*t), org(keys))
        }
        Step::Update { table: t, keys, .. } => {
            let set = match cat.tables.get(*t) {
                Some(d) if d.distinct_values > 0 => "MOD(VAL, :B3) + 1",
                _ => "VAL + 1",
            };
            format!(
                "UPDATE {} SET VAL = {set} WHERE {}KEY = :B1",
                table(*t),
                org(keys)
            )
        }
        Step::Count { table: t, .. } => {
            format!("SELECT COUNT(*) FROM {} WHERE VAL = :B1", table(*t))
        }
        Step::Insert { table: t, .. } => format!("INSERT INTO {} VALUES (:B1, 0)", table(*t)),
        Step::InsertSeq {
            table: t,
            sequence: s,
            ..
        } => format!(
            "INSERT INTO {} SELECT {}.NEXTVAL, 0 FROM DUAL",
            table(*t),
            seq(*s)
        ),
        Step::NextVal { sequence: s, .. } => format!("SELECT {}.NEXTVAL FROM DUAL", seq(*s)),
        Step::ParallelQuery(q) => q.sql(cat),
        Step::Commit | Step::Think { .. } | Step::MemoryWrites { .. } => return None,
    })
}

// Here rather than in `px::query`: naming a statement needs the catalog, and
// `px` must not depend on `config`, which holds its queries in workload steps.
impl PxQuery {
    /// The statement's text, as a trace shows it.
    pub fn sql(&self, cat: &Catalog) -> String {
        let t = |i: usize| {
            self.tables
                .get(i)
                .and_then(|&x| cat.tables.get(x))
                .map_or("?".to_string(), |x| x.name.to_uppercase())
        };
        let hint = |i: usize| match self.degree {
            Degree::Fixed(n) if self.instances > 1 => {
                format!("PARALLEL({}, {n}, {})", t(i), self.instances)
            }
            Degree::Fixed(n) => format!("PARALLEL({}, {n})", t(i)),
            Degree::Default => format!("PARALLEL({})", t(i)),
        };
        match self.plan {
            PxPlan::ScanAggregate => format!(
                "SELECT /*+ {} */ COUNT(*), SUM(KEY), MIN(KEY), MAX(KEY), SUM(VAL), MAX(VAL) FROM {}",
                hint(0),
                t(0)
            ),
            PxPlan::HashJoinGroupBy => {
                let dist = match self.distribution {
                    JoinDistribution::Hash => "HASH HASH",
                    JoinDistribution::Broadcast => "BROADCAST NONE",
                };
                format!(
                    "SELECT /*+ {} {} PQ_DISTRIBUTE({} {dist}) */ MOD({a}.KEY, {m}), COUNT(*), SUM({a}.KEY), SUM({a}.VAL + {b}.VAL), MAX({b}.KEY) FROM {a}, {b} WHERE {a}.KEY = {b}.KEY GROUP BY MOD({a}.KEY, {m})",
                    hint(0),
                    hint(1),
                    t(1),
                    a = t(0),
                    b = t(1),
                    m = self.group_mod
                )
            }
            PxPlan::Sort => format!(
                "SELECT /*+ {} */ KEY, VAL FROM {} ORDER BY KEY",
                hint(0),
                t(0)
            ),
            PxPlan::IndexBuild => {
                let degree = match self.degree {
                    Degree::Fixed(n) => format!("PARALLEL {n}"),
                    Degree::Default => "PARALLEL".to_string(),
                };
                format!(
                    "CREATE INDEX {} ON {} (KEY) {degree}",
                    self.name.to_uppercase(),
                    t(0)
                )
            }
        }
    }
}
