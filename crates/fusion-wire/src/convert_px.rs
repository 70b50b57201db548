//! Parallel-execution messages (`fusion_core::px::PxMsg`) on the wire. A
//! table-queue buffer carries its real rows, padded with zeros to the buffer
//! size the sender counts, so the interconnect moves the bytes the model
//! says it does.

use fusion_core::config::px_params::SERVERS_MAX;
use fusion_core::px::{Batch, DOP_MAX, Dest, ExecId, PxMsg, QueryRef, SlaveId};
use fusion_core::types::InstId;
use prost::Message;

use crate::convert::{Codec, WireError, missing};
use crate::pb;

/// `parallel_execution_message_size` is at most 64 KiB.
const BUFFER_BYTES_MAX: u32 = 65_536;
/// Longest group name (`instance_groups` names have at most 30 characters).
const GROUP_CHARS_MAX: usize = 30;
/// An instance's CPU-derived degree: `cpu_count` (at most 1,024) x
/// `parallel_threads_per_cpu` (at most 64).
const CPU_DOP_MAX: u32 = 1024 * 64;

/// `v` if it is at most `max`, else an error naming `field`. The QC adds
/// up the instances' figures and multiplies them by the number of server
/// sets: a peer's figure beyond what any instance can have would overflow.
fn at_most(field: &'static str, v: u32, max: u32) -> Result<u32, WireError> {
    if v <= max {
        Ok(v)
    } else {
        Err(out_of_range(field, u64::from(v), &format!("at most {max}")))
    }
}

fn exec_pb(e: ExecId) -> pb::ExecId {
    pb::ExecId {
        qc: u32::from(e.qc.0),
        serial: e.serial,
    }
}

fn slave_pb(s: SlaveId) -> pb::SlaveId {
    pb::SlaveId {
        set: u32::from(s.set),
        idx: u32::from(s.idx),
    }
}

fn out_of_range(field: &'static str, value: u64, expected: &str) -> WireError {
    WireError::OutOfRange {
        field,
        value,
        expected: expected.to_string(),
    }
}

impl Codec {
    pub fn encode_px(&self, m: &PxMsg) -> pb::Px {
        use pb::px::Kind as K;
        let kind = match m {
            PxMsg::Probe { exec, group } => K::Probe(pb::PxProbe {
                exec: Some(exec_pb(*exec)),
                group: group.clone(),
            }),
            PxMsg::ProbeReply {
                exec,
                member,
                cpu_dop,
                free,
                room,
                target,
                load,
            } => K::ProbeReply(pb::PxProbeReply {
                exec: Some(exec_pb(*exec)),
                member: *member,
                cpu_dop: *cpu_dop,
                free: *free,
                room: *room,
                target: *target,
                load: *load,
            }),
            PxMsg::Start {
                exec,
                qc_sid,
                query,
                requested,
                dop,
                placement,
            } => K::Start(pb::PxStart {
                exec: Some(exec_pb(*exec)),
                qc_sid: *qc_sid,
                query: Some(pb::QueryRef {
                    workload: query.workload,
                    txn: query.txn,
                    step: query.step,
                }),
                requested: *requested,
                dop: *dop,
                placement: placement.iter().map(|i| u32::from(i.0)).collect(),
            }),
            PxMsg::Joined { exec } => K::Joined(exec_pb(*exec)),
            PxMsg::Execute { exec } => K::Execute(exec_pb(*exec)),
            PxMsg::Batch(b) => {
                let mut batch = pb::PxBatch {
                    exec: Some(exec_pb(b.exec)),
                    from: Some(slave_pb(b.from)),
                    to: Some(match b.to {
                        Dest::Slave(s) => pb::px_batch::To::Slave(slave_pb(s)),
                        Dest::Qc => pb::px_batch::To::Qc(pb::Unit {}),
                    }),
                    side: u32::from(b.side),
                    values: b.values.clone(),
                    eof: b.eof,
                    bytes: b.bytes,
                    padding: Vec::new(),
                };
                if !b.values.is_empty() {
                    // The padding field's own tag and length take a few bytes.
                    let len = u32::try_from(batch.encoded_len())
                        .unwrap_or(u32::MAX)
                        .saturating_add(4);
                    batch.padding =
                        vec![0; b.bytes.min(BUFFER_BYTES_MAX).saturating_sub(len) as usize];
                }
                K::Batch(batch)
            }
            PxMsg::Credit {
                exec,
                producer,
                consumer,
            } => K::Credit(pb::PxCredit {
                exec: Some(exec_pb(*exec)),
                producer: u32::from(*producer),
                consumer: u32::from(*consumer),
            }),
            PxMsg::Release { exec } => K::Release(exec_pb(*exec)),
            PxMsg::Freed => K::Freed(pb::Unit {}),
        };
        pb::Px { kind: Some(kind) }
    }

    fn exec(&self, field: &'static str, e: Option<pb::ExecId>) -> Result<ExecId, WireError> {
        let e = e.ok_or(missing(field))?;
        Ok(ExecId {
            qc: self.limits.inst(field, e.qc)?,
            serial: e.serial,
        })
    }

    fn slave(field: &'static str, s: Option<pb::SlaveId>) -> Result<SlaveId, WireError> {
        let s = s.ok_or(missing(field))?;
        if s.set > 1 {
            return Err(out_of_range(field, u64::from(s.set), "server set 0 or 1"));
        }
        let idx = u16::try_from(s.idx)
            .map_err(|_| out_of_range(field, u64::from(s.idx), "at most 65535"))?;
        Ok(SlaveId {
            set: s.set as u8,
            idx,
        })
    }

    pub fn decode_px(&self, p: pb::Px) -> Result<PxMsg, WireError> {
        use pb::px::Kind as K;
        Ok(match p.kind.ok_or(missing("Px.kind"))? {
            K::Probe(x) => {
                if x.group.len() > GROUP_CHARS_MAX {
                    return Err(out_of_range(
                        "PxProbe.group",
                        x.group.len() as u64,
                        "a group name of at most 30 characters",
                    ));
                }
                PxMsg::Probe {
                    exec: self.exec("PxProbe.exec", x.exec)?,
                    group: x.group,
                }
            }
            K::ProbeReply(x) => PxMsg::ProbeReply {
                exec: self.exec("PxProbeReply.exec", x.exec)?,
                member: x.member,
                cpu_dop: at_most("PxProbeReply.cpu_dop", x.cpu_dop, CPU_DOP_MAX)?,
                free: at_most("PxProbeReply.free", x.free, SERVERS_MAX)?,
                room: at_most("PxProbeReply.room", x.room, SERVERS_MAX)?,
                target: at_most("PxProbeReply.target", x.target, SERVERS_MAX)?,
                load: x.load,
            },
            K::Start(x) => {
                let q = x.query.ok_or(missing("PxStart.query"))?;
                let placement = x
                    .placement
                    .iter()
                    .map(|&i| self.limits.inst("PxStart.placement", i))
                    .collect::<Result<Vec<InstId>, _>>()?;
                PxMsg::Start {
                    exec: self.exec("PxStart.exec", x.exec)?,
                    qc_sid: x.qc_sid,
                    query: QueryRef {
                        workload: q.workload,
                        txn: q.txn,
                        step: q.step,
                    },
                    requested: x.requested,
                    dop: at_most("PxStart.dop", x.dop, DOP_MAX)?,
                    placement,
                }
            }
            K::Joined(e) => PxMsg::Joined {
                exec: self.exec("Px.joined", Some(e))?,
            },
            K::Execute(e) => PxMsg::Execute {
                exec: self.exec("Px.execute", Some(e))?,
            },
            K::Batch(b) => {
                if b.bytes > BUFFER_BYTES_MAX {
                    return Err(out_of_range(
                        "PxBatch.bytes",
                        u64::from(b.bytes),
                        "at most 65536",
                    ));
                }
                if b.side > 1 {
                    return Err(out_of_range("PxBatch.side", u64::from(b.side), "0 or 1"));
                }
                if b.values.len() > BUFFER_BYTES_MAX as usize {
                    return Err(out_of_range(
                        "PxBatch.values",
                        b.values.len() as u64,
                        "at most 65536 values",
                    ));
                }
                let to = match b.to.ok_or(missing("PxBatch.to"))? {
                    pb::px_batch::To::Slave(s) => {
                        Dest::Slave(Self::slave("PxBatch.slave", Some(s))?)
                    }
                    pb::px_batch::To::Qc(_) => Dest::Qc,
                };
                PxMsg::Batch(Box::new(Batch {
                    exec: self.exec("PxBatch.exec", b.exec)?,
                    from: Self::slave("PxBatch.from", b.from)?,
                    to,
                    side: b.side as u8,
                    values: b.values,
                    eof: b.eof,
                    bytes: b.bytes,
                }))
            }
            K::Credit(c) => {
                let n = |field: &'static str, v: u32| {
                    u16::try_from(v).map_err(|_| out_of_range(field, u64::from(v), "at most 65535"))
                };
                PxMsg::Credit {
                    exec: self.exec("PxCredit.exec", c.exec)?,
                    producer: n("PxCredit.producer", c.producer)?,
                    consumer: n("PxCredit.consumer", c.consumer)?,
                }
            }
            K::Release(e) => PxMsg::Release {
                exec: self.exec("Px.release", Some(e))?,
            },
            K::Freed(_) => PxMsg::Freed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fusion_core::msg::{Envelope, Msg};
    use fusion_core::types::Scn;

    fn codec() -> Codec {
        Codec::new(8192, 3, 1000)
    }

    #[test]
    fn buffers_round_trip_at_their_size() {
        let b = Batch {
            exec: ExecId {
                qc: InstId(0),
                serial: 7,
            },
            from: SlaveId { set: 0, idx: 3 },
            to: Dest::Slave(SlaveId { set: 1, idx: 5 }),
            side: 1,
            values: vec![1, -2, 300_000, 4],
            eof: true,
            bytes: 2148,
        };
        let env = Envelope {
            from: InstId(1),
            to: InstId(2),
            incarnation: 1,
            scn: Scn(9),
            sent_at: 10,
            msg: Msg::Px(PxMsg::Batch(Box::new(b))),
            link: Default::default(),
        };
        let wire = codec().encode_envelope(&env);
        let len = wire.encoded_len();
        assert!((2148..2148 + 40).contains(&len), "{len} bytes on the wire");
        assert_eq!(codec().decode_envelope(wire).unwrap(), env);
    }

    #[test]
    fn bad_fields_are_named() {
        let mut p = codec().encode_px(&PxMsg::Start {
            exec: ExecId {
                qc: InstId(0),
                serial: 1,
            },
            qc_sid: 0,
            query: QueryRef {
                workload: 0,
                txn: 0,
                step: 0,
            },
            requested: 2,
            dop: 2,
            placement: vec![InstId(0), InstId(1)],
        });
        if let Some(pb::px::Kind::Start(s)) = p.kind.as_mut() {
            s.placement[1] = 9;
        }
        let e = codec().decode_px(p).unwrap_err();
        assert_eq!(e.field(), "PxStart.placement");
        let e = codec().decode_px(pb::Px { kind: None }).unwrap_err();
        assert_eq!(e.field(), "Px.kind");
    }

    #[test]
    fn a_degree_or_server_count_no_instance_can_have_is_refused() {
        let exec = ExecId {
            qc: InstId(0),
            serial: 1,
        };
        let mut p = codec().encode_px(&PxMsg::Start {
            exec,
            qc_sid: 0,
            query: QueryRef {
                workload: 0,
                txn: 0,
                step: 0,
            },
            requested: 2,
            dop: 1,
            placement: vec![InstId(0)],
        });
        if let Some(pb::px::Kind::Start(s)) = p.kind.as_mut() {
            s.dop = DOP_MAX + 1;
        }
        assert_eq!(codec().decode_px(p).unwrap_err().field(), "PxStart.dop");

        let reply = |free| {
            codec().decode_px(codec().encode_px(&PxMsg::ProbeReply {
                exec,
                member: true,
                cpu_dop: 8,
                free,
                room: 4,
                target: 16,
                load: 3,
            }))
        };
        assert!(reply(SERVERS_MAX).is_ok());
        assert_eq!(
            reply(SERVERS_MAX + 1).unwrap_err().field(),
            "PxProbeReply.free"
        );
    }
}
