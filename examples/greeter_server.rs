//! The greeter from the README: `cargo run --release --example greeter_server`.
//!
//! Options: `--addr HOST:PORT` (default 127.0.0.1:50051), `--workers N` (tokio worker threads,
//! default: one per core). Ctrl-C stops it gracefully: calls in flight are finished first.
//!
//! For benchmarks: `--work-us N` makes every call compute for N microseconds first (a
//! CPU-heavy handler), and `--no-inline` starts calls in spawned tasks instead of inline on
//! the connection's thread (`run_inline(false)`).

use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status};

pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

use helloworld::greeter_server::{Greeter, GreeterServer};
use helloworld::{HelloReply, HelloRequest};

struct MyGreeter {
    /// Busy time per call, to model a CPU-heavy handler.
    work: std::time::Duration,
}

impl Greeter for MyGreeter {
    // Nothing to wait for, so answer with a ready FastFuture: the call is served inline.
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        if !self.work.is_zero() {
            busy_for(self.work);
        }
        let name = request.into_inner().name;
        if name.is_empty() {
            return FastFuture::err(Status::invalid_argument("name must not be empty"));
        }
        FastFuture::ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

/// Computes (without sleeping) for `duration`.
fn busy_for(duration: std::time::Duration) {
    let start = std::time::Instant::now();
    let mut x = 0u64;
    while start.elapsed() < duration {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut workers = None;
    let mut work = std::time::Duration::ZERO;
    let mut inline = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--workers" => workers = Some(value()?.parse::<usize>()?),
            "--work-us" => work = std::time::Duration::from_micros(value()?.parse()?),
            "--no-inline" => inline = false,
            "-h" | "--help" => {
                println!(
                    "usage: greeter_server [--addr HOST:PORT] [--workers N] [--work-us N] [--no-inline]"
                );
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
            .add_service(GreeterServer::new(MyGreeter { work }).run_inline(inline))
            .serve_with_shutdown(addr, async {
                let _ = tokio::signal::ctrl_c().await;
                println!("shutting down: finishing calls in flight");
            })
            .await
    })?;
    Ok(())
}
