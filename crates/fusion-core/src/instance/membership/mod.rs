//! Membership: who is in the cluster and what follows when that changes.
//! The membership service (css.rs: heartbeats, the voting file, verdicts),
//! its decisions routed (lmon.rs, with what that work has in flight in
//! standing.rs), the reconfiguration (reconfig.rs: freeze, reports, the
//! directory rebuilt), instance recovery (smon.rs, and a survivor's side
//! of it in its cache, survivor.rs) and reliable delivery over a lossy
//! interconnect (link.rs, routed in delivery.rs; what the others send
//! through, net.rs).
//!
//! The rest of the instance asks [`Membership`]'s methods who is a member;
//! only the files here change it. The state the reconfiguration and SMON
//! change is defined here, below the files whose `impl Membership` change
//! it: this file names no type of theirs, so no import goes round.

mod css;
mod delivery;
mod link;
mod lmon;
mod net;
mod reconfig;
mod smon;
mod standing;
mod survivor;

pub(super) use css::{HEARTBEAT_NS, Verdict};
pub use link::Delivery;
pub(super) use link::RETRANSMIT_NS;
pub(super) use net::Net;
pub(super) use survivor::{
    past_image_source, roll_back_dead, roll_back_dead_at_unpin, roll_back_dead_in_cache,
};

use rustc_hash::FxHashMap;

use crate::block::Block;
use crate::config::{Nanos, Params};
use crate::msg::{Envelope, LockMode, Rebuild, RedoRecord, Request, ResName};
use crate::recovery::RecoveryReport;
use crate::types::{BlockAddr, InstId, InstSet, Xid};

pub(super) struct Membership {
    /// Heartbeats, who is alive, the incarnation.
    css: css::Css,
    /// The disk heartbeat, fences, admission, recoveries, halt.
    standing: standing::Standing,
    /// A reconfiguration's freeze and what it holds.
    reconfig: Reconfig,
    /// Instance recovery, on the recovering instance.
    smon: Smon,
    /// Reliable delivery when the interconnect may lose messages (off otherwise).
    links: link::Links,
}

impl Membership {
    /// `life` 0: a member from the start; later lives join the running cluster.
    pub fn new(
        id: InstId,
        instances: u8,
        params: &Params,
        life: u32,
        delivery: Delivery,
    ) -> Membership {
        Membership {
            css: if life == 0 {
                css::Css::new(id, instances, params.css_misscount, 0)
            } else {
                css::Css::joining(id, instances, params.css_misscount)
            },
            standing: standing::Standing::new(life > 0),
            reconfig: Reconfig::default(),
            smon: Smon::default(),
            links: link::Links::new(instances, delivery),
        }
    }

    #[inline(always)]
    pub fn is_member(&self, inst: InstId) -> bool {
        self.css.is_member(inst)
    }

    #[inline(always)]
    pub fn incarnation(&self) -> u32 {
        self.css.incarnation()
    }

    pub fn members(&self) -> InstSet {
        self.css.members()
    }

    /// A restarted instance not admitted yet.
    #[inline(always)]
    pub fn is_joining(&self) -> bool {
        self.css.is_joining()
    }

    /// A message of `from`'s stamped `incarnation` comes from an earlier
    /// life of it, now that a new one is a member.
    #[inline(always)]
    pub fn sent_by_earlier_life(&self, from: InstId, incarnation: u32) -> bool {
        self.css.sent_by_earlier_life(from, incarnation)
    }

    /// `from` was heard from at `now`.
    #[inline(always)]
    pub fn alive(&mut self, from: InstId, now: Nanos) {
        self.css.alive(from, now);
    }

    /// Whether messages are numbered and acknowledged (a lossy interconnect).
    #[inline(always)]
    pub fn links_on(&self) -> bool {
        self.links.on()
    }

    /// Whether a reconfiguration holds the resource directory frozen.
    pub fn reconfiguring(&self) -> bool {
        self.reconfig.frozen()
    }

    /// Why this instance stopped, if it did.
    #[inline(always)]
    pub fn halted(&self) -> Option<&str> {
        self.standing.halted()
    }

    /// The sessions wait until this restarted instance has joined.
    pub fn sessions_wait(&self) -> bool {
        self.standing.sessions_wait()
    }

    /// A fence is up at the store.
    pub fn fence_done(&mut self) {
        self.standing.fence_done();
    }

    /// Dead instances whose redo threads no recovery has finished yet (as
    /// far as this instance knows: its own recoveries and its peers' word).
    pub fn unrecovered(&self) -> InstSet {
        self.standing.unrecovered()
    }

    /// A peer finished recovering these threads.
    pub fn recovered(&mut self, threads: InstSet) {
        self.standing.recovered(threads);
    }

    pub fn take_recoveries(&mut self) -> Vec<RecoveryReport> {
        self.standing.take_recoveries()
    }
}

// ----- the reconfiguration's state (its steps: reconfig.rs) -----------------------------

/// Messages held while frozen (or from an incarnation not joined yet) at
/// most: far more than every session and LMS of a cluster can have
/// outstanding at once. Past it the rest is dropped and reported.
pub const HELD_MESSAGES_MAX: usize = 1 << 20;

/// Work held until the directory unfreezes, carried out then in order.
#[derive(Debug, PartialEq)]
pub(in crate::instance) enum HeldWork {
    /// A message of the current incarnation.
    Message(Envelope),
    /// A block request for the local master.
    Request(Request),
    /// An enqueue conversion for the local master: (resource, mode, token).
    Convert(ResName, LockMode, u64),
}

/// What a message of a newer incarnation than this instance's means.
#[derive(Debug, PartialEq)]
pub(in crate::instance) enum Newer {
    /// A member's report of an incarnation that includes this instance: join it.
    Join { incarnation: u32, members: InstSet },
    /// A member's report of an incarnation without this instance: it stops.
    Evicted(String),
    /// Anything else: kept until this instance joins ([`Membership::keep_early`]).
    Early,
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

// ----- instance recovery's state (its steps: smon.rs) ------------------------------------

/// Blocks recovered at once (the reads, applies and writes of Oracle's
/// parallel recovery processes overlap this much).
pub const RECOVERY_BLOCKS_IN_FLIGHT_MAX: usize = 16;

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

#[cfg(test)]
mod tests;
