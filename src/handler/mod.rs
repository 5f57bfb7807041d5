//! What generated servers instantiate: one function per RPC kind, building the call chain.
//!
//! Generated code stays small and readable because everything a call does besides invoking the
//! user's method lives here, written once.

mod unary;

pub use self::unary::{HandlerConfig, unary};

use std::convert::Infallible;

use tonic::Status;

use crate::FastFuture;
use crate::body::ResponseBody;

/// What a service's `call` returns: a response that is often already there.
pub type ResponseFuture = FastFuture<http::Response<ResponseBody>, Infallible>;

/// The answer to a method the service does not have: trailers-only `UNIMPLEMENTED`.
pub fn unimplemented_method(path: &str) -> ResponseFuture {
    FastFuture::ok(crate::status::response(&Status::unimplemented(format!(
        "method not found: {path}"
    ))))
}
