//! The same greeter served by `connectrpc` 0.9.1, the Connect project's Rust server: the peer
//! `benches/e2e.sh connect` measures fastgrpc's Connect calls against, as
//! `tonic_greeter_server` is for gRPC.
//! `cargo run --release --example connectrpc_greeter_server -- --addr 127.0.0.1:50053 --workers 1`.

use std::sync::Arc;

/// connectrpc-build's output, as it generates it (its server types have no `Debug`).
#[allow(missing_debug_implementations)]
pub mod proto {
    connectrpc::include_generated!();
}

use connectrpc::{RequestContext, Response, Router, Server, ServiceRequest, ServiceResult};
use proto::helloworld::{Greeter, HelloReply, HelloRequest};

#[path = "support/peer.rs"]
mod peer;

struct MyGreeter;

impl Greeter for MyGreeter {
    // As connectrpc's own examples write it: an `async fn` with the concrete result type.
    #[allow(refining_impl_trait)]
    async fn say_hello(
        &self,
        _context: RequestContext,
        request: ServiceRequest<'_, HelloRequest>,
    ) -> ServiceResult<HelloReply> {
        Response::ok(HelloReply {
            message: format!("Hello {}!", request.name),
            ..Default::default()
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, runtime) = peer::runtime_from_args("127.0.0.1:50051")?;
    runtime
        .block_on(async move {
            let router = Router::new().add_service(Arc::new(MyGreeter));
            // Ctrl-C (the benchmark's SIGINT) stops it at once: its own graceful shutdown waits
            // for connections the load tool leaves open.
            tokio::select! {
                result = Server::new(router).serve(addr) => result,
                _ = tokio::signal::ctrl_c() => Ok(()),
            }
        })
        .map_err(|error| error.to_string().into())
}
