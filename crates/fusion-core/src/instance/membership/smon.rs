//! SMON's instance recovery of the dead instances' redo threads, on the
//! recovering instance (the lowest-numbered survivor), rac-internals.md §8
//! steps 4–12:
//! 1. while the directory is frozen, read each dead thread from the store
//!    and run the first pass (recovery.rs): the recovery set, sorted by
//!    first-dirty SCN, and the dead transactions, committed or not;
//! 2. claim the recovery set at the blocks' masters (with this instance's
//!    reconfiguration reports, reconfig.rs): requests for a claimed block
//!    wait until it is recovered;
//! 3. once unfrozen, recover [`RECOVERY_BLOCKS_IN_FLIGHT_MAX`] blocks at a time:
//!    the master says where the newest image is (a survivor's current copy:
//!    nothing to do; its newest past image; or disk), the dead threads'
//!    changes newer than the image are applied to it, the dead
//!    transactions' uncommitted changes rolled back, and the block written
//!    before its claim is released.
//!
//! The dead transactions' changes in blocks outside the recovery set are
//! rolled back where they are met (on-demand rollback, access.rs): every
//! member learned which transactions did not commit.
//!
//! SMON's run is [`Membership`]'s: its methods here take the kernel and
//! the observer, and answer what the rest of the instance must do (the
//! claims to add to the reports, the blocks whose masters to ask, a block
//! done). The dispatcher asks the masters and applies the answers in
//! order. The rollbacks of dead transactions are functions of the cache
//! (survivor.rs), given what the transaction table knows.

use rustc_hash::FxHashMap;

use super::super::events::IoPurpose;
use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::{Membership, RECOVERY_BLOCKS_IN_FLIGHT_MAX, Run};
use crate::block::Block;
use crate::msg::{DeadThread, Io, Msg, RecoverSource, RedoRecord};
use crate::recovery::{RecoveryReport, first_pass, roll_back_uncommitted, roll_forward};
use crate::types::{BlockAddr, InstId, InstSet, Scn};

impl Membership {
    /// This instance recovers `dead`: read their threads. A recovery under
    /// way here is started over: the directory it claimed blocks in is gone.
    pub fn smon_start(&mut self, k: &mut Kernel, obs: &mut Observer, dead: InstSet) {
        debug_assert!(!dead.is_empty(), "a recovery of no thread");
        debug_assert!(!dead.contains(k.id()), "{} recovers itself", k.id());
        let now = k.now();
        self.smon.run = None;
        self.smon.run_no = self.smon.run_no.wrapping_add(1);
        obs.alert(now, "Instance recovery: looking for dead threads");
        obs.alert(
            now,
            format!("Beginning instance recovery of {} threads", dead.len()),
        );
        obs.alert(now, "Started redo scan");
        self.smon.run = Some(Box::new(Run {
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
        self.smon_read_threads(k);
    }

    /// Read the dead threads once every fence is up: a thread read before
    /// its instance is fenced could miss what it writes meanwhile (a frozen
    /// or cut-off instance still runs).
    pub fn smon_read_threads(&mut self, k: &mut Kernel) {
        if !self.standing.fences_up() {
            return;
        }
        let Some(run) = self.smon.run.as_mut() else {
            return;
        };
        if run.read_started {
            return;
        }
        run.read_started = true;
        for thread in run.dead.iter() {
            let run = self.smon.run_no;
            k.start_io(Io::ReadRedo { thread }, IoPurpose::RedoScan { run });
        }
    }

    /// Whether I/O of run `run` belongs to the recovery under way.
    pub fn smon_current(&self, run: u32) -> bool {
        self.smon.run.is_some() && self.smon.run_no == run
    }

    /// A dead thread was read. Once every one is, the first pass: the
    /// blocks to claim at their masters and what it found of the dead
    /// transactions, to add to this instance's reports before they go.
    /// `xids_below`: the transactions of an instance this one knows began
    /// (none of them committed in the redo read is then committed before it).
    pub fn smon_redo_read(
        &mut self,
        k: &Kernel,
        obs: &mut Observer,
        records: Vec<RedoRecord>,
        xids_below: impl Fn(InstId) -> u64,
    ) -> Option<(Vec<BlockAddr>, Vec<DeadThread>)> {
        let run = self.smon.run.as_mut()?;
        // One read per dead thread, of the run under way (the caller checked).
        debug_assert!(run.reading > 0, "a dead thread read twice");
        run.records.extend(records);
        run.reading = run.reading.saturating_sub(1);
        if run.reading > 0 {
            return None;
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
                floor_scn: floor_scn(&run.records, inst, k.scn()),
                xids_below: xids_below(inst),
            })
            .collect();
        let claims = run.blocks.clone();
        let (kb, n) = (set.redo_bytes / 1024, claims.len());
        obs.alert(
            k.now(),
            format!("Completed redo scan read {kb} KB redo, {n} data blocks need recovery"),
        );
        Some((claims, dead))
    }

    /// The directory unfroze: true when the redo application starts (then
    /// ask for the first blocks, [`Membership::smon_window`]).
    pub fn smon_unfrozen(&mut self, k: &Kernel, obs: &mut Observer) -> bool {
        let now = k.now();
        let Some(run) = self.smon.run.as_mut() else {
            return false;
        };
        if run.reading > 0 || run.unfrozen_at.is_some() {
            return false;
        }
        run.unfrozen_at = Some(now);
        obs.alert(now, "Started redo application");
        true
    }

    /// The blocks to start recovering now, up to the window: ask their
    /// masters where the newest image is.
    pub fn smon_window(&mut self) -> Vec<BlockAddr> {
        let mut ask = Vec::new();
        if let Some(run) = self.smon.run.as_mut() {
            while run.in_flight < RECOVERY_BLOCKS_IN_FLIGHT_MAX && run.next < run.blocks.len() {
                ask.push(run.blocks[run.next]);
                run.next += 1;
                run.in_flight += 1;
            }
        }
        ask
    }

    /// Where the newest image of a claimed block is came back: true when a
    /// survivor holds it current (nothing to recover: the block is done),
    /// else the disk's image is read to compare.
    pub fn smon_image(&mut self, k: &mut Kernel, blk: BlockAddr, source: RecoverSource) -> bool {
        let pi = match source {
            RecoverSource::Current => return true,
            RecoverSource::Disk => None,
            RecoverSource::Image(pi) => Some(pi),
        };
        if let Some(run) = self.smon.run.as_mut() {
            if let Some(pi) = pi {
                run.past_images.insert(blk, *pi);
            }
            run.blocks_read += 1;
        }
        // The disk too: a write whose news was lost with the old
        // incarnation may have made it newer than every past image.
        let run = self.smon.run_no;
        k.start_io(Io::ReadBlock { blk }, IoPurpose::RecoverRead { run });
        false
    }

    /// A block of the recovery set was read from disk: recover from it, or
    /// from the past image sent for it if that is newer. `Some(blk)`: it
    /// could not be recovered (an error is recorded) and is done.
    pub fn smon_disk_read(&mut self, k: &mut Kernel, disk: Block) -> Option<BlockAddr> {
        let pi = self
            .smon
            .run
            .as_mut()
            .and_then(|r| r.past_images.remove(&disk.addr));
        match pi {
            Some(pi) if pi.scn > disk.scn => self.smon_apply(k, pi),
            _ => self.smon_apply(k, disk),
        }
    }

    /// The second pass for one block: the dead threads' newer changes, then
    /// the rollback of their uncommitted ones; the result is written.
    fn smon_apply(&mut self, k: &mut Kernel, image: Block) -> Option<BlockAddr> {
        let blk = image.addr;
        let scn = k.next_scn();
        let run_no = self.smon.run_no;
        let run = self.smon.run.as_mut()?;
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
                k.start_io(
                    Io::WriteBlock {
                        block: Box::new(block),
                    },
                    IoPurpose::RecoverWrite {
                        blk,
                        scn,
                        run: run_no,
                    },
                );
                None
            }
            Err(e) => {
                k.error(&format!("instance recovery: {e}"));
                Some(blk)
            }
        }
    }

    /// A recovered block is on disk (`written`) or needed nothing: one
    /// fewer in flight (the caller releases its claim at the master).
    pub fn smon_block_done(&mut self, written: bool) {
        if let Some(run) = self.smon.run.as_mut() {
            // A peer's answer for a block not asked for may come: not below zero.
            run.in_flight = run.in_flight.saturating_sub(1);
            if written {
                run.blocks_written += 1;
            }
        }
    }

    /// Once every block is recovered: the recovery is complete (the alert
    /// log, the peers and the driver told). True when it completed: the
    /// dead transactions' changes left in the cache are rolled back next.
    pub fn smon_finish(&mut self, k: &mut Kernel, obs: &mut Observer) -> bool {
        let done = self.smon.run.as_ref().is_some_and(|r| {
            r.unfrozen_at.is_some() && r.in_flight == 0 && r.next >= r.blocks.len()
        });
        if !done {
            return false;
        }
        let Some(run) = self.smon.run.take() else {
            return false;
        };
        let now = k.now();
        obs.alert(
            now,
            format!(
                "Completed redo application of {:.2}MB",
                run.applied_bytes as f64 / (1024.0 * 1024.0)
            ),
        );
        for thread in run.dead.iter() {
            obs.alert(
                now,
                format!(
                    "Completed instance recovery at Thread {}: scn {}",
                    thread.number(),
                    k.scn()
                ),
            );
        }
        obs.alert(
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
        self.standing.recovered(run.dead);
        for to in self.css.peers().iter() {
            self.net()
                .send(k, to, Msg::ThreadsRecovered { threads: run.dead });
        }
        for dead_instance in run.dead.iter() {
            self.standing.report_recovery(RecoveryReport {
                dead_instance,
                recovered_by: k.id(),
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
        true
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

#[cfg(test)]
mod tests {
    use super::super::Delivery;
    use super::super::survivor::{
        roll_back_dead, roll_back_dead_at_unpin, roll_back_dead_in_cache,
    };
    use super::*;
    use crate::block::{Body, Change, Row};
    use crate::config::Catalog;
    use crate::instance::cache::{BufState, Cache};
    use crate::msg::Action;
    use crate::stats::Stat;
    use crate::types::Xid;

    const ME: InstId = InstId(0);
    const DEAD: InstId = InstId(1);

    fn rig() -> (Kernel, Membership, Observer) {
        let k = Kernel::for_instance(ME, &Catalog::default());
        let m = Membership::new(ME, 2, k.params(), 0, Delivery::Direct);
        (k, m, Observer::new(false))
    }

    fn dead_xid(seq: u64) -> Xid {
        Xid::new(DEAD, seq)
    }

    fn table(blk: BlockAddr, val: i64) -> Block {
        Block::new(
            blk,
            Body::Table {
                rows: vec![Some(Row {
                    key: 1,
                    val,
                    lock: Xid::NONE,
                })],
            },
        )
    }

    fn update(scn: Scn, xid: Xid, blk: u32, val: i64) -> RedoRecord {
        RedoRecord::change(
            scn,
            xid,
            BlockAddr(blk),
            50,
            Change::UpdateRow { slot: 0, val },
        )
    }

    #[test]
    fn recovery_claims_what_the_dead_redo_changed_and_recovers_a_window_at_a_time() {
        let (mut k, mut m, mut obs) = rig();
        let mut dead = InstSet::default();
        dead.insert(DEAD);
        m.smon_start(&mut k, &mut obs, dead);
        let actions = k.take_actions();
        let [
            Action::Io {
                io: Io::ReadRedo { thread },
                ..
            },
        ] = &actions[..]
        else {
            panic!("{actions:?}");
        };
        assert_eq!(*thread, DEAD);
        // 20 blocks changed by a transaction that never committed, one by
        // one that did.
        let mut records: Vec<RedoRecord> = (0..20)
            .map(|b| update(Scn(10 + u64::from(b)), dead_xid(1), 100 + b, 9))
            .collect();
        records.push(update(Scn(40), dead_xid(2), 200, 7));
        records.push(RedoRecord::commit(Scn(41), dead_xid(2), 10));
        let (claims, found) = m
            .smon_redo_read(&k, &mut obs, records, |_| 3)
            .expect("the only dead thread was read");
        let expected: Vec<BlockAddr> = (100..120).chain([200]).map(BlockAddr).collect();
        assert_eq!(claims, expected, "by first-dirty SCN");
        let [thread] = &found[..] else {
            panic!("{found:?}")
        };
        assert_eq!(thread.inst, DEAD);
        assert_eq!(thread.committed, vec![(dead_xid(2), Scn(41))]);
        assert_eq!(thread.uncommitted, vec![dead_xid(1)]);
        assert_eq!((thread.floor_scn, thread.xids_below), (Scn(10), 3));
        // Unfrozen: the first window of blocks goes to their masters.
        assert!(m.smon_unfrozen(&k, &mut obs));
        assert!(
            !m.smon_unfrozen(&k, &mut obs),
            "the application starts once"
        );
        let window = m.smon_window();
        assert_eq!(window, claims[..RECOVERY_BLOCKS_IN_FLIGHT_MAX].to_vec());
        assert!(m.smon_window().is_empty(), "the window is full");
        // A survivor holds the first block current: nothing to recover, and
        // the next block takes its place.
        assert!(m.smon_image(&mut k, window[0], RecoverSource::Current));
        m.smon_block_done(false);
        assert_eq!(m.smon_window(), vec![claims[RECOVERY_BLOCKS_IN_FLIGHT_MAX]]);
        assert!(k.take_actions().is_empty());
        // The second is read from disk: the dead change is applied, then
        // rolled back (its transaction never committed), and written.
        assert!(!m.smon_image(&mut k, window[1], RecoverSource::Disk));
        let actions = k.take_actions();
        let [
            Action::Io {
                io: Io::ReadBlock { blk },
                ..
            },
        ] = &actions[..]
        else {
            panic!("{actions:?}");
        };
        assert_eq!(*blk, window[1]);
        assert_eq!(m.smon_disk_read(&mut k, table(window[1], 5)), None);
        let actions = k.take_actions();
        let [
            Action::Io {
                io: Io::WriteBlock { block },
                ..
            },
        ] = &actions[..]
        else {
            panic!("{actions:?}");
        };
        assert_eq!(block.row(0).map(|r| (r.val, r.lock)), Some((5, Xid::NONE)));
        m.smon_block_done(true);
        // Every other block is current somewhere: the recovery completes.
        let mut in_flight: Vec<BlockAddr> = window[2..].to_vec();
        in_flight.push(claims[RECOVERY_BLOCKS_IN_FLIGHT_MAX]);
        in_flight.extend(m.smon_window());
        while let Some(blk) = in_flight.pop() {
            assert!(!m.smon_finish(&mut k, &mut obs), "blocks still in flight");
            assert!(m.smon_image(&mut k, blk, RecoverSource::Current));
            m.smon_block_done(false);
            in_flight.extend(m.smon_window());
        }
        assert!(m.smon_finish(&mut k, &mut obs));
        assert!(!m.smon_finish(&mut k, &mut obs), "it completes once");
        let told = Msg::ThreadsRecovered { threads: dead };
        let actions = k.take_actions();
        assert!(
            matches!(&actions[..], [Action::Send(env)] if env.to == DEAD && env.msg == told),
            "{actions:?}"
        );
        let [report] = &m.take_recoveries()[..] else {
            panic!()
        };
        assert_eq!((report.dead_instance, report.blocks_recovered), (DEAD, 1));
        assert_eq!(report.transactions_rolled_back, 1);
    }

    #[test]
    fn a_dead_transactions_change_in_an_unpinned_current_buffer_is_rolled_back_and_dirties_it() {
        let mut k = Kernel::for_instance(ME, &Catalog::default());
        let mut cache = Cache::new(8, 64);
        let blk = BlockAddr(3);
        let mut image = table(blk, 5);
        assert!(image.apply(&Change::UpdateRow { slot: 0, val: 9 }, dead_xid(1), Scn(4)));
        let buf = cache.insert(blk, BufState::Xcur, image);
        let dead = |x: Xid| x == dead_xid(1);
        // In use: left for its last unpin.
        cache.pin_shared(buf);
        roll_back_dead_at_unpin(&mut k, &mut cache, 77, buf, &dead);
        assert_eq!(cache.get(buf).image.row(0).map(|r| r.val), Some(9));
        assert!(!cache.unpin(buf), "the last pin went");
        roll_back_dead_at_unpin(&mut k, &mut cache, 77, buf, &dead);
        let b = cache.get(buf);
        assert_eq!(
            b.image.row(0).map(|r| (r.val, r.lock)),
            Some((5, Xid::NONE))
        );
        assert!(b.dirty());
        assert_eq!(b.last_rba, 77, "its redo ends where the redo does");
        assert_eq!(k.stats().get(Stat::RollbackUndoRecordsApplied), 1);
        // Nothing of it is left: a second rollback does nothing.
        assert!(!roll_back_dead(&mut k, &mut cache, 78, buf, dead_xid(1)));
    }

    #[test]
    fn a_dead_transactions_change_in_a_shared_copy_is_rolled_back_and_leaves_it_clean() {
        let mut k = Kernel::for_instance(ME, &Catalog::default());
        let mut cache = Cache::new(8, 64);
        let blk = BlockAddr(3);
        let mut image = table(blk, 5);
        assert!(image.apply(&Change::UpdateRow { slot: 0, val: 9 }, dead_xid(1), Scn(4)));
        // A shared copy the dead instance shipped: instance recovery found
        // the block current here and left it.
        let buf = cache.insert(blk, BufState::Scur, image);
        let dead = |x: Xid| x == dead_xid(1);
        roll_back_dead_in_cache(&mut k, &mut cache, 77, &dead);
        let b = cache.get(buf);
        assert_eq!(b.state(), BufState::Scur);
        assert_eq!(
            b.image.row(0).map(|r| (r.val, r.lock)),
            Some((5, Xid::NONE))
        );
        assert!(!b.dirty(), "a clean shared copy's holder does not write it");
        assert_eq!(k.stats().get(Stat::RollbackUndoRecordsApplied), 1);
    }
}
