//! Data blocks: real rows, index entries and bitmap pieces, and the
//! interested transaction list (ITL). The block's own undo, which lets any
//! holder build a consistent-read copy, is in `undo`; the transaction-id
//! sets its loops use are in `xid_set`.
//!
//! Undo records travel inside the block they describe. Oracle keeps them in
//! undo blocks that are themselves fetched through the global cache; keeping
//! them here lets a CR copy be built by really rolling changes back without
//! a second resource type, at the price of a bounded undo history per block
//! (older history is trimmed, and a read that needs it gets "snapshot too old").
//!
//! A block's body changes only through [`Block::apply`] and a [`Change`]
//! (`change`), the change vector a redo record carries too.
//!
//! The image itself is in `image`, what it is made of in `parts`; `change`
//! and `undo` add what changes it and what rolls it back.

mod change;
mod image;
mod parts;
mod undo;
mod xid_set;

pub use change::{Change, SplitBlock};
pub use image::Block;
pub use parts::{
    Body, BodyRef, Itl, LeafEntry, Piece, Row, UNDO_RECORDS_MAX, UndoLog, UndoOp, UndoRec, piece_at,
};
pub use undo::{CrCopy, CrError, TxState};
