//! "Hosts" made of network namespaces this test creates: one namespace per
//! host with an `eth0` (one end of a veth pair) on a private subnet, the
//! other ends on a bridge in a namespace of its own (the switch). Nothing
//! is created outside these namespaces; dropping [`Hosts`] deletes them
//! with everything in them (links, bridge, qdiscs, firewall rules).

use std::process::{Command, Stdio};

/// The hosts of one test, deleted when dropped.
pub struct Hosts {
    /// The switch's namespace, then each host's.
    names: Vec<String>,
    subnet: u8,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

impl Hosts {
    /// `n` hosts on one switch, their namespaces named after this process
    /// and `tag` (one per test). Err: this machine does not let the test
    /// make them (not root, no iproute2, no veth or bridge).
    pub fn create(tag: &str, n: usize) -> Result<Hosts, String> {
        let pid = std::process::id();
        let tag = format!("{pid}{tag}");
        let mut hosts = Hosts {
            names: Vec::new(),
            // Inside the test's namespaces only; varied so that two test
            // runs' hosts never meet (they could not anyway).
            subnet: u8::try_from(pid % 200).unwrap_or(0) + 20,
        };
        let switch = format!("fl{tag}-sw");
        ip(&["netns", "add", &switch])?;
        hosts.names.push(switch.clone());
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &switch, "link", "set", "br0", "up"])?;
        for h in 0..n {
            let name = format!("fl{tag}-h{h}");
            ip(&["netns", "add", &name])?;
            hosts.names.push(name.clone());
            let port = format!("p{h}");
            ip(&[
                "link", "add", "eth0", "netns", &name, "type", "veth", "peer", "name", &port,
                "netns", &switch,
            ])?;
            ip(&["-n", &switch, "link", "set", &port, "master", "br0", "up"])?;
            let cidr = format!("{}/24", hosts.ip(h));
            ip(&["-n", &name, "addr", "add", &cidr, "dev", "eth0"])?;
            ip(&["-n", &name, "link", "set", "eth0", "up"])?;
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
        }
        Ok(hosts)
    }

    /// Host `h`'s address.
    pub fn ip(&self, h: usize) -> String {
        format!("10.77.{}.{}", self.subnet, 10 + h)
    }

    /// Host `h`'s namespace.
    pub fn name(&self, h: usize) -> &str {
        &self.names[h + 1]
    }

    /// `args` run on host `h` (`ip netns exec`: the same process id).
    pub fn command(&self, h: usize, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.name(h)]).args(args);
        c
    }

    /// What `args` print on host `h` (empty if they fail).
    pub fn output(&self, h: usize, args: &[&str]) -> String {
        self.command(h, args)
            .stdin(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for n in self.names.iter().rev() {
            let _ = ip(&["netns", "delete", n]);
        }
    }
}
