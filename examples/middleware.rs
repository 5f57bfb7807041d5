//! Middleware on a fastgrpc server: `cargo run --example middleware`, then call it with
//! `cargo run --example greeter_client -- Ferris` (refused: no token) or with a token by hand.
//!
//! - server-wide tower layers: tower-http's gRPC tracing (one span per call with its method,
//!   duration and gRPC status, printed at DEBUG level) and a global load-shedding concurrency
//!   limit;
//! - a per-service layer: a 2 s timeout for the greeter only;
//! - an interceptor: callers need `authorization: Bearer open-sesame`; it names the method it
//!   refuses, and tells the handler who called through an extension.

use std::time::Duration;

use fastgrpc::service::CalledMethod;
use fastgrpc::{Request, Response, RpcFuture, Server, Status};
use tower::ServiceBuilder;

pub use protos::helloworld;

use helloworld::greeter_server::{Greeter, GreeterServer};
use helloworld::{HelloReply, HelloRequest};

/// Who the interceptor let in.
#[derive(Clone)]
struct Caller(String);

struct MyGreeter;

impl Greeter for MyGreeter {
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let caller = request.extensions().get::<Caller>().cloned();
        let name = request.into_inner().name;
        async move {
            let by = caller.map_or_else(String::new, |caller| format!(" (token of {})", caller.0));
            Ok(Response::new(HelloReply {
                message: format!("Hello {name}!{by}"),
            }))
        }
    }
}

/// Lets in callers with the token; refuses the others, saying which method they called.
fn check_token(mut request: Request<()>) -> Result<Request<()>, Status> {
    match request.metadata().get("authorization") {
        Some(token) if token == "Bearer open-sesame" => {
            request
                .extensions_mut()
                .insert(Caller("open-sesame".into()));
            Ok(request)
        }
        _ => {
            let method = request.extensions().get::<CalledMethod>();
            let method = method.map_or("?", CalledMethod::method);
            Err(Status::unauthenticated(format!("{method} needs a token")))
        }
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .init();
    let addr = "127.0.0.1:50051".parse().unwrap();
    println!("greeter with middleware on {addr}");
    Server::builder()
        .layer(tower_http::trace::TraceLayer::new_for_grpc())
        .layer(ServiceBuilder::new().load_shed().concurrency_limit(256))
        .add_layered_service(
            GreeterServer::with_interceptor(MyGreeter, check_token),
            ServiceBuilder::new().timeout(Duration::from_secs(2)),
        )
        .serve_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
