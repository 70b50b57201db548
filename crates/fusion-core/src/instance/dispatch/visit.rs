//! The dispatcher's side of a session's block visit and of a block's
//! install: the foregrounds decide (`session/access.rs`,
//! `session/fusion.rs`), and where a step needs the directory, LMS or DBWR
//! in the middle (a request to the master here, room in the cache, the
//! master told of an install, LMS jobs waiting for a pin), it is sequenced
//! here, in the order the work happens.

use super::super::Instance;
use super::super::cache::{BufId, BufState, Cache, Victim};
use super::super::execution::{ExecPoint, Purpose};
use super::super::session::{Acquired, Changed, Foregrounds, PendingRequest};
use crate::block::{Block, Body, CrCopy, CrError};
use crate::config::Nanos;
use crate::metrics::BlockKind;
use crate::msg::{GrantKind, Mode, Msg, ReqKind, Request, ShipKind, Shipment};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, Scn, Xid};

impl Instance {
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
            ExecPoint::InsertRow { table, key } => self.insert_into_block(sid, buf, table, key),
            ExecPoint::InsertAlloc { table, key } => self.take_new_block(sid, buf, table, key),
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

impl Instance {
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
                self.installed(blk, req.id, Mode::S, None, false);
            }
            ShipKind::Current => {
                self.install_current(owner, blk, Mode::X, block, pi_kept);
                self.installed(blk, req.id, Mode::X, Some(from), pi_kept);
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
    fn installed(
        &mut self,
        blk: BlockAddr,
        req: u64,
        mode: Mode,
        prev: Option<InstId>,
        pi_kept: bool,
    ) {
        let master = self.block_master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_installed(me, blk, req, mode, prev, pi_kept);
        } else {
            self.send(
                master,
                Msg::Installed {
                    blk,
                    req,
                    mode,
                    prev_holder: prev,
                    pi_kept,
                },
            );
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
                self.installed(blk, req.id, Mode::X, None, false);
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
                self.installed(blk, req.id, Mode::X, None, false);
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
        self.installed(blk, req, mode, None, false);
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
        while self.cache.used() >= self.cache.capacity {
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
