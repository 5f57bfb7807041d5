//! Server-wide tower layers: the stack every call goes through before the router.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tower::ServiceExt;
use tower::util::BoxCloneService;
use tower_layer::Layer;
use tower_service::Service;

use super::hosted::{BoxError, Hosted};
use super::router::Router;
use super::service::FastService;
use crate::body::{RequestBody, ResponseBody};
use crate::handler::ResponseFuture;

/// The service a server-wide layer wraps: the router, or the layers already inside it.
pub type HttpService =
    BoxCloneService<http::Request<RequestBody>, http::Response<ResponseBody>, BoxError>;

/// Wraps the service inside it in one more layer.
type Wrap = Box<dyn FnOnce(HttpService) -> HttpService + Send>;

/// The layers added to a server's builder, outermost first.
#[derive(Default)]
pub(crate) struct Layers {
    wraps: Vec<Wrap>,
}

impl Layers {
    pub(crate) fn push<L, B>(&mut self, layer: L)
    where
        L: Layer<HttpService> + Send + 'static,
        L::Service: Service<http::Request<RequestBody>, Response = http::Response<B>>
            + Clone
            + Send
            + 'static,
        <L::Service as Service<http::Request<RequestBody>>>::Future: Send + 'static,
        <L::Service as Service<http::Request<RequestBody>>>::Error: Into<BoxError>,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        self.wraps.push(Box::new(move |inner| {
            let service = layer
                .layer(inner)
                .map_response(|response| response.map(ResponseBody::new))
                .map_err(Into::into);
            BoxCloneService::new(service)
        }));
    }

    /// What the connections call: `router` itself when there are no layers.
    pub(crate) fn wrap(self, router: Router) -> Dispatch {
        if self.wraps.is_empty() {
            return Dispatch::Direct(router);
        }
        let base = BoxCloneService::new(RouterService(Arc::new(router)).map_err(BoxError::from));
        let stack = self
            .wraps
            .into_iter()
            .rev()
            .fold(base, |inner, wrap| wrap(inner));
        Dispatch::Layered(Hosted::new(stack))
    }
}

impl fmt::Debug for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layers")
            .field("count", &self.wraps.len())
            .finish()
    }
}

/// The service a connection calls for each request.
pub(crate) enum Dispatch {
    /// No server-wide layers: straight to the router.
    Direct(Router),
    /// Through the layers, then the router.
    Layered(Hosted<HttpService>),
}

impl Dispatch {
    pub(crate) fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        match self {
            Dispatch::Direct(router) => router.call(request),
            Dispatch::Layered(stack) => stack.call(request),
        }
    }
}

impl fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dispatch::Direct(router) => f.debug_tuple("Direct").field(router).finish(),
            Dispatch::Layered(_) => f.write_str("Layered"),
        }
    }
}

/// The router as the innermost tower service of a layered stack.
#[derive(Clone)]
struct RouterService(Arc<Router>);

impl Service<http::Request<RequestBody>> for RouterService {
    type Response = http::Response<ResponseBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<RequestBody>) -> ResponseFuture {
        self.0.call(request)
    }
}
