//! Connection limits: stream and header-list caps, connection count, handshake timeout,
//! keepalive, maximum connection age and the drain grace.

use std::time::{Duration, Instant};

use bytes::Bytes;
use fastgrpc::Server;
use support::pb::helloworld::greeter_server::GreeterServer;
use support::raw_frames::{self, PREFACE};
use support::tonic_pb::helloworld as client_pb;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{EchoGreeter, TestServer, channel, frame, grpc_post, h2_client, raw_request, until};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn greeter() -> GreeterServer<EchoGreeter> {
    GreeterServer::new(EchoGreeter)
}

async fn still_serves(server: &TestServer) {
    let mut client = GreeterClient::new(channel(server).await);
    let reply = client
        .say_hello(client_pb::HelloRequest { name: "ok".into() })
        .await
        .unwrap();
    assert_eq!(reply.into_inner().message, "ok");
}

/// Reads until the server closes the connection; how long that took.
async fn time_until_closed(mut tcp: TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the server closed the connection within 10 s"
    );
    started.elapsed()
}

#[tokio::test]
async fn streams_and_header_lists_are_capped_by_default() {
    let server = TestServer::start(Server::builder().add_service(greeter())).await;
    let mut client = h2_client(&server, 65_535).await;
    // Settings arrive with the first exchange.
    let request = grpc_post(&server, "/helloworld.Greeter/SayHello");
    let (response, _) = client.send_request(request, true).unwrap();
    response.await.unwrap();
    assert_eq!(client.current_max_send_streams(), 1024);

    // A 32 KiB header list is refused; the server goes on.
    let huge = "x".repeat(32 * 1024);
    let mut client = h2_client(&server, 65_535).await;
    let request = http::Request::post(format!(
        "http://{}/helloworld.Greeter/SayHello",
        server.addr
    ))
    .header("content-type", "application/grpc")
    .header("x-huge", huge.as_str())
    .body(())
    .unwrap();
    let outcome = match client.send_request(request, true) {
        Ok((response, _)) => tokio::time::timeout(Duration::from_secs(5), response)
            .await
            .expect("an answer, not a hang")
            .map(|r| r.status()),
        Err(error) => Err(error),
    };
    // h2 answers 431 Request Header Fields Too Large.
    assert!(
        matches!(
            outcome,
            Ok(http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
        ),
        "a 32 KiB header list is refused: {outcome:?}"
    );
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let server =
        TestServer::start(Server::builder().max_connections(1).add_service(greeter())).await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let (first_client, first_conn) = h2::client::handshake(first).await.unwrap();
    let first_conn = tokio::spawn(first_conn);

    // A second connection is not served while the first is open.
    let addr = server.addr;
    let second = tokio::spawn(async move {
        raw_request(
            addr,
            http::Method::POST,
            "/helloworld.Greeter/SayHello",
            &[("content-type", "application/grpc")],
            frame(&[]),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "the second connection waits for a slot"
    );

    drop(first_client);
    first_conn.abort();
    let answered = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("served once the first closes")
        .unwrap();
    assert_eq!(answered.grpc_status(), Some("0"));
    server.stop().await;
}

#[tokio::test]
async fn a_connection_that_never_handshakes_is_closed() {
    let server = TestServer::start(
        Server::builder()
            .handshake_timeout(Duration::from_millis(200))
            .add_service(greeter()),
    )
    .await;
    let silent = TcpStream::connect(server.addr).await.unwrap();
    let waited = time_until_closed(silent).await;
    assert!(waited < Duration::from_secs(3), "closed after {waited:?}");
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn a_peer_that_stops_answering_pings_is_closed() {
    let server = TestServer::start(
        Server::builder()
            .http2_keepalive(Duration::from_millis(100), Duration::from_millis(100))
            .add_service(greeter()),
    )
    .await;
    // A peer that completes the handshake, then never reads or answers again.
    let mut mute = TcpStream::connect(server.addr).await.unwrap();
    mute.write_all(PREFACE).await.unwrap();
    let waited = time_until_closed(mute).await;
    // Not at once (a preface the server refused would close it so): after a ping interval
    // and its timeout.
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(3),
        "closed after {waited:?}"
    );

    // A live client answers the pings and keeps its connection.
    let channel = channel(&server).await;
    let mut client = GreeterClient::new(channel);
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let reply = client
            .say_hello(client_pb::HelloRequest {
                name: "alive".into(),
            })
            .await
            .unwrap();
        assert_eq!(reply.into_inner().message, "alive");
    }
    server.stop().await;
}

#[tokio::test]
async fn old_connections_get_goaway_and_in_flight_calls_end_within_the_grace() {
    let server = TestServer::start(
        Server::builder()
            .max_connection_age(Duration::from_millis(200))
            .drain_grace(Duration::from_millis(200))
            .add_service(greeter()),
    )
    .await;
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let conn = tokio::spawn(conn);
    // A call that never finishes sending keeps the connection busy past its age.
    let mut client = client.ready().await.unwrap();
    let request = grpc_post(&server, "/helloworld.Greeter/SayHello");
    let (_response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(Bytes::from_static(&[0, 0]), false).unwrap();

    let started = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(5), conn).await;
    assert!(
        ended.is_ok(),
        "the connection is closed after its age and grace"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    still_serves(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_calls_that_outlast_the_drain_grace() {
    let builder = Server::builder()
        .drain_grace(Duration::from_millis(200))
        .add_service(greeter());
    let stats = builder.stats();
    let mut server = TestServer::start(builder).await;
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    // A call whose body never ends would hold a graceful shutdown forever.
    let mut client = client.ready().await.unwrap();
    let request = grpc_post(&server, "/helloworld.Greeter/SayHello");
    let (_response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(Bytes::from_static(&[0, 0]), false).unwrap();
    until("the call waits for its body", || stats.call_tasks() == 1).await;

    let started = Instant::now();
    server.begin_stop();
    server.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "stopped within the grace"
    );
}

#[tokio::test]
async fn idle_connections_get_goaway_but_not_while_a_call_is_in_progress() {
    let idle = Duration::from_millis(300);
    let server = TestServer::start(
        Server::builder()
            .max_connection_idle(idle)
            .add_service(greeter()),
    )
    .await;
    let connect = || async {
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let (client, conn) = h2::client::handshake(tcp).await.unwrap();
        (client.ready().await.unwrap(), tokio::spawn(conn))
    };

    // A connection that makes one call, then goes quiet, is closed once `idle` has passed.
    let (mut quiet, quiet_conn) = connect().await;
    let request = grpc_post(&server, "/helloworld.Greeter/SayHello");
    let (response, mut send) = quiet.send_request(request, false).unwrap();
    send.send_data(frame(&[]), true).unwrap();
    assert_eq!(response.await.unwrap().status(), http::StatusCode::OK);
    let quiet_since = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), quiet_conn)
        .await
        .expect("an idle connection is closed")
        .unwrap()
        .unwrap();
    let waited = quiet_since.elapsed();
    assert!(
        waited >= idle - Duration::from_millis(50),
        "closed after {waited:?}"
    );

    // A call in progress (its body unfinished) keeps its connection open past `idle`...
    let (mut busy, busy_conn) = connect().await;
    let request = grpc_post(&server, "/helloworld.Greeter/SayHello");
    let (response, mut send) = busy.send_request(request, false).unwrap();
    send.send_data(Bytes::from_static(&[0, 0]), false).unwrap();
    tokio::time::sleep(idle * 3).await;
    assert!(!busy_conn.is_finished(), "closed with a call in progress");
    // ...and once it ends, the connection is idle and closed in turn.
    send.send_data(Bytes::from_static(&[0, 0, 0]), true)
        .unwrap();
    assert_eq!(response.await.unwrap().status(), http::StatusCode::OK);
    tokio::time::timeout(Duration::from_secs(5), busy_conn)
        .await
        .expect("the connection is closed once idle")
        .unwrap()
        .unwrap();
    still_serves(&server).await;
    server.stop().await;
}

/// A peer that completes the handshake and opens a call that waits for a request body that
/// never comes, then never reads or answers again: a call in flight on a dead connection.
async fn mute_peer_with_a_call_in_flight(server: &TestServer) -> TcpStream {
    let mut mute = TcpStream::connect(server.addr).await.unwrap();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(raw_frames::grpc_headers(
        1,
        &server.addr.to_string(),
        "/helloworld.Greeter/SayHello",
    ));
    mute.write_all(&bytes).await.unwrap();
    mute
}

#[tokio::test]
async fn keepalive_closes_a_dead_peer_while_the_server_shuts_down() {
    let builder = Server::builder()
        .http2_keepalive(Duration::from_millis(100), Duration::from_millis(100))
        .add_service(greeter());
    let stats = builder.stats();
    let mut server = TestServer::start(builder).await;
    let _mute = mute_peer_with_a_call_in_flight(&server).await;
    until("the call waits for its body", || stats.call_tasks() == 1).await;
    // Without a drain grace, shutdown waits for the call in flight: only keepalive can tell
    // that its peer is gone.
    server.begin_stop();
    let stopped = tokio::time::timeout(Duration::from_secs(3), server.stop()).await;
    assert!(stopped.is_ok(), "the server was still draining after 3 s");
}

#[tokio::test]
async fn keepalive_closes_a_dead_peer_draining_for_its_age() {
    let server = TestServer::start(
        Server::builder()
            .http2_keepalive(Duration::from_millis(100), Duration::from_millis(100))
            .max_connection_age(Duration::from_millis(50))
            .add_service(greeter()),
    )
    .await;
    let mute = mute_peer_with_a_call_in_flight(&server).await;
    let waited = time_until_closed(mute).await;
    assert!(waited < Duration::from_secs(3), "closed after {waited:?}");
    server.stop().await;
}

/// Reads what the server sends until it closes the connection (bounded): its frames.
async fn frames_until_closed(tcp: &mut TcpStream) -> Vec<raw_frames::Frame> {
    let mut received = Vec::new();
    let read_all = tcp.read_to_end(&mut received);
    let _ = tokio::time::timeout(Duration::from_secs(5), read_all)
        .await
        .expect("the server closed the connection");
    raw_frames::parse(&received)
}

#[tokio::test]
async fn a_default_shutdown_is_not_held_by_an_idle_peer_that_never_answers() {
    // No drain grace, no keepalive: the defaults.
    let mut server = TestServer::start(Server::builder().add_service(greeter())).await;
    // A peer that completes the handshake (as HAProxy's TCP check does), then never reads,
    // answers or closes.
    let mut mute = TcpStream::connect(server.addr).await.unwrap();
    mute.write_all(PREFACE).await.unwrap();
    still_serves(&server).await;

    let started = Instant::now();
    server.begin_stop();
    server.stop_within(Duration::from_secs(10)).await;
    let took = started.elapsed();
    // It waited for the shutdown PING's acknowledgement (5 s, as grpc-go), not for ever.
    assert!(
        took >= Duration::from_millis(4_500) && took < Duration::from_millis(8_500),
        "stopped after {took:?}"
    );
    // The peer got the announcing GOAWAY, then the final one, naming no stream.
    let frames = frames_until_closed(&mut mute).await;
    let goaways = raw_frames::goaway_last_stream_ids(&frames);
    assert_eq!(goaways, [(1 << 31) - 1, 0], "{frames:?}");
    assert!(
        frames
            .iter()
            .any(|frame| frame.kind == 0x6 && frame.flags == 0),
        "a shutdown PING was sent: {frames:?}"
    );
}

#[tokio::test]
async fn a_default_shutdown_closes_answering_idle_peers_at_once() {
    let mut server = TestServer::start(Server::builder().add_service(greeter())).await;
    let mut client = GreeterClient::new(channel(&server).await);
    client
        .say_hello(client_pb::HelloRequest { name: "a".into() })
        .await
        .unwrap();
    let started = Instant::now();
    server.begin_stop();
    server.stop_within(Duration::from_secs(2)).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_default_shutdown_cuts_off_a_mute_peer_with_a_call_in_flight() {
    // Without keepalive the drain still pings, from 5 s after the GOAWAY: a call in flight on
    // a peer that answers nothing holds the shutdown only until that ping times out (2 s).
    let mut server = TestServer::start(Server::builder().add_service(greeter())).await;
    let _mute = mute_peer_with_a_call_in_flight(&server).await;
    still_serves(&server).await;
    let started = Instant::now();
    server.begin_stop();
    server.stop_within(Duration::from_secs(12)).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(6) && took < Duration::from_secs(9),
        "stopped after {took:?}"
    );
}

/// Calls answered before their request bodies arrived (an unknown method is answered at its
/// headers), 64 at a time, thousands in all on one connection: every late DATA frame is for a
/// stream the server closed, and none may cost the connection. The client here sends each
/// round's DATA once it has read the answers, as a client over a real network does when its
/// DATA is already on the way. h2 0.4.20 remembers at most 50 streams it closed, for a
/// second; DATA on one it forgot makes it reset that stream, and it counts those resets
/// toward a limit of 1,024 for the connection's whole life, then sends GOAWAY
/// ENHANCE_YOUR_CALM ("too_many_internal_resets"), failing every call still open on it: on
/// the h2 engine this test fails after some 1,100 streams (and after some 2,100 with h2 told
/// to remember 1,024 streams for 10 s), which is one reason that engine was retired.
/// fastgrpc's engine keeps each such stream half-closed (local) until its DATA ends it, and
/// counts nothing.
#[tokio::test]
async fn late_data_for_calls_answered_early_never_costs_the_connection() {
    use support::hello_frame;
    use support::scripted::{self, Client, DATA, GOAWAY, HEADERS};
    const ROUNDS: u32 = 40;
    const AT_ONCE: u32 = 64;
    let server = TestServer::start(Server::builder().add_service(greeter())).await;
    let authority = server.addr.to_string();
    let mut client = Client::connect(&server).await;
    client
        .send(&raw_frames::frame(
            scripted::SETTINGS,
            scripted::ACK,
            0,
            &[],
        ))
        .await;
    let mut next = 1;
    for _ in 0..ROUNDS {
        let first = next;
        let mut opening = Vec::new();
        for _ in 0..AT_ONCE {
            opening.extend(raw_frames::grpc_headers(
                next,
                &authority,
                "/no.Such/Method",
            ));
            next += 2;
        }
        client.send(&opening).await;
        let last = next - 2;
        let answered = client
            .read_new(|frame| {
                (frame.kind == HEADERS && frame.stream == last) || frame.kind == GOAWAY
            })
            .await;
        assert!(
            answered.iter().all(|frame| frame.kind != GOAWAY),
            "{answered:?}"
        );
        let mut late = Vec::new();
        for stream in (first..next).step_by(2) {
            late.extend(raw_frames::last_data(stream, &hello_frame("late")));
        }
        client.send(&late).await;
    }
    client.send(&scripted::call(&server, next)).await;
    let frames = client
        .read_new(|frame| (frame.kind == DATA && frame.stream == next) || frame.kind == GOAWAY)
        .await;
    assert!(
        frames
            .iter()
            .any(|frame| frame.kind == DATA && frame.stream == next),
        "the connection still serves calls: {:?}",
        frames.iter().find(|frame| frame.kind == GOAWAY)
    );
    drop(client);
    server.stop().await;
}

/// A peer that goes on sending after the final GOAWAY (as HAProxy does, opening streams it
/// will retry elsewhere) still reads the whole close: the socket is
/// half-closed, then what comes is read and dropped until the peer closes too
/// (`transport/linger.rs`). Closing with that data unread would make the kernel send RST, and
/// the peer's kernel drop what it had not read yet (the final GOAWAY here, a reply's trailers
/// behind a proxy).
#[tokio::test]
async fn a_peer_still_sending_after_the_final_goaway_gets_a_clean_close_not_a_reset() {
    let mut server = TestServer::start(Server::builder().add_service(greeter())).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    tcp.write_all(PREFACE).await.unwrap();
    still_serves(&server).await;
    server.begin_stop();

    // The shutdown PING: answered at once, so the final GOAWAY follows it.
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    let ping = loop {
        let frames = raw_frames::parse(&received);
        if let Some(ping) = frames.iter().find(|f| f.kind == 0x6 && f.flags == 0) {
            break ping.payload.clone();
        }
        let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
            .await
            .expect("the shutdown PING within 10 s")
            .unwrap();
        assert!(n > 0, "closed before the shutdown PING");
        received.extend_from_slice(&buf[..n]);
    };
    let (mut reader, mut writer) = tcp.into_split();
    writer
        .write_all(&raw_frames::frame(0x6, 0x1, 0, &ping))
        .await
        .unwrap();
    // Then PINGs for 300 ms, unread by us, arriving after the server decided to close.
    let keep_sending = tokio::spawn(async move {
        let until = Instant::now() + Duration::from_millis(300);
        let ping = raw_frames::frame(0x6, 0, 0, &[7; 8]);
        while Instant::now() < until {
            if writer.write_all(&ping).await.is_err() {
                return Err("the server reset the connection while the peer was sending");
            }
            tokio::task::yield_now().await;
        }
        let _ = writer.shutdown().await;
        Ok(())
    });
    let read_all = tokio::time::timeout(Duration::from_secs(10), reader.read_to_end(&mut received))
        .await
        .expect("the server closed within 10 s");
    assert!(
        read_all.is_ok(),
        "the close was a reset, not a FIN: {read_all:?}"
    );
    let sent = keep_sending.await.unwrap();
    assert!(sent.is_ok(), "{sent:?}");
    let goaways = raw_frames::goaway_last_stream_ids(&raw_frames::parse(&received));
    assert_eq!(goaways, [(1 << 31) - 1, 0], "both GOAWAYs arrived");
    server.stop_within(Duration::from_secs(10)).await;
}
