//! What a scenario means for each instance, worked out once for both drivers
//! (the simulator and the live runtime), so a phase cannot start differently
//! in the two.

use std::sync::Arc;

use fusion_core::instance::{Command, Delivery, InstanceConfig};
use fusion_core::layout::Layout;
use fusion_core::types::InstId;

use crate::model::{Fault, LinkTarget, Phase, Scenario};

impl Scenario {
    /// The block layout every instance and the store share.
    pub fn layout(&self) -> Arc<Layout> {
        let instance_count = self.instances.len() as u8;
        let contiguous = self
            .instances
            .first()
            .map_or(128, |p| p.lm_contiguous_res_count);
        Arc::new(Layout::new(&self.catalog, instance_count, contiguous))
    }

    /// The start-up configuration of every instance (index 0 is instance 1).
    pub fn instance_configs(
        &self,
        layout: &Arc<Layout>,
        seed: u64,
        record_history: bool,
    ) -> Vec<InstanceConfig> {
        let instance_count = self.instances.len() as u8;
        let catalog = Arc::new(self.catalog.clone());
        let workloads = Arc::new(self.workloads.clone());
        let lossy = self
            .phases
            .iter()
            .flat_map(|p| &p.faults)
            // A partition drops messages too: healed before anyone is
            // evicted, what it dropped must be sent again.
            .any(|f| matches!(f, Fault::Loss { .. } | Fault::Partition { .. }));
        // The simulator's network loses nothing else; the live runtime
        // raises this to `Transport` (its connections may break).
        let delivery = if lossy {
            Delivery::Lossy
        } else {
            Delivery::Direct
        };
        self.instances
            .iter()
            .enumerate()
            .map(|(i, p)| InstanceConfig {
                id: InstId(i as u8),
                instances: instance_count,
                params: p.clone(),
                costs: self.costs.clone(),
                catalog: catalog.clone(),
                layout: layout.clone(),
                workloads: workloads.clone(),
                seed,
                record_history,
                delivery,
                life: 0,
                server: self.server.clone(),
            })
            .collect()
    }

    /// The database block size (the wire pads shipped blocks to it).
    pub fn block_size(&self) -> u32 {
        self.instances.first().map_or(8192, |p| p.db_block_size)
    }
}

impl Phase {
    /// The commands instance `idx` (0-based) gets when this phase starts,
    /// right after the driver's snapshot of its counters: the reset of the
    /// largest waits (a phase's maximum is its own; counters are
    /// differenced, a maximum cannot be), its parameter changes, its CPU
    /// stress (none stops an earlier one) and the phase's workloads.
    /// Interconnect and disk faults are the drivers' (they own the links and
    /// the store).
    pub fn commands_for(&self, idx: usize) -> Vec<Command> {
        let mut out = vec![Command::ResetPeaks];
        out.extend(
            self.parameters
                .iter()
                .filter(|(inst, _, _)| usize::from(*inst).saturating_sub(1) == idx)
                .map(|(_, name, value)| Command::SetParameter {
                    name: name.clone(),
                    value: value.clone(),
                }),
        );
        let (workers, load_pct) = self
            .faults
            .iter()
            .rev()
            .find_map(|f| match f {
                Fault::StressCpu {
                    instance,
                    workers,
                    load_pct,
                } if usize::from(*instance).saturating_sub(1) == idx => Some((*workers, *load_pct)),
                _ => None,
            })
            .unwrap_or((0, 100));
        out.push(Command::StressCpu { workers, load_pct });
        out.push(Command::EnableWorkloads(self.workloads.clone()));
        if self.checkpoint {
            // After the workloads are set: a phase that stops them writes
            // what they left dirty.
            out.push(Command::Checkpoint);
        }
        if let Some(backup) = self.backup.filter(|_| idx == 0) {
            out.push(Command::Backup {
                channels: backup.channels,
                section_size_mb: backup.section_size_mb,
            });
        }
        out
    }
}

impl LinkTarget {
    /// Whether the link `from -> to` (0-based) is one of the target's.
    pub fn covers(&self, from: usize, to: usize) -> bool {
        if from == to {
            return false;
        }
        match self {
            LinkTarget::All => true,
            LinkTarget::Instance(i) => {
                let i = usize::from(*i).saturating_sub(1);
                from == i || to == i
            }
            LinkTarget::Link { from: a, to: b } => {
                from == usize::from(*a).saturating_sub(1) && to == usize::from(*b).saturating_sub(1)
            }
        }
    }

    /// Whether a `partition` of this target in `direction` cuts `from -> to`
    /// (0-based). `to`: links into the target (it hears nothing); `from`:
    /// links out of it (nobody hears it); `both`: either way. For one link
    /// `{ from = A, to = B }`, `to` and `from` cut that direction and `both`
    /// the pair.
    pub fn cuts(&self, direction: crate::model::Direction, from: usize, to: usize) -> bool {
        use crate::model::Direction;
        if from == to {
            return false;
        }
        match (self, direction) {
            (_, Direction::Both) => self.covers(from, to) || self.covers(to, from),
            (LinkTarget::All, _) => true,
            (LinkTarget::Instance(i), Direction::To) => to == usize::from(*i).saturating_sub(1),
            (LinkTarget::Instance(i), Direction::From) => from == usize::from(*i).saturating_sub(1),
            (LinkTarget::Link { .. }, _) => self.covers(from, to),
        }
    }
}
