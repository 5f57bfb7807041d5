//! Message compression (gzip, deflate, zstd) and `grpc-encoding` negotiation.
//!
//! gRPC compresses each message on its own (no context carries over between messages; the
//! frame's flag byte says whether that message is compressed), with the algorithm the sender
//! names in the `grpc-encoding` header. Per `doc/compression.md` in the grpc repository:
//!
//! - a request compressed with an encoding the server does not support fails with
//!   `UNIMPLEMENTED`, and the response carries `grpc-accept-encoding` listing what the server
//!   does accept ([`request_encoding`]);
//! - the server may compress responses with any encoding the client lists in its
//!   `grpc-accept-encoding`, or not at all ([`response_encoding`]);
//! - a message that cannot be decompressed is `INTERNAL` ([`decompress`]).
//!
//! Decompression is bounded: a message is never inflated past the receive limit, so a small
//! request cannot make the server allocate gigabytes (a "decompression bomb"); it is refused
//! with `RESOURCE_EXHAUSTED`, as an uncompressed message over the limit is.
//!
//! `deflate` is the zlib format (RFC 1950), as in HTTP and in grpc-core, grpc-java and tonic.
//! zstd needs the default-on `zstd` cargo feature, which builds the C zstd library.

use std::fmt;
use std::io::{self, Read, Write};

use bytes::{BufMut, Bytes, BytesMut};
use flate2::Compression;
use flate2::write::{GzEncoder, ZlibEncoder};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use tonic::Status;
use tonic::metadata::MetadataValue;

/// The request header naming the encoding of the request's compressed messages.
pub const GRPC_ENCODING: HeaderName = HeaderName::from_static("grpc-encoding");

/// The header listing the encodings a peer can decompress.
pub const GRPC_ACCEPT_ENCODING: HeaderName = HeaderName::from_static("grpc-accept-encoding");

/// The request headers that name a call's message encoding and the encodings its client
/// accepts: gRPC's (and gRPC-Web's), or the Connect protocol's.
#[derive(Debug, Clone, Copy)]
pub struct EncodingHeaders {
    encoding: &'static HeaderName,
    accept: &'static HeaderName,
    /// The accept header is HTTP's, whose entries may carry weights (`gzip;q=0.5`).
    weighted: bool,
}

static GRPC_NAMES: [HeaderName; 2] = [GRPC_ENCODING, GRPC_ACCEPT_ENCODING];
static CONNECT_UNARY_NAMES: [HeaderName; 2] = [
    http::header::CONTENT_ENCODING,
    http::header::ACCEPT_ENCODING,
];
static CONNECT_STREAM_NAMES: [HeaderName; 2] = [
    HeaderName::from_static("connect-content-encoding"),
    HeaderName::from_static("connect-accept-encoding"),
];

impl EncodingHeaders {
    /// `grpc-encoding` and `grpc-accept-encoding`.
    pub const GRPC: EncodingHeaders = EncodingHeaders {
        encoding: &GRPC_NAMES[0],
        accept: &GRPC_NAMES[1],
        weighted: false,
    };
    /// Connect's unary calls: HTTP's `content-encoding` and `accept-encoding`.
    pub const CONNECT_UNARY: EncodingHeaders = EncodingHeaders {
        encoding: &CONNECT_UNARY_NAMES[0],
        accept: &CONNECT_UNARY_NAMES[1],
        weighted: true,
    };
    /// Connect's streaming calls: `connect-content-encoding` and `connect-accept-encoding`.
    pub const CONNECT_STREAM: EncodingHeaders = EncodingHeaders {
        encoding: &CONNECT_STREAM_NAMES[0],
        accept: &CONNECT_STREAM_NAMES[1],
        weighted: false,
    };

    /// The header naming the request's encoding.
    pub fn encoding(self) -> &'static HeaderName {
        self.encoding
    }

    /// The header listing the encodings the client accepts.
    pub fn accept(self) -> &'static HeaderName {
        self.accept
    }
}

/// A compression algorithm fastgrpc can use for messages.
///
/// The variants present depend on cargo features (`Zstd` needs `zstd`), so the enum is
/// non-exhaustive: a `match` outside this crate needs a wildcard arm.
///
/// ```
/// use fastgrpc::CompressionEncoding;
///
/// assert_eq!(CompressionEncoding::Gzip.as_str(), "gzip");
/// assert_eq!(
///     CompressionEncoding::from_name(b"DEFLATE"),
///     Some(CompressionEncoding::Deflate)
/// );
/// // `identity` is "no compression", not an encoding.
/// assert_eq!(CompressionEncoding::from_name(b"identity"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompressionEncoding {
    /// gzip (RFC 1952).
    Gzip,
    /// deflate in the zlib format (RFC 1950).
    Deflate,
    /// Zstandard (RFC 8878).
    #[cfg(feature = "zstd")]
    Zstd,
}

impl CompressionEncoding {
    /// Every encoding built in, in the order a server prefers them by default: zstd
    /// (fastest, best ratio), then gzip (which every gRPC implementation has), then deflate.
    pub const ALL: &'static [CompressionEncoding] = &[
        #[cfg(feature = "zstd")]
        CompressionEncoding::Zstd,
        CompressionEncoding::Gzip,
        CompressionEncoding::Deflate,
    ];

    /// The name used in `grpc-encoding` and `grpc-accept-encoding`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CompressionEncoding::Gzip => "gzip",
            CompressionEncoding::Deflate => "deflate",
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => "zstd",
        }
    }

    /// The encoding a content-coding name stands for, ignoring ASCII case (HTTP content-codings
    /// are case-insensitive); `None` for `identity` and for names not built in.
    pub fn from_name(name: &[u8]) -> Option<CompressionEncoding> {
        CompressionEncoding::ALL
            .iter()
            .copied()
            .find(|encoding| name.eq_ignore_ascii_case(encoding.as_str().as_bytes()))
    }

    /// The name as a header value, for the response's `grpc-encoding`.
    pub const fn header_value(self) -> HeaderValue {
        HeaderValue::from_static(self.as_str())
    }

    /// A bit per encoding, for [`AcceptEncoding`].
    const fn bit(self) -> u8 {
        match self {
            CompressionEncoding::Gzip => 1,
            CompressionEncoding::Deflate => 2,
            #[cfg(feature = "zstd")]
            CompressionEncoding::Zstd => 4,
        }
    }
}

impl fmt::Display for CompressionEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A server's enabled encodings, in its order of preference: a small `Copy` list, so a
/// service's configuration can hold it without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EncodingList {
    /// Invariant: `items[..len]` are distinct; the rest are placeholders.
    items: [CompressionEncoding; 3],
    len: u8,
}

impl EncodingList {
    /// An empty list: messages are neither accepted nor sent compressed.
    pub(crate) const fn new() -> Self {
        EncodingList {
            items: [CompressionEncoding::Gzip; 3],
            len: 0,
        }
    }

    /// The list with `encoding` appended (at the lowest preference), unless already there.
    pub(crate) fn with(mut self, encoding: CompressionEncoding) -> Self {
        if !self.as_slice().contains(&encoding) {
            // Every encoding fits: there are at most three, each at most once.
            self.items[usize::from(self.len)] = encoding;
            self.len += 1;
        }
        self
    }

    /// The encodings, most preferred first.
    pub(crate) fn as_slice(&self) -> &[CompressionEncoding] {
        &self.items[..usize::from(self.len)]
    }

    /// Whether the list is empty.
    pub(crate) const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `grpc-accept-encoding` a service whose requests may use these encodings sends with
    /// every response, as C-core's servers do; `None` for an empty list. A static value: adding
    /// it to a response allocates nothing.
    pub(crate) fn accept_header(&self) -> Option<HeaderValue> {
        // Indexed by the encodings' bits (gzip 1, deflate 2, zstd 4), names in `ALL`'s order;
        // built at compile time, so a response only clones a static value.
        static VALUES: [HeaderValue; 8] = [
            HeaderValue::from_static("identity"),
            HeaderValue::from_static("identity,gzip"),
            HeaderValue::from_static("identity,deflate"),
            HeaderValue::from_static("identity,gzip,deflate"),
            HeaderValue::from_static("identity,zstd"),
            HeaderValue::from_static("identity,zstd,gzip"),
            HeaderValue::from_static("identity,zstd,deflate"),
            HeaderValue::from_static("identity,zstd,gzip,deflate"),
        ];
        let bits = self.as_slice().iter().fold(0, |bits, e| bits | e.bit());
        (bits != 0).then(|| VALUES[usize::from(bits)].clone())
    }
}

impl Default for EncodingList {
    fn default() -> Self {
        Self::new()
    }
}

/// Turns message compression on or off for the rest of a call's replies.
///
/// A call's replies are compressed when the service enables an encoding the client accepts
/// (`send_compressed` on the generated server). Put a `MessageCompression` in the response's
/// extensions to decide per call, or, for a reply stream, per message: the handler keeps a
/// clone and sets it before yielding each message.
///
/// ```
/// use fastgrpc::MessageCompression;
///
/// let compression = MessageCompression::new(false);
/// let mut response = tonic::Response::new(());
/// response.extensions_mut().insert(compression.clone());
/// // Later, in the reply stream: compress the next messages.
/// compression.set(true);
/// assert!(compression.is_enabled());
/// ```
#[derive(Debug, Clone)]
pub struct MessageCompression(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl MessageCompression {
    /// A switch, initially `enabled`.
    pub fn new(enabled: bool) -> Self {
        MessageCompression(std::sync::Arc::new(enabled.into()))
    }

    /// Compress the following messages (if the call has an encoding) or not.
    pub fn set(&self, enabled: bool) {
        self.0.store(enabled, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the next message will be compressed (if the call has an encoding).
    pub fn is_enabled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Marks a request whose message arrived compressed (unary and server-streaming calls): the
/// handler finds it in the request's extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestCompressed(pub CompressionEncoding);

/// The encoding of a request's compressed messages, from its `grpc-encoding` header.
///
/// No header, or `identity`, is `Ok(None)`: messages must not be compressed. An encoding in
/// `enabled` is `Ok(Some(_))`. Anything else, including an encoding fastgrpc has but the
/// server did not enable, is `UNIMPLEMENTED` with a message naming what is accepted, and with
/// `grpc-accept-encoding` in the status's metadata, so the trailers-only response carries it
/// as the spec asks (and, as it requires, without the rejected encoding).
pub fn request_encoding(
    headers: &HeaderMap,
    names: EncodingHeaders,
    enabled: &[CompressionEncoding],
) -> Result<Option<CompressionEncoding>, Status> {
    let Some(value) = crate::metadata::header(headers, names.encoding) else {
        return Ok(None);
    };
    let name = value.as_bytes();
    if name.eq_ignore_ascii_case(b"identity") {
        return Ok(None);
    }
    match CompressionEncoding::from_name(name) {
        Some(encoding) if enabled.contains(&encoding) => Ok(Some(encoding)),
        _ => Err(unsupported_encoding(names.encoding, name, enabled)),
    }
}

/// `UNIMPLEMENTED` for a request encoding the server does not accept.
#[cold]
fn unsupported_encoding(
    header: &HeaderName,
    name: &[u8],
    enabled: &[CompressionEncoding],
) -> Status {
    let accepted = accepted_names(enabled);
    let quoted: String = if name.len() <= 32 {
        format!("{:?}", name.escape_ascii().to_string())
    } else {
        format!("of {} bytes", name.len())
    };
    let mut status = Status::unimplemented(format!(
        "request messages are compressed with {header} {quoted}, which this server does \
         not support; it accepts {}",
        accepted.replace(',', ", ")
    ));
    let value = MetadataValue::try_from(accepted).expect("encoding names are valid metadata");
    status.metadata_mut().insert("grpc-accept-encoding", value);
    status
}

/// `identity,` then the names of `enabled`, each once.
fn accepted_names(enabled: &[CompressionEncoding]) -> String {
    let mut names = String::from("identity");
    for (i, encoding) in enabled.iter().enumerate() {
        if !enabled[..i].contains(encoding) {
            names.push(',');
            names.push_str(encoding.as_str());
        }
    }
    names
}

/// The set of encodings a client lists in `grpc-accept-encoding` (or Connect's
/// `accept-encoding` and `connect-accept-encoding`).
///
/// A `Copy` bit set: parsing allocates nothing. Unknown names and `identity` are ignored
/// (every peer accepts uncompressed messages), as are surrounding spaces and tabs and empty
/// entries; names are matched ignoring ASCII case. gRPC's header has no weights: an entry with
/// parameters is no name and is ignored. HTTP's `accept-encoding` (Connect's unary calls) has
/// them (RFC 9110 §12.5.3); they count as far as choosing needs: an encoding weighted `q=0` is
/// refused, and `*` stands for every encoding the value does not name (the server's order
/// still decides among the rest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AcceptEncoding {
    bits: u8,
}

impl AcceptEncoding {
    /// The encodings named in one header value.
    pub fn parse(value: &HeaderValue) -> AcceptEncoding {
        let mut accepted = AcceptEncoding::default();
        for name in value.as_bytes().split(|&b| b == b',') {
            if let Some(encoding) = CompressionEncoding::from_name(name.trim_ascii()) {
                accepted.bits |= encoding.bit();
            }
        }
        accepted
    }

    /// The encodings one value of HTTP's `accept-encoding` accepts, weights read.
    pub fn parse_weighted(value: &HeaderValue) -> AcceptEncoding {
        let (mut accepted, mut named, mut any) = (0u8, 0u8, false);
        for entry in value.as_bytes().split(|&b| b == b',') {
            let mut parts = entry.split(|&b| b == b';');
            let name = parts.next().unwrap_or_default().trim_ascii();
            let refused = parts.any(|param| is_zero_weight(param.trim_ascii()));
            if name == b"*" {
                any = !refused;
            } else if let Some(encoding) = CompressionEncoding::from_name(name) {
                named |= encoding.bit();
                if !refused {
                    accepted |= encoding.bit();
                }
            }
        }
        if any {
            let every = CompressionEncoding::ALL
                .iter()
                .fold(0, |bits, e| bits | e.bit());
            accepted |= every & !named;
        }
        AcceptEncoding { bits: accepted }
    }

    /// The encodings named in every `names.accept()` header of `headers` (a header may be
    /// repeated instead of comma-separated); empty if there is none.
    pub fn from_headers(headers: &HeaderMap, names: EncodingHeaders) -> AcceptEncoding {
        let mut accepted = AcceptEncoding::default();
        let parse = match names.weighted {
            true => AcceptEncoding::parse_weighted,
            false => AcceptEncoding::parse,
        };
        for value in headers.get_all(names.accept) {
            accepted.bits |= parse(value).bits;
        }
        accepted
    }

    /// Whether `encoding` is in the set.
    pub fn contains(self, encoding: CompressionEncoding) -> bool {
        self.bits & encoding.bit() != 0
    }

    /// The first of `enabled` (the server's order of preference) that is in the set.
    ///
    /// The server's order decides, not the client's: the spec gives `grpc-accept-encoding` no
    /// order of preference (no q-values), and the server pays for compressing.
    pub fn choose(self, enabled: &[CompressionEncoding]) -> Option<CompressionEncoding> {
        enabled
            .iter()
            .copied()
            .find(|&encoding| self.contains(encoding))
    }
}

/// Whether `param` (one parameter of an accepted encoding) is the weight `q=0`: `0`, or `0.`
/// with up to three zeros (RFC 9110 §12.4.2).
fn is_zero_weight(param: &[u8]) -> bool {
    let Some(weight) = param
        .strip_prefix(b"q=")
        .or_else(|| param.strip_prefix(b"Q="))
    else {
        return false;
    };
    match weight {
        [b'0'] => true,
        [b'0', b'.', zeros @ ..] => zeros.len() <= 3 && zeros.iter().all(|&b| b == b'0'),
        _ => false,
    }
}

/// The encoding for a response's messages: the first of `enabled` that the client lists in
/// `grpc-accept-encoding`, or `None` (send uncompressed) if it lists none of them.
pub fn response_encoding(
    headers: &HeaderMap,
    names: EncodingHeaders,
    enabled: &[CompressionEncoding],
) -> Option<CompressionEncoding> {
    if enabled.is_empty() {
        return None;
    }
    AcceptEncoding::from_headers(headers, names).choose(enabled)
}

/// Decompresses one message, refusing to produce more than `max_len` bytes.
///
/// - Output over `max_len` is `RESOURCE_EXHAUSTED`. The decoder is read through
///   `Read::take(max_len + 1)`, so a decompression bomb costs at most that much output (and
///   the time to inflate it) before it is refused. A zstd frame that declares a larger size is
///   refused before anything is decompressed, and the zstd window is capped so that a frame
///   header cannot make zstd allocate more than a message within the limit could need.
/// - Input that is corrupt, truncated, or followed by stray bytes is `INTERNAL`, with the
///   decoder's reason.
/// - No input at all is the empty message, whatever the encoding: some encoders write nothing
///   for an empty message (connect-go's zstd writer), and nothing can mean nothing else.
pub fn decompress(
    encoding: CompressionEncoding,
    compressed: &[u8],
    max_len: usize,
) -> Result<Bytes, Status> {
    if compressed.is_empty() {
        return Ok(Bytes::new());
    }
    let too_large = || {
        Status::resource_exhausted(format!(
            "decompressed request message is larger than the limit of {max_len} bytes"
        ))
    };
    let corrupt = |error: io::Error| {
        Status::internal(format!(
            "failed to decompress a {encoding} request message: {error}"
        ))
    };
    let mut output = Vec::with_capacity(compressed.len().saturating_mul(4).min(max_len));
    let read = match encoding {
        CompressionEncoding::Gzip => read_bounded(
            flate2::bufread::MultiGzDecoder::new(compressed),
            max_len,
            &mut output,
        )
        .map(|decoder| decoder.into_inner()),
        CompressionEncoding::Deflate => read_bounded(
            flate2::bufread::ZlibDecoder::new(compressed),
            max_len,
            &mut output,
        )
        .map(|decoder| decoder.into_inner()),
        #[cfg(feature = "zstd")]
        CompressionEncoding::Zstd => {
            if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(compressed)
                && size > max_len as u64
            {
                return Err(too_large());
            }
            let mut decoder =
                zstd::stream::read::Decoder::with_buffer(compressed).map_err(corrupt)?;
            // zstd allocates its window (up to 2^window_log bytes) up front: allow standard
            // levels (2^23, 8 MiB), and beyond that only what a message within the limit needs.
            let needed = usize::BITS - max_len.leading_zeros();
            decoder
                .window_log_max(needed.clamp(23, 30))
                .map_err(corrupt)?;
            read_bounded(decoder.single_frame(), max_len, &mut output)
                .map(|decoder| decoder.finish())
        }
    };
    let rest = read.map_err(corrupt)?;
    if output.len() > max_len {
        return Err(too_large());
    }
    if !rest.is_empty() {
        return Err(corrupt(io::Error::new(
            io::ErrorKind::InvalidData,
            "stray bytes after the compressed message",
        )));
    }
    Ok(Bytes::from(output))
}

/// Reads `decoder` into `output`, stopping after `max_len + 1` bytes, and gives it back.
fn read_bounded<R: Read>(decoder: R, max_len: usize, output: &mut Vec<u8>) -> io::Result<R> {
    let mut bounded = decoder.take((max_len as u64).saturating_add(1));
    bounded.read_to_end(output)?;
    Ok(bounded.into_inner())
}

/// Compresses `data` with `encoding`, appending the result to `out`.
///
/// The encoders write straight into `out` (through [`BufMut::writer`]), so `codec::encode_frame`
/// can put a frame header in front and patch its length afterwards without copying. Levels are
/// the libraries' defaults: 6 for gzip and deflate, 3 for zstd.
pub fn compress(
    encoding: CompressionEncoding,
    data: &[u8],
    out: &mut BytesMut,
) -> Result<(), Status> {
    let writer = out.writer();
    let written = match encoding {
        CompressionEncoding::Gzip => {
            let mut encoder = GzEncoder::new(writer, Compression::default());
            encoder
                .write_all(data)
                .and_then(|()| encoder.finish().map(drop))
        }
        CompressionEncoding::Deflate => {
            let mut encoder = ZlibEncoder::new(writer, Compression::default());
            encoder
                .write_all(data)
                .and_then(|()| encoder.finish().map(drop))
        }
        #[cfg(feature = "zstd")]
        CompressionEncoding::Zstd => {
            zstd::stream::copy_encode(data, writer, zstd::DEFAULT_COMPRESSION_LEVEL)
        }
    };
    written.map_err(|error| Status::internal(format!("failed to compress a message: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use tonic::Code;

    /// Protobuf-ish data: repetitive but not trivially so.
    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"the quick brown fox jumps over the lazy dog; "[i % 45] ^ (i / 997) as u8)
            .collect()
    }

    /// Data that does not compress: a simple xorshift sequence.
    fn noise(len: usize) -> Vec<u8> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn compressed(encoding: CompressionEncoding, data: &[u8]) -> BytesMut {
        let mut out = BytesMut::new();
        compress(encoding, data, &mut out).unwrap();
        out
    }

    #[test]
    fn round_trips_for_every_encoding_and_size() {
        for &encoding in CompressionEncoding::ALL {
            for len in [0, 1, 100, 64 * 1024, 1024 * 1024 + 3] {
                for data in [sample(len), noise(len)] {
                    let packed = compressed(encoding, &data);
                    let unpacked = decompress(encoding, &packed, len).unwrap();
                    assert_eq!(unpacked, data, "{encoding} {len}");
                }
            }
            let big = sample(1024 * 1024);
            assert!(
                compressed(encoding, &big).len() < big.len() / 4,
                "{encoding} compresses repetitive data"
            );
        }
    }

    #[test]
    fn output_is_readable_by_the_reference_decoders() {
        let data = sample(10_000);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&compressed(CompressionEncoding::Gzip, &data)[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        out.clear();
        flate2::read::ZlibDecoder::new(&compressed(CompressionEncoding::Deflate, &data)[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        #[cfg(feature = "zstd")]
        {
            let packed = compressed(CompressionEncoding::Zstd, &data);
            assert_eq!(zstd::decode_all(&packed[..]).unwrap(), data);
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&packed).unwrap(),
                Some(10_000),
                "the frame records its size"
            );
        }
    }

    #[test]
    fn reads_what_other_encoders_produce() {
        use std::io::Write;
        let data = sample(50_000);
        // flate2's own encoders, as tonic uses them (gzip with a header of its choosing).
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), Compression::best());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(
            decompress(CompressionEncoding::Gzip, &gz, data.len()).unwrap(),
            data
        );

        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), Compression::fast());
        zlib.write_all(&data).unwrap();
        let zlib = zlib.finish().unwrap();
        assert_eq!(
            decompress(CompressionEncoding::Deflate, &zlib, data.len()).unwrap(),
            data
        );

        // Two gzip members are one gzip stream.
        let mut two = gz.clone();
        two.extend_from_slice(&gz);
        let both = decompress(CompressionEncoding::Gzip, &two, 2 * data.len()).unwrap();
        assert_eq!(both.len(), 2 * data.len());

        #[cfg(feature = "zstd")]
        {
            // A streaming encoder's frame records no size and uses a large window.
            let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
            encoder.write_all(&data).unwrap();
            let frame = encoder.finish().unwrap();
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
                None
            );
            assert_eq!(
                decompress(CompressionEncoding::Zstd, &frame, data.len()).unwrap(),
                data
            );
        }
    }

    #[test]
    fn an_empty_message_reads_back_from_nothing_and_from_what_encoders_write_for_it() {
        for &encoding in CompressionEncoding::ALL {
            // No bytes at all (connect-go's zstd writer for an empty message), with any limit.
            assert_eq!(
                decompress(encoding, b"", 0).unwrap(),
                Bytes::new(),
                "{encoding}"
            );
            // Ours.
            let ours = compressed(encoding, b"");
            assert!(!ours.is_empty(), "{encoding}");
            assert_eq!(
                decompress(encoding, &ours, 0).unwrap(),
                Bytes::new(),
                "{encoding}"
            );
        }
        // Go's `compress/gzip` and `compress/zlib` closed without a write (grpc-go's and
        // connect-go's gzip and deflate): a final empty stored block between the header and the
        // checksums.
        let go_gzip = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x01\x00\x00\xff\xff\
                        \x00\x00\x00\x00\x00\x00\x00\x00";
        let go_zlib = b"\x78\x9c\x01\x00\x00\xff\xff\x00\x00\x00\x01";
        for (encoding, bytes) in [
            (CompressionEncoding::Gzip, &go_gzip[..]),
            (CompressionEncoding::Deflate, &go_zlib[..]),
        ] {
            assert_eq!(
                decompress(encoding, bytes, 0).unwrap(),
                Bytes::new(),
                "{encoding}"
            );
        }
        #[cfg(feature = "zstd")]
        {
            // A frame that declares no content, as the zstd library writes for empty input.
            let frame = zstd::encode_all(&b""[..], 3).unwrap();
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
                Some(0)
            );
            let zstd = CompressionEncoding::Zstd;
            assert_eq!(decompress(zstd, &frame, 0).unwrap(), Bytes::new());
        }
    }

    #[test]
    fn limit_exactly_at_the_size_is_ok_and_one_less_is_not() {
        let data = sample(10_000);
        for &encoding in CompressionEncoding::ALL {
            let packed = compressed(encoding, &data);
            assert_eq!(decompress(encoding, &packed, 10_000).unwrap(), data);
            let error = decompress(encoding, &packed, 9_999).unwrap_err();
            assert_eq!(error.code(), Code::ResourceExhausted, "{encoding}");
            assert!(
                error
                    .message()
                    .contains("larger than the limit of 9999 bytes"),
                "{error:?}"
            );
        }
        // Empty messages, and a zero limit.
        for &encoding in CompressionEncoding::ALL {
            assert!(
                decompress(encoding, &compressed(encoding, &[]), 0)
                    .unwrap()
                    .is_empty()
            );
            let error = decompress(encoding, &compressed(encoding, b"x"), 0).unwrap_err();
            assert_eq!(error.code(), Code::ResourceExhausted, "{encoding}");
        }
    }

    #[test]
    fn size_hints_that_lie_do_not_matter() {
        let data = sample(5_000);
        // gzip: claim ISIZE = 1 and then u32::MAX; the output is right and bounded either way.
        for claimed in [1u32, u32::MAX] {
            let mut packed = compressed(CompressionEncoding::Gzip, &data);
            let n = packed.len();
            packed[n - 4..].copy_from_slice(&claimed.to_le_bytes());
            // ISIZE is checked against the real size by the decoder: a lie is corruption.
            let error = decompress(CompressionEncoding::Gzip, &packed, data.len()).unwrap_err();
            assert_eq!(error.code(), Code::Internal, "{claimed}");
            // And a lie does not get past the limit either.
            let error = decompress(CompressionEncoding::Gzip, &packed, 100).unwrap_err();
            assert_eq!(error.code(), Code::ResourceExhausted, "{claimed}");
        }
    }

    /// 10 MiB of zeros against a 4 MiB limit: refused quickly (the output stops at the limit
    /// plus one byte, see `reading_stops_one_byte_past_the_limit`).
    #[test]
    fn decompression_bomb_is_refused_quickly_in_bounded_memory() {
        let zeros = vec![0u8; 10 * 1024 * 1024];
        let limit = 4 * 1024 * 1024;
        for &encoding in CompressionEncoding::ALL {
            let bomb = compressed(encoding, &zeros);
            assert!(bomb.len() < 64 * 1024, "{encoding}: {} bytes", bomb.len());
            let started = Instant::now();
            let error = decompress(encoding, &bomb, limit).unwrap_err();
            let elapsed = started.elapsed();
            assert_eq!(error.code(), Code::ResourceExhausted, "{encoding}");
            assert!(elapsed < Duration::from_secs(2), "{encoding}: {elapsed:?}");
        }
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        // A reader producing endless zeros: only `max_len + 1` bytes are ever taken from it.
        for max_len in [0, 1, 1000, 4096] {
            let mut output = Vec::new();
            read_bounded(io::repeat(0), max_len, &mut output).unwrap();
            assert_eq!(output.len(), max_len + 1);
        }
    }

    #[test]
    fn corrupt_input_is_internal() {
        let data = sample(20_000);
        for &encoding in CompressionEncoding::ALL {
            let packed = compressed(encoding, &data);
            let mut flipped = packed.to_vec();
            let middle = flipped.len() / 2;
            flipped[middle] ^= 0x55;
            let truncated = &packed[..packed.len() - 3];
            let mut trailing = packed.to_vec();
            trailing.extend_from_slice(b"junk");
            // gzip and zlib carry a checksum of the content; a zstd frame only if its encoder
            // asked for one (ours does not: TCP and TLS already protect the bytes), so a
            // flipped bit in a zstd literal may decode to different content without error.
            let checksummed = !matches!(encoding.as_str(), "zstd");
            let flipped_case = if checksummed {
                &flipped[..]
            } else {
                &b"\xff\xff"[..]
            };
            for (what, input) in [
                ("garbage", &b"definitely not compressed"[..]),
                ("flipped", flipped_case),
                ("truncated", truncated),
                ("trailing", &trailing[..]),
            ] {
                let error = decompress(encoding, input, 1 << 20).unwrap_err();
                assert_eq!(error.code(), Code::Internal, "{encoding} {what}: {error:?}");
                assert!(
                    error.message().starts_with(&format!(
                        "failed to decompress a {encoding} request message"
                    )),
                    "{error:?}"
                );
            }
        }
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn zstd_frame_declaring_too_much_is_refused_up_front() {
        let packed = compressed(CompressionEncoding::Zstd, &sample(100_000));
        let error = decompress(CompressionEncoding::Zstd, &packed, 99_999).unwrap_err();
        assert_eq!(error.code(), Code::ResourceExhausted);
    }

    #[test]
    fn names_and_parsing() {
        for &encoding in CompressionEncoding::ALL {
            assert_eq!(
                CompressionEncoding::from_name(encoding.as_str().as_bytes()),
                Some(encoding)
            );
            assert_eq!(encoding.header_value(), encoding.as_str());
            assert_eq!(encoding.to_string(), encoding.as_str());
        }
        assert_eq!(
            CompressionEncoding::from_name(b"Gzip"),
            Some(CompressionEncoding::Gzip)
        );
        for name in [&b"identity"[..], b"", b"br", b"snappy", b"gzip ", b"x-gzip"] {
            assert_eq!(CompressionEncoding::from_name(name), None, "{name:?}");
        }
    }

    fn request(encoding: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_ENCODING, HeaderValue::from_static(encoding));
        headers
    }

    #[test]
    fn request_encoding_cases() {
        use CompressionEncoding::{Deflate, Gzip};
        let enabled = [Gzip, Deflate];
        assert_eq!(
            request_encoding(&HeaderMap::new(), EncodingHeaders::GRPC, &enabled).unwrap(),
            None
        );
        assert_eq!(
            request_encoding(&request("identity"), EncodingHeaders::GRPC, &enabled).unwrap(),
            None
        );
        assert_eq!(
            request_encoding(&request("identity"), EncodingHeaders::GRPC, &[]).unwrap(),
            None
        );
        assert_eq!(
            request_encoding(&request("gzip"), EncodingHeaders::GRPC, &enabled).unwrap(),
            Some(Gzip)
        );
        assert_eq!(
            request_encoding(&request("deflate"), EncodingHeaders::GRPC, &enabled).unwrap(),
            Some(Deflate)
        );
    }

    #[test]
    fn http_weights_refuse_at_zero_and_a_star_accepts_what_is_not_named() {
        let parse =
            |value: &'static str| AcceptEncoding::parse_weighted(&HeaderValue::from_static(value));
        let gzip = CompressionEncoding::Gzip;
        let deflate = CompressionEncoding::Deflate;
        assert!(parse("gzip;q=0.5").contains(gzip));
        assert!(parse("gzip ; q=1.0, deflate").contains(deflate));
        for refused in [
            "gzip;q=0",
            "gzip; q=0.0",
            "gzip;Q=0.000",
            "deflate, gzip;q=0",
        ] {
            assert!(!parse(refused).contains(gzip), "{refused}");
        }
        assert!(parse("gzip;q=0.001").contains(gzip));
        let star = parse("*");
        assert!(star.contains(gzip) && star.contains(deflate));
        let star_but_gzip = parse("gzip;q=0, *");
        assert!(!star_but_gzip.contains(gzip) && star_but_gzip.contains(deflate));
        assert_eq!(parse("*;q=0"), AcceptEncoding::default());
        assert_eq!(parse("identity;q=1, br"), AcceptEncoding::default());
        // Only HTTP's header is weighted; gRPC's keeps its plain names.
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip;q=0, *"),
        );
        headers.insert(
            GRPC_ACCEPT_ENCODING,
            HeaderValue::from_static("gzip;q=0, *"),
        );
        let connect = AcceptEncoding::from_headers(&headers, EncodingHeaders::CONNECT_UNARY);
        assert!(connect.contains(deflate) && !connect.contains(gzip));
        let grpc = AcceptEncoding::from_headers(&headers, EncodingHeaders::GRPC);
        assert_eq!(grpc, AcceptEncoding::default());
    }

    #[test]
    fn unsupported_request_encoding_lists_what_is_accepted() {
        use CompressionEncoding::{Deflate, Gzip};
        let status =
            request_encoding(&request("br"), EncodingHeaders::GRPC, &[Gzip, Deflate]).unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(
            status.message(),
            "request messages are compressed with grpc-encoding \"br\", which this server does \
             not support; it accepts identity, gzip, deflate"
        );
        assert_eq!(
            status.metadata().get("grpc-accept-encoding").unwrap(),
            "identity,gzip,deflate"
        );

        // Built in but not enabled: refused, and not listed (the spec: the returned
        // grpc-accept-encoding must not contain the encoding used).
        let status =
            request_encoding(&request("deflate"), EncodingHeaders::GRPC, &[Gzip]).unwrap_err();
        assert_eq!(status.code(), Code::Unimplemented);
        assert_eq!(
            status.metadata().get("grpc-accept-encoding").unwrap(),
            "identity,gzip"
        );
        assert!(
            status.message().ends_with("it accepts identity, gzip"),
            "{status:?}"
        );

        // Nothing enabled.
        let status = request_encoding(&request("gzip"), EncodingHeaders::GRPC, &[]).unwrap_err();
        assert!(
            status.message().ends_with("it accepts identity"),
            "{status:?}"
        );

        // The header reaches the client: it is in the trailers-only response.
        let response = crate::protocol::grpc::status(&status);
        assert_eq!(response.headers()["grpc-accept-encoding"], "identity");
        assert_eq!(response.headers()["grpc-status"], "12");
    }

    #[test]
    fn accepted_names_list_each_once() {
        use CompressionEncoding::{Deflate, Gzip};
        assert_eq!(
            accepted_names(&[Gzip, Gzip, Deflate]),
            "identity,gzip,deflate"
        );
        let all = HeaderValue::try_from(accepted_names(CompressionEncoding::ALL)).unwrap();
        let parsed = AcceptEncoding::parse(&all);
        for &encoding in CompressionEncoding::ALL {
            assert!(parsed.contains(encoding));
        }
    }

    #[test]
    fn accept_encoding_parsing() {
        use CompressionEncoding::{Deflate, Gzip};
        let parse = |v: &'static str| AcceptEncoding::parse(&HeaderValue::from_static(v));
        let gzip_deflate = parse(" gzip ,\tdeflate\t");
        assert!(gzip_deflate.contains(Gzip) && gzip_deflate.contains(Deflate));
        let none = AcceptEncoding::default();
        assert_eq!(parse("identity"), none);
        assert_eq!(parse(""), none);
        assert_eq!(parse(",,, ,"), none);
        assert_eq!(parse("br, snappy, x-custom"), none);
        assert_eq!(parse("snappy,gzip,br"), parse("gzip"));
        assert_eq!(parse("GZip"), parse("gzip"));
        // "gzip;q=1" is not a valid gRPC name; it is ignored rather than half-parsed.
        assert_eq!(parse("gzip;q=1"), none);

        // Repeated headers add up.
        let mut headers = HeaderMap::new();
        headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        headers.append(GRPC_ACCEPT_ENCODING, HeaderValue::from_static("deflate"));
        let accepted = AcceptEncoding::from_headers(&headers, EncodingHeaders::GRPC);
        assert!(accepted.contains(Gzip) && accepted.contains(Deflate));
        assert_eq!(
            AcceptEncoding::from_headers(&HeaderMap::new(), EncodingHeaders::GRPC),
            none
        );
    }

    #[test]
    fn response_encoding_choice() {
        use CompressionEncoding::{Deflate, Gzip};
        let accepting = |v: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(GRPC_ACCEPT_ENCODING, HeaderValue::from_static(v));
            headers
        };
        // The server's order decides.
        assert_eq!(
            response_encoding(
                &accepting("deflate,gzip"),
                EncodingHeaders::GRPC,
                &[Gzip, Deflate]
            ),
            Some(Gzip)
        );
        assert_eq!(
            response_encoding(
                &accepting("deflate,gzip"),
                EncodingHeaders::GRPC,
                &[Deflate, Gzip]
            ),
            Some(Deflate)
        );
        // Only what both have.
        assert_eq!(
            response_encoding(
                &accepting("identity,deflate"),
                EncodingHeaders::GRPC,
                &[Gzip, Deflate]
            ),
            Some(Deflate)
        );
        // The client accepts nothing the server has: no compression.
        assert_eq!(
            response_encoding(
                &accepting("identity,br"),
                EncodingHeaders::GRPC,
                &[Gzip, Deflate]
            ),
            None
        );
        assert_eq!(
            response_encoding(&accepting("gzip"), EncodingHeaders::GRPC, &[Deflate]),
            None
        );
        assert_eq!(
            response_encoding(&accepting("gzip"), EncodingHeaders::GRPC, &[]),
            None
        );
        assert_eq!(
            response_encoding(&HeaderMap::new(), EncodingHeaders::GRPC, &[Gzip]),
            None
        );
    }

    #[test]
    fn an_encoding_list_holds_each_encoding_once_in_order() {
        use CompressionEncoding::{Deflate, Gzip};
        let list = EncodingList::new().with(Gzip).with(Deflate).with(Gzip);
        assert_eq!(list.as_slice(), &[Gzip, Deflate]);
    }

    #[test]
    fn an_encoding_lists_accept_header_is_in_canonical_order() {
        use CompressionEncoding::{Deflate, Gzip};
        let list = EncodingList::new().with(Deflate).with(Gzip);
        assert_eq!(list.accept_header().unwrap(), "identity,gzip,deflate");
        assert!(EncodingList::new().accept_header().is_none());
    }
}
