//! The end of a run: every workload and fault stopped, then the wait until
//! what was in flight has landed (blocks on the wire, commits waiting for
//! LGWR), so the end-of-run checks see a cluster at rest rather than a block
//! between two caches. A cluster that does not come to rest is an error that
//! says what is still going on, never a silent give-up: checks over it
//! would report what is merely in flight as lost.

use fusion_check::MemberView;
use fusion_core::config::{NS_PER_S, Nanos};
use fusion_core::instance::Command;
use fusion_core::types::{InstId, InstSet};
use fusion_scenario::Phase;

/// The longest a cluster may take to come to rest after a run (simulated
/// time on the simulator, real time live).
pub const SETTLE_NS_MAX: Nanos = 60 * NS_PER_S;

/// What every instance is told at the end of a run: the commands of a phase
/// without workloads or faults (the drivers clear their interconnect and
/// store faults with it).
pub fn quiesce_commands() -> Vec<Command> {
    let quiet = Phase {
        name: "quiesce".into(),
        duration: 0,
        parameters: Vec::new(),
        faults: Vec::new(),
        workloads: Some(Vec::new()),
        checkpoint: false,
        backup: None,
    };
    // Without parameters or faults the commands are every instance's.
    quiet.commands_for(0)
}

/// What one instance still has going on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    pub instance: InstId,
    /// Every session stopped and holds nothing.
    pub at_rest: bool,
    /// What sessions wait on: (event, sessions).
    pub waits: Vec<(String, u32)>,
    /// Messages to this instance not delivered yet.
    pub messages_in_flight: u64,
    /// Its store requests not answered yet.
    pub io_in_flight: u64,
}

impl Activity {
    pub fn at_rest(&self) -> bool {
        self.at_rest && self.messages_in_flight == 0 && self.io_in_flight == 0
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.at_rest {
            let waits: Vec<String> = self
                .waits
                .iter()
                .map(|(event, sessions)| format!("{event}: {sessions}"))
                .collect();
            parts.push(if waits.is_empty() {
                "sessions not at rest".to_string()
            } else {
                format!("sessions not at rest ({})", waits.join(", "))
            });
        }
        if self.messages_in_flight > 0 {
            parts.push(format!(
                "{} messages in flight to it",
                self.messages_in_flight
            ));
        }
        if self.io_in_flight > 0 {
            parts.push(format!("{} store I/Os outstanding", self.io_in_flight));
        }
        format!("{}: {}", self.instance, parts.join(", "))
    }
}

/// Ok when every instance is at rest; else the error, naming what each
/// instance still has in flight after waiting `waited` (e.g. "60 s of
/// simulated time").
pub fn settled(activity: &[Activity], waited: &str) -> Result<(), String> {
    let busy: Vec<String> = activity
        .iter()
        .filter(|a| !a.at_rest())
        .map(Activity::describe)
        .collect();
    if busy.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the cluster did not come to rest within {waited} after the run, so the end-of-run \
         checks were not run; still in flight: {}",
        busy.join("; ")
    ))
}

/// The dead instances of a cluster of `instances` whose committed changes
/// may still be only in their redo threads, as the instances that answer
/// tell it (`views`; an instance with no view does not answer): a dead one
/// the newest incarnation still counts a member (not evicted yet, so not
/// recovered yet), and those a member of it has not seen recovered. Until
/// this is empty the store and the caches do not hold every acknowledged
/// commit, and end-of-run checks would report a commit merely not
/// recovered yet as lost. With nobody running, every dead instance.
pub fn unrecovered(views: &[MemberView], instances: usize) -> InstSet {
    let mut dead = InstSet::default();
    // A cluster has at most 64 instances (an InstSet's bits).
    for id in (0..64u8)
        .filter(|&i| usize::from(i) < instances)
        .map(InstId)
    {
        if !views.iter().any(|v| v.inst == id && !v.halted) {
            dead.insert(id);
        }
    }
    let Some(newest) = MemberView::newest(views) else {
        return dead;
    };
    let mut left = InstSet(newest.members.0 & dead.0);
    for v in views
        .iter()
        .filter(|v| !v.halted && newest.members.contains(v.inst))
    {
        left = InstSet(left.0 | v.unrecovered.0);
    }
    left
}

/// The error of a cluster whose dead instances were not recovered within
/// `waited` after the run.
pub fn not_recovered(dead: InstSet, waited: &str) -> String {
    let names: Vec<String> = dead.iter().map(|i| i.to_string()).collect();
    format!(
        "the cluster did not come to rest within {waited} after the run: no survivor \
         recovered {} (its blocks are only in its redo), so the end-of-run checks were not run",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quiesce_stops_hogs_and_workloads() {
        assert_eq!(
            quiesce_commands(),
            vec![
                Command::ResetPeaks,
                Command::StressCpu {
                    workers: 0,
                    load_pct: 100
                },
                Command::EnableWorkloads(Some(Vec::new())),
            ]
        );
    }

    fn view(i: u8, incarnation: u32, members: u64, unrecovered: u64) -> MemberView {
        MemberView {
            inst: InstId(i),
            halted: false,
            incarnation,
            members: InstSet(members),
            unrecovered: InstSet(unrecovered),
        }
    }

    #[test]
    fn a_dead_instance_counts_until_a_member_of_the_newest_incarnation_saw_it_recovered() {
        // Inst3 (bit 2) killed: nobody evicted it yet.
        let before = [view(0, 1, 0b111, 0), view(1, 1, 0b111, 0)];
        assert_eq!(unrecovered(&before, 3), InstSet(0b100));
        // Evicted, its thread being recovered.
        let evicted = [view(0, 2, 0b011, 0b100), view(1, 2, 0b011, 0b100)];
        assert_eq!(unrecovered(&evicted, 3), InstSet(0b100));
        // Inst1 recovered it; inst2 has not heard yet.
        let told_one = [view(0, 2, 0b011, 0), view(1, 2, 0b011, 0b100)];
        assert_eq!(unrecovered(&told_one, 3), InstSet(0b100));
        let recovered = [view(0, 2, 0b011, 0), view(1, 2, 0b011, 0)];
        assert!(unrecovered(&recovered, 3).is_empty());
        // An evicted instance that woke and stopped itself still answers,
        // with its old incarnation: it does not run, and does not count.
        let halted = MemberView {
            halted: true,
            ..view(2, 1, 0b111, 0)
        };
        let woke = [view(0, 2, 0b011, 0), view(1, 2, 0b011, 0), halted];
        assert!(unrecovered(&woke, 3).is_empty());
        // A restarted life not admitted yet knows nothing: the members decide.
        let joining = [
            view(0, 2, 0b011, 0b100),
            view(1, 2, 0b011, 0b100),
            view(2, 0, 0, 0),
        ];
        assert_eq!(unrecovered(&joining, 3), InstSet(0b100));
        // Nobody runs: every instance is dead and nobody recovers it.
        assert_eq!(unrecovered(&[], 2), InstSet(0b11));
        let e = not_recovered(InstSet(0b100), "60 s");
        assert!(
            e.contains("no survivor recovered inst3") && e.contains("60 s"),
            "{e}"
        );
    }

    #[test]
    fn an_unsettled_cluster_is_an_error_naming_what_is_in_flight() {
        let at_rest = |i| Activity {
            instance: InstId(i),
            at_rest: true,
            waits: Vec::new(),
            messages_in_flight: 0,
            io_in_flight: 0,
        };
        let quiet = at_rest(0);
        assert_eq!(settled(std::slice::from_ref(&quiet), "1 s"), Ok(()));
        let busy = Activity {
            instance: InstId(1),
            at_rest: false,
            waits: vec![("gc cr request".into(), 2)],
            messages_in_flight: 3,
            io_in_flight: 1,
        };
        let e = settled(&[quiet, busy], "1 s").expect_err("not at rest");
        assert!(
            e.contains("within 1 s")
                && e.contains(
                    "inst2: sessions not at rest (gc cr request: 2), 3 messages in flight \
                     to it, 1 store I/Os outstanding"
                )
                && !e.contains("inst1"),
            "{e}"
        );
        let io_only = Activity {
            io_in_flight: 4,
            ..at_rest(2)
        };
        let e = settled(&[io_only], "1 s").expect_err("I/O outstanding");
        assert!(e.contains("inst3: 4 store I/Os outstanding"), "{e}");
    }
}
