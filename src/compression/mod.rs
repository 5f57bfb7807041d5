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

mod codec;
mod negotiate;

pub use self::codec::{compress, decompress};
pub use self::negotiate::{
    AcceptEncoding, EncodingHeaders, GRPC_ACCEPT_ENCODING, GRPC_ENCODING, request_encoding,
    response_encoding,
};
pub(crate) use self::negotiate::{accepted_names, named_encoding};

use std::fmt;

use http::header::HeaderValue;

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

#[cfg(test)]
mod tests {
    use super::*;

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
