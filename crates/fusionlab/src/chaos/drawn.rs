//! The faults a chaos run draws: their kinds, and one fault drawn for a
//! phase of the run (whichever driver carries it out).

use fusion_scenario::Fault;

/// The kinds of fault a run may draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Kill,
    Restart,
    Pause,
    /// A pause of `css_misscount` or more: the cluster evicts the instance.
    LongPause,
    Loss,
    Partition,
}

impl Kind {
    pub const ALL: &'static [Kind] = &[
        Kind::Kill,
        Kind::Restart,
        Kind::Pause,
        Kind::LongPause,
        Kind::Loss,
        Kind::Partition,
    ];

    /// As the output and JSON name it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Restart => "restart",
            Kind::Pause => "pause",
            Kind::LongPause => "long_pause",
            Kind::Loss => "loss",
            Kind::Partition => "partition",
        }
    }

    /// Whether it takes an instance down for good (until a restart).
    pub(crate) fn takes_down(self) -> bool {
        matches!(self, Kind::Kill | Kind::LongPause | Kind::Partition)
    }
}

/// A fault drawn for a run: its kind, the phase (index) it belongs to and
/// the model's fault.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub kind: Kind,
    pub phase: usize,
    pub fault: Fault,
}
