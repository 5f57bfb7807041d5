//! Deadlines: `grpc-timeout` and the server's default end calls with `DEADLINE_EXCEEDED` and
//! drop the handler; handlers see their deadline; malformed timeouts are refused; request
//! streams that go quiet fail after their idle timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use fastgrpc::Deadline;
use fastgrpc::{Code, Request, Response, Server, Status, Streaming};
use prost::Message;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    Empty, SimpleRequest, SimpleResponse, StreamingInputCallRequest, StreamingInputCallResponse,
    StreamingOutputCallRequest, StreamingOutputCallResponse,
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

    /// Sleeps `response_size` milliseconds, then answers; computes that long without
    /// yielding instead if `fill_username` is set.
    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let _flag = DropFlag(self.dropped.clone());
        let time = Duration::from_millis(request.get_ref().response_size as u64);
        if request.get_ref().fill_username {
            let started = std::time::Instant::now();
            while started.elapsed() < time {
                std::hint::spin_loop();
            }
        } else {
            tokio::time::sleep(time).await;
        }
        self.finished.store(true, Ordering::SeqCst);
        Ok(Response::new(SimpleResponse::default()))
    }

    /// One small reply per `response_parameters` entry, each after its `interval_us`.
    async fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> Result<Response<Self::StreamingOutputCallStream>, Status> {
        use futures_util::StreamExt;
        let intervals = request.into_inner().response_parameters;
        let replies = futures_util::stream::iter(intervals).then(|parameters| async move {
            tokio::time::sleep(Duration::from_micros(parameters.interval_us as u64)).await;
            Ok(StreamingOutputCallResponse::default())
        });
        Ok(Response::new(replies.boxed()))
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

/// How a shape of call reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Grpc,
    GrpcWeb,
    Connect,
}

/// The request of one shape: the `content-type`, the timeout header, and the body holding
/// `message` (protobuf) or `json`.
fn shaped_request(
    wire: Wire,
    json: bool,
    streaming: bool,
    timeout_ms: u64,
    message: &[u8],
    json_text: &str,
) -> (String, (&'static str, String), Bytes) {
    let payload = if json { json_text.as_bytes() } else { message };
    let content_type = match (wire, json, streaming) {
        (Wire::Grpc, false, _) => "application/grpc",
        (Wire::Grpc, true, _) => "application/grpc+json",
        (Wire::GrpcWeb, false, _) => "application/grpc-web+proto",
        (Wire::GrpcWeb, true, _) => "application/grpc-web+json",
        (Wire::Connect, false, false) => "application/proto",
        (Wire::Connect, true, false) => "application/json",
        (Wire::Connect, false, true) => "application/connect+proto",
        (Wire::Connect, true, true) => "application/connect+json",
    };
    let timeout = match wire {
        Wire::Connect => ("connect-timeout-ms", timeout_ms.to_string()),
        Wire::Grpc | Wire::GrpcWeb => ("grpc-timeout", format!("{timeout_ms}m")),
    };
    let body = if wire == Wire::Connect && !streaming {
        Bytes::copy_from_slice(payload)
    } else {
        frame(payload)
    };
    (content_type.to_owned(), timeout, body)
}

/// What one exchange came back with, whichever transport carried it.
struct Answered {
    status: u16,
    content_type: String,
    /// `grpc-status` in the head (trailers-only), or in HTTP/2 trailers.
    head_status: Option<String>,
    trailer_status: Option<String>,
    body: Vec<u8>,
}

async fn exchange(
    server: &TestServer,
    http1: bool,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Answered {
    if http1 {
        let mut with_close = headers.to_vec();
        with_close.push(("connection", "close"));
        let bytes = support::http1::request("POST", path, headers[0].1, &with_close[1..], &body);
        let raw = support::http1::exchange(server.addr, &bytes).await;
        let response = support::http1::responses(&raw).remove(0);
        return Answered {
            status: response.status,
            content_type: response
                .header("content-type")
                .unwrap_or_default()
                .to_owned(),
            head_status: response.header("grpc-status").map(str::to_owned),
            trailer_status: None,
            body: response.body,
        };
    }
    let response = raw_request(server.addr, http::Method::POST, path, headers, body).await;
    let text = |value: Option<&http::HeaderValue>| value.map(|v| v.to_str().unwrap().to_owned());
    Answered {
        status: response.status.as_u16(),
        content_type: text(response.headers.get("content-type")).unwrap_or_default(),
        head_status: text(response.headers.get("grpc-status")),
        trailer_status: text(
            response
                .trailers
                .as_ref()
                .and_then(|t| t.get("grpc-status")),
        ),
        body: response.body.to_vec(),
    }
}

/// Checks that `answer` is `DEADLINE_EXCEEDED` in `wire`'s own form, for a call in
/// `content_type`: gRPC's status in its head or trailers; gRPC-Web's in its head or its body's
/// trailers frame, never in HTTP trailers (browsers cannot read them); Connect unary's as HTTP
/// 504 with a JSON error; a Connect stream's in its end-of-stream message.
fn assert_deadline_exceeded(
    answer: &Answered,
    wire: Wire,
    streaming: bool,
    content_type: &str,
    shape: &str,
) {
    match wire {
        Wire::Grpc => {
            assert_eq!(answer.content_type, content_type, "{shape}");
            let status = answer
                .head_status
                .as_deref()
                .or(answer.trailer_status.as_deref());
            assert_eq!(status, Some("4"), "{shape}");
        }
        Wire::GrpcWeb => {
            assert_eq!(answer.content_type, content_type, "{shape}");
            assert_eq!(answer.trailer_status, None, "{shape}: no HTTP trailers");
            let in_band = support::web::frames(&answer.body)
                .into_iter()
                .find(|(flag, _)| flag & 0x80 != 0)
                .map(|(_, trailers)| String::from_utf8(trailers).unwrap());
            match (&answer.head_status, in_band) {
                (Some(status), None) => assert_eq!(status, "4", "{shape}"),
                (None, Some(trailers)) => {
                    assert!(
                        trailers.contains("grpc-status:4\r\n"),
                        "{shape}: {trailers:?}"
                    )
                }
                other => panic!("{shape}: one status, in the head or the body: {other:?}"),
            }
        }
        Wire::Connect if streaming => {
            assert_eq!(answer.status, 200, "{shape}");
            assert_eq!(answer.content_type, content_type, "{shape}");
            let (flag, end) = support::web::frames(&answer.body)
                .pop()
                .expect("an end message");
            assert_eq!(flag, 0x02, "{shape}");
            let end: serde_json::Value = serde_json::from_slice(&end).unwrap();
            assert_eq!(end["error"]["code"], "deadline_exceeded", "{shape}: {end}");
        }
        Wire::Connect => {
            assert_eq!(answer.status, 504, "{shape}");
            assert_eq!(answer.content_type, "application/json", "{shape}");
            let error: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
            assert_eq!(error["code"], "deadline_exceeded", "{shape}: {error}");
        }
    }
}

/// Every protocol, codec and transport ends a call whose deadline passes the same way: with
/// `DEADLINE_EXCEEDED` in its own form, once the deadline passes (a unary handler that waits
/// 2 s against 100 ms; a stream of replies 200 ms apart against 300 ms), long before the
/// handler would have finished.
#[tokio::test]
async fn a_deadline_ends_every_protocol_codec_and_transport_in_its_own_form() {
    let (server, _, _) = sleeper_server(|service| service, None).await;
    let unary = SimpleRequest {
        response_size: 2000,
        ..Default::default()
    };
    let stream = StreamingOutputCallRequest {
        response_parameters: vec![
            support::pb::grpc_testing::ResponseParameters {
                interval_us: 200_000,
                ..Default::default()
            };
            10
        ],
        ..Default::default()
    };
    let stream_json = serde_json::json!({
        "responseParameters": vec![serde_json::json!({ "intervalUs": 200_000 }); 10]
    })
    .to_string();
    for wire in [Wire::Grpc, Wire::GrpcWeb, Wire::Connect] {
        for http1 in [false, true] {
            if wire == Wire::Grpc && http1 {
                continue; // gRPC needs HTTP/2.
            }
            for json in [false, true] {
                for streaming in [false, true] {
                    let shape = format!("{wire:?} http1={http1} json={json} streaming={streaming}");
                    let (path, timeout_ms, message, json_text) = if streaming {
                        let path = "/grpc.testing.TestService/StreamingOutputCall";
                        (path, 300, stream.encode_to_vec(), stream_json.clone())
                    } else {
                        let path = "/grpc.testing.TestService/UnaryCall";
                        (
                            path,
                            100,
                            unary.encode_to_vec(),
                            r#"{"responseSize":2000}"#.to_owned(),
                        )
                    };
                    let (content_type, (name, value), body) =
                        shaped_request(wire, json, streaming, timeout_ms, &message, &json_text);
                    let headers = [
                        ("content-type", content_type.as_str()),
                        (name, value.as_str()),
                        ("te", "trailers"),
                    ];
                    let started = std::time::Instant::now();
                    let answer = exchange(&server, http1, path, &headers, body).await;
                    let took = started.elapsed();
                    assert_deadline_exceeded(&answer, wire, streaming, &content_type, &shape);
                    assert!(
                        took < Duration::from_millis(1500),
                        "{shape}: answered after {took:?}"
                    );
                }
            }
        }
    }
    server.stop().await;
}

/// A unary handler that computes past its deadline without yielding cannot be cut short, but
/// its late reply is never sent: every call answers `DEADLINE_EXCEEDED`, whether it ran on the
/// connection's thread or, once adaptive inline has learnt the method is heavy, in a task.
#[tokio::test]
async fn a_reply_that_comes_after_the_deadline_is_deadline_exceeded_wherever_the_call_ran() {
    let (server, _, _) = sleeper_server(|service| service, None).await;
    let computing = SimpleRequest {
        response_size: 150,
        fill_username: true,
        ..Default::default()
    };
    for wire in [Wire::Grpc, Wire::GrpcWeb, Wire::Connect] {
        for http1 in [false, true] {
            if wire == Wire::Grpc && http1 {
                continue;
            }
            // Enough calls for the method to move to tasks after its first two.
            for call in 0..4 {
                let shape = format!("{wire:?} http1={http1} call {call}");
                let json_text = r#"{"responseSize":150,"fillUsername":true}"#;
                let (content_type, (name, value), body) = shaped_request(
                    wire,
                    false,
                    false,
                    50,
                    &computing.encode_to_vec(),
                    json_text,
                );
                let headers = [
                    ("content-type", content_type.as_str()),
                    (name, value.as_str()),
                    ("te", "trailers"),
                ];
                let path = "/grpc.testing.TestService/UnaryCall";
                let answer = exchange(&server, http1, path, &headers, body).await;
                assert_deadline_exceeded(&answer, wire, false, &content_type, &shape);
            }
        }
    }
    server.stop().await;
}
