//! Modeled storage latency, the time a call takes with the real file I/O
//! done inside it, so a live run sees the scenario's storage (the simulator's `StorageModel`) rather than
//! whatever the host's disk or page cache does: an IOPS budget for the
//! datafiles, and per-instance `disk_latency` faults on the redo or data
//! device.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use fusion_core::config::{NS_PER_S, Nanos};

/// The storage model, field for field as `fusion_scenario::StorageModel`
/// (`read_latency_ms`, `write_latency_ms`, `log_write_latency_ms`, `iops`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyModel {
    /// Datafile read (one `ReadBlocks` call is one I/O).
    pub read_latency: Nanos,
    /// Datafile write (one `WriteBlocks` call is one I/O).
    pub write_latency: Nanos,
    /// Redo write (`AppendRedo`).
    pub log_write_latency: Nanos,
    /// Datafile I/O operations per second; 0 = unbounded.
    pub iops: u64,
}

impl LatencyModel {
    /// No modeled latency: only the real I/O.
    pub const ZERO: LatencyModel = LatencyModel {
        read_latency: 0,
        write_latency: 0,
        log_write_latency: 0,
        iops: 0,
    };
}

/// The device a fault slows down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Redo,
    Data,
}

#[derive(Clone, Copy, Debug)]
struct Slow {
    latency: Nanos,
    jitter: Nanos,
}

struct State {
    model: LatencyModel,
    /// The array's next free I/O slot under the IOPS budget.
    next_slot: Instant,
    redo_fault: Vec<Option<Slow>>,
    data_fault: Vec<Option<Slow>>,
    rng: u64,
}

/// The model plus the faults in force; shared by every call.
pub struct Latency {
    state: Mutex<State>,
}

/// What a call must wait: until `start` for its IOPS slot, then `extra`
/// from there, the real I/O included.
#[derive(Clone, Copy, Debug)]
pub struct Delay {
    pub start: Option<Instant>,
    pub extra: Duration,
}

impl Delay {
    pub const NONE: Delay = Delay {
        start: None,
        extra: Duration::ZERO,
    };
}

impl Latency {
    pub fn new(model: LatencyModel, seed: u64) -> Latency {
        let n = fusion_wire::INSTANCES_MAX as usize;
        Latency {
            state: Mutex::new(State {
                model,
                next_slot: Instant::now(),
                redo_fault: vec![None; n],
                data_fault: vec![None; n],
                // SplitMix64 needs a non-zero-ish start; any seed works.
                rng: seed ^ 0x9E37_79B9_7F4A_7C15,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replace the model (a scenario brings its own storage with `Format`).
    pub fn set_model(&self, model: LatencyModel) {
        self.state().model = model;
    }

    /// A datafile read or write by instance `inst`.
    pub fn data(&self, inst: usize, write: bool) -> Delay {
        let mut s = self.state();
        let base = if write {
            s.model.write_latency
        } else {
            s.model.read_latency
        };
        // iops 0 means unbounded: no slot to wait for.
        let start = NS_PER_S.checked_div(s.model.iops).and_then(|gap| {
            let now = Instant::now();
            let start = now.max(s.next_slot);
            s.next_slot = start + Duration::from_nanos(gap);
            (start > now).then_some(start)
        });
        let fault = s.data_fault.get(inst).copied().flatten();
        let took = jittered(&mut s.rng, base, fault);
        Delay {
            start,
            extra: Duration::from_nanos(took),
        }
    }

    /// A redo write by instance `inst` (no IOPS budget, as in the simulator).
    pub fn redo(&self, inst: usize) -> Delay {
        let mut s = self.state();
        let fault = s.redo_fault.get(inst).copied().flatten();
        let base = s.model.log_write_latency;
        let took = jittered(&mut s.rng, base, fault);
        Delay {
            start: None,
            extra: Duration::from_nanos(took),
        }
    }

    pub fn set_fault(&self, inst: usize, device: Device, latency: Nanos, jitter: Nanos) {
        let mut s = self.state();
        let slot = match device {
            Device::Redo => s.redo_fault.get_mut(inst),
            Device::Data => s.data_fault.get_mut(inst),
        };
        if let Some(f) = slot {
            *f = Some(Slow { latency, jitter });
        }
    }

    pub fn clear_faults(&self) {
        let mut s = self.state();
        s.redo_fault.iter_mut().for_each(|f| *f = None);
        s.data_fault.iter_mut().for_each(|f| *f = None);
    }
}

/// A fault replaces the model's latency, as in the simulator.
fn jittered(rng: &mut u64, base: Nanos, fault: Option<Slow>) -> Nanos {
    match fault {
        None => base,
        Some(f) if f.jitter == 0 => f.latency,
        Some(f) => f
            .latency
            .saturating_add(splitmix(rng) % f.jitter.saturating_add(1).max(1)),
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_replace_the_model_and_clear() {
        let l = Latency::new(
            LatencyModel {
                read_latency: 5,
                write_latency: 6,
                log_write_latency: 7,
                iops: 0,
            },
            1,
        );
        assert_eq!(l.data(0, false).extra, Duration::from_nanos(5));
        assert_eq!(l.redo(1).extra, Duration::from_nanos(7));
        l.set_fault(1, Device::Redo, 1000, 10);
        let d = l.redo(1).extra.as_nanos();
        assert!((1000..=1010).contains(&d), "{d}");
        assert_eq!(l.redo(0).extra, Duration::from_nanos(7));
        l.clear_faults();
        assert_eq!(l.redo(1).extra, Duration::from_nanos(7));
    }

    #[test]
    fn iops_budget_spaces_datafile_io() {
        let l = Latency::new(
            LatencyModel {
                iops: 10,
                ..LatencyModel::ZERO
            },
            1,
        );
        let first = l.data(0, false);
        let second = l.data(0, true);
        let third = l.data(1, false);
        assert!(first.start.is_none());
        let (Some(s2), Some(s3)) = (second.start, third.start) else {
            panic!("later I/Os wait for their slot");
        };
        assert!(s3 - s2 >= Duration::from_millis(99));
    }
}
