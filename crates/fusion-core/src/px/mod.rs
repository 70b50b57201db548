//! Parallel execution: the statements (`query`), what their plans compute
//! row by row (`rows`), the messages between instances (`msg`) and what the
//! reports show (`view`). The coordinator and the slaves themselves run
//! inside the instance (`instance/px*.rs`). The `parallel_*` parameters are
//! configuration (`config::px_params`); their policy and limit values are
//! here (`degree`).

pub mod degree;
pub mod msg;
pub mod query;
pub mod rows;
pub mod view;

pub use degree::{DegreeLimit, DegreePolicy};
pub use msg::{Batch, DOP_MAX, Dest, ExecId, PxMsg, QueryRef, SlaveId};
pub use query::{Degree, JoinDistribution, PxPlan, PxQuery};
pub use view::{PxPair, PxQueryRow, PxSessionRow, PxView};

/// The result of one execution, kept for the property tests when asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PxResult {
    pub query: String,
    pub dop: u32,
    /// 1-based instances that ran a slave.
    pub instances: Vec<u8>,
    pub rows: Vec<Vec<i64>>,
}
