//! One chaos run's compose cluster (`fusionlab chaos --compose`): the
//! store and instance services of `cluster/docker-compose.yml` started
//! under a project of their own, on two networks this module has compose
//! create (the services' network for the store and admin calls, and an
//! `internal` interconnect network the instances alone share), then the
//! faults carried out on the containers and the project brought down with
//! its networks and volume.
//!
//! The runner stays on the host and reaches the containers by address (a
//! fixed one each, in subnets no other Docker network uses), so the
//! addresses survive a container started again. Every `docker` command
//! has a deadline.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fusion_live::cluster::{ClusterFile, InstanceMember, Member};
use fusion_live::lives::ProcessControl;

/// How long one `docker` command may take (a `compose up` that waits for
/// the healthchecks takes the longest).
const DOCKER_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a started container may take to report healthy.
const HEALTHY_WITHIN: Duration = Duration::from_secs(60);
/// The store's and the instances' ports, as docker-compose.yml has them.
const STORE_PORT: u16 = 7000;
const INTERCONNECT_PORT: u16 = 7100;
const ADMIN_PORT: u16 = 7200;
/// Subnets tried for a project: 10.213.k.0/24 (services) and
/// 10.214.k.0/24 (interconnect), k unused by any other Docker network.
const SUBNET_TRIES: u32 = 250;

/// Where the compose files and the image come from.
#[derive(Clone, Debug)]
pub struct ComposeOpts {
    /// `cluster/docker-compose.yml` (its store and instN services).
    pub file: PathBuf,
    /// The image every service runs (FUSIONLAB_IMAGE).
    pub image: String,
}

/// A compose project under way: down (containers, networks, volume) when
/// dropped.
pub struct Project {
    name: String,
    /// `docker-compose` or `docker compose`.
    program: Vec<&'static str>,
    opts: ComposeOpts,
    /// Holds the override file and, for a failed run, the services' logs.
    dir: tempfile::TempDir,
    token: String,
    subnet: u8,
    instances: usize,
    /// Container id of instN (0-based).
    ids: Vec<String>,
    /// (phase, instance) cut off from the interconnect for the phase.
    cuts: Vec<(usize, usize)>,
}

fn services_ip(k: u8, host: u8) -> String {
    format!("10.213.{k}.{host}")
}

fn interconnect_ip(k: u8, host: u8) -> String {
    format!("10.214.{k}.{host}")
}

/// The instance's host number in both subnets (11 for inst1).
fn host_of(inst: usize) -> u8 {
    u8::try_from(inst + 11).unwrap_or(u8::MAX)
}

/// Run `docker ARGS` with `env`, at most `timeout`. Ok: its stdout.
pub fn docker(args: &[&str], env: &[(&str, &str)], timeout: Duration) -> Result<String, String> {
    fusion_live::command::run(args, env, None, timeout)
}

/// Whether a Docker engine answers (`docker info`).
pub fn engine_answers() -> Result<(), String> {
    docker(
        &["docker", "info", "--format", "{{.ServerVersion}}"],
        &[],
        Duration::from_secs(20),
    )
    .map(|_| ())
}

/// The compose program: `docker-compose` (1.x) or `docker compose` (2.x).
fn compose_program() -> Result<Vec<&'static str>, String> {
    let quick = Duration::from_secs(20);
    if docker(&["docker-compose", "version"], &[], quick).is_ok() {
        return Ok(vec!["docker-compose"]);
    }
    if docker(&["docker", "compose", "version"], &[], quick).is_ok() {
        return Ok(vec!["docker", "compose"]);
    }
    Err("neither `docker-compose` nor `docker compose` runs".into())
}

/// The subnets every Docker network uses now.
fn subnets_in_use() -> Result<String, String> {
    let ids = docker(
        &["docker", "network", "ls", "-q"],
        &[],
        Duration::from_secs(20),
    )?;
    let mut args = vec!["docker", "network", "inspect", "--format"];
    args.push("{{range .IPAM.Config}}{{.Subnet}} {{end}}");
    args.extend(ids.split_whitespace());
    docker(&args, &[], Duration::from_secs(20))
}

/// The override that gives the project its networks and every service a
/// fixed address: the interconnect network `internal` (no way out), the
/// instances on both.
fn override_yaml(k: u8, instances: usize, journal: &Path) -> String {
    let mut y = String::new();
    let _ = writeln!(y, "# Written by fusionlab chaos --compose for one run.");
    let _ = writeln!(y, "networks:\n  default:\n    ipam:\n      config:");
    let _ = writeln!(y, "        - subnet: 10.213.{k}.0/24");
    let _ = writeln!(
        y,
        "  interconnect:\n    internal: true\n    ipam:\n      config:"
    );
    let _ = writeln!(y, "        - subnet: 10.214.{k}.0/24");
    let _ = writeln!(y, "services:");
    let _ = writeln!(y, "  store:\n    networks:\n      default:");
    let _ = writeln!(y, "        ipv4_address: {}", services_ip(k, 10));
    for i in 0..instances {
        let h = host_of(i);
        let _ = writeln!(y, "  inst{}:", i + 1);
        // The history journals on the host, where this runner reads them.
        let _ = writeln!(
            y,
            "    volumes:\n      - {}:/var/lib/fusionlab/journal",
            journal.display()
        );
        let _ = writeln!(y, "    networks:\n      default:");
        let _ = writeln!(y, "        ipv4_address: {}", services_ip(k, h));
        let _ = writeln!(y, "      interconnect:");
        let _ = writeln!(y, "        ipv4_address: {}", interconnect_ip(k, h));
    }
    y
}

/// The host directory the instances' journals are bind-mounted from:
/// writable by the containers' user (10001), whoever runs this.
fn make_journal_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(dir)
        .and_then(|()| {
            std::os::unix::fs::chown(dir, Some(CONTAINER_UID), Some(CONTAINER_UID))
                .or_else(|_| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)))
        })
        .map_err(|e| format!("cannot create the journal directory {}: {e}", dir.display()))
}

/// The user the image's processes run as.
const CONTAINER_UID: u32 = 10001;

impl Project {
    /// Start the store and `instances` instances of a new project named
    /// after this process and `seed`, and wait until every one is healthy.
    pub fn start(
        opts: &ComposeOpts,
        instances: usize,
        seed: u64,
        cuts: Vec<(usize, usize)>,
    ) -> Result<Project, String> {
        if !opts.file.is_file() {
            return Err(format!(
                "{}: no such compose file (give --compose-file)",
                opts.file.display()
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("fusionlab-compose-")
            .tempdir()
            .map_err(|e| format!("cannot create a directory for the project: {e}"))?;
        let used = subnets_in_use()?;
        let start = (u64::from(std::process::id()) ^ seed) % u64::from(SUBNET_TRIES);
        let free = (0..u64::from(SUBNET_TRIES))
            .filter_map(|d| u8::try_from((start + d) % u64::from(SUBNET_TRIES)).ok())
            .find(|k| {
                !used.contains(&format!("10.213.{k}.")) && !used.contains(&format!("10.214.{k}."))
            })
            .ok_or_else(|| {
                "no free subnet 10.213.k.0/24 and 10.214.k.0/24 for the project".to_string()
            })?;
        let journal = dir.path().join("journal");
        make_journal_dir(&journal)?;
        std::fs::write(
            dir.path().join("override.yml"),
            override_yaml(free, instances, &journal),
        )
        .map_err(|e| format!("cannot write the compose override: {e}"))?;
        let mut p = Project {
            name: format!("fusionlab-chaos-{}-{seed}", std::process::id()),
            program: compose_program()?,
            opts: opts.clone(),
            dir,
            token: fusion_live::cluster::new_token()?,
            subnet: free,
            instances,
            ids: Vec::new(),
            cuts,
        };
        match p.bring_up() {
            Ok(()) => Ok(p),
            Err(e) => {
                // Whatever of it started goes again.
                let _ = p.down(false);
                Err(e)
            }
        }
    }

    /// `up` the store and the instances, and wait until each is healthy.
    fn bring_up(&mut self) -> Result<(), String> {
        let mut services = vec!["store".to_string()];
        services.extend((1..=self.instances).map(|i| format!("inst{i}")));
        let mut args = vec!["up", "-d", "--no-build"];
        args.extend(services.iter().map(String::as_str));
        self.compose(&args)?;
        for s in &services {
            let id = self.compose(&["ps", "-q", s.as_str()])?.trim().to_string();
            if id.is_empty() {
                return Err(format!("compose started no container for {s}"));
            }
            self.wait_healthy(&id, s)?;
            if s != "store" {
                self.ids.push(id);
            }
        }
        Ok(())
    }

    /// `compose -p NAME -f FILE -f OVERRIDE ARGS`, with the token and image.
    fn compose(&self, args: &[&str]) -> Result<String, String> {
        let file = self.opts.file.to_string_lossy().to_string();
        let over = self
            .dir
            .path()
            .join("override.yml")
            .to_string_lossy()
            .to_string();
        let mut all = self.program.clone();
        all.extend([
            "-p",
            self.name.as_str(),
            "-f",
            file.as_str(),
            "-f",
            over.as_str(),
        ]);
        all.extend(args);
        docker(
            &all,
            &[
                ("FUSIONLAB_TOKEN", self.token.as_str()),
                ("FUSIONLAB_IMAGE", self.opts.image.as_str()),
            ],
            DOCKER_TIMEOUT,
        )
    }

    fn wait_healthy(&self, id: &str, what: &str) -> Result<(), String> {
        let end = Instant::now() + HEALTHY_WITHIN;
        loop {
            let state = docker(
                &[
                    "docker",
                    "inspect",
                    "--format",
                    "{{.State.Health.Status}}",
                    id,
                ],
                &[],
                Duration::from_secs(20),
            )?;
            if state.trim() == "healthy" {
                return Ok(());
            }
            if Instant::now() > end {
                return Err(format!(
                    "{what} is not healthy after {} s (it is {:?})",
                    HEALTHY_WITHIN.as_secs(),
                    state.trim()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The cluster as the runner on the host reaches it.
    pub fn cluster(&self) -> ClusterFile {
        let k = self.subnet;
        let port = |base: u16, i: usize| base.saturating_add(u16::try_from(i + 1).unwrap_or(0));
        ClusterFile {
            token: self.token.clone(),
            dir: self.dir.path().to_path_buf(),
            journal_dir: Some(self.dir.path().join("journal")),
            log_args: Vec::new(),
            store: Member {
                address: format!("{}:{STORE_PORT}", services_ip(k, 10)),
                pid: 0,
            },
            instances: (0..self.instances)
                .map(|i| InstanceMember {
                    id: u8::try_from(i + 1).unwrap_or(u8::MAX),
                    interconnect: format!(
                        "{}:{}",
                        interconnect_ip(k, host_of(i)),
                        port(INTERCONNECT_PORT, i)
                    ),
                    admin: format!("{}:{}", services_ip(k, host_of(i)), port(ADMIN_PORT, i)),
                    metrics: String::new(),
                    pid: 0,
                    // The kernel carries out the network faults in its namespace.
                    container: self.ids.get(i).cloned().unwrap_or_default(),
                })
                .collect(),
        }
    }

    fn id(&self, inst: usize) -> Result<&str, String> {
        self.ids
            .get(inst)
            .map(String::as_str)
            .ok_or_else(|| format!("inst{}: no such container", inst + 1))
    }

    fn interconnect_network(&self) -> String {
        format!("{}_interconnect", self.name)
    }

    fn container(&self, inst: usize, verb: &str) -> Result<(), String> {
        docker(&["docker", verb, self.id(inst)?], &[], DOCKER_TIMEOUT)
            .map(|_| ())
            .map_err(|e| format!("inst{}: {e}", inst + 1))
    }

    /// Bring the project down (containers, networks, the store's volume).
    /// `keep_logs`: first write every service's log into a directory that
    /// is kept, and return it.
    pub fn down(self, keep_logs: bool) -> Result<Option<PathBuf>, String> {
        let kept = if keep_logs {
            let logs = self.compose(&["logs", "--no-color"]).unwrap_or_else(|e| e);
            let _ = std::fs::write(self.dir.path().join("compose.log"), logs);
            Some(self.dir.path().to_path_buf())
        } else {
            None
        };
        let downed = self.compose(&["down", "--volumes", "--timeout", "3"]);
        if let Some(path) = &kept {
            // Kept on purpose: the caller names it.
            let _ = self.dir.keep();
            downed?;
            return Ok(Some(path.clone()));
        }
        downed.map(|_| None)
    }

    /// The directory of the override and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl ProcessControl for Project {
    fn kill(&self, inst: usize) -> Result<(), String> {
        self.container(inst, "kill")
    }

    fn pause(&self, inst: usize) -> Result<(), String> {
        self.container(inst, "pause")
    }

    fn resume(&self, inst: usize) -> Result<(), String> {
        self.container(inst, "unpause")
    }

    fn restart(&self, inst: usize) -> Result<(), String> {
        self.container(inst, "start")?;
        self.wait_healthy(self.id(inst)?, &format!("inst{}", inst + 1))
    }

    fn phase_begins(&self, phase: usize) -> Result<(), String> {
        let net = self.interconnect_network();
        for &(_, inst) in self.cuts.iter().filter(|(p, _)| *p == phase) {
            docker(
                &[
                    "docker",
                    "network",
                    "disconnect",
                    net.as_str(),
                    self.id(inst)?,
                ],
                &[],
                DOCKER_TIMEOUT,
            )
            .map_err(|e| format!("inst{}: partition: {e}", inst + 1))?;
        }
        Ok(())
    }

    fn phase_ends(&self, phase: usize) -> Result<(), String> {
        let net = self.interconnect_network();
        for &(_, inst) in self.cuts.iter().filter(|(p, _)| *p == phase) {
            let ip = interconnect_ip(self.subnet, host_of(inst));
            docker(
                &[
                    "docker",
                    "network",
                    "connect",
                    "--ip",
                    ip.as_str(),
                    net.as_str(),
                    self.id(inst)?,
                ],
                &[],
                DOCKER_TIMEOUT,
            )
            .map_err(|e| format!("inst{}: end of partition: {e}", inst + 1))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_gives_every_instance_both_networks_and_the_store_one() {
        let y = override_yaml(7, 3, Path::new("/tmp/p/journal"));
        assert_eq!(
            y.matches("- /tmp/p/journal:/var/lib/fusionlab/journal")
                .count(),
            3,
            "{y}"
        );
        assert!(y.contains("subnet: 10.213.7.0/24") && y.contains("subnet: 10.214.7.0/24"));
        assert!(y.contains("internal: true"));
        assert!(y.contains("ipv4_address: 10.213.7.10"));
        for h in 11..=13 {
            assert!(y.contains(&format!("ipv4_address: 10.213.7.{h}")), "{y}");
            assert!(y.contains(&format!("ipv4_address: 10.214.7.{h}")), "{y}");
        }
        assert_eq!(y.matches("interconnect:").count(), 4, "{y}");
    }

    #[test]
    fn a_command_over_its_deadline_is_stopped_and_named() {
        let e = docker(&["sleep", "5"], &[], Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("`sleep 5` took more than"), "{e}");
        let e = docker(&["false"], &[], Duration::from_secs(5)).unwrap_err();
        assert!(e.contains("`false` failed"), "{e}");
        assert_eq!(
            docker(&["echo", "hi"], &[], Duration::from_secs(5)).unwrap(),
            "hi\n"
        );
    }
}
