//! `fusionlab compose --instances N --out DIR`: the container files of a
//! cluster of N instances, so that a fourth (or a 64th) instance is a
//! number, not a block copied by hand. It writes
//!
//! - `docker-compose.yml`: the store, N instances and a runner on one host;
//! - `cluster.toml`: that topology as the runner's cluster file;
//! - `prometheus.yml`: a scrape of every instance's metrics;
//! - `stack.yml`: the same cluster on Docker Swarm (`docker stack deploy`);
//! - `stack-cluster.toml`: the Swarm runner's cluster file (a Docker config).
//!
//! The files in `cluster/` are this command's output for 3 instances (a test
//! writes them again and compares).

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use anyhow::Result;

use crate::{Failure, exit};

/// The store's port; instance `i` listens on 7100 + i (interconnect) and
/// 7200 + i (admin), every instance on 9100 (metrics).
const STORE_PORT: u16 = 7000;
const INTERCONNECT_PORT: u16 = 7100;
const ADMIN_PORT: u16 = 7200;
const METRICS_PORT: u16 = 9100;

/// The files for `instances` instances: (file name, contents), in the order written.
pub fn files(instances: u8) -> Result<Vec<(&'static str, String)>, Failure> {
    let max = fusion_scenario::INSTANCES_MAX;
    if instances == 0 || instances > max {
        return Err(Failure::input(format!(
            "--instances {instances}: a cluster has 1 to {max} instances"
        )));
    }
    Ok(vec![
        ("docker-compose.yml", compose_yml(instances)),
        ("cluster.toml", cluster_toml(instances, false)),
        ("prometheus.yml", prometheus_yml(instances)),
        ("stack.yml", stack_yml(instances)),
        ("stack-cluster.toml", cluster_toml(instances, true)),
    ])
}

/// Write the files into `dir` (created if missing) and say so.
pub fn write(instances: u8, dir: &Path, out: &mut dyn Write) -> Result<u8> {
    let files = files(instances)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::input(format!("{}: cannot create: {e}", dir.display())))?;
    for (name, text) in &files {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| Failure::input(format!("{}: cannot write: {e}", path.display())))?;
        writeln!(out, "wrote {}", path.display())?;
    }
    Ok(exit::OK)
}

fn instances_text(n: u8) -> String {
    if n == 1 {
        "one instance".to_string()
    } else {
        format!("{n} instances")
    }
}

/// Every instance's healthcheck and command, as compose and Swarm run them.
fn instance_command(i: u8) -> String {
    format!(
        "[\"instance\", \"--id\", \"{i}\", \"--interconnect\", \"0.0.0.0:{}\", \"--admin\", \
         \"0.0.0.0:{}\", \"--metrics\", \"0.0.0.0:{METRICS_PORT}\"]",
        INTERCONNECT_PORT + u16::from(i),
        ADMIN_PORT + u16::from(i)
    )
}

fn healthcheck(y: &mut String, flag: &str, port: u16) {
    let _ = writeln!(y, "    healthcheck:");
    let _ = writeln!(
        y,
        "      test: [\"CMD\", \"fusionlab\", \"probe\", \"{flag}\", \"127.0.0.1:{port}\", \
         \"--timeout-ms\", \"1000\"]"
    );
    let _ = writeln!(y, "      interval: 1s");
    let _ = writeln!(y, "      timeout: 3s");
    let _ = writeln!(y, "      retries: 30");
}

const STORE_COMMAND: &str = "[\"store\", \"--listen\", \"0.0.0.0:7000\", \"--dir\", \
                             \"/var/lib/fusionlab/store\"]";

fn compose_yml(n: u8) -> String {
    let mut y = String::new();
    let _ = write!(
        y,
        "\
# A Fusionlab cluster in containers: a block store, {instances} and a
# runner that plays a scenario against them to its verdict, then exits;
# `--exit-code-from runner` returns the runner's exit status. Written by
# `fusionlab compose --instances {n} --out DIR` with the cluster file the
# runner reads (cluster.toml, mounted from this directory).
#
#   cluster/build-local-image          # no registry: fusionlab:local FROM scratch
#   cd cluster
#   export FUSIONLAB_TOKEN=$(openssl rand -hex 16)
#   docker compose up --no-build --exit-code-from runner; docker compose down -v
#   SCENARIO=myth-cpu-starvation SETS=\"--set phase.baseline.duration_s=5\" \\
#     docker compose up --no-build --exit-code-from runner
#
# With a registry, `--build` instead of `--no-build` builds the image from
# cluster/Dockerfile (from cluster/ only: the build context is `..`).
# FUSIONLAB_IMAGE names another image. Every service reads the shared token
# from FUSIONLAB_TOKEN. Each service checks itself with `fusionlab probe`
# (exec form: the scratch image has no shell); the instances start once the
# store answers, the runner once all do. Nothing is published to the host:
# the ports stay on the project's network. Each instance serves Prometheus
# metrics on :{METRICS_PORT} (GET /metrics); docker-compose.monitoring.yml adds
# Prometheus and Grafana. See docs/live-cluster.md, \"In containers\" and
# \"Metrics\".

x-fusionlab: &fusionlab
  image: ${{FUSIONLAB_IMAGE:-fusionlab:local}}
  build:
    context: ..
    dockerfile: cluster/Dockerfile
  environment:
    FUSIONLAB_TOKEN: ${{FUSIONLAB_TOKEN:?set FUSIONLAB_TOKEN to a shared secret}}
    # Where an instance keeps the history journal of a checked run: a
    # volume the runner shares, so that what an instance killed from
    # outside (`docker kill`) recorded last is still checked.
    FUSIONLAB_JOURNAL_DIR: /var/lib/fusionlab/journal
  volumes:
    - journal:/var/lib/fusionlab/journal

x-healthy: &healthy
  condition: service_healthy

services:
  store:
    <<: *fusionlab
    command: {STORE_COMMAND}
    volumes:
      - store-data:/var/lib/fusionlab/store
",
        instances = instances_text(n),
    );
    healthcheck(&mut y, "--store", STORE_PORT);
    for i in 1..=n {
        let _ = write!(
            y,
            "\n  inst{i}:\n    <<: *fusionlab\n    command: {}\n    depends_on:\n      store: *healthy\n",
            instance_command(i)
        );
        healthcheck(&mut y, "--admin", ADMIN_PORT + u16::from(i));
    }
    let _ = write!(
        y,
        "\n  runner:\n    <<: *fusionlab\n    depends_on:\n      store: *healthy\n"
    );
    for i in 1..=n {
        let _ = writeln!(y, "      inst{i}: *healthy");
    }
    let _ = write!(
        y,
        "    volumes:
      - journal:/var/lib/fusionlab/journal
      # The cluster file written with this file (the image holds the one
      # for 3 instances).
      - ./cluster.toml:/etc/fusionlab/cluster.toml:ro
    # A string, not a list: compose splits it into arguments after putting
    # in SCENARIO (a shipped name, or a path mounted into the runner) and
    # SETS (`--set KEY=VALUE` options, none by default). No shell runs it.
    command: run --live --no-store --cluster /etc/fusionlab/cluster.toml ${{SCENARIO:-myth-interconnect-blame}} ${{SETS:-}}

volumes:
  store-data:
  journal:
"
    );
    y
}

/// The compose cluster file, or with `swarm` the Swarm stack's: the same
/// addresses (a stack's services answer to their short names on its
/// network), and no shared journal (the instances' nodes share no volume).
fn cluster_toml(n: u8, swarm: bool) -> String {
    let mut t = String::new();
    if swarm {
        let _ = write!(
            t,
            "\
# The Swarm stack (stack.yml) as a cluster file: what its runner reads, a
# Docker config mounted at /etc/fusionlab/stack-cluster.toml. Written by
# `fusionlab compose --instances {n}`. The addresses are the stack's service
# names, which resolve on its network; the token comes from the secret
# (FUSIONLAB_TOKEN_FILE). No journal_dir: the instances run on several
# nodes and share no volume with the runner (see docs/deploy.md).
token = \"\"
dir = \"/var/lib/fusionlab\"
"
        );
    } else {
        let _ = write!(
            t,
            "\
# The compose topology as a cluster file: what `fusionlab run --live
# --cluster` and `fusionlab status --cluster` read. Written by `fusionlab
# compose --instances {n}`. The addresses are the compose service names; the
# token comes from FUSIONLAB_TOKEN.
token = \"\"
dir = \"/var/lib/fusionlab\"
# The instances' history journals (a volume they share with the runner):
# what a checked run reads of an instance killed from outside.
journal_dir = \"/var/lib/fusionlab/journal\"
"
        );
    }
    let _ = write!(t, "\n[store]\naddress = \"store:{STORE_PORT}\"\n");
    for i in 1..=n {
        let _ = write!(
            t,
            "\n[[instance]]\nid = {i}\ninterconnect = \"inst{i}:{}\"\nadmin = \"inst{i}:{}\"\n\
             metrics = \"inst{i}:{METRICS_PORT}\"\n",
            INTERCONNECT_PORT + u16::from(i),
            ADMIN_PORT + u16::from(i)
        );
    }
    t
}

fn prometheus_yml(n: u8) -> String {
    let targets: Vec<String> = (1..=n)
        .map(|i| format!("\"inst{i}:{METRICS_PORT}\""))
        .collect();
    format!(
        "\
# Prometheus for the compose cluster: scrapes each instance's /metrics
# (`fusionlab instance --metrics 0.0.0.0:{METRICS_PORT}`) by its service name.
# Used by docker-compose.monitoring.yml; for a local cluster (`fusionlab up`)
# put the `metrics` addresses of its cluster file in `targets` instead.
# Written by `fusionlab compose --instances {n}`.
global:
  scrape_interval: 1s
  evaluation_interval: 5s

scrape_configs:
  - job_name: fusionlab
    # The instances label their series instance=\"1\", \"2\", ... (as the
    # reports number them); keep that over Prometheus's host:port label.
    honor_labels: true
    static_configs:
      - targets: [{}]
",
        targets.join(", ")
    )
}

fn stack_yml(n: u8) -> String {
    let mut y = String::new();
    let _ = write!(
        y,
        "\
# Fusionlab on Docker Swarm: a block store, {instances} and a runner that
# plays a scenario against them to its verdict, then exits. Written by
# `fusionlab compose --instances {n} --out DIR` with stack-cluster.toml (the
# runner's cluster file, a Docker config). From that directory:
#
#   cluster/build-local-image       # on every node (no registry), or push it
#   docker node update --label-add fusionlab.store=true NODE    # the store's node
#   openssl rand -hex 16 | docker secret create fusionlab_token -
#   docker stack deploy -c stack.yml fusionlab
#   docker service logs -f fusionlab_runner        # the report and VERDICT
#   docker stack rm fusionlab
#
# SCENARIO and SETS choose what the runner plays (as in docker-compose.yml);
# FUSIONLAB_TOKEN_SECRET names another secret, FUSIONLAB_IMAGE another
# image. The token is a Docker secret every service reads from its file
# (FUSIONLAB_TOKEN_FILE): on no command line and in no environment. One
# service per instance, each answering to its own name on the overlay
# network (`endpoint_mode: dnsrr`: no virtual IP in between); Swarm puts
# each task on the node that runs the fewest, so the instances spread over
# the nodes. The store stays on the node labelled fusionlab.store=true,
# where its volume is. The network is attachable: `docker run --network
# fusionlab_interconnect` reaches the cluster. Nothing is published. Each
# service checks itself with `fusionlab probe`; an instance killed or
# unhealthy is started again, empty, as `fusionlab restart` would. See
# docs/deploy.md, \"Docker Swarm\".

version: \"3.9\"

x-fusionlab: &fusionlab
  image: ${{FUSIONLAB_IMAGE:-fusionlab:local}}
  environment:
    FUSIONLAB_TOKEN_FILE: /run/secrets/fusionlab_token
  secrets:
    - source: fusionlab_token
      target: fusionlab_token
      uid: \"10001\"
      gid: \"10001\"
      mode: 0400
  networks:
    - interconnect

x-instance: &instance
  endpoint_mode: dnsrr
  # Started again 5 s after it died, as a clusterware would: by then the
  # survivors of a scenario with a short css_misscount have evicted it.
  restart_policy:
    condition: any
    delay: 5s

services:
  store:
    <<: *fusionlab
    command: {STORE_COMMAND}
    volumes:
      - store-data:/var/lib/fusionlab/store
",
        instances = instances_text(n),
    );
    healthcheck(&mut y, "--store", STORE_PORT);
    let _ = write!(
        y,
        "    deploy:
      endpoint_mode: dnsrr
      placement:
        constraints:
          - node.labels.fusionlab.store == true
"
    );
    for i in 1..=n {
        let _ = write!(
            y,
            "\n  inst{i}:\n    <<: *fusionlab\n    command: {}\n",
            instance_command(i)
        );
        healthcheck(&mut y, "--admin", ADMIN_PORT + u16::from(i));
        let _ = writeln!(y, "    deploy: *instance");
    }
    let _ = write!(
        y,
        "
  runner:
    <<: *fusionlab
    configs:
      - source: cluster
        target: /etc/fusionlab/stack-cluster.toml
        uid: \"10001\"
        gid: \"10001\"
        mode: 0444
    # Split into arguments by `docker stack deploy` after putting in
    # SCENARIO and SETS; no shell runs it. Swarm has no depends_on: the
    # runner waits for its cluster to answer.
    command: run --live --no-store --cluster /etc/fusionlab/stack-cluster.toml --wait-for-cluster 10m ${{SCENARIO:-myth-interconnect-blame}} ${{SETS:-}}
    deploy:
      # Once: a failed live run is not one to repeat unseen.
      restart_policy:
        condition: none

networks:
  interconnect:
    driver: overlay
    attachable: true

volumes:
  store-data:

secrets:
  fusionlab_token:
    external: true
    name: ${{FUSIONLAB_TOKEN_SECRET:-fusionlab_token}}

configs:
  cluster:
    file: ./stack-cluster.toml
"
    );
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_to_the_models_maximum() {
        assert!(files(0).is_err());
        assert!(files(65).is_err_and(|e| e.message.contains("1 to 64")));
        let f = files(64).expect("64 instances");
        let compose = &f[0].1;
        assert!(compose.contains("  inst64:\n"));
        assert!(compose.contains("\"0.0.0.0:7164\""));
        assert!(compose.contains("      inst64: *healthy\n"));
        let one = files(1).expect("one instance");
        assert!(one[0].1.contains("a block store, one instance and a"));
        assert!(!one[0].1.contains("inst2"));
    }
}
