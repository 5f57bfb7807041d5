//! [`GrpcRouter`]: routing a request to the service its `:path` names, checking it is a gRPC
//! (or gRPC-Web) request first.

use std::fmt;

use super::FastService;
use super::connect;
use super::cors::{self, Cors};
use crate::FastFuture;
use crate::body::RequestBody;
use crate::handler::{AnswerForm, ResponseFuture};
#[cfg(feature = "opentelemetry")]
use crate::metrics::{CallMeter, Instruments, MethodMetrics};
use crate::observe::Observed;
use crate::protocol::web::Web;
use crate::protocol::{Protocol, Wire};
use crate::status;
use http::HeaderMap;
use std::time::Duration;

/// The services a server hosts, looked up by fully-qualified name (`package.Service`).
#[derive(Default)]
pub(crate) struct GrpcRouter {
    /// Few services per server: a linear scan over names beats hashing the path.
    routes: Vec<Route>,
    /// Who may call gRPC-Web methods from pages of other origins.
    cors: Cors,
    /// gRFC A66's metrics, when the server has a meter provider.
    #[cfg(feature = "opentelemetry")]
    metrics: Option<Metrics>,
    /// The server's own timeout, which the router enforces for Connect calls (the transports
    /// do for gRPC's).
    default_timeout: Option<Duration>,
}

/// A hosted service.
struct Route {
    name: &'static str,
    service: Box<dyn FastService>,
    /// The metrics of each method the service declares, by method name.
    #[cfg(feature = "opentelemetry")]
    methods: Vec<(&'static str, std::sync::Arc<MethodMetrics>)>,
}

/// The router's instruments, and the metrics of the methods no service declares.
#[cfg(feature = "opentelemetry")]
struct Metrics {
    instruments: Instruments,
    other: std::sync::Arc<MethodMetrics>,
}

impl GrpcRouter {
    /// Adds `service` under `name`; a later service with the same name replaces the earlier.
    pub(crate) fn add(&mut self, name: &'static str, service: Box<dyn FastService>) {
        let route = Route {
            #[cfg(feature = "opentelemetry")]
            methods: self
                .metrics
                .as_ref()
                .map(|metrics| method_metrics(&metrics.instruments, name, &*service))
                .unwrap_or_default(),
            name,
            service,
        };
        match self
            .routes
            .iter_mut()
            .find(|existing| existing.name == name)
        {
            Some(existing) => *existing = route,
            None => self.routes.push(route),
        }
    }

    /// Meters every call from now on with `instruments` (gRFC A66).
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn set_metrics(&mut self, instruments: Instruments) {
        for route in &mut self.routes {
            route.methods = method_metrics(&instruments, route.name, &*route.service);
        }
        self.metrics = Some(Metrics {
            other: instruments.method(None),
            instruments,
        });
    }

    /// Answers `request`: HTTP errors for requests in no protocol the server speaks,
    /// `UNIMPLEMENTED` for unknown services, the service's own answer otherwise. A gRPC-Web or
    /// Connect call is served as gRPC and its answer translated back (`web`, `connect`). Its
    /// `wire` is read from its `content-type` unless the caller did so already.
    pub(crate) fn call(
        &self,
        request: http::Request<RequestBody>,
        wire: Option<Wire>,
    ) -> ResponseFuture {
        let headers = request.headers();
        if request.method() == http::Method::GET && request.uri().query().is_some() {
            return match connect::get_request(request) {
                Some(Ok((request, wire))) => self.serve_connect(request, wire),
                Some(Err(status)) => {
                    FastFuture::ok(crate::protocol::connect::error_response(&status))
                }
                None => FastFuture::ok(crate::protocol::http_error::method_not_allowed()),
            };
        }
        if request.method() != http::Method::POST {
            // A browser asking whether a page of another origin may call.
            let preflight = request.method() == http::Method::OPTIONS
                && headers.contains_key(http::header::ACCESS_CONTROL_REQUEST_METHOD);
            return FastFuture::ok(match cors::origin(headers).filter(|_| preflight) {
                Some(origin) => self.cors.preflight(origin, headers),
                None => crate::protocol::http_error::method_not_allowed(),
            });
        }
        let Some(wire) = wire.or_else(|| Wire::of_headers(headers)) else {
            return FastFuture::ok(crate::protocol::http_error::unsupported_media_type());
        };
        let web = match wire.protocol {
            Protocol::Grpc => return self.serve(request),
            Protocol::ConnectUnary | Protocol::ConnectStream => {
                return self.serve_connect(request, wire);
            }
            Protocol::GrpcWeb | Protocol::GrpcWebText => Web::of(wire),
        };
        let cors = self.cors_headers(headers).unwrap_or_default();
        match web.grpc_request(request) {
            Ok(request) => self
                .serve(request)
                .map(move |response| web.web_response(response, cors)),
            Err(status) => {
                FastFuture::ok(web.web_response(crate::protocol::grpc::status(&status), cors))
            }
        }
    }

    /// Answers a Connect call, with what lets the page that sent it read the answer.
    fn serve_connect(&self, request: http::Request<RequestBody>, wire: Wire) -> ResponseFuture {
        let cors = self.cors_headers(request.headers());
        let response = connect::serve(request, wire, self.default_timeout, |request, form| {
            self.serve_in(request, form)
        });
        let Some(cors) = cors else {
            return response;
        };
        response.map(move |mut response| {
            response.headers_mut().extend(cors);
            response
        })
    }

    /// What lets the page that sent a request with `headers` read its answer: computed while
    /// the request is at hand; none for a call from the server's own origin (no `origin`) or
    /// one the server's CORS does not let read it.
    fn cors_headers(&self, headers: &HeaderMap) -> Option<HeaderMap> {
        let origin = cors::origin(headers)?;
        let mut cors = HeaderMap::new();
        self.cors.answer(origin, &mut cors);
        (!cors.is_empty()).then_some(cors)
    }

    /// Who may call the gRPC-Web and Connect methods from pages of other origins.
    pub(crate) fn set_cors(&mut self, cors: Cors) {
        self.cors = cors;
    }

    /// The server's own timeout, for the calls whose deadline the router enforces.
    pub(crate) fn set_default_timeout(&mut self, timeout: Option<Duration>) {
        self.default_timeout = timeout;
    }

    /// Answers a gRPC request: the service's answer, or `UNIMPLEMENTED` for an unknown one;
    /// observed (`observe`) if anything wants to see it.
    fn serve(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        self.serve_in(request, AnswerForm::Grpc).0
    }

    /// Answers a request as [`serve`](Self::serve) does, asking for an answer in `form`: a
    /// Connect unary call's handler answers in Connect's form if asked and nothing between
    /// (an observer, a layer) reads the gRPC form. Gives the form the answer is in.
    fn serve_in(
        &self,
        mut request: http::Request<RequestBody>,
        form: AnswerForm,
    ) -> (ResponseFuture, AnswerForm) {
        let route = self.route(request.uri().path());
        #[cfg(feature = "opentelemetry")]
        let meter = self
            .metrics
            .as_ref()
            .map(|metrics| metrics.start(route, &request));
        let observed = Observed::start(
            &mut request,
            #[cfg(feature = "opentelemetry")]
            meter,
        );
        match (observed, form) {
            (None, AnswerForm::Connect(format))
                if route.is_some_and(|route| route.service.answers_in_connect_form()) =>
            {
                crate::handler::asking(format, || serve_route(route, request))
            }
            (None, _) => (serve_route(route, request), AnswerForm::Grpc),
            (Some(mut observed), _) => {
                let response = observed.run(|| serve_route(route, request));
                (
                    crate::observe::observed(response, observed),
                    AnswerForm::Grpc,
                )
            }
        }
    }

    fn route(&self, path: &str) -> Option<&Route> {
        let name = service_name(path)?;
        self.routes.iter().find(|route| route.name == name)
    }
}

/// The answer of `route`'s service, or `UNIMPLEMENTED` when no service has the request's name.
fn serve_route(route: Option<&Route>, request: http::Request<RequestBody>) -> ResponseFuture {
    match route {
        Some(route) => route.service.call(request),
        None => {
            let path = request.uri().path();
            FastFuture::ok(crate::protocol::grpc::unknown_route(format!(
                "service not found: {}",
                status::excerpt(service_name(path).unwrap_or(path))
            )))
        }
    }
}

#[cfg(feature = "opentelemetry")]
impl Metrics {
    /// Counts a call of `route` as started: under its method's name if the route's service
    /// declares it, `other` if not.
    fn start(&self, route: Option<&Route>, request: &http::Request<RequestBody>) -> CallMeter {
        let started_at = crate::handler::clock::call_started();
        let method = route
            .and_then(|route| {
                // The route matched `/{route.name}/`: the method is the rest.
                let method = request.uri().path().get(route.name.len() + 2..)?;
                let (_, metrics) = route.methods.iter().find(|(name, _)| *name == method)?;
                Some(metrics)
            })
            .unwrap_or(&self.other);
        method.start(started_at)
    }
}

/// The metrics of each method `service` declares, labelled `name/method`.
#[cfg(feature = "opentelemetry")]
fn method_metrics(
    instruments: &Instruments,
    name: &str,
    service: &dyn FastService,
) -> Vec<(&'static str, std::sync::Arc<MethodMetrics>)> {
    service
        .method_names()
        .iter()
        .map(|method| {
            (
                *method,
                instruments.method(Some(format!("{name}/{method}"))),
            )
        })
        .collect()
}

impl fmt::Debug for GrpcRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.routes.iter().map(|route| route.name))
            .finish()
    }
}

/// The `package.Service` part of `/package.Service/Method`.
fn service_name(path: &str) -> Option<&str> {
    let (service, method) = path.strip_prefix('/')?.split_once('/')?;
    (!service.is_empty() && !method.is_empty() && !method.contains('/')).then_some(service)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_name_needs_exactly_service_and_method() {
        assert_eq!(
            service_name("/helloworld.Greeter/SayHello"),
            Some("helloworld.Greeter")
        );
        for bad in [
            "",
            "/",
            "helloworld.Greeter/SayHello",
            "/helloworld.Greeter",
            "/x/",
            "//m",
            "/a/b/c",
        ] {
            assert_eq!(service_name(bad), None, "{bad:?}");
        }
    }
}
