//! Errors of the loader: every problem names where it is (file, line and
//! column, or the `--set` override it came from) and the key it is about.

use std::fmt;

/// Why a scenario could not be loaded. `Display` prints one line per problem.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{path}: cannot read the scenario file: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The file (or an override) is not a valid scenario.
    #[error("{}", join_lines(.0))]
    Invalid(Vec<Problem>),
}

impl ScenarioError {
    /// The individual problems (empty for an I/O error).
    pub fn problems(&self) -> &[Problem] {
        match self {
            ScenarioError::Io { .. } => &[],
            ScenarioError::Invalid(p) => p,
        }
    }
}

fn join_lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a problem is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum At {
    /// A place in the file: 1-based line and column (in characters).
    File { line: usize, column: usize },
    /// A value given on the command line as `--set KEY=VALUE` (the text is `KEY=VALUE`).
    Set(String),
    /// Somewhere in the file that has no single position (e.g. a missing table).
    Nowhere,
}

/// One problem of a scenario.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Problem {
    /// The file as the user named it.
    pub file: String,
    pub at: At,
    /// The key the problem is about, as a path (`phase[1].fault[0].workers`).
    pub key: Option<String>,
    /// Where the value came from when it is not plainly the file
    /// (`set by variant `rt-lms``, `in variant `one-node``).
    pub context: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        match &self.at {
            At::File { line, column } => write!(f, ":{line}:{column}")?,
            At::Set(kv) => write!(f, ": --set {kv}")?,
            At::Nowhere => {}
        }
        match (&self.key, &self.context) {
            (Some(k), Some(c)) => write!(f, ": `{k}` ({c})")?,
            (Some(k), None) => write!(f, ": `{k}`")?,
            (None, Some(c)) => write!(f, ": ({c})")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.message)
    }
}
