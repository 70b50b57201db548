//! The sequences and this instance's part of them (`nextval`'s steps are
//! in sequence.rs).

use crate::config::SequenceDef;

/// Sequence `seq`'s row slot in the SEQ$ block. The loader allows at most
/// SEQUENCES_MAX (65,536) sequences because those slots are 16-bit.
pub(super) fn slot_of(seq: usize) -> u16 {
    u16::try_from(seq).expect("at most 65,536 sequences")
}

/// The sequences and this instance's part of them: each one's definition,
/// the values cached here (CACHE NOORDER), and, when the driver asked, the
/// values handed out since it last took them.
#[derive(Debug)]
pub(super) struct Sequences {
    defs: Vec<SequenceDef>,
    /// Per sequence: this instance's cached allocation numbers `(lo, hi]`.
    cached: Vec<(u64, u64)>,
    nextvals: Option<Vec<(u32, i64)>>,
}

impl Sequences {
    pub fn new(defs: Vec<SequenceDef>) -> Sequences {
        Sequences {
            cached: vec![(0, 0); defs.len()],
            defs,
            nextvals: None,
        }
    }

    pub fn def(&self, seq: usize) -> Option<&SequenceDef> {
        self.defs.get(seq)
    }

    /// The next allocation number of this instance's cache, if any is left.
    pub(super) fn take_cached(&mut self, seq: usize) -> Option<u64> {
        let c = self.cached.get_mut(seq)?;
        (c.0 < c.1).then(|| {
            c.0 += 1;
            c.0
        })
    }

    /// Allocation numbers `first..=last` are this instance's now; the first
    /// is handed out at once. Whatever was left of the old range is
    /// abandoned: a gap.
    pub(super) fn cache(&mut self, seq: usize, first: u64, last: u64) {
        debug_assert!(first <= last, "sequence {seq}: an empty allocation");
        if let Some(c) = self.cached.get_mut(seq) {
            *c = (first, last);
        }
    }

    /// Keep the values handed out for the driver (or stop keeping them).
    pub fn log_nextvals(&mut self, on: bool) {
        self.nextvals = on.then(Vec::new);
    }

    /// The values handed out since the last call: (sequence, value), in order.
    pub fn take_nextvals(&mut self) -> Vec<(u32, i64)> {
        self.nextvals
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub(super) fn handed_out(&mut self, seq: usize, value: i64) {
        if let Some(log) = self.nextvals.as_mut() {
            log.push((u32::from(slot_of(seq)), value));
        }
    }
}
