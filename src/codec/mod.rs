//! gRPC message framing: a 1-byte compressed flag, a 4-byte big-endian length, the message.
//!
//! Decoding is strict: a unary request body must hold exactly one whole frame. Every way a body
//! can be wrong maps to the status the gRPC spec and the other implementations use, with a
//! message that says what was wrong. Encoding writes an uncompressed frame straight into its
//! final buffer: a slice of a per-thread recycled chunk for a small frame (no allocation in the
//! steady state, see `arena`), a buffer of exactly the frame's size for a large one.
//! [`Streaming`] decodes a stream of frames lazily, as the body arrives.

mod arena;
pub(crate) mod json;
mod streaming;

pub use self::streaming::Streaming;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::Status;

use crate::compression::{self, CompressionEncoding};

/// How messages are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Protobuf's binary encoding.
    #[default]
    Proto,
    /// ProtoJSON, the canonical JSON mapping of proto3.
    Json,
}

/// How a call's request messages are read: their format, and the rules that depend on who
/// sent them. A bare `Format` reads as gRPC does, with unknown JSON fields skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decoding {
    pub format: Format,
    /// How ProtoJSON is read (unknown fields skipped or refused).
    pub json: json::DecodeOptions,
    /// A malformed message is `INVALID_ARGUMENT`, as the Connect protocol answers (connect-go),
    /// rather than gRPC's `INTERNAL` (grpc-go).
    pub malformed_is_invalid_argument: bool,
}

impl From<Format> for Decoding {
    fn from(format: Format) -> Decoding {
        Decoding {
            format,
            ..Decoding::default()
        }
    }
}

/// Length of the frame prefix: compressed flag (1 byte) and message length (4 bytes).
pub const FRAME_HEADER_LEN: usize = 5;

/// The default limit on a received message in MiB, as a literal: generated servers' docs state
/// it with `concat!`, which takes only literals, so the constant below is made from it too.
#[doc(hidden)]
#[macro_export]
macro_rules! __default_max_receive_message_mib {
    () => {
        4
    };
}

/// Default limit on a received message, as in gRPC's other implementations: 4 MiB.
pub const DEFAULT_MAX_RECEIVE_MESSAGE_SIZE: usize =
    crate::__default_max_receive_message_mib!() * 1024 * 1024;

/// Decodes the one message a complete unary request body must carry.
///
/// `max_message_size` bounds the declared message length, and the decompressed length of a
/// message compressed with `encoding` (the request's `grpc-encoding`); a longer message is
/// refused with `RESOURCE_EXHAUSTED`. The message is decoded straight from
/// `body`, without copying it first.
pub fn decode_unary<M: Message + Default + DeserializeOwned + 'static>(
    mut body: Bytes,
    max_message_size: usize,
    encoding: Option<CompressionEncoding>,
    decoding: impl Into<Decoding>,
) -> Result<M, Status> {
    if body.is_empty() {
        return Err(missing_message());
    }
    let header = FrameHeader::parse(&body, max_message_size)?;
    let available = body.len() - FRAME_HEADER_LEN;
    if available < header.len {
        return Err(Status::internal(format!(
            "truncated request message: the frame declares {} bytes but the body holds {available}",
            header.len
        )));
    }
    if available > header.len {
        return Err(extra_message());
    }
    // `advance` only moves the start; `split_off` may allocate to share the buffer.
    body.advance(FRAME_HEADER_LEN);
    decode_message(header, body, encoding, max_message_size, decoding.into())
}

/// Decodes the bare message a Connect unary request's whole body is: compressed with
/// `encoding` if the request has one (`content-encoding`), within `max_message_size` before
/// and after decompression.
pub(crate) fn decode_bare<M: Message + Default + DeserializeOwned + 'static>(
    body: Bytes,
    max_message_size: usize,
    encoding: Option<CompressionEncoding>,
    decoding: Decoding,
) -> Result<M, Status> {
    if body.len() > max_message_size {
        return Err(too_large(body.len(), max_message_size));
    }
    let body = match encoding {
        Some(encoding) => compression::decompress(encoding, &body, max_message_size)?,
        None => body,
    };
    decode_payload(body, decoding)
}

/// A unary request without its message: `UNIMPLEMENTED`, the call not being one the method
/// takes (as connect-go answers, and the Connect conformance suite expects of every protocol).
pub(crate) fn missing_message() -> Status {
    Status::unimplemented("missing request message: the method takes exactly one")
}

/// A unary request with a second message: `UNIMPLEMENTED`, as [`missing_message`].
pub(crate) fn extra_message() -> Status {
    Status::unimplemented("more than one request message: the method takes exactly one")
}

/// The 5-byte prefix of a frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameHeader {
    pub(crate) compressed: bool,
    /// Declared message length; never above the limit it was parsed with.
    pub(crate) len: usize,
}

impl FrameHeader {
    /// The flag byte and the declared length of the frame `frame` begins with, unchecked;
    /// `None` while its header is incomplete.
    pub(crate) fn peek(frame: &[u8]) -> Option<(u8, usize)> {
        let header = frame.first_chunk::<FRAME_HEADER_LEN>()?;
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        Some((header[0], len))
    }

    /// Reads and checks the header at the start of `frame`.
    pub(crate) fn parse(frame: &[u8], max_message_size: usize) -> Result<Self, Status> {
        let Some((flag, len)) = Self::peek(frame) else {
            return Err(Status::internal(format!(
                "truncated request message: {} bytes is shorter than the 5-byte frame header",
                frame.len()
            )));
        };
        let compressed = match flag {
            0 => false,
            1 => true,
            flag => {
                return Err(Status::internal(format!(
                    "invalid compressed flag {flag} in a request frame (must be 0 or 1)"
                )));
            }
        };
        if len > max_message_size {
            return Err(too_large(len, max_message_size));
        }
        Ok(FrameHeader { compressed, len })
    }
}

/// `RESOURCE_EXHAUSTED` for a request message of `len` bytes above `max_message_size`.
pub(crate) fn too_large(len: usize, max_message_size: usize) -> Status {
    Status::resource_exhausted(format!(
        "request message of {len} bytes is larger than the limit of {max_message_size} bytes"
    ))
}

/// Decodes one frame's message, `payload` being exactly the bytes after its header, and
/// `encoding` the request's `grpc-encoding` for a compressed one.
pub(crate) fn decode_message<M: Message + Default + DeserializeOwned + 'static>(
    header: FrameHeader,
    payload: Bytes,
    encoding: Option<CompressionEncoding>,
    max_message_size: usize,
    decoding: Decoding,
) -> Result<M, Status> {
    let payload = match (header.compressed, encoding) {
        (false, _) => payload,
        (true, Some(encoding)) => compression::decompress(encoding, &payload, max_message_size)?,
        (true, None) => {
            return Err(Status::internal(
                "compressed request message, but the request has no grpc-encoding",
            ));
        }
    };
    decode_payload(payload, decoding)
}

/// The whole of a bare (Connect unary) request body that is still arriving, refused with
/// `RESOURCE_EXHAUSTED` as soon as it passes `max_message_size`.
pub(crate) async fn collect_bare(
    mut body: crate::body::RequestBody,
    max_message_size: usize,
) -> Result<Bytes, Status> {
    use http_body::Body as _;
    let mut collected = BytesMut::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
    {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        if collected.len() + data.len() > max_message_size {
            return Err(too_large(collected.len() + data.len(), max_message_size));
        }
        collected.extend_from_slice(&data);
    }
    Ok(collected.freeze())
}

/// Decodes one message, uncompressed, as `decoding` says.
fn decode_payload<M: Message + Default + DeserializeOwned + 'static>(
    payload: Bytes,
    decoding: Decoding,
) -> Result<M, Status> {
    match decoding.format {
        Format::Proto => M::decode(payload).map_err(|error| {
            let message = format!("failed to decode the request message: {error}");
            if decoding.malformed_is_invalid_argument {
                Status::invalid_argument(message)
            } else {
                Status::internal(message)
            }
        }),
        Format::Json => json::decode(&payload, decoding.json),
    }
}

/// Encodes a reply as one frame, compressed with `encoding` if there is one, refusing a
/// message larger than `max_message_size` with `RESOURCE_EXHAUSTED`.
///
/// An uncompressed frame is encoded as by [`encode`]. A compressed one is built in buffers of
/// its own: the compressor's state costs far more than they do.
pub fn encode_reply<M: Message + Serialize + 'static>(
    message: &M,
    format: Format,
    encoding: Option<CompressionEncoding>,
    max_message_size: usize,
) -> Result<Bytes, Status> {
    if format == Format::Json {
        return encode_json_reply(message, encoding, max_message_size);
    }
    let len = message.encoded_len();
    check_reply_size(len, max_message_size)?;
    let Some(encoding) = encoding else {
        return encode_plain(message, len);
    };
    let mut plain = Vec::with_capacity(len);
    message.encode_raw(&mut plain);
    let mut frame = BytesMut::with_capacity(FRAME_HEADER_LEN + len / 2 + 64);
    encode_frame(encoding, &plain, &mut frame)?;
    Ok(frame.freeze())
}

/// Encodes a reply as one frame of JSON, compressed with `encoding` if there is one. The JSON
/// is written after room for the frame's header, so an uncompressed frame is that one buffer.
fn encode_json_reply<M: Serialize + 'static>(
    message: &M,
    encoding: Option<CompressionEncoding>,
    max_message_size: usize,
) -> Result<Bytes, Status> {
    let mut frame = Vec::with_capacity(128);
    frame.extend_from_slice(&[0; FRAME_HEADER_LEN]);
    json::encode(message, &mut frame)?;
    let len = frame.len() - FRAME_HEADER_LEN;
    check_reply_size(len, max_message_size)?;
    if let Some(encoding) = encoding {
        let mut compressed = BytesMut::with_capacity(FRAME_HEADER_LEN + len / 2 + 64);
        encode_frame(encoding, &frame[FRAME_HEADER_LEN..], &mut compressed)?;
        return Ok(compressed.freeze());
    }
    frame[1..FRAME_HEADER_LEN].copy_from_slice(&declared_len(len)?.to_be_bytes());
    Ok(Bytes::from(frame))
}

/// Appends one compressed gRPC frame to `out`: flag `1`, the 4-byte big-endian length of the
/// compressed message, and the message compressed with `encoding`.
///
/// `message` is the encoded (protobuf) message. It is compressed straight into `out` after a
/// placeholder header whose length is filled in afterwards, so the compressed bytes are
/// written once and never copied. The caller still encodes the message into a buffer of its
/// own first (the compressors need its bytes); that buffer can be reused across messages.
///
/// A compressed message longer than `u32::MAX` bytes cannot be framed: `RESOURCE_EXHAUSTED`,
/// with `out` left as it was.
fn encode_frame(
    encoding: CompressionEncoding,
    message: &[u8],
    out: &mut BytesMut,
) -> Result<(), Status> {
    let start = out.len();
    out.put_u8(1);
    out.put_u32(0);
    if let Err(status) = compression::compress(encoding, message, out) {
        out.truncate(start);
        return Err(status);
    }
    let len = out.len() - start - FRAME_HEADER_LEN;
    let Ok(declared) = u32::try_from(len) else {
        out.truncate(start);
        return Err(Status::resource_exhausted(format!(
            "compressed response message of {len} bytes does not fit a gRPC frame"
        )));
    };
    out[start + 1..start + FRAME_HEADER_LEN].copy_from_slice(&declared.to_be_bytes());
    Ok(())
}

/// Encodes `message` as one uncompressed frame.
///
/// A small frame (up to 2 KiB) is cut from a chunk this thread recycles, so in the steady state
/// encoding allocates nothing; while the returned `Bytes` is alive it keeps its chunk (8 KiB)
/// alive. A larger frame gets a buffer of exactly its size.
pub fn encode<M: Message>(message: &M) -> Result<Bytes, Status> {
    encode_plain(message, message.encoded_len())
}

/// `RESOURCE_EXHAUSTED` for a reply message of `len` bytes above `max_message_size`.
pub(crate) fn check_reply_size(len: usize, max_message_size: usize) -> Result<(), Status> {
    if len > max_message_size {
        return Err(Status::resource_exhausted(format!(
            "response message of {len} bytes is larger than the limit of {max_message_size} bytes"
        )));
    }
    Ok(())
}

/// Encodes `message`, whose encoded length is `len`, as one uncompressed frame.
fn encode_plain<M: Message>(message: &M, len: usize) -> Result<Bytes, Status> {
    let declared = declared_len(len)?;
    Ok(arena::frame(FRAME_HEADER_LEN + len, |buf| {
        put_plain(message, declared, buf)
    }))
}

/// Appends `message`, whose encoded length is `len`, to `out` as one uncompressed frame: how a
/// reply stream packs the messages it has ready together.
pub(crate) fn encode_plain_into<M: Message>(
    message: &M,
    len: usize,
    out: &mut BytesMut,
) -> Result<(), Status> {
    put_plain(message, declared_len(len)?, out);
    Ok(())
}

fn put_plain<M: Message>(message: &M, declared: u32, out: &mut BytesMut) {
    out.put_u8(0);
    out.put_u32(declared);
    message.encode_raw(out);
}

/// A message length as a frame declares it; one past `u32::MAX` does not fit a frame.
fn declared_len(len: usize) -> Result<u32, Status> {
    u32::try_from(len).map_err(|_| {
        Status::resource_exhausted(format!(
            "response message of {len} bytes does not fit a gRPC frame"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn compressed_frames_have_the_flag_and_length() {
        let data: Vec<u8> = (0..3_000u32)
            .map(|i| (i % 251) as u8 ^ (i / 7) as u8)
            .collect();
        for &encoding in CompressionEncoding::ALL {
            let mut out = BytesMut::from(&b"earlier frame"[..]);
            encode_frame(encoding, &data, &mut out).unwrap();
            let frame = &out[13..];
            assert_eq!(frame[0], 1);
            let len = u32::from_be_bytes(frame[1..5].try_into().unwrap()) as usize;
            assert_eq!(len, frame.len() - FRAME_HEADER_LEN);
            let plain = compression::decompress(encoding, &frame[5..], data.len()).unwrap();
            assert_eq!(plain, data);
        }
    }

    fn frame(flag: u8, declared: u32, payload: &[u8]) -> Bytes {
        let mut buf = vec![flag];
        buf.extend_from_slice(&declared.to_be_bytes());
        buf.extend_from_slice(payload);
        Bytes::from(buf)
    }

    fn decode_err(body: Bytes, limit: usize) -> Status {
        decode_unary::<String>(body, limit, None, Format::Proto).unwrap_err()
    }

    #[test]
    fn round_trip_frames_exactly_the_message() {
        let text = "hello, framing".to_string();
        let encoded = encode(&text).unwrap();
        assert_eq!(encoded.len(), FRAME_HEADER_LEN + text.encoded_len());
        assert_eq!(&encoded[..5], &[0, 0, 0, 0, text.encoded_len() as u8]);
        assert_eq!(
            decode_unary::<String>(encoded, 1024, None, Format::Proto).unwrap(),
            text
        );
    }

    #[test]
    fn empty_message_is_a_valid_frame() {
        let encoded = encode(&()).unwrap();
        assert_eq!(&encoded[..], &[0, 0, 0, 0, 0]);
        decode_unary::<()>(encoded, 0, None, Format::Proto).unwrap();
    }

    /// A compressed frame of length 0, or a Connect unary body of no bytes with a
    /// `content-encoding`, is the empty message (connect-go's zstd writer sends it so).
    #[test]
    fn nothing_compressed_is_the_empty_message() {
        for &encoding in CompressionEncoding::ALL {
            let empty = frame(1, 0, &[]);
            let decoded = decode_unary::<String>(empty, 0, Some(encoding), Format::Proto);
            assert_eq!(decoded.unwrap(), "", "{encoding}");
            let bare = decode_bare::<String>(Bytes::new(), 0, Some(encoding), Format::Proto.into());
            assert_eq!(bare.unwrap(), "", "{encoding}");
        }
    }

    #[test]
    fn message_exactly_at_the_limit_is_accepted_and_one_more_byte_is_not() {
        let text = "x".repeat(100);
        let len = text.encoded_len();
        decode_unary::<String>(encode(&text).unwrap(), len, None, Format::Proto).unwrap();
        let error = decode_err(encode(&text).unwrap(), len - 1);
        assert_eq!(error.code(), Code::ResourceExhausted);
        assert!(
            error.message().contains("larger than the limit"),
            "{error:?}"
        );
    }

    #[test]
    fn oversized_declaration_is_refused_before_the_body_arrives() {
        // Only the header is here; the declared size alone must be enough to refuse.
        let error = decode_err(frame(0, u32::MAX, &[]), DEFAULT_MAX_RECEIVE_MESSAGE_SIZE);
        assert_eq!(error.code(), Code::ResourceExhausted);
    }

    #[test]
    fn malformed_bodies_are_internal_with_clear_messages() {
        let cases: [(Bytes, &str); 5] = [
            (
                Bytes::from_static(&[0, 0]),
                "shorter than the 5-byte frame header",
            ),
            (
                frame(0, 10, b"abc"),
                "declares 10 bytes but the body holds 3",
            ),
            (frame(1, 0, &[]), "no grpc-encoding"),
            (frame(7, 0, &[]), "invalid compressed flag 7"),
            (frame(0, 2, &[0x0a, 0x05]), "failed to decode"),
        ];
        for (body, expected) in cases {
            let error = decode_err(body, 1024);
            assert_eq!(error.code(), Code::Internal, "{expected}");
            assert!(
                error.message().contains(expected),
                "{:?} lacks {expected:?}",
                error.message()
            );
        }
    }

    #[test]
    fn no_message_or_two_in_a_unary_body_are_unimplemented() {
        let error = decode_err(Bytes::new(), 1024);
        assert_eq!(error.code(), Code::Unimplemented);
        assert!(error.message().contains("missing request message"));
        let mut body = encode(&"a".to_string()).unwrap().to_vec();
        body.extend_from_slice(&encode(&"b".to_string()).unwrap());
        let error = decode_err(Bytes::from(body), 1024);
        assert_eq!(error.code(), Code::Unimplemented);
        assert!(error.message().contains("more than one"));
    }
}
