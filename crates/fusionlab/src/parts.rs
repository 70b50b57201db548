//! `--parts N` with `--part K` or `--part-index I`: the slice of a
//! campaign's runs (`sweep`, `chaos`) that this invocation runs, so that
//! many machines share one campaign; `fusionlab merge` puts their JSON back
//! together. From the environment too, so that a manifest needs no shell:
//! Swarm's `{{.Task.Slot}}` counts from 1 (`FUSIONLAB_PART`), a Kubernetes
//! Indexed Job's completion index from 0 (`FUSIONLAB_PART_INDEX`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use fusion_report::campaign::Slice;

use crate::Failure;

#[derive(Args, Clone, Debug, Default)]
pub struct PartArgs {
    /// Cut the runs into N contiguous parts and run one of them (--part or
    /// --part-index); `fusionlab merge` puts the parts' --json together.
    #[arg(long, value_name = "N", env = "FUSIONLAB_PARTS")]
    pub parts: Option<u32>,
    /// With --parts: the part to run, 1 to N (Swarm's {{.Task.Slot}}).
    #[arg(long, value_name = "K", env = "FUSIONLAB_PART")]
    pub part: Option<u32>,
    /// With --parts: the part to run, 0 to N-1 (a Kubernetes Indexed Job's
    /// completion index).
    #[arg(long, value_name = "I", env = "FUSIONLAB_PART_INDEX")]
    pub part_index: Option<u32>,
    /// Write what would go to stdout (the text, or --json) to FILE instead:
    /// a part's JSON on a volume the parts share.
    #[arg(long, value_name = "FILE", env = "FUSIONLAB_OUTPUT")]
    pub output: Option<PathBuf>,
}

impl PartArgs {
    /// The slice of a campaign of `runs_total` runs that was asked for;
    /// None when no part was.
    pub fn slice(&self, runs_total: usize) -> Result<Option<Slice>, Failure> {
        let bad = |why: String| Err(Failure::input(why));
        let part = match (self.part, self.part_index) {
            (Some(k), Some(i)) => {
                return bad(format!(
                    "--part {k} and --part-index {i} (or FUSIONLAB_PART and \
                     FUSIONLAB_PART_INDEX): give one, --part counts from 1, --part-index from 0"
                ));
            }
            (Some(k), None) => Some(k),
            (None, Some(i)) => match self.parts {
                Some(n) if i >= n => {
                    return bad(format!(
                        "--part-index {i}: parts are indexed 0 to {} (--parts {n})",
                        n.saturating_sub(1)
                    ));
                }
                _ => Some(i.saturating_add(1)),
            },
            (None, None) => None,
        };
        match (self.parts, part) {
            (None, None) => Ok(None),
            (Some(n), None) => bad(format!(
                "--parts {n}: give the part to run too (--part K from 1, --part-index I from 0)"
            )),
            (None, Some(_)) => bad("--part or --part-index: give --parts N too".to_string()),
            (Some(n), Some(k)) => Slice::new(k, n, runs_total)
                .map(Some)
                .map_err(Failure::input),
        }
    }
}

/// Run a command that prints to `out`, or with `--output FILE` into FILE:
/// written whole under another name first, then renamed, so that a reader
/// of the shared volume never sees half a part.
pub fn printing_to(
    output: Option<&Path>,
    out: &mut dyn Write,
    run: impl FnOnce(&mut dyn Write) -> anyhow::Result<u8>,
) -> anyhow::Result<u8> {
    let Some(path) = output else {
        return run(out);
    };
    let mut text = Vec::new();
    let code = run(&mut text)?;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, &text)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| Failure::input(format!("--output {}: cannot write: {e}", path.display())))?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(parts: Option<u32>, part: Option<u32>, part_index: Option<u32>) -> PartArgs {
        PartArgs {
            parts,
            part,
            part_index,
            output: None,
        }
    }

    #[test]
    fn a_part_counts_from_one_an_index_from_zero() {
        let one = args(Some(4), Some(1), None).slice(10).expect("valid");
        let zero = args(Some(4), None, Some(0)).slice(10).expect("valid");
        assert_eq!(one, zero);
        assert_eq!(one.map(|s| s.range()), Some(0..2));
        assert_eq!(args(None, None, None).slice(10).expect("valid"), None);
    }

    #[test]
    fn bad_parts_are_input_errors_that_say_why() {
        for (a, needle) in [
            (args(Some(2), Some(1), Some(0)), "give one"),
            (args(Some(2), None, None), "give the part to run"),
            (args(None, Some(1), None), "give --parts N"),
            (args(Some(2), Some(3), None), "numbered 1 to 2"),
            (args(Some(2), Some(0), None), "numbered 1 to 2"),
            (args(Some(2), None, Some(2)), "indexed 0 to 1"),
            (args(Some(0), Some(1), None), "at least 1 part"),
            (args(Some(11), Some(1), None), "more parts than"),
        ] {
            let e = a.slice(10).expect_err(needle);
            assert_eq!(e.code, crate::exit::BAD_INPUT);
            assert!(e.message.contains(needle), "{needle}: {}", e.message);
        }
    }
}
