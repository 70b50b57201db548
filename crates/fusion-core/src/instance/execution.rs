//! Where a session is in an execution, as plain data.
//!
//! The session code (`session/`) and the steps it hands work to (index
//! maintenance in maintain.rs, inserts and splits in insert.rs, `nextval` in
//! sequence.rs, the parallel coordinator in px.rs) all read and write a
//! session's [`ExecPoint`]. The types live here, below all of them, so those
//! modules depend on this one and not on each other.

use crate::types::{BlockAddr, Rowid};

/// Why a session descends an index or visits a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    Read,
    Update,
    /// Maintaining the index for a row inserted at this rowid.
    Insert(Rowid),
    /// `count(*) where val = value` through a bitmap index (maintain.rs).
    Count {
        value: i64,
    },
    /// The next change of an update to an index on the value (maintain.rs).
    Maintain,
}

/// Where the current execution is: what the session visits or does next.
/// `Copy`: read on every step, so a copy is a plain move rather than a
/// per-variant clone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExecPoint {
    /// Between executions.
    None,
    /// Descending an index: next visit is `blk` in CR mode.
    Index {
        ix: usize,
        table: usize,
        key: u64,
        blk: BlockAddr,
        purpose: Purpose,
    },
    /// The row's table block: CR for reads, current for updates.
    Table {
        table: usize,
        key: u64,
        rowid: Rowid,
        purpose: Purpose,
    },
    /// A full scan reads the segment header first (CR) to learn its extent.
    ScanHeader { table: usize },
    /// A full scan at block `next` of run `run` (see `Session::scan_runs`).
    Scan { table: usize, run: u8, next: u32 },
    /// Insert: the instance's insert block, in current mode.
    InsertRow { table: usize, key: u64 },
    /// Insert: take a new block from the segment header (current mode).
    InsertAlloc { table: usize, key: u64 },
    /// Insert: format the new block `blk` (a new-block grant).
    InsertNew {
        table: usize,
        key: u64,
        blk: BlockAddr,
    },
    /// Index maintenance: the leaf, in current mode.
    IndexLeaf {
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        blk: BlockAddr,
    },
    /// Index maintenance with splits: descending in current mode from the root,
    /// splitting every full block on the way (its parent then has room).
    Split {
        ix: usize,
        table: usize,
        key: u64,
        rowid: Rowid,
        parent: Option<BlockAddr>,
        node: BlockAddr,
    },
    /// An update's index change: the leaf, in current mode (maintain.rs).
    MaintLeaf { table: usize, blk: BlockAddr },
    /// A `nextval` (see sequence.rs); `insert`: then insert a row keyed by it into this table.
    Seq {
        seq: usize,
        step: SeqStep,
        insert: Option<usize>,
    },
    /// Coordinating the parallel statement of this workload step (see px.rs).
    Px { qref: crate::px::QueryRef },
}

/// One index change an update still has to make (maintain.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct IndexChange {
    pub ix: usize,
    /// Where in the index: the entry's key, or the piece's `Piece::at`.
    pub at: u64,
    /// The row the change is for.
    pub key: u64,
    pub change: Change,
}

/// What an [`IndexChange`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// Give the (key, value) entry this value.
    Entry(i64),
    /// Set or clear the row's bit in a bitmap piece.
    Bit(bool),
}

/// Where a `nextval` is (sequence.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SeqStep {
    /// Decide by the sequence's kind.
    Start,
    /// CACHE NOORDER: holding SQ, about to refill (unless another session did).
    HaveSq,
    /// CACHE ORDER: holding SV.
    HaveSv,
    /// Holding the row cache lock: `update seq$` on the SEQ$ block (current mode).
    Update,
}
