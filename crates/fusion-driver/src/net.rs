//! The scenario's interconnect (`[network]` and the phases' `latency` and
//! `bandwidth` faults): a FIFO pipe per direction between every pair of
//! instances, with serialization at the link rate, a one-way latency and
//! jitter. Messages on one link never overtake each other (the protocol,
//! like Oracle's over its reliable transport, relies on per-link order).
//!
//! A `loss` fault drops messages on its links (heartbeats too: they are on
//! the interconnect), drawn from a random stream of their own so that a
//! run without loss draws exactly what it drew before. The correlation is
//! "a drop raises the chance of the next drop" on the same link: after a
//! dropped message the next one is dropped with probability
//! `p + c * (1 - p)` (`p` the loss, `c` the correlation), after a delivered
//! one with `p` (netem's `loss p% c%` in spirit, not its exact formula).
//! The instances then re-send what was lost (fusion-core's `link.rs`);
//! the network itself never re-sends.
//!
//! Pure arithmetic on send times, no I/O: the simulator schedules a
//! message's delivery at [`Interconnect::arrival`]; a live instance holds a
//! message that reached its socket until then.

use fusion_core::config::{NS_PER_S, Nanos};
use fusion_scenario::{Fault, NetworkModel};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// One direction between two instances.
#[derive(Clone, Debug, Default)]
struct Link {
    /// When the link finishes serializing what it was given.
    free_at_ns: Nanos,
    /// Arrival time of the last message (FIFO).
    last_arrival_ns: Nanos,
    /// The last message on the link was dropped (a `loss` fault's correlation).
    last_dropped: bool,
    /// The current phase's faults on this link.
    fault: LinkFault,
}

/// What the current phase's faults add to one link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkFault {
    pub latency_ns: Nanos,
    pub jitter_ns: Nanos,
    /// The link's rate instead of the model's (`bandwidth` fault).
    pub rate_bps: Option<u64>,
    /// A `partition` cuts the link: it carries nothing.
    pub cut: bool,
    /// A `loss` fault: the chance a message is dropped, and how much a drop
    /// raises the next one's (parts per million; several faults: the
    /// largest of each).
    pub loss_ppm: u32,
    pub correlation_ppm: u32,
}

impl LinkFault {
    /// The faults of `faults` on the link `from -> to` (0-based), in order:
    /// latencies and jitters add up, the last bandwidth cap wins.
    pub fn of(faults: &[Fault], from: usize, to: usize) -> LinkFault {
        let mut f = LinkFault::default();
        for fault in faults {
            match fault {
                Fault::NetworkLatency {
                    target,
                    latency,
                    jitter,
                } if target.covers(from, to) => {
                    f.latency_ns += latency;
                    f.jitter_ns += jitter;
                }
                Fault::Bandwidth { target, rate_bps } if target.covers(from, to) => {
                    f.rate_bps = Some(*rate_bps);
                }
                Fault::Partition { target, direction } if target.cuts(*direction, from, to) => {
                    f.cut = true;
                }
                Fault::Loss {
                    target,
                    loss_ppm,
                    correlation_ppm,
                } if target.covers(from, to) => {
                    f.loss_ppm = f.loss_ppm.max(*loss_ppm);
                    f.correlation_ppm = f.correlation_ppm.max(*correlation_ppm);
                }
                _ => {}
            }
        }
        f
    }
}

/// Every link of a cluster of `instances`, the one random stream their
/// jitter is drawn from (in the order messages are sent) and the one their
/// losses are drawn from.
pub struct Interconnect {
    model: NetworkModel,
    instances: usize,
    links: Vec<Link>,
    rng: ChaCha8Rng,
    /// The `loss` faults' stream: the jitter stream's seed, the next stream
    /// number; drawn only on a link with a loss fault.
    loss_rng: ChaCha8Rng,
    /// Test hook: messages other than heartbeats through `deliver` so far,
    /// and the one (counted from 1) to lose.
    delivered: u64,
    lose_nth: Option<u64>,
}

impl Interconnect {
    pub fn new(model: NetworkModel, instances: usize, rng: ChaCha8Rng) -> Interconnect {
        let mut loss_rng = ChaCha8Rng::from_seed(rng.get_seed());
        loss_rng.set_stream(rng.get_stream().wrapping_add(1));
        Interconnect {
            model,
            instances,
            links: vec![Link::default(); instances * instances],
            rng,
            loss_rng,
            delivered: 0,
            lose_nth: None,
        }
    }

    /// Test hook: lose the `k`-th message (from 1; heartbeats not counted,
    /// the instances' acknowledgements counted) that goes through
    /// [`Interconnect::deliver`], whatever the faults.
    pub fn lose_nth(&mut self, k: u64) {
        self.lose_nth = Some(k);
    }

    /// Whether a `loss` fault drops the next message on `from -> to`
    /// (0-based; a draw only on a link with a loss fault).
    pub fn drops(&mut self, from: usize, to: usize) -> bool {
        let Some(link) = self.links.get_mut(from * self.instances + to) else {
            return false;
        };
        let f = link.fault;
        if f.loss_ppm == 0 {
            return false;
        }
        const PPM: u64 = 1_000_000;
        let p = u64::from(f.loss_ppm).min(PPM);
        let p = if link.last_dropped {
            p + u64::from(f.correlation_ppm).min(PPM) * (PPM - p) / PPM
        } else {
            p
        };
        let dropped = self.loss_rng.next_u64() % PPM < p;
        link.last_dropped = dropped;
        dropped
    }

    /// The shortest time any message takes from its send to its arrival:
    /// the model's latency (faults and serialization only add to it). A
    /// parallel simulator's window is no longer than this.
    pub fn latency_ns_min(&self) -> Nanos {
        self.model.latency
    }

    /// Bytes of a message without a block (`network.message_bytes`).
    pub fn message_bytes(&self) -> u32 {
        self.model.message_bytes
    }

    /// When a message sent at `sent_ns` from `from` to `to` (0-based)
    /// arrives, or `None` when the network loses it (a partition cuts the
    /// link, a `loss` fault drops it). Clusterware's heartbeats (`css`) are a few bytes a second: they
    /// take the link's latency but neither queue behind the database's
    /// messages nor draw jitter, so they move none of its figures.
    pub fn deliver(
        &mut self,
        sent_ns: Nanos,
        from: usize,
        to: usize,
        bytes: u64,
        css: bool,
    ) -> Option<Nanos> {
        let fault = self.links.get(from * self.instances + to)?.fault;
        if fault.cut || self.drops(from, to) {
            return None;
        }
        if !css {
            self.delivered += 1;
            if self.lose_nth == Some(self.delivered) {
                return None;
            }
        }
        if css {
            return Some(sent_ns + self.model.latency + fault.latency_ns);
        }
        Some(self.arrival(sent_ns, from, to, bytes))
    }

    /// When a message of `bytes` sent at `sent_ns` from `from` to `to`
    /// (0-based) arrives. Call it in the order the link's messages were
    /// sent; a link outside the cluster delivers at once.
    pub fn arrival(&mut self, sent_ns: Nanos, from: usize, to: usize, bytes: u64) -> Nanos {
        let Some(link) = self.links.get_mut(from * self.instances + to) else {
            return sent_ns;
        };
        let rate_bps = link
            .fault
            .rate_bps
            .unwrap_or(self.model.bandwidth_bps)
            .max(1);
        let serialize_ns =
            (u128::from(bytes) * 8 * u128::from(NS_PER_S) / u128::from(rate_bps)) as Nanos;
        let start_ns = sent_ns.max(link.free_at_ns);
        link.free_at_ns = start_ns + serialize_ns;
        let jitter_ns_max = self.model.jitter + link.fault.jitter_ns;
        // No draw without jitter: a run's random stream depends only on the
        // messages that have some.
        let jitter_ns = if jitter_ns_max > 0 {
            self.rng.next_u64() % (jitter_ns_max + 1)
        } else {
            0
        };
        let at_ns = (link.free_at_ns + self.model.latency + link.fault.latency_ns + jitter_ns)
            .max(link.last_arrival_ns);
        link.last_arrival_ns = at_ns;
        at_ns
    }

    /// The faults of a phase, replacing the previous phase's (none: clear them).
    pub fn set_faults(&mut self, faults: &[Fault]) {
        for from in 0..self.instances {
            for to in 0..self.instances {
                if let Some(link) = self.links.get_mut(from * self.instances + to) {
                    link.fault = LinkFault::of(faults, from, to);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_scenario::LinkTarget;
    use rand_core::SeedableRng;

    fn net(jitter: Nanos) -> Interconnect {
        let model = NetworkModel {
            latency: 1_000,
            jitter,
            bandwidth_bps: 8_000_000_000,
            message_bytes: 200,
        };
        Interconnect::new(model, 3, ChaCha8Rng::seed_from_u64(1))
    }

    fn latency(target: LinkTarget, latency: Nanos) -> Fault {
        Fault::NetworkLatency {
            target,
            latency,
            jitter: 0,
        }
    }

    #[test]
    fn serialization_latency_and_fifo() {
        let mut net = net(0);
        // 8 KB at 8 Gb/s = 8192 ns, then 1 us latency.
        assert_eq!(net.arrival(0, 0, 1, 8192), 8_192 + 1_000);
        // A small message behind it waits for the link.
        assert_eq!(net.arrival(0, 0, 1, 200), 8_192 + 200 + 1_000);
        // The other direction is independent.
        assert_eq!(net.arrival(0, 1, 0, 200), 200 + 1_000);
        net.set_faults(&[latency(LinkTarget::Instance(2), 5_000)]);
        assert_eq!(net.arrival(100_000, 0, 1, 200), 100_000 + 200 + 6_000);
        net.set_faults(&[]);
        assert_eq!(net.arrival(200_000, 0, 1, 200), 200_000 + 200 + 1_000);
    }

    #[test]
    fn a_later_message_never_overtakes_on_its_link() {
        let mut net = net(50_000);
        let mut last = 0;
        for k in 0..200 {
            let at = net.arrival(k * 100, 0, 2, 200);
            assert!(at >= last, "message {k} arrives at {at}, before {last}");
            assert!(at >= k * 100 + 1_000 + 200, "message {k} early");
            last = at;
        }
    }

    #[test]
    fn faults_reach_exactly_the_links_they_target() {
        let faults = [
            latency(LinkTarget::Link { from: 1, to: 3 }, 7_000),
            latency(LinkTarget::All, 1_000),
            Fault::Bandwidth {
                target: LinkTarget::Instance(2),
                rate_bps: 1_000,
            },
            Fault::Bandwidth {
                target: LinkTarget::Link { from: 2, to: 1 },
                rate_bps: 2_000,
            },
        ];
        let f = |from, to| LinkFault::of(&faults, from, to);
        assert_eq!(f(0, 2).latency_ns, 8_000, "latencies add up");
        assert_eq!(f(2, 0).latency_ns, 1_000, "a link fault is one direction");
        assert_eq!(f(0, 2).rate_bps, None);
        assert_eq!(f(0, 1).rate_bps, Some(1_000));
        assert_eq!(f(1, 0).rate_bps, Some(2_000), "the last cap wins");
        assert_eq!(f(1, 1), LinkFault::default(), "no link to itself");
    }

    #[test]
    fn a_partition_cuts_the_links_of_its_direction() {
        use fusion_scenario::Direction;
        let cut = |target: LinkTarget, direction, from, to| {
            LinkFault::of(&[Fault::Partition { target, direction }], from, to).cut
        };
        // Instance 3 (index 2) cut off both ways: {1, 2} still talk.
        assert!(cut(LinkTarget::Instance(3), Direction::Both, 0, 2));
        assert!(cut(LinkTarget::Instance(3), Direction::Both, 2, 1));
        assert!(!cut(LinkTarget::Instance(3), Direction::Both, 0, 1));
        // `to`: instance 3 hears nothing but is heard.
        assert!(cut(LinkTarget::Instance(3), Direction::To, 0, 2));
        assert!(!cut(LinkTarget::Instance(3), Direction::To, 2, 0));
        assert!(cut(LinkTarget::Instance(3), Direction::From, 2, 0));
        // One link, one way or both.
        let link = LinkTarget::Link { from: 1, to: 2 };
        assert!(cut(link, Direction::To, 0, 1) && !cut(link, Direction::To, 1, 0));
        assert!(cut(link, Direction::Both, 1, 0));
        let mut net = net(0);
        net.set_faults(&[Fault::Partition {
            target: LinkTarget::Instance(3),
            direction: Direction::Both,
        }]);
        assert_eq!(net.deliver(0, 0, 2, 200, false), None);
        assert_eq!(
            net.deliver(0, 2, 0, 200, true),
            None,
            "heartbeats are cut too"
        );
        assert_eq!(net.deliver(0, 0, 1, 200, true), Some(1_000));
    }

    fn lossy(loss_pct: u32, correlation_pct: u32) -> Interconnect {
        let mut n = net(10_000);
        n.set_faults(&[Fault::Loss {
            target: LinkTarget::Link { from: 1, to: 2 },
            loss_ppm: loss_pct * 10_000,
            correlation_ppm: correlation_pct * 10_000,
        }]);
        n
    }

    /// Messages dropped out of 20,000 on the lossy link 1 -> 2, and the
    /// longest run of drops.
    fn drops(n: &mut Interconnect) -> (u32, u32) {
        let (mut dropped, mut run, mut longest) = (0, 0, 0);
        for k in 0..20_000 {
            if n.deliver(k * 1_000, 0, 1, 200, false).is_none() {
                dropped += 1;
                run += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        (dropped, longest)
    }

    #[test]
    fn a_loss_fault_drops_its_share_of_its_links_only() {
        let (dropped, _) = drops(&mut lossy(5, 0));
        assert!(
            (800..1_200).contains(&dropped),
            "{dropped} of 20,000 at 5 %"
        );
        let mut n = lossy(5, 0);
        assert!(
            (0..1_000).all(|k| n.deliver(k, 1, 0, 200, false).is_some()),
            "the other direction loses nothing"
        );
    }

    #[test]
    fn correlation_makes_drops_come_in_runs() {
        let (plain, plain_run) = drops(&mut lossy(5, 0));
        let (bursty, bursty_run) = drops(&mut lossy(5, 60));
        assert!(
            bursty > plain,
            "{bursty} <= {plain}: a drop raises the next one's chance"
        );
        assert!(
            bursty_run > plain_run,
            "runs of {bursty_run} vs {plain_run}"
        );
    }

    #[test]
    fn the_jitter_stream_is_the_same_with_or_without_a_loss_of_nothing() {
        let mut plain = net(10_000);
        let mut zero = lossy(0, 0);
        for k in 0..1_000 {
            assert_eq!(
                plain.deliver(k * 100, 0, 1, 200, false),
                zero.deliver(k * 100, 0, 1, 200, false)
            );
        }
    }
}
