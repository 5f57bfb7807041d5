//! The greeter from the README: `cargo run --release --example greeter_server`.
//!
//! Options: `--addr HOST:PORT` (default 127.0.0.1:50051), `--workers N` (tokio worker threads,
//! default: one per core). Ctrl-C or SIGTERM stops it gracefully: it stops accepting, sends
//! GOAWAY, and finishes the calls in flight first.
//!
//! For running behind a load balancer (`docs/DEPLOYMENT.md`): `--max-connection-age SECS` sends
//! GOAWAY on each connection once it is that old, so clients reconnect and spread over the
//! replicas; `--drain-grace SECS` bounds how long calls may go on after a GOAWAY (for age or
//! shutdown) before their connection is closed; `--shutdown-delay SECS` keeps serving that long
//! after the signal, with health NOT_SERVING, so balancers and readiness probes stop sending
//! new calls before the server stops accepting them.
//!
//! Beside the greeter it hosts tonic's standard services, unchanged: `grpc.health.v1.Health`
//! (`""` and `helloworld.Greeter` are SERVING) for probes and load balancers, and server
//! reflection (v1 and v1alpha) for tools such as `grpcurl list`.
//!
//! For benchmarks: `--work-us N` makes every `SayHello` compute for N microseconds first (a
//! CPU-heavy handler). Calls start as adaptive inline decides (inline while they are cheap);
//! `--no-inline` starts every call in a spawned task (`run_inline(false)`), `--always-inline`
//! every call inline on the connection's thread (`run_inline(true)`), `--inline-cost-limit-us N`
//! sets the estimated cost per call above which adaptive inline spawns (`inline_cost_limit`),
//! and `--inline-budget-us N` how long one poll of a connection may run calls inline
//! (`Builder::inline_budget`).
//!
//! `--http2-engine fastgrpc` is accepted, for scripts written when the h2 crate's engine could
//! be chosen instead; that engine was retired, and `--http2-engine h2` is refused with a
//! message saying so.
//!
//! gRPC-Web is served on the same port (over HTTP/2, and over HTTP/1.1 for browsers);
//! `--no-http1` serves HTTP/2 only (`Builder::accept_http1(false)`). Pages of any origin may
//! call it; `--web-origin ORIGIN` (repeatable) allows only those (`Builder::web_cors`).
//!
//! `--metrics-addr HOST:PORT` records gRPC's standard server metrics (gRFC A66,
//! `Builder::meter_provider`) and serves them in Prometheus's text format at
//! `http://HOST:PORT/metrics`: `grpc_server_call_started_total`,
//! `grpc_server_call_duration_seconds`, and the `..._compressed_message_size_bytes`
//! histograms, labelled `grpc_method` and `grpc_status`.

use std::future::Future;
use std::time::Duration;

use busy::busy_for;
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status};
use tonic_health::ServingStatus;

#[path = "support/busy.rs"]
mod busy;
#[path = "support/prometheus.rs"]
mod prometheus_endpoint;

// The generated code, and every proto encoded for the reflection service (`proto/build.rs`).
pub use protos::{DESCRIPTORS, helloworld};

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

/// Completes on Ctrl-C or, on Unix, SIGTERM (what Kubernetes and `docker stop` send), with the
/// signal's name. The SIGTERM handler is installed here, before serving starts.
#[cfg(unix)]
fn shutdown_signal() -> std::io::Result<impl Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "Ctrl-C",
            _ = terminate.recv() => "SIGTERM",
        }
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> std::io::Result<impl Future<Output = &'static str>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    })
}

/// Parses a duration in seconds (fractions allowed).
fn seconds(value: &str) -> Result<Duration, Box<dyn std::error::Error>> {
    Ok(Duration::try_from_secs_f64(value.parse()?)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut workers = None;
    let mut work = std::time::Duration::ZERO;
    let mut inline = None;
    let mut inline_budget = None;
    let mut inline_cost_limit = None;
    let mut accept_http1 = true;
    let mut web_origins = Vec::new();
    let mut max_connection_age = None;
    let mut drain_grace = None;
    let mut shutdown_delay = Duration::ZERO;
    let mut metrics_addr: Option<std::net::SocketAddr> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--workers" => workers = Some(value()?.parse::<usize>()?),
            "--work-us" => work = std::time::Duration::from_micros(value()?.parse()?),
            "--no-inline" => inline = Some(false),
            "--no-http1" => accept_http1 = false,
            "--web-origin" => web_origins.push(value()?),
            "--always-inline" => inline = Some(true),
            "--inline-cost-limit-us" => {
                inline_cost_limit = Some(Duration::from_micros(value()?.parse()?));
            }
            "--inline-budget-us" => {
                inline_budget = Some(Duration::from_micros(value()?.parse()?));
            }
            "--max-connection-age" => max_connection_age = Some(seconds(&value()?)?),
            "--drain-grace" => drain_grace = Some(seconds(&value()?)?),
            "--shutdown-delay" => shutdown_delay = seconds(&value()?)?,
            "--metrics-addr" => metrics_addr = Some(value()?.parse()?),
            "--http2-engine" => match value()?.as_str() {
                "fastgrpc" => {}
                "h2" => {
                    return Err("the h2 crate's HTTP/2 engine was retired (2026-12-03): \
                        fastgrpc's own engine serves every connection"
                        .into());
                }
                other => return Err(format!("unknown HTTP/2 engine {other}").into()),
            },
            "-h" | "--help" => {
                println!(
                    "usage: greeter_server [--addr HOST:PORT] [--workers N] [--work-us N] [--no-inline | --always-inline] \
                     [--inline-cost-limit-us N] [--inline-budget-us N] [--no-http1] [--web-origin ORIGIN] \
                     [--max-connection-age SECS] [--drain-grace SECS] [--shutdown-delay SECS] [--http2-engine fastgrpc] \
                     [--metrics-addr HOST:PORT]"
                );
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }

    // Both reflection versions describe every service this server hosts (and no other proto
    // `descriptors.bin` holds).
    let reflection = || {
        let mut builder = tonic_reflection::server::Builder::configure()
            .include_reflection_service(false)
            .register_encoded_file_descriptor_set(DESCRIPTORS)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            );
        for service in [
            "helloworld.Greeter",
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ] {
            builder = builder.with_service_name(service);
        }
        builder
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;

    let cors = match web_origins.is_empty() {
        true => None,
        false => Some(fastgrpc::service::Cors::origins(&web_origins)?),
    };

    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        runtime.worker_threads(workers);
    }
    runtime.enable_all().build()?.block_on(async move {
        let shutdown = shutdown_signal()?;
        let mut server = Server::builder().accept_http1(accept_http1);
        if let Some(cors) = cors {
            server = server.web_cors(cors);
        }
        if let Some(age) = max_connection_age {
            server = server.max_connection_age(age);
        }
        if let Some(grace) = drain_grace {
            server = server.drain_grace(grace);
        }
        if let Some(budget) = inline_budget {
            server = server.inline_budget(budget);
        }
        // Kept until the server stops: dropping the provider would stop its metrics.
        let mut _metrics = None;
        if let Some(metrics_addr) = metrics_addr {
            let (provider, registry) =
                prometheus_endpoint::provider().map_err(std::io::Error::other)?;
            let listener = tokio::net::TcpListener::bind(metrics_addr).await?;
            println!("metrics at http://{}/metrics", listener.local_addr()?);
            server = server.meter_provider(&provider);
            _metrics = Some((
                provider,
                tokio::spawn(prometheus_endpoint::serve(listener, registry)),
            ));
        }
        let mut greeter = GreeterServer::new(MyGreeter { work });
        if let Some(inline) = inline {
            greeter = greeter.run_inline(inline);
        }
        if let Some(limit) = inline_cost_limit {
            greeter = greeter.inline_cost_limit(limit);
        }
        let (health, health_service) = tonic_health::server::health_reporter();
        health.set_serving::<GreeterServer<MyGreeter>>().await;
        println!("greeter listening on {addr}");
        server
            .add_service(greeter)
            .add_tower_service(health_service)
            .add_tower_service(reflection_v1)
            .add_tower_service(reflection_v1alpha)
            .serve_with_shutdown(addr, async {
                let signal = shutdown.await;
                // Fail readiness first and keep serving while load balancers notice.
                health.set_not_serving::<GreeterServer<MyGreeter>>().await;
                health
                    .set_service_status("", ServingStatus::NotServing)
                    .await;
                if !shutdown_delay.is_zero() {
                    println!("{signal}: NOT_SERVING; still serving for {shutdown_delay:?}");
                    tokio::time::sleep(shutdown_delay).await;
                }
                println!("{signal}: shutting down, finishing calls in flight");
            })
            .await
    })?;
    println!("stopped");
    Ok(())
}
