#![doc = include_str!("../docs/CRATE.md")]
#![warn(missing_docs)]

pub mod body;
pub mod codec;
pub mod compression;
pub mod deadline;
pub mod future;
pub mod handler;
pub mod metadata;
pub mod server;
pub mod status;
pub mod stream;
mod web;

#[doc(hidden)]
pub mod codegen;

pub use crate::codec::Streaming;
pub use crate::future::{FastFuture, RpcFuture};
pub use crate::handler::BoxStream;
pub use crate::server::Server;
/// The rustls the `tls` feature serves with, to build a [`server::TlsConfig`]'s alternative,
/// a `rustls::ServerConfig` of your own, with the same version.
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
