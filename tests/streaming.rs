//! Streaming calls through the runtime: framing across DATA frames, flow control with a slow
//! reader, errors mid-stream, and client cancellation seen by the handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status, Streaming};
use futures_util::StreamExt;
use prost::Message;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    Payload, StreamingInputCallRequest, StreamingInputCallResponse, StreamingOutputCallRequest,
    StreamingOutputCallResponse,
};
use support::{TestServer, grpc_post, h2_client, until};

/// Observations the handlers make, for the tests to assert on.
#[derive(Default)]
struct Seen {
    produced: AtomicUsize,
    /// Request messages the handler has read.
    received: AtomicUsize,
    reply_stream_dropped: AtomicBool,
    request_stream_error: std::sync::Mutex<Option<tonic::Code>>,
    /// Tasks alive when the handler was called, then when each reply was produced.
    alive_tasks: std::sync::Mutex<Vec<usize>>,
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

struct Probe(Arc<Seen>);

/// Sets `reply_stream_dropped` when the reply stream is dropped.
struct DropFlag(Arc<Seen>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.reply_stream_dropped.store(true, Ordering::SeqCst);
    }
}

impl TestService for Probe {
    support::boxed_reply_streams!();

    /// Endless replies of `response_parameters[0].size` bytes, counting each one produced;
    /// with `response_status` set, fails after three replies.
    fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> impl RpcFuture<Self::StreamingOutputCallStream> {
        let request = request.into_inner();
        let size = request
            .response_parameters
            .first()
            .map_or(0, |p| p.size as usize);
        let fail_after = request.response_status.map(|_| 3);
        let seen = self.0.clone();
        let guard = DropFlag(seen.clone());
        let replies = futures_util::stream::iter(0..).map(move |n| {
            let _keep = &guard;
            if Some(n) == fail_after {
                return Err(Status::aborted("stopped after three replies"));
            }
            seen.produced.fetch_add(1, Ordering::SeqCst);
            Ok(StreamingOutputCallResponse {
                payload: Some(Payload {
                    r#type: 0,
                    body: Bytes::from(vec![7; size]),
                }),
            })
        });
        FastFuture::ok(Response::new(replies.boxed()))
    }

    /// One reply, then a panic inside the reply stream.
    fn full_duplex_call(
        &self,
        _request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Self::FullDuplexCallStream> {
        FastFuture::ok(Response::new(support::one_reply_then_panic(
            StreamingOutputCallResponse::default(),
        )))
    }

    /// Three replies at once, then one after a short wait; records how many tasks are alive
    /// at the call and at each reply.
    fn half_duplex_call(
        &self,
        _request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Self::HalfDuplexCallStream> {
        let seen = self.0.clone();
        seen.alive_tasks.lock().unwrap().push(alive_tasks());
        let replies = futures_util::stream::iter(0..4).then(move |n| {
            let seen = seen.clone();
            async move {
                if n == 3 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                seen.alive_tasks.lock().unwrap().push(alive_tasks());
                Ok(StreamingOutputCallResponse::default())
            }
        });
        FastFuture::ok(Response::new(replies.boxed()))
    }

    /// Sums payload sizes; records the error that ended the request stream, if any.
    async fn streaming_input_call(
        &self,
        request: Request<Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        let mut requests = request.into_inner();
        let mut total = 0;
        loop {
            match requests.message().await {
                Ok(Some(request)) => {
                    self.0.received.fetch_add(1, Ordering::SeqCst);
                    total += request.payload.map_or(0, |p| p.body.len() as i32);
                }
                Ok(None) => break,
                Err(status) => {
                    *self.0.request_stream_error.lock().unwrap() = Some(status.code());
                    return Err(status);
                }
            }
        }
        Ok(Response::new(StreamingInputCallResponse {
            aggregated_payload_size: total,
        }))
    }
}

async fn probe_server(limit: usize) -> (TestServer, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let service = TestServiceServer::new(Probe(seen.clone())).max_decoding_message_size(limit);
    (
        TestServer::start(Server::builder().add_service(service)).await,
        seen,
    )
}

fn input_frames(sizes: &[usize]) -> Bytes {
    let mut buf = BytesMut::new();
    for &size in sizes {
        let request = StreamingInputCallRequest {
            payload: Some(Payload {
                r#type: 0,
                body: Bytes::from(vec![1; size]),
            }),
            expect_compressed: None,
        };
        buf.extend_from_slice(&fastgrpc::internals::codec::encode(&request).unwrap());
    }
    buf.freeze()
}

/// Sends `frames` in DATA frames of `chunk` bytes and returns the aggregated size answered.
async fn aggregate(server: &TestServer, frames: Bytes, chunk: usize) -> (Option<i32>, String) {
    let mut client = h2_client(server, 1 << 20).await;
    let (response, mut send) = client
        .send_request(
            grpc_post(server, "/grpc.testing.TestService/StreamingInputCall"),
            false,
        )
        .unwrap();
    // The server may answer (and close the stream) before everything is sent.
    let mut rest = frames;
    while !rest.is_empty() {
        let piece = rest.split_to(chunk.min(rest.len()));
        if send.send_data(piece, false).is_err() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let _ = send.send_data(Bytes::new(), true);
    let (parts, mut body) = response.await.unwrap().into_parts();
    let mut data = BytesMut::new();
    while let Some(chunk) = body.data().await {
        data.extend_from_slice(&chunk.unwrap());
    }
    let status = body
        .trailers()
        .await
        .unwrap()
        .or(Some(parts.headers))
        .and_then(|t| t.get("grpc-status").map(|v| v.to_str().unwrap().to_owned()))
        .unwrap_or_default();
    let total = (!data.is_empty()).then(|| {
        StreamingInputCallResponse::decode(&data[5..])
            .unwrap()
            .aggregated_payload_size
    });
    (total, status)
}

#[tokio::test]
async fn request_messages_split_or_packed_across_data_frames() {
    let (server, _) = probe_server(1024).await;
    let sizes = [0, 1, 100, 500, 3];
    let expected: usize = sizes.iter().sum();
    // One DATA frame holding every message; then messages split byte by byte and in odd sizes.
    for chunk in [usize::MAX, 1, 3, 7, 64] {
        let (total, status) = aggregate(&server, input_frames(&sizes), chunk).await;
        assert_eq!(status, "0", "chunk {chunk}");
        assert_eq!(total, Some(expected as i32), "chunk {chunk}");
    }
    server.stop().await;
}

#[tokio::test]
async fn request_message_exactly_at_the_limit_passes_and_one_byte_more_fails() {
    let at_limit = input_frames(&[1000]);
    let limit = at_limit.len() - 5;
    let (server, seen) = probe_server(limit).await;
    let (total, status) = aggregate(&server, at_limit, 100).await;
    assert_eq!((total, status.as_str()), (Some(1000), "0"));
    let (total, status) = aggregate(&server, input_frames(&[1001]), 100).await;
    assert_eq!((total, status.as_str()), (None, "8"), "RESOURCE_EXHAUSTED");
    assert_eq!(
        *seen.request_stream_error.lock().unwrap(),
        Some(tonic::Code::ResourceExhausted)
    );
    server.stop().await;
}

/// A `StreamingOutputCall` to [`Probe`] for endless replies of `size` bytes, over a raw h2
/// client whose flow control the test drives: the response, once its headers are in, and the
/// request's stream (to reset it).
async fn endless_replies(
    client: &mut h2::client::SendRequest<Bytes>,
    server: &TestServer,
    size: i32,
) -> (http::Response<h2::RecvStream>, h2::SendStream<Bytes>) {
    let request = StreamingOutputCallRequest {
        response_parameters: vec![support::pb::grpc_testing::ResponseParameters {
            size,
            ..Default::default()
        }],
        ..Default::default()
    };
    let (response, mut send) = client
        .send_request(
            grpc_post(server, "/grpc.testing.TestService/StreamingOutputCall"),
            false,
        )
        .unwrap();
    send.send_data(fastgrpc::internals::codec::encode(&request).unwrap(), true)
        .unwrap();
    (response.await.unwrap(), send)
}

#[tokio::test]
async fn a_slow_reader_bounds_what_the_server_produces() {
    let (server, seen) = probe_server(1024).await;
    // 64 KiB window, 16 KiB replies, and a client that reads nothing.
    let mut client = h2_client(&server, 65_535).await;
    let (response, mut send) = endless_replies(&mut client, &server, 16 * 1024).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let produced = seen.produced.load(Ordering::SeqCst);
    // The window holds four replies; at most one more waits in the server's buffer.
    assert!(
        (3..=6).contains(&produced),
        "produced {produced} replies for a reader that reads nothing"
    );

    // Reading releases the window, and the stream goes on.
    let mut body = response.into_body();
    let mut received = 0;
    while received < 20 * 16 * 1024 {
        let chunk = body.data().await.unwrap().unwrap();
        received += chunk.len();
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    assert!(seen.produced.load(Ordering::SeqCst) >= 20);
    // The stream is endless: cancel it, or graceful shutdown would wait for it.
    send.send_reset(h2::Reason::CANCEL);
    server.stop().await;
}

#[tokio::test]
async fn an_error_mid_stream_ends_the_call_with_its_status_in_trailers() {
    let (server, _) = probe_server(1024).await;
    let mut client = support::tonic_pb::grpc_testing::test_service_client::TestServiceClient::new(
        support::channel(&server).await,
    );
    let request = support::tonic_pb::grpc_testing::StreamingOutputCallRequest {
        response_parameters: vec![support::tonic_pb::grpc_testing::ResponseParameters {
            size: 10,
            ..Default::default()
        }],
        response_status: Some(support::tonic_pb::grpc_testing::EchoStatus {
            code: 10,
            message: "ignored: the probe fails with its own status".into(),
        }),
        ..Default::default()
    };
    let mut replies = client
        .streaming_output_call(request)
        .await
        .unwrap()
        .into_inner();
    for _ in 0..3 {
        assert_eq!(support::next_payload_len(&mut replies).await, 10);
    }
    let status = replies.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Aborted);
    assert_eq!(status.message(), "stopped after three replies");
    server.stop().await;
}

#[tokio::test]
async fn a_client_reset_drops_the_reply_stream() {
    let (server, seen) = probe_server(1024).await;
    let mut client = h2_client(&server, 65_535).await;
    let (response, mut send) = endless_replies(&mut client, &server, 1024).await;
    let mut body = response.into_body();
    assert!(body.data().await.unwrap().is_ok());
    send.send_reset(h2::Reason::CANCEL);
    until("the reply stream is dropped", || {
        seen.reply_stream_dropped.load(Ordering::SeqCst)
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn a_client_reset_is_seen_by_a_handler_reading_requests() {
    let (server, seen) = probe_server(1 << 20).await;
    let mut client = h2_client(&server, 65_535).await;
    let (_response, mut send) = client
        .send_request(
            grpc_post(&server, "/grpc.testing.TestService/StreamingInputCall"),
            false,
        )
        .unwrap();
    send.send_data(input_frames(&[10]), false).unwrap();
    until("the handler reads the first message", || {
        seen.received.load(Ordering::SeqCst) == 1
    })
    .await;
    send.send_reset(h2::Reason::CANCEL);
    until("the handler sees the reset", || {
        seen.request_stream_error.lock().unwrap().is_some()
    })
    .await;
    assert_eq!(
        *seen.request_stream_error.lock().unwrap(),
        Some(tonic::Code::Cancelled)
    );
    server.stop().await;
}

#[tokio::test]
async fn thousands_of_tiny_messages_in_their_own_data_frames_are_served() {
    // gRPC clients send each message in its own DATA frame; h2's default budget for small
    // frames would close the connection (ENHANCE_YOUR_CALM) under such a stream.
    let (server, _) = probe_server(1024).await;
    let mut client = h2_client(&server, 1 << 20).await;
    let (response, mut send) = client
        .send_request(
            grpc_post(&server, "/grpc.testing.TestService/StreamingInputCall"),
            false,
        )
        .unwrap();
    let message = input_frames(&[1]);
    for _ in 0..10_000 {
        send.send_data(message.clone(), false).unwrap();
    }
    send.send_data(Bytes::new(), true).unwrap();
    let mut body = response.await.unwrap().into_body();
    let data = body.data().await.unwrap().unwrap();
    let reply = StreamingInputCallResponse::decode(&data[5..]).unwrap();
    assert_eq!(reply.aggregated_payload_size, 10_000);
    server.stop().await;
}

#[tokio::test]
async fn a_panic_in_a_reply_stream_ends_the_call_with_internal() {
    let (server, _) = probe_server(1024).await;
    let channel = support::channel(&server).await;
    let mut client =
        support::tonic_pb::grpc_testing::test_service_client::TestServiceClient::new(channel);
    let mut replies = client
        .full_duplex_call(tokio_stream::empty())
        .await
        .unwrap()
        .into_inner();
    assert!(replies.message().await.unwrap().is_some());
    let status = replies.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    // The connection goes on.
    let (total, status) = aggregate(&server, input_frames(&[3]), 100).await;
    assert_eq!((total, status.as_str()), (Some(3), "0"));
    server.stop().await;
}

#[tokio::test]
async fn replies_a_stream_has_ready_are_sent_inline_and_the_rest_from_a_task() {
    let (server, seen) = probe_server(1024).await;
    let mut client = support::tonic_pb::grpc_testing::test_service_client::TestServiceClient::new(
        support::channel(&server).await,
    );
    let replies: Vec<_> = client
        .half_duplex_call(tokio_stream::iter(Vec::new()))
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    assert_eq!(replies.len(), 4);
    assert!(replies.iter().all(Result::is_ok));
    let alive = seen.alive_tasks.lock().unwrap().clone();
    // The three ready replies were produced in the connection's own poll, with no new task.
    // (The last one comes from the task the rest of the stream moved to; other tasks, such as
    // the client's request pipe, may have ended by then, so its count is not compared.)
    assert_eq!(alive[1..4], [alive[0]; 3], "tasks alive: {alive:?}");
    server.stop().await;
}
