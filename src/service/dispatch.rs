//! [`Dispatcher`]: what a server calls for each request, the router behind the server-wide
//! layers if there are any; and [`Layers`], the builder's list of those layers.

use std::fmt;
use std::sync::Arc;

use tower::ServiceExt;
use tower::util::BoxCloneService;
use tower_layer::Layer;

use super::FastService;
use super::from_tower::{BoxError, FromTower, TowerService};
use super::router::GrpcRouter;
use crate::body::{RequestBody, ResponseBody};
use crate::handler::ResponseFuture;
use crate::protocol::Wire;

/// Everything a [`Builder`](crate::Builder) hosts (services, server-wide layers, routing and
/// its HTTP errors) as one service: what each connection calls, and what
/// [`Builder::into_dispatcher`](crate::Builder::into_dispatcher) gives for calls in-process
/// (tests without sockets, or fastgrpc's routing inside another server). Cheap to clone.
///
/// Transport-level behaviour is not included: `grpc-timeout` and the server's default timeout
/// are not enforced, and connection limits do not apply.
///
/// ```
/// use fastgrpc::service::FastService;
///
/// let dispatcher = fastgrpc::Server::builder().into_dispatcher();
/// let request = http::Request::post("/no.Such/Method")
///     .header("content-type", "application/grpc")
///     .body(fastgrpc::service::RequestBody::empty())
///     .unwrap();
/// let response = dispatcher.call(request).into_ready().unwrap().unwrap();
/// assert_eq!(response.headers()["grpc-status"], "12"); // UNIMPLEMENTED
/// ```
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

enum Inner {
    /// No server-wide layers: straight to the router.
    Direct(GrpcRouter),
    /// Through the layers, then the router.
    Layered(FromTower<Boxed>),
}

/// A layer's service, boxed so that the next layer (or the dispatcher) wraps one type.
pub(crate) type Boxed =
    BoxCloneService<http::Request<RequestBody>, http::Response<ResponseBody>, BoxError>;

impl FastService for Dispatcher {
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        // The match is in a function of its own: written here, it made the compiler copy the
        // request once more on its way to the router (docs/BENCHMARKS.md, issue 10).
        self.inner.call(request, None)
    }
}

impl Dispatcher {
    /// Answers `request`, as [`call`](FastService::call) does, for a transport that read its
    /// `wire` from its `content-type` already: the router does not read it again, unless a
    /// server-wide layer, which may change the request, comes between.
    pub(crate) fn call_read(
        &self,
        request: http::Request<RequestBody>,
        wire: Option<Wire>,
    ) -> ResponseFuture {
        self.inner.call(request, wire)
    }
}

impl Inner {
    fn call(&self, request: http::Request<RequestBody>, wire: Option<Wire>) -> ResponseFuture {
        match self {
            Inner::Direct(router) => router.call(request, wire),
            Inner::Layered(stack) => {
                // A layer's own refusal (a timeout, load shedding) is made in gRPC's form,
                // outside the router that translates Connect's answers.
                let wire = crate::protocol::Wire::of_request(request.headers());
                let response = stack.call(request);
                if !wire.is_connect() {
                    return response;
                }
                response.map(move |response| super::connect::in_connect_form(response, wire))
            }
        }
    }
}

crate::__tower_service_of_fast_service!(Dispatcher);

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.inner {
            Inner::Direct(router) => f.debug_tuple("Direct").field(router).finish(),
            Inner::Layered(_) => f.write_str("Layered"),
        }
    }
}

/// Wraps the service inside it in one more layer.
type Wrap = Box<dyn FnOnce(Boxed) -> Boxed + Send>;

/// The layers added to a server's builder, outermost first.
#[derive(Default)]
pub(crate) struct Layers {
    wraps: Vec<Wrap>,
}

impl Layers {
    pub(crate) fn push<L>(&mut self, layer: L)
    where
        L: Layer<Boxed, Service: TowerService> + Send + 'static,
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

    /// The dispatcher of `router`: the router itself when there are no layers.
    pub(crate) fn wrap(self, router: GrpcRouter) -> Dispatcher {
        let direct = Dispatcher {
            inner: Arc::new(Inner::Direct(router)),
        };
        if self.wraps.is_empty() {
            return direct;
        }
        let base = BoxCloneService::new(direct.map_err(BoxError::from));
        let stack = self
            .wraps
            .into_iter()
            .rev()
            .fold(base, |inner, wrap| wrap(inner));
        Dispatcher {
            inner: Arc::new(Inner::Layered(FromTower::new(stack))),
        }
    }
}

impl fmt::Debug for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layers")
            .field("count", &self.wraps.len())
            .finish()
    }
}
