//! Per-statement accounting, the figures tkprof prints for a traced session:
//! call counts, CPU, elapsed, disk, query and current gets, rows, and the
//! waits the statement's executions spent. Sessions attribute their work to
//! the statement they run (a recursive one, such as `update seq$`, while it
//! runs inside the user's statement).

use crate::stats::Wait;

/// One wait event inside a statement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StmtWait {
    pub waits: u64,
    pub time_ns: u64,
    pub max_ns: u64,
}

/// One statement's figures (tkprof's Parse, Execute and Fetch lines share
/// cpu, elapsed and gets here: they are all charged to Execute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtStat {
    pub sql: String,
    /// Run by Oracle on behalf of another statement (tkprof's recursive depth > 0).
    pub recursive: bool,
    pub parses: u64,
    pub executions: u64,
    pub fetches: u64,
    pub cpu_ns: u64,
    pub elapsed_ns: u64,
    /// Blocks read from disk.
    pub disk: u64,
    /// Consistent gets.
    pub query: u64,
    /// Current-mode gets.
    pub current: u64,
    pub rows: u64,
    /// Indexed by [`Wait`].
    pub waits: Vec<StmtWait>,
}

impl StmtStat {
    pub fn new(sql: String, recursive: bool) -> StmtStat {
        StmtStat {
            sql,
            recursive,
            parses: 0,
            executions: 0,
            fetches: 0,
            cpu_ns: 0,
            elapsed_ns: 0,
            disk: 0,
            query: 0,
            current: 0,
            rows: 0,
            waits: vec![StmtWait::default(); Wait::COUNT],
        }
    }

    pub fn wait(&mut self, event: Wait, ns: u64) {
        if let Some(w) = self.waits.get_mut(event as usize) {
            w.waits += 1;
            w.time_ns += ns;
            w.max_ns = w.max_ns.max(ns);
        }
        if matches!(
            event,
            Wait::DbFileSequentialRead | Wait::DbFileScatteredRead
        ) {
            self.disk += 1;
        }
    }

    /// Activity since `earlier` (the same statement); the maximum wait is the
    /// later one's, as with `v$system_event`.
    pub fn since(&self, earlier: &StmtStat) -> StmtStat {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        StmtStat {
            sql: self.sql.clone(),
            recursive: self.recursive,
            parses: d(self.parses, earlier.parses),
            executions: d(self.executions, earlier.executions),
            fetches: d(self.fetches, earlier.fetches),
            cpu_ns: d(self.cpu_ns, earlier.cpu_ns),
            elapsed_ns: d(self.elapsed_ns, earlier.elapsed_ns),
            disk: d(self.disk, earlier.disk),
            query: d(self.query, earlier.query),
            current: d(self.current, earlier.current),
            rows: d(self.rows, earlier.rows),
            waits: self
                .waits
                .iter()
                .zip(&earlier.waits)
                .map(|(a, b)| StmtWait {
                    waits: d(a.waits, b.waits),
                    time_ns: d(a.time_ns, b.time_ns),
                    max_ns: if a.waits > b.waits { a.max_ns } else { 0 },
                })
                .collect(),
        }
    }

    /// Add another instance's figures for the same statement.
    pub fn merge(&mut self, o: &StmtStat) {
        self.parses += o.parses;
        self.executions += o.executions;
        self.fetches += o.fetches;
        self.cpu_ns += o.cpu_ns;
        self.elapsed_ns += o.elapsed_ns;
        self.disk += o.disk;
        self.query += o.query;
        self.current += o.current;
        self.rows += o.rows;
        for (a, b) in self.waits.iter_mut().zip(&o.waits) {
            a.waits += b.waits;
            a.time_ns += b.time_ns;
            a.max_ns = a.max_ns.max(b.max_ns);
        }
    }

    /// Whether anything happened to this statement.
    pub fn is_empty(&self) -> bool {
        self.parses == 0 && self.executions == 0 && self.elapsed_ns == 0
    }
}

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
        Step::Commit | Step::Think { .. } => return None,
    })
}
