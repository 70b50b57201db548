//! `fusionlab merge FILE...`: the JSON of a campaign's parts (`sweep` or
//! `chaos` with `--parts`, one file per part, in any order) put back
//! together. It prints what the whole campaign would have printed (text,
//! or `--json`) and exits as it would; parts of different campaigns, a
//! part twice or a part missing are bad input.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::{Failure, exit};

/// What a file's JSON is the output of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Campaign {
    Sweep,
    Chaos,
}

impl Campaign {
    fn of(v: &Value) -> Option<Campaign> {
        if v.get("cells").is_some() {
            Some(Campaign::Sweep)
        } else if v.get("failing_seeds").is_some() {
            Some(Campaign::Chaos)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Campaign::Sweep => "a sweep",
            Campaign::Chaos => "a chaos campaign",
        }
    }
}

pub fn merge(
    files: &[PathBuf],
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let files = expand(files)?;
    let mut read: Vec<(String, Value)> = Vec::with_capacity(files.len());
    for f in &files {
        let name = f.display().to_string();
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure::input(format!("{name}: cannot read: {e}")))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| Failure::input(format!("{name}: not JSON: {e}")))?;
        read.push((name, v));
    }
    let mut kinds = Vec::with_capacity(read.len());
    for (name, v) in &read {
        kinds.push(Campaign::of(v).ok_or_else(|| {
            Failure::input(format!(
                "{name}: not the --json of `fusionlab sweep` or `fusionlab chaos`"
            ))
        })?);
    }
    let Some(&kind) = kinds.first() else {
        return Err(Failure::input("fusionlab merge: give the parts' JSON files").into());
    };
    if let Some(i) = kinds.iter().position(|&k| k != kind) {
        return Err(Failure::input(format!(
            "{} is {}'s part, {} {}'s: merge the parts of one campaign",
            read[0].0,
            kind.name(),
            read[i].0,
            kinds[i].name()
        ))
        .into());
    }
    match kind {
        Campaign::Sweep => sweep(read, json, out, err),
        Campaign::Chaos => chaos(&read, json, out, err),
    }
}

/// The files given, a directory standing for its `*.json` files (a shared
/// volume the parts were written to), in name order.
fn expand(given: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut files = Vec::with_capacity(given.len());
    for g in given {
        if !g.is_dir() {
            files.push(g.clone());
            continue;
        }
        let cannot =
            |e: std::io::Error| Failure::input(format!("{}: cannot read: {e}", g.display()));
        let mut inside = Vec::new();
        for entry in std::fs::read_dir(g).map_err(cannot)? {
            let p = entry.map_err(cannot)?.path();
            if p.extension().is_some_and(|x| x == "json") && p.is_file() {
                inside.push(p);
            }
        }
        if inside.is_empty() {
            return Err(Failure::input(format!(
                "{}: no .json file in it",
                g.display()
            )));
        }
        inside.sort();
        files.extend(inside);
    }
    Ok(files)
}

fn sweep(
    read: Vec<(String, Value)>,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let mut slices = Vec::with_capacity(read.len());
    for (name, v) in read {
        let r = fusion_report::sweep::from_json(&v)
            .map_err(|e| Failure::input(format!("{name}: {e}")))?;
        slices.push((name, r));
    }
    let result = fusion_report::sweep::merge(slices).map_err(Failure::input)?;
    // As `sweep` prints it.
    if json {
        let v = fusion_report::sweep::json(&result);
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).context("cannot serialize the sweep")?
        )?;
    } else {
        out.write_all(fusion_report::sweep::text(&result).as_bytes())?;
    }
    let failed = result.runs.iter().filter(|r| !r.errors.is_empty()).count();
    if failed > 0 {
        writeln!(
            err,
            "fusionlab sweep: {failed} run(s) reported protocol errors or checker violations"
        )?;
        return Ok(exit::SIM_ERRORS);
    }
    Ok(exit::OK)
}

fn chaos(
    read: &[(String, Value)],
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let result = fusion_report::chaos::merge(read).map_err(Failure::input)?;
    // As `chaos` prints it.
    if json {
        let v = fusion_report::chaos::json(&result);
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).context("cannot serialize the summary")?
        )?;
    } else {
        out.write_all(fusion_report::chaos::text(&result).as_bytes())?;
    }
    for o in result.runs.iter().filter(|o| o.failed()) {
        for line in o.violations.iter().chain(&o.errors) {
            writeln!(err, "fusionlab: chaos seed {}: {line}", o.seed)?;
        }
    }
    Ok(if result.runs.iter().any(|o| o.failed()) {
        exit::SIM_ERRORS
    } else {
        exit::OK
    })
}
