//! The schema: `[[table]]`, `[[index]]` (B-tree or bitmap, global or
//! local, reverse key) and `[[sequence]]`.

use fusion_core::config::{Catalog, IndexDef, IndexKind, SequenceDef, TableDef};

use super::limits::{ENTRIES_MAX, ENTRIES_WHY, KEYS_MAX, KEYS_WHY};
use super::problems::{Validator, names_list};
use super::read::{TableView, describe_deep};
use crate::tree::{KeyPath, Node, Val};

const TABLE_KEYS: &[&str] = &[
    "name",
    "rows",
    "rows_per_block",
    "free_blocks_per_instance",
    "orgs",
    "partition_by",
    "distinct_values",
];
const INDEX_KEYS: &[&str] = &[
    "name",
    "table",
    "entries_per_leaf",
    "entries_per_branch",
    "free_blocks_per_instance",
    "reverse",
    "kind",
    "local",
    "columns",
    "rows_per_piece",
];
const SEQUENCE_KEYS: &[&str] = &["name", "cache", "order", "start", "increment"];
/// Organisations a table may have.
const ORGS_MAX: u32 = 1000;
/// Oracle's default sequence cache.
const SEQUENCE_CACHE_DEFAULT: u32 = 20;

/// What `[[index]]` says about an index's kind.
struct IndexShape {
    kind: IndexKind,
    local: bool,
    includes_value: bool,
    rows_per_piece: u32,
}

impl Validator<'_> {
    /// Tables and indexes. Entries with errors still take their place so
    /// later references resolve and do not report the same mistake again.
    pub(super) fn catalog(&mut self, tables: Option<&Node>, indexes: Option<&Node>) -> Catalog {
        let mut catalog = Catalog::default();
        let mut seen = Vec::new();
        if let Some(node) = tables {
            for (item, path) in self.tables(node, &KeyPath::root().key("table"), "table") {
                if let Some(def) = self.table_def(item, &path, &mut seen) {
                    catalog.tables.push(def);
                }
            }
        }
        let mut seen = Vec::new();
        if let Some(node) = indexes {
            for (item, path) in self.tables(node, &KeyPath::root().key("index"), "index") {
                if let Some(def) = self.index_def(item, &path, &catalog.tables, &mut seen) {
                    catalog.indexes.push(def);
                }
            }
        }
        catalog
    }

    /// One `[[table]]`; `None` only when it is not a table at all.
    fn table_def(
        &mut self,
        node: &Node,
        path: &KeyPath,
        seen: &mut Vec<(String, Node)>,
    ) -> Option<TableDef> {
        let table = self.table(node, path, TABLE_KEYS)?;
        let name = self.req(&table, "name").and_then(|node| {
            let name = self.name(node, &table.at("name"))?;
            self.unique(seen, &name, node, &table.at("name"), "table");
            Some(name)
        });
        let rows = self
            .req(&table, "rows")
            .and_then(|v| self.int_limited(v, &table.at("rows"), 1, KEYS_MAX, KEYS_WHY));
        let rows_per_block = self
            .req(&table, "rows_per_block")
            .and_then(|v| self.u32_in(v, &table.at("rows_per_block"), 1, 1000));
        let orgs = self.opt_u32(&table, "orgs", 1, ORGS_MAX, 1);
        let partition_by_org = self.partition_by_org(&table, orgs);
        Some(TableDef {
            name: name.unwrap_or_default(),
            rows: rows.and_then(|r| u64::try_from(r).ok()).unwrap_or(1),
            rows_per_block: rows_per_block.unwrap_or(1),
            free_blocks_per_instance: self.opt_u32(
                &table,
                "free_blocks_per_instance",
                0,
                u32::MAX,
                256,
            ),
            orgs,
            partition_by_org,
            distinct_values: self.opt_u32(&table, "distinct_values", 1, u32::MAX, 0),
        })
    }

    /// `partition_by = "org"`, for a table of several organisations.
    fn partition_by_org(&mut self, table: &TableView, orgs: u32) -> bool {
        let Some(node) = table.get("partition_by") else {
            return false;
        };
        match self.string(node, &table.at("partition_by")).as_deref() {
            Some("org") if orgs >= 2 => true,
            Some("org") => {
                self.err(
                    node,
                    &table.at("partition_by"),
                    "partitioning by org needs `orgs` >= 2 on the table",
                );
                false
            }
            Some(other) => {
                self.err(
                    node,
                    &table.at("partition_by"),
                    format!(
                        "unknown partitioning column `{other}` (tables are partitioned by \"org\")"
                    ),
                );
                false
            }
            None => false,
        }
    }

    /// One `[[index]]`; `None` only when it is not a table at all. An
    /// unknown table leaves `table` at `usize::MAX`.
    fn index_def(
        &mut self,
        node: &Node,
        path: &KeyPath,
        tables: &[TableDef],
        seen: &mut Vec<(String, Node)>,
    ) -> Option<IndexDef> {
        let index = self.table(node, path, INDEX_KEYS)?;
        let name = self.req(&index, "name").and_then(|node| {
            let name = self.name(node, &index.at("name"))?;
            if name == "full_scan" {
                self.err(
                    node,
                    &index.at("name"),
                    "`full_scan` is reserved (it names the full-scan access path)",
                );
            }
            self.unique(seen, &name, node, &index.at("name"), "index");
            Some(name)
        });
        let table = self.req(&index, "table").and_then(|node| {
            let table_name = self.string(node, &index.at("table"))?;
            let pos = tables.iter().position(|t| t.name == table_name);
            if pos.is_none() {
                let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
                self.err(
                    node,
                    &index.at("table"),
                    format!(
                        "unknown table `{table_name}` (tables: {})",
                        names_list(&names)
                    ),
                );
            }
            pos
        });
        let def = table.and_then(|t| tables.get(t));
        let shape = self.index_shape(&index, def);
        Some(IndexDef {
            name: name.unwrap_or_default(),
            table: table.unwrap_or(usize::MAX),
            entries_per_leaf: self.opt_u32_limited(
                &index,
                "entries_per_leaf",
                (4, ENTRIES_MAX),
                ENTRIES_WHY,
                250,
            ),
            entries_per_branch: self.opt_u32_limited(
                &index,
                "entries_per_branch",
                (4, ENTRIES_MAX),
                ENTRIES_WHY,
                250,
            ),
            free_blocks_per_instance: self.opt_u32(
                &index,
                "free_blocks_per_instance",
                0,
                u32::MAX,
                64,
            ),
            reverse: self.reverse_flag(&index, &shape),
            kind: shape.kind,
            local: shape.local,
            includes_value: shape.includes_value,
            rows_per_piece: shape.rows_per_piece,
        })
    }

    /// `reverse`: a reverse key index, for a plain B-tree on the key only.
    fn reverse_flag(&mut self, index: &TableView, shape: &IndexShape) -> bool {
        let reverse = self.opt_bool(index, "reverse", false);
        if reverse
            && (shape.kind != IndexKind::BTree || shape.local || shape.includes_value)
            && let Some(node) = index.get("reverse")
        {
            self.err(
                node,
                &index.at("reverse"),
                "a reverse key index is a global B-tree on the key only (not bitmap, local or on [\"key\", \"val\"])",
            );
        }
        reverse
    }

    /// The kind of an index and what goes with it: `kind` ("btree" or
    /// "bitmap"), `local` (partitioned tables only), `columns` (["key"] or
    /// ["key", "val"] for a B-tree, ["val"] for a bitmap index), `rows_per_piece`
    /// (bitmap only; default: the whole table, one piece per value).
    fn index_shape(&mut self, index: &TableView, table: Option<&TableDef>) -> IndexShape {
        let mut shape = IndexShape {
            kind: self.index_kind(index),
            local: false,
            includes_value: false,
            // One piece per value by default; a table of more rows than a
            // piece can count gets pieces of the most it can.
            rows_per_piece: table.map_or(1, |t| u32::try_from(t.rows).unwrap_or(u32::MAX)),
        };
        let bitmap = shape.kind == IndexKind::Bitmap;
        if let Some(node) = index.get("local") {
            match node.val {
                Val::Bool(b) => shape.local = b,
                _ => self.err(
                    node,
                    &index.at("local"),
                    format!("expected true or false, found {}", node.describe()),
                ),
            }
            if shape.local && !table.is_some_and(|t| t.partition_by_org) {
                self.err(
                    node,
                    &index.at("local"),
                    "a local index needs a partitioned table (partition_by = \"org\")",
                );
            }
        }
        if let Some(node) = index.get("columns") {
            shape.includes_value = self.index_columns(node, &index.at("columns"), bitmap);
        }
        if let Some(node) = index.get("rows_per_piece") {
            if bitmap {
                if let Some(rows) = self.u32_in(node, &index.at("rows_per_piece"), 1, u32::MAX) {
                    shape.rows_per_piece = rows;
                }
            } else {
                self.err(
                    node,
                    &index.at("rows_per_piece"),
                    "`rows_per_piece` applies only to kind = \"bitmap\"",
                );
            }
        }
        if bitmap {
            self.check_bitmap_table(index, table);
        }
        shape
    }

    /// `kind`: "btree" (the default) or "bitmap".
    fn index_kind(&mut self, index: &TableView) -> IndexKind {
        let Some(node) = index.get("kind") else {
            return IndexKind::BTree;
        };
        match self.string(node, &index.at("kind")).as_deref() {
            Some("bitmap") => IndexKind::Bitmap,
            Some("btree") | None => IndexKind::BTree,
            Some(other) => {
                self.err(
                    node,
                    &index.at("kind"),
                    format!("unknown index kind `{other}` (\"btree\" or \"bitmap\")"),
                );
                IndexKind::BTree
            }
        }
    }

    /// `columns`: whether a B-tree index also holds the value column.
    fn index_columns(&mut self, node: &Node, path: &KeyPath, bitmap: bool) -> bool {
        let columns: Option<Vec<String>> = match &node.val {
            Val::Array(items) => items
                .iter()
                .map(|i| match &i.val {
                    Val::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        let columns: Vec<&str> = columns.iter().flatten().map(String::as_str).collect();
        match (bitmap, columns.as_slice()) {
            (false, ["key"]) | (true, ["val"]) => false,
            (false, ["key", "val"]) => true,
            _ => {
                self.err(
                    node,
                    path,
                    format!(
                        "expected {}, found {}",
                        if bitmap {
                            "[\"val\"] (a bitmap index is on the value column)"
                        } else {
                            "[\"key\"] or [\"key\", \"val\"]"
                        },
                        describe_deep(node)
                    ),
                );
                false
            }
        }
    }

    /// A bitmap index needs a table with values and without partitions.
    fn check_bitmap_table(&mut self, index: &TableView, table: Option<&TableDef>) {
        let at = index.get("kind").unwrap_or(index.node);
        match table {
            Some(t) if t.distinct_values == 0 => self.err(
                at,
                &index.at("kind"),
                format!(
                    "a bitmap index is on the value column: give table `{}` `distinct_values`",
                    t.name
                ),
            ),
            Some(t) if t.partition_by_org => self.err(
                at,
                &index.at("kind"),
                format!(
                    "bitmap indexes on a partitioned table (`{}`) are not modelled",
                    t.name
                ),
            ),
            _ => {}
        }
    }

    /// `[[sequence]]`: `cache` is an integer >= 2 or "nocache" (default 20, as
    /// Oracle's), `order` a boolean (default false), `start` and `increment`
    /// positive integers (default 1): values key inserted rows.
    pub(super) fn sequences(&mut self, node: &Node) -> Vec<SequenceDef> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("sequence"), "sequence") {
            let Some(sequence) = self.table(item, &path, SEQUENCE_KEYS) else {
                continue;
            };
            let name = self.req(&sequence, "name").and_then(|node| {
                let name = self.name(node, &sequence.at("name"))?;
                self.unique(&mut seen, &name, node, &sequence.at("name"), "sequence");
                Some(name)
            });
            let cache = self.sequence_cache(&sequence);
            let order = self.opt_bool(&sequence, "order", false);
            let start = sequence
                .get("start")
                .and_then(|v| self.int(v, &sequence.at("start"), 1, i64::from(u32::MAX)))
                .unwrap_or(1);
            let increment = sequence
                .get("increment")
                .and_then(|v| self.int(v, &sequence.at("increment"), 1, 1_000_000))
                .unwrap_or(1);
            out.push(SequenceDef {
                name: name.unwrap_or_default(),
                cache,
                order,
                start,
                increment,
            });
        }
        out
    }

    /// `cache`: the values an instance takes at once, 0 for "nocache".
    fn sequence_cache(&mut self, sequence: &TableView) -> u32 {
        let Some(node) = sequence.get("cache") else {
            return SEQUENCE_CACHE_DEFAULT;
        };
        match &node.val {
            Val::Str(s) if s.eq_ignore_ascii_case("nocache") => 0,
            Val::Int(_) => self
                .u32_in(node, &sequence.at("cache"), 2, 1_000_000_000)
                .unwrap_or(SEQUENCE_CACHE_DEFAULT),
            _ => {
                self.err(
                    node,
                    &sequence.at("cache"),
                    format!(
                        "expected an integer in 2..=1000000000 or \"nocache\", found {}",
                        node.describe()
                    ),
                );
                SEQUENCE_CACHE_DEFAULT
            }
        }
    }
}
