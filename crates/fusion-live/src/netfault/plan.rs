//! What a phase's network faults become when the kernel carries them out,
//! decided without running anything: for each `latency`, `bandwidth` and
//! `loss` fault, the kernel's way (netem, tbf, iptables' statistic match)
//! or the instances' (the scenario's network model in each receiving host)
//! and why; for each instance's network namespace, the shape of what it
//! sends to each peer and the drops of what it receives from each; and the
//! `tc` and `iptables` commands that set and remove them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

use fusion_core::config::Nanos;
use fusion_driver::LinkFault;
use fusion_scenario::{Fault, LinkTarget};

/// What this machine's kernel offers in a network namespace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offers {
    /// sch_netem: delay, jitter and loss.
    pub netem: bool,
    /// sch_tbf: a rate.
    pub tbf: bool,
    /// sch_htb and cls_u32: one qdisc per peer, its traffic classified by
    /// the peer's address and port (without them no tc fault can target a
    /// peer).
    pub htb_u32: bool,
    /// iptables with the statistic match: random drops.
    pub iptables_statistic: bool,
}

impl Offers {
    /// `netem tbf htb+u32 iptables-statistic`, each present or `no-...`.
    pub fn summary(&self) -> String {
        let one = |has: bool, name: &str| {
            if has {
                name.to_string()
            } else {
                format!("no {name}")
            }
        };
        [
            one(self.netem, "sch_netem"),
            one(self.tbf, "sch_tbf"),
            one(self.htb_u32, "sch_htb+cls_u32"),
            one(self.iptables_statistic, "iptables statistic"),
        ]
        .join(", ")
    }
}

/// The kernel's ways of carrying out a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `tc netem` at each sender's egress.
    Netem,
    /// `tc tbf` at each sender's egress.
    Tbf,
    /// `iptables -m statistic ... -j DROP` at each receiver's INPUT.
    Iptables,
}

/// How one network fault of a phase is carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum How {
    /// By the kernel, in these instances' network namespaces (0-based).
    Kernel {
        mechanism: Mechanism,
        namespaces: Vec<usize>,
    },
    /// By the instances' hosts (the scenario's network model), and why not
    /// by the kernel.
    Instances(String),
}

/// Whether the kernel could carry out this fault: `latency` (with its
/// jitter), `bandwidth`, `loss` and `partition` (every segment of a cut
/// link dropped, as Chaos Mesh's NetworkChaos partition does).
pub fn is_network(f: &Fault) -> bool {
    matches!(
        f,
        Fault::NetworkLatency { .. }
            | Fault::Bandwidth { .. }
            | Fault::Loss { .. }
            | Fault::Partition { .. }
    )
}

/// What the kernel adds to one directed link, at its sender's egress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shape {
    pub delay_ns: Nanos,
    pub jitter_ns: Nanos,
    pub loss_ppm: u32,
    pub correlation_ppm: u32,
    pub rate_bps: Option<u64>,
}

impl Shape {
    fn of(f: &LinkFault) -> Shape {
        Shape {
            delay_ns: f.latency_ns,
            jitter_ns: f.jitter_ns,
            loss_ppm: f.loss_ppm,
            correlation_ppm: f.correlation_ppm,
            rate_bps: f.rate_bps,
        }
    }

    fn is_none(&self) -> bool {
        *self == Shape::default()
    }

    /// Whether it needs netem (delay, jitter or loss).
    fn netem(&self) -> bool {
        self.delay_ns > 0 || self.jitter_ns > 0 || self.loss_ppm > 0
    }
}

/// The rules of one instance's network namespace (peers 0-based).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NsRules {
    /// The shape of what this instance sends to each peer (tc at its egress).
    pub egress: Vec<(usize, Shape)>,
    /// The chance (ppm) that a TCP segment from each peer is dropped on
    /// arrival (iptables INPUT).
    pub input_drops: Vec<(usize, u32)>,
}

impl NsRules {
    pub fn is_empty(&self) -> bool {
        self.egress.is_empty() && self.input_drops.is_empty()
    }
}

/// A phase's network faults, planned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhasePlan {
    /// Per fault of the phase, in its order: how it is carried out (None
    /// for a fault that is not a network fault).
    pub how: Vec<Option<How>>,
    /// The rules of each instance's namespace.
    pub rules: Vec<NsRules>,
}

impl PhasePlan {
    /// The indices of the faults the kernel carries out (the hosts leave
    /// them out of their model).
    pub fn kernel_indices(&self) -> Vec<u32> {
        self.how
            .iter()
            .enumerate()
            .filter(|(_, h)| matches!(h, Some(How::Kernel { .. })))
            .filter_map(|(j, _)| u32::try_from(j).ok())
            .collect()
    }

    /// Whether any namespace gets a rule.
    pub fn has_rules(&self) -> bool {
        self.rules.iter().any(|r| !r.is_empty())
    }
}

/// The kernel's way for `f`, or why it has none.
fn mechanism(f: &Fault, o: &Offers) -> Result<Mechanism, String> {
    let tc = |has: bool, qdisc: &str, m: Mechanism| {
        if !o.htb_u32 {
            Err("this kernel has no sch_htb and cls_u32 to single out a peer's traffic".to_string())
        } else if has {
            Ok(m)
        } else {
            Err(format!("this kernel has no {qdisc}"))
        }
    };
    match f {
        Fault::NetworkLatency { .. } => tc(o.netem, "sch_netem", Mechanism::Netem),
        Fault::Bandwidth { .. } => tc(o.tbf, "sch_tbf", Mechanism::Tbf),
        Fault::Loss {
            correlation_ppm, ..
        } => {
            if o.netem && o.htb_u32 {
                Ok(Mechanism::Netem)
            } else if !o.iptables_statistic {
                Err("this kernel has neither sch_netem nor iptables' statistic match".into())
            } else if *correlation_ppm > 0 {
                Err(
                    "this kernel has no sch_netem, and iptables' statistic match \
                     drops each packet on its own (no correlation)"
                        .into(),
                )
            } else {
                Ok(Mechanism::Iptables)
            }
        }
        Fault::Partition { .. } => {
            if o.iptables_statistic {
                Ok(Mechanism::Iptables)
            } else {
                Err("this kernel has no iptables to drop a peer's segments".into())
            }
        }
        _ => Err("not a network fault".into()),
    }
}

/// The directed links (0-based) a network fault acts on among `n`
/// instances: its target's, or those its partition cuts.
fn links(f: &Fault, n: usize) -> Vec<(usize, usize)> {
    let on = |a: usize, b: usize| match f {
        Fault::Partition { target, direction } => target.cuts(*direction, a, b),
        _ => target_of(f).is_some_and(|t| t.covers(a, b)),
    };
    (0..n)
        .flat_map(|a| (0..n).map(move |b| (a, b)))
        .filter(|&(a, b)| on(a, b))
        .collect()
}

fn target_of(f: &Fault) -> Option<LinkTarget> {
    match f {
        Fault::NetworkLatency { target, .. }
        | Fault::Bandwidth { target, .. }
        | Fault::Loss { target, .. }
        | Fault::Partition { target, .. } => Some(*target),
        _ => None,
    }
}

/// A drop chance that is certain: a cut link.
pub const DROP_ALL_PPM: u32 = 1_000_000;

/// Plan the network faults of a phase on `n` instances. `offers`: what the
/// kernel offers, or why it carries out nothing on this cluster (then every
/// fault is the instances').
pub fn plan(faults: &[Fault], n: usize, offers: Result<&Offers, &str>) -> PhasePlan {
    let mut how = Vec::with_capacity(faults.len());
    let mut tc_faults = Vec::new();
    let mut drop_faults = Vec::new();
    for f in faults {
        if target_of(f).is_none() {
            how.push(None);
            continue;
        }
        let m = match offers {
            Ok(o) => mechanism(f, o),
            Err(why) => Err(why.to_string()),
        };
        how.push(Some(match m {
            Ok(mechanism) => {
                let mut namespaces: Vec<usize> = links(f, n)
                    .into_iter()
                    .map(|(a, b)| match mechanism {
                        Mechanism::Iptables => b,
                        Mechanism::Netem | Mechanism::Tbf => a,
                    })
                    .collect();
                namespaces.sort_unstable();
                namespaces.dedup();
                match mechanism {
                    Mechanism::Iptables => drop_faults.push(f.clone()),
                    Mechanism::Netem | Mechanism::Tbf => tc_faults.push(f.clone()),
                }
                How::Kernel {
                    mechanism,
                    namespaces,
                }
            }
            Err(why) => How::Instances(why),
        }));
    }
    let mut rules = vec![NsRules::default(); n];
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            let shape = Shape::of(&LinkFault::of(&tc_faults, a, b));
            if !shape.is_none() {
                rules[a].egress.push((b, shape));
            }
            let dropped = LinkFault::of(&drop_faults, a, b);
            let drop = if dropped.cut {
                DROP_ALL_PPM
            } else {
                dropped.loss_ppm
            };
            if drop > 0 {
                rules[b].input_drops.push((a, drop));
            }
        }
    }
    PhasePlan { how, rules }
}

/// The alert log line of a network fault: what it is and how it is carried
/// out, e.g. `latency +20.0 ms on inst2's links in "slow": tc netem in the
/// network namespaces of inst1, inst2, inst3 (at each sender)`.
pub fn describe(fault: &Fault, phase: &str, how: &How) -> String {
    let what = fusion_report::chaos::describe_fault(fault, phase);
    match how {
        How::Kernel {
            mechanism,
            namespaces,
        } => {
            let names: Vec<String> = namespaces
                .iter()
                .map(|i| format!("inst{}", i + 1))
                .collect();
            let (tool, at) = match mechanism {
                Mechanism::Netem => ("tc netem", "at each sender"),
                Mechanism::Tbf => ("tc tbf", "at each sender"),
                Mechanism::Iptables if matches!(fault, Fault::Partition { .. }) => {
                    ("iptables DROP", "at each receiver's INPUT")
                }
                Mechanism::Iptables => ("iptables statistic DROP", "at each receiver's INPUT"),
            };
            let place = match names.as_slice() {
                [one] => format!("{one}'s network namespace"),
                _ => format!("the network namespaces of {}", names.join(", ")),
            };
            format!("{what}: {tool} in {place} ({at})")
        }
        How::Instances(why) => format!("{what}: by the instances ({why})"),
    }
}

/// The instance (0-based) an alert line about a fault is written under:
/// the target's, the link's sender's, or inst1's for every link.
pub fn line_instance(f: &Fault) -> usize {
    match target_of(f) {
        Some(LinkTarget::Instance(i)) => usize::from(i).saturating_sub(1),
        Some(LinkTarget::Link { from, .. }) => usize::from(from).saturating_sub(1),
        _ => 0,
    }
}

/// The handle of the root qdisc this module sets (`fab:`, hex): the one it
/// removes, never another.
pub const ROOT_HANDLE: &str = "fab:";
/// The iptables chain this module creates in a namespace (and removes).
pub const CHAIN: &str = "FUSIONLAB-LOSS";

/// How a namespace reaches one peer: the device, its MTU and the peer's
/// interconnect address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub dev: String,
    pub mtu: u32,
    pub dst: Ipv4Addr,
    pub port: u16,
}

/// A `tc` rate: bits per second.
fn tbf_args(rate_bps: u64, mtu: u32) -> String {
    // The bucket holds at least a whole packet of the device (else tbf
    // drops it) and 10 ms at the rate; the queue 4 MiB or two buckets, so
    // that the rate delays rather than drops (the model's link queues
    // without end; TCP's own limits keep this queue short).
    let burst = (rate_bps / 8 / 100).max(u64::from(mtu) + 64).max(16 * 1024);
    let limit = burst.saturating_mul(2).max(4 << 20);
    format!("tbf rate {rate_bps}bit burst {burst} limit {limit}")
}

fn pct(ppm: u32) -> String {
    format!("{}.{:04}%", ppm / 10_000, ppm % 10_000)
}

fn netem_args(s: &Shape) -> String {
    let mut a = String::from("netem limit 100000");
    if s.delay_ns > 0 || s.jitter_ns > 0 {
        let _ = write!(a, " delay {}us", s.delay_ns / 1_000);
        if s.jitter_ns > 0 {
            let _ = write!(a, " {}us", s.jitter_ns / 1_000);
        }
    }
    if s.loss_ppm > 0 {
        let _ = write!(a, " loss {}", pct(s.loss_ppm));
        if s.correlation_ppm > 0 {
            let _ = write!(a, " {}", pct(s.correlation_ppm));
        }
    }
    a
}

/// The `tc -batch` input that gives each device of a namespace its
/// egress shapes, by device: an htb root (handle `fab:`, unclassified
/// traffic passes unshaped), a class per distinct shape with netem and/or
/// tbf under it, and a u32 filter per peer (its address and port). Err:
/// more distinct shapes on a device than classes to give.
pub fn tc_batches(egress: &[(Shape, Route)]) -> Result<Vec<(String, String)>, String> {
    let mut by_dev: BTreeMap<&str, Vec<&(Shape, Route)>> = BTreeMap::new();
    for e in egress {
        by_dev.entry(e.1.dev.as_str()).or_default().push(e);
    }
    let mut out = Vec::new();
    for (dev, peers) in by_dev {
        let mut shapes: Vec<Shape> = Vec::new();
        for (s, _) in &peers {
            if !shapes.contains(s) {
                shapes.push(*s);
            }
        }
        if shapes.len() > 0xff {
            return Err(format!(
                "{dev}: {} different shapes, at most 255",
                shapes.len()
            ));
        }
        let mut b = String::new();
        let _ = writeln!(
            b,
            "qdisc add dev {dev} root handle {ROOT_HANDLE} htb default 0 direct_qlen 100000"
        );
        let mtu = peers.iter().map(|(_, r)| r.mtu).max().unwrap_or(1500);
        for (n, s) in shapes.iter().enumerate() {
            let class = n + 2;
            let leaf = 0x100 + n;
            let _ = writeln!(
                b,
                "class add dev {dev} parent {ROOT_HANDLE} classid {ROOT_HANDLE}{class:x} htb rate 100gbit quantum 60000"
            );
            match (s.netem(), s.rate_bps) {
                (true, rate) => {
                    let _ = writeln!(
                        b,
                        "qdisc add dev {dev} parent {ROOT_HANDLE}{class:x} handle {leaf:x}: {}",
                        netem_args(s)
                    );
                    if let Some(r) = rate {
                        let _ = writeln!(
                            b,
                            "qdisc add dev {dev} parent {leaf:x}:1 handle {:x}: {}",
                            0x200 + n,
                            tbf_args(r, mtu)
                        );
                    }
                }
                (false, Some(r)) => {
                    let _ = writeln!(
                        b,
                        "qdisc add dev {dev} parent {ROOT_HANDLE}{class:x} handle {leaf:x}: {}",
                        tbf_args(r, mtu)
                    );
                }
                (false, None) => {}
            }
        }
        for (s, r) in &peers {
            let class = shapes.iter().position(|x| x == s).unwrap_or(0) + 2;
            let _ = writeln!(
                b,
                "filter add dev {dev} parent {ROOT_HANDLE} protocol ip prio 1 u32 \
                 match ip dst {}/32 match ip dport {} 0xffff flowid {ROOT_HANDLE}{class:x}",
                r.dst, r.port
            );
        }
        out.push((dev.to_string(), b));
    }
    Ok(out)
}

/// One drop rule: TCP segments from `src` to `dst:port`, each dropped with
/// probability `ppm` in a million.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropRule {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub port: u16,
    pub ppm: u32,
}

/// The shell script (run in the namespace) that puts `drops` in the chain
/// [`CHAIN`], created or emptied, and hooks it first into INPUT once.
pub fn iptables_set(drops: &[DropRule]) -> String {
    let mut s = String::from("set -e\n");
    let _ = writeln!(
        s,
        "iptables -w 5 -N {CHAIN} 2>/dev/null || iptables -w 5 -F {CHAIN}"
    );
    for d in drops {
        // A cut link drops every segment; a loss, each at random.
        let random = if d.ppm >= DROP_ALL_PPM {
            String::new()
        } else {
            format!(
                " -m statistic --mode random --probability {:.6}",
                f64::from(d.ppm) / 1e6
            )
        };
        let _ = writeln!(
            s,
            "iptables -w 5 -A {CHAIN} -p tcp -s {}/32 -d {}/32 --dport {}{random} -j DROP",
            d.src, d.dst, d.port
        );
    }
    let _ = writeln!(
        s,
        "iptables -w 5 -C INPUT -j {CHAIN} 2>/dev/null || iptables -w 5 -I INPUT -j {CHAIN}"
    );
    s
}

/// The shell script that removes the chain [`CHAIN`] and its hooks from
/// INPUT, if it is there; nothing else.
pub fn iptables_clear() -> String {
    format!(
        "if iptables -w 5 -S {CHAIN} >/dev/null 2>&1; then\n\
         for _ in 1 2 3 4 5 6 7 8; do iptables -w 5 -D INPUT -j {CHAIN} 2>/dev/null || break; done\n\
         iptables -w 5 -F {CHAIN}\n\
         iptables -w 5 -X {CHAIN}\n\
         fi\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Offers = Offers {
        netem: true,
        tbf: true,
        htb_u32: true,
        iptables_statistic: true,
    };
    /// This VM's kernel: no sch_netem.
    const NO_NETEM: Offers = Offers {
        netem: false,
        ..ALL
    };

    fn latency(target: LinkTarget, ms: u64) -> Fault {
        Fault::NetworkLatency {
            target,
            latency: ms * 1_000_000,
            jitter: 0,
        }
    }

    fn loss(target: LinkTarget, pct: u32, corr: u32) -> Fault {
        Fault::Loss {
            target,
            loss_ppm: pct * 10_000,
            correlation_ppm: corr * 10_000,
        }
    }

    fn bandwidth(target: LinkTarget, mbps: u64) -> Fault {
        Fault::Bandwidth {
            target,
            rate_bps: mbps * 1_000_000,
        }
    }

    #[test]
    fn a_delay_on_one_instance_shapes_its_egress_and_everyone_elses_toward_it() {
        let faults = [latency(LinkTarget::Instance(2), 20)];
        let p = plan(&faults, 3, Ok(&ALL));
        assert_eq!(
            p.how,
            vec![Some(How::Kernel {
                mechanism: Mechanism::Netem,
                namespaces: vec![0, 1, 2]
            })]
        );
        assert_eq!(p.kernel_indices(), vec![0]);
        let d = Shape {
            delay_ns: 20_000_000,
            ..Shape::default()
        };
        assert_eq!(p.rules[0].egress, vec![(1, d)]);
        assert_eq!(p.rules[1].egress, vec![(0, d), (2, d)]);
        assert_eq!(p.rules[2].egress, vec![(1, d)]);
        assert!(p.rules.iter().all(|r| r.input_drops.is_empty()));
        let line = describe(&faults[0], "slow", p.how[0].as_ref().unwrap());
        assert_eq!(
            line,
            "latency +20.0 ms on inst2's links in \"slow\": tc netem in the network \
             namespaces of inst1, inst2, inst3 (at each sender)"
        );
    }

    #[test]
    fn without_netem_a_delay_stays_with_the_instances_and_a_loss_goes_to_iptables() {
        let faults = [
            latency(LinkTarget::Link { from: 1, to: 2 }, 20),
            loss(LinkTarget::Instance(2), 30, 0),
            bandwidth(LinkTarget::Link { from: 2, to: 1 }, 10),
            Fault::Kill { instance: 3, at: 0 },
        ];
        let p = plan(&faults, 3, Ok(&NO_NETEM));
        assert_eq!(
            p.how[0],
            Some(How::Instances("this kernel has no sch_netem".into()))
        );
        assert_eq!(
            p.how[1],
            Some(How::Kernel {
                mechanism: Mechanism::Iptables,
                namespaces: vec![0, 1, 2]
            })
        );
        assert_eq!(
            p.how[2],
            Some(How::Kernel {
                mechanism: Mechanism::Tbf,
                namespaces: vec![1]
            })
        );
        assert_eq!(p.how[3], None);
        assert_eq!(p.kernel_indices(), vec![1, 2]);
        // The loss: inst2 drops what inst1 and inst3 send it, and they drop
        // what it sends them.
        assert_eq!(p.rules[1].input_drops, vec![(0, 300_000), (2, 300_000)]);
        assert_eq!(p.rules[0].input_drops, vec![(1, 300_000)]);
        assert_eq!(p.rules[2].input_drops, vec![(1, 300_000)]);
        // The rate: inst2 -> inst1 only; no delay anywhere.
        let r = Shape {
            rate_bps: Some(10_000_000),
            ..Shape::default()
        };
        assert_eq!(p.rules[1].egress, vec![(0, r)]);
        assert!(p.rules[0].egress.is_empty() && p.rules[2].egress.is_empty());
        assert_eq!(
            describe(&faults[1], "lossy", p.how[1].as_ref().unwrap()),
            "loss of 30 % on inst2's links in \"lossy\": iptables statistic DROP in the \
             network namespaces of inst1, inst2, inst3 (at each receiver's INPUT)"
        );
        assert_eq!(
            describe(&faults[2], "narrow", p.how[2].as_ref().unwrap()),
            "bandwidth 10 Mbit/s on inst2->inst1 in \"narrow\": tc tbf in inst2's network \
             namespace (at each sender)"
        );
        assert_eq!(
            describe(&faults[0], "slow", p.how[0].as_ref().unwrap()),
            "latency +20.0 ms on inst1->inst2 in \"slow\": by the instances (this kernel has \
             no sch_netem)"
        );
    }

    #[test]
    fn a_correlated_loss_without_netem_and_a_cluster_the_kernel_cannot_reach_stay_with_the_instances()
     {
        let faults = [loss(LinkTarget::All, 5, 25)];
        let p = plan(&faults, 2, Ok(&NO_NETEM));
        assert!(matches!(&p.how[0], Some(How::Instances(w)) if w.contains("no correlation")));
        assert!(!p.has_rules() && p.kernel_indices().is_empty());
        let p = plan(&faults, 2, Err("inst1 and inst2 share a network namespace"));
        assert_eq!(
            p.how[0],
            Some(How::Instances(
                "inst1 and inst2 share a network namespace".into()
            ))
        );
        assert!(!p.has_rules());
        // With netem, the correlation is netem's.
        let p = plan(&faults, 2, Ok(&ALL));
        let s = p.rules[0].egress[0].1;
        assert_eq!((s.loss_ppm, s.correlation_ppm), (50_000, 250_000));
    }

    #[test]
    fn faults_on_one_link_add_up_as_the_model_adds_them() {
        let faults = [
            latency(LinkTarget::All, 5),
            latency(LinkTarget::Instance(1), 20),
            loss(LinkTarget::Link { from: 1, to: 2 }, 10, 0),
            bandwidth(LinkTarget::Instance(1), 100),
        ];
        let p = plan(&faults, 2, Ok(&ALL));
        assert_eq!(
            p.rules[0].egress,
            vec![(
                1,
                Shape {
                    delay_ns: 25_000_000,
                    jitter_ns: 0,
                    loss_ppm: 100_000,
                    correlation_ppm: 0,
                    rate_bps: Some(100_000_000)
                }
            )]
        );
        assert_eq!(p.rules[1].egress[0].1.loss_ppm, 0);
    }

    fn route(dev: &str, last: u8, port: u16) -> Route {
        Route {
            dev: dev.into(),
            mtu: 1500,
            dst: Ipv4Addr::new(10, 214, 3, last),
            port,
        }
    }

    #[test]
    fn the_tc_batch_classifies_each_peer_by_address_and_port_under_an_htb_root_of_ours() {
        let delay = Shape {
            delay_ns: 20_000_000,
            jitter_ns: 5_000_000,
            loss_ppm: 300_000,
            correlation_ppm: 0,
            rate_bps: Some(10_000_000),
        };
        let rate = Shape {
            rate_bps: Some(1_000_000_000),
            ..Shape::default()
        };
        let b = tc_batches(&[
            (delay, route("eth1", 12, 7102)),
            (rate, route("eth1", 13, 7103)),
            (delay, route("eth2", 14, 7104)),
        ])
        .unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].0, "eth1");
        assert_eq!(
            b[0].1,
            "qdisc add dev eth1 root handle fab: htb default 0 direct_qlen 100000\n\
             class add dev eth1 parent fab: classid fab:2 htb rate 100gbit quantum 60000\n\
             qdisc add dev eth1 parent fab:2 handle 100: netem limit 100000 delay 20000us 5000us loss 30.0000%\n\
             qdisc add dev eth1 parent 100:1 handle 200: tbf rate 10000000bit burst 16384 limit 4194304\n\
             class add dev eth1 parent fab: classid fab:3 htb rate 100gbit quantum 60000\n\
             qdisc add dev eth1 parent fab:3 handle 101: tbf rate 1000000000bit burst 1250000 limit 4194304\n\
             filter add dev eth1 parent fab: protocol ip prio 1 u32 match ip dst 10.214.3.12/32 match ip dport 7102 0xffff flowid fab:2\n\
             filter add dev eth1 parent fab: protocol ip prio 1 u32 match ip dst 10.214.3.13/32 match ip dport 7103 0xffff flowid fab:3\n"
        );
        assert!(
            b[1].1
                .contains("match ip dst 10.214.3.14/32 match ip dport 7104")
        );
        // A loopback device's packets are 64 KiB: the bucket holds one.
        let lo = Route {
            mtu: 65_536,
            ..route("lo", 2, 7100)
        };
        let b = tc_batches(&[(rate, lo)]).unwrap();
        assert!(b[0].1.contains("tbf rate 1000000000bit burst 1250000"));
        let slow = Shape {
            rate_bps: Some(1_000_000),
            ..Shape::default()
        };
        let lo = Route {
            mtu: 65_536,
            ..route("lo", 2, 7100)
        };
        let b = tc_batches(&[(slow, lo)]).unwrap();
        assert!(
            b[0].1.contains("tbf rate 1000000bit burst 65600 "),
            "{}",
            b[0].1
        );
    }

    #[test]
    fn the_drop_rules_live_in_a_chain_of_ours_hooked_into_input_once() {
        let s = iptables_set(&[DropRule {
            src: Ipv4Addr::new(10, 214, 3, 11),
            dst: Ipv4Addr::new(10, 214, 3, 12),
            port: 7102,
            ppm: 300_000,
        }]);
        assert!(s.contains(
            "iptables -w 5 -A FUSIONLAB-LOSS -p tcp -s 10.214.3.11/32 -d 10.214.3.12/32 \
             --dport 7102 -m statistic --mode random --probability 0.300000 -j DROP"
        ));
        assert!(s.contains("-C INPUT -j FUSIONLAB-LOSS 2>/dev/null || iptables -w 5 -I INPUT"));
        let c = iptables_clear();
        assert!(c.contains("-D INPUT -j FUSIONLAB-LOSS") && c.contains("-X FUSIONLAB-LOSS"));
        assert!(!c.contains("-F INPUT") && !c.contains("-P "));
    }

    #[test]
    fn a_partition_drops_every_segment_of_the_links_it_cuts() {
        use fusion_scenario::Direction;
        let cut = |direction| Fault::Partition {
            target: LinkTarget::Instance(3),
            direction,
        };
        // Both ways: inst3 drops what inst1 and inst2 send it, they drop
        // what it sends them; inst1 <-> inst2 untouched.
        let p = plan(&[cut(Direction::Both)], 3, Ok(&NO_NETEM));
        assert_eq!(
            p.how[0],
            Some(How::Kernel {
                mechanism: Mechanism::Iptables,
                namespaces: vec![0, 1, 2]
            })
        );
        assert_eq!(
            p.rules[2].input_drops,
            vec![(0, DROP_ALL_PPM), (1, DROP_ALL_PPM)]
        );
        assert_eq!(p.rules[0].input_drops, vec![(2, DROP_ALL_PPM)]);
        assert_eq!(p.rules[1].input_drops, vec![(2, DROP_ALL_PPM)]);
        assert!(p.rules.iter().all(|r| r.egress.is_empty()));
        assert_eq!(
            describe(&cut(Direction::Both), "split", p.how[0].as_ref().unwrap()),
            "partition of inst3's links in \"split\": iptables DROP in the network \
             namespaces of inst1, inst2, inst3 (at each receiver's INPUT)"
        );
        // Into inst3 only: only inst3 drops.
        let p = plan(&[cut(Direction::To)], 3, Ok(&NO_NETEM));
        assert_eq!(
            p.rules[2].input_drops,
            vec![(0, DROP_ALL_PPM), (1, DROP_ALL_PPM)]
        );
        assert!(p.rules[0].input_drops.is_empty() && p.rules[1].input_drops.is_empty());
        // Without iptables the instances cut it.
        let none = Offers {
            iptables_statistic: false,
            ..NO_NETEM
        };
        let p = plan(&[cut(Direction::Both)], 3, Ok(&none));
        assert!(matches!(&p.how[0], Some(How::Instances(why)) if why.contains("iptables")));
        assert!(!p.has_rules());
        // A cut link's rule drops every segment, with no random match.
        let s = iptables_set(&[DropRule {
            src: Ipv4Addr::new(10, 214, 3, 11),
            dst: Ipv4Addr::new(10, 214, 3, 13),
            port: 7103,
            ppm: DROP_ALL_PPM,
        }]);
        assert!(s.contains(
            "-A FUSIONLAB-LOSS -p tcp -s 10.214.3.11/32 -d 10.214.3.13/32 --dport 7103 -j DROP\n"
        ));
    }
}
