//! Identifiers shared by every part of the model.

use std::fmt;

/// An instance, numbered from 0 inside the model (reports print `inst1` for 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstId(pub u8);

impl InstId {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
    /// The 1-based number a DBA sees (`inst_id`).
    pub fn number(self) -> u8 {
        self.0 + 1
    }
    pub fn bit(self) -> u64 {
        1u64 << self.0
    }
}

impl fmt::Display for InstId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "inst{}", self.number())
    }
}

/// A data block address (DBA): one number per block of the shared database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockAddr(pub u32);

impl BlockAddr {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for BlockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dba {}", self.0)
    }
}

/// System change number. Each instance keeps its own and they are kept in
/// step Lamport-style: every message carries the sender's SCN. A type of
/// its own so an SCN never meets a time or a count unnoticed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Scn(pub u64);

impl Scn {
    pub const ZERO: Scn = Scn(0);
    pub const MAX: Scn = Scn(u64::MAX);

    /// The next SCN.
    pub fn next(self) -> Scn {
        Scn(self.0 + 1)
    }

    pub fn saturating_sub(self, n: u64) -> Scn {
        Scn(self.0.saturating_sub(n))
    }
}

/// The bare number, as before SCNs had a type: debug output and reports
/// print `5`, not `Scn(5)`.
impl fmt::Debug for Scn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Scn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A transaction id: the owning instance and a sequence within it. Zero is "none".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Xid(pub u64);

impl Xid {
    pub const NONE: Xid = Xid(0);

    pub fn new(inst: InstId, seq: u64) -> Xid {
        debug_assert!(seq < (1 << 56) && seq > 0);
        Xid((u64::from(inst.0) << 56) | seq)
    }
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
    pub fn inst(self) -> InstId {
        InstId((self.0 >> 56) as u8)
    }
    pub fn seq(self) -> u64 {
        self.0 & ((1 << 56) - 1)
    }
}

impl fmt::Display for Xid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.inst().number(), self.seq())
    }
}

/// Where a row lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rowid {
    pub blk: BlockAddr,
    pub slot: u16,
}

/// A small set of instances as a bitmask (clusters have at most 64 instances).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct InstSet(pub u64);

impl InstSet {
    pub fn contains(self, i: InstId) -> bool {
        self.0 & i.bit() != 0
    }
    pub fn insert(&mut self, i: InstId) {
        self.0 |= i.bit();
    }
    pub fn remove(&mut self, i: InstId) {
        self.0 &= !i.bit();
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn len(self) -> u32 {
        self.0.count_ones()
    }
    pub fn without(self, i: InstId) -> InstSet {
        InstSet(self.0 & !i.bit())
    }
    /// Members in ascending order.
    pub fn iter(self) -> impl Iterator<Item = InstId> {
        (0..64u8)
            .filter(move |b| self.0 & (1 << b) != 0)
            .map(InstId)
    }
    pub fn first(self) -> Option<InstId> {
        (self.0 != 0).then(|| InstId(self.0.trailing_zeros() as u8))
    }
}

/// A segment's block count as a block address offset. The loader refuses a
/// schema whose blocks do not fit 32-bit addresses (fusion-scenario's
/// `load/limits.rs`), so a count that does not fit here is a bug, not input.
pub fn block_count(blocks: u64) -> u32 {
    u32::try_from(blocks).unwrap_or_else(|_| {
        panic!("{blocks} blocks in one segment: the loader caps the schema at 2^32 blocks")
    })
}
