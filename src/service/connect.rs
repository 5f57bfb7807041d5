//! The Connect protocol (unary: `application/proto`, `application/json`; streaming:
//! `application/connect+proto`, `+json`) served beside gRPC on the same paths, by the same
//! handlers.
//!
//! As with gRPC-Web, the router serves a Connect call as a gRPC call and translates at the
//! edges. The handler reads a unary call's bare body, a streaming call's envelopes (gRPC's
//! frames by another name) and Connect's encoding headers itself: the call's wire tells it to.
//! A unary handler asked to (`Call::ask_own_form`) answers in Connect's form itself; otherwise
//! the gRPC-form answer becomes Connect's here:
//! - unary: the message without its frame header, trailing metadata as `trailer-` headers, a
//!   failure as its HTTP status with a JSON error body;
//! - streaming: HTTP 200, the messages as they come, and the status and trailing metadata in
//!   a last end-of-stream envelope (flag `0x02`, JSON).
//!
//! The call is observed (metrics, span) before the translation, so it counts as gRPC calls do.
//! Its deadline (`connect-timeout-ms`) is read with its head and held by the dispatcher, as
//! every call's is. A ready call is still answered inline.

use std::pin::pin;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue};
use http_body::Body as _;
use tonic::{Code, Status};

use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
use crate::codec::FRAME_HEADER_LEN;
use crate::compression::{EncodingHeaders, GRPC_ENCODING};
use crate::handler::ResponseFuture;
use crate::protocol::connect;
use crate::protocol::grpc::ConnectHttpStatus;
use crate::protocol::in_band::{InBand, in_band};
use crate::protocol::{Format, Protocol, Wire};
use crate::{spare_maps, status};

/// The most of a reply body that is not whole (a hosted service's, or one a layer replaced)
/// gathered to answer a Connect unary call with.
const MAX_GATHERED: usize = 64 * 1024 * 1024;

/// Checks a Connect request before the gRPC handlers serve it: its protocol version, and its
/// binary metadata (base64, as Connect asks). Its deadline was read with its head, and the
/// handler reads Connect's encoding headers itself (the call's `Wire` names them).
fn check(request: &http::Request<RequestBody>) -> Result<(), Status> {
    let headers = request.headers();
    // One pass over the names, whose values are read only where they matter: a request has a
    // few headers, and most have none of these.
    for name in headers.keys() {
        match name.as_str() {
            connect::PROTOCOL_VERSION => check_version(headers.get(name))?,
            other if other.ends_with("-bin") => check_binary_metadata(name, headers)?,
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a `connect-protocol-version` other than 1, the one version there is.
fn check_version(version: Option<&HeaderValue>) -> Result<(), Status> {
    match version {
        Some(version) if version != "1" => Err(Status::invalid_argument(format!(
            "connect-protocol-version must be 1, not {:?}",
            crate::status::excerpt(&String::from_utf8_lossy(version.as_bytes()))
        ))),
        _ => Ok(()),
    }
}

/// Refuses binary metadata (`name`, a `-bin` header) that is not base64, padded or not, as
/// Connect asks: `INVALID_ARGUMENT`, before any handler reads it.
fn check_binary_metadata(name: &http::HeaderName, headers: &HeaderMap) -> Result<(), Status> {
    for value in headers.get_all(name) {
        // Several values of one name may come joined by commas.
        let text = value.to_str().unwrap_or("\u{0}");
        if text
            .split(',')
            .any(|value| crate::types::decode_base64(value.trim()).is_none())
        {
            return Err(Status::invalid_argument(format!(
                "binary metadata {name} is not base64"
            )));
        }
    }
    Ok(())
}

/// The longest query a Connect GET may have: its message is at most this long, encoded.
const MAX_GET_QUERY: usize = 32 * 1024;

/// A Connect GET request (`?encoding=proto|json&message=..`, with `base64=1` for a message in
/// base64, `compression` for a compressed one, `connect=v1`; other parameters are ignored) as
/// the unary POST it stands for: the message as its body, `content-type` and
/// `content-encoding` from the query. The method stays GET, so that the handler refuses a
/// method with side effects. `None` for a GET that is not Connect's (no `encoding`).
pub(crate) fn get_request(
    request: http::Request<RequestBody>,
) -> Option<Result<http::Request<RequestBody>, Status>> {
    // A clone shares the URI's bytes: the parameters borrow it while the request moves on.
    let uri = request.uri().clone();
    let query = uri.query()?;
    let encoding = connect::get_encoding(query)?;
    let mut message = None;
    let mut base64 = false;
    let mut compression = None;
    let mut version_ok = true;
    for pair in query.split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match name {
            "message" => message = Some(value),
            "base64" => base64 = value == "1",
            "compression" => compression = Some(value),
            "connect" => version_ok = value == "v1",
            _ => {}
        }
    }
    let format = match encoding {
        "proto" => Format::Proto,
        "json" => Format::Json,
        other => {
            return Some(Err(Status::invalid_argument(format!(
                "a Connect GET's encoding is proto or json, not {:?}",
                status::excerpt(other)
            ))));
        }
    };
    Some(get_parts(
        request,
        format,
        message,
        base64,
        compression,
        version_ok,
    ))
}

/// The rest of [`get_request`], once the request is known to be a Connect GET.
fn get_parts(
    request: http::Request<RequestBody>,
    format: Format,
    message: Option<&str>,
    base64: bool,
    compression: Option<&str>,
    version_ok: bool,
) -> Result<http::Request<RequestBody>, Status> {
    if !version_ok {
        return Err(Status::invalid_argument(
            "a Connect GET's connect parameter must be v1",
        ));
    }
    if request.uri().query().map_or(0, str::len) > MAX_GET_QUERY {
        return Err(Status::resource_exhausted(format!(
            "a Connect GET's query is limited to {MAX_GET_QUERY} bytes: send a POST"
        )));
    }
    let message = percent_decoded(message.unwrap_or_default())?;
    let message = if base64 {
        let text = std::str::from_utf8(&message).unwrap_or_default();
        crate::types::decode_base64(text).ok_or_else(|| {
            Status::invalid_argument("a Connect GET's message is not valid base64")
        })?
    } else {
        message
    };
    let (mut parts, _) = request.into_parts();
    parts.extensions.insert(ConnectGet {
        uri: parts.uri.clone(),
    });
    parts
        .headers
        .insert(CONTENT_TYPE, connect::unary_content_type(format));
    if let Some(compression) = compression.filter(|name| *name != "identity") {
        let value = HeaderValue::from_str(compression)
            .map_err(|_| Status::invalid_argument("a Connect GET's compression is not a name"))?;
        parts.headers.insert(CONTENT_ENCODING, value);
    }
    let body = RequestBody::whole(Bytes::from(message));
    Ok(http::Request::from_parts(parts, body))
}

/// In the request extensions of a call made with a Connect GET (which Connect allows for
/// methods whose proto says `idempotency_level = NO_SIDE_EFFECTS`): the request's query, for a
/// handler that reads more of it than the message. A call without it came as a POST.
///
/// ```
/// use fastgrpc::service::ConnectGet;
///
/// fn parameters<T>(request: &fastgrpc::Request<T>) -> Vec<(String, String)> {
///     match request.extensions().get::<ConnectGet>() {
///         Some(get) => get.parameters().collect(),
///         None => Vec::new(), // a POST
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ConnectGet {
    uri: http::Uri,
}

impl ConnectGet {
    /// The query as sent, without its `?`.
    pub fn query(&self) -> &str {
        self.uri.query().unwrap_or_default()
    }

    /// The query's parameters in order, names and values percent-decoded (`+` as a space);
    /// an escape that is not one, or bytes that are not UTF-8, are kept as they came.
    pub fn parameters(&self) -> impl Iterator<Item = (String, String)> + '_ {
        let decoded = |text: &str| {
            percent_decoded(text)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .unwrap_or_else(|| text.to_owned())
        };
        self.query()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(move |pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                (decoded(name), decoded(value))
            })
    }
}

/// A query value's bytes: `%XX` escapes decoded, `+` as a space (as HTML forms and Go's
/// `url.Query` have it).
fn percent_decoded(value: &str) -> Result<Vec<u8>, Status> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|hex| std::str::from_utf8(hex).ok())
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| {
                        Status::invalid_argument("a Connect GET's message has a bad % escape")
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// A gRPC-form answer in Connect's form: at once when its whole body is known, as it always
/// is for a generated server's unary reply; gathered first otherwise.
fn translate(response: http::Response<ResponseBody>, wire: Wire) -> ResponseFuture {
    let (parts, mut body) = response.into_parts();
    match body.take_whole() {
        Some((message, trailers)) => FastFuture::ok(whole(parts, message, trailers, wire)),
        None => FastFuture::boxed(async move {
            Ok(match gather(body).await {
                Ok((message, trailers)) => whole(parts, message, trailers, wire),
                Err(status) => connect::error_response(&status),
            })
        }),
    }
}

/// A body's data (all of it, joined) and trailers; an error or more than `MAX_GATHERED`
/// bytes is the status to fail the call with.
pub(super) async fn gather(
    mut body: ResponseBody,
) -> Result<(Option<Bytes>, Option<HeaderMap>), Status> {
    let mut data = BytesMut::new();
    let mut trailers = None;
    while let Some(frame) = std::future::poll_fn(|cx| pin!(&mut body).poll_frame(cx)).await {
        match frame?.into_data() {
            Ok(chunk) if data.len() + chunk.len() > MAX_GATHERED => {
                return Err(Status::resource_exhausted(
                    "the reply is too large for a Connect unary answer",
                ));
            }
            Ok(chunk) => data.extend_from_slice(&chunk),
            Err(frame) => trailers = frame.into_trailers().ok(),
        }
    }
    Ok(((!data.is_empty()).then(|| data.freeze()), trailers))
}

/// Connect's form of a whole gRPC-form answer: `head` and, unless it was trailers-only, its
/// one `frame` and `trailers`. A success builds no `Status` and gives the trailers' map back
/// to the thread's spare maps, as the engine does with a gRPC reply's.
fn whole(
    head: http::response::Parts,
    frame: Option<Bytes>,
    trailers: Option<HeaderMap>,
    wire: Wire,
) -> http::Response<ResponseBody> {
    // A gRPC answer's status is in its trailers, or in its head if it is trailers-only.
    let status_map = trailers.as_ref().unwrap_or(&head.headers);
    if status::code_of(status::status_in(status_map)) != Code::Ok {
        let status = Status::from_header_map(status_map)
            .unwrap_or_else(|| Status::internal("the reply carries no status"));
        return error(head, &status);
    }
    let Some(mut frame) = frame.filter(|frame| frame.len() >= FRAME_HEADER_LEN) else {
        return error(head, &Status::internal("the reply carries no message"));
    };
    let compressed = frame[0] == 1;
    frame.advance(FRAME_HEADER_LEN);
    let mut headers = head.headers;
    let encoding = if compressed {
        headers.remove(GRPC_ENCODING)
    } else {
        None
    };
    let headers = connect::metadata_only(headers);
    let mut response =
        connect::unary_answer(headers, frame, wire.format, encoding, trailers.as_ref());
    if let Some(trailers) = trailers {
        spare_maps::give_back(trailers);
    }
    *response.extensions_mut() = head.extensions;
    response
}

/// The error answer for `status`, with the metadata the gRPC-form answer's head had; 404 for
/// a path that names no method, as an HTTP server without the route would answer.
fn error(head: http::response::Parts, status: &Status) -> http::Response<ResponseBody> {
    let mut response = connect::error_response(status);
    // A trailers-only answer's head is the status's metadata already; a failed call whose
    // head went first has its metadata there.
    for (name, value) in connect::metadata_only(head.headers).iter() {
        if !response.headers().contains_key(name) {
            response.headers_mut().append(name, value.clone());
        }
    }
    if let Some(ConnectHttpStatus(http)) = head.extensions.get() {
        *response.status_mut() = *http;
    }
    response
}

/// Serves `request`, a Connect call, through `serve` (which serves it as a gRPC call): unary or
/// streaming, as its wire says, with the answer in Connect's form. A unary handler is asked to
/// answer in Connect's form itself; if none did, its gRPC-form answer is translated.
pub(crate) fn serve(
    request: http::Request<RequestBody>,
    call: &mut Call,
    serve: impl FnOnce(http::Request<RequestBody>, &mut Call) -> ResponseFuture,
) -> ResponseFuture {
    let wire = call.wire_or_grpc();
    if let Err(status) = check(&request) {
        return FastFuture::ok(call.failure(&status));
    }
    if wire.protocol == Protocol::ConnectStream {
        return serve(request, call).map(move |response| translate_stream(response, wire));
    }
    call.ask_own_form();
    let response = serve(request, call);
    if call.answered_in_own_form() {
        return response;
    }
    response.and_then(move |response| translate(response, wire))
}

/// A gRPC-form answer in the form of Connect's streaming protocol: HTTP 200, the head's
/// metadata as headers, the messages as they come (gRPC's frames are Connect's envelopes, flag
/// `0x01` for a compressed one), and the status and trailing metadata in a last end-of-stream
/// envelope. A trailers-only answer is that envelope alone, unless its refusal is one Connect
/// answers with an HTTP status (an unknown route: 404).
fn translate_stream(
    response: http::Response<ResponseBody>,
    wire: Wire,
) -> http::Response<ResponseBody> {
    let (head, body) = response.into_parts();
    if body.is_end_stream() {
        if head.extensions.get::<ConnectHttpStatus>().is_some() {
            let status = Status::from_header_map(&head.headers)
                .unwrap_or_else(|| Status::internal("the reply carries no status"));
            return error(head, &status);
        }
        let status = Status::from_header_map(&head.headers);
        let end = connect::end_stream(status.as_ref(), &head.headers);
        return connect::stream_answer(HeaderMap::new(), ResponseBody::whole(end), wire.format);
    }
    let mut headers = head.headers;
    let encoding = headers.remove(GRPC_ENCODING);
    let mut headers = connect::metadata_only(headers);
    if let Some(accepted) = headers.remove(ACCEPT_ENCODING) {
        headers.insert(EncodingHeaders::CONNECT_STREAM.accept().clone(), accepted);
    }
    if let Some(encoding) = encoding {
        headers.insert(EncodingHeaders::CONNECT_STREAM.encoding().clone(), encoding);
    }
    let body = in_band(body, Streamed);
    let mut response = connect::stream_answer(headers, body, wire.format);
    *response.extensions_mut() = head.extensions;
    response
}

/// `response` to a Connect call, in Connect's form if it is a refusal in gRPC's (trailers-only,
/// `content-type: application/grpc`), as a tower layer around the router makes them; as it is
/// otherwise.
pub(crate) fn in_connect_form(
    response: http::Response<ResponseBody>,
    wire: Wire,
) -> http::Response<ResponseBody> {
    let grpc_refusal = response.body().is_end_stream()
        && response.headers().get(CONTENT_TYPE) == Some(&crate::status::GRPC_CONTENT_TYPE);
    let Some(status) = grpc_refusal
        .then(|| Status::from_header_map(response.headers()))
        .flatten()
    else {
        return response;
    };
    if wire.protocol == Protocol::ConnectStream {
        return connect::failed_stream(&status, wire.format);
    }
    let (head, _) = response.into_parts();
    error(head, &status)
}

/// Connect's in-band trailers: the end-of-stream envelope, with the status and the trailing
/// metadata; the messages' envelopes are gRPC's frames as they are.
struct Streamed;

impl InBand for Streamed {
    fn trailers(&self, trailers: &HeaderMap) -> Bytes {
        connect::end_stream(Status::from_header_map(trailers).as_ref(), trailers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(query: &str) -> Option<Result<http::Request<RequestBody>, Status>> {
        let request = http::Request::get(format!("/pkg.Svc/M?{query}"))
            .body(RequestBody::empty())
            .unwrap();
        get_request(request)
    }

    fn body_of(request: http::Request<RequestBody>) -> Vec<u8> {
        request.into_body().into_whole().unwrap().to_vec()
    }

    #[test]
    fn a_connect_get_becomes_the_post_it_stands_for() {
        let request = get("encoding=json&message=%7B%22a%22%3A+1%7D&connect=v1&x=y")
            .unwrap()
            .unwrap();
        assert_eq!(request.method(), http::Method::GET, "the handler checks it");
        assert_eq!(request.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(body_of(request), br#"{"a": 1}"#);

        let request = get("message=CgNhYmM&encoding=proto&base64=1&compression=gzip")
            .unwrap()
            .unwrap();
        assert_eq!(request.headers()[CONTENT_TYPE], "application/proto");
        assert_eq!(request.headers()[CONTENT_ENCODING], "gzip");
        assert_eq!(body_of(request), b"\x0a\x03abc");

        let request = get("encoding=proto").unwrap().unwrap();
        assert!(
            body_of(request).is_empty(),
            "no message is the empty message"
        );
    }

    #[test]
    fn the_handler_sees_a_get_s_query() {
        let request = get("encoding=json&message=%7B%7D&x=a+b&x=%E2%9C%93&bad=%zz")
            .unwrap()
            .unwrap();
        let get = request.extensions().get::<ConnectGet>().unwrap();
        assert!(get.query().starts_with("encoding=json&"));
        let parameters: Vec<_> = get.parameters().collect();
        let pair = |name: &str, value: &str| (name.to_owned(), value.to_owned());
        assert_eq!(
            parameters,
            [
                pair("encoding", "json"),
                pair("message", "{}"),
                pair("x", "a b"),
                pair("x", "\u{2713}"),
                pair("bad", "%zz"),
            ]
        );
    }

    #[test]
    fn a_get_without_encoding_is_not_connect_s_and_bad_ones_are_refused() {
        assert!(get("message=abc").is_none());
        assert!(get("").is_none());
        for bad in [
            "encoding=xml&message=a",
            "encoding=proto&message=%zz",
            "encoding=proto&message=%4",
            "encoding=proto&base64=1&message=not*base64",
            "encoding=proto&connect=v2",
        ] {
            let status = get(bad).unwrap().unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument, "{bad}");
        }
        let long = format!("encoding=proto&message={}", "a".repeat(MAX_GET_QUERY));
        assert_eq!(
            get(&long).unwrap().unwrap_err().code(),
            Code::ResourceExhausted
        );
    }
}
