//! What generated servers instantiate: one function per RPC kind, building the call chain.
//!
//! Generated code stays small and readable because everything a call does besides invoking the
//! user's method lives here, written once.

mod adaptive;
mod contain;
mod streaming;
mod unary;

pub(crate) use self::adaptive::InlineMode;
pub use self::adaptive::{MethodConfig, MethodCosts};
pub(crate) use self::contain::{Contained, ContainedStream, Panic, panic_status};
pub use self::streaming::{client_streaming, server_streaming, streaming};
pub use self::unary::unary;

use std::time::Duration;

use http::HeaderMap;
use tonic::Status;
use tonic::metadata::MetadataMap;

use crate::FastFuture;
use crate::body::ResponseBody;
use crate::call::Call;
use crate::codec::{DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, Decoding};
use crate::compression::{self, CompressionEncoding, EncodingList, MessageCompression};
use crate::protocol::Format;
use crate::status;

/// A boxed stream of replies, for a server-streaming method's associated stream type when the
/// stream's own type cannot be named (as with tonic).
pub type BoxStream<T> =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<T, Status>> + Send + 'static>>;

pub use crate::body::ResponseFuture;

/// The answer to a method the service does not have: trailers-only `UNIMPLEMENTED`.
pub fn unimplemented_method(path: &str) -> ResponseFuture {
    FastFuture::ok(crate::protocol::grpc::unknown_route(format!(
        "method not found: {}",
        status::excerpt(path)
    )))
}

/// Per-service settings every call of a generated server obeys. The generated server's methods
/// of the same names set them; the fields stay private so that adding one breaks nobody.
#[derive(Debug, Clone, Copy)]
pub struct HandlerConfig {
    /// Largest request message accepted, in bytes (after decompression); larger ones get
    /// `RESOURCE_EXHAUSTED`.
    pub(crate) max_decoding_message_size: usize,
    /// Largest reply message sent, in bytes (before compression); a larger reply ends the
    /// call with `RESOURCE_EXHAUSTED` instead (default: no limit, as in tonic).
    pub(crate) max_encoding_message_size: usize,
    /// Encodings compressed requests may use; others get `UNIMPLEMENTED`.
    pub(crate) accept_compressed: EncodingList,
    /// Encodings replies are compressed with, when the client accepts one (first match wins).
    pub(crate) send_compressed: EncodingList,
    /// How long a request stream may stay silent before the call fails with
    /// `DEADLINE_EXCEEDED`; `None` (the default) waits as long as the call lasts.
    pub(crate) receive_idle_timeout: Option<Duration>,
    /// Where calls start: inline on the connection's thread while they are cheap (the
    /// default), always inline, or always in a spawned task. See [`InlineMode`].
    ///
    /// Inline is right for handlers that answer quickly or wait on I/O. A handler that computes
    /// for long holds up the other streams of its connection while it runs inline; spawned, it
    /// runs on any worker thread, in parallel with the connection and its other calls.
    pub(crate) run_inline: InlineMode,
    /// With [`InlineMode::Adaptive`], a method whose calls are estimated to compute for longer
    /// than this in their first poll starts them in spawned tasks (default
    /// [`DEFAULT_INLINE_COST_LIMIT`](adaptive::DEFAULT_INLINE_COST_LIMIT)).
    pub(crate) inline_cost_limit: Duration,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        HandlerConfig {
            max_decoding_message_size: DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
            max_encoding_message_size: usize::MAX,
            // As C-core and grpc-go do: clients that compress requests mostly use gzip.
            accept_compressed: EncodingList::new().with(CompressionEncoding::Gzip),
            send_compressed: EncodingList::new(),
            receive_idle_timeout: None,
            run_inline: InlineMode::Adaptive,
            inline_cost_limit: adaptive::DEFAULT_INLINE_COST_LIMIT,
        }
    }
}

impl HandlerConfig {
    /// Limits the size of a decoded request message.
    pub fn max_decoding_message_size(mut self, limit: usize) -> Self {
        self.max_decoding_message_size = limit;
        self
    }

    /// The largest request message accepted, in bytes.
    #[doc(hidden)]
    pub fn max_request_size(&self) -> usize {
        self.max_decoding_message_size
    }

    /// Limits the size of an encoded reply message.
    pub fn max_encoding_message_size(mut self, limit: usize) -> Self {
        self.max_encoding_message_size = limit;
        self
    }

    /// The encodings requests may be compressed with besides `identity`.
    #[doc(hidden)]
    pub fn accepted_encodings(&self) -> &[CompressionEncoding] {
        self.accept_compressed.as_slice()
    }

    /// Accepts requests compressed with `encoding` too.
    pub fn accept_compressed(mut self, encoding: CompressionEncoding) -> Self {
        self.accept_compressed = self.accept_compressed.with(encoding);
        self
    }

    /// Refuses compressed requests, gzip included.
    pub fn refuse_compressed_requests(mut self) -> Self {
        self.accept_compressed = EncodingList::new();
        self
    }

    /// Compresses replies with `encoding` when the client accepts it.
    pub fn send_compressed(mut self, encoding: CompressionEncoding) -> Self {
        self.send_compressed = self.send_compressed.with(encoding);
        self
    }

    /// Always inline (`true`) or always spawned (`false`), instead of adaptive.
    pub fn run_inline(mut self, enabled: bool) -> Self {
        self.run_inline = if enabled {
            InlineMode::Always
        } else {
            InlineMode::Never
        };
        self
    }

    /// The estimated cost per call above which adaptive inline spawns a method's calls.
    pub fn inline_cost_limit(mut self, limit: Duration) -> Self {
        self.inline_cost_limit = limit;
        self
    }

    /// How long a request stream may stay silent while the handler waits for a message.
    pub fn receive_idle_timeout(mut self, timeout: Duration) -> Self {
        self.receive_idle_timeout = Some(timeout);
        self
    }
}

/// A call whose method was invoked: the method's reply, still to be marshalled, and the encoding
/// to marshal it with; or the status that stopped the call before the method ran.
type Invoked<T> = Result<(FastFuture<tonic::Response<T>, Status>, ReplyCodec), Status>;

/// How a call's replies are encoded: the compression negotiated for the call and the service's
/// limit on a reply's size; and the encodings the reply announces as accepted in requests.
#[derive(Debug, Clone, Copy)]
struct ReplyCodec {
    /// Protobuf or JSON, as the request's `content-type` asked.
    format: Format,
    encoding: Option<CompressionEncoding>,
    max_message_size: usize,
    /// The service's accepted encodings if the client speaks compression, else empty.
    announce: EncodingList,
}

impl ReplyCodec {
    /// One reply frame, compressed if the call has an encoding and the handler's
    /// [`MessageCompression`] switch, if it set one, is on.
    fn encode<M: prost::Message + serde::Serialize + 'static>(
        &self,
        message: &M,
        switch: Option<&MessageCompression>,
    ) -> Result<bytes::Bytes, Status> {
        let encoding = self.encoding.filter(|_| self.compresses(switch));
        crate::codec::encode_reply(message, self.format, encoding, self.max_message_size)
    }

    /// Whether a reply goes compressed: the call has an encoding, and the handler's switch, if
    /// it set one, is on.
    fn compresses(&self, switch: Option<&MessageCompression>) -> bool {
        self.encoding.is_some() && switch.is_none_or(MessageCompression::is_enabled)
    }

    /// Appends `message` to `batch` as one frame, if it goes uncompressed and its frame fits
    /// in `room` bytes; `Ok(false)` leaves `batch` as it was. A message above the limit is
    /// `RESOURCE_EXHAUSTED`, as [`encode`](Self::encode) has it.
    fn encode_into<M: prost::Message>(
        &self,
        message: &M,
        switch: Option<&MessageCompression>,
        batch: &mut bytes::BytesMut,
        room: usize,
    ) -> Result<bool, Status> {
        if self.compresses(switch) || self.format != Format::Proto {
            return Ok(false);
        }
        let len = message.encoded_len();
        crate::codec::check_reply_size(len, self.max_message_size)?;
        if crate::codec::FRAME_HEADER_LEN + len > room {
            return Ok(false);
        }
        crate::codec::encode_plain_into(message, len, batch)?;
        Ok(true)
    }
}

/// How a call's messages are encoded and compressed, each way, as negotiated from its request
/// headers.
#[derive(Debug, Clone, Copy)]
struct Encodings {
    request: RequestCodec,
    reply: ReplyCodec,
}

/// How a call's request messages are read.
#[derive(Debug, Clone, Copy)]
struct RequestCodec {
    /// One bare message (Connect unary), not gRPC's frames.
    bare: bool,
    decoding: Decoding,
    /// The request's encoding, for compressed messages.
    encoding: Option<CompressionEncoding>,
    max_message_size: usize,
}

impl HandlerConfig {
    /// Reads `grpc-encoding` (refusing one the service does not accept), picks the reply
    /// encoding from `grpc-accept-encoding` (Connect's headers for a Connect call), and whether
    /// the reply announces the encodings the service accepts, for `call`.
    ///
    /// A successful reply announces them to a client that speaks compression (it sent a
    /// `grpc-accept-encoding` of its own, as C-core and grpc-go clients do on every call). One
    /// more header on every reply (a custom name hashed into the `HeaderMap`, then
    /// HPACK-encoded) costs a light call a visible share of server CPU (docs/BENCHMARKS.md),
    /// which a client without compression would pay for nothing. Failed calls always announce them (`respond`).
    fn negotiate(&self, headers: &HeaderMap, call: &Call) -> Result<Encodings, Status> {
        let wire = call.wire_or_grpc();
        // Connect names them `content-encoding`, `accept-encoding` (or with `connect-`); a
        // REST call has none.
        let names = wire.encoding_headers();
        // One scan of the request's headers finds both.
        let (encoding, accept) = match names {
            Some(names) => crate::metadata::header_pair(headers, names.encoding(), names.accept()),
            None => (None, None),
        };
        let request_encoding = match names {
            Some(names) => {
                compression::named_encoding(encoding, names, self.accept_compressed.as_slice())?
            }
            None => None,
        };
        let announce = match accept {
            Some(_) => self.accept_compressed,
            None => EncodingList::new(),
        };
        let reply_encoding = names.filter(|_| accept.is_some()).and_then(|names| {
            compression::response_encoding(headers, names, self.send_compressed.as_slice())
        });
        Ok(Encodings {
            request: RequestCodec {
                bare: wire.bare(),
                decoding: call.decoding(),
                encoding: request_encoding,
                max_message_size: self.max_decoding_message_size,
            },
            reply: ReplyCodec {
                format: wire.format,
                encoding: reply_encoding,
                max_message_size: self.max_encoding_message_size,
                announce,
            },
        })
    }
}

/// The form a call's answer takes: gRPC's (which the router translates for the other
/// protocols), or Connect's unary form or REST's, when the router asked a unary handler for it
/// (`Call::take_own_form`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerForm {
    /// gRPC's, its `content-type` naming the call's format.
    Grpc(Format),
    /// Connect's unary form, in this format.
    Connect(Format),
    /// REST's: the bare JSON message, or the error as a `google.rpc.Status`.
    Rest,
}

impl AnswerForm {
    /// The form a unary handler answers `call` in: Connect's or REST's if its router asked.
    fn of_unary(call: &mut Call) -> AnswerForm {
        match call.take_own_form() {
            Some(wire) if wire.is_rest() => AnswerForm::Rest,
            Some(wire) => AnswerForm::Connect(wire.format),
            None => AnswerForm::Grpc(call.wire_or_grpc().format),
        }
    }

    /// The form a streaming handler answers `call` in: gRPC's.
    fn of_streaming(call: &Call) -> AnswerForm {
        AnswerForm::Grpc(call.wire_or_grpc().format)
    }
}

/// The `recover` step: a call chain, or the status that stopped it before it began (such as a
/// refused `grpc-encoding`), becomes a response; any failure is answered with its status, in
/// `form`, and announces the encodings the service accepts as its replies do.
fn respond(
    config: &HandlerConfig,
    form: AnswerForm,
    chain: Result<FastFuture<http::Response<ResponseBody>, Status>, Status>,
) -> ResponseFuture {
    let accepted = config.accept_compressed;
    let failed = move |status: Status| {
        let (mut response, accept) = match form {
            AnswerForm::Grpc(format) => (
                crate::protocol::grpc::failure(&status, format),
                compression::GRPC_ACCEPT_ENCODING,
            ),
            AnswerForm::Connect(_) => (
                crate::protocol::connect::error_response(&status),
                http::header::ACCEPT_ENCODING,
            ),
            // Compression is nothing to a REST client: nothing to announce.
            AnswerForm::Rest => return crate::protocol::rest::failure(&status),
        };
        if let Some(value) = accepted.accept_header() {
            response.headers_mut().insert(accept, value);
        }
        response
    };
    match chain {
        Ok(chain) => chain.recover(failed),
        Err(status) => FastFuture::ok(failed(status)),
    }
}

/// What a handler's request keeps of the HTTP request: its metadata and extensions. Method,
/// URI and version served routing, which is done; leaving them behind halves what each step of
/// the chain moves.
pub(super) struct RequestHead {
    headers: HeaderMap,
    extensions: http::Extensions,
}

impl RequestHead {
    fn new(parts: http::request::Parts) -> Self {
        RequestHead {
            headers: parts.headers,
            extensions: parts.extensions,
        }
    }

    /// The request a handler sees: this metadata and these extensions around `message`.
    fn into_request<T>(self, message: T) -> tonic::Request<T> {
        tonic::Request::from_parts(
            MetadataMap::from_headers(self.headers),
            self.extensions,
            message,
        )
    }
}

/// The headers of a reply: the handler's initial metadata, `content-type`, the reply encoding
/// if there is one, and the encodings the service accepts if it announces them.
fn reply_headers(metadata: MetadataMap, codec: ReplyCodec) -> HeaderMap {
    let mut headers = status::ok_headers(metadata.into_headers());
    if codec.format == Format::Json {
        headers.insert(http::header::CONTENT_TYPE, status::GRPC_JSON_CONTENT_TYPE);
    }
    if let Some(encoding) = codec.encoding {
        headers.insert(compression::GRPC_ENCODING, encoding.header_value());
    }
    if let Some(accepted) = codec.announce.accept_header() {
        headers.insert(compression::GRPC_ACCEPT_ENCODING, accepted);
    }
    headers
}
