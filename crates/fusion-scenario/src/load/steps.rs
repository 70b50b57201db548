//! The steps of a transaction (`{ op = "read", table = "t", via = "t_pk" }`):
//! each op's keys, the table and access path a step names, and the key
//! distributions (`keys`, `values`) it draws rows or values from.

use fusion_core::config::{
    Access, Catalog, IndexKind, KeyDist, KeySpec, NS_PER_MS, Step, TableDef,
};

use super::limits::{KEYS_MAX, KEYS_WHY, MEMORY_OPS_MAX, MEMORY_OPS_WHY, grouped};
use super::problems::{Validator, names_list, quoted_list, suggest};
use super::px::QueryDraft;
use super::read::{Bound, TableView, describe_deep};
use crate::tree::{KeyPath, Node, Val};

const OPS: &[&str] = &[
    "read",
    "update",
    "insert",
    "nextval",
    "count",
    "commit",
    "think",
    "parallel_query",
    "memory_writes",
];
const KEY_DISTS: &[&str] = &["uniform", "sequential", "hot"];

/// The keys a step of `op` may have; `None` for an unknown op.
fn op_keys(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "read" | "update" => &["op", "table", "via", "keys", "rows", "org"],
        "count" => &["op", "table", "via", "values", "rows"],
        "insert" => &["op", "table", "rows", "key"],
        "nextval" => &["op", "sequence", "rows"],
        "commit" => &["op"],
        "think" => &["op", "ms"],
        "parallel_query" => &["op", "query"],
        "memory_writes" => &["op", "ops"],
        _ => return None,
    })
}

fn key_dist_named(name: &str) -> Option<KeyDist> {
    match name {
        "uniform" => Some(KeyDist::Uniform),
        "sequential" => Some(KeyDist::Sequential),
        "hot" => Some(KeyDist::Hot {
            fraction: 0.01,
            share: 0.9,
        }),
        _ => None,
    }
}

/// Keys drawn uniformly from the whole table, the default of `keys` and `values`.
fn uniform_keys() -> KeySpec {
    KeySpec {
        dist: KeyDist::Uniform,
        range: None,
        org: None,
    }
}

/// The names of the indexes on table `table`, for messages.
fn indexes_on(catalog: &Catalog, table: usize) -> Vec<String> {
    catalog
        .indexes
        .iter()
        .filter(|i| i.table == table)
        .map(|i| i.name.clone())
        .collect()
}

impl Validator<'_> {
    /// One step, with its table, index, sequence or query resolved to a position.
    pub(super) fn step(
        &mut self,
        node: &Node,
        path: &KeyPath,
        catalog: &Catalog,
        queries: &[QueryDraft],
    ) -> Option<Step> {
        let op = self.step_op(node, path)?;
        let step = self.table(node, path, op_keys(&op)?)?;
        match op.as_str() {
            "commit" => return Some(Step::Commit),
            "think" => return self.think_step(&step),
            "parallel_query" => return self.parallel_query_step(&step, queries),
            "memory_writes" => return self.memory_writes_step(&step),
            _ => {}
        }
        let rows = self.opt_u32(&step, "rows", 1, u32::MAX, 1);
        if op == "nextval" {
            return self.nextval_step(&step, rows, catalog);
        }
        let (table, table_node) = self.step_table(&step, catalog)?;
        match op.as_str() {
            "count" => self.count_step(&step, table, rows, catalog),
            "insert" => self.insert_step(&step, table, table_node, rows, catalog),
            _ => self.row_step(&op, &step, table, rows, catalog),
        }
    }

    /// The step's `op`, one of `OPS`.
    fn step_op(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
        let table = node.as_table()?;
        let Some(op_entry) = table.get("op") else {
            self.err(
                node,
                path,
                format!("missing required key `op` (one of: {})", quoted_list(OPS)),
            );
            return None;
        };
        let op = self.string(&op_entry.node, &path.key("op"))?;
        if op_keys(&op).is_none() {
            self.err(
                &op_entry.node,
                &path.key("op"),
                format!(
                    "unknown op {} (one of: {}){}",
                    op_entry.node.describe(),
                    quoted_list(OPS),
                    suggest(&op, OPS)
                ),
            );
            return None;
        }
        Some(op)
    }

    /// `{ op = "think", ms }`: the session waits without a database call.
    fn think_step(&mut self, step: &TableView) -> Option<Step> {
        let ms = self.req(step, "ms")?;
        self.duration(ms, &step.at("ms"), NS_PER_MS, false)
            .map(|time| Step::Think { time })
    }

    /// `{ op = "memory_writes", ops }`: writes to the session's private
    /// memory, which only a `[server]` describes.
    fn memory_writes_step(&mut self, step: &TableView) -> Option<Step> {
        let ops = self.req(step, "ops")?;
        let ops = self.u32_limited(ops, &step.at("ops"), 1, MEMORY_OPS_MAX, MEMORY_OPS_WHY)?;
        if !self.has_server {
            let at = step.get("op").unwrap_or(step.node);
            self.err(
                at,
                &step.at("op"),
                "a `memory_writes` step needs a [server] description (its memory is what it measures)",
            );
            return None;
        }
        Some(Step::MemoryWrites { ops })
    }

    /// `{ op = "nextval", sequence, rows }`.
    fn nextval_step(&mut self, step: &TableView, rows: u32, catalog: &Catalog) -> Option<Step> {
        let node = self.req(step, "sequence")?;
        let sequence = self.sequence_ref(node, &step.at("sequence"), catalog)?;
        Some(Step::NextVal { sequence, rows })
    }

    /// A sequence named by a step.
    fn sequence_ref(&mut self, node: &Node, path: &KeyPath, catalog: &Catalog) -> Option<usize> {
        let name = self.string(node, path)?;
        let pos = catalog.sequences.iter().position(|s| s.name == name);
        if pos.is_none() {
            let names: Vec<String> = catalog.sequences.iter().map(|s| s.name.clone()).collect();
            self.err(
                node,
                path,
                format!(
                    "unknown sequence `{name}` (sequences: {})",
                    names_list(&names)
                ),
            );
        }
        pos
    }

    /// The step's `table`: its position in the catalog and the node naming it.
    fn step_table<'n>(
        &mut self,
        step: &TableView<'n>,
        catalog: &Catalog,
    ) -> Option<(usize, &'n Node)> {
        let table_node = self.req(step, "table")?;
        let table_name = self.string(table_node, &step.at("table"))?;
        let Some(table) = catalog.tables.iter().position(|t| t.name == table_name) else {
            let names: Vec<String> = catalog.tables.iter().map(|t| t.name.clone()).collect();
            self.err(
                table_node,
                &step.at("table"),
                format!(
                    "unknown table `{table_name}` (tables: {})",
                    names_list(&names)
                ),
            );
            return None;
        };
        Some((table, table_node))
    }

    /// `{ op = "insert", table, rows, key }`: new rows, keyed by
    /// `s.nextval` when `key = { sequence = "s" }`.
    fn insert_step(
        &mut self,
        step: &TableView,
        table: usize,
        table_node: &Node,
        rows: u32,
        catalog: &Catalog,
    ) -> Option<Step> {
        let def = &catalog.tables[table];
        let bitmap = catalog
            .indexes
            .iter()
            .any(|i| i.table == table && i.kind == IndexKind::Bitmap);
        if def.partition_by_org || bitmap {
            self.err(
                table_node,
                &step.at("table"),
                format!(
                    "inserts into `{}` are not modelled: it is {}",
                    def.name,
                    if bitmap {
                        "indexed by a bitmap index"
                    } else {
                        "partitioned"
                    }
                ),
            );
            return None;
        }
        let Some(key) = step.get("key") else {
            return Some(Step::Insert { table, rows });
        };
        let key_table = self.table(key, &step.at("key"), &["sequence"])?;
        let node = self.req(&key_table, "sequence")?;
        let sequence = self.sequence_ref(node, &key_table.at("sequence"), catalog)?;
        Some(Step::InsertSeq {
            table,
            rows,
            sequence,
        })
    }

    /// `{ op = "read" | "update", table, via, keys, rows, org }`.
    fn row_step(
        &mut self,
        op: &str,
        step: &TableView,
        table: usize,
        rows: u32,
        catalog: &Catalog,
    ) -> Option<Step> {
        let access = self.access_path(op, step, table, catalog)?;
        let mut keys = match step.get("keys") {
            Some(node) => self.key_spec(node, &step.at("keys"))?,
            None => uniform_keys(),
        };
        if let Some(node) = step.get("org") {
            let def = &catalog.tables[table];
            keys.org = Some(self.org_filter(node, &step.at("org"), def, &access)?);
        }
        Some(match op {
            "read" => Step::Read {
                table,
                access,
                keys,
                rows,
            },
            _ => Step::Update {
                table,
                access,
                keys,
                rows,
            },
        })
    }

    /// `via`: "full_scan" (reads only) or a B-tree index on the step's table.
    fn access_path(
        &mut self,
        op: &str,
        step: &TableView,
        table: usize,
        catalog: &Catalog,
    ) -> Option<Access> {
        let via_node = self.req(step, "via")?;
        let via = self.string(via_node, &step.at("via"))?;
        if via != "full_scan" {
            return self.index_access(op, &via, via_node, &step.at("via"), table, catalog);
        }
        if op == "update" {
            self.err(
                via_node,
                &step.at("via"),
                format!(
                    "an update needs an index, not a full scan (indexes on `{}`: {})",
                    catalog.tables[table].name,
                    names_list(&indexes_on(catalog, table))
                ),
            );
            return None;
        }
        for key in ["keys", "rows"] {
            if let Some(e) = step.entry(key) {
                self.err_key(
                    e,
                    &step.at(key),
                    format!("`{key}` does not apply to a full scan (it reads every row once)"),
                );
            }
        }
        Some(Access::FullScan)
    }

    /// `via = "<index>"`: a B-tree index on the step's table.
    fn index_access(
        &mut self,
        op: &str,
        via: &str,
        via_node: &Node,
        path: &KeyPath,
        table: usize,
        catalog: &Catalog,
    ) -> Option<Access> {
        let table_name = &catalog.tables[table].name;
        let on_table = indexes_on(catalog, table);
        let Some(index) = catalog.indexes.iter().position(|i| i.name == via) else {
            self.err(via_node, path, format!(
                "unknown index `{via}` (indexes on `{table_name}`: {}; or \"full_scan\" for a read)",
                names_list(&on_table)
            ));
            return None;
        };
        let def = &catalog.indexes[index];
        if def.table == table && def.kind == IndexKind::Bitmap {
            self.err(via_node, path, format!(
                "`{via}` is a bitmap index: it answers `count` steps; a {op} goes through a B-tree (indexes on `{table_name}`: {}) or a full scan",
                names_list(&on_table)
            ));
            return None;
        }
        if def.table == table {
            return Some(Access::Index(index));
        }
        // The index names an unknown table, which is reported there.
        if def.table >= catalog.tables.len() {
            return None;
        }
        let other = catalog
            .tables
            .get(def.table)
            .map_or("another table".to_string(), |t| format!("`{}`", t.name));
        self.err(via_node, path, format!(
            "index `{via}` is on {other}, not on `{table_name}` (indexes on `{table_name}`: {}; or \"full_scan\")",
            names_list(&on_table)
        ));
        None
    }

    /// `org`: the one organisation whose rows an indexed step touches.
    fn org_filter(
        &mut self,
        node: &Node,
        path: &KeyPath,
        table: &TableDef,
        access: &Access,
    ) -> Option<u32> {
        if table.orgs < 2 {
            self.err(
                node,
                path,
                format!(
                    "table `{}` has one organisation: give it `orgs` to filter on org",
                    table.name
                ),
            );
            return None;
        }
        if *access == Access::FullScan {
            self.err(
                node,
                path,
                "`org` does not apply to a full scan (it reads every row once)",
            );
            return None;
        }
        self.u32_in(node, path, 1, table.orgs)
    }

    /// `{ op = "count", table, via = <bitmap index>, values, rows }`:
    /// `select count(*) ... where val = :v`, `v` drawn from the table's
    /// values (`values` is a key distribution over `1..=distinct_values`).
    fn count_step(
        &mut self,
        step: &TableView,
        table: usize,
        rows: u32,
        catalog: &Catalog,
    ) -> Option<Step> {
        let def = &catalog.tables[table];
        let via_node = self.req(step, "via")?;
        let via = self.string(via_node, &step.at("via"))?;
        let bitmaps: Vec<String> = catalog
            .indexes
            .iter()
            .filter(|i| i.table == table && i.kind == IndexKind::Bitmap)
            .map(|i| i.name.clone())
            .collect();
        let Some(index) = catalog
            .indexes
            .iter()
            .position(|i| i.name == via && i.table == table && i.kind == IndexKind::Bitmap)
        else {
            self.err(
                via_node,
                &step.at("via"),
                format!(
                    "a count goes through a bitmap index on `{}` (bitmap indexes: {})",
                    def.name,
                    names_list(&bitmaps)
                ),
            );
            return None;
        };
        let values = match step.get("values") {
            Some(node) => {
                let spec = self.key_spec(node, &step.at("values"))?;
                if let Some((_, hi)) = spec.range
                    && hi > u64::from(def.distinct_values)
                {
                    self.err(
                        node,
                        &step.at("values"),
                        format!(
                            "values go up to {} on `{}` (its distinct_values), range ends at {hi}",
                            def.distinct_values, def.name
                        ),
                    );
                    return None;
                }
                spec
            }
            None => uniform_keys(),
        };
        Some(Step::Count {
            table,
            index,
            values,
            rows,
        })
    }

    /// `keys` or `values`: a distribution's name or a table such as
    /// `{ dist = "hot", fraction = 0.01, share = 0.9, range = [1, 500] }`.
    fn key_spec(&mut self, node: &Node, path: &KeyPath) -> Option<KeySpec> {
        match &node.val {
            Val::Str(_) => self.key_dist(node, path).map(|dist| KeySpec {
                dist,
                range: None,
                org: None,
            }),
            Val::Table(_) => self.key_spec_table(node, path),
            _ => {
                self.err(node, path, format!(
                    "expected \"uniform\", \"sequential\", \"hot\" or a table such as {{ dist = \"hot\", fraction = 0.01, share = 0.9 }}, found {}",
                    node.describe()
                ));
                None
            }
        }
    }

    /// A distribution's name, with the defaults of its parameters.
    fn key_dist(&mut self, node: &Node, path: &KeyPath) -> Option<KeyDist> {
        let name = self.string(node, path)?;
        let dist = key_dist_named(&name);
        if dist.is_none() {
            self.err(
                node,
                path,
                format!(
                    "unknown key distribution {} (one of: {})",
                    node.describe(),
                    quoted_list(KEY_DISTS)
                ),
            );
        }
        dist
    }

    /// `{ dist, fraction, share, range }`.
    fn key_spec_table(&mut self, node: &Node, path: &KeyPath) -> Option<KeySpec> {
        let spec = self.table(node, path, &["dist", "fraction", "share", "range"])?;
        let dist_node = self.req(&spec, "dist")?;
        let mut dist = self.key_dist(dist_node, &spec.at("dist"))?;
        let mut ok = true;
        if let KeyDist::Hot { fraction, share } = &mut dist {
            ok &= self.hot_shape(&spec, fraction, share);
        } else {
            for key in ["fraction", "share"] {
                if let Some(e) = spec.entry(key) {
                    self.err_key(
                        e,
                        &spec.at(key),
                        format!("`{key}` applies only to dist = \"hot\""),
                    );
                    ok = false;
                }
            }
        }
        let mut range = None;
        if let Some(node) = spec.get("range") {
            range = self.key_range(node, &spec.at("range"));
            ok &= range.is_some();
        }
        ok.then_some(KeySpec {
            dist,
            range,
            org: None,
        })
    }

    /// `fraction` and `share` of a "hot" distribution: `share` of the
    /// visits go to the first `fraction` of the keys. False on a problem.
    fn hot_shape(&mut self, spec: &TableView, fraction: &mut f64, share: &mut f64) -> bool {
        let mut ok = true;
        if let Some(node) = spec.get("fraction") {
            match self.number(node, &spec.at("fraction"), Bound::Fraction) {
                Some(f) => *fraction = f,
                None => ok = false,
            }
        }
        if let Some(node) = spec.get("share") {
            match self.number(node, &spec.at("share"), Bound::Share) {
                Some(f) => *share = f,
                None => ok = false,
            }
        }
        ok
    }

    /// `range = [lo, hi]`: keys `lo..=hi`.
    fn key_range(&mut self, node: &Node, path: &KeyPath) -> Option<(u64, u64)> {
        if let Val::Array(items) = &node.val
            && let [lo_node, hi_node] = items.as_slice()
            && let (Val::Int(lo), Val::Int(hi)) = (&lo_node.val, &hi_node.val)
            && 1 <= *lo
            && lo <= hi
        {
            if *hi > KEYS_MAX {
                self.err(
                    hi_node,
                    &path.index(1),
                    format!(
                        "expected at most {}, found {hi}: {KEYS_WHY}",
                        grouped(KEYS_MAX.unsigned_abs())
                    ),
                );
                return None;
            }
            return Some((lo.unsigned_abs(), hi.unsigned_abs()));
        }
        self.err(
            node,
            path,
            format!(
                "expected [lo, hi] with 1 <= lo <= hi, found {}",
                describe_deep(node)
            ),
        );
        None
    }
}
