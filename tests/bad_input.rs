//! Hostile and broken clients. Each case asserts the server's exact answer, and that a normal
//! call on a fresh connection still succeeds afterwards. (Malformed bodies, content types,
//! methods, timeouts, encodings, oversized messages and header lists are covered next to the
//! features they test: `tests/unary.rs`, `tests/compression.rs`, `tests/deadlines.rs`,
//! `tests/limits.rs`.)

use std::time::{Duration, Instant};

use bytes::Bytes;
use fastgrpc::Server;
use support::pb::helloworld::greeter_server::GreeterServer;
use support::tonic_pb::helloworld as client_pb;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{EchoGreeter, TestServer, channel, grpc_post, h2_client, hello_frame, raw_request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SAY_HELLO: &str = "/helloworld.Greeter/SayHello";

async fn server(builder: fastgrpc::Builder) -> TestServer {
    TestServer::start(builder.add_service(GreeterServer::new(EchoGreeter))).await
}

async fn still_serves(server: &TestServer) {
    let mut client = GreeterClient::new(channel(server).await);
    let reply = client
        .say_hello(client_pb::HelloRequest {
            name: "fine".into(),
        })
        .await
        .expect("a fresh connection is served");
    assert_eq!(reply.into_inner().message, "fine");
}

#[tokio::test]
async fn a_request_without_te_trailers_is_served() {
    // The spec has clients send `te: trailers` (to detect proxies that drop trailers); like
    // tonic and grpc-go, fastgrpc does not insist on it.
    let server = server(Server::builder()).await;
    let response = raw_request(
        server.addr,
        http::Method::POST,
        SAY_HELLO,
        &[("content-type", "application/grpc")],
        hello_frame("no te"),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("0"));
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn a_reset_in_the_middle_of_a_request_is_survived() {
    let server = server(Server::builder()).await;
    let mut client = h2_client(&server, 65_535).await;
    let (response, mut send) = client
        .send_request(grpc_post(&server, SAY_HELLO), false)
        .unwrap();
    // Half a frame, then the client gives up.
    send.send_data(Bytes::from_static(&[0, 0, 0, 0, 9, 0x0a]), false)
        .unwrap();
    send.send_reset(h2::Reason::CANCEL);
    let outcome = tokio::time::timeout(Duration::from_secs(5), response)
        .await
        .expect("no hang");
    assert!(
        outcome.is_err(),
        "the reset stream has no response: {outcome:?}"
    );
    // The same connection goes on.
    let (response, _) = client
        .send_request(grpc_post(&server, SAY_HELLO), true)
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(
        response.headers()["grpc-status"],
        "12",
        "empty body: missing message"
    );
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn a_burst_of_rapid_resets_gets_the_abuser_cut_off_and_nobody_else() {
    // Open streams and reset them at once, over and over (CVE-2023-44487, "rapid reset").
    let server = server(Server::builder()).await;
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let conn = tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    for _ in 0..2_000 {
        match client.send_request(grpc_post(&server, SAY_HELLO), false) {
            Ok((_, mut send)) => send.send_reset(h2::Reason::CANCEL),
            Err(_) => break,
        }
        if client.clone().ready().await.is_err() {
            break;
        }
    }
    let ended = tokio::time::timeout(Duration::from_secs(5), conn)
        .await
        .expect("the abusive connection is closed")
        .unwrap();
    // The server sends GOAWAY (ENHANCE_YOUR_CALM) and closes; depending on timing the client
    // sees the GOAWAY or only the closed socket.
    let error = ended.expect_err("closed by the server, not by the client");
    assert!(
        error.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) || error.is_io(),
        "{error:?}"
    );
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn streams_that_never_send_their_body_are_bounded_and_time_out() {
    let server = server(
        Server::builder()
            .max_concurrent_streams(10)
            .timeout(Duration::from_millis(300)),
    )
    .await;
    let client = h2_client(&server, 65_535).await;
    let mut stuck = Vec::new();
    let started = Instant::now();
    for _ in 0..10 {
        let mut ready = client.clone().ready().await.unwrap();
        let (response, send) = ready
            .send_request(grpc_post(&server, SAY_HELLO), false)
            .unwrap();
        stuck.push((response, send)); // the body never comes
    }
    for (response, _send) in stuck {
        let response = tokio::time::timeout(Duration::from_secs(5), response)
            .await
            .expect("the deadline answers")
            .unwrap();
        assert_eq!(response.headers()["grpc-status"], "4", "DEADLINE_EXCEEDED");
    }
    assert!(started.elapsed() < Duration::from_secs(3));
    // The server allows ten streams at a time: a client cannot hold more than that.
    assert_eq!(client.current_max_send_streams(), 10);
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_half_closes_its_connection_is_let_go() {
    let server = server(Server::builder()).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    tcp.shutdown().await.unwrap();
    // The server sees end of file and closes its side too.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the server closes a half-closed connection");
    still_serves(&server).await;
    server.stop().await;
}
