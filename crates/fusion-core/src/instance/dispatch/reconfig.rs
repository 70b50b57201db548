//! The dispatcher's steps of a reconfiguration and of instance recovery:
//! the sequencing across subsystems that `Membership` asks for.

use super::Dispatch;
use crate::block::Block;
use crate::instance::cache::BufId;
use crate::instance::events::IoPurpose;
use crate::instance::membership::{self, HeldWork, Newer};
use crate::msg::{Envelope, Msg, Rebuild, RecoverSource, RedoRecord, Request};
use crate::stats::Stat;
use crate::types::{BlockAddr, InstId, InstSet, Scn};

impl Dispatch {
    // ----- instance recovery (membership/smon.rs) ---------------------------------

    /// A dead thread was read; once all are, the claims and what recovery
    /// found of the dead transactions join the reports, which go.
    pub(in crate::instance) fn on_redo_read(&mut self, records: Vec<RedoRecord>) {
        // The dead thread's changes and commits become this instance's to
        // apply and to tell: its SCN goes past them first, as a message's
        // would (Lamport), so that nothing done here after recovery is
        // ordered before them (seed 40525).
        if let Some(newest) = records.iter().map(|r| r.scn).max() {
            self.observe_scn(newest);
        }
        let txns = self.fg.txns();
        let found = self
            .membership
            .smon_redo_read(&self.k, &mut self.obs, records, |inst| {
                txns.xids_below(inst)
            });
        if let Some((claims, dead)) = found {
            self.add_to_reports(claims, dead);
            self.send_reports();
        }
    }

    /// The directory unfroze: the redo application starts.
    pub(in crate::instance) fn smon_unfrozen(&mut self) {
        if self.membership.smon_unfrozen(&self.k, &mut self.obs) {
            self.smon_next();
        }
    }

    /// Start recovering blocks up to the window: ask their masters where
    /// the newest image is.
    pub(in crate::instance) fn smon_next(&mut self) {
        for blk in self.membership.smon_window() {
            let master = self.block_master(blk);
            if master == self.id {
                let me = self.id;
                self.dir_recover(me, blk);
            } else {
                self.send(master, Msg::RecoverBlock { blk });
            }
        }
        if self.membership.smon_finish(&mut self.k, &mut self.obs) {
            self.roll_back_dead_in_cache();
        }
    }

    /// Where the newest image of a claimed block is came back.
    pub(in crate::instance) fn on_recover_image(&mut self, blk: BlockAddr, source: RecoverSource) {
        if self.membership.smon_image(&mut self.k, blk, source) {
            self.smon_block_done(blk, Scn::ZERO, false);
        }
    }

    /// A block of the recovery set was read from disk.
    pub(in crate::instance) fn smon_disk_read(&mut self, disk: Block) {
        if let Some(blk) = self.membership.smon_disk_read(&mut self.k, disk) {
            self.smon_block_done(blk, Scn::ZERO, false);
        }
    }

    /// A recovered block is on disk (or needed nothing): release its claim
    /// at its master, and go on with the next.
    pub(in crate::instance) fn smon_block_done(&mut self, blk: BlockAddr, scn: Scn, written: bool) {
        self.membership.smon_block_done(written);
        let master = self.block_master(blk);
        if master == self.id {
            let me = self.id;
            self.dir_block_recovered(me, blk, scn);
        } else {
            self.send(master, Msg::BlockRecovered { blk, scn });
        }
        self.smon_next();
    }

    /// Send this instance's newest past image of `blk` to the recovering instance.
    pub(in crate::instance) fn send_pi(&mut self, blk: BlockAddr, to: InstId) {
        let source = membership::past_image_source(&self.cache, blk);
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
        let holders = self.gc.recovered(blk, scn > Scn::ZERO);
        for h in holders.iter() {
            if h == self.id {
                self.discard_pi(blk, scn);
            } else {
                self.send(h, Msg::DiscardPi { blk, scn });
            }
        }
        self.dir_drain(blk);
    }

    /// The dead instances' uncommitted changes in current buffers held in X
    /// here are rolled back (see `membership::roll_back_dead_in_cache`).
    pub(in crate::instance) fn roll_back_dead_in_cache(&mut self) {
        let txns = self.fg.txns();
        if !txns.has_dead() {
            return;
        }
        let end_rba = self.redo.end_rba();
        let dead = |x| txns.is_dead_uncommitted(x);
        membership::roll_back_dead_in_cache(&mut self.k, &mut self.cache, end_rba, &dead);
    }

    /// A buffer's last pin went: roll back what dead transactions left in
    /// it. Cheap when no instance died: nothing is looked at.
    #[inline]
    pub(in crate::instance) fn roll_back_dead_at_unpin(&mut self, buf: BufId) {
        let txns = self.fg.txns();
        if !txns.has_dead() {
            return;
        }
        let end_rba = self.redo.end_rba();
        let dead = |x| txns.is_dead_uncommitted(x);
        membership::roll_back_dead_at_unpin(&mut self.k, &mut self.cache, end_rba, buf, &dead);
    }

    // ----- the reconfiguration (membership/reconfig.rs) ----------------------------

    /// A message from a member, with its incarnation checked: older ones are
    /// discarded, newer ones wait until this instance joins (a member's
    /// report makes it join at once), and while frozen everything but the
    /// reports is held.
    pub(in crate::instance) fn receive(&mut self, env: Envelope) {
        let mine = self.membership.incarnation();
        if env.incarnation < mine {
            self.k.incr(Stat::GcsMessagesDiscarded);
            return;
        }
        if env.incarnation > mine {
            match self.membership.newer_incarnation(&self.k, &env) {
                Newer::Join {
                    incarnation,
                    members,
                } => self.join_incarnation(incarnation, members),
                Newer::Evicted(why) => {
                    self.halt(why);
                    return;
                }
                Newer::Early => {
                    self.membership.keep_early(env);
                    return;
                }
            }
            if env.incarnation != self.membership.incarnation() {
                self.error(format!(
                    "{} reported incarnation {} but joining it made this one {}",
                    env.from,
                    env.incarnation,
                    self.membership.incarnation()
                ));
                return;
            }
        }
        if let Msg::Rebuild(r) = env.msg {
            self.on_rebuild(env.from, *r);
            return;
        }
        if self.membership.reconfiguring() {
            self.membership.hold_message(env);
            return;
        }
        self.on_message(env);
    }

    /// A block request for the master here: held while frozen.
    pub(in crate::instance) fn dir_request(&mut self, req: Request) {
        if self.membership.reconfiguring() {
            self.membership.hold_request(req);
            return;
        }
        self.dir_request_now(req);
    }

    /// The new incarnation begins here: drop the old one's global state,
    /// freeze, report what this instance holds, and ask again for what it
    /// waited for. `dead` left the cluster.
    pub(in crate::instance) fn begin_reconfig(&mut self, dead: InstSet) {
        let members = self.membership.members();
        if let Some(drm) = self.gc.drm_cancel() {
            let now = self.k.now();
            self.obs.alert(
                now,
                format!("DRM({drm}) abandoned: the cluster reconfigures"),
            );
        }
        self.gc.freeze();
        self.membership.freeze(&self.k);
        let txns = self.fg.txns();
        let mut reports = self.gc.holdings(
            &self.k,
            &self.cache,
            members,
            txns.dead_threads(),
            txns.base(),
        );
        // This instance's own report goes into its directory at once, so
        // that whatever changes here during the freeze comes after it.
        if let Some(pos) = reports.iter().position(|(i, _)| *i == self.id) {
            let (me, own) = reports.remove(pos);
            self.apply_report(me, own);
        }
        self.membership.keep_reports(reports);
        self.resubmit(members);
        if !self
            .membership
            .start_recovery(&mut self.k, &mut self.obs, dead, members)
        {
            self.send_reports();
        }
        // Messages of this incarnation that came before this instance joined it.
        for env in self.membership.take_early() {
            self.receive(env);
        }
    }

    /// Send this instance's reports (the recovering instance once it has
    /// read the dead threads and added its claims).
    pub(in crate::instance) fn send_reports(&mut self) {
        if self.membership.send_reports(&mut self.k) {
            self.unfreeze();
        }
    }

    /// Add the recovering instance's claims and what it learned of the dead
    /// transactions to the reports still to be sent.
    pub(in crate::instance) fn add_to_reports(
        &mut self,
        claims: Vec<BlockAddr>,
        dead: Vec<crate::msg::DeadThread>,
    ) {
        for blk in claims {
            let m = self.block_master(blk);
            if m == self.id {
                self.gc.claim(blk);
            } else {
                self.membership.add_claim(m, blk);
            }
        }
        for d in &dead {
            self.fg.txns_mut().learn_dead(d);
        }
        self.membership.add_dead(&dead);
    }

    /// Ask the new masters again for everything outstanding.
    pub(in crate::instance) fn resubmit(&mut self, members: InstSet) {
        // Requests granted and being read from disk were reported as held.
        let reading: rustc_hash::FxHashSet<(BlockAddr, u64)> = self
            .k
            .io_in_flight()
            .filter_map(|purpose| match *purpose {
                IoPurpose::GrantRead { blk, req, .. } => Some((blk, req)),
                _ => None,
            })
            .collect();
        for (blk, p) in self.fg.sessions().outstanding_requests() {
            if reading.contains(&(blk, p.id)) {
                continue;
            }
            let req = Request {
                id: p.id,
                blk,
                requester: self.id,
                kind: p.kind,
                timing: crate::msg::Timing::default(),
            };
            self.k.incr(Stat::GcsRequestsResubmitted);
            self.submit_request(req);
        }
        // Row lock waits on a dead instance's transactions become lookups
        // (asked of recovery below), and their TX enqueues are not asked again.
        self.row_waits_of_dead(members);
        for (res, mode, token) in self.gc.pending_converts() {
            let master = self.enqueue_master(res);
            if master == self.id {
                self.ges_convert_here(res, mode, token);
            } else {
                self.send(master, Msg::EnqConvert { res, mode, token });
            }
        }
        for (token, l) in self.fg.sessions().outstanding_lookups() {
            let owner = l.xid.inst();
            if members.contains(owner) {
                let msg = if l.wait {
                    Msg::TxWait { xid: l.xid, token }
                } else {
                    Msg::TxQuery { xid: l.xid, token }
                };
                self.send(owner, msg);
            } else {
                self.membership.ask_dead(token);
            }
        }
        self.lgwr_rebroadcast(members);
    }

    /// A block request to its master, here or remote.
    pub(in crate::instance) fn submit_request(&mut self, req: Request) {
        let master = self.block_master(req.blk);
        if master == self.id {
            self.dir_request(req);
        } else {
            self.send(master, Msg::Request(req));
        }
    }

    /// A question about a transaction of an instance that is no longer a
    /// member: answered here once recovery says what it found.
    pub(in crate::instance) fn ask_dead(&mut self, token: u64) {
        self.membership.ask_dead(token);
        if !self.membership.reconfiguring() {
            self.answer_dead_lookups();
        }
    }

    /// A member's report for the new incarnation.
    pub(in crate::instance) fn on_rebuild(&mut self, from: InstId, r: Rebuild) {
        if !self.membership.awaits_report(from) {
            self.error(format!(
                "{from} sent a reconfiguration report nobody waited for"
            ));
            return;
        }
        self.apply_report(from, r);
        if self.membership.reported(from) {
            self.unfreeze();
        }
    }

    pub(in crate::instance) fn apply_report(&mut self, from: InstId, r: Rebuild) {
        let Rebuild {
            blocks,
            locks,
            claims,
            dead,
            xid_base,
            ..
        } = r;
        self.gc.rebuild_from(from, blocks, locks, claims);
        self.fg.txns_mut().member_base(from, xid_base);
        for d in &dead {
            self.fg.txns_mut().learn_dead(d);
        }
    }

    /// Every member reported: promote the newest past images of blocks
    /// nobody holds current, unfreeze, and serve what was held.
    pub(in crate::instance) fn unfreeze(&mut self) {
        self.membership.thaw();
        for (blk, holder) in self.gc.finish_rebuild() {
            if holder == self.id {
                self.on_promote(blk);
            } else {
                self.send(holder, Msg::Promote { blk });
            }
        }
        self.membership.alert_unfrozen(&mut self.k, &mut self.obs);
        self.answer_dead_lookups();
        for work in self.membership.take_held() {
            match work {
                HeldWork::Message(env) => self.on_message(env),
                HeldWork::Request(req) => self.dir_request_now(req),
                HeldWork::Convert(res, mode, token) => {
                    let me = self.id;
                    self.ges_master_convert(me, res, mode, token);
                }
            }
        }
        self.smon_unfrozen();
        if self.membership.join_done(&self.k, &mut self.obs) {
            // A restarted instance joined: its sessions log on now.
            self.fg.start_sessions(&mut self.k);
        }
    }

    /// Answer the questions about dead instances' transactions from what recovery found.
    pub(in crate::instance) fn answer_dead_lookups(&mut self) {
        let tokens = self.membership.take_dead_lookups();
        let mut unknown = Vec::new();
        for token in tokens {
            let Some(l) = self
                .fg
                .sessions()
                .outstanding_lookups()
                .into_iter()
                .find(|(t, _)| *t == token)
                .map(|(_, l)| l)
            else {
                continue;
            };
            if !self.fg.txns().knows_dead(l.xid.inst()) {
                unknown.push(token);
                continue;
            }
            let report = self.tx_report(l.xid);
            self.fg
                .on_tx_status(&mut self.k, &mut self.obs, l.xid, token, report);
        }
        self.membership.keep_dead_lookups(unknown);
    }
}
