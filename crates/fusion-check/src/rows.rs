//! The compact history the checker keeps of every row the run wrote: the
//! last value written to it (for the lost-write check) and its committed
//! versions (commit SCN, value), which say what a snapshot must see. A
//! version no snapshot can need any more is forgotten ([`Rows::trim`]), so
//! what stays grows with the rows written, not with the run's length.

use fusion_core::types::{Scn, Xid};
use rustc_hash::FxHashMap;

/// A row: `(table, key)`.
pub(crate) type RowKey = (usize, u64);

/// Versions kept across all rows before a trim is worth trying, at least.
const TRIM_MIN: usize = 1 << 16;

/// One written row: 32 bytes, and no allocation while it has one version.
pub(crate) struct Row {
    /// Who wrote it last, in the order the history arrived (the value is
    /// the newest committed one, unless that writer is still open).
    pub(crate) last: Xid,
    versions: Versions,
}

/// Committed versions (commit SCN, value), ascending (by value among equal
/// SCNs). After a trim the first stands for every older one.
enum Versions {
    None,
    One((Scn, i64)),
    Many(Vec<(Scn, i64)>),
}

impl Row {
    fn versions(&self) -> &[(Scn, i64)] {
        match &self.versions {
            Versions::None => &[],
            Versions::One(v) => std::slice::from_ref(v),
            Versions::Many(v) => v,
        }
    }

    /// The value a snapshot at `snapshot` sees: that of the newest version
    /// committed at or before it (the highest value among equal SCNs).
    pub(crate) fn seen_at(&self, snapshot: Scn) -> Option<i64> {
        match &self.versions {
            Versions::None => None,
            Versions::One((scn, val)) => (*scn <= snapshot).then_some(*val),
            Versions::Many(v) => v
                .iter()
                .rev()
                .find(|(scn, _)| *scn <= snapshot)
                .map(|v| v.1),
        }
    }

    /// Every value a snapshot at `snapshot` may see when the versions in
    /// `doubtful` (commits in doubt: their instance died before it
    /// acknowledged them) may have been lost: the newest version at or
    /// before it, and each older one as long as every newer one is in
    /// doubt (down to `initial`, the row's value before any version).
    pub(crate) fn seen_at_doubtful(
        &self,
        snapshot: Scn,
        doubtful: &[(Scn, i64)],
        initial: Option<i64>,
    ) -> Vec<Option<i64>> {
        let mut out = Vec::new();
        for v in self.versions().iter().rev().filter(|v| v.0 <= snapshot) {
            out.push(Some(v.1));
            if !doubtful.contains(v) {
                return out;
            }
        }
        out.push(initial);
        out
    }

    /// The newest committed value.
    pub(crate) fn newest(&self) -> Option<i64> {
        match &self.versions {
            Versions::None => None,
            Versions::One((_, val)) => Some(*val),
            Versions::Many(v) => v.last().map(|v| v.1),
        }
    }

    /// Whether a committed transaction wrote it.
    pub(crate) fn committed(&self) -> bool {
        !matches!(self.versions, Versions::None)
    }

    fn add(&mut self, scn: Scn, val: i64) {
        self.versions = match std::mem::replace(&mut self.versions, Versions::None) {
            Versions::None => Versions::One((scn, val)),
            Versions::One(one) => {
                let mut all = vec![one];
                let at = all.partition_point(|&x| x <= (scn, val));
                all.insert(at, (scn, val));
                Versions::Many(all)
            }
            Versions::Many(mut all) => {
                let at = all.partition_point(|&x| x <= (scn, val));
                all.insert(at, (scn, val));
                Versions::Many(all)
            }
        };
    }

    /// Forget the versions older than the newest one at or before
    /// `horizon`; returns how many are kept.
    fn trim(&mut self, horizon: Scn) -> usize {
        let Versions::Many(v) = &mut self.versions else {
            return self.versions().len();
        };
        let at = v.partition_point(|&(scn, _)| scn <= horizon);
        if at > 1 {
            v.drain(..at - 1);
        }
        if let [one] = v[..] {
            self.versions = Versions::One(one);
            return 1;
        }
        if v.capacity() > 4 * v.len() {
            v.shrink_to_fit();
        }
        v.len()
    }
}

/// Every written row.
#[derive(Default)]
pub(crate) struct Rows {
    rows: FxHashMap<RowKey, Row>,
    /// Versions kept over all rows, and how many make the next trim worth it.
    versions: usize,
    next_trim: usize,
}

impl Rows {
    pub(crate) fn get(&self, row: &RowKey) -> Option<&Row> {
        self.rows.get(row)
    }

    /// `xid` wrote to `row`.
    pub(crate) fn written(&mut self, row: RowKey, xid: Xid) {
        self.rows
            .entry(row)
            .and_modify(|r| r.last = xid)
            .or_insert(Row {
                last: xid,
                versions: Versions::None,
            });
    }

    /// A version of `row` committed at `scn`, in its place among the others.
    pub(crate) fn committed(&mut self, row: RowKey, scn: Scn, val: i64) {
        self.rows
            .entry(row)
            .or_insert(Row {
                last: Xid::NONE,
                versions: Versions::None,
            })
            .add(scn, val);
        self.versions += 1;
    }

    /// Whether enough versions piled up since the last trim to try another.
    pub(crate) fn wants_trim(&self) -> bool {
        self.versions >= self.next_trim.max(TRIM_MIN)
    }

    /// Forget every version that no snapshot at or above `horizon` sees:
    /// per row, all those older than the newest one committed at or before
    /// `horizon`. The next trim waits until the versions kept doubled.
    pub(crate) fn trim(&mut self, horizon: Scn) {
        let kept = self.rows.values_mut().map(|r| r.trim(horizon)).sum();
        self.versions = kept;
        self.next_trim = kept.saturating_mul(2);
    }

    /// The versions kept now (for tests and the report).
    pub(crate) fn versions(&self) -> usize {
        self.versions
    }

    /// Every row, in (table, key) order.
    pub(crate) fn sorted(&self) -> Vec<(&RowKey, &Row)> {
        let mut all: Vec<(&RowKey, &Row)> = self.rows.iter().collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_keeps_what_a_snapshot_at_or_above_the_horizon_sees() {
        let mut rows = Rows::default();
        let x = Xid::NONE;
        for (scn, val) in [(10, 1), (20, 2), (30, 3), (40, 4)] {
            rows.written((0, 5), x);
            rows.committed((0, 5), Scn(scn), val);
        }
        rows.committed((0, 6), Scn(5), 7);
        let seen = |rows: &Rows| -> Vec<Option<i64>> {
            let r = rows.get(&(0, 5)).expect("written");
            (0..50).map(|s| r.seen_at(Scn(s))).collect()
        };
        let before = seen(&rows);
        rows.trim(Scn(25));
        let r = rows.get(&(0, 5)).expect("kept");
        assert_eq!(r.versions(), [(Scn(20), 2), (Scn(30), 3), (Scn(40), 4)]);
        assert_eq!(seen(&rows)[25..], before[25..]);
        assert_eq!(rows.versions(), 4, "the lone version of key 6 stays");
        assert_eq!(r.newest(), Some(4));
        rows.trim(Scn(45));
        let r = rows.get(&(0, 5)).expect("kept");
        assert!(matches!(r.versions, Versions::One((Scn(40), 4))));
        assert_eq!(seen(&rows)[45..], before[45..]);
    }

    /// What the memory estimate counts per row written (`CHECK_ROW` in
    /// fusion-scenario's estimate, with the map's own share).
    #[test]
    fn a_row_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Row>(), 32);
    }

    #[test]
    fn a_late_version_goes_in_its_place() {
        let mut rows = Rows::default();
        rows.committed((0, 1), Scn(30), 3);
        rows.committed((0, 1), Scn(10), 1);
        rows.committed((0, 1), Scn(20), 2);
        rows.committed((0, 1), Scn(20), 1);
        let r = rows.get(&(0, 1)).expect("kept");
        assert_eq!(
            r.versions(),
            [(Scn(10), 1), (Scn(20), 1), (Scn(20), 2), (Scn(30), 3)]
        );
        assert_eq!(
            r.seen_at(Scn(25)),
            Some(2),
            "the highest value among equal SCNs"
        );
        assert_eq!(r.seen_at(Scn(9)), None);
    }
}
