//! `fusionlab`: the command line. Parses arguments and dispatches to the
//! library's commands; maps failures to exit statuses.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use fusionlab::cli::{Cli, dispatch};
use fusionlab::{Failure, exit};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Unlocked handles: long-running commands (`instance`, `store`) have
    // other threads that may print (a panic message); holding the lock here
    // for the whole run would block them forever.
    let mut out = io::stdout();
    let mut err = io::stderr();
    let result = dispatch(cli, &mut out, &mut err);
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
