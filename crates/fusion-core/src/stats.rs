//! Statistics and wait events under the names a DBA reads in `v$sysstat`,
//! `v$system_event` and `v$event_histogram`, and per statement the figures
//! tkprof prints (`StmtStat`).
//!
//! Everything is a plain counter in an array indexed by an enum, so recording
//! on the hot path is one add. Times are kept in nanoseconds; reports convert
//! them the way AWR does (centiseconds in the views, milliseconds on the page).

macro_rules! name_enum {
    ($(#[$m:meta])* $vis:vis enum $ty:ident { $($var:ident => $name:literal $(: $unit:ident)?),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u16)]
        $vis enum $ty { $($var),* }
        impl $ty {
            /// Every variant, in declaration order (the order reports use).
            pub const ALL: &'static [$ty] = &[$($ty::$var),*];
            pub const COUNT: usize = $ty::ALL.len();
            /// The name as Oracle spells it.
            pub fn name(self) -> &'static str {
                match self { $($ty::$var => $name),* }
            }
            /// Look a name up, ignoring ASCII case.
            pub fn from_name(name: &str) -> Option<$ty> {
                $ty::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(name.trim()))
            }
        }
    };
}

/// What a statistic counts; decides how reports and the JSON contract show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Count,
    /// Kept in nanoseconds; shown in microseconds in JSON and as AWR does in text.
    Time,
    Bytes,
}

name_enum! {
    /// `v$sysstat` statistics (plus a few `v$osstat` and `v$cr_block_server`
    /// columns, and the emulator's own latency decomposition, all named so
    /// they cannot be mistaken for an Oracle statistic).
    pub enum Stat {
        // Global cache: requester side.
        GcCrBlocksReceived => "gc cr blocks received",
        GcCrBlockReceiveTime => "gc cr block receive time",
        GcCurrentBlocksReceived => "gc current blocks received",
        GcCurrentBlockReceiveTime => "gc current block receive time",
        GcLocalGrants => "gc local grants",
        GcRemoteGrants => "gc remote grants",
        // Global cache: server (LMS) side.
        GcCrBlocksServed => "gc cr blocks served",
        GcCrBlocksBuilt => "gc cr blocks built",
        GcCrBlockBuildTime => "gc cr block build time",
        GcCrBlocksFlushed => "gc cr blocks flushed",
        GcCrBlockFlushTime => "gc cr block flush time",
        GcCrBlockSendTime => "gc cr block send time",
        GcCrLightWorks => "gc cr block light works",
        // `v$cr_block_server` FAIRNESS_DOWN_CONVERTS and FAIRNESS_CLEARS
        // (AWR's "Global CR Served Stats"), named like the light works.
        GcCrFairnessDownConverts => "gc cr block fairness down converts",
        GcCrFairnessClears => "gc cr block fairness clears",
        GcCurrentBlocksServed => "gc current blocks served",
        GcCurrentBlockPinTime => "gc current block pin time",
        GcCurrentBlocksFlushed => "gc current blocks flushed",
        GcCurrentBlockFlushTime => "gc current block flush time",
        GcCurrentBlockSendTime => "gc current block send time",
        GcsMessagesSent => "gcs messages sent",
        GcsMsgsReceived => "gcs msgs received",
        GcsMsgsProcessTime => "gcs msgs process time",
        GcBlocksLost => "gc blocks lost",
        DbwrFusionWrites => "DBWR fusion writes",
        GcsPastImagesDiscarded => "gc past images discarded",
        // Reconfiguration (the emulator's own counts).
        GcsMessagesDiscarded => "fusionlab messages of an old incarnation discarded",
        GcsRequestsResubmitted => "fusionlab gc requests resubmitted at reconfiguration",
        GcsPastImagesPromoted => "fusionlab gc past images promoted to current",
        RollbackUndoRecordsApplied => "rollback changes - undo records applied",
        // Buffer cache and SQL.
        SessionLogicalReads => "session logical reads",
        ConsistentGets => "consistent gets",
        ConsistentGetsFromCache => "consistent gets from cache",
        DbBlockGets => "db block gets",
        DbBlockGetsFromCache => "db block gets from cache",
        DbBlockChanges => "db block changes",
        ConsistentChanges => "consistent changes",
        CrBlocksCreated => "CR blocks created",
        UndoRecordsApplied => "data blocks consistent reads - undo records applied",
        PhysicalReads => "physical reads",
        PhysicalReadsCache => "physical reads cache",
        PhysicalWrites => "physical writes",
        DbwrCheckpointBuffersWritten => "DBWR checkpoint buffers written",
        FreeBufferRequested => "free buffer requested",
        FreeBufferInspected => "free buffer inspected",
        ExecuteCount => "execute count",
        UserCommits => "user commits",
        TableScanBlocksGotten => "table scan blocks gotten",
        TableScanRowsGotten => "table scan rows gotten",
        IndexFetchByKey => "index fetch by key",
        RowsUpdated => "rows updated",
        RowsInserted => "rows inserted",
        LeafNodeSplits => "leaf node splits",
        BranchNodeSplits => "branch node splits",
        SnapshotTooOld => "snapshot too old errors",
        SpaceErrors => "unable to extend errors",
        // Redo.
        RedoEntries => "redo entries",
        RedoSize => "redo size": Bytes,
        RedoWrites => "redo writes",
        RedoWriteTime => "redo write time",
        RedoBlocksWritten => "redo blocks written",
        RedoSynchWrites => "redo synch writes",
        RedoSynchTime => "redo synch time",
        // Time model and CPU.
        DbTime => "DB time",
        CpuUsedBySession => "CPU used by this session",
        BackgroundCpuTime => "background cpu time",
        OsBusyTime => "BUSY_TIME",
        OsCpuWaitTime => "OS_CPU_WAIT_TIME",
        // The emulator's latency decomposition of received blocks (sum over blocks).
        DecompCrRequestSend => "fusionlab gc cr receive: request send time",
        DecompCrLmsCpuWait => "fusionlab gc cr receive: lms cpu wait time",
        DecompCrLmsProcessing => "fusionlab gc cr receive: lms processing time",
        DecompCrLogFlush => "fusionlab gc cr receive: log flush time",
        DecompCrWire => "fusionlab gc cr receive: wire time",
        DecompCurrentRequestSend => "fusionlab gc current receive: request send time",
        DecompCurrentLmsCpuWait => "fusionlab gc current receive: lms cpu wait time",
        DecompCurrentLmsProcessing => "fusionlab gc current receive: lms processing time",
        DecompCurrentLogFlush => "fusionlab gc current receive: log flush time",
        DecompCurrentWire => "fusionlab gc current receive: wire time",
        LmsCpuWaitTime => "fusionlab lms cpu wait time",
        LgwrCpuWaitTime => "fusionlab lgwr cpu wait time",
        ForegroundCpuWaitTime => "fusionlab foreground cpu wait time",
        // Global enqueue service (GES).
        GlobalEnqueueGetsSync => "global enqueue gets sync",
        GlobalEnqueueGetsAsync => "global enqueue gets async",
        GlobalEnqueueGetTime => "global enqueue get time",
        GlobalEnqueueReleases => "global enqueue releases",
        GesMessagesSent => "ges messages sent",
        // Sequences (`v$rowcache` dc_sequences and the emulator's own counts).
        RowCacheGets => "fusionlab dc_sequences gets",
        RowCacheGetMisses => "fusionlab dc_sequences getmisses",
        SeqValuesHandedOut => "fusionlab sequence values handed out",
        SeqValuesAllocated => "fusionlab sequence values allocated",
        SeqValuesOutOfOrder => "fusionlab sequence values out of order",
        SeqValuesDuplicated => "fusionlab sequence values duplicated",
        BitmapPiecesChanged => "fusionlab bitmap pieces changed",
        // Parallel execution (v$sysstat, v$pq_sysstat) and the table-queue bytes
        // Oracle does not count per instance pair (the deck measured them with dtrace).
        QueriesParallelized => "queries parallelized",
        DfoTreesParallelized => "DFO trees parallelized",
        ParallelOpsNotDowngraded => "Parallel operations not downgraded",
        ParallelOpsDowngradedToSerial => "Parallel operations downgraded to serial",
        ParallelOpsDowngraded75To99 => "Parallel operations downgraded 75 to 99 pct",
        ParallelOpsDowngraded50To75 => "Parallel operations downgraded 50 to 75 pct",
        ParallelOpsDowngraded25To50 => "Parallel operations downgraded 25 to 50 pct",
        ParallelOpsDowngraded1To25 => "Parallel operations downgraded 1 to 25 pct",
        PxLocalMessagesSent => "PX local messages sent",
        PxLocalMessagesRecv => "PX local messages recv'd",
        PxRemoteMessagesSent => "PX remote messages sent",
        PxRemoteMessagesRecv => "PX remote messages recv'd",
        PhysicalReadsDirect => "physical reads direct",
        PhysicalReadIoRequests => "physical read IO requests",
        ConsistentGetsDirect => "consistent gets direct",
        PxRemoteBytesSent => "fusionlab PX remote bytes sent": Bytes,
        PxRemoteBytesReceived => "fusionlab PX remote bytes received": Bytes,
        PxLocalBytesSent => "fusionlab PX local bytes sent": Bytes,
        PxServersStarted => "fusionlab PX servers started",
        PxStatementsQueued => "fusionlab PX statements queued",
        PxStatementsCompleted => "fusionlab PX statements completed",
        PxStatementElapsedTime => "fusionlab PX statement elapsed time",
        // Inside one node (a `[server]` description): memory by locality group.
        NumaLocalAccesses => "fusionlab local memory accesses",
        NumaRemoteAccesses => "fusionlab remote memory accesses",
        NumaRemoteReads => "fusionlab reads into remote memory",
        NumaRemoteWrites => "fusionlab writes from remote memory",
        DbwrCheckpoints => "DBWR checkpoints",
        NumaStallTime => "fusionlab memory stall time",
        MemoryWriteOps => "fusionlab memory write ops",
        MemoryWriteOpTime => "fusionlab memory write op time",
        // RMAN (a phase's `backup`): instance/backup.rs.
        RmanBackupsCompleted => "fusionlab RMAN backups completed",
        RmanBackupElapsedTime => "fusionlab RMAN backup elapsed time",
        RmanBlocksBackedUp => "fusionlab RMAN blocks backed up",
        RmanReads => "fusionlab RMAN read IO requests",
        RmanWorkUnits => "fusionlab RMAN files and sections backed up",
        RmanChannelsUsed => "fusionlab RMAN channels used",
        RmanChannelBlocksMax => "fusionlab RMAN largest channel's blocks",
        // Dynamic remastering, per instance (AWR's "Dynamic Remastering
        // Stats", v$dynamic_remaster_stats): the DRMs it took part in, the
        // blocks it reported to a new master (sent) or was reported as one
        // (received), from the freeze to the end and to the transfer.
        RemasterOps => "remaster ops",
        RemasteredObjects => "remastered objects",
        ReplayedLocksSent => "replayed locks sent",
        ReplayedLocksReceived => "replayed locks received",
        RemasterTime => "remaster time": Time,
        QuiesceTime => "quiesce time": Time,
        // Deadlocks LMD broke (ORA-00060): the count Oracle keeps, and how
        // long each victim had waited when its statement was rolled back.
        EnqueueDeadlocks => "enqueue deadlocks",
        DeadlockDetectionTime => "fusionlab deadlock detection time": Time,
    }
}

impl Stat {
    /// The statistics only a server description (`[server]`), a phase's
    /// `checkpoint` or its `backup`, or a dynamic remastering moves: reports
    /// leave them out while they are 0, so a run without them prints what
    /// it always printed.
    pub fn inside_node(self) -> bool {
        use Stat::*;
        matches!(
            self,
            NumaLocalAccesses
                | NumaRemoteAccesses
                | NumaRemoteReads
                | NumaRemoteWrites
                | DbwrCheckpoints
                | NumaStallTime
                | MemoryWriteOps
                | MemoryWriteOpTime
                | RmanBackupsCompleted
                | RmanBackupElapsedTime
                | RmanBlocksBackedUp
                | RmanReads
                | RmanWorkUnits
                | RmanChannelsUsed
                | RmanChannelBlocksMax
                | RemasterOps
                | RemasteredObjects
                | ReplayedLocksSent
                | ReplayedLocksReceived
                | RemasterTime
                | QuiesceTime
                | EnqueueDeadlocks
                | DeadlockDetectionTime
        )
    }

    pub fn unit(self) -> Unit {
        use Stat::*;
        match self {
            RedoSize | PxRemoteBytesSent | PxRemoteBytesReceived | PxLocalBytesSent => Unit::Bytes,
            GcCrBlockReceiveTime
            | GcCurrentBlockReceiveTime
            | GcCrBlockBuildTime
            | GcCrBlockFlushTime
            | GcCrBlockSendTime
            | GcCurrentBlockPinTime
            | GcCurrentBlockFlushTime
            | GcCurrentBlockSendTime
            | GcsMsgsProcessTime
            | RedoWriteTime
            | RedoSynchTime
            | DbTime
            | CpuUsedBySession
            | BackgroundCpuTime
            | OsBusyTime
            | OsCpuWaitTime
            | DecompCrRequestSend
            | DecompCrLmsCpuWait
            | DecompCrLmsProcessing
            | DecompCrLogFlush
            | DecompCrWire
            | DecompCurrentRequestSend
            | DecompCurrentLmsCpuWait
            | DecompCurrentLmsProcessing
            | DecompCurrentLogFlush
            | DecompCurrentWire
            | LmsCpuWaitTime
            | LgwrCpuWaitTime
            | ForegroundCpuWaitTime
            | GlobalEnqueueGetTime
            | PxStatementElapsedTime
            | NumaStallTime
            | MemoryWriteOpTime
            | RmanBackupElapsedTime
            | RemasterTime
            | QuiesceTime
            | DeadlockDetectionTime => Unit::Time,
            _ => Unit::Count,
        }
    }
}

/// Oracle's wait classes, as `v$system_event.wait_class` shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WaitClass {
    Cluster,
    Commit,
    UserIo,
    SystemIo,
    Concurrency,
    Application,
    Configuration,
    Scheduler,
    Other,
    /// Waits for work to arrive (AWR leaves them out of the Top 5).
    Idle,
}

impl WaitClass {
    pub const ALL: &'static [WaitClass] = &[
        WaitClass::Cluster,
        WaitClass::Commit,
        WaitClass::UserIo,
        WaitClass::SystemIo,
        WaitClass::Concurrency,
        WaitClass::Application,
        WaitClass::Configuration,
        WaitClass::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WaitClass::Cluster => "Cluster",
            WaitClass::Commit => "Commit",
            WaitClass::UserIo => "User I/O",
            WaitClass::SystemIo => "System I/O",
            WaitClass::Concurrency => "Concurrency",
            WaitClass::Application => "Application",
            WaitClass::Configuration => "Configuration",
            WaitClass::Scheduler => "Scheduler",
            WaitClass::Other => "Other",
            WaitClass::Idle => "Idle",
        }
    }
}

name_enum! {
    /// Wait events under their 10g+ names (`v$system_event`).
    pub enum Wait {
        GcCrRequest => "gc cr request",
        GcCurrentRequest => "gc current request",
        GcCrBlock2Way => "gc cr block 2-way",
        GcCrBlock3Way => "gc cr block 3-way",
        GcCurrentBlock2Way => "gc current block 2-way",
        GcCurrentBlock3Way => "gc current block 3-way",
        GcCrGrant2Way => "gc cr grant 2-way",
        GcCurrentGrant2Way => "gc current grant 2-way",
        GcCrBlockBusy => "gc cr block busy",
        GcCurrentBlockBusy => "gc current block busy",
        GcCrBlockCongested => "gc cr block congested",
        GcCurrentBlockCongested => "gc current block congested",
        GcCrGrantBusy => "gc cr grant busy",
        GcCurrentGrantBusy => "gc current grant busy",
        GcCrGrantCongested => "gc cr grant congested",
        GcCurrentGrantCongested => "gc current grant congested",
        GcBufferBusyAcquire => "gc buffer busy acquire",
        GcBufferBusyRelease => "gc buffer busy release",
        GcsLogFlushSync => "gcs log flush sync",
        LogFileSync => "log file sync",
        LogFileParallelWrite => "log file parallel write",
        DbFileSequentialRead => "db file sequential read",
        DbFileScatteredRead => "db file scattered read",
        DbFileParallelWrite => "db file parallel write",
        BufferBusyWaits => "buffer busy waits",
        FreeBufferWaits => "free buffer waits",
        EnqTxRowLockContention => "enq: TX - row lock contention",
        RowCacheLock => "row cache lock",
        DfsLockHandle => "DFS lock handle",
        EnqSqContention => "enq: SQ - contention",
        DirectPathRead => "direct path read",
        EnqPsContention => "enq: PS - contention",
        PxDeqJoinAck => "PX Deq: Join ACK",
        PxDeqExecuteReply => "PX Deq: Execute Reply",
        PxDeqExecutionMsg => "PX Deq: Execution Msg",
        PxDeqTableQNormal => "PX Deq: Table Q Normal",
        PxDeqCreditSendBlkd => "PX Deq Credit: send blkd",
        ResmgrPqQueued => "resmgr:pq queued",
        WaitForScnAck => "wait for scn ack",
        EnqTxIndexContention => "enq: TX - index contention",
        GcCrBlockLost => "gc cr block lost",
        GcCurrentBlockLost => "gc current block lost",
        GcCrRequestRetry => "gc cr request retry",
        GcCurrentRetry => "gc current retry",
        GcRemaster => "gc remaster",
    }
}

impl Wait {
    pub fn class(self) -> WaitClass {
        use Wait::*;
        match self {
            LogFileSync => WaitClass::Commit,
            LogFileParallelWrite | DbFileParallelWrite => WaitClass::SystemIo,
            DbFileSequentialRead | DbFileScatteredRead | DirectPathRead => WaitClass::UserIo,
            PxDeqJoinAck | PxDeqExecuteReply | PxDeqExecutionMsg | PxDeqTableQNormal => {
                WaitClass::Idle
            }
            PxDeqCreditSendBlkd | EnqPsContention => WaitClass::Other,
            ResmgrPqQueued => WaitClass::Scheduler,
            BufferBusyWaits => WaitClass::Concurrency,
            FreeBufferWaits => WaitClass::Configuration,
            EnqTxRowLockContention => WaitClass::Application,
            RowCacheLock | EnqTxIndexContention => WaitClass::Concurrency,
            EnqSqContention => WaitClass::Configuration,
            GcsLogFlushSync | DfsLockHandle | WaitForScnAck => WaitClass::Other,
            _ => WaitClass::Cluster,
        }
    }

    /// The 9i name the RAC myths deck uses for this event, if it had one
    /// (mapping: rac-internals reference, section 2.2).
    pub fn name_9i(self) -> &'static str {
        use Wait::*;
        match self {
            GcCrRequest | GcCrBlock2Way | GcCrBlock3Way | GcCrGrant2Way | GcCrBlockBusy
            | GcCrBlockCongested | GcCrGrantBusy | GcCrGrantCongested => "global cache cr request",
            // 9i named a current request by the lock conversion it waited
            // for, whatever delayed the block on the way: a holder's log
            // flush before shipping (10g's `busy`) is inside `null to x`.
            GcCurrentRequest
            | GcCurrentBlock2Way
            | GcCurrentBlock3Way
            | GcCurrentBlockBusy
            | GcCurrentBlockCongested => "global cache null to x",
            // Nobody held it: the master grants the first open in X.
            GcCurrentGrant2Way | GcCurrentGrantCongested => "global cache open x",
            GcCurrentGrantBusy => "global cache busy",
            GcBufferBusyAcquire => "buffer busy global CR",
            GcBufferBusyRelease => "buffer busy global cache",
            // The 9i name of a retried CR request; 9i had no lost-block events.
            GcCrRequestRetry => "cr request retry",
            // 9i had one `enqueue` event for every enqueue type.
            EnqTxRowLockContention | EnqSqContention => "enqueue",
            other => other.name(),
        }
    }
}

/// One wait event inside a statement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StmtWait {
    pub waits: u64,
    pub time_ns: u64,
    pub max_ns: u64,
}

/// One statement's figures, as tkprof prints them for a traced session:
/// sessions charge their work to the statement they run (a recursive one,
/// such as `update seq$`, while it runs inside the user's). tkprof's Parse,
/// Execute and Fetch lines share cpu, elapsed and gets here: they are all
/// charged to Execute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StmtStat {
    pub sql: String,
    /// Run by Oracle on behalf of another statement (tkprof's recursive depth > 0).
    pub recursive: bool,
    pub parses: u64,
    pub executions: u64,
    pub fetches: u64,
    pub cpu_ns: u64,
    pub elapsed_ns: u64,
    /// Blocks read from disk.
    pub disk: u64,
    /// Consistent gets.
    pub query: u64,
    /// Current-mode gets.
    pub current: u64,
    pub rows: u64,
    /// Indexed by [`Wait`].
    pub waits: Vec<StmtWait>,
}

impl StmtStat {
    pub fn new(sql: String, recursive: bool) -> StmtStat {
        StmtStat {
            sql,
            recursive,
            parses: 0,
            executions: 0,
            fetches: 0,
            cpu_ns: 0,
            elapsed_ns: 0,
            disk: 0,
            query: 0,
            current: 0,
            rows: 0,
            waits: vec![StmtWait::default(); Wait::COUNT],
        }
    }

    pub fn wait(&mut self, event: Wait, ns: u64) {
        if let Some(w) = self.waits.get_mut(event as usize) {
            w.waits += 1;
            w.time_ns += ns;
            w.max_ns = w.max_ns.max(ns);
        }
        if matches!(
            event,
            Wait::DbFileSequentialRead | Wait::DbFileScatteredRead
        ) {
            self.disk += 1;
        }
    }

    /// Activity since `earlier` (the same statement); the maximum wait is the
    /// later one's (a maximum cannot be differenced: the drivers reset it
    /// when a phase starts, see [`Stats::reset_peaks`]). Saturating, as
    /// `Stats::since`.
    pub fn since(&self, earlier: &StmtStat) -> StmtStat {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        StmtStat {
            sql: self.sql.clone(),
            recursive: self.recursive,
            parses: d(self.parses, earlier.parses),
            executions: d(self.executions, earlier.executions),
            fetches: d(self.fetches, earlier.fetches),
            cpu_ns: d(self.cpu_ns, earlier.cpu_ns),
            elapsed_ns: d(self.elapsed_ns, earlier.elapsed_ns),
            disk: d(self.disk, earlier.disk),
            query: d(self.query, earlier.query),
            current: d(self.current, earlier.current),
            rows: d(self.rows, earlier.rows),
            waits: self
                .waits
                .iter()
                .zip(&earlier.waits)
                .map(|(a, b)| StmtWait {
                    waits: d(a.waits, b.waits),
                    time_ns: d(a.time_ns, b.time_ns),
                    max_ns: if a.waits > b.waits { a.max_ns } else { 0 },
                })
                .collect(),
        }
    }

    /// Add another instance's figures for the same statement.
    pub fn merge(&mut self, o: &StmtStat) {
        self.parses += o.parses;
        self.executions += o.executions;
        self.fetches += o.fetches;
        self.cpu_ns += o.cpu_ns;
        self.elapsed_ns += o.elapsed_ns;
        self.disk += o.disk;
        self.query += o.query;
        self.current += o.current;
        self.rows += o.rows;
        for (a, b) in self.waits.iter_mut().zip(&o.waits) {
            a.waits += b.waits;
            a.time_ns += b.time_ns;
            a.max_ns = a.max_ns.max(b.max_ns);
        }
    }

    /// Whether anything happened to this statement.
    pub fn is_empty(&self) -> bool {
        self.parses == 0 && self.executions == 0 && self.elapsed_ns == 0
    }
}

/// Number of power-of-two latency buckets: bucket `i` holds waits shorter than
/// `2^i` microseconds (bucket 0: under 1 us), the last one holds the rest.
pub const HISTOGRAM_BUCKETS: usize = 32;

/// One `v$system_event` row plus its `v$event_histogram_micro` buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventStat {
    pub waits: u64,
    pub time_ns: u64,
    pub waits_fg: u64,
    pub time_fg_ns: u64,
    pub max_ns: u64,
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

impl Default for EventStat {
    fn default() -> Self {
        EventStat {
            waits: 0,
            time_ns: 0,
            waits_fg: 0,
            time_fg_ns: 0,
            max_ns: 0,
            histogram: [0; HISTOGRAM_BUCKETS],
        }
    }
}

impl EventStat {
    pub fn bucket_of(ns: u64) -> usize {
        let us = ns / 1000;
        let b = (u64::BITS - us.leading_zeros()) as usize;
        b.min(HISTOGRAM_BUCKETS - 1)
    }

    fn record(&mut self, ns: u64, foreground: bool) {
        self.waits += 1;
        self.time_ns += ns;
        if foreground {
            self.waits_fg += 1;
            self.time_fg_ns += ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.histogram[Self::bucket_of(ns)] += 1;
    }

    /// Activity between two snapshots. `max_ns` is the later snapshot's maximum
    /// (a maximum cannot be differenced): the interval's own when the peaks
    /// were reset at its start ([`Stats::reset_peaks`]), as the drivers do
    /// at every phase start.
    pub fn since(&self, earlier: &EventStat) -> EventStat {
        let mut h = [0; HISTOGRAM_BUCKETS];
        for (i, v) in h.iter_mut().enumerate() {
            *v = self.histogram[i].saturating_sub(earlier.histogram[i]);
        }
        EventStat {
            waits: self.waits.saturating_sub(earlier.waits),
            time_ns: self.time_ns.saturating_sub(earlier.time_ns),
            waits_fg: self.waits_fg.saturating_sub(earlier.waits_fg),
            time_fg_ns: self.time_fg_ns.saturating_sub(earlier.time_fg_ns),
            max_ns: if self.waits > earlier.waits {
                self.max_ns
            } else {
                0
            },
            histogram: h,
        }
    }
}

/// All counters of one instance: what `v$sysstat` and `v$system_event` would
/// show at one moment. Reports work on the difference of two of these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    // Fixed-size arrays: an index by the enum needs no bounds check.
    values: Box<[u64; Stat::COUNT]>,
    events: Box<[EventStat; Wait::COUNT]>,
    /// Per-statement figures (tkprof), in the instance's statement order.
    pub statements: Vec<StmtStat>,
    /// Parallel executions: QC and slave rows, statements, bytes per instance pair.
    pub px: crate::px::PxView,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            values: Box::new([0; Stat::COUNT]),
            events: Box::new(std::array::from_fn(|_| EventStat::default())),
            statements: Vec::new(),
            px: crate::px::PxView::default(),
        }
    }
}

impl Stats {
    #[inline]
    pub fn add(&mut self, stat: Stat, v: u64) {
        self.values[stat as usize] += v;
    }
    #[inline]
    pub fn incr(&mut self, stat: Stat) {
        self.values[stat as usize] += 1;
    }
    #[inline]
    pub fn get(&self, stat: Stat) -> u64 {
        self.values[stat as usize]
    }
    /// Record one completed wait; `foreground` says whether a user session waited.
    #[inline]
    pub fn wait(&mut self, event: Wait, ns: u64, foreground: bool) {
        self.events[event as usize].record(ns, foreground);
    }
    pub fn event(&self, event: Wait) -> &EventStat {
        &self.events[event as usize]
    }
    /// Set a counter (rebuilding a snapshot that crossed the wire).
    pub fn set(&mut self, stat: Stat, v: u64) {
        self.values[stat as usize] = v;
    }
    /// Set an event's row (rebuilding a snapshot that crossed the wire).
    pub fn set_event(&mut self, event: Wait, e: EventStat) {
        self.events[event as usize] = e;
    }
    /// Activity between `earlier` and `self`. Counters only grow, but a live
    /// cluster's snapshots come from other processes (one restarted since
    /// `earlier` starts again from zero), so differences saturate rather
    /// than assert.
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            values: Box::new(std::array::from_fn(|i| {
                self.values[i].saturating_sub(earlier.values[i])
            })),
            events: Box::new(std::array::from_fn(|i| {
                self.events[i].since(&earlier.events[i])
            })),
            statements: self
                .statements
                .iter()
                .map(
                    |a| match earlier.statements.iter().find(|b| b.sql == a.sql) {
                        Some(b) => a.since(b),
                        None => a.clone(),
                    },
                )
                .collect(),
            px: self.px.since(&earlier.px),
        }
    }
    /// Forget the largest waits seen (every event's and every statement's
    /// `max_ns`): what follows is a new interval whose maximum is its own.
    /// Counters and histograms go on growing (they are differenced).
    pub fn reset_peaks(&mut self) {
        for e in self.events.iter_mut() {
            e.max_ns = 0;
        }
        for st in &mut self.statements {
            for w in &mut st.waits {
                w.max_ns = 0;
            }
        }
    }
    /// Sum of several instances' counters (for cluster-wide figures).
    pub fn merge(&mut self, other: &Stats) {
        for (a, b) in self.values.iter_mut().zip(other.values.iter()) {
            *a += b;
        }
        for (a, b) in self.events.iter_mut().zip(other.events.iter()) {
            a.waits += b.waits;
            a.time_ns += b.time_ns;
            a.waits_fg += b.waits_fg;
            a.time_fg_ns += b.time_fg_ns;
            a.max_ns = a.max_ns.max(b.max_ns);
            for (x, y) in a.histogram.iter_mut().zip(&b.histogram) {
                *x += y;
            }
        }
        // Statements by their text: the same SQL on several instances is one line.
        for st in &other.statements {
            match self.statements.iter_mut().find(|x| x.sql == st.sql) {
                Some(x) => x.merge(st),
                None => self.statements.push(st.clone()),
            }
        }
        self.px.merge(&other.px);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_back() {
        for s in Stat::ALL {
            assert_eq!(Stat::from_name(s.name()), Some(*s));
        }
        for w in Wait::ALL {
            assert_eq!(Wait::from_name(&w.name().to_uppercase()), Some(*w));
        }
    }

    #[test]
    fn histogram_buckets_are_powers_of_two_microseconds() {
        assert_eq!(EventStat::bucket_of(0), 0);
        assert_eq!(EventStat::bucket_of(999), 0);
        assert_eq!(EventStat::bucket_of(1_000), 1);
        assert_eq!(EventStat::bucket_of(1_999), 1);
        assert_eq!(EventStat::bucket_of(2_000), 2);
        assert_eq!(EventStat::bucket_of(u64::MAX), HISTOGRAM_BUCKETS - 1);
    }

    #[test]
    fn since_subtracts_waits_and_time() {
        let mut a = Stats::default();
        a.wait(Wait::LogFileSync, 1_000_000, true);
        let snap = a.clone();
        a.wait(Wait::LogFileSync, 3_000_000, true);
        a.add(Stat::UserCommits, 2);
        let d = a.since(&snap);
        assert_eq!(d.event(Wait::LogFileSync).waits, 1);
        assert_eq!(d.event(Wait::LogFileSync).time_ns, 3_000_000);
        assert_eq!(d.get(Stat::UserCommits), 2);
    }

    #[test]
    fn an_interval_after_reset_peaks_has_its_own_maximum() {
        let mut a = Stats::default();
        a.statements.push(StmtStat::new("select 1".into(), false));
        a.wait(Wait::LogFileSync, 40_000_000, true);
        a.statements[0].wait(Wait::LogFileSync, 40_000_000);
        let snap = a.clone();
        a.reset_peaks();
        a.wait(Wait::LogFileSync, 300_000, true);
        a.statements[0].wait(Wait::LogFileSync, 300_000);
        let d = a.since(&snap);
        let e = d.event(Wait::LogFileSync);
        assert_eq!((e.waits, e.max_ns), (1, 300_000));
        assert_eq!(e.histogram[EventStat::bucket_of(300_000)], 1);
        let w = d.statements[0].waits[Wait::LogFileSync as usize];
        assert_eq!((w.waits, w.max_ns), (1, 300_000));
        // Counters are not touched.
        assert_eq!(a.event(Wait::LogFileSync).waits, 2);
    }
}
