//! A call's status as gRPC response headers and trailers (what the `recover` step,
//! `handler::respond`, and every whole answer send).
//!
//! A call that fails before sending a message answers *trailers-only*: one HEADERS frame that
//! carries `grpc-status` (and `grpc-message`) and ends the stream. A call that succeeds sends
//! headers, the message, and trailers holding `grpc-status: 0`. Status messages are
//! percent-encoded by [`tonic::Status`], so any Unicode text and whitespace survive the trip.

use http::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tonic::Status;

use crate::metadata::ErrorHeaders;
use crate::spare_maps;

/// `content-type` of every gRPC response fastgrpc sends.
pub(crate) const GRPC_CONTENT_TYPE: HeaderValue = HeaderValue::from_static("application/grpc");
/// `content-type` of a reply to `application/grpc+json`.
pub(crate) const GRPC_JSON_CONTENT_TYPE: HeaderValue =
    HeaderValue::from_static("application/grpc+json");

pub(crate) const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
const GRPC_STATUS_OK: HeaderValue = HeaderValue::from_static("0");

/// The trailers of a call that succeeded with no trailing metadata: `grpc-status: 0` alone,
/// sent as they are, without a map built for them.
pub(crate) static OK_TRAILERS: [(HeaderName, HeaderValue); 1] = [(GRPC_STATUS, GRPC_STATUS_OK)];

/// Headers user metadata may not set: those the gRPC protocol owns, and the connection-specific
/// ones HTTP/2 forbids (h2 would refuse the whole response, leaving the client no status).
const RESERVED_HEADERS: [HeaderName; 11] = [
    HeaderName::from_static("te"),
    CONTENT_TYPE,
    HeaderName::from_static("grpc-encoding"),
    HeaderName::from_static("grpc-message"),
    HeaderName::from_static("grpc-message-type"),
    GRPC_STATUS,
    http::header::CONNECTION,
    http::header::TRANSFER_ENCODING,
    http::header::UPGRADE,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
];

/// The headers of a trailers-only answer carrying `status`: the content-type and the status.
pub(crate) fn trailers_only_headers(status: &Status) -> HeaderMap {
    // A spare map, or `HeaderMap::new()`, which allocates on first insert with room for all
    // of these; small `with_capacity` maps grow (and allocate again) on their first inserts.
    let mut headers = spare_maps::take();
    headers.insert(CONTENT_TYPE, GRPC_CONTENT_TYPE);
    // One block holds the headers and the trailers of a trailers-only answer.
    if let Some(error_headers) = ErrorHeaders::of(status) {
        headers.extend(sanitized(error_headers.clone().into_headers()));
    }
    add_status(status, &mut headers);
    headers
}

/// The response headers of a successful call, from the handler's initial metadata.
pub(crate) fn ok_headers(metadata: HeaderMap) -> HeaderMap {
    let mut headers = spare_maps::or_spare(sanitized(metadata));
    headers.insert(CONTENT_TYPE, GRPC_CONTENT_TYPE);
    headers
}

/// `metadata` without the headers it may not set (see `RESERVED_HEADERS`).
pub(crate) fn sanitized(mut metadata: HeaderMap) -> HeaderMap {
    if !metadata.is_empty() {
        for reserved in &RESERVED_HEADERS {
            metadata.remove(reserved);
        }
    }
    metadata
}

/// The trailers that end a call with `status` after its headers were sent, with `metadata`
/// (the handler's trailing metadata, reserved names removed) added.
pub(crate) fn trailers(status: &Status, metadata: HeaderMap) -> HeaderMap {
    let mut trailers = spare_maps::or_spare(sanitized(metadata));
    add_status(status, &mut trailers);
    trailers
}

/// Adds `grpc-status`, `grpc-message` (percent-encoded) and the status's metadata to `map`.
///
/// The metadata is sanitized as a handler's is: a gateway that copies an upstream's headers
/// into a status (`connection: close`, say) must not make h2 refuse the whole answer, which
/// would leave the client with a reset stream instead of the status.
fn add_status(status: &Status, map: &mut HeaderMap) {
    if !status.metadata().is_empty() {
        map.extend(sanitized(status.metadata().clone().into_headers()));
        let bare = Status::with_details(
            status.code(),
            status.message(),
            bytes::Bytes::copy_from_slice(status.details()),
        );
        return add_bare_status(&bare, map);
    }
    add_bare_status(status, map);
}

/// Adds `grpc-status`, `grpc-message` and `grpc-status-details-bin` of a status without
/// metadata to `map`.
fn add_bare_status(status: &Status, map: &mut HeaderMap) {
    // tonic reports a value it cannot encode as an error; its encodings (percent-encoding,
    // base64) make that impossible today, but a bare status is still better than none.
    if let Err(unencodable) = status.add_header(map) {
        tracing::warn!(%unencodable, "status could not be encoded; sending the bare status");
        let _ = Status::new(status.code(), "").add_header(map);
    }
}

/// At most the first 128 bytes of `text` that came from the client, for an error message
/// (cut at a character boundary: h2 accepts UTF-8 in `:path`).
pub(crate) fn excerpt(text: &str) -> &str {
    let mut end = text.len().min(128);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The trailers of a successful call: `grpc-status: 0` and the handler's trailing `metadata`
/// (reserved names removed). Built in the metadata's own map: no second map to merge.
pub(crate) fn ok_trailers(metadata: HeaderMap) -> HeaderMap {
    let mut trailers = spare_maps::or_spare(sanitized(metadata));
    trailers.insert(GRPC_STATUS, GRPC_STATUS_OK);
    trailers
}

/// The code a `grpc-status` value names; `UNKNOWN` for anything else.
pub(crate) fn code_of(value: Option<&http::HeaderValue>) -> tonic::Code {
    let digit = |byte: u8| byte.is_ascii_digit().then(|| i32::from(byte - b'0'));
    let code = match value.map(http::HeaderValue::as_bytes) {
        Some(&[a]) => digit(a),
        Some(&[a, b]) => digit(a).zip(digit(b)).map(|(a, b)| a * 10 + b),
        _ => None,
    };
    code.map_or(tonic::Code::Unknown, tonic::Code::from)
}

/// The `grpc-status` of a head or trailers: found by a scan in the small maps gRPC replies
/// have, cheaper than hashing the name.
pub(crate) fn status_in(map: &http::HeaderMap) -> Option<&http::HeaderValue> {
    const SCAN_LIMIT: usize = 8;
    if map.len() > SCAN_LIMIT {
        return map.get(GRPC_STATUS);
    }
    map.iter()
        .find(|(name, _)| *name == GRPC_STATUS)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn trailers_only_headers_round_trip_the_message() {
        let message = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";
        let headers = trailers_only_headers(&Status::unknown(message));
        assert_eq!(headers[CONTENT_TYPE], "application/grpc");
        let parsed = Status::from_header_map(&headers).expect("grpc-status present");
        assert_eq!(parsed.code(), Code::Unknown);
        assert_eq!(parsed.message(), message);
    }

    #[test]
    fn a_status_keeps_its_metadata_but_not_connection_specific_or_protocol_headers() {
        let mut metadata = tonic::metadata::MetadataMap::new();
        metadata.insert("connection", "close".parse().unwrap());
        metadata.insert("content-type", "text/html".parse().unwrap());
        metadata.insert("x-upstream", "kept".parse().unwrap());
        let status = Status::with_metadata(Code::Unavailable, "upstream down", metadata);
        let headers = trailers_only_headers(&status);
        assert!(headers.get("connection").is_none(), "{headers:?}");
        assert_eq!(headers[CONTENT_TYPE], "application/grpc");
        assert_eq!(headers["x-upstream"], "kept");
        assert_eq!(headers["grpc-status"], "14");
        let trailers = trailers(&status, HeaderMap::new());
        assert!(trailers.get("connection").is_none());
        assert_eq!(trailers["x-upstream"], "kept");
    }

    #[test]
    fn user_metadata_cannot_override_protocol_headers() {
        let mut metadata = HeaderMap::new();
        metadata.insert("grpc-status", HeaderValue::from_static("13"));
        metadata.insert("content-type", HeaderValue::from_static("text/plain"));
        metadata.insert("x-user", HeaderValue::from_static("kept"));
        metadata.insert("connection", HeaderValue::from_static("close"));
        let headers = ok_headers(metadata);
        assert!(headers.get("grpc-status").is_none());
        assert!(headers.get("connection").is_none());
        assert_eq!(headers[CONTENT_TYPE], "application/grpc");
        assert_eq!(headers["x-user"], "kept");
    }
}
