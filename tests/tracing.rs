//! Tracing: tower-http's `TraceLayer`, server-wide, records one span per call with its method,
//! duration and gRPC status. (A file of its own: `tracing` caches per call site whether anyone
//! listens, which a test on another thread could decide first.)

mod support;

use std::sync::Arc;

use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server};
use support::pb::helloworld::greeter_server::{Greeter, GreeterServer};
use support::pb::helloworld::{HelloReply, HelloRequest};
use support::tonic_pb::helloworld as client_pb;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{TestServer, channel};

struct Quick;

impl Greeter for Quick {
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let name = request.into_inner().name;
        FastFuture::ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

/// Collects what a `tracing` subscriber writes, for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// One thread: the subscriber set for this test is the default of the thread the server runs on.
#[tokio::test(flavor = "current_thread")]
async fn tower_http_tracing_records_each_call_with_its_method_status_and_duration() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let server = TestServer::start(
        Server::builder()
            .layer(tower_http::trace::TraceLayer::new_for_grpc())
            .add_service(GreeterServer::new(Quick)),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    client
        .say_hello(client_pb::HelloRequest {
            name: "traced".into(),
        })
        .await
        .unwrap();
    server.stop().await;

    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let call = log
        .lines()
        .find(|line| line.contains("finished processing request"))
        .unwrap_or_else(|| panic!("no per-call event in:\n{log}"));
    assert!(
        call.contains("/helloworld.Greeter/SayHello version"),
        "{call}"
    );
    assert!(call.contains("latency="), "{call}");
    let end = log
        .lines()
        .find(|line| line.contains("end of stream"))
        .unwrap();
    assert!(
        end.contains("status=0"),
        "the gRPC status, read from the trailers: {end}"
    );
}
