//! Each simulated instance's life as the event loop sees it: up, frozen
//! or gone (`Life`), and its lives the cluster admitted and survivors
//! recovered (`Lives`). Plain state: the `Sim` methods that change it are
//! in life.rs (faults) and samples.rs (admissions and recoveries).

use fusion_core::config::Nanos;
use fusion_core::instance::Instance;

pub(crate) use fusion_driver::LifeEvent;

use crate::queue::Ev;

/// An instance's state in the simulation.
pub(crate) enum Life {
    Up,
    /// Frozen until `until`; `held`: what reached it meanwhile, in order.
    Paused {
        until: Nanos,
        held: Vec<Ev>,
    },
    Down,
}

impl Life {
    /// An event for this instance when it is not up: held while it is
    /// frozen, dropped when it is gone. Returns the event back when it is up.
    pub(crate) fn hold_or_drop(&mut self, ev: Ev) -> Option<Ev> {
        match self {
            Life::Up => Some(ev),
            Life::Paused { held, .. } => {
                held.push(ev);
                None
            }
            Life::Down => None,
        }
    }
}

/// An instance's lives: how many the cluster admitted (the last by its
/// number) and how many recoveries of it survivors reported.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lives {
    admitted: u32,
    admitted_life: Option<u32>,
    recovered: u32,
    /// The life last seen, and the newest incarnation when it was first
    /// seen: a later incarnation that has it as a member admitted it (the
    /// one it was born into still names its earlier life).
    life_seen: u32,
    born: u32,
}

impl Lives {
    /// A survivor reported recovering this instance.
    pub(crate) fn note_recovered(&mut self) {
        self.recovered += 1;
    }

    /// The newest incarnation (`incarnation`) seen while this instance runs
    /// life `life`; `admitted`: it is a member of it and up. A life is
    /// admitted by a later incarnation than the one it was born into (its
    /// first names the earlier life), the first life by any.
    pub(crate) fn note_seen(&mut self, life: u32, incarnation: u32, admitted: bool) {
        if life != self.life_seen {
            self.life_seen = life;
            self.born = incarnation;
        }
        if admitted && (life == 0 || incarnation > self.born) && self.admitted_life != Some(life) {
            self.admitted_life = Some(life);
            self.admitted += 1;
        }
    }

    /// Whether an admitted life of this instance that ended has not been
    /// reported recovered; `current`: the life it runs now, `down`: it is gone.
    pub(crate) fn unrecovered(&self, current: u32, down: bool) -> bool {
        let running = !down && self.admitted_life == Some(current);
        self.recovered < self.admitted - u32::from(running).min(self.admitted)
    }
}

/// An instance the cluster evicted has stopped: it is gone.
#[inline(always)]
pub(crate) fn note_halt(x: &Instance, life: &mut Life, armed: &mut Option<Nanos>) {
    if matches!(life, Life::Up) && x.halted().is_some() {
        *life = Life::Down;
        *armed = None;
    }
}
