//! Docker Swarm's files (`cluster/stack.yml`, `cluster/campaign-stack.yml`)
//! checked without Docker: the stack's commands and healthchecks parse
//! with the binary's command line, the runner reads the cluster file the
//! stack hands it as a config, the token is a secret read from its file
//! (FUSIONLAB_TOKEN_FILE, which the binary reads), nothing is published;
//! the campaign stack runs a slice of a sweep per task of a one-shot
//! replicated service, its JSON on the volume `fusionlab merge` reads.
//! (`swarm.rs` deploys them on a swarm.)

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use fusion_live::cluster::{ClusterFile, TOKEN_ENV, TOKEN_FILE_ENV};
use fusionlab::cli::{Cli, Command as Cmd};
use serde_yaml_ng::Value;

const BIN: &str = env!("CARGO_BIN_EXE_fusionlab");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn yaml(name: &str) -> Value {
    let text = std::fs::read_to_string(repo().join("cluster").join(name)).expect("readable");
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

/// A command as Swarm gets it with no variable set: a list as is, a
/// string with each `${NAME:-default}` its default (as `docker stack
/// deploy` puts them in) split into words.
fn words(v: &Value) -> Vec<String> {
    let Value::String(s) = v else {
        return list(v);
    };
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').expect("a closed ${");
        let inner = &rest[start + 2..end];
        out.push_str(inner.split_once(":-").map_or("", |(_, default)| default));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    assert!(
        !s.contains(['"', '\'', '\\']),
        "{s:?} quotes: no shell splits it"
    );
    out.split_whitespace().map(str::to_string).collect()
}

fn parse(args: &[String]) -> Cmd {
    let mut argv = vec!["fusionlab".to_string()];
    argv.extend(args.iter().cloned());
    Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("`fusionlab {}` does not parse: {e}", args.join(" ")))
        .command
        .expect("a subcommand")
}

#[test]
fn the_stack_runs_commands_the_binary_accepts_with_the_token_as_a_secret() {
    let stack = yaml("stack.yml");
    let cluster: ClusterFile = toml::from_str(
        &std::fs::read_to_string(repo().join("cluster/stack-cluster.toml")).expect("readable"),
    )
    .expect("a cluster file");
    assert!(cluster.token.is_empty(), "no token in a config");
    let services = stack["services"].as_mapping().expect("services");
    assert_eq!(services.len(), cluster.instances.len() + 2);
    // Every service: the secret as a file of the image's user, read through
    // FUSIONLAB_TOKEN_FILE; the overlay network; nothing published.
    let secret = &stack["secrets"]["fusionlab_token"];
    assert_eq!(secret["external"].as_bool(), Some(true), "created by hand");
    for (name, svc) in services {
        let name = name.as_str().expect("a name");
        assert!(svc.get("ports").is_none(), "{name} publishes ports");
        assert!(svc["environment"].get(TOKEN_ENV).is_none(), "{name}");
        let s = &svc["secrets"][0];
        assert_eq!(s["source"].as_str(), Some("fusionlab_token"), "{name}");
        assert_eq!(s["uid"].as_str(), Some("10001"), "{name}");
        assert_eq!(
            svc["environment"][TOKEN_FILE_ENV].as_str(),
            Some(format!("/run/secrets/{}", s["target"].as_str().expect("a target")).as_str()),
            "{name}"
        );
        assert_eq!(list(&svc["networks"]), ["interconnect"], "{name}");
    }
    let net = &stack["networks"]["interconnect"];
    assert_eq!(net["driver"].as_str(), Some("overlay"));
    assert_eq!(net["attachable"].as_bool(), Some(true));

    let store = &stack["services"]["store"];
    let Cmd::Store(s) = parse(&list(&store["command"])) else {
        panic!("the store does not run `fusionlab store`");
    };
    assert!(
        cluster
            .store
            .address
            .ends_with(&format!(":{}", s.listen.rsplit(':').next().unwrap_or("")))
    );
    assert_eq!(
        list(&store["deploy"]["placement"]["constraints"]),
        ["node.labels.fusionlab.store == true"],
        "the store stays where its volume is"
    );
    for m in &cluster.instances {
        let svc = &stack["services"][format!("inst{}", m.id).as_str()];
        let Cmd::Instance(i) = parse(&list(&svc["command"])) else {
            panic!("inst{} does not run `fusionlab instance`", m.id);
        };
        assert_eq!(i.id, Some(m.id));
        assert!(m.interconnect.ends_with(&format!(
            ":{}",
            i.interconnect.rsplit(':').next().unwrap_or("")
        )));
        let d = &svc["deploy"];
        assert_eq!(d["endpoint_mode"].as_str(), Some("dnsrr"), "inst{}", m.id);
        assert_eq!(d["restart_policy"]["condition"].as_str(), Some("any"));
        let test = list(&svc["healthcheck"]["test"]);
        assert!(matches!(parse(&test[2..]), Cmd::Probe(_)), "{test:?}");
    }
    // The runner: once, on the cluster file the stack hands it, after
    // waiting for the cluster (Swarm has no depends_on).
    let runner = &stack["services"]["runner"];
    assert_eq!(
        runner["deploy"]["restart_policy"]["condition"].as_str(),
        Some("none")
    );
    let config = &runner["configs"][0];
    assert_eq!(
        stack["configs"][config["source"].as_str().expect("a source")]["file"].as_str(),
        Some("./stack-cluster.toml")
    );
    let Cmd::Run(r) = parse(&words(&runner["command"])) else {
        panic!("the runner does not run `fusionlab run`");
    };
    assert!(r.live && r.store.no_store);
    assert_eq!(
        r.cluster.as_deref(),
        Some(Path::new(config["target"].as_str().expect("a target")))
    );
    assert!(r.wait_for_cluster.is_some_and(|ns| ns >= 60_000_000_000));
    let loaded = fusionlab::shipped::load(&r.scenario, &r.sets).expect("it loads");
    assert!(loaded.instances_max() <= cluster.instances.len());
}

#[test]
fn the_campaign_stack_runs_a_slice_per_task_and_keeps_the_json() {
    let stack = yaml("campaign-stack.yml");
    let sweep = &stack["services"]["sweep"];
    // A replicated service's slots count from 1, as --part does (a job's
    // from 0, and its slot 0 renders as the node's ID).
    assert_eq!(sweep["deploy"]["mode"].as_str(), Some("replicated"));
    assert_eq!(
        sweep["deploy"]["restart_policy"]["condition"].as_str(),
        Some("on-failure"),
        "a part that is done is not run again"
    );
    let env = &sweep["environment"];
    assert_eq!(env["FUSIONLAB_PART"].as_str(), Some("{{.Task.Slot}}"));
    assert_eq!(env["FUSIONLAB_PARTS"].as_str(), Some("${PARTS:-4}"));
    assert_eq!(sweep["deploy"]["replicas"].as_str(), Some("${PARTS:-4}"));
    let Cmd::Sweep(s) = parse(&words(&sweep["command"])) else {
        panic!("the campaign does not run `fusionlab sweep`");
    };
    assert!(s.json, "the parts are JSON, for the merge");
    let output = env["FUSIONLAB_OUTPUT"].as_str().expect("FUSIONLAB_OUTPUT");
    let mount = list(&sweep["volumes"])[0].clone();
    let (volume, dir) = mount.split_once(':').expect("volume:dir");
    assert!(stack["volumes"].get(volume).is_some());
    assert_eq!(output, format!("{dir}/part-{{{{.Task.Slot}}}}.json"));
}

/// FUSIONLAB_TOKEN_FILE: the token from a file (trailing newline dropped),
/// a clear error when it cannot be read, and not both variables at once.
#[test]
fn the_token_comes_from_the_file_the_environment_names() {
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("token");
    std::fs::write(&file, "0123456789abcdef\n").expect("write");
    // A store that does not answer: 1 with a token, 2 without one.
    let probe = |env: &[(&str, &Path)]| {
        let mut c = Command::new(BIN);
        c.args(["probe", "--store", "127.0.0.1:9", "--timeout-ms", "200"])
            .env_remove(TOKEN_ENV)
            .env_remove(TOKEN_FILE_ENV);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("fusionlab runs")
    };
    let o = probe(&[(TOKEN_FILE_ENV, &file)]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = probe(&[(TOKEN_FILE_ENV, &dir.path().join("missing"))]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("FUSIONLAB_TOKEN_FILE=") && err.contains("cannot read the token"),
        "{err}"
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").expect("write");
    let o = probe(&[(TOKEN_FILE_ENV, &empty)]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("the file is empty"));
    assert_eq!(o.status.code(), Some(2));
    let o = probe(&[(TOKEN_FILE_ENV, &file), (TOKEN_ENV, Path::new("x"))]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("set one of them"));
    assert_eq!(o.status.code(), Some(2));
}

// ---------------------------------------------------------------------------
// The real swarm.
