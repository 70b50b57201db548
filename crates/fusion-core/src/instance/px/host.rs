//! The PX servers of an instance (`P000`, ... processes in the CPU run queue)
//! and the executions this instance hosts slaves for, whichever instance
//! coordinates them. The coordinator's side is px.rs; a slave at work is
//! px_slave.rs.

use super::slave::{Host, Role, Worker};
use super::{Hosted, Server};
use crate::instance::Instance;
use crate::instance::events::Proc;
use crate::px::{DOP_MAX, ExecId, PxMsg, PxSessionRow, QueryRef, SlaveId};
use crate::stats::{Stat, Wait};
use crate::types::InstId;

impl Instance {
    // ----- the server pool ----------------------------------------------------------------

    /// Start the `parallel_min_servers` servers an instance has from startup.
    pub(in crate::instance) fn px_prestart(&mut self) {
        for _ in 0..self.k.params().px.min_servers {
            self.px_new_server();
        }
    }

    /// A new server process `Pnnn` joins the pool: its index.
    fn px_new_server(&mut self) -> usize {
        let idx = self.px.servers.len();
        // At most parallel_max_servers servers (MAX_SERVERS, 3,600): the
        // loader bounds parallel_min_servers by it and `px_host_start`
        // refuses a start that needs more than are free.
        let n = u32::try_from(idx).expect("PX servers are at most parallel_max_servers");
        let proc = self.add_proc(Proc::PxServer(n), server_name(idx));
        self.px.servers.push(Server {
            proc,
            worker: None,
            starting: None,
        });
        self.k.incr(Stat::PxServersStarted);
        idx
    }

    /// A free server (the lowest-numbered), started if none is: (index, needs start).
    pub(super) fn px_take_server(&mut self) -> (usize, bool) {
        self.px.busy += 1;
        self.px.busy_high = self.px.busy_high.max(self.px.busy);
        if let Some(i) = self
            .px
            .servers
            .iter()
            .position(|s| s.worker.is_none() && s.starting.is_none())
        {
            return (i, false);
        }
        (self.px_new_server(), true)
    }

    pub(super) fn px_add_worker(&mut self, w: Worker) -> usize {
        let key = w.key();
        let slot = match self.px.free_slots.pop() {
            Some(i) => {
                self.px.workers[i] = Some(w);
                i
            }
            None => {
                self.px.workers.push(Some(w));
                self.px.workers.len() - 1
            }
        };
        self.px.by_slave.insert(key, slot);
        slot
    }

    /// A server's CPU step ended: its process start, or its worker's step.
    pub(in crate::instance) fn px_server_step_done(&mut self, idx: u32, d: crate::cpu::StepDone) {
        let Some(server) = self.px.servers.get_mut(idx as usize) else {
            return;
        };
        if let Some(exec) = server.starting.take() {
            let joined = match self.px.hosted.get_mut(&exec) {
                Some(h) => {
                    h.starting = h.starting.saturating_sub(1);
                    h.starting == 0
                }
                None => false,
            };
            if joined {
                self.px_host_joined(exec);
            }
            return;
        }
        if let Some(w) = server.worker {
            if let Some(wk) = self.px.workers.get_mut(w).and_then(Option::as_mut) {
                wk.add_db_ns(d.done_at - d.requested_at);
            }
            self.px_worker_cpu_done(w);
        }
    }

    // ----- hosting slaves -----------------------------------------------------------------

    pub(super) fn px_host_start(
        &mut self,
        exec: ExecId,
        qc_sid: u32,
        qref: QueryRef,
        requested: u32,
        dop: u32,
        placement: Vec<InstId>,
    ) {
        let Some(query) = self.px_query(qref) else {
            self.error(format!(
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
            self.error(format!(
                "bad start of {exec:?} (dop {dop}, {} slaves placed)",
                placement.len()
            ));
            return;
        }
        // Checked above: 0 < dop <= DOP_MAX and k < sets * dop with sets <= 2.
        let mine: Vec<SlaveId> = placement
            .iter()
            .enumerate()
            .filter(|(_, i)| **i == self.id)
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
            self.error(format!(
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
        for me in mine {
            let (server, start) = self.px_take_server();
            let role = if query.plan.sets() == 2 && me.set == 0 {
                Role::Producer
            } else if query.plan.sets() == 2 {
                Role::Consumer
            } else {
                Role::Producer
            };
            let proc = self.px.servers[server].proc;
            let w = self.px_add_worker(Worker::new(
                exec,
                me,
                Host::Server(server),
                proc,
                role,
                &query,
                dop,
            ));
            self.px.servers[server].worker = Some(w);
            if start {
                self.px.servers[server].starting = Some(exec);
                starting += 1;
                let cost = self.k.costs().px_server_start;
                self.cpu(proc, cost);
            }
            self.px_worker_begin_wait(w, Wait::PxDeqExecutionMsg);
            workers.push(w);
        }
        if let Some(h) = self.px.hosted.get_mut(&exec) {
            h.workers = workers;
            h.starting = starting;
        }
        if starting == 0 {
            self.px_host_joined(exec);
        }
    }

    pub(super) fn px_host_joined(&mut self, exec: ExecId) {
        if exec.qc == self.id {
            self.px_qc_joined(exec);
        } else {
            self.px_send(exec.qc, PxMsg::Joined { exec });
        }
    }

    pub(super) fn px_host_execute(&mut self, exec: ExecId) {
        let Some(h) = self.px.hosted.get(&exec) else {
            self.error(format!("execute of unknown {exec:?}"));
            return;
        };
        for w in h.workers.clone() {
            self.px_worker_start(w);
        }
    }

    /// The statement is over: record each slave's row and free its server.
    pub(super) fn px_host_release(&mut self, exec: ExecId) {
        let Some(h) = self.px.hosted.remove(&exec) else {
            return;
        };
        let me = self.id.number();
        let qc_inst = exec.qc.number();
        for w in h.workers {
            let Some(wk) = self.px.workers.get_mut(w).and_then(Option::take) else {
                continue;
            };
            self.px.free_slots.push(w);
            self.px.by_slave.remove(&wk.key());
            if let Some((ev, since)) = wk.wait() {
                self.wait_event(ev, self.k.now() - since, true);
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
                s.worker = None;
            }
            self.px.busy = self.px.busy.saturating_sub(1);
        }
        self.px_servers_freed();
    }

    /// Tell whoever probed here that servers are free, and wake a local queued statement.
    pub(super) fn px_servers_freed(&mut self) {
        for i in std::mem::take(&mut self.px.watchers) {
            if i != self.id {
                self.px_send(i, PxMsg::Freed);
            }
        }
        self.px_wake_queue();
    }
}

/// `P000`, `P001`, ... (v$px_session prints them lowercase).
fn server_name(idx: usize) -> String {
    format!("P{idx:03}")
}
