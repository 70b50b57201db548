//! The runner's side of the cluster-wide sequence checks: every value the
//! instances of a variant hand out, taken from them while the phases run
//! (each stamped on the cluster clock when its host took it from the state
//! machine, see [`NextvalBatch`](crate::host::NextvalBatch)), then counted
//! out of order and duplicated by the simulator's own counter
//! ([`fusion_driver::SeqOrder`]) in the order of those stamps, and added to
//! the statistics snapshots that count the value among `fusionlab sequence
//! values handed out`, so the figures mean what they mean on the simulator.
//!
//! Everything here comes from peers and is checked: the arrays of an answer
//! agree in length, values are numbered without gaps, stamps never go back,
//! sequences exist, and an instance never claims more values handed out
//! than it sent. At most [`SEQ_VALUES_MAX`] values are kept, as on the
//! simulator; past it the run stops.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fusion_core::config::Nanos;
use fusion_core::stats::{Stat, Stats};
use fusion_driver::SeqOrder;
use fusion_driver::seq_order::{SEQ_VALUES_MAX, add_counts};

use crate::pb;

/// The values every instance of a variant handed out, as taken.
pub struct Nextvals {
    sequences: usize,
    /// Per instance (0-based): (stamp, sequence, value), in hand-out order.
    taken: Vec<Vec<(Nanos, u32, i64)>>,
    total: usize,
}

impl Nextvals {
    /// For `instances` instances and a catalog of `sequences` sequences.
    pub fn new(instances: usize, sequences: usize) -> Nextvals {
        Nextvals {
            sequences,
            taken: vec![Vec::new(); instances],
            total: 0,
        }
    }

    /// Keep what instance `inst` (0-based) answered; `who` names it.
    pub fn take(&mut self, inst: usize, r: &pb::NextvalsResponse, who: &str) -> Result<(), String> {
        let n = r.at_ns.len();
        if r.sequence.len() != n || r.values.len() != n {
            return Err(format!(
                "{who}: sequence values: {n} stamps, {} sequences and {} values",
                r.sequence.len(),
                r.values.len()
            ));
        }
        let sequences = self.sequences;
        let total = self.total;
        let Some(kept) = self.taken.get_mut(inst) else {
            return Err(format!(
                "{who}: sequence values from an instance not in the run"
            ));
        };
        if r.first != kept.len() as u64 {
            return Err(format!(
                "{who}: sequence values numbered from {} where {} were taken: values are missing",
                r.first,
                kept.len()
            ));
        }
        if total.saturating_add(n) > SEQ_VALUES_MAX {
            return Err(format!(
                "more than {SEQ_VALUES_MAX} sequence values were handed out, as many as the \
                 duplicate check keeps: the run stops here"
            ));
        }
        // Every value is checked before any is kept.
        let mut last = kept.last().map_or(0, |v| v.0);
        for ((&at, &seq), &value) in r.at_ns.iter().zip(&r.sequence).zip(&r.values) {
            if at < last {
                return Err(format!(
                    "{who}: sequence value {value} stamped {at} ns, before the one handed out \
                     before it ({last} ns)"
                ));
            }
            if usize::try_from(seq).map_or(true, |s| s >= sequences) {
                return Err(format!(
                    "{who}: sequence value of sequence {seq}; the scenario has {sequences}"
                ));
            }
            last = at;
        }
        kept.extend(
            r.at_ns
                .iter()
                .zip(&r.sequence)
                .zip(&r.values)
                .map(|((&at, &seq), &value)| (at, seq, value)),
        );
        self.total += n;
        Ok(())
    }

    /// Count the values out of order and duplicated, as the simulator does,
    /// over every instance's values in the order of their stamps (equal
    /// stamps by instance, and each instance's in hand-out order), and add
    /// each instance's counts to each of `snapshots` (every instance's
    /// statistics, in instance order): the counts of the values that
    /// snapshot counts among `fusionlab sequence values handed out`.
    pub fn count_into<'a>(
        self,
        snapshots: impl IntoIterator<Item = &'a mut [Stats]>,
    ) -> Result<(), String> {
        let mut snapshots: Vec<&'a mut [Stats]> = snapshots.into_iter().collect();
        let instances = self.taken.len();
        // Per instance: (values handed out by the snapshot, snapshot), in
        // the order of the merge below.
        let mut edges: Vec<Vec<(u64, usize)>> = vec![Vec::new(); instances];
        for (j, snap) in snapshots.iter().enumerate() {
            for (i, st) in snap.iter().enumerate().take(instances) {
                let handed_out = st.get(Stat::SeqValuesHandedOut);
                let sent = self.taken[i].len() as u64;
                if handed_out > sent {
                    return Err(format!(
                        "inst{}: counted {handed_out} sequence values handed out but sent {sent}",
                        i + 1
                    ));
                }
                edges[i].push((handed_out, j));
            }
        }
        for e in &mut edges {
            e.sort_unstable();
        }
        let mut at_edge = vec![vec![(0u64, 0u64); instances]; snapshots.len()];
        let mut next_edge = vec![0usize; instances];
        let mut next = vec![0usize; instances];
        let mut order = SeqOrder::new(instances);
        let mut heap: BinaryHeap<Reverse<(Nanos, usize)>> = self
            .taken
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.first().map(|v| Reverse((v.0, i))))
            .collect();
        let close = |i: usize,
                     upto: u64,
                     order: &SeqOrder,
                     next_edge: &mut [usize],
                     at_edge: &mut [Vec<(u64, u64)>]| {
            while let Some(&(h, j)) = edges[i].get(next_edge[i])
                && h <= upto
            {
                at_edge[j][i] = order.counts(i);
                next_edge[i] += 1;
            }
        };
        while let Some(Reverse((_, i))) = heap.pop() {
            let r = next[i];
            // Snapshots that counted fewer values than this one's number
            // have their counts now.
            close(i, r as u64, &order, &mut next_edge, &mut at_edge);
            let (_, seq, value) = self.taken[i][r];
            order.observe(i, seq, value)?;
            next[i] = r + 1;
            if let Some(v) = self.taken[i].get(r + 1) {
                heap.push(Reverse((v.0, i)));
            }
        }
        for i in 0..instances {
            close(i, u64::MAX, &order, &mut next_edge, &mut at_edge);
        }
        for (snap, counts) in snapshots.iter_mut().zip(&at_edge) {
            for (st, &c) in snap.iter_mut().zip(counts) {
                add_counts(st, c);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(first: u64, values: &[(Nanos, u32, i64)]) -> pb::NextvalsResponse {
        pb::NextvalsResponse {
            first,
            at_ns: values.iter().map(|v| v.0).collect(),
            sequence: values.iter().map(|v| v.1).collect(),
            values: values.iter().map(|v| v.2).collect(),
        }
    }

    fn handed_out(n: u64) -> Stats {
        let mut st = Stats::default();
        st.add(Stat::SeqValuesHandedOut, n);
        st
    }

    fn counts(st: &Stats) -> (u64, u64) {
        (
            st.get(Stat::SeqValuesOutOfOrder),
            st.get(Stat::SeqValuesDuplicated),
        )
    }

    #[test]
    fn values_are_counted_in_stamp_order_and_belong_to_the_snapshots_that_counted_them() {
        let mut n = Nextvals::new(2, 1);
        // inst2 takes a range from 1010 and starts first; inst1 hands out
        // 10 later (out of order), then 1011 again (a duplicate).
        n.take(1, &batch(0, &[(100, 0, 1010), (300, 0, 1011)]), "inst2")
            .expect("valid");
        n.take(0, &batch(0, &[(200, 0, 10)]), "inst1")
            .expect("valid");
        n.take(0, &batch(1, &[(400, 0, 1011)]), "inst1")
            .expect("valid");
        // Snapshots: before anything, after inst1's first value, at the end.
        let mut snaps = [
            vec![handed_out(0), handed_out(0)],
            vec![handed_out(1), handed_out(2)],
            vec![handed_out(2), handed_out(2)],
        ];
        n.count_into(snaps.iter_mut().map(|s| &mut s[..]))
            .expect("counts");
        assert_eq!(counts(&snaps[0][0]), (0, 0));
        assert_eq!(counts(&snaps[1][0]), (1, 0));
        assert_eq!(counts(&snaps[2][0]), (1, 1));
        for s in &snaps {
            assert_eq!(counts(&s[1]), (0, 0), "inst2 handed out nothing wrong");
        }
    }

    #[test]
    fn what_a_peer_sends_is_checked() {
        let mut n = Nextvals::new(2, 1);
        let e = n
            .take(0, &batch(3, &[(1, 0, 1)]), "inst1")
            .expect_err("a gap");
        assert!(e.contains("missing"), "{e}");
        let mut b = batch(0, &[(1, 0, 1), (2, 0, 2)]);
        b.values.pop();
        let e = n.take(0, &b, "inst1").expect_err("ragged");
        assert!(e.contains("2 stamps"), "{e}");
        let e = n
            .take(0, &batch(0, &[(5, 0, 1), (4, 0, 2)]), "inst1")
            .expect_err("time went back");
        assert!(e.contains("before"), "{e}");
        let e = n
            .take(0, &batch(0, &[(5, 1, 1)]), "inst1")
            .expect_err("no such sequence");
        assert!(e.contains("sequence 1"), "{e}");
        let e = n
            .take(2, &batch(0, &[]), "inst3")
            .expect_err("not in the run");
        assert!(e.contains("not in the run"), "{e}");
        // Nothing of the refused answers was kept.
        n.take(0, &batch(0, &[(1, 0, 1)]), "inst1").expect("valid");
        let mut snaps = [vec![handed_out(2), handed_out(0)]];
        let e = n
            .count_into(snaps.iter_mut().map(|s| &mut s[..]))
            .expect_err("more counted than sent");
        assert!(e.contains("inst1: counted 2"), "{e}");
    }
}
