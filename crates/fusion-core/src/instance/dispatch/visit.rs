//! The dispatcher's side of a session's block visit and of a block's
//! install: the foregrounds decide (`session/access.rs`,
//! `session/fusion.rs`), and where a step needs the directory, LMS or DBWR
//! in the middle (a request to the master here, room in the cache, the
//! master told of an install, LMS jobs waiting for a pin), it is sequenced
//! here, in the order the work happens. A visit that meets a locked row
//! waits for its transaction: the GES's TX enqueues and LMD's deadlock
//! searches for those waits are sequenced here too.

use super::super::cache::victim::Victim;
use super::super::cache::{BufId, BufState, Cache};
use super::super::events::Timer;
use super::super::execution::{ExecPoint, Purpose, SeqStep};
use super::super::gc::ges_route::GesStep;
use super::super::session::sequence::SeqNext;
use super::super::session::{
    Acquired, Changed, Confirm, Foregrounds, PATH_MAX, PendingRequest, RowLockWait, RowLocks,
    Search, Via, dd_interval_ns,
};
use super::Dispatch;
use crate::block::{Block, Body, CrCopy, CrError};
use crate::config::Nanos;
use crate::metrics::BlockKind;
use crate::msg::{
    DeadlockMsg, GrantKind, Installed, LockMode, Lvb, Mode, Msg, ReqKind, Request, ResName,
    ShipKind, Shipment, WaitHop,
};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, InstSet, Scn, Xid};

impl Dispatch {
    /// Try to visit `blk`; returns true if the session can go on at once (it
    /// never can: a visit always takes CPU), false when it waits.
    pub(in crate::instance) fn visit(&mut self, sid: u32, blk: BlockAddr, current: bool) -> bool {
        let acquired = if current {
            self.fg.acquire_current(&self.k, &mut self.cache, sid, blk)
        } else {
            self.fg.acquire_cr(&self.k, &mut self.cache, sid, blk)
        };
        // Matched where it is made: `Acquired` carries a built copy, and
        // moving it on through another match costs on every visit.
        let (buf, extra_ns, cpu_ns) = match acquired {
            Acquired::Pinned {
                buf,
                extra_ns,
                cpu_ns,
            } => (buf, extra_ns, cpu_ns),
            Acquired::Waiting => return false,
            Acquired::Restart => return self.restart_statement(sid),
            Acquired::Ask { kind, scan } => {
                self.gc_request(sid, blk, kind, scan);
                return false;
            }
            Acquired::Built(built) => match self.use_local_cr(sid, blk, built) {
                Acquired::Pinned {
                    buf,
                    extra_ns,
                    cpu_ns,
                } => (buf, extra_ns, cpu_ns),
                Acquired::Restart => return self.restart_statement(sid),
                _ => return false,
            },
        };
        self.fg
            .visit_pinned(&mut self.k, &mut self.cache, sid, buf, extra_ns, cpu_ns);
        false
    }

    /// Snapshot too old: the statement restarts (at once) with a new snapshot.
    #[cold]
    fn restart_statement(&mut self, sid: u32) -> bool {
        self.fg.restart_statement(&mut self.k, sid);
        true
    }

    /// What pinning a block for session `sid` needs of the rest of the
    /// instance, done: a request to the master, or room for a CR copy.
    #[inline(always)]
    fn acquired(&mut self, sid: u32, blk: BlockAddr, acquired: Acquired) -> Acquired {
        match acquired {
            Acquired::Ask { kind, scan } => {
                self.gc_request(sid, blk, kind, scan);
                Acquired::Waiting
            }
            Acquired::Built(built) => self.use_local_cr(sid, blk, built),
            done => done,
        }
    }

    /// A CR copy built here goes into the cache, pinned for the visit.
    fn use_local_cr(
        &mut self,
        sid: u32,
        blk: BlockAddr,
        built: Result<CrCopy, CrError>,
    ) -> Acquired {
        match built {
            Ok(cp) => {
                let extra_ns = Foregrounds::cr_built(&mut self.k, &cp);
                self.cache.limit_cr(blk);
                self.make_room(sid);
                self.fg
                    .install_cr(&self.k, &mut self.cache, sid, blk, cp, extra_ns)
            }
            Err(CrError::Unknown(xids)) => self.look_up(sid, xids),
            Err(CrError::SnapshotTooOld) => Acquired::Restart,
        }
    }

    /// Pin `blk` in current mode (exclusively) for a change, asking its
    /// master when it is not here.
    pub(in crate::instance) fn acquire_current(&mut self, sid: u32, blk: BlockAddr) -> Acquired {
        let acquired = self.fg.acquire_current(&self.k, &mut self.cache, sid, blk);
        self.acquired(sid, blk, acquired)
    }

    /// The row or index piece the visit was to change is locked by
    /// `holder`: the pin goes, and the session waits for the transaction.
    fn wait_for_lock(&mut self, sid: u32, buf: BufId, holder: Xid) {
        self.unpin(buf);
        self.wait_for_tx(sid, holder);
    }

    /// Release a visit's pin (shared or exclusive); sessions and LMS jobs
    /// waiting for the buffer to be free try again.
    pub(in crate::instance) fn unpin(&mut self, buf: BufId) {
        let Some(b) = self.cache.try_get(buf) else {
            return;
        };
        let blk = b.blk;
        if !self.cache.unpin(buf) {
            self.roll_back_dead_at_unpin(buf);
            self.unpinned(blk);
            self.wake_block(blk);
        }
    }

    /// The CPU step of a visit ended: read or change the pinned block, then
    /// go on to the next point of the execution.
    pub(in crate::instance) fn visit_done(&mut self, sid: u32, buf: BufId) {
        let point = self.fg.point(sid);
        self.fg.count_get(&mut self.k, sid, point);
        // Each kind of visit does its work and says where the session goes
        // next. (The match stays here rather than in a function returning an
        // `Option`: on this path every copy of the point counts.)
        let next = match point {
            ExecPoint::Index {
                ix,
                table,
                key,
                blk,
                purpose,
            } => self.fg.index_block_read(
                &mut self.k,
                &self.cache,
                &mut self.obs,
                sid,
                buf,
                ix,
                table,
                key,
                blk,
                purpose,
            ),
            ExecPoint::Table {
                table,
                key,
                rowid,
                purpose: Purpose::Read,
            } => self.fg.row_read(
                &mut self.k,
                &self.cache,
                &mut self.obs,
                sid,
                buf,
                table,
                key,
                rowid,
            ),
            ExecPoint::Table {
                table,
                key,
                rowid,
                purpose: Purpose::Update,
            } => {
                let (k, cache, redo, obs) =
                    (&mut self.k, &mut self.cache, &mut self.redo, &mut self.obs);
                match self
                    .fg
                    .update_row(k, cache, redo, obs, sid, buf, table, key, rowid)
                {
                    Changed::Next(next) => next,
                    Changed::Locked(holder) => return self.wait_for_lock(sid, buf, holder),
                }
            }
            ExecPoint::ScanHeader { table } => {
                self.fg.scan_extent(&self.k, &self.cache, sid, buf, table)
            }
            ExecPoint::Scan { table, run, next } => self.fg.scan_block_read(
                &mut self.k,
                &self.cache,
                &mut self.obs,
                sid,
                buf,
                table,
                run,
                next,
            ),
            ExecPoint::InsertRow { table, key } => {
                let (k, cache, redo, obs) =
                    (&mut self.k, &mut self.cache, &mut self.redo, &mut self.obs);
                self.fg
                    .insert_into_block(k, cache, redo, obs, sid, buf, table, key)
            }
            ExecPoint::InsertAlloc { table, key } => {
                let (k, cache, redo) = (&mut self.k, &mut self.cache, &mut self.redo);
                self.fg.take_new_block(k, cache, redo, buf, table, key)
            }
            ExecPoint::IndexLeaf {
                ix,
                table,
                key,
                rowid,
                blk,
            } => self.insert_into_leaf(sid, buf, ix, table, key, rowid, blk),
            ExecPoint::Seq { seq, insert, .. } => self.seq_updated(sid, buf, seq, insert),
            ExecPoint::MaintLeaf { table, .. } => {
                let (k, cache, redo) = (&mut self.k, &mut self.cache, &mut self.redo);
                match self.fg.maintain_leaf(k, cache, redo, sid, buf, table) {
                    Changed::Next(next) => next,
                    Changed::Locked(holder) => return self.wait_for_lock(sid, buf, holder),
                }
            }
            ExecPoint::InsertNew { .. }
            | ExecPoint::Split { .. }
            | ExecPoint::Px { .. }
            | ExecPoint::Table {
                purpose: Purpose::Insert(_) | Purpose::Count { .. } | Purpose::Maintain,
                ..
            }
            | ExecPoint::None => ExecPoint::None,
        };
        self.unpin(buf);
        self.fg.sessions_mut().go_to(sid, next);
        self.resume(sid);
    }
}

/// Whether this instance holds `blk` current in X.
fn holds_xcur(cache: &Cache, blk: BlockAddr) -> bool {
    cache
        .current(blk)
        .is_some_and(|id| cache.get(id).state() == BufState::Xcur)
}

impl Dispatch {
    /// A block arrived for one of our requests. The foreground that asked
    /// installs it; the wait is renamed by what happened on the way.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::instance) fn on_ship(
        &mut self,
        from: InstId,
        sent_at: Nanos,
        sender_scn: Scn,
        ship: Box<Shipment>,
    ) {
        let (req, kind, pi_kept, hops, congested) =
            (ship.req, ship.kind, ship.pi_kept, ship.hops, ship.congested);
        let block = self.unbox_shipped_block(ship);
        let blk = req.blk;
        let block_kind = if kind == ShipKind::Current {
            BlockKind::Current
        } else {
            BlockKind::Cr
        };
        let (k, obs) = (&mut self.k, &mut self.obs);
        let Some(owner) = self
            .fg
            .ship_arrived(k, obs, from, sent_at, req, block_kind, congested, hops)
        else {
            return;
        };
        match kind {
            ShipKind::Cr { lo, hi, private } => {
                let reader = match req.kind {
                    ReqKind::Cr { reader, .. } => reader,
                    ReqKind::Current { .. } => Xid::NONE,
                };
                self.cache.limit_cr(blk);
                self.make_room(owner);
                let private_to = private.then_some(reader);
                self.cache
                    .insert(blk, BufState::Cr { lo, hi, private_to }, block);
            }
            ShipKind::Raw => self.fg.keep_raw(owner, block, sender_scn),
            ShipKind::Shared => {
                self.install_current(owner, blk, Mode::S, block, false);
                self.installed(Installed::unshipped(blk, req.id, Mode::S));
            }
            ShipKind::Current => {
                self.install_current(owner, blk, Mode::X, block, pi_kept);
                self.installed(Installed {
                    blk,
                    req: req.id,
                    mode: Mode::X,
                    prev_holder: Some(from),
                    pi_kept,
                });
            }
        }
        self.wake_block(blk);
    }

    /// Install a current block (X or S), cleaned out with the commits this instance knows.
    /// `taker`: the session the block is for (it takes the free buffer).
    fn install_current(
        &mut self,
        taker: u32,
        blk: BlockAddr,
        mode: Mode,
        mut block: Block,
        dirty: bool,
    ) {
        if let Some(old) = self.cache.current(blk) {
            // Our S copy, replaced by the block the S holder that writes it
            // shipped (see `Directory::route`): a reader may still hold it
            // pinned, so it goes the way an invalidated copy does.
            self.cache.retire_current(old);
        }
        block.clean_out_known(&|x| self.tx_state(x));
        self.make_room(taker);
        let state = if mode == Mode::X {
            BufState::Xcur
        } else {
            BufState::Scur
        };
        let id = self.cache.insert(blk, state, block);
        self.cache.set_dirty(id, dirty, self.k.now());
        self.cache.get_mut(id).global = dirty;
    }

    /// Tell the master the transfer is complete.
    pub(super) fn installed(&mut self, done: Installed) {
        let master = self.block_master(done.blk);
        if master == self.id {
            let me = self.id;
            self.dir_installed(me, done);
        } else {
            self.send(master, Msg::Installed(done));
        }
    }

    /// The master granted a request without a block.
    pub(in crate::instance) fn on_grant(
        &mut self,
        _from: InstId,
        _sent_at: Nanos,
        req: Request,
        grant: GrantKind,
    ) {
        let Some(pending) = self.fg.grant_arrived(&mut self.k, &mut self.obs, req) else {
            return;
        };
        self.granted(pending, req, grant);
    }

    /// The local master granted a request: no message and no gc wait.
    pub(in crate::instance) fn on_local_grant(&mut self, req: Request, grant: GrantKind) {
        let Some(pending) = self.fg.local_grant_arrived(&self.k, &mut self.obs, req) else {
            return;
        };
        self.granted(pending, req, grant);
    }

    fn granted(&mut self, pending: PendingRequest, req: Request, grant: GrantKind) {
        let blk = req.blk;
        match grant {
            GrantKind::Disk(_) if holds_xcur(&self.cache, blk) => {
                // The disk's image is older than the current block held here.
                self.error(format!(
                    "{} granted a disk read of {blk} held here in X (request {})",
                    self.block_master(blk),
                    req.id
                ));
            }
            GrantKind::Disk(mode) => self.fg.read_granted(&mut self.k, pending, req, mode),
            GrantKind::Upgrade => {
                self.fg.end_request(blk);
                match self.cache.current(blk) {
                    Some(id) => self.cache.set_state(id, BufState::Xcur),
                    None => self.error(format!("upgrade granted for {blk} but no S copy here")),
                }
                self.installed(Installed::unshipped(blk, req.id, Mode::X));
                self.fg
                    .ready_owner(&mut self.k, &mut self.obs, pending.owner);
                self.wake_block(blk);
            }
            GrantKind::New => {
                self.fg.end_request(blk);
                let owner = pending.owner;
                self.install_current(
                    owner,
                    blk,
                    Mode::X,
                    Block::new(blk, Body::Unformatted),
                    false,
                );
                self.installed(Installed::unshipped(blk, req.id, Mode::X));
                self.fg
                    .ready_owner(&mut self.k, &mut self.obs, pending.owner);
                self.wake_block(blk);
            }
        }
    }

    /// A granted disk read completed.
    pub(in crate::instance) fn on_grant_read(
        &mut self,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        block: Block,
        _scan: bool,
    ) {
        let Some(pending) = self.fg.request(blk, req) else {
            return;
        };
        if holds_xcur(&self.cache, blk) {
            // The master serializes the block: nothing else made it current
            // here while the read it granted was under way.
            self.error(format!(
                "{blk} became current here in X while the disk read granted for request {req} was under way"
            ));
            return;
        }
        self.fg.end_request(blk);
        self.install_current(pending.owner, blk, mode, block, false);
        if let Some(numa) = self.k.numa_mut()
            && let Some(buf) = self.cache.current(blk)
        {
            // The block came through the reader's group's I/O controller.
            numa.read_into(buf);
        }
        self.installed(Installed::unshipped(blk, req, mode));
        self.fg
            .ready_owner(&mut self.k, &mut self.obs, pending.owner);
        self.wake_block(blk);
    }

    /// Free a buffer if the cache is full.
    ///
    /// `taker` is the session that needs the buffer: with NUMA support it
    /// takes one of its own locality group first.
    pub(in crate::instance) fn make_room(&mut self, taker: u32) {
        self.k.incr(Stat::FreeBufferRequested);
        let group = self.fg.taker_group(&self.k, taker);
        while self.cache.used() >= self.cache.capacity() {
            let fg = &self.fg;
            let numa = self.k.numa();
            let (victim, inspected) = self.cache.victim(
                |b| fg.need(b),
                |buf| match (group, numa) {
                    (Some(g), Some(n)) => n.prefers(buf, g),
                    _ => true,
                },
            );
            self.k.add(Stat::FreeBufferInspected, u64::from(inspected));
            match victim {
                Victim::Free {
                    relinquish: Some((blk, state)),
                } => {
                    let mode = if state == BufState::Xcur {
                        Mode::X
                    } else {
                        Mode::S
                    };
                    let master = self.block_master(blk);
                    if master == self.id {
                        let me = self.id;
                        self.dir_relinquish(me, blk, mode);
                    } else {
                        self.send(master, Msg::Relinquish { blk, mode });
                    }
                }
                Victim::Free { relinquish: None } => {}
                // Everything is dirty or pinned: run over capacity until DBWR catches up.
                Victim::None => {
                    self.dbwr_urgent();
                    break;
                }
            }
        }
    }
}

// ----- row lock waits and LMD's deadlock detection (session/row_locks.rs) ---------------

impl Dispatch {
    /// Session `sid` waits until transaction `holder` ends: here, on its
    /// TX enqueue at the GES, or for recovery's word.
    pub(in crate::instance) fn wait_for_tx(&mut self, sid: u32, holder: Xid) {
        let net = self.membership.net();
        match self.fg.wait_for_tx(&mut self.k, net, sid, holder) {
            RowLockWait::Local => {}
            RowLockWait::Ges(res) => {
                let frozen = self.membership.reconfiguring();
                let mut ges =
                    GesStep::new(&mut self.gc, &mut self.k, self.membership.net(), frozen);
                let held = ges.get(sid, res, LockMode::X);
                let effects = ges.effects();
                self.apply_ges(effects);
                if held {
                    // The transaction ended and this instance still holds its enqueue.
                    self.tx_enqueue_held(sid, res);
                }
            }
            RowLockWait::Recovery(token) => self.ask_dead(token),
        }
    }

    /// Session `sid` holds the TX enqueue it waited for: the transaction
    /// ended. It learns how, goes on, and gives the enqueue back.
    pub(in crate::instance) fn tx_enqueue_held(&mut self, sid: u32, res: ResName) {
        let lvb = self.gc.enqueue_value(res);
        self.fg
            .tx_enqueue_granted(&mut self.k, &mut self.obs, sid, res, lvb);
        self.ges_step(|g| g.release(res, None));
    }

    /// The master asks for the TX enqueue of `xid`, a transaction of ours.
    pub(in crate::instance) fn tx_owner_asked(&mut self, xid: Xid) {
        if let Some(end) = self.fg.tx_owner_asked(xid) {
            self.ges_step(|g| g.owner_release(ResName::tx(xid), Lvb::tx_end(end)));
        }
    }

    /// Transactions that ended while the GES wanted their TX enqueue give it back.
    pub(in crate::instance) fn give_back_tx_enqueues(&mut self) {
        for (xid, end) in self.fg.row_locks_mut().take_given_back() {
            self.ges_step(|g| g.owner_release(ResName::tx(xid), Lvb::tx_end(end)));
        }
    }

    /// At a reconfiguration: the row lock waits on TX enqueues of
    /// transactions whose instance is gone wait for recovery instead (as
    /// lookups, which the caller asks of recovery).
    pub(in crate::instance) fn row_waits_of_dead(&mut self, members: InstSet) {
        let dropped = self.gc.drop_tx_enqueues(|i| !members.contains(i));
        for (_, sids) in dropped {
            for sid in sids {
                self.fg.row_wait_for_recovery(&self.k, sid);
            }
        }
    }

    /// LMD's deadlock scan: a search from every row lock wait that has
    /// lasted `_lm_dd_interval` since it began or was last searched from.
    pub(in crate::instance) fn deadlock_scan(&mut self, at: Nanos) {
        if !self.fg.row_locks().scan_due(at) {
            return;
        }
        let now = self.k.now();
        let dd_ns = dd_interval_ns(&self.k);
        let (due, next) = self.fg.row_locks_mut().scan(now, dd_ns);
        if let Some(next) = next {
            self.arm(next - now, Timer::DeadlockScan(next));
        }
        for (sid, _) in due {
            // A transaction that changed nothing holds no lock: nobody waits for it.
            let xid = self.fg.xid_of(sid);
            if xid.is_none() {
                continue;
            }
            if let Some(hop) = self.fg.row_locks().hop(self.id, sid, xid) {
                let to = hop.holder.inst();
                self.deadlock_route(to, DeadlockMsg::Search { path: vec![hop] });
            }
        }
    }

    /// A peer's step of a deadlock search: checked, then taken.
    pub(in crate::instance) fn on_deadlock(&mut self, from: InstId, m: DeadlockMsg) {
        let path = m.path();
        let n = self.k.instance_count();
        let at_ok = match &m {
            DeadlockMsg::Confirm { at, .. } => *at as usize <= path.len(),
            _ => true,
        };
        if path.is_empty() || path.len() > PATH_MAX || path.iter().any(|h| h.inst.0 >= n) || !at_ok
        {
            self.error(format!("{from} sent a malformed deadlock search: {m:?}"));
            return;
        }
        self.deadlock_step(m);
    }

    /// A step of a deadlock search for instance `to`: taken here, or sent.
    fn deadlock_route(&mut self, to: InstId, m: DeadlockMsg) {
        if to == self.id {
            self.deadlock_step(m);
        } else if self.membership.is_member(to) {
            self.send(to, Msg::Deadlock(Box::new(m)));
        }
    }

    /// Take one step of a deadlock search here, and the next ones that are
    /// this instance's too, until one goes to another instance or ends.
    fn deadlock_step(&mut self, m: DeadlockMsg) {
        let me = self.id;
        let mut next = Some(m);
        while let Some(m) = next.take() {
            let (to, m) = match m {
                DeadlockMsg::Search { path } => {
                    let Some(holder) = path.last().map(|h| h.holder) else {
                        return;
                    };
                    if holder.inst() != me {
                        self.error(format!("deadlock search for {holder}, not ours: {path:?}"));
                        return;
                    }
                    let hop = self
                        .fg
                        .txn_session(holder)
                        .and_then(|sid| self.fg.row_locks().hop(me, sid, holder));
                    match RowLocks::search(path, hop) {
                        Search::Forward(to, path) => (to, DeadlockMsg::Search { path }),
                        Search::Found(to, path) => (to, DeadlockMsg::Found { path }),
                        Search::Stop => return,
                    }
                }
                // Only the victim's own search goes on to confirm: one per cycle.
                DeadlockMsg::Found { path } => match path.first() {
                    Some(first) if first.inst == me && RowLocks::victim(&path) == Some(0) => {
                        (me, DeadlockMsg::Confirm { path, at: 0 })
                    }
                    _ => return,
                },
                DeadlockMsg::Confirm { path, at } => {
                    match self.fg.row_locks().confirm(me, &path, at) {
                        Confirm::Next(to, at) => (to, DeadlockMsg::Confirm { path, at }),
                        Confirm::Victim(sid) => {
                            self.deadlock_broken(sid, path);
                            return;
                        }
                        Confirm::Stop => return,
                    }
                }
            };
            if to == me {
                next = Some(m);
            } else if self.membership.is_member(to) {
                self.send(to, Msg::Deadlock(Box::new(m)));
            }
        }
    }

    /// ORA-00060 for session `sid`, the victim of the confirmed `cycle`.
    fn deadlock_broken(&mut self, sid: u32, cycle: Vec<WaitHop>) {
        let Some(w) = self.fg.deadlock_victim(&mut self.k, &mut self.obs, sid) else {
            return;
        };
        if w.via == Via::Ges {
            let res = ResName::tx(w.holder);
            self.ges_step(|g| g.cancel(sid, res));
        }
        let now = self.k.now();
        // Oracle's words; the trace file named as `<instance>_lmd0.trc`
        // (the session's own trace on a single instance).
        let waited_ms = (now - w.since) / crate::config::NS_PER_MS;
        let inst = self.id.number();
        let line = if self.k.instance_count() > 1 {
            format!(
                "Global Enqueue Services Deadlock detected. More info in file inst{inst}_lmd0.trc \
                 (session {sid}, {waited_ms} ms on TX {}: ORA-00060, statement rolled back).",
                w.holder
            )
        } else {
            format!(
                "ORA-00060: Deadlock detected. More info in file inst{inst}_ora_{sid}.trc \
                 (session {sid}, {waited_ms} ms on TX {}).",
                w.holder
            )
        };
        self.obs.alert(now, line);
        self.fg.row_locks_mut().record(now, cycle);
    }
}

// ----- sequences (session/sequence.rs decides) ----------------------------------------

impl Dispatch {
    /// Advance a `nextval`. True when the session can go on at once.
    pub(in crate::instance) fn seq_step(
        &mut self,
        sid: u32,
        seq: usize,
        step: SeqStep,
        insert: Option<usize>,
    ) -> bool {
        let gc = &self.gc;
        let sv_value = |r| gc.enqueue_value(r);
        match self
            .fg
            .seq_step(&mut self.k, sv_value, sid, seq, step, insert)
        {
            SeqNext::Go => true,
            SeqNext::Get(res, mode, event) => self.enq_get(sid, res, mode, event),
            SeqNext::ReleaseThenDeliver { res, lvb, number } => {
                self.enq_release(res, lvb);
                self.fg.seq_deliver(&mut self.k, sid, seq, number, insert);
                true
            }
            SeqNext::Visit(blk) => self.visit(sid, blk, true),
        }
    }

    /// The session holds the SEQ$ block in current mode and the row cache
    /// lock: allocate, commit the recursive transaction, release the locks.
    fn seq_updated(
        &mut self,
        sid: u32,
        buf: BufId,
        seq: usize,
        insert: Option<usize>,
    ) -> ExecPoint {
        let (k, cache, redo) = (&mut self.k, &mut self.cache, &mut self.redo);
        let Some(a) = self.fg.seq_allocate(k, cache, redo, sid, buf, seq) else {
            return ExecPoint::None;
        };
        self.enq_release(a.row_cache, None);
        if let Some((res, lvb)) = self.fg.seq_allocated(&mut self.k, sid, seq, &a) {
            self.enq_release(res, lvb);
        }
        self.fg.seq_value(&mut self.k, seq, a.first, insert)
    }
}
