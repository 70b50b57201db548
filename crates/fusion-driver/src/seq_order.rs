//! What only a view of the whole cluster can tell about sequence values:
//! a value lower than one already handed out anywhere (out of order), or one
//! handed out twice (duplicated). No instance can count them alone, so the
//! driver does, with [`SeqOrder`], from the values every instance hands out
//! (`Instance::take_nextvals`) in the cluster's order: the simulator's event
//! order, or on a live cluster the order of the times the instances' hosts
//! took the values from their state machines (see `fusion-live`'s runner).
//! Both drivers count the same way, and add the counts to the instance that
//! handed the value out (`fusionlab sequence values out of order` and
//! `... duplicated`).

use fusion_core::stats::{Stat, Stats};
use rustc_hash::{FxHashMap, FxHashSet};

/// Sequence values the cross-cluster checks keep at most (each value handed
/// out is remembered to find duplicates, 20-odd bytes apiece): a run past
/// it stops with an error. The shipped sequence myths hand out a few
/// hundred thousand.
pub const SEQ_VALUES_MAX: usize = 1 << 24;

/// What [`SeqOrder::observe`] found about one value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Lower than a value of the same sequence handed out before.
    pub out_of_order: bool,
    /// Handed out before.
    pub duplicated: bool,
}

/// Order and uniqueness of the values of every sequence across the
/// cluster, counted per instance.
#[derive(Clone, Debug, Default)]
pub struct SeqOrder {
    highest: FxHashMap<u32, i64>,
    seen: FxHashSet<(u32, i64)>,
    /// Per instance (0-based): (out of order, duplicated).
    counts: Vec<(u64, u64)>,
}

impl SeqOrder {
    pub fn new(instances: usize) -> SeqOrder {
        SeqOrder {
            counts: vec![(0, 0); instances],
            ..SeqOrder::default()
        }
    }

    /// Value `value` of sequence `seq`, handed out by instance `inst`
    /// (0-based) after every value observed so far. Err: as many values
    /// as [`SEQ_VALUES_MAX`] were observed; the value is then counted out of
    /// order if it is, but not checked for a duplicate, and the run must stop.
    pub fn observe(&mut self, inst: usize, seq: u32, value: i64) -> Result<Observed, String> {
        let mut seen = Observed::default();
        let high = self.highest.entry(seq).or_insert(i64::MIN);
        seen.out_of_order = value < *high;
        *high = (*high).max(value);
        if seen.out_of_order {
            self.count(inst, |c| &mut c.0);
        }
        if self.seen.len() >= SEQ_VALUES_MAX {
            return Err(format!(
                "{SEQ_VALUES_MAX} sequence values were handed out, as many as the \
                 duplicate check keeps: the run stops here"
            ));
        }
        if !self.seen.insert((seq, value)) {
            seen.duplicated = true;
            self.count(inst, |c| &mut c.1);
        }
        Ok(seen)
    }

    fn count(&mut self, inst: usize, which: fn(&mut (u64, u64)) -> &mut u64) {
        if let Some(c) = self.counts.get_mut(inst) {
            *which(c) += 1;
        }
    }

    /// Instance `inst`'s values out of order and duplicated so far.
    pub fn counts(&self, inst: usize) -> (u64, u64) {
        self.counts.get(inst).copied().unwrap_or_default()
    }

    /// Add instance `inst`'s counts so far to its statistics.
    pub fn add_to(&self, inst: usize, stats: &mut Stats) {
        add_counts(stats, self.counts(inst));
    }
}

/// Add (out of order, duplicated) to `stats` under their statistics.
pub fn add_counts(stats: &mut Stats, (out_of_order, duplicated): (u64, u64)) {
    stats.add(Stat::SeqValuesOutOfOrder, out_of_order);
    stats.add(Stat::SeqValuesDuplicated, duplicated);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_below_the_highest_is_out_of_order_and_a_repeat_is_duplicated() {
        let mut o = SeqOrder::new(2);
        let seen = |o: &mut SeqOrder, i, v| o.observe(i, 0, v).expect("below the limit");
        assert_eq!(seen(&mut o, 1, 1010), Observed::default());
        assert_eq!(seen(&mut o, 1, 1011), Observed::default());
        // Instance 1 (0-based 0) starts its own range below instance 2's.
        assert_eq!(
            seen(&mut o, 0, 10),
            Observed {
                out_of_order: true,
                duplicated: false
            }
        );
        assert_eq!(
            seen(&mut o, 0, 1011),
            Observed {
                out_of_order: false,
                duplicated: true
            }
        );
        // Another sequence has its own order and values.
        assert_eq!(o.observe(0, 1, 5), Ok(Observed::default()));
        assert_eq!(o.counts(0), (1, 1));
        assert_eq!(o.counts(1), (0, 0));
        let mut st = Stats::default();
        o.add_to(0, &mut st);
        assert_eq!(st.get(Stat::SeqValuesOutOfOrder), 1);
        assert_eq!(st.get(Stat::SeqValuesDuplicated), 1);
    }
}
