//! The block store over loopback (127.0.0.1 only): round trips, the token,
//! persistence across a restart, concurrent writers, errors a caller sees.

use std::time::{Duration, Instant};

use fusion_core::block::{Block, Body, Change, Row};
use fusion_core::config::{Catalog, IndexDef, IndexKind};
use fusion_core::layout::{Layout, table};
use fusion_core::msg::{Io, IoResult, RedoRecord};
use fusion_core::types::{BlockAddr, InstId, Rowid, Scn, Xid};
use fusion_store::{
    ClientErrorKind, Device, Disk, Durability, Geometry, LatencyModel, StoreClient, StoreConfig,
    StoreHandle, spawn,
};
use fusion_wire::pb;
use tokio::net::TcpListener;

const TOKEN: &str = "test-token";
const TIMEOUT: Duration = Duration::from_secs(10);

fn layout() -> Layout {
    let catalog = Catalog {
        sequences: Vec::new(),
        tables: vec![table("t", 2000, 50)],
        indexes: vec![IndexDef {
            name: "t_pk".into(),
            table: 0,
            entries_per_leaf: 100,
            entries_per_branch: 50,
            free_blocks_per_instance: 4,
            reverse: false,
            kind: IndexKind::BTree,
            local: false,
            includes_value: false,
            rows_per_piece: 1,
        }],
    };
    Layout::new(&catalog, 3, 128)
}

fn geometry(layout: &Layout) -> Geometry {
    Geometry {
        block_size: 8192,
        total_blocks: layout.total_blocks,
        instances: layout.instances,
    }
}

async fn start(config: StoreConfig) -> StoreHandle {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn(listener, config).unwrap()
}

async fn client(h: &StoreHandle) -> StoreClient {
    StoreClient::connect(h.addr().to_string(), TOKEN, TIMEOUT)
        .await
        .unwrap()
}

/// A store formatted and loaded with the layout's initial images.
async fn loaded(dir: &std::path::Path) -> (StoreHandle, StoreClient, Layout) {
    let h = start(StoreConfig::new(dir, TOKEN)).await;
    let c = client(&h).await;
    let l = layout();
    c.format(geometry(&l)).await.unwrap();
    c.load_images(&l.initial_blocks()).await.unwrap();
    (h, c, l)
}

fn changed(mut b: Block, val: i64, scn: u64) -> Block {
    if b.row(0).is_some() {
        let xid = Xid::new(InstId(0), val as u64 + 1);
        assert!(b.apply(&Change::UpdateRow { slot: 0, val }, xid, Scn(scn)));
    } else {
        b.scn = Scn(scn);
    }
    b
}

/// A change, a commit or (every fifth) a block written record.
fn redo(scn: u64) -> RedoRecord {
    let xid = Xid::new(InstId(2), scn);
    if scn.is_multiple_of(5) {
        RedoRecord::block_written(BlockAddr(3), Scn(scn))
    } else if scn.is_multiple_of(2) {
        RedoRecord::commit(Scn(scn), xid, 200)
    } else {
        let change = Change::InsertEntry {
            key: scn,
            rowid: Rowid {
                blk: BlockAddr(1),
                slot: 2,
            },
        };
        RedoRecord::change(Scn(scn), xid, BlockAddr(3), 200, change)
    }
}

#[tokio::test]
async fn read_write_flush_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (h, c, l) = loaded(dir.path()).await;
    let initial = l.initial_blocks();
    let info = c.info().await.unwrap();
    assert_eq!(info.geometry, geometry(&l));

    // Every initial image reads back as loaded.
    let addrs: Vec<BlockAddr> = initial.iter().map(|b| b.addr).collect();
    assert_eq!(c.read_blocks(InstId(0), &addrs).await.unwrap(), initial);

    // A change is written, and an older image never overwrites it.
    let t = l.tables[0].base;
    let newer = changed(initial[t as usize].clone(), 77, 50);
    assert_eq!(
        c.write_blocks(InstId(1), std::slice::from_ref(&newer))
            .await
            .unwrap(),
        vec![true]
    );
    let older = changed(initial[t as usize].clone(), 66, 40);
    assert_eq!(
        c.write_blocks(InstId(2), &[older]).await.unwrap(),
        vec![false]
    );
    assert_eq!(c.read_block(InstId(2), BlockAddr(t)).await.unwrap(), newer);

    // Redo: synced and unsynced appends, a flush, the thread read back.
    assert_eq!(
        c.append_redo(InstId(2), &[redo(1), redo(2)], 400, true)
            .await
            .unwrap(),
        400
    );
    assert_eq!(
        c.append_redo(InstId(2), &[redo(3), redo(5)], 200, false)
            .await
            .unwrap(),
        600
    );
    c.flush_redo(InstId(2)).await.unwrap();
    assert_eq!(
        c.read_redo(InstId(2)).await.unwrap(),
        // Change vectors and block written records come back as written.
        (vec![redo(1), redo(2), redo(3), redo(5)], 600)
    );
    assert_eq!(c.read_redo(InstId(0)).await.unwrap(), (vec![], 0));

    // The instance's Io requests, as the runtime performs them.
    let got = c
        .io(InstId(0), Io::ReadBlock { blk: BlockAddr(t) })
        .await
        .unwrap();
    assert_eq!(got, IoResult::Read(Box::new(newer)));
    let got = c
        .io(
            InstId(0),
            Io::WriteRedo {
                records: vec![redo(9)],
                bytes: 100,
                checkpoint: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(got, IoResult::Written);

    // A block past the datafile is an error naming it, not a panic.
    let e = c
        .read_block(InstId(0), BlockAddr(l.total_blocks))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e.kind,
            ClientErrorKind::Status {
                code: tonic::Code::OutOfRange,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("ReadBlocks"), "{e}");
    // An instance the store does not know.
    let e = c.read_redo(InstId(3)).await.unwrap_err();
    assert!(e.to_string().contains("instance 3"), "{e}");
    drop(c);
    h.shutdown(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn wrong_or_missing_token_is_unauthenticated() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(StoreConfig::new(dir.path(), TOKEN)).await;
    let bad = StoreClient::connect(h.addr().to_string(), "nope", TIMEOUT)
        .await
        .unwrap();
    let e = bad.info().await.unwrap_err();
    assert!(matches!(e.kind, ClientErrorKind::Unauthenticated(_)), "{e}");
    assert!(e.to_string().contains("Info"), "{e}");

    // A raw client that sends no token at all.
    let mut raw = pb::block_store_client::BlockStoreClient::connect(format!("http://{}", h.addr()))
        .await
        .unwrap();
    let status = raw
        .read_blocks(pb::ReadBlocksRequest {
            instance: 0,
            blks: vec![0],
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    assert!(status.message().contains("x-fusionlab-token"));

    // The right token gets past the check (to "not formatted").
    let good = client(&h).await;
    let e = good.info().await.unwrap_err();
    assert!(
        matches!(
            e.kind,
            ClientErrorKind::Status {
                code: tonic::Code::FailedPrecondition,
                ..
            }
        ),
        "{e}"
    );
}

#[tokio::test]
async fn acknowledged_writes_survive_a_restart() {
    survive_a_restart(Durability::Fsync).await;
}

/// Without `fsync` the kernel still holds every acknowledged write when
/// the store process is gone.
#[tokio::test]
async fn acknowledged_writes_survive_a_restart_without_fsync() {
    survive_a_restart(Durability::PageCache).await;
}

async fn survive_a_restart(durability: Durability) {
    let config = |dir: &std::path::Path| {
        let mut c = StoreConfig::new(dir, TOKEN);
        c.durability = durability;
        c
    };
    let dir = tempfile::tempdir().unwrap();
    let h = start(config(dir.path())).await;
    let c = client(&h).await;
    let l = layout();
    c.format(geometry(&l)).await.unwrap();
    c.load_images(&l.initial_blocks()).await.unwrap();
    let b = changed(
        l.initial_blocks()[l.tables[0].base as usize + 1].clone(),
        5,
        90,
    );
    c.write_blocks(InstId(0), std::slice::from_ref(&b))
        .await
        .unwrap();
    c.append_redo(InstId(1), &[redo(4)], 123, true)
        .await
        .unwrap();
    // Kill the store as abruptly as a task can be killed.
    drop(c);
    drop(h);

    let h = start(config(dir.path())).await;
    let c = client(&h).await;
    assert_eq!(c.info().await.unwrap().geometry, geometry(&l));
    assert_eq!(c.read_block(InstId(2), b.addr).await.unwrap(), b);
    assert_eq!(c.read_redo(InstId(1)).await.unwrap(), (vec![redo(4)], 123));
    // The SCN rule still holds after reopening (learned from the disk).
    let stale = changed(l.initial_blocks()[b.addr.idx()].clone(), 1, 10);
    assert_eq!(
        c.write_blocks(InstId(0), &[stale]).await.unwrap(),
        vec![false]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_of_different_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let (h, c, l) = loaded(dir.path()).await;
    let initial = l.initial_blocks();
    let writers = 6u32;
    let per = 15u32;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let c = c.clone();
        let blocks: Vec<Block> = (0..per)
            .map(|i| {
                let a = (w * per + i) as usize % initial.len();
                changed(initial[a].clone(), i64::from(w * 1000 + i), 1000)
            })
            .collect();
        tasks.push(tokio::spawn(async move {
            for b in &blocks {
                let inst = InstId((b.addr.0 % 3) as u8);
                assert_eq!(
                    c.write_blocks(inst, std::slice::from_ref(b)).await.unwrap(),
                    vec![true]
                );
            }
            blocks
        }));
    }
    let mut expect = Vec::new();
    for t in tasks {
        expect.extend(t.await.unwrap());
    }
    let addrs: Vec<BlockAddr> = expect.iter().map(|b| b.addr).collect();
    assert_eq!(c.read_blocks(InstId(0), &addrs).await.unwrap(), expect);
    drop(c);
    h.shutdown(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn an_image_larger_than_a_slot_goes_to_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(StoreConfig::new(dir.path(), TOKEN)).await;
    let c = client(&h).await;
    let g = Geometry {
        block_size: 512,
        total_blocks: 8,
        instances: 2,
    };
    c.format(g).await.unwrap();
    let rows = (0..200)
        .map(|k| {
            Some(Row {
                key: k,
                val: -(k as i64),
                lock: Xid::new(InstId(1), k + 1),
            })
        })
        .collect();
    let mut big = Block::new(BlockAddr(5), Body::Table { rows });
    big.scn = Scn(3);
    c.write_blocks(InstId(1), std::slice::from_ref(&big))
        .await
        .unwrap();
    assert_eq!(c.info().await.unwrap().overflow_writes, 1);
    assert_eq!(c.read_block(InstId(0), BlockAddr(5)).await.unwrap(), big);
    // A never-written block reads as unformatted.
    assert_eq!(
        c.read_block(InstId(0), BlockAddr(6)).await.unwrap(),
        Block::new(BlockAddr(6), Body::Unformatted)
    );
    drop(c);
    drop(h);
    // And from the files alone.
    let disk = Disk::open(dir.path()).unwrap();
    assert_eq!(disk.read_block(BlockAddr(5)).unwrap().1, big);
}

#[tokio::test]
async fn a_torn_redo_tail_is_dropped_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let g = Geometry {
        block_size: 8192,
        total_blocks: 4,
        instances: 3,
    };
    let disk = Disk::format(dir.path(), g).unwrap();
    disk.append_redo(0, &[redo(1)], 10, true).unwrap();
    drop(disk);
    // Half a frame, as a crash in the middle of an append leaves it.
    let path = dir.path().join("redo_thread1");
    let mut bytes = std::fs::read(&path).unwrap();
    let keep = bytes.len();
    bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3]);
    std::fs::write(&path, &bytes).unwrap();
    let disk = Disk::open(dir.path()).unwrap();
    assert_eq!(disk.read_redo(0).unwrap(), (vec![redo(1)], 10));
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, keep);
    disk.append_redo(0, &[redo(2)], 5, true).unwrap();
    assert_eq!(disk.read_redo(0).unwrap(), (vec![redo(1), redo(2)], 15));
}

#[tokio::test]
async fn refused_and_timeout_are_told_apart() {
    // A port nobody listens on (bound, then released).
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let e = StoreClient::connect(addr.to_string(), TOKEN, TIMEOUT)
        .await
        .unwrap_err();
    assert!(e.is_refused(), "{e}");
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
    assert!(e.to_string().contains("connect"), "{e}");

    // A store slower than the caller's deadline.
    let dir = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::new(dir.path(), TOKEN);
    config.latency = LatencyModel {
        read_latency: 2_000_000_000,
        ..LatencyModel::ZERO
    };
    let h = start(config).await;
    let c = client(&h).await;
    c.format(Geometry {
        block_size: 8192,
        total_blocks: 4,
        instances: 1,
    })
    .await
    .unwrap();
    let short = c.with_timeout(Duration::from_millis(100));
    let e = short.read_block(InstId(0), BlockAddr(1)).await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(e.to_string().contains("ReadBlocks"), "{e}");

    // A disk fault on one instance's data device slows only that instance.
    c.set_fault(InstId(0), Device::Data, 0, 0).await.unwrap();
    let t = Instant::now();
    short.read_block(InstId(0), BlockAddr(1)).await.unwrap();
    assert!(t.elapsed() < Duration::from_millis(100));
    c.clear_faults().await.unwrap();
    assert!(short.read_block(InstId(0), BlockAddr(1)).await.is_err());
    drop((c, short));
    h.shutdown(Duration::from_millis(100)).await.unwrap();
}

/// Guards against Nagle + delayed ACK (about 40 ms per block-sized answer)
/// on connections accepted through `serve_with_incoming`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_read_round_trip_is_fast_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let (h, c, l) = loaded(dir.path()).await;
    let blk = BlockAddr(l.tables[0].base);
    for _ in 0..20 {
        c.read_block(InstId(0), blk).await.unwrap();
    }
    let mut took: Vec<Duration> = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        c.read_block(InstId(0), blk).await.unwrap();
        took.push(t.elapsed());
    }
    took.sort();
    let p50 = took[took.len() / 2];
    let p99 = took[took.len() * 99 / 100];
    eprintln!("8 KiB block read through the store: p50 {p50:?}, p99 {p99:?}");
    // Generous for a shared 2-core machine; Nagle would make it ~40 ms.
    assert!(p50 < Duration::from_millis(20), "p50 {p50:?}");
    drop(c);
    h.shutdown(Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn a_torn_slot_is_reported_and_a_write_repairs_it() {
    let dir = tempfile::tempdir().unwrap();
    let g = Geometry {
        block_size: 8192,
        total_blocks: 4,
        instances: 1,
    };
    let disk = Disk::format(dir.path(), g).unwrap();
    let b = changed(
        Block::new(
            BlockAddr(2),
            Body::Table {
                rows: vec![Some(Row {
                    key: 1,
                    val: 1,
                    lock: Xid::NONE,
                })],
            },
        ),
        0,
        30,
    );
    disk.write_blocks(std::slice::from_ref(&b), false).unwrap();
    drop(disk);
    // Damage the image inside its slot, as a torn write would.
    let path = dir.path().join("datafile.dbf");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[2 * 8192 + 20] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();

    let disk = Disk::open(dir.path()).unwrap();
    let e = disk.read_block(BlockAddr(2)).unwrap_err();
    assert!(e.to_string().contains("block 2"), "{e}");
    assert!(e.to_string().contains("checksum"), "{e}");
    let older = changed(b.clone(), 5, 10);
    assert_eq!(
        disk.write_blocks(std::slice::from_ref(&older), false)
            .unwrap(),
        vec![true]
    );
    assert_eq!(disk.read_block(BlockAddr(2)).unwrap().1, older);
}

/// Ping answers who the store is and whether a run formatted it, and
/// needs the token like every other call.
#[tokio::test]
async fn ping_answers_with_the_token_only() {
    let dir = tempfile::tempdir().unwrap();
    let h = start(StoreConfig::new(dir.path(), TOKEN)).await;
    let c = client(&h).await;
    let p = c.ping().await.unwrap();
    assert_eq!(p.pid, std::process::id());
    assert!(!p.formatted);
    c.format(geometry(&layout())).await.unwrap();
    assert!(c.ping().await.unwrap().formatted);

    let bad = StoreClient::connect(h.addr().to_string(), "nope", TIMEOUT)
        .await
        .unwrap();
    let e = bad.ping().await.unwrap_err();
    assert!(matches!(e.kind, ClientErrorKind::Unauthenticated(_)), "{e}");
    assert!(e.to_string().contains("Ping"), "{e}");
}

/// Connections that never speak hold the store's connection slots, not its
/// memory: past `STORE_CONNECTIONS_MAX` new ones are closed at once, and
/// once those go the store serves again.
#[tokio::test]
async fn the_store_closes_connections_past_its_limit_and_serves_once_they_go() {
    use tokio::io::AsyncReadExt;

    let dir = tempfile::tempdir().unwrap();
    let h = start(StoreConfig::new(dir.path(), TOKEN)).await;
    let mut idle = Vec::new();
    for _ in 0..fusion_store::STORE_CONNECTIONS_MAX {
        idle.push(tokio::net::TcpStream::connect(h.addr()).await.unwrap());
    }
    // Taken after all the idle ones (the listener's queue is in order):
    // closed at once, unanswered.
    let mut extra = tokio::net::TcpStream::connect(h.addr()).await.unwrap();
    let mut b = [0u8; 1];
    let read = tokio::time::timeout(TIMEOUT, extra.read(&mut b))
        .await
        .expect("closed at once, not kept");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");

    drop(idle);
    // The store notices the idle ones closing on its own time.
    let deadline = Instant::now() + TIMEOUT;
    let pinged = loop {
        let answer = match StoreClient::connect(h.addr().to_string(), TOKEN, TIMEOUT).await {
            Ok(c) => c.ping().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if answer.is_ok() || Instant::now() > deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(pinged.is_ok(), "{pinged:?}");
}

/// A write of an evicted instance that passed the fence check but waited
/// for its I/O slot must not land once `Fence` has returned: the survivors
/// read the dead instance's blocks and redo then. Ten writes queue behind
/// 10 IOPS; the fence comes while most of them wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_write_of_a_fenced_instance_lands_after_the_fence() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::new(dir.path(), TOKEN);
    config.latency = LatencyModel {
        iops: 10,
        ..LatencyModel::ZERO
    };
    let h = start(config).await;
    let c = client(&h).await;
    let l = layout();
    c.format(geometry(&l)).await.unwrap();
    c.load_images(&l.initial_blocks()).await.unwrap();
    let victim = InstId(2);
    let blk = BlockAddr(3);
    let base = l.initial_blocks()[3].clone();
    let mut tasks = Vec::new();
    for i in 0..10u64 {
        let c = c.clone();
        let b = changed(base.clone(), i as i64 + 1, 100 + i);
        tasks.push(tokio::spawn(async move {
            c.write_blocks(victim, std::slice::from_ref(&b)).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    c.fence(InstId(0), victim).await.unwrap();
    let at_fence = c.read_block(InstId(0), blk).await.unwrap();
    let mut refused = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => {}
            Err(e) if e.is_fenced() => refused += 1,
            Err(e) => panic!("a write failed otherwise: {e}"),
        }
    }
    let later = c.read_block(InstId(0), blk).await.unwrap();
    assert_eq!(
        later.scn, at_fence.scn,
        "a write of the fenced instance landed after the fence returned"
    );
    assert!(
        refused > 0,
        "every write landed before the fence: the test lost its premise"
    );
    drop(c);
    h.shutdown(Duration::from_secs(1)).await.unwrap();
}
