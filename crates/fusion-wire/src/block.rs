//! The block encoding: a compact, versioned binary image of
//! `fusion_core::block::Block`, as the interconnect ships it and the store
//! keeps it in a datafile slot.
//!
//! ```text
//! 0  magic "FLB"        3 bytes
//! 3  format version     1 byte  (BLOCK_FORMAT_VERSION)
//! 4  payload length     u32 LE
//! 8  CRC-32 of payload  u32 LE
//! 12 payload            addr u32 LE, then LEB128 varints (zigzag for i64)
//! .. zeros              up to db_block_size
//! ```
//!
//! Padding makes a shipped block cost `db_block_size` bytes on the wire, as
//! the model (`Msg::wire_bytes`) and Oracle assume. An image may not fit:
//! undo travels inside the block (see fusion-core's block.rs), up to
//! `UNDO_RECORDS_MAX` records and whole bodies for index splits, where Oracle would
//! keep it in separate undo blocks. Such an image is sent unpadded rather than
//! refused, since refusing would break the protocol for a cost the model
//! already accepts; [`oversize_blocks`] counts them so a run can say how often
//! it happened.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fusion_core::block::{Block, Body, Itl, LeafEntry, Piece, Row, UndoLog, UndoOp, UndoRec};
use fusion_core::types::{BlockAddr, Rowid, Scn, Xid};
use thiserror::Error;

use crate::crc::crc32;

/// Version byte written after the magic; decoding refuses any other.
/// 2: leaf entries carry a value; bitmap leaves and their undo.
pub const BLOCK_FORMAT_VERSION: u8 = 2;
/// Bytes before the payload: magic, version, length, checksum.
pub const BLOCK_HEADER_LEN: usize = 12;
const MAGIC: &[u8; 3] = b"FLB";

static OVERSIZE: AtomicU64 = AtomicU64::new(0);

/// Blocks encoded by this process whose image did not fit the block size
/// they were padded to (sent unpadded instead).
pub fn oversize_blocks() -> u64 {
    OVERSIZE.load(Ordering::Relaxed)
}

/// What is wrong with a block image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockProblem {
    Truncated {
        need: usize,
        have: usize,
    },
    BadMagic,
    UnsupportedVersion(u8),
    Checksum {
        stored: u32,
        computed: u32,
    },
    BadTag(u8),
    OutOfRange(u64),
    VarintTooLong,
    /// Bytes left inside the payload after the block ended.
    TrailingBytes(usize),
    /// Non-zero bytes after the payload, where padding must be zeros.
    NonZeroPadding,
}

impl fmt::Display for BlockProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockProblem::Truncated { need, have } => {
                write!(f, "truncated: needs {need} more bytes, {have} left")
            }
            BlockProblem::BadMagic => write!(f, "not a block image (bad magic)"),
            BlockProblem::UnsupportedVersion(v) => write!(
                f,
                "unsupported format version {v} (this build reads {BLOCK_FORMAT_VERSION})"
            ),
            BlockProblem::Checksum { stored, computed } => write!(
                f,
                "checksum mismatch: stored {stored:08x}, computed {computed:08x}"
            ),
            BlockProblem::BadTag(t) => write!(f, "unknown tag {t}"),
            BlockProblem::OutOfRange(v) => write!(f, "value {v} out of range"),
            BlockProblem::VarintTooLong => write!(f, "varint longer than 64 bits"),
            BlockProblem::TrailingBytes(n) => write!(f, "{n} bytes after the block's end"),
            BlockProblem::NonZeroPadding => write!(f, "padding is not zeros"),
        }
    }
}

/// A block image that cannot be decoded; `field` says where decoding stopped.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("block field `{field}`: {problem}")]
pub struct BlockError {
    pub field: &'static str,
    pub problem: BlockProblem,
}

fn err(field: &'static str, problem: BlockProblem) -> BlockError {
    BlockError { field, problem }
}

/// Encode `block`, padded with zeros to `block_size` when it fits. With
/// `block_size` 0 the image is left unpadded and nothing is counted.
pub fn encode_block(block: &Block, block_size: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity((block_size as usize).max(256));
    encode_block_into(block, block_size, &mut out);
    out
}

/// Append the encoding of `block` to `out`; false when it did not fit
/// `block_size` (then it is unpadded and counted in [`oversize_blocks`]).
pub fn encode_block_into(block: &Block, block_size: u32, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    out.extend_from_slice(MAGIC);
    out.push(BLOCK_FORMAT_VERSION);
    out.extend_from_slice(&[0; 8]); // length and checksum, filled in below
    let body_at = out.len();
    out.extend_from_slice(&block.addr.0.to_le_bytes());
    put(out, block.scn.0);
    put(out, block.trimmed_scn.0);
    put_body(out, &block.body);
    put(out, block.itl.len() as u64);
    for e in &block.itl {
        put(out, e.xid.0);
        put_opt(out, e.commit.map(|s| s.0));
    }
    put(out, block.undo.len() as u64);
    for u in &block.undo {
        put(out, u.xid.0);
        match &u.op {
            UndoOp::Row { slot, before } => {
                out.push(0);
                put(out, u64::from(*slot));
                put_opt_row(out, before.as_ref());
            }
            UndoOp::EntryInsert { key } => {
                out.push(1);
                put(out, *key);
            }
            UndoOp::Body(b) => {
                out.push(2);
                put_body(out, block.undo.body(*b));
            }
            UndoOp::Entry { before } => {
                out.push(3);
                put_entry(out, before);
            }
            UndoOp::Bit { at, key, was, lock } => {
                out.push(4);
                put(out, *at);
                put(out, *key);
                out.push(u8::from(*was));
                put(out, lock.0);
            }
        }
    }
    // A payload over 4 GiB cannot come from a real block; saturate rather
    // than wrap so decoding reports it as truncated.
    let len = u32::try_from(out.len() - body_at).unwrap_or(u32::MAX);
    let crc = crc32(&out[body_at..]);
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
    let used = out.len() - start;
    let size = block_size as usize;
    if size == 0 {
        true
    } else if used <= size {
        out.resize(start + size, 0);
        true
    } else {
        OVERSIZE.fetch_add(1, Ordering::Relaxed);
        false
    }
}

/// Is this a never-written slot (no bytes or only zeros)?
pub fn is_blank(bytes: &[u8]) -> bool {
    // OR-folding whole chunks vectorizes; `all` stops at every byte.
    bytes
        .chunks(256)
        .all(|c| c.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// Length of the image at the start of `bytes` (header and payload, without
/// padding), if the header is readable.
pub fn image_len(bytes: &[u8]) -> Option<usize> {
    let len = bytes.get(4..8)?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    BLOCK_HEADER_LEN.checked_add(len)
}

/// Decode a block image (padded or not). Rejects truncated, corrupt or
/// trailing non-zero input; never panics.
pub fn decode_block(bytes: &[u8]) -> Result<Block, BlockError> {
    if bytes.len() < BLOCK_HEADER_LEN {
        return Err(err(
            "header",
            BlockProblem::Truncated {
                need: BLOCK_HEADER_LEN,
                have: bytes.len(),
            },
        ));
    }
    if &bytes[..3] != MAGIC {
        return Err(err("magic", BlockProblem::BadMagic));
    }
    if bytes[3] != BLOCK_FORMAT_VERSION {
        return Err(err("version", BlockProblem::UnsupportedVersion(bytes[3])));
    }
    let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    let stored = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let rest = &bytes[BLOCK_HEADER_LEN..];
    if rest.len() < len {
        return Err(err(
            "payload",
            BlockProblem::Truncated {
                need: len,
                have: rest.len(),
            },
        ));
    }
    let (payload, padding) = rest.split_at(len);
    let computed = crc32(payload);
    if computed != stored {
        return Err(err("checksum", BlockProblem::Checksum { stored, computed }));
    }
    if !is_blank(padding) {
        return Err(err("padding", BlockProblem::NonZeroPadding));
    }
    let mut r = Reader { buf: payload };
    let addr = BlockAddr(r.u32_le("addr")?);
    let scn = r.var("scn")?;
    let trimmed_scn = r.var("trimmed_scn")?;
    let body = r.body("body")?;
    let n = r.count("itl")?;
    let mut itl = Vec::with_capacity(n);
    for _ in 0..n {
        itl.push(Itl {
            xid: Xid(r.var("itl.xid")?),
            commit: (r.opt_var("itl.commit")?).map(Scn),
        });
    }
    let n = r.count("undo")?;
    let mut undo = UndoLog::default();
    for _ in 0..n {
        let xid = Xid(r.var("undo.xid")?);
        let op = match r.byte("undo.op")? {
            0 => UndoOp::Row {
                slot: r.u16("undo.op.slot")?,
                before: r.opt_row("undo.op.before")?,
            },
            1 => UndoOp::EntryInsert {
                key: r.var("undo.op.key")?,
            },
            2 => {
                undo.push_body(xid, r.body("undo.op.body")?);
                continue;
            }
            3 => UndoOp::Entry { before: r.entry()? },
            4 => UndoOp::Bit {
                at: r.var("undo.op.at")?,
                key: r.var("undo.op.key")?,
                was: r.flag("undo.op.was")?,
                lock: Xid(r.var("undo.op.lock")?),
            },
            t => return Err(err("undo.op", BlockProblem::BadTag(t))),
        };
        undo.push(UndoRec { xid, op });
    }
    if !r.buf.is_empty() {
        return Err(err("payload", BlockProblem::TrailingBytes(r.buf.len())));
    }
    Ok(Block {
        addr,
        scn: Scn(scn),
        body: Arc::new(body),
        itl,
        undo,
        trimmed_scn: Scn(trimmed_scn),
    })
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_opt(out: &mut Vec<u8>, v: Option<u64>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put(out, v);
        }
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_row(out: &mut Vec<u8>, r: &Row) {
    put(out, r.key);
    put(out, zigzag(r.val));
    put(out, r.lock.0);
}

fn put_opt_row(out: &mut Vec<u8>, r: Option<&Row>) {
    match r {
        None => out.push(0),
        Some(r) => {
            out.push(1);
            put_row(out, r);
        }
    }
}

fn put_entry(out: &mut Vec<u8>, e: &LeafEntry) {
    put(out, e.key);
    put(out, u64::from(e.rowid.blk.0));
    put(out, u64::from(e.rowid.slot));
    put(out, e.lock.0);
    put(out, zigzag(e.val));
}

/// A piece: value, chunk, lock, then its set bits as gaps between keys
/// (small varints for a dense bitmap, as Oracle compresses runs).
fn put_piece(out: &mut Vec<u8>, p: &Piece) {
    put(out, zigzag(p.value));
    put(out, u64::from(p.chunk));
    put(out, p.lock.0);
    put(out, p.bits.len() as u64);
    let mut prev = 0;
    for &k in &p.bits {
        put(out, k.wrapping_sub(prev));
        prev = k;
    }
}

fn put_body(out: &mut Vec<u8>, body: &Body) {
    match body {
        Body::Unformatted => out.push(0),
        Body::Table { rows } => {
            out.push(1);
            put(out, rows.len() as u64);
            for r in rows {
                put_opt_row(out, r.as_ref());
            }
        }
        Body::Leaf {
            entries,
            next,
            low,
            high,
        } => {
            out.push(2);
            put(out, entries.len() as u64);
            for e in entries {
                put_entry(out, e);
            }
            put_opt(out, next.map(|b| u64::from(b.0)));
            put(out, *low);
            put_opt(out, *high);
        }
        Body::Bitmap {
            pieces,
            next,
            low,
            high,
        } => {
            out.push(5);
            put(out, pieces.len() as u64);
            for p in pieces {
                put_piece(out, p);
            }
            put_opt(out, next.map(|b| u64::from(b.0)));
            put(out, *low);
            put_opt(out, *high);
        }
        Body::SegHeader { used } => {
            out.push(3);
            put(out, used.len() as u64);
            for u in used {
                put(out, u64::from(*u));
            }
        }
        Body::Branch { entries } => {
            out.push(4);
            put(out, entries.len() as u64);
            for (k, c) in entries {
                put(out, *k);
                put(out, u64::from(c.0));
            }
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl Reader<'_> {
    fn byte(&mut self, field: &'static str) -> Result<u8, BlockError> {
        let (&b, rest) = self
            .buf
            .split_first()
            .ok_or(err(field, BlockProblem::Truncated { need: 1, have: 0 }))?;
        self.buf = rest;
        Ok(b)
    }

    fn u32_le(&mut self, field: &'static str) -> Result<u32, BlockError> {
        let Some((head, rest)) = self.buf.split_first_chunk::<4>() else {
            return Err(err(
                field,
                BlockProblem::Truncated {
                    need: 4,
                    have: self.buf.len(),
                },
            ));
        };
        self.buf = rest;
        Ok(u32::from_le_bytes(*head))
    }

    fn var(&mut self, field: &'static str) -> Result<u64, BlockError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte(field)?;
            let bits = u64::from(b & 0x7f);
            // The tenth byte may only carry the top bit of a u64.
            if i == 9 && bits > 1 {
                return Err(err(field, BlockProblem::VarintTooLong));
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(err(field, BlockProblem::VarintTooLong))
    }

    fn small<T: TryFrom<u64>>(&mut self, field: &'static str) -> Result<T, BlockError> {
        let v = self.var(field)?;
        T::try_from(v).map_err(|_| err(field, BlockProblem::OutOfRange(v)))
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, BlockError> {
        self.small(field)
    }

    fn addr(&mut self, field: &'static str) -> Result<BlockAddr, BlockError> {
        self.small(field).map(BlockAddr)
    }

    /// An element count; every element takes at least one byte, so a count
    /// above the bytes left is corrupt (and must not size an allocation).
    fn count(&mut self, field: &'static str) -> Result<usize, BlockError> {
        let n = self.var(field)?;
        if n > self.buf.len() as u64 {
            return Err(err(
                field,
                BlockProblem::Truncated {
                    need: usize::try_from(n).unwrap_or(usize::MAX),
                    have: self.buf.len(),
                },
            ));
        }
        Ok(n as usize)
    }

    fn flag(&mut self, field: &'static str) -> Result<bool, BlockError> {
        match self.byte(field)? {
            0 => Ok(false),
            1 => Ok(true),
            t => Err(err(field, BlockProblem::BadTag(t))),
        }
    }

    fn opt_var(&mut self, field: &'static str) -> Result<Option<u64>, BlockError> {
        Ok(if self.flag(field)? {
            Some(self.var(field)?)
        } else {
            None
        })
    }

    fn row(&mut self, field: &'static str) -> Result<Row, BlockError> {
        Ok(Row {
            key: self.var(field)?,
            val: unzigzag(self.var(field)?),
            lock: Xid(self.var(field)?),
        })
    }

    fn opt_row(&mut self, field: &'static str) -> Result<Option<Row>, BlockError> {
        Ok(if self.flag(field)? {
            Some(self.row(field)?)
        } else {
            None
        })
    }

    fn entry(&mut self) -> Result<LeafEntry, BlockError> {
        Ok(LeafEntry {
            key: self.var("entry.key")?,
            rowid: Rowid {
                blk: self.addr("entry.rowid.blk")?,
                slot: self.u16("entry.rowid.slot")?,
            },
            lock: Xid(self.var("entry.lock")?),
            val: unzigzag(self.var("entry.val")?),
        })
    }

    fn piece(&mut self) -> Result<Piece, BlockError> {
        let value = unzigzag(self.var("piece.value")?);
        let chunk = self.small("piece.chunk")?;
        let lock = Xid(self.var("piece.lock")?);
        let n = self.count("piece.bits")?;
        let mut bits = Vec::with_capacity(n);
        let mut prev = 0u64;
        for _ in 0..n {
            prev = prev.wrapping_add(self.var("piece.bits")?);
            bits.push(prev);
        }
        Ok(Piece {
            value,
            chunk,
            bits,
            lock,
        })
    }

    /// A leaf's right neighbour.
    fn next(&mut self, field: &'static str) -> Result<Option<BlockAddr>, BlockError> {
        match self.opt_var(field)? {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(|a| Some(BlockAddr(a)))
                .map_err(|_| err(field, BlockProblem::OutOfRange(v))),
        }
    }

    fn body(&mut self, field: &'static str) -> Result<Body, BlockError> {
        Ok(match self.byte(field)? {
            0 => Body::Unformatted,
            1 => {
                let n = self.count("body.rows")?;
                let mut rows = Vec::with_capacity(n);
                for _ in 0..n {
                    rows.push(self.opt_row("body.rows")?);
                }
                Body::Table { rows }
            }
            2 => {
                let n = self.count("body.entries")?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push(self.entry()?);
                }
                Body::Leaf {
                    entries,
                    next: self.next("body.next")?,
                    low: self.var("body.low")?,
                    high: self.opt_var("body.high")?,
                }
            }
            5 => {
                let n = self.count("body.pieces")?;
                let mut pieces = Vec::with_capacity(n);
                for _ in 0..n {
                    pieces.push(self.piece()?);
                }
                Body::Bitmap {
                    pieces,
                    next: self.next("body.next")?,
                    low: self.var("body.low")?,
                    high: self.opt_var("body.high")?,
                }
            }
            3 => {
                let n = self.count("body.used")?;
                let mut used = Vec::with_capacity(n);
                for _ in 0..n {
                    used.push(self.small("body.used")?);
                }
                Body::SegHeader { used }
            }
            4 => {
                let n = self.count("body.branch")?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push((
                        self.var("body.branch.key")?,
                        self.addr("body.branch.child")?,
                    ));
                }
                Body::Branch { entries }
            }
            t => return Err(err(field, BlockProblem::BadTag(t))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, 1, -1, i64::MAX, i64::MIN, 12345, -12345] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn varint_round_trips_extremes() {
        for v in [0, 1, 127, 128, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put(&mut out, v);
            let mut r = Reader { buf: &out };
            assert_eq!(r.var("v").unwrap(), v);
            assert!(r.buf.is_empty());
        }
        // Eleven continuation bytes: too long.
        let bad = [0xffu8; 11];
        let mut r = Reader { buf: &bad };
        assert_eq!(r.var("v").unwrap_err().problem, BlockProblem::VarintTooLong);
    }
}
