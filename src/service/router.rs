//! [`Router`]: routing a call to the service its `:path` names, after checking it is a call
//! in a protocol the server speaks; gRPC-Web and Connect calls are served as gRPC and their
//! answers translated back. Every call is observed here (`observe`), where it is a gRPC call
//! whose service and declared methods are known.

use std::fmt;

use super::FastService;
use super::connect;
use super::openapi::OpenApi;
use super::rest::{self, RestRoutes};
use crate::FastFuture;
use crate::body::RequestBody;
use crate::call::Call;
use crate::codec::json::DecodeOptions;
use crate::handler::ResponseFuture;
#[cfg(feature = "opentelemetry")]
use crate::metrics::{CallMeter, Instruments, MethodMetrics};
use crate::observe::Observed;
use crate::protocol::web::Web;
use crate::protocol::{Format, Protocol};
use crate::status;

/// The services a server hosts, looked up by fully-qualified name (`package.Service`).
#[derive(Default)]
pub(crate) struct Router {
    /// Few services per server: a linear scan over names beats hashing the path.
    routes: Vec<Route>,
    /// gRFC A66's metrics, when the server has a meter provider.
    #[cfg(feature = "opentelemetry")]
    metrics: Option<Metrics>,
    /// How every call's JSON messages are read.
    json: DecodeOptions,
    /// The `google.api.http` rules of the hosted services, if they have any and the server
    /// transcodes.
    rest: Option<RestRoutes>,
    /// The OpenAPI document of those rules and where it is served, if the builder asked.
    openapi: Option<OpenApi>,
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

impl Router {
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

    /// Gathers the `google.api.http` rules of every hosted service, for REST transcoding, and
    /// their OpenAPI documents as one, served at `openapi_path` if given; fails, naming both
    /// methods, on two rules that match the same requests, and on a rule that answers a GET
    /// of the document's path.
    pub(crate) fn transcode(&mut self, openapi_path: Option<&str>) -> Result<(), String> {
        self.rest = RestRoutes::new(
            self.routes
                .iter()
                .enumerate()
                .map(|(index, route)| (index, route.service.http_rules())),
        )?;
        self.openapi = match (&self.rest, openapi_path) {
            (Some(rest), Some(path)) => {
                let documents: Vec<&'static str> = self
                    .routes
                    .iter()
                    .filter_map(|route| route.service.openapi())
                    .collect();
                let openapi = OpenApi::new(path, &documents)?;
                if openapi.is_some()
                    && let Some(rule) = rest.rule_for(&http::Method::GET, path)
                {
                    return Err(format!(
                        "the OpenAPI document's path {path} is also GET {} of {}",
                        rule.template.text, rule.path
                    ));
                }
                openapi
            }
            _ => None,
        };
        Ok(())
    }

    /// Whether any hosted service has `google.api.http` rules the server answers.
    pub(crate) fn transcodes(&self) -> bool {
        self.rest.is_some()
    }

    /// Whether `path` is `/package.Service/Method` of a hosted service.
    pub(crate) fn hosts(&self, path: &str) -> bool {
        self.route(path).is_some()
    }

    /// The service at `index`.
    pub(super) fn service(&self, index: usize) -> &dyn FastService {
        &*self.routes[index].service
    }

    /// Serves `request`, a call of the service at `index`, as gRPC: observed as
    /// [`serve_grpc`](Self::serve_grpc) observes calls.
    pub(super) fn serve_service(
        &self,
        index: usize,
        request: http::Request<RequestBody>,
        call: &mut Call,
    ) -> ResponseFuture {
        self.serve_observed(self.routes.get(index), request, call)
    }

    /// Reads every call's JSON messages as `json` says.
    pub(crate) fn set_json(&mut self, json: DecodeOptions) {
        self.json = json;
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

    /// Answers `request`, the call `call`: HTTP errors for requests in no protocol the server
    /// speaks, `UNIMPLEMENTED` for unknown services, the service's own answer otherwise.
    #[inline]
    pub(crate) fn serve(
        &self,
        request: http::Request<RequestBody>,
        call: &mut Call,
    ) -> ResponseFuture {
        call.set_json(self.json);
        if call.is_rest()
            && let Some(routes) = &self.rest
        {
            if let Some(openapi) = &self.openapi
                && request.uri().path() == openapi.path()
            {
                return FastFuture::ok(openapi.answer(request.method()));
            }
            return rest::serve(self, routes, request, call);
        }
        if request.method() == http::Method::GET && request.uri().query().is_some() {
            return match connect::get_request(request) {
                Some(Ok(request)) => self.serve_connect(request, call),
                Some(Err(status)) => FastFuture::ok(call.failure(&status)),
                None => FastFuture::ok(crate::protocol::http_error::method_not_allowed()),
            };
        }
        if request.method() != http::Method::POST {
            return FastFuture::ok(crate::protocol::http_error::method_not_allowed());
        }
        let Some(wire) = call.wire() else {
            return FastFuture::ok(crate::protocol::http_error::unsupported_media_type());
        };
        let web = match wire.protocol {
            Protocol::Grpc if wire.format == Format::Json => {
                return self
                    .serve_grpc(request, call)
                    .map(crate::protocol::grpc::in_json);
            }
            Protocol::Grpc => return self.serve_grpc(request, call),
            Protocol::ConnectUnary | Protocol::ConnectStream => {
                return self.serve_connect(request, call);
            }
            Protocol::GrpcWeb | Protocol::GrpcWebText => Web::of(wire),
            // Marked REST by a router with rules, served by one without (never in a server).
            Protocol::Rest { .. } => {
                let path = status::excerpt(request.uri().path());
                let status = tonic::Status::not_found(format!("no route for {path}"));
                return FastFuture::ok(call.failure(&status));
            }
        };
        match web.grpc_request(request) {
            Ok(request) => self
                .serve_grpc(request, call)
                .map(move |response| web.web_response(response)),
            Err(status) => FastFuture::ok(web.failure(&status)),
        }
    }

    /// Answers a Connect call.
    fn serve_connect(
        &self,
        request: http::Request<RequestBody>,
        call: &mut Call,
    ) -> ResponseFuture {
        connect::serve(request, call, |request, call| {
            self.serve_grpc(request, call)
        })
    }

    /// Answers a call as gRPC: the service's answer, or `UNIMPLEMENTED` for an unknown one;
    /// observed (`observe`) if anything wants to see it. A handler may answer in the call's own
    /// form if the router asked (`Call::ask_own_form`), unless an observer reads the gRPC form.
    #[inline]
    fn serve_grpc(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
        let route = self.route(request.uri().path());
        self.serve_observed(route, request, call)
    }

    /// Answers a call of `route` (`None`: no hosted service has its name) as gRPC, observed.
    #[inline]
    fn serve_observed(
        &self,
        route: Option<&Route>,
        mut request: http::Request<RequestBody>,
        call: &mut Call,
    ) -> ResponseFuture {
        #[cfg(feature = "opentelemetry")]
        let meter = self
            .metrics
            .as_ref()
            .map(|metrics| metrics.start(route, &request, call));
        let observed = Observed::start(
            &mut request,
            call,
            #[cfg(feature = "opentelemetry")]
            meter,
        );
        match observed {
            None => serve_route(route, request, call),
            Some(mut observed) => {
                call.decline_own_form();
                let response = observed.run(|| serve_route(route, request, call));
                crate::observe::observed(response, observed, call.polled())
            }
        }
    }

    fn route(&self, path: &str) -> Option<&Route> {
        let name = service_name(path)?;
        self.routes.iter().find(|route| route.name == name)
    }
}

/// The answer of `route`'s service, or `UNIMPLEMENTED` when no service has the request's name.
#[inline]
fn serve_route(
    route: Option<&Route>,
    request: http::Request<RequestBody>,
    call: &mut Call,
) -> ResponseFuture {
    match route {
        Some(route) => route.service.serve(request, call),
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
    fn start(
        &self,
        route: Option<&Route>,
        request: &http::Request<RequestBody>,
        call: &Call,
    ) -> CallMeter {
        let started_at = call.started();
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

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.routes.iter().map(|route| route.name))
            .finish()
    }
}

/// The `package.Service` part of `/package.Service/Method`.
fn service_name(path: &str) -> Option<&str> {
    // One pass over the bytes: a call's path is short, and the searchers of `split_once` and
    // `contains` cost more to set up than the scan (docs/BENCHMARKS.md).
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return None;
    }
    let mut slash = None;
    for (at, &byte) in bytes.iter().enumerate().skip(1) {
        if byte == b'/' {
            if slash.is_some() {
                return None;
            }
            slash = Some(at);
        }
    }
    let slash = slash?;
    (slash > 1 && slash + 1 < bytes.len()).then(|| &path[1..slash])
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
