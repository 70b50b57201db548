//! RMAN's session: its channels, the units of work of the running backup
//! and what each channel did; it answers what a channel does next and
//! what a finished backup reports (routed in backup.rs).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::config::{NS_PER_S, Nanos};
use crate::cpu::ProcId;

/// A datafile's block runs (`start..end` addresses), in file order,
/// shared by its sections.
pub(super) type Runs = Arc<Vec<(u32, u32)>>;

/// The bytes an RMAN channel reads at a time (its disk buffer: 1 MB).
pub const READ_BYTES: u64 = 1 << 20;

/// Part of a datafile a channel backs up at a time: blocks `next..end`
/// of the file's runs.
#[derive(Clone, Debug)]
pub(super) struct Unit {
    /// The file's block runs (`start..end` addresses), in file order.
    runs: Runs,
    /// Offsets in the file (blocks from its first).
    next: u32,
    end: u32,
}

impl Unit {
    /// Blocks `next..end` of a file of `runs`.
    pub fn section(runs: Runs, next: u32, end: u32) -> Unit {
        debug_assert!(next < end, "an empty section");
        Unit { runs, next, end }
    }

    /// The addresses of the next read: at most `most` blocks, contiguous.
    fn next_read(&self, most: u32) -> Option<(u32, u32)> {
        let mut offset = self.next;
        if offset >= self.end {
            return None;
        }
        for &(start, end) in self.runs.iter() {
            let len = end.saturating_sub(start);
            if offset < len {
                let count = (len - offset).min(self.end - self.next).min(most);
                // Each bound is above zero: a block left in the run and in
                // the unit, and a read covers one at least.
                debug_assert!(count > 0, "a read of no blocks (at most {most})");
                return Some((start + offset, count));
            }
            offset -= len;
        }
        None
    }
}

#[derive(Debug)]
struct Channel {
    proc: ProcId,
    unit: Option<Unit>,
    /// Blocks and units this channel backed up in the current backup.
    blocks: u64,
    units: u32,
    busy: bool,
}

/// The instance's RMAN session.
#[derive(Debug, Default)]
pub(super) struct Rman {
    channels: Vec<Channel>,
    /// Units not taken yet; filled once per backup (at most one unit per
    /// section of the database, so bounded by its size).
    work: VecDeque<Unit>,
    /// Channels of the current backup (the first `active` of `channels`).
    active: usize,
    started: Option<Nanos>,
}

/// `h:mm:ss` of a duration, as RMAN prints elapsed times.
pub(super) fn hms(ns: Nanos) -> String {
    let s = ns / NS_PER_S;
    let frac = (ns % NS_PER_S) / (NS_PER_S / 100);
    format!("{}:{:02}:{:02}.{frac:02}", s / 3600, s / 60 % 60, s % 60)
}

/// What a channel does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Read `count` blocks from `first`; `units_done` units finished on the way.
    Read {
        first: u32,
        count: u32,
        units_done: u32,
    },
    /// No work left for it (`units_done` finished on the way): it is done.
    Done { units_done: u32 },
    /// Not a channel of the running backup.
    Nothing,
}

/// A backup ended: what it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Finished {
    pub elapsed_ns: Nanos,
    /// Channels that backed up at least one unit.
    pub used: u64,
    /// The most blocks one channel backed up.
    pub largest: u64,
}

impl Rman {
    pub fn running(&self) -> bool {
        self.started.is_some()
    }

    /// Channels allocated so far (they are kept for later backups).
    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    /// A channel allocated: process `proc`.
    pub fn add_channel(&mut self, proc: ProcId) {
        self.channels.push(Channel {
            proc,
            unit: None,
            blocks: 0,
            units: 0,
            busy: false,
        });
    }

    /// A backup of `work` starts at `now` on the first `channels` channels.
    pub fn start(&mut self, work: VecDeque<Unit>, channels: usize, now: Nanos) {
        assert!(!self.running(), "two backups at once");
        assert!(
            channels <= self.channels.len(),
            "a backup on {channels} channels, {} allocated",
            self.channels.len()
        );
        self.work = work;
        self.active = channels;
        self.started = Some(now);
        for c in &mut self.channels[..self.active] {
            c.blocks = 0;
            c.units = 0;
            c.busy = true;
        }
    }

    /// Channel `c`'s next step: its unit's next read of at most `most`
    /// blocks, or the next unit's, or none left.
    pub fn next(&mut self, c: usize, most: u32) -> Next {
        let mut units_done = 0;
        let Some(channel) = self.channels.get_mut(c) else {
            return Next::Nothing;
        };
        loop {
            if channel.unit.is_none() {
                channel.unit = self.work.pop_front();
                if channel.unit.is_none() {
                    channel.busy = false;
                    return Next::Done { units_done };
                }
            }
            let Some(unit) = channel.unit.as_mut() else {
                return Next::Nothing;
            };
            match unit.next_read(most) {
                Some((first, count)) => {
                    unit.next += count;
                    return Next::Read {
                        first,
                        count,
                        units_done,
                    };
                }
                None => {
                    channel.unit = None;
                    channel.units += 1;
                    units_done += 1;
                }
            }
        }
    }

    /// Channel `c` read `blocks` blocks: the process that checks them.
    pub fn read_done(&mut self, c: usize, blocks: u64) -> Option<ProcId> {
        let channel = self.channels.get_mut(c)?;
        channel.blocks += blocks;
        Some(channel.proc)
    }

    /// Channel `c` is done at `now`: its alert log line, and the backup's
    /// figures when it was the last one busy (the backup then ends).
    pub fn channel_done(&mut self, c: usize, now: Nanos) -> (Option<String>, Option<Finished>) {
        let Some(started) = self.started else {
            return (None, None);
        };
        let line = self.channels.get(c).map(|ch| {
            format!(
                "RMAN: channel ORA_DISK_{}: {} file(s) or section(s), {} blocks, finished after {}",
                c + 1,
                ch.units,
                ch.blocks,
                hms(now - started)
            )
        });
        let active = &self.channels[..self.active];
        if active.iter().any(|ch| ch.busy) {
            return (line, None);
        }
        let finished = Finished {
            elapsed_ns: now - started,
            used: active.iter().filter(|ch| ch.units > 0).count() as u64,
            largest: active.iter().map(|ch| ch.blocks).max().unwrap_or(0),
        };
        self.started = None;
        self.active = 0;
        debug_assert!(self.work.is_empty(), "a backup ended with work left");
        (line, Some(finished))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_reads_across_runs_in_contiguous_pieces() {
        let unit = Unit {
            runs: Arc::new(vec![(100, 103), (200, 210)]),
            next: 1,
            end: 9,
        };
        assert_eq!(unit.next_read(128), Some((101, 2)));
        let later = Unit { next: 3, ..unit };
        assert_eq!(later.next_read(4), Some((200, 4)));
        let done = Unit { next: 9, ..later };
        assert_eq!(done.next_read(4), None);
    }

    fn unit(start: u32, end: u32) -> Unit {
        Unit {
            runs: Arc::new(vec![(start, end)]),
            next: 0,
            end: end - start,
        }
    }

    #[test]
    fn channels_take_units_in_order_and_the_last_one_done_ends_the_backup() {
        let mut rman = Rman::default();
        rman.add_channel(10);
        rman.add_channel(11);
        rman.start(VecDeque::from([unit(0, 3), unit(100, 101)]), 2, 1_000);
        assert!(rman.running());
        assert_eq!(
            rman.next(0, 2),
            Next::Read {
                first: 0,
                count: 2,
                units_done: 0
            }
        );
        assert_eq!(
            rman.next(1, 2),
            Next::Read {
                first: 100,
                count: 1,
                units_done: 0
            }
        );
        assert_eq!(rman.read_done(0, 2), Some(10));
        assert_eq!(rman.read_done(1, 1), Some(11));
        assert_eq!(rman.next(1, 2), Next::Done { units_done: 1 });
        let (line, finished) = rman.channel_done(1, 2_000);
        assert!(line.is_some_and(|l| l.contains("ORA_DISK_2: 1 file(s)")));
        assert_eq!(finished, None, "channel 1 is still busy");
        assert_eq!(
            rman.next(0, 2),
            Next::Read {
                first: 2,
                count: 1,
                units_done: 0
            }
        );
        rman.read_done(0, 1);
        assert_eq!(rman.next(0, 2), Next::Done { units_done: 1 });
        let (_, finished) = rman.channel_done(0, 3_000);
        assert_eq!(
            finished,
            Some(Finished {
                elapsed_ns: 2_000,
                used: 2,
                largest: 3
            })
        );
        assert!(!rman.running());
        assert_eq!(rman.next(5, 2), Next::Nothing, "not a channel");
    }

    #[test]
    fn elapsed_times_print_as_rman_does() {
        assert_eq!(
            hms(2 * 3600 * NS_PER_S + 25 * 60 * NS_PER_S + 10 * NS_PER_S),
            "2:25:10.00"
        );
    }
}
