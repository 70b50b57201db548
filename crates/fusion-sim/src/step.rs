//! What one event does at its own instance: the part of its processing that
//! touches that instance alone (its life, its timer, the fence as it stands).
//! The serial loop (lib.rs) and the parallel lanes (window.rs) both call it,
//! then do the cluster-wide part (network, store, queue) their own way.

use fusion_core::block::Block;
use fusion_core::config::Nanos;
use fusion_core::instance::Instance;
use fusion_core::msg::IoResult;

use crate::lifecycle::Life;
use crate::queue::Ev;

/// An event handed to its instance, held for it or dropped.
pub(crate) struct Landed {
    /// The instance handled it: what it asked for is to be performed, and
    /// its timer re-armed.
    pub handled: bool,
    /// A datafile write that reached the disk with this event: the store
    /// applies it before anything the instance asks for next can read it.
    pub write: Option<Box<Block>>,
}

const NOTHING: Landed = Landed {
    handled: false,
    write: None,
};

/// Hand the event at `at` to instance `x` (`None`: its timer fired).
/// `fenced`: the store fences `x` now, so a write of it landing now is refused.
#[inline(always)]
pub(crate) fn land(
    x: &mut Instance,
    life: &mut Life,
    armed: &mut Option<Nanos>,
    fenced: bool,
    at: Nanos,
    ev: Option<Ev>,
) -> Landed {
    match ev {
        None => {
            // A frozen or gone instance's timer does not fire.
            if !matches!(life, Life::Up) {
                *armed = None;
                return NOTHING;
            }
            if *armed == Some(at) {
                *armed = None;
            }
            x.handle_timeout(at);
            Landed {
                handled: true,
                write: None,
            }
        }
        Some(Ev::Deliver(env)) => {
            let Some(Ev::Deliver(env)) = life.hold_or_drop(Ev::Deliver(env)) else {
                return NOTHING;
            };
            x.handle_message(at, env);
            Landed {
                handled: true,
                write: None,
            }
        }
        Some(Ev::Io {
            inst,
            id,
            mut result,
            write,
        }) => {
            if matches!(life, Life::Down) {
                // It crashed before the write reached the disk.
                return NOTHING;
            }
            let mut landed = None;
            if let Some(block) = write {
                if fenced {
                    result = IoResult::Fenced;
                } else {
                    landed = Some(block);
                }
            }
            let io = Ev::Io {
                inst,
                id,
                result,
                write: None,
            };
            let Some(Ev::Io { id, result, .. }) = life.hold_or_drop(io) else {
                return Landed {
                    handled: false,
                    write: landed,
                };
            };
            x.handle_io(at, id, result);
            Landed {
                handled: true,
                write: landed,
            }
        }
        // The voting file's, never an instance's.
        Some(Ev::Fence { .. }) => NOTHING,
    }
}

/// Hand `x` its wake-up at `at`, due before anything queued, right after
/// the event before it (`fold_into_event`): it goes on to its later
/// deadlines before `quiet_until` itself ([`Instance::handle_timeouts_folded`]).
/// Returns how many deadlines it handled and the time of the last; `None`:
/// it is frozen or gone (its timer does not fire).
#[inline(always)]
pub(crate) fn land_folded(
    x: &mut Instance,
    life: &mut Life,
    armed: &mut Option<Nanos>,
    at: Nanos,
    quiet_until: Nanos,
) -> Option<(u32, Nanos)> {
    if !matches!(life, Life::Up) {
        *armed = None;
        return None;
    }
    // Armed for it (`rearm`), and for nothing later while it goes on: a
    // wake-up due before anything queued leaves the timer unarmed, as each
    // of those it goes on to would have.
    if *armed == Some(at) {
        *armed = None;
    }
    Some(x.handle_timeouts_folded(at, quiet_until))
}

/// When `x`'s timer is to fire next, if that is earlier than the wake-up
/// already queued for it (then it is armed for it): the caller queues it.
#[inline(always)]
pub(crate) fn rearm(x: &Instance, armed: &mut Option<Nanos>, now: Nanos) -> Option<Nanos> {
    // A frozen instance that goes on has overdue timers: they fire now.
    let d = x.next_deadline()?.max(now);
    if armed.is_some_and(|a| d >= a) {
        return None;
    }
    *armed = Some(d);
    Some(d)
}
