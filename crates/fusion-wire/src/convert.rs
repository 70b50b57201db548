//! Conversions between `fusion_core` types and the protobuf types of
//! [`crate::pb`]. Encoding cannot fail; decoding checks every field a peer
//! controls and names the one that is missing or out of range.

use fusion_core::block::{Block, Body};
use fusion_core::msg::{
    EnqKind, Envelope, GrantKind, Installed, LockMode, Lvb, Mode, Msg, RedoRecord, ReqKind,
    Request, ResName, ShipKind, Shipment, Timing, TxReport,
};
use fusion_core::types::{BlockAddr, InstId, InstSet, Scn, Xid};
use thiserror::Error;

use crate::block::{BlockError, decode_block, encode_block};
use crate::pb;

/// Clusters have at most 64 instances (`InstSet` is a 64-bit mask).
pub const INSTANCES_MAX: u32 = 64;

/// A message from a peer that cannot be turned into a core type.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("missing field `{field}`")]
    Missing { field: &'static str },
    #[error("field `{field}` out of range: {value} (expected {expected})")]
    OutOfRange {
        field: &'static str,
        value: u64,
        expected: String,
    },
    #[error("field `{field}` has unknown enum value {value}")]
    BadEnum { field: &'static str, value: i32 },
    #[error("field `{field}` rejected: {reason}")]
    Rejected { field: &'static str, reason: String },
    #[error("field `{field}` holds a bad block image: {source}")]
    Block {
        field: &'static str,
        #[source]
        source: BlockError,
    },
}

impl WireError {
    /// The field the error is about (`Message.field`, or the block field).
    pub fn field(&self) -> &'static str {
        match self {
            WireError::Missing { field }
            | WireError::OutOfRange { field, .. }
            | WireError::BadEnum { field, .. }
            | WireError::Rejected { field, .. }
            | WireError::Block { field, .. } => field,
        }
    }
}

pub(crate) fn missing(field: &'static str) -> WireError {
    WireError::Missing { field }
}

/// What a decoded message may refer to: instances `0..instances` and blocks
/// `0..total_blocks`. The core indexes tables by both, so anything outside
/// is refused here rather than panicking there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub instances: u32,
    pub total_blocks: u32,
}

impl Limits {
    /// Only the type's own ranges (and [`INSTANCES_MAX`]).
    pub const ANY: Limits = Limits {
        instances: INSTANCES_MAX,
        total_blocks: u32::MAX,
    };

    /// A set of instances, each below the cluster's size.
    pub(crate) fn inst_set(&self, field: &'static str, v: u64) -> Result<InstSet, WireError> {
        let limit = self.instances.min(INSTANCES_MAX);
        if limit >= 64 || v >> limit == 0 {
            Ok(InstSet(v))
        } else {
            Err(WireError::Rejected {
                field,
                reason: format!(
                    "names an instance at or above {} (bits {v:#x})",
                    self.instances
                ),
            })
        }
    }

    pub(crate) fn inst(&self, field: &'static str, v: u32) -> Result<InstId, WireError> {
        if v < self.instances.min(INSTANCES_MAX) {
            Ok(InstId(v as u8))
        } else {
            Err(WireError::OutOfRange {
                field,
                value: u64::from(v),
                expected: format!("an instance id below {}", self.instances),
            })
        }
    }

    pub(crate) fn blk(&self, field: &'static str, v: u32) -> Result<BlockAddr, WireError> {
        // u32::MAX means "no limit", so every u32 address is then accepted.
        if self.total_blocks == u32::MAX || v < self.total_blocks {
            Ok(BlockAddr(v))
        } else {
            Err(WireError::OutOfRange {
                field,
                value: u64::from(v),
                expected: format!("a block address below {}", self.total_blocks),
            })
        }
    }

    /// A transaction id: zero, or owned by an instance of the cluster.
    pub(crate) fn xid(&self, field: &'static str, v: u64) -> Result<Xid, WireError> {
        let x = Xid(v);
        if x.is_none() || u32::from(x.inst().0) < self.instances.min(INSTANCES_MAX) {
            Ok(x)
        } else {
            Err(WireError::OutOfRange {
                field,
                value: v,
                expected: format!(
                    "a transaction id of an instance below {} (top byte)",
                    self.instances
                ),
            })
        }
    }

    /// Addresses and transaction ids inside a decoded block.
    pub fn check_block(&self, b: &Block) -> Result<(), WireError> {
        self.blk("Block.addr", b.addr.0)?;
        self.check_body(&b.body)?;
        for e in &b.itl {
            self.xid("Block.itl.xid", e.xid.0)?;
        }
        for u in &b.undo {
            self.xid("Block.undo.xid", u.xid.0)?;
            match &u.op {
                fusion_core::block::UndoOp::Row {
                    before: Some(r), ..
                } => {
                    self.xid("Block.undo.before.lock", r.lock.0)?;
                }
                fusion_core::block::UndoOp::Body(body) => self.check_body(b.undo.body(*body))?,
                fusion_core::block::UndoOp::Entry { before } => {
                    self.blk("Block.undo.before.rowid.blk", before.rowid.blk.0)?;
                    self.xid("Block.undo.before.lock", before.lock.0)?;
                }
                fusion_core::block::UndoOp::Bit { lock, .. } => {
                    self.xid("Block.undo.lock", lock.0)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn check_body(&self, body: &Body) -> Result<(), WireError> {
        match body {
            Body::Unformatted | Body::SegHeader { .. } => {}
            Body::Table { rows } => {
                for r in rows.iter().flatten() {
                    self.xid("Block.rows.lock", r.lock.0)?;
                }
            }
            Body::Leaf { entries, next, .. } => {
                for e in entries {
                    self.blk("Block.entries.rowid.blk", e.rowid.blk.0)?;
                    self.xid("Block.entries.lock", e.lock.0)?;
                }
                if let Some(n) = next {
                    self.blk("Block.next", n.0)?;
                }
            }
            Body::Branch { entries } => {
                for (_, c) in entries {
                    self.blk("Block.branch.child", c.0)?;
                }
            }
            Body::Bitmap { pieces, next, .. } => {
                for p in pieces {
                    self.xid("Block.pieces.lock", p.lock.0)?;
                }
                if let Some(n) = next {
                    self.blk("Block.next", n.0)?;
                }
            }
        }
        Ok(())
    }
}

/// Encoder and decoder for one cluster: the block size shipped blocks are
/// padded to, and the [`Limits`] decoded messages must respect.
///
/// The `From`/`TryFrom` impls use [`Codec::UNPADDED`]: no padding, only the
/// types' own limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec {
    /// `db_block_size`; 0 leaves block images unpadded.
    pub block_size: u32,
    pub limits: Limits,
}

impl Codec {
    pub const UNPADDED: Codec = Codec {
        block_size: 0,
        limits: Limits::ANY,
    };

    /// The codec of a cluster of `instances` over `total_blocks` blocks.
    pub fn new(block_size: u32, instances: u8, total_blocks: u32) -> Codec {
        Codec {
            block_size,
            limits: Limits {
                instances: u32::from(instances),
                total_blocks,
            },
        }
    }

    pub fn encode_envelope(&self, env: &Envelope) -> pb::Envelope {
        pb::Envelope {
            from: u32::from(env.from.0),
            to: u32::from(env.to.0),
            scn: env.scn.0,
            sent_at: env.sent_at,
            msg: Some(self.encode_msg(&env.msg)),
            incarnation: env.incarnation,
            link_seq: env.link.seq,
            link_after: env.link.after,
        }
    }

    pub fn decode_envelope(&self, env: pb::Envelope) -> Result<Envelope, WireError> {
        let l = &self.limits;
        Ok(Envelope {
            from: l.inst("Envelope.from", env.from)?,
            to: l.inst("Envelope.to", env.to)?,
            incarnation: env.incarnation,
            scn: Scn(env.scn),
            sent_at: env.sent_at,
            msg: self.decode_msg(env.msg.ok_or(missing("Envelope.msg"))?)?,
            // Any numbers: the receiving instance checks them against its link.
            link: fusion_core::msg::LinkStamp {
                seq: env.link_seq,
                after: env.link_after,
            },
        })
    }

    pub fn encode_block(&self, block: &Block) -> Vec<u8> {
        encode_block(block, self.block_size)
    }

    /// Decode a block image and check what it refers to; `field` names the
    /// message field it came from.
    pub fn decode_block(&self, field: &'static str, bytes: &[u8]) -> Result<Block, WireError> {
        let b = decode_block(bytes).map_err(|source| WireError::Block { field, source })?;
        self.limits.check_block(&b)?;
        Ok(b)
    }

    pub fn encode_msg(&self, msg: &Msg) -> pb::Msg {
        use pb::msg::Kind as K;
        let kind = match msg {
            Msg::Request(r) => K::Request(request_pb(r)),
            Msg::Forward {
                req,
                master,
                shared,
            } => K::Forward(pb::Forward {
                req: Some(request_pb(req)),
                master: u32::from(master.0),
                shared: *shared,
            }),
            Msg::Grant { req, grant } => K::Grant(pb::Grant {
                req: Some(request_pb(req)),
                grant: grant_pb(*grant) as i32,
            }),
            Msg::Ship(s) => K::Ship(pb::Ship {
                req: Some(request_pb(&s.req)),
                kind: Some(ship_kind_pb(s.kind)),
                block: self.encode_block(&s.block),
                pi_kept: s.pi_kept,
                hops: u32::from(s.hops),
                congested: s.congested,
            }),
            Msg::Installed(i) => K::Installed(pb::Installed {
                blk: i.blk.0,
                req: i.req,
                mode: mode_pb(i.mode) as i32,
                prev_holder: i.prev_holder.map(|p| u32::from(p.0)),
                pi_kept: i.pi_kept,
            }),
            Msg::Invalidate { blk, req } => K::Invalidate(pb::Invalidate {
                blk: blk.0,
                req: *req,
            }),
            Msg::InvalidateAck { blk, req } => K::InvalidateAck(pb::InvalidateAck {
                blk: blk.0,
                req: *req,
            }),
            Msg::NotHeld { req } => K::NotHeld(pb::NotHeld {
                req: Some(request_pb(req)),
            }),
            Msg::DownConverted { req } => K::DownConverted(pb::DownConverted {
                req: Some(request_pb(req)),
            }),
            Msg::Relinquish { blk, mode } => K::Relinquish(pb::Relinquish {
                blk: blk.0,
                mode: mode_pb(*mode) as i32,
            }),
            Msg::Written { blk, scn } => K::Written(pb::Written {
                blk: blk.0,
                scn: scn.0,
            }),
            Msg::DiscardPi { blk, scn } => K::DiscardPi(pb::DiscardPi {
                blk: blk.0,
                scn: scn.0,
            }),
            Msg::TxQuery { xid, token } => K::TxQuery(pb::TxQuery {
                xid: xid.0,
                token: *token,
            }),
            Msg::TxStatus { xid, token, report } => K::TxStatus(pb::TxStatus {
                xid: xid.0,
                token: *token,
                report: Some(match report {
                    TxReport::Active => pb::tx_status::Report::Active(pb::Unit {}),
                    TxReport::Committed(scn) => pb::tx_status::Report::Committed(scn.0),
                }),
            }),
            Msg::TxWait { xid, token } => K::TxWait(pb::TxWait {
                xid: xid.0,
                token: *token,
            }),
            Msg::EnqConvert { res, mode, token } => K::EnqConvert(pb::EnqConvert {
                res: Some(res_pb(*res)),
                mode: lock_mode_pb(*mode) as i32,
                token: *token,
            }),
            Msg::EnqGrant {
                res,
                mode,
                token,
                lvb,
            } => K::EnqGrant(pb::EnqGrant {
                res: Some(res_pb(*res)),
                mode: lock_mode_pb(*mode) as i32,
                token: *token,
                lvb: Some(lvb_pb(*lvb)),
            }),
            Msg::EnqBast { res, mode } => K::EnqBast(pb::EnqBast {
                res: Some(res_pb(*res)),
                mode: lock_mode_pb(*mode) as i32,
            }),
            Msg::EnqDown { res, mode, lvb } => K::EnqDown(pb::EnqDown {
                res: Some(res_pb(*res)),
                mode: lock_mode_pb(*mode) as i32,
                lvb: lvb.map(lvb_pb),
            }),
            Msg::Px(m) => K::Px(self.encode_px(m)),
            Msg::ScnBroadcast { seq } => K::ScnBroadcast(pb::ScnBroadcast { seq: *seq }),
            Msg::ScnAck { seq } => K::ScnAck(pb::ScnAck { seq: *seq }),
            Msg::Heartbeat {
                incarnation,
                members,
            } => K::Heartbeat(pb::Heartbeat {
                incarnation: *incarnation,
                members: members.0,
            }),
            Msg::Rebuild(_)
            | Msg::Promote { .. }
            | Msg::RecoverBlock { .. }
            | Msg::SendPi { .. }
            | Msg::RecoverImage { .. }
            | Msg::BlockRecovered { .. }
            | Msg::WriteRequest { .. }
            | Msg::WriteCurrent { .. }
            | Msg::ThreadsRecovered { .. } => self.encode_reconfig(msg),
            Msg::LinkAck { cum, got } => K::LinkAck(pb::LinkAck {
                cum: *cum,
                got: *got,
            }),
            Msg::Drm(m) => K::Drm(self.encode_drm(m)),
            Msg::Deadlock(m) => K::Deadlock(self.encode_deadlock(m)),
        };
        pb::Msg { kind: Some(kind) }
    }

    pub fn decode_msg(&self, msg: pb::Msg) -> Result<Msg, WireError> {
        use pb::msg::Kind as K;
        let l = &self.limits;
        Ok(match msg.kind.ok_or(missing("Msg.kind"))? {
            K::Request(r) => Msg::Request(self.request(r)?),
            K::Forward(f) => Msg::Forward {
                req: self.request(f.req.ok_or(missing("Forward.req"))?)?,
                master: l.inst("Forward.master", f.master)?,
                shared: f.shared,
            },
            K::Grant(g) => Msg::Grant {
                req: self.request(g.req.ok_or(missing("Grant.req"))?)?,
                grant: grant_core(g.grant)?,
            },
            K::Ship(s) => {
                let kind = match s.kind.ok_or(missing("Ship.kind"))? {
                    pb::ship::Kind::Cr(c) => ShipKind::Cr {
                        lo: Scn(c.lo),
                        hi: Scn(c.hi),
                        private: c.private,
                    },
                    pb::ship::Kind::Raw(_) => ShipKind::Raw,
                    pb::ship::Kind::Shared(_) => ShipKind::Shared,
                    pb::ship::Kind::Current(_) => ShipKind::Current,
                };
                Msg::Ship(Box::new(Shipment {
                    req: self.request(s.req.ok_or(missing("Ship.req"))?)?,
                    kind,
                    block: self.decode_block("Ship.block", &s.block)?,
                    pi_kept: s.pi_kept,
                    hops: narrow("Ship.hops", s.hops)?,
                    congested: s.congested,
                }))
            }
            K::Installed(i) => Msg::Installed(Installed {
                blk: l.blk("Installed.blk", i.blk)?,
                req: i.req,
                mode: mode_core("Installed.mode", i.mode)?,
                prev_holder: i
                    .prev_holder
                    .map(|p| l.inst("Installed.prev_holder", p))
                    .transpose()?,
                pi_kept: i.pi_kept,
            }),
            K::Invalidate(i) => Msg::Invalidate {
                blk: l.blk("Invalidate.blk", i.blk)?,
                req: i.req,
            },
            K::InvalidateAck(i) => Msg::InvalidateAck {
                blk: l.blk("InvalidateAck.blk", i.blk)?,
                req: i.req,
            },
            K::NotHeld(n) => Msg::NotHeld {
                req: self.request(n.req.ok_or(missing("NotHeld.req"))?)?,
            },
            K::DownConverted(d) => Msg::DownConverted {
                req: self.request(d.req.ok_or(missing("DownConverted.req"))?)?,
            },
            K::Relinquish(r) => Msg::Relinquish {
                blk: l.blk("Relinquish.blk", r.blk)?,
                mode: mode_core("Relinquish.mode", r.mode)?,
            },
            K::Written(w) => Msg::Written {
                blk: l.blk("Written.blk", w.blk)?,
                scn: Scn(w.scn),
            },
            K::DiscardPi(d) => Msg::DiscardPi {
                blk: l.blk("DiscardPi.blk", d.blk)?,
                scn: Scn(d.scn),
            },
            K::TxQuery(q) => Msg::TxQuery {
                xid: l.xid("TxQuery.xid", q.xid)?,
                token: q.token,
            },
            K::TxStatus(s) => Msg::TxStatus {
                xid: l.xid("TxStatus.xid", s.xid)?,
                token: s.token,
                report: match s.report.ok_or(missing("TxStatus.report"))? {
                    pb::tx_status::Report::Active(_) => TxReport::Active,
                    pb::tx_status::Report::Committed(scn) => TxReport::Committed(Scn(scn)),
                },
            },
            K::TxWait(w) => Msg::TxWait {
                xid: l.xid("TxWait.xid", w.xid)?,
                token: w.token,
            },
            K::EnqConvert(c) => Msg::EnqConvert {
                res: res_core("EnqConvert.res", c.res)?,
                mode: lock_mode_core("EnqConvert.mode", c.mode)?,
                token: c.token,
            },
            K::EnqGrant(g) => Msg::EnqGrant {
                res: res_core("EnqGrant.res", g.res)?,
                mode: lock_mode_core("EnqGrant.mode", g.mode)?,
                token: g.token,
                lvb: lvb_core(g.lvb.ok_or(missing("EnqGrant.lvb"))?),
            },
            K::EnqBast(b) => Msg::EnqBast {
                res: res_core("EnqBast.res", b.res)?,
                mode: lock_mode_core("EnqBast.mode", b.mode)?,
            },
            K::EnqDown(d) => Msg::EnqDown {
                res: res_core("EnqDown.res", d.res)?,
                mode: lock_mode_core("EnqDown.mode", d.mode)?,
                lvb: d.lvb.map(lvb_core),
            },
            K::Px(p) => Msg::Px(self.decode_px(p)?),
            K::ScnBroadcast(b) => Msg::ScnBroadcast { seq: b.seq },
            K::ScnAck(a) => Msg::ScnAck { seq: a.seq },
            K::Heartbeat(h) => Msg::Heartbeat {
                incarnation: h.incarnation,
                members: l.inst_set("Heartbeat.members", h.members)?,
            },
            k @ (K::Rebuild(_)
            | K::Promote(_)
            | K::RecoverBlock(_)
            | K::SendPi(_)
            | K::RecoverImage(_)
            | K::BlockRecovered(_)
            | K::WriteRequest(_)
            | K::WriteCurrent(_)
            | K::ThreadsRecovered(_)) => self.decode_reconfig(k)?,
            K::LinkAck(a) => Msg::LinkAck {
                cum: a.cum,
                got: a.got,
            },
            K::Drm(d) => self.decode_drm(d)?,
            K::Deadlock(d) => self.decode_deadlock(d)?,
        })
    }

    pub fn decode_request(&self, r: pb::Request) -> Result<Request, WireError> {
        self.request(r)
    }

    fn request(&self, r: pb::Request) -> Result<Request, WireError> {
        let l = &self.limits;
        let kind = match r.kind.ok_or(missing("Request.kind"))? {
            pb::request::Kind::Cr(c) => ReqKind::Cr {
                snapshot: Scn(c.snapshot),
                reader: l.xid("CrRequest.reader", c.reader)?,
            },
            pb::request::Kind::Current(c) => ReqKind::Current {
                new_block: c.new_block,
            },
        };
        let t = r.timing.ok_or(missing("Request.timing"))?;
        Ok(Request {
            id: r.id,
            blk: l.blk("Request.blk", r.blk)?,
            requester: l.inst("Request.requester", r.requester)?,
            kind,
            timing: Timing {
                request: t.request,
                lms_wait: t.lms_wait,
                lms_proc: t.lms_proc,
                flush: t.flush,
                pin: t.pin,
            },
        })
    }

    pub fn encode_vote(&self, v: &fusion_core::voting::Vote) -> pb::Vote {
        pb::Vote {
            inst: u32::from(v.inst.0),
            beat: v.beat,
            hears: v.hears.0,
            incarnation: v.incarnation,
            members: v.members.0,
        }
    }

    pub fn decode_vote(&self, v: pb::Vote) -> Result<fusion_core::voting::Vote, WireError> {
        let l = &self.limits;
        Ok(fusion_core::voting::Vote {
            inst: l.inst("Vote.inst", v.inst)?,
            beat: v.beat,
            hears: l.inst_set("Vote.hears", v.hears)?,
            incarnation: v.incarnation,
            members: l.inst_set("Vote.members", v.members)?,
        })
    }
}

fn narrow(field: &'static str, v: u32) -> Result<u8, WireError> {
    u8::try_from(v).map_err(|_| WireError::OutOfRange {
        field,
        value: u64::from(v),
        expected: "at most 255".to_string(),
    })
}

fn request_pb(r: &Request) -> pb::Request {
    pb::Request {
        id: r.id,
        blk: r.blk.0,
        requester: u32::from(r.requester.0),
        kind: Some(match r.kind {
            ReqKind::Cr { snapshot, reader } => pb::request::Kind::Cr(pb::CrRequest {
                snapshot: snapshot.0,
                reader: reader.0,
            }),
            ReqKind::Current { new_block } => {
                pb::request::Kind::Current(pb::CurrentRequest { new_block })
            }
        }),
        timing: Some(pb::Timing {
            request: r.timing.request,
            lms_wait: r.timing.lms_wait,
            lms_proc: r.timing.lms_proc,
            flush: r.timing.flush,
            pin: r.timing.pin,
        }),
    }
}

pub(crate) fn res_pb(r: ResName) -> pb::ResName {
    let kind = match r.kind {
        EnqKind::RowCache => pb::EnqKind::RowCache,
        EnqKind::Sq => pb::EnqKind::Sq,
        EnqKind::Sv => pb::EnqKind::Sv,
        EnqKind::Ps => pb::EnqKind::Ps,
        EnqKind::IndexSplit => pb::EnqKind::IndexSplit,
        EnqKind::Tx => pb::EnqKind::Tx,
    };
    pb::ResName {
        kind: kind as i32,
        id: r.id,
    }
}

pub(crate) fn res_core(field: &'static str, r: Option<pb::ResName>) -> Result<ResName, WireError> {
    let r = r.ok_or(missing(field))?;
    let kind = match pb::EnqKind::try_from(r.kind) {
        Ok(pb::EnqKind::RowCache) => EnqKind::RowCache,
        Ok(pb::EnqKind::Sq) => EnqKind::Sq,
        Ok(pb::EnqKind::Sv) => EnqKind::Sv,
        Ok(pb::EnqKind::Ps) => EnqKind::Ps,
        Ok(pb::EnqKind::IndexSplit) => EnqKind::IndexSplit,
        Ok(pb::EnqKind::Tx) => EnqKind::Tx,
        _ => {
            return Err(WireError::BadEnum {
                field,
                value: r.kind,
            });
        }
    };
    Ok(ResName { kind, id: r.id })
}

pub(crate) fn lock_mode_pb(m: LockMode) -> pb::LockMode {
    match m {
        LockMode::Nl => pb::LockMode::Nl,
        LockMode::Ss => pb::LockMode::Ss,
        LockMode::Sx => pb::LockMode::Sx,
        LockMode::S => pb::LockMode::S,
        LockMode::Ssx => pb::LockMode::Ssx,
        LockMode::X => pb::LockMode::X,
    }
}

pub(crate) fn lock_mode_core(field: &'static str, v: i32) -> Result<LockMode, WireError> {
    Ok(match pb::LockMode::try_from(v) {
        Ok(pb::LockMode::Nl) => LockMode::Nl,
        Ok(pb::LockMode::Ss) => LockMode::Ss,
        Ok(pb::LockMode::Sx) => LockMode::Sx,
        Ok(pb::LockMode::S) => LockMode::S,
        Ok(pb::LockMode::Ssx) => LockMode::Ssx,
        Ok(pb::LockMode::X) => LockMode::X,
        _ => return Err(WireError::BadEnum { field, value: v }),
    })
}

pub(crate) fn lvb_pb(l: Lvb) -> pb::Lvb {
    pb::Lvb { lo: l.lo, hi: l.hi }
}

pub(crate) fn lvb_core(l: pb::Lvb) -> Lvb {
    Lvb { lo: l.lo, hi: l.hi }
}

pub(crate) fn mode_pb(m: Mode) -> pb::Mode {
    match m {
        Mode::S => pb::Mode::S,
        Mode::X => pb::Mode::X,
    }
}

pub(crate) fn mode_core(field: &'static str, v: i32) -> Result<Mode, WireError> {
    match pb::Mode::try_from(v) {
        Ok(pb::Mode::S) => Ok(Mode::S),
        Ok(pb::Mode::X) => Ok(Mode::X),
        _ => Err(WireError::BadEnum { field, value: v }),
    }
}

fn grant_pb(g: GrantKind) -> pb::GrantKind {
    match g {
        GrantKind::Disk(Mode::S) => pb::GrantKind::DiskS,
        GrantKind::Disk(Mode::X) => pb::GrantKind::DiskX,
        GrantKind::Upgrade => pb::GrantKind::Upgrade,
        GrantKind::New => pb::GrantKind::New,
    }
}

fn grant_core(v: i32) -> Result<GrantKind, WireError> {
    match pb::GrantKind::try_from(v) {
        Ok(pb::GrantKind::DiskS) => Ok(GrantKind::Disk(Mode::S)),
        Ok(pb::GrantKind::DiskX) => Ok(GrantKind::Disk(Mode::X)),
        Ok(pb::GrantKind::Upgrade) => Ok(GrantKind::Upgrade),
        Ok(pb::GrantKind::New) => Ok(GrantKind::New),
        _ => Err(WireError::BadEnum {
            field: "Grant.grant",
            value: v,
        }),
    }
}

fn ship_kind_pb(k: ShipKind) -> pb::ship::Kind {
    match k {
        ShipKind::Cr { lo, hi, private } => pb::ship::Kind::Cr(pb::ShipCr {
            lo: lo.0,
            hi: hi.0,
            private,
        }),
        ShipKind::Raw => pb::ship::Kind::Raw(pb::Unit {}),
        ShipKind::Shared => pb::ship::Kind::Shared(pb::Unit {}),
        ShipKind::Current => pb::ship::Kind::Current(pb::Unit {}),
    }
}

impl From<&Msg> for pb::Msg {
    fn from(m: &Msg) -> pb::Msg {
        Codec::UNPADDED.encode_msg(m)
    }
}

impl TryFrom<pb::Msg> for Msg {
    type Error = WireError;
    fn try_from(m: pb::Msg) -> Result<Msg, WireError> {
        Codec::UNPADDED.decode_msg(m)
    }
}

impl From<&Envelope> for pb::Envelope {
    fn from(e: &Envelope) -> pb::Envelope {
        Codec::UNPADDED.encode_envelope(e)
    }
}

impl TryFrom<pb::Envelope> for Envelope {
    type Error = WireError;
    fn try_from(e: pb::Envelope) -> Result<Envelope, WireError> {
        Codec::UNPADDED.decode_envelope(e)
    }
}

impl From<&Request> for pb::Request {
    fn from(r: &Request) -> pb::Request {
        request_pb(r)
    }
}

impl TryFrom<pb::Request> for Request {
    type Error = WireError;
    fn try_from(r: pb::Request) -> Result<Request, WireError> {
        Codec::UNPADDED.request(r)
    }
}

impl From<&RedoRecord> for pb::RedoRecord {
    fn from(r: &RedoRecord) -> pb::RedoRecord {
        Codec::UNPADDED.encode_redo(r)
    }
}

impl TryFrom<pb::RedoRecord> for RedoRecord {
    type Error = WireError;
    fn try_from(r: pb::RedoRecord) -> Result<RedoRecord, WireError> {
        Codec::UNPADDED.decode_redo(r)
    }
}

impl From<Mode> for pb::Mode {
    fn from(m: Mode) -> pb::Mode {
        mode_pb(m)
    }
}
