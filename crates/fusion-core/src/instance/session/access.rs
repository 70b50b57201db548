//! Block access: a visit pins a buffer in CR mode (a consistent get) or in
//! current mode (a db block get), costs a CPU step, and when the step ends
//! (`visit_done`) the session reads or changes the block and moves to the
//! next point of its execution. Reading a row, updating one and scanning a
//! table happen here; index work is in insert.rs and maintain.rs.
//!
//! A block this instance does not have is asked for (`gc_request`,
//! fusion.rs); a block another session of this instance is already asking
//! for, or is changing, makes the session wait on it (`wait_on_block`).

use super::super::cache::{BufId, BufState, Cache};
use super::super::execution::{ExecPoint, Purpose};
use super::super::kernel::Kernel;
use super::super::numa;
use super::super::observe::{Observation, Observer};
use super::super::redo::Redo;
use super::state::{Acquired, AfterCpu, Changed, SessionState};
use super::{Foregrounds, record};
use crate::block::{Body, Change, CrCopy, CrError, TxState};
use crate::config::Nanos;
use crate::msg::ReqKind;
use crate::stats::{Stat, Wait};
use crate::types::{BlockAddr, InstId, Rowid, Xid};

impl Foregrounds {
    /// Where session `sid` is in its execution.
    #[inline(always)]
    pub(in crate::instance) fn point(&self, sid: u32) -> ExecPoint {
        self.sessions.session(sid).cur
    }

    /// What the session knows about a transaction: the instance's table,
    /// and the owners' answers that it was still active when asked.
    fn lookup_with_hints(&self, sid: u32) -> impl Fn(Xid) -> TxState + '_ {
        let s = self.sessions.session(sid);
        let (hints, snapshot) = (&s.hints, s.snapshot);
        move |x| match self.txns.state(x) {
            TxState::Unknown
                if hints
                    .iter()
                    .any(|&(h, asked_at)| h == x && snapshot <= asked_at) =>
            {
                TxState::Active
            }
            known => known,
        }
    }

    /// Pin `blk` for a consistent get at the session's snapshot.
    // Inlined into `visit`, its only caller: the `Acquired` it answers
    // (a built copy is large) is then never moved through memory.
    #[inline(always)]
    pub(in crate::instance) fn acquire_cr(
        &mut self,
        k: &Kernel,
        cache: &mut Cache,
        sid: u32,
        blk: BlockAddr,
    ) -> Acquired {
        let (snapshot, reader) = {
            let s = self.sessions.session(sid);
            (s.snapshot, s.xid)
        };
        let get_ns = k.costs().consistent_get_ns;
        // 1. The current buffer, as it is or rolled back here.
        if let Some(current_buf) = cache.current(blk) {
            // A buffer another session is changing right now (exclusive
            // pin) is not read in place: the change lands before our read
            // would. A CR copy taken now is exact.
            let as_is = {
                let b = cache.get(current_buf);
                b.image
                    .visible_as_is(snapshot, reader, &self.lookup_with_hints(sid))
                    .map(|v| v && !b.pinned_exclusive())
            };
            // The copy, when needed, goes straight to its use (not through a tuple).
            return match as_is {
                Ok(true) => {
                    cache.pin_shared(current_buf);
                    Acquired::Pinned {
                        buf: current_buf,
                        extra_ns: 0,
                        cpu_ns: get_ns,
                    }
                }
                Ok(false) => Acquired::Built(cache.get(current_buf).image.build_cr(
                    snapshot,
                    reader,
                    k.scn(),
                    &self.lookup_with_hints(sid),
                )),
                Err(e) => Acquired::Built(Err(e)),
            };
        }
        // 2. A CR copy valid for this snapshot.
        // A transaction that changed this block sees only copies built for it:
        // a shared copy may have rolled its own change back.
        let own = !reader.is_none() && self.sessions.session(sid).touched.contains(&blk);
        let found = cache
            .buffers_of(blk)
            .find(|&id| match cache.get(id).state() {
                BufState::Cr { lo, hi, private_to } => {
                    lo <= snapshot
                        && snapshot <= hi
                        && match private_to {
                            Some(p) => p == reader,
                            None => !own,
                        }
                }
                _ => false,
            });
        if let Some(id) = found {
            cache.pin_shared(id);
            return Acquired::Pinned {
                buf: id,
                extra_ns: 0,
                cpu_ns: get_ns,
            };
        }
        // 3. An unrolled image shipped to us (light work): roll it back here.
        // The image only covers snapshots up to the sender's SCN when it took
        // it: a later statement with a newer snapshot must ask again.
        if self
            .sessions
            .session(sid)
            .raw
            .as_ref()
            .is_some_and(|r| r.0.addr == blk && snapshot <= r.1)
            && let Some((raw, horizon)) = self.sessions.session_mut(sid).raw.take()
        {
            // No change after the sender took the image can commit at or
            // below its SCN then: that bounds the copy, not our own SCN.
            let built = raw.build_cr(snapshot, reader, horizon, &self.lookup_with_hints(sid));
            if let Err(CrError::Unknown(_)) = &built {
                self.sessions.session_mut(sid).raw = Some((raw, horizon));
            }
            return Acquired::Built(built);
        }
        // 4. Someone here already asked for it.
        if self.sessions.has_request(blk) {
            self.wait_on_block(k, sid, blk, Wait::GcBufferBusyAcquire);
            return Acquired::Waiting;
        }
        let scan = matches!(
            self.sessions.session(sid).cur,
            ExecPoint::Scan { .. } | ExecPoint::ScanHeader { .. }
        );
        Acquired::Ask {
            kind: ReqKind::Cr { snapshot, reader },
            scan,
        }
    }

    /// A CR copy was built here: count it; the CPU its build costs on top of the get.
    pub(in crate::instance) fn cr_built(k: &mut Kernel, cp: &CrCopy) -> Nanos {
        k.incr(Stat::CrBlocksCreated);
        k.add(Stat::UndoRecordsApplied, u64::from(cp.undo_applied));
        k.add(Stat::ConsistentChanges, u64::from(cp.undo_applied));
        k.costs().cr_build_ns + k.costs().undo_apply_ns * Nanos::from(cp.undo_applied)
    }

    /// The CR copy built here goes into the cache (a buffer is free for
    /// it), pinned for the visit.
    pub(in crate::instance) fn install_cr(
        &mut self,
        k: &Kernel,
        cache: &mut Cache,
        sid: u32,
        blk: BlockAddr,
        cp: CrCopy,
        extra_ns: Nanos,
    ) -> Acquired {
        let state = BufState::Cr {
            lo: cp.lo,
            hi: cp.hi,
            private_to: cp.private_to,
        };
        let id = cache.insert(blk, state, cp.image);
        cache.pin_shared(id);
        self.sessions.session_mut(sid).hints.clear();
        Acquired::Pinned {
            buf: id,
            extra_ns,
            cpu_ns: k.costs().consistent_get_ns,
        }
    }

    /// Pin `blk` in current mode (exclusively) for a change.
    #[inline(always)]
    pub(in crate::instance) fn acquire_current(
        &mut self,
        k: &Kernel,
        cache: &mut Cache,
        sid: u32,
        blk: BlockAddr,
    ) -> Acquired {
        if let Some(current_buf) = cache.current(blk) {
            let b = cache.get(current_buf);
            if b.state() == BufState::Xcur {
                if b.leaving() {
                    self.wait_on_block(k, sid, blk, Wait::GcBufferBusyRelease);
                    return Acquired::Waiting;
                }
                if b.pinned() {
                    self.wait_on_block(k, sid, blk, Wait::BufferBusyWaits);
                    return Acquired::Waiting;
                }
                cache.pin_exclusive(current_buf);
                return Acquired::Pinned {
                    buf: current_buf,
                    extra_ns: 0,
                    cpu_ns: k.costs().db_block_get_ns + k.costs().row_change_ns,
                };
            }
        }
        if self.sessions.has_request(blk) {
            self.wait_on_block(k, sid, blk, Wait::GcBufferBusyAcquire);
            return Acquired::Waiting;
        }
        Acquired::Ask {
            kind: ReqKind::Current { new_block: false },
            scan: false,
        }
    }

    /// The buffer is pinned for the visit: its CPU step (the get, and the
    /// work on top of it).
    #[inline(always)]
    pub(in crate::instance) fn visit_pinned(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        sid: u32,
        buf: BufId,
        mut extra_ns: Nanos,
        cpu_ns: Nanos,
    ) {
        let point = self.sessions.session(sid).cur;
        if matches!(point, ExecPoint::Scan { .. } | ExecPoint::ScanHeader { .. }) {
            // Examining the block's rows is part of a scan's work.
            extra_ns += k.costs().row_examined_ns * cache.get(buf).image.row_slots() as Nanos;
        }
        extra_ns += self.bitmap_work(k, cache, sid, buf);
        if matches!(point, ExecPoint::Seq { .. }) {
            // The recursive `update seq$`: its execute call, the change and its commit.
            extra_ns += k.costs().execute_ns + k.costs().row_change_ns + k.costs().commit_ns;
        }
        let s = self.sessions.session_mut(sid);
        s.st = SessionState::Cpu(AfterCpu::Visit(buf));
        let proc = s.proc;
        cache.touch(buf);
        if let Some(numa) = k.numa_mut() {
            // After computing, the CPU stalls on the lines of the
            // buffer and of the process's memory, by where they live.
            numa.defer(proc, numa::Touch::Get { buf });
        }
        k.cpu(proc, cpu_ns + extra_ns);
    }

    /// Snapshot too old: the statement restarts with a new snapshot.
    pub(in crate::instance) fn restart_statement(&mut self, k: &mut Kernel, sid: u32) {
        k.incr(Stat::SnapshotTooOld);
        let scn = k.scn();
        self.sessions.session_mut(sid).snapshot = scn;
    }

    /// Count a visit at `point` as a db block get or a consistent get.
    #[inline]
    pub(in crate::instance) fn count_get(&self, k: &mut Kernel, sid: u32, point: ExecPoint) {
        let current_mode = matches!(
            point,
            ExecPoint::Table {
                purpose: Purpose::Update,
                ..
            } | ExecPoint::InsertRow { .. }
                | ExecPoint::InsertAlloc { .. }
                | ExecPoint::IndexLeaf { .. }
                | ExecPoint::MaintLeaf { .. }
                | ExecPoint::Seq { .. }
        );
        if current_mode {
            k.incr(Stat::DbBlockGets);
            k.incr(Stat::DbBlockGetsFromCache);
        } else {
            k.incr(Stat::ConsistentGets);
            k.incr(Stat::ConsistentGetsFromCache);
        }
        if let Some(st) = self.stmt_target(sid) {
            let x = &mut k.stats_mut().statements[st];
            if current_mode {
                x.current += 1;
            } else {
                x.query += 1;
            }
        }
        k.incr(Stat::SessionLogicalReads);
    }

    /// An index block of a descent: go down to the child, or act at the leaf.
    // The most common visit: inlined into `visit_done`, its only caller.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn index_block_read(
        &self,
        k: &mut Kernel,
        cache: &Cache,
        obs: &mut Observer,
        sid: u32,
        buf: BufId,
        ix: usize,
        table: usize,
        key: u64,
        blk: BlockAddr,
        purpose: Purpose,
    ) -> ExecPoint {
        let ekey = k.layout().indexes[ix].entry_key(key);
        let img = &cache.get(buf).image;
        if let Some(child) = img.child_for(ekey) {
            return ExecPoint::Index {
                ix,
                table,
                key,
                blk: child,
                purpose,
            };
        }
        match purpose {
            Purpose::Insert(rowid) => ExecPoint::IndexLeaf {
                ix,
                table,
                key,
                rowid,
                blk,
            },
            Purpose::Count { .. } | Purpose::Maintain => {
                Foregrounds::leaf_reached(cache, buf, ix, table, key, blk, purpose)
            }
            Purpose::Read | Purpose::Update => match img.leaf_lookup(ekey) {
                Some(e) => {
                    k.incr(Stat::IndexFetchByKey);
                    ExecPoint::Table {
                        table,
                        key,
                        rowid: e.rowid,
                        purpose,
                    }
                }
                None => {
                    if purpose == Purpose::Read {
                        // No such key: the read saw nothing.
                        self.record_read(k, obs, sid, table, key, None);
                    }
                    ExecPoint::None
                }
            },
        }
    }

    /// A row read through an index.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn row_read(
        &self,
        k: &mut Kernel,
        cache: &Cache,
        obs: &mut Observer,
        sid: u32,
        buf: BufId,
        table: usize,
        key: u64,
        rowid: Rowid,
    ) -> ExecPoint {
        let val = cache
            .get(buf)
            .image
            .row(rowid.slot)
            .filter(|r| r.key == key)
            .map(|r| r.val);
        self.record_read(k, obs, sid, table, key, val);
        ExecPoint::None
    }

    /// Tell the checkers what a read saw (when recording).
    #[inline(always)]
    fn record_read(
        &self,
        k: &mut Kernel,
        obs: &mut Observer,
        sid: u32,
        table: usize,
        key: u64,
        val: Option<i64>,
    ) {
        let s = self.sessions.session(sid);
        let (xid, snapshot) = (s.xid, s.snapshot);
        record(
            k,
            obs,
            Observation::Read {
                xid,
                snapshot,
                table,
                key,
                val,
            },
        );
    }

    /// A full scan read the segment header: the runs of blocks to read.
    pub(in crate::instance) fn scan_extent(
        &mut self,
        k: &Kernel,
        cache: &Cache,
        sid: u32,
        buf: BufId,
        table: usize,
    ) -> ExecPoint {
        let t = &k.layout().tables[table];
        // Every partition's initial blocks (a partitioned table's
        // other segment headers are not read again; nothing is
        // inserted into its partitions, so they say nothing new).
        let mut runs = t.initial_runs();
        if let Body::SegHeader { used } = &*cache.get(buf).image.body {
            // One entry per instance (instance ids are 8-bit); a header
            // image with more says nothing about the others.
            for (i, u) in (0..=u8::MAX).zip(used.iter()) {
                let r =
                    crate::layout::Layout::free_range(t.free_base, t.free_per_instance, InstId(i));
                let used = (*u).min(t.free_per_instance);
                if used > 0 {
                    runs.push((r.start, r.start + used));
                }
            }
        }
        let first = runs[0].0;
        self.sessions.session_mut(sid).scan_runs = runs;
        ExecPoint::Scan {
            table,
            run: 0,
            next: first,
        }
    }

    /// A full scan read block `next` of run `run`: on to the following block.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn scan_block_read(
        &self,
        k: &mut Kernel,
        cache: &Cache,
        obs: &mut Observer,
        sid: u32,
        buf: BufId,
        table: usize,
        run: u8,
        next: u32,
    ) -> ExecPoint {
        let rows = cache.get(buf).image.row_slots() as u64;
        k.incr(Stat::TableScanBlocksGotten);
        k.add(Stat::TableScanRowsGotten, rows);
        self.scan_rows_seen(k, cache, obs, sid, buf, table);
        let runs = &self.sessions.session(sid).scan_runs;
        match runs.get(run as usize) {
            Some(&(_, end)) if next + 1 < end => ExecPoint::Scan {
                table,
                run,
                next: next + 1,
            },
            _ => match runs.get(run as usize + 1) {
                Some(&(start, _)) => ExecPoint::Scan {
                    table,
                    run: run + 1,
                    next: start,
                },
                None => ExecPoint::None,
            },
        }
    }

    /// A full scan saw these rows: let the checkers verify them (when recording).
    fn scan_rows_seen(
        &self,
        k: &mut Kernel,
        cache: &Cache,
        obs: &mut Observer,
        sid: u32,
        buf: BufId,
        table: usize,
    ) {
        if !obs.history_on() {
            return;
        }
        let rows: Vec<(u64, i64)> = match &*cache.get(buf).image.body {
            Body::Table { rows } => rows.iter().flatten().map(|r| (r.key, r.val)).collect(),
            _ => Vec::new(),
        };
        for (key, val) in rows {
            self.record_read(k, obs, sid, table, key, Some(val));
        }
    }
}

impl Foregrounds {
    /// Change a row in a current block the session holds pinned: the next
    /// point, or the transaction whose row lock the session must wait for.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn update_row(
        &mut self,
        k: &mut Kernel,
        cache: &mut Cache,
        redo: &mut Redo,
        obs: &mut Observer,
        sid: u32,
        buf: BufId,
        table: usize,
        key: u64,
        rowid: Rowid,
    ) -> Changed {
        let my = self.sessions.session(sid).xid;
        let lock = match cache.get(buf).image.row(rowid.slot) {
            Some(r) if r.key == key => r.lock,
            _ => return Changed::Next(ExecPoint::None),
        };
        if !lock.is_none() && lock != my {
            // A dead instance's transaction recovery rolls back: here, now.
            if self.roll_back_dead(k, cache, redo, buf, lock) {
                return self.update_row(k, cache, redo, obs, sid, buf, table, key, rowid);
            }
            let state = cache.get(buf).image.state_of(lock, &|x| self.txns.state(x));
            if !matches!(state, TxState::Committed(_)) {
                return Changed::Locked(lock);
            }
        }
        let xid = self.session_xid(sid);
        let scn = k.next_scn();
        self.clean_out(cache, buf);
        let old_row = cache.get(buf).image.row(rowid.slot).map(|r| r.val);
        let old = old_row.unwrap_or(0);
        let val = k.layout().tables[table].updated_value(old);
        let slot = rowid.slot;
        self.change_block(
            k,
            cache,
            redo,
            buf,
            Change::UpdateRow { slot, val },
            xid,
            scn,
            200,
        );
        k.incr(Stat::RowsUpdated);
        self.touch_block(cache, sid, rowid.blk);
        // What the update overwrote, for the checker as a read at the
        // change's SCN: every other commit to the row came before this
        // transaction took its row lock, so an update applied to an older
        // image of the block (a lost update: the new value computed from an
        // undone one) reads wrong here.
        record(
            k,
            obs,
            Observation::Read {
                xid,
                snapshot: scn,
                table,
                key,
                val: old_row,
            },
        );
        record(
            k,
            obs,
            Observation::Write {
                xid,
                table,
                key,
                val,
            },
        );
        // Indexes on the value change with the row (maintain.rs).
        let changes = Foregrounds::maintenance(k, table, key, old, val);
        if changes.is_empty() {
            return Changed::Next(ExecPoint::None);
        }
        self.sessions.session_mut(sid).maint = changes;
        Changed::Next(self.next_maintenance(k, sid, table))
    }
}
