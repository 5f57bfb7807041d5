//! [`Dispatcher`]: what a server calls for each request, the router behind the server-wide
//! layers if there are any; and [`Layers`], the builder's list of those layers.
//!
//! The dispatcher is where every call begins and ends, whatever carries it: a call whose
//! deadline passed is not started; a panic while it starts, and its deadline passing before it
//! answers, are answered in its own protocol (`call`); CORS preflights are answered, and the
//! answers to calls from pages of other origins say who may read them.

use std::fmt;
use std::sync::Arc;

use tower::ServiceExt;
use tower::util::BoxCloneService;
use tower_layer::Layer;

use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use http::HeaderMap;

use super::FastService;
use super::cors::{self, Cors};
use super::from_tower::{BoxError, FromTower, TowerService};
use super::router::Router;
use crate::FastFuture;
use crate::body::{RequestBody, ResponseBody};
use crate::call::{Call, within_deadline};
use crate::handler::{ResponseFuture, panic_status};
use crate::protocol::web::Web;
use crate::protocol::{Protocol, Wire};

/// Everything a [`Builder`](crate::Builder) hosts (services, server-wide layers, routing and
/// its HTTP errors, CORS) as one service: what each connection calls, and what
/// [`Builder::into_dispatcher`](crate::Builder::into_dispatcher) gives for calls in-process
/// (tests without sockets, or fastgrpc's routing inside another server). Cheap to clone.
///
/// Called in-process, a request is held to its deadline as a transport holds it (see
/// [`call`](FastService::call)); connection limits do not apply.
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

struct Inner {
    route: Route,
    /// The router (also inside the layers, if any), which tells REST calls apart.
    router: Arc<Router>,
    /// Who may call from pages of other origins.
    cors: Cors,
    /// The server's own timeout, for calls made in-process (the transports read it too).
    default_timeout: Option<Duration>,
}

enum Route {
    /// No server-wide layers: straight to the router.
    Direct,
    /// Through the layers, then the router.
    Layered(FromTower<Boxed>),
}

/// A layer's service, boxed so that the next layer (or the dispatcher) wraps one type.
pub(crate) type Boxed =
    BoxCloneService<http::Request<RequestBody>, http::Response<ResponseBody>, BoxError>;

impl FastService for Dispatcher {
    /// Serves `request` as a transport would, reading its call from its head: its protocol,
    /// and its deadline (`grpc-timeout` or `connect-timeout-ms`, the server's own timeout, or a
    /// [`Deadline`](crate::Deadline) already in its extensions).
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        let (mut head, body) = request.into_parts();
        let mut call = match Call::read(&mut head, self.inner.default_timeout) {
            Ok(call) => call,
            Err(refusal) => return FastFuture::ok(*refusal),
        };
        self.serve(http::Request::from_parts(head, body), &mut call)
    }

    #[inline]
    fn serve(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
        // Before anything can answer: a REST call's every answer is in REST's form.
        super::rest::mark(&self.inner.router, &request, call);
        let Some(origin) = cors::origin(request.headers()) else {
            return self.inner.answer(request, call);
        };
        if request.method() == http::Method::OPTIONS
            && request
                .headers()
                .contains_key(http::header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            // A browser asking whether a page of another origin may call.
            return FastFuture::ok(self.inner.cors.preflight(origin, request.headers()));
        }
        // gRPC itself is not for browsers: only gRPC-Web's and Connect's answers say who may
        // read them.
        if !call
            .wire()
            .is_some_and(|wire| wire.protocol != Protocol::Grpc)
        {
            return self.inner.answer(request, call);
        }
        let mut cors = HeaderMap::new();
        self.inner.cors.answer(origin, &mut cors);
        let answer = self.inner.answer(request, call);
        if cors.is_empty() {
            return answer;
        }
        answer.map(move |mut response| {
            response.headers_mut().extend(cors);
            response
        })
    }
}

impl Inner {
    /// The answer to `call`, held to its deadline; a panic while it starts answers `INTERNAL`.
    #[inline]
    fn answer(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
        if call.expired() {
            // Its client has stopped waiting: the call is not started.
            return FastFuture::ok(call.failure(&crate::deadline::exceeded()));
        }
        let answer = panic::catch_unwind(AssertUnwindSafe(|| self.route(request, call)))
            .unwrap_or_else(|panic| FastFuture::ok(call.failure(&panic_status(panic))));
        within_deadline(answer, call)
    }

    #[inline]
    fn route(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
        match &self.route {
            Route::Direct => self.router.serve(request, call),
            Route::Layered(stack) => {
                // A layer's own refusal (a timeout, load shedding) is made in gRPC's form,
                // outside the router that translates the other protocols' answers.
                let wire = call.wire_or_grpc();
                let response = stack.call(request);
                if wire.protocol == Protocol::Grpc {
                    return response;
                }
                response.map(move |response| in_own_form(response, wire))
            }
        }
    }
}

crate::__tower_service_of_fast_service!(Dispatcher);

/// `response`, an answer made in gRPC's form outside the router (a layer's refusal), in the
/// form of `wire`'s protocol; as it is if it is no gRPC refusal.
fn in_own_form(response: http::Response<ResponseBody>, wire: Wire) -> http::Response<ResponseBody> {
    match wire.protocol {
        Protocol::Grpc => response,
        Protocol::GrpcWeb | Protocol::GrpcWebText => Web::of(wire).web_response(response),
        Protocol::ConnectUnary | Protocol::ConnectStream => {
            super::connect::in_connect_form(response, wire)
        }
        Protocol::Rest { .. } => super::rest::in_rest_form(response),
    }
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.route {
            Route::Direct => f.debug_tuple("Direct").field(&self.inner.router).finish(),
            Route::Layered(_) => f.write_str("Layered"),
        }
    }
}

/// The router, as the innermost service of the server-wide layers: each call's context is read
/// again from the request, which a layer may have changed.
#[derive(Clone)]
struct Routed(Arc<Router>);

impl FastService for Routed {
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        let mut call = Call::of_request(&request);
        super::rest::mark(&self.0, &request, &mut call);
        self.0.serve(request, &mut call)
    }
}

crate::__tower_service_of_fast_service!(Routed);

impl Dispatcher {
    /// Whether the server answers REST calls (`google.api.http`): then a request in no
    /// protocol it speaks may still be one.
    pub(crate) fn transcodes(&self) -> bool {
        self.inner.router.transcodes()
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

    /// The dispatcher of `router`, answering cross-origin calls as `cors` allows, holding
    /// calls made in-process to `default_timeout` too: the router itself when there are no
    /// layers.
    pub(crate) fn wrap(
        self,
        router: Router,
        cors: Cors,
        default_timeout: Option<Duration>,
    ) -> Dispatcher {
        let router = Arc::new(router);
        if self.wraps.is_empty() {
            return Dispatcher {
                inner: Arc::new(Inner {
                    route: Route::Direct,
                    router,
                    cors,
                    default_timeout,
                }),
            };
        }
        let base = BoxCloneService::new(Routed(Arc::clone(&router)).map_err(BoxError::from));
        let stack = self
            .wraps
            .into_iter()
            .rev()
            .fold(base, |inner, wrap| wrap(inner));
        Dispatcher {
            inner: Arc::new(Inner {
                route: Route::Layered(FromTower::new(stack)),
                router,
                cors,
                default_timeout,
            }),
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
