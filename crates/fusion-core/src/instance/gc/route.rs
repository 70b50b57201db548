//! The directory's side of the global cache as the instance asks it: a
//! request that reached its master (here), acknowledgements, installs,
//! write completions. Each answers what the directory decided (gcs.rs
//! owns the state); the instance carries the routes out (dispatch.rs),
//! and the holder's side of a transfer is in serve.rs.

use super::GlobalCache;
use super::gcs::{Drained, Route, UnexpectedAck};
use crate::msg::{Installed, Mode, Request};
use crate::types::{BlockAddr, InstId, InstSet};

impl GlobalCache {
    /// A block request reached its master (this instance), which is not
    /// frozen: where it goes, if it goes on at once.
    #[inline]
    pub fn dir_request(&mut self, req: Request) -> Option<Route> {
        self.directory.request(req)
    }

    /// `from` acknowledged an invalidation of `blk`: the route of the
    /// request that waited for it, once every holder has; an error for an
    /// acknowledgement nobody asked for.
    pub fn dir_invalidate_ack(
        &mut self,
        from: InstId,
        blk: BlockAddr,
    ) -> Result<Option<Route>, UnexpectedAck> {
        self.directory.invalidate_ack(from, blk)
    }

    /// The requester installed what it was sent or granted (the requests
    /// queued behind the transfer follow from [`GlobalCache::dir_next_queued`]).
    #[inline]
    pub fn dir_installed(&mut self, from: InstId, done: Installed) {
        self.directory.installed(from, done);
    }

    /// The next request queued on `blk` to route, while nothing is in flight.
    #[inline]
    pub fn dir_next_queued(&mut self, blk: BlockAddr) -> Drained {
        self.directory.next_queued(blk)
    }

    /// The holder a request was forwarded to no longer has the block.
    pub fn dir_not_held(&mut self, from: InstId, req: Request) -> Option<Route> {
        self.directory.not_held(from, req)
    }

    /// The X holder down-converted to S for fairness: the request's new route.
    pub fn dir_down_converted(&mut self, from: InstId, req: Request) -> Option<Route> {
        self.directory.down_converted(from, req)
    }

    /// A holder aged its copy out.
    pub fn dir_relinquish(&mut self, from: InstId, blk: BlockAddr, mode: Mode) {
        self.directory.relinquish(from, blk, mode);
    }

    /// The current holder wrote the block: the holders of past images it
    /// made obsolete.
    pub fn dir_written(&mut self, blk: BlockAddr) -> InstSet {
        self.directory.written(blk)
    }
}
