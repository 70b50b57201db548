//! The voting file on the shared store: each member's disk heartbeat, and
//! the I/O fence that keeps an evicted member from writing. Plain data, so
//! the simulator's store and the live store keep it the same way.

use crate::types::{InstId, InstSet};

/// One member's record in the voting file (its disk heartbeat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vote {
    pub inst: InstId,
    /// Bumped on every disk heartbeat: a counter that stops moving belongs
    /// to a member that is dead or frozen.
    pub beat: u64,
    /// The members this one heard on the network within `css_misscount`.
    pub hears: InstSet,
    /// The writer's cluster incarnation and its members: a member that finds
    /// a newer incarnation without itself was evicted.
    pub incarnation: u32,
    pub members: InstSet,
}

/// The voting file: one record per instance, and the fenced instances.
#[derive(Clone, Debug, Default)]
pub struct VotingFile {
    votes: Vec<Option<Vote>>,
    fenced: InstSet,
}

/// The store refused an I/O of a fenced (evicted) instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fenced;

impl VotingFile {
    pub fn new(instances: usize) -> VotingFile {
        VotingFile {
            votes: vec![None; instances],
            fenced: InstSet::default(),
        }
    }

    /// Write `vote` (the writer's own record) and read every record.
    pub fn heartbeat(&mut self, vote: Vote) -> Result<Vec<Vote>, Fenced> {
        if self.fenced.contains(vote.inst) {
            return Err(Fenced);
        }
        match self.votes.get_mut(vote.inst.idx()) {
            Some(slot) => *slot = Some(vote),
            None => return Err(Fenced),
        }
        Ok(self.votes.iter().flatten().copied().collect())
    }

    /// Refuse every later I/O of `inst` (a survivor evicts it before
    /// recovering it, so it cannot write behind the recovery's back).
    pub fn fence(&mut self, inst: InstId) {
        self.fenced.insert(inst);
    }

    /// A restarted instance may do I/O again.
    pub fn unfence(&mut self, inst: InstId) {
        self.fenced.remove(inst);
    }

    pub fn is_fenced(&self, inst: InstId) -> bool {
        self.fenced.contains(inst)
    }
}
