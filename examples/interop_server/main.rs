//! The gRPC interop test server (`grpc.testing.TestService`), for interop clients of any
//! language: `cargo run --example interop_server -- --port 10000`.
//!
//! Serves the unary methods (`EmptyCall`, `UnaryCall`) and the streaming ones
//! (`StreamingOutputCall`, `StreamingInputCall`, `FullDuplexCall`, `HalfDuplexCall`).
//! `UnimplementedCall` is deliberately left out, so callers get `UNIMPLEMENTED`, as the interop
//! suite expects. Beside it, `jsontest.JsonTest` echoes its messages, for the Connect clients'
//! JSON and GET cases.
//!
//! Options: `--port N` (default 10000), `--host ADDR` (default 127.0.0.1).

use fastgrpc::Server;
use protos::jsontest::json_test_server::JsonTestServer;

pub use protos::grpc_testing;

mod service;

use service::Interop;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut host = "127.0.0.1".to_string();
    let mut port = 10000u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        // Accept both `--port N` and the interop suite's `--port=N` style.
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{name} needs a value"))
        };
        match name.as_str() {
            "--port" => port = value()?.parse()?,
            "--host" => host = value()?,
            "-h" | "--help" => {
                println!("usage: interop_server [--port N] [--host ADDR]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let addr = std::net::SocketAddr::new(host.parse()?, port);

    tokio::runtime::Runtime::new()?.block_on(async move {
        println!("interop server listening on {addr}");
        Server::builder()
            .add_service(Interop::server())
            .add_service(JsonTestServer::new(protos::JsonEcho))
            .serve_with_shutdown(addr, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })?;
    Ok(())
}
