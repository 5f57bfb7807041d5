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

/// Marks the answer to a path that names no service or method, which Connect answers 404.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnknownRoute;

/// The trailers-only `UNIMPLEMENTED` answer for a path that names no service or method.
pub(crate) fn unknown_route(message: String) -> http::Response<ResponseBody> {
    let mut response = status(&Status::unimplemented(message));
    response.extensions_mut().insert(UnknownRoute);
    response
}

/// What the 415 answer says: what the server speaks, and how to ask.
const UNSUPPORTED_MEDIA_TYPE_TEXT: &str = "This server speaks gRPC (application/grpc, \
    application/grpc+json), gRPC-Web (application/grpc-web, application/grpc-web-text) and \
    Connect (application/proto, application/json, application/connect+proto, \
    application/connect+json): send a POST with one of these content types.\n";

/// The answer to a request whose `content-type` names nothing the server speaks: HTTP 415, as
/// gRPC's spec asks, with a short `text/plain` body saying what it does speak.
pub(crate) fn unsupported_media_type() -> http::Response<ResponseBody> {
    let mut response = plain_http(http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    *response.body_mut() = ResponseBody::whole(bytes::Bytes::from_static(
        UNSUPPORTED_MEDIA_TYPE_TEXT.as_bytes(),
    ));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The answer to a gRPC request over HTTP/1.1, which gRPC cannot use (its status travels in
/// trailers): HTTP 505.
pub(crate) fn http_version_not_supported() -> http::Response<ResponseBody> {
    plain_http(http::StatusCode::HTTP_VERSION_NOT_SUPPORTED)
}

/// The answer to a request that is not a POST: HTTP 405.
pub(crate) fn method_not_allowed() -> http::Response<ResponseBody> {
    plain_http(http::StatusCode::METHOD_NOT_ALLOWED)
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
