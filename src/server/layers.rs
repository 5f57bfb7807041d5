//! Server-wide tower layers: the stack every call goes through before the router.

use std::fmt;

use tower::ServiceExt;
use tower::util::BoxCloneService;
use tower_layer::Layer;

use super::hosted::{BoxError, Hosted, TowerService};
use super::router::Router;
use super::routes::Routes;
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
    pub(crate) fn push<L>(&mut self, layer: L)
    where
        L: Layer<HttpService, Service: TowerService> + Send + 'static,
    {
        self.wraps.push(Box::new(move |inner| {
            let service = layer
                .layer(inner)
                .map_response(|response| {
                    <L::Service as TowerService>::into_http(response).map(ResponseBody::new)
                })
                .map_err(Into::into);
            BoxCloneService::new(service)
        }));
    }

    /// What the connections call: `router` itself when there are no layers.
    pub(crate) fn wrap(self, router: Router) -> Dispatch {
        if self.wraps.is_empty() {
            return Dispatch::Direct(router);
        }
        let base =
            BoxCloneService::new(Routes::new(Dispatch::Direct(router)).map_err(BoxError::from));
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
