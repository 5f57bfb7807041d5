//! The Connect protocol's unary calls (`application/proto`, `application/json`) served beside
//! gRPC on the same paths, by the same handlers.
//!
//! As with gRPC-Web, the router serves a Connect call as a gRPC call and translates at the
//! edges: the handler reads the bare body and Connect's `content-encoding` and
//! `accept-encoding` itself (the request's `content-type` tells it to), and the gRPC-form
//! answer becomes Connect's: the message without its frame header, trailing metadata as
//! `trailer-` headers, and a failure as its HTTP status with a JSON error body. The call is
//! observed (metrics, span) before the translation, so it counts as gRPC calls do.
//!
//! Connect states its timeout in `connect-timeout-ms`, which the router enforces here, with the
//! server's own timeout, so that a call whose deadline passes is answered in Connect's form:
//! the transports enforce only `grpc-timeout`. A ready call is still answered inline.

use std::pin::pin;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue};
use http_body::Body as _;
use tonic::{Code, Status};

use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::codec::FRAME_HEADER_LEN;
use crate::compression::GRPC_ENCODING;
use crate::connect;
use crate::deadline::{self, Deadline};
use crate::handler::ResponseFuture;
use crate::protocol::{Format, Wire};
use crate::response::UnknownRoute;
use crate::{metadata, spare_maps, status};

/// The most of a reply body that is not whole (a hosted service's, or one a layer replaced)
/// gathered to answer a Connect unary call with.
const MAX_GATHERED: usize = 64 * 1024 * 1024;

/// A Connect unary request, made ready for the gRPC handlers: its version checked, its
/// deadline (`connect-timeout-ms`, or the server's `default_timeout` if shorter) put where
/// handlers find it. The deadline comes back for [`unary_response`]; a malformed request, as
/// the error it is answered with. (The handler reads Connect's `content-encoding` and
/// `accept-encoding` itself: the request's `Wire` names them.)
pub(crate) fn unary_request(
    request: &mut http::Request<RequestBody>,
    default_timeout: Option<Duration>,
) -> Result<Option<Deadline>, Status> {
    let headers = request.headers();
    if let Some(version) = metadata::header(headers, &connect::PROTOCOL_VERSION)
        && version != "1"
    {
        return Err(Status::invalid_argument(format!(
            "connect-protocol-version must be 1, not {:?}",
            crate::status::excerpt(&String::from_utf8_lossy(version.as_bytes()))
        )));
    }
    let timeout = match metadata::header(headers, &connect::TIMEOUT_MS) {
        Some(value) => Some(parse_timeout_ms(value)?),
        None => None,
    };
    let timeout = match (timeout, default_timeout) {
        (Some(client), Some(server)) => Some(client.min(server)),
        (client, server) => client.or(server),
    };
    let deadline = timeout.map(Deadline::after);
    if let Some(deadline) = deadline {
        request.extensions_mut().insert(deadline);
    }
    Ok(deadline)
}

/// Parses `connect-timeout-ms`: 1 to 10 ASCII digits, milliseconds. Anything else is
/// `INVALID_ARGUMENT` (connect-go refuses such a value too).
pub(crate) fn parse_timeout_ms(value: &HeaderValue) -> Result<Duration, Status> {
    let digits = value.as_bytes();
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(Status::invalid_argument(format!(
            "malformed connect-timeout-ms {:?}: it must be 1 to 10 ASCII digits",
            crate::status::excerpt(&String::from_utf8_lossy(digits))
        )));
    }
    // At most 10 digits: below 10^10, no overflow.
    let millis = digits
        .iter()
        .fold(0u64, |n, digit| n * 10 + u64::from(digit - b'0'));
    Ok(Duration::from_millis(millis))
}

/// The answer to a Connect unary call: `response`, the gRPC-form answer of its handler, in
/// Connect's form; `DEADLINE_EXCEEDED` in its stead if `deadline` passes first, or had passed
/// when it came.
pub(crate) fn unary_response(
    response: ResponseFuture,
    deadline: Option<Deadline>,
    wire: Wire,
) -> ResponseFuture {
    let translate = move |response| translate(response, wire);
    match response.into_ready() {
        Ok(Ok(_)) if deadline::expired(deadline) => {
            FastFuture::ok(connect::error_response(&deadline::exceeded()))
        }
        Ok(Ok(response)) => translate(response),
        Ok(Err(never)) => match never {},
        Err(pending) => FastFuture::boxed(async move {
            let response = tokio::select! {
                biased;
                response = pending => response,
                () = deadline::passes(deadline) => {
                    return Ok(connect::error_response(&deadline::exceeded()));
                }
            };
            let response = response.unwrap_or_else(|never| match never {});
            translate(response).await
        }),
    }
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
async fn gather(mut body: ResponseBody) -> Result<(Option<Bytes>, Option<HeaderMap>), Status> {
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
    let mut headers = connect::metadata_only(headers);
    if let Some(encoding) = encoding {
        headers.insert(CONTENT_ENCODING, encoding);
    }
    headers.insert(CONTENT_TYPE, content_type(wire.format));
    if let Some(trailers) = trailers {
        for (name, value) in &trailers {
            // `grpc-status` and the rest of gRPC's own.
            if name.as_str().starts_with("grpc-") {
                continue;
            }
            if let Ok(name) = HeaderName::try_from(format!("trailer-{name}")) {
                headers.append(name, value.clone());
            }
        }
        spare_maps::give_back(trailers);
    }
    let mut response = http::Response::new(ResponseBody::whole(frame));
    *response.headers_mut() = headers;
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
    if head.extensions.get::<UnknownRoute>().is_some() {
        *response.status_mut() = http::StatusCode::NOT_FOUND;
    }
    response
}

/// The `content-type` of a Connect unary answer in `format`.
fn content_type(format: Format) -> HeaderValue {
    match format {
        Format::Proto => HeaderValue::from_static("application/proto"),
        Format::Json => HeaderValue::from_static("application/json"),
    }
}

/// Serves `request` through `serve` as a Connect unary call.
pub(crate) fn serve_unary(
    mut request: http::Request<RequestBody>,
    wire: Wire,
    default_timeout: Option<Duration>,
    serve: impl FnOnce(http::Request<RequestBody>) -> ResponseFuture,
) -> ResponseFuture {
    match unary_request(&mut request, default_timeout) {
        Ok(deadline) => unary_response(serve(request), deadline, wire),
        Err(status) => FastFuture::ok(connect::error_response(&status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_timeout_ms_is_up_to_ten_digits_of_milliseconds() {
        let parse = |value: &str| parse_timeout_ms(&HeaderValue::from_str(value).unwrap());
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("1500").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            parse("9999999999").unwrap(),
            Duration::from_millis(9_999_999_999)
        );
        for bad in ["", "12345678901", "-1", "1.5", "10s", " 1", "1 ", "+1"] {
            let error = parse(bad).unwrap_err();
            assert_eq!(error.code(), Code::InvalidArgument, "{bad:?}");
        }
    }
}
