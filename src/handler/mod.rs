//! What generated servers instantiate: one function per RPC kind, building the call chain.
//!
//! Generated code stays small and readable because everything a call does besides invoking the
//! user's method lives here, written once.

mod streaming;
mod unary;

pub use self::streaming::{client_streaming, server_streaming, streaming};
pub use self::unary::unary;

use std::convert::Infallible;

use tonic::Status;
use tonic::metadata::MetadataMap;

use crate::FastFuture;
use crate::body::ResponseBody;
use crate::codec::DEFAULT_MAX_RECEIVE_MESSAGE_SIZE;

/// A boxed stream of replies, for a server-streaming method's associated stream type when the
/// stream's own type cannot be named (as with tonic).
pub type BoxStream<T> =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<T, Status>> + Send + 'static>>;

/// What a service's `call` returns: a response that is often already there.
pub type ResponseFuture = FastFuture<http::Response<ResponseBody>, Infallible>;

/// The answer to a method the service does not have: trailers-only `UNIMPLEMENTED`.
pub fn unimplemented_method(path: &str) -> ResponseFuture {
    FastFuture::ok(crate::status::response(&Status::unimplemented(format!(
        "method not found: {path}"
    ))))
}

/// Per-service settings every call of a generated server obeys.
#[derive(Debug, Clone, Copy)]
pub struct HandlerConfig {
    /// Largest request message accepted, in bytes; larger ones get `RESOURCE_EXHAUSTED`.
    pub max_receive_message_size: usize,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        HandlerConfig {
            max_receive_message_size: DEFAULT_MAX_RECEIVE_MESSAGE_SIZE,
        }
    }
}

/// The request a handler sees: the HTTP request's metadata and extensions around `message`.
fn tonic_request<T>(parts: http::request::Parts, message: T) -> tonic::Request<T> {
    tonic::Request::from_parts(
        MetadataMap::from_headers(parts.headers),
        parts.extensions,
        message,
    )
}
