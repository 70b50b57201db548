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
//!
//! `Ges` owns both sides (the resources mastered here and this instance's
//! locks) and answers with decisions; the instance sends the messages and
//! wakes the sessions (instance/route.rs).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::config::Nanos;
use crate::msg::{EnqKind, LockMode, Lvb, ResName};
use crate::stats::{Stat, Stats};
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
    /// A new record of `res`. A TX enqueue's owner holds it in X from its
    /// transaction's first change until it ends, without telling the master
    /// (a transaction nobody waits for costs no message): the master takes
    /// that for granted when it first hears of the resource, and asks the
    /// owner with a blocking AST like any other holder.
    fn new(res: ResName) -> MasterRes {
        let mut r = MasterRes::default();
        if let Some(xid) = res.xid() {
            r.granted.push((xid.inst(), LockMode::X));
        }
        r
    }

    /// Nobody holds or wants the resource: a TX enqueue's record goes
    /// (transactions are many; each is waited for at most a few times).
    fn unused(&self) -> bool {
        self.granted.is_empty() && self.queue.is_empty()
    }

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

    /// Holders that block the head of the queue and were not asked yet: they are asked now.
    fn blockers_to_ask(&mut self) -> Vec<InstId> {
        let Some(&(who, mode, _)) = self.queue.front() else {
            return Vec::new();
        };
        let blockers: Vec<InstId> = self
            .granted
            .iter()
            .filter(|&&(i, m)| i != who && !m.compatible(mode) && !self.basted.contains(&i))
            .map(|&(i, _)| i)
            .collect();
        self.basted.extend(blockers.iter().copied());
        blockers
    }
}

/// This instance's own lock on a resource.
#[derive(Debug)]
struct LocalLock {
    mode: LockMode,
    /// The session using the lock now.
    user: Option<u32>,
    /// A conversion sent to the master: (mode, token, when).
    pending: Option<(LockMode, u64, Nanos)>,
    /// The master asked for the lock back: give it up when the user releases it.
    bast: bool,
    lvb: Lvb,
    /// Local sessions waiting for the lock: (session, mode).
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

/// What a session's request for a lock found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Get {
    /// The session uses the lock now.
    Held,
    /// It waits; `convert`: the instance must first ask the master for this mode.
    Wait { convert: Option<LockMode> },
}

/// What the local lock does next, once its user or the master let it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandOn {
    Nothing,
    /// This waiting session uses the lock now.
    Resume(u32),
    /// Ask the master for this mode for the next waiter.
    Convert(LockMode),
}

/// A grant the master gives: (to, mode, token, value block).
pub type MasterGrant = (InstId, LockMode, u64, Lvb);

#[derive(Debug)]
pub struct Ges {
    me: InstId,
    master: FxHashMap<ResName, MasterRes>,
    locks: FxHashMap<ResName, LocalLock>,
    next_token: u64,
}

impl Ges {
    pub fn new(me: InstId) -> Ges {
        Ges {
            me,
            master: FxHashMap::default(),
            locks: FxHashMap::default(),
            next_token: 0,
        }
    }

    /// The master's view of a resource: (holder, mode) pairs and queued conversions.
    pub fn view(&self, res: ResName) -> Option<(Vec<(InstId, LockMode)>, usize)> {
        self.master
            .get(&res)
            .map(|r| (r.granted.clone(), r.queue.len()))
    }

    /// The value block of this instance's lock on `res` (default when none).
    pub fn value(&self, res: ResName) -> Lvb {
        self.locks.get(&res).map(|l| l.lvb).unwrap_or_default()
    }

    // ----- this instance's locks -----------------------------------------------------

    /// Session `sid` wants `res` in `mode`; `master` masters `res`.
    pub fn get(
        &mut self,
        sid: u32,
        res: ResName,
        mode: LockMode,
        master: InstId,
        stats: &mut Stats,
    ) -> Get {
        let me = self.me;
        let lk = self.locks.entry(res).or_default();
        if lk.user == Some(sid) {
            return Get::Held;
        }
        if lk.user.is_none() && lk.waiters.is_empty() && !lk.bast {
            if lk.mode.covers(mode) {
                lk.user = Some(sid);
                return Get::Held;
            }
            // Mastered here and free: granted without a message or a wait.
            if master == me && lk.pending.is_none() {
                let r = self
                    .master
                    .entry(res)
                    .or_insert_with(|| MasterRes::new(res));
                if r.queue.is_empty() && r.fits(me, mode) {
                    r.set(me, mode);
                    let lvb = r.lvb;
                    let lk = self.locks.entry(res).or_default();
                    lk.mode = mode;
                    lk.lvb = lvb;
                    lk.user = Some(sid);
                    stats.incr(Stat::GlobalEnqueueGetsSync);
                    return Get::Held;
                }
            }
        }
        let lk = self.locks.entry(res).or_default();
        lk.waiters.push_back((sid, mode));
        let idle = lk.user.is_none() && lk.pending.is_none();
        Get::Wait {
            convert: idle.then_some(mode),
        }
    }

    /// Whether session `sid` is the local user of `res` now.
    pub fn holds(&self, sid: u32, res: ResName) -> bool {
        self.locks.get(&res).is_some_and(|l| l.user == Some(sid))
    }

    /// The user of `res` is done with it; `lvb` replaces the value block.
    /// Returns whether the master asked for the lock meanwhile (down-convert now).
    pub fn release(&mut self, res: ResName, lvb: Option<Lvb>) -> Option<bool> {
        let lk = self.locks.get_mut(&res)?;
        lk.user = None;
        if let Some(v) = lvb {
            lk.lvb = v;
        }
        Some(lk.bast)
    }

    /// Who gets the lock next: a local waiter, or the master is asked.
    pub fn hand_on(&mut self, res: ResName) -> HandOn {
        let Some(lk) = self.locks.get_mut(&res) else {
            return HandOn::Nothing;
        };
        if lk.user.is_some() || lk.bast {
            return HandOn::Nothing;
        }
        let Some(&(sid, want)) = lk.waiters.front() else {
            return HandOn::Nothing;
        };
        if lk.mode.covers(want) {
            lk.waiters.pop_front();
            lk.user = Some(sid);
            HandOn::Resume(sid)
        } else if lk.pending.is_none() {
            HandOn::Convert(want)
        } else {
            HandOn::Nothing
        }
    }

    /// A conversion to `mode` is sent to the master now: its token.
    pub fn start_convert(&mut self, res: ResName, mode: LockMode, now: Nanos) -> u64 {
        self.next_token += 1;
        let token = self.next_token;
        if let Some(lk) = self.locks.get_mut(&res) {
            lk.pending = Some((mode, token, now));
        }
        token
    }

    /// Down-convert to NL: returns the value block to hand back (an X holder's),
    /// or `None` when this instance holds no lock on `res`.
    pub fn down(&mut self, res: ResName, stats: &mut Stats) -> Option<Option<Lvb>> {
        let lk = self.locks.get_mut(&res)?;
        let lvb = (lk.mode == LockMode::X).then_some(lk.lvb);
        lk.mode = LockMode::Nl;
        lk.bast = false;
        stats.incr(Stat::GlobalEnqueueReleases);
        Some(lvb)
    }

    /// The master granted this instance's conversion.
    pub fn granted(
        &mut self,
        res: ResName,
        mode: LockMode,
        token: u64,
        lvb: Lvb,
        now: Nanos,
        stats: &mut Stats,
    ) -> Result<(), String> {
        let Some(lk) = self.locks.get_mut(&res) else {
            return Err(format!("grant of {res:?} never asked for"));
        };
        match lk.pending {
            Some((_, t, since)) if t == token => {
                lk.pending = None;
                lk.mode = mode;
                lk.lvb = lvb;
                stats.incr(Stat::GlobalEnqueueGetsSync);
                stats.add(Stat::GlobalEnqueueGetTime, now - since);
                Ok(())
            }
            _ => Err(format!("grant of {res:?} with unknown token {token}")),
        }
    }

    /// The master wants this instance's lock on `res` for someone else.
    /// Returns whether to down-convert now (nobody uses it).
    pub fn bast(&mut self, res: ResName) -> bool {
        let Some(lk) = self.locks.get_mut(&res) else {
            return false;
        };
        if lk.mode == LockMode::Nl {
            return false;
        }
        lk.bast = true;
        lk.user.is_none()
    }

    /// Session `sid` no longer waits for `res` (its statement was rolled
    /// back, or the transaction it waited for is recovery's now). True
    /// when it was waiting.
    pub fn cancel_waiter(&mut self, res: ResName, sid: u32) -> bool {
        let Some(lk) = self.locks.get_mut(&res) else {
            return false;
        };
        let before = lk.waiters.len();
        lk.waiters.retain(|&(s, _)| s != sid);
        lk.waiters.len() < before
    }

    /// A TX enqueue this instance holds only while a waiter learns that the
    /// transaction ended: the mode to give back (if any) once nobody here
    /// uses, waits for or converts it, and the lock is forgotten then.
    /// `None` while it is still in use.
    pub fn tx_idle(&mut self, res: ResName) -> Option<LockMode> {
        debug_assert_eq!(res.kind, EnqKind::Tx);
        let lk = self.locks.get(&res)?;
        if lk.user.is_some() || !lk.waiters.is_empty() || lk.pending.is_some() {
            return None;
        }
        Some(lk.mode)
    }

    /// Forget a TX enqueue given back (see [`Ges::tx_idle`]).
    pub fn forget(&mut self, res: ResName) {
        let removed = self.locks.remove(&res);
        debug_assert!(removed.is_none_or(|l| l.mode == LockMode::Nl && l.user.is_none()));
    }

    /// The TX enqueues this instance waits for whose owner is gone: their
    /// waiting sessions, and the locks forgotten (the survivors' masters
    /// rebuild without them; recovery answers the sessions).
    pub fn drop_tx_of(&mut self, gone: impl Fn(InstId) -> bool) -> Vec<(ResName, Vec<u32>)> {
        let mut dropped: Vec<(ResName, Vec<u32>)> = self
            .locks
            .iter()
            .filter(|(res, _)| res.xid().is_some_and(|x| gone(x.inst())))
            .map(|(&res, l)| (res, l.waiters.iter().map(|&(s, _)| s).collect()))
            .collect();
        dropped.sort_unstable_by_key(|(res, _)| *res);
        for (res, _) in &dropped {
            self.locks.remove(res);
        }
        dropped
    }

    /// Locks kept (for tests and reports): this instance's, and the records it masters.
    pub fn sizes(&self) -> (usize, usize) {
        (self.locks.len(), self.master.len())
    }

    // ----- reconfiguration ---------------------------------------------------------------

    /// The locks this instance holds (NL omitted), with their value blocks,
    /// and forgets the masters' asks: a new incarnation's masters ask again.
    pub fn held(&mut self) -> Vec<(ResName, LockMode, Lvb)> {
        let mut held: Vec<(ResName, LockMode, Lvb)> = self
            .locks
            .iter_mut()
            .filter(|(_, l)| l.mode != LockMode::Nl)
            .map(|(&res, l)| {
                l.bast = false;
                (res, l.mode, l.lvb)
            })
            .collect();
        held.sort_unstable_by_key(|&(res, _, _)| res);
        held
    }

    /// The conversions this instance has outstanding: (resource, mode, token).
    pub fn pending_converts(&self) -> Vec<(ResName, LockMode, u64)> {
        let mut out: Vec<(ResName, LockMode, u64)> = self
            .locks
            .iter()
            .filter_map(|(&res, l)| l.pending.map(|(mode, token, _)| (res, mode, token)))
            .collect();
        out.sort_unstable_by_key(|&(res, _, token)| (res, token));
        out
    }

    /// Forget the resources mastered here: the members report again.
    pub fn clear_master(&mut self) {
        self.master.clear();
    }

    /// `from` holds `res` in `mode`. The value block kept is the most
    /// advanced one reported (a dead X holder's newer one is lost: Oracle's
    /// "VALBLKs dubious").
    pub fn rebuild(&mut self, from: InstId, res: ResName, mode: LockMode, lvb: Lvb) {
        let r = self.master.entry(res).or_default();
        r.set(from, mode);
        if lvb.hi > r.lvb.hi {
            r.lvb = lvb;
        }
    }

    // ----- the master's side ------------------------------------------------------------

    /// A conversion request reached the master (this instance): granted at
    /// once, or `None`: queued (then ask [`Ges::master_blockers`]).
    pub fn master_convert(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        token: u64,
    ) -> Option<MasterGrant> {
        let r = self
            .master
            .entry(res)
            .or_insert_with(|| MasterRes::new(res));
        if r.queue.is_empty() && r.fits(from, mode) {
            r.set(from, mode);
            return Some((from, mode, token, r.lvb));
        }
        r.queue.push_back((from, mode, token));
        None
    }

    /// A holder down-converted: record it; returns the queued conversions that
    /// now fit, granted (deliver them, then ask [`Ges::master_blockers`]).
    pub fn master_down(
        &mut self,
        from: InstId,
        res: ResName,
        mode: LockMode,
        lvb: Option<Lvb>,
    ) -> Vec<MasterGrant> {
        let r = self.master.entry(res).or_default();
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
        if res.kind == EnqKind::Tx && r.unused() {
            self.master.remove(&res);
        }
        grants
    }

    /// The holders that block the head of `res`'s queue and were not asked
    /// yet, with the mode it waits for: each gets a blocking AST now.
    pub fn master_blockers(&mut self, res: ResName) -> Option<(LockMode, Vec<InstId>)> {
        let r = self.master.get_mut(&res)?;
        let &(_, mode, _) = r.queue.front()?;
        Some((mode, r.blockers_to_ask()))
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
