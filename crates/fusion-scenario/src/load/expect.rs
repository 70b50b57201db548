//! `[[expect]]`: what the scenario claims, as comparisons of metrics
//! (`metric` in `phase` on `instance` of `variant`, `op`, `than` another
//! metric or a `value`). Read once for the file, then checked against the
//! phases and instances of the variants each side is evaluated on.

use fusion_core::metrics::Metric;

use super::problems::{Validator, names_list};
use super::read::{Bound, TableView};
use super::{BuiltVariant, variant_names};
use crate::model::{CmpOp, Expectation, MetricRef, Operand};
use crate::tree::{KeyPath, Node, Val};

const EXPECT_KEYS: &[&str] = &[
    "name", "metric", "phase", "instance", "variant", "op", "factor", "than", "value",
];
const THAN_KEYS: &[&str] = &["metric", "phase", "instance", "variant"];

/// One side of an expectation (or a `[tour]` figure), kept with the nodes it
/// came from so the checks against the variants can point at them.
#[derive(Clone)]
pub(super) struct SideDraft {
    pub(super) phase_node: Node,
    pub(super) phase_path: KeyPath,
    pub(super) instance: Option<(u8, Node, KeyPath)>,
    pub(super) variant: Option<String>,
}

/// A variant named by an expectation or the tour, with where it was written.
pub(super) type VariantRef = (String, Node, KeyPath);

/// An expectation read, not yet checked against the variants.
pub(super) struct ExpectDraft {
    expectation: Expectation,
    left: SideDraft,
    right: Option<SideDraft>,
    /// `variant` values to check against the declared variants.
    variant_refs: Vec<VariantRef>,
}

/// The phase named by a `phase` node (empty if it is not a string).
pub(super) fn phase_str(node: &Node) -> String {
    match &node.val {
        Val::Str(s) => s.clone(),
        _ => String::new(),
    }
}

impl Validator<'_> {
    pub(super) fn expectations(&mut self, root: &Node) -> Vec<ExpectDraft> {
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
            let Some(draft) = self.expectation(item, &path, &mut seen) else {
                continue;
            };
            if self.problems.len() == before {
                out.push(draft);
            }
        }
        out
    }

    /// One `[[expect]]`; `None` if it could not be read whole.
    fn expectation(
        &mut self,
        item: &Node,
        path: &KeyPath,
        seen: &mut Vec<(String, Node)>,
    ) -> Option<ExpectDraft> {
        let expect = self.table(item, path, EXPECT_KEYS)?;
        let name = self.req(&expect, "name").and_then(|v| {
            let name = self.name(v, &expect.at("name"))?;
            self.unique(seen, &name, v, &expect.at("name"), "expectation");
            Some(name)
        });
        let metric = self
            .req(&expect, "metric")
            .and_then(|v| self.metric(v, &expect.at("metric")));
        let phase = self
            .req(&expect, "phase")
            .and_then(|v| self.name(v, &expect.at("phase")).map(|_| v));
        let instance = expect
            .get("instance")
            .map(|v| self.expect_instance(v, &expect.at("instance")));
        let variant = expect
            .get("variant")
            .and_then(|v| self.name(v, &expect.at("variant")).map(|s| (s, v)));
        let op = self
            .req(&expect, "op")
            .and_then(|v| self.compare_op(v, &expect.at("op")));
        let factor = expect.get("factor").map_or(Some(1.0), |v| {
            self.number(v, &expect.at("factor"), Bound::Finite)
        });
        let (Some(name), Some((metric, text)), Some(phase_node), Some(op), Some(factor)) =
            (name, metric, phase, op, factor)
        else {
            return None;
        };
        let instance = instance.unwrap_or(Some(None))?;
        let mut variant_refs = Vec::new();
        if let Some((v, node)) = &variant {
            variant_refs.push((v.clone(), (*node).clone(), expect.at("variant")));
        }
        let left_ref = MetricRef {
            metric,
            text,
            variant: variant.as_ref().map(|(v, _)| v.clone()),
            phase: phase_str(phase_node),
            instance: instance.as_ref().map(|(i, _)| *i),
        };
        let left = SideDraft {
            phase_node: phase_node.clone(),
            phase_path: expect.at("phase"),
            instance: instance.map(|(i, node)| (i, node, expect.at("instance"))),
            variant: left_ref.variant.clone(),
        };
        let (right, right_draft) =
            self.other_side(item, path, &expect, &left_ref, &left, &mut variant_refs)?;
        Some(ExpectDraft {
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
        })
    }

    /// `op`: "<", "<=", ">" or ">=".
    fn compare_op(&mut self, node: &Node, path: &KeyPath) -> Option<CmpOp> {
        let op = match &node.val {
            Val::Str(s) if s == "<" => Some(CmpOp::Lt),
            Val::Str(s) if s == "<=" => Some(CmpOp::Le),
            Val::Str(s) if s == ">" => Some(CmpOp::Gt),
            Val::Str(s) if s == ">=" => Some(CmpOp::Ge),
            _ => None,
        };
        if op.is_none() {
            self.err(
                node,
                path,
                format!(
                    "expected one of \"<\", \"<=\", \">\", \">=\", found {}",
                    node.describe()
                ),
            );
        }
        op
    }

    /// The right side of a comparison: `value = N`, or `than = { ... }`
    /// which takes what it leaves out from the left side.
    fn other_side(
        &mut self,
        item: &Node,
        path: &KeyPath,
        expect: &TableView,
        left_ref: &MetricRef,
        left: &SideDraft,
        variant_refs: &mut Vec<VariantRef>,
    ) -> Option<(Operand, Option<SideDraft>)> {
        match (expect.entry("than"), expect.entry("value")) {
            (Some(_), Some(value)) => {
                self.err_key(
                    value,
                    &expect.at("value"),
                    "give either `than` or `value`, not both",
                );
                None
            }
            (None, None) => {
                self.err(
                    item,
                    path,
                    "missing `than = { ... }` or `value = N` (the other side of the comparison)",
                );
                None
            }
            (None, Some(value)) => self
                .number(&value.node, &expect.at("value"), Bound::Finite)
                .map(|v| (Operand::Value(v), None)),
            (Some(than), None) => {
                let (metric, draft) = self.than_side(
                    &than.node,
                    &expect.at("than"),
                    expect,
                    left_ref,
                    left,
                    variant_refs,
                )?;
                Some((Operand::Metric(metric), Some(draft)))
            }
        }
    }

    /// `than = { metric, phase, instance, variant }`, each defaulting to the left side's.
    fn than_side(
        &mut self,
        node: &Node,
        path: &KeyPath,
        expect: &TableView,
        left_ref: &MetricRef,
        left: &SideDraft,
        variant_refs: &mut Vec<VariantRef>,
    ) -> Option<(MetricRef, SideDraft)> {
        let than = self.table(node, path, THAN_KEYS)?;
        let metric = match than.get("metric") {
            Some(v) => self.metric(v, &than.at("metric")),
            None => Some((left_ref.metric, left_ref.text.clone())),
        };
        let (phase_node, phase_path) = match than.get("phase") {
            Some(v) => (
                self.name(v, &than.at("phase")).map(|_| v.clone()),
                than.at("phase"),
            ),
            None => (Some(left.phase_node.clone()), expect.at("phase")),
        };
        let instance = match than.get("instance") {
            Some(v) => self
                .expect_instance(v, &than.at("instance"))
                .map(|o| o.map(|(i, node)| (i, node, than.at("instance")))),
            None => Some(left.instance.clone()),
        };
        let variant = match than.get("variant") {
            Some(v) => match self.name(v, &than.at("variant")) {
                Some(s) => {
                    variant_refs.push((s.clone(), v.clone(), than.at("variant")));
                    Some(Some(s))
                }
                None => None,
            },
            None => Some(left.variant.clone()),
        };
        let (Some((metric, metric_text)), Some(phase_node), Some(instance), Some(variant)) =
            (metric, phase_node, instance, variant)
        else {
            return None;
        };
        let metric_ref = MetricRef {
            metric,
            text: metric_text,
            variant: variant.clone(),
            phase: phase_str(&phase_node),
            instance: instance.as_ref().map(|(i, _, _)| *i),
        };
        let draft = SideDraft {
            phase_node,
            phase_path,
            instance,
            variant,
        };
        Some((metric_ref, draft))
    }

    /// A metric's name as written, parsed.
    pub(super) fn metric(&mut self, node: &Node, path: &KeyPath) -> Option<(Metric, String)> {
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
    pub(super) fn expect_instance(
        &mut self,
        node: &Node,
        path: &KeyPath,
    ) -> Option<Option<(u8, Node)>> {
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
    pub(super) fn check_expectations(
        &mut self,
        drafts: Vec<ExpectDraft>,
        built: &[BuiltVariant],
        has_variants: bool,
    ) -> Vec<Expectation> {
        let names = variant_names(built);
        let mut out = Vec::new();
        for draft in drafts {
            let mut ok = true;
            for variant_ref in &draft.variant_refs {
                ok &= self.check_variant_ref(variant_ref, &names, has_variants);
            }
            if !ok {
                continue;
            }
            let left_on: Vec<&String> = match &draft.left.variant {
                Some(v) => names.iter().filter(|name| *name == v).collect(),
                None => names.iter().collect(),
            };
            ok &= self.check_side(&draft.left, &left_on, built, has_variants);
            if let Some(right) = &draft.right {
                let right_on: Vec<&String> = match &right.variant {
                    Some(v) => names.iter().filter(|name| *name == v).collect(),
                    None => left_on.clone(),
                };
                ok &= self.check_side(right, &right_on, built, has_variants);
            }
            if ok {
                out.push(draft.expectation);
            }
        }
        out
    }

    /// A variant named in an expectation or the tour must be declared.
    pub(super) fn check_variant_ref(
        &mut self,
        (variant, node, path): &VariantRef,
        names: &[String],
        has_variants: bool,
    ) -> bool {
        if names.contains(variant) {
            return true;
        }
        let known = if has_variants {
            names_list(names)
        } else {
            format!("{} (the file has no [[variant]])", names_list(names))
        };
        self.err(
            node,
            path,
            format!("unknown variant `{variant}` (variants: {known})"),
        );
        false
    }

    /// One side's phase and instance must exist in every variant in `on`.
    pub(super) fn check_side(
        &mut self,
        side: &SideDraft,
        on: &[&String],
        built: &[BuiltVariant],
        has_variants: bool,
    ) -> bool {
        let phase = phase_str(&side.phase_node);
        let mut missing = Vec::new();
        let mut all_phases: Vec<String> = Vec::new();
        let mut out_of_range = Vec::new();
        for variant in built {
            let Some(s) = &variant.scenario else { continue };
            if !on.contains(&&variant.name) {
                continue;
            }
            for p in &s.phases {
                if !all_phases.contains(&p.name) {
                    all_phases.push(p.name.clone());
                }
            }
            if !s.phases.iter().any(|p| p.name == phase) {
                missing.push(variant.name.clone());
            }
            if let Some((i, _, _)) = &side.instance
                && usize::from(*i) > s.instances.len()
            {
                out_of_range.push((variant.name.clone(), s.instances.len()));
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
                let list: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
                format!(
                    "phase `{phase}` does not exist in variant {}",
                    list.join(", ")
                )
            };
            self.err(&side.phase_node, &side.phase_path, message);
            ok = false;
        }
        if let Some((i, node, path)) = &side.instance
            && let Some((variant_name, count)) = out_of_range.first()
        {
            let whence = if has_variants {
                format!(" in variant `{variant_name}`")
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
