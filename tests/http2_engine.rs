//! fastgrpc's own HTTP/2 engine against a scripted client over a real socket: the known HTTP/2
//! attacks, and the RFC 9113 rules a receiver must enforce. Each test writes frames, reads the
//! frames that come back, and checks that the server still serves a new connection at once.

use std::time::Duration;

use fastgrpc::Server;
use support::hello_frame;
use support::raw_frames::{self, Frame};
use support::scripted::{
    COMPRESSION_ERROR, CONTINUATION, Client, DATA, ENHANCE_YOUR_CALM, FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR, HEADERS, PING, PROTOCOL_ERROR, REFUSED_STREAM, RST_STREAM, SAY_HELLO,
    SETTINGS, WINDOW_UPDATE, call, headers, server, still_serves,
};

#[tokio::test]
async fn a_scripted_call_is_answered_with_headers_data_and_trailers() {
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    client.send(&call(&server, 1)).await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == 1 && frame.flags & 0x1 != 0)
        .await;
    let kinds: Vec<_> = frames
        .iter()
        .filter(|frame| frame.stream == 1)
        .map(|frame| frame.kind)
        .collect();
    assert_eq!(kinds, [HEADERS, DATA, HEADERS], "{frames:?}");
    // Our SETTINGS come first, and the client's are acknowledged.
    assert_eq!(frames[0].kind, SETTINGS);
    assert!(
        frames
            .iter()
            .any(|frame| frame.kind == SETTINGS && frame.flags == 0x1)
    );
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn too_many_pings_get_goaway_enhance_your_calm() {
    // gRFC A8: with no call open, more than two pings in two hours are strikes, the third
    // ends the connection.
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    for i in 0..4u8 {
        client.send(&raw_frames::frame(PING, 0, 0, &[i; 8])).await;
    }
    assert_eq!(
        client.goaway().await,
        (ENHANCE_YOUR_CALM, b"too_many_pings".to_vec())
    );
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn pings_within_the_policy_are_answered() {
    let server =
        server(Server::builder().http2_keepalive_policy(Duration::from_millis(10), true)).await;
    let mut client = Client::connect(&server).await;
    for i in 0..5u8 {
        client.send(&raw_frames::frame(PING, 0, 0, &[i; 8])).await;
        let acked =
            |frame: &Frame| frame.kind == PING && frame.flags == 0x1 && frame.payload == [i; 8];
        let frames = client.read_until(acked).await;
        assert!(frames.iter().any(acked), "ping {i} answered: {frames:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn a_ping_flood_from_a_client_that_never_reads_is_bounded() {
    // CVE-2019-9512. Pings allowed at any rate, and the client never reads the acks: the
    // server stops reading once its unwritten answers reach their bound, instead of queueing
    // acks without end.
    let policy = Server::builder().http2_keepalive_policy(Duration::ZERO, true);
    let ping = raw_frames::frame(PING, 0, 0, &[7; 8]);
    unanswerable_flood(policy, &ping, "pings").await;
}

#[tokio::test]
async fn a_settings_flood_from_a_client_that_never_reads_is_bounded() {
    // CVE-2019-9515: every SETTINGS needs an ACK the client never reads.
    let settings = raw_frames::frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    unanswerable_flood(Server::builder(), &settings, "SETTINGS").await;
}

/// A million copies of `frame`, each of which the server must answer, from a client that
/// never reads: the server must stop reading them once its answers pile up, and serve others.
async fn unanswerable_flood(builder: fastgrpc::Builder, frame: &[u8], what: &str) {
    let server = server(builder).await;
    let mut client = Client::connect(&server).await;
    let flood: Vec<u8> = frame
        .iter()
        .copied()
        .cycle()
        .take(frame.len() * 1_000_000)
        .collect();
    let taken = client
        .send_until_stalled(&flood, Duration::from_millis(500))
        .await;
    assert!(
        taken < flood.len(),
        "the server read 1,000,000 {what} it could not answer"
    );
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn a_continuation_flood_gets_goaway() {
    // HEADERS without END_HEADERS, then CONTINUATION frames without end.
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = raw_frames::frame(HEADERS, 0, 1, &[0x83, 0x86]);
    let filler = vec![0x40; 16_000];
    for _ in 0..10 {
        bytes.extend(raw_frames::frame(CONTINUATION, 0, 1, &filler));
    }
    client
        .send_until_stalled(&bytes, Duration::from_millis(500))
        .await;
    assert_eq!(client.goaway().await.0, ENHANCE_YOUR_CALM);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn a_header_block_interrupted_by_another_frame_is_a_protocol_error() {
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = raw_frames::frame(HEADERS, 0, 1, &[0x83, 0x86]);
    bytes.extend(raw_frames::frame(PING, 0, 0, &[0; 8]));
    client.send(&bytes).await;
    assert_eq!(client.goaway().await.0, PROTOCOL_ERROR);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn an_hpack_bomb_is_refused_with_431_and_the_connection_goes_on() {
    // A 4 KiB value put in the table once, then referenced 1,000 times: 4 MB of headers from a
    // block of 5 KiB.
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    let mut block = vec![0x83, 0x86, 0x40, 6];
    block.extend_from_slice(b"x-bomb");
    block.extend_from_slice(&[0x7f, 0xa1, 0x1e]); // a 4,000-byte raw value (127 + 3,873)
    block.extend(std::iter::repeat_n(b'b', 4000));
    block.extend(std::iter::repeat_n(0xbe, 1000));
    client
        .send(&raw_frames::frame(HEADERS, 0x5, 1, &block))
        .await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == 1)
        .await;
    let answer = frames
        .iter()
        .find(|frame| frame.kind == HEADERS)
        .expect("an answer");
    // A headers-only answer whose :status is a literal (431), not the indexed 200.
    assert_eq!(
        (answer.flags & 0x1, answer.payload[0]),
        (0x1, 0x08),
        "{answer:?}"
    );
    // The table is still in step: the next request decodes.
    client.send(&call(&server, 3)).await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == 3)
        .await;
    assert!(
        frames
            .iter()
            .any(|frame| frame.kind == HEADERS && frame.stream == 3)
    );
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn zero_length_header_names_make_a_request_malformed() {
    // CVE-2019-9516: empty names and values, by the hundred (by the thousand they pass the
    // header list limit first, and get 431).
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    let mut block = vec![0x83, 0x86, 0x84];
    for _ in 0..100 {
        block.extend_from_slice(&[0x00, 0x00, 0x00]);
    }
    client
        .send(&raw_frames::frame(HEADERS, 0x5, 1, &block))
        .await;
    assert_eq!(client.reset(1).await, PROTOCOL_ERROR);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn an_empty_frame_flood_costs_no_memory_and_others_are_served() {
    // CVE-2019-9518: empty DATA frames without END_STREAM, by the hundred thousand.
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    client.send(&headers(&server, 1)).await;
    let empty = raw_frames::frame(DATA, 0, 1, &[]);
    let flood: Vec<u8> = empty
        .iter()
        .copied()
        .cycle()
        .take(empty.len() * 200_000)
        .collect();
    let flooding = tokio::spawn(async move {
        client.send(&flood).await;
        client
    });
    still_serves(&server).await;
    let mut client = flooding.await.unwrap();
    // The call still completes once its body ends.
    client
        .send(&raw_frames::last_data(1, &hello_frame("hi")))
        .await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.flags & 0x1 != 0)
        .await;
    assert!(
        frames
            .iter()
            .any(|frame| frame.kind == DATA && frame.stream == 1),
        "{frames:?}"
    );
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn window_overflows_are_flow_control_errors() {
    let server = server(Server::builder()).await;
    // The connection window past 2^31-1: the connection ends.
    let mut client = Client::connect(&server).await;
    client
        .send(&raw_frames::frame(
            WINDOW_UPDATE,
            0,
            0,
            &0x7fff_ffffu32.to_be_bytes(),
        ))
        .await;
    assert_eq!(client.goaway().await.0, FLOW_CONTROL_ERROR);
    // A stream's: only that stream ends.
    let mut client = Client::connect(&server).await;
    let mut bytes = headers(&server, 1);
    bytes.extend(raw_frames::frame(
        WINDOW_UPDATE,
        0,
        1,
        &0x7fff_ffffu32.to_be_bytes(),
    ));
    client.send(&bytes).await;
    assert_eq!(client.reset(1).await, FLOW_CONTROL_ERROR);
    client.send(&call(&server, 3)).await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == 3)
        .await;
    assert!(
        frames.iter().any(|frame| frame.stream == 3),
        "the connection goes on"
    );
    drop(client);
    server.stop().await;
}

/// Streams the client makes us reset (here: a stream window pushed past 2^31-1) waste
/// streams as surely as its own resets (CVE-2025-8671, "MadeYouReset"): they draw on the
/// rapid-reset budget, and a client that provokes them in a loop gets GOAWAY
/// ENHANCE_YOUR_CALM while a new connection is served.
#[tokio::test]
async fn provoked_resets_in_a_loop_get_goaway_enhance_your_calm() {
    let server = server(Server::builder().max_concurrent_streams(100)).await;
    let mut client = Client::connect(&server).await;
    let overflow = 0x7fff_ffffu32.to_be_bytes();
    let mut stream = 1;
    // Five times the budget (100 streams, refilled at 100 a second), in well under a second.
    for _ in 0..5 {
        let mut bytes = Vec::new();
        for _ in 0..100 {
            bytes.extend(headers(&server, stream));
            bytes.extend(raw_frames::frame(WINDOW_UPDATE, 0, stream, &overflow));
            stream += 2;
        }
        if client
            .send_until_stalled(&bytes, Duration::from_millis(500))
            .await
            < bytes.len()
        {
            break;
        }
    }
    assert_eq!(client.goaway().await.0, ENHANCE_YOUR_CALM);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn data_beyond_the_window_is_a_flow_control_error() {
    let server = server(
        Server::builder()
            .initial_stream_window_size(65_535)
            .initial_connection_window_size(65_535),
    )
    .await;
    let mut client = Client::connect(&server).await;
    client.send(&headers(&server, 1)).await;
    let chunk = vec![0u8; 16_384];
    let mut bytes = Vec::new();
    for _ in 0..5 {
        bytes.extend(raw_frames::frame(DATA, 0, 1, &chunk));
    }
    client.send(&bytes).await;
    assert_eq!(client.goaway().await.0, FLOW_CONTROL_ERROR);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn streams_past_the_concurrency_limit_are_refused() {
    let server = server(Server::builder().max_concurrent_streams(2)).await;
    let mut client = Client::connect(&server).await;
    // Three requests whose bodies never end: the third is one too many.
    let mut bytes = Vec::new();
    for stream in [1, 3, 5] {
        bytes.extend(headers(&server, stream));
    }
    client.send(&bytes).await;
    assert_eq!(client.reset(5).await, REFUSED_STREAM);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn malformed_frames_and_streams_get_the_rfc_s_errors() {
    let server = server(Server::builder()).await;
    // (what the client sends after its preface and SETTINGS, the GOAWAY code expected)
    let settings = raw_frames::frame(SETTINGS, 0, 0, &[]);
    let cases: Vec<(Vec<u8>, u32)> = vec![
        (raw_frames::frame(DATA, 0, 0, b"x"), PROTOCOL_ERROR),
        (raw_frames::frame(DATA, 0, 9, b"x"), PROTOCOL_ERROR),
        (raw_frames::frame(HEADERS, 0x5, 2, &[0x83]), PROTOCOL_ERROR),
        (raw_frames::frame(PING, 0, 0, &[0; 7]), FRAME_SIZE_ERROR),
        (
            raw_frames::frame(SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
            FLOW_CONTROL_ERROR,
        ),
        (
            raw_frames::frame(SETTINGS, 0, 0, &[0, 5, 0, 0, 0, 1]),
            PROTOCOL_ERROR,
        ),
        (
            raw_frames::frame(RST_STREAM, 0, 9, &[0, 0, 0, 8]),
            PROTOCOL_ERROR,
        ),
        (
            raw_frames::frame(WINDOW_UPDATE, 0, 0, &[0; 4]),
            PROTOCOL_ERROR,
        ),
        (
            raw_frames::frame(0x5, 0x4, 1, &[0, 0, 0, 2, 0x82]),
            PROTOCOL_ERROR,
        ),
        (
            raw_frames::frame(DATA, 0, 1, &vec![0; 20_000]),
            FRAME_SIZE_ERROR,
        ),
        (
            raw_frames::frame(HEADERS, 0x5, 1, &[0x80]),
            COMPRESSION_ERROR,
        ),
    ];
    for (frame, code) in cases {
        let mut client = Client::connect(&server).await;
        let mut bytes = settings.clone();
        bytes.extend(frame.clone());
        client.send(&bytes).await;
        assert_eq!(
            client.goaway().await.0,
            code,
            "{:02x?}",
            &frame[..frame.len().min(16)]
        );
    }
    // The first frame must be SETTINGS.
    let mut client = Client::connect_bare(&server).await;
    let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    bytes.extend(raw_frames::frame(PING, 0, 0, &[0; 8]));
    client.send(&bytes).await;
    assert_eq!(client.goaway().await.0, PROTOCOL_ERROR);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn malformed_requests_are_reset_with_protocol_error() {
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    let literal = |name: &[u8], value: &[u8]| raw_frames::header_block(&[(name, value)]);
    let bad_fields: [Vec<u8>; 5] = [
        literal(b"Content-Type", b"application/grpc"),
        literal(b"connection", b"close"),
        literal(b"te", b"gzip"),
        [literal(b"x-a", b"1"), literal(b":path", b"/late")].concat(),
        literal(b"content-length", b"5"),
    ];
    let mut stream = 1;
    for fields in bad_fields {
        let mut block = vec![0x83, 0x86];
        block.extend(literal(b":path", SAY_HELLO.as_bytes()));
        block.extend(fields);
        // END_STREAM with a content-length of 5 and no DATA disagrees too.
        client
            .send(&raw_frames::frame(HEADERS, 0x5, stream, &block))
            .await;
        assert_eq!(
            client.reset(stream).await,
            PROTOCOL_ERROR,
            "stream {stream}"
        );
        stream += 2;
    }
    // The connection goes on.
    client.send(&call(&server, stream)).await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == stream)
        .await;
    assert!(frames.iter().any(|frame| frame.stream == stream));
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_never_reads_big_replies_holds_a_bounded_buffer() {
    // CVE-2019-9517: requests whose replies the client never reads. The server sends what
    // the client's window allows (64 KiB per stream by default, 64 KiB per connection),
    // keeps the rest with the call, and goes on serving others.
    let server = server(Server::builder()).await;
    let mut client = Client::connect(&server).await;
    // HelloRequest { name: 16,000 bytes }: one DATA frame, and a reply as large.
    let body = hello_frame(&"n".repeat(16_000));
    let mut bytes = Vec::new();
    for stream in (1..200).step_by(2) {
        bytes.extend(headers(&server, stream));
        bytes.extend(raw_frames::last_data(stream, &body));
    }
    client
        .send_until_stalled(&bytes, Duration::from_millis(500))
        .await;
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}
