//! What a call does, above the connection that carries it: unary and streaming calls,
//! deadlines, compression, gRPC-Web, middleware and interceptors, tonic services and clients,
//! the interop cases, metrics, `map_async`; REST transcoding's matching and binding, and REST
//! calls end to end.

mod compression;
mod connect;
mod deadlines;
mod grpc_web;
mod interop;
mod map_async_props;
mod metrics;
mod middleware;
mod protojson;
mod rest;
mod streaming;
mod tonic_compat;
mod transcoding;
mod unary;
