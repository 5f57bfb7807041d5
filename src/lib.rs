//! fastgrpc: a gRPC server that answers ready calls inline.
pub mod future;
pub use future::FastFuture;
