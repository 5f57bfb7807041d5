//! [`FastService`]: the interface between the connection driver and a gRPC service.

use crate::body::RequestBody;
use crate::handler::ResponseFuture;

pub use tonic::server::NamedService;

/// A gRPC service whose calls may be answered inline.
///
/// Generated servers implement it (and [`tower_service::Service`] too, for use in tower
/// stacks). The connection driver calls it from its own poll, through a shared reference,
/// so serving a call needs neither a clone of the service nor `poll_ready`. A returned
/// response that is already ready is sent at once; a pending one finishes in a spawned task.
pub trait FastService: Send + Sync + 'static {
    /// Serves one call. `request`'s path is `/package.Service/Method`.
    fn call(&self, request: http::Request<RequestBody>) -> ResponseFuture;
}
