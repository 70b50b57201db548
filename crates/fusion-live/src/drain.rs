//! Draining an instance's history into the checker over its admin
//! service, a chunk at a time, while the run goes on or at rest.

use fusion_check::ConsistencyChecker;
use fusion_core::instance::{Horizon, Observation};
use fusion_core::types::{InstId, Scn};

use crate::admin_client::Admin;
use crate::observation_codec::decode_observation;
use crate::process::HISTORY_CHUNK;

/// Chunks of a history a drain takes from one instance at most while the
/// run goes on: as many as its log holds (4 Mi observations). One that
/// records faster than the runner takes is left for the next look (its log
/// full is an error of the run); at rest, twice that is a peer that lies.
const DRAIN_CHUNKS_MAX: usize = 64;

/// Take what instance `i`'s history holds into the checker, one chunk of
/// at most `HISTORY_CHUNK` observations at a time. `at_rest`: nothing is
/// recorded any more, the history must be taken to its end.
pub(crate) async fn drain_one(
    i: usize,
    a: &Admin,
    c: &mut ConsistencyChecker,
    at_rest: bool,
    new_life: bool,
) -> Result<u64, String> {
    let rounds = if at_rest {
        2 * DRAIN_CHUNKS_MAX
    } else {
        DRAIN_CHUNKS_MAX
    };
    let chunk = u32::try_from(HISTORY_CHUNK).unwrap_or(u32::MAX);
    let id = InstId(u8::try_from(i).map_err(|_| format!("{}: too many instances", a.who))?);
    let mut caught_up = false;
    let mut taken: u64 = 0;
    for _ in 0..rounds {
        let h = a.history(chunk).await?;
        let obs: Vec<Observation> = h
            .observations
            .iter()
            .map(|o| decode_observation(o, &a.who))
            .collect::<Result<_, _>>()?;
        caught_up = h.caught_up;
        let horizon = caught_up.then_some(Horizon {
            scn: Scn(h.scn),
            snapshot: Scn(h.snapshot),
        });
        taken += obs.len() as u64;
        if new_life && !obs.is_empty() && c.is_down(id) {
            // A life the runner started after the checker took the last
            // one down: it records only once the cluster admitted it, so
            // what it recorded is a member's, even if the runner's last look
            // at the membership came just before the admission.
            c.instance_up(id);
        }
        c.take_drained(id, &obs, horizon);
        if caught_up {
            break;
        }
    }
    if at_rest && !caught_up {
        return Err(format!(
            "{}: its history did not end after {rounds} chunks of {HISTORY_CHUNK} at rest",
            a.who
        ));
    }
    Ok(taken)
}
