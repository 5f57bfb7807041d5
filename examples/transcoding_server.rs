//! REST transcoding (`google.api.http`): `cargo run --example transcoding_server`.
//!
//! Serves `transcoding.v1.Echo` (`proto/transcoding/v1/echo.proto`), whose methods answer with
//! what they were given, over gRPC, Connect and, through the proto's HTTP rules, plain
//! HTTP/JSON, on one port (HTTP/1.1 and HTTP/2), and the OpenAPI document of its REST face at
//! `/openapi.json`. Options: `--addr HOST:PORT` (default 127.0.0.1:50051).
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
use protos::TranscodingEcho;
use protos::transcoding::v1::echo_server::EchoServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs a value")?.parse()?,
            "-h" | "--help" => {
                println!("usage: transcoding_server [--addr HOST:PORT]");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    println!("transcoding.v1.Echo listening on {addr}");
    Server::builder()
        .add_service(EchoServer::new(TranscodingEcho))
        .openapi_path("/openapi.json")
        .serve_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
