//! The Connect protocol's own pieces (connectrpc.com/docs/protocol): its error codes and their
//! HTTP statuses, the JSON error body, and a whole error answer.
//!
//! Calls are served as gRPC inside the server; `service::connect` translates a Connect
//! request in and the gRPC-form answer out, and this is what it (and a transport answering on
//! a call's behalf) writes.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tonic::{Code, Status};

use crate::body::ResponseBody;

/// `connect-protocol-version`: a request may say which version it speaks; only 1 exists.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("connect-protocol-version");
/// `connect-timeout-ms`: the call's timeout in milliseconds, at most 10 digits.
pub(crate) const TIMEOUT_MS: HeaderName = HeaderName::from_static("connect-timeout-ms");
/// The `content-type` of an error answer.
pub(crate) const JSON_CONTENT_TYPE: HeaderValue = HeaderValue::from_static("application/json");

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
    let mut error = serde_json::Map::new();
    error.insert("code".into(), code_name(status.code()).into());
    if !status.message().is_empty() {
        error.insert("message".into(), status.message().into());
    }
    let details = details(status.details());
    if !details.is_empty() {
        error.insert("details".into(), details.into());
    }
    serde_json::to_vec(&error).expect("a map of strings serializes")
}

/// The `google.rpc.Status` a gRPC status's details are (what `grpc-status-details-bin`
/// carries); only its details are read here.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(message, repeated, tag = "3")]
    details: Vec<crate::types::Any>,
}

fn details(encoded: &[u8]) -> Vec<serde_json::Value> {
    if encoded.is_empty() {
        return Vec::new();
    }
    let Ok(status) = <RpcStatus as prost::Message>::decode(encoded) else {
        tracing::debug!("status details are not a google.rpc.Status; not sent over Connect");
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
    let mut headers = metadata_only(crate::status::sanitized(
        status.metadata().clone().into_headers(),
    ));
    headers.insert(CONTENT_TYPE, JSON_CONTENT_TYPE);
    let mut response = http::Response::new(ResponseBody::whole(Bytes::from(error_json(status))));
    *response.status_mut() = http_status(status.code());
    *response.headers_mut() = headers;
    response
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

#[cfg(test)]
mod tests {
    use super::*;

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
