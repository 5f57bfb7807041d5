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

/// The answer to a request whose `content-type` is not gRPC: HTTP 415, as the spec asks.
pub(crate) fn unsupported_media_type() -> http::Response<ResponseBody> {
    plain_http(http::StatusCode::UNSUPPORTED_MEDIA_TYPE)
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
