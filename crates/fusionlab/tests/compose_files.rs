//! `fusionlab compose --instances N --out DIR`: the container files of a
//! cluster of N instances. The files checked in under `cluster/` are its
//! output for 3 (written again here and compared, so they cannot drift),
//! and for N every service runs a command the binary accepts, at the ports
//! the cluster files name.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use fusion_live::cluster::ClusterFile;
use fusionlab::cli::{Cli, Command as Cmd};
use serde_yaml_ng::Value;

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn parse(args: &[String]) -> Cmd {
    let mut argv = vec!["fusionlab".to_string()];
    argv.extend(args.iter().cloned());
    Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("`fusionlab {}` does not parse: {e}", args.join(" ")))
        .command
        .expect("a subcommand")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("readable");
    let mut v: Value = serde_yaml_ng::from_str(&text).expect("valid YAML");
    v.apply_merge().expect("merge keys apply");
    v
}

fn list(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap_or_else(|| panic!("a list, not {v:?}"))
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .collect()
}

fn port(addr: &str) -> &str {
    addr.rsplit(':').next().expect("a port")
}

#[test]
fn the_checked_in_files_are_the_output_for_three_instances() {
    for (name, text) in fusionlab::compose::files(3).expect("3 instances") {
        let path = repo().join("cluster").join(name);
        let on_disk = std::fs::read_to_string(&path).expect("checked in");
        // Not assert_eq: a whole file twice says less than its first change.
        if on_disk != text {
            let (n, (a, b)) = on_disk
                .lines()
                .zip(text.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .unwrap_or((0, ("(length)", "(length)")));
            panic!(
                "cluster/{name} is not what `fusionlab compose --instances 3 --out cluster` \
                 writes; line {}:\n  checked in: {a}\n  written:    {b}",
                n + 1
            );
        }
    }
}

/// The instance services of a compose or stack file agree with the cluster
/// file: `fusionlab instance --id I` at its ports, probed at its admin port.
fn instances_agree(file: &Value, cluster: &ClusterFile, what: &str) {
    for m in &cluster.instances {
        let svc = &file["services"][format!("inst{}", m.id).as_str()];
        let Cmd::Instance(i) = parse(&list(&svc["command"])) else {
            panic!("{what}: inst{} does not run `fusionlab instance`", m.id);
        };
        assert_eq!(i.id, Some(m.id), "{what}");
        assert_eq!(port(&i.interconnect), port(&m.interconnect), "{what}");
        assert_eq!(port(&i.admin), port(&m.admin), "{what}");
        assert_eq!(
            i.metrics.as_deref().map(port),
            Some(port(&m.metrics)),
            "{what}"
        );
        assert!(m.admin.starts_with(&format!("inst{}:", m.id)), "{what}");
        let test = list(&svc["healthcheck"]["test"]);
        assert_eq!(test[..2], ["CMD", "fusionlab"], "{what}: exec form");
        let Cmd::Probe(p) = parse(&test[2..]) else {
            panic!("{what}: inst{}'s healthcheck is not a probe", m.id);
        };
        assert_eq!(p.admin.as_deref().map(port), Some(port(&m.admin)), "{what}");
    }
}

#[test]
fn n_instances_make_n_services_the_cluster_files_name() {
    let dir = tempfile::tempdir().expect("a directory");
    let out = dir.path().join("five");
    let o = Command::new(BIN)
        .args(["compose", "--instances", "5", "--out"])
        .arg(&out)
        .output()
        .expect("fusionlab runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let compose = yaml(&out.join("docker-compose.yml"));
    let cluster: ClusterFile =
        toml::from_str(&std::fs::read_to_string(out.join("cluster.toml")).expect("written"))
            .expect("a cluster file");
    assert_eq!(cluster.instances.len(), 5);
    assert!(cluster.journal_dir.is_some(), "compose shares the journals");
    instances_agree(&compose, &cluster, "docker-compose.yml");
    let services = compose["services"].as_mapping().expect("services");
    assert_eq!(services.len(), 1 + 5 + 1, "store, 5 instances, runner");
    let runner = &compose["services"]["runner"];
    for m in &cluster.instances {
        assert_eq!(
            runner["depends_on"][format!("inst{}", m.id).as_str()]["condition"].as_str(),
            Some("service_healthy")
        );
    }
    // The runner reads the cluster file written beside the compose file.
    let words: Vec<String> = runner["command"]
        .as_str()
        .expect("a string")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let at = words
        .iter()
        .position(|w| w == "--cluster")
        .expect("--cluster")
        + 1;
    assert!(
        list(&runner["volumes"]).contains(&format!("./cluster.toml:{}:ro", words[at])),
        "{runner:?}"
    );
    let prometheus = yaml(&out.join("prometheus.yml"));
    let targets = list(&prometheus["scrape_configs"][0]["static_configs"][0]["targets"]);
    let metrics: Vec<String> = cluster
        .instances
        .iter()
        .map(|m| m.metrics.clone())
        .collect();
    assert_eq!(targets, metrics);

    let stack = yaml(&out.join("stack.yml"));
    let swarm: ClusterFile =
        toml::from_str(&std::fs::read_to_string(out.join("stack-cluster.toml")).expect("written"))
            .expect("a cluster file");
    assert!(swarm.journal_dir.is_none(), "the nodes share no volume");
    assert_eq!(swarm.instances, cluster.instances);
    instances_agree(&stack, &swarm, "stack.yml");
    assert_eq!(
        stack["services"].as_mapping().map(|m| m.len()),
        Some(1 + 5 + 1)
    );

    for bad in ["0", "65"] {
        let o = Command::new(BIN)
            .args(["compose", "--instances", bad, "--out"])
            .arg(dir.path().join("bad"))
            .output()
            .expect("fusionlab runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("a cluster has 1 to 64 instances"), "{err}");
    }
    assert!(
        !dir.path().join("bad").exists(),
        "nothing written for a bad N"
    );
}
