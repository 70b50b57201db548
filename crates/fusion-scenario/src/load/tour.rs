//! `[tour]`: the scenario's line in the myth tour, the figure it shows
//! (`measured`), figures beside it (`versus`), a label and what the deck
//! measured. Read once for the file, then checked against the variants.

use super::expect::{SideDraft, VariantRef, phase_str};
use super::problems::Validator;
use super::{BuiltVariant, variant_names};
use crate::model::{MetricRef, TourPart, TourSpec};
use crate::tree::{KeyPath, Node};

const TOUR_KEYS: &[&str] = &["order", "part", "measured", "versus", "label", "deck"];
const FIGURE_KEYS: &[&str] = &["metric", "phase", "instance", "variant"];

/// `[tour]` read, its figures not yet checked against the variants.
pub(super) struct TourDraft {
    tour: TourSpec,
    measured: TourFigure,
    /// `versus`: the figures shown beside it, each checked the same way.
    versus: Vec<TourFigure>,
}

/// One figure of `[tour]` as read: what it measures, where, and the variant named.
#[derive(Clone)]
struct TourFigure {
    metric_ref: MetricRef,
    side: SideDraft,
    /// `variant` as written, to check against the declared variants.
    variant_ref: Option<VariantRef>,
}

impl Validator<'_> {
    pub(super) fn tour(&mut self, root: &Node) -> Option<TourDraft> {
        let node = root.as_table()?.get("tour").map(|e| &e.node)?;
        let before = self.problems.len();
        let tour = self.table(node, &KeyPath::root().key("tour"), TOUR_KEYS)?;
        let order = self
            .req(&tour, "order")
            .and_then(|v| self.u32_in(v, &tour.at("order"), 0, u32::MAX));
        let part = match tour.get("part") {
            None => TourPart::Myths,
            Some(p) => match self.string(p, &tour.at("part")).as_deref() {
                Some("myths") => TourPart::Myths,
                Some("node") => TourPart::Node,
                Some(other) => {
                    self.err(
                        p,
                        &tour.at("part"),
                        format!("unknown tour part `{other}` (myths or node)"),
                    );
                    TourPart::Myths
                }
                None => TourPart::Myths,
            },
        };
        let label = self
            .req(&tour, "label")
            .and_then(|v| self.one_line(v, &tour.at("label")));
        let deck = self
            .req(&tour, "deck")
            .and_then(|v| self.one_line(v, &tour.at("deck")));
        let measured = self
            .req(&tour, "measured")
            .and_then(|v| self.tour_figure(v, &tour.at("measured"), None));
        let mut versus = Vec::new();
        if let (Some(list), Some(base)) = (tour.get("versus"), measured.as_ref()) {
            let items = self.tables(list, &tour.at("versus"), "tour.versus");
            if items.is_empty() {
                self.err(
                    list,
                    &tour.at("versus"),
                    "expected a list of figures such as [{ variant = \"other\" }]",
                );
            }
            for (item, path) in items {
                if let Some(figure) = self.tour_figure(item, &path, Some(base)) {
                    versus.push(figure);
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
                part,
                measured: measured.metric_ref.clone(),
                versus: Vec::new(),
                label,
                deck,
            },
            measured,
            versus,
        })
    }

    /// A figure of `[tour]`: `metric`, `phase`, `instance`, `variant`. The
    /// first (`measured`) needs a metric and a phase; a `versus` figure takes
    /// what it leaves out from `base`.
    fn tour_figure(
        &mut self,
        node: &Node,
        path: &KeyPath,
        base: Option<&TourFigure>,
    ) -> Option<TourFigure> {
        let figure = self.table(node, path, FIGURE_KEYS)?;
        let metric = match (figure.get("metric"), base) {
            (Some(m), _) => self.metric(m, &figure.at("metric")),
            (None, Some(b)) => Some((b.metric_ref.metric, b.metric_ref.text.clone())),
            (None, None) => self.req(&figure, "metric").and(None),
        };
        let phase = match (figure.get("phase"), base) {
            (Some(p), _) => self
                .name(p, &figure.at("phase"))
                .map(|_| (p.clone(), figure.at("phase"))),
            (None, Some(b)) => Some((b.side.phase_node.clone(), b.side.phase_path.clone())),
            (None, None) => self.req(&figure, "phase").and(None),
        };
        let instance = match (figure.get("instance"), base) {
            (Some(i), _) => self
                .expect_instance(i, &figure.at("instance"))
                .map(|o| o.map(|(number, node)| (number, node, figure.at("instance")))),
            (None, Some(b)) => Some(b.side.instance.clone()),
            (None, None) => Some(None),
        };
        let variant_ref = match (figure.get("variant"), base) {
            (Some(v), _) => self
                .name(v, &figure.at("variant"))
                .map(|s| Some((s, v.clone(), figure.at("variant")))),
            (None, Some(b)) => Some(b.variant_ref.clone()),
            (None, None) => Some(None),
        };
        let ((metric, text), (phase_node, phase_path), instance, variant_ref) =
            (metric?, phase?, instance?, variant_ref?);
        let variant = variant_ref.as_ref().map(|(s, _, _)| s.clone());
        Some(TourFigure {
            metric_ref: MetricRef {
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

    /// Check the tour's figures against the variants: each is measured in
    /// the variant it names, else in the first one.
    pub(super) fn check_tour(
        &mut self,
        draft: TourDraft,
        built: &[BuiltVariant],
        has_variants: bool,
    ) -> Option<TourSpec> {
        let mut versus = Vec::new();
        for figure in &draft.versus {
            let mut metric_ref = figure.metric_ref.clone();
            metric_ref.variant = Some(self.check_tour_figure(figure, built, has_variants)?);
            versus.push(metric_ref);
        }
        let variant = self.check_tour_figure(&draft.measured, built, has_variants)?;
        let mut tour = draft.tour;
        tour.measured.variant = Some(variant);
        tour.versus = versus;
        Some(tour)
    }

    /// Check one figure against the variants; the variant it is measured in.
    fn check_tour_figure(
        &mut self,
        figure: &TourFigure,
        built: &[BuiltVariant],
        has_variants: bool,
    ) -> Option<String> {
        let names = variant_names(built);
        let variant = match &figure.variant_ref {
            Some(variant_ref) => {
                if !self.check_variant_ref(variant_ref, &names, has_variants) {
                    return None;
                }
                variant_ref.0.clone()
            }
            None => names.first()?.clone(),
        };
        if !self.check_side(&figure.side, &[&variant], built, has_variants) {
            return None;
        }
        Some(variant)
    }
}
