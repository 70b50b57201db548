//! RMAN `BACKUP DATABASE` (a phase's `backup`): channels as processes,
//! each taking the next unit of work and backing it up.
//!
//! - The database's datafiles are its tables: each table's blocks (every
//!   partition's) are one file.
//! - `CONFIGURE DEVICE TYPE DISK PARALLELISM n` allocates `n` channels
//!   (`ORA_DISK_1`, ...), processes on the CPU run queue.
//! - A unit of work is a whole file, as before 11g: a file is backed up by
//!   one channel, so the largest file bounds the backup however many
//!   channels there are. With `SECTION SIZE` (multisection, 11g) a unit
//!   is a section of a file, and every channel can work on the largest.
//! - RMAN starts the largest files first (it sorts the files by size so
//!   the backup sets come out balanced).
//! - A channel reads its unit in multiblock reads of at most
//!   [`READ_BYTES`] through the store (its latency and its IOPS budget,
//!   which all channels share), then checks and compresses each block it
//!   read (`rman_block` of CPU per block) before the next read.
//!
//! The backup's elapsed time, from `BACKUP DATABASE` to the last channel's
//! last block, is `fusionlab RMAN backup elapsed time`; each channel's
//! work is in the alert log.

use std::collections::VecDeque;
use std::sync::Arc;

use super::super::Instance;
use super::super::events::{IoPurpose, Proc};
use crate::config::{NS_PER_S, Nanos};
use crate::cpu::ProcId;
use crate::msg::Io;
use crate::stats::Stat;
use crate::types::BlockAddr;

/// A datafile's block runs (`start..end` addresses), in file order,
/// shared by its sections.
type Runs = Arc<Vec<(u32, u32)>>;

/// The bytes an RMAN channel reads at a time (its disk buffer: 1 MB).
pub(super) const READ_BYTES: u64 = 1 << 20;

/// Part of a datafile a channel backs up at a time: blocks `next..end`
/// of the file's runs.
#[derive(Clone, Debug)]
struct Unit {
    /// The file's block runs (`start..end` addresses), in file order.
    runs: Runs,
    /// Offsets in the file (blocks from its first).
    next: u32,
    end: u32,
}

impl Unit {
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
                return Some((start + offset, count.max(1)));
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
fn hms(ns: Nanos) -> String {
    let s = ns / NS_PER_S;
    let frac = (ns % NS_PER_S) / (NS_PER_S / 100);
    format!("{}:{:02}:{:02}.{frac:02}", s / 3600, s / 60 % 60, s % 60)
}

impl Instance {
    /// `BACKUP DATABASE` with `channels` channels and, when given, `SECTION SIZE`.
    pub(in crate::instance) fn begin_backup(
        &mut self,
        channels: u32,
        section_size_mb: Option<u32>,
    ) {
        if self.maint.rman.started.is_some() {
            self.obs.alert(
                self.k.now(),
                "RMAN: BACKUP DATABASE not started: a backup is already running".to_string(),
            );
            return;
        }
        let block_bytes = u64::from(self.k.params().db_block_size.max(1));
        let section_blocks = section_size_mb.map(|mb| {
            u32::try_from((u64::from(mb) << 20) / block_bytes)
                .unwrap_or(u32::MAX)
                .max(1)
        });
        // The files, largest first (ties in file order).
        let mut files: Vec<(u32, Runs)> = self
            .k
            .layout()
            .tables
            .iter()
            .map(|t| {
                let runs = t.initial_runs();
                let size = runs.iter().map(|&(s, e)| e.saturating_sub(s)).sum();
                (size, Arc::new(runs))
            })
            .filter(|&(size, _)| size > 0)
            .collect();
        files.sort_by_key(|&(size, _)| std::cmp::Reverse(size));
        let mut work = VecDeque::new();
        for (size, runs) in files {
            let step = section_blocks.unwrap_or(size).max(1);
            let mut next = 0;
            while next < size {
                let end = next.saturating_add(step).min(size);
                work.push_back(Unit {
                    runs: runs.clone(),
                    next,
                    end,
                });
                next = end;
            }
        }
        let channels = usize::try_from(channels.max(1)).unwrap_or(1);
        while self.maint.rman.channels.len() < channels {
            let i = self.maint.rman.channels.len();
            let number = u32::try_from(i).unwrap_or(u32::MAX);
            let proc = self.add_proc(Proc::RmanChannel(number), format!("ORA_DISK_{}", i + 1));
            self.maint.rman.channels.push(Channel {
                proc,
                unit: None,
                blocks: 0,
                units: 0,
                busy: false,
            });
        }
        let sections = match section_size_mb {
            Some(mb) => format!(" section size {mb} M"),
            None => String::new(),
        };
        self.obs.alert(
            self.k.now(),
            format!(
                "RMAN: Starting backup: {channels} channel(s) (ORA_DISK_1..{channels}), {} unit(s){sections}",
                work.len()
            ),
        );
        self.maint.rman.work = work;
        self.maint.rman.active = channels;
        self.maint.rman.started = Some(self.k.now());
        for c in &mut self.maint.rman.channels[..channels] {
            c.blocks = 0;
            c.units = 0;
            c.busy = true;
        }
        for c in 0..channels {
            self.backup_next(c);
        }
    }

    /// Channel `c` goes on: the next read of its unit, or the next unit.
    fn backup_next(&mut self, c: usize) {
        let most = u32::try_from(READ_BYTES / u64::from(self.k.params().db_block_size.max(1)))
            .unwrap_or(1)
            .max(1);
        loop {
            let Some(channel) = self.maint.rman.channels.get_mut(c) else {
                return;
            };
            if channel.unit.is_none() {
                channel.unit = self.maint.rman.work.pop_front();
                if channel.unit.is_none() {
                    channel.busy = false;
                    self.backup_channel_done(c);
                    return;
                }
            }
            let Some(unit) = channel.unit.as_mut() else {
                return;
            };
            match unit.next_read(most) {
                Some((first, count)) => {
                    unit.next += count;
                    self.k.incr(Stat::RmanReads);
                    let channel = u32::try_from(c).unwrap_or(u32::MAX);
                    self.start_io(
                        Io::ReadBlocks {
                            first: BlockAddr(first),
                            count,
                        },
                        IoPurpose::BackupRead { channel },
                    );
                    return;
                }
                None => {
                    channel.unit = None;
                    channel.units += 1;
                    self.k.incr(Stat::RmanWorkUnits);
                }
            }
        }
    }

    /// Channel `c`'s read brought `blocks` blocks: check and compress them.
    pub(in crate::instance) fn backup_read_done(&mut self, c: u32, blocks: usize) {
        let Some(channel) = usize::try_from(c)
            .ok()
            .and_then(|c| self.maint.rman.channels.get_mut(c))
        else {
            return;
        };
        let blocks = u64::try_from(blocks).unwrap_or(u64::MAX);
        channel.blocks += blocks;
        let proc = channel.proc;
        self.k.add(Stat::RmanBlocksBackedUp, blocks);
        self.cpu(proc, (self.k.costs().rman_block * blocks).max(1));
    }

    /// Channel `c` compressed what it read.
    pub(in crate::instance) fn backup_step_done(&mut self, c: u32) {
        if let Ok(c) = usize::try_from(c) {
            self.backup_next(c);
        }
    }

    /// Channel `c` found no work left; the last one ends the backup.
    fn backup_channel_done(&mut self, c: usize) {
        let Some(started) = self.maint.rman.started else {
            return;
        };
        if let Some(channel) = self.maint.rman.channels.get(c) {
            let line = format!(
                "RMAN: channel ORA_DISK_{}: {} file(s) or section(s), {} blocks, finished after {}",
                c + 1,
                channel.units,
                channel.blocks,
                hms(self.k.now() - started)
            );
            self.obs.alert(self.k.now(), line);
        }
        let active = self.maint.rman.active.min(self.maint.rman.channels.len());
        if self.maint.rman.channels[..active].iter().any(|ch| ch.busy) {
            return;
        }
        let used = self.maint.rman.channels[..active]
            .iter()
            .filter(|ch| ch.units > 0)
            .count();
        let largest = self.maint.rman.channels[..active]
            .iter()
            .map(|ch| ch.blocks)
            .max()
            .unwrap_or(0);
        let elapsed = self.k.now() - started;
        self.k.incr(Stat::RmanBackupsCompleted);
        self.k.add(Stat::RmanBackupElapsedTime, elapsed);
        self.k
            .add(Stat::RmanChannelsUsed, u64::try_from(used).unwrap_or(0));
        self.k.add(Stat::RmanChannelBlocksMax, largest);
        self.obs.alert(
            self.k.now(),
            format!("RMAN: Finished backup, elapsed time {}", hms(elapsed)),
        );
        self.maint.rman.started = None;
        self.maint.rman.active = 0;
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

    #[test]
    fn elapsed_times_print_as_rman_does() {
        assert_eq!(
            hms(2 * 3600 * NS_PER_S + 25 * 60 * NS_PER_S + 10 * NS_PER_S),
            "2:25:10.00"
        );
    }
}
