//! REST transcoding's answers (`google.api.http`): how a REST call's outcome is written.
//!
//! A failure is the HTTP status of its code (as grpc-gateway and Envoy's transcoder map them:
//! `NOT_FOUND` 404, `INVALID_ARGUMENT` 400, `DEADLINE_EXCEEDED` 504...) with the status as a
//! `google.rpc.Status` in ProtoJSON: `{"code": 5, "message": "...", "details": [...]}`, each
//! detail an `Any` in its JSON form (`{"@type": URL, ...fields}`), or `{"@type": URL,
//! "value": base64}` for a type not registered for JSON. A reply is its ProtoJSON, the field
//! the rule's `response_body` names alone, or, for a `google.api.HttpBody`, its bytes with
//! its content type. A reply stream is one JSON message per line (`application/x-ndjson`), or
//! Server-Sent Events (`text/event-stream`, one `data:` event per message) when the client
//! asked for them; a stream that fails once under way ends with a last line
//! `{"error": {...}}`, or an `event: error`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{ACCEPT_ENCODING, ALLOW, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Map, Value};
use tonic::Status;

use crate::body::ResponseBody;
use crate::compression::CompressionEncoding;
use crate::metadata::ErrorHeaders;
use crate::rest::{HTTP_BODY, Rule};

/// The `content-type` of JSON answers.
const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// The `content-type` of a reply stream as lines of JSON.
pub(crate) const NDJSON: HeaderValue = HeaderValue::from_static("application/x-ndjson");
/// The `content-type` of a reply stream as Server-Sent Events.
pub(crate) const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
/// The `content-type` of a `google.api.HttpBody` that names none.
pub(crate) const OCTET_STREAM: HeaderValue = HeaderValue::from_static("application/octet-stream");

/// `status` as a `google.rpc.Status` in ProtoJSON.
pub(crate) fn status_object(status: &Status) -> Value {
    let mut object = Map::new();
    object.insert("code".into(), (status.code() as i32).into());
    object.insert("message".into(), status.message().into());
    let details = details(status.details());
    if !details.is_empty() {
        object.insert("details".into(), details.into());
    }
    Value::Object(object)
}

/// The details of the `google.rpc.Status` a status carries, each in its JSON form.
fn details(encoded: &[u8]) -> Vec<Value> {
    let Some(status) = super::connect::rpc_status(encoded) else {
        return Vec::new();
    };
    status
        .details
        .iter()
        .map(|any| {
            serde_json::to_value(any).unwrap_or_else(|_| {
                serde_json::json!({ "@type": any.type_url, "value": STANDARD.encode(&any.value) })
            })
        })
        .collect()
}

/// The whole answer to a REST call that failed with `status` before its reply began: the
/// HTTP status of its code, the status's metadata as headers, and its `google.rpc.Status`.
pub(crate) fn failure(status: &Status) -> http::Response<ResponseBody> {
    let mut headers = crate::status::sanitized(status.metadata().clone().into_headers());
    if let Some(error_headers) = ErrorHeaders::of(status) {
        headers.extend(crate::status::sanitized(
            error_headers.clone().into_headers(),
        ));
    }
    let mut headers = super::connect::metadata_only(headers);
    // What a gRPC failure announces of compression is nothing to a REST client.
    headers.remove(http::header::ACCEPT_ENCODING);
    headers.insert(CONTENT_TYPE, JSON);
    let body = serde_json::to_vec(&status_object(status)).unwrap_or_default();
    let mut response = ResponseBody::whole(Bytes::from(body)).with_headers(headers);
    *response.status_mut() = super::connect::http_status(status.code());
    response
}

/// The answer to a path that rules match for other HTTP methods only: 405, the methods in
/// `allow`, and `UNIMPLEMENTED` as its `google.rpc.Status` (as grpc-gateway answers).
pub(crate) fn method_not_allowed(
    method: &http::Method,
    allowed: &[&str],
) -> http::Response<ResponseBody> {
    let status = Status::unimplemented(format!(
        "{} is not allowed here, only {}",
        crate::status::excerpt(method.as_str()),
        allowed.join(", ")
    ));
    let mut response = failure(&status);
    *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    if let Ok(allow) = HeaderValue::from_str(&allowed.join(", ")) {
        response.headers_mut().insert(ALLOW, allow);
    }
    response
}

/// The answer to a body compressed with a coding the service does not accept: 415, the
/// codings it does in `accept-encoding` (RFC 9110, section 15.5.16), and `status`, which
/// names them, as its `google.rpc.Status`.
pub(crate) fn unsupported_encoding(
    status: &Status,
    accepted: &[CompressionEncoding],
) -> http::Response<ResponseBody> {
    let mut response = failure(status);
    *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    if let Ok(names) = HeaderValue::try_from(crate::compression::accepted_names(accepted)) {
        response.headers_mut().insert(ACCEPT_ENCODING, names);
    }
    response
}

/// The last piece of a reply stream that fails under way with `status`: a line
/// `{"error": {...}}`, or an `error` event.
pub(crate) fn ending(status: &Status, events: bool) -> Bytes {
    let error = serde_json::json!({ "error": status_object(status) });
    let json = serde_json::to_vec(&error).unwrap_or_default();
    let mut out = BytesMut::with_capacity(json.len() + 24);
    if events {
        out.put_slice(b"event: error\ndata: ");
        out.put_slice(&json);
        out.put_slice(b"\n\n");
    } else {
        out.put_slice(&json);
        out.put_u8(b'\n');
    }
    out.freeze()
}

/// What a reply message is as an HTTP body, from its ProtoJSON `json`: the message itself,
/// the field the rule's `response_body` names, or a `google.api.HttpBody`'s bytes; with the
/// content type of an `HttpBody` (`None` for JSON).
pub(crate) fn reply_body(json: Bytes, rule: &Rule) -> Result<(Bytes, Option<HeaderValue>), Status> {
    if rule.response_body.is_none() && rule.response != HTTP_BODY {
        return Ok((json, None));
    }
    let invalid = |error: &dyn std::fmt::Display| {
        Status::internal(format!("the reply's JSON could not be read back: {error}"))
    };
    let value: Value = serde_json::from_slice(&json).map_err(|error| invalid(&error))?;
    if rule.response == HTTP_BODY {
        return http_body(&value);
    }
    let field = rule.response_body.unwrap_or_default();
    // A field at its default value is left out of ProtoJSON: `null` stands for it.
    let value = value.get(field).unwrap_or(&Value::Null);
    let body = serde_json::to_vec(value).map_err(|error| invalid(&error))?;
    Ok((Bytes::from(body), None))
}

/// A `google.api.HttpBody`'s bytes and content type, from its JSON form.
fn http_body(value: &Value) -> Result<(Bytes, Option<HeaderValue>), Status> {
    let data = match value.get("data").and_then(Value::as_str) {
        None => Vec::new(),
        Some(text) => crate::types::decode_base64(text)
            .ok_or_else(|| Status::internal("the HttpBody's data is not base64"))?,
    };
    let content_type = match value.get("contentType").and_then(Value::as_str) {
        None | Some("") => OCTET_STREAM,
        Some(text) => HeaderValue::from_str(text).map_err(|_| {
            Status::internal("the HttpBody's content type cannot be an HTTP header")
        })?,
    };
    Ok((Bytes::from(data), Some(content_type)))
}

/// A successful unary REST answer: HTTP 200, `headers` (the reply's metadata), the metadata of
/// `trailers` as `grpc-trailer-` headers (the names grpc-gateway gives them; a whole answer
/// needs no HTTP trailers, which many HTTP clients cannot read), and `body` with its content
/// type (JSON's unless given).
pub(crate) fn reply(
    mut headers: HeaderMap,
    trailers: Option<&HeaderMap>,
    body: Bytes,
    content_type: Option<HeaderValue>,
) -> http::Response<ResponseBody> {
    if let Some(trailers) = trailers {
        super::connect::add_trailers(&mut headers, trailers, "grpc-trailer-");
    }
    headers.insert(CONTENT_TYPE, content_type.unwrap_or(JSON));
    ResponseBody::whole(body).with_headers(headers)
}

/// Appends one message of a reply stream to `out`: a line of JSON, or a `data:` event.
pub(crate) fn stream_message(body: &[u8], events: bool, out: &mut BytesMut) {
    if events {
        out.put_slice(b"data: ");
        out.put_slice(body);
        out.put_slice(b"\n\n");
    } else {
        out.put_slice(body);
        out.put_u8(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn a_failure_is_the_code_s_http_status_and_a_google_rpc_status() {
        let response = failure(&Status::not_found("no \"book\""));
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        let (body, _) = response.into_body().take_whole().unwrap();
        let body: Value = serde_json::from_slice(&body.unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"code": 5, "message": "no \"book\""})
        );
        assert_eq!(
            failure(&Status::new(Code::Cancelled, "")).status().as_u16(),
            499
        );
    }

    #[test]
    fn a_stream_s_ending_is_a_line_or_an_event() {
        let status = Status::aborted("stop");
        assert_eq!(
            &ending(&status, false)[..],
            b"{\"error\":{\"code\":10,\"message\":\"stop\"}}\n"
        );
        assert_eq!(
            &ending(&status, true)[..],
            b"event: error\ndata: {\"error\":{\"code\":10,\"message\":\"stop\"}}\n\n"
        );
    }

    #[test]
    fn method_not_allowed_names_the_methods() {
        let response = method_not_allowed(&http::Method::POST, &["DELETE", "GET"]);
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[ALLOW], "DELETE, GET");
    }
}
