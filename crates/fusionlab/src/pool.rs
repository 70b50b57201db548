//! Independent simulator runs over the machine's cores: `chaos` and `sweep`
//! hand over their runs, each deterministic on its own, and get the results
//! back in the order given, so what they print does not depend on which
//! thread finished first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads to use for `runs` runs of about `run_bytes` each under a memory
/// budget of `budget_bytes`: every core, no more threads than runs, and no
/// more runs at once than the budget holds (at least one).
pub fn workers(jobs: Option<usize>, runs: usize, run_bytes: u64, budget_bytes: u64) -> usize {
    let by_memory = usize::try_from(budget_bytes / run_bytes.max(1)).unwrap_or(usize::MAX);
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .min(runs)
        .min(by_memory)
        .max(1)
}

/// `run(item)` for every item on `workers` threads; the results in the
/// items' order. A run that panics loses its thread's remaining work: its
/// slot is then empty and the whole call an error naming the item.
pub fn map_ordered<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    run: impl Fn(&T) -> R + Sync,
    name: impl Fn(&T) -> String,
) -> anyhow::Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers.max(1))
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            break;
                        };
                        let r = run(item);
                        if let Ok(mut all) = slots.lock() {
                            all[i] = Some(r);
                        }
                    }
                })
            })
            .collect();
        // Joined here, a thread's panic is its empty slots below, not a
        // panic of the whole scope.
        for t in threads {
            let _ = t.join();
        }
    });
    let slots = slots
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a run panicked while handing over its result"))?;
    slots
        .into_iter()
        .zip(items)
        .map(|(r, item)| {
            r.ok_or_else(|| anyhow::anyhow!("{} did not finish (its thread panicked)", name(item)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_items_order_whatever_the_threads() {
        let items: Vec<u64> = (0..200).collect();
        let out = map_ordered(&items, 4, |&i| i * i, |i| format!("item {i}")).expect("no panic");
        assert_eq!(out, items.iter().map(|i| i * i).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_run_is_an_error_naming_it() {
        let items: Vec<u64> = (0..8).collect();
        let r = map_ordered(
            &items,
            1,
            |&i| {
                assert!(i != 5, "boom");
                i
            },
            |i| format!("item {i}"),
        );
        let e = r.expect_err("item 5 panicked").to_string();
        assert!(e.contains("item 5") && e.contains("panicked"), "{e}");
    }

    #[test]
    fn workers_follow_cores_runs_and_memory() {
        assert_eq!(workers(Some(8), 3, 1, 100), 3);
        assert_eq!(workers(Some(8), 100, 40, 100), 2);
        assert_eq!(workers(Some(8), 100, 400, 100), 1);
        assert_eq!(workers(Some(2), 100, 1, 100), 2);
    }
}
