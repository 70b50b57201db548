//! Dynamic remastering's messages on the wire (`Msg::Drm`): the policy
//! statistics, the coordinator's steps and the holders' reports to the
//! new master. Checked as the others are (instances, block addresses); what
//! does not fit the DRM in progress is the receiving instance's to refuse.

use fusion_core::msg::{DrmMsg, Msg};

use crate::convert::{Codec, WireError, missing};
use crate::convert_reconfig::held_blocks_pb;
use crate::pb;
use crate::pb::drm::Kind as D;

impl Codec {
    pub(crate) fn encode_drm(&self, msg: &DrmMsg) -> pb::Drm {
        let kind = match msg {
            DrmMsg::Stats { window, objects } => D::Stats(pb::DrmStats {
                window: *window,
                objects: objects
                    .iter()
                    .map(|&(object, opens)| pb::DrmObjectOpens { object, opens })
                    .collect(),
            }),
            DrmMsg::Freeze { drm, object, to } => D::Freeze(pb::DrmFreeze {
                drm: *drm,
                object: *object,
                to: u32::from(to.0),
            }),
            DrmMsg::Quiet { drm } => D::Quiet(*drm),
            DrmMsg::Transfer { drm } => D::Transfer(*drm),
            DrmMsg::Rebuild { drm, blocks } => D::Rebuild(pb::DrmRebuild {
                drm: *drm,
                blocks: held_blocks_pb(blocks),
            }),
            DrmMsg::Done { drm } => D::Done(*drm),
        };
        pb::Drm { kind: Some(kind) }
    }

    pub(crate) fn decode_drm(&self, d: pb::Drm) -> Result<Msg, WireError> {
        let msg = match d.kind.ok_or(missing("Drm.kind"))? {
            D::Stats(s) => DrmMsg::Stats {
                window: s.window,
                objects: s
                    .objects
                    .into_iter()
                    .take(1 << 16)
                    .map(|o| (o.object, o.opens))
                    .collect(),
            },
            D::Freeze(f) => DrmMsg::Freeze {
                drm: f.drm,
                object: f.object,
                to: self.limits.inst("DrmFreeze.to", f.to)?,
            },
            D::Quiet(drm) => DrmMsg::Quiet { drm },
            D::Transfer(drm) => DrmMsg::Transfer { drm },
            D::Rebuild(r) => DrmMsg::Rebuild {
                drm: r.drm,
                blocks: self.held_blocks_core(r.blocks)?,
            },
            D::Done(drm) => DrmMsg::Done { drm },
        };
        Ok(Msg::Drm(Box::new(msg)))
    }
}
