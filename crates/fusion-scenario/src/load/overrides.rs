//! Changes to the file's tree before it is validated: `--set KEY=VALUE` from
//! the command line, and `[[variant]]`s with their `set` tables. Also the
//! merge of the problems each variant's validation found.

use std::rc::Rc;

use super::problems::Validator;
use crate::error::Problem;
use crate::tree::{
    Entry, KeyPath, Node, Origin, Span, Table, Val, parse_path, parse_value, set_path,
    split_assignment,
};

const VARIANT_KEYS: &[&str] = &["name", "description", "set"];
/// What a variant's `set` may change: the run configuration, not what the
/// scenario claims (`[[expect]]`, `[tour]`) or its name.
const VARIANT_SETTABLE: &[&str] = &[
    "cluster",
    "parameters",
    "costs",
    "network",
    "storage",
    "server",
    "table",
    "index",
    "sequence",
    "query",
    "workload",
    "phase",
    "scenario.seed",
];

/// A `[[variant]]` as declared.
pub(super) struct VariantDecl {
    pub(super) name: String,
    pub(super) description: String,
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

impl Validator<'_> {
    /// One `--set KEY=VALUE`.
    pub(super) fn apply_set(&mut self, root: &mut Node, text: &str) {
        let assignment: Rc<str> = Rc::from(text.trim());
        let origin = Origin::Set(assignment.clone());
        let fail = |this: &mut Self, message: String| {
            this.push(&None, &origin, None, None, message);
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

    /// The `set` of the variant at `index` applied to its copy of the tree.
    pub(super) fn apply_variant(&mut self, root: &mut Node, index: usize, decl: &VariantDecl) {
        let origin = Origin::Variant(Rc::from(decl.name.as_str()));
        for s in &decl.sets {
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
                    Some(format!("variant `{}`", decl.name)),
                    e,
                );
            }
        }
    }

    /// Problems found while building each variant: those every variant shares
    /// are reported once; those only some have say which.
    pub(super) fn merge_variant_problems(
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
                let list: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
                let note = format!("in variant {}", list.join(", "));
                p.context = Some(match p.context {
                    Some(c) => format!("{c}; {note}"),
                    None => note,
                });
            }
            self.problems.push(p);
        }
    }

    /// `[[variant]]`: name, description and `set`.
    pub(super) fn variant_decls(&mut self, root: &Node) -> Vec<VariantDecl> {
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
            let Some(variant) = self.table(item, &path, VARIANT_KEYS) else {
                continue;
            };
            let name = match self.req(&variant, "name") {
                Some(node) => match self.name(node, &variant.at("name")) {
                    Some(name) => {
                        self.unique(&mut seen, &name, node, &variant.at("name"), "variant");
                        name
                    }
                    None => continue,
                },
                None => continue,
            };
            let description = variant
                .get("description")
                .and_then(|node| self.string(node, &variant.at("description")))
                .unwrap_or_default();
            let mut sets = Vec::new();
            if let Some(set) = variant.get("set") {
                match set.as_table() {
                    Some(t) => self.flatten_set(t, &variant.at("set"), &[], false, &mut sets),
                    None => self.err(set, &variant.at("set"), format!(
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
        table: &Table,
        path: &KeyPath,
        prefix: &[String],
        nested: bool,
        out: &mut Vec<SetItem>,
    ) {
        for entry in &table.entries {
            let here = path.key(&entry.key);
            let segs = if nested {
                vec![entry.key.clone()]
            } else {
                match parse_path(&entry.key) {
                    Ok(s) => s,
                    Err(msg) => {
                        self.err_key(entry, &here, format!("bad key path: {msg}"));
                        continue;
                    }
                }
            };
            let mut full = prefix.to_vec();
            full.extend(segs);
            match &entry.node.val {
                Val::Table(sub) if sub.dotted || !sub.inline => {
                    self.flatten_set(sub, &here, &full, true, out)
                }
                _ => out.push(set_item(full, entry)),
            }
        }
    }
}

/// A `set` entry at the path `segs`.
fn set_item(segs: Vec<String>, entry: &Entry) -> SetItem {
    let text = segs
        .iter()
        .map(|s| {
            if s.contains('.') {
                format!("{s:?}")
            } else {
                s.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(".");
    SetItem {
        text,
        segs,
        key_span: entry.key_span.clone(),
        key_origin: entry.key_origin.clone(),
        value: entry.node.clone(),
    }
}
