#![doc = include_str!("../docs/CRATE.md")]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

// Every module is private: what users write is re-exported below, what generated code needs is
// in `codegen`. `docs/ARCHITECTURE.md` maps the modules.
mod body;
mod codec;
mod compression;
mod deadline;
mod future;
mod handler;
#[cfg(not(feature = "__fuzz"))]
mod http2;
// The fuzz targets reach the engine's parsers.
#[cfg(feature = "__fuzz")]
#[doc(hidden)]
pub mod http2;
mod metadata;
#[cfg(feature = "opentelemetry")]
mod metrics;
mod observe;
mod response;
mod server;
mod service;
mod spare_maps;
mod status;
mod stream;
mod transport;

#[doc(hidden)]
pub mod codegen;

/// The fuzz targets' logic, written against this crate's internals. Only with the `__fuzz`
/// feature, which `fuzz/` and the workspace's corpus replay (`tests/fuzz_regressions.rs`) turn
/// on; never part of a user's build.
#[cfg(feature = "__fuzz")]
#[doc(hidden)]
pub mod fuzz_logic;
// `fuzz_logic` names this crate `fastgrpc`, as code outside it would (it also reaches private
// modules, which the fuzz targets themselves cannot).
#[cfg(feature = "__fuzz")]
extern crate self as fastgrpc;

pub use crate::body::{RequestBody, ResponseBody};
pub use crate::codec::Streaming;
pub use crate::compression::{CompressionEncoding, MessageCompression, RequestCompressed};
pub use crate::deadline::{Deadline, IdleTimeout, WithIdleTimeout};
pub use crate::future::{FastFuture, RpcFuture};
pub use crate::handler::{BoxStream, ResponseFuture};
pub use crate::metadata::Trailers;
pub use crate::server::{
    Address, AsyncInterceptor, BoxError, Builder, CalledMethod, ConnectInfo, Connected, Cors,
    Dispatcher, FastService, ForTonic, Http2Engine, Intercepted, Interceptor, NamedService, Server,
    ServerStats, TowerService, async_interceptor,
};
#[cfg(feature = "tls")]
pub use crate::server::{TlsConfig, TlsError};
pub use crate::stream::{MapAsync, MapAsyncExt};
/// The rustls the `tls` feature serves with, to build a [`TlsConfig`]'s alternative, a
/// `rustls::ServerConfig` of your own, with the same version.
#[cfg(feature = "tls")]
pub use tokio_rustls::rustls;
pub use tonic::{Code, Request, Response, Status};

/// The guide: each kind of RPC, and what a handler sees and controls (`docs/GUIDE.md`).
///
/// Its examples use generated code, so they run as doc tests of the workspace's `tests`
/// crate, which compiles the protos; this crate only shows them.
#[cfg(not(doctest))]
#[doc = include_str!("../docs/GUIDE.md")]
pub mod guide {}
