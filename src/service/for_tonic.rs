//! [`ForTonic`]: a fastgrpc service mounted in tonic's server (`tonic::transport::Server`,
//! `tonic::service::Routes`), for moving a tonic server over one service at a time.

use std::convert::Infallible;
use std::task::{Context, Poll};

use bytes::Bytes;
use tower_service::Service;

use super::from_tower::BoxError;
use super::{FastService, NamedService};
use crate::FastFuture;
use crate::body::RequestBody;

/// A fastgrpc service (a generated `XServer`, possibly intercepted) as a tower service over
/// tonic's body type, with the service's name: what tonic's `add_service` takes.
///
/// Calls run as they do in fastgrpc's own server, except that the body arrives through tonic
/// (so it is read as a stream), and tonic, not fastgrpc, enforces `grpc-timeout`.
///
/// ```no_run
/// # async fn run<S>(greeter: S) -> Result<(), tonic::transport::Error>
/// # where S: fastgrpc::service::FastService + fastgrpc::service::NamedService + Clone {
/// use fastgrpc::service::ForTonic;
/// tonic::transport::Server::builder()
///     .add_service(ForTonic::new(greeter))
///     .serve("127.0.0.1:50051".parse().unwrap())
///     .await
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ForTonic<S> {
    inner: S,
}

impl<S> ForTonic<S> {
    /// Wraps `service` for tonic.
    pub fn new(service: S) -> Self {
        ForTonic { inner: service }
    }

    /// The wrapped service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: NamedService> NamedService for ForTonic<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<http::Request<B>> for ForTonic<S>
where
    S: FastService,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = FastFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.inner
            .call(request.map(RequestBody::new))
            .map(|response| response.map(tonic::body::Body::new))
    }
}
