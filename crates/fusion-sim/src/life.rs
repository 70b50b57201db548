//! Whether each simulated instance runs, is frozen or is gone: the `kill`
//! and `pause` faults of a phase, and an instance the cluster evicted.
//!
//! A killed (or evicted) instance stops at once: what was on its way to it
//! is lost, its timers never fire, an I/O it had in flight never lands (the
//! write did not reach the disk before the crash). A paused one is frozen
//! as SIGSTOP freezes a process: what arrives for it waits, the store
//! finishes its I/Os, and everything is handed to it in arrival order when
//! it goes on.

use fusion_core::config::Nanos;
use fusion_core::types::InstId;

use crate::Sim;
use crate::lifecycle::{Life, LifeEvent, note_halt};

impl Sim {
    /// Whether instance `i` processes events now.
    pub(crate) fn is_up(&self, i: usize) -> bool {
        matches!(self.life.get(i), Some(Life::Up))
    }

    /// Instances that are up (not killed, evicted or frozen).
    pub fn up(&self) -> Vec<bool> {
        (0..self.instances.len()).map(|i| self.is_up(i)).collect()
    }

    /// Apply a change of life at the current time.
    pub(crate) fn apply_life(&mut self, event: LifeEvent) {
        match event {
            LifeEvent::Kill(i) => {
                if let Some(l) = self.life.get_mut(i) {
                    *l = Life::Down;
                }
                if let Some(x) = self.instances.get_mut(i) {
                    x.crash(self.now);
                }
                self.armed[i] = None;
                if let Some(c) = self.checker.as_mut() {
                    c.instance_down(InstId(i as u8));
                }
                self.fault_log
                    .push((self.now, InstId(i as u8), "killed (SIGKILL)".to_string()));
            }
            LifeEvent::Pause { inst, duration } => {
                if let Some(l @ Life::Up) = self.life.get_mut(inst) {
                    *l = Life::Paused {
                        until: self.now + duration,
                        held: Vec::new(),
                    };
                    self.fault_log.push((
                        self.now,
                        InstId(inst as u8),
                        format!("paused (SIGSTOP) for {:.1} s", duration as f64 / 1e9),
                    ));
                }
            }
            LifeEvent::Resume(i) => self.resume(i),
            LifeEvent::Restart(i) => self.restart(i),
        }
    }

    /// A killed instance starts again: a new instance (its next life) that
    /// asks the cluster to admit it; its redo thread starts anew (the old
    /// one was recovered).
    fn restart(&mut self, i: usize) {
        if !matches!(self.life.get(i), Some(Life::Down)) {
            return;
        }
        let Some(mut cfg) = self.configs.get(i).cloned() else {
            return;
        };
        self.lives[i] += 1;
        cfg.life = self.lives[i];
        let mut x = fusion_core::instance::Instance::new(cfg);
        x.carry_over(&self.instances[i]);
        if self.seq_order.is_some() {
            x.log_nextvals(true);
        }
        if self.trace.is_some() {
            // What the old life recorded and was not drained yet goes first.
            self.drain_trace(i);
            x.set_tracing(true);
        }
        self.instances[i] = x;
        self.life[i] = Life::Up;
        self.store.restart_thread(i);
        self.fault_log
            .push((self.now, InstId(i as u8), "restarted (startup)".to_string()));
        self.armed[i] = None;
        self.drain(i);
    }

    /// A frozen instance goes on: what reached it meanwhile is handed over,
    /// at this time, in the order it arrived.
    fn resume(&mut self, i: usize) {
        let Some(Life::Paused { held, .. }) = self.life.get_mut(i) else {
            return;
        };
        let held = std::mem::take(held);
        self.life[i] = Life::Up;
        self.fault_log
            .push((self.now, InstId(i as u8), "continued (SIGCONT)".to_string()));
        for ev in held {
            if self.queue.push(self.now, self.now, ev).is_err() {
                self.queue_full();
                return;
            }
        }
        // Its timers are due (or overdue): wake it now.
        self.armed[i] = None;
        if self.queue.push_wake(self.now, self.now, i).is_err() {
            self.queue_full();
        }
    }

    /// The next frozen instance due to go on, at or before `until`.
    pub(crate) fn next_resume(&self, until: Nanos) -> Option<(Nanos, usize)> {
        self.life
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match l {
                Life::Paused { until: t, .. } if *t <= until => Some((*t, i)),
                _ => None,
            })
            .min()
    }

    /// An instance the cluster evicted has stopped: it is gone.
    pub(crate) fn note_halt(&mut self, i: usize) {
        if let (Some(x), Some(life), Some(armed)) = (
            self.instances.get(i),
            self.life.get_mut(i),
            self.armed.get_mut(i),
        ) {
            note_halt(x, life, armed);
        }
    }
}

impl Sim {
    /// Run to `until`, applying the timeline's kills and pauses (sorted by
    /// time) and the continues of paused instances as their times come.
    pub(crate) fn run_to(&mut self, until: Nanos, timeline: &[(Nanos, LifeEvent)]) {
        let mut next = 0;
        while self.stopped.is_none() {
            let timed = timeline.get(next).filter(|(t, _)| *t <= until).copied();
            let resume = self.next_resume(until);
            let (at, event) = match (timed, resume) {
                (Some((t, e)), Some((r, _))) if t <= r => {
                    next += 1;
                    (t, e)
                }
                (_, Some((r, i))) => (r, LifeEvent::Resume(i)),
                (Some((t, e)), None) => {
                    next += 1;
                    (t, e)
                }
                (None, None) => break,
            };
            self.run_until(at);
            if self.stopped.is_none() {
                self.apply_life(event);
            }
        }
        self.run_until(until);
    }

    /// The alert log since the last call: every instance's lines, and the
    /// kills, pauses and continues the timeline did to them.
    pub fn take_alert_log(&mut self) -> Vec<fusion_report::AlertEntry> {
        let mut out: Vec<fusion_report::AlertEntry> = self
            .fault_log
            .drain(..)
            .map(|(at_ns, inst, what)| fusion_report::AlertEntry {
                at_ns,
                instance: inst.number(),
                line: format!("Instance {what}"),
            })
            .collect();
        for x in &mut self.instances {
            let instance = x.id.number();
            out.extend(
                x.take_alert_log()
                    .into_iter()
                    .map(|a| fusion_report::AlertEntry {
                        at_ns: a.at,
                        instance,
                        line: a.line,
                    }),
            );
        }
        out
    }
}
