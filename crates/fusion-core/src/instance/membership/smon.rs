//! SMON's instance recovery of the dead instances' redo threads, on the
//! recovering instance (the lowest-numbered survivor), rac-internals.md §8
//! steps 4–12:
//! 1. while the directory is frozen, read each dead thread from the store
//!    and run the first pass (recovery.rs): the recovery set, sorted by
//!    first-dirty SCN, and the dead transactions, committed or not;
//! 2. claim the recovery set at the blocks' masters (with this instance's
//!    reconfiguration reports, reconfig.rs): requests for a claimed block
//!    wait until it is recovered;
//! 3. once unfrozen, recover [`RECOVERY_BLOCKS_IN_FLIGHT`] blocks at a time:
//!    the master says where the newest image is (a survivor's current copy:
//!    nothing to do; its newest past image; or disk), the dead threads'
//!    changes newer than the image are applied to it, the dead
//!    transactions' uncommitted changes rolled back, and the block written
//!    before its claim is released.
//!
//! The dead transactions' changes in blocks outside the recovery set are
//! rolled back where they are met (on-demand rollback, access.rs): every
//! member learned which transactions did not commit.

use rustc_hash::FxHashMap;

use super::super::Instance;
use super::super::events::IoPurpose;
use crate::block::Block;
use crate::config::Nanos;
use crate::msg::{DeadThread, Io, Msg, RecoverSource, RedoRecord};
use crate::recovery::{RecoveryReport, first_pass, roll_back_uncommitted, roll_forward};
use crate::types::{BlockAddr, InstId, InstSet, Scn, Xid};

/// Blocks recovered at once (the reads, applies and writes of Oracle's
/// parallel recovery processes overlap this much).
pub const RECOVERY_BLOCKS_IN_FLIGHT: usize = 16;

#[derive(Debug, Default)]
pub(super) struct Smon {
    run: Option<Box<Run>>,
    /// The number of the run under way (a run started over gets the next).
    run_no: u32,
}

impl Smon {
    /// A recovery runs here.
    pub(super) fn running(&self) -> bool {
        self.run.is_some()
    }
}

#[derive(Debug)]
struct Run {
    dead: InstSet,
    detected_at: Nanos,
    /// Threads not read yet.
    reading: u32,
    /// The reads were issued (once the dead are fenced).
    read_started: bool,
    /// Past images sent for blocks being recovered, until the disk's image
    /// is read to compare.
    past_images: FxHashMap<BlockAddr, Block>,
    /// The dead threads' records, merged by SCN once all are read.
    records: Vec<RedoRecord>,
    /// Per block of the recovery set: its change records, in SCN order.
    changes: FxHashMap<BlockAddr, Vec<usize>>,
    blocks: Vec<BlockAddr>,
    next: usize,
    in_flight: usize,
    uncommitted: Vec<Xid>,
    redo_bytes: u64,
    unfrozen_at: Option<Nanos>,
    blocks_read: u64,
    blocks_written: u64,
    blocks_recovered: u64,
    applied_bytes: u64,
}

impl Instance {
    /// This instance recovers `dead`: read their threads. A recovery under
    /// way here is started over: the directory it claimed blocks in is gone.
    pub(in crate::instance) fn smon_start(&mut self, dead: InstSet) {
        let now = self.k.now();
        self.membership.smon.run = None;
        self.membership.smon.run_no = self.membership.smon.run_no.wrapping_add(1);
        self.obs
            .alert(now, "Instance recovery: looking for dead threads");
        self.obs.alert(
            now,
            format!("Beginning instance recovery of {} threads", dead.len()),
        );
        self.obs.alert(now, "Started redo scan");
        self.membership.smon.run = Some(Box::new(Run {
            dead,
            detected_at: now,
            reading: dead.len(),
            read_started: false,
            past_images: FxHashMap::default(),
            records: Vec::new(),
            changes: FxHashMap::default(),
            blocks: Vec::new(),
            next: 0,
            in_flight: 0,
            uncommitted: Vec::new(),
            redo_bytes: 0,
            unfrozen_at: None,
            blocks_read: 0,
            blocks_written: 0,
            blocks_recovered: 0,
            applied_bytes: 0,
        }));
        self.smon_read_threads();
    }

    /// Read the dead threads once every fence is up: a thread read before
    /// its instance is fenced could miss what it writes meanwhile (a frozen
    /// or cut-off instance still runs).
    pub(in crate::instance) fn smon_read_threads(&mut self) {
        if !self.membership.standing.fences_up() {
            return;
        }
        let Some(run) = self.membership.smon.run.as_mut() else {
            return;
        };
        if run.read_started {
            return;
        }
        run.read_started = true;
        for thread in run.dead.iter() {
            let run = self.membership.smon.run_no;
            self.start_io(Io::ReadRedo { thread }, IoPurpose::RedoScan { run });
        }
    }

    /// Whether I/O of run `run` belongs to the recovery under way.
    pub(in crate::instance) fn smon_current(&self, run: u32) -> bool {
        self.membership.smon.run.is_some() && self.membership.smon.run_no == run
    }

    /// An instance recovery is under way here.
    /// A dead thread was read.
    pub(in crate::instance) fn on_redo_read(&mut self, records: Vec<RedoRecord>) {
        let Some(run) = self.membership.smon.run.as_mut() else {
            return;
        };
        run.records.extend(records);
        run.reading = run.reading.saturating_sub(1);
        if run.reading > 0 {
            return;
        }
        // Several threads' records merge by SCN (each thread is in order).
        run.records.sort_by_key(|r| r.scn);
        let set = first_pass(&run.records);
        run.redo_bytes = set.redo_bytes;
        run.uncommitted.clone_from(&set.uncommitted);
        run.blocks = set.blocks.iter().map(|b| b.blk).collect();
        for (i, r) in run.records.iter().enumerate() {
            if let (Some(blk), Some(_)) = (r.blk, &r.change) {
                run.changes.entry(blk).or_default().push(i);
            }
        }
        run.changes
            .retain(|blk, _| set.blocks.iter().any(|b| b.blk == *blk));
        let dead: Vec<DeadThread> = run
            .dead
            .iter()
            .map(|inst| DeadThread {
                inst,
                committed: set
                    .committed
                    .iter()
                    .copied()
                    .filter(|(x, _)| x.inst() == inst)
                    .collect(),
                uncommitted: set
                    .uncommitted
                    .iter()
                    .copied()
                    .filter(|x| x.inst() == inst)
                    .collect(),
                floor_scn: floor_scn(&run.records, inst, self.k.scn()),
                xids_below: self.fg.txns().xids_below(inst),
            })
            .collect();
        let claims = run.blocks.clone();
        let (kb, n) = (set.redo_bytes / 1024, claims.len());
        self.obs.alert(
            self.k.now(),
            format!("Completed redo scan read {kb} KB redo, {n} data blocks need recovery"),
        );
        self.add_to_reports(claims, dead);
        self.send_reports();
    }

    /// The directory unfroze: apply the redo.
    pub(in crate::instance) fn smon_unfrozen(&mut self) {
        let now = self.k.now();
        let Some(run) = self.membership.smon.run.as_mut() else {
            return;
        };
        if run.reading > 0 || run.unfrozen_at.is_some() {
            return;
        }
        run.unfrozen_at = Some(now);
        self.obs.alert(now, "Started redo application");
        self.smon_next();
    }

    /// Start recovering blocks up to the window.
    fn smon_next(&mut self) {
        let mut ask = Vec::new();
        if let Some(run) = self.membership.smon.run.as_mut() {
            while run.in_flight < RECOVERY_BLOCKS_IN_FLIGHT && run.next < run.blocks.len() {
                ask.push(run.blocks[run.next]);
                run.next += 1;
                run.in_flight += 1;
            }
        }
        for blk in ask {
            let master = self.block_master(blk);
            if master == self.id {
                let me = self.id;
                self.dir_recover(me, blk);
            } else {
                self.send(master, Msg::RecoverBlock { blk });
            }
        }
        self.smon_maybe_done();
    }

    /// Where the newest image of a claimed block is came back.
    pub(in crate::instance) fn on_recover_image(&mut self, blk: BlockAddr, source: RecoverSource) {
        match source {
            RecoverSource::Current => self.smon_block_done(blk, 0, false),
            RecoverSource::Disk | RecoverSource::Image(_) => {
                if let (Some(run), RecoverSource::Image(pi)) =
                    (self.membership.smon.run.as_mut(), source)
                {
                    run.past_images.insert(blk, *pi);
                }
                // The disk too: a write whose news was lost with the old
                // incarnation may have made it newer than every past image.
                if let Some(run) = self.membership.smon.run.as_mut() {
                    run.blocks_read += 1;
                }
                let run = self.membership.smon.run_no;
                self.start_io(Io::ReadBlock { blk }, IoPurpose::RecoverRead { run });
            }
        }
    }

    /// A block of the recovery set was read from disk: recover from it, or
    /// from the past image sent for it if that is newer.
    pub(in crate::instance) fn smon_disk_read(&mut self, disk: Block) {
        let pi = self
            .membership
            .smon
            .run
            .as_mut()
            .and_then(|r| r.past_images.remove(&disk.addr));
        match pi {
            Some(pi) if pi.scn > disk.scn => self.smon_apply(pi),
            _ => self.smon_apply(disk),
        }
    }

    /// The second pass for one block: the dead threads' newer changes, then
    /// the rollback of their uncommitted ones; the result is written.
    pub(in crate::instance) fn smon_apply(&mut self, image: Block) {
        let blk = image.addr;
        let scn = self.next_scn();
        let Some(run) = self.membership.smon.run.as_mut() else {
            return;
        };
        let records = run
            .changes
            .get(&blk)
            .map(|ix| {
                ix.iter()
                    .filter_map(|&i| run.records.get(i))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let image_scn = image.scn;
        let applied_bytes: u64 = records
            .iter()
            .filter(|r| r.scn > image_scn)
            .map(|r| u64::from(r.bytes))
            .sum();
        match roll_forward(image, records) {
            Ok((mut block, _)) => {
                roll_back_uncommitted(&mut block, &run.uncommitted, scn);
                run.applied_bytes += applied_bytes;
                run.blocks_recovered += 1;
                let scn = block.scn;
                self.start_io(
                    Io::WriteBlock {
                        block: Box::new(block),
                    },
                    IoPurpose::RecoverWrite {
                        blk,
                        scn,
                        run: self.membership.smon.run_no,
                    },
                );
            }
            Err(e) => {
                self.error(format!("instance recovery: {e}"));
                self.smon_block_done(blk, 0, false);
            }
        }
    }

    /// A recovered block is on disk (or needed nothing): release its claim.
    pub(in crate::instance) fn smon_block_done(&mut self, blk: BlockAddr, scn: Scn, written: bool) {
        if let Some(run) = self.membership.smon.run.as_mut() {
            run.in_flight = run.in_flight.saturating_sub(1);
            if written {
                run.blocks_written += 1;
            }
        }
        let master = self.block_master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_block_recovered(me, blk, scn);
        } else {
            self.send(master, Msg::BlockRecovered { blk, scn });
        }
        self.smon_next();
    }

    fn smon_maybe_done(&mut self) {
        let done = self.membership.smon.run.as_ref().is_some_and(|r| {
            r.unfrozen_at.is_some() && r.in_flight == 0 && r.next >= r.blocks.len()
        });
        if !done {
            return;
        }
        let Some(run) = self.membership.smon.run.take() else {
            return;
        };
        let now = self.k.now();
        self.obs.alert(
            now,
            format!(
                "Completed redo application of {:.2}MB",
                run.applied_bytes as f64 / (1024.0 * 1024.0)
            ),
        );
        for thread in run.dead.iter() {
            self.obs.alert(
                now,
                format!(
                    "Completed instance recovery at Thread {}: scn {}",
                    thread.number(),
                    self.k.scn()
                ),
            );
        }
        self.obs.alert(
            now,
            format!(
                "  {} data blocks read, {} data blocks written, {} redo k-bytes read",
                run.blocks_read,
                run.blocks_written,
                run.redo_bytes / 1024
            ),
        );
        let unfrozen_at = run.unfrozen_at.unwrap_or(now);
        // Nobody needs to read these threads again.
        self.membership.standing.recovered(run.dead);
        for to in self.membership.css.peers().iter() {
            self.send(to, Msg::ThreadsRecovered { threads: run.dead });
        }
        self.roll_back_dead_in_cache();
        for dead_instance in run.dead.iter() {
            self.membership.standing.report_recovery(RecoveryReport {
                dead_instance,
                recovered_by: self.id,
                detected_at: run.detected_at,
                unfrozen_at,
                cache_recovered_at: now,
                completed_at: now,
                redo_bytes_read: run.redo_bytes,
                blocks_recovered: run.blocks_recovered,
                transactions_rolled_back: run
                    .uncommitted
                    .iter()
                    .filter(|x| x.inst() == dead_instance)
                    .count() as u64,
            });
        }
    }

    /// Transaction recovery once a dead thread is recovered: the dead
    /// instances' uncommitted changes in blocks this instance holds current
    /// in X (shipped to it before the death, so instance recovery found them
    /// current and left them as they were) are rolled back now, as SMON rolls
    /// back dead transactions, rather than only when a session meets their
    /// row locks (found by chaos: a block nobody touched again kept the
    /// change). A buffer in use, or on its way out, is rolled back when its
    /// last pin goes (see [`Instance::roll_back_dead_at_unpin`]).
    pub(in crate::instance) fn roll_back_dead_in_cache(&mut self) {
        if !self.fg.txns().has_dead() {
            return;
        }
        let ids: Vec<super::super::cache::BufId> = self.cache.iter().map(|(id, _)| id).collect();
        for id in ids {
            self.roll_back_dead_at_unpin(id);
        }
    }

    /// Roll back, in one unpinned current buffer held in X, every change of
    /// a dead instance's uncommitted transaction. Cheap when no instance
    /// died: nothing is looked at.
    pub(in crate::instance) fn roll_back_dead_at_unpin(&mut self, buf: super::super::cache::BufId) {
        if !self.fg.txns().has_dead() {
            return;
        }
        let Some(b) = self.cache.try_get(buf) else {
            return;
        };
        if b.state() != super::super::BufState::Xcur || b.pinned() || b.leaving() {
            return;
        }
        let dead: Vec<Xid> = b
            .image
            .itl
            .iter()
            .filter(|e| e.commit.is_none() && self.fg.txns().is_dead_uncommitted(e.xid))
            .map(|e| e.xid)
            .collect();
        for xid in dead {
            self.roll_back_dead(buf, xid);
        }
    }

    /// On-demand rollback: `xid` is a dead instance's uncommitted
    /// transaction with changes in current buffer `buf` (held in X by a
    /// session that met its lock): roll them back here. Returns whether
    /// anything was rolled back (then look at the block again).
    pub(in crate::instance) fn roll_back_dead(
        &mut self,
        buf: super::super::cache::BufId,
        xid: Xid,
    ) -> bool {
        if !self.fg.txns().is_dead_uncommitted(xid) {
            return false;
        }
        let scn = self.next_scn();
        let applied = self.cache.get_mut(buf).image.roll_back(xid, scn);
        if applied == 0 {
            return false;
        }
        self.k.add(
            crate::stats::Stat::RollbackUndoRecordsApplied,
            u64::from(applied),
        );
        let (rba, now) = (self.redo.end_rba(), self.k.now());
        self.cache.dirtied(buf, rba, now);
        true
    }

    // ----- the master's and the past-image holder's side ----------------------------

    /// Send this instance's newest past image of `blk` to the recovering instance.
    pub(in crate::instance) fn send_pi(&mut self, blk: BlockAddr, to: InstId) {
        let newest = self
            .cache
            .buffers_of(blk)
            .filter(|&id| self.cache.get(id).state() == super::super::BufState::Pi)
            .max_by_key(|&id| self.cache.get(id).image.scn);
        let source = match newest {
            Some(id) => RecoverSource::Image(Box::new(self.cache.get(id).image.clone())),
            // Written and discarded meanwhile: the disk has it.
            None => RecoverSource::Disk,
        };
        self.recover_reply(to, blk, source);
    }

    pub(in crate::instance) fn recover_reply(
        &mut self,
        to: InstId,
        blk: BlockAddr,
        source: RecoverSource,
    ) {
        if to == self.id {
            self.on_recover_image(blk, source);
        } else {
            self.send(to, Msg::RecoverImage { blk, source });
        }
    }

    /// A claimed block is recovered (on disk as of `scn` when `scn` > 0):
    /// past images it covers go, and requests waiting for it go on.
    pub(in crate::instance) fn dir_block_recovered(
        &mut self,
        _from: InstId,
        blk: BlockAddr,
        scn: Scn,
    ) {
        let holders = self.gc.recovered(blk, scn > 0);
        for h in holders.iter() {
            if h == self.id {
                self.discard_pi(blk, scn);
            } else {
                self.send(h, Msg::DiscardPi { blk, scn });
            }
        }
        self.dir_drain(blk);
    }
}

/// The SCN at or before which a transaction of `inst` that is in none of
/// the redo read committed: the first record of its thread read (or, with
/// none, the reader's SCN).
fn floor_scn(records: &[RedoRecord], inst: InstId, now: Scn) -> Scn {
    records
        .iter()
        .filter(|r| !r.xid.is_none() && r.xid.inst() == inst)
        .map(|r| r.scn)
        .min()
        .unwrap_or(now)
}
