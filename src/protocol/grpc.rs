//! gRPC's answers that carry no message: a trailers-only status, and the refusals that Connect
//! answers with an HTTP status of their own.

use tonic::Status;

use http::header::CONTENT_TYPE;

use crate::body::ResponseBody;
use crate::codec::Format;
use crate::status::trailers_only_headers;

/// A trailers-only response carrying `status`.
pub fn status(status: &Status) -> http::Response<ResponseBody> {
    ResponseBody::empty().with_headers(trailers_only_headers(status))
}

/// gRPC's answer to a call in `format` that fails with `status` before its reply: trailers-only,
/// with the `content-type` the client asked in, so that it reads the status as its own.
pub(crate) fn failure(status: &Status, format: Format) -> http::Response<ResponseBody> {
    let mut response = self::status(status);
    if format == Format::Json {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, crate::status::GRPC_JSON_CONTENT_TYPE);
    }
    response
}

/// `response` to an `application/grpc+json` call: a refusal made in gRPC's plain form (by the
/// router, an interceptor, a hosted service) names the call's own `content-type`, so that its
/// client reads the status; any other answer as it is.
pub(crate) fn in_json(mut response: http::Response<ResponseBody>) -> http::Response<ResponseBody> {
    let headers = response.headers_mut();
    if headers.get(CONTENT_TYPE) == Some(&crate::status::GRPC_CONTENT_TYPE) {
        headers.insert(CONTENT_TYPE, crate::status::GRPC_JSON_CONTENT_TYPE);
    }
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_status_answers_trailers_only() {
        let response = super::status(&tonic::Status::not_found("no such user"));
        assert_eq!(response.headers()["content-type"], "application/grpc");
        assert_eq!(response.headers()["grpc-status"], "5");
        assert_eq!(response.headers()["grpc-message"], "no%20such%20user");
    }

    #[test]
    fn a_trailers_only_answer_holds_the_error_headers_and_the_trailers() {
        let mut trailers = tonic::metadata::MetadataMap::new();
        trailers.insert("x-trailer", "t".parse().unwrap());
        let mut headers = tonic::metadata::MetadataMap::new();
        headers.insert("x-header", "h".parse().unwrap());
        let status = crate::ErrorHeaders::attach(
            tonic::Status::with_metadata(tonic::Code::Aborted, "", trailers),
            headers,
        );
        let response = super::status(&status);
        assert_eq!(response.headers()["grpc-status"], "10");
        assert_eq!(response.headers()["x-header"], "h");
        assert_eq!(response.headers()["x-trailer"], "t");
    }
}
