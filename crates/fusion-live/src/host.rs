//! The instance host: the task that owns the core state machine and drives
//! it in real time — the live counterpart of the simulator's event loop, and
//! the only place the live runtime calls into the protocol.
//!
//! It runs on the instance process's one tokio thread, beside the HTTP/2
//! tasks of the interconnect and the admin service: a message that arrives
//! wakes that thread once (as a raw socket would) and reaches the instance
//! without waking another thread; a message the instance sends goes onto
//! its stream on the same thread. Modeled CPU steps and timers are tens of
//! microseconds, finer than tokio's 1 ms timer wheel, so the host waits for
//! its next deadline on a timerfd ([`DeadlineTimer`]).

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use fusion_core::block::Block;
use fusion_core::config::Nanos;
use fusion_core::instance::{BufState, Command, Delivery, Horizon, Instance, Observation};
use fusion_core::msg::{Envelope, Io, IoResult, Msg};
use fusion_core::stats::{Stats, Wait};
use fusion_core::types::InstId;
use fusion_driver::Interconnect;
use fusion_scenario::Fault;

use crate::clock::Clock;
use crate::deadline::{DeadlineTimer, absolute};
use crate::journal::Journal;
use crate::pace::{Behind, CpuClock, Pace};

/// What reaches the instance from outside.
pub enum Input {
    /// A message from a peer (already decoded and checked), when its last
    /// bytes reached this host's socket (the kernel's receive timestamp),
    /// and when this process read them.
    Envelope(Envelope, Nanos, Nanos),
    /// A store request finished (or failed: the message says how).
    IoDone {
        id: u64,
        result: Result<IoResult, String>,
    },
    /// The link to this peer lost its connection and has a new one: what
    /// the instance did not see acknowledged goes again.
    Reconnected(InstId),
    /// Something went wrong outside the state machine (a lost peer, a bad
    /// frame): kept for `status` and the runner.
    Problem(String),
    Query(Query),
    Stop,
}

/// Questions and orders from the admin service, answered on the host thread.
pub enum Query {
    /// Start a phase: its interconnect faults (replacing the last phase's)
    /// and this instance's commands.
    BeginPhase {
        faults: Vec<Fault>,
        commands: Vec<Command>,
        /// The phase's span: the host's log lines go under it.
        span: tracing::Span,
        reply: tokio::sync::oneshot::Sender<()>,
    },
    Stats(tokio::sync::oneshot::Sender<(Stats, Nanos)>),
    Status(tokio::sync::oneshot::Sender<HostStatus>),
    /// The oldest observations not yet taken, at most this many, and the
    /// instance's horizon when that emptied its log.
    History(
        usize,
        tokio::sync::oneshot::Sender<(Vec<Observation>, Option<Horizon>)>,
    ),
    /// Transfer round trips (cr, current), optionally reset after reading.
    Transfers(bool, tokio::sync::oneshot::Sender<[TransferStats; 2]>),
    Images(tokio::sync::oneshot::Sender<Vec<Block>>),
    /// The sequence values handed out since the last time (taken).
    Nextvals(tokio::sync::oneshot::Sender<NextvalBatch>),
    /// Crash now, as the simulator's `kill` does (the runner then kills
    /// the process): nothing more runs, is sent or is written.
    Crash(tokio::sync::oneshot::Sender<()>),
    /// The alert log lines and recoveries since the last time (taken).
    Events(tokio::sync::oneshot::Sender<HostEvents>),
    /// Stop running the instance (the runner freezes the process next):
    /// nothing runs, messages and I/O completions wait, questions are
    /// still answered, so what it recorded up to here can be taken.
    Hold(tokio::sync::oneshot::Sender<()>),
    /// Go on after a [`Query::Hold`]: what fell due meanwhile runs now.
    Release(tokio::sync::oneshot::Sender<()>),
}

/// What an instance wrote to its alert log and the recoveries it
/// performed, since the runner last took them.
#[derive(Clone, Debug, Default)]
pub struct HostEvents {
    pub alerts: Vec<fusion_core::instance::AlertLine>,
    pub recoveries: Vec<fusion_core::recovery::RecoveryReport>,
}

/// Sequence values the instance handed out, for the runner's cluster-wide
/// count of values out of order and duplicated
/// ([`fusion_driver::SeqOrder`]). Each is stamped with the cluster clock
/// when the host took it from the state machine: after the step that handed
/// it out and before anything that step sent left, so a value handed out
/// after another instance's (an enqueue or a block passed on in between)
/// has a later stamp.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NextvalBatch {
    /// Number of the first value (counted from 0 since the instance was
    /// created, as `fusionlab sequence values handed out` counts them).
    pub first: u64,
    /// (taken at, sequence, value), in the order handed out.
    pub values: Vec<(Nanos, u32, i64)>,
}

/// Sequence values a host keeps for the runner at most (it takes them four
/// times a second while a phase runs): past it the host reports that
/// nobody takes them and logs no more, and the run stops.
pub const NEXTVALS_HELD_MAX: usize = 1 << 20;

/// A summary of the instance for `fusionlab status`.
#[derive(Clone, Debug, Default)]
pub struct HostStatus {
    pub buffers_used: usize,
    pub buffers: usize,
    pub lms: usize,
    pub active_sessions: usize,
    pub at_rest: bool,
    pub waits: Vec<(Wait, u32)>,
    pub errors: Vec<String>,
    pub io_in_flight: usize,
    /// Messages the scenario's network still holds back.
    pub messages_held: usize,
    pub progress: u64,
    /// Why the instance stopped (the cluster evicted it), if it did.
    pub halted: Option<String>,
    /// The cluster incarnation and its members as the instance sees them.
    pub incarnation: u32,
    pub members: u64,
    /// Dead instances whose redo threads no recovery has finished yet.
    pub unrecovered: u64,
    pub user_commits: u64,
    /// The instance's clock when the status was taken.
    pub now: Nanos,
    /// Processes waiting for a CPU.
    pub run_queue: usize,
    /// LMS jobs queued, running or set aside.
    pub lms_backlog: usize,
}

/// Percentiles of one kind of transfer round trip, in microseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct TransferStats {
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
}

/// Round trips of this instance's block requests, timed at the process
/// boundary (request handed to the interconnect, block back from it). The
/// model times the same requests inside (`gc cr block receive time`); this
/// is what the live runtime's own plumbing adds, for `bench --live`.
struct TransferClock {
    /// Request id -> (sent at, current?); at most [`PENDING_TRANSFERS_MAX`].
    pending: std::collections::HashMap<u64, (Nanos, bool)>,
    hist: [hdrhistogram::Histogram<u64>; 2],
}

impl TransferClock {
    fn new() -> TransferClock {
        let h = || {
            // 1 us .. 60 s, 3 significant digits.
            hdrhistogram::Histogram::new_with_bounds(1, 60_000_000, 3)
                .expect("constant histogram bounds are valid")
        };
        TransferClock {
            pending: std::collections::HashMap::new(),
            hist: [h(), h()],
        }
    }

    fn sent(&mut self, me: InstId, env: &Envelope, now: Nanos) {
        use fusion_core::msg::ReqKind;
        let req = match &env.msg {
            Msg::Request(r) => r,
            Msg::Forward { req, .. } => req,
            _ => return,
        };
        // A request that ends neither in a block nor a grant stays pending:
        // past the limit new ones go untimed rather than growing the map.
        if req.requester == me && self.pending.len() < PENDING_TRANSFERS_MAX {
            let current = matches!(req.kind, ReqKind::Current { .. });
            self.pending.entry(req.id).or_insert((now, current));
        }
    }

    fn arrived(&mut self, me: InstId, env: &Envelope, at: Nanos) {
        let (req, shipped) = match &env.msg {
            Msg::Ship(s) => (&s.req, true),
            // A grant ends the request without a block: not a transfer.
            Msg::Grant { req, .. } => (req, false),
            _ => return,
        };
        if req.requester != me {
            return;
        }
        if let Some((sent, current)) = self.pending.remove(&req.id)
            && shipped
        {
            let us = (at.saturating_sub(sent) / 1_000).max(1);
            let _ = self.hist[usize::from(current)].record(us);
        }
    }

    fn read(&mut self, reset: bool) -> [TransferStats; 2] {
        let out = [0, 1].map(|k| {
            let h = &self.hist[k];
            TransferStats {
                count: h.len(),
                p50_us: h.value_at_quantile(0.50),
                p90_us: h.value_at_quantile(0.90),
                p99_us: h.value_at_quantile(0.99),
                max_us: h.max(),
                mean_us: h.mean(),
            }
        });
        if reset {
            for h in &mut self.hist {
                h.reset();
            }
        }
        out
    }
}

/// Where the host sends what the instance asks for.
pub trait Outputs: Send + 'static {
    /// Send a message to a peer (it may wait in a buffer until [`flush`](Self::flush)).
    fn send(&mut self, env: Envelope);
    /// Put what was sent on the wire: called before the host waits.
    fn flush(&mut self);
    /// Start a store request; its completion comes back as [`Input::IoDone`].
    fn io(&mut self, id: u64, io: Io);
}

/// Problems kept for `status` (the first ones; later ones are counted).
const PROBLEMS_MAX: usize = 50;
/// Block requests the transfer clock times at once (a few per session).
const PENDING_TRANSFERS_MAX: usize = 1 << 16;
/// Messages the scenario's network holds back at most. A link slower than
/// the traffic on it (a low `bandwidth` fault) makes them pile up; past
/// this the instance reports it, and the run stops, instead of taking the
/// process's memory (about 200 MB in).
pub const HELD_MESSAGES_MAX: usize = 1 << 20;
/// Inputs waiting for the host at most before it says it cannot keep up
/// (messages from peers, I/O completions, admin calls). The queue itself
/// is not cut, so nothing is lost; the run stops on the report.
pub const WAITING_INPUTS_MAX: usize = 1 << 20;

struct Host<O: Outputs> {
    inst: Instance,
    clock: Clock,
    out: O,
    problems: Vec<String>,
    dropped_problems: usize,
    io_in_flight: usize,
    transfers: TransferClock,
    lag_reported: bool,
    /// The current stretch behind real time, and since when (the clock) it
    /// was found starved of CPU from outside, while it lasts.
    pace: Pace,
    cpu_clock: CpuClock,
    starved_since: Option<Nanos>,
    /// When the oldest message not yet written was sent.
    unflushed_since: Option<Nanos>,
    /// The scenario's interconnect (`[network]` and the phase's link
    /// faults), the simulator's own model, on top of the real one, as the
    /// store adds the scenario's disk latencies to its real I/O: a message
    /// from a peer is delivered no earlier than the model's arrival for its
    /// send time (latency, jitter, serialization at the modeled rate, in the
    /// link's order).
    net: Interconnect,
    /// Messages that arrived before the scenario's network would have
    /// delivered them, by (delivery time, arrival order); at most
    /// [`HELD_MESSAGES_MAX`].
    held: std::collections::BTreeMap<(Nanos, u64), Envelope>,
    held_seq: u64,
    held_full_reported: bool,
    inputs_full_reported: bool,
    /// Sequence values not yet taken, at most [`NEXTVALS_HELD_MAX`].
    nextvals: NextvalBatch,
    nextvals_full: bool,
    /// When the host last went round its loop (the clock), and when it
    /// found that it had been frozen (SIGSTOP): what fell due meanwhile
    /// runs at that moment, as on the simulator, not at its old times.
    last_round: Nanos,
    thawed_at: Nanos,
    /// Held by the runner: inputs that would run the instance wait here.
    holding: Option<Vec<Input>>,
    /// With the checks on and a journal directory: the history, written
    /// through to a file before a step's actions leave (journal.rs).
    journal: Option<Journal>,
    /// The log: the span of the phase under way, and of a reconfiguration
    /// while one holds the directory frozen; how many of the alert log
    /// lines not yet taken by the runner were logged.
    phase_span: tracing::Span,
    reconfiguration: Option<tracing::Span>,
    alerts_logged: usize,
}

/// A host that did not go round its loop for this long while work was due
/// was frozen (SIGSTOP, or the machine stopped it): not behind.
const FROZEN_GAP_NS: Nanos = 500_000_000;

/// Inputs handled in a row before the host lets the network tasks run.
const INPUT_BATCH: usize = 64;
/// Real time the host spends on due steps before it lets the network run.
const TURN_NS: Nanos = 200_000;
/// The longest a sent message waits in its link's buffer for more to join
/// it in one write, while the host runs a long turn.
const FLUSH_WITHIN_NS: Nanos = 30_000;
/// How far behind real time a host may fall before it says so.
const LAG_NS_MAX: Nanos = 2_000_000_000;
/// A deadline this close is waited for by yielding to the network tasks
/// (spinning) instead of sleeping on the timer: arming a timer, blocking in
/// `epoll_wait` and being woken costs more than this, and most modeled CPU
/// steps are a microsecond or two. The step still runs no earlier than due.
const SPIN_NS: Nanos = 20_000;

/// Debug builds only: the host panics this many milliseconds after it
/// starts (the test that a process's last words reach its log). A release
/// build never reads it.
#[cfg(debug_assertions)]
pub const TEST_PANIC_ENV: &str = "FUSIONLAB_TEST_PANIC_AFTER_MS";

#[cfg(debug_assertions)]
fn with_test_panic(run: impl Future<Output = ()>) -> impl Future<Output = ()> {
    let after = std::env::var(TEST_PANIC_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    async move {
        match after {
            None => run.await,
            Some(ms) => tokio::select! {
                () = run => {}
                () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {
                    panic!("{TEST_PANIC_ENV}={ms}: the instance host panics, as a test asked")
                }
            },
        }
    }
}

/// Start the host task for `inst` on the current tokio runtime (which must
/// have I/O enabled), its log lines under `span` (the run's).
pub fn spawn<O: Outputs>(
    mut inst: Instance,
    clock: Clock,
    out: O,
    rx: UnboundedReceiver<Input>,
    net: Interconnect,
    journal: Option<Journal>,
    span: tracing::Span,
) -> std::io::Result<JoinHandle<()>> {
    use tracing::Instrument;
    let timer = DeadlineTimer::new()?;
    // Nothing runs before the runner starts the first phase (the peers may
    // not even be loaded yet). At the instance's own time 0: applied at the
    // clock's time, the sessions' first wake-ups (due just after 0) would run
    // before the command, with every workload still enabled.
    inst.apply(0, Command::EnableWorkloads(Some(Vec::new())));
    let mut host = Host {
        inst,
        clock,
        out,
        problems: Vec::new(),
        dropped_problems: 0,
        io_in_flight: 0,
        transfers: TransferClock::new(),
        lag_reported: false,
        pace: Pace::default(),
        cpu_clock: CpuClock::for_current_runtime(),
        starved_since: None,
        unflushed_since: None,
        net,
        held: std::collections::BTreeMap::new(),
        held_seq: 0,
        held_full_reported: false,
        inputs_full_reported: false,
        nextvals: NextvalBatch::default(),
        nextvals_full: false,
        last_round: 0,
        thawed_at: 0,
        holding: None,
        journal,
        phase_span: tracing::Span::none(),
        reconfiguration: None,
        alerts_logged: 0,
    };
    host.drain();
    let run = async move {
        host.run(rx, timer).await;
        tracing::info!("instance host stopped");
    };
    #[cfg(debug_assertions)]
    let run = with_test_panic(run);
    Ok(tokio::spawn(run.instrument(span)))
}

impl<O: Outputs> Host<O> {
    async fn run(&mut self, mut rx: UnboundedReceiver<Input>, mut timer: DeadlineTimer) {
        loop {
            self.note_thaw();
            // Everything that has arrived, up to a batch.
            for _ in 0..INPUT_BATCH {
                match rx.try_recv() {
                    Ok(input) => {
                        if !self.input(input) {
                            return;
                        }
                    }
                    Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
                    Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return,
                }
            }
            if rx.len() > WAITING_INPUTS_MAX && !self.inputs_full_reported {
                self.inputs_full_reported = true;
                self.problem(format!(
                    "{}: {} inputs wait for the instance host (at most {WAITING_INPUTS_MAX}): \
                     it cannot keep up with its peers",
                    self.inst.id,
                    rx.len()
                ));
            }
            self.catch_up();
            // One write per link for everything this turn sent.
            self.flush();
            match self.next_due() {
                // More is due already (the host is behind, or more input
                // waits) or due in a moment: let the network tasks run
                // first, then go on.
                Some(at) if at <= self.clock.now() + SPIN_NS => tokio::task::yield_now().await,
                _ if !rx.is_empty() => tokio::task::yield_now().await,
                Some(at) => {
                    if let Err(e) = timer.arm(absolute(self.clock.epoch(), at)) {
                        self.problem(format!("{}: cannot arm the host timer: {e}", self.inst.id));
                        tokio::task::yield_now().await;
                        continue;
                    }
                    tokio::select! {
                        input = rx.recv() => match input {
                            Some(input) => {
                                if !self.input(input) {
                                    return;
                                }
                            }
                            None => return,
                        },
                        r = timer.expired() => {
                            if let Err(e) = r {
                                self.problem(format!("{}: host timer failed: {e}", self.inst.id));
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                }
                None => match rx.recv().await {
                    Some(input) => {
                        if !self.input(input) {
                            return;
                        }
                    }
                    None => return,
                },
            }
        }
    }

    /// A round of the loop long after the last one, with work overdue: the
    /// process was frozen. The instance's time does not go back; what fell
    /// due while it was frozen runs now (`catch_up`), as a frozen instance
    /// of the simulator goes on where it was.
    fn note_thaw(&mut self) {
        let now = self.clock.now();
        let gap = now.saturating_sub(self.last_round);
        if self.last_round > 0
            && gap > FROZEN_GAP_NS
            && self
                .next_due()
                .is_some_and(|at| now.saturating_sub(at) > FROZEN_GAP_NS)
        {
            self.thawed_at = now;
        }
        self.last_round = now;
    }

    /// Run the instance's due steps and timers in time order, for at most
    /// [`TURN_NS`] of real time, so the network and the admin service get the
    /// thread back even when the model asks for more than this process can
    /// run in real time. Such a host falls behind: its model time lags the
    /// clock. Past [`LAG_NS_MAX`] it says why (`pace.rs`): a model a whole
    /// CPU cannot carry stops the run (instead of hanging or reporting
    /// time-dilated figures); a process starved of CPU from outside goes on
    /// late, as a real one does, and catches up when the CPU comes back.
    fn catch_up(&mut self) {
        if self.holding.is_some() {
            return;
        }
        let start = self.clock.now();
        let mut now = start;
        let cpu_began_ns = if self.pace.measures_next_turn() && !self.lag_reported {
            self.cpu_clock.now_ns()
        } else {
            None
        };
        // The first message of a turn leaves at once (a lone answer should
        // not wait for unrelated steps); later ones are written together,
        // but none waits longer than FLUSH_WITHIN_NS (that wait would count
        // as wire time in the latency decomposition).
        let mut first = self.unflushed_since.is_none();
        while let Some(due_at) = self.next_due() {
            if due_at > now {
                self.caught_up(now);
                return;
            }
            // Due while the process was frozen: it runs at the thaw.
            let at = due_at.max(self.thawed_at);
            match self.held.first_key_value() {
                Some((&(due, _), _)) if due == due_at => {
                    if let Some((_, env)) = self.held.pop_first() {
                        self.inst.handle_message(at, env);
                    }
                }
                _ => self.inst.handle_timeout(at),
            }
            self.drain();
            now = self.clock.now();
            if let Some(since) = self.unflushed_since
                && (first || now.saturating_sub(since) >= FLUSH_WITHIN_NS)
            {
                first = false;
                self.flush();
            }
            if now.saturating_sub(start) >= TURN_NS {
                self.behind(now, at, cpu_began_ns);
                return;
            }
        }
        self.caught_up(now);
    }

    /// A turn ended with work still due: the model's time `at` lags the
    /// clock's `now`.
    fn behind(&mut self, now: Nanos, at: Nanos, cpu_began_ns: Option<Nanos>) {
        if self.lag_reported {
            return;
        }
        let lag = now.saturating_sub(at);
        let Some(cpu_ns) = self.cpu_clock.now_ns() else {
            return self.overloaded(lag, None);
        };
        let judged = self.pace.turn_ended_behind(now, at, cpu_began_ns, cpu_ns);
        if lag <= LAG_NS_MAX {
            return;
        }
        match judged {
            Behind::Undecided => {}
            // A stretch that began starved is a backlog from outside: the
            // catch-up after it (the peers' retries, the requests queued
            // meanwhile) can cost more per model second than steady work
            // and is no sign of a model too big for the machine.
            Behind::Overloaded { .. } if self.starved_since.is_some() => {}
            Behind::Overloaded { model_ns_per_cpu_s } => {
                self.overloaded(lag, Some(model_ns_per_cpu_s));
            }
            Behind::Starved {
                cpu_permille,
                window_ns,
            } => {
                if self.starved_since.is_none() {
                    self.starved_since = Some(now);
                    let _in = self.phase_span.enter();
                    tracing::warn!(
                        "{}: the instance runs {} ms behind real time, starved of CPU: the \
                         process ran {}.{} % of a CPU over the last {} ms (a CPU quota, a \
                         throttled cgroup or a busy host); it goes on late and catches up \
                         when the CPU comes back",
                        self.inst.id,
                        lag / 1_000_000,
                        cpu_permille / 10,
                        cpu_permille % 10,
                        window_ns / 1_000_000
                    );
                }
            }
        }
    }

    fn overloaded(&mut self, lag: Nanos, model_ns_per_cpu_s: Option<Nanos>) {
        if lag <= LAG_NS_MAX || self.lag_reported {
            return;
        }
        self.lag_reported = true;
        let measured = model_ns_per_cpu_s.map_or(String::new(), |m| {
            format!(" (a CPU-second runs {} ms of its model)", m / 1_000_000)
        });
        self.problem(format!(
            "{}: the instance runs {} ms behind real time: its workload asks for \
             more modeled steps than this process can run{measured} (zero-cost loops, \
             too many sessions or CPUs for this machine)",
            self.inst.id,
            lag / 1_000_000
        ));
    }

    /// Nothing is due before the clock: a stretch behind is over.
    fn caught_up(&mut self, now: Nanos) {
        self.pace.caught_up();
        if let Some(since) = self.starved_since.take() {
            let _in = self.phase_span.enter();
            tracing::info!(
                "{}: caught up with real time {} ms after it was found starved of CPU",
                self.inst.id,
                now.saturating_sub(since) / 1_000_000
            );
        }
    }

    /// The instance's time for an input: the clock, or the next deadline
    /// when the host is behind (time never runs past work not yet done).
    fn model_now(&self) -> Nanos {
        let now = self.clock.now();
        self.next_due()
            .map_or(now, |at| at.min(now))
            .max(self.thawed_at.min(now))
    }

    /// The earliest of the instance's next deadline and the next held
    /// message's delivery.
    fn next_due(&self) -> Option<Nanos> {
        if self.holding.is_some() {
            return None;
        }
        let held = self.held.keys().next().map(|&(at, _)| at);
        match (self.inst.next_deadline(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handle one input; false when the host must stop.
    fn input(&mut self, input: Input) -> bool {
        let now = self.model_now();
        if let Some(parked) = self.holding.as_mut()
            && matches!(
                input,
                Input::Envelope(..) | Input::IoDone { .. } | Input::Reconnected(_)
            )
        {
            // Bounded by the inputs' own queue check: they would have
            // waited there as long.
            parked.push(input);
            return true;
        }
        match input {
            Input::Envelope(mut env, arrived, read) => {
                // The benchmark's round trips end when the process has the
                // block, as the raw ping-pong's do.
                self.transfers.arrived(self.inst.id, &env, read);
                // The wire is the network, up to this host's socket: the
                // time the message then waited for this process to wake,
                // read it and run this task is the receiving host's, not
                // the interconnect's. Shifting the send time by it keeps it
                // out of the wire share of the latency decomposition (it
                // stays in the receive time).
                env.sent_at = env
                    .sent_at
                    .saturating_add(now.saturating_sub(arrived))
                    .min(now);
                self.deliver(now, env);
            }
            Input::IoDone { id, result } => {
                self.io_in_flight = self.io_in_flight.saturating_sub(1);
                match result {
                    Ok(r) => self.inst.handle_io(now, id, r),
                    // The store failed or did not answer in time (a cut
                    // between them, the store gone): the instance
                    // terminates, as on an I/O error; the survivors evict
                    // and recover it, the runner may start it again. It is
                    // not a problem of the run unless nobody is left.
                    Err(e) => {
                        tracing::warn!(error = %e, "block store I/O failed: terminating the instance");
                        self.inst.terminate_on_io_error(now, &e);
                    }
                }
            }
            Input::Reconnected(peer) => self.inst.handle_reconnect(now, peer),
            Input::Problem(p) => self.problem(p),
            Input::Query(q) => self.answer(now, q),
            Input::Stop => return false,
        }
        self.drain();
        true
    }

    /// Hand a message to the instance when the scenario's network delivers
    /// it: now if that time has come and nothing is held (which it could
    /// overtake), else kept until then. Never earlier than `now`: the
    /// instance's time does not go back.
    fn deliver(&mut self, now: Nanos, env: Envelope) {
        if matches!(env.msg, Msg::LinkAck { .. }) && self.inst.delivery() == Delivery::Transport {
            // The transport's own acknowledgement (as TCP's are), not a
            // database message: the scenario's network neither delays nor
            // counts it, so it moves no figure. It overtakes nothing that
            // matters: `now` is no later than any held message's time.
            self.inst.handle_message(now, env);
            return;
        }
        let bytes = env
            .msg
            .wire_bytes(self.inst.params().db_block_size, self.net.message_bytes());
        let css = env.msg.is_css();
        let Some(release) =
            self.net
                .deliver(env.sent_at, env.from.idx(), self.inst.id.idx(), bytes, css)
        else {
            // A `partition` cut the link or a `loss` fault dropped it, as on
            // the simulator: the instances send it again (fusion-core's link.rs).
            return;
        };
        let release = release.max(now);
        if release == now && self.held.is_empty() {
            self.inst.handle_message(now, env);
            return;
        }
        if self.held.len() >= HELD_MESSAGES_MAX {
            if !self.held_full_reported {
                self.held_full_reported = true;
                self.problem(format!(
                    "{}: {HELD_MESSAGES_MAX} messages are held back by the scenario's network \
                     (a link slower than its traffic): a message from {} was dropped",
                    self.inst.id, env.from
                ));
            }
            return;
        }
        self.held_seq += 1;
        self.held.insert((release, self.held_seq), env);
    }

    fn problem(&mut self, p: String) {
        if self.problems.len() < PROBLEMS_MAX {
            let _in = self.phase_span.enter();
            tracing::warn!("{p}");
            self.problems.push(p);
        } else {
            if self.dropped_problems == 0 {
                let _in = self.phase_span.enter();
                tracing::warn!("more problems than the {PROBLEMS_MAX} kept: counted, not logged");
            }
            self.dropped_problems += 1;
        }
    }

    /// Log the alert log lines written since the last look, under the
    /// phase's span, and a reconfiguration's under its own (opened when the
    /// directory freezes, closed after the lines of its completion).
    fn log_alerts(&mut self) {
        let reconfiguring = self.inst.reconfiguring();
        if reconfiguring && self.reconfiguration.is_none() {
            let _in = self.phase_span.enter();
            let incarnation = self.inst.membership().0;
            self.reconfiguration = Some(tracing::info_span!("reconfiguration", incarnation));
        }
        let lines = self.inst.alert_log();
        if lines.len() > self.alerts_logged {
            let _in = self.phase_span.enter();
            let _in_reconfiguration = self.reconfiguration.as_ref().map(tracing::Span::enter);
            for l in &lines[self.alerts_logged..] {
                log_alert(l);
            }
            self.alerts_logged = lines.len();
        }
        if !reconfiguring {
            self.reconfiguration = None;
        }
    }

    fn answer(&mut self, now: Nanos, q: Query) {
        // A reply nobody waits for any more (the caller timed out) is dropped.
        match q {
            Query::BeginPhase {
                faults,
                commands,
                span,
                reply,
            } => {
                self.phase_span = span;
                self.net.set_faults(&faults);
                for c in commands {
                    self.inst.apply(now, c);
                }
                let _ = reply.send(());
            }
            Query::Stats(reply) => {
                let _ = reply.send((self.inst.stats(), now));
            }
            Query::Status(reply) => {
                let (used, cap) = self.inst.cache_usage();
                let mut errors: Vec<String> = self.inst.errors().to_vec();
                errors.extend(self.problems.iter().cloned());
                if self.dropped_problems > 0 {
                    errors.push(format!("... and {} more", self.dropped_problems));
                }
                let _ = reply.send(HostStatus {
                    buffers_used: used,
                    buffers: cap,
                    lms: self.inst.lms_count(),
                    active_sessions: self.inst.active_sessions(),
                    at_rest: self.inst.sessions_at_rest(),
                    waits: self.inst.current_waits(),
                    errors,
                    io_in_flight: self.io_in_flight,
                    messages_held: self.held.len(),
                    progress: self.progress(),
                    halted: self.inst.halted().map(str::to_string),
                    incarnation: self.inst.membership().0,
                    members: self.inst.membership().1.0,
                    unrecovered: self.inst.unrecovered().0,
                    user_commits: self.inst.stats().get(fusion_core::stats::Stat::UserCommits),
                    now,
                    run_queue: self.inst.run_queue_len(),
                    lms_backlog: self.inst.lms_backlog(),
                });
            }
            Query::History(max, reply) => {
                let (taken, failed) = match self.journal.as_mut() {
                    Some(j) => j.take(&mut self.inst, max),
                    None => {
                        let mut chunk = Vec::new();
                        let horizon = self.inst.drain_history(&mut chunk, max);
                        ((chunk, horizon), None)
                    }
                };
                if let Some(e) = failed {
                    let who = self.inst.id;
                    self.problem(format!("{who}: {e}"));
                }
                let _ = reply.send(taken);
            }
            Query::Transfers(reset, reply) => {
                let _ = reply.send(self.transfers.read(reset));
            }
            Query::Nextvals(reply) => {
                let first = self.nextvals.first + self.nextvals.values.len() as u64;
                let taken = std::mem::replace(
                    &mut self.nextvals,
                    NextvalBatch {
                        first,
                        values: Vec::new(),
                    },
                );
                let _ = reply.send(taken);
            }
            Query::Crash(reply) => {
                self.inst.crash(now);
                // What the model had not yet delivered dies with it.
                self.held.clear();
                let _ = reply.send(());
            }
            Query::Events(reply) => {
                let alerts = self.inst.take_alert_log();
                // What was not logged yet: the line counting those dropped.
                for l in alerts.iter().skip(self.alerts_logged) {
                    let _in = self.phase_span.enter();
                    log_alert(l);
                }
                self.alerts_logged = 0;
                let _ = reply.send(HostEvents {
                    alerts,
                    recoveries: self.inst.take_recoveries(),
                });
            }
            Query::Hold(reply) => {
                self.holding.get_or_insert_with(Vec::new);
                let _ = reply.send(());
            }
            Query::Release(reply) => {
                if let Some(parked) = self.holding.take() {
                    self.thawed_at = self.clock.now();
                    for input in parked {
                        self.input(input);
                    }
                }
                let _ = reply.send(());
            }
            Query::Images(reply) => {
                let images = self
                    .inst
                    .buffers()
                    .filter(|b| matches!(b.state(), BufState::Xcur | BufState::Scur))
                    .map(|b| b.image.clone())
                    .collect();
                let _ = reply.send(images);
            }
        }
    }

    /// A counter that moves whenever the instance does anything useful.
    fn progress(&self) -> u64 {
        use fusion_core::stats::Stat;
        let s = self.inst.stats();
        s.get(Stat::SessionLogicalReads) + s.get(Stat::UserCommits) + s.get(Stat::GcsMsgsReceived)
    }

    /// Put what was sent on the wire.
    fn flush(&mut self) {
        if self.unflushed_since.take().is_some() {
            self.out.flush();
        }
    }

    /// Keep the sequence values the last step handed out, stamped now:
    /// before anything the step sent leaves ([`Host::drain`]).
    fn log_nextvals(&mut self) {
        let values = self.inst.take_nextvals();
        if values.is_empty() || self.nextvals_full {
            return;
        }
        let at = self.clock.now();
        for (seq, v) in values {
            if self.nextvals.values.len() >= NEXTVALS_HELD_MAX {
                self.nextvals_full = true;
                self.problem(format!(
                    "{}: {NEXTVALS_HELD_MAX} sequence values wait for the runner to take them: \
                     nobody counts their order, and the instance logs no more",
                    self.inst.id
                ));
                return;
            }
            self.nextvals.values.push((at, seq, v));
        }
    }

    /// Perform everything the instance asked for.
    fn drain(&mut self) {
        // The history first: whatever this step sends or writes may show
        // its effects elsewhere, so its observations are on file before.
        if let Some(j) = self.journal.as_mut()
            && let Err(e) = j.pull(&mut self.inst)
        {
            let who = self.inst.id;
            self.problem(format!("{who}: {e}"));
        }
        self.log_nextvals();
        self.log_alerts();
        while let Some(a) = self.inst.poll_action() {
            match a {
                fusion_core::msg::Action::Send(mut env) => {
                    let now = self.clock.now();
                    // The model stamps a message with the step's due time;
                    // this host ran the step when it could (a timer wakes
                    // late, a busy turn delays it). That delay is this
                    // process's, not the network's: the message leaves now,
                    // and the latency decomposition keeps the delay out of
                    // its wire share (as the receiving side does with its own).
                    env.sent_at = env.sent_at.max(now);
                    self.transfers.sent(self.inst.id, &env, now);
                    if self.unflushed_since.is_none() {
                        self.unflushed_since = Some(now);
                    }
                    self.out.send(env)
                }
                fusion_core::msg::Action::Io { id, io } => {
                    self.io_in_flight += 1;
                    self.out.io(id, io);
                }
            }
        }
    }
}

/// One alert log line as a log event (target `alert`), at the instance's
/// time in seconds since the run began.
fn log_alert(l: &fusion_core::instance::AlertLine) {
    let at_s = l.at as f64 / 1e9;
    tracing::info!(target: "alert", at_s, "{}", l.line);
}

/// The sending half the rest of the process uses to reach the host.
pub type HostSender = UnboundedSender<Input>;

/// Instance id of a 0-based index, for messages.
pub fn inst_name(i: usize) -> String {
    InstId(i as u8).to_string()
}

#[cfg(test)]
mod tests;
