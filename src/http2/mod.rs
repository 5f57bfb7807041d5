//! fastgrpc's own HTTP/2 server connection (RFC 9113), built for gRPC: frames parsed in place,
//! HPACK for the few headers gRPC sends, one task owning every stream of its connection.
//!
//! - `frame`: frames parsed and written;
//! - `hpack`: header compression;
//! - `request`, `response`: request heads checked and built, response heads encoded;
//! - `mail`: what a connection and its calls' tasks hand each other (its outbox, and each
//!   stream's inbox);
//! - `calls`, `config`: what the engine needs from the layer above it, and its settings;
//! - `connection`: the connection itself.
//!
//! The engine imports nothing from the layers above it (the server, the transport, the
//! handlers, their bodies): they reach it through [`Calls`], which the transport implements,
//! and [`Config`], plain values. The only HTTP/2 engine since the h2 crate's was retired
//! (`docs/design/engine.md` says why).

mod buffers;
mod calls;
mod config;
mod connection;
pub(crate) mod frame;
pub(crate) mod hpack;
mod mail;
mod output;
mod request;
mod response;

pub(crate) use calls::{BodyFrame, Calls, Ending, Fields, Later, Outgoing, RequestData, Started};
pub(crate) use config::{Config, DrainTimes, Keepalive, PingPolicy};
pub(crate) use connection::{Connection, Ended};
pub(crate) use mail::{Inbox, RecvEnd};
