//! `fusionlab`: the command line. Parses arguments and dispatches to the
//! library's commands; maps failures to exit statuses.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use fusionlab::commands::{self, RunArgs};
use fusionlab::tour::{self, TourArgs};
use fusionlab::{Failure, exit};

/// Fusionlab: a RAC cache-fusion cluster emulator. Runs scenario files on a
/// deterministic simulator and prints AWR-style reports and verdicts.
///
/// Without a command it runs the myth tour.
#[derive(Parser)]
#[command(name = "fusionlab", version)]
#[command(after_help = "\
Exit status: 0 ran (whatever the verdicts); 1 `validate` found problems (or a shipped \
scenario does not load); 2 bad input (missing file or name, invalid scenario, bad --set, \
unknown --phase, usage); 3 the simulator reported protocol errors or checker violations; \
4 a live cluster failed (an instance or the store died or did not answer).")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run every shipped myth scenario (those with a [tour] section) and summarize the verdicts.
    Tour(TourCmd),
    /// Simulate one scenario and print its report.
    Run(RunCmd),
    /// Load a scenario and report its problems without running it.
    Validate(ValidateCmd),
    /// List the shipped scenarios.
    List,
    /// Measure simulator speed: transfers and events per wall second, simulated seconds per wall second.
    Bench(BenchCmd),
    /// Start a local live cluster (a block store and N instance processes on loopback) and return.
    Up(UpCmd),
    /// Show each instance of a live cluster: alive, buffers, LMS, what sessions wait on.
    Status(ClusterArg),
    /// Stop a live cluster started by `up`.
    Down(ClusterArg),
    /// Serve the block store (a process of a live cluster; the token comes from FUSIONLAB_TOKEN).
    Store(StoreCmd),
    /// Serve one instance (a process of a live cluster; the token comes from FUSIONLAB_TOKEN).
    Instance(InstanceCmd),
}

#[derive(Args)]
struct UpCmd {
    /// Instance processes to start.
    #[arg(long, default_value_t = 3)]
    instances: u8,
    /// Directory for the cluster file, the store's files and the logs.
    #[arg(long, default_value = fusionlab::live::DEFAULT_DIR)]
    dir: std::path::PathBuf,
    /// First port (store; then interconnect and admin of inst1, inst2, ...); 0 picks free ports.
    #[arg(long, default_value_t = 0)]
    base_port: u16,
}

#[derive(Args)]
struct ClusterArg {
    /// The cluster file (default: the one `up` wrote).
    #[arg(long, value_name = "FILE")]
    cluster: Option<std::path::PathBuf>,
}

impl ClusterArg {
    fn file(&self) -> std::path::PathBuf {
        self.cluster.clone().unwrap_or_else(|| {
            fusionlab::live::cluster_file(std::path::Path::new(fusionlab::live::DEFAULT_DIR))
        })
    }
}

#[derive(Args)]
struct StoreCmd {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7000")]
    listen: String,
    /// Directory of the datafile and redo threads.
    #[arg(long)]
    dir: std::path::PathBuf,
    /// Write the address listened on to this file (for `up`).
    #[arg(long, value_name = "FILE")]
    addr_file: Option<std::path::PathBuf>,
}

#[derive(Args)]
struct InstanceCmd {
    /// Instance number (1-based).
    #[arg(long)]
    id: u8,
    /// Address of the interconnect server.
    #[arg(long)]
    interconnect: String,
    /// Address of the admin server (keep it on loopback unless the network is private).
    #[arg(long, default_value = "127.0.0.1:0")]
    admin: String,
    /// Write the addresses listened on to this file (for `up`).
    #[arg(long, value_name = "FILE")]
    addr_file: Option<std::path::PathBuf>,
}

#[derive(Args)]
struct BenchCmd {
    /// Simulated seconds of the transfer-heavy benchmark.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
}

#[derive(Args, Default)]
struct TourCmd {
    /// Show wait events under the 9i names the RAC myths deck uses.
    #[arg(long = "9i")]
    names_9i: bool,
    /// Use this seed for every scenario instead of each scenario's own.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
}

#[derive(Args)]
struct RunCmd {
    /// A scenario file, or the name of a shipped scenario (see `fusionlab list`).
    #[arg(value_name = "FILE|NAME")]
    scenario: String,
    /// Print the JSON report instead of the text report.
    #[arg(long)]
    json: bool,
    /// Replace the scenario's seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Override a value of the file before its variants (repeatable), e.g.
    /// `--set phase.baseline.duration_s=5` or `--set parameters.cpu_count=8`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Show wait events under their 9i names.
    #[arg(long = "9i")]
    names_9i: bool,
    /// Show only this phase in the text report (repeatable).
    #[arg(long = "phase", value_name = "NAME")]
    phases: Vec<String>,
    /// Run the correctness checkers (coherence, CR consistency, lost writes); slow.
    #[arg(long)]
    check: bool,
    /// Run on a live cluster of processes instead of the simulator (in real time).
    #[arg(long)]
    live: bool,
    /// With --live: use this running cluster (a file `up` wrote) instead of starting one.
    #[arg(long, value_name = "FILE", requires = "live")]
    cluster: Option<std::path::PathBuf>,
}

#[derive(Args)]
struct ValidateCmd {
    /// A scenario file, or the name of a shipped scenario.
    #[arg(value_name = "FILE|NAME")]
    scenario: String,
    /// Override a value before checking (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = io::stdout().lock();
    let mut err = io::stderr().lock();
    let result = match cli.command.unwrap_or(Command::Tour(TourCmd::default())) {
        Command::Tour(t) => tour::tour(
            &TourArgs {
                names_9i: t.names_9i,
                seed: t.seed,
            },
            &mut out,
            &mut err,
        ),
        Command::Run(r) => {
            let args = RunArgs {
                scenario: r.scenario,
                json: r.json,
                seed: r.seed,
                sets: r.sets,
                names_9i: r.names_9i,
                phases: r.phases,
                check: r.check,
            };
            if r.live {
                fusionlab::live::run_live(&args, r.cluster.as_deref(), &mut out, &mut err)
            } else {
                commands::run(&args, &mut out, &mut err)
            }
        }
        Command::Up(u) => fusionlab::live::up(u.instances, &u.dir, u.base_port, &mut out),
        Command::Status(c) => fusionlab::live::status(&c.file(), &mut out),
        Command::Down(c) => fusionlab::live::down(&c.file(), &mut out),
        Command::Store(s) => {
            fusionlab::live::store(&s.listen, &s.dir, s.addr_file.as_deref(), &mut err)
        }
        Command::Instance(i) => fusionlab::live::instance(
            i.id,
            &i.interconnect,
            &i.admin,
            i.addr_file.as_deref(),
            &mut err,
        ),
        Command::Validate(v) => commands::validate(&v.scenario, &v.sets, &mut out, &mut err),
        Command::List => commands::list(&mut out, &mut err),
        Command::Bench(b) => fusionlab::bench::bench(
            &fusionlab::bench::BenchArgs { seconds: b.seconds },
            &mut out,
            &mut err,
        ),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => failure(&e, &mut err),
    };
    let _ = out.flush();
    ExitCode::from(code)
}

/// Print an error and choose the exit status.
fn failure(e: &anyhow::Error, err: &mut dyn Write) -> u8 {
    if let Some(f) = e.downcast_ref::<Failure>() {
        let _ = writeln!(err, "{f}");
        return f.code;
    }
    // A closed pipe (`fusionlab tour | head`) is not an error worth a message.
    if e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    }) {
        return exit::OK;
    }
    let _ = writeln!(err, "fusionlab: error: {e:#}");
    exit::BAD_INPUT
}
