//! Interceptors: a check run before a service sees a call, which can read and change the
//! call's metadata and extensions, or refuse it with a status.
//!
//! An interceptor sees the request without its body as a `tonic::Request<()>`, as tonic's
//! interceptors do, with the [`CalledMethod`] in its extensions. A synchronous interceptor is
//! any `Fn(Request<()>) -> Result<Request<()>, Status>`; [`async_interceptor`] makes one from an
//! async function. An interceptor that answers at once keeps the call on the inline path.

use std::future::Future;
use std::sync::Arc;

use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use super::{FastService, NamedService};
use crate::FastFuture;
use crate::body::RequestBody;
use crate::call::Call;
use crate::handler::ResponseFuture;

/// Runs before a service sees a call; may change the request's metadata and extensions, or
/// end the call with a status.
pub trait Interceptor: Send + Sync + 'static {
    /// Checks (and possibly changes) `request`, or refuses it.
    fn intercept(&self, request: Request<()>) -> FastFuture<Request<()>, Status>;
}

impl<F> Interceptor for F
where
    F: Fn(Request<()>) -> Result<Request<()>, Status> + Send + Sync + 'static,
{
    fn intercept(&self, request: Request<()>) -> FastFuture<Request<()>, Status> {
        FastFuture::ready(self(request))
    }
}

/// An interceptor made from an async function: see [`async_interceptor`].
#[derive(Debug, Clone)]
pub struct AsyncInterceptor<F> {
    check: F,
}

/// Makes an interceptor of an async function (one that looks a token up in a cache, say).
/// Its future is polled once at once: if it completes then, the call stays inline.
///
/// ```
/// use fastgrpc::service::async_interceptor;
/// use fastgrpc::{Request, Status};
///
/// let auth = async_interceptor(|request: Request<()>| async move {
///     match request.metadata().get("authorization") {
///         Some(token) if token == "Bearer open-sesame" => Ok(request),
///         _ => Err(Status::unauthenticated("no valid token")),
///     }
/// });
/// # let _ = auth;
/// ```
pub fn async_interceptor<F, Fut>(check: F) -> AsyncInterceptor<F>
where
    F: Fn(Request<()>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Request<()>, Status>> + Send + 'static,
{
    AsyncInterceptor { check }
}

impl<F, Fut> Interceptor for AsyncInterceptor<F>
where
    F: Fn(Request<()>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Request<()>, Status>> + Send + 'static,
{
    fn intercept(&self, request: Request<()>) -> FastFuture<Request<()>, Status> {
        FastFuture::from_future((self.check)(request))
    }
}

/// The method a call is for, in the extensions of the request an interceptor sees.
#[derive(Debug, Clone)]
pub struct CalledMethod {
    path: http::uri::PathAndQuery,
}

impl CalledMethod {
    /// The request's path: `/package.Service/Method`.
    pub fn path(&self) -> &str {
        self.path.path()
    }

    /// The fully-qualified service name, `package.Service`.
    pub fn service(&self) -> &str {
        self.split().0
    }

    /// The method name, `Method`.
    pub fn method(&self) -> &str {
        self.split().1
    }

    fn split(&self) -> (&str, &str) {
        let path = self.path();
        path.strip_prefix('/')
            .unwrap_or(path)
            .split_once('/')
            .unwrap_or((path, ""))
    }
}

/// A service whose calls pass an [`Interceptor`] first. Generated servers make one with
/// `XServer::with_interceptor`, as tonic's do; [`Intercepted::new`] wraps any service.
///
/// ```
/// use fastgrpc::service::CalledMethod;
/// use fastgrpc::{Request, Status};
///
/// fn read_only(request: Request<()>) -> Result<Request<()>, Status> {
///     let method = request.extensions().get::<CalledMethod>().expect("always present");
///     if method.method().starts_with("Get") {
///         Ok(request)
///     } else {
///         Err(Status::permission_denied("read-only replica"))
///     }
/// }
/// # fn wrap<S: fastgrpc::service::FastService>(service: S) -> fastgrpc::service::Intercepted<S, fn(Request<()>) -> Result<Request<()>, Status>> {
/// fastgrpc::service::Intercepted::new(service, read_only)
/// # }
/// ```
#[derive(Debug)]
pub struct Intercepted<S, I> {
    /// Shared with calls whose interceptor is still pending.
    service: Arc<S>,
    interceptor: I,
}

impl<S, I> Intercepted<S, I> {
    /// Puts `interceptor` in front of `service`.
    pub fn new(service: S, interceptor: I) -> Self {
        Intercepted {
            service: Arc::new(service),
            interceptor,
        }
    }
}

impl<S, I: Clone> Clone for Intercepted<S, I> {
    fn clone(&self) -> Self {
        Intercepted {
            service: Arc::clone(&self.service),
            interceptor: self.interceptor.clone(),
        }
    }
}

impl<S: NamedService, I> NamedService for Intercepted<S, I> {
    const NAME: &'static str = S::NAME;
}

impl<S: FastService, I: Interceptor> FastService for Intercepted<S, I> {
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture {
        let mut call = Call::of_request(&request);
        self.serve(request, &mut call)
    }

    /// Runs the interceptor, then the service with the same call; a refusal is made here, in
    /// gRPC's form, and translated by the router like any gRPC-form answer. An interceptor
    /// that waits has the service called in its task, as any in-process call.
    fn serve(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
        let (mut parts, body) = request.into_parts();
        let mut head = Request::from_parts(
            MetadataMap::from_headers(std::mem::take(&mut parts.headers)),
            std::mem::take(&mut parts.extensions),
            (),
        );
        head.extensions_mut().insert(CalledMethod {
            path: parts
                .uri
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")),
        });
        let resume = move |head: Request<()>| {
            let (metadata, extensions, ()) = head.into_parts();
            parts.headers = metadata.into_headers();
            parts.extensions = extensions;
            http::Request::from_parts(parts, body)
        };
        match self.interceptor.intercept(head).into_ready() {
            Ok(Ok(head)) => self.service.serve(resume(head), call),
            Ok(Err(status)) => FastFuture::ok(crate::protocol::grpc::status(&status)),
            Err(pending) => {
                let service = Arc::clone(&self.service);
                FastFuture::boxed(async move {
                    match pending.await {
                        Ok(head) => service.call(resume(head)).await,
                        Err(status) => Ok(crate::protocol::grpc::status(&status)),
                    }
                })
            }
        }
    }

    fn method_names(&self) -> &'static [&'static str] {
        self.service.method_names()
    }

    fn http_rules(&self) -> &'static [crate::rest::Rule] {
        self.service.http_rules()
    }

    fn openapi(&self) -> Option<&'static str> {
        self.service.openapi()
    }

    fn max_request_size(&self) -> usize {
        self.service.max_request_size()
    }

    fn accepted_encodings(&self) -> &[crate::CompressionEncoding] {
        self.service.accepted_encodings()
    }
}

crate::__tower_service_of_fast_service!(<S: FastService, I: Interceptor> Intercepted<S, I>);
