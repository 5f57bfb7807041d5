//! What each fuzz target does with one input, written once.
//!
//! The fuzz targets (`fuzz/fuzz_targets/*.rs`, run by `cargo fuzz`) call these functions, and
//! so does the workspace's `tests/fuzz_regressions.rs`, which replays `fuzz/corpus/` in a plain
//! `cargo test`: a corpus input means the same thing to both. They reach the parsers and steps
//! they check through the runtime's hidden `internals` module (re-exports, and one
//! constructor), and drive whole calls through the `codegen` module, as generated code does.
//!
//! Every function takes arbitrary bytes and panics only when fastgrpc does something wrong: a
//! panic inside fastgrpc, a call that never finishes, or a result that contradicts an
//! independent reading of the input (the reference checks below). Any `Err` fastgrpc returns
//! for bad input is fine, as long as its code is one a client may see for it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fastgrpc::codegen::{HandlerConfig, MethodCosts};
use fastgrpc::internals::codec::{
    self, DEFAULT_MAX_RECEIVE_MESSAGE_SIZE, FRAME_HEADER_LEN, Format,
};
use fastgrpc::internals::compression::{self, AcceptEncoding, EncodingHeaders};
use fastgrpc::internals::deadline;
use fastgrpc::service::RequestBody;
use fastgrpc::{Code, CompressionEncoding, Deadline, Status};
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body::Body;
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;

mod connect;
mod rest;

pub use connect::{connect_call, json_decode};
pub use rest::{rest_query, rest_template};

/// A message with every kind of field prost decodes: strings, bytes, packed numbers, nested
/// and recursive messages, a map and a oneof.
#[derive(Clone, PartialEq, prost::Message, serde::Serialize, serde::Deserialize)]
pub struct Tree {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(bytes = "vec", tag = "2")]
    pub data: Vec<u8>,
    #[prost(uint64, repeated, tag = "3")]
    pub numbers: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub children: Vec<Tree>,
    #[prost(map = "string, int32", tag = "5")]
    pub labels: HashMap<String, i32>,
    #[prost(oneof = "Choice", tags = "6, 7")]
    pub choice: Option<Choice>,
}

/// The oneof of [`Tree`] (no floats: NaN would break the equality checks).
#[derive(Clone, PartialEq, prost::Oneof, serde::Serialize, serde::Deserialize)]
pub enum Choice {
    #[prost(sint32, tag = "6")]
    Small(i32),
    #[prost(fixed64, tag = "7")]
    Large(u64),
}

/// A message size limit: `0..=127` as is, or one of a few realistic limits up to the default
/// 4 MiB. (Larger limits only let the inputs allocate more, as they are allowed to.)
pub fn limit(selector: u8) -> usize {
    const LIMITS: [usize; 8] = [
        0,
        FRAME_HEADER_LEN,
        255,
        1024,
        16 * 1024,
        64 * 1024,
        1024 * 1024,
        DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
    ];
    if selector & 0x80 == 0 {
        usize::from(selector)
    } else {
        LIMITS[usize::from(selector & 7)]
    }
}

/// No encoding or one of those built in.
pub fn encoding(selector: u8) -> Option<CompressionEncoding> {
    let all = CompressionEncoding::ALL;
    match usize::from(selector) % (all.len() + 1) {
        0 => None,
        i => Some(all[i - 1]),
    }
}

/// One of the encodings built in.
pub fn some_encoding(selector: u8) -> CompressionEncoding {
    let all = CompressionEncoding::ALL;
    all[usize::from(selector) % all.len()]
}

/// The encodings whose bit (by position in [`CompressionEncoding::ALL`]) is set in `bits`.
pub fn encodings(bits: u8) -> Vec<CompressionEncoding> {
    CompressionEncoding::ALL
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, &encoding)| encoding)
        .collect()
}

/// Polls `future` once: everything fuzzed here completes without waiting (complete bodies,
/// handlers that answer at once, no timers), so `Pending` would be a hang on a real server.
fn ready<F: Future>(future: F, what: &str) -> F::Output {
    let future = pin!(future);
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("{what} is pending with everything it needs available"),
    }
}

/// The header of the frame at the start of `body`: (flag, declared length).
fn frame_header(body: &[u8]) -> Option<(u8, usize)> {
    let header = body.first_chunk::<FRAME_HEADER_LEN>()?;
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    Some((header[0], len as usize))
}

fn assert_code(status: &Status, allowed: &[Code], what: &str) {
    assert!(
        allowed.contains(&status.code()),
        "{what}: unexpected status {status:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// decode_unary: [selector, limit, body...]
//   selector bits 0-1: the request's grpc-encoding (none, or an encoding built in)
//   selector bits 2-3: the message type (String, (), Vec<u8>, Tree)
//   selector bits 4-5: the encoding `decompress` is tried with on the body as is

/// `codec::decode_unary` on a unary request body, and `compression::decompress` on the same
/// bytes.
pub fn decode_unary(data: &[u8]) {
    let [selector, limit_selector, body @ ..] = data else {
        return;
    };
    let limit = limit(*limit_selector);
    let encoding = encoding(selector & 3);
    let body = Bytes::copy_from_slice(body);
    match (selector >> 2) & 3 {
        0 => decode_as::<String>(&body, limit, encoding),
        1 => decode_as::<()>(&body, limit, encoding),
        2 => decode_as::<Vec<u8>>(&body, limit, encoding),
        _ => decode_as::<Tree>(&body, limit, encoding),
    }
    decompress(some_encoding(selector >> 4), &body, limit);
}

/// Decodes `body` as one `M`; checks what an accepted body must be, and that the message
/// survives encoding (compressed as the request was) and decoding again.
fn decode_as<M: Message + Default + PartialEq + Serialize + DeserializeOwned + 'static>(
    body: &Bytes,
    limit: usize,
    encoding: Option<CompressionEncoding>,
) {
    let message = match codec::decode_unary::<M>(body.clone(), limit, encoding, Format::Proto) {
        Ok(message) => message,
        Err(status) => {
            // UNIMPLEMENTED: no message, or more than one.
            assert_code(
                &status,
                &[Code::Internal, Code::ResourceExhausted, Code::Unimplemented],
                "decode",
            );
            return;
        }
    };
    let (flag, declared) = frame_header(body).expect("an accepted body has a frame header");
    assert_eq!(body.len(), FRAME_HEADER_LEN + declared, "exactly one frame");
    assert!(
        declared <= limit,
        "{declared} bytes accepted over the limit {limit}"
    );
    assert!(
        flag == 0 || (flag == 1 && encoding.is_some()),
        "flag {flag}"
    );
    if flag == 0 {
        assert!(
            message.encoded_len() <= declared,
            "re-encoding is never longer"
        );
    }

    let frame =
        codec::encode_reply(&message, Format::Proto, encoding, usize::MAX).expect("encodes");
    let relimit = (frame.len() - FRAME_HEADER_LEN).max(message.encoded_len());
    let again = codec::decode_unary::<M>(frame, relimit, encoding, Format::Proto)
        .expect("round trip decodes");
    assert!(again == message, "round trip changed the message");
}

/// `compression::decompress` on arbitrary bytes: bounded output, and a round trip of what it
/// produced.
fn decompress(encoding: CompressionEncoding, compressed: &[u8], limit: usize) {
    let output = match compression::decompress(encoding, compressed, limit) {
        Ok(output) => output,
        Err(status) => {
            assert_code(
                &status,
                &[Code::Internal, Code::ResourceExhausted],
                "decompress",
            );
            return;
        }
    };
    assert!(output.len() <= limit, "{} bytes over {limit}", output.len());
    let mut again = BytesMut::new();
    compression::compress(encoding, &output, &mut again).expect("compresses");
    let round_trip = compression::decompress(encoding, &again, limit).expect("round trip");
    assert_eq!(round_trip, output);
}

// ---------------------------------------------------------------------------------------------
// streaming_decode: [selector, limit, body...]
//   selector bits 0-1: the request's grpc-encoding
//   selector bit 2: the message type (String, Tree)
//   selector bits 3-7: the body arrives whole (0), or in chunks of 1 to 31 bytes

/// A request stream through `Streaming`, checked against decoding each frame on its own; the
/// body arrives whole or split into chunks anywhere (inside headers, inside messages).
pub fn streaming_decode(data: &[u8]) {
    let [selector, limit_selector, body @ ..] = data else {
        return;
    };
    let limit = limit(*limit_selector);
    let encoding = encoding(selector & 3);
    let body = Bytes::copy_from_slice(body);
    let chunk = usize::from(selector >> 3);
    if selector & 4 == 0 {
        stream_as::<String>(&body, chunk, limit, encoding);
    } else {
        stream_as::<Tree>(&body, chunk, limit, encoding);
    }
}

/// A request body that arrives in chunks of `chunk` bytes (the last one shorter).
struct Chunked {
    rest: Bytes,
    chunk: usize,
}

impl Body for Chunked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let take = self.chunk.min(self.rest.len());
        let piece = self.rest.split_to(take);
        Poll::Ready(Some(Ok(http_body::Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }
}

fn stream_as<M: Message + Default + PartialEq + std::fmt::Debug + DeserializeOwned + 'static>(
    body: &Bytes,
    chunk: usize,
    limit: usize,
    encoding: Option<CompressionEncoding>,
) {
    let request_body = match chunk {
        0 => RequestBody::whole(body.clone()),
        chunk => RequestBody::new(Chunked {
            rest: body.clone(),
            chunk,
        }),
    };
    let mut stream = codec::streaming::<M>(request_body, limit, encoding);
    let mut rest: &[u8] = body;
    loop {
        let item = ready(stream.message(), "Streaming::message");
        // The reference: the next frame alone, as a unary body.
        let Some((flag, declared)) = frame_header(rest) else {
            match item {
                Ok(None) if rest.is_empty() => {}
                Err(status) if !rest.is_empty() => {
                    assert_code(&status, &[Code::Internal], "stream ending inside a header");
                }
                other => panic!("{} bytes left: {other:?}", rest.len()),
            }
            break;
        };
        let end = (FRAME_HEADER_LEN + declared).min(rest.len());
        let expected =
            codec::decode_unary::<M>(body.slice_ref(&rest[..end]), limit, encoding, Format::Proto);
        match (item, expected) {
            (Ok(Some(message)), Ok(reference)) => {
                assert!(message == reference, "stream and unary decode differ");
                assert_eq!(stream.last_message_compressed(), flag == 1);
                rest = &rest[end..];
            }
            (Err(status), Err(reference)) => {
                assert_eq!(
                    status.code(),
                    reference.code(),
                    "{status:?} vs {reference:?}"
                );
                break;
            }
            (item, expected) => panic!("stream gave {item:?}, the frame alone {expected:?}"),
        }
    }
    // Once ended or failed, the stream stays ended.
    assert!(matches!(ready(stream.message(), "ended stream"), Ok(None)));
}

// ---------------------------------------------------------------------------------------------
// headers: [flags, line, "\n", line, ...]
//   flags bits 0-2: the encodings the server enables
//   flags bits 3-5: the server's default timeout (none, or one of a few)
//   line 0: grpc-timeout; line 1: grpc-encoding; lines 2..: grpc-accept-encoding values
//   every line is also parsed as each kind of value, and routed as a `:path`

/// Request header parsing: `grpc-timeout`, `grpc-encoding`, `grpc-accept-encoding`, and the
/// `UNIMPLEMENTED` answer to an unknown method's path.
pub fn headers(data: &[u8]) {
    let [flags, lines @ ..] = data else {
        return;
    };
    let enabled = encodings(*flags);
    let server_default = match (flags >> 3) & 7 {
        0 => None,
        1 => Some(Duration::ZERO),
        2 => Some(Duration::from_millis(1)),
        3 => Some(Duration::from_secs(30)),
        4 => Some(Duration::from_secs(86_400 * 365 * 100)),
        _ => Some(Duration::MAX),
    };

    let mut headers = HeaderMap::new();
    for (i, line) in lines.split(|&b| b == b'\n').enumerate() {
        unknown_method(line);
        let Ok(value) = HeaderValue::from_bytes(line) else {
            continue;
        };
        timeout(&value);
        accept_encoding(&value, &enabled);
        let name = match i {
            0 => deadline::GRPC_TIMEOUT,
            1 => compression::GRPC_ENCODING,
            _ => compression::GRPC_ACCEPT_ENCODING,
        };
        headers.append(name, value);
    }

    // The deadline: the client's and the server's, whichever is shorter.
    let client = headers.get(deadline::GRPC_TIMEOUT).map(reference_timeout);
    match (deadline::request_timeout(&headers, server_default), client) {
        (Err(status), Some(None)) => assert_code(&status, &[Code::Internal], "grpc-timeout"),
        (Ok(deadline), None) => assert_eq!(deadline, server_default),
        (Ok(deadline), Some(Some(client))) => {
            assert_eq!(
                deadline,
                Some(server_default.map_or(client, |s| s.min(client)))
            );
        }
        (result, client) => panic!("request_timeout {result:?}, reference {client:?}"),
    }

    request_encoding(&headers, &enabled);

    // The reply's encoding: the server's first choice among those the client accepts.
    let accepted: Vec<CompressionEncoding> = headers
        .get_all(compression::GRPC_ACCEPT_ENCODING)
        .iter()
        .flat_map(|value| reference_accept_encoding(value.as_bytes()))
        .collect();
    let expected = enabled.iter().copied().find(|e| accepted.contains(e));
    assert_eq!(
        compression::response_encoding(&headers, EncodingHeaders::GRPC, &enabled),
        expected
    );
    let from_headers = AcceptEncoding::from_headers(&headers, EncodingHeaders::GRPC);
    for &encoding in CompressionEncoding::ALL {
        assert_eq!(
            from_headers.contains(encoding),
            accepted.contains(&encoding)
        );
    }
}

/// `grpc-timeout` as the spec's grammar reads it: 1 to 8 ASCII digits, then a unit.
fn reference_timeout(value: &HeaderValue) -> Option<Duration> {
    let (&unit, digits) = value.as_bytes().split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

fn timeout(value: &HeaderValue) {
    let parsed = deadline::parse_grpc_timeout(value);
    match (&parsed, reference_timeout(value)) {
        (Ok(parsed), Some(reference)) => {
            assert_eq!(*parsed, reference);
            // Any timeout a client can send makes a deadline, without overflowing the clock.
            let _ = Deadline::after(*parsed).remaining();
        }
        (Err(status), None) => {
            assert_code(status, &[Code::Internal], "grpc-timeout");
            // The client's value is echoed only when short (at most 16 bytes, escaped).
            assert!(status.message().len() <= 256, "{status:?}");
        }
        (parsed, reference) => panic!("{value:?}: {parsed:?}, reference {reference:?}"),
    }
}

/// The encodings a `grpc-accept-encoding` value names: comma-separated, spaces and tabs
/// around names ignored, ASCII case ignored, unknown names and `identity` skipped.
fn reference_accept_encoding(value: &[u8]) -> Vec<CompressionEncoding> {
    let mut accepted = Vec::new();
    for name in value.split(|&b| b == b',') {
        let name = name.trim_ascii();
        for &encoding in CompressionEncoding::ALL {
            if name.eq_ignore_ascii_case(encoding.as_str().as_bytes()) {
                accepted.push(encoding);
            }
        }
    }
    accepted
}

/// The encodings an HTTP `accept-encoding` value accepts (RFC 9110 §12.5.3): each entry a
/// name and parameters after `;`; a `q` weight of zero (`qvalue = "0" [ "." 0*3DIGIT ]`, all
/// digits zero) refuses the name; `*` accepts every encoding no entry names.
fn reference_weighted_accept_encoding(value: &[u8]) -> Vec<CompressionEncoding> {
    let zero = |weight: &[u8]| match weight.split_first() {
        Some((b'0', [])) => true,
        Some((b'0', [b'.', digits @ ..])) => digits.len() <= 3 && digits.iter().all(|d| *d == b'0'),
        _ => false,
    };
    let (mut accepted, mut named, mut star) = (Vec::new(), Vec::new(), false);
    for entry in value.split(|&b| b == b',') {
        let mut parts = entry.split(|&b| b == b';');
        let name = parts.next().unwrap_or_default().trim_ascii();
        let refused = parts.any(|param| {
            let param = param.trim_ascii();
            param.len() > 2 && param[..2].eq_ignore_ascii_case(b"q=") && zero(&param[2..])
        });
        if name == b"*" {
            star = !refused;
        }
        for &encoding in CompressionEncoding::ALL {
            if name.eq_ignore_ascii_case(encoding.as_str().as_bytes()) {
                named.push(encoding);
                if !refused {
                    accepted.push(encoding);
                }
            }
        }
    }
    if star {
        accepted.extend(
            CompressionEncoding::ALL
                .iter()
                .filter(|e| !named.contains(e)),
        );
    }
    accepted
}

fn accept_encoding(value: &HeaderValue, enabled: &[CompressionEncoding]) {
    let weighted = AcceptEncoding::parse_weighted(value);
    let reference = reference_weighted_accept_encoding(value.as_bytes());
    for &encoding in CompressionEncoding::ALL {
        assert_eq!(
            weighted.contains(encoding),
            reference.contains(&encoding),
            "{value:?}"
        );
    }

    let parsed = AcceptEncoding::parse(value);
    let reference = reference_accept_encoding(value.as_bytes());
    for &encoding in CompressionEncoding::ALL {
        assert_eq!(parsed.contains(encoding), reference.contains(&encoding));
    }
    assert_eq!(parsed == AcceptEncoding::default(), reference.is_empty());
    let chosen = parsed.choose(enabled);
    assert_eq!(
        chosen,
        enabled.iter().copied().find(|e| reference.contains(e))
    );
    // The name of a single encoding maps back to it.
    let name = value.as_bytes();
    let named = CompressionEncoding::from_name(name);
    if let Some(encoding) = named {
        assert!(name.eq_ignore_ascii_case(encoding.as_str().as_bytes()));
    }
}

fn request_encoding(headers: &HeaderMap, enabled: &[CompressionEncoding]) {
    let result = compression::request_encoding(headers, EncodingHeaders::GRPC, enabled);
    let Some(value) = headers.get(compression::GRPC_ENCODING) else {
        assert_eq!(result.unwrap(), None);
        return;
    };
    let name = value.as_bytes();
    match result {
        Ok(None) => assert!(name.eq_ignore_ascii_case(b"identity"), "{value:?}"),
        Ok(Some(encoding)) => {
            assert!(enabled.contains(&encoding));
            assert!(name.eq_ignore_ascii_case(encoding.as_str().as_bytes()));
        }
        Err(status) => {
            assert_code(&status, &[Code::Unimplemented], "grpc-encoding");
            let enabled_name = CompressionEncoding::from_name(name).filter(|e| enabled.contains(e));
            assert!(
                enabled_name.is_none(),
                "{value:?} refused, but it is enabled"
            );
            assert_eq!(
                status
                    .metadata()
                    .get("grpc-accept-encoding")
                    .unwrap()
                    .as_bytes(),
                reference_accept_header(enabled).as_bytes()
            );
            // The client's name is echoed only when short (at most 32 bytes, escaped).
            assert!(status.message().len() <= 512, "{status:?}");
        }
    }
}

/// What a server enabling `enabled` announces in `grpc-accept-encoding`: `identity`, then each
/// enabled encoding once, in the server's order.
fn reference_accept_header(enabled: &[CompressionEncoding]) -> String {
    let mut names = vec!["identity"];
    for encoding in enabled {
        if !names.contains(&encoding.as_str()) {
            names.push(encoding.as_str());
        }
    }
    names.join(",")
}

/// The answer to a path no service has, for any path the `http` crate (and so h2) accepts.
fn unknown_method(line: &[u8]) {
    let Ok(path_and_query) = http::uri::PathAndQuery::try_from(line) else {
        return;
    };
    let path = path_and_query.path();
    let response = ready(
        fastgrpc::codegen::unimplemented_method(path),
        "unimplemented",
    )
    .expect("infallible");
    let headers = response.headers();
    assert_eq!(headers["grpc-status"], "12");
    let message = percent_decode(headers["grpc-message"].as_bytes());
    let echoed = message
        .strip_prefix(b"method not found: ")
        .expect("says what is missing");
    assert!(
        path.as_bytes().starts_with(echoed),
        "{message:?} for {path:?}"
    );
    // Only an excerpt of a client's path comes back: 128 bytes at most.
    //
    assert!(
        echoed.len() <= 128,
        "{} bytes of the path echoed",
        echoed.len()
    );
}

fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' && i + 2 < text.len() {
            let hex = std::str::from_utf8(&text[i + 1..i + 3]).expect("ascii");
            out.push(u8::from_str_radix(hex, 16).expect("percent-encoded byte"));
            i += 3;
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// route: [method, "\n", path, "\n", content-type]
//   each line as the request's method, `:path` and content-type (a line that is not a valid
//   one of those: POST, `/fuzz.Echo/Unary`, no content-type)

/// Routing through a server's [`Dispatcher`](fastgrpc::service::Dispatcher) that hosts one service,
/// `fuzz.Echo`, checked against an independent reading of the method, path and content-type.
pub fn route(data: &[u8]) {
    let mut lines = data.splitn(3, |&b| b == b'\n');
    let method =
        http::Method::from_bytes(lines.next().unwrap_or_default()).unwrap_or(http::Method::POST);
    let path = http::uri::PathAndQuery::try_from(lines.next().unwrap_or_default())
        .unwrap_or_else(|_| http::uri::PathAndQuery::from_static("/fuzz.Echo/Unary"));
    let content_type = HeaderValue::from_bytes(lines.next().unwrap_or_default()).ok();

    let mut request = http::Request::builder()
        .method(method.clone())
        .uri(path.clone());
    if let Some(content_type) = &content_type {
        request = request.header(http::header::CONTENT_TYPE, content_type.clone());
    }
    let request = request.body(RequestBody::empty()).expect("valid parts");
    let dispatcher = fastgrpc::Server::builder()
        .add_service(Echo)
        .into_dispatcher();
    let response = ready(
        fastgrpc::service::FastService::call(&dispatcher, request),
        "routing",
    )
    .expect("infallible");

    // The reference reading: the media type (parameters after `;` dropped) names gRPC or
    // gRPC-Web (`application/grpc`, `-web` or `-web-text`, bare or with `+proto` or `+json`:
    // another codec, `+thrift` say, is refused with 415), or Connect's unary protocol
    // (`application/proto`, `application/json`).
    let media = content_type.as_ref().map(|value| {
        let value = value.as_bytes();
        let end = value.iter().position(|&b| b == b';').unwrap_or(value.len());
        value[..end].trim_ascii_end()
    });
    let is_grpc_or_web = media.is_some_and(|media| {
        [
            "application/grpc",
            "application/grpc-web",
            "application/grpc-web-text",
        ]
        .iter()
        .any(|base| {
            ["", "+proto", "+json"]
                .iter()
                .any(|codec| media == format!("{base}{codec}").as_bytes())
        })
    });
    let is_connect = matches!(media, Some(b"application/proto" | b"application/json"));
    let service = path.path().strip_prefix('/').and_then(|rest| {
        let slash = rest.find('/')?;
        let (service, method) = (&rest[..slash], &rest[slash + 1..]);
        (!service.is_empty() && !method.is_empty() && !method.contains('/')).then_some(service)
    });
    let routed = response.headers().get("x-routed-to");
    // A GET with an `encoding` parameter is Connect's (its own reading: `connect_call`).
    let connect_get = method == http::Method::GET
        && path.query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| pair.split('=').next() == Some("encoding"))
        });
    if connect_get {
        assert!(
            [400, 404, 429, 500].contains(&response.status().as_u16()),
            "a Connect GET answered {}",
            response.status()
        );
    } else if method != http::Method::POST {
        assert_eq!(response.status(), http::StatusCode::METHOD_NOT_ALLOWED);
    } else if is_connect {
        if service == Some("fuzz.Echo") {
            assert_eq!(
                routed.map(HeaderValue::as_bytes),
                Some(path.path().as_bytes())
            );
            // Echo answers a status and no message, which a Connect unary answer cannot be.
            assert_eq!(response.status(), http::StatusCode::INTERNAL_SERVER_ERROR);
        } else {
            assert!(routed.is_none(), "{path} was routed");
            assert_eq!(response.status(), http::StatusCode::NOT_FOUND, "{path}");
        }
    } else if !is_grpc_or_web {
        assert_eq!(response.status(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    } else if service == Some("fuzz.Echo") {
        assert_eq!(
            routed.map(HeaderValue::as_bytes),
            Some(path.path().as_bytes())
        );
    } else {
        assert!(routed.is_none(), "{path} was routed");
        assert_eq!(response.status(), http::StatusCode::OK);
        assert_eq!(response.headers()["grpc-status"], "12", "{path}");
    }
}

/// The one service `route` hosts: answers OK, naming the path it was called for.
struct Echo;

impl fastgrpc::service::NamedService for Echo {
    const NAME: &'static str = "fuzz.Echo";
}

impl fastgrpc::service::FastService for Echo {
    fn call(&self, request: http::Request<RequestBody>) -> fastgrpc::service::ResponseFuture {
        let mut response = fastgrpc::internals::response::status(&Status::ok(""));
        let path = HeaderValue::from_str(request.uri().path()).expect("a path is a valid value");
        response.headers_mut().insert("x-routed-to", path);
        fastgrpc::FastFuture::ok(response)
    }
}

// ---------------------------------------------------------------------------------------------
// unary_call: [flags, limits, head, "\n\n", body...]
//   flags bits 0-2: accept_compression; bits 3-5: send_compression;
//   flags bit 6: the method echoes the request metadata as its reply metadata
//   limits: receive limit (as `limit`); send limit is unlimited or that same limit (bit 6)
//   head: the path on its first line, then `name:value` header lines

/// A whole unary call through `handler::unary`, with an echo method, checked against decoding
/// the request alone.
pub fn unary_call(data: &[u8]) {
    let [flags, limits, rest @ ..] = data else {
        return;
    };
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (rest, &[][..]),
    };
    let mut lines = head.split(|&b| b == b'\n');
    let path = lines.next().unwrap_or_default();
    let mut request = http::Request::builder().method(http::Method::POST);
    request = match http::uri::PathAndQuery::try_from(path) {
        Ok(path) => request.uri(path),
        Err(_) => request.uri("/fuzz.Echo/Unary"),
    };
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) {
            headers.append(name, value);
        }
    }
    let receive_limit = limit(limits & 0xbf);
    let send_limit = if limits & 0x40 != 0 {
        receive_limit
    } else {
        usize::MAX
    };
    let accepted = encodings(*flags);
    let sent = encodings(flags >> 3);
    let config = accepted.iter().fold(
        HandlerConfig::default().refuse_compressed_requests(),
        |config, &encoding| config.accept_compressed(encoding),
    );
    let config = sent
        .iter()
        .fold(config, |config, &encoding| config.send_compressed(encoding))
        .max_decoding_message_size(receive_limit)
        .max_encoding_message_size(send_limit)
        .run_inline(true);
    let costs = MethodCosts::new(1);
    let echo_metadata = flags & 0x40 != 0;
    let body = Bytes::copy_from_slice(body);
    let mut request = request
        .body(RequestBody::whole(body.clone()))
        .expect("a valid request");
    *request.headers_mut() = headers.clone();

    // What the call must answer, from the pieces on their own.
    let expected = compression::request_encoding(&headers, EncodingHeaders::GRPC, &accepted)
        .and_then(|encoding| {
            codec::decode_unary::<Tree>(body, receive_limit, encoding, Format::Proto)
        })
        .and_then(|message| {
            if message.encoded_len() > send_limit {
                Err(Status::resource_exhausted("reply over the send limit"))
            } else {
                Ok(message)
            }
        });
    let reply_encoding = compression::response_encoding(&headers, EncodingHeaders::GRPC, &sent);

    let mut context = fastgrpc::codegen::Call::of_request(&request);
    let call = fastgrpc::codegen::unary::<Tree, Tree, _, _>(
        request,
        &mut context,
        config.method(&costs, 0),
        move |request| {
            let (metadata, _, message) = request.into_parts();
            let mut reply = fastgrpc::Response::new(message);
            if echo_metadata {
                *reply.metadata_mut() = metadata;
            }
            std::future::ready(Ok(reply))
        },
    );
    let response = ready(call, "unary call").expect("infallible");
    let (parts, mut body) = response.into_parts();
    assert_eq!(parts.status, http::StatusCode::OK);
    assert_eq!(
        parts
            .headers
            .get_all(http::header::CONTENT_TYPE)
            .iter()
            .count(),
        1
    );
    assert_eq!(
        parts.headers[http::header::CONTENT_TYPE],
        "application/grpc"
    );
    for reserved in [
        "te",
        "connection",
        "transfer-encoding",
        "upgrade",
        "keep-alive",
    ] {
        assert!(
            !parts.headers.contains_key(reserved),
            "{reserved} in a response"
        );
    }

    let mut frames = Vec::new();
    let mut trailers = None;
    while let Some(frame) = ready(
        std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)),
        "response body",
    ) {
        let frame = frame.expect("a unary body does not fail");
        match frame.into_data() {
            Ok(data) => frames.push(data),
            Err(frame) => trailers = Some(frame.into_trailers().expect("data or trailers")),
        }
    }

    match expected {
        Err(status) => {
            // Trailers-only: the status in the headers, nothing else.
            assert_eq!(
                parts.headers["grpc-status"],
                (status.code() as i32).to_string().as_str(),
                "expected {status:?}"
            );
            assert!(frames.is_empty() && trailers.is_none());
        }
        Ok(message) => {
            assert!(!parts.headers.contains_key("grpc-status"), "{parts:?}");
            let trailers = trailers.expect("a successful call ends with trailers");
            assert_eq!(trailers["grpc-status"], "0");
            let [frame] = &frames[..] else {
                panic!("{} reply frames", frames.len());
            };
            let announced: Vec<&[u8]> = parts
                .headers
                .get_all(compression::GRPC_ENCODING)
                .iter()
                .map(HeaderValue::as_bytes)
                .collect();
            match reply_encoding {
                Some(encoding) => assert_eq!(announced, [encoding.as_str().as_bytes()]),
                None => assert!(
                    announced.is_empty(),
                    "grpc-encoding {announced:?} on an uncompressed reply"
                ),
            }
            let reply = codec::decode_unary::<Tree>(
                frame.clone(),
                usize::MAX,
                reply_encoding,
                Format::Proto,
            )
            .expect("the reply decodes");
            assert!(reply == message, "the echo differs from the request");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// http2_frame: frames one after another: a 9-byte head (its length cut to what is left), then
// the payload.

/// Every frame of fastgrpc's HTTP/2 engine parsed from arbitrary bytes: no panic, and what a
/// frame carries lies within its payload.
pub fn http2_frame(mut data: &[u8]) {
    use fastgrpc::internals::frame::{self, Frame, HEAD_LEN, Head};
    while data.len() >= HEAD_LEN {
        let mut head = Head::parse(data[..HEAD_LEN].try_into().expect("9 bytes"));
        data = &data[HEAD_LEN..];
        head.len = head.len.min(data.len());
        let payload = Bytes::copy_from_slice(&data[..head.len]);
        data = &data[head.len..];
        match frame::parse(head, payload) {
            Ok(Frame::Data { data, flow_len, .. }) => {
                assert!(data.len() <= flow_len && flow_len == head.len);
            }
            Ok(Frame::Headers { block, .. }) | Ok(Frame::Continuation { block, .. }) => {
                assert!(block.len() <= head.len);
            }
            Ok(_) | Err(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------
// hpack_decode: [limit, then blocks, each a length byte and that many bytes]

/// Header blocks through one HPACK decoder (its table carried from block to block): no panic,
/// the fields emitted stay within the header list limit, and a block that decodes whole
/// re-encodes, through fastgrpc's encoder, to a block that decodes to the same fields.
pub fn hpack_decode(data: &[u8]) {
    use fastgrpc::internals::hpack::{Decoded, Decoder, Encoder, Indexing};
    let Some((&selector, mut rest)) = data.split_first() else {
        return;
    };
    let max_list = 64 + (selector as usize) * 64;
    let mut decoder = Decoder::new(4096);
    let mut encoder = Encoder::default();
    let mut echo = Decoder::new(4096);
    while let Some((&len, after)) = rest.split_first() {
        let len = (len as usize).min(after.len());
        let (block, next) = after.split_at(len);
        rest = next;
        let mut fields = Vec::new();
        let mut size = 0;
        let Ok(decoded) = decoder.decode(block, max_list, |name, value| {
            size += name.len() + value.len() + 32;
            fields.push((name.to_vec(), value.to_vec()));
        }) else {
            // A compression error ends the connection: its table is not used again.
            return;
        };
        assert!(
            size <= max_list,
            "{size} bytes emitted past a limit of {max_list}"
        );
        if decoded == Decoded::Complete {
            let mut block = Vec::new();
            encoder.begin_block(&mut block);
            for (i, (name, value)) in fields.iter().enumerate() {
                let indexing = if i % 2 == 0 {
                    Indexing::Cache
                } else {
                    Indexing::Never
                };
                encoder.field(name, value, indexing, &mut block);
            }
            let mut again = Vec::new();
            echo.decode(&block, usize::MAX / 2, |name, value| {
                again.push((name.to_vec(), value.to_vec()))
            })
            .expect("our own block decodes");
            assert_eq!(again, fields);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// http2_connection: what a client sends after the preface and an empty SETTINGS frame.

/// Arbitrary bytes from a client to a whole server on fastgrpc's engine, over an in-memory
/// pipe, with time running as fast as the server waits: no panic, the connection ends (the
/// client stops sending and closes), and what the server writes back is bounded.
pub fn http2_connection(data: &[u8]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let input = [
        &b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"[..],
        data,
    ]
    .concat();
    runtime.block_on(async move {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let incoming = futures_util::stream::iter([Ok::<_, std::io::Error>(server)]);
        let serving = tokio::spawn(
            fastgrpc::Server::builder()
                .add_service(Echo)
                .serve_with_incoming(incoming, std::future::pending()),
        );
        let (mut read, mut write) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            let _ = write.write_all(&input).await;
            let _ = write.shutdown().await;
        });
        let mut written = 0usize;
        let mut buf = vec![0u8; 16 * 1024];
        let read_all = async {
            loop {
                match read.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => written += n,
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(600), read_all)
            .await
            .expect("the connection ends once the client has closed");
        assert!(
            written <= 1024 * 1024 + data.len() * 64,
            "{written} bytes written for {} sent",
            data.len()
        );
        let _ = writer.await;
        serving.abort();
    });
}
