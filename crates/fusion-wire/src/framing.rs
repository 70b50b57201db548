//! Interconnect framing: each [`pb::Frame`] on an instance-to-instance TCP
//! connection is preceded by its length, 4 bytes big endian (the default
//! layout of `tokio_util`'s `LengthDelimitedCodec`, which reads them).

use prost::Message;
use tokio_util::codec::LengthDelimitedCodec;

use crate::convert::WireError;
use crate::pb;

/// The largest frame a peer may send (a shipped block is `db_block_size`
/// plus a few hundred bytes; a parallel-query row batch is bigger).
pub const FRAME_BYTES_MAX: usize = 64 << 20;

/// The largest frame read before a peer's `Hello` is accepted (a `Hello`,
/// or a callee's `Refusal`, is a few dozen bytes plus the token): a stranger
/// cannot make an instance allocate [`FRAME_BYTES_MAX`] by announcing it.
pub const PRE_AUTH_FRAME_BYTES_MAX: usize = 4 << 10;

/// Length of the prefix in front of every frame.
pub const PREFIX: usize = 4;

/// The decoder of a connection's byte stream into frames (refuses frames
/// longer than [`FRAME_BYTES_MAX`]).
pub fn frame_codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(PREFIX)
        .max_frame_length(FRAME_BYTES_MAX)
        .new_codec()
}

/// Append `frame` with its length prefix to `out`.
pub fn encode_frame(frame: &pb::Frame, out: &mut impl bytes::BufMut) {
    // Frames we build are far below 4 GiB: a block (at most 10,000 index
    // entries, ENTRIES_MAX, and 32 undo records) or a PX batch (at most
    // 65,536 values) is at most a few MB.
    let len = u32::try_from(frame.encoded_len()).expect("a frame is far below 4 GiB");
    out.put_u32(len);
    // `BufMut`s grow as needed; an encode error means a full fixed buffer.
    let _ = frame.encode(out);
}

/// Decode one frame's body (without its prefix).
pub fn decode_frame(body: &[u8]) -> Result<pb::Frame, WireError> {
    pb::Frame::decode(body).map_err(|e| WireError::Rejected {
        field: "Frame",
        reason: format!("not a protobuf Frame: {e}"),
    })
}

/// The frame of a message.
pub fn envelope_frame(env: pb::Envelope) -> pb::Frame {
    pb::Frame {
        kind: Some(pb::frame::Kind::Envelope(env)),
    }
}

/// The frame a callee closes a connection with.
pub fn refusal_frame(reason: impl Into<String>) -> pb::Frame {
    pb::Frame {
        kind: Some(pb::frame::Kind::Refusal(pb::Refusal {
            reason: reason.into(),
        })),
    }
}

/// The frame both ends open a connection with.
pub fn hello_frame(hello: pb::Hello) -> pb::Frame {
    pb::Frame {
        kind: Some(pb::frame::Kind::Hello(hello)),
    }
}
