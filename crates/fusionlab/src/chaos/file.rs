//! A chaos run's faults written into the scenario file's own
//! `[[phase.fault]]` tables, so that the loader checks and reads them as it
//! does a file (and a run can be saved as a scenario file).

use fusion_core::config::{NS_PER_S, Nanos};
use fusion_scenario::{Direction, Fault, LinkTarget};

use crate::chaos::drawn::Drawn;

/// `text` with each fault added to its phase's `[[phase.fault]]` tables.
/// The scenario's own failures (a failure scenario's kill, say) are taken
/// out first: a run's failures are the drawn ones, over the workload and
/// the other faults of the file.
pub(crate) fn with_faults(text: &str, faults: &[Drawn]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| format!("the scenario does not parse: {e}"))?;
    let phases = doc
        .get_mut("phase")
        .ok_or_else(|| "the scenario has no [[phase]]".to_string())?;
    without_failures(phases);
    // Only the first variant runs; the others may name the failures just
    // taken out (`phase.freeze.fault.0.duration_s`).
    if let Some(toml_edit::Item::ArrayOfTables(variants)) = doc.get_mut("variant") {
        while variants.len() > 1 {
            variants.remove(variants.len() - 1);
        }
    }
    // A chaos run is judged by its checkers, not by the file's expectations
    // or its tour summary, which may name the variants just taken out.
    doc.remove("expect");
    doc.remove("tour");
    let phases = doc
        .get_mut("phase")
        .ok_or_else(|| "the scenario has no [[phase]]".to_string())?;
    for d in faults {
        let table = fault_table(&d.fault);
        match phases {
            toml_edit::Item::ArrayOfTables(aot) => {
                let phase = aot
                    .get_mut(d.phase)
                    .ok_or_else(|| format!("no phase {}", d.phase))?;
                let entry = phase
                    .entry("fault")
                    .or_insert(toml_edit::Item::ArrayOfTables(Default::default()));
                match entry {
                    toml_edit::Item::ArrayOfTables(f) => f.push(table),
                    toml_edit::Item::Value(toml_edit::Value::Array(f)) => {
                        f.push(table.into_inline_table());
                    }
                    _ => return Err("`phase.fault` is neither tables nor an array".into()),
                }
            }
            toml_edit::Item::Value(toml_edit::Value::Array(list)) => {
                let phase = list
                    .get_mut(d.phase)
                    .and_then(toml_edit::Value::as_inline_table_mut)
                    .ok_or_else(|| format!("no phase {}", d.phase))?;
                let entry = phase
                    .entry("fault")
                    .or_insert(toml_edit::Value::Array(Default::default()));
                let toml_edit::Value::Array(f) = entry else {
                    return Err("`phase.fault` is not an array".into());
                };
                f.push(table.into_inline_table());
            }
            _ => return Err("`phase` is neither tables nor an array".into()),
        }
    }
    Ok(doc.to_string())
}

/// A fault as a scenario file writes it.
/// Kinds a chaos run draws: a file's own faults of these kinds are removed.
const FAILURE_KINDS: &[&str] = &["kill", "restart", "pause", "loss", "partition"];

fn without_failures(phases: &mut toml_edit::Item) {
    let is_failure = |kind: Option<&str>| kind.is_some_and(|k| FAILURE_KINDS.contains(&k));
    let strip_array = |a: &mut toml_edit::Array| {
        a.retain(|v| {
            !is_failure(
                v.as_inline_table()
                    .and_then(|t| t.get("kind"))
                    .and_then(|k| k.as_str()),
            )
        });
    };
    let strip_phase = |fault: Option<&mut toml_edit::Item>| match fault {
        Some(toml_edit::Item::ArrayOfTables(f)) => {
            f.retain(|t| !is_failure(t.get("kind").and_then(|k| k.as_str())));
        }
        Some(toml_edit::Item::Value(toml_edit::Value::Array(f))) => strip_array(f),
        _ => {}
    };
    match phases {
        toml_edit::Item::ArrayOfTables(aot) => {
            for phase in aot.iter_mut() {
                strip_phase(phase.get_mut("fault"));
            }
        }
        toml_edit::Item::Value(toml_edit::Value::Array(list)) => {
            for phase in list.iter_mut() {
                if let Some(t) = phase.as_inline_table_mut()
                    && let Some(toml_edit::Value::Array(f)) = t.get_mut("fault")
                {
                    strip_array(f);
                }
            }
        }
        _ => {}
    }
}

fn fault_table(f: &Fault) -> toml_edit::Table {
    use toml_edit::value;
    let seconds = |ns: Nanos| value(ns as f64 / NS_PER_S as f64);
    let mut t = toml_edit::Table::new();
    t.insert("kind", value(f.kind()));
    match *f {
        Fault::Kill { instance, at } | Fault::Restart { instance, at } => {
            t.insert("instance", value(i64::from(instance)));
            t.insert("at_s", seconds(at));
        }
        Fault::Pause {
            instance,
            at,
            duration,
        } => {
            t.insert("instance", value(i64::from(instance)));
            t.insert("at_s", seconds(at));
            t.insert("duration_s", seconds(duration));
        }
        Fault::Loss {
            target,
            loss_ppm,
            correlation_ppm,
        } => {
            t.insert("target", target_item(target));
            t.insert("loss_pct", value(f64::from(loss_ppm) / 10_000.0));
            t.insert(
                "correlation_pct",
                value(f64::from(correlation_ppm) / 10_000.0),
            );
        }
        Fault::Partition { target, direction } => {
            t.insert("target", target_item(target));
            t.insert(
                "direction",
                value(match direction {
                    Direction::Both => "both",
                    Direction::To => "to",
                    Direction::From => "from",
                }),
            );
        }
        // Not drawn: slowdowns are the scenario's own business.
        _ => {}
    }
    t
}

fn target_item(t: LinkTarget) -> toml_edit::Item {
    let mut inline = toml_edit::InlineTable::new();
    match t {
        LinkTarget::All => return toml_edit::value("all"),
        LinkTarget::Instance(i) => {
            inline.insert("instance", i64::from(i).into());
        }
        LinkTarget::Link { from, to } => {
            inline.insert("from", i64::from(from).into());
            inline.insert("to", i64::from(to).into());
        }
    }
    toml_edit::value(inline)
}
