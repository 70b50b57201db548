//! There is no Docker engine on the development machines, so the container
//! topology is checked here instead: every service's command must parse with
//! the binary's own command line, the instances and ports must match the
//! cluster file the runner reads, and the Dockerfile must put things where
//! the compose file expects them. A renamed flag fails this test, not a
//! workshop.

use std::path::{Path, PathBuf};

use clap::Parser;
use fusion_live::cluster::{ClusterFile, TOKEN_ENV};
use fusionlab::cli::{Cli, Command};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn compose() -> serde_yaml_ng::Value {
    let text =
        std::fs::read_to_string(repo().join("cluster/docker-compose.yml")).expect("compose file");
    serde_yaml_ng::from_str(&text).expect("valid YAML")
}

/// A service's command with compose's `${VAR:-default}` replaced by the default.
fn command(svc: &serde_yaml_ng::Value) -> Vec<String> {
    svc["command"]
        .as_sequence()
        .expect("command as a list")
        .iter()
        .map(|a| {
            let a = a.as_str().expect("string argument");
            match (a.find("${"), a.find(":-"), a.find('}')) {
                (Some(s), Some(d), Some(e)) if s < d && d < e => {
                    format!("{}{}{}", &a[..s], &a[d + 2..e], &a[e + 1..])
                }
                _ => a.to_string(),
            }
        })
        .collect()
}

fn parse(args: &[String]) -> Command {
    let mut argv = vec!["fusionlab".to_string()];
    argv.extend(args.iter().cloned());
    Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("`fusionlab {}` does not parse: {e}", args.join(" ")))
        .command
        .expect("a subcommand")
}

fn port(addr: &str) -> &str {
    addr.rsplit(':').next().expect("a port")
}

#[test]
fn every_service_command_is_one_the_binary_accepts_and_matches_the_cluster_file() {
    let c = compose();
    let services = c["services"].as_mapping().expect("services");
    for name in ["store", "inst1", "inst2", "inst3", "runner"] {
        assert!(
            services.contains_key(serde_yaml_ng::Value::from(name)),
            "service {name} missing"
        );
    }
    // SAFETY: no other thread of this test binary reads the environment.
    unsafe { std::env::set_var(TOKEN_ENV, "test-token") };
    let cluster = ClusterFile::read(&repo().join("cluster/cluster.toml")).expect("cluster file");
    assert_eq!(cluster.instances.len(), 3);

    // Every service passes the token through the environment variable the binary reads.
    let anchor_env = &c["x-fusionlab"]["environment"];
    assert!(
        anchor_env.get(TOKEN_ENV).is_some(),
        "the shared service definition does not set {TOKEN_ENV}"
    );

    match parse(&command(&c["services"]["store"])) {
        Command::Store(s) => {
            assert_eq!(port(&s.listen), port(&cluster.store.address));
            assert!(cluster.store.address.starts_with("store:"));
        }
        _ => panic!("the store service does not run `fusionlab store`"),
    }
    for m in &cluster.instances {
        let svc = format!("inst{}", m.id);
        match parse(&command(&c["services"][svc.as_str()])) {
            Command::Instance(i) => {
                assert_eq!(i.id, m.id, "{svc} runs instance {}", i.id);
                assert_eq!(
                    port(&i.interconnect),
                    port(&m.interconnect),
                    "{svc} interconnect"
                );
                assert_eq!(port(&i.admin), port(&m.admin), "{svc} admin");
                assert!(m.interconnect.starts_with(&format!("{svc}:")));
                assert!(m.admin.starts_with(&format!("{svc}:")));
            }
            _ => panic!("{svc} does not run `fusionlab instance`"),
        }
    }
    match parse(&command(&c["services"]["runner"])) {
        Command::Run(r) => {
            assert!(r.live, "the runner must run --live");
            let file = r.cluster.expect("--cluster");
            assert_eq!(file, Path::new("/etc/fusionlab/cluster.toml"));
            assert!(
                fusionlab::shipped::find(&r.scenario).is_some(),
                "the runner's default scenario {} is not shipped",
                r.scenario
            );
        }
        _ => panic!("the runner does not run `fusionlab run`"),
    }
}

#[test]
fn the_dockerfile_builds_the_binary_and_installs_what_compose_uses() {
    let d = std::fs::read_to_string(repo().join("cluster/Dockerfile")).expect("Dockerfile");
    assert!(d.contains("cargo build --release --locked -p fusionlab"));
    assert!(d.contains("COPY cluster/cluster.toml /etc/fusionlab/cluster.toml"));
    assert!(d.contains("ENTRYPOINT [\"fusionlab\"]"));
    assert!(d.matches("FROM ").count() >= 2, "multi-stage build");
    let c = compose();
    assert_eq!(
        c["x-fusionlab"]["build"]["dockerfile"].as_str(),
        Some("cluster/Dockerfile")
    );
    assert_eq!(c["x-fusionlab"]["build"]["context"].as_str(), Some(".."));
    // The store's data directory exists in the image (a volume mounted there
    // inherits its owner).
    let store = command(&c["services"]["store"]);
    let dir = store
        .iter()
        .skip_while(|a| *a != "--dir")
        .nth(1)
        .expect("--dir");
    assert!(
        d.contains(&format!("mkdir -p {dir}")),
        "the image does not create {dir}"
    );
}
