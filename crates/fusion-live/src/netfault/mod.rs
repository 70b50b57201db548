//! A live run's network faults carried out by the kernel, as Chaos Mesh's
//! chaos-daemon and Pumba do: when every instance has a network namespace
//! of its own that the runner can enter (a container, given by its id; a
//! process on a "host" made of a network namespace, given by its pid), a
//! phase's `latency` (with its jitter) and `loss` become `tc netem` at each
//! sender's egress, its `bandwidth` `tc tbf`, each under an htb root that
//! singles out the peer's traffic by address and port; where the kernel has
//! no netem, a loss becomes `iptables -m statistic ... -j DROP` at each
//! receiver's INPUT, and a latency stays with the instances (the scenario's
//! network model in each receiving host, as without namespaces). The kernel
//! is probed once per process. The rules go when the phase ends, and on any
//! exit of the runner's own (dropped): each namespace is held open while it
//! has rules, so that they are removed from the one they were set in.
//!
//! Every network fault gets a line in the phase's alert log saying how it
//! was carried out.

mod exec;
pub mod plan;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use fusion_scenario::{Fault, Phase};

pub use exec::offers;
pub use plan::{How, Mechanism, Offers, PhasePlan};

use exec::Netns;
use plan::{DropRule, NsRules, Route};

/// Where an instance's network namespace is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NsRef {
    /// The namespace of this process (on this machine).
    Pid(u32),
    /// The namespace of this container's process (`docker inspect`).
    Container(String),
}

impl NsRef {
    fn open(&self) -> Result<Netns, String> {
        match self {
            NsRef::Pid(pid) => Netns::of_pid(*pid),
            NsRef::Container(id) => Netns::of_pid(exec::container_pid(id)?),
        }
    }
}

/// One instance as the kernel's faults reach it.
#[derive(Clone, Debug)]
pub struct Member {
    /// None: not known (the kernel carries out nothing on this cluster).
    pub ns: Option<NsRef>,
    /// Its interconnect address, as its peers connect to it.
    pub interconnect: String,
}

/// A phase begun: the indices of its faults the kernel carries out, and a
/// line per network fault, under the instance (0-based) it is about.
#[derive(Debug, Default)]
pub struct Begun {
    pub kernel: Vec<u32>,
    pub lines: Vec<(usize, String)>,
}

/// The network faults of a variant's phases, carried out in the instances'
/// namespaces where the kernel can.
pub struct NetFaults {
    members: Vec<Member>,
    addrs: Vec<SocketAddrV4>,
    /// What the kernel offers, or why it carries out nothing here.
    offers: Result<Offers, String>,
    /// The rules of the phase under way, by namespace.
    rules: Vec<NsRules>,
    /// The namespaces rules were set in (held open until removed).
    held: Vec<Option<Netns>>,
}

impl NetFaults {
    /// For these instances (in order). Checks that each has a namespace of
    /// its own the runner can open, and probes the kernel (once per
    /// process) only then.
    pub fn new(members: Vec<Member>) -> NetFaults {
        let n = members.len();
        let (addrs, offers) = match reach(&members) {
            Ok(addrs) => (addrs, offers()),
            Err(why) => (Vec::new(), Err(why)),
        };
        NetFaults {
            members,
            addrs,
            offers,
            rules: vec![NsRules::default(); n],
            held: (0..n).map(|_| None).collect(),
        }
    }

    /// Why the kernel carries out no fault on this cluster, if it does not.
    pub fn unavailable(&self) -> Option<&str> {
        self.offers.as_ref().err().map(String::as_str)
    }

    /// Set the kernel's rules of `phase` (after removing the last phase's).
    /// If they cannot be set, what was set is removed and every fault of
    /// the phase is the instances', the line saying why.
    pub fn begin(&mut self, phase: &Phase) -> Result<Begun, String> {
        self.end()?;
        let n = self.members.len();
        let mut p = plan::plan(
            &phase.faults,
            n,
            self.offers.as_ref().map_err(String::as_str),
        );
        if p.has_rules() {
            self.rules = p.rules.clone();
            if let Err(e) = (0..n).try_for_each(|i| self.set(i)) {
                let undone = self.end();
                let why = match undone {
                    Ok(()) => format!("the kernel's rules could not be set: {e}"),
                    Err(u) => return Err(format!("{e}; and removing them: {u}")),
                };
                tracing::warn!("{why}");
                p = plan::plan(&phase.faults, n, Err(&why));
            }
        }
        let lines: Vec<(usize, String)> = phase
            .faults
            .iter()
            .zip(&p.how)
            .filter_map(|(f, how)| {
                let how = how.as_ref()?;
                Some((plan::line_instance(f), plan::describe(f, &phase.name, how)))
            })
            .collect();
        for (_, l) in &lines {
            tracing::info!(fault = %l, "network fault");
        }
        Ok(Begun {
            kernel: p.kernel_indices(),
            lines,
        })
    }

    /// Remove every rule set (the phase ended). Err: a rule that could not
    /// be removed, named.
    pub fn end(&mut self) -> Result<(), String> {
        let mut errors = Vec::new();
        for (i, held) in self.held.iter_mut().enumerate() {
            if let Some(ns) = held.take()
                && let Err(e) = ns.clear()
            {
                errors.push(format!("inst{}: {e}", i + 1));
            }
        }
        self.rules.iter_mut().for_each(|r| *r = NsRules::default());
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "removing the kernel's network faults failed: {}",
                errors.join("; ")
            ))
        }
    }

    /// Instance `i` was started again (a container started again has a new
    /// namespace): set its rules again where it is now.
    pub fn restarted(&mut self, i: usize) -> Result<(), String> {
        if let Some(ns) = self.held.get_mut(i).and_then(Option::take) {
            // The old namespace (gone with the old process if nothing else
            // holds it): what is left of ours there goes.
            ns.clear()
                .map_err(|e| format!("inst{}: the old namespace: {e}", i + 1))?;
        }
        self.set(i)
    }

    /// Set instance `i`'s rules in its namespace.
    fn set(&mut self, i: usize) -> Result<(), String> {
        let rules = match self.rules.get(i) {
            Some(r) if !r.is_empty() => r.clone(),
            _ => return Ok(()),
        };
        let who = format!("inst{}", i + 1);
        let ns = self.open(i)?;
        // What a run killed before left, first.
        ns.clear().map_err(|e| format!("{who}: {e}"))?;
        let peers: Vec<Ipv4Addr> = rules
            .egress
            .iter()
            .map(|&(b, _)| *self.addr(b).ip())
            .collect();
        let routes = if peers.is_empty() {
            Vec::new()
        } else {
            ns.routes(&peers).map_err(|e| format!("{who}: {e}"))?
        };
        let mtus = ns.mtus().map_err(|e| format!("{who}: {e}"))?;
        let egress: Vec<(plan::Shape, Route)> = rules
            .egress
            .iter()
            .zip(routes)
            .map(|(&(b, shape), (dev, _))| {
                let to = self.addr(b);
                let mtu = mtus.get(&dev).copied().unwrap_or(1500);
                let route = Route {
                    dev,
                    mtu,
                    dst: *to.ip(),
                    port: to.port(),
                };
                (shape, route)
            })
            .collect();
        let batches = plan::tc_batches(&egress).map_err(|e| format!("{who}: {e}"))?;
        let mut drops = Vec::new();
        let me = self.addr(i);
        for &(a, ppm) in &rules.input_drops {
            // What the peer's packets to us carry as their source.
            let src = self
                .open(a)?
                .routes(&[*me.ip()])
                .map_err(|e| format!("inst{}: {e}", a + 1))?;
            let src = src
                .first()
                .map(|(_, s)| *s)
                .ok_or_else(|| format!("inst{}: no route to {who}", a + 1))?;
            drops.push(DropRule {
                src,
                dst: *me.ip(),
                port: me.port(),
                ppm,
            });
        }
        // Held before anything is set, so that a rule set halfway goes too.
        let ns = self.held[i].insert(ns);
        ns.set(&batches, &drops).map_err(|e| format!("{who}: {e}"))
    }

    fn open(&self, i: usize) -> Result<Netns, String> {
        let who = format!("inst{}", i + 1);
        self.members
            .get(i)
            .and_then(|m| m.ns.as_ref())
            .ok_or_else(|| format!("{who}: no network namespace known"))?
            .open()
            .map_err(|e| format!("{who}: {e}"))
    }

    fn addr(&self, i: usize) -> SocketAddrV4 {
        self.addrs
            .get(i)
            .copied()
            .unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
    }
}

impl Drop for NetFaults {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            tracing::error!("{e}");
        }
    }
}

/// Each instance's interconnect address, if every instance has a network
/// namespace of its own the runner can open; else why not.
fn reach(members: &[Member]) -> Result<Vec<SocketAddrV4>, String> {
    let mut ids: Vec<u64> = Vec::with_capacity(members.len());
    let mut addrs = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        let who = format!("inst{}", i + 1);
        let ns = m.ns.as_ref().ok_or_else(|| {
            format!("{who}'s network namespace is not known: the cluster file names no pid or container for it")
        })?;
        let addr = match m.interconnect.parse::<SocketAddr>() {
            Ok(SocketAddr::V4(a)) => a,
            _ => {
                return Err(format!(
                    "{who}'s interconnect address {} is not an IPv4 address and port",
                    m.interconnect
                ));
            }
        };
        let id = ns
            .open()
            .and_then(|n| n.id())
            .map_err(|e| format!("{who}: {e}"))?;
        if let Some(j) = ids.iter().position(|&x| x == id) {
            return Err(format!("inst{} and {who} share a network namespace", j + 1));
        }
        ids.push(id);
        addrs.push(addr);
    }
    Ok(addrs)
}

/// Whether any phase of `phases` has a network fault (else no namespace is
/// looked at and the kernel is not probed).
pub fn any_network_fault(phases: &[Phase]) -> bool {
    phases.iter().any(|p| p.faults.iter().any(plan::is_network))
}

/// The [`Member`]s of a cluster file's first `n` instances.
pub fn members_of(c: &crate::cluster::ClusterFile, n: usize) -> Vec<Member> {
    c.instances
        .iter()
        .take(n)
        .map(|m| Member {
            ns: if !m.container.is_empty() {
                Some(NsRef::Container(m.container.clone()))
            } else if m.pid != 0 {
                Some(NsRef::Pid(m.pid))
            } else {
                None
            },
            interconnect: m.interconnect.clone(),
        })
        .collect()
}

/// Is this a fault the kernel carries out when it can (a network fault)?
pub fn is_network(f: &Fault) -> bool {
    plan::is_network(f)
}

/// The lines of a phase's alert log that say how its network faults were
/// carried out (each begins with the fault's description).
pub fn carried_out<'a>(phase: &Phase, alerts: &'a [fusion_report::AlertEntry]) -> Vec<&'a str> {
    let heads: Vec<String> = phase
        .faults
        .iter()
        .filter(|f| plan::is_network(f))
        .map(|f| format!("{}: ", fusion_report::chaos::describe_fault(f, &phase.name)))
        .collect();
    alerts
        .iter()
        .map(|a| a.line.as_str())
        .filter(|l| heads.iter().any(|h| l.starts_with(h.as_str())))
        .collect()
}
