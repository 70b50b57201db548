//! The simulated interconnect: a FIFO pipe per direction between every pair
//! of instances, with serialization at the link rate, a one-way latency and
//! jitter. Messages on one link never overtake each other (the protocol, like
//! Oracle's over its reliable transport, relies on per-link order).

use fusion_core::config::{NS_PER_S, Nanos};
use fusion_scenario::{LinkTarget, NetworkModel};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

#[derive(Clone, Debug, Default)]
struct Link {
    /// When the link finishes serializing what it was given.
    free_at: Nanos,
    /// Arrival time of the last message (FIFO).
    last_arrival: Nanos,
    extra_latency: Nanos,
    extra_jitter: Nanos,
    rate_bps: Option<u64>,
}

pub struct Network {
    model: NetworkModel,
    n: usize,
    links: Vec<Link>,
    rng: ChaCha8Rng,
}

impl Network {
    pub fn new(model: NetworkModel, n: u8, seed: u64) -> Network {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1_000);
        let n = n as usize;
        Network {
            model,
            n,
            links: vec![Link::default(); n * n],
            rng,
        }
    }

    pub fn message_bytes(&self) -> u32 {
        self.model.message_bytes
    }

    /// When a message of `bytes` sent now from `from` to `to` arrives.
    pub fn arrival(&mut self, now: Nanos, from: usize, to: usize, bytes: u64) -> Nanos {
        let Some(link) = self.links.get_mut(from * self.n + to) else {
            return now;
        };
        let rate = link.rate_bps.unwrap_or(self.model.bandwidth_bps).max(1);
        let serialize = (u128::from(bytes) * 8 * u128::from(NS_PER_S) / u128::from(rate)) as Nanos;
        let start = now.max(link.free_at);
        link.free_at = start + serialize;
        let jitter_max = self.model.jitter + link.extra_jitter;
        let jitter = if jitter_max > 0 {
            self.rng.next_u64() % (jitter_max + 1)
        } else {
            0
        };
        let at = (link.free_at + self.model.latency + link.extra_latency + jitter)
            .max(link.last_arrival);
        link.last_arrival = at;
        at
    }

    pub fn clear_faults(&mut self) {
        for l in &mut self.links {
            l.extra_latency = 0;
            l.extra_jitter = 0;
            l.rate_bps = None;
        }
    }

    fn each(&mut self, target: &LinkTarget, mut f: impl FnMut(&mut Link)) {
        let n = self.n;
        for from in 0..n {
            for to in 0..n {
                let hit = match target {
                    LinkTarget::All => true,
                    LinkTarget::Instance(i) => {
                        let i = usize::from(*i).saturating_sub(1);
                        from == i || to == i
                    }
                    LinkTarget::Link { from: a, to: b } => {
                        from == usize::from(*a).saturating_sub(1)
                            && to == usize::from(*b).saturating_sub(1)
                    }
                };
                if hit && from != to {
                    f(&mut self.links[from * n + to]);
                }
            }
        }
    }

    pub fn add_latency(&mut self, target: &LinkTarget, latency: Nanos, jitter: Nanos) {
        self.each(target, |l| {
            l.extra_latency += latency;
            l.extra_jitter += jitter;
        });
    }

    pub fn set_bandwidth(&mut self, target: &LinkTarget, rate: u64) {
        self.each(target, |l| l.rate_bps = Some(rate));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_latency_and_fifo() {
        let model = NetworkModel {
            latency: 1_000,
            jitter: 0,
            bandwidth_bps: 8_000_000_000,
            message_bytes: 200,
        };
        let mut net = Network::new(model, 2, 1);
        // 8 KB at 8 Gb/s = 8192 ns, then 1 us latency.
        assert_eq!(net.arrival(0, 0, 1, 8192), 8_192 + 1_000);
        // A small message behind it waits for the link.
        assert_eq!(net.arrival(0, 0, 1, 200), 8_192 + 200 + 1_000);
        // The other direction is independent.
        assert_eq!(net.arrival(0, 1, 0, 200), 200 + 1_000);
        net.add_latency(&LinkTarget::Instance(2), 5_000, 0);
        assert_eq!(net.arrival(100_000, 0, 1, 200), 100_000 + 200 + 6_000);
        net.clear_faults();
        assert_eq!(net.arrival(200_000, 0, 1, 200), 200_000 + 200 + 1_000);
    }
}
