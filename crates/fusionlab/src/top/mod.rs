//! `fusionlab top`: a live cluster on one screen, refreshed every second,
//! as oratop shows a RAC database (the screen itself is [`crate::top::view`]).
//! Each refresh asks every instance's admin service for its status and
//! counters; `q` (or Esc, or Ctrl-C) quits. `--once` prints one screen of
//! one interval as text and exits (for scripts and the docs).

pub mod view;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fusion_live::admin_client::Admin;
use fusion_live::cluster::ClusterFile;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::{Failure, exit};
use view::{InstanceSample, Sample, TopStatus};

/// How long a refresh waits for an instance before it shows it as down
/// (the screen must not freeze on one dead instance).
const ANSWER_PATIENCE: Duration = Duration::from_millis(700);

/// One instance now: its status, and its counters when a scenario is loaded.
async fn sample_of(id: u8, admin: &Admin) -> InstanceSample {
    let mut s = InstanceSample {
        id,
        ..InstanceSample::default()
    };
    let status = match admin.status(ANSWER_PATIENCE).await {
        Ok(st) => st,
        Err(e) => {
            s.error = Some(e);
            return s;
        }
    };
    if !status.loaded {
        return s;
    }
    match tokio::time::timeout(ANSWER_PATIENCE, admin.stats_decoded()).await {
        Ok(Ok((stats, now))) => {
            s.stats = stats;
            s.at_ns = now;
        }
        Ok(Err(e)) => s.error = Some(e),
        Err(_) => s.error = Some(format!("{}: stats: no answer in time", admin.who)),
    }
    s.status = Some(TopStatus {
        scenario: status.scenario,
        phase: status.phase,
        faults: status.faults,
        run_queue: status.run_queue,
        lms_backlog: status.lms_backlog,
        lms: status.lms,
        active_sessions: status.active_sessions,
        halted: status.halted,
    });
    s
}

/// Every instance now, asked at once (a refresh takes as long as the
/// slowest instance, not the sum).
async fn sample(admins: &[(u8, Admin)]) -> Sample {
    let asks: Vec<_> = admins
        .iter()
        .map(|(id, a)| {
            let (id, a) = (*id, a.clone());
            tokio::spawn(async move { sample_of(id, &a).await })
        })
        .collect();
    let mut instances = Vec::with_capacity(asks.len());
    for (ask, (id, _)) in asks.into_iter().zip(admins) {
        instances.push(ask.await.unwrap_or_else(|e| InstanceSample {
            id: *id,
            error: Some(format!("inst{id}: {e}")),
            ..InstanceSample::default()
        }));
    }
    Sample { instances }
}

/// `fusionlab top`.
pub fn top(cluster_file: &Path, interval: Duration, once: bool, out: &mut dyn Write) -> Result<u8> {
    let c = ClusterFile::read(cluster_file).map_err(Failure::input)?;
    let label = cluster_file.display().to_string();
    let rt = crate::live::runtime()?;
    let admins: Vec<(u8, Admin)> = rt
        .block_on(async {
            c.instances
                .iter()
                .map(|m| {
                    Ok((
                        m.id,
                        Admin::new(&format!("inst{}", m.id), &m.admin, &c.token)?,
                    ))
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .map_err(Failure::input)?;
    let take = || rt.block_on(sample(&admins));
    if once {
        let before = take();
        std::thread::sleep(interval);
        let now = take();
        let height = u16::try_from(10 + 4 * admins.len()).unwrap_or(u16::MAX);
        let mut t = Terminal::new(TestBackend::new(100, height)).context("a screen")?;
        t.draw(|f| view::draw(f, &label, &before, &now))
            .context("drawing the screen")?;
        let buf = t.backend().buffer();
        for y in 0..buf.area.height {
            let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
            writeln!(out, "{}", line.trim_end())?;
        }
        return Ok(exit::OK);
    }
    let mut terminal = ratatui::init();
    let shown = screen_loop(&mut terminal, &label, interval, take);
    ratatui::restore();
    shown?;
    Ok(exit::OK)
}

/// Refresh every `interval` until `q`, Esc or Ctrl-C.
fn screen_loop(
    terminal: &mut ratatui::DefaultTerminal,
    label: &str,
    interval: Duration,
    mut take: impl FnMut() -> Sample,
) -> Result<()> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    let mut before = take();
    let mut now = before.clone();
    loop {
        terminal
            .draw(|f| view::draw(f, label, &before, &now))
            .context("drawing the screen")?;
        let next = Instant::now() + interval;
        while let Some(left) = next.checked_duration_since(Instant::now()) {
            if !event::poll(left).context("reading the keyboard")? {
                break;
            }
            if let Event::Key(k) = event::read().context("reading the keyboard")?
                && k.kind == KeyEventKind::Press
            {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                    return Ok(());
                }
            }
        }
        before = std::mem::replace(&mut now, take());
    }
}
