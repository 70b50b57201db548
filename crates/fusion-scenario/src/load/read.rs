//! Readers every section shares: tables with their allowed keys, required
//! keys, strings, names, integers and numbers in bounds, durations in a unit,
//! booleans, unique names and instance numbers. Each reports what it finds
//! wrong and answers `None` (or the default) so reading goes on.

use fusion_core::config::Nanos;

use super::INSTANCES_MAX;
use super::problems::{Validator, line_col, suggest};
use crate::tree::{Entry, KeyPath, Node, Origin, Table, Val, format_float};

/// Longest a duration may be (about 31 years), so arithmetic on the timeline
/// cannot overflow.
const DURATION_NS_MAX: f64 = 1e18;

/// A table of the file being read: its node (for problems about the table as
/// a whole, such as a missing key), its entries, and its key path (for
/// problems about one of its keys).
pub(super) struct TableView<'n> {
    pub(super) node: &'n Node,
    table: &'n Table,
    path: KeyPath,
}

impl<'n> TableView<'n> {
    pub(super) fn get(&self, key: &str) -> Option<&'n Node> {
        self.table.get(key).map(|e| &e.node)
    }
    pub(super) fn entry(&self, key: &str) -> Option<&'n Entry> {
        self.table.get(key)
    }
    /// The path of one of its keys.
    pub(super) fn at(&self, key: &str) -> KeyPath {
        self.path.key(key)
    }
}

/// Bounds of a number.
#[derive(Clone, Copy)]
pub(super) enum Bound {
    /// `>= 0`
    NonNeg,
    /// `> 0`
    Pos,
    /// `(0, 1]`
    Fraction,
    /// `[0, 1]`
    Share,
    /// any finite number
    Finite,
}

impl Bound {
    fn holds(self, v: f64) -> bool {
        v.is_finite()
            && match self {
                Bound::NonNeg => v >= 0.0,
                Bound::Pos => v > 0.0,
                Bound::Fraction => v > 0.0 && v <= 1.0,
                Bound::Share => (0.0..=1.0).contains(&v),
                Bound::Finite => true,
            }
    }
    fn describe(self) -> &'static str {
        match self {
            Bound::NonNeg => "a number >= 0",
            Bound::Pos => "a number > 0",
            Bound::Fraction => "a number in (0, 1]",
            Bound::Share => "a number in [0, 1]",
            Bound::Finite => "a finite number",
        }
    }
}

/// `1,099,511,627,776`.
fn grouped_i64(v: i64) -> String {
    let sign = if v < 0 { "-" } else { "" };
    format!("{sign}{}", super::limits::grouped(v.unsigned_abs()))
}

fn int_desc(min: i64, max: i64) -> String {
    let unbounded = max >= i64::from(u32::MAX);
    match (min, unbounded) {
        (1, true) => "a positive integer".to_string(),
        (0, true) => "a non-negative integer".to_string(),
        (_, true) => format!("an integer >= {min}"),
        _ => format!("an integer in {min}..={max}"),
    }
}

/// A value with the contents of a short array, for messages.
pub(super) fn describe_deep(node: &Node) -> String {
    match &node.val {
        Val::Array(items) if items.len() <= 4 => {
            let parts: Vec<String> = items
                .iter()
                .map(|n| match &n.val {
                    Val::Float(f) => format_float(*f),
                    _ => n.describe(),
                })
                .collect();
            format!("[{}]", parts.join(", "))
        }
        _ => node.describe(),
    }
}

impl Validator<'_> {
    /// `node` must be a table whose keys are all in `allowed`.
    pub(super) fn table<'n>(
        &mut self,
        node: &'n Node,
        path: &KeyPath,
        allowed: &[&str],
    ) -> Option<TableView<'n>> {
        let Some(table) = node.as_table() else {
            self.err(
                node,
                path,
                format!("expected a table, found {}", node.describe()),
            );
            return None;
        };
        for e in &table.entries {
            if !allowed.contains(&e.key.as_str()) {
                let message = format!(
                    "unknown key `{}` (valid here: {}{})",
                    e.key,
                    allowed.join(", "),
                    suggest(&e.key, allowed)
                );
                self.err_key(e, &path.key(&e.key), message);
            }
        }
        Some(TableView {
            node,
            table,
            path: path.clone(),
        })
    }

    /// A key the table must have.
    pub(super) fn req<'n>(&mut self, table: &TableView<'n>, key: &str) -> Option<&'n Node> {
        let found = table.get(key);
        if found.is_none() {
            self.err(
                table.node,
                &table.path,
                format!("missing required key `{key}`"),
            );
        }
        found
    }

    /// An array of tables (`[[name]]` or `name = [{...}]`).
    pub(super) fn tables<'n>(
        &mut self,
        node: &'n Node,
        path: &KeyPath,
        header: &str,
    ) -> Vec<(&'n Node, KeyPath)> {
        let Val::Array(items) = &node.val else {
            self.err(
                node,
                path,
                format!(
                    "expected an array of tables ([[{header}]]), found {}",
                    node.describe()
                ),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let item_path = path.index(i);
            if item.as_table().is_some() {
                out.push((item, item_path));
            } else {
                self.err(
                    item,
                    &item_path,
                    format!("expected a table, found {}", item.describe()),
                );
            }
        }
        out
    }

    pub(super) fn string(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
        match &node.val {
            Val::Str(s) => Some(s.clone()),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected a string, found {}", node.describe()),
                );
                None
            }
        }
    }

    /// A name: a non-empty string.
    pub(super) fn name(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
        let s = self.string(node, path)?;
        if s.trim().is_empty() {
            self.err(node, path, "expected a non-empty name");
            return None;
        }
        Some(s)
    }

    pub(super) fn int(&mut self, node: &Node, path: &KeyPath, min: i64, max: i64) -> Option<i64> {
        match node.val {
            Val::Int(v) if (min..=max).contains(&v) => Some(v),
            Val::Int(v) if v > max && max >= i64::from(u32::MAX) => {
                self.err(
                    node,
                    path,
                    format!("expected {}, found {v} (at most {max})", int_desc(min, max)),
                );
                None
            }
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected {}, found {}", int_desc(min, max), node.describe()),
                );
                None
            }
        }
    }

    /// An integer in `min..=max` where `max` is one of the model's limits:
    /// above it the message names the limit and says why (`why`).
    pub(super) fn int_limited(
        &mut self,
        node: &Node,
        path: &KeyPath,
        min: i64,
        max: i64,
        why: &str,
    ) -> Option<i64> {
        if let Val::Int(v) = node.val
            && v > max
        {
            self.err(
                node,
                path,
                format!("expected at most {}, found {v}: {why}", grouped_i64(max)),
            );
            return None;
        }
        self.int(node, path, min, max)
    }

    /// [`Validator::int_limited`] for a `u32`.
    pub(super) fn u32_limited(
        &mut self,
        node: &Node,
        path: &KeyPath,
        min: u32,
        max: u32,
        why: &str,
    ) -> Option<u32> {
        self.int_limited(node, path, i64::from(min), i64::from(max), why)
            .and_then(|v| u32::try_from(v).ok())
    }

    /// An optional integer key of a table, with a limit (see [`Validator::int_limited`]).
    pub(super) fn opt_u32_limited(
        &mut self,
        table: &TableView,
        key: &str,
        (min, max): (u32, u32),
        why: &str,
        default: u32,
    ) -> u32 {
        table
            .get(key)
            .and_then(|node| self.u32_limited(node, &table.at(key), min, max, why))
            .unwrap_or(default)
    }

    pub(super) fn u32_in(
        &mut self,
        node: &Node,
        path: &KeyPath,
        min: u32,
        max: u32,
    ) -> Option<u32> {
        self.int(node, path, i64::from(min), i64::from(max))
            .and_then(|v| u32::try_from(v).ok())
    }

    /// An optional integer key of a table.
    pub(super) fn opt_u32(
        &mut self,
        table: &TableView,
        key: &str,
        min: u32,
        max: u32,
        default: u32,
    ) -> u32 {
        table
            .get(key)
            .and_then(|node| self.u32_in(node, &table.at(key), min, max))
            .unwrap_or(default)
    }

    pub(super) fn number(&mut self, node: &Node, path: &KeyPath, bound: Bound) -> Option<f64> {
        let v = match node.val {
            Val::Int(i) => i as f64,
            Val::Float(f) => f,
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected {}, found {}", bound.describe(), node.describe()),
                );
                return None;
            }
        };
        if !bound.holds(v) {
            self.err(
                node,
                path,
                format!("expected {}, found {}", bound.describe(), node.describe()),
            );
            return None;
        }
        Some(v)
    }

    /// A time written in a unit of `ns_per_unit` nanoseconds, in nanoseconds.
    pub(super) fn duration(
        &mut self,
        node: &Node,
        path: &KeyPath,
        ns_per_unit: u64,
        positive: bool,
    ) -> Option<Nanos> {
        let bound = if positive { Bound::Pos } else { Bound::NonNeg };
        let v = self.number(node, path, bound)?;
        let ns = (v * ns_per_unit as f64).round();
        if ns > DURATION_NS_MAX {
            self.err(
                node,
                path,
                format!("{} is too long (at most about 31 years)", node.describe()),
            );
            return None;
        }
        if positive && ns < 1.0 {
            self.err(
                node,
                path,
                format!("{} is too short (less than a nanosecond)", node.describe()),
            );
            return None;
        }
        Some(ns as Nanos)
    }

    /// A duration of at most `max` nanoseconds (written `max_text` in the
    /// key's unit), one of the model's limits: above it the message says why.
    pub(super) fn duration_limited(
        &mut self,
        node: &Node,
        path: &KeyPath,
        (ns_per_unit, positive): (u64, bool),
        (max, max_text): (Nanos, &str),
        why: &str,
    ) -> Option<Nanos> {
        let ns = self.duration(node, path, ns_per_unit, positive)?;
        if ns > max {
            self.err(
                node,
                path,
                format!(
                    "expected at most {max_text}, found {}: {why}",
                    node.describe()
                ),
            );
            return None;
        }
        Some(ns)
    }

    /// An optional duration key of a table.
    pub(super) fn opt_duration(
        &mut self,
        table: &TableView,
        key: &str,
        ns_per_unit: u64,
        positive: bool,
        default: Nanos,
    ) -> Nanos {
        table
            .get(key)
            .and_then(|node| self.duration(node, &table.at(key), ns_per_unit, positive))
            .unwrap_or(default)
    }

    /// An optional boolean key of a table.
    pub(super) fn opt_bool(&mut self, table: &TableView, key: &str, default: bool) -> bool {
        let Some(node) = table.get(key) else {
            return default;
        };
        match node.val {
            Val::Bool(b) => b,
            _ => {
                self.err(
                    node,
                    &table.at(key),
                    format!("expected true or false, found {}", node.describe()),
                );
                default
            }
        }
    }

    /// `seen` holds names already defined with their node; reports a duplicate.
    pub(super) fn unique(
        &mut self,
        seen: &mut Vec<(String, Node)>,
        name: &str,
        node: &Node,
        path: &KeyPath,
        what: &str,
    ) {
        if let Some((_, first)) = seen.iter().find(|(seen_name, _)| seen_name == name) {
            let whence = match (&first.origin, &first.span) {
                (Origin::File, Some(r)) => format!(
                    " (first defined on line {})",
                    line_col(self.text, r.start).0
                ),
                _ => String::new(),
            };
            self.err(
                node,
                path,
                format!("duplicate {what} name `{name}`{whence}"),
            );
        } else {
            seen.push((name.to_string(), node.clone()));
        }
    }

    /// An instance number within the cluster (of `instance_count` instances
    /// when it is known).
    pub(super) fn instance(
        &mut self,
        node: &Node,
        path: &KeyPath,
        instance_count: Option<u8>,
    ) -> Option<u8> {
        if let (Val::Int(v), Some(count)) = (&node.val, instance_count)
            && (*v < 1 || *v > i64::from(count))
        {
            self.err(
                node,
                path,
                format!("instance {v} is out of range 1..={count} (cluster.instances = {count})"),
            );
            return None;
        }
        self.int(node, path, 1, i64::from(INSTANCES_MAX))
            .and_then(|v| u8::try_from(v).ok())
    }
}
