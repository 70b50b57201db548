//! Reading and validating a scenario file into the model. This file runs the
//! stages in order (parse, `--set`, the file-wide sections, each variant,
//! the checks across variants); each section of the format is read in its
//! own module below.

use std::path::Path;

use crate::error::{Problem, ScenarioError};
use crate::model::{LoadedScenario, Scenario, Variant};
use crate::tree::{self, KeyPath, Node, Origin};

mod catalog;
mod cluster;
mod expect;
mod limits;
mod overrides;
mod phases;
mod problems;
mod px;
mod read;
mod server;
mod steps;
mod tour;
mod workload;

use overrides::VariantDecl;
use problems::Validator;

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
    let mut validator = Validator::new(path_label, text);
    let Some(mut root) = validator.parse_document() else {
        return Err(validator.finish());
    };
    for assignment in overrides {
        validator.apply_set(&mut root, assignment);
    }
    if !validator.problems.is_empty() {
        return Err(validator.finish());
    }

    // What the file says once for every variant.
    validator.table(&root, &KeyPath::root(), ROOT_KEYS);
    let header = validator.header(&root);
    let decls = validator.variant_decls(&root);
    let expect_drafts = validator.expectations(&root);
    let tour_draft = validator.tour(&root);

    let has_variants = !decls.is_empty();
    let built = validator.build_variants(&root, &decls, &header.name);
    let expectations = validator.check_expectations(expect_drafts, &built, has_variants);
    let tour = tour_draft.and_then(|draft| validator.check_tour(draft, &built, has_variants));

    if !validator.problems.is_empty() {
        return Err(validator.finish());
    }
    let variants = validator.into_variants(built)?;
    Ok(LoadedScenario {
        path: path_label.to_string(),
        name: header.name,
        title: header.title,
        myth: header.myth,
        description: header.description,
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
    "server",
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
/// Instances a cluster may have.
pub const INSTANCES_MAX: u8 = 64;

/// `[scenario]`: what the scenario is called and claims.
struct Header {
    name: String,
    title: String,
    myth: Option<String>,
    description: String,
}

/// One variant (or the file alone) built into a scenario; `scenario` is
/// `None` when the variant has problems.
struct BuiltVariant {
    name: String,
    description: String,
    scenario: Option<Scenario>,
}

/// The names of the built variants, in file order.
fn variant_names(built: &[BuiltVariant]) -> Vec<String> {
    built.iter().map(|b| b.name.clone()).collect()
}

impl Validator<'_> {
    /// The document as a tree, or `None` after reporting why it is not one.
    fn parse_document(&mut self) -> Option<Node> {
        let text = self.text;
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
                self.push(&span, &Origin::File, None, None, message);
                return None;
            }
        };
        let Some(mut root) = tree::from_item(doc.as_item()) else {
            self.push(
                &None,
                &Origin::File,
                None,
                None,
                "the document is empty".to_string(),
            );
            return None;
        };
        root.span = None;
        Some(root)
    }

    /// Each variant (or the file alone) as a tree, then as a scenario. Each
    /// is validated apart; their problems are then merged into this list.
    fn build_variants(
        &mut self,
        root: &Node,
        decls: &[VariantDecl],
        scenario_name: &str,
    ) -> Vec<BuiltVariant> {
        let has_variants = !decls.is_empty();
        let mut built = Vec::new();
        let mut per_variant: Vec<(String, Vec<Problem>)> = Vec::new();
        if has_variants {
            for (index, decl) in decls.iter().enumerate() {
                let mut variant_validator = Validator::new(self.file, self.text);
                let mut variant_root = root.clone();
                variant_validator.apply_variant(&mut variant_root, index, decl);
                let scenario = if variant_validator.problems.is_empty() {
                    variant_validator.scenario(&variant_root)
                } else {
                    None
                };
                built.push(BuiltVariant {
                    name: decl.name.clone(),
                    description: decl.description.clone(),
                    scenario,
                });
                per_variant.push((decl.name.clone(), variant_validator.problems));
            }
        } else {
            let mut variant_validator = Validator::new(self.file, self.text);
            let scenario = variant_validator.scenario(root);
            built.push(BuiltVariant {
                name: scenario_name.to_string(),
                description: String::new(),
                scenario,
            });
            per_variant.push((scenario_name.to_string(), variant_validator.problems));
        }
        self.merge_variant_problems(per_variant, has_variants);
        built
    }

    /// The variants of a file with no problems; every one was built.
    fn into_variants(mut self, built: Vec<BuiltVariant>) -> Result<Vec<Variant>, ScenarioError> {
        let mut variants = Vec::new();
        for b in built {
            match b.scenario {
                Some(scenario) => variants.push(Variant {
                    name: b.name,
                    description: b.description,
                    scenario,
                }),
                None => {
                    self.push(
                        &None,
                        &Origin::File,
                        None,
                        None,
                        format!("internal error: variant `{}` was not built", b.name),
                    );
                    return Err(self.finish());
                }
            }
        }
        Ok(variants)
    }

    /// `[scenario]`: name, title, myth and description (the seed is part
    /// of each variant's run configuration).
    fn header(&mut self, root: &Node) -> Header {
        let mut header = Header {
            name: String::new(),
            title: String::new(),
            myth: None,
            description: String::new(),
        };
        let Some(root_table) = root.as_table() else {
            return header;
        };
        let Some(node) = root_table.get("scenario").map(|e| &e.node) else {
            self.push(
                &None,
                &Origin::File,
                None,
                None,
                "missing required table [scenario]".to_string(),
            );
            return header;
        };
        let Some(scenario) = self.table(node, &KeyPath::root().key("scenario"), SCENARIO_KEYS)
        else {
            return header;
        };
        if let Some(node) = self.req(&scenario, "name")
            && let Some(name) = self.string(node, &scenario.at("name"))
        {
            if valid_scenario_name(&name) {
                header.name = name;
            } else {
                self.err(
                    node,
                    &scenario.at("name"),
                    format!(
                        "{} is not a valid name: use lowercase letters, digits and '-'",
                        node.describe()
                    ),
                );
            }
        }
        if let Some(node) = self.req(&scenario, "title")
            && let Some(title) = self.string(node, &scenario.at("title"))
        {
            if title.contains('\n') {
                self.err(
                    node,
                    &scenario.at("title"),
                    "the title must be one line (put details in `description`)",
                );
            }
            header.title = title;
        }
        if let Some(node) = scenario.get("myth") {
            header.myth = self.string(node, &scenario.at("myth"));
        }
        if let Some(node) = scenario.get("description") {
            header.description = self
                .string(node, &scenario.at("description"))
                .unwrap_or_default();
        }
        header
    }

    /// One variant's tree as a runnable scenario, `None` if it has problems.
    fn scenario(&mut self, root: &Node) -> Option<Scenario> {
        let before = self.problems.len();
        let root_table = root.as_table()?;
        let section = |key: &str| root_table.get(key).map(|e| &e.node);

        let seed = section("scenario")
            .and_then(|s| s.as_table())
            .and_then(|t| t.get("seed"))
            .and_then(|e| {
                let path = KeyPath::root().key("scenario").key("seed");
                self.int(&e.node, &path, 0, i64::MAX)
            })
            .and_then(|seed| u64::try_from(seed).ok())
            .unwrap_or(1);
        let instance_count = self.cluster(section("cluster"));
        let mut instances = self.instances(section("parameters"), instance_count);
        let costs = section("costs").map(|c| self.costs(c)).unwrap_or_default();
        let network = section("network")
            .map(|c| self.network(c))
            .unwrap_or_default();
        let storage = section("storage")
            .map(|c| self.storage(c))
            .unwrap_or_default();
        let server = section("server").and_then(|c| self.server(c));
        self.has_server = section("server").is_some();
        if let Some(s) = &server {
            self.server_cpus(s, &mut instances, root_table);
        }
        let mut catalog = self.catalog(section("table"), section("index"));
        if let Some(node) = section("sequence") {
            catalog.sequences = self.sequences(node);
        }
        let queries = section("query")
            .map(|q| self.queries(q, &catalog))
            .unwrap_or_default();
        let workloads = section("workload")
            .map(|w| self.workloads(w, instance_count, &catalog, &costs, &queries))
            .unwrap_or_default();
        self.check_query_tables(&queries, &workloads, &catalog);
        let phases = match section("phase") {
            Some(p) => self.phases(p, instance_count, &workloads, &instances),
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
        if let (true, Some(count)) = (self.problems.len() == before, instance_count) {
            self.check_limits(root, count, &catalog, &workloads);
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
            server,
            catalog,
            workloads,
            phases,
        })
    }
}

fn valid_scenario_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
