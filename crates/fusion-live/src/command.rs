//! Running an outside program (docker, tc, nsenter, ...) to its end with a
//! deadline: both its pipes read on threads (a chatty program cannot
//! block), killed if it runs past the deadline.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run `cmd` with `stdin` written to it, at most `timeout`; its status and
/// output. Err: it did not start, or ran longer (then it was killed).
pub fn output_within(
    cmd: &mut Command,
    stdin: Option<&str>,
    timeout: Duration,
) -> Result<Output, String> {
    let what = shown(cmd);
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{what}`: {e}"))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A batch of commands is a few kilobytes: the pipe takes it whole.
        let _ = pipe.write_all(text.as_bytes());
    }
    let read = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut v);
            }
            v
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let end = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{what}` took more than {} s", timeout.as_secs()));
            }
            Err(e) => return Err(format!("`{what}`: {e}")),
        }
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Run `argv` with `env` added and `stdin` written to it, at most
/// `timeout`. Ok: its stdout; Err: why not, with its stderr when it failed.
pub fn run(
    argv: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
    timeout: Duration,
) -> Result<String, String> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| "no command to run".to_string())?;
    let mut cmd = Command::new(program);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = output_within(&mut cmd, stdin, timeout)?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// The command line, as messages name it.
fn shown(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_over_its_deadline_is_stopped_and_one_that_fails_says_why() {
        let long = Duration::from_secs(20);
        let e = run(&["sleep", "5"], &[], None, Duration::from_millis(100)).unwrap_err();
        assert_eq!(e, "`sleep 5` took more than 0 s");
        let e = run(&["sh", "-c", "echo no >&2; exit 3"], &[], None, long).unwrap_err();
        assert!(
            e.starts_with("`sh -c echo no >&2; exit 3` failed") && e.ends_with(": no"),
            "{e}"
        );
        assert_eq!(
            run(&["cat"], &[], Some("batch\n"), long).unwrap(),
            "batch\n"
        );
        assert_eq!(
            run(&["sh", "-c", "echo $X"], &[("X", "y")], None, long).unwrap(),
            "y\n"
        );
        assert!(
            run(&["/nonexistent/program"], &[], None, long)
                .unwrap_err()
                .starts_with("cannot run")
        );
    }
}
