//! Services and what composes them: [`FastService`], the interface every generated server
//! implements and every transport calls (over [`RequestBody`] and [`ResponseBody`]);
//! interceptors ([`Interceptor`], [`async_interceptor`], [`CalledMethod`]); tower services
//! hosted beside generated ones ([`TowerService`]); fastgrpc services inside tonic's server
//! ([`ForTonic`]); the whole server as one service, in-process ([`Dispatcher`]); and gRPC-Web's
//! CORS policy ([`Cors`]).

// Inside: the router and its gRPC-Web translation, the server-wide layers, and the macro that
// makes any `FastService` a tower `Service` too. Nothing here knows which transport or HTTP/2
// engine carries a call.

mod connect;
mod cors;
mod dispatch;
mod for_tonic;
mod from_tower;
mod intercept;
mod openapi;
mod rest;
mod router;

pub use self::connect::ConnectGet;
pub use self::cors::Cors;
pub use self::dispatch::Dispatcher;
pub(crate) use self::dispatch::{Boxed, Layers};
pub use self::for_tonic::ForTonic;
pub(crate) use self::from_tower::FromTower;
pub use self::from_tower::{BoxError, TowerService};
pub use self::intercept::{
    AsyncInterceptor, CalledMethod, Intercepted, Interceptor, async_interceptor,
};
pub(crate) use self::router::Router;
pub use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
pub use crate::handler::ResponseFuture;

pub use tonic::server::NamedService;

/// A gRPC service whose calls may be answered inline.
///
/// Generated servers implement it (and [`tower_service::Service`] too, for use in tower
/// stacks). Each connection calls it from its own poll, through a shared reference,
/// so serving a call needs neither a clone of the service nor `poll_ready`. A returned
/// response that is already ready is sent at once; a pending one finishes in a spawned task.
pub trait FastService: Send + Sync + 'static {
    /// Serves one call. `request`'s path is `/package.Service/Method`.
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture;

    /// The names of the methods the service serves (`SayHello`, not its path): the methods
    /// the server's metrics label by name (gRFC A66); calls of any other are labelled `other`.
    /// Generated servers list theirs; the default lists none.
    fn method_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// The `google.api.http` rules of the service's methods, for REST transcoding: those
    /// `fastgrpc-build` read from its protos; the default has none.
    #[doc(hidden)]
    fn http_rules(&self) -> &'static [crate::rest::Rule] {
        &[]
    }

    /// The OpenAPI 3.1 document of the service's `google.api.http` rules, which
    /// `fastgrpc-build` generated beside them (`OPENAPI`), for the server to serve
    /// (`Builder::openapi_path`); the default has none.
    #[doc(hidden)]
    fn openapi(&self) -> Option<&'static str> {
        None
    }

    /// The largest request message the service decodes, in bytes: a REST call's body is read
    /// whole up to it before it is bound into the message.
    #[doc(hidden)]
    fn max_request_size(&self) -> usize {
        crate::codec::DEFAULT_MAX_RECEIVE_MESSAGE_SIZE
    }

    /// The encodings a request may be compressed with besides `identity`: a REST call's body
    /// is decompressed with one of them before it is bound into the message.
    #[doc(hidden)]
    fn accepted_encodings(&self) -> &[crate::CompressionEncoding] {
        &[]
    }

    /// Serves one call whose context (`call`) its transport read from the request's head
    /// already. Generated servers and interceptors serve through it, so that what the call is
    /// is read once; any other service serves it as [`call`](Self::call).
    #[doc(hidden)]
    fn serve(&self, request: http::Request<RequestBody>, call: &mut Call) -> ResponseFuture {
        let _ = call;
        self.call(request)
    }
}

/// Implements tower's `Service` for a [`FastService`] by calling [`FastService::call`]: always
/// ready, never failing. Written once here for the dispatcher, interceptors and every generated
/// server (through `codegen`), so a [`FastService`] can also go wherever tower services go.
///
/// `tower_service_of_fast_service!(Type)`, or with generic parameters and their bounds,
/// `tower_service_of_fast_service!(<S: Bound, I: Bound> Type<S, I>)`. Named through
/// `codegen`; `#[macro_export]` also puts it at the crate root, under a name no one should use.
#[doc(hidden)]
#[macro_export]
macro_rules! __tower_service_of_fast_service {
    (@impl [$($generics:tt)*] $ty:ty) => {
        impl<$($generics)*>
            $crate::codegen::Service<$crate::codegen::http::Request<$crate::service::RequestBody>> for $ty
        {
            type Response = $crate::codegen::http::Response<$crate::service::ResponseBody>;
            type Error = ::core::convert::Infallible;
            type Future = $crate::service::ResponseFuture;

            fn poll_ready(
                &mut self,
                _cx: &mut ::core::task::Context<'_>,
            ) -> ::core::task::Poll<::core::result::Result<(), Self::Error>> {
                ::core::task::Poll::Ready(Ok(()))
            }

            fn call(
                &mut self,
                request: $crate::codegen::http::Request<$crate::service::RequestBody>,
            ) -> Self::Future {
                $crate::service::FastService::call(self, request)
            }
        }
    };
    (<$($param:ident: $bound:path),+> $ty:ty) => {
        $crate::__tower_service_of_fast_service!(@impl [$($param: $bound),+] $ty);
    };
    ($ty:ty) => {
        $crate::__tower_service_of_fast_service!(@impl [] $ty);
    };
}
