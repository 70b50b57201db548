//! The store's files: one datafile of fixed-size block slots, an append-only
//! overflow file for images larger than a slot, and one redo thread file per
//! instance. Synchronous (pread/pwrite and `sync_data`); the server calls it
//! from blocking threads.
//!
//! ```text
//! <dir>/geometry          block_size, total_blocks, instances (text)
//! <dir>/datafile.dbf      total_blocks slots of block_size bytes
//! <dir>/overflow.dat      images that do not fit a slot, never overwritten
//! <dir>/redo_thread<N>    N = instance number (1-based, as Oracle's threads)
//! ```
//!
//! A slot is all zeros (never written: an unformatted block), a padded block
//! image, or a pointer into overflow.dat. Undo travels inside blocks, so an
//! image may outgrow `db_block_size`; the overflow file takes it whole, and
//! because it is only appended to, a crash between writing the image and
//! the slot pointing at it leaves the old slot valid. Its space is not
//! reclaimed (an emulator's run is short).
//!
//! Redo frames are `len u32 LE, crc u32 LE, RedoBatch (protobuf)`; reading
//! stops at the first torn or corrupt frame, which opening truncates away.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use fusion_core::block::{Block, Body};
use fusion_core::msg::RedoRecord;
use fusion_core::types::{BlockAddr, Scn};
use fusion_wire::{Codec, crc32, decode_block, encode_block_into, is_blank, pb};
use prost::Message;

use crate::error::StoreError;

const GEOMETRY: &str = "geometry";
const DATAFILE: &str = "datafile.dbf";
const OVERFLOW: &str = "overflow.dat";
const OVERFLOW_MAGIC: &[u8; 4] = b"FLO1";
/// Smallest slot that can hold an overflow pointer (and a block header).
pub const BLOCK_SIZE_MIN: u32 = 64;
/// Largest slot: no real `db_block_size` is larger (Oracle's maximum is 32 KiB).
pub const BLOCK_SIZE_MAX: u32 = 1 << 20;
/// Most blocks a store holds (the SCN cache is 8 bytes a block).
pub const TOTAL_BLOCKS_MAX: u32 = 1 << 24;
/// Per-block locks are striped: writes of different blocks rarely share one.
const STRIPES: usize = 256;
/// Not yet known: read from the slot on first need.
const SCN_UNKNOWN: u64 = u64::MAX;

/// The shape of a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub block_size: u32,
    pub total_blocks: u32,
    pub instances: u8,
}

impl Geometry {
    pub fn check(&self) -> Result<(), StoreError> {
        if !(BLOCK_SIZE_MIN..=BLOCK_SIZE_MAX).contains(&self.block_size) {
            return Err(StoreError::invalid(format!(
                "block_size {} is outside {BLOCK_SIZE_MIN}..={BLOCK_SIZE_MAX}",
                self.block_size
            )));
        }
        if self.total_blocks == 0 || self.total_blocks > TOTAL_BLOCKS_MAX {
            return Err(StoreError::invalid(format!(
                "total_blocks {} is outside 1..={TOTAL_BLOCKS_MAX}",
                self.total_blocks
            )));
        }
        if self.instances == 0 || u32::from(self.instances) > fusion_wire::INSTANCES_MAX {
            return Err(StoreError::invalid(format!(
                "instances {} is outside 1..={}",
                self.instances,
                fusion_wire::INSTANCES_MAX
            )));
        }
        Ok(())
    }

    fn to_text(self) -> String {
        format!(
            "fusionlab-store 1\nblock_size {}\ntotal_blocks {}\ninstances {}\n",
            self.block_size, self.total_blocks, self.instances
        )
    }

    fn parse(text: &str, path: &Path) -> Result<Geometry, StoreError> {
        let bad = |what: &str| StoreError::Corrupt {
            path: path.to_path_buf(),
            what: what.to_string(),
        };
        let mut lines = text.lines();
        if lines.next() != Some("fusionlab-store 1") {
            return Err(bad("unknown geometry header"));
        }
        let mut field = |name: &str| -> Result<u64, StoreError> {
            let line = lines.next().ok_or_else(|| bad(&format!("no {name}")))?;
            line.strip_prefix(name)
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| bad(&format!("bad {name} line {line:?}")))
        };
        let block_size = field("block_size")?;
        let total_blocks = field("total_blocks")?;
        let instances = field("instances")?;
        let g = Geometry {
            block_size: u32::try_from(block_size).map_err(|_| bad("block_size"))?,
            total_blocks: u32::try_from(total_blocks).map_err(|_| bad("total_blocks"))?,
            instances: u8::try_from(instances).map_err(|_| bad("instances"))?,
        };
        g.check().map_err(|e| bad(&e.to_string()))?;
        Ok(g)
    }
}

impl From<Geometry> for pb::Geometry {
    fn from(g: Geometry) -> pb::Geometry {
        pb::Geometry {
            block_size: g.block_size,
            total_blocks: g.total_blocks,
            instances: u32::from(g.instances),
        }
    }
}

impl TryFrom<pb::Geometry> for Geometry {
    type Error = StoreError;
    fn try_from(g: pb::Geometry) -> Result<Geometry, StoreError> {
        let instances = u8::try_from(g.instances).map_err(|_| {
            StoreError::invalid(format!("Geometry.instances {} out of range", g.instances))
        })?;
        let g = Geometry {
            block_size: g.block_size,
            total_blocks: g.total_blocks,
            instances,
        };
        g.check()?;
        Ok(g)
    }
}

struct RedoThread {
    file: File,
    path: PathBuf,
    /// Where the next frame goes (the end of the valid frames).
    end: u64,
    /// Redo bytes (the model's sizes) written so far.
    bytes: u64,
}

/// The files of one formatted store.
pub struct Disk {
    dir: PathBuf,
    geometry: Geometry,
    codec: Codec,
    datafile: File,
    overflow: File,
    /// Next free offset in the overflow file.
    overflow_end: AtomicU64,
    overflow_writes: AtomicU64,
    /// SCN of each block's image on disk, learned lazily.
    scns: Vec<AtomicU64>,
    stripes: Vec<Mutex<()>>,
    redo: Vec<Mutex<RedoThread>>,
    /// When a write is acknowledged ([`Durability`]).
    durability: Durability,
}

/// When the store acknowledges a datafile or redo write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// After `fsync`: it survives the store's host crashing.
    #[default]
    Fsync,
    /// Once the kernel has it (`pwrite` returned): it survives any process
    /// being killed, the store's own included, but not its host crashing.
    /// For a cluster whose processes all run on one host, where a crash of
    /// the host ends the run anyway: a busy host's `fsync` then no longer
    /// adds milliseconds the scenario's storage does not have.
    PageCache,
}

fn io_err<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock left nothing half-done in memory that a
    // later call relies on (the files are the truth), so go on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir, "sync directory"))
}

fn open_rw(path: &Path, truncate: bool) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .open(path)
        .map_err(io_err(path, "open"))
}

impl Disk {
    /// Create (or recreate, erasing it) a store in `dir`.
    pub fn format(dir: &Path, geometry: Geometry) -> Result<Disk, StoreError> {
        geometry.check()?;
        std::fs::create_dir_all(dir).map_err(io_err(dir, "create directory"))?;
        // Without a geometry file the directory is not a store: remove it
        // first so a crash in the middle never leaves old files looking valid.
        let gpath = dir.join(GEOMETRY);
        match std::fs::remove_file(&gpath) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&gpath, "remove")(e)),
        }
        sync_dir(dir)?;
        let dpath = dir.join(DATAFILE);
        let data = open_rw(&dpath, true)?;
        let size = u64::from(geometry.block_size) * u64::from(geometry.total_blocks);
        // A sparse file of zeros: every slot reads as never written.
        data.set_len(size).map_err(io_err(&dpath, "size"))?;
        data.sync_all().map_err(io_err(&dpath, "sync"))?;
        let opath = dir.join(OVERFLOW);
        let over = open_rw(&opath, true)?;
        over.sync_all().map_err(io_err(&opath, "sync"))?;
        for n in 1..=geometry.instances {
            let rpath = redo_path(dir, n);
            let f = open_rw(&rpath, true)?;
            f.sync_all().map_err(io_err(&rpath, "sync"))?;
        }
        let tmp = dir.join("geometry.tmp");
        std::fs::write(&tmp, geometry.to_text()).map_err(io_err(&tmp, "write"))?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(&tmp, "sync"))?;
        std::fs::rename(&tmp, &gpath).map_err(io_err(&gpath, "rename"))?;
        sync_dir(dir)?;
        Disk::open(dir)
    }

    /// Open the store in `dir`; `Ok(None)` when it was never formatted.
    pub fn open_existing(dir: &Path) -> Result<Option<Disk>, StoreError> {
        if dir.join(GEOMETRY).exists() {
            Disk::open(dir).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Open a formatted store.
    pub fn open(dir: &Path) -> Result<Disk, StoreError> {
        let gpath = dir.join(GEOMETRY);
        let text = std::fs::read_to_string(&gpath).map_err(io_err(&gpath, "read"))?;
        let geometry = Geometry::parse(&text, &gpath)?;
        let dpath = dir.join(DATAFILE);
        let datafile = open_rw(&dpath, false)?;
        let want = u64::from(geometry.block_size) * u64::from(geometry.total_blocks);
        let have = datafile.metadata().map_err(io_err(&dpath, "stat"))?.len();
        if have < want {
            return Err(StoreError::Corrupt {
                path: dpath,
                what: format!("{have} bytes, the geometry needs {want}"),
            });
        }
        let opath = dir.join(OVERFLOW);
        let overflow = open_rw(&opath, false)?;
        let overflow_end = overflow.metadata().map_err(io_err(&opath, "stat"))?.len();
        let mut redo = Vec::new();
        for n in 1..=geometry.instances {
            redo.push(Mutex::new(open_redo(dir, n)?));
        }
        Ok(Disk {
            dir: dir.to_path_buf(),
            geometry,
            codec: Codec::new(
                geometry.block_size,
                geometry.instances,
                geometry.total_blocks,
            ),
            datafile,
            overflow,
            overflow_end: AtomicU64::new(overflow_end),
            overflow_writes: AtomicU64::new(0),
            scns: (0..geometry.total_blocks)
                .map(|_| AtomicU64::new(SCN_UNKNOWN))
                .collect(),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            redo,
            durability: Durability::Fsync,
        })
    }

    /// The same store, acknowledging writes as `durability` says.
    pub fn with_durability(mut self, durability: Durability) -> Disk {
        self.durability = durability;
        self
    }

    fn fsync(&self) -> bool {
        self.durability == Durability::Fsync
    }

    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The codec of this store's cluster (block size and limits).
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// Writes since opening whose image went to the overflow file.
    pub fn overflow_writes(&self) -> u64 {
        self.overflow_writes.load(Ordering::Relaxed)
    }

    fn check_addr(&self, blk: BlockAddr) -> Result<(), StoreError> {
        if blk.0 < self.geometry.total_blocks {
            Ok(())
        } else {
            Err(StoreError::OutOfRange(format!(
                "block address {} is beyond the datafile ({} blocks)",
                blk.0, self.geometry.total_blocks
            )))
        }
    }

    /// Check an instance id (0-based) against the geometry.
    pub fn check_instance(&self, inst: u32) -> Result<usize, StoreError> {
        if inst < u32::from(self.geometry.instances) {
            Ok(inst as usize)
        } else {
            Err(StoreError::invalid(format!(
                "instance {inst} is outside this store's {} instances",
                self.geometry.instances
            )))
        }
    }

    fn slot_offset(&self, blk: BlockAddr) -> u64 {
        u64::from(blk.0) * u64::from(self.geometry.block_size)
    }

    /// The image of `blk` as bytes (a whole slot, padded; an overflow image
    /// unpadded), and its decoded block.
    pub fn read_block(&self, blk: BlockAddr) -> Result<(Vec<u8>, Block), StoreError> {
        self.check_addr(blk)?;
        // Never read a slot while it is being rewritten (a torn image).
        let _guard = lock(&self.stripes[blk.idx() % STRIPES]);
        self.read_slot(blk)
    }

    fn read_slot(&self, blk: BlockAddr) -> Result<(Vec<u8>, Block), StoreError> {
        let path = self.dir.join(DATAFILE);
        let mut slot = vec![0u8; self.geometry.block_size as usize];
        self.datafile
            .read_exact_at(&mut slot, self.slot_offset(blk))
            .map_err(io_err(&path, "read block"))?;
        if is_blank(&slot) {
            let b = Block::new(blk, Body::Unformatted);
            slot.clear();
            encode_block_into(&b, self.geometry.block_size, &mut slot);
            return Ok((slot, b));
        }
        let bytes = if &slot[..4] == OVERFLOW_MAGIC {
            self.read_overflow(blk, &slot)?
        } else {
            slot
        };
        let block = decode_block(&bytes).map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            what: format!("block {}: {e}", blk.0),
        })?;
        if block.addr != blk {
            return Err(StoreError::Corrupt {
                path,
                what: format!("slot {} holds block {}", blk.0, block.addr.0),
            });
        }
        Ok((bytes, block))
    }

    fn read_overflow(&self, blk: BlockAddr, slot: &[u8]) -> Result<Vec<u8>, StoreError> {
        let path = self.dir.join(OVERFLOW);
        let corrupt = |what: String| StoreError::Corrupt {
            path: path.clone(),
            what: format!("block {}: {what}", blk.0),
        };
        let field = |r: std::ops::Range<usize>| slot.get(r).unwrap_or(&[]);
        let offset = u64::from_le_bytes(
            field(4..12)
                .try_into()
                .map_err(|_| corrupt("short pointer".into()))?,
        );
        let len = u32::from_le_bytes(
            field(12..16)
                .try_into()
                .map_err(|_| corrupt("short pointer".into()))?,
        );
        let crc = u32::from_le_bytes(
            field(16..20)
                .try_into()
                .map_err(|_| corrupt("short pointer".into()))?,
        );
        let end = self.overflow_end.load(Ordering::Acquire);
        if offset.checked_add(u64::from(len)).is_none_or(|e| e > end) {
            return Err(corrupt(format!(
                "pointer {offset}+{len} beyond the overflow file ({end} bytes)"
            )));
        }
        let mut bytes = vec![0u8; len as usize];
        self.overflow
            .read_exact_at(&mut bytes, offset)
            .map_err(io_err(&path, "read overflow"))?;
        if crc32(&bytes) != crc {
            return Err(corrupt("overflow image checksum mismatch".into()));
        }
        Ok(bytes)
    }

    fn stored_scn(&self, blk: BlockAddr) -> Result<u64, StoreError> {
        let cell = &self.scns[blk.idx()];
        let scn = cell.load(Ordering::Acquire);
        if scn != SCN_UNKNOWN {
            return Ok(scn);
        }
        let scn = match self.read_slot(blk) {
            Ok((_, b)) => b.scn,
            // A torn slot (the store died mid-write) must not block every
            // later write of the block: any image replaces it.
            Err(StoreError::Corrupt { .. }) => Scn(0),
            Err(e) => return Err(e),
        };
        cell.store(scn.0, Ordering::Release);
        Ok(scn.0)
    }

    /// Write images (decoded and checked by the caller) and make them
    /// durable. Unless `initial`, an image older than the one on disk is
    /// skipped, as the simulator's store does for a write finishing late.
    /// Returns, per block, whether it was written.
    pub fn write_blocks(&self, blocks: &[Block], initial: bool) -> Result<Vec<bool>, StoreError> {
        for b in blocks {
            self.check_addr(b.addr)?;
        }
        let dpath = self.dir.join(DATAFILE);
        let opath = self.dir.join(OVERFLOW);
        let size = self.geometry.block_size as usize;
        let mut applied = Vec::with_capacity(blocks.len());
        let mut buf = Vec::with_capacity(size);
        for b in blocks {
            let _guard = lock(&self.stripes[b.addr.idx() % STRIPES]);
            if !initial && b.scn < Scn(self.stored_scn(b.addr)?) {
                applied.push(false);
                continue;
            }
            buf.clear();
            if !encode_block_into(b, self.geometry.block_size, &mut buf) {
                // Too large for a slot: the image goes to the overflow file,
                // made durable before the slot points at it. Its record
                // keeps the length in 32 bits.
                let len32 = u32::try_from(buf.len()).map_err(|_| {
                    StoreError::invalid(format!(
                        "block {} encodes to {} bytes, at most 4 GiB",
                        b.addr,
                        buf.len()
                    ))
                })?;
                let len = u64::from(len32);
                let at = self.overflow_end.fetch_add(len, Ordering::AcqRel);
                self.overflow
                    .write_all_at(&buf, at)
                    .map_err(io_err(&opath, "write overflow"))?;
                if self.fsync() {
                    self.overflow
                        .sync_data()
                        .map_err(io_err(&opath, "sync overflow"))?;
                }
                let crc = crc32(&buf);
                buf.clear();
                buf.extend_from_slice(OVERFLOW_MAGIC);
                buf.extend_from_slice(&at.to_le_bytes());
                buf.extend_from_slice(&len32.to_le_bytes());
                buf.extend_from_slice(&crc.to_le_bytes());
                buf.resize(size, 0);
                self.overflow_writes.fetch_add(1, Ordering::Relaxed);
            }
            self.datafile
                .write_all_at(&buf, self.slot_offset(b.addr))
                .map_err(io_err(&dpath, "write block"))?;
            self.scns[b.addr.idx()].store(b.scn.0, Ordering::Release);
            applied.push(true);
        }
        if self.fsync() && applied.iter().any(|&a| a) {
            self.datafile
                .sync_data()
                .map_err(io_err(&dpath, "sync datafile"))?;
        }
        Ok(applied)
    }

    fn thread(&self, inst: usize) -> Result<&Mutex<RedoThread>, StoreError> {
        self.redo
            .get(inst)
            .ok_or_else(|| StoreError::invalid(format!("no redo thread for instance {inst}")))
    }

    /// Append a batch to the redo thread of instance `inst` (0-based);
    /// durable before returning when `sync`. Returns the thread's redo bytes.
    pub fn append_redo(
        &self,
        inst: usize,
        records: &[RedoRecord],
        bytes: u64,
        sync: bool,
    ) -> Result<u64, StoreError> {
        let batch = pb::RedoBatch {
            records: records.iter().map(|r| self.codec.encode_redo(r)).collect(),
            bytes,
        };
        // Refuse now what reading the thread back would refuse.
        for r in &batch.records {
            self.codec
                .decode_redo(r.clone())
                .map_err(|e| StoreError::invalid(e.to_string()))?;
        }
        let payload = batch.encode_to_vec();
        let len = u32::try_from(payload.len())
            .map_err(|_| StoreError::invalid("redo batch larger than 4 GiB".to_string()))?;
        let mut frame = Vec::with_capacity(8 + payload.len());
        frame.extend_from_slice(&len.to_le_bytes());
        frame.extend_from_slice(&crc32(&payload).to_le_bytes());
        frame.extend_from_slice(&payload);
        let mut t = lock(self.thread(inst)?);
        t.file
            .write_all_at(&frame, t.end)
            .map_err(io_err(&t.path, "append redo"))?;
        if sync && self.fsync() {
            t.file.sync_data().map_err(io_err(&t.path, "sync redo"))?;
        }
        t.end += frame.len() as u64;
        t.bytes += bytes;
        Ok(t.bytes)
    }

    /// Make everything appended to the thread durable.
    pub fn flush_redo(&self, inst: usize) -> Result<(), StoreError> {
        let t = lock(self.thread(inst)?);
        if !self.fsync() {
            return Ok(());
        }
        t.file.sync_data().map_err(io_err(&t.path, "sync redo"))
    }

    /// Every record of the thread, and its redo bytes.
    pub fn read_redo(&self, inst: usize) -> Result<(Vec<RedoRecord>, u64), StoreError> {
        let t = lock(self.thread(inst)?);
        let (batches, _) = scan_redo(&t.file, &t.path)?;
        let mut records = Vec::new();
        for b in batches {
            for r in b.records {
                records.push(self.codec.decode_redo(r).map_err(|e| StoreError::Corrupt {
                    path: t.path.clone(),
                    what: e.to_string(),
                })?);
            }
        }
        Ok((records, t.bytes))
    }
}

fn redo_path(dir: &Path, number: u8) -> PathBuf {
    dir.join(format!("redo_thread{number}"))
}

fn open_redo(dir: &Path, number: u8) -> Result<RedoThread, StoreError> {
    let path = redo_path(dir, number);
    let file = open_rw(&path, false)?;
    let (batches, end) = scan_redo(&file, &path)?;
    // Drop a torn tail (a crash mid-append) so new frames follow valid ones.
    let len = file.metadata().map_err(io_err(&path, "stat"))?.len();
    if len > end {
        file.set_len(end)
            .map_err(io_err(&path, "truncate torn tail"))?;
        file.sync_all().map_err(io_err(&path, "sync"))?;
    }
    let bytes = batches.iter().map(|b| b.bytes).sum();
    Ok(RedoThread {
        file,
        path,
        end,
        bytes,
    })
}

/// The valid frames of a redo file and where they end.
fn scan_redo(file: &File, path: &Path) -> Result<(Vec<pb::RedoBatch>, u64), StoreError> {
    let len = file.metadata().map_err(io_err(path, "stat"))?.len();
    let mut all = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut all, 0)
        .map_err(io_err(path, "read redo"))?;
    let mut pos = 0usize;
    let mut out = Vec::new();
    while let Some(head) = all.get(pos..pos + 8) {
        let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let Some(payload) = all.get(pos + 8..pos + 8 + n) else {
            break;
        };
        if crc32(payload) != crc {
            break;
        }
        let Ok(batch) = pb::RedoBatch::decode(payload) else {
            break;
        };
        out.push(batch);
        pos += 8 + n;
    }
    Ok((out, pos as u64))
}
