//! Deadlines: `grpc-timeout` and the server's default end calls with `DEADLINE_EXCEEDED` and
//! drop the handler; handlers see their deadline; malformed timeouts are refused; request
//! streams that go quiet fail after their idle timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use fastgrpc::Deadline;
use fastgrpc::{Code, Request, Response, Server, Status, Streaming};
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    Empty, SimpleRequest, SimpleResponse, StreamingInputCallRequest, StreamingInputCallResponse,
    StreamingOutputCallResponse,
};
use support::tonic_pb::grpc_testing as client_pb;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::{TestServer, channel, frame, raw_request};

/// Sets its flag when dropped: tells whether a handler's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Sleeper {
    dropped: Arc<AtomicBool>,
    finished: Arc<AtomicBool>,
}

impl TestService for Sleeper {
    support::boxed_reply_streams!();

    /// Sleeps `response_size` milliseconds, then answers.
    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let _flag = DropFlag(self.dropped.clone());
        let sleep = Duration::from_millis(request.get_ref().response_size as u64);
        tokio::time::sleep(sleep).await;
        self.finished.store(true, Ordering::SeqCst);
        Ok(Response::new(SimpleResponse::default()))
    }

    /// Answers with how much time the handler's deadline leaves, in milliseconds, in `username`.
    async fn empty_call(&self, request: Request<Empty>) -> Result<Response<Empty>, Status> {
        match request.extensions().get::<Deadline>() {
            Some(deadline) if deadline.remaining() > Duration::ZERO => Ok(Response::new(Empty {})),
            Some(_) => Err(Status::internal("deadline already passed")),
            None => Err(Status::failed_precondition("no deadline")),
        }
    }

    /// Counts the messages of the request stream.
    async fn streaming_input_call(
        &self,
        request: Request<Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        let mut requests = request.into_inner();
        let mut count = 0;
        while requests.message().await?.is_some() {
            count += 1;
        }
        Ok(Response::new(StreamingInputCallResponse {
            aggregated_payload_size: count,
        }))
    }
}

async fn sleeper_server(
    builder: impl FnOnce(TestServiceServer<Sleeper>) -> TestServiceServer<Sleeper>,
    timeout: Option<Duration>,
) -> (TestServer, Arc<AtomicBool>, Arc<AtomicBool>) {
    let sleeper = Sleeper::default();
    let (dropped, finished) = (sleeper.dropped.clone(), sleeper.finished.clone());
    let mut server = Server::builder();
    if let Some(timeout) = timeout {
        server = server.timeout(timeout);
    }
    let server = server.add_service(builder(TestServiceServer::new(sleeper)));
    (TestServer::start(server).await, dropped, finished)
}

fn sleep_request(
    millis: i32,
    timeout: Option<Duration>,
) -> tonic::Request<client_pb::SimpleRequest> {
    let mut request = tonic::Request::new(client_pb::SimpleRequest {
        response_size: millis,
        ..Default::default()
    });
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    request
}

#[tokio::test]
async fn client_timeout_ends_the_call_and_drops_the_handler() {
    let (server, dropped, finished) = sleeper_server(|s| s, None).await;
    // A raw client: it only sends `grpc-timeout`, so the answer is the server's doing.
    let body = frame(&prost::Message::encode_to_vec(&SimpleRequest {
        response_size: 5_000,
        ..Default::default()
    }));
    let started = std::time::Instant::now();
    let response = raw_request(
        server.addr,
        http::Method::POST,
        "/grpc.testing.TestService/UnaryCall",
        &[
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "50m"),
        ],
        body,
    )
    .await;
    assert_eq!(response.grpc_status(), Some("4"), "DEADLINE_EXCEEDED");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the handler's future was dropped"
    );
    assert!(
        !finished.load(Ordering::SeqCst),
        "the handler never finished"
    );
    server.stop().await;
}

#[tokio::test]
async fn server_default_timeout_applies_when_the_client_sets_none_or_a_longer_one() {
    let (server, _, _) = sleeper_server(|s| s, Some(Duration::from_millis(50))).await;
    let mut client = TestServiceClient::new(channel(&server).await);
    let status = client
        .unary_call(sleep_request(5_000, None))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    let status = client
        .unary_call(sleep_request(5_000, Some(Duration::from_secs(60))))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded);
    // A call that fits the deadline succeeds.
    client.unary_call(sleep_request(1, None)).await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn handlers_see_their_deadline() {
    let (server, _, _) = sleeper_server(|s| s, None).await;
    let mut client = TestServiceClient::new(channel(&server).await);
    let status = client.empty_call(client_pb::Empty {}).await.unwrap_err();
    assert_eq!(
        status.code(),
        Code::FailedPrecondition,
        "no grpc-timeout, no deadline"
    );
    let mut request = tonic::Request::new(client_pb::Empty {});
    request.set_timeout(Duration::from_secs(30));
    client.empty_call(request).await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn malformed_grpc_timeout_is_internal() {
    let (server, _, _) = sleeper_server(|s| s, None).await;
    // (" 5S", with leading whitespace, is not a valid field value at all: RFC 9113 §8.2.1
    // makes the request malformed; `leading_whitespace_in_a_field_value` below.)
    for bad in ["", "5", "S", "123456789S", "5x", "-5S"] {
        let response = raw_request(
            server.addr,
            http::Method::POST,
            "/grpc.testing.TestService/EmptyCall",
            &[
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-timeout", bad),
            ],
            frame(&[]),
        )
        .await;
        assert_eq!(response.grpc_status(), Some("13"), "{bad:?}");
        assert!(
            response.grpc_message().unwrap().contains("grpc-timeout"),
            "{bad:?}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn leading_whitespace_in_a_field_value() {
    // A malformed request (RFC 9113 §8.2.1): the stream is reset with PROTOCOL_ERROR.
    let (server, _, _) = sleeper_server(|s| s, None).await;
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let request = http::Request::post(format!(
        "http://{}/grpc.testing.TestService/EmptyCall",
        server.addr
    ))
    .header("content-type", "application/grpc")
    .header("grpc-timeout", " 5S")
    .body(())
    .unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(frame(&[]), true).unwrap();
    let error = response.await.unwrap_err();
    assert_eq!(
        error.reason(),
        Some(h2::Reason::PROTOCOL_ERROR),
        "{error:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_quiet_request_stream_fails_after_its_idle_timeout() {
    let (server, _, _) =
        sleeper_server(|s| s.receive_idle_timeout(Duration::from_millis(300)), None).await;
    let mut client = TestServiceClient::new(channel(&server).await);
    // Messages every 30 ms keep the stream alive (a tenth of the timeout, so a loaded machine's
    // late wake-up does not end it early); then silence.
    let (requests, rx) = tokio::sync::mpsc::channel(1);
    let call = tokio::spawn(async move {
        client
            .streaming_input_call(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
    });
    for _ in 0..5 {
        requests
            .send(client_pb::StreamingInputCallRequest::default())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let status = call.await.unwrap().unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("idle timeout"));
    drop(requests);
    server.stop().await;
}

#[tokio::test]
async fn a_deadline_ends_a_reply_stream_with_deadline_exceeded() {
    let server =
        TestServer::start(Server::builder().add_service(service_with_endless_stream())).await;
    let mut client = TestServiceClient::new(channel(&server).await);
    let mut request = tonic::Request::new(client_pb::StreamingOutputCallRequest::default());
    request.set_timeout(Duration::from_millis(100));
    let mut replies = client
        .streaming_output_call(request)
        .await
        .unwrap()
        .into_inner();
    let status = loop {
        match replies.message().await {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the stream is endless"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    server.stop().await;
}

/// A service whose `StreamingOutputCall` sends a small reply every 10 ms, forever.
fn service_with_endless_stream() -> TestServiceServer<Endless> {
    TestServiceServer::new(Endless)
}

struct Endless;

impl TestService for Endless {
    support::boxed_reply_streams!();

    async fn streaming_output_call(
        &self,
        _request: Request<support::pb::grpc_testing::StreamingOutputCallRequest>,
    ) -> Result<Response<Self::StreamingOutputCallStream>, Status> {
        use futures_util::StreamExt;
        let ticks = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Some((
                Ok(StreamingOutputCallResponse {
                    payload: Some(support::pb::grpc_testing::Payload {
                        r#type: 0,
                        body: Bytes::from_static(b"tick"),
                    }),
                }),
                (),
            ))
        });
        Ok(Response::new(ticks.boxed()))
    }
}
