//! How the degree of parallelism is decided: the values of
//! `parallel_degree_policy` and `parallel_degree_limit` (the parameters
//! themselves are in `config::px_params`).

/// `parallel_degree_policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DegreePolicy {
    /// No automatic DOP, no statement queuing (before 11.2).
    Manual,
    /// Automatic DOP for objects declared `PARALLEL` without a degree; no queuing.
    Limited,
    /// Automatic DOP for every statement and statement queuing.
    Auto,
}

impl DegreePolicy {
    pub fn name(self) -> &'static str {
        match self {
            DegreePolicy::Manual => "MANUAL",
            DegreePolicy::Limited => "LIMITED",
            DegreePolicy::Auto => "AUTO",
        }
    }
}

/// `parallel_degree_limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DegreeLimit {
    /// `CPU`: `cpu_count x parallel_threads_per_cpu`.
    Cpu,
    Fixed(u32),
}
