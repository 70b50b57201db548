//! The global enqueue service (GES): locks on resources that are not blocks
//! (a dictionary cache row, a sequence's SQ and SV enqueues, an index's
//! split enqueue).
//!
//! Each resource has a master (`Layout::ges_master`). The master keeps the
//! granted modes and a first-come-first-served queue of conversions; when the
//! head of the queue is blocked it sends each incompatible holder a blocking
//! AST (`EnqBast`). A holder keeps its lock after use (so a resource used by
//! one instance costs no messages) and down-converts to NL when it is asked
//! and no local session uses it, handing the lock value block back.
//!
//! Inside an instance a lock has one user at a time; other local sessions
//! queue behind it. Every conversion the master grants is timed from request
//! to grant as `global enqueue get time` (AWR's "Avg global enqueue get time").

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::Instance;
use super::session::St;
use crate::config::Nanos;
use crate::msg::{LockMode, Lvb, Msg, ResName};
use crate::stats::{Stat, Wait};
use crate::types::InstId;

/// The master's record of one resource.
#[derive(Debug, Default)]
struct MasterRes {
    /// Holders and their granted modes (NL holders are dropped).
    granted: Vec<(InstId, LockMode)>,
    /// Conversions waiting: (requester, mode, token).
    queue: VecDeque<(InstId, LockMode, u64)>,
    lvb: Lvb,
    /// Holders already asked to down-convert (one blocking AST each).
    basted: Vec<InstId>,
}

impl MasterRes {
    /// Whether `who` may hold `mode` next to every other holder.
    fn fits(&self, who: InstId, mode: LockMode) -> bool {
        self.granted
            .iter()
            .all(|&(i, m)| i == who || m.compatible(mode))
    }

    fn set(&mut self, who: InstId, mode: LockMode) {
        self.granted.retain(|&(i, _)| i != who);
        if mode != LockMode::Nl {
            self.granted.push((who, mode));
        }
    }
}

/// This instance's own lock on a resource.
#[derive(Debug)]
pub(super) struct LocalLock {
    pub(super) mode: LockMode,
    /// The session using the lock now.
    user: Option<u32>,
    /// A conversion sent to the master: (mode, token, when).
    pending: Option<(LockMode, u64, Nanos)>,
    /// The master asked for the lock back: give it up when the user releases it.
    bast: bool,
    pub(super) lvb: Lvb,
    /// Local sessions waiting for the lock: (session, mode, event).
    waiters: VecDeque<(u32, LockMode)>,
}

impl Default for LocalLock {
    fn default() -> Self {
        LocalLock {
            mode: LockMode::Nl,
            user: None,
            pending: None,
            bast: false,
            lvb: Lvb::default(),
            waiters: VecDeque::new(),
        }
    }
}

#[derive(Debug, Default)]
pub struct Ges {
    master: FxHashMap<ResName, MasterRes>,
    pub(super) locks: FxHashMap<ResName, LocalLock>,
    next_token: u64,
}

impl Ges {
    /// The master's view of a resource: (holder, mode) pairs and queued conversions.
    pub fn view(&self, res: ResName) -> Option<(Vec<(InstId, LockMode)>, usize)> {
        self.master
            .get(&res)
            .map(|r| (r.granted.clone(), r.queue.len()))
    }
}

impl Instance {
    /// Session `sid` wants `res` in `mode`. True when it holds it now; false
    /// when it waits (timed as `event`) and will be made ready once it does.
    pub(super) fn enq_get(&mut self, sid: u32, res: ResName, mode: LockMode, event: Wait) -> bool {
        let me = self.id;
        let master = self.layout.ges_master(res);
        let lk = self.ges.locks.entry(res).or_default();
        if lk.user == Some(sid) {
            return true;
        }
        if lk.user.is_none() && lk.waiters.is_empty() && !lk.bast {
            if lk.mode.covers(mode) {
                lk.user = Some(sid);
                return true;
            }
            // Mastered here and free: granted without a message or a wait.
            if master == me && lk.pending.is_none() {
                let r = self.ges.master.entry(res).or_default();
                if r.queue.is_empty() && r.fits(me, mode) {
                    r.set(me, mode);
                    let lvb = r.lvb;
                    let lk = self.ges.locks.entry(res).or_default();
                    lk.mode = mode;
                    lk.lvb = lvb;
                    lk.user = Some(sid);
                    self.stats.incr(Stat::GlobalEnqueueGetsSync);
                    return true;
                }
            }
        }
        let lk = self.ges.locks.entry(res).or_default();
        lk.waiters.push_back((sid, mode));
        let idle = lk.user.is_none() && lk.pending.is_none();
        self.begin_enq_wait(sid, event);
        if idle {
            self.enq_convert(res, mode);
        }
        false
    }

    /// Whether session `sid` is the local user of `res` now.
    pub(super) fn enq_holds(&self, sid: u32, res: ResName) -> bool {
        self.ges
            .locks
            .get(&res)
            .is_some_and(|l| l.user == Some(sid))
    }

    /// The user of `res` is done with it; `lvb` replaces the value block.
    pub(super) fn enq_release(&mut self, res: ResName, lvb: Option<Lvb>) {
        let Some(lk) = self.ges.locks.get_mut(&res) else {
            return;
        };
        lk.user = None;
        if let Some(v) = lvb {
            lk.lvb = v;
        }
        if lk.bast {
            self.enq_down(res);
        }
        self.enq_hand_on(res);
    }

    /// Give the lock to the next local waiter, or ask the master for the mode it needs.
    fn enq_hand_on(&mut self, res: ResName) {
        let Some(lk) = self.ges.locks.get_mut(&res) else {
            return;
        };
        if lk.user.is_some() || lk.bast {
            return;
        }
        let Some(&(sid, want)) = lk.waiters.front() else {
            return;
        };
        if lk.mode.covers(want) {
            lk.waiters.pop_front();
            lk.user = Some(sid);
            self.end_enq_wait(sid);
        } else if lk.pending.is_none() {
            self.enq_convert(res, want);
        }
    }

    /// Send a conversion request to the master (or handle it here).
    fn enq_convert(&mut self, res: ResName, mode: LockMode) {
        self.ges.next_token += 1;
        let token = self.ges.next_token;
        let now = self.now;
        if let Some(lk) = self.ges.locks.get_mut(&res) {
            lk.pending = Some((mode, token, now));
        }
        let master = self.layout.ges_master(res);
        if master == self.id {
            self.ges_master_convert(self.id, res, mode, token);
        } else {
            self.send(master, Msg::EnqConvert { res, mode, token });
        }
    }

    /// Down-convert to NL and hand the value block back to the master.
    fn enq_down(&mut self, res: ResName) {
        let Some(lk) = self.ges.locks.get_mut(&res) else {
            return;
        };
        let lvb = (lk.mode == LockMode::X).then_some(lk.lvb);
        lk.mode = LockMode::Nl;
        lk.bast = false;
        self.stats.incr(Stat::GlobalEnqueueReleases);
        let master = self.layout.ges_master(res);
        if master == self.id {
            self.ges_master_down(self.id, res, LockMode::Nl, lvb);
        } else {
            self.send(
                master,
                Msg::EnqDown {
                    res,
                    mode: LockMode::Nl,
                    lvb,
                },
            );
        }
    }

    /// The master granted this instance's conversion.
    pub(super) fn on_enq_grant(&mut self, res: ResName, mode: LockMode, token: u64, lvb: Lvb) {
        let now = self.now;
        let Some(lk) = self.ges.locks.get_mut(&res) else {
            self.error(format!("grant of {res:?} never asked for"));
            return;
        };
        match lk.pending {
            Some((_, t, since)) if t == token => {
                lk.pending = None;
                lk.mode = mode;
                lk.lvb = lvb;
                self.stats.incr(Stat::GlobalEnqueueGetsSync);
                self.stats.add(Stat::GlobalEnqueueGetTime, now - since);
            }
            _ => {
                self.error(format!("grant of {res:?} with unknown token {token}"));
                return;
            }
        }
        self.enq_hand_on(res);
    }

    /// The master wants this instance's lock on `res` for someone else.
    pub(super) fn on_enq_bast(&mut self, res: ResName) {
        let Some(lk) = self.ges.locks.get_mut(&res) else {
            return;
        };
        if lk.mode == LockMode::Nl {
            return;
        }
        lk.bast = true;
        if lk.user.is_none() {
            self.enq_down(res);
            self.enq_hand_on(res);
        }
    }

    // ----- the master's side ------------------------------------------------------------

    /// A conversion request reached the master (this instance).
    pub(super) fn ges_master_convert(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        token: u64,
    ) {
        let r = self.ges.master.entry(res).or_default();
        if r.queue.is_empty() && r.fits(from, mode) {
            r.set(from, mode);
            let lvb = r.lvb;
            self.ges_grant(from, res, mode, token, lvb);
        } else {
            r.queue.push_back((from, mode, token));
            self.ges_bast_blockers(res);
        }
    }

    /// A holder down-converted: record it and grant what now fits.
    pub(super) fn ges_master_down(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        lvb: Option<Lvb>,
    ) {
        let r = self.ges.master.entry(res).or_default();
        r.set(from, mode);
        r.basted.retain(|&i| i != from);
        if let Some(v) = lvb {
            r.lvb = v;
        }
        let mut grants = Vec::new();
        while let Some(&(who, m, token)) = r.queue.front() {
            if !r.fits(who, m) {
                break;
            }
            r.queue.pop_front();
            r.set(who, m);
            grants.push((who, m, token, r.lvb));
        }
        for (who, m, token, lvb) in grants {
            self.ges_grant(who, res, m, token, lvb);
        }
        self.ges_bast_blockers(res);
    }

    /// Ask every holder that blocks the head of the queue to down-convert.
    fn ges_bast_blockers(&mut self, res: ResName) {
        let Some(r) = self.ges.master.get_mut(&res) else {
            return;
        };
        let Some(&(who, mode, _)) = r.queue.front() else {
            return;
        };
        let blockers: Vec<InstId> = r
            .granted
            .iter()
            .filter(|&&(i, m)| i != who && !m.compatible(mode) && !r.basted.contains(&i))
            .map(|&(i, _)| i)
            .collect();
        r.basted.extend(blockers.iter().copied());
        for holder in blockers {
            if holder == self.id {
                self.on_enq_bast(res);
            } else {
                self.send(holder, Msg::EnqBast { res, mode });
            }
        }
    }

    fn ges_grant(&mut self, to: InstId, res: ResName, mode: LockMode, token: u64, lvb: Lvb) {
        if to == self.id {
            self.on_enq_grant(res, mode, token, lvb);
        } else {
            self.send(
                to,
                Msg::EnqGrant {
                    res,
                    mode,
                    token,
                    lvb,
                },
            );
        }
    }

    // ----- waits --------------------------------------------------------------------------

    fn begin_enq_wait(&mut self, sid: u32, event: Wait) {
        self.begin_session_wait(sid, event, St::WaitEnq);
    }

    fn end_enq_wait(&mut self, sid: u32) {
        if self
            .sessions
            .get(sid as usize)
            .is_some_and(|s| s.st == St::WaitEnq)
        {
            self.end_session_wait(sid);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::msg::LockMode::{self, *};

    const ALL: [LockMode; 6] = [Nl, Ss, Sx, S, Ssx, X];

    #[test]
    fn compatibility_is_the_dlm_matrix() {
        // Rows and columns in the order NL SS SX S SSX X.
        let want = [
            [1, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 0],
            [1, 1, 1, 0, 0, 0],
            [1, 1, 0, 1, 0, 0],
            [1, 1, 0, 0, 0, 0],
            [1, 0, 0, 0, 0, 0],
        ];
        for (i, a) in ALL.iter().enumerate() {
            for (j, b) in ALL.iter().enumerate() {
                assert_eq!(a.compatible(*b), want[i][j] == 1, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn a_stronger_mode_covers_a_weaker_one() {
        for m in ALL {
            assert!(X.covers(m));
            assert!(m.covers(Nl));
            assert!(m.covers(m));
        }
        assert!(!S.covers(Sx));
        assert!(!Sx.covers(S));
        assert!(Ssx.covers(S) && Ssx.covers(Sx));
    }
}
