//! Reading and validating a scenario file into the model.

use std::path::Path;
use std::rc::Rc;

use fusion_core::config::{
    Access, Catalog, Costs, IndexDef, IndexKind, KeyDist, KeySpec, NS_PER_MS, NS_PER_S, NS_PER_US,
    Nanos, ParamValue, Params, SequenceDef, Step, TableDef, TxnTemplate, WorkloadSpec,
};
use fusion_core::metrics::Metric;

use crate::error::{At, Problem, ScenarioError};
use crate::model::{
    CmpOp, Device, Expectation, Fault, LinkTarget, LoadedScenario, MetricRef, NetworkModel,
    Operand, Phase, Scenario, StorageModel, TourSpec, Variant,
};
use crate::tree::{
    self, Entry, KeyPath, Node, Origin, Span, Table, Val, format_float, parse_path, parse_value,
    set_path, split_assignment,
};

mod px;

/// Read and validate a scenario file. `overrides` are `KEY=VALUE` texts from
/// the command line (`--set`); they apply to the file before its variants.
pub fn load_file(path: &Path, overrides: &[String]) -> Result<LoadedScenario, ScenarioError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
        path: label.clone(),
        source,
    })?;
    load_str(&text, &label, overrides)
}

/// Validate scenario text; `path_label` names it in messages.
pub fn load_str(
    text: &str,
    path_label: &str,
    overrides: &[String],
) -> Result<LoadedScenario, ScenarioError> {
    let mut ck = Checker {
        file: path_label,
        text,
        problems: Vec::new(),
    };
    let doc = match toml_edit::Document::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            // The parser stops at the first error it reports, which is not always
            // the first in the file (an unterminated string is found late); the
            // recovering parser lists them all and the earliest is the cause.
            let (_, all) = toml::de::DeTable::parse_recoverable(text);
            let earliest = all
                .iter()
                .filter(|x| x.span().is_some())
                .min_by_key(|x| x.span().map_or(0, |r| r.start));
            let (message, span) = match earliest {
                Some(x)
                    if x.span()
                        .is_some_and(|r| e.span().is_none_or(|s| r.start < s.start)) =>
                {
                    (x.message().trim().to_string(), x.span())
                }
                _ => (e.message().to_string(), e.span()),
            };
            let mut message = format!("TOML syntax error: {message}");
            if message.ends_with(": duplicate key")
                && let Some(key) = span.as_ref().and_then(|r| text.get(r.clone()))
            {
                message = format!("TOML syntax error: duplicate key `{key}`");
            }
            ck.push(&span, &Origin::File, None, None, message);
            return Err(ck.finish());
        }
    };
    let Some(mut root) = tree::from_item(doc.as_item()) else {
        ck.push(
            &None,
            &Origin::File,
            None,
            None,
            "the document is empty".to_string(),
        );
        return Err(ck.finish());
    };
    root.span = None;

    for o in overrides {
        ck.apply_set(&mut root, o);
    }
    if !ck.problems.is_empty() {
        return Err(ck.finish());
    }

    let root_path = KeyPath::root();
    ck.table(&root, &root_path, ROOT_KEYS);
    let meta = ck.meta(&root);
    let decls = ck.variant_decls(&root);
    let drafts = ck.expectations(&root);
    let tour_draft = ck.tour(&root);

    // Each variant (or the file alone) as a tree, then as a scenario.
    let has_variants = !decls.is_empty();
    let mut built: Vec<(String, String, Option<Scenario>)> = Vec::new();
    let mut per_variant: Vec<(String, Vec<Problem>)> = Vec::new();
    if has_variants {
        for (i, d) in decls.iter().enumerate() {
            let mut vck = Checker {
                file: path_label,
                text,
                problems: Vec::new(),
            };
            let mut vroot = root.clone();
            vck.apply_variant(&mut vroot, i, d);
            let scenario = if vck.problems.is_empty() {
                vck.scenario(&vroot)
            } else {
                None
            };
            built.push((d.name.clone(), d.description.clone(), scenario));
            per_variant.push((d.name.clone(), vck.problems));
        }
    } else {
        let mut vck = Checker {
            file: path_label,
            text,
            problems: Vec::new(),
        };
        let scenario = vck.scenario(&root);
        built.push((meta.name.clone(), String::new(), scenario));
        per_variant.push((meta.name.clone(), vck.problems));
    }
    ck.merge_variant_problems(per_variant, has_variants);

    let expectations = ck.check_expectations(drafts, &built, has_variants);
    let tour = tour_draft.and_then(|d| ck.check_tour(d, &built, has_variants));

    if !ck.problems.is_empty() {
        return Err(ck.finish());
    }
    let mut variants = Vec::new();
    for (name, description, scenario) in built {
        match scenario {
            Some(scenario) => variants.push(Variant {
                name,
                description,
                scenario,
            }),
            None => {
                ck.push(
                    &None,
                    &Origin::File,
                    None,
                    None,
                    format!("internal error: variant `{name}` was not built"),
                );
                return Err(ck.finish());
            }
        }
    }
    Ok(LoadedScenario {
        path: path_label.to_string(),
        name: meta.name,
        title: meta.title,
        myth: meta.myth,
        description: meta.description,
        variants,
        expectations,
        has_variants,
        tour,
    })
}

const ROOT_KEYS: &[&str] = &[
    "scenario",
    "cluster",
    "parameters",
    "costs",
    "network",
    "storage",
    "table",
    "index",
    "sequence",
    "query",
    "workload",
    "phase",
    "variant",
    "expect",
    "tour",
];
const SCENARIO_KEYS: &[&str] = &["name", "title", "myth", "description", "seed"];
/// What a variant's `set` may change.
const VARIANT_SETTABLE: &[&str] = &[
    "cluster",
    "parameters",
    "costs",
    "network",
    "storage",
    "table",
    "index",
    "sequence",
    "query",
    "workload",
    "phase",
    "scenario.seed",
];
const COST_KEYS: &[&str] = &[
    "execute_us",
    "consistent_get_us",
    "db_block_get_us",
    "row_examined_us",
    "row_change_us",
    "commit_us",
    "cr_build_us",
    "undo_apply_us",
    "lms_message_us",
    "lms_pin_us",
    "lms_send_us",
    "lgwr_write_us",
    "dbwr_write_us",
    "block_install_us",
    "bitmap_piece_us",
    "time_slice_ms",
    "px_row_send_us",
    "px_row_receive_us",
    "px_message_local_us",
    "px_message_remote_us",
    "px_server_start_ms",
];
const NETWORK_KEYS: &[&str] = &[
    "latency_us",
    "jitter_us",
    "bandwidth_mbps",
    "bandwidth_gbps",
    "message_bytes",
];
const STORAGE_KEYS: &[&str] = &[
    "read_latency_ms",
    "write_latency_ms",
    "log_write_latency_ms",
    "iops",
];
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
/// Organisations a table may have.
const MAX_ORGS: u32 = 1000;

/// What `[[index]]` says about an index's kind.
struct IndexShape {
    kind: IndexKind,
    local: bool,
    includes_value: bool,
    rows_per_piece: u32,
}
const SEQUENCE_KEYS: &[&str] = &["name", "cache", "order", "start", "increment"];
const WORKLOAD_KEYS: &[&str] = &[
    "name",
    "instances",
    "sessions_per_instance",
    "think_time_ms",
    "iterations",
    "transaction",
];
const TXN_KEYS: &[&str] = &["name", "weight", "steps"];
const OPS: &[&str] = &[
    "read",
    "update",
    "insert",
    "nextval",
    "count",
    "commit",
    "think",
    "parallel_query",
];
const PHASE_KEYS: &[&str] = &["name", "duration_s", "workloads", "parameters", "fault"];
const FAULT_KINDS: &[&str] = &["stress_cpu", "disk_latency", "latency", "bandwidth"];
const VARIANT_KEYS: &[&str] = &["name", "description", "set"];
const EXPECT_KEYS: &[&str] = &[
    "name", "metric", "phase", "instance", "variant", "op", "factor", "than", "value",
];
const THAN_KEYS: &[&str] = &["metric", "phase", "instance", "variant"];
const TOUR_KEYS: &[&str] = &["order", "measured", "versus", "label", "deck"];
const MEASURED_KEYS: &[&str] = &["metric", "phase", "instance", "variant"];
const MAX_INSTANCES: u8 = 16;
/// Largest transaction weight, so the weights of a workload always sum within a u32.
const MAX_WEIGHT: u32 = 1_000_000;
/// Longest time a duration may be (about 31 years), so arithmetic on the timeline cannot overflow.
const MAX_NANOS: f64 = 1e18;

struct Meta {
    name: String,
    title: String,
    myth: Option<String>,
    description: String,
}

struct VariantDecl {
    name: String,
    description: String,
    sets: Vec<SetItem>,
}

/// One `path = value` of a variant's `set`.
struct SetItem {
    segs: Vec<String>,
    /// The path as written, for messages.
    text: String,
    key_span: Span,
    key_origin: Origin,
    value: Node,
}

/// One side of an expectation, kept with the nodes it came from so the
/// checks against the variants can point at them.
#[derive(Clone)]
struct SideDraft {
    phase_node: Node,
    phase_path: KeyPath,
    instance: Option<(u8, Node, KeyPath)>,
    variant: Option<String>,
}

/// `[tour]` read, its `measured` side not yet checked against the variants.
struct TourDraft {
    tour: TourSpec,
    side: SideDraft,
    /// `measured.variant` as written, to check against the declared variants.
    variant_ref: Option<(String, Node, KeyPath)>,
    /// `versus`: the figures shown beside it, each checked the same way.
    versus: Vec<TourSide>,
}

/// One figure of `[tour]` as read: what it measures, where, and the variant named.
#[derive(Clone)]
struct TourSide {
    mref: MetricRef,
    side: SideDraft,
    variant_ref: Option<(String, Node, KeyPath)>,
}

struct ExpectDraft {
    expectation: Expectation,
    left: SideDraft,
    right: Option<SideDraft>,
    /// `variant` values to check against the declared variants.
    variant_refs: Vec<(String, Node, KeyPath)>,
}

/// A table being read, with where it is.
struct Tv<'n> {
    node: &'n Node,
    table: &'n Table,
    path: KeyPath,
}

impl<'n> Tv<'n> {
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.table.get(key).map(|e| &e.node)
    }
    fn entry(&self, key: &str) -> Option<&'n Entry> {
        self.table.get(key)
    }
    fn at(&self, key: &str) -> KeyPath {
        self.path.key(key)
    }
}

/// Bounds of a number.
#[derive(Clone, Copy)]
enum Bound {
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

/// A parameter assignment read from a `parameters` table.
struct ParamSetting {
    /// `None`: every instance.
    instance: Option<u8>,
    name: String,
    value: ParamValue,
    node: Node,
    path: KeyPath,
}

struct Checker<'a> {
    file: &'a str,
    text: &'a str,
    problems: Vec<Problem>,
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut o = offset.min(text.len());
    while o > 0 && !text.is_char_boundary(o) {
        o -= 1;
    }
    let before = text.get(..o).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
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

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let del = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let ins = cur.get(j).copied().unwrap_or(0) + 1;
            cur.push(sub.min(del).min(ins));
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

fn suggest(word: &str, choices: &[&str]) -> String {
    choices
        .iter()
        .map(|c| (edit_distance(&word.to_ascii_lowercase(), c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn names_list(names: &[String]) -> String {
    if names.is_empty() {
        "none defined".to_string()
    } else {
        names.join(", ")
    }
}

fn valid_scenario_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `instN` -> N (as written; range is checked by the caller).
fn instance_key(key: &str) -> Option<u64> {
    let digits = key.strip_prefix("inst")?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX))
}

impl<'a> Checker<'a> {
    fn finish(mut self) -> ScenarioError {
        // Command-line and position-less problems first, then in file order.
        self.problems.sort_by_key(|p| match &p.at {
            At::Nowhere => (0, 0, 0),
            At::Set(_) => (1, 0, 0),
            At::File { line, column } => (2, *line, *column),
        });
        let mut unique: Vec<Problem> = Vec::new();
        for p in self.problems {
            if !unique.contains(&p) {
                unique.push(p);
            }
        }
        ScenarioError::Invalid(unique)
    }

    fn file_at(&self, span: &Span) -> At {
        match span {
            Some(r) => {
                let (line, column) = line_col(self.text, r.start);
                At::File { line, column }
            }
            None => At::Nowhere,
        }
    }

    fn push(
        &mut self,
        span: &Span,
        origin: &Origin,
        key: Option<&KeyPath>,
        context: Option<String>,
        message: String,
    ) {
        let (at, from) = match origin {
            Origin::File => (self.file_at(span), None),
            Origin::Set(kv) => (At::Set(kv.to_string()), None),
            Origin::Variant(name) => (self.file_at(span), Some(format!("set by variant `{name}`"))),
        };
        let context = match (from, context) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        self.problems.push(Problem {
            file: self.file.to_string(),
            at,
            key: key.filter(|k| !k.is_root()).map(|k| k.to_string()),
            context,
            message,
        });
    }

    /// A problem with a value.
    fn err(&mut self, node: &Node, path: &KeyPath, message: impl Into<String>) {
        self.push(&node.span, &node.origin, Some(path), None, message.into());
    }

    /// A problem with a key itself.
    fn err_key(&mut self, entry: &Entry, path: &KeyPath, message: impl Into<String>) {
        self.push(
            &entry.key_span,
            &entry.key_origin,
            Some(path),
            None,
            message.into(),
        );
    }

    // ---- overrides -------------------------------------------------------

    fn apply_set(&mut self, root: &mut Node, text: &str) {
        let kv: Rc<str> = Rc::from(text.trim());
        let origin = Origin::Set(kv.clone());
        let fail = |ck: &mut Self, message: String| {
            ck.push(&None, &origin, None, None, message);
        };
        let Some((key, value)) = split_assignment(text) else {
            fail(
                self,
                "expected KEY=VALUE (e.g. `parameters.cpu_count=8`)".to_string(),
            );
            return;
        };
        let segs = match parse_path(key) {
            Ok(segs) => segs,
            Err(e) => {
                fail(self, format!("bad key path `{}`: {e}", key.trim()));
                return;
            }
        };
        if let Err(e) = set_path(root, &segs, parse_value(value), &origin, &None) {
            fail(self, e);
        }
    }

    fn apply_variant(&mut self, root: &mut Node, index: usize, d: &VariantDecl) {
        let origin = Origin::Variant(Rc::from(d.name.as_str()));
        for s in &d.sets {
            let path = KeyPath::root()
                .key("variant")
                .index(index)
                .key("set")
                .key(&s.text);
            let head = s.segs.first().map(String::as_str).unwrap_or("");
            let joined = s.segs.join(".");
            let allowed = joined == "scenario.seed"
                || (head != "scenario" && VARIANT_SETTABLE.contains(&head));
            if !allowed {
                self.push(
                    &s.key_span,
                    &s.key_origin,
                    Some(&path),
                    None,
                    format!(
                        "a variant may change only the run configuration ({}), not `{head}`",
                        VARIANT_SETTABLE.join(", ")
                    ),
                );
                continue;
            }
            if let Err(e) = set_path(root, &s.segs, s.value.clone(), &origin, &s.key_span) {
                self.push(
                    &s.key_span,
                    &s.key_origin,
                    Some(&path),
                    Some(format!("variant `{}`", d.name)),
                    e,
                );
            }
        }
    }

    /// Problems found while building each variant: those every variant shares
    /// are reported once; those only some have say which.
    fn merge_variant_problems(
        &mut self,
        per_variant: Vec<(String, Vec<Problem>)>,
        has_variants: bool,
    ) {
        let total = per_variant.len();
        let mut merged: Vec<(Problem, Vec<String>)> = Vec::new();
        for (name, problems) in per_variant {
            for p in problems {
                match merged.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, names)) => {
                        if !names.contains(&name) {
                            names.push(name.clone())
                        }
                    }
                    None => merged.push((p, vec![name.clone()])),
                }
            }
        }
        for (mut p, names) in merged {
            let set_by_variant = p
                .context
                .as_deref()
                .is_some_and(|c| c.contains("variant `"));
            if has_variants && names.len() < total && !set_by_variant {
                let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                let note = format!("in variant {}", list.join(", "));
                p.context = Some(match p.context {
                    Some(c) => format!("{c}; {note}"),
                    None => note,
                });
            }
            self.problems.push(p);
        }
    }

    // ---- generic readers ---------------------------------------------------

    /// `node` must be a table whose keys are all in `allowed`.
    fn table<'n>(&mut self, node: &'n Node, path: &KeyPath, allowed: &[&str]) -> Option<Tv<'n>> {
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
        Some(Tv {
            node,
            table,
            path: path.clone(),
        })
    }

    fn req<'n>(&mut self, tv: &Tv<'n>, key: &str) -> Option<&'n Node> {
        let found = tv.get(key);
        if found.is_none() {
            self.err(tv.node, &tv.path, format!("missing required key `{key}`"));
        }
        found
    }

    /// An array of tables (`[[name]]` or `name = [{...}]`).
    fn tables<'n>(
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
            let p = path.index(i);
            if item.as_table().is_some() {
                out.push((item, p));
            } else {
                self.err(
                    item,
                    &p,
                    format!("expected a table, found {}", item.describe()),
                );
            }
        }
        out
    }

    fn string(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
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
    fn name(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
        let s = self.string(node, path)?;
        if s.trim().is_empty() {
            self.err(node, path, "expected a non-empty name");
            return None;
        }
        Some(s)
    }

    fn int(&mut self, node: &Node, path: &KeyPath, min: i64, max: i64) -> Option<i64> {
        match node.val {
            Val::Int(n) if (min..=max).contains(&n) => Some(n),
            Val::Int(n) if n > max && max >= i64::from(u32::MAX) => {
                self.err(
                    node,
                    path,
                    format!("expected {}, found {n} (at most {max})", int_desc(min, max)),
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

    fn u32_in(&mut self, node: &Node, path: &KeyPath, min: u32, max: u32) -> Option<u32> {
        self.int(node, path, i64::from(min), i64::from(max))
            .and_then(|n| u32::try_from(n).ok())
    }

    fn opt_u32(&mut self, tv: &Tv, key: &str, min: u32, max: u32, default: u32) -> u32 {
        tv.get(key)
            .and_then(|n| self.u32_in(n, &tv.at(key), min, max))
            .unwrap_or(default)
    }

    fn number(&mut self, node: &Node, path: &KeyPath, bound: Bound) -> Option<f64> {
        let v = match node.val {
            Val::Int(n) => n as f64,
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

    /// A time in `unit` nanoseconds per unit written, converted to nanoseconds.
    fn duration(
        &mut self,
        node: &Node,
        path: &KeyPath,
        unit: u64,
        positive: bool,
    ) -> Option<Nanos> {
        let bound = if positive { Bound::Pos } else { Bound::NonNeg };
        let v = self.number(node, path, bound)?;
        let ns = (v * unit as f64).round();
        if ns > MAX_NANOS {
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

    fn opt_duration(
        &mut self,
        tv: &Tv,
        key: &str,
        unit: u64,
        positive: bool,
        default: Nanos,
    ) -> Nanos {
        tv.get(key)
            .and_then(|n| self.duration(n, &tv.at(key), unit, positive))
            .unwrap_or(default)
    }

    /// `seen` holds names already defined with their node; reports a duplicate.
    fn unique(
        &mut self,
        seen: &mut Vec<(String, Node)>,
        name: &str,
        node: &Node,
        path: &KeyPath,
        what: &str,
    ) {
        if let Some((_, first)) = seen.iter().find(|(n, _)| n == name) {
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

    /// An instance number within the cluster.
    fn instance(&mut self, node: &Node, path: &KeyPath, n: Option<u8>) -> Option<u8> {
        if let (Val::Int(v), Some(n)) = (&node.val, n)
            && (*v < 1 || *v > i64::from(n))
        {
            self.err(
                node,
                path,
                format!("instance {v} is out of range 1..={n} (cluster.instances = {n})"),
            );
            return None;
        }
        self.int(node, path, 1, i64::from(MAX_INSTANCES))
            .and_then(|v| u8::try_from(v).ok())
    }

    // ---- [scenario], [[variant]] ------------------------------------------

    fn meta(&mut self, root: &Node) -> Meta {
        let mut meta = Meta {
            name: String::new(),
            title: String::new(),
            myth: None,
            description: String::new(),
        };
        let Some(rt) = root.as_table() else {
            return meta;
        };
        let Some(node) = rt.get("scenario").map(|e| &e.node) else {
            self.push(
                &None,
                &Origin::File,
                None,
                None,
                "missing required table [scenario]".to_string(),
            );
            return meta;
        };
        let Some(tv) = self.table(node, &KeyPath::root().key("scenario"), SCENARIO_KEYS) else {
            return meta;
        };
        if let Some(n) = self.req(&tv, "name")
            && let Some(name) = self.string(n, &tv.at("name"))
        {
            if valid_scenario_name(&name) {
                meta.name = name;
            } else {
                self.err(
                    n,
                    &tv.at("name"),
                    format!(
                        "{} is not a valid name: use lowercase letters, digits and '-'",
                        n.describe()
                    ),
                );
            }
        }
        if let Some(n) = self.req(&tv, "title")
            && let Some(title) = self.string(n, &tv.at("title"))
        {
            if title.contains('\n') {
                self.err(
                    n,
                    &tv.at("title"),
                    "the title must be one line (put details in `description`)",
                );
            }
            meta.title = title;
        }
        if let Some(n) = tv.get("myth") {
            meta.myth = self.string(n, &tv.at("myth"));
        }
        if let Some(n) = tv.get("description") {
            meta.description = self.string(n, &tv.at("description")).unwrap_or_default();
        }
        meta
    }

    fn variant_decls(&mut self, root: &Node) -> Vec<VariantDecl> {
        let mut out = Vec::new();
        let Some(node) = root
            .as_table()
            .and_then(|t| t.get("variant"))
            .map(|e| &e.node)
        else {
            return out;
        };
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("variant"), "variant") {
            let Some(tv) = self.table(item, &path, VARIANT_KEYS) else {
                continue;
            };
            let name = match self.req(&tv, "name") {
                Some(n) => match self.name(n, &tv.at("name")) {
                    Some(name) => {
                        self.unique(&mut seen, &name, n, &tv.at("name"), "variant");
                        name
                    }
                    None => continue,
                },
                None => continue,
            };
            let description = tv
                .get("description")
                .and_then(|n| self.string(n, &tv.at("description")))
                .unwrap_or_default();
            let mut sets = Vec::new();
            if let Some(set) = tv.get("set") {
                match set.as_table() {
                    Some(t) => self.flatten_set(t, &tv.at("set"), &[], false, &mut sets),
                    None => self.err(set, &tv.at("set"), format!(
                        "expected a table of `path = value` (e.g. {{ \"parameters.cpu_count\" = 8 }}), found {}",
                        set.describe()
                    )),
                }
            }
            out.push(VariantDecl {
                name,
                description,
                sets,
            });
        }
        out
    }

    /// The `path = value` pairs of a `set` table. Keys written directly in it
    /// are dotted paths (`"phase.starved.duration_s" = 5`); tables made by
    /// dotted keys or headers extend the path; inline tables are values.
    fn flatten_set(
        &mut self,
        t: &Table,
        path: &KeyPath,
        prefix: &[String],
        nested: bool,
        out: &mut Vec<SetItem>,
    ) {
        for e in &t.entries {
            let here = path.key(&e.key);
            let segs = if nested {
                vec![e.key.clone()]
            } else {
                match parse_path(&e.key) {
                    Ok(s) => s,
                    Err(msg) => {
                        self.err_key(e, &here, format!("bad key path: {msg}"));
                        continue;
                    }
                }
            };
            let mut full = prefix.to_vec();
            full.extend(segs);
            match &e.node.val {
                Val::Table(sub) if sub.dotted || !sub.inline => {
                    self.flatten_set(sub, &here, &full, true, out)
                }
                _ => out.push(SetItem {
                    text: full
                        .iter()
                        .map(|s| {
                            if s.contains('.') {
                                format!("{s:?}")
                            } else {
                                s.clone()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join("."),
                    segs: full,
                    key_span: e.key_span.clone(),
                    key_origin: e.key_origin.clone(),
                    value: e.node.clone(),
                }),
            }
        }
    }

    // ---- the run configuration ---------------------------------------------

    fn scenario(&mut self, root: &Node) -> Option<Scenario> {
        let before = self.problems.len();
        let rt = root.as_table()?;
        let top = |k: &str| rt.get(k).map(|e| &e.node);
        let rp = KeyPath::root();

        let seed = top("scenario")
            .and_then(|s| s.as_table())
            .and_then(|t| t.get("seed"))
            .and_then(|e| self.int(&e.node, &rp.key("scenario").key("seed"), 0, i64::MAX))
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(1);

        let n = match top("cluster") {
            None => {
                self.push(
                    &None,
                    &Origin::File,
                    None,
                    None,
                    "missing required table [cluster]".to_string(),
                );
                None
            }
            Some(node) => self
                .table(node, &rp.key("cluster"), &["instances"])
                .and_then(|tv| {
                    let v = self.req(&tv, "instances")?;
                    self.int(v, &tv.at("instances"), 1, i64::from(MAX_INSTANCES))
                        .and_then(|v| u8::try_from(v).ok())
                }),
        };

        let instances = self.instances(top("parameters"), n);
        let costs = top("costs").map(|c| self.costs(c)).unwrap_or_default();
        let network = top("network").map(|c| self.network(c)).unwrap_or_default();
        let storage = top("storage").map(|c| self.storage(c)).unwrap_or_default();
        let mut catalog = self.catalog(top("table"), top("index"));
        if let Some(node) = top("sequence") {
            catalog.sequences = self.sequences(node);
        }
        let queries = top("query")
            .map(|q| self.queries(q, &catalog))
            .unwrap_or_default();
        let workloads = top("workload")
            .map(|w| self.workloads(w, n, &catalog, &costs, &queries))
            .unwrap_or_default();
        self.check_query_tables(&queries, &workloads, &catalog);
        let phases = match top("phase") {
            Some(p) => self.phases(p, n, &workloads),
            None => {
                self.push(
                    &None,
                    &Origin::File,
                    None,
                    None,
                    "a scenario needs at least one [[phase]]".to_string(),
                );
                Vec::new()
            }
        };
        if self.problems.len() == before {
            self.check_px_params(&instances, &phases);
        }
        if phases.is_empty() && self.problems.len() == before {
            self.push(
                &None,
                &Origin::File,
                None,
                None,
                "a scenario needs at least one [[phase]]".to_string(),
            );
        }
        (self.problems.len() == before).then_some(Scenario {
            seed,
            instances,
            costs,
            network,
            storage,
            catalog,
            workloads,
            phases,
        })
    }

    /// A `parameters` table: `name = value` for every instance and
    /// `[...instN]` tables for one. `phase` limits names to the phase-changeable ones.
    fn param_settings(
        &mut self,
        node: &Node,
        path: &KeyPath,
        n: Option<u8>,
        phase: bool,
    ) -> Vec<ParamSetting> {
        let mut out = Vec::new();
        let Some(t) = node.as_table() else {
            self.err(
                node,
                path,
                format!("expected a table of parameters, found {}", node.describe()),
            );
            return out;
        };
        for e in &t.entries {
            let here = path.key(&e.key);
            if let Some(num) = instance_key(&e.key) {
                let max = n.unwrap_or(MAX_INSTANCES);
                let Some(inst) = u8::try_from(num).ok().filter(|i| (1..=max).contains(i)) else {
                    let msg = match n {
                        Some(n) => format!(
                            "instance {num} is out of range 1..={n} (cluster.instances = {n})"
                        ),
                        None => format!("instance {num} is out of range 1..={MAX_INSTANCES}"),
                    };
                    self.err_key(e, &here, msg);
                    continue;
                };
                let Some(sub) = e.node.as_table() else {
                    self.err(
                        &e.node,
                        &here,
                        format!(
                            "expected a table of parameters for instance {inst}, found {}",
                            e.node.describe()
                        ),
                    );
                    continue;
                };
                for se in &sub.entries {
                    if let Some(s) = self.param(se, &here.key(&se.key), Some(inst), phase) {
                        out.push(s);
                    }
                }
            } else if let Some(s) = self.param(e, &here, None, phase) {
                out.push(s);
            }
        }
        out
    }

    fn param(
        &mut self,
        e: &Entry,
        path: &KeyPath,
        instance: Option<u8>,
        phase: bool,
    ) -> Option<ParamSetting> {
        let Some(name) = Params::NAMES
            .iter()
            .find(|n| n.eq_ignore_ascii_case(&e.key))
        else {
            let hint = if instance.is_none() && e.node.as_table().is_some() {
                "; parameters of one instance go in a table named inst1, inst2, ...".to_string()
            } else {
                suggest(&e.key, Params::NAMES)
            };
            self.err_key(
                e,
                path,
                format!(
                    "unknown parameter `{}` (known: {}){hint}",
                    e.key,
                    Params::NAMES.join(", ")
                ),
            );
            return None;
        };
        if phase && !Params::PHASE_CHANGEABLE.contains(name) {
            self.err_key(e, path, format!(
                "`{name}` cannot change during a run: it needs an instance restart (phase-changeable: {})",
                Params::PHASE_CHANGEABLE.join(", ")
            ));
            return None;
        }
        let value = match &e.node.val {
            Val::Int(v) if *v >= 0 => ParamValue::Int(*v as u64),
            Val::Str(s) => ParamValue::Text(s.clone()),
            // `parallel_force_local = true` as TOML writes a boolean.
            Val::Bool(b) => ParamValue::Text(if *b { "TRUE" } else { "FALSE" }.to_string()),
            // Seconds with decimals (a scaled-down scenario's threshold).
            Val::Float(f) if *name == "parallel_min_time_threshold" => {
                ParamValue::Text(format_float(*f))
            }
            _ => {
                let what = if matches!(e.node.val, Val::Int(_)) {
                    "a non-negative integer"
                } else {
                    "an integer"
                };
                self.err(
                    &e.node,
                    path,
                    format!(
                        "expected {what} or text (sizes such as \"64M\"), found {}",
                        e.node.describe()
                    ),
                );
                return None;
            }
        };
        if let Err(msg) = Params::default().set(name, &value) {
            self.err(&e.node, path, msg);
            return None;
        }
        Some(ParamSetting {
            instance,
            name: name.to_string(),
            value,
            node: e.node.clone(),
            path: path.clone(),
        })
    }

    fn instances(&mut self, node: Option<&Node>, n: Option<u8>) -> Vec<Params> {
        let settings = match node {
            Some(node) => self.param_settings(node, &KeyPath::root().key("parameters"), n, false),
            None => Vec::new(),
        };
        let Some(n) = n else { return Vec::new() };
        let mut instances = vec![Params::default(); usize::from(n)];
        // Settings for every instance first, then those of one instance, whatever the file order.
        for s in settings.iter().filter(|s| s.instance.is_none()) {
            for p in &mut instances {
                if let Err(msg) = p.set(&s.name, &s.value) {
                    self.err(&s.node, &s.path, msg);
                }
            }
        }
        for s in settings.iter().filter(|s| s.instance.is_some()) {
            let idx = s.instance.map_or(0, |i| usize::from(i).saturating_sub(1));
            if let Some(p) = instances.get_mut(idx)
                && let Err(msg) = p.set(&s.name, &s.value)
            {
                self.err(&s.node, &s.path, msg);
            }
        }
        let sizes: Vec<u32> = instances.iter().map(|p| p.db_block_size).collect();
        if sizes.windows(2).any(|w| w[0] != w[1]) {
            let list: Vec<String> = sizes
                .iter()
                .enumerate()
                .map(|(i, s)| format!("instance {}: {s}", i + 1))
                .collect();
            let message = format!(
                "db_block_size must be the same on every instance ({})",
                list.join(", ")
            );
            match settings
                .iter()
                .find(|s| s.instance.is_some() && s.name == "db_block_size")
            {
                Some(s) => self.err(&s.node, &s.path, message),
                None => self.push(
                    &None,
                    &Origin::File,
                    Some(&KeyPath::root().key("parameters")),
                    None,
                    message,
                ),
            }
        }
        instances
    }

    fn costs(&mut self, node: &Node) -> Costs {
        let d = Costs::default();
        let Some(tv) = self.table(node, &KeyPath::root().key("costs"), COST_KEYS) else {
            return d;
        };
        let us = |ck: &mut Self, key: &str, default: Nanos| {
            ck.opt_duration(&tv, key, NS_PER_US, false, default)
        };
        Costs {
            execute: us(self, "execute_us", d.execute),
            consistent_get: us(self, "consistent_get_us", d.consistent_get),
            db_block_get: us(self, "db_block_get_us", d.db_block_get),
            row_examined: us(self, "row_examined_us", d.row_examined),
            row_change: us(self, "row_change_us", d.row_change),
            commit: us(self, "commit_us", d.commit),
            cr_build: us(self, "cr_build_us", d.cr_build),
            undo_apply: us(self, "undo_apply_us", d.undo_apply),
            lms_message: us(self, "lms_message_us", d.lms_message),
            lms_pin: us(self, "lms_pin_us", d.lms_pin),
            lms_send: us(self, "lms_send_us", d.lms_send),
            lgwr_write: us(self, "lgwr_write_us", d.lgwr_write),
            dbwr_write: us(self, "dbwr_write_us", d.dbwr_write),
            block_install: us(self, "block_install_us", d.block_install),
            bitmap_piece: us(self, "bitmap_piece_us", d.bitmap_piece),
            time_slice: self.opt_duration(&tv, "time_slice_ms", NS_PER_MS, true, d.time_slice),
            px_row_send: us(self, "px_row_send_us", d.px_row_send),
            px_row_receive: us(self, "px_row_receive_us", d.px_row_receive),
            px_message_local: us(self, "px_message_local_us", d.px_message_local),
            px_message_remote: us(self, "px_message_remote_us", d.px_message_remote),
            px_server_start: self.opt_duration(
                &tv,
                "px_server_start_ms",
                NS_PER_MS,
                false,
                d.px_server_start,
            ),
        }
    }

    fn network(&mut self, node: &Node) -> NetworkModel {
        let d = NetworkModel::default();
        let Some(tv) = self.table(node, &KeyPath::root().key("network"), NETWORK_KEYS) else {
            return d;
        };
        let latency = self.opt_duration(&tv, "latency_us", NS_PER_US, false, d.latency);
        let jitter = self.opt_duration(&tv, "jitter_us", NS_PER_US, false, d.jitter);
        let mut bandwidth_bps = d.bandwidth_bps;
        if tv.get("bandwidth_mbps").is_some()
            && let Some(e) = tv.entry("bandwidth_gbps")
        {
            self.err_key(
                e,
                &tv.at("bandwidth_gbps"),
                "give either bandwidth_mbps or bandwidth_gbps, not both",
            );
        } else {
            for (key, mult) in [("bandwidth_mbps", 1e6), ("bandwidth_gbps", 1e9)] {
                if let Some(v) = tv.get(key)
                    && let Some(bps) = self.rate(v, &tv.at(key), mult)
                {
                    bandwidth_bps = bps;
                }
            }
        }
        let message_bytes = self.opt_u32(&tv, "message_bytes", 1, u32::MAX, d.message_bytes);
        NetworkModel {
            latency,
            jitter,
            bandwidth_bps,
            message_bytes,
        }
    }

    /// A link rate in `mult` bits per second per unit written.
    fn rate(&mut self, node: &Node, path: &KeyPath, mult: f64) -> Option<u64> {
        let v = self.number(node, path, Bound::Pos)?;
        let bps = (v * mult).round();
        if !(1.0..=1e15).contains(&bps) {
            self.err(
                node,
                path,
                format!("{} is out of range (1 bit/s to 1 Pbit/s)", node.describe()),
            );
            return None;
        }
        Some(bps as u64)
    }

    fn storage(&mut self, node: &Node) -> StorageModel {
        let d = StorageModel::default();
        let Some(tv) = self.table(node, &KeyPath::root().key("storage"), STORAGE_KEYS) else {
            return d;
        };
        StorageModel {
            read_latency: self.opt_duration(
                &tv,
                "read_latency_ms",
                NS_PER_MS,
                false,
                d.read_latency,
            ),
            write_latency: self.opt_duration(
                &tv,
                "write_latency_ms",
                NS_PER_MS,
                false,
                d.write_latency,
            ),
            log_write_latency: self.opt_duration(
                &tv,
                "log_write_latency_ms",
                NS_PER_MS,
                false,
                d.log_write_latency,
            ),
            iops: tv
                .get("iops")
                .and_then(|v| self.int(v, &tv.at("iops"), 0, i64::MAX))
                .map_or(d.iops, |v| v as u64),
        }
    }

    /// Tables and indexes. Entries with errors still take their place so
    /// later references resolve and do not report the same mistake again.
    fn catalog(&mut self, tables: Option<&Node>, indexes: Option<&Node>) -> Catalog {
        let mut cat = Catalog::default();
        let mut seen = Vec::new();
        if let Some(node) = tables {
            for (item, path) in self.tables(node, &KeyPath::root().key("table"), "table") {
                let Some(tv) = self.table(item, &path, TABLE_KEYS) else {
                    continue;
                };
                let name = self.req(&tv, "name").and_then(|n| {
                    let name = self.name(n, &tv.at("name"))?;
                    self.unique(&mut seen, &name, n, &tv.at("name"), "table");
                    Some(name)
                });
                let rows = self
                    .req(&tv, "rows")
                    .and_then(|v| self.int(v, &tv.at("rows"), 1, i64::MAX));
                let rpb = self
                    .req(&tv, "rows_per_block")
                    .and_then(|v| self.u32_in(v, &tv.at("rows_per_block"), 1, 1000));
                let orgs = self.opt_u32(&tv, "orgs", 1, MAX_ORGS, 1);
                let partition_by_org = match tv.get("partition_by") {
                    None => false,
                    Some(v) => match self.string(v, &tv.at("partition_by")).as_deref() {
                        Some("org") if orgs >= 2 => true,
                        Some("org") => {
                            self.err(
                                v,
                                &tv.at("partition_by"),
                                "partitioning by org needs `orgs` >= 2 on the table",
                            );
                            false
                        }
                        Some(other) => {
                            self.err(
                                v,
                                &tv.at("partition_by"),
                                format!("unknown partitioning column `{other}` (tables are partitioned by \"org\")"),
                            );
                            false
                        }
                        None => false,
                    },
                };
                cat.tables.push(TableDef {
                    name: name.unwrap_or_default(),
                    rows: rows.map_or(1, |r| r as u64),
                    rows_per_block: rpb.unwrap_or(1),
                    free_blocks_per_instance: self.opt_u32(
                        &tv,
                        "free_blocks_per_instance",
                        0,
                        u32::MAX,
                        256,
                    ),
                    orgs,
                    partition_by_org,
                    distinct_values: self.opt_u32(&tv, "distinct_values", 1, u32::MAX, 0),
                });
            }
        }
        let table_names: Vec<String> = cat.tables.iter().map(|t| t.name.clone()).collect();
        let mut seen = Vec::new();
        if let Some(node) = indexes {
            for (item, path) in self.tables(node, &KeyPath::root().key("index"), "index") {
                let Some(tv) = self.table(item, &path, INDEX_KEYS) else {
                    continue;
                };
                let name = self.req(&tv, "name").and_then(|n| {
                    let name = self.name(n, &tv.at("name"))?;
                    if name == "full_scan" {
                        self.err(
                            n,
                            &tv.at("name"),
                            "`full_scan` is reserved (it names the full-scan access path)",
                        );
                    }
                    self.unique(&mut seen, &name, n, &tv.at("name"), "index");
                    Some(name)
                });
                let table = self.req(&tv, "table").and_then(|n| {
                    let t = self.string(n, &tv.at("table"))?;
                    let pos = table_names.iter().position(|x| *x == t);
                    if pos.is_none() {
                        self.err(
                            n,
                            &tv.at("table"),
                            format!("unknown table `{t}` (tables: {})", names_list(&table_names)),
                        );
                    }
                    pos
                });
                let def = table.and_then(|t| cat.tables.get(t));
                let shape = self.index_shape(&tv, def);
                cat.indexes.push(IndexDef {
                    name: name.unwrap_or_default(),
                    table: table.unwrap_or(usize::MAX),
                    entries_per_leaf: self.opt_u32(&tv, "entries_per_leaf", 4, u32::MAX, 250),
                    entries_per_branch: self.opt_u32(&tv, "entries_per_branch", 4, u32::MAX, 250),
                    free_blocks_per_instance: self.opt_u32(
                        &tv,
                        "free_blocks_per_instance",
                        0,
                        u32::MAX,
                        64,
                    ),
                    reverse: self.reverse_flag(&tv, &shape),
                    kind: shape.kind,
                    local: shape.local,
                    includes_value: shape.includes_value,
                    rows_per_piece: shape.rows_per_piece,
                });
            }
        }
        cat
    }

    /// `reverse`: a reverse key index, for a plain B-tree on the key only.
    fn reverse_flag(&mut self, tv: &Tv, shape: &IndexShape) -> bool {
        let reverse = self.opt_bool(tv, "reverse", false);
        if reverse
            && (shape.kind != IndexKind::BTree || shape.local || shape.includes_value)
            && let Some(n) = tv.get("reverse")
        {
            self.err(
                n,
                &tv.at("reverse"),
                "a reverse key index is a global B-tree on the key only (not bitmap, local or on [\"key\", \"val\"])",
            );
        }
        reverse
    }

    /// An optional boolean key of a table.
    fn opt_bool(&mut self, tv: &Tv, key: &str, default: bool) -> bool {
        let Some(n) = tv.get(key) else {
            return default;
        };
        match n.val {
            Val::Bool(b) => b,
            _ => {
                self.err(
                    n,
                    &tv.at(key),
                    format!("expected true or false, found {}", n.describe()),
                );
                default
            }
        }
    }

    /// The kind of an index and what goes with it: `kind` ("btree" or
    /// "bitmap"), `local` (partitioned tables only), `columns` (["key"] or
    /// ["key", "val"] for a B-tree, ["val"] for a bitmap index), `rows_per_piece`
    /// (bitmap only; default: the whole table, one piece per value).
    fn index_shape(&mut self, tv: &Tv, table: Option<&TableDef>) -> IndexShape {
        let mut shape = IndexShape {
            kind: IndexKind::BTree,
            local: false,
            includes_value: false,
            rows_per_piece: table.map_or(1, |t| t.rows.min(u64::from(u32::MAX)) as u32),
        };
        if let Some(k) = tv.get("kind") {
            match self.string(k, &tv.at("kind")).as_deref() {
                Some("btree") => {}
                Some("bitmap") => shape.kind = IndexKind::Bitmap,
                Some(other) => self.err(
                    k,
                    &tv.at("kind"),
                    format!("unknown index kind `{other}` (\"btree\" or \"bitmap\")"),
                ),
                None => {}
            }
        }
        let bitmap = shape.kind == IndexKind::Bitmap;
        if let Some(l) = tv.get("local") {
            match l.val {
                Val::Bool(b) => shape.local = b,
                _ => self.err(
                    l,
                    &tv.at("local"),
                    format!("expected true or false, found {}", l.describe()),
                ),
            }
            if shape.local && !table.is_some_and(|t| t.partition_by_org) {
                self.err(
                    l,
                    &tv.at("local"),
                    "a local index needs a partitioned table (partition_by = \"org\")",
                );
            }
        }
        if let Some(c) = tv.get("columns") {
            let cols: Option<Vec<String>> = match &c.val {
                Val::Array(items) => items
                    .iter()
                    .map(|i| match &i.val {
                        Val::Str(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => None,
            };
            let cols: Vec<&str> = cols.iter().flatten().map(String::as_str).collect();
            match (bitmap, cols.as_slice()) {
                (false, ["key"]) | (true, ["val"]) => {}
                (false, ["key", "val"]) => shape.includes_value = true,
                _ => self.err(
                    c,
                    &tv.at("columns"),
                    format!(
                        "expected {}, found {}",
                        if bitmap {
                            "[\"val\"] (a bitmap index is on the value column)"
                        } else {
                            "[\"key\"] or [\"key\", \"val\"]"
                        },
                        describe_deep(c)
                    ),
                ),
            }
        }
        if let Some(r) = tv.get("rows_per_piece") {
            if bitmap {
                if let Some(n) = self.u32_in(r, &tv.at("rows_per_piece"), 1, u32::MAX) {
                    shape.rows_per_piece = n;
                }
            } else {
                self.err(
                    r,
                    &tv.at("rows_per_piece"),
                    "`rows_per_piece` applies only to kind = \"bitmap\"",
                );
            }
        }
        if bitmap {
            let at = tv.get("kind").unwrap_or(tv.node);
            match table {
                Some(t) if t.distinct_values == 0 => self.err(
                    at,
                    &tv.at("kind"),
                    format!(
                        "a bitmap index is on the value column: give table `{}` `distinct_values`",
                        t.name
                    ),
                ),
                Some(t) if t.partition_by_org => self.err(
                    at,
                    &tv.at("kind"),
                    format!(
                        "bitmap indexes on a partitioned table (`{}`) are not modelled",
                        t.name
                    ),
                ),
                _ => {}
            }
        }
        shape
    }

    /// `[[sequence]]`: `cache` is an integer >= 2 or "nocache" (default 20, as
    /// Oracle's), `order` a boolean (default false), `start` and `increment`
    /// positive integers (default 1): values key inserted rows.
    fn sequences(&mut self, node: &Node) -> Vec<SequenceDef> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("sequence"), "sequence") {
            let Some(tv) = self.table(item, &path, SEQUENCE_KEYS) else {
                continue;
            };
            let name = self.req(&tv, "name").and_then(|n| {
                let name = self.name(n, &tv.at("name"))?;
                self.unique(&mut seen, &name, n, &tv.at("name"), "sequence");
                Some(name)
            });
            let cache = match tv.get("cache") {
                None => 20,
                Some(n) => match &n.val {
                    Val::Str(s) if s.eq_ignore_ascii_case("nocache") => 0,
                    Val::Int(_) => self
                        .u32_in(n, &tv.at("cache"), 2, 1_000_000_000)
                        .unwrap_or(20),
                    _ => {
                        self.err(
                            n,
                            &tv.at("cache"),
                            format!(
                                "expected an integer in 2..=1000000000 or \"nocache\", found {}",
                                n.describe()
                            ),
                        );
                        20
                    }
                },
            };
            let order = self.opt_bool(&tv, "order", false);
            let start = tv
                .get("start")
                .and_then(|n| self.int(n, &tv.at("start"), 1, i64::from(u32::MAX)))
                .unwrap_or(1);
            let increment = tv
                .get("increment")
                .and_then(|n| self.int(n, &tv.at("increment"), 1, 1_000_000))
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

    fn workloads(
        &mut self,
        node: &Node,
        n: Option<u8>,
        cat: &Catalog,
        costs: &Costs,
        queries: &[px::QueryDraft],
    ) -> Vec<WorkloadSpec> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("workload"), "workload") {
            let Some(tv) = self.table(item, &path, WORKLOAD_KEYS) else {
                continue;
            };
            let name = self.req(&tv, "name").and_then(|v| {
                let name = self.name(v, &tv.at("name"))?;
                self.unique(&mut seen, &name, v, &tv.at("name"), "workload");
                Some(name)
            });
            let instances = self
                .req(&tv, "instances")
                .map(|v| self.instance_list(v, &tv.at("instances"), n));
            let sessions = self
                .req(&tv, "sessions_per_instance")
                .and_then(|v| self.u32_in(v, &tv.at("sessions_per_instance"), 1, u32::MAX));
            let think_time = self.opt_duration(&tv, "think_time_ms", NS_PER_MS, false, 0);
            // A session that neither thinks nor pays for its calls and block
            // visits would run forever at one instant: the simulator would
            // never reach the end of the phase, a live instance would spin.
            if think_time == 0 && costs.execute == 0 && costs.consistent_get == 0 {
                let at = tv.get("think_time_ms").unwrap_or(item);
                self.err(
                    at,
                    &tv.at("think_time_ms"),
                    "sessions would run without time passing: with think_time_ms = 0, \
                     give costs.execute_us or costs.consistent_get_us a value above 0",
                );
            }
            let iterations = tv
                .get("iterations")
                .and_then(|v| self.int(v, &tv.at("iterations"), 1, i64::MAX))
                .map(|v| v as u64);
            let mut transactions = Vec::new();
            if let Some(t) = self.req(&tv, "transaction") {
                let mut seen_txn = Vec::new();
                let list = self.tables(t, &tv.at("transaction"), "workload.transaction");
                if list.is_empty() && matches!(t.val, Val::Array(_)) {
                    self.err(
                        t,
                        &tv.at("transaction"),
                        "a workload needs at least one [[workload.transaction]]",
                    );
                }
                for (i, (txn, tpath)) in list.into_iter().enumerate() {
                    if let Some(x) = self.transaction(txn, &tpath, i, cat, queries, &mut seen_txn) {
                        transactions.push(x);
                    }
                }
            }
            out.push(WorkloadSpec {
                name: name.unwrap_or_default(),
                instances: instances.unwrap_or_default(),
                sessions_per_instance: sessions.unwrap_or(1),
                think_time,
                transactions,
                iterations,
            });
        }
        out
    }

    /// `"all"` or a list of distinct instance numbers.
    fn instance_list(&mut self, node: &Node, path: &KeyPath, n: Option<u8>) -> Vec<u8> {
        match &node.val {
            Val::Str(s) if s == "all" => (1..=n.unwrap_or(0)).collect(),
            Val::Array(items) => {
                if items.is_empty() {
                    self.err(node, path, "expected at least one instance (or \"all\")");
                }
                let mut out: Vec<u8> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let p = path.index(i);
                    if let Some(inst) = self.instance(item, &p, n) {
                        if out.contains(&inst) {
                            self.err(item, &p, format!("instance {inst} is listed twice"));
                        } else {
                            out.push(inst);
                        }
                    }
                }
                out
            }
            _ => {
                self.err(
                    node,
                    path,
                    format!(
                        "expected \"all\" or a list of instance numbers such as [1, 2], found {}",
                        node.describe()
                    ),
                );
                Vec::new()
            }
        }
    }

    fn transaction(
        &mut self,
        node: &Node,
        path: &KeyPath,
        index: usize,
        cat: &Catalog,
        queries: &[px::QueryDraft],
        seen: &mut Vec<(String, Node)>,
    ) -> Option<TxnTemplate> {
        let tv = self.table(node, path, TXN_KEYS)?;
        let name = match tv.get("name") {
            Some(v) => {
                let name = self.name(v, &tv.at("name"));
                if let Some(name) = &name {
                    self.unique(seen, name, v, &tv.at("name"), "transaction");
                }
                name.unwrap_or_default()
            }
            None => format!("txn{}", index + 1),
        };
        let weight = self.opt_u32(&tv, "weight", 1, MAX_WEIGHT, 1);
        let mut steps = Vec::new();
        if let Some(s) = self.req(&tv, "steps") {
            let list = self.tables(s, &tv.at("steps"), "workload.transaction.steps");
            if list.is_empty() && matches!(s.val, Val::Array(_)) {
                self.err(s, &tv.at("steps"), "a transaction needs at least one step");
            }
            for (step, spath) in list {
                if let Some(x) = self.step(step, &spath, cat, queries) {
                    steps.push(x);
                }
            }
            self.check_bitmap_updates(s, &tv.at("steps"), &steps, cat);
        }
        Some(TxnTemplate {
            name,
            weight,
            steps,
        })
    }

    /// A sequence named by a step.
    fn sequence_ref(&mut self, node: &Node, path: &KeyPath, cat: &Catalog) -> Option<usize> {
        let name = self.string(node, path)?;
        let pos = cat.sequences.iter().position(|s| s.name == name);
        if pos.is_none() {
            let names: Vec<String> = cat.sequences.iter().map(|s| s.name.clone()).collect();
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

    fn step(
        &mut self,
        node: &Node,
        path: &KeyPath,
        cat: &Catalog,
        queries: &[px::QueryDraft],
    ) -> Option<Step> {
        let t = node.as_table()?;
        let Some(op_entry) = t.get("op") else {
            self.err(
                node,
                path,
                format!("missing required key `op` (one of: {})", quoted_list(OPS)),
            );
            return None;
        };
        let op = self.string(&op_entry.node, &path.key("op"))?;
        let allowed: &[&str] = match op.as_str() {
            "read" | "update" => &["op", "table", "via", "keys", "rows", "org"],
            "count" => &["op", "table", "via", "values", "rows"],
            "insert" => &["op", "table", "rows", "key"],
            "nextval" => &["op", "sequence", "rows"],
            "commit" => &["op"],
            "think" => &["op", "ms"],
            "parallel_query" => &["op", "query"],
            _ => {
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
        };
        let tv = self.table(node, path, allowed)?;
        match op.as_str() {
            "commit" => return Some(Step::Commit),
            "think" => {
                let ms = self.req(&tv, "ms")?;
                return self
                    .duration(ms, &tv.at("ms"), NS_PER_MS, false)
                    .map(|time| Step::Think { time });
            }
            "parallel_query" => return self.parallel_query_step(&tv, queries),
            _ => {}
        }
        let rows = self.opt_u32(&tv, "rows", 1, u32::MAX, 1);
        if op == "nextval" {
            let n = self.req(&tv, "sequence")?;
            let sequence = self.sequence_ref(n, &tv.at("sequence"), cat)?;
            return Some(Step::NextVal { sequence, rows });
        }
        let table_node = self.req(&tv, "table")?;
        let table_name = self.string(table_node, &tv.at("table"))?;
        let Some(table) = cat.tables.iter().position(|t| t.name == table_name) else {
            let names: Vec<String> = cat.tables.iter().map(|t| t.name.clone()).collect();
            self.err(
                table_node,
                &tv.at("table"),
                format!(
                    "unknown table `{table_name}` (tables: {})",
                    names_list(&names)
                ),
            );
            return None;
        };
        if op == "count" {
            return self.count_step(&tv, table, rows, cat);
        }
        if op == "insert" {
            let t = &cat.tables[table];
            let bitmap = cat
                .indexes
                .iter()
                .any(|i| i.table == table && i.kind == IndexKind::Bitmap);
            if t.partition_by_org || bitmap {
                self.err(
                    table_node,
                    &tv.at("table"),
                    format!(
                        "inserts into `{table_name}` are not modelled: it is {}",
                        if bitmap {
                            "indexed by a bitmap index"
                        } else {
                            "partitioned"
                        }
                    ),
                );
                return None;
            }
            // `key = { sequence = "s" }`: the new rows are keyed by `s.nextval`.
            let Some(key) = tv.get("key") else {
                return Some(Step::Insert { table, rows });
            };
            let kp = tv.at("key");
            let kt = self.table(key, &kp, &["sequence"])?;
            let n = self.req(&kt, "sequence")?;
            let sequence = self.sequence_ref(n, &kt.at("sequence"), cat)?;
            return Some(Step::InsertSeq {
                table,
                rows,
                sequence,
            });
        }
        let via_node = self.req(&tv, "via")?;
        let via = self.string(via_node, &tv.at("via"))?;
        let on_table: Vec<String> = cat
            .indexes
            .iter()
            .filter(|i| i.table == table)
            .map(|i| i.name.clone())
            .collect();
        let access = if via == "full_scan" {
            if op == "update" {
                self.err(
                    via_node,
                    &tv.at("via"),
                    format!(
                        "an update needs an index, not a full scan (indexes on `{table_name}`: {})",
                        names_list(&on_table)
                    ),
                );
                return None;
            }
            for key in ["keys", "rows"] {
                if let Some(e) = tv.entry(key) {
                    self.err_key(
                        e,
                        &tv.at(key),
                        format!("`{key}` does not apply to a full scan (it reads every row once)"),
                    );
                }
            }
            Access::FullScan
        } else {
            match cat.indexes.iter().position(|i| i.name == via) {
                Some(i)
                    if cat
                        .indexes
                        .get(i)
                        .is_some_and(|x| x.table == table && x.kind == IndexKind::Bitmap) =>
                {
                    self.err(via_node, &tv.at("via"), format!(
                        "`{via}` is a bitmap index: it answers `count` steps; a {op} goes through a B-tree (indexes on `{table_name}`: {}) or a full scan",
                        names_list(&on_table)
                    ));
                    return None;
                }
                Some(i) if cat.indexes.get(i).is_some_and(|x| x.table == table) => Access::Index(i),
                // The index names an unknown table, which is reported there.
                Some(i)
                    if cat
                        .indexes
                        .get(i)
                        .is_some_and(|x| x.table >= cat.tables.len()) =>
                {
                    return None;
                }
                Some(i) => {
                    let other = cat
                        .indexes
                        .get(i)
                        .and_then(|x| cat.tables.get(x.table))
                        .map_or("another table".to_string(), |t| format!("`{}`", t.name));
                    self.err(via_node, &tv.at("via"), format!(
                        "index `{via}` is on {other}, not on `{table_name}` (indexes on `{table_name}`: {}; or \"full_scan\")",
                        names_list(&on_table)
                    ));
                    return None;
                }
                None => {
                    self.err(via_node, &tv.at("via"), format!(
                        "unknown index `{via}` (indexes on `{table_name}`: {}; or \"full_scan\" for a read)",
                        names_list(&on_table)
                    ));
                    return None;
                }
            }
        };
        let mut keys = match tv.get("keys") {
            Some(k) => self.key_spec(k, &tv.at("keys"))?,
            None => KeySpec {
                dist: KeyDist::Uniform,
                range: None,
                org: None,
            },
        };
        if let Some(o) = tv.get("org") {
            let orgs = cat.tables[table].orgs;
            if orgs < 2 {
                self.err(
                    o,
                    &tv.at("org"),
                    format!(
                        "table `{table_name}` has one organisation: give it `orgs` to filter on org"
                    ),
                );
                return None;
            }
            if access == Access::FullScan {
                self.err(
                    o,
                    &tv.at("org"),
                    "`org` does not apply to a full scan (it reads every row once)",
                );
                return None;
            }
            keys.org = Some(self.u32_in(o, &tv.at("org"), 1, orgs)?);
        }
        Some(match op.as_str() {
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

    /// `{ op = "count", table, via = <bitmap index>, values, rows }`:
    /// `select count(*) ... where val = :v`, `v` drawn from the table's
    /// values (`values` is a key distribution over `1..=distinct_values`).
    fn count_step(&mut self, tv: &Tv, table: usize, rows: u32, cat: &Catalog) -> Option<Step> {
        let t = &cat.tables[table];
        let via_node = self.req(tv, "via")?;
        let via = self.string(via_node, &tv.at("via"))?;
        let bitmaps: Vec<String> = cat
            .indexes
            .iter()
            .filter(|i| i.table == table && i.kind == IndexKind::Bitmap)
            .map(|i| i.name.clone())
            .collect();
        let Some(index) = cat
            .indexes
            .iter()
            .position(|i| i.name == via && i.table == table && i.kind == IndexKind::Bitmap)
        else {
            self.err(
                via_node,
                &tv.at("via"),
                format!(
                    "a count goes through a bitmap index on `{}` (bitmap indexes: {})",
                    t.name,
                    names_list(&bitmaps)
                ),
            );
            return None;
        };
        let values = match tv.get("values") {
            Some(v) => {
                let spec = self.key_spec(v, &tv.at("values"))?;
                if let Some((_, hi)) = spec.range
                    && hi > u64::from(t.distinct_values)
                {
                    self.err(
                        v,
                        &tv.at("values"),
                        format!(
                            "values go up to {} on `{}` (its distinct_values), range ends at {hi}",
                            t.distinct_values, t.name
                        ),
                    );
                    return None;
                }
                spec
            }
            None => KeySpec {
                dist: KeyDist::Uniform,
                range: None,
                org: None,
            },
        };
        Some(Step::Count {
            table,
            index,
            values,
            rows,
        })
    }

    /// Two sessions updating rows of a table with a bitmap index, several
    /// rows per transaction, can each hold a piece the other needs; Oracle
    /// detects the deadlock (ORA-00060), the model does not.
    fn check_bitmap_updates(
        &mut self,
        steps_node: &Node,
        path: &KeyPath,
        steps: &[Step],
        cat: &Catalog,
    ) {
        for (t, def) in cat.tables.iter().enumerate() {
            if !cat
                .indexes
                .iter()
                .any(|i| i.table == t && i.kind == IndexKind::Bitmap)
            {
                continue;
            }
            let rows: u64 = steps
                .iter()
                .map(|s| match s {
                    Step::Update { table, rows, .. } if *table == t => u64::from(*rows),
                    _ => 0,
                })
                .sum();
            if rows > 1 {
                self.err(
                    steps_node,
                    path,
                    format!(
                        "a transaction updates {rows} rows of `{}`, which has a bitmap index: \
                         one row per transaction (a bitmap piece locks many rows, and two \
                         transactions holding pieces the other needs would deadlock; the model \
                         has no deadlock detection)",
                        def.name
                    ),
                );
            }
        }
    }

    fn key_spec(&mut self, node: &Node, path: &KeyPath) -> Option<KeySpec> {
        const DISTS: &[&str] = &["uniform", "sequential", "hot"];
        let dist_of = |name: &str| match name {
            "uniform" => Some(KeyDist::Uniform),
            "sequential" => Some(KeyDist::Sequential),
            "hot" => Some(KeyDist::Hot {
                fraction: 0.01,
                share: 0.9,
            }),
            _ => None,
        };
        match &node.val {
            Val::Str(s) => match dist_of(s) {
                Some(dist) => Some(KeySpec {
                    dist,
                    range: None,
                    org: None,
                }),
                None => {
                    self.err(
                        node,
                        path,
                        format!(
                            "unknown key distribution {} (one of: {})",
                            node.describe(),
                            quoted_list(DISTS)
                        ),
                    );
                    None
                }
            },
            Val::Table(_) => {
                let tv = self.table(node, path, &["dist", "fraction", "share", "range"])?;
                let dn = self.req(&tv, "dist")?;
                let name = self.string(dn, &tv.at("dist"))?;
                let Some(mut dist) = dist_of(&name) else {
                    self.err(
                        dn,
                        &tv.at("dist"),
                        format!(
                            "unknown key distribution {} (one of: {})",
                            dn.describe(),
                            quoted_list(DISTS)
                        ),
                    );
                    return None;
                };
                let mut ok = true;
                if let KeyDist::Hot { fraction, share } = &mut dist {
                    if let Some(v) = tv.get("fraction") {
                        match self.number(v, &tv.at("fraction"), Bound::Fraction) {
                            Some(f) => *fraction = f,
                            None => ok = false,
                        }
                    }
                    if let Some(v) = tv.get("share") {
                        match self.number(v, &tv.at("share"), Bound::Share) {
                            Some(f) => *share = f,
                            None => ok = false,
                        }
                    }
                } else {
                    for key in ["fraction", "share"] {
                        if let Some(e) = tv.entry(key) {
                            self.err_key(
                                e,
                                &tv.at(key),
                                format!("`{key}` applies only to dist = \"hot\""),
                            );
                            ok = false;
                        }
                    }
                }
                let mut range = None;
                if let Some(r) = tv.get("range") {
                    range = self.key_range(r, &tv.at("range"));
                    ok &= range.is_some();
                }
                ok.then_some(KeySpec {
                    dist,
                    range,
                    org: None,
                })
            }
            _ => {
                self.err(node, path, format!(
                    "expected \"uniform\", \"sequential\", \"hot\" or a table such as {{ dist = \"hot\", fraction = 0.01, share = 0.9 }}, found {}",
                    node.describe()
                ));
                None
            }
        }
    }

    fn key_range(&mut self, node: &Node, path: &KeyPath) -> Option<(u64, u64)> {
        let bad = |ck: &mut Self| {
            ck.err(
                node,
                path,
                format!(
                    "expected [lo, hi] with 1 <= lo <= hi, found {}",
                    describe_deep(node)
                ),
            );
            None
        };
        let Val::Array(items) = &node.val else {
            return bad(self);
        };
        match items.as_slice() {
            [
                Node {
                    val: Val::Int(lo), ..
                },
                Node {
                    val: Val::Int(hi), ..
                },
            ] if 1 <= *lo && lo <= hi => Some((*lo as u64, *hi as u64)),
            _ => bad(self),
        }
    }

    fn phases(&mut self, node: &Node, n: Option<u8>, workloads: &[WorkloadSpec]) -> Vec<Phase> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let workload_names: Vec<String> = workloads.iter().map(|w| w.name.clone()).collect();
        for (item, path) in self.tables(node, &KeyPath::root().key("phase"), "phase") {
            let Some(tv) = self.table(item, &path, PHASE_KEYS) else {
                continue;
            };
            let name = self.req(&tv, "name").and_then(|v| {
                let name = self.name(v, &tv.at("name"))?;
                self.unique(&mut seen, &name, v, &tv.at("name"), "phase");
                Some(name)
            });
            let duration = self
                .req(&tv, "duration_s")
                .and_then(|v| self.duration(v, &tv.at("duration_s"), NS_PER_S, true))
                .unwrap_or(0);
            let mut selected = None;
            if let Some(w) = tv.get("workloads") {
                selected = Some(self.phase_workloads(w, &tv.at("workloads"), &workload_names));
            }
            let mut parameters = Vec::new();
            if let Some(p) = tv.get("parameters") {
                let settings = self.param_settings(p, &tv.at("parameters"), n, true);
                let count = n.unwrap_or(0);
                for s in settings.iter().filter(|s| s.instance.is_none()) {
                    for i in 1..=count {
                        parameters.push((i, s.name.clone(), s.value.clone()));
                    }
                }
                for s in settings.iter() {
                    if let Some(i) = s.instance {
                        parameters.push((i, s.name.clone(), s.value.clone()));
                    }
                }
            }
            let mut faults = Vec::new();
            if let Some(f) = tv.get("fault") {
                for (fnode, fpath) in self.tables(f, &tv.at("fault"), "phase.fault") {
                    if let Some(x) = self.fault(fnode, &fpath, n) {
                        faults.push(x);
                    }
                }
            }
            out.push(Phase {
                name: name.unwrap_or_default(),
                duration,
                parameters,
                faults,
                workloads: selected,
            });
        }
        out
    }

    fn phase_workloads(&mut self, node: &Node, path: &KeyPath, known: &[String]) -> Vec<String> {
        let Val::Array(items) = &node.val else {
            self.err(
                node,
                path,
                format!(
                    "expected a list of workload names, found {}",
                    node.describe()
                ),
            );
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = path.index(i);
            let Some(w) = self.string(item, &p) else {
                continue;
            };
            if !known.contains(&w) {
                self.err(
                    item,
                    &p,
                    format!("unknown workload `{w}` (workloads: {})", names_list(known)),
                );
            } else if out.contains(&w) {
                self.err(item, &p, format!("workload `{w}` is listed twice"));
            } else {
                out.push(w);
            }
        }
        out
    }

    fn fault(&mut self, node: &Node, path: &KeyPath, n: Option<u8>) -> Option<Fault> {
        let t = node.as_table()?;
        let Some(kind_entry) = t.get("kind") else {
            self.err(
                node,
                path,
                format!(
                    "missing required key `kind` (one of: {})",
                    quoted_list(FAULT_KINDS)
                ),
            );
            return None;
        };
        let kind = self.string(&kind_entry.node, &path.key("kind"))?;
        let allowed: &[&str] = match kind.as_str() {
            "stress_cpu" => &["kind", "instance", "workers", "load_pct"],
            "disk_latency" => &["kind", "instance", "device", "latency_ms", "jitter_ms"],
            "latency" => &["kind", "target", "latency_ms", "jitter_ms"],
            "bandwidth" => &["kind", "target", "rate_mbps"],
            _ => {
                self.err(
                    &kind_entry.node,
                    &path.key("kind"),
                    format!(
                        "unknown fault kind {} (kinds: {}){}",
                        kind_entry.node.describe(),
                        quoted_list(FAULT_KINDS),
                        suggest(&kind, FAULT_KINDS)
                    ),
                );
                return None;
            }
        };
        let before = self.problems.len();
        let tv = self.table(node, path, allowed)?;
        let fault = match kind.as_str() {
            "stress_cpu" => {
                let instance = self
                    .req(&tv, "instance")
                    .and_then(|v| self.instance(v, &tv.at("instance"), n));
                let workers = self
                    .req(&tv, "workers")
                    .and_then(|v| self.u32_in(v, &tv.at("workers"), 1, u32::MAX));
                let load_pct = self.opt_u32(&tv, "load_pct", 1, 100, 100);
                Fault::StressCpu {
                    instance: instance?,
                    workers: workers?,
                    load_pct,
                }
            }
            "disk_latency" => {
                let instance = self
                    .req(&tv, "instance")
                    .and_then(|v| self.instance(v, &tv.at("instance"), n));
                let device = self.req(&tv, "device").and_then(|v| match &v.val {
                    Val::Str(s) if s == "redo" => Some(Device::Redo),
                    Val::Str(s) if s == "data" => Some(Device::Data),
                    _ => {
                        self.err(
                            v,
                            &tv.at("device"),
                            format!("expected \"redo\" or \"data\", found {}", v.describe()),
                        );
                        None
                    }
                });
                let latency = self
                    .req(&tv, "latency_ms")
                    .and_then(|v| self.duration(v, &tv.at("latency_ms"), NS_PER_MS, false));
                let jitter = self.opt_duration(&tv, "jitter_ms", NS_PER_MS, false, 0);
                Fault::DiskLatency {
                    instance: instance?,
                    device: device?,
                    latency: latency?,
                    jitter,
                }
            }
            "latency" => {
                let target = self
                    .req(&tv, "target")
                    .and_then(|v| self.link_target(v, &tv.at("target"), n));
                let latency = self
                    .req(&tv, "latency_ms")
                    .and_then(|v| self.duration(v, &tv.at("latency_ms"), NS_PER_MS, false));
                let jitter = self.opt_duration(&tv, "jitter_ms", NS_PER_MS, false, 0);
                Fault::NetworkLatency {
                    target: target?,
                    latency: latency?,
                    jitter,
                }
            }
            _ => {
                let target = self
                    .req(&tv, "target")
                    .and_then(|v| self.link_target(v, &tv.at("target"), n));
                let rate = self
                    .req(&tv, "rate_mbps")
                    .and_then(|v| self.rate(v, &tv.at("rate_mbps"), 1e6));
                Fault::Bandwidth {
                    target: target?,
                    rate_bps: rate?,
                }
            }
        };
        (self.problems.len() == before).then_some(fault)
    }

    fn link_target(&mut self, node: &Node, path: &KeyPath, n: Option<u8>) -> Option<LinkTarget> {
        match &node.val {
            Val::Str(s) if s == "all" => Some(LinkTarget::All),
            Val::Table(t) => {
                let tv = self.table(node, path, &["instance", "from", "to"])?;
                if t.get("instance").is_some() {
                    for key in ["from", "to"] {
                        if let Some(e) = tv.entry(key) {
                            self.err_key(
                                e,
                                &tv.at(key),
                                "give either `instance` or `from` and `to`, not both",
                            );
                            return None;
                        }
                    }
                    let v = tv.get("instance")?;
                    return self
                        .instance(v, &tv.at("instance"), n)
                        .map(LinkTarget::Instance);
                }
                if t.get("from").is_none() && t.get("to").is_none() {
                    self.err(
                        node,
                        path,
                        "expected { instance = N } or { from = A, to = B }",
                    );
                    return None;
                }
                let from = self
                    .req(&tv, "from")
                    .and_then(|v| self.instance(v, &tv.at("from"), n));
                let to = self
                    .req(&tv, "to")
                    .and_then(|v| self.instance(v, &tv.at("to"), n));
                let (from, to) = (from?, to?);
                if from == to {
                    self.err(
                        node,
                        path,
                        format!("a link joins two different instances (from = to = {from})"),
                    );
                    return None;
                }
                Some(LinkTarget::Link { from, to })
            }
            _ => {
                self.err(
                    node,
                    path,
                    format!(
                        "expected \"all\", {{ instance = N }} or {{ from = A, to = B }}, found {}",
                        node.describe()
                    ),
                );
                None
            }
        }
    }

    // ---- [tour] --------------------------------------------------------------

    fn tour(&mut self, root: &Node) -> Option<TourDraft> {
        let node = root.as_table()?.get("tour").map(|e| &e.node)?;
        let before = self.problems.len();
        let tv = self.table(node, &KeyPath::root().key("tour"), TOUR_KEYS)?;
        let order = self
            .req(&tv, "order")
            .and_then(|v| self.u32_in(v, &tv.at("order"), 0, u32::MAX));
        let label = self
            .req(&tv, "label")
            .and_then(|v| self.one_line(v, &tv.at("label")));
        let deck = self
            .req(&tv, "deck")
            .and_then(|v| self.one_line(v, &tv.at("deck")));
        let measured = self
            .req(&tv, "measured")
            .and_then(|v| self.tour_side(v, &tv.at("measured"), None));
        let mut versus = Vec::new();
        if let (Some(v), Some(base)) = (tv.get("versus"), measured.as_ref()) {
            let list = self.tables(v, &tv.at("versus"), "tour.versus");
            if list.is_empty() {
                self.err(
                    v,
                    &tv.at("versus"),
                    "expected a list of figures such as [{ variant = \"other\" }]",
                );
            }
            for (item, path) in list {
                if let Some(side) = self.tour_side(item, &path, Some(base)) {
                    versus.push(side);
                }
            }
        }
        let (Some(order), Some(label), Some(deck), Some(measured)) = (order, label, deck, measured)
        else {
            return None;
        };
        if self.problems.len() != before {
            return None;
        }
        Some(TourDraft {
            tour: TourSpec {
                order,
                measured: measured.mref,
                versus: Vec::new(),
                label,
                deck,
            },
            side: measured.side,
            variant_ref: measured.variant_ref,
            versus,
        })
    }

    /// A figure of `[tour]`: `metric`, `phase`, `instance`, `variant`. The
    /// first (`measured`) needs a metric and a phase; a `versus` figure takes
    /// what it leaves out from `base`.
    fn tour_side(&mut self, v: &Node, path: &KeyPath, base: Option<&TourSide>) -> Option<TourSide> {
        let mtv = self.table(v, path, MEASURED_KEYS)?;
        let metric = match (mtv.get("metric"), base) {
            (Some(m), _) => self.metric(m, &mtv.at("metric")),
            (None, Some(b)) => Some((b.mref.metric, b.mref.text.clone())),
            (None, None) => self.req(&mtv, "metric").and(None),
        };
        let phase = match (mtv.get("phase"), base) {
            (Some(p), _) => self
                .name(p, &mtv.at("phase"))
                .map(|_| (p.clone(), mtv.at("phase"))),
            (None, Some(b)) => Some((b.side.phase_node.clone(), b.side.phase_path.clone())),
            (None, None) => self.req(&mtv, "phase").and(None),
        };
        let instance = match (mtv.get("instance"), base) {
            (Some(i), _) => self
                .expect_instance(i, &mtv.at("instance"))
                .map(|o| o.map(|(n, node)| (n, node, mtv.at("instance")))),
            (None, Some(b)) => Some(b.side.instance.clone()),
            (None, None) => Some(None),
        };
        let variant_ref = match (mtv.get("variant"), base) {
            (Some(n), _) => self
                .name(n, &mtv.at("variant"))
                .map(|s| Some((s, n.clone(), mtv.at("variant")))),
            (None, Some(b)) => Some(b.variant_ref.clone()),
            (None, None) => Some(None),
        };
        let ((metric, text), (phase_node, phase_path), instance, variant_ref) =
            (metric?, phase?, instance?, variant_ref?);
        let variant = variant_ref.as_ref().map(|(s, _, _)| s.clone());
        Some(TourSide {
            mref: MetricRef {
                metric,
                text,
                variant: variant.clone(),
                phase: phase_str(&phase_node),
                instance: instance.as_ref().map(|(i, _, _)| *i),
            },
            side: SideDraft {
                phase_node,
                phase_path,
                instance,
                variant,
            },
            variant_ref,
        })
    }

    /// A non-empty string on one line (it goes in a table cell).
    fn one_line(&mut self, node: &Node, path: &KeyPath) -> Option<String> {
        let s = self.string(node, path)?;
        if s.trim().is_empty() || s.contains('\n') {
            self.err(node, path, "expected a non-empty string on one line");
            return None;
        }
        Some(s)
    }

    /// Check `[tour].measured` against the variants: it is measured in the
    /// variant it names, else in the first one.
    fn check_tour(
        &mut self,
        d: TourDraft,
        built: &[(String, String, Option<Scenario>)],
        has_variants: bool,
    ) -> Option<TourSpec> {
        let mut versus = Vec::new();
        for v in &d.versus {
            let mut mref = v.mref.clone();
            mref.variant =
                Some(self.check_tour_side(&v.side, &v.variant_ref, built, has_variants)?);
            versus.push(mref);
        }
        let variant = self.check_tour_side(&d.side, &d.variant_ref, built, has_variants)?;
        let mut tour = d.tour;
        tour.measured.variant = Some(variant);
        tour.versus = versus;
        Some(tour)
    }

    /// Check one `[tour]` figure against the variants; the variant it is
    /// measured in (the one it names, else the first).
    fn check_tour_side(
        &mut self,
        side: &SideDraft,
        variant_ref: &Option<(String, Node, KeyPath)>,
        built: &[(String, String, Option<Scenario>)],
        has_variants: bool,
    ) -> Option<String> {
        let names: Vec<String> = built.iter().map(|(n, _, _)| n.clone()).collect();
        let variant = match variant_ref {
            Some((v, node, path)) => {
                if !names.contains(v) {
                    let known = if has_variants {
                        names_list(&names)
                    } else {
                        format!("{} (the file has no [[variant]])", names_list(&names))
                    };
                    self.err(
                        node,
                        path,
                        format!("unknown variant `{v}` (variants: {known})"),
                    );
                    return None;
                }
                v.clone()
            }
            None => names.first()?.clone(),
        };
        if !self.check_side(side, &[&variant], built, has_variants) {
            return None;
        }
        Some(variant)
    }

    // ---- [[expect]] --------------------------------------------------------

    fn expectations(&mut self, root: &Node) -> Vec<ExpectDraft> {
        let mut out = Vec::new();
        let Some(node) = root
            .as_table()
            .and_then(|t| t.get("expect"))
            .map(|e| &e.node)
        else {
            return out;
        };
        let mut seen = Vec::new();
        for (item, path) in self.tables(node, &KeyPath::root().key("expect"), "expect") {
            let before = self.problems.len();
            let Some(tv) = self.table(item, &path, EXPECT_KEYS) else {
                continue;
            };
            let name = self.req(&tv, "name").and_then(|v| {
                let name = self.name(v, &tv.at("name"))?;
                self.unique(&mut seen, &name, v, &tv.at("name"), "expectation");
                Some(name)
            });
            let metric = self
                .req(&tv, "metric")
                .and_then(|v| self.metric(v, &tv.at("metric")));
            let phase = self
                .req(&tv, "phase")
                .and_then(|v| self.name(v, &tv.at("phase")).map(|_| v));
            let instance = tv
                .get("instance")
                .map(|v| self.expect_instance(v, &tv.at("instance")));
            let variant = tv
                .get("variant")
                .and_then(|v| self.name(v, &tv.at("variant")).map(|s| (s, v)));
            let op = self.req(&tv, "op").and_then(|v| {
                let op = match &v.val {
                    Val::Str(s) if s == "<" => Some(CmpOp::Lt),
                    Val::Str(s) if s == "<=" => Some(CmpOp::Le),
                    Val::Str(s) if s == ">" => Some(CmpOp::Gt),
                    Val::Str(s) if s == ">=" => Some(CmpOp::Ge),
                    _ => None,
                };
                if op.is_none() {
                    self.err(
                        v,
                        &tv.at("op"),
                        format!(
                            "expected one of \"<\", \"<=\", \">\", \">=\", found {}",
                            v.describe()
                        ),
                    );
                }
                op
            });
            let factor = tv.get("factor").map_or(Some(1.0), |v| {
                self.number(v, &tv.at("factor"), Bound::Finite)
            });
            let (Some(name), Some((metric, text)), Some(phase_node), Some(op), Some(factor)) =
                (name, metric, phase, op, factor)
            else {
                continue;
            };
            let Some(instance) = instance.unwrap_or(Some(None)) else {
                continue;
            };
            let mut variant_refs = Vec::new();
            if let Some((v, node)) = &variant {
                variant_refs.push((v.clone(), (*node).clone(), tv.at("variant")));
            }
            let left_ref = MetricRef {
                metric,
                text: text.clone(),
                variant: variant.as_ref().map(|(v, _)| v.clone()),
                phase: phase_str(phase_node),
                instance: instance.as_ref().map(|(i, _)| *i),
            };
            let left = SideDraft {
                phase_node: phase_node.clone(),
                phase_path: tv.at("phase"),
                instance: instance.map(|(i, n)| (i, n, tv.at("instance"))),
                variant: left_ref.variant.clone(),
            };
            let (right, right_draft) = match (tv.entry("than"), tv.entry("value")) {
                (Some(_), Some(ve)) => {
                    self.err_key(
                        ve,
                        &tv.at("value"),
                        "give either `than` or `value`, not both",
                    );
                    continue;
                }
                (None, None) => {
                    self.err(item, &path, "missing `than = { ... }` or `value = N` (the other side of the comparison)");
                    continue;
                }
                (None, Some(ve)) => match self.number(&ve.node, &tv.at("value"), Bound::Finite) {
                    Some(v) => (Operand::Value(v), None),
                    None => continue,
                },
                (Some(te), None) => {
                    let tpath = tv.at("than");
                    let Some(than) = self.table(&te.node, &tpath, THAN_KEYS) else {
                        continue;
                    };
                    let r_metric = match than.get("metric") {
                        Some(v) => self.metric(v, &than.at("metric")),
                        None => Some((metric, text.clone())),
                    };
                    let (r_phase_node, r_phase_path) = match than.get("phase") {
                        Some(v) => (
                            self.name(v, &than.at("phase")).map(|_| v.clone()),
                            than.at("phase"),
                        ),
                        None => (Some(phase_node.clone()), tv.at("phase")),
                    };
                    let r_instance = match than.get("instance") {
                        Some(v) => self
                            .expect_instance(v, &than.at("instance"))
                            .map(|o| o.map(|(i, n)| (i, n, than.at("instance")))),
                        None => Some(left.instance.clone()),
                    };
                    let r_variant = match than.get("variant") {
                        Some(v) => match self.name(v, &than.at("variant")) {
                            Some(s) => {
                                variant_refs.push((s.clone(), v.clone(), than.at("variant")));
                                Some(Some(s))
                            }
                            None => None,
                        },
                        None => Some(left.variant.clone()),
                    };
                    let (Some((m, mtext)), Some(pn), Some(inst), Some(var)) =
                        (r_metric, r_phase_node, r_instance, r_variant)
                    else {
                        continue;
                    };
                    let r = MetricRef {
                        metric: m,
                        text: mtext,
                        variant: var.clone(),
                        phase: phase_str(&pn),
                        instance: inst.as_ref().map(|(i, _, _)| *i),
                    };
                    let draft = SideDraft {
                        phase_node: pn,
                        phase_path: r_phase_path,
                        instance: inst,
                        variant: var,
                    };
                    (Operand::Metric(r), Some(draft))
                }
            };
            if self.problems.len() != before {
                continue;
            }
            out.push(ExpectDraft {
                expectation: Expectation {
                    name,
                    left: left_ref,
                    op,
                    right,
                    factor,
                },
                left,
                right: right_draft,
                variant_refs,
            });
        }
        out
    }

    fn metric(&mut self, node: &Node, path: &KeyPath) -> Option<(Metric, String)> {
        let text = self.string(node, path)?;
        match Metric::parse(&text) {
            Ok(m) => Some((m, text)),
            Err(msg) => {
                self.err(node, path, msg);
                None
            }
        }
    }

    /// An expectation's instance: a number (range checked per variant later) or
    /// `"all"` for the whole cluster. `None` on error.
    fn expect_instance(&mut self, node: &Node, path: &KeyPath) -> Option<Option<(u8, Node)>> {
        match &node.val {
            Val::Str(s) if s == "all" => Some(None),
            Val::Int(_) => self
                .instance(node, path, None)
                .map(|i| Some((i, node.clone()))),
            _ => {
                self.err(
                    node,
                    path,
                    format!(
                        "expected an instance number or \"all\", found {}",
                        node.describe()
                    ),
                );
                None
            }
        }
    }

    /// Check the expectations' phases, instances and variants against the
    /// variants they are evaluated on.
    fn check_expectations(
        &mut self,
        drafts: Vec<ExpectDraft>,
        built: &[(String, String, Option<Scenario>)],
        has_variants: bool,
    ) -> Vec<Expectation> {
        let names: Vec<String> = built.iter().map(|(n, _, _)| n.clone()).collect();
        let mut out = Vec::new();
        for d in drafts {
            let mut ok = true;
            for (v, node, path) in &d.variant_refs {
                if !names.contains(v) {
                    let known = if has_variants {
                        names_list(&names)
                    } else {
                        format!("{} (the file has no [[variant]])", names_list(&names))
                    };
                    self.err(
                        node,
                        path,
                        format!("unknown variant `{v}` (variants: {known})"),
                    );
                    ok = false;
                }
            }
            if !ok {
                continue;
            }
            let left_on: Vec<&String> = match &d.left.variant {
                Some(v) => names.iter().filter(|n| *n == v).collect(),
                None => names.iter().collect(),
            };
            ok &= self.check_side(&d.left, &left_on, built, has_variants);
            if let Some(r) = &d.right {
                let right_on: Vec<&String> = match &r.variant {
                    Some(v) => names.iter().filter(|n| *n == v).collect(),
                    None => left_on.clone(),
                };
                ok &= self.check_side(r, &right_on, built, has_variants);
            }
            if ok {
                out.push(d.expectation);
            }
        }
        out
    }

    fn check_side(
        &mut self,
        side: &SideDraft,
        on: &[&String],
        built: &[(String, String, Option<Scenario>)],
        has_variants: bool,
    ) -> bool {
        let phase = phase_str(&side.phase_node);
        let mut missing = Vec::new();
        let mut all_phases: Vec<String> = Vec::new();
        let mut out_of_range = Vec::new();
        for (name, _, scenario) in built {
            let Some(s) = scenario else { continue };
            if !on.contains(&name) {
                continue;
            }
            for p in &s.phases {
                if !all_phases.contains(&p.name) {
                    all_phases.push(p.name.clone());
                }
            }
            if !s.phases.iter().any(|p| p.name == phase) {
                missing.push(name.clone());
            }
            if let Some((i, _, _)) = &side.instance
                && usize::from(*i) > s.instances.len()
            {
                out_of_range.push((name.clone(), s.instances.len()));
            }
        }
        let mut ok = true;
        if !missing.is_empty() {
            let message = if !has_variants || missing.len() == on.len() {
                format!(
                    "unknown phase `{phase}` (phases: {})",
                    names_list(&all_phases)
                )
            } else {
                let list: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
                format!(
                    "phase `{phase}` does not exist in variant {}",
                    list.join(", ")
                )
            };
            self.err(&side.phase_node, &side.phase_path, message);
            ok = false;
        }
        if let Some((i, node, path)) = &side.instance
            && let Some((vname, count)) = out_of_range.first()
        {
            let whence = if has_variants {
                format!(" in variant `{vname}`")
            } else {
                String::new()
            };
            self.err(
                node,
                path,
                format!(
                    "instance {i} is out of range 1..={count}{whence} (cluster.instances = {count})"
                ),
            );
            ok = false;
        }
        ok
    }
}

fn phase_str(node: &Node) -> String {
    match &node.val {
        Val::Str(s) => s.clone(),
        _ => String::new(),
    }
}

/// A value with the contents of a short array, for messages.
fn describe_deep(node: &Node) -> String {
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
