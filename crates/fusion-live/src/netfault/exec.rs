//! The commands behind [`super::NetFaults`]: the kernel probed once (in a
//! network namespace of its own, gone with the probe), an instance's
//! namespace held open while it has rules, and `tc` / `iptables` run in it
//! through `nsenter`. Every command has a deadline.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;
use std::time::Duration;

use super::plan::{self, DropRule, Offers, ROOT_HANDLE};

/// How long one command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// Run `argv` (with `stdin` written to it) to its end, at most `timeout`.
/// Ok: its stdout.
pub(crate) fn run(
    argv: &[String],
    stdin: Option<&str>,
    timeout: Duration,
) -> Result<String, String> {
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    crate::command::run(&argv, &[], stdin, timeout)
}

fn argv(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| (*s).to_string()).collect()
}

/// What the kernel offers, probed once per process (in a network
/// namespace made for the probe, gone with it); Err: why nothing can be
/// probed here (not root, no `unshare`, no `tc`).
pub fn offers() -> Result<Offers, String> {
    static OFFERS: OnceLock<Result<Offers, String>> = OnceLock::new();
    OFFERS.get_or_init(probe).clone()
}

const PROBE: &str = "\
command -v tc >/dev/null || { echo no-tc; exit 0; }
command -v nsenter >/dev/null || { echo no-nsenter; exit 0; }
ip link set lo up 2>/dev/null
if tc qdisc add dev lo root handle 1: netem delay 1ms 2>/dev/null; then echo netem; tc qdisc del dev lo root; fi
if tc qdisc add dev lo root handle 1: tbf rate 1mbit burst 70000 limit 100000 2>/dev/null; then echo tbf; tc qdisc del dev lo root; fi
if tc qdisc add dev lo root handle fab: htb default 0 2>/dev/null \
   && tc class add dev lo parent fab: classid fab:2 htb rate 1gbit 2>/dev/null \
   && tc filter add dev lo parent fab: protocol ip prio 1 u32 match ip dst 127.0.0.2/32 match ip dport 7 0xffff flowid fab:2 2>/dev/null
then echo htb_u32; fi
if iptables -w 5 -A INPUT -p tcp -m statistic --mode random --probability 0.5 -j DROP 2>/dev/null; then echo iptables_statistic; fi
";

fn probe() -> Result<Offers, String> {
    let out = run(
        &argv(&["unshare", "--net", "sh", "-c", PROBE]),
        None,
        COMMAND_TIMEOUT,
    )
    .map_err(|e| format!("cannot make a network namespace to probe the kernel: {e}"))?;
    let has = |w: &str| out.lines().any(|l| l.trim() == w);
    if has("no-tc") {
        return Err("`tc` (iproute2) is not installed here".into());
    }
    if has("no-nsenter") {
        return Err("`nsenter` (util-linux) is not installed here".into());
    }
    Ok(Offers {
        netem: has("netem"),
        tbf: has("tbf"),
        htb_u32: has("htb_u32"),
        iptables_statistic: has("iptables_statistic"),
    })
}

/// The process id of a running container (`docker inspect`).
pub(crate) fn container_pid(id: &str) -> Result<u32, String> {
    let out = run(
        &argv(&["docker", "inspect", "--format", "{{.State.Pid}}", id]),
        None,
        COMMAND_TIMEOUT,
    )?;
    match out.trim().parse::<u32>() {
        Ok(0) => Err(format!("container {id} is not running")),
        Ok(pid) => Ok(pid),
        Err(_) => Err(format!("container {id}: no process id in {:?}", out.trim())),
    }
}

/// A network namespace held open (so that it is the same one, and still
/// there, when its rules are removed: a process that died or a container
/// started again has another).
pub(crate) struct Netns {
    file: std::fs::File,
    /// Where `nsenter --net=` finds it: this process's descriptor.
    path: String,
}

impl Netns {
    /// The namespace of process `pid`.
    pub(crate) fn of_pid(pid: u32) -> Result<Netns, String> {
        let file = std::fs::File::open(format!("/proc/{pid}/ns/net"))
            .map_err(|e| format!("cannot open the network namespace of process {pid}: {e}"))?;
        let path = format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd());
        Ok(Netns { file, path })
    }

    /// Its identity (the namespace's inode).
    pub(crate) fn id(&self) -> Result<u64, String> {
        self.file
            .metadata()
            .map(|m| m.ino())
            .map_err(|e| format!("a network namespace: {e}"))
    }

    fn argv(&self, cmd: &[&str]) -> Vec<String> {
        let mut a = vec!["nsenter".to_string(), format!("--net={}", self.path)];
        a.extend(cmd.iter().map(|s| (*s).to_string()));
        a
    }

    fn run(&self, cmd: &[&str], stdin: Option<&str>) -> Result<String, String> {
        run(&self.argv(cmd), stdin, COMMAND_TIMEOUT)
    }

    /// For each address: the device and source address this namespace
    /// reaches it by (`ip route get`), in order.
    pub(crate) fn routes(&self, to: &[Ipv4Addr]) -> Result<Vec<(String, Ipv4Addr)>, String> {
        let batch: String = to.iter().map(|a| format!("route get {a}\n")).collect();
        let out = self.run(&["ip", "-o", "-batch", "-"], Some(&batch))?;
        let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() != to.len() {
            return Err(format!(
                "`ip route get` answered {} lines for {} addresses:\n{out}",
                lines.len(),
                to.len()
            ));
        }
        lines
            .iter()
            .zip(to)
            .map(|(l, a)| parse_route(l).ok_or_else(|| format!("no route to {a}: {l:?}")))
            .collect()
    }

    /// Every device's MTU (`ip link`).
    pub(crate) fn mtus(&self) -> Result<HashMap<String, u32>, String> {
        let out = self.run(&["ip", "-o", "link", "show"], None)?;
        Ok(out.lines().filter_map(parse_mtu).collect())
    }

    /// Set the egress batches (`tc -batch`, one per device) and the drop
    /// rules.
    pub(crate) fn set(&self, tc: &[(String, String)], drops: &[DropRule]) -> Result<(), String> {
        for (_, batch) in tc {
            self.run(&["tc", "-batch", "-"], Some(batch))?;
        }
        if !drops.is_empty() {
            self.run(&["sh", "-c", &plan::iptables_set(drops)], None)?;
        }
        Ok(())
    }

    /// Remove what [`Netns::set`] set: every root qdisc with our handle
    /// and our iptables chain; nothing else.
    pub(crate) fn clear(&self) -> Result<(), String> {
        let out = self.run(&["tc", "qdisc", "show"], None)?;
        for dev in out.lines().filter_map(our_root) {
            self.run(&["tc", "qdisc", "del", "dev", dev, "root"], None)?;
        }
        self.run(&["sh", "-c", &plan::iptables_clear()], None)?;
        Ok(())
    }
}

/// `10.0.0.2 dev eth1 src 10.0.0.1 uid 0 \    cache` -> (eth1, 10.0.0.1).
fn parse_route(line: &str) -> Option<(String, Ipv4Addr)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |key: &str| {
        words
            .windows(2)
            .find(|w| w[0] == key)
            .map(|w| w[1].to_string())
    };
    Some((after("dev")?, after("src")?.parse().ok()?))
}

/// `2: eth0@if5: <...> mtu 1500 qdisc noqueue ...` -> (eth0, 1500).
fn parse_mtu(line: &str) -> Option<(String, u32)> {
    let mut words = line.split_whitespace();
    let _index = words.next()?;
    let name = words.next()?.trim_end_matches(':');
    let name = name.split('@').next()?.to_string();
    let words: Vec<&str> = words.collect();
    let mtu = words
        .windows(2)
        .find(|w| w[0] == "mtu")
        .and_then(|w| w[1].parse().ok())?;
    Some((name, mtu))
}

/// The device of a `tc qdisc show` line whose root qdisc is ours:
/// `qdisc htb fab: dev eth1 root refcnt 3 ...`.
fn our_root(line: &str) -> Option<&str> {
    let w: Vec<&str> = line.split_whitespace().collect();
    match w.as_slice() {
        ["qdisc", "htb", handle, "dev", dev, "root", ..] if *handle == ROOT_HANDLE => Some(dev),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_link_and_qdisc_lines_are_read_as_iproute2_prints_them() {
        assert_eq!(
            parse_route("10.250.9.2 dev kft-a src 10.250.9.1 uid 0 \\    cache "),
            Some(("kft-a".into(), Ipv4Addr::new(10, 250, 9, 1)))
        );
        assert_eq!(
            parse_route("local 127.0.0.1 dev lo src 127.0.0.1 uid 0 \\    cache <local> "),
            Some(("lo".into(), Ipv4Addr::LOCALHOST))
        );
        assert_eq!(
            parse_route("RTNETLINK answers: Network is unreachable"),
            None
        );
        assert_eq!(
            parse_mtu(
                "2: kft-a@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP \
                 mode DEFAULT group default qlen 1000\\    link/ether 6e:b6:d2:69:4a:45"
            ),
            Some(("kft-a".into(), 1500))
        );
        assert_eq!(
            parse_mtu("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN"),
            Some(("lo".into(), 65536))
        );
        assert_eq!(
            our_root("qdisc htb fab: dev kft-a root refcnt 3 r2q 10 default 0"),
            Some("kft-a")
        );
        // Another's root qdisc, or ours below a root, is not removed.
        assert_eq!(our_root("qdisc htb 1: dev eth0 root refcnt 2 r2q 10"), None);
        assert_eq!(our_root("qdisc noqueue 0: dev lo root refcnt 2"), None);
        assert_eq!(
            our_root("qdisc tbf 100: dev eth0 parent fab:2 rate 10Mbit"),
            None
        );
    }
}
