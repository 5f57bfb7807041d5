//! The same greeter served by tonic 0.14, the peer our benchmarks compare against:
//! `cargo run --release --example tonic_greeter_server -- --addr 127.0.0.1:50052 --workers 1`.
//!
//! As `greeter_server` does, it hosts `grpc.health.v1.Health` beside the greeter, and
//! `--work-us N` makes every `SayHello` compute for N microseconds first. `--web` serves
//! gRPC-Web too, as tonic does it: `tonic-web`'s layer and `accept_http1`.

use std::time::Duration;

#[path = "support/busy.rs"]
mod busy;

pub use protos::tonic_pb::helloworld;

use helloworld::greeter_server::{Greeter, GreeterServer};
use helloworld::{HelloReply, HelloRequest};
use tonic::{Request, Response, Status};

struct MyGreeter {
    /// Busy time per call, to model a CPU-heavy handler.
    work: Duration,
}

#[tonic::async_trait]
impl Greeter for MyGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        if !self.work.is_zero() {
            busy::busy_for(self.work);
        }
        let name = request.into_inner().name;
        if name.is_empty() {
            return Err(Status::invalid_argument("name must not be empty"));
        }
        Ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut workers = None;
    let mut work = Duration::ZERO;
    let mut web = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--workers" => workers = Some(value()?.parse::<usize>()?),
            "--work-us" => work = Duration::from_micros(value()?.parse()?),
            "--web" => web = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        runtime.worker_threads(workers);
    }
    runtime.enable_all().build()?.block_on(async move {
        let (health, health_service) = tonic_health::server::health_reporter();
        health.set_serving::<GreeterServer<MyGreeter>>().await;
        println!("tonic greeter listening on {addr}");
        let greeter = GreeterServer::new(MyGreeter { work });
        let stopped = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        // Two branches, so that the plain peer carries no layer at all.
        if web {
            tonic::transport::Server::builder()
                .accept_http1(true)
                .layer(tonic_web::GrpcWebLayer::new())
                .add_service(health_service)
                .add_service(greeter)
                .serve_with_shutdown(addr, stopped)
                .await
        } else {
            tonic::transport::Server::builder()
                .add_service(health_service)
                .add_service(greeter)
                .serve_with_shutdown(addr, stopped)
                .await
        }
    })?;
    Ok(())
}
