//! The Connect protocol's own pieces (connectrpc.com/docs/protocol): its error codes and their
//! HTTP statuses, the JSON error body, and a whole error answer.
//!
//! Calls are served as gRPC inside the server; `service::connect` translates a Connect
//! request in and the gRPC-form answer out, and this is what it (and a transport answering on
//! a call's behalf) writes.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tonic::{Code, Status};

use crate::body::ResponseBody;
use crate::codec::Format;
use crate::metadata::ErrorHeaders;

/// `connect-protocol-version`: a request may say which version it speaks; only 1 exists.
pub(crate) const PROTOCOL_VERSION: &str = "connect-protocol-version";
/// `connect-timeout-ms`: the call's timeout in milliseconds, at most 10 digits.
pub(crate) const TIMEOUT_MS: &str = "connect-timeout-ms";

/// The `content-type` of an error answer.
pub(crate) const JSON_CONTENT_TYPE: HeaderValue = HeaderValue::from_static("application/json");

/// The first `encoding` parameter of a GET's query, empty if it has no `=`: what makes the GET
/// Connect's, and names its format. The head's reading and the whole query's use this one, so
/// they agree on which GETs are Connect's.
pub(crate) fn get_encoding(query: &str) -> Option<&str> {
    // Bytes, not `str::split`: this runs for every GET with a query, REST's included.
    let value = query.as_bytes().split(|&b| b == b'&').find_map(|pair| {
        match pair.strip_prefix(b"encoding")? {
            [] => Some(&[][..]),
            [b'=', value @ ..] => Some(value),
            _ => None,
        }
    })?;
    // Cut at ASCII `&` and `=`, the value is still UTF-8.
    std::str::from_utf8(value).ok()
}

/// A code's name in Connect: gRPC's, in lower snake case (with `canceled` spelt so).
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "ok",
        Code::Cancelled => "canceled",
        Code::Unknown => "unknown",
        Code::InvalidArgument => "invalid_argument",
        Code::DeadlineExceeded => "deadline_exceeded",
        Code::NotFound => "not_found",
        Code::AlreadyExists => "already_exists",
        Code::PermissionDenied => "permission_denied",
        Code::ResourceExhausted => "resource_exhausted",
        Code::FailedPrecondition => "failed_precondition",
        Code::Aborted => "aborted",
        Code::OutOfRange => "out_of_range",
        Code::Unimplemented => "unimplemented",
        Code::Internal => "internal",
        Code::Unavailable => "unavailable",
        Code::DataLoss => "data_loss",
        Code::Unauthenticated => "unauthenticated",
    }
}

/// The HTTP status a unary call failing with `code` answers with (the protocol's table).
pub(crate) fn http_status(code: Code) -> StatusCode {
    let status = match code {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::Unknown | Code::Internal | Code::DataLoss => 500,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
        Code::DeadlineExceeded => 504,
        Code::NotFound => 404,
        Code::AlreadyExists | Code::Aborted => 409,
        Code::PermissionDenied => 403,
        Code::ResourceExhausted => 429,
        Code::Unimplemented => 501,
        Code::Unavailable => 503,
        Code::Unauthenticated => 401,
    };
    StatusCode::from_u16(status).expect("a valid status code")
}

/// `status` as Connect's JSON error: `{"code": .., "message": .., "details": [..]}`, the
/// details being those of the `google.rpc.Status` the status carries (`Status::with_details`),
/// each as `{"type": <message name>, "value": <base64>}`.
pub(crate) fn error_json(status: &Status) -> Vec<u8> {
    serde_json::to_vec(&error_object(status)).expect("a map of strings serializes")
}

/// The JSON object [`error_json`] writes.
fn error_object(status: &Status) -> serde_json::Map<String, serde_json::Value> {
    let mut error = serde_json::Map::new();
    error.insert("code".into(), code_name(status.code()).into());
    if !status.message().is_empty() {
        error.insert("message".into(), status.message().into());
    }
    let details = details(status.details());
    if !details.is_empty() {
        error.insert("details".into(), details.into());
    }
    error
}

/// The flag of a streaming response's last envelope, the end-of-stream message.
pub(crate) const END_STREAM_FLAG: u8 = 0x02;

/// A streaming call's end-of-stream envelope: flag `0x02`, length, then the JSON
/// `{"error": {..}, "metadata": {"name": ["value", ..]}}`, the error left out on success and
/// the metadata (the call's trailing metadata, `metadata`'s names not gRPC's own) when empty.
pub(crate) fn end_stream(status: Option<&Status>, metadata: &HeaderMap) -> Bytes {
    let mut end = serde_json::Map::new();
    if let Some(status) = status.filter(|status| status.code() != Code::Ok) {
        end.insert("error".into(), error_object(status).into());
    }
    let mut names = serde_json::Map::new();
    for (name, value) in metadata {
        if name.as_str().starts_with("grpc-") || name == CONTENT_TYPE {
            continue;
        }
        let Ok(value) = value.to_str() else {
            continue;
        };
        let values = names
            .entry(name.as_str())
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let serde_json::Value::Array(values) = values {
            values.push(value.into());
        }
    }
    if !names.is_empty() {
        end.insert("metadata".into(), names.into());
    }
    let json = serde_json::to_vec(&end).expect("a map of strings serializes");
    let mut envelope = bytes::BytesMut::with_capacity(5 + json.len());
    bytes::BufMut::put_u8(&mut envelope, END_STREAM_FLAG);
    bytes::BufMut::put_u32(&mut envelope, u32::try_from(json.len()).unwrap_or(u32::MAX));
    envelope.extend_from_slice(&json);
    envelope.freeze()
}

/// The `google.rpc.Status` a gRPC status's details are (what `grpc-status-details-bin`
/// carries); only its details are read here.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RpcStatus {
    #[prost(message, repeated, tag = "3")]
    pub(crate) details: Vec<crate::types::Any>,
}

/// The `google.rpc.Status` a status's details (`encoded`) are, if they are one.
pub(crate) fn rpc_status(encoded: &[u8]) -> Option<RpcStatus> {
    if encoded.is_empty() {
        return None;
    }
    let status = <RpcStatus as prost::Message>::decode(encoded);
    if status.is_err() {
        tracing::debug!("status details are not a google.rpc.Status; not sent");
    }
    status.ok()
}

fn details(encoded: &[u8]) -> Vec<serde_json::Value> {
    let Some(status) = rpc_status(encoded) else {
        return Vec::new();
    };
    status
        .details
        .iter()
        .map(|any| {
            // `type.googleapis.com/google.rpc.RetryInfo` names `google.rpc.RetryInfo`.
            let name = any.type_url.rsplit('/').next().unwrap_or_default();
            serde_json::json!({ "type": name, "value": STANDARD_NO_PAD.encode(&any.value) })
        })
        .collect()
}

/// The whole answer of a unary call that failed with `status`: its HTTP status, the JSON
/// error, and the status's metadata as headers (less those HTTP or the protocol own).
pub(crate) fn error_response(status: &Status) -> http::Response<ResponseBody> {
    let metadata = crate::status::sanitized(status.metadata().clone().into_headers());
    let mut headers = match ErrorHeaders::of(status) {
        // Kept apart: the status's metadata is the call's trailing metadata.
        Some(headers) => {
            let mut headers = crate::status::sanitized(headers.clone().into_headers());
            add_trailers(&mut headers, &metadata, TRAILER_PREFIX);
            metadata_only(headers)
        }
        None => metadata_only(metadata),
    };
    headers.insert(CONTENT_TYPE, JSON_CONTENT_TYPE);
    let mut response = ResponseBody::whole(Bytes::from(error_json(status))).with_headers(headers);
    *response.status_mut() = http_status(status.code());
    response
}

/// A successful unary call's answer: HTTP 200 and `message`, the bare reply (compressed with
/// `encoding`, if it names one); `headers`, the reply's metadata, with the `content-type` of
/// `format` and the `content-encoding`; and the metadata of `trailers`, if any (gRPC's own names
/// left out), as `trailer-` headers.
pub(crate) fn unary_answer(
    mut headers: HeaderMap,
    message: Bytes,
    format: Format,
    encoding: Option<HeaderValue>,
    trailers: Option<&HeaderMap>,
) -> http::Response<ResponseBody> {
    if let Some(encoding) = encoding {
        headers.insert(CONTENT_ENCODING, encoding);
    }
    headers.insert(CONTENT_TYPE, unary_content_type(format));
    if let Some(trailers) = trailers {
        add_trailers(&mut headers, trailers, TRAILER_PREFIX);
    }
    ResponseBody::whole(message).with_headers(headers)
}

/// What Connect's unary answers put before a trailer's name to send it as a header.
const TRAILER_PREFIX: &str = "trailer-";

/// Adds `trailers` (gRPC's own names left out) to a unary answer's `headers`, each name after
/// `prefix`: Connect's `trailer-`, REST's `grpc-trailer-`.
pub(crate) fn add_trailers(headers: &mut HeaderMap, trailers: &HeaderMap, prefix: &str) {
    for (name, value) in trailers {
        if name.as_str().starts_with("grpc-") {
            continue;
        }
        if let Ok(name) = HeaderName::try_from(format!("{prefix}{name}")) {
            headers.append(name, value.clone());
        }
    }
}

/// The `content-type` of a Connect unary answer in `format`.
pub(crate) fn unary_content_type(format: Format) -> HeaderValue {
    match format {
        Format::Proto => HeaderValue::from_static("application/proto"),
        Format::Json => JSON_CONTENT_TYPE,
    }
}

/// The headers of `map` that are metadata, not gRPC's own (`grpc-*`, which gRPC's form of an
/// answer carries), with the encodings the service accepts announced in Connect's header,
/// `accept-encoding`. Its `content-type` is left for the caller to replace.
pub(crate) fn metadata_only(mut map: HeaderMap) -> HeaderMap {
    // Most answers carry none of them: one scan of a small map instead of five lookups.
    if !map.keys().any(|name| name.as_str().starts_with("grpc-")) {
        return map;
    }
    for name in [
        "grpc-status",
        "grpc-message",
        "grpc-status-details-bin",
        "grpc-encoding",
    ] {
        map.remove(name);
    }
    if let Some(accepted) = map.remove(crate::compression::GRPC_ACCEPT_ENCODING) {
        map.insert(http::header::ACCEPT_ENCODING, accepted);
    }
    map
}

/// A streaming call that failed with `status` before its answer began: HTTP 200, the status's
/// [`ErrorHeaders`] as headers, and the end-of-stream envelope alone (with the status's
/// metadata).
pub(crate) fn failed_stream(status: &Status, format: Format) -> http::Response<ResponseBody> {
    let metadata = status.metadata().clone().into_headers();
    let end = end_stream(Some(status), &metadata);
    let headers = ErrorHeaders::of(status)
        .map(|headers| metadata_only(crate::status::sanitized(headers.clone().into_headers())))
        .unwrap_or_default();
    stream_answer(headers, ResponseBody::whole(end), format)
}

/// A streaming answer: HTTP 200, `headers` and the `content-type` of `format`, `body`.
pub(crate) fn stream_answer(
    mut headers: HeaderMap,
    body: ResponseBody,
    format: Format,
) -> http::Response<ResponseBody> {
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(match format {
            Format::Proto => "application/connect+proto",
            Format::Json => "application/connect+json",
        }),
    );
    body.with_headers(headers)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_s_encoding_is_its_first_encoding_parameter() {
        assert_eq!(get_encoding("encoding=json&message=x"), Some("json"));
        assert_eq!(
            get_encoding("message=x&encoding=proto&encoding=json"),
            Some("proto")
        );
        assert_eq!(get_encoding("encoding&message=x"), Some(""));
        assert_eq!(get_encoding("message=x&encoding="), Some(""));
        for not_connect in [
            "",
            "message=x",
            "encodings=json",
            "xencoding=json",
            "Encoding=json",
        ] {
            assert_eq!(get_encoding(not_connect), None, "{not_connect}");
        }
    }

    #[test]
    fn error_headers_stay_headers_and_the_status_metadata_becomes_trailers() {
        let metadata = |name: &'static str, value: &'static str| {
            let mut map = tonic::metadata::MetadataMap::new();
            map.insert(name, value.parse().unwrap());
            map
        };
        let status = Status::with_metadata(Code::NotFound, "gone", metadata("x-trailer", "t"));
        let merged = error_response(&status);
        assert_eq!(
            merged.headers()["x-trailer"],
            "t",
            "without headers, as connect-go"
        );

        let status = ErrorHeaders::attach(status, metadata("x-header", "h"));
        let unary = error_response(&status);
        assert_eq!(unary.status(), StatusCode::NOT_FOUND);
        assert_eq!(unary.headers()["x-header"], "h");
        assert_eq!(unary.headers()["trailer-x-trailer"], "t");
        assert!(unary.headers().get("x-trailer").is_none());

        let stream = failed_stream(&status, Format::Proto);
        assert_eq!(stream.headers()["x-header"], "h");
        assert!(stream.headers().get("x-trailer").is_none());
        let mut body = stream.into_body();
        let (end, _) = body.take_whole().unwrap();
        let end: serde_json::Value = serde_json::from_slice(&end.unwrap()[5..]).unwrap();
        assert_eq!(end["metadata"]["x-trailer"][0], "t", "{end}");
    }
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

    fn parse_error(body: &[u8]) -> serde_json::Value {
        serde_json::from_slice(body).expect("a JSON error body")
    }

    #[test]
    fn every_code_has_its_name_and_http_status() {
        let table = [
            (Code::Cancelled, "canceled", 499),
            (Code::Unknown, "unknown", 500),
            (Code::InvalidArgument, "invalid_argument", 400),
            (Code::DeadlineExceeded, "deadline_exceeded", 504),
            (Code::NotFound, "not_found", 404),
            (Code::AlreadyExists, "already_exists", 409),
            (Code::PermissionDenied, "permission_denied", 403),
            (Code::ResourceExhausted, "resource_exhausted", 429),
            (Code::FailedPrecondition, "failed_precondition", 400),
            (Code::Aborted, "aborted", 409),
            (Code::OutOfRange, "out_of_range", 400),
            (Code::Unimplemented, "unimplemented", 501),
            (Code::Internal, "internal", 500),
            (Code::Unavailable, "unavailable", 503),
            (Code::DataLoss, "data_loss", 500),
            (Code::Unauthenticated, "unauthenticated", 401),
        ];
        for (code, name, http) in table {
            assert_eq!(code_name(code), name);
            assert_eq!(http_status(code).as_u16(), http, "{name}");
        }
    }

    #[test]
    fn the_error_body_carries_code_message_and_details() {
        let any = crate::types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: vec![0x0a, 0x01, b'x', 0xff],
        };
        let rpc = RpcStatus { details: vec![any] };
        let status = Status::with_details(
            Code::NotFound,
            "no \"such\" user ☺",
            Bytes::from(prost::Message::encode_to_vec(&rpc)),
        );
        let error = parse_error(&error_json(&status));
        assert_eq!(error["code"], "not_found");
        assert_eq!(error["message"], "no \"such\" user ☺");
        assert_eq!(error["details"][0]["type"], "google.rpc.ErrorInfo");
        assert_eq!(error["details"][0]["value"], "CgF4/w");
        let bare = parse_error(&error_json(&Status::internal("")));
        assert_eq!(bare, serde_json::json!({ "code": "internal" }));
        // Details that are not a google.rpc.Status are left out, not sent garbled.
        let odd = Status::with_details(Code::Aborted, "m", Bytes::from_static(&[0xff, 0xff]));
        assert!(parse_error(&error_json(&odd)).get("details").is_none());
    }

    #[test]
    fn the_end_of_stream_message_carries_the_error_and_the_trailing_metadata() {
        let mut metadata = HeaderMap::new();
        metadata.insert("grpc-status", HeaderValue::from_static("5"));
        metadata.append("x-t", HeaderValue::from_static("a"));
        metadata.append("x-t", HeaderValue::from_static("b"));
        let end = end_stream(Some(&Status::not_found("gone")), &metadata);
        assert_eq!(end[0], END_STREAM_FLAG);
        assert_eq!(
            u32::from_be_bytes(end[1..5].try_into().unwrap()) as usize,
            end.len() - 5
        );
        assert_eq!(
            parse_error(&end[5..]),
            serde_json::json!({
                "error": { "code": "not_found", "message": "gone" },
                "metadata": { "x-t": ["a", "b"] },
            })
        );
        let ok = end_stream(Some(&Status::ok("")), &HeaderMap::new());
        assert_eq!(&ok[5..], b"{}");
    }

    #[test]
    fn an_error_answer_has_the_http_status_json_and_the_metadata() {
        let mut metadata = tonic::metadata::MetadataMap::new();
        metadata.insert("x-why", "because".parse().unwrap());
        metadata.insert("connection", "close".parse().unwrap());
        let status = Status::with_metadata(Code::PermissionDenied, "no", metadata);
        let response = error_response(&status);
        assert_eq!(response.status(), 403);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()["x-why"], "because");
        assert!(response.headers().get("connection").is_none());
    }
}
