#![doc = include_str!("../docs/CRATE.md")]

pub mod body;
pub mod codec;
pub mod future;
pub mod handler;
pub mod server;
pub mod status;

#[doc(hidden)]
pub mod codegen;

pub use crate::future::{FastFuture, RpcFuture};
pub use crate::server::Server;
pub use tonic::{Code, Request, Response, Status};
