//! The failure faults of a phase as a timeline of changes of life (kill,
//! pause, restart), in time order: the simulator applies them on its
//! virtual clock, the live runner to real processes at the same times.

use fusion_core::config::Nanos;
use fusion_scenario::Fault;

/// A change of an instance's life (0-based instances).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LifeEvent {
    Kill(usize),
    Pause {
        inst: usize,
        duration: Nanos,
    },
    Resume(usize),
    /// A killed instance starts again (a new process, an empty cache) and joins.
    Restart(usize),
}

/// A phase's kills, pauses and restarts, at their times from `start`.
/// Faults at the same time apply in the file's order.
pub fn timeline_of(start: Nanos, faults: &[Fault]) -> Vec<(Nanos, LifeEvent)> {
    let mut out: Vec<(Nanos, LifeEvent)> = faults
        .iter()
        .filter_map(|f| match *f {
            Fault::Kill { instance, at } => Some((
                start + at,
                LifeEvent::Kill(usize::from(instance).saturating_sub(1)),
            )),
            Fault::Pause {
                instance,
                at,
                duration,
            } => Some((
                start + at,
                LifeEvent::Pause {
                    inst: usize::from(instance).saturating_sub(1),
                    duration,
                },
            )),
            Fault::Restart { instance, at } => Some((
                start + at,
                LifeEvent::Restart(usize::from(instance).saturating_sub(1)),
            )),
            _ => None,
        })
        .collect();
    out.sort_by_key(|(t, _)| *t);
    out
}
