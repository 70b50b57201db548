use super::victim::Victim;
use super::*;
use crate::block::Body;

fn img(a: u32) -> Block {
    Block::new(BlockAddr(a), Body::Table { rows: vec![] })
}

#[test]
fn chains_lru_and_victims() {
    let mut c = Cache::new(16, 10);
    let a = c.insert(BlockAddr(1), BufState::Xcur, img(1));
    let b = c.insert(
        BlockAddr(1),
        BufState::Cr {
            lo: Scn(0),
            hi: Scn(5),
            private_to: None,
        },
        img(1),
    );
    let d = c.insert(BlockAddr(2), BufState::Scur, img(2));
    assert_eq!(c.buffers_of(BlockAddr(1)).collect::<Vec<_>>(), vec![b, a]);
    assert_eq!(c.current(BlockAddr(1)), Some(a));
    c.set_dirty(a, true, 0);
    c.touch(b);
    // Cold end: a (dirty, skipped), then d (clean scur).
    let (v, _) = c.victim(|_| false, |_| true);
    assert!(matches!(
        v,
        Victim::Free {
            relinquish: Some((BlockAddr(2), BufState::Scur))
        }
    ));
    assert!(c.try_get(d).is_none());
    let (v, _) = c.victim(|_| false, |_| true);
    assert!(matches!(v, Victim::Free { relinquish: None }));
    assert_eq!(c.buffers_of(BlockAddr(1)).collect::<Vec<_>>(), vec![a]);
    let (v, _) = c.victim(|_| false, |_| true);
    assert!(matches!(v, Victim::None));
    assert_eq!(c.used(), 1);
}

/// The change log a coherence checker reads: it starts on the first
/// take (which says it is incomplete), then names every block whose
/// current holding changed, and says so again when it overflowed.
#[test]
fn current_changes_name_every_change_of_holding() {
    let mut c = Cache::new(16, 10);
    let mut out = Vec::new();
    let a = c.insert(BlockAddr(1), BufState::Scur, img(1));
    assert!(
        !c.take_current_changes(&mut out),
        "the first take is incomplete"
    );
    assert!(out.is_empty());
    c.set_state(a, BufState::Xcur);
    let cr = c.insert(
        BlockAddr(2),
        BufState::Cr {
            lo: Scn(0),
            hi: Scn(5),
            private_to: None,
        },
        img(2),
    );
    c.set_state(
        cr,
        BufState::Cr {
            lo: Scn(0),
            hi: Scn(6),
            private_to: None,
        },
    );
    c.insert(BlockAddr(3), BufState::Scur, img(3));
    assert!(c.take_current_changes(&mut out));
    assert_eq!(
        out,
        vec![BlockAddr(1), BlockAddr(3)],
        "a CR copy changes no holding"
    );
    out.clear();
    c.remove(a);
    assert!(c.take_current_changes(&mut out));
    assert_eq!(out, vec![BlockAddr(1)]);
    out.clear();
    let b = c.current(BlockAddr(3)).expect("scur buffer of block 3");
    for _ in 0..=CURRENT_CHANGES_MAX / 2 {
        c.set_state(b, BufState::Xcur);
        c.set_state(b, BufState::Scur);
    }
    assert!(
        !c.take_current_changes(&mut out),
        "an overflowed log says so"
    );
    assert!(out.len() <= CURRENT_CHANGES_MAX);
    out.clear();
    assert!(c.take_current_changes(&mut out));
    assert!(out.is_empty());
}

/// The next victim of `c`, anyone's: the block of the current buffer it
/// freed (`None`: nothing freed) and how many buffers were inspected.
fn freed(c: &mut Cache) -> (Option<u32>, u32) {
    let (v, inspected) = c.victim(|_| false, |_| true);
    let blk = match v {
        Victim::Free {
            relinquish: Some((blk, _)),
        } => Some(blk.0),
        Victim::Free { relinquish: None } => panic!("a CR copy was freed: there is none"),
        Victim::None => None,
    };
    (blk, inspected)
}

/// A full cache whose cold end is dirty: the scan goes past the run of
/// dirty buffers it already walked, and still counts them.
#[test]
fn a_scan_counts_the_stuck_tail_it_skips() {
    let mut c = Cache::new(16, 40);
    let ids: Vec<BufId> = (0..12)
        .map(|a| c.insert(BlockAddr(a), BufState::Xcur, img(a)))
        .collect();
    // Coldest first: ids[0..10] dirty, ids[10] and ids[11] clean.
    for &id in &ids[..10] {
        c.set_dirty(id, true, 0);
    }
    assert_eq!(freed(&mut c), (Some(10), 11));
    assert_eq!(c.stuck_tail.len(), 10);
    // A buffer of the run written clean: found where it lies.
    c.set_clean(ids[4]);
    assert_eq!(freed(&mut c), (Some(4), 5));
    // The next scan walks the run again (4 before the gap, 5 after).
    assert_eq!(freed(&mut c), (Some(11), 10));
    // Nothing left but the dirty run: none, each buffer counted once.
    assert_eq!(freed(&mut c), (None, 9));
    // The coldest is used again: the run now starts at the next one.
    c.touch(ids[0]);
    c.set_clean(ids[0]);
    assert_eq!(freed(&mut c), (Some(0), 9));
}

/// Random changes to a full cache: every scan that starts past the
/// stuck tail picks the buffer a plain walk from the tail picks, after
/// inspecting as many.
#[test]
fn the_stuck_tail_agrees_with_a_plain_walk() {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let blocks = 64u32;
    let mut c = Cache::new(16, blocks);
    let mut pinned: Vec<BufId> = Vec::new();
    let (mut found, mut none, mut skipped) = (0, 0, 0);
    for step in 0..20_000 {
        let pick = |rng: &mut ChaCha8Rng, c: &Cache| -> Option<BufId> {
            let ids: Vec<BufId> = c.iter().map(|(id, _)| id).collect();
            let n = u32::try_from(ids.len()).ok()?;
            (n > 0).then(|| ids[(rng.next_u32() % n) as usize])
        };
        match rng.next_u32() % 9 {
            0 | 1 if c.used() < 40 => {
                let blk = BlockAddr(rng.next_u32() % blocks);
                let state = match rng.next_u32() % 8 {
                    0 | 1 if c.current(blk).is_none() => BufState::Xcur,
                    2 => BufState::Pi,
                    _ => BufState::Cr {
                        lo: Scn(0),
                        hi: Scn(9),
                        private_to: None,
                    },
                };
                c.insert(blk, state, img(blk.0));
            }
            2 => {
                if let Some(id) = pick(&mut rng, &c) {
                    c.touch(id);
                }
            }
            3 => {
                if let Some(id) = pick(&mut rng, &c) {
                    c.set_dirty(id, rng.next_u32() % 3 == 0, 0);
                }
            }
            4 => {
                if let Some(id) = pick(&mut rng, &c) {
                    c.pin_shared(id);
                    pinned.push(id);
                }
            }
            5 => {
                if let Some(id) = pinned.pop() {
                    c.unpin(id);
                }
            }
            6 => {
                if let Some(id) = pick(&mut rng, &c) {
                    c.set_leaving(id, rng.next_u32() % 2 == 0);
                }
            }
            7 => {
                // A past image made, or one (or any buffer) dropped.
                if let Some(id) = pick(&mut rng, &c)
                    && !c.get(id).pinned()
                {
                    if c.get(id).is_current() || rng.next_u32() % 2 == 0 {
                        c.remove(id);
                    } else {
                        c.set_state(id, BufState::Pi);
                    }
                }
            }
            _ => {
                let busy_block = BlockAddr(rng.next_u32() % blocks);
                let busy = |b: BlockAddr| b == busy_block;
                let odd = rng.next_u32() % 2;
                let prefer = |id: BufId| id % 2 == odd;
                let walked = c.walk_for_victim(&busy, &prefer);
                skipped += usize::from(c.stuck_tail.len() > 0);
                let scanned = c.scan_for_victim(&busy, &prefer);
                assert_eq!(scanned, walked, "step {step}");
                match scanned.0 {
                    Some(id) if !pinned.contains(&id) => {
                        c.replace(id);
                        found += 1;
                    }
                    Some(_) => unreachable!("a pinned buffer is never replaceable"),
                    None => none += 1,
                }
            }
        }
    }
    // Both outcomes were tried many times, and many scans started past
    // a stuck tail.
    assert!(
        found > 100 && none > 100 && skipped > 100,
        "found {found}, none {none}, scans past a stuck tail {skipped}"
    );
}

/// The checkpoint queue under random changes: its top is always the lowest
/// first-dirty RBA of the buffers there are, and it never holds more than
/// about twice as many entries as there are buffers.
#[test]
fn the_checkpoint_queue_tops_at_the_lowest_first_dirty_rba() {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut c = Cache::new(16, 64);
    let (mut some, mut none) = (0, 0);
    for step in 0..20_000 {
        let ids: Vec<BufId> = c.iter().map(|(id, _)| id).collect();
        let pick = (!ids.is_empty()).then(|| ids[rng.next_u32() as usize % ids.len()]);
        match (rng.next_u32() % 5, pick) {
            (0, _) | (_, None) if c.used() < 40 => {
                let blk = BlockAddr(rng.next_u32() % 64);
                c.insert(blk, BufState::Pi, img(blk.0));
            }
            (1, Some(id)) => {
                c.remove(id);
            }
            (2, Some(id)) => c.set_first_rba(id, None),
            (_, Some(id)) => c.set_first_rba(id, Some(u64::from(rng.next_u32() % 1000))),
            _ => {}
        }
        let scanned = c.iter().filter_map(|(_, b)| b.first_rba()).min();
        assert_eq!(c.first_dirty_rba(), scanned, "step {step}");
        assert!(c.first_dirty.len() <= 2 * c.slots.len() + 65, "step {step}");
        if scanned.is_some() {
            some += 1;
        } else {
            none += 1;
        }
    }
    assert!(
        some > 100 && none > 100,
        "with a checkpoint {some}, without {none}"
    );
}

fn cr(lo: Scn, hi: Scn) -> BufState {
    BufState::Cr {
        lo,
        hi,
        private_to: None,
    }
}

/// `limit_cr` makes room for one more CR copy: the newest copies stay, the
/// oldest unpinned ones beyond them go, and a pinned one stays for its
/// reader however old.
#[test]
fn limit_cr_drops_the_oldest_unpinned_copies_and_keeps_a_pinned_one() {
    let blk = BlockAddr(3);
    let mut c = Cache::new(16, 10);
    let copies: Vec<BufId> = (0..8)
        .map(|k| c.insert(blk, cr(Scn(k), Scn(k)), img(3)))
        .collect();
    c.pin_shared(copies[0]);
    c.limit_cr(blk);
    let kept: Vec<BufId> = c.buffers_of(blk).collect();
    // Newest first: the five newest, then the oldest, pinned.
    let mut want: Vec<BufId> = copies[3..].iter().rev().copied().collect();
    want.push(copies[0]);
    assert_eq!(kept, want);
    assert_eq!(kept.len() - 1, CR_PER_BLOCK_MAX - 1, "room for one more");
    assert_eq!(c.used(), CR_PER_BLOCK_MAX);
    // Unpinned, the oldest goes at the next limit.
    assert!(!c.unpin(copies[0]));
    c.limit_cr(blk);
    assert!(c.try_get(copies[0]).is_none());
    assert_eq!(c.buffers_of(blk).count(), CR_PER_BLOCK_MAX - 1);
}

/// A dirty current block that leaves twice keeps one past image here, with
/// the lower first-dirty RBA of the two (the checkpoint must not pass the
/// older one's changes, which are not on disk either).
#[test]
fn a_block_that_leaves_dirty_twice_keeps_one_past_image_at_the_older_rba() {
    let blk = BlockAddr(4);
    let mut c = Cache::new(16, 10);
    let first = c.insert(blk, BufState::Xcur, img(4));
    c.dirtied(first, 150, 10);
    c.set_first_rba(first, Some(100));
    let (_, kept) = c.give_up_current(first);
    assert!(kept, "a dirty block leaves a past image");
    assert_eq!(c.get(first).state(), BufState::Pi);
    // Back again, changed again, and gone again.
    let second = c.insert(blk, BufState::Xcur, img(4));
    c.dirtied(second, 300, 20);
    c.set_first_rba(second, Some(250));
    let (_, kept) = c.give_up_current(second);
    assert!(kept);
    let pis: Vec<BufId> = c
        .buffers_of(blk)
        .filter(|&id| c.get(id).state() == BufState::Pi)
        .collect();
    assert_eq!(pis, vec![second], "the newer past image replaces the older");
    assert_eq!(c.get(second).first_rba(), Some(100));
    assert_eq!(c.first_dirty_rba(), Some(100));
    // A clean current block leaves nothing behind.
    let third = c.insert(blk, BufState::Xcur, img(4));
    let (_, kept) = c.give_up_current(third);
    assert!(!kept);
    assert!(c.try_get(third).is_none());
    assert_eq!(c.current(blk), None);
}
