//! Compression end to end, over raw HTTP/2 so every byte on the wire is the test's to choose:
//! compressed requests, an unsupported encoding, a decompression bomb, compressed replies.

use bytes::Bytes;
use fastgrpc::CompressionEncoding;
use fastgrpc::Server;
use prost::Message;
use support::pb::helloworld::greeter_server::GreeterServer;
use support::pb::helloworld::{HelloReply, HelloRequest};
use support::{EchoGreeter, RawResponse, TestServer, frame, raw_request};

async fn server(limit: usize) -> TestServer {
    let greeter = GreeterServer::new(EchoGreeter)
        .max_decoding_message_size(limit)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Deflate)
        .send_compressed(CompressionEncoding::Gzip);
    TestServer::start(Server::builder().add_service(greeter)).await
}

fn compressed(encoding: CompressionEncoding, message: &impl Message) -> Bytes {
    support::compressed_frame(encoding, &message.encode_to_vec())
}

async fn say_hello(server: &TestServer, headers: &[(&str, &str)], body: Bytes) -> RawResponse {
    let mut all = vec![("content-type", "application/grpc"), ("te", "trailers")];
    all.extend_from_slice(headers);
    raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &all,
        body,
    )
    .await
}

/// The reply message, decompressing it if its frame says so.
fn reply(response: &RawResponse) -> (String, bool) {
    assert_eq!(response.grpc_status(), Some("0"), "{response:?}");
    let compressed = response.body[0] == 1;
    let payload = &response.body[5..];
    let message = if compressed {
        let encoding = response.headers["grpc-encoding"].to_str().unwrap();
        let encoding = CompressionEncoding::from_name(encoding.as_bytes()).unwrap();
        HelloReply::decode(&support::decompressed(encoding, payload)[..]).unwrap()
    } else {
        HelloReply::decode(payload).unwrap()
    };
    (message.message, compressed)
}

#[tokio::test]
async fn compressed_requests_are_decompressed() {
    let server = server(1 << 20).await;
    let name = "compress me ".repeat(50);
    for (encoding, header) in [
        (CompressionEncoding::Gzip, "gzip"),
        (CompressionEncoding::Deflate, "deflate"),
    ] {
        let body = compressed(encoding, &HelloRequest { name: name.clone() });
        let response = say_hello(&server, &[("grpc-encoding", header)], body).await;
        assert_eq!(reply(&response).0, name, "{header}");
    }
    // Uncompressed frames are fine in a call that declares an encoding.
    let plain = frame(
        &HelloRequest {
            name: "plain".into(),
        }
        .encode_to_vec(),
    );
    let response = say_hello(&server, &[("grpc-encoding", "gzip")], plain).await;
    assert_eq!(reply(&response).0, "plain");
    server.stop().await;
}

#[tokio::test]
async fn an_unsupported_encoding_is_unimplemented_and_lists_what_is_accepted() {
    let server = server(1 << 20).await;
    let body = frame(&HelloRequest { name: "x".into() }.encode_to_vec());
    let response = say_hello(&server, &[("grpc-encoding", "snappy")], body).await;
    assert_eq!(response.grpc_status(), Some("12"));
    assert!(response.grpc_message().unwrap().contains("snappy"));
    assert_eq!(
        response.headers["grpc-accept-encoding"],
        "identity,gzip,deflate"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_decompression_bomb_is_resource_exhausted() {
    let server = server(64 * 1024).await;
    // 1 MiB of one repeated byte compresses to about a kilobyte; the limit is 64 KiB.
    let bomb = HelloRequest {
        name: "a".repeat(1 << 20),
    };
    let body = compressed(CompressionEncoding::Gzip, &bomb);
    assert!(
        body.len() < 64 * 1024,
        "the frame itself is within the limit"
    );
    let response = say_hello(&server, &[("grpc-encoding", "gzip")], body).await;
    assert_eq!(response.grpc_status(), Some("8"), "{response:?}");
    assert!(response.grpc_message().unwrap().contains("limit"));
    server.stop().await;
}

#[tokio::test]
async fn replies_are_compressed_only_for_clients_that_accept_the_encoding() {
    let server = server(1 << 20).await;
    let name = "reply ".repeat(100);
    let body = || frame(&HelloRequest { name: name.clone() }.encode_to_vec());

    let accepting = say_hello(
        &server,
        &[("grpc-accept-encoding", "identity, gzip")],
        body(),
    )
    .await;
    assert_eq!(accepting.headers["grpc-encoding"], "gzip");
    assert_eq!(reply(&accepting), (name.clone(), true));

    let not_accepting = say_hello(&server, &[("grpc-accept-encoding", "deflate")], body()).await;
    assert!(not_accepting.headers.get("grpc-encoding").is_none());
    assert_eq!(reply(&not_accepting), (name.clone(), false));

    let silent = say_hello(&server, &[], body()).await;
    assert_eq!(reply(&silent), (name, false));
    server.stop().await;
}

#[tokio::test]
async fn gzip_requests_are_accepted_by_default_and_answers_say_so() {
    let server =
        TestServer::start(Server::builder().add_service(GreeterServer::new(EchoGreeter))).await;
    let hello = HelloRequest { name: "x".into() };
    // As C-core and grpc-go: gzip is accepted without asking. A client that speaks compression
    // (it sends `grpc-accept-encoding`, as C-core and grpc-go clients do) is told so.
    let gzipped = compressed(CompressionEncoding::Gzip, &hello);
    let speaks_compression = [("grpc-encoding", "gzip"), ("grpc-accept-encoding", "gzip")];
    let response = say_hello(&server, &speaks_compression, gzipped).await;
    assert_eq!(response.grpc_status(), Some("0"), "{response:?}");
    assert_eq!(reply(&response).0, "x");
    assert_eq!(response.headers["grpc-accept-encoding"], "identity,gzip");
    // A client that does not is spared the header on success.
    let plain = say_hello(&server, &[], support::frame(&hello.encode_to_vec())).await;
    assert_eq!(reply(&plain).0, "x");
    assert!(plain.headers.get("grpc-accept-encoding").is_none());
    // Other encodings are refused, and every failed call says what is accepted.
    let deflated = compressed(CompressionEncoding::Deflate, &hello);
    let response = say_hello(&server, &[("grpc-encoding", "deflate")], deflated).await;
    assert_eq!(response.grpc_status(), Some("12"));
    assert_eq!(response.headers["grpc-accept-encoding"], "identity,gzip");
    server.stop().await;
}

#[tokio::test]
async fn a_service_that_refuses_compressed_requests_refuses_gzip_too() {
    let service = GreeterServer::new(EchoGreeter).refuse_compressed_requests();
    let server = TestServer::start(Server::builder().add_service(service)).await;
    let hello = HelloRequest { name: "x".into() };
    let gzipped = compressed(CompressionEncoding::Gzip, &hello);
    let response = say_hello(&server, &[("grpc-encoding", "gzip")], gzipped).await;
    assert_eq!(response.grpc_status(), Some("12"));
    assert_eq!(response.headers["grpc-accept-encoding"], "identity");
    let plain = say_hello(&server, &[], support::frame(&hello.encode_to_vec())).await;
    assert_eq!(reply(&plain).0, "x");
    assert!(plain.headers.get("grpc-accept-encoding").is_none());
    server.stop().await;
}

#[tokio::test]
async fn an_unlimited_receive_size_still_decompresses() {
    let server = server(usize::MAX).await;
    let body = compressed(
        CompressionEncoding::Gzip,
        &HelloRequest {
            name: "big ".repeat(1000),
        },
    );
    let response = say_hello(&server, &[("grpc-encoding", "gzip")], body).await;
    assert_eq!(reply(&response).0, "big ".repeat(1000));
    server.stop().await;
}
