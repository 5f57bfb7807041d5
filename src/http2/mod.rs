//! fastgrpc's own HTTP/2 server connection (RFC 9113), built for gRPC: frames parsed in place,
//! HPACK for the few headers gRPC sends, one task owning every stream of its connection.
//!
//! Work in progress: the HPACK layer is complete and tested; the frame layer and the connection
//! come next, and the server still runs on the h2 crate until the connection here passes every
//! suite (`docs/ARCHITECTURE.md`).
#![allow(dead_code)]

pub(crate) mod frame;
pub(crate) mod hpack;
