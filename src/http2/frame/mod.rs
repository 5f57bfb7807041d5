//! HTTP/2 frames (RFC 9113 §4, §6): parsed from a frame's payload in the read buffer, checked
//! against every rule the RFC gives a receiver, and written straight into the write buffer.
//!
//! Parsing never copies a payload: DATA and header blocks come out as `Bytes` slices of the
//! frame. An error says whether it ends the connection or only the stream, with the RFC's code.

mod settings;

pub use settings::Settings;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// The 9 bytes before every payload.
pub const HEAD_LEN: usize = 9;

/// The largest frame payload either side must accept before SETTINGS say otherwise (§4.2).
pub(crate) const DEFAULT_MAX_FRAME_SIZE: u32 = 1 << 14;

/// The largest stream identifier (§5.1.1), and the largest flow-control window (§6.9.1).
pub(crate) const MAX_STREAM_ID: u32 = (1 << 31) - 1;
pub(crate) const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types (§6).
pub(crate) mod kind {
    pub(crate) const DATA: u8 = 0x0;
    pub(crate) const HEADERS: u8 = 0x1;
    pub(crate) const PRIORITY: u8 = 0x2;
    pub(crate) const RST_STREAM: u8 = 0x3;
    pub(crate) const SETTINGS: u8 = 0x4;
    pub(crate) const PUSH_PROMISE: u8 = 0x5;
    pub(crate) const PING: u8 = 0x6;
    pub(crate) const GOAWAY: u8 = 0x7;
    pub(crate) const WINDOW_UPDATE: u8 = 0x8;
    pub(crate) const CONTINUATION: u8 = 0x9;
}

/// Frame flags (§6).
pub(crate) mod flag {
    pub(crate) const END_STREAM: u8 = 0x1;
    pub(crate) const ACK: u8 = 0x1;
    pub(crate) const END_HEADERS: u8 = 0x4;
    pub(crate) const PADDED: u8 = 0x8;
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// Error codes (§7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason(pub(crate) u32);

impl Reason {
    pub(crate) const NO_ERROR: Reason = Reason(0x0);
    pub(crate) const PROTOCOL_ERROR: Reason = Reason(0x1);
    pub(crate) const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    pub(crate) const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    pub(crate) const STREAM_CLOSED: Reason = Reason(0x5);
    pub(crate) const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    pub(crate) const REFUSED_STREAM: Reason = Reason(0x7);
    pub(crate) const CANCEL: Reason = Reason(0x8);
    pub(crate) const COMPRESSION_ERROR: Reason = Reason(0x9);
    pub(crate) const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
}

/// A frame the peer should not have sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Ends the connection with GOAWAY (§5.4.1).
    Connection(Reason, &'static str),
    /// Ends one stream with RST_STREAM (§5.4.2); the connection goes on.
    Stream(u32, Reason, &'static str),
}

/// The fixed part of a frame (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The payload's length.
    pub len: usize,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    /// The reserved bit is ignored, as §4.1 asks.
    pub(crate) stream: u32,
}

impl Head {
    /// The head in the first 9 bytes of a frame.
    pub fn parse(bytes: &[u8; HEAD_LEN]) -> Head {
        Head {
            len: u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize,
            kind: bytes[3],
            flags: bytes[4],
            stream: u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & MAX_STREAM_ID,
        }
    }
}

/// A parsed frame. Flags that do not apply are dropped; unknown frame types are `Unknown` and
/// ignored by the connection (§4.1, §5.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// DATA (§6.1).
    Data {
        /// The stream it belongs to.
        stream: u32,
        /// The last frame of the stream's request.
        end_stream: bool,
        /// Without padding.
        data: Bytes,
        /// The whole payload, padding included: what flow control counts (§6.9).
        flow_len: usize,
    },
    /// HEADERS (§6.2): a header block's first fragment.
    Headers {
        /// The stream it opens, or whose trailers it carries.
        stream: u32,
        /// No DATA follows.
        end_stream: bool,
        /// The block is whole: no CONTINUATION follows.
        end_headers: bool,
        /// The stream depends on itself (§5.3.1): a stream error, reported with the frame
        /// because its block must still be decoded to keep HPACK in step.
        depends_on_itself: bool,
        /// The header block fragment, without padding and priority fields.
        block: Bytes,
    },
    /// PRIORITY (§6.3), parsed for its errors and otherwise ignored.
    Priority {
        /// The stream it names.
        stream: u32,
    },
    /// RST_STREAM (§6.4).
    RstStream {
        /// The stream it ends.
        stream: u32,
        /// Why.
        reason: Reason,
    },
    /// SETTINGS (§6.5), not an acknowledgement.
    Settings(Settings),
    /// A SETTINGS acknowledgement (§6.5.3).
    SettingsAck,
    /// PING (§6.7).
    Ping {
        /// An answer to the server's own PING.
        ack: bool,
        /// Echoed in the answer.
        payload: [u8; 8],
    },
    /// GOAWAY (§6.8); its debug data is dropped.
    GoAway {
        /// The last stream the peer processed.
        last_stream: u32,
        /// Why.
        reason: Reason,
    },
    /// WINDOW_UPDATE (§6.9), of the connection when `stream` is 0.
    WindowUpdate {
        /// The stream whose window grows, or 0 for the connection's.
        stream: u32,
        /// By how much, 1 to 2^31-1.
        increment: u32,
    },
    /// CONTINUATION (§6.10): a further fragment of the header block in progress.
    Continuation {
        /// The stream whose block it continues.
        stream: u32,
        /// The block is whole.
        end_headers: bool,
        /// The fragment.
        block: Bytes,
    },
    /// A frame type this engine does not know, ignored (§5.5).
    Unknown,
}

fn connection(reason: Reason, why: &'static str) -> FrameError {
    FrameError::Connection(reason, why)
}

/// Parses the frame with head `head` and payload `payload` (exactly `head.len` bytes); the
/// caller has checked the length against its SETTINGS_MAX_FRAME_SIZE.
pub fn parse(head: Head, mut payload: Bytes) -> Result<Frame, FrameError> {
    debug_assert_eq!(payload.len(), head.len);
    let stream = head.stream;
    let needs_stream = |what: &'static str| {
        if stream == 0 {
            Err(connection(Reason::PROTOCOL_ERROR, what))
        } else {
            Ok(())
        }
    };
    let needs_connection = |what: &'static str| {
        if stream != 0 {
            Err(connection(Reason::PROTOCOL_ERROR, what))
        } else {
            Ok(())
        }
    };
    Ok(match head.kind {
        kind::DATA => {
            needs_stream("DATA on stream 0")?;
            let flow_len = payload.len();
            strip_padding(head.flags, &mut payload)?;
            Frame::Data {
                stream,
                end_stream: head.flags & flag::END_STREAM != 0,
                data: payload,
                flow_len,
            }
        }
        kind::HEADERS => {
            needs_stream("HEADERS on stream 0")?;
            strip_padding(head.flags, &mut payload)?;
            let mut depends_on_itself = false;
            if head.flags & flag::PRIORITY != 0 {
                if payload.len() < 5 {
                    return Err(connection(
                        Reason::FRAME_SIZE_ERROR,
                        "HEADERS too short for its priority",
                    ));
                }
                depends_on_itself = payload.get_u32() & MAX_STREAM_ID == stream;
                payload.advance(1);
            }
            Frame::Headers {
                stream,
                end_stream: head.flags & flag::END_STREAM != 0,
                end_headers: head.flags & flag::END_HEADERS != 0,
                depends_on_itself,
                block: payload,
            }
        }
        kind::PRIORITY => {
            needs_stream("PRIORITY on stream 0")?;
            if payload.len() != 5 {
                return Err(FrameError::Stream(
                    stream,
                    Reason::FRAME_SIZE_ERROR,
                    "PRIORITY not 5 bytes",
                ));
            }
            if payload.get_u32() & MAX_STREAM_ID == stream {
                return Err(FrameError::Stream(
                    stream,
                    Reason::PROTOCOL_ERROR,
                    "a stream depends on itself",
                ));
            }
            Frame::Priority { stream }
        }
        kind::RST_STREAM => {
            needs_stream("RST_STREAM on stream 0")?;
            if payload.len() != 4 {
                return Err(connection(
                    Reason::FRAME_SIZE_ERROR,
                    "RST_STREAM not 4 bytes",
                ));
            }
            Frame::RstStream {
                stream,
                reason: Reason(payload.get_u32()),
            }
        }
        kind::SETTINGS => {
            needs_connection("SETTINGS on a stream")?;
            if head.flags & flag::ACK != 0 {
                if !payload.is_empty() {
                    return Err(connection(
                        Reason::FRAME_SIZE_ERROR,
                        "SETTINGS ack with a payload",
                    ));
                }
                Frame::SettingsAck
            } else {
                Frame::Settings(Settings::parse(&payload)?)
            }
        }
        kind::PUSH_PROMISE => {
            return Err(connection(
                Reason::PROTOCOL_ERROR,
                "PUSH_PROMISE from a client",
            ));
        }
        kind::PING => {
            needs_connection("PING on a stream")?;
            let payload: [u8; 8] = payload[..]
                .try_into()
                .map_err(|_| connection(Reason::FRAME_SIZE_ERROR, "PING not 8 bytes"))?;
            Frame::Ping {
                ack: head.flags & flag::ACK != 0,
                payload,
            }
        }
        kind::GOAWAY => {
            needs_connection("GOAWAY on a stream")?;
            if payload.len() < 8 {
                return Err(connection(
                    Reason::FRAME_SIZE_ERROR,
                    "GOAWAY shorter than 8 bytes",
                ));
            }
            Frame::GoAway {
                last_stream: payload.get_u32() & MAX_STREAM_ID,
                reason: Reason(payload.get_u32()),
            }
        }
        kind::WINDOW_UPDATE => {
            if payload.len() != 4 {
                return Err(connection(
                    Reason::FRAME_SIZE_ERROR,
                    "WINDOW_UPDATE not 4 bytes",
                ));
            }
            let increment = payload.get_u32() & MAX_WINDOW;
            if increment == 0 {
                return Err(match stream {
                    0 => connection(Reason::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"),
                    _ => FrameError::Stream(stream, Reason::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"),
                });
            }
            Frame::WindowUpdate { stream, increment }
        }
        kind::CONTINUATION => {
            needs_stream("CONTINUATION on stream 0")?;
            Frame::Continuation {
                stream,
                end_headers: head.flags & flag::END_HEADERS != 0,
                block: payload,
            }
        }
        _ => Frame::Unknown,
    })
}

/// Removes the pad length and padding of a PADDED frame (§6.1, §6.2).
fn strip_padding(flags: u8, payload: &mut Bytes) -> Result<(), FrameError> {
    if flags & flag::PADDED == 0 {
        return Ok(());
    }
    let Some(&pad) = payload.first() else {
        return Err(connection(
            Reason::FRAME_SIZE_ERROR,
            "PADDED frame without a pad length",
        ));
    };
    let pad = pad as usize;
    if pad >= payload.len() {
        return Err(connection(
            Reason::PROTOCOL_ERROR,
            "padding as long as the frame",
        ));
    }
    payload.advance(1);
    payload.truncate(payload.len() - pad);
    Ok(())
}

/// Writes a frame head.
pub(crate) fn put_head(dst: &mut BytesMut, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len < 1 << 24);
    dst.put_slice(&(len as u32).to_be_bytes()[1..]);
    dst.put_u8(kind);
    dst.put_u8(flags);
    dst.put_u32(stream);
}

pub(crate) fn put_settings_ack(dst: &mut BytesMut) {
    put_head(dst, 0, kind::SETTINGS, flag::ACK, 0);
}

pub(crate) fn put_ping(dst: &mut BytesMut, ack: bool, payload: [u8; 8]) {
    put_head(dst, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
    dst.put_slice(&payload);
}

pub(crate) fn put_goaway(dst: &mut BytesMut, last_stream: u32, reason: Reason, debug: &[u8]) {
    put_head(dst, 8 + debug.len(), kind::GOAWAY, 0, 0);
    dst.put_u32(last_stream);
    dst.put_u32(reason.0);
    dst.put_slice(debug);
}

pub(crate) fn put_rst_stream(dst: &mut BytesMut, stream: u32, reason: Reason) {
    put_head(dst, 4, kind::RST_STREAM, 0, stream);
    dst.put_u32(reason.0);
}

pub(crate) fn put_window_update(dst: &mut BytesMut, stream: u32, increment: u32) {
    put_head(dst, 4, kind::WINDOW_UPDATE, 0, stream);
    dst.put_u32(increment);
}

pub(crate) fn put_data(dst: &mut BytesMut, stream: u32, data: &[u8], end_stream: bool) {
    put_data_head(dst, stream, data.len(), end_stream);
    dst.put_slice(data);
}

/// The head of a DATA frame whose `len` bytes of payload the caller writes after it.
pub(crate) fn put_data_head(dst: &mut BytesMut, stream: u32, len: usize, end_stream: bool) {
    put_head(
        dst,
        len,
        kind::DATA,
        if end_stream { flag::END_STREAM } else { 0 },
        stream,
    );
}

/// Writes a header block as HEADERS and, past `max_frame_size`, CONTINUATION frames.
pub(crate) fn put_headers(
    dst: &mut BytesMut,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: usize,
) {
    let mut chunks = block.chunks(max_frame_size.max(1));
    let first = chunks.next().unwrap_or_default();
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    if first.len() == block.len() {
        flags |= flag::END_HEADERS;
    }
    put_head(dst, first.len(), kind::HEADERS, flags, stream);
    dst.put_slice(first);
    let mut rest = block.len() - first.len();
    for chunk in chunks {
        rest -= chunk.len();
        let flags = if rest == 0 { flag::END_HEADERS } else { 0 };
        put_head(dst, chunk.len(), kind::CONTINUATION, flags, stream);
        dst.put_slice(chunk);
    }
}

#[cfg(test)]
mod tests;
