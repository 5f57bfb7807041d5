#![doc = include_str!("../docs/CRATE.md")]
#![deny(missing_docs)]
// `unsafe` lives in one audited place, `future/slot.rs`, which allows it; Miri runs its tests.
#![deny(unsafe_code)]
#![warn(unreachable_pub)]

// What users write is re-exported below or in the three public modules by role (`service`,
// `transport`, `stream`); every other module is private. What generated code needs is in
// `codegen`, what this repository's fuzz oracles and benchmarks reach is in `internals`.
// `docs/ARCHITECTURE.md` maps the modules.
mod body;
mod call;
mod codec;
mod compression;
mod deadline;
mod future;
mod handler;
mod http2;
mod metadata;
#[cfg(feature = "opentelemetry")]
mod metrics;
mod observe;
mod protocol;
mod rest;
mod server;
pub mod service;
mod spare_maps;
mod status;
pub mod stream;
pub mod transport;
pub mod types;

#[doc(hidden)]
pub mod codegen;

#[doc(hidden)]
pub mod internals;

// What a handler writer and a server's `main` need, at the root; the rest by role in `service`,
// `transport` and `stream` (docs/design/api.md says why).
pub use crate::codec::Streaming;
pub use crate::compression::{CompressionEncoding, MessageCompression, RequestCompressed};
pub use crate::deadline::Deadline;
pub use crate::future::{FastFuture, RpcFuture};
pub use crate::handler::BoxStream;
pub use crate::metadata::{ErrorHeaders, Trailers};
pub use crate::server::{Builder, Server};
pub use tonic::{Code, Request, Response, Status};

/// The guide: each kind of RPC, and what a handler sees and controls (`docs/GUIDE.md`).
///
/// Its examples use generated code, so they run as doc tests of the workspace's `tests`
/// crate, which compiles the protos; this crate only shows them.
#[cfg(not(doctest))]
#[doc = include_str!("../docs/GUIDE.md")]
pub mod guide {}
