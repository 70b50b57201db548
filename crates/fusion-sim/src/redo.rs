//! The redo the simulated store keeps: each instance's thread from that
//! instance's checkpoint position on, which instance recovery reads back.
//!
//! An instance sends its checkpoint with every redo write (`Io::WriteRedo`),
//! so keeping redo models no new I/O and moves no figure. The records before
//! the checkpoint are dropped: every change they hold is on disk. What is
//! kept is bounded by [`REDO_KEPT_MAX`], past which the run stops.

use std::collections::VecDeque;

use fusion_core::msg::RedoRecord;

/// Modeled redo bytes the store keeps at most, over every thread: 4 GiB.
/// A record takes about 60 bytes of memory for 100 to 200 modeled bytes
/// (a split's 4 KiB holds a new block's body), so the limit stays near
/// 2 GiB of memory. Checkpoints keep the redo kept to a few seconds' worth;
/// only one that stops moving lets it grow this far.
pub const REDO_KEPT_MAX: u64 = 4 << 30;

/// One instance's redo thread, from its checkpoint on.
#[derive(Clone, Debug, Default)]
pub struct RedoThread {
    records: VecDeque<RedoRecord>,
    /// The redo address of the first record kept.
    start: u64,
    /// The redo address after the last record (the thread's redo bytes).
    end: u64,
    /// The checkpoint the instance last sent.
    checkpoint: u64,
}

impl RedoThread {
    /// Append a write's records; then drop those before `checkpoint`.
    pub(crate) fn write(&mut self, records: Vec<RedoRecord>, checkpoint: u64) {
        for r in records {
            self.end += u64::from(r.bytes);
            self.records.push_back(r);
        }
        self.checkpoint = self.checkpoint.max(checkpoint);
        while self.start < self.checkpoint {
            let Some(r) = self.records.pop_front() else {
                break;
            };
            self.start += u64::from(r.bytes);
        }
        if self.records.is_empty() {
            self.start = self.end;
        }
    }

    /// Advance past a write's records without keeping them (a run that
    /// nothing will recover: see `Store::keep_redo`).
    pub(crate) fn pass(&mut self, records: &[RedoRecord], checkpoint: u64) {
        self.end += records.iter().map(|r| u64::from(r.bytes)).sum::<u64>();
        self.checkpoint = self.checkpoint.max(checkpoint);
        self.start = self.end;
    }

    /// The checkpoint position the instance last sent.
    pub fn checkpoint(&self) -> u64 {
        self.checkpoint
    }

    /// The redo address after the last record.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Modeled redo bytes kept.
    pub fn kept_bytes(&self) -> u64 {
        self.end - self.start
    }

    /// The records kept, oldest first, each with its redo address.
    pub fn records(&self) -> impl Iterator<Item = (u64, &RedoRecord)> {
        self.records.iter().scan(self.start, |rba, r| {
            let at = *rba;
            *rba += u64::from(r.bytes);
            Some((at, r))
        })
    }

    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::types::{BlockAddr, Scn, Xid};

    fn commit(bytes: u32) -> RedoRecord {
        RedoRecord::commit(Scn(1), Xid::NONE, bytes)
    }

    #[test]
    fn keeps_from_the_checkpoint_on() {
        let mut t = RedoThread::default();
        t.write(vec![commit(100), commit(50)], 0);
        assert_eq!((t.len(), t.kept_bytes()), (2, 150));
        // A block written record counts no bytes and sits at its address.
        let bwr = RedoRecord::block_written(BlockAddr(3), Scn(7));
        t.write(vec![bwr, commit(10)], 100);
        let at: Vec<u64> = t.records().map(|(rba, _)| rba).collect();
        assert_eq!(at, vec![100, 150, 150]);
        assert_eq!(t.kept_bytes(), 60);
        // A checkpoint at the end of redo drops everything; it never goes back.
        t.write(Vec::new(), 160);
        assert!(t.is_empty());
        t.write(vec![commit(5)], 20);
        assert_eq!(
            t.records().map(|(rba, _)| rba).collect::<Vec<_>>(),
            vec![160]
        );
        assert_eq!((t.checkpoint(), t.end()), (160, 165));
    }
}
