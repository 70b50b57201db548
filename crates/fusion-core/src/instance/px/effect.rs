//! What parallel execution asks of the rest of the instance (`PxEffect`),
//! and what applying one may do: the dispatcher applies them in order, and
//! `PxStep` checks it overtakes none it has not applied yet.

use crate::px::ExecId;
use crate::stats::Wait;
use crate::types::InstId;

/// What parallel execution needs done by the rest of the instance, in the
/// order the work happens: the foregrounds' part for a QC session (its
/// waits, making it ready, the PS enqueue), and where px goes on after them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::instance) enum PxEffect {
    /// The QC session `sid` waits on `event` for its statement (`WaitPx`).
    BeginWait { sid: u32, event: Wait },
    /// Its wait ends (recorded under the event it began with).
    EndWait(u32),
    /// Its wait ends if it still waits for its statement (`WaitPx`): a step
    /// of a serial execution, which runs on the QC's own process.
    EndPxWait(u32),
    /// A statement in the queue may try again: its session's wait ends and
    /// it is ready.
    Wake(u32),
    /// The session goes on: it probes again, or its statement is done.
    Resume(u32),
    /// The allocation is over: release the PS enqueue.
    ReleasePs,
    /// Worker `w` goes on (`PxStep::worker_next`) after the effects before
    /// this one: a buffer it handed the QC here ended the QC's wait.
    Continue(usize),
    /// Every instance's slaves joined: execute (`PxStep::execute`) here and
    /// on these instances, after the QC's waits and the PS release.
    Execute { exec: ExecId, insts: Vec<InstId> },
}

impl PxEffect {
    /// Applying it may send a message: releasing the PS enqueue may ask
    /// its master; a continuation does whatever px does.
    pub(super) fn may_send(&self) -> bool {
        matches!(
            self,
            PxEffect::ReleasePs | PxEffect::Continue(_) | PxEffect::Execute { .. }
        )
    }

    /// Applying it may write a trace record (a wait that ends).
    pub(super) fn may_trace(&self) -> bool {
        !matches!(self, PxEffect::BeginWait { .. } | PxEffect::Resume(_))
    }

    /// Applying it may change session `sid`'s state or wait. Releasing the
    /// PS enqueue only makes ready sessions waiting for it (`WaitEnq`),
    /// whose state px does not look at.
    pub(super) fn touches(&self, sid: u32) -> bool {
        match self {
            PxEffect::BeginWait { sid: s, .. }
            | PxEffect::EndWait(s)
            | PxEffect::EndPxWait(s)
            | PxEffect::Wake(s)
            | PxEffect::Resume(s) => *s == sid,
            PxEffect::ReleasePs => false,
            PxEffect::Continue(_) | PxEffect::Execute { .. } => true,
        }
    }
}
