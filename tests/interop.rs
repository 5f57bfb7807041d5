//! The interop cases the unary core serves, driven by tonic's client against the very
//! service the `interop_server` example runs (its source is included below).
//!
//! The same cases run with grpcio's C-core client in `interop/python/run.sh`.

mod support;

#[path = "../examples/interop_server/service.rs"]
mod service;

use fastgrpc::{Code, Server};
use support::pb::grpc_testing;
use support::tonic_pb::grpc_testing as client_pb;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::tonic_pb::grpc_testing::unimplemented_service_client::UnimplementedServiceClient;
use support::{TestServer, channel};
use tonic::transport::Channel;

async fn interop_server() -> (TestServer, TestServiceClient<Channel>) {
    let server = TestServer::start(Server::builder().add_service(
        grpc_testing::test_service_server::TestServiceServer::new(service::Interop),
    ))
    .await;
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
    let (server, mut client) = interop_server().await;
    let status = client
        .unary_call(client_pb::SimpleRequest {
            response_status: echo_status(2, "test status message"),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unknown);
    assert_eq!(status.message(), "test status message");
    server.stop().await;
}

#[tokio::test]
async fn special_status_message() {
    let (server, mut client) = interop_server().await;
    let message = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";
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
