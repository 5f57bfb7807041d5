//! Unary calls end to end: a tonic client over loopback TCP against fastgrpc servers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use fastgrpc::{Code, FastFuture, Request, Response, RpcFuture, Server, Status};
use prost::Message;
use support::pb::helloworld::greeter_server::{Greeter, GreeterServer};
use support::pb::helloworld::{HelloReply, HelloRequest};
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{TestServer, channel, frame, hello, raw_grpc, raw_request, until};

/// Answers at once with a ready `FastFuture` (the inline path).
struct FastGreeter;

impl Greeter for FastGreeter {
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let echo = request.metadata().get("x-echo").cloned();
        let name = request.into_inner().name;
        if name == "panic" {
            panic!("the handler was asked to panic");
        }
        if let Some(message) = name.strip_prefix("fail:") {
            return FastFuture::err(Status::unknown(message));
        }
        let mut response = Response::new(HelloReply {
            message: format!("Hello {name}!"),
        });
        if let Some(echo) = echo {
            response.metadata_mut().insert("x-echo", echo);
        }
        FastFuture::ok(response)
    }
}

/// An `async fn` that really waits before answering (the spawned fallback path).
struct SleepyGreeter {
    delay: Duration,
    finished: Arc<AtomicUsize>,
}

impl Greeter for SleepyGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let name = request.into_inner().name;
        tokio::time::sleep(self.delay).await;
        if name == "panic" {
            panic!("the handler panicked after waiting");
        }
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(Response::new(HelloReply {
            message: format!("Hello {name}, slowly!"),
        }))
    }
}

/// An `async fn` that never waits: ready on its first poll, so also served inline.
struct EagerAsyncGreeter;

impl Greeter for EagerAsyncGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        Ok(Response::new(HelloReply {
            message: format!("Hi {}", request.into_inner().name),
        }))
    }
}

async fn fast_server() -> TestServer {
    TestServer::start(Server::builder().add_service(GreeterServer::new(FastGreeter))).await
}

fn sleepy(delay: Duration) -> (SleepyGreeter, Arc<AtomicUsize>) {
    let finished = Arc::new(AtomicUsize::new(0));
    (
        SleepyGreeter {
            delay,
            finished: finished.clone(),
        },
        finished,
    )
}

#[tokio::test]
async fn fast_future_service_answers() {
    let server = fast_server().await;
    let mut client = GreeterClient::new(channel(&server).await);
    let reply = client.say_hello(hello("world")).await.unwrap();
    assert_eq!(reply.get_ref().message, "Hello world!");
    server.stop().await;
}

#[tokio::test]
async fn async_fn_service_with_a_real_await_answers() {
    let (greeter, finished) = sleepy(Duration::from_millis(20));
    let server =
        TestServer::start(Server::builder().add_service(GreeterServer::new(greeter))).await;
    let mut client = GreeterClient::new(channel(&server).await);
    let reply = client.say_hello(hello("sloth")).await.unwrap();
    assert_eq!(reply.get_ref().message, "Hello sloth, slowly!");
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    server.stop().await;
}

#[tokio::test]
async fn async_fn_that_never_waits_answers() {
    let server =
        TestServer::start(Server::builder().add_service(GreeterServer::new(EagerAsyncGreeter)))
            .await;
    let mut client = GreeterClient::new(channel(&server).await);
    let reply = client.say_hello(hello("eager")).await.unwrap();
    assert_eq!(reply.get_ref().message, "Hi eager");
    server.stop().await;
}

#[tokio::test]
async fn metadata_reaches_the_handler_and_comes_back() {
    let server = fast_server().await;
    let mut client = GreeterClient::new(channel(&server).await);
    let mut request = tonic::Request::new(hello("meta"));
    request
        .metadata_mut()
        .insert("x-echo", "ping-42".parse().unwrap());
    let reply = client.say_hello(request).await.unwrap();
    assert_eq!(reply.metadata().get("x-echo").unwrap(), "ping-42");
    server.stop().await;
}

#[tokio::test]
async fn error_status_keeps_unicode_and_whitespace() {
    let server = fast_server().await;
    let mut client = GreeterClient::new(channel(&server).await);
    let message = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";
    let status = client
        .say_hello(hello(&format!("fail:{message}")))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unknown);
    assert_eq!(status.message(), message);
    server.stop().await;
}

#[tokio::test]
async fn unknown_method_and_service_are_unimplemented() {
    let server = fast_server().await;
    let unknown_method = raw_grpc(server.addr, "/helloworld.Greeter/SayGoodbye", frame(&[])).await;
    assert_eq!(unknown_method.status, http::StatusCode::OK);
    assert_eq!(unknown_method.grpc_status(), Some("12"));
    assert!(unknown_method.trailers.is_none(), "trailers-only response");
    assert!(
        unknown_method
            .grpc_message()
            .unwrap()
            .contains("SayGoodbye")
    );

    // With tonic's client too, through a service the server does not host.
    let mut client = support::tonic_pb::grpc_testing::unimplemented_service_client::UnimplementedServiceClient::new(
        channel(&server).await,
    );
    let status = client
        .unimplemented_call(support::tonic_pb::grpc_testing::Empty {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    assert!(
        status
            .message()
            .contains("grpc.testing.UnimplementedService"),
        "{status:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn non_grpc_content_type_is_http_415() {
    let server = fast_server().await;
    let body = frame(&HelloRequest { name: "x".into() }.encode_to_vec());
    let response = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[("content-type", "text/plain")],
        body.clone(),
    )
    .await;
    assert_eq!(response.status, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let text = std::str::from_utf8(&response.body).unwrap();
    assert!(
        text.contains("application/grpc") && text.contains("application/json"),
        "the answer says what the server speaks: {text}"
    );
    assert_eq!(
        response.headers["content-type"],
        "text/plain; charset=utf-8"
    );

    let missing = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[],
        body,
    )
    .await;
    assert_eq!(missing.status, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let plus_proto = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[("content-type", "application/grpc+proto")],
        frame(
            &HelloRequest {
                name: "proto".into(),
            }
            .encode_to_vec(),
        ),
    )
    .await;
    assert_eq!(plus_proto.grpc_status(), Some("0"));
    server.stop().await;
}

#[tokio::test]
async fn oversized_request_is_resource_exhausted() {
    let server = TestServer::start(
        Server::builder()
            .add_service(GreeterServer::new(FastGreeter).max_decoding_message_size(1024)),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    let status = client
        .say_hello(hello(&"x".repeat(2000)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    // Just under the limit still works, on the same connection.
    let reply = client.say_hello(hello(&"y".repeat(1000))).await.unwrap();
    assert!(reply.get_ref().message.starts_with("Hello yyy"));
    server.stop().await;
}

#[tokio::test]
async fn default_limit_is_four_mebibytes() {
    let server = fast_server().await;
    let mut client = GreeterClient::new(channel(&server).await);
    let status = client
        .say_hello(hello(&"z".repeat(4 * 1024 * 1024 + 1)))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    server.stop().await;
}

#[tokio::test]
async fn garbage_bodies_get_internal_and_the_server_keeps_serving() {
    let server = fast_server().await;
    let path = "/helloworld.Greeter/SayHello";
    // Field 1 (string) declaring 50 bytes but holding 2: bad protobuf.
    let bad_protobuf = raw_grpc(server.addr, path, frame(&[0x0a, 50, b'h', b'i'])).await;
    assert_eq!(bad_protobuf.grpc_status(), Some("13"));
    assert!(bad_protobuf.grpc_message().unwrap().contains("decode"));

    let truncated = raw_grpc(server.addr, path, Bytes::from_static(&[0, 0, 0])).await;
    assert_eq!(truncated.grpc_status(), Some("13"));

    let compressed_without_encoding =
        raw_grpc(server.addr, path, Bytes::from_static(&[1, 0, 0, 0, 0])).await;
    assert_eq!(compressed_without_encoding.grpc_status(), Some("13"));
    assert!(
        compressed_without_encoding
            .grpc_message()
            .unwrap()
            .contains("grpc-encoding")
    );

    let mut client = GreeterClient::new(channel(&server).await);
    assert_eq!(
        client
            .say_hello(hello("after"))
            .await
            .unwrap()
            .get_ref()
            .message,
        "Hello after!"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_unary_call_with_no_message_or_two_is_unimplemented() {
    let server = fast_server().await;
    let path = "/helloworld.Greeter/SayHello";
    let none = raw_grpc(server.addr, path, Bytes::new()).await;
    assert_eq!(none.grpc_status(), Some("12"), "{none:?}");
    let mut two = frame(b"\x0a\x01a").to_vec();
    two.extend_from_slice(&frame(b"\x0a\x01b"));
    let two = raw_grpc(server.addr, path, Bytes::from(two)).await;
    assert_eq!(two.grpc_status(), Some("12"), "{two:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_grpc_codec_the_server_does_not_speak_is_refused_415() {
    let server = fast_server().await;
    let response = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[
            ("content-type", "application/grpc+thrift"),
            ("te", "trailers"),
        ],
        frame(b"\x0a\x01a"),
    )
    .await;
    assert_eq!(response.status, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(String::from_utf8_lossy(&response.body).contains("application/grpc+json"));
    server.stop().await;
}

#[tokio::test]
async fn a_grpc_json_call_refused_before_its_handler_is_answered_in_json() {
    let server = fast_server().await;
    let response = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/NoSuchMethod",
        &[
            ("content-type", "application/grpc+json"),
            ("te", "trailers"),
        ],
        frame(b"{}"),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("12"), "{response:?}");
    assert_eq!(response.headers["content-type"], "application/grpc+json");
    // A failure of the handler's own is answered in the call's content type too.
    let response = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[
            ("content-type", "application/grpc+json"),
            ("te", "trailers"),
        ],
        frame(b"{\"name\": 5}"),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("3"), "{response:?}");
    assert_eq!(response.headers["content-type"], "application/grpc+json");
    server.stop().await;
}

#[tokio::test]
async fn panics_become_internal_and_other_streams_of_the_connection_keep_working() {
    let server = TestServer::start(
        Server::builder()
            .add_service(GreeterServer::new(FastGreeter))
            .add_service(
                support::pb::grpc_testing::test_service_server::TestServiceServer::new(
                    PanickyTestService,
                ),
            ),
    )
    .await;
    let channel = channel(&server).await;
    let mut client = GreeterClient::new(channel.clone());

    // Calls in flight on the same connection while others panic.
    let mut calls = Vec::new();
    for i in 0..20 {
        let mut client = client.clone();
        let name = if i % 4 == 0 {
            "panic".to_string()
        } else {
            format!("n{i}")
        };
        calls.push(tokio::spawn(async move {
            (name.clone(), client.say_hello(hello(&name)).await)
        }));
    }
    for call in calls {
        let (name, result) = call.await.unwrap();
        match result {
            Ok(reply) => assert_eq!(reply.get_ref().message, format!("Hello {name}!")),
            Err(status) => {
                assert_eq!(name, "panic");
                assert_eq!(status.code(), Code::Internal);
            }
        }
    }
    // A panic after an await, in the spawned path, on the same connection.
    let mut test_client =
        support::tonic_pb::grpc_testing::test_service_client::TestServiceClient::new(
            channel.clone(),
        );
    let status = test_client
        .empty_call(support::tonic_pb::grpc_testing::Empty {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Internal);
    assert_eq!(
        client
            .say_hello(hello("still"))
            .await
            .unwrap()
            .get_ref()
            .message,
        "Hello still!"
    );
    server.stop().await;
}

/// Panics after a real await, so the panic happens in the spawned task.
struct PanickyTestService;

impl support::pb::grpc_testing::test_service_server::TestService for PanickyTestService {
    support::boxed_reply_streams!();

    async fn empty_call(
        &self,
        _request: Request<support::pb::grpc_testing::Empty>,
    ) -> Result<Response<support::pb::grpc_testing::Empty>, Status> {
        tokio::task::yield_now().await;
        panic!("panicked in the spawned path");
    }
}

#[tokio::test]
async fn many_concurrent_calls_on_one_connection() {
    let (greeter, finished) = sleepy(Duration::from_millis(10));
    let server = TestServer::start(
        Server::builder()
            .add_service(GreeterServer::new(greeter))
            .add_service(
                support::pb::grpc_testing::test_service_server::TestServiceServer::new(
                    EchoTestService,
                ),
            ),
    )
    .await;
    let channel = channel(&server).await;
    let mut calls = Vec::new();
    for i in 0..200 {
        let channel = channel.clone();
        calls.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let reply = GreeterClient::new(channel)
                    .say_hello(hello(&format!("c{i}")))
                    .await
                    .unwrap();
                assert_eq!(reply.get_ref().message, format!("Hello c{i}, slowly!"));
            } else {
                let mut client =
                    support::tonic_pb::grpc_testing::test_service_client::TestServiceClient::new(
                        channel,
                    );
                let reply = client
                    .unary_call(support::tonic_pb::grpc_testing::SimpleRequest {
                        response_size: i,
                        ..Default::default()
                    })
                    .await
                    .unwrap();
                assert_eq!(
                    reply.get_ref().payload.as_ref().unwrap().body.len(),
                    i as usize
                );
            }
        }));
    }
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(finished.load(Ordering::SeqCst), 100);
    server.stop().await;
}

/// Answers `UnaryCall` with a payload of the requested size, at once.
struct EchoTestService;

impl support::pb::grpc_testing::test_service_server::TestService for EchoTestService {
    support::boxed_reply_streams!();

    fn unary_call(
        &self,
        request: Request<support::pb::grpc_testing::SimpleRequest>,
    ) -> impl RpcFuture<support::pb::grpc_testing::SimpleResponse> {
        let size = request.get_ref().response_size.max(0) as usize;
        FastFuture::ok(Response::new(support::pb::grpc_testing::SimpleResponse {
            payload: Some(support::pb::grpc_testing::Payload {
                r#type: 0,
                body: Bytes::from(vec![0u8; size]),
            }),
            ..Default::default()
        }))
    }
}

#[tokio::test]
async fn graceful_shutdown_finishes_calls_in_flight() {
    let (greeter, finished) = sleepy(Duration::from_millis(300));
    let builder = Server::builder().add_service(GreeterServer::new(greeter));
    let stats = builder.stats();
    let mut server = TestServer::start(builder).await;
    let channel = channel(&server).await;
    let mut calls = Vec::new();
    for i in 0..10 {
        let mut client = GreeterClient::new(channel.clone());
        calls.push(tokio::spawn(async move {
            client.say_hello(hello(&format!("s{i}"))).await
        }));
    }
    // Stop once the calls have all reached the server and are sleeping.
    until("every call sleeps in its handler", || {
        stats.call_tasks() == 10
    })
    .await;
    let addr = server.addr;
    server.begin_stop();
    for call in calls {
        let reply = call
            .await
            .unwrap()
            .expect("in-flight call completes during shutdown");
        assert!(reply.get_ref().message.ends_with("slowly!"));
    }
    assert_eq!(
        finished.load(Ordering::SeqCst),
        10,
        "no accepted call was lost"
    );
    server.stop().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the listener is closed after shutdown"
    );
}

#[tokio::test]
async fn early_answers_to_bodies_still_arriving_do_not_hang() {
    // 3 MiB: more than the 1 MiB windows, so the server answers before the body is complete.
    let server = fast_server().await;
    let big = frame(&vec![0u8; 3 * 1024 * 1024]);
    let unknown = raw_grpc(server.addr, "/helloworld.Greeter/Nope", big.clone()).await;
    assert_eq!(unknown.grpc_status(), Some("12"));
    let wrong_type = raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[("content-type", "text/plain")],
        big,
    )
    .await;
    assert_eq!(wrong_type.status, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let mut client = GreeterClient::new(channel(&server).await);
    assert_eq!(
        client
            .say_hello(hello("next"))
            .await
            .unwrap()
            .get_ref()
            .message,
        "Hello next!"
    );
    server.stop().await;
}

#[tokio::test]
async fn get_requests_are_http_405() {
    let server = fast_server().await;
    let response = raw_request(
        server.addr,
        http::Method::GET,
        "/helloworld.Greeter/SayHello",
        &[("content-type", "application/grpc")],
        Bytes::new(),
    )
    .await;
    assert_eq!(response.status, http::StatusCode::METHOD_NOT_ALLOWED);
    // What a person with curl reads: the methods a call may use, and how to make one.
    assert_eq!(response.headers["allow"], "POST, GET, OPTIONS");
    assert_eq!(
        response.headers["content-type"],
        "text/plain; charset=utf-8"
    );
    let text = String::from_utf8(response.body.to_vec()).unwrap();
    assert!(text.contains("send a POST"), "{text}");
    server.stop().await;
}

#[tokio::test]
async fn an_unlimited_receive_size_serves_bodies_that_arrive_in_pieces() {
    // `usize::MAX` is how a service says "no limit"; limits must not overflow on it.
    let server = TestServer::start(
        Server::builder()
            .add_service(GreeterServer::new(FastGreeter).max_decoding_message_size(usize::MAX)),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    let name = "n".repeat(3 * 1024 * 1024);
    let reply = client.say_hello(hello(&name)).await.unwrap();
    assert_eq!(reply.get_ref().message.len(), name.len() + "Hello !".len());
    server.stop().await;
}

/// Each call waits (without blocking its thread) until a second call arrives, or 10 s pass:
/// two calls meet only if both are in progress at once. No runtime thread is ever blocked, so
/// the calls' tasks may share a worker and still meet (a blocking wait here once held a worker
/// the other call needed until the timeout).
struct Rendezvous {
    waiting: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Greeter for Rendezvous {
    async fn say_hello(
        &self,
        _request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        // The first to come leaves a way to be woken, in one hold of the lock.
        let first = {
            let mut slot = self.waiting.lock().unwrap();
            match slot.take() {
                Some(waiting) => Err(waiting),
                None => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    *slot = Some(tx);
                    Ok(rx)
                }
            }
        };
        let met = match first {
            Err(waiting) => waiting.send(()).is_ok(),
            Ok(woken) => tokio::time::timeout(Duration::from_secs(10), woken)
                .await
                .is_ok_and(|woken| woken.is_ok()),
        };
        Ok(Response::new(HelloReply {
            message: if met { "met" } else { "alone" }.into(),
        }))
    }
}

async fn rendezvous_replies_spawned() -> Vec<String> {
    let greeter = Rendezvous {
        waiting: Default::default(),
    };
    let server = TestServer::start(
        Server::builder().add_service(GreeterServer::new(greeter).run_inline(false)),
    )
    .await;
    let channel = channel(&server).await;
    let calls: Vec<_> = (0..2)
        .map(|i| {
            let mut client = GreeterClient::new(channel.clone());
            tokio::spawn(async move { client.say_hello(hello(&format!("r{i}"))).await })
        })
        .collect();
    let mut replies = Vec::new();
    for call in calls {
        replies.push(call.await.unwrap().unwrap().into_inner().message);
    }
    server.stop().await;
    replies.sort();
    replies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_that_do_not_run_inline_run_in_parallel_on_one_connection() {
    // Spawned, each call is a task of its own: the first waits while the connection goes on to
    // start the second, and they meet.
    assert_eq!(rendezvous_replies_spawned().await, ["met", "met"]);
}

#[tokio::test]
async fn a_reply_over_the_send_limit_is_resource_exhausted() {
    let server = TestServer::start(
        Server::builder()
            .add_service(GreeterServer::new(FastGreeter).max_encoding_message_size(64)),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    let status = client.say_hello(hello(&"w".repeat(100))).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(status.message().contains("response message"), "{status:?}");
    assert_eq!(
        client
            .say_hello(hello("small"))
            .await
            .unwrap()
            .get_ref()
            .message,
        "Hello small!"
    );
    server.stop().await;
}

/// Fails every call as a gateway might: with the upstream's headers copied into the status,
/// `connection: close` among them.
struct Gateway;

impl Greeter for Gateway {
    fn say_hello(&self, _request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let mut upstream = tonic::metadata::MetadataMap::new();
        upstream.insert("connection", "close".parse().unwrap());
        upstream.insert("x-upstream", "replica-3".parse().unwrap());
        FastFuture::err(Status::with_metadata(
            Code::Unavailable,
            "upstream went away",
            upstream,
        ))
    }
}

#[tokio::test]
async fn a_status_with_connection_specific_metadata_still_reaches_the_client() {
    let server =
        TestServer::start(Server::builder().add_service(GreeterServer::new(Gateway))).await;
    let mut client = GreeterClient::new(channel(&server).await);
    let status = client.say_hello(hello("x")).await.unwrap_err();
    // Before, h2 refused the headers and the client saw a reset stream instead.
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(status.message(), "upstream went away");
    assert_eq!(status.metadata().get("x-upstream").unwrap(), "replica-3");
    assert!(status.metadata().get("connection").is_none());
    server.stop().await;
}
