//! The PX servers of an instance (`P000`, ... processes in the CPU run queue)
//! and the executions this instance hosts slaves for, whichever instance
//! coordinates them. The coordinator's side is mod.rs; a slave at work is
//! slave.rs.

use super::slave::{Host, Role, Worker};
use super::{Hosted, PxState, PxStep, Server};
use crate::cpu::StepDone;
use crate::instance::events::Proc;
use crate::instance::kernel::Kernel;
use crate::px::{DOP_MAX, ExecId, PxMsg, PxSessionRow, QueryRef, SlaveId};
use crate::stats::{Stat, Wait};
use crate::types::InstId;

impl PxState {
    // ----- the server pool ----------------------------------------------------------------

    /// Start the `parallel_min_servers` servers an instance has from startup.
    pub fn prestart(&mut self, k: &mut Kernel) {
        for _ in 0..k.params().px.min_servers {
            self.new_server(k);
        }
    }

    /// A new server process `Pnnn` joins the pool: its index.
    fn new_server(&mut self, k: &mut Kernel) -> usize {
        let idx = self.servers.len();
        // At most parallel_max_servers servers (SERVERS_MAX, 3,600): the
        // loader bounds parallel_min_servers by it and `host_start`
        // refuses a start that needs more than are free.
        let n = u32::try_from(idx).expect("PX servers are at most parallel_max_servers");
        let proc = k.add_proc(Proc::PxServer(n), server_name(idx));
        self.servers.push(Server {
            proc,
            worker: None,
            starting: None,
        });
        k.incr(Stat::PxServersStarted);
        idx
    }

    /// A free server (the lowest-numbered), started if none is: (index, needs start).
    fn take_server(&mut self, k: &mut Kernel) -> (usize, bool) {
        self.busy += 1;
        self.busy_high = self.busy_high.max(self.busy);
        let taken = match self
            .servers
            .iter()
            .position(|s| s.worker.is_none() && s.starting.is_none())
        {
            Some(i) => (i, false),
            None => (self.new_server(k), true),
        };
        debug_assert!(
            self.busy as usize <= self.servers.len(),
            "{} servers busy of {}",
            self.busy,
            self.servers.len()
        );
        taken
    }

    /// Keep worker `w` in a free slot: its number.
    pub(super) fn add_worker(&mut self, w: Worker) -> usize {
        let key = w.key();
        let slot = match self.free_slots.pop() {
            Some(i) => {
                debug_assert!(self.workers[i].is_none(), "worker slot {i} freed in use");
                self.workers[i] = Some(w);
                i
            }
            None => {
                self.workers.push(Some(w));
                self.workers.len() - 1
            }
        };
        let earlier = self.by_slave.insert(key, slot);
        debug_assert_eq!(earlier, None, "slave {key:?} added twice");
        slot
    }
}

impl PxStep<'_, '_> {
    /// A server's CPU step ended: its process start, or its worker's step.
    pub fn server_step_done(&mut self, idx: u32, d: StepDone) {
        let Some(server) = self.px.servers.get_mut(idx as usize) else {
            return;
        };
        if let Some(exec) = server.starting.take() {
            let joined = match self.px.hosted.get_mut(&exec) {
                Some(h) => {
                    // Not asserted: a peer may release and start `exec` again
                    // while the server starts.
                    h.starting = h.starting.saturating_sub(1);
                    h.starting == 0
                }
                None => false,
            };
            if joined {
                self.host_joined(exec);
            }
            return;
        }
        if let Some(w) = server.worker {
            if let Some(wk) = self.px.worker_mut(w) {
                wk.add_db_ns(d.done_at - d.requested_at);
            }
            self.worker_cpu_done(w);
        }
    }

    // ----- hosting slaves -----------------------------------------------------------------

    pub(super) fn host_start(
        &mut self,
        exec: ExecId,
        qc_sid: u32,
        qref: QueryRef,
        requested: u32,
        dop: u32,
        placement: Vec<InstId>,
    ) {
        let Some(query) = self.query(qref) else {
            self.k.error(&format!(
                "start of {exec:?} names no parallel query ({qref:?})"
            ));
            return;
        };
        let sets = u64::from(query.plan.sets());
        // The peer chose `dop`: u64 arithmetic, and at most DOP_MAX.
        if dop == 0
            || dop > DOP_MAX
            || u64::try_from(placement.len()).ok() != Some(sets * u64::from(dop))
            || placement.iter().any(|i| i.0 >= self.k.instance_count())
            || self.px.hosted.contains_key(&exec)
        {
            self.k.error(&format!(
                "bad start of {exec:?} (dop {dop}, {} slaves placed)",
                placement.len()
            ));
            return;
        }
        let me = self.k.id();
        // Checked above: 0 < dop <= DOP_MAX and k < sets * dop with sets <= 2.
        let mine: Vec<SlaveId> = placement
            .iter()
            .enumerate()
            .filter(|(_, i)| **i == me)
            .filter_map(|(k, _)| SlaveId::of_placement(k, dop))
            .collect();
        // The QC counted our free servers under the PS enqueue: a start that
        // needs more is a peer's mistake, and the pool stays within
        // parallel_max_servers.
        let cpu = self.k.params().cpu_count;
        let free = self
            .k
            .params()
            .px
            .max_servers(cpu)
            .saturating_sub(self.px.busy);
        if u32::try_from(mine.len()).map_or(true, |n| n > free) {
            self.k.error(&format!(
                "start of {exec:?} places {} slaves here, {free} servers free",
                mine.len()
            ));
            return;
        }
        self.px.hosted.insert(
            exec,
            Hosted {
                query: query.clone(),
                qc_sid,
                requested,
                dop,
                placement,
                workers: Vec::new(),
                starting: 0,
            },
        );
        let mut starting = 0;
        let mut workers = Vec::new();
        for slave in mine {
            let (server, start) = self.px.take_server(self.k);
            let role = if query.plan.sets() == 2 && slave.set == 0 {
                Role::Producer
            } else if query.plan.sets() == 2 {
                Role::Consumer
            } else {
                Role::Producer
            };
            let proc = self.px.servers[server].proc;
            let w = self.px.add_worker(Worker::new(
                exec,
                slave,
                Host::Server(server),
                proc,
                role,
                &query,
                dop,
            ));
            debug_assert_eq!(
                self.px.servers[server].worker, None,
                "server {server} taken while busy"
            );
            self.px.servers[server].worker = Some(w);
            if start {
                self.px.servers[server].starting = Some(exec);
                starting += 1;
                let cost = self.k.costs().px_server_start_ns;
                self.k.cpu(proc, cost);
            }
            self.worker_begin_wait(w, Wait::PxDeqExecutionMsg);
            workers.push(w);
        }
        if let Some(h) = self.px.hosted.get_mut(&exec) {
            h.workers = workers;
            h.starting = starting;
        }
        if starting == 0 {
            self.host_joined(exec);
        }
    }

    fn host_joined(&mut self, exec: ExecId) {
        if exec.qc == self.k.id() {
            self.qc_joined(exec);
        } else {
            self.send(exec.qc, PxMsg::Joined { exec });
        }
    }

    pub(super) fn host_execute(&mut self, exec: ExecId) {
        let Some(h) = self.px.hosted.get(&exec) else {
            self.k.error(&format!("execute of unknown {exec:?}"));
            return;
        };
        for w in h.workers.clone() {
            self.worker_start(w);
        }
    }

    /// The statement is over: record each slave's row and free its server.
    pub(super) fn host_release(&mut self, exec: ExecId) {
        let Some(h) = self.px.hosted.remove(&exec) else {
            return;
        };
        let me = self.k.id().number();
        let qc_inst = exec.qc.number();
        for w in h.workers {
            let Some(wk) = self.px.workers.get_mut(w).and_then(Option::take) else {
                continue;
            };
            self.px.free_slots.push(w);
            let added = self.px.by_slave.remove(&wk.key());
            debug_assert_eq!(added, Some(w), "slave {:?} was not worker {w}", wk.key());
            if let Some((ev, since)) = wk.wait() {
                let took = self.k.now() - since;
                self.k.wait(ev, took, true);
            }
            let Host::Server(server) = wk.host() else {
                continue;
            };
            self.k.add(Stat::DbTime, wk.db_ns());
            let (slave, t) = (wk.key().1, wk.traffic());
            self.k.stats_mut().px.sessions.push(PxSessionRow {
                qc_inst,
                qc_sid: h.qc_sid,
                exec: exec.serial,
                query: h.query.name.clone(),
                inst: me,
                name: server_name(server).to_lowercase(),
                set: slave.set + 1,
                requested_dop: h.requested,
                dop: h.dop,
                rows: t.rows,
                bytes_sent_remote: t.sent_remote,
                bytes_recv_remote: t.recv_remote,
                bytes_sent_local: t.sent_local,
            });
            if let Some(s) = self.px.servers.get_mut(server) {
                debug_assert_eq!(s.worker, Some(w), "server {server} ran another worker");
                s.worker = None;
            }
            // Each server-hosted worker took one server (`host_start`).
            debug_assert!(self.px.busy > 0, "a server freed twice");
            self.px.busy -= 1;
        }
        self.servers_freed();
    }

    /// Tell whoever probed here that servers are free, and wake a local queued statement.
    fn servers_freed(&mut self) {
        let me = self.k.id();
        for i in std::mem::take(&mut self.px.watchers) {
            if i != me {
                self.send(i, PxMsg::Freed);
            }
        }
        self.wake_queue();
    }
}

/// `P000`, `P001`, ... (v$px_session prints them lowercase).
fn server_name(idx: usize) -> String {
    format!("P{idx:03}")
}
