//! Ctrl-C (SIGINT) and SIGTERM for the live commands that start or drive
//! a cluster (`run --live`, `tour --live`): caught from the moment
//! [`Interrupts::install`] returns, so that the command stops what it
//! started, or quiesces the cluster it was given, and exits with 128 plus
//! the signal's number instead of dying with processes left running.

use anyhow::{Context, Result, anyhow};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// A signal that asks the command to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interruption {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Interruption {
    pub fn name(self) -> &'static str {
        match self {
            Interruption::Interrupt => "SIGINT",
            Interruption::Terminate => "SIGTERM",
        }
    }

    /// The shell's convention: 128 + the signal's number.
    pub fn exit_status(self) -> u8 {
        match self {
            Interruption::Interrupt => crate::exit::INTERRUPTED,
            Interruption::Terminate => crate::exit::TERMINATED,
        }
    }
}

impl std::fmt::Display for Interruption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The first SIGINT or SIGTERM the process received since it installed
/// these, and how many came. Commands that stop at the first ignore the
/// later ones (a second Ctrl-C while the cluster stops), so the cleanup
/// finishes; a held run (`run --live --hold`) ends its phase at the first
/// and gives up its report at the second.
pub struct Interrupts {
    first: watch::Receiver<(Option<Interruption>, u32)>,
}

impl Interrupts {
    /// Catch SIGINT and SIGTERM from now on, on a thread of their own (its
    /// own runtime), so that they are seen whatever the command is doing:
    /// starting the cluster (blocking), running, or between two runs.
    pub fn install() -> Result<Interrupts> {
        let (tx, first) = watch::channel((None, 0u32));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let (mut int, mut term) = match (
                        signal(SignalKind::interrupt()),
                        signal(SignalKind::terminate()),
                    ) {
                        (Ok(i), Ok(t)) => (i, t),
                        (Err(e), _) | (_, Err(e)) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    loop {
                        let got = tokio::select! {
                            _ = int.recv() => Interruption::Interrupt,
                            _ = term.recv() => Interruption::Terminate,
                        };
                        tracing::warn!(signal = got.name(), "received {got}: stopping");
                        tx.send_modify(|(first, count)| {
                            first.get_or_insert(got);
                            *count = count.saturating_add(1);
                        });
                    }
                });
            })
            .context("cannot start the thread that catches SIGINT and SIGTERM")?;
        ready_rx
            .recv()
            .map_err(|_| anyhow!("the thread that catches SIGINT and SIGTERM ended"))?
            .map_err(|e| anyhow!("cannot catch SIGINT and SIGTERM: {e}"))?;
        Ok(Interrupts { first })
    }

    /// The signal received so far, if any.
    pub fn received(&self) -> Option<Interruption> {
        self.first.borrow().0
    }

    /// Wait for the first signal (at once if one was received already).
    pub async fn wait(&self) -> Interruption {
        self.wait_for(1).await
    }

    /// Wait until `n` signals came (at once if they did already); the first
    /// one's kind.
    pub async fn wait_for(&self, n: u32) -> Interruption {
        let mut first = self.first.clone();
        match first.wait_for(|(_, count)| *count >= n).await {
            Ok(got) => got.0.unwrap_or(Interruption::Interrupt),
            // The catching thread never ends; if it did, nothing comes.
            Err(_) => std::future::pending().await,
        }
    }
}
