//! Reconfiguration after an eviction (rac-internals.md §8, steps 2–3 and 11).
//!
//! Every survivor, when it evicts the dead (membership.rs) or first hears of
//! the new incarnation from another survivor's report:
//! 1. drops the old incarnation's global cache state: its part of the
//!    directory, the enqueues it masters, the LMS jobs under way (a message
//!    of an older incarnation is discarded on arrival from now on);
//! 2. freezes the directory ("Global Resource Directory frozen"): until every
//!    member has reported, requests for blocks and enqueues mastered here
//!    are held;
//! 3. reports to every member what it holds of the resources that member
//!    masters now (current blocks, past images, enqueue locks); the
//!    recovering instance first reads the dead threads (smon.rs) and adds
//!    the blocks it claims and the dead instances' transactions;
//! 4. asks again, of the new masters, everything it had outstanding: block
//!    requests, enqueue conversions, transaction lookups, SCN broadcasts.
//!
//! Once every member's report is in, the directory promotes the newest past
//! image of each block nobody holds current, unfreezes ("Reconfiguration
//! complete") and serves what it held.
//!
//! `Reconfig` owns the freeze and the held messages; the instance routes.

use super::super::Instance;
use super::super::cache::BufState;
use super::super::events::IoPurpose;
use super::super::kernel::Kernel;
use super::super::observe::Observer;
use super::Membership;
use super::css::names;
use crate::config::Nanos;
use crate::msg::{Envelope, Held, LockMode, Mode, Msg, Rebuild, Request, ResName};
use crate::types::{BlockAddr, InstId, InstSet};

/// Messages held while frozen (or from an incarnation not joined yet) at
/// most: far more than every session and LMS of a cluster can have
/// outstanding at once. Past it the rest is dropped and reported.
pub const HELD_MESSAGES_MAX: usize = 1 << 20;

/// Work held until the directory unfreezes.
#[derive(Debug)]
enum HeldWork {
    /// A message of the current incarnation.
    Message(Envelope),
    /// A block request for the local master.
    Request(Request),
    /// An enqueue conversion for the local master: (resource, mode, token).
    Convert(ResName, LockMode, u64),
}

#[derive(Debug, Default)]
pub(super) struct Reconfig {
    /// The members whose report has not come yet, while frozen.
    waiting: Option<InstSet>,
    /// When the freeze began.
    frozen_at: Nanos,
    held: Vec<HeldWork>,
    /// Messages of a newer incarnation than this instance's, until it joins.
    early: Vec<Envelope>,
    /// This instance's own reports, while the recovering instance reads the
    /// dead threads before sending them.
    reports: Vec<(InstId, Rebuild)>,
    /// Transaction lookups about dead instances, answered once recovery
    /// says what it found: tokens.
    dead_lookups: Vec<u64>,
    /// Messages dropped past [`HELD_MESSAGES_MAX`].
    dropped: u64,
}

impl Membership {
    /// The alert log's lines at the start of a reconfiguration.
    pub fn alert_reconfiguration(
        &self,
        k: &Kernel,
        obs: &mut Observer,
        old: u32,
        new: u32,
        dead: InstSet,
    ) {
        let now = k.now();
        let members = self.css.members();
        obs.alert(
            now,
            format!("Reconfiguration started (old inc {old}, new inc {new})"),
        );
        obs.alert(
            now,
            format!(
                "List of instances: {} (myinst: {})",
                names(members),
                k.id().number()
            ),
        );
        if !dead.is_empty() {
            obs.alert(
                now,
                format!("Evicting instance {} from cluster", names(dead)),
            );
        }
        obs.alert(now, "Global Resource Directory frozen");
        if !dead.is_empty() {
            obs.alert(now, "* dead instance detected - domain 0 invalid = TRUE");
        }
    }

    /// An enqueue conversion for the master here, held while frozen.
    pub fn hold_convert(&mut self, res: ResName, mode: LockMode, token: u64) {
        self.reconfig.hold(HeldWork::Convert(res, mode, token));
    }
}

impl Reconfig {
    pub(in crate::instance) fn frozen(&self) -> bool {
        self.waiting.is_some()
    }

    fn hold(&mut self, work: HeldWork) {
        if self.held.len() < HELD_MESSAGES_MAX {
            self.held.push(work);
        } else {
            self.dropped += 1;
        }
    }
}

impl Instance {
    /// A message from a member, with its incarnation checked: older ones are
    /// discarded, newer ones wait until this instance joins (a member's
    /// report makes it join at once), and while frozen everything but the
    /// reports is held.
    pub(in crate::instance) fn receive(&mut self, env: Envelope) {
        let mine = self.membership.css.incarnation();
        if env.incarnation < mine {
            self.k.incr(crate::stats::Stat::GcsMessagesDiscarded);
            return;
        }
        if env.incarnation > mine {
            match &env.msg {
                Msg::Rebuild(r) if r.members.contains(self.id) => {
                    let members = r.members;
                    self.join_incarnation(env.incarnation, members);
                }
                Msg::Rebuild(_) => {
                    self.halt(format!(
                        "evicted by instance {}: incarnation {} does not include this instance",
                        env.from.number(),
                        env.incarnation
                    ));
                    return;
                }
                _ => {
                    if self.membership.reconfig.early.len() < HELD_MESSAGES_MAX {
                        self.membership.reconfig.early.push(env);
                    } else {
                        self.membership.reconfig.dropped += 1;
                    }
                    return;
                }
            }
            if env.incarnation != self.membership.css.incarnation() {
                self.error(format!(
                    "{} reported incarnation {} but joining it made this one {}",
                    env.from,
                    env.incarnation,
                    self.membership.css.incarnation()
                ));
                return;
            }
        }
        if let Msg::Rebuild(r) = env.msg {
            self.on_rebuild(env.from, *r);
            return;
        }
        if self.membership.reconfig.frozen() {
            self.membership.reconfig.hold(HeldWork::Message(env));
            return;
        }
        self.on_message(env);
    }

    /// A block request for the master here: held while frozen.
    pub(in crate::instance) fn dir_request(&mut self, req: Request) {
        if self.membership.reconfig.frozen() {
            self.membership.reconfig.hold(HeldWork::Request(req));
            return;
        }
        self.dir_request_now(req);
    }

    /// The new incarnation begins here: drop the old one's global state,
    /// freeze, report what this instance holds, and ask again for what it
    /// waited for. `dead` left the cluster.
    pub(in crate::instance) fn begin_reconfig(&mut self, dead: InstSet) {
        let members = self.membership.css.members();
        let now = self.k.now();
        self.gc.freeze();
        self.membership.reconfig.waiting = Some(members);
        self.membership.reconfig.frozen_at = now;
        self.membership.reconfig.held.clear();
        // This instance's own report goes into its directory at once, so
        // that whatever changes here during the freeze comes after it.
        let mut reports = self.holdings(members);
        if let Some(pos) = reports.iter().position(|(i, _)| *i == self.id) {
            let (me, own) = reports.remove(pos);
            self.apply_report(me, own);
        }
        self.membership.reconfig.reports = reports;
        self.resubmit(members);
        // Every thread no recovery finished yet: the recovering instance of
        // an earlier reconfiguration may be among the dead.
        let to_recover = self.membership.standing.threads_to_recover(dead, members);
        let recoverer = members.first() == Some(self.id);
        if recoverer && !to_recover.is_empty() {
            self.obs.alert(now, "Post SMON to start 1st pass IR");
            self.smon_start(to_recover);
        } else {
            self.send_reports();
        }
        // Messages of this incarnation that came before this instance joined it.
        let early = std::mem::take(&mut self.membership.reconfig.early);
        for env in early {
            self.receive(env);
        }
    }

    /// What this instance holds, as one report per member (by the new masters).
    fn holdings(&mut self, members: InstSet) -> Vec<(InstId, Rebuild)> {
        let mut reports: Vec<(InstId, Rebuild)> = members
            .iter()
            .map(|m| {
                (
                    m,
                    Rebuild {
                        members,
                        // What recovery found so far, for an instance that joins.
                        dead: self.fg.txns().dead_threads().to_vec(),
                        xid_base: self.fg.txns().base(),
                        ..Rebuild::default()
                    },
                )
            })
            .collect();
        let slot = |reports: &[(InstId, Rebuild)], m: InstId| {
            reports.iter().position(|(i, _)| *i == m).unwrap_or(0)
        };
        let mut blocks: Vec<(BlockAddr, Held)> = Vec::new();
        for (_, b) in self.cache.iter() {
            let held = match b.state() {
                BufState::Xcur => Held::X { dirty: b.dirty() },
                BufState::Scur => Held::S { dirty: b.dirty() },
                BufState::Pi => Held::Pi { scn: b.image.scn },
                BufState::Cr { .. } => continue,
            };
            blocks.push((b.blk, held));
        }
        // A block granted and still being read from disk is held in the
        // mode granted: the old master recorded it so.
        for purpose in self.k.io_in_flight() {
            if let IoPurpose::GrantRead { blk, mode, .. } = *purpose {
                let held = match mode {
                    Mode::X => Held::X { dirty: false },
                    Mode::S => Held::S { dirty: false },
                };
                blocks.push((blk, held));
            }
        }
        blocks.sort_unstable_by_key(|&(b, _)| b);
        for (blk, held) in blocks {
            let m = self.block_master(blk);
            let i = slot(&reports, m);
            reports[i].1.blocks.push((blk, held));
        }
        for (res, mode, lvb) in self.gc.held_enqueues() {
            let m = self.enqueue_master(res);
            let i = slot(&reports, m);
            reports[i].1.locks.push((res, mode, lvb));
        }
        reports
    }

    /// Send this instance's reports (the recovering instance once it has
    /// read the dead threads and added its claims).
    pub(in crate::instance) fn send_reports(&mut self) {
        let reports = std::mem::take(&mut self.membership.reconfig.reports);
        for (to, report) in reports {
            self.send(to, Msg::Rebuild(Box::new(report)));
        }
        let me = self.id;
        self.member_reported(me);
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
            } else if let Some((_, r)) = self
                .membership
                .reconfig
                .reports
                .iter_mut()
                .find(|(i, _)| *i == m)
            {
                r.claims.push(blk);
            }
        }
        for d in &dead {
            self.fg.txns_mut().learn_dead(d);
        }
        for (_, r) in &mut self.membership.reconfig.reports {
            r.dead.extend(dead.iter().cloned());
        }
    }

    /// Ask the new masters again for everything outstanding.
    fn resubmit(&mut self, members: InstSet) {
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
            self.k.incr(crate::stats::Stat::GcsRequestsResubmitted);
            self.submit_request(req);
        }
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
                self.membership.reconfig.dead_lookups.push(token);
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
        self.membership.reconfig.dead_lookups.push(token);
        if !self.membership.reconfig.frozen() {
            self.answer_dead_lookups();
        }
    }

    /// A member's report for the new incarnation.
    fn on_rebuild(&mut self, from: InstId, r: Rebuild) {
        if !self
            .membership
            .reconfig
            .waiting
            .is_some_and(|w| w.contains(from))
        {
            self.error(format!(
                "{from} sent a reconfiguration report nobody waited for"
            ));
            return;
        }
        self.apply_report(from, r);
        self.member_reported(from);
    }

    fn apply_report(&mut self, from: InstId, r: Rebuild) {
        for (blk, held) in r.blocks {
            self.gc.rebuild(from, blk, held);
        }
        for (res, mode, lvb) in r.locks {
            self.gc.rebuild_enqueue(from, res, mode, lvb);
        }
        for blk in r.claims {
            self.gc.claim(blk);
        }
        self.fg.txns_mut().member_base(from, r.xid_base);
        for d in &r.dead {
            self.fg.txns_mut().learn_dead(d);
        }
    }

    /// `from`'s report is complete; once every member's is, unfreeze.
    fn member_reported(&mut self, from: InstId) {
        let Some(waiting) = self.membership.reconfig.waiting.as_mut() else {
            return;
        };
        waiting.remove(from);
        if waiting.is_empty() {
            self.unfreeze();
        }
    }

    /// Every member reported: promote the newest past images of blocks
    /// nobody holds current, unfreeze, and serve what was held.
    fn unfreeze(&mut self) {
        self.membership.reconfig.waiting = None;
        let now = self.k.now();
        for (blk, holder) in self.gc.finish_rebuild() {
            if holder == self.id {
                self.on_promote(blk);
            } else {
                self.send(holder, Msg::Promote { blk });
            }
        }
        if self.membership.reconfig.dropped > 0 {
            let n = std::mem::take(&mut self.membership.reconfig.dropped);
            self.error(format!(
                "{n} messages dropped while the directory was frozen (at most {HELD_MESSAGES_MAX} are held)"
            ));
        }
        self.obs
            .alert(now, "Submitted all GCS remote-cache requests");
        self.obs.alert(
            now,
            format!(
                "Reconfiguration complete (total time {:.1} secs)",
                now.saturating_sub(self.membership.reconfig.frozen_at) as f64 / 1e9
            ),
        );
        self.answer_dead_lookups();
        let held = std::mem::take(&mut self.membership.reconfig.held);
        for work in held {
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
        if self.membership.standing.join_done() {
            // A restarted instance joined: its sessions log on now.
            self.obs
                .alert(now, "Instance joined the cluster: sessions start");
            self.start_sessions();
        }
    }

    /// Answer the questions about dead instances' transactions from what recovery found.
    fn answer_dead_lookups(&mut self) {
        let tokens = std::mem::take(&mut self.membership.reconfig.dead_lookups);
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
            let report = match self.tx_state(l.xid) {
                crate::block::TxState::Committed(s) => crate::msg::TxReport::Committed(s),
                _ => crate::msg::TxReport::Active,
            };
            self.on_tx_status(l.xid, token, report);
        }
        self.membership.reconfig.dead_lookups = unknown;
    }
}
