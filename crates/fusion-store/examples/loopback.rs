//! Start a block store on 127.0.0.1 (an ephemeral port, a temporary data
//! directory, no modeled latency) and time its calls from one client: what
//! the store itself costs under a live cluster's modeled latencies.
//!
//! `cargo run -p fusion-store --example loopback [-- CALLS]`

use std::time::{Duration, Instant};

use fusion_core::block::{Block, Body, Change, Row};
use fusion_core::msg::RedoRecord;
use fusion_core::types::{BlockAddr, InstId, Scn, Xid};
use fusion_store::{Geometry, StoreClient, StoreConfig, spawn};
use tokio::net::TcpListener;

fn table_block(addr: u32, scn: u64) -> Block {
    let rows = (0..100)
        .map(|k| {
            Some(Row {
                key: u64::from(addr) * 100 + k,
                val: k as i64,
                lock: Xid::NONE,
            })
        })
        .collect();
    let mut b = Block::new(BlockAddr(addr), Body::Table { rows });
    b.scn = Scn(scn);
    b
}

fn report(what: &str, mut took: Vec<Duration>) {
    took.sort();
    let at = |q: usize| took[(took.len() * q / 100).min(took.len() - 1)];
    println!(
        "{what:<28} n={:<5} p50 {:>9.1?}  p90 {:>9.1?}  p99 {:>9.1?}",
        took.len(),
        at(50),
        at(90),
        at(99)
    );
}

async fn time<F, Fut>(n: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        f(i).await;
        took.push(t.elapsed());
    }
    took
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1000)
        .clamp(10, 100_000);
    let dir = tempfile::tempdir()?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let store = spawn(listener, StoreConfig::new(dir.path(), "example"))?;
    let c =
        StoreClient::connect(store.addr().to_string(), "example", Duration::from_secs(5)).await?;
    let blocks = 64u32;
    c.format(Geometry {
        block_size: 8192,
        total_blocks: blocks,
        instances: 2,
    })
    .await?;
    let images: Vec<Block> = (0..blocks).map(|a| table_block(a, 1)).collect();
    c.load_images(&images).await?;
    println!(
        "block store on {} ({calls} calls each, one client, data in {})",
        store.addr(),
        dir.path().display()
    );

    for i in 0..100 {
        c.read_block(InstId(0), BlockAddr(i % blocks)).await?;
    }
    let took = time(calls, |i| {
        let c = c.clone();
        async move {
            let b = c
                .read_block(InstId(0), BlockAddr(i as u32 % blocks))
                .await
                .expect("read");
            assert_eq!(b.addr.0, i as u32 % blocks);
        }
    })
    .await;
    report("ReadBlocks (1 x 8 KiB)", took);

    let took = time(calls, |i| {
        let c = c.clone();
        let b = table_block(i as u32 % blocks, 2 + i as u64);
        async move {
            c.write_blocks(InstId(1), &[b]).await.expect("write");
        }
    })
    .await;
    report("WriteBlocks (1, fsync)", took);

    let rec = RedoRecord::change(
        Scn(1),
        Xid::new(InstId(1), 1),
        BlockAddr(1),
        200,
        Change::UpdateRow { slot: 0, val: 1 },
    );
    let recs = vec![rec; 4];
    let took = time(calls, |_| {
        let c = c.clone();
        let recs = recs.clone();
        async move {
            c.append_redo(InstId(1), &recs, 800, true)
                .await
                .expect("redo");
        }
    })
    .await;
    report("AppendRedo (4 recs, fsync)", took);
    let took = time(calls, |_| {
        let c = c.clone();
        let recs = recs.clone();
        async move {
            c.append_redo(InstId(0), &recs, 800, false)
                .await
                .expect("redo");
        }
    })
    .await;
    report("AppendRedo (4 recs, no sync)", took);

    drop(c);
    store.shutdown(Duration::from_secs(1)).await?;
    Ok(())
}
