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

use super::super::events::{IoPurpose, Proc};
use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::Maintenance;
use super::rman::{Next, READ_BYTES, Runs, Unit, hms};
use crate::msg::Io;
use crate::stats::Stat;
use crate::types::BlockAddr;

impl Maintenance {
    /// `BACKUP DATABASE` with `channels` channels and, when given, `SECTION SIZE`.
    pub fn begin_backup(
        &mut self,
        k: &mut Kernel,
        obs: &mut Observer,
        channels: u32,
        section_size_mb: Option<u32>,
    ) {
        if self.rman.running() {
            obs.alert(
                k.now(),
                "RMAN: BACKUP DATABASE not started: a backup is already running".to_string(),
            );
            return;
        }
        let block_bytes = u64::from(k.params().db_block_size.max(1));
        let section_blocks = section_size_mb.map(|mb| {
            u32::try_from((u64::from(mb) << 20) / block_bytes)
                .unwrap_or(u32::MAX)
                .max(1)
        });
        // The files, largest first (ties in file order).
        let mut files: Vec<(u32, Runs)> = k
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
                work.push_back(Unit::section(runs.clone(), next, end));
                next = end;
            }
        }
        let channels = usize::try_from(channels.max(1)).unwrap_or(1);
        while self.rman.channels() < channels {
            let i = self.rman.channels();
            let number = u32::try_from(i).unwrap_or(u32::MAX);
            let proc = k.add_proc(Proc::RmanChannel(number), format!("ORA_DISK_{}", i + 1));
            self.rman.add_channel(proc);
        }
        let sections = match section_size_mb {
            Some(mb) => format!(" section size {mb} M"),
            None => String::new(),
        };
        obs.alert(
            k.now(),
            format!(
                "RMAN: Starting backup: {channels} channel(s) (ORA_DISK_1..{channels}), {} unit(s){sections}",
                work.len()
            ),
        );
        let now = k.now();
        self.rman.start(work, channels, now);
        for c in 0..channels {
            self.backup_next(k, obs, c);
        }
    }

    /// Channel `c` goes on: the next read of its unit, or the next unit.
    fn backup_next(&mut self, k: &mut Kernel, obs: &mut Observer, c: usize) {
        let most = u32::try_from(READ_BYTES / u64::from(k.params().db_block_size.max(1)))
            .unwrap_or(1)
            .max(1);
        match self.rman.next(c, most) {
            Next::Read {
                first,
                count,
                units_done,
            } => {
                k.add(Stat::RmanWorkUnits, u64::from(units_done));
                k.incr(Stat::RmanReads);
                let channel = u32::try_from(c).unwrap_or(u32::MAX);
                k.start_io(
                    Io::ReadBlocks {
                        first: BlockAddr(first),
                        count,
                    },
                    IoPurpose::BackupRead { channel },
                );
            }
            Next::Done { units_done } => {
                k.add(Stat::RmanWorkUnits, u64::from(units_done));
                self.backup_channel_done(k, obs, c);
            }
            Next::Nothing => {}
        }
    }

    /// Channel `c`'s read brought `blocks` blocks: check and compress them.
    pub fn backup_read_done(&mut self, k: &mut Kernel, c: u32, blocks: usize) {
        let blocks = u64::try_from(blocks).unwrap_or(u64::MAX);
        let Some(proc) = usize::try_from(c)
            .ok()
            .and_then(|c| self.rman.read_done(c, blocks))
        else {
            return;
        };
        k.add(Stat::RmanBlocksBackedUp, blocks);
        k.cpu(proc, (k.costs().rman_block_ns * blocks).max(1));
    }

    /// Channel `c` compressed what it read.
    pub fn backup_step_done(&mut self, k: &mut Kernel, obs: &mut Observer, c: u32) {
        if let Ok(c) = usize::try_from(c) {
            self.backup_next(k, obs, c);
        }
    }

    /// Channel `c` found no work left; the last one ends the backup.
    fn backup_channel_done(&mut self, k: &mut Kernel, obs: &mut Observer, c: usize) {
        let now = k.now();
        let (line, finished) = self.rman.channel_done(c, now);
        if let Some(line) = line {
            obs.alert(now, line);
        }
        let Some(f) = finished else {
            return;
        };
        k.incr(Stat::RmanBackupsCompleted);
        k.add(Stat::RmanBackupElapsedTime, f.elapsed_ns);
        k.add(Stat::RmanChannelsUsed, f.used);
        k.add(Stat::RmanChannelBlocksMax, f.largest);
        obs.alert(
            now,
            format!("RMAN: Finished backup, elapsed time {}", hms(f.elapsed_ns)),
        );
    }
}
