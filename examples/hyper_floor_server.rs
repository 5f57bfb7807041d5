//! The least any server built on hyper's HTTP/1.1 does for a Connect unary `SayHello`: read
//! the body, decode the `HelloRequest`, format the reply, encode it, answer
//! `application/proto`. No routing, no protocol checks, no deadline, no metadata, no errors
//! beyond a 400: the floor under both fastgrpc and connectrpc on `benches/e2e.sh connect`'s
//! HTTP/1.1 shape, which shows how much of a call's CPU is hyper's, tokio's and the kernel's
//! (the same for every hyper server) rather than the framework's.
//! `cargo run --release --example hyper_floor_server -- --addr 127.0.0.1:50053 --workers 1`.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use prost::Message;
use protos::helloworld::{HelloReply, HelloRequest};

#[path = "support/peer.rs"]
mod peer;

/// The largest request body read; a larger one is refused (the floor still bounds memory).
const MAX_BODY: usize = 64 * 1024;

async fn say_hello(
    request: http::Request<Incoming>,
) -> Result<http::Response<Full<Bytes>>, Infallible> {
    let body = http_body_util::Limited::new(request.into_body(), MAX_BODY);
    let Ok(body) = body.collect().await.map(|body| body.to_bytes()) else {
        return Ok(answer(http::StatusCode::BAD_REQUEST, Bytes::new()));
    };
    let Ok(hello) = HelloRequest::decode(body) else {
        return Ok(answer(http::StatusCode::BAD_REQUEST, Bytes::new()));
    };
    let reply = HelloReply {
        message: format!("Hello {}!", hello.name),
    };
    Ok(answer(http::StatusCode::OK, reply.encode_to_vec().into()))
}

fn answer(status: http::StatusCode, body: Bytes) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/proto"),
    );
    response
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, runtime) = peer::runtime_from_args("127.0.0.1:50051")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => accepted?,
                _ = tokio::signal::ctrl_c() => return Ok(()),
            };
            // As fastgrpc and connectrpc set it.
            stream.set_nodelay(true)?;
            tokio::spawn(async move {
                let service = hyper::service::service_fn(say_hello);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
