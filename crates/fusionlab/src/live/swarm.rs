//! The scenario's `kill`, `pause` and `restart` faults on a Docker Swarm
//! stack (`run --live --cluster FILE --swarm STACK`, `chaos --live
//! --cluster FILE --swarm STACK`), carried out as Swarm and Docker do
//! them: `docker kill` of the instance's task container, then its service
//! scaled to 0 so that Swarm does not start it again before the scenario
//! asks; `docker pause` and `unpause`; a restart scales the service back
//! to 1 and waits for the new task to report healthy.
//!
//! The runner runs where a `docker` command reaches the engine of the
//! node the instance's task runs on: for `kill` and `pause`, that node's
//! own engine (a container, as Pumba runs, with the engine's socket and
//! the stack's attachable network; docs/deploy.md). Partitions are
//! carried out by the instances themselves, as on several hosts. Every
//! `docker` command has a deadline.

use std::time::{Duration, Instant};

use fusion_live::cluster::ClusterFile;
use fusion_live::lives::ProcessControl;
use fusion_live::netfault::{Member, NsRef};

/// One `docker` command, stopped at its deadline.
fn docker(args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Result<String, String> {
    fusion_live::command::run(args, env, None, timeout)
}

/// How long one `docker` command may take.
const DOCKER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a restarted instance's task may take to report healthy
/// (Swarm's restart delay, the image's start and a healthcheck or two).
const HEALTHY_WITHIN: Duration = Duration::from_secs(90);

/// The instances of one stack, named `{stack}_inst{N}` as
/// `fusionlab compose` writes them.
pub struct SwarmControl {
    stack: String,
    /// Each instance's interconnect port, as the cluster file names it.
    ports: Vec<u16>,
}

impl SwarmControl {
    /// Checks that the engine is a swarm manager and that every instance's
    /// service exists.
    pub fn new(stack: &str, cluster: &ClusterFile) -> Result<SwarmControl, String> {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
        if stack.is_empty() || !stack.chars().all(ok) {
            return Err(format!(
                "--swarm {stack:?}: a stack name is letters, digits, '_', '-' and '.'"
            ));
        }
        let ports = cluster
            .instances
            .iter()
            .map(|m| {
                m.interconnect
                    .rsplit_once(':')
                    .and_then(|(_, p)| p.parse::<u16>().ok())
                    .ok_or_else(|| {
                        format!(
                            "inst{}: interconnect {:?} has no port",
                            m.id, m.interconnect
                        )
                    })
            })
            .collect::<Result<Vec<u16>, String>>()?;
        let control = SwarmControl {
            stack: stack.to_string(),
            ports,
        };
        for inst in 0..cluster.instances.len() {
            let service = control.service(inst);
            docker(
                &[
                    "docker", "service", "inspect", "--format", "{{.ID}}", &service,
                ],
                &[],
                DOCKER_TIMEOUT,
            )
            .map_err(|e| format!("--swarm {stack}: no service {service} ({e})"))?;
        }
        Ok(control)
    }

    fn service(&self, inst: usize) -> String {
        format!("{}_inst{}", self.stack, inst + 1)
    }

    /// The container of instance `inst`'s task on this node, in `status`
    /// (`running`, `paused`). A task on another node is named, with why.
    fn container(&self, inst: usize, status: &str) -> Result<String, String> {
        let service = self.service(inst);
        let label = format!("label=com.docker.swarm.service.name={service}");
        let status_filter = format!("status={status}");
        let ids = docker(
            &[
                "docker",
                "ps",
                "-q",
                "--filter",
                &label,
                "--filter",
                &status_filter,
            ],
            &[],
            DOCKER_TIMEOUT,
        )?;
        if let Some(id) = ids.split_whitespace().next() {
            return Ok(id.to_string());
        }
        let nodes = docker(
            &[
                "docker",
                "service",
                "ps",
                "--filter",
                "desired-state=running",
                "--format",
                "{{.Node}}",
                &service,
            ],
            &[],
            DOCKER_TIMEOUT,
        )
        .unwrap_or_default();
        match nodes.split_whitespace().next() {
            Some(node) => Err(format!(
                "{service}: no {status} container on this node; its task runs on node {node} \
                 (run the runner on that node to carry out faults on it)"
            )),
            None => Err(format!("{service}: no {status} task")),
        }
    }

    /// Every instance whose service a `kill` left at 0 replicas scaled
    /// back to 1, not waited for: a run that ended with an instance
    /// down leaves the stack as it was deployed.
    pub fn restore(&self, instances: usize) -> Result<(), String> {
        for inst in 0..instances {
            let service = self.service(inst);
            let replicas = docker(
                &[
                    "docker",
                    "service",
                    "inspect",
                    "--format",
                    "{{.Spec.Mode.Replicated.Replicas}}",
                    &service,
                ],
                &[],
                DOCKER_TIMEOUT,
            )?;
            if replicas.trim() == "0" {
                self.scale(inst, 1)?;
            }
        }
        Ok(())
    }

    fn scale(&self, inst: usize, replicas: u8) -> Result<(), String> {
        let to = format!("{}={replicas}", self.service(inst));
        docker(
            &["docker", "service", "scale", "--detach", &to],
            &[],
            DOCKER_TIMEOUT,
        )
        .map(|_| ())
    }

    fn act(&self, inst: usize, verb: &str, status: &str) -> Result<(), String> {
        let id = self.container(inst, status)?;
        docker(&["docker", verb, &id], &[], DOCKER_TIMEOUT)
            .map(|_| ())
            .map_err(|e| format!("inst{}: {e}", inst + 1))
    }
}

impl SwarmControl {
    /// Instance `inst`'s task as the kernel's faults reach it: its
    /// container (its namespace, entered through the host's process table:
    /// the runner runs with `--pid host`) and its address on the stack's
    /// interconnect network.
    fn net_member(&self, inst: usize) -> Result<Member, String> {
        let id = self.container(inst, "running")?;
        let network = format!("{}_interconnect", self.stack);
        let format = format!("{{{{(index .NetworkSettings.Networks \"{network}\").IPAddress}}}}");
        let ip = docker(
            &["docker", "inspect", "--format", &format, &id],
            &[],
            DOCKER_TIMEOUT,
        )?;
        let ip: std::net::Ipv4Addr = ip.trim().parse().map_err(|_| {
            format!(
                "inst{}: no IPv4 address on {network}: {:?}",
                inst + 1,
                ip.trim()
            )
        })?;
        let port = self
            .ports
            .get(inst)
            .ok_or_else(|| format!("inst{}: not in the cluster file", inst + 1))?;
        Ok(Member {
            ns: Some(NsRef::Container(id)),
            interconnect: format!("{ip}:{port}"),
        })
    }
}

impl ProcessControl for SwarmControl {
    /// The tasks' containers and overlay addresses, when every one of the
    /// first `n` runs on this node; else the cluster file's names (and the
    /// kernel carries out nothing, the alert log saying why).
    fn net_members(&self, n: usize) -> Option<Vec<Member>> {
        match (0..n).map(|i| self.net_member(i)).collect() {
            Ok(members) => Some(members),
            Err(e) => {
                tracing::warn!("--swarm: network faults stay with the instances: {e}");
                None
            }
        }
    }

    fn kill(&self, inst: usize) -> Result<(), String> {
        self.act(inst, "kill", "running")?;
        // Down until the scenario restarts it: Swarm would start a new task
        // after its restart delay otherwise.
        self.scale(inst, 0)
            .map_err(|e| format!("inst{}: held down: {e}", inst + 1))
    }

    fn pause(&self, inst: usize) -> Result<(), String> {
        self.act(inst, "pause", "running")
    }

    fn resume(&self, inst: usize) -> Result<(), String> {
        self.act(inst, "unpause", "paused")
    }

    fn restart(&self, inst: usize) -> Result<(), String> {
        self.scale(inst, 1)
            .map_err(|e| format!("inst{}: restart: {e}", inst + 1))?;
        let end = Instant::now() + HEALTHY_WITHIN;
        let service = self.service(inst);
        let label = format!("label=com.docker.swarm.service.name={service}");
        loop {
            let healthy = docker(
                &[
                    "docker",
                    "ps",
                    "-q",
                    "--filter",
                    &label,
                    "--filter",
                    "health=healthy",
                ],
                &[],
                DOCKER_TIMEOUT,
            )?;
            if !healthy.trim().is_empty() {
                return Ok(());
            }
            if Instant::now() > end {
                return Err(format!(
                    "{service}: no healthy task on this node {} s after it was scaled to 1",
                    HEALTHY_WITHIN.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_name_that_is_no_name_is_refused_before_docker_runs() {
        let cluster: ClusterFile =
            toml::from_str(include_str!("../../../../cluster/stack-cluster.toml")).expect("parses");
        for bad in ["", "a b", "x;rm", "st/ack"] {
            let e = SwarmControl::new(bad, &cluster).err().expect("refused");
            assert!(e.contains("a stack name is"), "{e}");
        }
    }

    #[test]
    fn services_are_named_as_compose_writes_them() {
        let c = SwarmControl {
            stack: "fl".into(),
            ports: vec![7101, 7102, 7103],
        };
        assert_eq!(c.service(0), "fl_inst1");
        assert_eq!(c.service(2), "fl_inst3");
    }
}
