//! How the query coordinator sizes and places a statement's server sets,
//! from what each instance answered to its probe. Pure: the QC in px.rs
//! gathers the offers and carries the decision out.
//!
//! - Requested DOP: the hint's degree (times its `instances` argument); with
//!   `parallel(t)` the default DOP (`parallel_threads_per_cpu x cpu_count`
//!   summed over the instances the statement may use) under MANUAL, or the
//!   automatic DOP from the tables' size under LIMITED and AUTO (estimated
//!   serial time / `parallel_min_time_threshold`, capped by
//!   `parallel_degree_limit`; below the threshold the statement runs serially).
//! - Under AUTO a statement that needs more servers than
//!   `parallel_servers_target` leaves free queues; one that needs more than
//!   the target of its instances together is first downgraded to fit it.
//!   Under MANUAL and LIMITED it is downgraded to the servers free, and runs
//!   serially below two.
//! - Placement: when the DOP is within one instance's `cpu_count x
//!   parallel_threads_per_cpu` and that instance has room for every slave,
//!   all go there (the least loaded such instance, which need not be the
//!   QC's: the deck's "PQ allocation -3"); otherwise each set is spread
//!   evenly over the instances, within what each has free.

use crate::config::Nanos;
use crate::px::{Degree, DegreePolicy};
use crate::types::InstId;

/// An instance's answer to a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    pub inst: InstId,
    pub member: bool,
    pub cpu_dop: u32,
    pub free: u32,
    pub room: u32,
    pub target: u32,
    pub load: u32,
}

/// What the statement asks for, under the QC's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ask {
    pub sets: u8,
    pub degree: Degree,
    pub instances: u32,
    pub policy: DegreePolicy,
    pub degree_limit: u32,
    pub threshold: Nanos,
    /// Estimated serial elapsed time of the statement (for automatic DOP).
    pub est_serial: Nanos,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Wait in the statement queue (AUTO) until servers are freed.
    Queue { requested: u32 },
    /// Run in the QC alone.
    Serial { requested: u32 },
    /// `placement[set * dop + idx]` is each slave's instance.
    Parallel {
        requested: u32,
        dop: u32,
        placement: Vec<InstId>,
    },
}

/// The DOP the statement asks for before any downgrade.
pub fn requested_dop(ask: &Ask, members: &[Offer]) -> u32 {
    match ask.degree {
        Degree::Fixed(n) => n.saturating_mul(ask.instances.max(1)),
        Degree::Default => match ask.policy {
            DegreePolicy::Manual => members.iter().map(|o| o.cpu_dop).sum::<u32>().max(1),
            DegreePolicy::Limited | DegreePolicy::Auto => {
                if ask.est_serial < ask.threshold.max(1) {
                    1
                } else {
                    let auto = ask.est_serial.div_ceil(ask.threshold.max(1));
                    auto.min(u64::from(ask.degree_limit.max(1))) as u32
                }
            }
        },
    }
}

pub fn decide(ask: &Ask, offers: &[Offer]) -> Decision {
    let members: Vec<Offer> = offers.iter().copied().filter(|o| o.member).collect();
    let requested = requested_dop(ask, &members);
    if members.is_empty() || requested <= 1 {
        return Decision::Serial { requested };
    }
    let sets = u32::from(ask.sets.max(1));
    let queuing = ask.policy == DegreePolicy::Auto;
    let cap = |o: &Offer| if queuing { o.free.min(o.room) } else { o.free };
    // Every set has a slave wherever the instance has one, so an instance
    // takes whole multiples of the number of sets.
    let per_set: u32 = members.iter().map(|o| cap(o) / sets).sum();
    let mut dop = requested;
    if queuing {
        let ceiling: u32 = members.iter().map(|o| o.target / sets).sum();
        dop = dop.min(ceiling);
        if dop < 2 {
            return Decision::Serial { requested };
        }
        if dop > per_set {
            return Decision::Queue { requested };
        }
    } else if dop > per_set {
        dop = per_set;
        if dop < 2 {
            return Decision::Serial { requested };
        }
    }
    let placement = place(dop, sets, &members, cap);
    Decision::Parallel {
        requested,
        dop,
        placement,
    }
}

/// Where each slave goes (see the module comment).
fn place(dop: u32, sets: u32, members: &[Offer], cap: impl Fn(&Offer) -> u32) -> Vec<InstId> {
    let one = members
        .iter()
        .filter(|o| dop <= o.cpu_dop && cap(o) >= dop * sets)
        .min_by_key(|o| (o.load, std::cmp::Reverse(cap(o)), o.inst));
    let mut counts = vec![0u32; members.len()];
    match one {
        Some(o) => {
            if let Some(i) = members.iter().position(|m| m.inst == o.inst) {
                counts[i] = dop;
            }
        }
        None => {
            // Water-fill: each slave to the instance with the fewest so far
            // that still has room for one more per set.
            for _ in 0..dop {
                let pick = (0..members.len())
                    .filter(|&i| sets * (counts[i] + 1) <= cap(&members[i]))
                    .min_by_key(|&i| (counts[i], members[i].inst));
                match pick {
                    Some(i) => counts[i] += 1,
                    None => break,
                }
            }
        }
    }
    let mut per_set = Vec::with_capacity(dop as usize);
    for (i, &c) in counts.iter().enumerate() {
        per_set.extend(std::iter::repeat_n(members[i].inst, c as usize));
    }
    let mut placement = Vec::with_capacity((sets * dop) as usize);
    for _ in 0..sets {
        placement.extend(per_set.iter().copied());
    }
    placement
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(i: u8, load: u32) -> Offer {
        Offer {
            inst: InstId(i),
            member: true,
            cpu_dop: 8,
            free: 40,
            room: 16,
            target: 16,
            load,
        }
    }

    fn ask(sets: u8, degree: u32) -> Ask {
        Ask {
            sets,
            degree: Degree::Fixed(degree),
            instances: 1,
            policy: DegreePolicy::Manual,
            degree_limit: 8,
            threshold: 10,
            est_serial: 0,
        }
    }

    fn on(d: &Decision) -> Vec<u8> {
        match d {
            Decision::Parallel { placement, .. } => placement.iter().map(|i| i.0).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn the_decks_three_allocations() {
        let offers = [
            offer(0, 1),
            offer(1, 0),
            Offer {
                member: false,
                ..offer(2, 0)
            },
        ];
        // SQL1: parallel(t1, 8) with instances 2: 8 + 8 in one set.
        let d = decide(
            &Ask {
                instances: 2,
                ..ask(1, 8)
            },
            &offers,
        );
        assert_eq!(on(&d), [vec![0; 8], vec![1; 8]].concat());
        // SQL2: DOP 16, two sets: each set split over both instances.
        let d = decide(&ask(2, 16), &offers);
        let half = [vec![0; 8], vec![1; 8]].concat();
        assert_eq!(on(&d), [half.clone(), half].concat());
        // SQL3: DOP 8 fits one instance: the least loaded, not the QC's.
        let d = decide(&ask(2, 8), &offers);
        assert_eq!(on(&d), vec![1; 16]);
    }

    #[test]
    fn downgrade_queue_and_serial() {
        let mut o = [offer(0, 0)];
        o[0].free = 10;
        // MANUAL: downgraded to the servers free.
        let d = decide(&ask(2, 8), &o);
        assert!(
            matches!(
                d,
                Decision::Parallel {
                    dop: 5,
                    requested: 8,
                    ..
                }
            ),
            "{d:?}"
        );
        // AUTO: queued instead, while the target could hold it.
        let auto = Ask {
            policy: DegreePolicy::Auto,
            ..ask(2, 8)
        };
        assert_eq!(decide(&auto, &o), Decision::Queue { requested: 8 });
        // No member: serial.
        o[0].member = false;
        assert_eq!(decide(&ask(2, 8), &o), Decision::Serial { requested: 8 });
    }

    #[test]
    fn automatic_dop_from_size_capped_by_the_limit() {
        let members = [offer(0, 0)];
        let mut a = Ask {
            degree: Degree::Default,
            policy: DegreePolicy::Auto,
            ..ask(2, 1)
        };
        a.est_serial = 5;
        assert_eq!(
            requested_dop(&a, &members),
            1,
            "below the threshold: serial"
        );
        a.est_serial = 35;
        assert_eq!(requested_dop(&a, &members), 4);
        a.est_serial = 1_000;
        assert_eq!(
            requested_dop(&a, &members),
            8,
            "capped by parallel_degree_limit"
        );
        a.policy = DegreePolicy::Manual;
        assert_eq!(
            requested_dop(&a, &members),
            8,
            "default DOP: cpu_dop summed"
        );
    }
}
