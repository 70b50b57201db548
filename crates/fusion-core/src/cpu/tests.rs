//! The run queue's tests: steps, classes, slices and hardware threads.

use super::*;

fn run_until(s: &mut Scheduler, until: Nanos) -> Vec<StepDone> {
    let mut done = Vec::new();
    while let Some(t) = s.next_event() {
        if t > until {
            break;
        }
        s.advance(t, &mut done);
        s.settle(t);
    }
    done
}

const HOG: Nanos = Nanos::MAX / 4;

#[test]
fn idle_cpu_runs_at_once() {
    let mut s = Scheduler::new(2, 10);
    s.request(0, 1, SchedClass::TimeShare, 5);
    let d = run_until(&mut s, 100);
    assert_eq!(
        d,
        vec![StepDone {
            proc: 1,
            requested_at: 0,
            started_at: 0,
            done_at: 5,
            waited: 0
        }]
    );
}

#[test]
fn time_sharing_waits_behind_hogs_real_time_does_not() {
    // 1 CPU, 4 hogs, slice 10 ms.
    let ms = 1_000_000;
    let mut s = Scheduler::new(1, 10 * ms);
    for h in 0..4 {
        s.request(0, 100 + h, SchedClass::TimeShare, HOG);
    }
    s.request(ms, 1, SchedClass::TimeShare, 100_000);
    let d = run_until(&mut s, 200 * ms);
    let lms = d.iter().find(|x| x.proc == 1).unwrap();
    assert!(
        lms.waited >= 30 * ms,
        "waited {} ns behind 4 hogs",
        lms.waited
    );

    let mut s = Scheduler::new(1, 10 * ms);
    for h in 0..4 {
        s.request(0, 100 + h, SchedClass::TimeShare, HOG);
    }
    s.request(ms, 1, SchedClass::RealTime, 100_000);
    let d = run_until(&mut s, 200 * ms);
    let lms = d.iter().find(|x| x.proc == 1).unwrap();
    assert_eq!(lms.waited, 0);
    assert_eq!(lms.done_at, ms + 100_000);
}

#[test]
fn a_process_that_goes_on_working_keeps_its_cpu() {
    let mut s = Scheduler::new(1, 10);
    s.request(0, 1, SchedClass::TimeShare, 5);
    s.request(0, 2, SchedClass::TimeShare, 5);
    let mut done = Vec::new();
    s.advance(5, &mut done);
    assert_eq!(done[0].proc, 1);
    s.request(5, 1, SchedClass::TimeShare, 3);
    s.settle(5);
    let mut done = Vec::new();
    s.advance(8, &mut done);
    assert_eq!(done[0].proc, 1, "continued without queueing behind 2");
    s.settle(8);
    let mut done = Vec::new();
    s.advance(13, &mut done);
    assert_eq!(done[0].proc, 2);
}

#[test]
fn a_long_real_time_step_made_time_sharing_gets_a_slice_from_now() {
    // A real-time step has run 50 ns (five slices) when the class changes;
    // another process queued since 40 must not be served "at 10".
    let mut s = Scheduler::new(1, 10);
    s.request(0, 1, SchedClass::RealTime, 100);
    s.request(40, 2, SchedClass::TimeShare, 5);
    s.reclassify(50, |_| SchedClass::TimeShare);
    assert_eq!(
        s.next_event(),
        Some(60),
        "the slice ends a quantum after the change"
    );
    let d = run_until(&mut s, 1_000);
    let two = d.iter().find(|x| x.proc == 2).unwrap();
    assert_eq!((two.started_at, two.waited), (60, 20));
    let one = d.iter().find(|x| x.proc == 1).unwrap();
    assert_eq!(
        one.done_at, 105,
        "100 ns of work plus the 5 ns it waited for 2"
    );
    assert_eq!(s.busy_ns, 105);
}

#[test]
fn busy_time_adds_up_and_cancel_frees_the_cpu() {
    let mut s = Scheduler::new(1, 10);
    s.request(0, 7, SchedClass::TimeShare, HOG);
    s.request(0, 8, SchedClass::TimeShare, 25);
    let d = run_until(&mut s, 100);
    assert_eq!(d.len(), 1);
    assert!(s.cancel(100, 7));
    assert_eq!(s.next_event(), None);
    assert_eq!(s.busy_ns, 100);
}

/// Withdrawing one process's step, queued or running, leaves every
/// other step where it was: the waiting ones run in their order.
#[test]
fn cancel_withdraws_one_step_and_the_others_run_in_order() {
    let mut s = Scheduler::new(1, 1_000);
    s.request(0, 1, SchedClass::TimeShare, HOG);
    for p in 2..=4 {
        s.request(0, p, SchedClass::TimeShare, 10);
    }
    assert!(s.cancel(5, 3), "a queued step is withdrawn");
    assert!(!s.cancel(5, 3), "and only once");
    assert_eq!(s.queued(), 2);
    assert!(s.cancel(5, 1), "the running step is withdrawn");
    assert_eq!(s.queued(), 1, "the first waiting step took the CPU");
    let d = run_until(&mut s, 100);
    let order: Vec<(ProcId, Nanos)> = d.iter().map(|x| (x.proc, x.done_at)).collect();
    assert_eq!(order, vec![(2, 15), (4, 25)]);
    assert_eq!(s.busy_ns, 25);
    assert_eq!(s.queued(), 0);
}

#[test]
fn threads_of_a_core_share_its_pipeline_but_not_their_stalls() {
    // One core of 2 threads with 1 pipeline: two steps computing at once
    // each run at half speed.
    let mut s = Scheduler::with_cores(2, 1_000, 2, 1);
    s.request(0, 1, SchedClass::TimeShare, 100);
    s.request(0, 2, SchedClass::TimeShare, 100);
    let d = run_until(&mut s, 10_000);
    let two = d.iter().find(|x| x.proc == 2).unwrap();
    assert_eq!(two.done_at, 200, "the second thread shared the pipeline");
    // Two cores of one thread each: both at full speed.
    let mut s = Scheduler::with_cores(2, 1_000, 1, 1);
    s.request(0, 1, SchedClass::TimeShare, 100);
    s.request(0, 2, SchedClass::TimeShare, 100);
    let d = run_until(&mut s, 10_000);
    assert!(d.iter().all(|x| x.done_at == 100));
    // A thread stalled on memory leaves the pipeline to its sibling.
    let mut s = Scheduler::with_cores(2, 1_000, 2, 1);
    s.request_stall(0, 1, SchedClass::TimeShare, 100);
    s.request(0, 2, SchedClass::TimeShare, 100);
    let d = run_until(&mut s, 10_000);
    assert!(d.iter().all(|x| x.done_at == 100), "{d:?}");
}

#[test]
fn runnable_threads_spread_over_the_cores_first() {
    // Two cores of 4 threads, 2 pipelines each: four steps at once take
    // two threads of each core (full speed), not four of the first.
    let mut s = Scheduler::with_cores(8, 1_000, 4, 2);
    for p in 1..=4 {
        s.request(0, p, SchedClass::TimeShare, 100);
    }
    let d = run_until(&mut s, 10_000);
    assert!(d.iter().all(|x| x.done_at == 100), "{d:?}");
    // Packed on one core they would share its 2 pipelines 4 ways.
    let mut packed = Scheduler::with_cores(4, 1_000, 4, 2);
    for p in 1..=4 {
        packed.request(0, p, SchedClass::TimeShare, 100);
    }
    let d = run_until(&mut packed, 10_000);
    assert!(d.iter().any(|x| x.done_at > 100), "{d:?}");
}

#[test]
fn more_than_64_cpus_are_all_used() {
    let mut s = Scheduler::new(130, 1_000);
    for p in 0..130 {
        s.request(0, p, SchedClass::TimeShare, 10 + u64::from(p));
    }
    assert_eq!(s.queued(), 0);
    let d = run_until(&mut s, 10_000);
    assert_eq!(d.len(), 130);
    assert!(d.windows(2).all(|w| w[0].done_at < w[1].done_at), "{d:?}");
    assert!(d.iter().all(|x| x.waited == 0 && x.started_at == 0));
    assert_eq!(s.next_event(), None);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "went back in time")]
fn time_going_back_is_a_bug() {
    let mut s = Scheduler::new(1, 10);
    s.request(100, 1, SchedClass::TimeShare, 5);
    s.request(99, 2, SchedClass::TimeShare, 5);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "went back in time from 30 to 5")]
fn a_step_end_left_behind_is_a_bug() {
    // The step due at 5 must be handled before anything happens at 30.
    let mut s = Scheduler::new(1, 10);
    s.request(0, 1, SchedClass::TimeShare, 5);
    s.request(30, 2, SchedClass::TimeShare, 5);
    s.advance(40, &mut Vec::new());
}
