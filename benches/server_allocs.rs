//! Heap allocations per strict unary request through the whole server, over loopback TCP.
//!
//! Each server runs on its own thread with a current-thread runtime, so every allocation it
//! makes for a request (h2, routing, decode, the handler, encode, response frames) happens on
//! that thread and is counted there; the load generator's allocations are not counted. The
//! load is a raw h2 client keeping 16 `SayHello` streams in flight on one connection.
//!
//! A second part streams 10,000 small messages from the client in one call, with and without
//! a receive idle timeout, and reports allocations per message and for the whole call.
//!
//! Run: `cargo bench --bench server_allocs`. Deterministic up to h2's batching, unlike time.

#[path = "../tests/support/alloc.rs"]
mod alloc;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use fastgrpc::transport::ServerStats;
use fastgrpc::{FastFuture, Request, Response, RpcFuture};
use prost::Message;
use tokio::net::TcpStream;

#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

use protos::grpc_testing as testing;
use protos::helloworld as pb;
use protos::tonic_pb::helloworld as tonic_pb;

const WARMUP: usize = 2_000;
const REQUESTS: usize = 20_000;
const IN_FLIGHT: usize = 16;

struct FastGreeter;

impl pb::greeter_server::Greeter for FastGreeter {
    fn say_hello(&self, request: Request<pb::HelloRequest>) -> impl RpcFuture<pb::HelloReply> {
        let name = request.into_inner().name;
        FastFuture::ok(Response::new(pb::HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

struct TonicGreeter;

#[tonic::async_trait]
impl tonic_pb::greeter_server::Greeter for TonicGreeter {
    async fn say_hello(
        &self,
        request: Request<tonic_pb::HelloRequest>,
    ) -> Result<Response<tonic_pb::HelloReply>, tonic::Status> {
        let name = request.into_inner().name;
        Ok(Response::new(tonic_pb::HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

/// Sends `count` SayHello calls with `IN_FLIGHT` streams open at a time; checks every reply.
async fn load(client: &mut h2::client::SendRequest<Bytes>, addr: SocketAddr, count: usize) {
    let body = fastgrpc::internals::codec::encode(&pb::HelloRequest {
        name: "bench".into(),
    })
    .unwrap();
    let mut in_flight = tokio::task::JoinSet::new();
    for _ in 0..count {
        if in_flight.len() == IN_FLIGHT {
            in_flight.join_next().await.unwrap().unwrap();
        }
        let request = http::Request::post(format!("http://{addr}/helloworld.Greeter/SayHello"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let mut client = client.clone().ready().await.unwrap();
        let (response, mut send) = client.send_request(request, false).unwrap();
        send.send_data(body.clone(), true).unwrap();
        in_flight.spawn(async move {
            let mut body = response.await.unwrap().into_body();
            let data = body.data().await.unwrap().unwrap();
            let _ = body.flow_control().release_capacity(data.len());
            let reply = pb::HelloReply::decode(&data[5..]).unwrap();
            assert_eq!(reply.message, "Hello bench!");
            let trailers = body.trailers().await.unwrap().unwrap();
            assert_eq!(trailers["grpc-status"], "0");
        });
    }
    while let Some(done) = in_flight.join_next().await {
        done.unwrap();
    }
}

async fn measure(name: &str, server: alloc::CountedServer, stats: Option<ServerStats>) {
    let addr = server.addr;
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    load(&mut client, addr, WARMUP).await;
    let before = server.counted().await;
    let spawned_before = stats.as_ref().map(ServerStats::call_tasks_spawned);
    load(&mut client, addr, REQUESTS).await;
    let after = server.counted().await;
    let per_request = (after - before) as f64 / REQUESTS as f64;
    // A call whose body arrived after its headers waits for it in a task of its own.
    let spawned = match (&stats, spawned_before) {
        (Some(stats), Some(before)) => format!(
            ", {:.4} tasks spawned/request",
            (stats.call_tasks_spawned() - before) as f64 / REQUESTS as f64
        ),
        _ => String::new(),
    };
    println!(
        "{name:<28} {per_request:>6.2} allocations/request ({REQUESTS} requests, {IN_FLIGHT} in flight{spawned})"
    );
}

/// Counts the messages of a client stream.
struct Counter;

impl testing::test_service_server::TestService for Counter {
    type StreamingOutputCallStream = fastgrpc::BoxStream<testing::StreamingOutputCallResponse>;
    type FullDuplexCallStream = fastgrpc::BoxStream<testing::StreamingOutputCallResponse>;
    type HalfDuplexCallStream = fastgrpc::BoxStream<testing::StreamingOutputCallResponse>;

    async fn streaming_input_call(
        &self,
        request: Request<fastgrpc::Streaming<testing::StreamingInputCallRequest>>,
    ) -> Result<Response<testing::StreamingInputCallResponse>, tonic::Status> {
        let mut requests = request.into_inner();
        let mut count = 0;
        while requests.message().await?.is_some() {
            count += 1;
        }
        Ok(Response::new(testing::StreamingInputCallResponse {
            aggregated_payload_size: count,
        }))
    }
}

const STREAM_MESSAGES: usize = 10_000;

/// One client stream of `STREAM_MESSAGES` small messages, each in its own DATA frame, sent
/// with a pause every 100 messages so the server really waits (and arms its idle timer).
async fn client_stream(client: &mut h2::client::SendRequest<Bytes>, addr: SocketAddr) {
    let request = http::Request::post(format!(
        "http://{addr}/grpc.testing.TestService/StreamingInputCall"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .body(())
    .unwrap();
    let message =
        fastgrpc::internals::codec::encode(&testing::StreamingInputCallRequest::default()).unwrap();
    let mut client = client.clone().ready().await.unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    for i in 0..STREAM_MESSAGES {
        send.send_data(message.clone(), false).unwrap();
        if i % 100 == 99 {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
    send.send_data(Bytes::new(), true).unwrap();
    let mut body = response.await.unwrap().into_body();
    let data = body.data().await.unwrap().unwrap();
    let reply = testing::StreamingInputCallResponse::decode(&data[5..]).unwrap();
    assert_eq!(reply.aggregated_payload_size as usize, STREAM_MESSAGES);
}

async fn measure_stream(name: &str, server: alloc::CountedServer) {
    let addr = server.addr;
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    client_stream(&mut client, addr).await;
    // How often the server reads the socket varies with timing, and h2 may allocate per read:
    // three calls, median reported.
    let mut totals = Vec::new();
    for _ in 0..3 {
        let before = server.counted().await;
        client_stream(&mut client, addr).await;
        totals.push(server.counted().await - before);
    }
    totals.sort_unstable();
    let total = totals[1];
    let per_message = total as f64 / STREAM_MESSAGES as f64;
    println!(
        "{name:<28} {per_message:>6.4} allocations/message (median call of {STREAM_MESSAGES} messages: {total}; all: {totals:?})"
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for connect_info in [false, true] {
            let builder = fastgrpc::Server::builder()
                .connect_info(connect_info)
                .add_service(pb::greeter_server::GreeterServer::new(FastGreeter));
            let stats = builder.stats();
            let server = alloc::CountedServer::start(|listener| async move {
                builder
                    .serve_with_listener(listener, std::future::pending())
                    .await
                    .unwrap();
            });
            let name = match connect_info {
                false => "fastgrpc (FastFuture)",
                true => "fastgrpc, connect_info on",
            };
            measure(name, server, Some(stats)).await;
        }

        let server = alloc::CountedServer::start(|listener| async move {
            tonic::transport::Server::builder()
                .add_service(tonic_pb::greeter_server::GreeterServer::new(TonicGreeter))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
                .await
                .unwrap();
        });
        measure("tonic 0.14", server, None).await;

        for idle_timeout in [None, Some(Duration::from_secs(5))] {
            let server = alloc::CountedServer::start(move |listener| async move {
                let mut service = testing::test_service_server::TestServiceServer::new(Counter);
                if let Some(timeout) = idle_timeout {
                    service = service.receive_idle_timeout(timeout);
                }
                fastgrpc::Server::builder()
                    .add_service(service)
                    .serve_with_listener(listener, std::future::pending())
                    .await
                    .unwrap();
            });
            let name = match idle_timeout {
                None => "client stream, no timeout",
                Some(_) => "client stream, idle timeout",
            };
            measure_stream(name, server).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    });
}
