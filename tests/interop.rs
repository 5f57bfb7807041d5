//! The interop cases the unary core serves, driven by tonic's client against the very
//! service the `interop_server` example runs (its source is included below).
//!
//! The same cases run with grpcio's C-core client in `interop/python/run.sh`.

#[path = "../examples/interop_server/service.rs"]
mod service;

use fastgrpc::{Code, Server};
use support::pb::grpc_testing;
use support::tonic_pb::grpc_testing as client_pb;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::tonic_pb::grpc_testing::unimplemented_service_client::UnimplementedServiceClient;
use support::{TestServer, channel, until};
use tonic::transport::Channel;

async fn interop_server() -> (TestServer, TestServiceClient<Channel>) {
    let server = TestServer::start(Server::builder().add_service(service::Interop::server())).await;
    let client = TestServiceClient::new(channel(&server).await);
    (server, client)
}

fn echo_status(code: i32, message: &str) -> Option<client_pb::EchoStatus> {
    Some(client_pb::EchoStatus {
        code,
        message: message.into(),
    })
}

#[tokio::test]
async fn empty_unary() {
    let (server, mut client) = interop_server().await;
    let reply = client.empty_call(client_pb::Empty {}).await.unwrap();
    assert_eq!(reply.into_inner(), client_pb::Empty {});
    server.stop().await;
}

#[tokio::test]
async fn large_unary() {
    let (server, mut client) = interop_server().await;
    let reply = client
        .unary_call(client_pb::SimpleRequest {
            response_size: 314_159,
            payload: Some(client_pb::Payload {
                r#type: 0,
                body: vec![0; 271_828],
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let payload = reply.payload.expect("payload");
    assert_eq!(payload.body.len(), 314_159);
    assert!(payload.body.iter().all(|&b| b == 0));
    server.stop().await;
}

#[tokio::test]
async fn status_code_and_message() {
    assert_unary_echoes_status("test status message").await;
}

#[tokio::test]
async fn special_status_message() {
    assert_unary_echoes_status("\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n")
        .await;
}

/// A unary call asking for `UNKNOWN` with `message` gets exactly that back.
async fn assert_unary_echoes_status(message: &str) {
    let (server, mut client) = interop_server().await;
    let status = client
        .unary_call(client_pb::SimpleRequest {
            response_status: echo_status(2, message),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unknown);
    assert_eq!(status.message(), message);
    server.stop().await;
}

#[tokio::test]
async fn unimplemented_method() {
    let (server, mut client) = interop_server().await;
    let status = client
        .unimplemented_call(client_pb::Empty {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    server.stop().await;
}

#[tokio::test]
async fn unimplemented_service() {
    let (server, _) = interop_server().await;
    let mut client = UnimplementedServiceClient::new(channel(&server).await);
    let status = client
        .unimplemented_call(client_pb::Empty {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented);
    server.stop().await;
}

#[tokio::test]
async fn negative_response_size_is_invalid_argument() {
    let (server, mut client) = interop_server().await;
    let status = client
        .unary_call(client_pb::SimpleRequest {
            response_size: -1,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    server.stop().await;
}

fn zeros(size: usize) -> Option<client_pb::Payload> {
    Some(client_pb::Payload {
        r#type: 0,
        body: vec![0; size],
    })
}

fn output_request(sizes: &[i32]) -> client_pb::StreamingOutputCallRequest {
    client_pb::StreamingOutputCallRequest {
        response_parameters: sizes
            .iter()
            .map(|&size| client_pb::ResponseParameters {
                size,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

#[tokio::test]
async fn client_streaming() {
    let (server, mut client) = interop_server().await;
    let requests = [27_182, 8, 1_828, 45_904].map(|size| client_pb::StreamingInputCallRequest {
        payload: zeros(size),
        ..Default::default()
    });
    let reply = client
        .streaming_input_call(tokio_stream::iter(requests))
        .await
        .unwrap();
    assert_eq!(reply.get_ref().aggregated_payload_size, 74_922);
    server.stop().await;
}

#[tokio::test]
async fn server_streaming() {
    let (server, mut client) = interop_server().await;
    let sizes = [31_415, 9, 2_653, 58_979];
    let mut replies = client
        .streaming_output_call(output_request(&sizes))
        .await
        .unwrap()
        .into_inner();
    for size in sizes {
        let reply = replies
            .message()
            .await
            .unwrap()
            .expect("one reply per size");
        assert_eq!(reply.payload.unwrap().body.len(), size as usize);
    }
    assert!(replies.message().await.unwrap().is_none());
    server.stop().await;
}

#[tokio::test]
async fn ping_pong() {
    let (server, mut client) = interop_server().await;
    let (requests, rx) = tokio::sync::mpsc::channel(1);
    let mut replies = client
        .full_duplex_call(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    for (request_size, reply_size) in [(27_182, 31_415), (8, 9), (1_828, 2_653), (45_904, 58_979)] {
        let mut request = output_request(&[reply_size]);
        request.payload = zeros(request_size);
        requests.send(request).await.unwrap();
        let reply = replies
            .message()
            .await
            .unwrap()
            .expect("a reply per request");
        assert_eq!(reply.payload.unwrap().body.len(), reply_size as usize);
    }
    drop(requests);
    assert!(replies.message().await.unwrap().is_none());
    server.stop().await;
}

#[tokio::test]
async fn empty_stream() {
    let (server, mut client) = interop_server().await;
    let mut replies = client
        .full_duplex_call(tokio_stream::empty())
        .await
        .unwrap()
        .into_inner();
    assert!(replies.message().await.unwrap().is_none());
    server.stop().await;
}

#[tokio::test]
async fn custom_metadata() {
    let (server, mut client) = interop_server().await;
    let trailing = tonic::metadata::MetadataValue::from_bytes(&[0xab, 0xab, 0xab]);
    fn with_metadata<T>(mut request: tonic::Request<T>) -> tonic::Request<T> {
        let metadata = request.metadata_mut();
        metadata.insert(
            "x-grpc-test-echo-initial",
            "test_initial_metadata_value".parse().unwrap(),
        );
        metadata.insert_bin(
            "x-grpc-test-echo-trailing-bin",
            tonic::metadata::MetadataValue::from_bytes(&[0xab, 0xab, 0xab]),
        );
        request
    }
    let check = |headers: &tonic::metadata::MetadataMap,
                 trailers: &tonic::metadata::MetadataMap| {
        assert_eq!(
            headers.get("x-grpc-test-echo-initial").unwrap(),
            "test_initial_metadata_value"
        );
        assert_eq!(
            trailers.get_bin("x-grpc-test-echo-trailing-bin").unwrap(),
            &trailing
        );
    };

    let mut unary = tonic::Request::new(client_pb::SimpleRequest {
        response_size: 314_159,
        payload: zeros(271_828),
        ..Default::default()
    });
    unary = with_metadata(unary);
    // tonic merges a unary call's trailers into the response metadata.
    let reply = client.unary_call(unary).await.unwrap();
    check(reply.metadata(), reply.metadata());

    let request = with_metadata(tonic::Request::new(tokio_stream::iter([{
        let mut request = output_request(&[314_159]);
        request.payload = zeros(271_828);
        request
    }])));
    let reply = client.full_duplex_call(request).await.unwrap();
    let headers = reply.metadata().clone();
    let mut replies = reply.into_inner();
    assert_eq!(support::next_payload_len(&mut replies).await, 314_159);
    assert!(replies.message().await.unwrap().is_none());
    check(&headers, &replies.trailers().await.unwrap().unwrap());
    server.stop().await;
}

#[tokio::test]
async fn status_code_and_message_full_duplex() {
    let (server, mut client) = interop_server().await;
    let request = client_pb::StreamingOutputCallRequest {
        response_status: echo_status(2, "test status message"),
        ..Default::default()
    };
    let outcome = match client.full_duplex_call(tokio_stream::iter([request])).await {
        Ok(reply) => reply.into_inner().message().await.map(|_| ()),
        Err(status) => Err(status),
    };
    let status = outcome.unwrap_err();
    assert_eq!(status.code(), Code::Unknown);
    assert_eq!(status.message(), "test status message");
    server.stop().await;
}

#[tokio::test]
async fn cancel_after_first_response() {
    let (server, mut client) = interop_server().await;
    let (requests, rx) = tokio::sync::mpsc::channel(1);
    let call = client.full_duplex_call(tokio_stream::wrappers::ReceiverStream::new(rx));
    let mut request = output_request(&[31_415]);
    request.payload = zeros(27_182);
    requests.send(request).await.unwrap();
    let mut replies = call.await.unwrap().into_inner();
    assert!(replies.message().await.unwrap().is_some());
    drop(replies);
    drop(requests);
    // The server keeps serving after the cancellation.
    assert!(client.empty_call(client_pb::Empty {}).await.is_ok());
    server.stop().await;
}

#[tokio::test]
async fn timeout_on_sleeping_server() {
    let (server, mut client) = interop_server().await;
    let (requests, rx) = tokio::sync::mpsc::channel(1);
    let mut request = tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
    // The header alone, without tonic's own timer (`set_timeout`), whose expiry tonic reports
    // as CANCELLED and which wins the race on a busy machine: the server's deadline is tested.
    request
        .metadata_mut()
        .insert("grpc-timeout", "1m".parse().unwrap());
    let mut first = output_request(&[31_415]);
    first.payload = zeros(27_182);
    requests.send(first).await.unwrap();
    // The request stream stays open, so only the deadline can end the call.
    let outcome = match client.full_duplex_call(request).await {
        Ok(reply) => {
            let mut replies = reply.into_inner();
            loop {
                match replies.message().await {
                    Ok(Some(_)) => continue,
                    other => break other.map(|_| ()),
                }
            }
        }
        Err(status) => Err(status),
    };
    let status = outcome.expect_err("a 1 ms deadline passes");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    drop(requests);
    server.stop().await;
}

fn compressed_client(client: TestServiceClient<Channel>) -> TestServiceClient<Channel> {
    client
        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
        .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
}

fn expect_compressed(value: bool) -> Option<client_pb::BoolValue> {
    Some(client_pb::BoolValue { value })
}

#[tokio::test]
async fn client_compressed_unary() {
    let (server, client) = interop_server().await;
    let request = |expect| client_pb::SimpleRequest {
        response_size: 314_159,
        payload: zeros(271_828),
        expect_compressed: expect_compressed(expect),
        ..Default::default()
    };
    // The probe: claims to be compressed but is not; the server must notice.
    let mut plain = client.clone();
    let status = plain.unary_call(request(true)).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let mut compressed = compressed_client(client.clone());
    let reply = compressed.unary_call(request(true)).await.unwrap();
    assert_eq!(
        reply.get_ref().payload.as_ref().unwrap().body.len(),
        314_159
    );
    let reply = plain.unary_call(request(false)).await.unwrap();
    assert_eq!(
        reply.get_ref().payload.as_ref().unwrap().body.len(),
        314_159
    );
    server.stop().await;
}

#[tokio::test]
async fn server_compressed_unary() {
    let (server, client) = interop_server().await;
    let mut client = compressed_client(client);
    for compress in [true, false] {
        let reply = client
            .unary_call(client_pb::SimpleRequest {
                response_size: 314_159,
                payload: zeros(271_828),
                response_compressed: expect_compressed(compress),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(
            reply.get_ref().payload.as_ref().unwrap().body.len(),
            314_159
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn client_compressed_streaming() {
    let (server, client) = interop_server().await;
    let probe = client_pb::StreamingInputCallRequest {
        payload: zeros(27_182),
        expect_compressed: expect_compressed(true),
    };
    let mut plain = client.clone();
    let status = plain
        .streaming_input_call(tokio_stream::iter([probe.clone()]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    let mut compressed = compressed_client(client);
    let reply = compressed
        .streaming_input_call(tokio_stream::iter([probe]))
        .await
        .unwrap();
    assert_eq!(reply.get_ref().aggregated_payload_size, 27_182);
    server.stop().await;
}

#[tokio::test]
async fn server_compressed_streaming() {
    let (server, client) = interop_server().await;
    let mut client = compressed_client(client);
    let mut request = output_request(&[31_415, 92_653]);
    request.response_parameters[0].compressed = expect_compressed(true);
    request.response_parameters[1].compressed = expect_compressed(false);
    let mut replies = client
        .streaming_output_call(request)
        .await
        .unwrap()
        .into_inner();
    for size in [31_415, 92_653] {
        let reply = replies
            .message()
            .await
            .unwrap()
            .expect("a reply per parameter");
        assert_eq!(reply.payload.unwrap().body.len(), size);
    }
    assert!(replies.message().await.unwrap().is_none());
    server.stop().await;
}

#[tokio::test]
async fn cancel_after_begin() {
    let builder = Server::builder().add_service(service::Interop::server());
    let stats = builder.stats();
    let server = TestServer::start(builder).await;
    let mut client = TestServiceClient::new(channel(&server).await);
    let (requests, rx) = tokio::sync::mpsc::channel::<client_pb::StreamingInputCallRequest>(1);
    let mut call_client = client.clone();
    let call = tokio::spawn(async move {
        call_client
            .streaming_input_call(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
    });
    until("the call has begun", || stats.call_tasks() == 1).await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    drop(requests);
    // The server goes on serving the connection.
    assert!(client.empty_call(client_pb::Empty {}).await.is_ok());
    server.stop().await;
}
