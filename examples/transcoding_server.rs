//! REST transcoding (`google.api.http`): `cargo run --example transcoding_server`.
//!
//! Serves `transcoding.v1.Echo` (`proto/transcoding/v1/echo.proto`), whose methods answer with
//! what they were given, over gRPC, Connect and, through the proto's HTTP rules, plain
//! HTTP/JSON, on one port (HTTP/1.1 and HTTP/2), and the OpenAPI document of its REST face at
//! `/openapi.json`. Options: `--addr HOST:PORT` (default 127.0.0.1:50051); for benchmarks
//! (`benches/instructions.sh rest`), `--workers N` (tokio worker threads), `--always-inline`
//! (every call inline, so a count does not depend on adaptive inline's timing) and
//! `--extra-routes N` (N more HTTP rules in the shapes of a large API,
//! `protos::large_api_rules`, all calling `Get`: what routing costs as an API grows).
//!
//! ```text
//! curl 'http://127.0.0.1:50051/v1/shelves/1/books/2?page.size=10&genre=FICTION'
//! curl -X PATCH -d '{"title": "T"}' http://127.0.0.1:50051/v1/shelves/1/books/2
//! curl http://127.0.0.1:50051/v1/fail/5?message=gone
//! curl -H 'accept: text/event-stream' \
//!     'http://127.0.0.1:50051/v1/shelves/1/books/2:watch?count=3&interval=0.5s'
//! curl --data-binary @README.md -H 'content-type: text/markdown' http://127.0.0.1:50051/v1/upload
//! curl http://127.0.0.1:50051/openapi.json
//! ```

use fastgrpc::Server;
use protos::transcoding::v1::echo_server::EchoServer;
use protos::{TranscodingEcho, WithExtraRules, large_api_rules};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut workers = None;
    let mut always_inline = false;
    let mut extra_routes = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value()?.parse()?,
            "--workers" => workers = Some(value()?.parse::<usize>()?),
            "--always-inline" => always_inline = true,
            "--extra-routes" => extra_routes = value()?.parse()?,
            "-h" | "--help" => {
                println!(
                    "usage: transcoding_server [--addr HOST:PORT] [--workers N] [--always-inline] \
                     [--extra-routes N]"
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
        let mut echo = EchoServer::new(TranscodingEcho);
        if always_inline {
            echo = echo.run_inline(true);
        }
        let echo = WithExtraRules::new(echo, large_api_rules(extra_routes));
        println!("transcoding.v1.Echo listening on {addr}");
        Server::builder()
            .add_service(echo)
            .openapi_path("/openapi.json")
            .serve_with_shutdown(addr, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })?;
    Ok(())
}
