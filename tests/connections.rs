//! The connections that carry calls: HTTP/2 conformance and fastgrpc's engine, bad input,
//! limits and the attacks they bound, HTTP/1.1, transports (TCP, unix sockets, TLS),
//! shutdown, and the fuzz corpus replayed.

mod bad_input;
mod fuzz_regressions;
mod http1;
mod http2_conformance;
mod http2_engine;
mod limits;
mod shutdown;
#[cfg(feature = "tls")]
mod tls;
mod transport;
