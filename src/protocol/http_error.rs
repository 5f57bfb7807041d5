//! The plain HTTP answers to requests in no protocol the server speaks: 405, 415 and 505, each
//! with a short text saying how to call.

use crate::body::ResponseBody;

/// What the 415 answer says: what the server speaks, and how to ask.
const UNSUPPORTED_MEDIA_TYPE_TEXT: &str = "This server speaks gRPC (application/grpc, \
    application/grpc+json), gRPC-Web (application/grpc-web, application/grpc-web-text) and \
    Connect (application/proto, application/json, application/connect+proto, \
    application/connect+json): send a POST with one of these content types.\n";

/// What the 405 answer says: how calls are made.
const METHOD_NOT_ALLOWED_TEXT: &str = "This server answers gRPC, gRPC-Web and Connect calls: \
    send a POST to /package.Service/Method, or a Connect GET (?connect=v1&encoding=...&message=...) \
    to a method without side effects.\n";

/// The answer to a request whose `content-type` names nothing the server speaks: HTTP 415, as
/// gRPC's spec asks, with a short `text/plain` body saying what it does speak.
pub(crate) fn unsupported_media_type() -> http::Response<ResponseBody> {
    plain_text(
        http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        UNSUPPORTED_MEDIA_TYPE_TEXT,
    )
}

/// The answer to a gRPC request over HTTP/1.1, which gRPC cannot use (its status travels in
/// trailers): HTTP 505.
pub(crate) fn http_version_not_supported() -> http::Response<ResponseBody> {
    plain_http(http::StatusCode::HTTP_VERSION_NOT_SUPPORTED)
}

/// The answer to a request that is not a POST (nor a Connect GET, nor a CORS preflight):
/// HTTP 405, with the methods a call may use (`allow`, RFC 9110 §15.5.6) and a short
/// `text/plain` body saying how to call.
pub(crate) fn method_not_allowed() -> http::Response<ResponseBody> {
    let mut response = plain_text(
        http::StatusCode::METHOD_NOT_ALLOWED,
        METHOD_NOT_ALLOWED_TEXT,
    );
    response.headers_mut().insert(
        http::header::ALLOW,
        http::HeaderValue::from_static("POST, GET, OPTIONS"),
    );
    response
}

/// An HTTP answer `code` whose body is `text`.
fn plain_text(code: http::StatusCode, text: &'static str) -> http::Response<ResponseBody> {
    let mut response = plain_http(code);
    *response.body_mut() = ResponseBody::whole(bytes::Bytes::from_static(text.as_bytes()));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn plain_http(code: http::StatusCode) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(ResponseBody::empty());
    *response.status_mut() = code;
    response
}
