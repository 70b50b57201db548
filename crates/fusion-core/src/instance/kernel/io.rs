//! The I/O table: each outstanding I/O by its number, with what it is for.

use rustc_hash::FxHashMap;

use super::super::events::IoPurpose;

#[derive(Debug)]
pub(super) struct IoTable {
    pending: FxHashMap<u64, IoPurpose>,
    next: u64,
}

impl Default for IoTable {
    fn default() -> IoTable {
        IoTable {
            pending: FxHashMap::default(),
            next: 1,
        }
    }
}

impl IoTable {
    /// A new I/O's number, recorded with its purpose.
    #[inline]
    pub fn start(&mut self, purpose: IoPurpose) -> u64 {
        let id = self.next;
        self.next += 1;
        let was = self.pending.insert(id, purpose);
        debug_assert!(was.is_none(), "I/O number {id} given twice");
        id
    }

    /// The purpose of a completed I/O; `None`: not one of ours (the driver's error).
    #[inline]
    pub fn complete(&mut self, id: u64) -> Option<IoPurpose> {
        self.pending.remove(&id)
    }

    pub fn in_flight(&self) -> impl Iterator<Item = &IoPurpose> {
        self.pending.values()
    }
}
