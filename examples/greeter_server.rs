//! The greeter from the README: `cargo run --release --example greeter_server`.
//!
//! Options: `--addr HOST:PORT` (default 127.0.0.1:50051), `--workers N` (tokio worker threads,
//! default: one per core). Ctrl-C stops it gracefully: calls in flight are finished first.

use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status};

pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

use helloworld::greeter_server::{Greeter, GreeterServer};
use helloworld::{HelloReply, HelloRequest};

struct MyGreeter;

impl Greeter for MyGreeter {
    // Nothing to wait for, so answer with a ready FastFuture: the call is served inline.
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let name = request.into_inner().name;
        if name.is_empty() {
            return FastFuture::err(Status::invalid_argument("name must not be empty"));
        }
        FastFuture::ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut workers = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--workers" => workers = Some(value()?.parse::<usize>()?),
            "-h" | "--help" => {
                println!("usage: greeter_server [--addr HOST:PORT] [--workers N]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }

    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        runtime.worker_threads(workers);
    }
    runtime.enable_all().build()?.block_on(async move {
        println!("greeter listening on {addr}");
        Server::builder()
            .add_service(GreeterServer::new(MyGreeter))
            .serve_with_shutdown(addr, async {
                let _ = tokio::signal::ctrl_c().await;
                println!("shutting down: finishing calls in flight");
            })
            .await
    })?;
    Ok(())
}
