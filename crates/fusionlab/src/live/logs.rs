//! Logs of the live processes: `store` and `instance` (the cluster's
//! processes) and the commands that start or drive a cluster (`up`,
//! `run --live`, `tour --live`, `chaos --live`/`--compose`). They log
//! through `tracing` to stderr, as text or JSON lines, filtered by
//! `--log-level` or RUST_LOG. Simulator commands install nothing: they
//! print what they always printed, and nothing they run logs.
//!
//! Last words: a panic is logged (message, place, thread, backtrace) before
//! the process goes on or dies; a cluster process dies of any panic, since
//! one that lost a task (its instance host, a link) would go on answering
//! without doing its work. SIGTERM and SIGINT, and the error a cluster
//! process exits with, are logged where they are handled.

use std::sync::OnceLock;

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// How a process's log lines look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line of text per event: time, level, spans, target, message, fields.
    #[default]
    Text,
    /// One JSON object per line (for containers and log shippers).
    Json,
}

impl LogFormat {
    fn name(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// The logging flags of the live commands.
#[derive(Args, Clone, Debug, Default)]
pub struct LogArgs {
    /// What to log on stderr: a level (error, warn, info, debug, trace) or
    /// RUST_LOG directives (`info,fusion_live=debug`). Default: RUST_LOG,
    /// else `info` for `store` and `instance`, `warn` for the commands.
    /// Passed on to the processes a command starts.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Log lines as text or as JSON objects, one per line. Passed on to the
    /// processes a command starts.
    #[arg(long, value_enum, value_name = "FORMAT", env = "FUSIONLAB_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
}

/// What kind of process logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A process of a cluster (`store`, `instance`): logs `info` by
    /// default, exits on any panic, logs the error it exits with.
    ClusterProcess,
    /// A command that starts or drives a cluster: its stderr is the user's
    /// terminal, so `warn` by default; its errors are printed as always.
    Command,
}

impl Role {
    fn default_filter(self) -> &'static str {
        match self {
            Role::ClusterProcess => "info",
            Role::Command => "warn",
        }
    }
}

/// The flags the processes a command starts are given (`up`, a run's own
/// cluster): this process's own, as given.
static CHILD_ARGS: OnceLock<Vec<String>> = OnceLock::new();

/// The logging flags for a process this one starts (empty when it was
/// given none: the child then follows RUST_LOG and FUSIONLAB_LOG_FORMAT,
/// inherited, or its defaults).
pub fn child_args() -> Vec<String> {
    CHILD_ARGS.get().cloned().unwrap_or_default()
}

/// The filter: `--log-level`, else RUST_LOG, else the role's default.
fn filter(args: &LogArgs, role: Role) -> Result<EnvFilter, String> {
    let (directives, from) = match &args.log_level {
        Some(f) => (f.clone(), "--log-level"),
        None => match std::env::var("RUST_LOG") {
            Ok(v) if !v.trim().is_empty() => (v, "RUST_LOG"),
            _ => (role.default_filter().to_string(), "default"),
        },
    };
    EnvFilter::builder()
        .parse(&directives)
        .map_err(|e| format!("{from} {directives:?}: {e}"))
}

/// Start logging to stderr for a process of `role`, and install the panic
/// hook. Once per process (later calls change nothing).
pub fn init(args: &LogArgs, role: Role) -> Result<(), String> {
    let filter = filter(args, role)?;
    let format = args.log_format.unwrap_or_default();
    let mut passed = Vec::new();
    if let Some(l) = &args.log_level {
        passed.extend(["--log-level".to_string(), l.clone()]);
    }
    if args.log_format.is_some() {
        passed.extend(["--log-format".to_string(), format.name().to_string()]);
    }
    let _ = CHILD_ARGS.set(passed);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
    if installed.is_ok() {
        install_panic_hook(role);
    }
    Ok(())
}

/// Log a panic through `tracing` (in place of the default hook's lines on
/// stderr); a cluster process then exits with 101, Rust's status for a
/// panic.
fn install_panic_hook(role: Role) {
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".to_string());
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        // A panic is rare and its backtrace the best clue: always taken.
        let backtrace = std::backtrace::Backtrace::force_capture();
        tracing::error!(
            target: "panic",
            thread,
            location,
            backtrace = %backtrace,
            "panicked: {message}"
        );
        if role == Role::ClusterProcess {
            tracing::error!(target: "fusionlab", status = 101, "exiting after a panic");
            std::process::exit(101);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_and_a_bad_filter_is_an_error_naming_where_it_came_from() {
        let args = LogArgs {
            log_level: Some("info,fusion_live=debug".into()),
            log_format: None,
        };
        let f = filter(&args, Role::Command).expect("valid directives");
        assert_eq!(f.to_string(), "fusion_live=debug,info");
        let bad = LogArgs {
            log_level: Some("fusion_live=loud".into()),
            log_format: None,
        };
        let e = filter(&bad, Role::ClusterProcess).expect_err("not a level");
        assert!(e.starts_with("--log-level \"fusion_live=loud\""), "{e}");
    }
}
