//! Whole answers that carry no message: a trailers-only gRPC status, and the plain HTTP errors
//! for requests that are not gRPC.

use tonic::Status;

use crate::body::ResponseBody;
use crate::status::trailers_only_headers;

/// A trailers-only response carrying `status`.
pub fn status(status: &Status) -> http::Response<ResponseBody> {
    let mut response = http::Response::new(ResponseBody::empty());
    *response.headers_mut() = trailers_only_headers(status);
    response
}

/// Marks a refusal that Connect answers with this HTTP status rather than its code's: 404 for a
/// path that names no service or method (as an HTTP server without the route), 415 for a
/// protocol the method cannot be called in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectHttpStatus(pub(crate) http::StatusCode);

/// The trailers-only `UNIMPLEMENTED` answer for a path that names no service or method.
pub(crate) fn unknown_route(message: String) -> http::Response<ResponseBody> {
    refusal(&Status::unimplemented(message), http::StatusCode::NOT_FOUND)
}

/// The answer to a Connect unary request (a bare message) for a streaming method, which needs
/// Connect's streaming protocol (`application/connect+proto` or `+json`).
pub(crate) fn unary_protocol_for_streaming_method() -> http::Response<ResponseBody> {
    refusal(
        &Status::unimplemented(
            "a streaming method: call it with application/connect+proto or application/connect+json",
        ),
        http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
    )
}

/// The answer to a Connect GET request for a method whose proto does not say it has no side
/// effects (`idempotency_level = NO_SIDE_EFFECTS`): 405, as connect-go answers.
pub(crate) fn get_for_method_with_side_effects() -> http::Response<ResponseBody> {
    refusal(
        &Status::unimplemented(
            "GET is for methods with idempotency_level = NO_SIDE_EFFECTS: send a POST",
        ),
        http::StatusCode::METHOD_NOT_ALLOWED,
    )
}

/// The trailers-only answer carrying `status`, which Connect answers with `http`.
fn refusal(status: &Status, http: http::StatusCode) -> http::Response<ResponseBody> {
    let mut response = self::status(status);
    response.extensions_mut().insert(ConnectHttpStatus(http));
    response
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn a_status_answers_trailers_only() {
        let response = super::status(&tonic::Status::not_found("no such user"));
        assert_eq!(response.headers()["content-type"], "application/grpc");
        assert_eq!(response.headers()["grpc-status"], "5");
        assert_eq!(response.headers()["grpc-message"], "no%20such%20user");
    }
}
