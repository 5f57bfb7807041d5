//! The oracles of the JSON codec and of the Connect protocol's framing.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use fastgrpc::Code;
use fastgrpc::internals::codec::{DecodeOptions, decode_json, write_json};
use fastgrpc::service::{FastService, RequestBody, ResponseBody};
use http::HeaderValue;
use http_body::Body;
use prost::Message;
use protos::jsontest::json_test_server::JsonTestServer;
use protos::jsontest::{Scalars, WellKnown};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::ready;

// ---------------------------------------------------------------------------------------------
// json_decode: [selector, json...]
//   selector bits 0-1: the message type (Scalars, WellKnown, (), HelloRequest)
//   selector bit 2: unknown fields refused (else skipped, the default)

/// The JSON decoder on any bytes: a refusal is `INVALID_ARGUMENT`; what it accepts is written
/// back, and reading that again writes the same bytes (a fixed point after one round).
pub fn json_decode(data: &[u8]) {
    let [selector, json @ ..] = data else {
        return;
    };
    let options = DecodeOptions {
        reject_unknown_fields: selector & 4 != 0,
    };
    match selector & 3 {
        0 => round_trip::<Scalars>(json, options),
        1 => round_trip::<WellKnown>(json, options),
        2 => round_trip::<()>(json, options),
        _ => round_trip::<protos::helloworld::HelloRequest>(json, options),
    }
}

fn round_trip<M: Serialize + DeserializeOwned + 'static>(json: &[u8], options: DecodeOptions) {
    let message = match decode_json::<M>(json, options) {
        Ok(message) => message,
        Err(status) => {
            assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
            return;
        }
    };
    let mut written = Vec::new();
    write_json(&message, &mut written).expect("what was read can be written");
    let again: M = decode_json(&written, options).expect("what was written reads");
    let mut rewritten = Vec::new();
    write_json(&again, &mut rewritten).expect("writes");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&rewritten),
        "writing is a fixed point after one round trip"
    );
}

// ---------------------------------------------------------------------------------------------
// connect_call: [kind, body...]
//   kind bits 0-1: unary proto, unary JSON, streaming proto, streaming JSON;
//   kind bit 2: the body is a GET's query instead (to `Echo`, which has no side effects)
//   kind bit 3: the method is `EchoWellKnown` instead of `Echo`
//   kind bit 4: a POST carries one of Connect's request headers, named by bits 5-6
//     (`connect-timeout-ms`, `connect-protocol-version`, binary metadata `x-data-bin`,
//     `connect-timeout-ms`), its value the body's first line; the rest is the body

/// A Connect call of any body through a server's `Dispatcher` hosting `jsontest.JsonTest`,
/// whose methods echo: a unary answer is the request's message or a JSON error with a known
/// code; a streaming answer is HTTP 200, the request's messages echoed, then the end-of-stream
/// envelope. A malformed `connect-timeout-ms` (not 1 to 10 ASCII digits) or
/// `connect-protocol-version` (not `1`) is `invalid_argument`, and nothing is echoed.
pub fn connect_call(data: &[u8]) {
    let [kind, body @ ..] = data else {
        return;
    };
    let method = if kind & 8 == 0 {
        "Echo"
    } else {
        "EchoWellKnown"
    };
    let (content_type, streaming, json) = match kind & 3 {
        0 => ("application/proto", false, false),
        1 => ("application/json", false, true),
        2 => ("application/connect+proto", true, false),
        _ => ("application/connect+json", true, true),
    };
    let (header, body) = if kind & 16 != 0 && kind & 4 == 0 {
        let Some((header, body)) = connect_header(*kind, body) else {
            return;
        };
        (Some(header), body)
    } else {
        (None, body)
    };
    let dispatcher = fastgrpc::Server::builder()
        .add_service(JsonTestServer::new(protos::JsonEcho))
        .into_dispatcher();
    let request = if kind & 4 != 0 {
        let Ok(query) = std::str::from_utf8(body) else {
            return;
        };
        let Ok(request) = http::Request::get(format!("/jsontest.JsonTest/Echo?{query}"))
            .body(RequestBody::empty())
        else {
            return;
        };
        request
    } else {
        let mut request = http::Request::post(format!("/jsontest.JsonTest/{method}"))
            .header(http::header::CONTENT_TYPE, content_type)
            .body(RequestBody::whole(Bytes::copy_from_slice(body)))
            .expect("a valid request");
        if let Some(ConnectHeader { name, value, .. }) = &header {
            request.headers_mut().insert(*name, value.clone());
        }
        request
    };
    let get = kind & 4 != 0;
    let response = ready(dispatcher.call(request), "a call of an echo").expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let answer = drain(response.into_body());
    if get {
        // Its own reading is the unit tests'; here, a clear answer of some kind, and never in
        // gRPC's form, which a Connect client cannot read.
        assert!(
            [200, 400, 404, 405, 429, 500, 501].contains(&status.as_u16()),
            "GET answered {status}"
        );
        assert!(
            !headers
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc")),
            "GET answered in gRPC's form: {headers:?}"
        );
        return;
    }
    let refused = header.is_some_and(|header| header.valid == Some(false));
    if streaming {
        assert_eq!(status, 200, "a streaming answer is 200 whatever its status");
        let answered = envelopes(&answer).expect("the answer is whole envelopes");
        let (end, messages) = answered.split_last().expect("an end-of-stream envelope");
        assert_eq!(end.0, 0x02, "the last envelope ends the stream");
        let end: serde_json::Value = serde_json::from_slice(&end.1).expect("JSON");
        if refused {
            assert_eq!(end["error"]["code"], "invalid_argument", "{end}");
            assert!(messages.is_empty(), "nothing is echoed");
        } else if let Some(code) = end.get("error").and_then(|error| error.get("code")) {
            assert!(CODES.contains(&code.as_str().unwrap_or_default()), "{end}");
        } else {
            // Echoed: every request envelope's message, as the server reads it.
            let requests = envelopes(body).expect("a request the server took is envelopes");
            assert_eq!(messages.len(), requests.len().min(1));
            for (reply, request) in messages.iter().zip(&requests) {
                assert_eq!(reply.0, 0);
                assert_echoed(method, json, &request.1, &reply.1);
            }
        }
        return;
    }
    if refused {
        assert_eq!(status, 400, "a malformed Connect header is a bad request");
        let error: serde_json::Value = serde_json::from_slice(&answer).expect("a JSON error");
        assert_eq!(error["code"], "invalid_argument", "{error}");
    } else if status == 200 {
        assert_eq!(
            headers[http::header::CONTENT_TYPE],
            HeaderValue::from_static(content_type)
        );
        assert_echoed(method, json, body, &answer);
    } else {
        let error: serde_json::Value = serde_json::from_slice(&answer).expect("a JSON error");
        let code = error["code"].as_str().unwrap_or_default();
        assert!(CODES.contains(&code), "{error}");
    }
}

/// One of Connect's request headers, and whether its value is well-formed (`None`: not judged
/// here; binary metadata's base64 has its own unit tests).
#[derive(Clone)]
struct ConnectHeader {
    name: &'static str,
    value: HeaderValue,
    valid: Option<bool>,
}

/// The header `kind` names, its value `body`'s first line, and the rest of `body`; `None` if
/// the line is no header value.
fn connect_header(kind: u8, body: &[u8]) -> Option<(ConnectHeader, &[u8])> {
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let (line, rest) = (&body[..end], body.get(end + 1..).unwrap_or_default());
    let value = HeaderValue::from_bytes(line).ok()?;
    let (name, valid) = match (kind >> 5) & 3 {
        1 => ("connect-protocol-version", Some(line == b"1")),
        2 => ("x-data-bin", None),
        _ => (
            "connect-timeout-ms",
            Some((1..=10).contains(&line.len()) && line.iter().all(u8::is_ascii_digit)),
        ),
    };
    Some((ConnectHeader { name, value, valid }, rest))
}

/// Connect's code names.
const CODES: [&str; 16] = [
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
];

/// `reply` is `request`'s message, as an independent decode of the request reads it.
fn assert_echoed(method: &str, json: bool, request: &[u8], reply: &[u8]) {
    match (method, json) {
        ("Echo", false) => same_proto::<Scalars>(request, reply),
        (_, false) => same_proto::<WellKnown>(request, reply),
        ("Echo", true) => same_json::<Scalars>(request, reply),
        (_, true) => same_json::<WellKnown>(request, reply),
    }
}

/// `reply` encodes the message `request` decodes to: equal as messages, or, for a message
/// with a NaN (not equal to itself), as encodings. Messages first, since a map of more than one
/// entry is a `HashMap`, which two equal messages may encode in different orders.
fn same_proto<M: Message + Default + PartialEq>(request: &[u8], reply: &[u8]) {
    let request = M::decode(request).expect("the server decoded it");
    let reply = M::decode(reply).expect("a reply decodes");
    if request != reply {
        assert_eq!(request.encode_to_vec(), reply.encode_to_vec());
    }
}

/// `reply` is what writing the message `request` reads as gives.
fn same_json<M: Serialize + DeserializeOwned + 'static>(request: &[u8], reply: &[u8]) {
    let message: M = decode_json(request, DecodeOptions::default()).expect("the server read it");
    let mut written = Vec::new();
    write_json(&message, &mut written).expect("writes");
    assert_eq!(written, reply);
}

/// The envelopes of `body` (flag, payload); `None` if it does not divide into whole ones.
fn envelopes(mut body: &[u8]) -> Option<Vec<(u8, Vec<u8>)>> {
    let mut envelopes = Vec::new();
    while !body.is_empty() {
        let header = body.first_chunk::<5>()?;
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        let payload = body.get(5..5 + len)?;
        envelopes.push((header[0], payload.to_vec()));
        body = &body[5 + len..];
    }
    Some(envelopes)
}

/// All of a body's data, polled to its end (every frame must be ready: the echo never waits).
fn drain(mut body: ResponseBody) -> Vec<u8> {
    let mut data = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Ok(chunk) = frame.into_data() {
                    data.extend_from_slice(&chunk);
                }
            }
            Poll::Ready(Some(Err(status))) => panic!("the body failed: {status:?}"),
            Poll::Ready(None) => return data,
            Poll::Pending => panic!("an echo's body is pending"),
        }
    }
}
