//! What the membership service's work (lmon.rs) has in flight and what
//! came of it.

use crate::recovery::RecoveryReport;
use crate::types::{InstId, InstSet};

/// What this instance's membership work has in flight and what came of it:
/// the disk heartbeat, the fences of the evicted, the restarted instance
/// being admitted, the dead threads no recovery has finished, and whether
/// this instance stopped.
#[derive(Debug, Default)]
pub(super) struct Standing {
    /// A disk heartbeat is in flight (one at a time: a slow store delays it).
    vote_in_flight: bool,
    /// Fences of evicted instances not yet up at the store.
    fences_in_flight: u32,
    /// A restarted instance this one is admitting (its fence being lifted).
    admitting: Option<InstId>,
    /// A restarted instance's sessions wait until it has joined.
    sessions_pending: bool,
    /// Why this instance stopped (evicted, killed), if it did: it does nothing more.
    halted: Option<String>,
    /// Dead instances whose threads no recovery has finished yet: a new
    /// reconfiguration recovers them too (the recovering instance may die).
    unrecovered: InstSet,
    /// Instance recoveries completed here since the driver last took them
    /// (one per dead instance recovered: as few as the cluster's restarts).
    recoveries: Vec<RecoveryReport>,
}

impl Standing {
    /// `joining`: a restarted instance, whose sessions wait until it has joined.
    pub fn new(joining: bool) -> Standing {
        Standing {
            sessions_pending: joining,
            ..Standing::default()
        }
    }

    #[inline(always)]
    pub fn halted(&self) -> Option<&str> {
        self.halted.as_deref()
    }

    /// Stop for `why`; false when already stopped (the first reason stays).
    pub(super) fn halt(&mut self, why: String) -> bool {
        if self.halted.is_some() {
            return false;
        }
        self.halted = Some(why);
        true
    }

    /// Start a disk heartbeat unless one is in flight: true when it starts.
    pub(super) fn start_vote(&mut self) -> bool {
        !std::mem::replace(&mut self.vote_in_flight, true)
    }

    pub(super) fn vote_done(&mut self) {
        self.vote_in_flight = false;
    }

    pub(super) fn fence_started(&mut self) {
        self.fences_in_flight += 1;
    }

    /// A fence is up at the store.
    pub fn fence_done(&mut self) {
        // The I/O table matched the completion to a fence of ours.
        debug_assert!(self.fences_in_flight > 0, "a fence completed twice");
        self.fences_in_flight = self.fences_in_flight.saturating_sub(1);
    }

    /// Every fence asked for is up: the dead threads may be read.
    pub fn fences_up(&self) -> bool {
        self.fences_in_flight == 0
    }

    /// Whether `from` may be admitted now (as far as this state knows): its
    /// old life recovered, nobody else being admitted.
    pub(super) fn may_admit(&self, from: InstId) -> bool {
        !self.unrecovered.contains(from) && self.admitting.is_none()
    }

    pub(super) fn admit(&mut self, from: InstId) {
        debug_assert!(self.admitting.is_none(), "admitting two instances at once");
        self.admitting = Some(from);
    }

    pub(super) fn admitted(&mut self) -> Option<InstId> {
        self.admitting.take()
    }

    /// The instance joined: true once, when its sessions were waiting.
    pub fn join_done(&mut self) -> bool {
        std::mem::take(&mut self.sessions_pending)
    }

    /// The sessions wait until this restarted instance has joined.
    pub fn sessions_wait(&self) -> bool {
        self.sessions_pending
    }

    /// A reconfiguration to `members` after `dead` died: the threads to
    /// recover (the dead, and earlier ones no recovery finished).
    pub fn threads_to_recover(&mut self, dead: InstSet, members: InstSet) -> InstSet {
        self.unrecovered = InstSet((self.unrecovered.0 | dead.0) & !members.0);
        self.unrecovered
    }

    /// Nobody needs to read these threads again (a recovery finished here or
    /// a peer's said so).
    pub fn recovered(&mut self, threads: InstSet) {
        self.unrecovered = InstSet(self.unrecovered.0 & !threads.0);
    }

    /// Dead instances whose threads no recovery has finished yet.
    pub fn unrecovered(&self) -> InstSet {
        self.unrecovered
    }

    pub fn report_recovery(&mut self, report: RecoveryReport) {
        self.recoveries.push(report);
    }

    pub fn take_recoveries(&mut self) -> Vec<RecoveryReport> {
        std::mem::take(&mut self.recoveries)
    }
}
