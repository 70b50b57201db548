//! The validator and its list of problems: where each one is (the line and
//! column of a span, a `--set`, or a variant's `set`), the order they are
//! reported in, and the helpers that phrase lists and suggestions in messages.

use crate::error::{At, Problem, ScenarioError};
use crate::tree::{Entry, KeyPath, Node, Origin, Span};

/// Reads a scenario tree and collects every problem it finds rather than
/// stopping at the first, so one run of `validate` lists them all.
pub(super) struct Validator<'a> {
    /// The file as the user named it.
    pub(super) file: &'a str,
    /// The file's text, to turn spans into lines and columns.
    pub(super) text: &'a str,
    pub(super) problems: Vec<Problem>,
    /// The variant being read describes a `[server]` (steps that only a
    /// server's memory can run check it).
    pub(super) has_server: bool,
}

impl<'a> Validator<'a> {
    pub(super) fn new(file: &'a str, text: &'a str) -> Self {
        Validator {
            file,
            text,
            problems: Vec::new(),
            has_server: false,
        }
    }

    pub(super) fn finish(mut self) -> ScenarioError {
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

    pub(super) fn push(
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
    pub(super) fn err(&mut self, node: &Node, path: &KeyPath, message: impl Into<String>) {
        self.push(&node.span, &node.origin, Some(path), None, message.into());
    }

    /// A problem with a key itself.
    pub(super) fn err_key(&mut self, entry: &Entry, path: &KeyPath, message: impl Into<String>) {
        self.push(
            &entry.key_span,
            &entry.key_origin,
            Some(path),
            None,
            message.into(),
        );
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
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

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let del = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let ins = row.get(j).copied().unwrap_or(0) + 1;
            row.push(sub.min(del).min(ins));
        }
        prev = row;
    }
    prev.last().copied().unwrap_or(0)
}

/// `; did you mean `x`?` for the closest of `choices`, if one is close.
pub(super) fn suggest(word: &str, choices: &[&str]) -> String {
    choices
        .iter()
        .map(|c| (edit_distance(&word.to_ascii_lowercase(), c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// `"a", "b", "c"`.
pub(super) fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a, b, c`, or `none defined`.
pub(super) fn names_list(names: &[String]) -> String {
    if names.is_empty() {
        "none defined".to_string()
    } else {
        names.join(", ")
    }
}
