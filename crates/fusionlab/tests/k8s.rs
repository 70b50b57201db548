//! The Kubernetes manifests (`cluster/k8s`), checked offline, no cluster:
//!
//! - what `kubectl kustomize` renders of `cluster/k8s` and of the chaos
//!   overlay `cluster/k8s/chaos` agrees with the binary: every container's
//!   command and probe parses with its own command line, the cluster file
//!   in the ConfigMap parses and names the StatefulSet's pods on the
//!   headless Service at the ports they listen on, pod ordinal K runs
//!   instance K+1, the held runner's scenario is one a runner that cannot
//!   signal pods accepts, and the Chaos Mesh experiments select pods that
//!   exist, by their labels;
//! - every rendered object and every experiment is valid against the
//!   Kubernetes API schemas (kubernetes-validate, Kubernetes
//!   [`KUBERNETES`]) and Chaos Mesh's CRD schemas, strictly, and checkov
//!   passes them but for the checks `cluster/k8s/checkov.yaml` skips and
//!   docs/deploy.md justifies. The tools come from `.ci/install-k8s-tools`
//!   (run here if they are missing).
//!
//! Without kubectl, or without the tools when they cannot be installed, a
//! test says so in one line and passes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{CommandFactory, Parser};
use fusion_live::cluster::{ClusterFile, TOKEN_ENV, TOKEN_FILE_ENV};
use fusionlab::cli::{Cli, Command as Cmd};
use serde_yaml_ng::Value;

/// The Kubernetes version the objects are validated against.
const KUBERNETES: &str = "1.32.0";
/// What `.ci/install-k8s-tools` installs (kept in step with it).
const TOOLS: &str = "k8s-tools-kv1.37.0-ck3.3.30";
const NAMESPACE: &str = "fusionlab";
const INSTANCES: &str = "fusionlab-inst";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `kubectl kustomize DIR`, or None (and the line saying why) when kubectl
/// does not run here.
fn render(dir: &str) -> Option<String> {
    let out = match Command::new("kubectl")
        .arg("kustomize")
        .arg(repo().join(dir))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: no kubectl to render the kustomizations ({e})");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "`kubectl kustomize {dir}` failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("UTF-8"))
}

fn documents(text: &str) -> Vec<Value> {
    // kubectl's output: documents separated by `---` lines.
    text.split("\n---\n")
        .map(|d| serde_yaml_ng::from_str::<Value>(d).expect("valid YAML"))
        .filter(|v| !v.is_null())
        .collect()
}

fn object<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name} in the rendered output"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence()
        .unwrap_or_else(|| panic!("a list, not {v:?}"))
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .collect()
}

fn parse(args: &[String]) -> Cmd {
    let mut argv = vec!["fusionlab".to_string()];
    argv.extend(args.iter().cloned());
    Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("`fusionlab {}` does not parse: {e}", args.join(" ")))
        .command
        .expect("a subcommand")
}

fn port(addr: &str) -> u16 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {addr}"))
}

fn container_port(c: &Value, name: &str) -> u16 {
    c["ports"]
        .as_sequence()
        .expect("ports")
        .iter()
        .find(|p| p["name"].as_str() == Some(name))
        .and_then(|p| p["containerPort"].as_u64())
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or_else(|| panic!("no container port {name}"))
}

fn env<'a>(c: &'a Value, name: &str) -> &'a Value {
    c["env"]
        .as_sequence()
        .expect("env")
        .iter()
        .find(|e| e["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("container {:?} has no {name}", c["name"]))
}

/// An exec probe's `fusionlab probe` arguments.
fn probe(c: &Value, which: &str) -> (Option<String>, Option<String>) {
    let cmd = strings(&c[which]["exec"]["command"]);
    assert_eq!(cmd[0], "fusionlab", "{which}: exec form, no shell");
    match parse(&cmd[1..]) {
        Cmd::Probe(p) => (p.store, p.admin),
        _ => panic!("{which} does not run `fusionlab probe`"),
    }
}

/// What every pod and container of the project keeps to: the image's
/// user, no privilege, no service account token, the token from the
/// Secret, requests and limits.
fn hardened(pod: &Value, what: &str) {
    let s = &pod["securityContext"];
    assert_eq!(s["runAsNonRoot"].as_bool(), Some(true), "{what}");
    assert_eq!(
        s["runAsUser"].as_u64(),
        Some(10001),
        "{what}: the image's user"
    );
    assert_eq!(s["seccompProfile"]["type"].as_str(), Some("RuntimeDefault"));
    assert_eq!(
        pod["automountServiceAccountToken"].as_bool(),
        Some(false),
        "{what}"
    );
    let all = pod["containers"]
        .as_sequence()
        .into_iter()
        .chain(pod["initContainers"].as_sequence())
        .flatten();
    for c in all {
        let who = format!("{what}/{}", c["name"].as_str().unwrap_or("?"));
        assert_eq!(c["image"].as_str(), Some("fusionlab:local"), "{who}");
        let cs = &c["securityContext"];
        assert_eq!(
            cs["allowPrivilegeEscalation"].as_bool(),
            Some(false),
            "{who}"
        );
        assert_eq!(cs["readOnlyRootFilesystem"].as_bool(), Some(true), "{who}");
        assert_eq!(strings(&cs["capabilities"]["drop"]), ["ALL"], "{who}");
        for k in ["requests", "limits"] {
            for r in ["cpu", "memory"] {
                assert!(!c["resources"][k][r].is_null(), "{who}: no {k}.{r}");
            }
        }
        // The token as a file of the Secret's volume, never in the
        // environment (checkov's CKV_K8S_35).
        assert!(
            c["env"]
                .as_sequence()
                .into_iter()
                .flatten()
                .all(|e| e["name"].as_str() != Some(TOKEN_ENV)),
            "{who}: the token in the environment"
        );
        let file = env(c, TOKEN_FILE_ENV)["value"].as_str().expect("a path");
        let mount = c["volumeMounts"]
            .as_sequence()
            .into_iter()
            .flatten()
            .find(|m| m["name"].as_str() == Some("token"))
            .unwrap_or_else(|| panic!("{who}: no token volume mounted"));
        let dir = mount["mountPath"].as_str().expect("a mount path");
        assert_eq!(file, format!("{dir}/token"), "{who}");
        assert_eq!(mount["readOnly"].as_bool(), Some(true), "{who}");
    }
    let token = pod["volumes"]
        .as_sequence()
        .into_iter()
        .flatten()
        .find(|v| v["name"].as_str() == Some("token"))
        .unwrap_or_else(|| panic!("{what}: no token volume"));
    assert_eq!(
        token["secret"]["secretName"].as_str(),
        Some("fusionlab-token"),
        "{what}"
    );
}

fn cluster_file(docs: &[Value]) -> ClusterFile {
    let text = object(docs, "ConfigMap", "fusionlab-cluster")["data"]["cluster.toml"]
        .as_str()
        .expect("cluster.toml in the ConfigMap");
    toml::from_str(text).expect("the ConfigMap holds a valid cluster file")
}

/// The runner job: waits for the cluster file's members, then runs `run
/// --live` on that file; its run arguments.
fn runner(docs: &[Value], cluster: &ClusterFile) -> fusionlab::cli::RunCmd {
    let job = object(docs, "Job", "fusionlab-runner");
    assert_eq!(
        job["spec"]["backoffLimit"].as_u64(),
        Some(0),
        "a run is not retried"
    );
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    hardened(pod, "runner");
    let volume = &pod["volumes"][0];
    assert_eq!(
        volume["configMap"]["name"].as_str(),
        Some("fusionlab-cluster")
    );
    let mounted = |c: &Value| -> PathBuf {
        let m = c["volumeMounts"]
            .as_sequence()
            .expect("mounts")
            .iter()
            .find(|m| m["name"] == volume["name"])
            .expect("the cluster file is mounted");
        Path::new(m["mountPath"].as_str().expect("a path")).join("cluster.toml")
    };
    let init = &pod["initContainers"][0];
    match parse(&strings(&init["args"])) {
        Cmd::Probe(p) => {
            assert_eq!(
                p.cluster,
                Some(mounted(init)),
                "the init container waits for the cluster"
            );
            assert!(
                p.wait.is_some_and(|w| w >= 60_000_000_000),
                "it waits a while"
            );
        }
        _ => panic!("the runner's init container does not run `fusionlab probe`"),
    }
    let c = &pod["containers"][0];
    match parse(&strings(&c["args"])) {
        Cmd::Run(r) => {
            assert!(r.live && r.store.no_store, "run --live --no-store");
            assert_eq!(r.cluster, Some(mounted(c)));
            let loaded = fusionlab::shipped::load(&r.scenario, &r.sets).expect("it loads");
            assert!(
                loaded.instances_max() <= cluster.instances.len(),
                "{} needs more instances than the cluster has",
                r.scenario
            );
            r
        }
        _ => panic!("the runner does not run `fusionlab run`"),
    }
}

#[test]
fn the_manifests_agree_with_the_binary_and_the_cluster_file() {
    let Some(text) = render("cluster/k8s") else {
        return;
    };
    let docs = documents(&text);
    for d in &docs {
        if d["kind"].as_str() != Some("Namespace") {
            assert_eq!(
                d["metadata"]["namespace"].as_str(),
                Some(NAMESPACE),
                "{:?}",
                d["kind"]
            );
        }
    }
    let ns = object(&docs, "Namespace", NAMESPACE);
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].as_str(),
        Some("restricted")
    );
    let cluster = cluster_file(&docs);
    assert!(cluster.token.is_empty(), "no token in the ConfigMap");
    assert!(
        cluster.journal_dir.is_none(),
        "the pods share no journal volume"
    );

    // The store: its command, its volume, its probes and its Service.
    let store = object(&docs, "StatefulSet", "fusionlab-store");
    let pod = &store["spec"]["template"]["spec"];
    hardened(pod, "store");
    let c = &pod["containers"][0];
    let Cmd::Store(s) = parse(&strings(&c["args"])) else {
        panic!("the store does not run `fusionlab store`");
    };
    assert_eq!(port(&s.listen), container_port(c, "store"));
    let svc = object(&docs, "Service", "fusionlab-store");
    assert_eq!(
        svc["spec"]["ports"][0]["port"].as_u64(),
        Some(u64::from(port(&s.listen)))
    );
    assert_eq!(
        cluster.store.address,
        format!("fusionlab-store:{}", port(&s.listen))
    );
    let claim = &store["spec"]["volumeClaimTemplates"][0];
    let mount = c["volumeMounts"]
        .as_sequence()
        .expect("mounts")
        .iter()
        .find(|m| m["name"] == claim["metadata"]["name"])
        .expect("the store mounts its claim");
    assert_eq!(
        mount["mountPath"].as_str().map(Path::new),
        Some(s.dir.as_path())
    );
    for which in ["readinessProbe", "livenessProbe"] {
        let (st, ad) = probe(c, which);
        assert!(ad.is_none());
        assert_eq!(st.map(|a| port(&a)), Some(port(&s.listen)), "store {which}");
    }

    // The instances: pod K is instance K+1 at the addresses the cluster
    // file gives it.
    let set = object(&docs, "StatefulSet", INSTANCES);
    assert_eq!(set["spec"]["serviceName"].as_str(), Some(INSTANCES));
    let replicas = set["spec"]["replicas"].as_u64().expect("replicas");
    assert_eq!(
        replicas,
        cluster.instances.len() as u64,
        "one [[instance]] per replica"
    );
    let headless = object(&docs, "Service", INSTANCES);
    assert_eq!(headless["spec"]["clusterIP"].as_str(), Some("None"));
    assert_eq!(
        headless["spec"]["selector"],
        set["spec"]["selector"]["matchLabels"]
    );
    let template = &set["spec"]["template"];
    let pod = &template["spec"];
    hardened(pod, "instance");
    let c = &pod["containers"][0];
    // The pod's name reaches the instance by the downward API, in the
    // variable its --pod-name option reads.
    assert_eq!(
        env(c, "FUSIONLAB_POD_NAME")["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.name")
    );
    let pod_name_env = Cli::command()
        .find_subcommand("instance")
        .and_then(|i| {
            i.get_arguments()
                .find(|a| a.get_id() == "pod_name")
                .cloned()
        })
        .and_then(|a| a.get_env().map(|e| e.to_string_lossy().into_owned()));
    assert_eq!(pod_name_env.as_deref(), Some("FUSIONLAB_POD_NAME"));
    let args = strings(&c["args"]);
    for (k, m) in cluster.instances.iter().enumerate() {
        let pod_name = format!("{INSTANCES}-{k}");
        let mut with_name = args.clone();
        with_name.extend(["--pod-name".to_string(), pod_name.clone()]);
        let Cmd::Instance(i) = parse(&with_name) else {
            panic!("the instances do not run `fusionlab instance`");
        };
        assert_eq!(i.instance_id().expect("an id"), m.id, "{pod_name}");
        let host = format!("{pod_name}.{INSTANCES}");
        let metrics = i.metrics.clone().expect("--metrics");
        for (what, listen, named, port_name) in [
            (
                "interconnect",
                &i.interconnect,
                &m.interconnect,
                "interconnect",
            ),
            ("admin", &i.admin, &m.admin, "admin"),
            ("metrics", &metrics, &m.metrics, "metrics"),
        ] {
            assert!(
                listen.starts_with("0.0.0.0:"),
                "{what} listens on every address"
            );
            assert_eq!(
                *named,
                format!("{host}:{}", port(listen)),
                "{pod_name} {what}"
            );
            assert_eq!(container_port(c, port_name), port(listen), "{what}");
            let on_service = headless["spec"]["ports"]
                .as_sequence()
                .expect("ports")
                .iter()
                .any(|p| p["port"].as_u64() == Some(u64::from(port(listen))));
            assert!(on_service, "the headless Service lacks the {what} port");
        }
        for which in ["readinessProbe", "livenessProbe"] {
            let (st, ad) = probe(c, which);
            assert!(st.is_none());
            assert_eq!(
                ad.map(|a| port(&a)),
                Some(port(&i.admin)),
                "instance {which}"
            );
        }
        let notes = &template["metadata"]["annotations"];
        assert_eq!(notes["prometheus.io/scrape"].as_str(), Some("true"));
        assert_eq!(
            notes["prometheus.io/port"].as_str(),
            Some(port(&metrics).to_string().as_str())
        );
        assert_eq!(notes["prometheus.io/path"].as_str(), Some("/metrics"));
    }

    // The base's runner plays a scenario to its verdict.
    let r = runner(&docs, &cluster);
    assert!(r.hold.is_none());
}

#[test]
fn a_pod_name_gives_its_ordinal_plus_one() {
    use fusionlab::cli::id_from_pod_name;
    assert_eq!(id_from_pod_name("fusionlab-inst-0").ok(), Some(1));
    assert_eq!(id_from_pod_name("fusionlab-inst-2").ok(), Some(3));
    assert_eq!(id_from_pod_name("a-254").ok(), Some(255));
    for bad in [
        "fusionlab",
        "fusionlab-inst-",
        "-3",
        "inst-x1",
        "inst-+1",
        "inst-255",
        "inst-99999999999",
    ] {
        let e = id_from_pod_name(bad).expect_err(bad);
        assert!(e.message.contains("--pod-name"), "{bad}: {}", e.message);
    }
    // --id and --pod-name are one or the other.
    let both = Cli::try_parse_from([
        "fusionlab",
        "instance",
        "--interconnect",
        "0.0.0.0:7101",
        "--id",
        "1",
        "--pod-name",
        "x-0",
    ]);
    assert!(both.is_err());
}

#[test]
fn the_chaos_overlay_holds_a_run_for_experiments_that_select_existing_pods() {
    let Some(text) = render("cluster/k8s/chaos") else {
        return;
    };
    let docs = documents(&text);
    let cluster = cluster_file(&docs);
    // The held run: a shipped failure scenario up to a phase before its
    // own fault, which a runner that cannot signal the pods accepts; the
    // whole scenario it would refuse.
    let r = runner(&docs, &cluster);
    let hold = r.hold.as_deref().expect("--hold");
    assert!(
        r.duration.is_some(),
        "the hold ends by itself, so that the log keeps the report"
    );
    let loaded = fusionlab::shipped::load(&r.scenario, &r.sets).expect("it loads");
    assert!(
        loaded.variants[0]
            .scenario
            .phases
            .iter()
            .any(|p| p.name == hold)
    );
    assert!(fusion_driver::fault_refusal(&loaded, fusion_driver::Driver::Live).is_err());
    assert_eq!(
        fusion_driver::fault_refusal_through(&loaded, fusion_driver::Driver::Live, Some(hold)),
        Ok(())
    );

    let set = object(&docs, "StatefulSet", INSTANCES);
    let replicas = set["spec"]["replicas"].as_u64().expect("replicas");
    let pods: BTreeSet<String> = (0..replicas).map(|k| format!("{INSTANCES}-{k}")).collect();
    let labels = &set["spec"]["template"]["metadata"]["labels"];
    let dir = repo().join("cluster/k8s/chaos/experiments");
    let mut kinds = BTreeSet::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the experiments")
        .map(|e| e.expect("an entry").path())
        .collect();
    files.sort();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        let exp: Value = serde_yaml_ng::from_str(&text).expect("YAML");
        let name = f.display();
        assert_eq!(
            exp["apiVersion"].as_str(),
            Some("chaos-mesh.org/v1alpha1"),
            "{name}"
        );
        assert_eq!(
            exp["metadata"]["namespace"].as_str(),
            Some(NAMESPACE),
            "{name}"
        );
        let kind = exp["kind"].as_str().expect("kind").to_string();
        let action = exp["spec"]["action"]
            .as_str()
            .unwrap_or("stress")
            .to_string();
        kinds.insert(format!("{kind}/{action}"));
        let selectors = std::iter::once(&exp["spec"]["selector"])
            .chain(Some(&exp["spec"]["target"]["selector"]).filter(|t| !t.is_null()));
        for s in selectors {
            assert_eq!(strings(&s["namespaces"]), [NAMESPACE], "{name}");
            let wanted = s["labelSelectors"].as_mapping().expect("labelSelectors");
            for (k, v) in wanted {
                let k = k.as_str().expect("a label");
                if k == "statefulset.kubernetes.io/pod-name" {
                    let pod = v.as_str().expect("a pod");
                    assert!(pods.contains(pod), "{name}: no pod {pod}");
                } else if k != "app.kubernetes.io/component" || v.as_str() == Some("instance") {
                    assert_eq!(&labels[k], v, "{name}: the pods have no label {k}={v:?}");
                }
            }
            for e in s["expressionSelectors"].as_sequence().into_iter().flatten() {
                for v in strings(&e["values"]) {
                    assert!(pods.contains(&v), "{name}: no pod {v}");
                }
            }
        }
    }
    let want = [
        "NetworkChaos/delay",
        "NetworkChaos/loss",
        "NetworkChaos/partition",
        "PodChaos/pod-kill",
        "StressChaos/stress",
    ];
    assert_eq!(kinds, want.iter().map(|s| s.to_string()).collect());
}

/// The campaign: an Indexed Job whose pod I runs part I of a sweep (its
/// completion index through the downward API) and writes its JSON where
/// the merge job reads every part; both pods kept to the project's rules
/// (they need no token: the sweep is the simulator's).
#[test]
fn the_campaign_splits_a_sweep_by_completion_index_and_merges_the_parts() {
    let (Some(campaign), Some(merge)) = (
        render("cluster/k8s/campaign"),
        render("cluster/k8s/campaign/merge"),
    ) else {
        return;
    };
    let docs = documents(&campaign);
    let merge = documents(&merge);
    for d in docs.iter().chain(&merge) {
        assert_eq!(
            d["metadata"]["namespace"].as_str(),
            Some(NAMESPACE),
            "{d:?}"
        );
    }
    let claim = object(&docs, "PersistentVolumeClaim", "fusionlab-campaign-parts");
    assert_eq!(
        strings(&claim["spec"]["accessModes"]),
        ["ReadWriteMany"],
        "pods on every node write the parts"
    );
    // Each pod's volume is the claim; the directory it is mounted at.
    let parts_dir = |pod: &Value, c: &Value| -> String {
        let v = &pod["volumes"][0];
        assert_eq!(
            v["persistentVolumeClaim"]["claimName"].as_str(),
            claim["metadata"]["name"].as_str()
        );
        let m = &c["volumeMounts"][0];
        assert_eq!(m["name"], v["name"]);
        m["mountPath"].as_str().expect("a path").to_string()
    };
    let kept = |pod: &Value, who: &str| {
        assert_eq!(pod["restartPolicy"].as_str(), Some("Never"), "{who}");
        assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(false));
        let s = &pod["securityContext"];
        assert_eq!(s["runAsNonRoot"].as_bool(), Some(true), "{who}");
        assert_eq!(s["runAsUser"].as_u64(), Some(10001), "{who}");
        assert_eq!(
            s["fsGroup"].as_u64(),
            Some(10001),
            "{who}: the volume writable"
        );
        let c = &pod["containers"][0];
        assert_eq!(c["image"].as_str(), Some("fusionlab:local"), "{who}");
        let cs = &c["securityContext"];
        assert_eq!(cs["readOnlyRootFilesystem"].as_bool(), Some(true), "{who}");
        assert_eq!(
            cs["allowPrivilegeEscalation"].as_bool(),
            Some(false),
            "{who}"
        );
        assert_eq!(strings(&cs["capabilities"]["drop"]), ["ALL"], "{who}");
        for k in ["requests", "limits"] {
            for r in ["cpu", "memory"] {
                assert!(!c["resources"][k][r].is_null(), "{who}: no {k}.{r}");
            }
        }
    };

    let job = object(&docs, "Job", "fusionlab-campaign");
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    let completions = job["spec"]["completions"].as_u64().expect("completions");
    let pod = &job["spec"]["template"]["spec"];
    kept(pod, "campaign");
    let c = &pod["containers"][0];
    assert_eq!(
        env(c, "FUSIONLAB_PARTS")["value"].as_str(),
        Some(completions.to_string().as_str()),
        "one part per completion index"
    );
    assert_eq!(
        env(c, "FUSIONLAB_PART_INDEX")["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
    );
    let dir = parts_dir(pod, c);
    let Cmd::Sweep(s) = parse(&strings(&c["args"])) else {
        panic!("the campaign's pods do not run `fusionlab sweep`");
    };
    assert!(s.json, "the parts are JSON, for the merge");
    assert!(
        fusionlab::shipped::find(&s.scenario).is_some(),
        "{}",
        s.scenario
    );
    // Kubernetes puts the index into the file name ($(VAR) in args).
    assert_eq!(
        s.part.output.as_deref(),
        Some(Path::new(&format!(
            "{dir}/part-$(FUSIONLAB_PART_INDEX).json"
        )))
    );
    // Every index is a part of the split the pods are told of.
    let seeds = fusionlab::sweep::parse_seeds(&s.seeds).expect("valid seeds");
    for index in 0..completions {
        let part = fusionlab::parts::PartArgs {
            parts: Some(u32::try_from(completions).expect("a few")),
            part_index: Some(u32::try_from(index).expect("a few")),
            ..Default::default()
        };
        assert!(
            part.slice(seeds.len()).is_ok_and(|p| p.is_some()),
            "index {index}"
        );
    }

    let job = object(&merge, "Job", "fusionlab-campaign-merge");
    assert_eq!(job["spec"]["backoffLimit"].as_u64(), Some(0));
    let pod = &job["spec"]["template"]["spec"];
    kept(pod, "merge");
    let c = &pod["containers"][0];
    assert_eq!(c["volumeMounts"][0]["readOnly"].as_bool(), Some(true));
    let Cmd::Merge(m) = parse(&strings(&c["args"])) else {
        panic!("the merge job does not run `fusionlab merge`");
    };
    assert_eq!(m.files, [PathBuf::from(parts_dir(pod, c))]);
}

// ---------------------------------------------------------------------------
// The schemas and the linter.

/// The virtualenv of `.ci/install-k8s-tools`, installed now if missing;
/// None (and the line saying why) if it cannot be.
fn tools() -> Option<PathBuf> {
    let dir = std::env::var_os("FUSIONLAB_K8S_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|c| c.join("fusionlab").join(TOOLS))
        })?;
    let ready = |d: &Path| d.join(".complete").exists() && d.join("bin/checkov").exists();
    if !ready(&dir) {
        let out = Command::new(repo().join(".ci/install-k8s-tools"))
            .env("FUSIONLAB_K8S_TOOLS", &dir)
            .output();
        if !ready(&dir) {
            let why = match out {
                Ok(o) => String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
                    .to_string(),
                Err(e) => e.to_string(),
            };
            println!(
                "skipped: kubernetes-validate and checkov are missing and .ci/install-k8s-tools could not install them ({why})"
            );
            return None;
        }
    }
    Some(dir)
}

/// The renders and the experiments as files in `dir`, for the tools.
fn rendered_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    for (src, file) in [
        ("cluster/k8s", "k8s.yaml"),
        ("cluster/k8s/chaos", "k8s-chaos.yaml"),
        ("cluster/k8s/campaign", "k8s-campaign.yaml"),
        ("cluster/k8s/campaign/merge", "k8s-campaign-merge.yaml"),
    ] {
        let text = render(src)?;
        std::fs::write(dir.join(file), text).expect("write");
        files.push(dir.join(file));
    }
    let exps = repo().join("cluster/k8s/chaos/experiments");
    for e in std::fs::read_dir(exps).expect("experiments") {
        let p = e.expect("entry").path();
        let to = dir.join(p.file_name().expect("a name"));
        std::fs::copy(&p, &to).expect("copy");
        files.push(to);
    }
    files.sort();
    Some(files)
}

fn validate(tools: &Path, files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(tools.join("bin/python"))
        .arg(repo().join("crates/fusionlab/tests/k8s/validate.py"))
        .args(["--kubernetes-version", KUBERNETES, "--crds"])
        .arg(repo().join("crates/fusionlab/tests/k8s/chaos-mesh-crds"))
        .args(files)
        .output()
        .expect("validate.py runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn every_object_is_valid_against_the_kubernetes_and_chaos_mesh_schemas() {
    let Some(tools) = tools() else {
        return;
    };
    // Not a hidden directory (`.tmpXXXX`): checkov leaves those out.
    let tmp = tempfile::Builder::new()
        .prefix("fusionlab-k8s-")
        .tempdir()
        .expect("a temporary directory");
    let Some(files) = rendered_files(tmp.path()) else {
        return;
    };
    let (ok, text) = validate(&tools, &files);
    assert!(ok, "validate.py:\n{text}");
    let objects = text.lines().filter(|l| l.starts_with("valid ")).count();
    // 8 objects in each render of the cluster, 6 experiments, the
    // campaign's claim and job, the merge job.
    assert_eq!(objects, 8 + 8 + 6 + 2 + 1, "{text}");
    println!("k8s: {objects} objects valid (Kubernetes {KUBERNETES}, Chaos Mesh v2.8.3 CRDs)");

    // The validator fails what is wrong: a misspelt field, a value its
    // schema does not allow, in a core kind and in an experiment.
    let bad = tmp.path().join("bad");
    std::fs::create_dir(&bad).expect("mkdir");
    let sts = std::fs::read_to_string(tmp.path().join("k8s.yaml")).expect("read");
    assert!(sts.contains("  replicas: 3\n"));
    std::fs::write(
        bad.join("a.yaml"),
        sts.replace("  replicas: 3\n", "  replica: 3\n"),
    )
    .expect("write");
    let kill =
        std::fs::read_to_string(repo().join("cluster/k8s/chaos/experiments/pod-kill-inst3.yaml"))
            .expect("read");
    std::fs::write(
        bad.join("b.yaml"),
        kill.replace("action: pod-kill", "action: pod-pause"),
    )
    .expect("write");
    let (ok, text) = validate(&tools, &[bad.join("a.yaml"), bad.join("b.yaml")]);
    assert!(!ok, "{text}");
    assert!(text.contains("'replica' was unexpected"), "{text}");
    assert!(text.contains("'pod-pause' is not one of"), "{text}");
}

#[test]
fn checkov_passes_the_manifests_but_for_the_documented_skips() {
    let Some(tools) = tools() else {
        return;
    };
    // Not a hidden directory (`.tmpXXXX`): checkov leaves those out.
    let tmp = tempfile::Builder::new()
        .prefix("fusionlab-k8s-")
        .tempdir()
        .expect("a temporary directory");
    if rendered_files(tmp.path()).is_none() {
        return;
    }
    let config = repo().join("cluster/k8s/checkov.yaml");
    let out = Command::new(tools.join("bin/checkov"))
        .arg("--config-file")
        .arg(&config)
        .arg("-d")
        .arg(tmp.path())
        .args(["-o", "json"])
        .current_dir(tmp.path())
        .output()
        .expect("checkov runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "checkov printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let report = if json.is_array() { &json[0] } else { &json };
    let failed: Vec<String> = report["results"]["failed_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| format!("{} {} {}", c["check_id"], c["check_name"], c["resource"]))
        .collect();
    assert!(failed.is_empty(), "checkov failed:\n{}", failed.join("\n"));
    assert!(out.status.success(), "checkov exited {:?}", out.status);
    let passed = report["summary"]["passed"].as_u64().unwrap_or(0);
    let resources: BTreeSet<String> = report["results"]["passed_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["resource"].as_str().map(str::to_string))
        .collect();
    for r in [
        "StatefulSet.fusionlab.fusionlab-store",
        "StatefulSet.fusionlab.fusionlab-inst",
        "Job.fusionlab.fusionlab-runner",
        "Job.fusionlab.fusionlab-campaign",
        "Job.fusionlab.fusionlab-campaign-merge",
    ] {
        assert!(
            resources.contains(r),
            "checkov did not check {r}: {resources:?}"
        );
    }
    // The skips are few and each is named in the docs.
    let conf: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&config).expect("read")).expect("YAML");
    let skips = strings(&conf["skip-check"]);
    assert!(skips.len() <= 3, "{skips:?}");
    let docs = std::fs::read_to_string(repo().join("docs/deploy.md")).expect("docs/deploy.md");
    for s in &skips {
        assert!(
            docs.contains(s.as_str()),
            "docs/deploy.md does not justify {s}"
        );
    }
    println!(
        "k8s: checkov passed {passed} checks, skipped {}",
        skips.join(", ")
    );
}
