//! Messages between instances (the GCS protocol and transaction lookups)
//! and the I/O the instance asks its driver to perform.

use crate::block::{Block, Change};
use crate::config::Nanos;
use crate::types::{BlockAddr, InstId, Scn, Xid};

/// A lock mode on a block resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    S,
    X,
}

/// Latency of a request so far, filled in along its path so the requester
/// can decompose its receive time the way the deck does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Request on the wire (every hop).
    pub request: Nanos,
    /// Waiting for a serving LMS, the master's and the holder's (its queue
    /// and the CPU run queue).
    pub lms_wait: Nanos,
    /// LMS processing: the master's routing, the holder's build or pin, and send.
    pub lms_proc: Nanos,
    /// Waiting for LGWR to flush redo before shipping.
    pub flush: Nanos,
    /// The holder waited for a local pin to be released.
    pub pin: Nanos,
}

/// What the requester asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    /// A consistent-read copy as of `snapshot` for `reader`.
    Cr { snapshot: Scn, reader: Xid },
    /// The current block in exclusive mode; `new_block`: a never-used block to format.
    Current { new_block: bool },
}

/// What a requester tells the block's master once it installed what it
/// was sent or granted (`Msg::Installed`, or a call when it masters the
/// block itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Installed {
    pub blk: BlockAddr,
    /// The request the transfer answered.
    pub req: u64,
    pub mode: Mode,
    /// Who held the block X before, when it was shipped from a holder.
    pub prev_holder: Option<InstId>,
    /// Whether that holder kept a past image.
    pub pi_kept: bool,
}

impl Installed {
    /// A block installed without a holder shipping it (a grant, an
    /// upgrade, a new block, a promoted past image): no previous holder.
    pub fn unshipped(blk: BlockAddr, req: u64, mode: Mode) -> Installed {
        Installed {
            blk,
            req,
            mode,
            prev_holder: None,
            pi_kept: false,
        }
    }
}

/// A block request as the master sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Unique per requester.
    pub id: u64,
    pub blk: BlockAddr,
    pub requester: InstId,
    pub kind: ReqKind,
    pub timing: Timing,
}

/// How a shipped block is to be installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShipKind {
    /// A CR copy valid for snapshots `lo..=hi`.
    Cr { lo: Scn, hi: Scn, private: bool },
    /// The current image, unrolled: the holder could not resolve every transaction
    /// in it without waiting (light work), so the requester builds the CR copy itself.
    Raw,
    /// The current block in shared mode (the sender keeps its own S copy).
    Shared,
    /// The current block in exclusive mode.
    Current,
}

/// A block shipped from its holder to the requester ([`Msg::Ship`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Shipment {
    pub req: Request,
    pub kind: ShipKind,
    pub block: Block,
    pub pi_kept: bool,
    /// 2 when the master served it, 3 when forwarded.
    pub hops: u8,
    pub congested: bool,
}

/// How the requester may proceed without a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantKind {
    /// Read the block from disk and hold it in this mode.
    Disk(Mode),
    /// You already hold it in S: you now hold X.
    Upgrade,
    /// A never-used block: format it in X.
    New,
}

/// The state of a transaction as its owner reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxReport {
    Active,
    Committed(Scn),
}

/// What a global enqueue protects (a resource of the global enqueue
/// service, GES, as opposed to a block of the global cache service).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EnqKind {
    /// A dictionary (row) cache entry: here the `dc_sequences` row of a sequence.
    RowCache,
    /// `SQ`: serializes refills of a sequence's instance cache.
    Sq,
    /// `SV`: an ORDER sequence's cluster-wide cached range (in the lock value block).
    Sv,
    /// `PS`: parallel slave synchronization; a QC holds it while it allocates slaves.
    Ps,
    /// Serializes the block splits of one index (the id is the index's
    /// position): Oracle's waiters on a split queue on the splitting
    /// transaction's TX enqueue, `enq: TX - index contention`.
    IndexSplit,
    /// `TX`: a transaction's enqueue (the id is its [`Xid`]). Its owner
    /// holds it in X until the transaction ends; a row lock waiter asks
    /// for it in X (`enq: TX - row lock contention`).
    Tx,
}

/// A global enqueue resource: its kind and an id (the sequence's or
/// index's position, a transaction's [`Xid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResName {
    pub kind: EnqKind,
    pub id: u64,
}

impl ResName {
    /// Transaction `xid`'s TX enqueue.
    pub fn tx(xid: Xid) -> ResName {
        ResName {
            kind: EnqKind::Tx,
            id: xid.0,
        }
    }

    /// The transaction whose TX enqueue this is.
    pub fn xid(self) -> Option<Xid> {
        (self.kind == EnqKind::Tx).then_some(Xid(self.id))
    }
}

/// Lock modes of a global enqueue, weakest first (Oracle's NL, SS, SX, S, SSX, X).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockMode {
    Nl,
    Ss,
    Sx,
    S,
    Ssx,
    X,
}

impl LockMode {
    /// Whether two holders may hold these modes at the same time (the DLM matrix).
    pub fn compatible(self, other: LockMode) -> bool {
        use LockMode::*;
        match (self, other) {
            (Nl, _) | (_, Nl) => true,
            (Ss, X) | (X, Ss) => false,
            (Ss, _) | (_, Ss) => true,
            (Sx, Sx) => true,
            (S, S) => true,
            _ => false,
        }
    }

    /// Whether holding `self` is enough for a user that needs `need`.
    pub fn covers(self, need: LockMode) -> bool {
        use LockMode::*;
        matches!(
            (self, need),
            (_, Nl) | (X, _) | (Ssx, Ss | Sx | S | Ssx) | (S, Ss | S) | (Sx, Ss | Sx) | (Ss, Ss)
        )
    }
}

/// The lock value block of a resource: a sequence range `(lo, hi]` in
/// allocation counts (SV), carried by grants and down-conversions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lvb {
    pub lo: u64,
    pub hi: u64,
}

/// How a transaction ended, as its TX enqueue's value block tells a waiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxEnd {
    Committed(Scn),
    /// Rolled back (an instance's recovery did it): its changes are undone
    /// where they are met.
    RolledBack,
}

impl Lvb {
    const TX_COMMITTED: u64 = 1;
    const TX_ROLLED_BACK: u64 = 2;

    /// The value block an owner hands back with its TX enqueue.
    pub fn tx_end(end: TxEnd) -> Lvb {
        match end {
            TxEnd::Committed(scn) => Lvb {
                lo: scn.0,
                hi: Lvb::TX_COMMITTED,
            },
            TxEnd::RolledBack => Lvb {
                lo: 0,
                hi: Lvb::TX_ROLLED_BACK,
            },
        }
    }

    /// What a TX enqueue's value block says (`None`: nothing, or garbage).
    pub fn as_tx_end(self) -> Option<TxEnd> {
        match self.hi {
            Lvb::TX_COMMITTED => Some(TxEnd::Committed(Scn(self.lo))),
            Lvb::TX_ROLLED_BACK => Some(TxEnd::RolledBack),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// Requester to master.
    Request(Request),
    /// Master to holder: serve this request from your cache.
    Forward {
        req: Request,
        master: InstId,
        shared: bool,
    },
    /// Master to requester.
    Grant {
        req: Request,
        grant: GrantKind,
    },
    /// Holder to requester. Boxed: inline, its fields made every message (and every
    /// envelope the simulator moves) 32 bytes larger.
    Ship(Box<Shipment>),
    /// Requester to master: the transfer is complete, record the new holder.
    Installed(Installed),
    /// Master to an S holder: give up your shared copy.
    Invalidate {
        blk: BlockAddr,
        req: u64,
    },
    InvalidateAck {
        blk: BlockAddr,
        req: u64,
    },
    /// Holder to master: I no longer hold this block (it aged out); serve the request another way.
    NotHeld {
        req: Request,
    },
    /// X holder to master: I served `_fairness_threshold` CR copies of the
    /// block since I last changed it, so I down-converted my lock to S (I
    /// keep the current image and still write it); route this request again.
    DownConverted {
        req: Request,
    },
    /// Holder to master: I dropped my copy (aged out, clean).
    Relinquish {
        blk: BlockAddr,
        mode: Mode,
    },
    /// Current holder to master: the block is on disk as of `scn`.
    Written {
        blk: BlockAddr,
        scn: Scn,
    },
    /// Master to past-image holders: a write covered your PI, drop it.
    DiscardPi {
        blk: BlockAddr,
        scn: Scn,
    },
    /// Is this transaction of yours committed?
    TxQuery {
        xid: Xid,
        token: u64,
    },
    TxStatus {
        xid: Xid,
        token: u64,
        report: TxReport,
    },
    /// Tell me when this transaction of yours ends (a row lock wait).
    TxWait {
        xid: Xid,
        token: u64,
    },
    /// Requester to a resource's master: convert my lock on `res` to `mode`.
    EnqConvert {
        res: ResName,
        mode: LockMode,
        token: u64,
    },
    /// Master to requester: you now hold `mode`; `lvb` is the resource's value block.
    EnqGrant {
        res: ResName,
        mode: LockMode,
        token: u64,
        lvb: Lvb,
    },
    /// Master to a holder (a blocking AST): someone waits for `mode`; down-convert when free.
    EnqBast {
        res: ResName,
        mode: LockMode,
    },
    /// Holder to master: I now hold `mode`; a value block if I held it in X.
    EnqDown {
        res: ResName,
        mode: LockMode,
        lvb: Option<Lvb>,
    },
    /// Parallel execution: slave allocation, table-queue buffers, credits.
    Px(crate::px::PxMsg),
    /// Broadcast on commit: LGWR's batch `seq` holds commits up to the
    /// envelope's SCN; apply it and acknowledge (LMS to LMS).
    ScnBroadcast {
        seq: u64,
    },
    /// The receiver has applied broadcast `seq`.
    ScnAck {
        seq: u64,
    },
    /// The cluster-membership service's network heartbeat (CSS, once a
    /// second to every member): the sender's incarnation and its members.
    Heartbeat {
        incarnation: u32,
        members: crate::types::InstSet,
    },
    /// Reconfiguration (the envelope's incarnation is the new one): what the
    /// sender holds of the resources the receiver masters now, and, from the
    /// recovering instance, the blocks it claims for recovery and the dead
    /// threads' transactions. A master unfreezes once every member's has come.
    Rebuild(Box<Rebuild>),
    /// Master to the holder of the newest past image of a block nobody
    /// holds current: your past image is the current block now (X).
    Promote {
        blk: BlockAddr,
    },
    /// Recovering instance to master: where is the newest image of this
    /// claimed block?
    RecoverBlock {
        blk: BlockAddr,
    },
    /// Master to a past-image holder: send your past image of `blk` to the
    /// recovering instance `to`.
    SendPi {
        blk: BlockAddr,
        to: InstId,
    },
    /// To the recovering instance: the newest image of a claimed block.
    RecoverImage {
        blk: BlockAddr,
        source: RecoverSource,
    },
    /// Recovering instance to master: the block is recovered and on disk
    /// (as of `scn`); sessions waiting for it go on.
    BlockRecovered {
        blk: BlockAddr,
        scn: Scn,
    },
    /// The recovering instance to every member: these dead threads are
    /// recovered (a later recovery need not read them again).
    ThreadsRecovered {
        threads: crate::types::InstSet,
    },
    /// A past image's holder to the block's master: my past image holds my
    /// checkpoint back (`fast_start_mttr_target`); have the current block written.
    WriteRequest {
        blk: BlockAddr,
    },
    /// Master to the current holder: write the block (a past image waits for it).
    WriteCurrent {
        blk: BlockAddr,
    },
    /// The reliable delivery sublayer's acknowledgement (only when the
    /// interconnect may lose messages, `instance/link.rs`): the sender's
    /// messages up to `cum` arrived, and so did `got`.
    LinkAck {
        cum: u64,
        got: u64,
    },
    /// Dynamic remastering (LMD's): boxed, rare and larger than the rest.
    Drm(Box<DrmMsg>),
    /// LMD's global deadlock search along the wait-for graph of row locks.
    Deadlock(Box<DeadlockMsg>),
}

/// Dynamic remastering of one object (pkey) at a time, decided and run by
/// the lowest member (the coordinator). See `instance/gc/drm.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum DrmMsg {
    /// Member to coordinator: its gc activity in policy window `window`,
    /// for the objects over `_gc_policy_minimum` (pkey, opens).
    Stats {
        window: u64,
        objects: Vec<(u32, u64)>,
    },
    /// Coordinator to every member: DRM `drm` moves `object` to `to`;
    /// freeze it (hold new requests for its blocks under `gc remaster`).
    Freeze { drm: u32, object: u32, to: InstId },
    /// Member to coordinator: none of my requests for the object is in flight.
    Quiet { drm: u32 },
    /// Coordinator to every member: all are quiet; drop what you master of
    /// the object, take `to` as its master and report your holdings to it.
    Transfer { drm: u32 },
    /// Member to the new master: what it holds of the object's blocks.
    Rebuild {
        drm: u32,
        blocks: Vec<(BlockAddr, Held)>,
    },
    /// New master to every member: rebuilt; send the held requests.
    Done { drm: u32 },
}

/// One edge of the wait-for graph as LMD saw it: session `sid` of `inst`,
/// running transaction `xid`, waits (wait number `wait_id`, since `since`)
/// for transaction `holder` to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitHop {
    pub inst: InstId,
    pub sid: u32,
    pub xid: Xid,
    pub holder: Xid,
    pub wait_id: u64,
    pub since: Nanos,
    /// Whether its statement can be rolled back (a row update that has
    /// changed nothing yet): a deadlock's victim must be.
    pub abandonable: bool,
}

/// A global deadlock search (Chandy-Misra-Haas edge chasing): the path is
/// the wait-for edges followed so far from the waiter that began it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeadlockMsg {
    /// To the owner of the last hop's `holder`: go on along the graph.
    Search { path: Vec<WaitHop> },
    /// Back to the first hop's instance: the path came back to its transaction.
    Found { path: Vec<WaitHop> },
    /// To hop `at`'s instance: is that wait still the same? (`at` equal to
    /// the path's length: back at the first hop, every edge confirmed.)
    Confirm { path: Vec<WaitHop>, at: u32 },
}

impl DeadlockMsg {
    /// The edges followed so far.
    pub fn path(&self) -> &[WaitHop] {
        match self {
            DeadlockMsg::Search { path }
            | DeadlockMsg::Found { path }
            | DeadlockMsg::Confirm { path, .. } => path,
        }
    }
}

impl Msg {
    /// The message's kind (its variant's name), for counting events by kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Request(..) => "Request",
            Msg::Forward { .. } => "Forward",
            Msg::Grant { .. } => "Grant",
            Msg::Ship(..) => "Ship",
            Msg::Installed(_) => "Installed",
            Msg::Invalidate { .. } => "Invalidate",
            Msg::InvalidateAck { .. } => "InvalidateAck",
            Msg::NotHeld { .. } => "NotHeld",
            Msg::DownConverted { .. } => "DownConverted",
            Msg::Relinquish { .. } => "Relinquish",
            Msg::Written { .. } => "Written",
            Msg::DiscardPi { .. } => "DiscardPi",
            Msg::TxQuery { .. } => "TxQuery",
            Msg::TxStatus { .. } => "TxStatus",
            Msg::TxWait { .. } => "TxWait",
            Msg::EnqConvert { .. } => "EnqConvert",
            Msg::EnqGrant { .. } => "EnqGrant",
            Msg::EnqBast { .. } => "EnqBast",
            Msg::EnqDown { .. } => "EnqDown",
            Msg::Px(..) => "Px",
            Msg::ScnBroadcast { .. } => "ScnBroadcast",
            Msg::ScnAck { .. } => "ScnAck",
            Msg::Heartbeat { .. } => "Heartbeat",
            Msg::Rebuild(..) => "Rebuild",
            Msg::Promote { .. } => "Promote",
            Msg::RecoverBlock { .. } => "RecoverBlock",
            Msg::SendPi { .. } => "SendPi",
            Msg::RecoverImage { .. } => "RecoverImage",
            Msg::BlockRecovered { .. } => "BlockRecovered",
            Msg::ThreadsRecovered { .. } => "ThreadsRecovered",
            Msg::WriteRequest { .. } => "WriteRequest",
            Msg::WriteCurrent { .. } => "WriteCurrent",
            Msg::LinkAck { .. } => "LinkAck",
            Msg::Drm(..) => "Drm",
            Msg::Deadlock(..) => "Deadlock",
        }
    }
}

/// What one instance holds, reported to a resource's new master.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// The current block in X (`dirty`: not on disk as it is).
    X { dirty: bool },
    /// The current block in S (`dirty`: the fairness writer's copy).
    S { dirty: bool },
    /// A past image as of `scn`.
    Pi { scn: Scn },
    /// Granted in `mode` for request `req` and still being read from disk:
    /// held as granted, and its `Installed` is still to come. The new master
    /// waits for it before it routes the block again, as the old one did (a
    /// holder asked to give up a block it has not read yet would answer as
    /// if it held nothing, and the read would install it after: seed 40515).
    Reading { mode: Mode, req: u64 },
}

/// A reconfiguration report to one master (see [`Msg::Rebuild`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rebuild {
    /// The members of the new incarnation.
    pub members: crate::types::InstSet,
    pub blocks: Vec<(BlockAddr, Held)>,
    /// Global enqueue locks held (NL omitted), with their value blocks.
    pub locks: Vec<(ResName, LockMode, Lvb)>,
    /// Blocks of the recovery set this master masters (from the recovering instance).
    pub claims: Vec<BlockAddr>,
    /// The dead instances' transactions (from the recovering instance; to every member).
    pub dead: Vec<DeadThread>,
    /// The sender's first transaction number of its life: a thread recovered
    /// later covers its transactions up to this life's (`DeadThread::xids_below`).
    pub xid_base: u64,
}

/// What the first pass over a dead instance's redo thread learned of its
/// transactions: everyone needs it to read that instance's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadThread {
    pub inst: InstId,
    /// Committed in the redo read, with their commit SCN.
    pub committed: Vec<(Xid, Scn)>,
    /// Changed rows and never committed: rolled back by recovery.
    pub uncommitted: Vec<Xid>,
    /// A transaction of this instance in neither list committed before the
    /// redo read begins, at or before this SCN.
    pub floor_scn: Scn,
    /// What this record says covers the instance's transactions numbered
    /// below this: the lives up to the one that died. A later life's are
    /// its own, and it is asked about them.
    pub xids_below: u64,
}

/// Where the newest image of a block being recovered is.
#[derive(Clone, Debug, PartialEq)]
pub enum RecoverSource {
    /// A survivor holds it current: nothing to roll forward.
    Current,
    /// No cache has it: read it from disk.
    Disk,
    /// A survivor's past image.
    Image(Box<Block>),
}

impl Msg {
    /// Bytes on the wire: shipped blocks are padded to the block size.
    pub fn wire_bytes(&self, block_size: u32, message_bytes: u32) -> u64 {
        match self {
            Msg::Ship(_)
            | Msg::RecoverImage {
                source: RecoverSource::Image(_),
                ..
            } => u64::from(block_size) + u64::from(message_bytes),
            Msg::Px(m) => m.wire_bytes(message_bytes),
            // A reconfiguration report: 16 bytes a resource, in messages of
            // the interconnect's size.
            Msg::Rebuild(r) => {
                let items = r.blocks.len() + r.locks.len() + r.claims.len();
                let txns: usize = r
                    .dead
                    .iter()
                    .map(|d| d.committed.len() + d.uncommitted.len())
                    .sum();
                u64::from(message_bytes).saturating_add(16u64.saturating_mul((items + txns) as u64))
            }
            _ => u64::from(message_bytes),
        }
    }

    /// The block a global cache message is about (`None` for the others):
    /// its LMS worker, and the key it keeps its order by on a lossy link.
    pub fn blk(&self) -> Option<BlockAddr> {
        match self {
            Msg::Request(r)
            | Msg::Forward { req: r, .. }
            | Msg::Grant { req: r, .. }
            | Msg::NotHeld { req: r }
            | Msg::DownConverted { req: r } => Some(r.blk),
            Msg::Ship(s) => Some(s.req.blk),
            Msg::Installed(Installed { blk, .. })
            | Msg::Invalidate { blk, .. }
            | Msg::InvalidateAck { blk, .. }
            | Msg::Relinquish { blk, .. }
            | Msg::Written { blk, .. }
            | Msg::DiscardPi { blk, .. }
            | Msg::Promote { blk }
            | Msg::RecoverBlock { blk }
            | Msg::SendPi { blk, .. }
            | Msg::RecoverImage { blk, .. }
            | Msg::BlockRecovered { blk, .. }
            | Msg::WriteRequest { blk }
            | Msg::WriteCurrent { blk } => Some(*blk),
            _ => None,
        }
    }

    /// Global cache (GCS) message, as opposed to a transaction (GES-like) one.
    pub fn is_gcs(&self) -> bool {
        !matches!(
            self,
            Msg::TxQuery { .. }
                | Msg::TxStatus { .. }
                | Msg::TxWait { .. }
                | Msg::Px(_)
                | Msg::Heartbeat { .. }
                | Msg::LinkAck { .. }
        ) && !self.is_ges()
    }

    /// Clusterware's own traffic (heartbeats): a few bytes a second that the
    /// network model delivers without queueing them behind the database's
    /// messages, so they move no figure of the database's.
    pub fn is_css(&self) -> bool {
        matches!(self, Msg::Heartbeat { .. })
    }

    /// The global enqueue resource a GES message is about.
    pub fn enqueue(&self) -> Option<ResName> {
        match self {
            Msg::EnqConvert { res, .. }
            | Msg::EnqGrant { res, .. }
            | Msg::EnqBast { res, .. }
            | Msg::EnqDown { res, .. } => Some(*res),
            _ => None,
        }
    }

    /// Global enqueue service (GES) message.
    pub fn is_ges(&self) -> bool {
        matches!(
            self,
            Msg::EnqConvert { .. }
                | Msg::EnqGrant { .. }
                | Msg::EnqBast { .. }
                | Msg::EnqDown { .. }
                | Msg::Deadlock(_)
        )
    }
}

/// A message with the sender's SCN (Lamport clock) and send time.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub from: InstId,
    pub to: InstId,
    /// The sender's cluster incarnation: a message from an older one is
    /// discarded after a reconfiguration (its sender's state was rebuilt).
    pub incarnation: u32,
    pub scn: Scn,
    pub sent_at: Nanos,
    pub msg: Msg,
    /// The reliable delivery sublayer's numbers (all 0 when it is off, and
    /// for heartbeats and acknowledgements).
    pub link: LinkStamp,
}

/// Where a message stands on its link when the interconnect may lose
/// messages (`instance/link.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStamp {
    /// Its number on the link from 1; 0: not sequenced.
    pub seq: u64,
    /// The number of the previous message about the same thing on the link,
    /// which the receiver hands over first; 0: none outstanding.
    pub after: u64,
}

/// One record in an instance's redo thread: a change to block `blk` (with
/// its change vector), a commit (`commit`, no block), or a block written
/// record (`written`: `blk` is on disk as of `scn`). Its redo byte address
/// (RBA) is the sum of the `bytes` of the records before it in the thread.
#[derive(Clone, Debug, PartialEq)]
pub struct RedoRecord {
    pub scn: Scn,
    pub xid: Xid,
    pub blk: Option<BlockAddr>,
    /// The redo size the model counts (`redo size`); 0 for a block written record.
    pub bytes: u32,
    pub commit: bool,
    /// What the change did to `blk`; `None` for commits and block written records.
    pub change: Option<Change>,
    /// A block written record (BWR): DBWR wrote `blk` as of `scn`, so
    /// recovery can skip its changes up to that SCN. It counts no bytes
    /// and rides in the next redo write.
    pub written: bool,
}

impl RedoRecord {
    /// The record of `change` to `blk`.
    pub fn change(scn: Scn, xid: Xid, blk: BlockAddr, bytes: u32, change: Change) -> RedoRecord {
        RedoRecord {
            scn,
            xid,
            blk: Some(blk),
            bytes,
            commit: false,
            change: Some(change),
            written: false,
        }
    }

    /// The commit record of `xid` at `scn`.
    pub fn commit(scn: Scn, xid: Xid, bytes: u32) -> RedoRecord {
        RedoRecord {
            scn,
            xid,
            blk: None,
            bytes,
            commit: true,
            change: None,
            written: false,
        }
    }

    /// A block written record: `blk` is on disk as of `scn`.
    pub fn block_written(blk: BlockAddr, scn: Scn) -> RedoRecord {
        RedoRecord {
            scn,
            xid: Xid::NONE,
            blk: Some(blk),
            bytes: 0,
            commit: false,
            change: None,
            written: true,
        }
    }
}

/// I/O the instance asks its driver to do; the result comes back as an [`IoResult`].
#[derive(Clone, Debug, PartialEq)]
pub enum Io {
    ReadBlock {
        blk: BlockAddr,
    },
    /// One multiblock read of `count` contiguous blocks (one I/O, as
    /// `db file scattered read` and `direct path read` are).
    ReadBlocks {
        first: BlockAddr,
        count: u32,
    },
    WriteBlock {
        block: Box<Block>,
    },
    WriteRedo {
        records: Vec<RedoRecord>,
        bytes: u64,
        /// The instance's checkpoint position: every change in redo below
        /// this address is on disk, so the store may drop the records
        /// before it (see `instance/checkpoint.rs`).
        checkpoint: u64,
    },
    /// The disk heartbeat: write this instance's record to the voting file
    /// and read every record ([`IoResult::Votes`]).
    Vote {
        vote: crate::voting::Vote,
    },
    /// I/O fencing: the store refuses every later I/O of `inst` (an evicted
    /// instance), answering [`IoResult::Fenced`].
    Fence {
        inst: InstId,
    },
    /// Lift `inst`'s fence: it was restarted, and the cluster admits it.
    Unfence {
        inst: InstId,
    },
    /// Read a (dead) instance's redo thread as the store keeps it, from its
    /// last checkpoint on ([`IoResult::Redo`]).
    ReadRedo {
        thread: InstId,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum IoResult {
    Read(Box<Block>),
    /// The blocks of a multiblock read, in address order.
    ReadMany(Vec<Block>),
    Written,
    /// The voting file's records.
    Votes(Vec<crate::voting::Vote>),
    /// The store refused the I/O: the instance was fenced (evicted).
    Fenced,
    /// A redo thread's records, oldest first.
    Redo(Vec<RedoRecord>),
}

/// What the driver must do for the instance.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Send(Envelope),
    Io { id: u64, io: Io },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every envelope is moved by value through the simulator's event queue,
    /// the LMS queue and the instance's calls: a large variant kept inline
    /// (a shipped block's fields) would make every one of them larger.
    #[test]
    fn a_message_is_no_larger_than_a_forwarded_request() {
        let forward = std::mem::size_of::<Request>() + 8;
        assert!(
            std::mem::size_of::<Msg>() <= forward,
            "{}",
            std::mem::size_of::<Msg>()
        );
    }
}
