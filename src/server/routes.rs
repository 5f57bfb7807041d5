//! [`Routes`]: a server's services and layers as one service, without sockets.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

use super::layers::Dispatch;
use super::service::FastService;
use crate::body::RequestBody;
use crate::handler::ResponseFuture;

/// Everything a [`Builder`](super::Builder) hosts (services, server-wide layers, routing and
/// its HTTP errors) as one service, called in-process: for tests without sockets, or to embed
/// fastgrpc's routing in another server. Cheap to clone.
///
/// Transport-level behaviour is not included: `grpc-timeout` and the server's default timeout
/// are not enforced, and connection limits do not apply.
///
/// ```
/// use fastgrpc::server::FastService;
///
/// let routes = fastgrpc::Server::builder().into_routes();
/// let request = http::Request::post("/no.Such/Method")
///     .header("content-type", "application/grpc")
///     .body(fastgrpc::body::RequestBody::empty())
///     .unwrap();
/// let response = routes.call(request).into_ready().unwrap().unwrap();
/// assert_eq!(response.headers()["grpc-status"], "12"); // UNIMPLEMENTED
/// ```
#[derive(Debug, Clone)]
pub struct Routes {
    dispatch: Arc<Dispatch>,
}

impl Routes {
    pub(crate) fn new(dispatch: Dispatch) -> Self {
        Routes {
            dispatch: Arc::new(dispatch),
        }
    }
}

impl FastService for Routes {
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        self.dispatch.call(request)
    }
}

impl Service<http::Request<RequestBody>> for Routes {
    type Response = http::Response<crate::body::ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> ResponseFuture {
        self.dispatch.call(request)
    }
}
