//! The command line's grammar (clap) and its dispatch to the commands. In
//! the library so tests can parse a command line exactly as the binary does
//! (the docker-compose file's commands are checked against it).

use std::io::Write;

use clap::{Args, Parser, Subcommand};

use crate::memory::MemoryLimit;
use crate::run;
use crate::run::args::RunArgs;
use crate::tour::{self, TourArgs};

/// Fusionlab: a RAC cache-fusion cluster emulator. Runs scenario files on a
/// deterministic simulator and prints AWR-style reports and verdicts.
///
/// Without a command it runs the myth tour.
#[derive(Parser)]
#[command(name = "fusionlab", version)]
#[command(after_help = "\
Exit status: 0 ran (whatever the verdicts); 1 `validate` found problems (or a shipped \
scenario does not load); 2 bad input (missing file or name, invalid scenario, bad --set, \
unknown --phase, usage, a run estimated to need more memory than --max-memory); 3 the simulator reported protocol errors or checker violations \
(`chaos`: a run lost an acknowledged commit, broke a check or hit a protocol error); \
4 a live run had nothing left to run on (the store gone, no instance answering, a problem an instance reported; an instance killed or frozen from outside is survived); \
`probe`: 1 the service did not answer. \
130 / 143 a live run, tour or chaos stopped by SIGINT (Ctrl-C) / SIGTERM, after stopping the cluster \
it started (or quiescing the one it was given).")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run every shipped myth scenario (those with a [tour] section) and summarize the verdicts.
    Tour(TourCmd),
    /// Simulate one scenario and print its report.
    Run(RunCmd),
    /// Run a scenario's workload many times with random failures (kill,
    /// restart, pause, loss, partition: the kinds the loader accepts), the
    /// checkers on, and count acknowledged and lost commits; with --live on
    /// real processes.
    Chaos(ChaosCmd),
    /// Run a scenario over many seeds (and every combination of --vary
    /// values) on every core, and print the verdicts' distribution: on how
    /// many seeds it REPRODUCED, each expectation's pass rate, and its
    /// figure's median and range.
    Sweep(SweepCmd),
    /// Put the --json of a campaign's parts (`sweep` or `chaos` run with
    /// --parts, one file per part) back together and print what the whole
    /// campaign prints.
    Merge(MergeCmd),
    /// Load a scenario and report its problems without running it.
    Validate(ValidateCmd),
    /// List the shipped scenarios.
    List,
    /// List the runs recorded in the run store (every `run` unless --no-store).
    Runs(crate::runs::RunsCmd),
    /// Print a stored run's report again (text, --json or --html).
    Show(crate::runs::ShowCmd),
    /// Compare two stored runs, AWR "Compare Periods" style: each figure's
    /// 1st, 2nd, Diff and %Diff, the largest differences first.
    Compare(crate::runs::CompareCmd),
    /// Measure simulator speed: transfers and events per wall second, simulated seconds per wall second.
    Bench(BenchCmd),
    /// Start a local live cluster (a block store and N instance processes on loopback) and return.
    Up(UpCmd),
    /// Show each instance of a live cluster: alive, buffers, LMS, what sessions wait on.
    Status(ClusterArg),
    /// Stop a live cluster started by `up`.
    Down(ClusterArg),
    /// Watch a live cluster, oratop style, refreshed every second: per
    /// instance gc cr/current receive ms, blocks received per second, top
    /// waits, run queue, LMS backlog, the faults in force. `q` quits.
    Top(TopCmd),
    /// Restart one instance of a cluster started by `up` (stopped first if it
    /// runs), on the same addresses; it comes back with no scenario loaded.
    Restart(RestartCmd),
    /// Write the container files of a cluster of N instances into a
    /// directory: docker-compose.yml, cluster.toml and prometheus.yml for
    /// compose, stack.yml and stack-cluster.toml for Docker Swarm.
    Compose(ComposeCmd),
    /// Serve the block store (a process of a live cluster; the token comes
    /// from FUSIONLAB_TOKEN, or the file FUSIONLAB_TOKEN_FILE names).
    Store(StoreCmd),
    /// Serve one instance (a process of a live cluster; the token comes
    /// from FUSIONLAB_TOKEN, or the file FUSIONLAB_TOKEN_FILE names).
    Instance(InstanceCmd),
    /// Make one authenticated call to a block store or an instance's admin
    /// service and exit 0 if it answered, 1 if not (a container healthcheck;
    /// the token comes from FUSIONLAB_TOKEN, or the file FUSIONLAB_TOKEN_FILE
    /// names).
    Probe(ProbeCmd),
    /// The raw TCP side of `bench --live` (an 8 KB echo server).
    #[command(hide = true)]
    BenchEcho(BenchEchoCmd),
}

#[derive(Args)]
pub struct UpCmd {
    /// Instance processes to start.
    #[arg(long, default_value_t = 3)]
    pub instances: u8,
    /// Directory for the cluster file, the store's files and the logs.
    #[arg(long, default_value = crate::live::DEFAULT_DIR)]
    pub dir: std::path::PathBuf,
    /// First port (store; then interconnect and admin of inst1, inst2, ...); 0 picks free ports.
    #[arg(long, default_value_t = 0)]
    pub base_port: u16,
    #[command(flatten)]
    pub log: crate::live::logs::LogArgs,
}

#[derive(Args)]
pub struct ClusterArg {
    /// The cluster file (default: the one `up` wrote).
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<std::path::PathBuf>,
}

impl ClusterArg {
    fn file(&self) -> std::path::PathBuf {
        self.cluster.clone().unwrap_or_else(|| {
            crate::live::cluster_file(std::path::Path::new(crate::live::DEFAULT_DIR))
        })
    }
}

#[derive(Args)]
pub struct TopCmd {
    #[command(flatten)]
    pub cluster: ClusterArg,
    /// Milliseconds between refreshes.
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(100..=60_000))]
    pub interval_ms: u64,
    /// Print one screen (the figures of one interval) as text and exit.
    #[arg(long)]
    pub once: bool,
}

#[derive(Args)]
pub struct RestartCmd {
    /// The instance: inst1, inst2, ... (or its number).
    #[arg(value_name = "instN")]
    pub instance: String,
    #[command(flatten)]
    pub cluster: ClusterArg,
}

#[derive(Args)]
pub struct StoreCmd {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    pub listen: String,
    /// Directory of the datafile and redo threads.
    #[arg(long)]
    pub dir: std::path::PathBuf,
    /// Write the address listened on to this file (for `up`).
    #[arg(long, value_name = "FILE")]
    pub addr_file: Option<std::path::PathBuf>,
    /// `on`: acknowledge a write once `fsync` returns (it survives this
    /// host crashing). `off`: once the kernel has it (it survives any
    /// process being killed, not the host crashing); `up`, `run --live` and
    /// `tour --live` start their store so, every process being on one host.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_on_off,
          action = clap::ArgAction::Set)]
    pub fsync: bool,
    #[command(flatten)]
    pub log: crate::live::logs::LogArgs,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{s:?}: on or off")),
    }
}

#[derive(Args)]
pub struct InstanceCmd {
    /// Instance number (1-based).
    #[arg(
        long,
        env = "FUSIONLAB_INSTANCE_ID",
        required_unless_present = "pod_name",
        conflicts_with = "pod_name"
    )]
    pub id: Option<u8>,
    /// Take the instance number from a StatefulSet pod's name, NAME-ORDINAL:
    /// the ordinal plus 1 (`fusionlab-inst-0` is instance 1). Kubernetes
    /// gives the pod's name through the downward API; the image has no shell
    /// to do the sum.
    #[arg(long, env = "FUSIONLAB_POD_NAME", value_name = "NAME")]
    pub pod_name: Option<String>,
    /// Address of the interconnect server.
    #[arg(long)]
    pub interconnect: String,
    /// Address of the admin server (keep it on loopback unless the network is private).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub admin: String,
    /// Serve Prometheus metrics (`GET /metrics`) on this address (none by default).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Write the addresses listened on to this file (for `up`).
    #[arg(long, value_name = "FILE")]
    pub addr_file: Option<std::path::PathBuf>,
    /// Keep the history journal of checked runs here (`up` gives the
    /// cluster's directory): the runner reads what a process killed from
    /// outside recorded last.
    #[arg(long, value_name = "DIR", env = "FUSIONLAB_JOURNAL_DIR")]
    pub journal_dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub log: crate::live::logs::LogArgs,
}

impl InstanceCmd {
    /// The instance number: `--id`, or the ordinal of `--pod-name` plus 1.
    pub fn instance_id(&self) -> Result<u8, crate::Failure> {
        match (&self.id, &self.pod_name) {
            (Some(id), _) => Ok(*id),
            (None, Some(name)) => id_from_pod_name(name),
            (None, None) => Err(crate::Failure::input(
                "fusionlab instance: give --id N or --pod-name NAME-ORDINAL",
            )),
        }
    }
}

/// A StatefulSet pod's name is its set's name, `-`, and its ordinal
/// (0, 1, ...); its instance is the ordinal plus 1.
pub fn id_from_pod_name(name: &str) -> Result<u8, crate::Failure> {
    let bad = |why: &str| {
        crate::Failure::input(format!(
            "--pod-name {name:?}: {why} (a StatefulSet pod's name, NAME-ORDINAL, \
             such as fusionlab-inst-0 for instance 1)"
        ))
    };
    let (set, ordinal) = name.rsplit_once('-').ok_or_else(|| bad("no -ORDINAL"))?;
    if set.is_empty() || ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("it does not end in -ORDINAL"));
    }
    ordinal
        .parse::<u8>()
        .ok()
        .and_then(|o| o.checked_add(1))
        .ok_or_else(|| bad("the ordinal is past the largest instance number"))
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["store", "admin", "cluster"])))]
pub struct ProbeCmd {
    /// A block store's address (host:port): calls its Info.
    #[arg(long, value_name = "ADDR")]
    pub store: Option<String>,
    /// An instance's admin address (host:port): calls its Status.
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<String>,
    /// A cluster file: its store and every instance must answer.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<std::path::PathBuf>,
    /// Deadline for connecting and answering, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub timeout_ms: u64,
    /// Try again every second until everything answers or this time is up
    /// (`90s`, `10m`): a job's wait for its cluster. Once by default.
    #[arg(long, value_name = "DURATION", value_parser = crate::run::args::parse_duration_ns)]
    pub wait: Option<u64>,
}

#[derive(Args)]
pub struct BenchCmd {
    /// Simulated seconds of the transfer-heavy benchmark (with --live: wall seconds per measurement).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Measure the live runtime instead: a 2-way CR transfer between two
    /// instance processes against a raw TCP ping-pong, at 1 and 32 requesters.
    #[arg(long)]
    pub live: bool,
    /// With --live: rounds of (raw, live) measurements, alternated so that
    /// the machine's background load falls on both alike; medians are reported.
    #[arg(long, default_value_t = 5, requires = "live")]
    pub rounds: u32,
    /// Count the events by kind instead of timing them: messages by kind,
    /// wake-ups (and those that found nothing due), I/O, the deadlines
    /// folded into them, and the timers and CPU steps handled inside them,
    /// per block transfer.
    #[arg(long, conflicts_with = "live")]
    pub events: bool,
    /// With --events: these scenarios (shipped names or files) instead of
    /// the transfer run and every myth of the tour. Repeatable.
    #[arg(long, value_name = "SCENARIO", requires = "events")]
    pub scenario: Vec<String>,
    /// With --events: `KEY=VALUE` applied to every --scenario. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "scenario")]
    pub sets: Vec<String>,
}

#[derive(Args)]
pub struct BenchEchoCmd {
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    #[arg(long, value_name = "FILE")]
    pub addr_file: Option<std::path::PathBuf>,
}

#[derive(Args, Default)]
pub struct TourCmd {
    /// Show wait events under the 9i names the RAC myths deck uses.
    #[arg(long = "9i")]
    pub names_9i: bool,
    /// Use this seed for every scenario instead of each scenario's own.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Run the tour on a live cluster of processes instead of the simulator
    /// (in real time: several minutes).
    #[arg(long)]
    pub live: bool,
    /// With --live: use this running cluster (a file `up` wrote) instead of starting one.
    #[arg(long, value_name = "FILE", requires = "live")]
    pub cluster: Option<std::path::PathBuf>,
    /// Refuse to run when the estimated peak memory is above this (e.g. 4G,
    /// 512M); default: half of the machine's physical memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::memory::parse_size)]
    pub max_memory: Option<u64>,
    #[command(flatten)]
    pub pictures: PicturesArgs,
    #[command(flatten)]
    pub log: crate::live::logs::LogArgs,
}

/// The time series and the HTML report (`run` and `tour`).
#[derive(Args, Default)]
pub struct PicturesArgs {
    /// Also write the report as one self-contained HTML page with charts to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// The time series' interval, in milliseconds of cluster time (JSON
    /// `series`, the HTML charts); default 1000.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub interval_ms: Option<u64>,
}

#[derive(Args)]
pub struct RunCmd {
    /// A scenario file, or the name of a shipped scenario (see `fusionlab list`).
    #[arg(value_name = "FILE|NAME")]
    pub scenario: String,
    /// Print the JSON report instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Replace the scenario's seed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Override a value of the file before its variants (repeatable), e.g.
    /// `--set phase.baseline.duration_s=5` or `--set parameters.cpu_count=8`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Show wait events under their 9i names.
    #[arg(long = "9i")]
    pub names_9i: bool,
    /// Show only this phase in the text report (repeatable).
    #[arg(long = "phase", value_name = "NAME")]
    pub phases: Vec<String>,
    /// Run the correctness checkers (coherence, CR consistency, lost writes); slow.
    #[arg(long)]
    pub check: bool,
    /// Run on a live cluster of processes instead of the simulator (in real time).
    #[arg(long)]
    pub live: bool,
    /// With --live: use this running cluster (a file `up` wrote) instead of starting one.
    #[arg(long, value_name = "FILE", requires = "live")]
    pub cluster: Option<std::path::PathBuf>,
    /// With --cluster: first wait until its store and every instance answer,
    /// up to this long (`90s`, `10m`): a runner started beside its cluster
    /// (a Swarm service has no init container). Exit status 4 if they do not.
    #[arg(long, value_name = "DURATION", requires = "cluster",
          value_parser = crate::run::args::parse_duration_ns)]
    pub wait_for_cluster: Option<u64>,
    /// With --cluster: the cluster is this Docker Swarm stack (`docker
    /// stack deploy ... STACK`); the scenario's kill, pause and restart
    /// faults are carried out on its instances' tasks through Docker and
    /// Swarm (docs/deploy.md).
    #[arg(long, value_name = "STACK", requires = "cluster")]
    pub swarm: Option<String>,
    /// With --live: keep this phase's workload running until Ctrl-C or
    /// SIGTERM (or --duration), for faults of your own; then the report and
    /// the lost-commit check (--check is implied), and exit.
    #[arg(long, value_name = "PHASE", requires = "live")]
    pub hold: Option<String>,
    /// With --hold: end the held phase after this long (90s, 10m, 1h; plain
    /// seconds too) if no signal ended it first.
    #[arg(long, value_name = "DURATION", requires = "hold", value_parser = crate::run::args::parse_duration_ns)]
    pub duration: Option<u64>,
    /// Refuse to run when the estimated peak memory is above this (e.g. 4G,
    /// 512M); default: half of the machine's physical memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::memory::parse_size)]
    pub max_memory: Option<u64>,
    #[command(flatten)]
    pub store: crate::runs::StoreArgs,
    #[command(flatten)]
    pub pictures: PicturesArgs,
    /// Advance the simulated instances on N threads: the same result, byte
    /// for byte, sooner on a big cluster. Default: every core when the
    /// cluster is big enough to gain (see docs/benchmarks.md); 1 is serial.
    #[arg(long, value_name = "N", conflicts_with = "live",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
    /// Also write a timeline trace (Chrome/Perfetto JSON, gzipped when FILE
    /// ends in .gz) to FILE: open it in ui.perfetto.dev. Simulator only.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Keep only this window of cluster time in the trace: A..B seconds, e.g. 10..12.5.
    #[arg(long, value_name = "A..B", requires = "trace",
          value_parser = clap::builder::ValueParser::new(
              |s: &str| s.parse::<fusion_report::trace::TraceWindow>()))]
    pub trace_window: Option<fusion_report::trace::TraceWindow>,
    #[command(flatten)]
    pub log: crate::live::logs::LogArgs,
}

#[derive(Args)]
pub struct ChaosCmd {
    /// A scenario file, or the name of a shipped scenario.
    #[arg(value_name = "FILE|NAME")]
    pub scenario: String,
    /// Runs, each with its own seed and faults.
    #[arg(long, default_value_t = 10)]
    pub runs: u32,
    /// The first run's seed (run i has seed S + i); default: the scenario's.
    /// `--runs 1 --seed X` replays the run that printed seed X.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Override a value of the file before the faults are added (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Refuse to run when the estimated peak memory of a run is above this
    /// (runs in parallel share it); default: half of the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::memory::parse_size)]
    pub max_memory: Option<u64>,
    /// With `--runs 1`: also write the run's scenario file, its drawn faults
    /// in its phases, to FILE (to keep a failing run as a scenario).
    #[arg(long, value_name = "FILE")]
    pub save_scenario: Option<std::path::PathBuf>,
    /// Carry out each run on a local cluster of real processes (one after
    /// the other, in real time): the same faults from the same seeds, kill
    /// as SIGKILL, pause as SIGSTOP/SIGCONT. The seed fixes the faults and
    /// their times, not the interleaving.
    #[arg(long)]
    pub live: bool,
    /// With --live: every run on this running cluster (a file `up` or
    /// `fusionlab compose` wrote) instead of a cluster of its own; kill,
    /// pause and restart are drawn only when the runner can carry them
    /// out (the cluster's processes are its host's, or --swarm).
    #[arg(long, value_name = "FILE", requires = "live")]
    pub cluster: Option<std::path::PathBuf>,
    /// With --cluster: the cluster is this Docker Swarm stack; kill as
    /// `docker kill` with the service held at 0 replicas, pause as `docker
    /// pause`, restart as the service scaled back to 1 (docs/deploy.md).
    #[arg(long, value_name = "STACK", requires = "cluster")]
    pub swarm: Option<String>,
    /// Carry out each run on the compose cluster instead (one project of
    /// containers per run, one after the other): kill as `docker kill`,
    /// pause as `docker pause`/`unpause`, restart as `docker start`,
    /// partition as `docker network disconnect` from the interconnect
    /// network. Needs a Docker engine and the image (cluster/build-local-image).
    #[arg(long, conflicts_with = "live")]
    pub compose: bool,
    /// With --compose: the compose file [default: cluster/docker-compose.yml].
    #[arg(long, value_name = "FILE", requires = "compose")]
    pub compose_file: Option<std::path::PathBuf>,
    /// With --compose: the image of every service [default: FUSIONLAB_IMAGE, else fusionlab:local].
    #[arg(long, value_name = "IMAGE", requires = "compose")]
    pub image: Option<String>,
    #[command(flatten)]
    pub part: crate::parts::PartArgs,
    #[command(flatten)]
    pub log: crate::live::logs::LogArgs,
}

#[derive(Args)]
pub struct SweepCmd {
    /// A scenario file, or the name of a shipped scenario.
    #[arg(value_name = "FILE|NAME")]
    pub scenario: String,
    /// The seeds: `A..B` (both included) or one seed.
    #[arg(long, value_name = "A..B", default_value = "1..100")]
    pub seeds: String,
    /// A key of the file and the values to try (repeatable: every
    /// combination runs each seed), e.g. `--vary params.gcs_server_processes=1,2,4`.
    #[arg(long, value_name = "KEY=v1,v2,...")]
    pub vary: Vec<String>,
    /// Override a value of the file in every run (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Runs at once (default: every core, fewer when memory is short).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Print one JSON object instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Run the consistency checkers too (slower); a violation is a failed run.
    #[arg(long)]
    pub check: bool,
    /// Refuse to run when the estimated peak memory of the runs at once is
    /// above this; default: half of the machine's memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::memory::parse_size)]
    pub max_memory: Option<u64>,
    #[command(flatten)]
    pub part: crate::parts::PartArgs,
}

#[derive(Args)]
pub struct ComposeCmd {
    /// Instances of the cluster, 1 to 64.
    #[arg(long, value_name = "N")]
    pub instances: u8,
    /// The directory to write the files into (created if missing; files
    /// of the same names are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
}

#[derive(Args)]
pub struct MergeCmd {
    /// The parts' JSON files (`sweep --json` or `chaos --json` with
    /// --parts), every part once, in any order; a directory stands for the
    /// .json files in it.
    #[arg(value_name = "FILE|DIR", required = true)]
    pub files: Vec<std::path::PathBuf>,
    /// Print the JSON a whole run prints instead of its text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ValidateCmd {
    /// A scenario file, or the name of a shipped scenario.
    #[arg(value_name = "FILE|NAME")]
    pub scenario: String,
    /// Override a value before checking (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Refuse to run when the estimated peak memory is above this (e.g. 4G,
    /// 512M); default: half of the machine's physical memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::memory::parse_size)]
    pub max_memory: Option<u64>,
}

impl Cli {
    /// The logging flags and role of a live command (one that is, starts
    /// or drives a cluster process); None for the others, which install no
    /// logging (the simulator's output stays as it is).
    pub fn logging(&self) -> Option<(&crate::live::logs::LogArgs, crate::live::logs::Role)> {
        use crate::live::logs::Role;
        match self.command.as_ref()? {
            Command::Store(s) => Some((&s.log, Role::ClusterProcess)),
            Command::Instance(i) => Some((&i.log, Role::ClusterProcess)),
            Command::Up(u) => Some((&u.log, Role::Command)),
            Command::Run(r) if r.live => Some((&r.log, Role::Command)),
            Command::Tour(t) if t.live => Some((&t.log, Role::Command)),
            Command::Chaos(c) if c.live || c.compose => Some((&c.log, Role::Command)),
            _ => None,
        }
    }
}

/// Run what the command line asked for.
pub fn dispatch(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<u8> {
    match cli.command.unwrap_or(Command::Tour(TourCmd::default())) {
        Command::Tour(t) => {
            let args = TourArgs {
                names_9i: t.names_9i,
                seed: t.seed,
                interval_ms: t.pictures.interval_ms,
                html: t.pictures.html,
            };
            tour::within_memory(&MemoryLimit::new(t.max_memory), t.live)?;
            if t.live {
                crate::live::tour::tour_live(&args, t.cluster.as_deref(), out, err)
            } else {
                tour::tour(&args, out, err)
            }
        }
        Command::Run(r) => {
            let args = RunArgs {
                scenario: r.scenario,
                json: r.json,
                seed: r.seed,
                sets: r.sets,
                names_9i: r.names_9i,
                phases: r.phases,
                check: r.check,
                max_memory: r.max_memory,
                recording: r.store.recording(),
                interval_ms: r.pictures.interval_ms,
                html: r.pictures.html,
                trace: r.trace,
                trace_window: r.trace_window,
                threads: r.threads.map(usize::from),
                hold: r.hold,
                hold_ns: r.duration,
            };
            if let (Some(ns), Some(file)) = (r.wait_for_cluster, r.cluster.as_deref()) {
                crate::live::probe::wait_for_cluster(
                    file,
                    std::time::Duration::from_nanos(ns),
                    err,
                )?;
            }
            if r.live {
                crate::live::run_live(&args, r.cluster.as_deref(), r.swarm.as_deref(), out, err)
            } else {
                run::run(&args, out, err)
            }
        }
        Command::Up(u) => crate::live::up(u.instances, &u.dir, u.base_port, out),
        Command::Status(c) => crate::live::status(&c.file(), out),
        Command::Down(c) => crate::live::down(&c.file(), out),
        Command::Top(t) => crate::top::top(
            &t.cluster.file(),
            std::time::Duration::from_millis(t.interval_ms),
            t.once,
            out,
        ),
        Command::Restart(r) => crate::live::restart(&r.instance, &r.cluster.file(), out),
        Command::Store(s) => crate::live::store(&s.listen, &s.dir, s.addr_file.as_deref(), s.fsync),
        Command::Instance(i) => crate::live::instance(
            i.instance_id()?,
            &i.interconnect,
            &i.admin,
            i.metrics.as_deref(),
            i.addr_file.as_deref(),
            i.journal_dir.as_deref(),
        ),
        Command::Probe(p) => crate::live::probe::probe(
            &crate::live::probe::Target::new(p.store, p.admin, p.cluster)?,
            std::time::Duration::from_millis(p.timeout_ms),
            std::time::Duration::from_nanos(p.wait.unwrap_or(0)),
            out,
            err,
        ),
        Command::Chaos(c) => {
            crate::parts::printing_to(c.part.output.clone().as_deref(), out, |out| {
                crate::chaos::chaos(
                    &crate::chaos::ChaosArgs {
                        scenario: c.scenario,
                        runs: c.runs,
                        seed: c.seed,
                        json: c.json,
                        sets: c.sets,
                        max_memory: c.max_memory,
                        save_scenario: c.save_scenario,
                        live: c.live,
                        cluster: c.cluster,
                        swarm: c.swarm,
                        compose: if c.compose {
                            Some(crate::chaos::compose::opts(c.compose_file, c.image)?)
                        } else {
                            None
                        },
                        part: c.part,
                    },
                    out,
                    err,
                )
            })
        }
        Command::Sweep(c) => {
            crate::parts::printing_to(c.part.output.clone().as_deref(), out, |out| {
                crate::sweep::sweep(
                    &crate::sweep::SweepArgs {
                        scenario: c.scenario,
                        seeds: c.seeds,
                        vary: c.vary,
                        sets: c.sets,
                        jobs: c.jobs,
                        json: c.json,
                        check: c.check,
                        max_memory: c.max_memory,
                        part: c.part,
                    },
                    out,
                    err,
                )
            })
        }
        Command::Compose(c) => crate::compose::write(c.instances, &c.out, out),
        Command::Merge(m) => crate::merge::merge(&m.files, m.json, out, err),
        Command::Validate(v) => run::validate(
            &v.scenario,
            &v.sets,
            &MemoryLimit::new(v.max_memory),
            out,
            err,
        ),
        Command::List => run::list(out, err),
        Command::Runs(c) => crate::runs::runs(&c, out),
        Command::Show(c) => crate::runs::show(&c, out),
        Command::Compare(c) => crate::runs::compare(&c, out),
        Command::Bench(b) if b.live => {
            crate::live::bench::bench_live(b.seconds, b.rounds, out, err)
        }
        Command::Bench(b) if b.events => crate::bench::events::bench_events(
            &crate::bench::BenchArgs { seconds: b.seconds },
            &b.scenario,
            &b.sets,
            out,
        ),
        Command::Bench(b) => {
            crate::bench::bench(&crate::bench::BenchArgs { seconds: b.seconds }, out, err)
        }
        Command::BenchEcho(e) => crate::live::bench::echo(&e.listen, e.addr_file.as_deref()),
    }
}
