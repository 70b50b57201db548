//! `fusionlab`: the command line. Parses arguments and dispatches to the
//! library's commands; maps failures to exit statuses.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use fusionlab::cli::{Cli, dispatch};
use fusionlab::live::logs::{self, Role};
use fusionlab::{Failure, exit};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The live commands log (the simulator's install nothing).
    let role = cli
        .logging()
        .map(|(args, role)| (logs::init(args, role), role));
    let role = match role {
        Some((Err(e), _)) => {
            let _ = writeln!(io::stderr(), "fusionlab: {e}");
            return ExitCode::from(exit::BAD_INPUT);
        }
        Some((Ok(()), role)) => Some(role),
        None => None,
    };
    // Unlocked handles: long-running commands (`instance`, `store`) have
    // other threads that may print (a panic message); holding the lock here
    // for the whole run would block them forever.
    let mut out = io::stdout();
    let mut err = io::stderr();
    let result = dispatch(cli, &mut out, &mut err);
    let code = match result {
        Ok(code) => code,
        // A cluster process's log is its stderr: its last words are a log
        // line like the others (a JSON line when the log is JSON).
        Err(e) if role == Some(Role::ClusterProcess) => {
            let code = e
                .downcast_ref::<Failure>()
                .map_or(exit::BAD_INPUT, |f| f.code);
            tracing::error!(target: "fusionlab", status = code, "exiting: {e:#}");
            code
        }
        Err(e) => failure(&e, &mut err),
    };
    if role == Some(Role::ClusterProcess) && code == exit::OK {
        tracing::info!(target: "fusionlab", status = code, "exiting");
    }
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
