//! The global enqueue service at work: this instance's locks (asked for,
//! released, granted, asked back) and the resources mastered here, turned
//! into messages to the masters and holders. A lock mastered here is
//! handled at once, without a message. What the rest of the instance must
//! do comes back as [`GesEffect`]s, in order: a session that waited may go
//! on; a conversion for the master here while the directory is frozen is
//! held by the reconfiguration.

use super::super::kernel::Kernel;
use super::super::membership::Net;
use super::GlobalCache;
use super::ges::{Get, HandOn, MasterGrant};
use crate::msg::{EnqKind, LockMode, Lvb, Msg, ResName};
use crate::types::InstId;

/// What the global enqueue service needs of the rest of the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::instance) enum GesEffect {
    /// Session `sid` waited for a lock on `res` it now holds (if it still
    /// waits on an enqueue, its wait ends).
    Resume(u32, ResName),
    /// The master asks this instance, the owner of transaction `xid`, for
    /// its TX enqueue: give it back when the transaction ends
    /// ([`GesStep::owner_release`]), at once if it has.
    OwnerAsked(crate::types::Xid),
    /// A conversion for the master here while the directory is frozen:
    /// held until it unfreezes.
    Hold {
        res: ResName,
        mode: LockMode,
        token: u64,
    },
}

/// One step of the global enqueue service: the global cache with what it
/// uses of the rest (the kernel, membership's `Net`, whether the directory
/// is frozen) and the effects it found so far.
pub(in crate::instance) struct GesStep<'a, 'n> {
    gc: &'a mut GlobalCache,
    k: &'a mut Kernel,
    net: Net<'n>,
    frozen: bool,
    effects: Vec<GesEffect>,
}

impl<'a, 'n> GesStep<'a, 'n> {
    pub fn new(gc: &'a mut GlobalCache, k: &'a mut Kernel, net: Net<'n>, frozen: bool) -> Self {
        GesStep {
            gc,
            k,
            net,
            frozen,
            effects: Vec::new(),
        }
    }

    /// What the rest of the instance must do now, in order.
    pub fn effects(self) -> Vec<GesEffect> {
        self.effects
    }

    fn master(&self, res: ResName) -> InstId {
        self.gc.enqueue_master(self.k.layout(), res)
    }

    // ----- this instance's locks --------------------------------------------------------

    /// Session `sid` wants `res` in `mode`. True when it holds it now;
    /// false when it waits (and is resumed once it does).
    pub fn get(&mut self, sid: u32, res: ResName, mode: LockMode) -> bool {
        // While the directory is frozen the master here may not grant
        // without asking (it does not know yet who holds what).
        let master = if self.frozen {
            InstId(u8::MAX)
        } else {
            self.master(res)
        };
        match self.gc.ges.get(sid, res, mode, master, self.k.stats_mut()) {
            Get::Held => true,
            Get::Wait { convert } => {
                if let Some(mode) = convert {
                    self.convert(res, mode);
                }
                false
            }
        }
    }

    /// The user of `res` is done with it; `lvb` replaces the value block.
    pub fn release(&mut self, res: ResName, lvb: Option<Lvb>) {
        let Some(asked_back) = self.gc.ges.release(res, lvb) else {
            return;
        };
        if asked_back {
            self.down(res);
        }
        self.hand_on(res);
        if res.kind == EnqKind::Tx {
            self.tx_idle(res);
        }
    }

    /// A TX enqueue nobody here uses or waits for any more is given back
    /// and forgotten: a waiter only needed to learn that the transaction
    /// ended.
    fn tx_idle(&mut self, res: ResName) {
        match self.gc.ges.tx_idle(res) {
            None => {}
            Some(LockMode::Nl) => self.gc.ges.forget(res),
            Some(_) => {
                self.down(res);
                self.gc.ges.forget(res);
            }
        }
    }

    /// Session `sid` stops waiting for `res` (its statement was rolled back).
    pub fn cancel(&mut self, sid: u32, res: ResName) {
        if self.gc.ges.cancel_waiter(res, sid) && res.kind == EnqKind::Tx {
            self.tx_idle(res);
        }
    }

    /// The owner of the transaction behind TX enqueue `res` gives it back:
    /// the transaction ended (`lvb` says how: see `TxEnd`).
    pub fn owner_release(&mut self, res: ResName, lvb: Lvb) {
        debug_assert_eq!(res.xid().map(|x| x.inst()), Some(self.k.id()));
        let master = self.master(res);
        if master == self.k.id() {
            self.master_down(master, res, LockMode::Nl, Some(lvb));
        } else {
            let (mode, lvb) = (LockMode::Nl, Some(lvb));
            self.net
                .send(self.k, master, Msg::EnqDown { res, mode, lvb });
        }
    }

    /// Give the lock to the next local waiter, or ask the master for the mode it needs.
    fn hand_on(&mut self, res: ResName) {
        match self.gc.ges.hand_on(res) {
            HandOn::Nothing => {}
            HandOn::Resume(sid) => self.effects.push(GesEffect::Resume(sid, res)),
            HandOn::Convert(mode) => self.convert(res, mode),
        }
    }

    /// Send a conversion request to the master (or handle it here).
    fn convert(&mut self, res: ResName, mode: LockMode) {
        let token = self.gc.ges.start_convert(res, mode, self.k.now());
        let master = self.master(res);
        if master == self.k.id() {
            self.convert_here(res, mode, token);
        } else {
            self.net
                .send(self.k, master, Msg::EnqConvert { res, mode, token });
        }
    }

    /// A conversion for the master here: held while the directory is frozen.
    pub fn convert_here(&mut self, res: ResName, mode: LockMode, token: u64) {
        if self.frozen {
            self.effects.push(GesEffect::Hold { res, mode, token });
            return;
        }
        let me = self.k.id();
        self.master_convert(me, res, mode, token);
    }

    /// Down-convert to NL and hand the value block back to the master.
    fn down(&mut self, res: ResName) {
        let Some(lvb) = self.gc.ges.down(res, self.k.stats_mut()) else {
            return;
        };
        let master = self.master(res);
        if master == self.k.id() {
            self.master_down(master, res, LockMode::Nl, lvb);
        } else {
            let mode = LockMode::Nl;
            self.net
                .send(self.k, master, Msg::EnqDown { res, mode, lvb });
        }
    }

    /// The master granted this instance's conversion.
    pub fn granted(&mut self, res: ResName, mode: LockMode, token: u64, lvb: Lvb) {
        let now = self.k.now();
        if let Err(problem) = self
            .gc
            .ges
            .granted(res, mode, token, lvb, now, self.k.stats_mut())
        {
            self.k.error(&problem);
            return;
        }
        self.hand_on(res);
        if res.kind == EnqKind::Tx {
            self.tx_idle(res);
        }
    }

    /// The master wants this instance's lock on `res` for someone else.
    pub fn bast(&mut self, res: ResName) {
        if let Some(xid) = res.xid()
            && xid.inst() == self.k.id()
        {
            // The owner's X lock is its transaction's: given back when it ends.
            self.effects.push(GesEffect::OwnerAsked(xid));
            return;
        }
        if self.gc.ges.bast(res) {
            self.down(res);
            self.hand_on(res);
        }
    }

    // ----- this instance as master ------------------------------------------------------

    /// A conversion request reached the master (this instance).
    pub fn master_convert(&mut self, from: InstId, res: ResName, mode: LockMode, token: u64) {
        match self.gc.ges.master_convert(from, res, mode, token) {
            Some(grant) => self.master_grant(res, grant),
            None => self.bast_blockers(res),
        }
    }

    /// A holder down-converted: grant what now fits, then ask who still blocks.
    pub fn master_down(&mut self, from: InstId, res: ResName, mode: LockMode, lvb: Option<Lvb>) {
        for grant in self.gc.ges.master_down(from, res, mode, lvb) {
            self.master_grant(res, grant);
        }
        self.bast_blockers(res);
    }

    /// Ask every holder that blocks the head of the queue to down-convert.
    fn bast_blockers(&mut self, res: ResName) {
        let Some((mode, blockers)) = self.gc.ges.master_blockers(res) else {
            return;
        };
        for holder in blockers {
            if holder == self.k.id() {
                self.bast(res);
            } else {
                self.net.send(self.k, holder, Msg::EnqBast { res, mode });
            }
        }
    }

    fn master_grant(&mut self, res: ResName, (to, mode, token, lvb): MasterGrant) {
        if to == self.k.id() {
            self.granted(res, mode, token, lvb);
        } else {
            self.net.send(
                self.k,
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
}

impl GlobalCache {
    /// Whether session `sid` is the local user of `res` now.
    pub fn enq_holds(&self, sid: u32, res: ResName) -> bool {
        self.ges.holds(sid, res)
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::membership::{Delivery, Membership};
    use super::*;
    use crate::config::Catalog;
    use crate::msg::{Action, EnqKind};
    use crate::stats::Stat;

    const ME: InstId = InstId(1);

    struct Rig {
        gc: GlobalCache,
        k: Kernel,
        m: Membership,
    }

    fn rig() -> Rig {
        let k = Kernel::for_instance(ME, &Catalog::default());
        let m = Membership::new(ME, 2, k.params(), 0, Delivery::Direct);
        Rig {
            gc: GlobalCache::new(ME, 2),
            k,
            m,
        }
    }

    impl Rig {
        /// A sequence's SQ enqueue mastered here (`here`) or by the other instance.
        fn res(&self, here: bool) -> ResName {
            (0..64)
                .map(|id| ResName {
                    kind: EnqKind::Sq,
                    id,
                })
                .find(|&r| (self.gc.enqueue_master(self.k.layout(), r) == ME) == here)
                .expect("both instances master some")
        }

        fn step<T>(
            &mut self,
            frozen: bool,
            f: impl FnOnce(&mut GesStep) -> T,
        ) -> (T, Vec<GesEffect>) {
            let mut g = GesStep::new(&mut self.gc, &mut self.k, self.m.net(), frozen);
            let out = f(&mut g);
            (out, g.effects())
        }

        fn sent(&mut self) -> Vec<Msg> {
            self.k
                .take_actions()
                .into_iter()
                .map(|a| match a {
                    Action::Send(env) => env.msg,
                    other => panic!("{other:?}"),
                })
                .collect()
        }
    }

    #[test]
    fn a_free_lock_mastered_here_is_granted_at_once_and_handed_on_at_release() {
        let mut r = rig();
        let res = r.res(true);
        assert_eq!(
            r.step(false, |g| g.get(1, res, LockMode::X)),
            (true, vec![])
        );
        assert_eq!(r.k.stats().get(Stat::GlobalEnqueueGetsSync), 1);
        // A second session queues behind the first, here.
        assert_eq!(
            r.step(false, |g| g.get(2, res, LockMode::X)),
            (false, vec![])
        );
        assert!(r.gc.enq_holds(1, res) && !r.gc.enq_holds(2, res));
        assert_eq!(
            r.step(false, |g| g.release(res, None)).1,
            vec![GesEffect::Resume(2, res)]
        );
        assert!(r.gc.enq_holds(2, res));
        assert!(r.sent().is_empty(), "no message for a lock mastered here");
    }

    #[test]
    fn a_lock_mastered_elsewhere_is_asked_for_and_the_grant_resumes_the_session() {
        let mut r = rig();
        let res = r.res(false);
        assert_eq!(
            r.step(false, |g| g.get(4, res, LockMode::S)),
            (false, vec![])
        );
        let sent = r.sent();
        let [
            Msg::EnqConvert {
                res: asked,
                mode: LockMode::S,
                token,
            },
        ] = sent[..]
        else {
            panic!("{sent:?}");
        };
        assert_eq!(asked, res);
        let lvb = Lvb { lo: 7, hi: 9 };
        assert_eq!(
            r.step(false, |g| g.granted(res, LockMode::S, token, lvb)).1,
            vec![GesEffect::Resume(4, res)]
        );
        assert!(r.gc.enq_holds(4, res));
        assert_eq!(r.gc.enqueue_value(res), lvb);
    }

    #[test]
    fn a_conversion_for_the_master_here_is_held_while_the_directory_is_frozen() {
        let mut r = rig();
        let res = r.res(true);
        let (held, effects) = r.step(true, |g| g.get(1, res, LockMode::X));
        assert!(!held, "frozen: no grant without asking");
        let [
            GesEffect::Hold {
                res: h,
                mode: LockMode::X,
                token,
            },
        ] = effects[..]
        else {
            panic!("{effects:?}");
        };
        assert_eq!(h, res);
        assert!(r.sent().is_empty());
        // Unfrozen, the held conversion reaches the master here: granted.
        assert_eq!(
            r.step(false, |g| g.master_convert(ME, res, LockMode::X, token))
                .1,
            vec![GesEffect::Resume(1, res)]
        );
    }

    #[test]
    fn a_grant_never_asked_for_is_a_protocol_error() {
        let mut r = rig();
        let res = r.res(false);
        let (_, effects) = r.step(false, |g| g.granted(res, LockMode::X, 99, Lvb::default()));
        assert!(effects.is_empty());
        assert!(
            r.k.errors()[0].contains("never asked for"),
            "{:?}",
            r.k.errors()
        );
    }
}
