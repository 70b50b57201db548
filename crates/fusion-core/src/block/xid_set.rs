//! Sets of transaction ids for the per-block loops of `undo`: which
//! transactions a CR build hides, which ITL entries something still refers
//! to. Each is sized for the usual handful of transactions and kept off the
//! heap until it outgrows that.

use crate::types::Xid;

/// The transactions a CR build must hide: mostly none or a few, kept inline
/// (no table to clear); beyond eight they move to an [`XidSet`].
#[derive(Default)]
pub(super) struct FewXids {
    len: usize,
    few: [u64; 8],
    many: Option<XidSet<64>>,
}

impl FewXids {
    pub(super) fn insert(&mut self, x: Xid) {
        if let Some(m) = self.many.as_mut() {
            m.insert(x);
        } else if self.len < self.few.len() {
            self.few[self.len] = x.0;
            self.len += 1;
        } else {
            let mut m = XidSet::default();
            self.few.iter().for_each(|&f| m.insert(Xid(f)));
            m.insert(x);
            self.many = Some(m);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Ready the set for [`FewXids::contains`].
    pub(super) fn seal(&mut self) {
        if let Some(m) = self.many.as_mut() {
            m.seal();
        }
    }

    /// Only valid after [`FewXids::seal`].
    pub(super) fn contains(&self, x: Xid) -> bool {
        match &self.many {
            Some(m) => m.contains(x),
            None => self.few[..self.len].contains(&x.0),
        }
    }
}

/// A set of transaction ids for the per-block loops above: an open-addressing
/// table of `N` slots (a power of two) on the stack (no allocation, no
/// sorting, and small enough that clearing it is cheap), spilling to a
/// sorted Vec beyond `N / 2`. Fill it, call [`XidSet::seal`], then ask
/// [`XidSet::contains`].
pub(super) struct XidSet<const N: usize> {
    /// Zero marks an empty slot; `Xid::NONE` itself is `has_none`.
    table: [u64; N],
    len: usize,
    has_none: bool,
    spill: Option<Vec<u64>>,
}

impl<const N: usize> Default for XidSet<N> {
    fn default() -> XidSet<N> {
        XidSet {
            table: [0; N],
            len: 0,
            has_none: false,
            spill: None,
        }
    }
}

impl<const N: usize> XidSet<N> {
    /// At most half full, so probes stay short.
    const MAX: usize = N / 2;

    fn home(x: u64) -> usize {
        // The top bits of a Fibonacci hash: log2(N) of them.
        (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - N.trailing_zeros())) as usize
    }

    pub(super) fn insert(&mut self, x: Xid) {
        let x = x.0;
        if x == 0 {
            self.has_none = true;
            return;
        }
        if let Some(v) = self.spill.as_mut() {
            v.push(x);
            return;
        }
        if self.len == Self::MAX {
            let mut v: Vec<u64> = self.table.iter().copied().filter(|&t| t != 0).collect();
            v.push(x);
            self.spill = Some(v);
            return;
        }
        let mut i = Self::home(x);
        loop {
            match self.table[i] {
                0 => {
                    self.table[i] = x;
                    self.len += 1;
                    return;
                }
                t if t == x => return,
                _ => i = (i + 1) % N,
            }
        }
    }

    /// Ready the set for [`XidSet::contains`].
    pub(super) fn seal(&mut self) {
        if let Some(v) = self.spill.as_mut() {
            v.sort_unstable();
        }
    }

    /// Only valid after [`XidSet::seal`].
    pub(super) fn contains(&self, x: Xid) -> bool {
        let x = x.0;
        if x == 0 {
            return self.has_none;
        }
        if let Some(v) = &self.spill {
            return v.binary_search(&x).is_ok();
        }
        let mut i = Self::home(x);
        loop {
            match self.table[i] {
                0 => return false,
                t if t == x => return true,
                _ => i = (i + 1) % N,
            }
        }
    }
}
