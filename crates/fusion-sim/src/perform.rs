//! What an instance asks of the cluster, done: a message onto the
//! interconnect, an I/O to the store or the voting file, each queued as the
//! event of its arrival or completion.

use fusion_core::instance::Instance;
use fusion_core::msg::{Action, Io, IoResult};
use fusion_core::types::InstId;

use crate::Sim;
use crate::queue::Ev;

impl Sim {
    /// Perform the actions instance `i` asked for.
    // Inline: most events ask for nothing, and that check costs less than a call.
    #[inline(always)]
    pub(crate) fn perform(&mut self, i: usize) {
        while let Some(action) = self.instances.get_mut(i).and_then(Instance::poll_action) {
            self.perform_one(i, action);
        }
    }

    #[inline(never)]
    pub(crate) fn perform_one(&mut self, i: usize, action: Action) {
        match action {
            Action::Send(env) => {
                let bytes = env
                    .msg
                    .wire_bytes(self.block_size, self.net.message_bytes());
                let css = env.msg.is_css();
                let Some(at) = self
                    .net
                    .deliver(self.now, env.from.idx(), env.to.idx(), bytes, css)
                else {
                    // Lost on the network (a partition).
                    return;
                };
                if self.queue.push(self.now, at, Ev::Deliver(env)).is_err() {
                    self.queue_full();
                }
            }
            Action::Io { id, io } if self.voting.is_fenced(InstId(i as u8)) || is_voting(&io) => {
                // The voting file and fencing: no IOPS budget, no jitter.
                let result = match io {
                    _ if self.voting.is_fenced(InstId(i as u8)) => IoResult::Fenced,
                    Io::Vote { vote } => match self.voting.heartbeat(vote) {
                        Ok(votes) => IoResult::Votes(votes),
                        Err(fusion_core::voting::Fenced) => IoResult::Fenced,
                    },
                    // The fence holds once its write reached the voting
                    // file: from the time this I/O completes, just before
                    // the instance learns it did.
                    Io::Fence { inst } => {
                        self.fence_lands(inst, true);
                        IoResult::Written
                    }
                    Io::Unfence { inst } => {
                        self.fence_lands(inst, false);
                        IoResult::Written
                    }
                    _ => IoResult::Fenced,
                };
                let ev = Ev::Io {
                    inst: i as u8,
                    id,
                    result,
                    write: None,
                };
                if self
                    .queue
                    .push(self.now, self.now + self.vote_latency, ev)
                    .is_err()
                {
                    self.queue_full();
                }
            }
            Action::Io { id, io } => {
                let (at, result, write) = match io {
                    Io::ReadBlock { blk } => {
                        let (at, r) = self.store.read(self.now, i, blk);
                        (at, r, None)
                    }
                    Io::ReadBlocks { first, count } => {
                        let (at, r) = self.store.read_many(self.now, i, first, count);
                        (at, r, None)
                    }
                    Io::WriteBlock { block } => (
                        self.store.write(self.now, i),
                        IoResult::Written,
                        Some(block),
                    ),
                    Io::WriteRedo {
                        records,
                        checkpoint,
                        ..
                    } => match self.store.write_redo(self.now, i, records, checkpoint) {
                        Ok((at, r)) => (at, r, None),
                        Err(why) => return self.stop(why),
                    },
                    Io::ReadRedo { thread } => {
                        let (at, r) = self.store.read_redo(self.now, i, thread.idx());
                        (at, r, None)
                    }
                    Io::Vote { .. } | Io::Fence { .. } | Io::Unfence { .. } => return,
                };
                let pushed = self.queue.push(
                    self.now,
                    at,
                    Ev::Io {
                        inst: i as u8,
                        id,
                        result,
                        write,
                    },
                );
                if pushed.is_err() {
                    self.queue_full();
                }
            }
        }
    }

    /// A fence (or its lifting) reaches the voting file: not an instance's
    /// event, so not counted as one.
    pub(crate) fn fence_applies(&mut self, inst: InstId, fenced: bool) {
        if fenced {
            self.voting.fence(inst);
        } else {
            self.voting.unfence(inst);
        }
    }

    /// Queue the fence of `inst` (or its lifting) to reach the voting file
    /// one voting I/O from now.
    fn fence_lands(&mut self, inst: InstId, fenced: bool) {
        let ev = Ev::Fence { inst, fenced };
        if self
            .queue
            .push(self.now, self.now + self.vote_latency, ev)
            .is_err()
        {
            self.queue_full();
        }
    }
}

/// Whether an I/O goes to the voting file (disk heartbeats, fencing).
fn is_voting(io: &Io) -> bool {
    matches!(io, Io::Vote { .. } | Io::Fence { .. } | Io::Unfence { .. })
}
