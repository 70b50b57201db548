//! Dynamic remastering (DRM, rac-internals.md §1.9): an object's blocks
//! move to the instance that uses them, so that it grants them locally.
//!
//! - **Statistics** (x$object_policy_statistics): each instance counts its
//!   own opens of each object's blocks (requests to a master, S and X) over
//!   `_gc_policy_time` windows. A window is closed at the first input after
//!   it ended (an instance has one at least every second: CSS's heartbeat
//!   tick), with no timer of its own, so a run that never reaches a
//!   window's end (every shipped scenario at the 10-minute default) sends
//!   nothing and moves no event. The objects over `_gc_policy_minimum` per
//!   minute go to the coordinator, the lowest member, as the
//!   reconfiguration has one; a report more than a window late is dropped.
//! - **Decision** (LMD's affinity queue): the coordinator remasters an
//!   object to an instance whose opens in a window are more than twice any
//!   other's reported for that window, unless it masters the object
//!   already; one DRM at a time in the cluster.
//! - **The move**, a reconfiguration scoped to one object: `Freeze` to every
//!   member (new requests for the object's blocks wait under `gc remaster`,
//!   held where they start); each member is `Quiet` once none of its own
//!   requests for the object is in flight; then `Transfer`: each member
//!   drops what it masters of the object, takes the new master and reports
//!   its holdings of the object's blocks to it (`Rebuild`, the
//!   reconfiguration's report filtered by object); the new master rebuilds
//!   and says `Done`, and the held requests go to it.
//!
//! Every message is checked as a peer's: one that does not fit the DRM in
//! progress is a protocol error, never an assertion.
//!
//! The state is here; `GlobalCache`'s methods that count, decide and move
//! are in route.rs.

mod route;

use crate::config::Nanos;
use crate::msg::{Held, Msg, Request};
use crate::types::{BlockAddr, InstId, InstSet};
use rustc_hash::FxHashMap;

/// Requests (and messages at the new master) held while one object moves:
/// at most one per session and block, far below this; reaching it is an
/// error of the run.
pub const DRM_HELD_MAX: usize = 1 << 16;

/// A window's opens of one object by this instance.
#[derive(Clone, Copy, Debug, Default)]
struct Opens {
    shared: u64,
    exclusive: u64,
}

/// The DRM the coordinator runs.
#[derive(Clone, Debug)]
pub struct Running {
    pub drm: u32,
    pub object: u32,
    pub to: InstId,
    pub began: Nanos,
    quiet: InstSet,
}

/// A member's part in the DRM in progress.
#[derive(Clone, Debug)]
struct Frozen {
    /// When this member froze the object, and when it transferred it.
    since: Nanos,
    transferred_at: Nanos,
    drm: u32,
    object: u32,
    to: InstId,
    quiet_sent: bool,
    /// Took the new master and reported to it.
    transferred: bool,
    /// At the new master: its old entries of the object are gone (at its
    /// own transfer or at the first report, whichever came first).
    dropped: bool,
    /// At the new master: who reported.
    reported: InstSet,
    /// At the new master: every member reported.
    complete: bool,
    /// New requests of this instance for the object's blocks.
    held: Vec<Request>,
    /// At the new master: messages for the object's blocks that came
    /// between its drop and the last report.
    held_msgs: Vec<(InstId, Msg)>,
}

#[derive(Debug, Default)]
pub(super) struct Drm {
    /// The policy window the counts are of, and when it ends (0: not known yet).
    window: u64,
    window_end: Nanos,
    opens: FxHashMap<u32, Opens>,
    /// Coordinator: the newest window reported, and its reports (object, instance, opens).
    window_seen: u64,
    reports: Vec<(u32, InstId, u64)>,
    running: Option<Running>,
    /// The last DRM number used here as coordinator.
    last_begun: u32,
    /// The last DRM number this member took part in, this incarnation.
    last_seen: u32,
    frozen: Option<Frozen>,
    /// The coordinator's freeze of the next DRM, come before the new
    /// master's `Done` of the one still frozen here (they travel on
    /// different links): taken once that one ends.
    next_freeze: Option<(InstId, u32, u32, InstId)>,
}

/// A DRM ended at this member.
#[derive(Debug)]
pub struct Ended {
    /// Its requests held meanwhile, for the new master.
    pub held: Vec<Request>,
    /// From the freeze to the end, and to the transfer.
    pub remaster_ns: Nanos,
    pub quiesce_ns: Nanos,
}

/// What a member does when the coordinator says `Transfer`.
#[derive(Debug)]
pub struct Transfer {
    pub to: InstId,
    pub blocks: Vec<(BlockAddr, Held)>,
    /// Requests still queued here on the object's blocks (none when every
    /// member was quiet), for the new master.
    pub leftover: Vec<Request>,
}
