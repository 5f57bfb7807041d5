//! fastgrpc's own HTTP/2 engine against RFC 9113, section by section: a scripted client writes
//! raw frames over a real loopback socket and checks the frames that come back. Each test names
//! the section it checks. The attacks, and the receiver rules `http2_engine.rs` already checks,
//! are not repeated here.
//!
//! Where the test needs to know that the server sent nothing more, it sends a PING and reads
//! until its ACK: the server handles frames in order, so what it had to say about the frames
//! before the PING comes before the ACK. The servers here take pings at any rate for that.

use std::time::Duration;

use fastgrpc::Server;
use support::TestServer;
use support::hello_frame;
use support::raw_frames::{self, Frame, header_block};
use support::scripted::{
    ACK, CONTINUATION, Client, DATA, END_HEADERS, END_STREAM, FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR,
    GOAWAY, HEADERS, NO_ERROR, PADDED, PING, PRIORITY, PRIORITY_FLAG, PROTOCOL_ERROR,
    REFUSED_STREAM, RST_STREAM, SAY_HELLO, SETTINGS, SETTINGS_TIMEOUT, STREAM_CLOSED,
    WINDOW_UPDATE, call, headers, server, still_serves,
};

/// Setting identifiers (§6.5.2).
const HEADER_TABLE_SIZE: u16 = 0x1;
const ENABLE_PUSH: u16 = 0x2;
const MAX_CONCURRENT_STREAMS: u16 = 0x3;
const INITIAL_WINDOW_SIZE: u16 = 0x4;
const MAX_FRAME_SIZE: u16 = 0x5;

/// The largest flow-control window (§6.9.1).
const MAX_WINDOW: u32 = (1 << 31) - 1;

/// A server builder whose ping policy lets the tests' PINGs through at any rate.
fn builder() -> fastgrpc::Builder {
    Server::builder().http2_keepalive_policy(Duration::ZERO, true)
}

/// A SETTINGS frame with `entries`.
fn settings(entries: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, value) in entries {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    raw_frames::frame(SETTINGS, 0, 0, &payload)
}

fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    raw_frames::frame(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

/// PRIORITY on `stream`: depending on `depends_on`, weight 16.
fn priority(stream: u32, depends_on: u32) -> Vec<u8> {
    let mut payload = depends_on.to_be_bytes().to_vec();
    payload.push(15);
    raw_frames::frame(PRIORITY, 0, stream, &payload)
}

fn goaway(last_stream: u32, code: u32) -> Vec<u8> {
    let mut payload = last_stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&code.to_be_bytes());
    raw_frames::frame(GOAWAY, 0, 0, &payload)
}

/// The value of setting `id` in the server's first SETTINGS frame among `frames`.
fn server_setting(frames: &[Frame], id: u16) -> Option<u32> {
    let settings = frames
        .iter()
        .find(|frame| frame.kind == SETTINGS && frame.flags & ACK == 0)
        .unwrap_or_else(|| panic!("no SETTINGS in {frames:?}"));
    settings
        .payload
        .chunks_exact(6)
        .filter(|entry| u16::from_be_bytes([entry[0], entry[1]]) == id)
        .map(|entry| u32::from_be_bytes(entry[2..6].try_into().unwrap()))
        .next_back()
}

/// Header fields: names and values.
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The fields of a gRPC call to `SayHello` on `server`, in the order a client sends them.
fn request_fields(server: &TestServer) -> Fields {
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", SAY_HELLO),
        (":authority", &server.addr.to_string()),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .map(|(name, value)| (name.as_bytes().to_vec(), value.as_bytes().to_vec()))
    .collect()
}

/// HEADERS with END_HEADERS (and `flags`) on `stream`, carrying `fields` as literals.
fn headers_of(stream: u32, flags: u8, fields: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let fields: Vec<(&[u8], &[u8])> = fields
        .iter()
        .map(|(name, value)| (&name[..], &value[..]))
        .collect();
    raw_frames::frame(HEADERS, END_HEADERS | flags, stream, &header_block(&fields))
}

/// `body` as DATA frames of at most `max_frame` bytes on `stream`, the last with END_STREAM.
fn data_frames(stream: u32, body: &[u8], max_frame: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    let chunks = body.len().div_ceil(max_frame);
    for (i, chunk) in body.chunks(max_frame).enumerate() {
        let flags = if i + 1 == chunks { END_STREAM } else { 0 };
        bytes.extend(raw_frames::frame(DATA, flags, stream, chunk));
    }
    bytes
}

/// The payload of the DATA frames on `stream` among `frames`, joined.
fn data_on(frames: &[Frame], stream: u32) -> Vec<u8> {
    frames
        .iter()
        .filter(|frame| frame.kind == DATA && frame.stream == stream)
        .flat_map(|frame| frame.payload.iter().copied())
        .collect()
}

/// The error code of a RST_STREAM or GOAWAY frame.
fn error_code(frame: &Frame) -> u32 {
    let at = if frame.kind == GOAWAY { 4 } else { 0 };
    u32::from_be_bytes(frame.payload[at..at + 4].try_into().unwrap())
}

/// Whether `frame` ends `stream`: HEADERS or DATA with END_STREAM, or RST_STREAM.
fn ends(frame: &Frame, stream: u32) -> bool {
    frame.stream == stream
        && (frame.kind == RST_STREAM
            || (matches!(frame.kind, HEADERS | DATA) && frame.flags & END_STREAM != 0))
}

/// Reads until the response on `stream` ends (or the connection does); the response's frames,
/// which must be a whole one: HEADERS, DATA, and trailers that end it (the server's
/// WINDOW_UPDATEs on the stream are left out).
async fn answered(client: &mut Client, stream: u32) -> Vec<Frame> {
    let frames = client
        .read_until(|frame| ends(frame, stream) || frame.kind == GOAWAY)
        .await;
    let on_stream: Vec<Frame> = frames
        .iter()
        .filter(|frame| frame.stream == stream && frame.kind != WINDOW_UPDATE)
        .cloned()
        .collect();
    let kinds: Vec<u8> = on_stream.iter().map(|frame| frame.kind).collect();
    assert!(
        kinds.len() >= 3
            && kinds[0] == HEADERS
            && kinds[1..kinds.len() - 1].iter().all(|&kind| kind == DATA)
            && kinds[kinds.len() - 1] == HEADERS
            && on_stream[on_stream.len() - 1].flags & END_STREAM != 0,
        "stream {stream} answered with HEADERS, DATA and trailers: {:?}",
        frames
            .iter()
            .map(|f| (f.kind, f.flags, f.stream, f.payload.len()))
            .collect::<Vec<_>>()
    );
    on_stream
}

/// Reads until the server ends `stream` with RST_STREAM or the connection with GOAWAY; that
/// frame's type and error code.
async fn stream_or_connection_error(client: &mut Client, stream: u32) -> (u8, u32) {
    let is_error = |frame: &Frame| {
        frame.kind == GOAWAY || (frame.kind == RST_STREAM && frame.stream == stream)
    };
    let frames = client.read_until(is_error).await;
    let error = frames
        .iter()
        .find(|frame| is_error(frame))
        .unwrap_or_else(|| panic!("no RST_STREAM on {stream} nor GOAWAY in {frames:?}"));
    (error.kind, error_code(error))
}

/// Each frame of `cases` on a new connection, after the frames of `before` (and the answer on
/// `await_stream`, if given), must get GOAWAY with the error code given.
async fn connection_errors(
    server: &TestServer,
    before: &[u8],
    await_stream: Option<u32>,
    cases: &[(&str, Vec<u8>, u32)],
) {
    for (what, frame, code) in cases {
        let mut client = Client::connect(server).await;
        if !before.is_empty() {
            client.send(before).await;
            if let Some(stream) = await_stream {
                answered(&mut client, stream).await;
            }
        }
        client.send(frame).await;
        assert_eq!(client.goaway().await.0, *code, "{what}");
    }
}

/// RFC 9113 §4.1: flags a frame type does not define, and the reserved bit of the stream
/// identifier, are ignored.
#[tokio::test]
async fn unused_flags_and_the_reserved_bit_are_ignored() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    // HEADERS with 0x2, 0x10, 0x40 and 0x80 set; DATA with every flag but PADDED, on stream 1
    // with the reserved bit set.
    let mut bytes = headers(&server, 1);
    bytes[4] |= 0xd2;
    bytes.extend(raw_frames::frame(
        DATA,
        !PADDED,
        0x8000_0001,
        &hello_frame("flags"),
    ));
    client.send(&bytes).await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), hello_frame("flags"));
    // A PING with every flag but ACK is a PING, and is answered.
    client
        .send(&raw_frames::frame(PING, !ACK, 0, b"unusedfl"))
        .await;
    let frames = client
        .read_until(|frame| frame.kind == PING && frame.payload == b"unusedfl")
        .await;
    let ack = frames
        .iter()
        .find(|frame| frame.kind == PING)
        .expect("PING answered");
    assert_eq!(ack.flags, ACK, "{ack:?}");
    drop(client);
    server.stop().await;
}

/// RFC 9113 §4.2: a frame as large as the SETTINGS_MAX_FRAME_SIZE the server advertises is
/// taken; one byte more is a connection error of type FRAME_SIZE_ERROR, whatever its type.
#[tokio::test]
async fn a_frame_above_the_advertised_max_frame_size_is_a_frame_size_error() {
    let server = server(builder().max_frame_size(32_768)).await;
    let mut client = Client::connect(&server).await;
    let frames = client.read_until(|frame| frame.kind == SETTINGS).await;
    assert_eq!(server_setting(&frames, MAX_FRAME_SIZE), Some(32_768));
    let name = "m".repeat(32_768 - 9);
    let body = hello_frame(&name);
    assert_eq!(body.len(), 32_768);
    let mut bytes = headers(&server, 1);
    bytes.extend(raw_frames::last_data(1, &body));
    client.send(&bytes).await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), body);
    // The head of an unknown frame one byte too long is enough: its payload is never read.
    let head = raw_frames::frame(0xfa, 0, 0, &vec![0; 32_769]);
    client.send(&head[..9]).await;
    assert_eq!(client.goaway().await.0, FRAME_SIZE_ERROR);
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §4.2: the server's frames keep to the client's SETTINGS_MAX_FRAME_SIZE, 16,384
/// bytes until the client says otherwise; a reply longer than that comes in several frames.
#[tokio::test]
async fn the_server_s_frames_keep_to_the_client_s_max_frame_size() {
    let server = server(builder()).await;
    let name = "f".repeat(40_000);
    let body = hello_frame(&name);
    for client_max in [None, Some(20_000u32)] {
        let mut client = Client::connect(&server).await;
        let mut bytes = Vec::new();
        if let Some(max) = client_max {
            bytes.extend(settings(&[(MAX_FRAME_SIZE, max)]));
        }
        bytes.extend(headers(&server, 1));
        // The server's own limit is the default 16,384.
        bytes.extend(data_frames(1, &body, 16_384));
        client.send(&bytes).await;
        let frames = answered(&mut client, 1).await;
        assert_eq!(data_on(&frames, 1), body);
        let max = client_max.unwrap_or(16_384) as usize;
        let all = client.read_until(|_| true).await;
        assert!(
            all.iter().all(|frame| frame.payload.len() <= max),
            "frames above {max} bytes: {:?}",
            all.iter()
                .map(|f| (f.kind, f.payload.len()))
                .collect::<Vec<_>>()
        );
        let count = frames.iter().filter(|frame| frame.kind == DATA).count();
        assert!(count >= body.len().div_ceil(max), "{count}");
    }
    server.stop().await;
}

/// RFC 9113 §5.1 (idle): a frame other than HEADERS or PRIORITY on an idle stream is a
/// connection error of type PROTOCOL_ERROR; so is HEADERS on an even stream, which only the
/// server may open, even below the last stream the client opened (§5.1.1).
#[tokio::test]
async fn frames_other_than_headers_or_priority_on_an_idle_stream_are_protocol_errors() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &[],
        None,
        &[(
            "WINDOW_UPDATE on idle 1",
            window_update(1, 1),
            PROTOCOL_ERROR,
        )],
    )
    .await;
    // After a call on stream 3: stream 5 is still idle.
    connection_errors(
        &server,
        &call(&server, 3),
        Some(3),
        &[
            (
                "WINDOW_UPDATE on idle 5",
                window_update(5, 1),
                PROTOCOL_ERROR,
            ),
            (
                "DATA on idle 5",
                raw_frames::last_data(5, &hello_frame("x")),
                PROTOCOL_ERROR,
            ),
            (
                "RST_STREAM on idle 5",
                raw_frames::cancel(5),
                PROTOCOL_ERROR,
            ),
            ("HEADERS on even 2", call(&server, 2), PROTOCOL_ERROR),
            ("HEADERS on even 4", call(&server, 4), PROTOCOL_ERROR),
        ],
    )
    .await;
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §5.1 (idle) and §5.1.1: an even stream is the server's to open, and is idle until
/// it does (fastgrpc never does), whatever the client opened: DATA, WINDOW_UPDATE or RST_STREAM
/// on it is a connection error of type PROTOCOL_ERROR.
#[tokio::test]
async fn frames_on_an_idle_server_stream_are_protocol_errors() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &call(&server, 3),
        Some(3),
        &[
            (
                "DATA on even 2",
                raw_frames::last_data(2, &hello_frame("x")),
                PROTOCOL_ERROR,
            ),
            (
                "WINDOW_UPDATE on even 2",
                window_update(2, 1),
                PROTOCOL_ERROR,
            ),
            (
                "RST_STREAM on even 2",
                raw_frames::cancel(2),
                PROTOCOL_ERROR,
            ),
        ],
    )
    .await;
    server.stop().await;
}

/// RFC 9113 §5.1 (idle): PRIORITY may be sent on an idle stream, and does not open it: lower
/// streams may still be opened after it, and the stream itself later.
#[tokio::test]
async fn priority_on_an_idle_stream_is_allowed_and_opens_nothing() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = priority(7, 0);
    bytes.extend(priority(3, 7));
    bytes.extend(call(&server, 1));
    client.send(&bytes).await;
    answered(&mut client, 1).await;
    client.send(&call(&server, 3)).await;
    answered(&mut client, 3).await;
    client.send(&call(&server, 7)).await;
    answered(&mut client, 7).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §5.1.1: a new stream's identifier must be greater than every stream the client
/// opened; HEADERS that would open one below the last is a connection error of type
/// PROTOCOL_ERROR (trailers there, a stream error: see the test). The server then serves new
/// connections as before.
#[tokio::test]
async fn a_new_stream_below_the_last_one_is_a_connection_error() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    client.send(&call(&server, 3)).await;
    answered(&mut client, 3).await;
    // Trailers on such a stream are late, not a new stream: only that stream is refused.
    let trailers = header_block(&[(b"x-late", b"1")]);
    client
        .send(&raw_frames::frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &trailers,
        ))
        .await;
    assert_eq!(client.reset(1).await, STREAM_CLOSED);
    client.send(&call(&server, 1)).await;
    assert_eq!(client.goaway().await.0, PROTOCOL_ERROR);
    drop(client);
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §5.1 (half-closed (remote)): after the client's END_STREAM, DATA or HEADERS on the
/// stream is a stream error of type STREAM_CLOSED; WINDOW_UPDATE and PRIORITY are allowed, and
/// the server goes on sending its reply.
#[tokio::test]
async fn data_or_headers_after_the_client_s_end_stream_are_stream_closed() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    // Our stream windows are 0: the replies wait, their streams half-closed (remote).
    let mut bytes = settings(&[(INITIAL_WINDOW_SIZE, 0)]);
    for stream in [1, 3, 5] {
        bytes.extend(call(&server, stream));
    }
    client.send(&bytes).await;
    let frames = client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == 5)
        .await;
    for stream in [1, 3] {
        assert!(
            frames
                .iter()
                .any(|frame| frame.kind == HEADERS && frame.stream == stream),
            "{frames:?}"
        );
    }
    client
        .send(&raw_frames::last_data(1, &hello_frame("more")))
        .await;
    assert_eq!(client.reset(1).await, STREAM_CLOSED);
    let trailers = header_block(&[(b"x-late", b"1")]);
    client
        .send(&raw_frames::frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            3,
            &trailers,
        ))
        .await;
    assert_eq!(client.reset(3).await, STREAM_CLOSED);
    let mut bytes = priority(5, 0);
    bytes.extend(window_update(5, 1_000));
    client.send(&bytes).await;
    let frames = answered(&mut client, 5).await;
    assert_eq!(data_on(&frames, 5), hello_frame("hi"));
    drop(client);
    server.stop().await;
}

/// RFC 9113 §5.1 (closed): WINDOW_UPDATE, RST_STREAM and PRIORITY may arrive on a stream the
/// server just ended; and after the server has reset a stream, whatever arrives on it is
/// discarded, its header blocks still decoded (the HPACK state kept in step).
#[tokio::test]
async fn late_frames_on_a_closed_stream_are_discarded() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    client.send(&call(&server, 1)).await;
    answered(&mut client, 1).await;
    let mut bytes = window_update(1, 100);
    bytes.extend(priority(1, 0));
    bytes.extend(raw_frames::cancel(1));
    client.send(&bytes).await;
    let frames = client.ping(*b"closed-1").await;
    assert!(
        !frames
            .iter()
            .any(|frame| matches!(frame.kind, RST_STREAM | GOAWAY)),
        "{frames:?}"
    );
    // Stream 3 is reset by the server (a WINDOW_UPDATE of 0); what the client had sent on it
    // meanwhile is dropped, but its trailers enter `x-seen: 1` in the dynamic table.
    let mut bytes = headers(&server, 3);
    bytes.extend(window_update(3, 0));
    client.send(&bytes).await;
    assert_eq!(client.reset(3).await, PROTOCOL_ERROR);
    let mut trailers = vec![0x40, 6];
    trailers.extend_from_slice(b"x-seen");
    trailers.extend_from_slice(&[1, b'1']);
    let mut bytes = raw_frames::frame(DATA, 0, 3, &hello_frame("late"));
    bytes.extend(raw_frames::frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        3,
        &trailers,
    ));
    client.send(&bytes).await;
    let frames = client.ping(*b"closed-2").await;
    assert!(
        !frames
            .iter()
            .any(|frame| matches!(frame.kind, RST_STREAM | GOAWAY)),
        "{frames:?}"
    );
    // A request that refers to that entry (index 62) decodes.
    let mut block = raw_frames::grpc_headers(5, &server.addr.to_string(), SAY_HELLO)[9..].to_vec();
    block.push(0xbe);
    let mut bytes = raw_frames::frame(HEADERS, END_HEADERS, 5, &block);
    bytes.extend(raw_frames::last_data(5, &hello_frame("after")));
    client.send(&bytes).await;
    let frames = answered(&mut client, 5).await;
    assert_eq!(data_on(&frames, 5), hello_frame("after"));
    drop(client);
    server.stop().await;
}

/// RFC 9113 §5.1 (closed): DATA or HEADERS on a stream that both sides ended with END_STREAM
/// is a connection error of type STREAM_CLOSED.
#[tokio::test]
async fn data_or_headers_on_a_stream_both_sides_ended_are_connection_errors() {
    let server = server(builder()).await;
    for (what, late) in [
        ("DATA", raw_frames::last_data(1, &hello_frame("late"))),
        ("HEADERS", call(&server, 1)),
    ] {
        let mut client = Client::connect(&server).await;
        client.send(&call(&server, 1)).await;
        answered(&mut client, 1).await;
        client.send(&late).await;
        let error = stream_or_connection_error(&mut client, 1).await;
        assert_eq!(error, (GOAWAY, STREAM_CLOSED), "{what}");
    }
    server.stop().await;
}

/// RFC 9113 §5.1 (closed): DATA or HEADERS on a stream the client reset is a stream error of
/// type STREAM_CLOSED, even when the server had answered it whole first (h2spec §5.1 #8 and #9
/// when the answer comes between the frames).
#[tokio::test]
async fn data_or_headers_after_the_client_s_reset_are_stream_closed() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    answered_while_open(&mut client, &server, 1, &[]).await;
    client.send(&raw_frames::cancel(1)).await;
    client.send(&call(&server, 1)).await;
    assert_eq!(client.reset(1).await, STREAM_CLOSED);
    answered_while_open(&mut client, &server, 3, &[]).await;
    client.send(&raw_frames::cancel(3)).await;
    client
        .send(&raw_frames::frame(DATA, END_STREAM, 3, b"late"))
        .await;
    assert_eq!(client.reset(3).await, STREAM_CLOSED);
    client.send(&call(&server, 5)).await;
    answered(&mut client, 5).await;
    drop(client);
    server.stop().await;
}

/// Opens `stream` with a request the server refuses at once, a `text/plain` POST (HTTP 415,
/// with a body), with `more` fields, and does not end it. Reads the whole answer; the stream is
/// then half-closed (local), and the server must not have reset it.
async fn answered_while_open(
    client: &mut Client,
    server: &TestServer,
    stream: u32,
    more: &[(&str, &str)],
) {
    let mut fields = request_fields(server);
    fields.retain(|(name, _)| name != b"content-type");
    fields.push((b"content-type".to_vec(), b"text/plain".to_vec()));
    for (name, value) in more {
        fields.push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
    }
    client.send(&headers_of(stream, 0, &fields)).await;
    let frames = client.read_new(|frame| ends(frame, stream)).await;
    let answer: Vec<&Frame> = frames
        .iter()
        .filter(|frame| frame.stream == stream)
        .collect();
    assert!(
        answer.len() >= 2
            && answer[0].kind == HEADERS
            && answer[answer.len() - 1].kind == DATA
            && answer[answer.len() - 1].flags & END_STREAM != 0,
        "a 415 with a body on {stream}: {frames:?}"
    );
    let after = client.ping(*b"answered").await;
    assert!(
        !after
            .iter()
            .any(|frame| frame.stream == stream && frame.kind == RST_STREAM),
        "{after:?}"
    );
}

/// RFC 9113 §5.1 (half-closed (local)) and §8.1: a stream whose answer was sent before the
/// client ended its request stays open on the client's side, and what the client sends on it
/// keeps the rules: trailers without pseudo-headers (§8.1.2.1 #3 in h2spec), its send window
/// at most 2^31-1 (§6.9.1), its content-length (§8.1.2.6). Answering early does not spare it
/// the checks, whatever the timing.
#[tokio::test]
async fn a_stream_answered_before_the_client_ends_it_keeps_the_rules() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;

    answered_while_open(&mut client, &server, 1, &[]).await;
    let trailers = header_block(&[(b":path", b"/trailer")]);
    client
        .send(&raw_frames::frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &trailers,
        ))
        .await;
    assert_eq!(client.reset(1).await, PROTOCOL_ERROR);

    answered_while_open(&mut client, &server, 3, &[]).await;
    let mut bytes = window_update(3, MAX_WINDOW);
    bytes.extend(window_update(3, MAX_WINDOW));
    client.send(&bytes).await;
    assert_eq!(client.reset(3).await, FLOW_CONTROL_ERROR);

    answered_while_open(&mut client, &server, 5, &[("content-length", "1")]).await;
    client
        .send(&raw_frames::frame(DATA, END_STREAM, 5, b"test"))
        .await;
    assert_eq!(client.reset(5).await, PROTOCOL_ERROR);

    // Ended by the client as a request would be: closed, without a reset.
    answered_while_open(&mut client, &server, 7, &[]).await;
    let mut bytes = raw_frames::frame(DATA, 0, 7, b"more");
    bytes.extend(raw_frames::frame(DATA, END_STREAM, 7, b""));
    client.send(&bytes).await;
    let frames = client.ping(*b"ended-7!").await;
    assert!(
        !frames
            .iter()
            .any(|frame| matches!(frame.kind, RST_STREAM | GOAWAY)),
        "{frames:?}"
    );
    client.send(&call(&server, 9)).await;
    answered(&mut client, 9).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §8.1: a client that keeps the request side of an answered stream open without
/// sending (as h2's and tonic's clients do until the server resets it) is told to stop after a
/// grace, so the stream's concurrency slot comes back on both sides.
#[tokio::test]
async fn an_answered_stream_whose_client_stays_silent_is_stopped_after_a_grace() {
    let server = server(builder().max_concurrent_streams(1)).await;
    let mut client = Client::connect(&server).await;
    let opened = std::time::Instant::now();
    answered_while_open(&mut client, &server, 1, &[]).await;
    assert_eq!(client.reset(1).await, NO_ERROR);
    // Not at once: the frames the client had sent meanwhile are still judged (the tests
    // above). The grace is a second.
    assert!(
        opened.elapsed() >= Duration::from_millis(900),
        "{:?}",
        opened.elapsed()
    );
    client.send(&call(&server, 3)).await;
    answered(&mut client, 3).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §5.1.2: a stream answered but not yet ended by the client still counts toward
/// SETTINGS_MAX_CONCURRENT_STREAMS (h2spec §5.1.2 #1 when the answers come between the
/// HEADERS); once the client ends it, it does not.
#[tokio::test]
async fn a_stream_answered_before_the_client_ends_it_counts_toward_the_stream_limit() {
    let server = server(builder().max_concurrent_streams(1)).await;
    let mut client = Client::connect(&server).await;
    answered_while_open(&mut client, &server, 1, &[]).await;
    client.send(&call(&server, 3)).await;
    assert_eq!(client.reset(3).await, REFUSED_STREAM);
    client
        .send(&raw_frames::frame(DATA, END_STREAM, 1, b""))
        .await;
    client.send(&call(&server, 5)).await;
    answered(&mut client, 5).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §8.1: a client that goes on sending a request whose answer it has is asked to
/// stop (RST_STREAM NO_ERROR) once half a stream window has come, and what it sent is given
/// back to the connection window; its own reset of such a stream is not a wasted stream
/// (rapid reset's budget: two a second here).
#[tokio::test]
async fn a_stream_answered_early_is_stopped_not_counted_as_wasted() {
    let window = 64 * 1024;
    let server = server(
        builder()
            .max_concurrent_streams(2)
            .initial_stream_window_size(window)
            .initial_connection_window_size(window),
    )
    .await;
    let mut client = Client::connect(&server).await;
    answered_while_open(&mut client, &server, 1, &[]).await;
    client
        .send(&data_frames(1, &vec![0; window as usize / 2 + 1], 16 * 1024)[..])
        .await;
    assert_eq!(client.reset(1).await, NO_ERROR);
    for stream in (3..=21).step_by(2) {
        answered_while_open(&mut client, &server, stream, &[]).await;
        client.send(&raw_frames::cancel(stream)).await;
    }
    // The connection window came back whole: a body of all of it is read.
    let name = "n".repeat(window as usize - 100);
    // Room for the reply past the 415s' bodies.
    let mut bytes = window_update(0, window);
    bytes.extend(headers(&server, 23));
    bytes.extend(data_frames(23, &hello_frame(&name), 16 * 1024));
    client.send(&bytes).await;
    let frames = answered(&mut client, 23).await;
    assert!(data_on(&frames, 23).len() > name.len(), "{frames:?}");
    drop(client);
    server.stop().await;
}

/// RFC 9113 §3.4: a connection that does not start with the preface (nor with an HTTP/1.1
/// request line) gets GOAWAY PROTOCOL_ERROR and is closed, as soon as its first bytes differ.
#[tokio::test]
async fn a_connection_without_the_preface_gets_goaway_and_is_closed() {
    let server = server(builder()).await;
    for garbage in [
        &b"INVALID CONNECTION PREFACE\r\n\r\n"[..],
        b"PRI * HTTP/1.1",
    ] {
        let mut client = Client::connect_bare(&server).await;
        client.send(garbage).await;
        assert_eq!(client.goaway().await.0, PROTOCOL_ERROR, "{garbage:?}");
        assert!(
            client.closed().await,
            "closed after the GOAWAY: {garbage:?}"
        );
    }
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §5.1.2 and §6.5.2: the server advertises SETTINGS_MAX_CONCURRENT_STREAMS (the
/// configured limit; by default no fewer than the 100 the RFC recommends); open and
/// half-closed streams count toward it, streams that closed do not.
#[tokio::test]
async fn the_advertised_stream_limit_counts_open_and_half_closed_streams() {
    let defaults = server(builder()).await;
    let mut client = Client::connect(&defaults).await;
    let frames = client.read_until(|frame| frame.kind == SETTINGS).await;
    let advertised = server_setting(&frames, MAX_CONCURRENT_STREAMS).expect("a stream limit");
    assert!(advertised >= 100, "{advertised}");
    drop(client);
    defaults.stop().await;

    let server = server(builder().max_concurrent_streams(3)).await;
    let mut client = Client::connect(&server).await;
    let frames = client.read_until(|frame| frame.kind == SETTINGS).await;
    assert_eq!(server_setting(&frames, MAX_CONCURRENT_STREAMS), Some(3));
    // Streams 1 and 3 open; 5 half-closed (remote), its reply held by our window of 0.
    let mut bytes = settings(&[(INITIAL_WINDOW_SIZE, 0)]);
    bytes.extend(headers(&server, 1));
    bytes.extend(headers(&server, 3));
    bytes.extend(call(&server, 5));
    client.send(&bytes).await;
    client
        .read_until(|frame| frame.kind == HEADERS && frame.stream == 5)
        .await;
    client.send(&call(&server, 7)).await;
    assert_eq!(client.reset(7).await, REFUSED_STREAM);
    // Stream 1 closes: there is room for one more.
    client.send(&raw_frames::cancel(1)).await;
    client.send(&call(&server, 9)).await;
    let frames = client
        .read_until(|frame| frame.stream == 9 && matches!(frame.kind, HEADERS | RST_STREAM))
        .await;
    assert!(
        frames
            .iter()
            .any(|frame| frame.kind == HEADERS && frame.stream == 9),
        "{frames:?}"
    );
    assert!(
        !frames
            .iter()
            .any(|frame| frame.kind == RST_STREAM && frame.stream == 9),
        "{frames:?}"
    );
    drop(client);
    server.stop().await;
}

/// RFC 9113 §5.5: frames of unknown types are ignored, on the connection, on an open stream
/// between the frames of a request, on an idle stream (which stays idle) and on a closed one.
#[tokio::test]
async fn frames_of_unknown_types_are_ignored() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = raw_frames::frame(0xfa, 0xff, 0, b"connection");
    bytes.extend(headers(&server, 1));
    bytes.extend(raw_frames::frame(0xfb, 0, 1, b"between"));
    bytes.extend(raw_frames::frame(0xfc, 0x1, 101, b"idle"));
    bytes.extend(raw_frames::last_data(1, &hello_frame("unknown")));
    client.send(&bytes).await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), hello_frame("unknown"));
    // Stream 101 was not opened: stream 3 is still a new one.
    let mut bytes = raw_frames::frame(0xfd, 0, 1, b"closed");
    bytes.extend(call(&server, 3));
    client.send(&bytes).await;
    answered(&mut client, 3).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.1 and §6.2: padding is stripped from DATA and HEADERS; padding as long as the
/// payload or longer is a connection error of type PROTOCOL_ERROR, a frame too short for its
/// pad length or priority fields one of type FRAME_SIZE_ERROR (§4.2); HEADERS on stream 0 one
/// of type PROTOCOL_ERROR.
#[tokio::test]
async fn padding_is_stripped_and_padding_too_long_is_a_protocol_error() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let block = raw_frames::grpc_headers(1, &server.addr.to_string(), SAY_HELLO)[9..].to_vec();
    let padded = |content: &[u8], pad: u8| {
        let mut payload = vec![pad];
        payload.extend_from_slice(content);
        payload.extend(std::iter::repeat_n(0, pad as usize));
        payload
    };
    let mut bytes = raw_frames::frame(HEADERS, END_HEADERS | PADDED, 1, &padded(&block, 10));
    let body = hello_frame("padded");
    bytes.extend(raw_frames::frame(
        DATA,
        END_STREAM | PADDED,
        1,
        &padded(&body, 200),
    ));
    client.send(&bytes).await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), body);
    connection_errors(
        &server,
        &headers(&server, 1),
        None,
        &[(
            "DATA padded past its end",
            raw_frames::frame(DATA, PADDED, 1, &[5, 0, 0, 0, 0]),
            PROTOCOL_ERROR,
        )],
    )
    .await;
    connection_errors(
        &server,
        &[],
        None,
        &[
            (
                "HEADERS padded past its end",
                raw_frames::frame(HEADERS, END_HEADERS | PADDED, 1, &padded(&block, 10)[..10]),
                PROTOCOL_ERROR,
            ),
            (
                "DATA padded without a pad length",
                [headers(&server, 1), raw_frames::frame(DATA, PADDED, 1, &[])].concat(),
                FRAME_SIZE_ERROR,
            ),
            (
                "HEADERS with PRIORITY too short for it",
                raw_frames::frame(HEADERS, END_HEADERS | PRIORITY_FLAG, 1, &[0, 0, 0]),
                FRAME_SIZE_ERROR,
            ),
            ("HEADERS on stream 0", call(&server, 0), PROTOCOL_ERROR),
        ],
    )
    .await;
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.3 and §5.3.1: PRIORITY of a length other than 5 is a stream error of type
/// FRAME_SIZE_ERROR; a stream that depends on itself (in PRIORITY or in HEADERS) a stream error
/// of type PROTOCOL_ERROR; a well-formed PRIORITY changes nothing; PRIORITY on stream 0 is a
/// connection error of type PROTOCOL_ERROR.
#[tokio::test]
async fn malformed_priorities_are_stream_errors() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let cases: [(u32, Vec<u8>, u32); 3] = [
        (
            1,
            raw_frames::frame(PRIORITY, 0, 1, &[0, 0, 0, 0]),
            FRAME_SIZE_ERROR,
        ),
        (
            3,
            raw_frames::frame(PRIORITY, 0, 3, &[0, 0, 0, 0, 15, 0]),
            FRAME_SIZE_ERROR,
        ),
        (5, priority(5, 5), PROTOCOL_ERROR),
    ];
    for (stream, frame, code) in cases {
        let mut bytes = headers(&server, stream);
        bytes.extend(frame);
        client.send(&bytes).await;
        assert_eq!(client.reset(stream).await, code, "stream {stream}");
    }
    let mut payload = vec![0, 0, 0, 7, 15];
    payload
        .extend_from_slice(&raw_frames::grpc_headers(7, &server.addr.to_string(), SAY_HELLO)[9..]);
    client
        .send(&raw_frames::frame(
            HEADERS,
            END_HEADERS | END_STREAM | PRIORITY_FLAG,
            7,
            &payload,
        ))
        .await;
    assert_eq!(client.reset(7).await, PROTOCOL_ERROR);
    let mut bytes = headers(&server, 9);
    bytes.extend(priority(9, 0x8000_0000));
    bytes.extend(raw_frames::last_data(9, &hello_frame("prioritised")));
    client.send(&bytes).await;
    let frames = answered(&mut client, 9).await;
    assert_eq!(data_on(&frames, 9), hello_frame("prioritised"));
    connection_errors(
        &server,
        &[],
        None,
        &[("PRIORITY on stream 0", priority(0, 1), PROTOCOL_ERROR)],
    )
    .await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.4: RST_STREAM of a length other than 4 is a connection error of type
/// FRAME_SIZE_ERROR; RST_STREAM on stream 0 one of type PROTOCOL_ERROR.
#[tokio::test]
async fn malformed_rst_streams_are_connection_errors() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &headers(&server, 1),
        None,
        &[
            (
                "RST_STREAM of 3 bytes",
                raw_frames::frame(RST_STREAM, 0, 1, &[0, 0, 8]),
                FRAME_SIZE_ERROR,
            ),
            (
                "RST_STREAM of 5 bytes",
                raw_frames::frame(RST_STREAM, 0, 1, &[0, 0, 0, 8, 0]),
                FRAME_SIZE_ERROR,
            ),
            (
                "RST_STREAM on stream 0",
                raw_frames::cancel(0),
                PROTOCOL_ERROR,
            ),
        ],
    )
    .await;
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §6.5: a SETTINGS ACK with a payload, or SETTINGS whose length is not a multiple of
/// 6, is a connection error of type FRAME_SIZE_ERROR; SETTINGS on a stream one of type
/// PROTOCOL_ERROR; and (§6.5.2) ENABLE_PUSH other than 0 or 1, or MAX_FRAME_SIZE outside
/// 16,384..=16,777,215, one of type PROTOCOL_ERROR.
#[tokio::test]
async fn malformed_settings_are_connection_errors() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &[],
        None,
        &[
            (
                "ACK with a payload",
                raw_frames::frame(SETTINGS, ACK, 0, &[0, 3, 0, 0, 0, 1]),
                FRAME_SIZE_ERROR,
            ),
            (
                "5 bytes",
                raw_frames::frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0]),
                FRAME_SIZE_ERROR,
            ),
            (
                "8 bytes",
                raw_frames::frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1, 0, 0]),
                FRAME_SIZE_ERROR,
            ),
            (
                "on stream 1",
                raw_frames::frame(SETTINGS, 0, 1, &[]),
                PROTOCOL_ERROR,
            ),
            (
                "ACK on stream 1",
                raw_frames::frame(SETTINGS, ACK, 1, &[]),
                PROTOCOL_ERROR,
            ),
            (
                "ENABLE_PUSH 2",
                settings(&[(ENABLE_PUSH, 2)]),
                PROTOCOL_ERROR,
            ),
            (
                "MAX_FRAME_SIZE 16,383",
                settings(&[(MAX_FRAME_SIZE, 16_383)]),
                PROTOCOL_ERROR,
            ),
            (
                "MAX_FRAME_SIZE 2^24",
                settings(&[(MAX_FRAME_SIZE, 1 << 24)]),
                PROTOCOL_ERROR,
            ),
        ],
    )
    .await;
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §6.5 and §6.5.3: each SETTINGS frame is acknowledged with an empty ACK, values at
/// the edges of their ranges and unknown settings (ignored, §6.5.2) included; the client's
/// own ACK is not answered.
#[tokio::test]
async fn every_settings_frame_is_acknowledged() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = raw_frames::frame(SETTINGS, ACK, 0, &[]);
    let sent = [
        settings(&[(0xff00, 7), (0x0a0a, 0)]),
        settings(&[(INITIAL_WINDOW_SIZE, MAX_WINDOW)]),
        settings(&[(MAX_FRAME_SIZE, (1 << 24) - 1)]),
        settings(&[
            (MAX_FRAME_SIZE, 16_384),
            (ENABLE_PUSH, 0),
            (ENABLE_PUSH, 1),
            (HEADER_TABLE_SIZE, 4_096),
        ]),
        settings(&[]),
    ];
    for frame in &sent {
        bytes.extend(frame);
    }
    client.send(&bytes).await;
    let frames = client.ping(*b"settings").await;
    let acks: Vec<&Frame> = frames
        .iter()
        .filter(|frame| frame.kind == SETTINGS && frame.flags & ACK != 0)
        .collect();
    // One for the preface's SETTINGS, one for each of ours.
    assert_eq!(acks.len(), 1 + sent.len(), "{frames:?}");
    assert!(
        acks.iter()
            .all(|ack| ack.payload.is_empty() && ack.stream == 0 && ack.flags == ACK),
        "{acks:?}"
    );
    client.send(&call(&server, 1)).await;
    answered(&mut client, 1).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.5.3: a client that never acknowledges the server's SETTINGS gets a connection
/// error of type SETTINGS_TIMEOUT; one that does is served past the same deadline. The engine
/// gives the ACK the handshake timeout (10 s by default), set to 1 s here.
#[tokio::test]
async fn settings_never_acknowledged_are_a_settings_timeout() {
    let server = server(builder().handshake_timeout(Duration::from_secs(1))).await;
    let mut acked = Client::connect(&server).await;
    acked.read_until(|frame| frame.kind == SETTINGS).await;
    acked.send(&raw_frames::frame(SETTINGS, ACK, 0, &[])).await;
    // Connected after the first, so its deadline is the later one.
    let mut silent = Client::connect(&server).await;
    assert_eq!(silent.goaway().await.0, SETTINGS_TIMEOUT);
    let frames = acked.ping(*b"acked-ok").await;
    assert!(
        !frames.iter().any(|frame| frame.kind == GOAWAY),
        "{frames:?}"
    );
    acked.send(&call(&server, 1)).await;
    answered(&mut acked, 1).await;
    drop(acked);
    drop(silent);
    server.stop().await;
}

/// RFC 9113 §6.7: a PING ACK is not answered.
#[tokio::test]
async fn a_ping_ack_is_not_answered() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    client
        .send(&raw_frames::frame(PING, ACK, 0, b"not-ours"))
        .await;
    let frames = client.ping(*b"barrier!").await;
    assert!(
        !frames
            .iter()
            .any(|frame| frame.kind == PING && frame.payload == b"not-ours"),
        "{frames:?}"
    );
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.7: PING on a stream is a connection error of type PROTOCOL_ERROR; PING of a
/// length other than 8 one of type FRAME_SIZE_ERROR.
#[tokio::test]
async fn a_ping_on_a_stream_or_of_the_wrong_length_is_a_connection_error() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &headers(&server, 1),
        None,
        &[
            (
                "PING on stream 1",
                raw_frames::frame(PING, 0, 1, &[0; 8]),
                PROTOCOL_ERROR,
            ),
            (
                "PING of 9 bytes",
                raw_frames::frame(PING, 0, 0, &[0; 9]),
                FRAME_SIZE_ERROR,
            ),
            (
                "PING ACK of 0 bytes",
                raw_frames::frame(PING, ACK, 0, &[]),
                FRAME_SIZE_ERROR,
            ),
        ],
    )
    .await;
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §6.8: after the client's GOAWAY, the server still finishes the streams in flight.
#[tokio::test]
async fn the_streams_in_flight_are_finished_after_the_client_s_goaway() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = headers(&server, 1);
    bytes.extend(goaway(0, NO_ERROR));
    client.send(&bytes).await;
    let frames = client.ping(*b"goaway-1").await;
    assert!(
        !frames
            .iter()
            .any(|frame| matches!(frame.kind, GOAWAY | RST_STREAM)),
        "{frames:?}"
    );
    client
        .send(&raw_frames::last_data(1, &hello_frame("in flight")))
        .await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), hello_frame("in flight"));
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.8: GOAWAY shorter than 8 bytes is a connection error of type FRAME_SIZE_ERROR;
/// GOAWAY on a stream one of type PROTOCOL_ERROR.
#[tokio::test]
async fn a_malformed_goaway_is_a_connection_error() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &[],
        None,
        &[
            (
                "GOAWAY of 7 bytes",
                raw_frames::frame(GOAWAY, 0, 0, &[0; 7]),
                FRAME_SIZE_ERROR,
            ),
            (
                "GOAWAY on stream 1",
                raw_frames::frame(GOAWAY, 0, 1, &[0; 8]),
                PROTOCOL_ERROR,
            ),
        ],
    )
    .await;
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §6.9: a WINDOW_UPDATE of 0 on a stream is a stream error of type PROTOCOL_ERROR
/// (on the connection it is a connection error, checked in `http2_engine.rs`); the connection
/// goes on.
#[tokio::test]
async fn a_window_update_of_zero_on_a_stream_is_a_stream_error() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let mut bytes = headers(&server, 1);
    bytes.extend(window_update(1, 0));
    client.send(&bytes).await;
    assert_eq!(client.reset(1).await, PROTOCOL_ERROR);
    client.send(&call(&server, 3)).await;
    answered(&mut client, 3).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.9: a WINDOW_UPDATE of a length other than 4 is a connection error of type
/// FRAME_SIZE_ERROR, on the connection or on a stream; and (§6.9.2) a change of
/// SETTINGS_INITIAL_WINDOW_SIZE that takes a stream's window past 2^31-1 one of type
/// FLOW_CONTROL_ERROR.
#[tokio::test]
async fn malformed_window_updates_and_window_overflows_are_connection_errors() {
    let server = server(builder()).await;
    connection_errors(
        &server,
        &headers(&server, 1),
        None,
        &[
            (
                "WINDOW_UPDATE of 3 bytes on the connection",
                raw_frames::frame(WINDOW_UPDATE, 0, 0, &[0, 0, 1]),
                FRAME_SIZE_ERROR,
            ),
            (
                "WINDOW_UPDATE of 5 bytes on stream 1",
                raw_frames::frame(WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1, 0]),
                FRAME_SIZE_ERROR,
            ),
            (
                "INITIAL_WINDOW_SIZE past a full window",
                [
                    window_update(1, MAX_WINDOW - 65_535),
                    settings(&[(INITIAL_WINDOW_SIZE, 65_536)]),
                ]
                .concat(),
                FLOW_CONTROL_ERROR,
            ),
        ],
    )
    .await;
    still_serves(&server).await;
    server.stop().await;
}

/// RFC 9113 §6.9.2: a change of the client's SETTINGS_INITIAL_WINDOW_SIZE applies to the
/// streams already open, and can make a window negative: the server's reply keeps to it, and
/// goes on only once the window is above 0 again.
#[tokio::test]
async fn a_new_initial_window_size_applies_to_open_streams() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let body = hello_frame(&"w".repeat(100));
    // Stream 1 opens with the default window; then the window becomes 10.
    let mut bytes = headers(&server, 1);
    bytes.extend(settings(&[(INITIAL_WINDOW_SIZE, 10)]));
    bytes.extend(raw_frames::last_data(1, &body));
    client.send(&bytes).await;
    let mut frames = client
        .read_new(|frame| frame.kind == DATA && frame.stream == 1)
        .await;
    frames.extend(client.ping(*b"window-1").await);
    assert_eq!(data_on(&frames, 1).len(), 10, "{frames:?}");
    assert!(!frames.iter().any(|frame| ends(frame, 1)), "{frames:?}");
    // The window goes from 0 to -10 and back to 0: still nothing.
    let mut bytes = settings(&[(INITIAL_WINDOW_SIZE, 0)]);
    bytes.extend(window_update(1, 10));
    client.send(&bytes).await;
    let frames = client.ping(*b"window-2").await;
    assert!(!frames.iter().any(|frame| frame.stream == 1), "{frames:?}");
    // A larger SETTINGS_INITIAL_WINDOW_SIZE opens it.
    client
        .send(&settings(&[(INITIAL_WINDOW_SIZE, 1_000)]))
        .await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), body);
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.9 and §6.9.1: the server gives window back with WINDOW_UPDATE, on the stream
/// and on the connection, so a client that keeps to the windows can send a request body far
/// larger than them.
#[tokio::test]
async fn window_updates_let_a_client_send_more_than_the_initial_window() {
    let server = server(
        builder()
            .initial_stream_window_size(65_535)
            .initial_connection_window_size(65_535),
    )
    .await;
    let mut client = Client::connect(&server).await;
    // Our own windows wide open, so that the echo comes back without our WINDOW_UPDATEs.
    let mut bytes = settings(&[(INITIAL_WINDOW_SIZE, MAX_WINDOW)]);
    bytes.extend(window_update(0, MAX_WINDOW - 65_535));
    bytes.extend(headers(&server, 1));
    client.send(&bytes).await;
    let mut frames = client.read_new(|frame| frame.kind == SETTINGS).await;
    let mut stream_window =
        i64::from(server_setting(&frames, INITIAL_WINDOW_SIZE).unwrap_or(65_535));
    let mut connection_window = 65_535i64;
    let body = hello_frame(&"b".repeat(200_000));
    let (mut sent, mut stream_updates, mut connection_updates) = (0, 0, 0);
    loop {
        for frame in frames.iter().filter(|frame| frame.kind == WINDOW_UPDATE) {
            let increment = i64::from(u32::from_be_bytes(frame.payload[..4].try_into().unwrap()));
            match frame.stream {
                0 => {
                    (connection_window, connection_updates) =
                        (connection_window + increment, connection_updates + 1)
                }
                1 => {
                    (stream_window, stream_updates) =
                        (stream_window + increment, stream_updates + 1)
                }
                other => panic!("WINDOW_UPDATE on {other}"),
            }
        }
        if sent == body.len() {
            break;
        }
        let room = stream_window.min(connection_window).min(16_384);
        if room <= 0 {
            frames = client.read_new(|frame| frame.kind == WINDOW_UPDATE).await;
            assert!(
                frames.iter().any(|frame| frame.kind == WINDOW_UPDATE),
                "no window given back after {sent} bytes: {frames:?}"
            );
            continue;
        }
        let end = (sent + room as usize).min(body.len());
        let flags = if end == body.len() { END_STREAM } else { 0 };
        client
            .send(&raw_frames::frame(DATA, flags, 1, &body[sent..end]))
            .await;
        stream_window -= (end - sent) as i64;
        connection_window -= (end - sent) as i64;
        sent = end;
        frames.clear();
    }
    assert!(stream_updates > 0 && connection_updates > 0);
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), body);
    drop(client);
    server.stop().await;
}

/// RFC 9113 §5.1 (closed) and §6.9: DATA that arrives on a stream the server has reset still
/// counts toward the connection's window, and is given back with WINDOW_UPDATE like any other,
/// so the streams after it are not starved.
#[tokio::test]
async fn data_on_a_stream_the_server_reset_is_given_back_to_the_connection_window() {
    let server = server(
        builder()
            .initial_stream_window_size(65_535)
            .initial_connection_window_size(65_535),
    )
    .await;
    let mut client = Client::connect(&server).await;
    let mut bytes = headers(&server, 1);
    bytes.extend(window_update(1, 0));
    client.send(&bytes).await;
    assert_eq!(client.reset(1).await, PROTOCOL_ERROR);
    // 48 KiB dropped on the reset stream: three quarters of the connection's window.
    let chunk = vec![0; 16_384];
    let mut bytes = Vec::new();
    for _ in 0..3 {
        bytes.extend(raw_frames::frame(DATA, 0, 1, &chunk));
    }
    client.send(&bytes).await;
    let frames = client
        .read_new(|frame| frame.kind == WINDOW_UPDATE && frame.stream == 0)
        .await;
    let given_back: i64 = frames
        .iter()
        .filter(|frame| frame.kind == WINDOW_UPDATE && frame.stream == 0)
        .map(|frame| i64::from(u32::from_be_bytes(frame.payload[..4].try_into().unwrap())))
        .sum();
    let window = 65_535 - 3 * 16_384 + given_back;
    // A request that fits only in what was given back.
    let body = hello_frame(&"c".repeat(30_000));
    assert!(
        body.len() as i64 <= window && body.len() > 65_535 - 3 * 16_384,
        "{window}"
    );
    let mut bytes = headers(&server, 3);
    bytes.extend(data_frames(3, &body, 16_384));
    client.send(&bytes).await;
    let frames = answered(&mut client, 3).await;
    assert_eq!(data_on(&frames, 3), body);
    drop(client);
    server.stop().await;
}

/// RFC 9113 §6.10: a header block split over CONTINUATION frames is served; CONTINUATION that
/// follows no unfinished header block is a connection error of type PROTOCOL_ERROR.
#[tokio::test]
async fn continuation_frames_carry_a_header_block_and_no_more() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let block = raw_frames::grpc_headers(1, &server.addr.to_string(), SAY_HELLO)[9..].to_vec();
    let (first, rest) = block.split_at(3);
    let (second, third) = rest.split_at(rest.len() / 2);
    let mut bytes = raw_frames::frame(HEADERS, 0, 1, first);
    bytes.extend(raw_frames::frame(CONTINUATION, 0, 1, second));
    bytes.extend(raw_frames::frame(CONTINUATION, END_HEADERS, 1, third));
    bytes.extend(raw_frames::last_data(1, &hello_frame("continued")));
    client.send(&bytes).await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), hello_frame("continued"));
    connection_errors(
        &server,
        &call(&server, 1),
        Some(1),
        &[
            (
                "CONTINUATION after a finished block",
                raw_frames::frame(CONTINUATION, END_HEADERS, 1, &[0x88]),
                PROTOCOL_ERROR,
            ),
            (
                "CONTINUATION on a new stream",
                raw_frames::frame(CONTINUATION, END_HEADERS, 3, &block),
                PROTOCOL_ERROR,
            ),
        ],
    )
    .await;
    still_serves(&server).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §8.1: trailers that hold a pseudo-header, or a second header block without
/// END_STREAM, make the request malformed: a stream error of type PROTOCOL_ERROR. Trailers
/// with regular fields end the request.
#[tokio::test]
async fn trailers_with_a_pseudo_header_or_without_end_stream_are_malformed() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let field = |name: &[u8], value: &[u8]| vec![(name.to_vec(), value.to_vec())];
    let cases = [
        (1, field(b":path", b"/trailer"), END_STREAM),
        (3, field(b"x-trailer", b"1"), 0),
    ];
    for (stream, trailers, flags) in cases {
        let mut bytes = headers(&server, stream);
        bytes.extend(raw_frames::frame(DATA, 0, stream, &hello_frame("t")));
        bytes.extend(headers_of(stream, flags, &trailers));
        client.send(&bytes).await;
        assert_eq!(
            client.reset(stream).await,
            PROTOCOL_ERROR,
            "stream {stream}"
        );
    }
    let mut bytes = headers(&server, 5);
    bytes.extend(raw_frames::frame(DATA, 0, 5, &hello_frame("trailed")));
    bytes.extend(raw_frames::frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        5,
        &header_block(&[(b"x-trailer", b"1")]),
    ));
    client.send(&bytes).await;
    let frames = answered(&mut client, 5).await;
    assert_eq!(data_on(&frames, 5), hello_frame("trailed"));
    drop(client);
    server.stop().await;
}

/// RFC 9113 §8.1.1: a content-length that disagrees with the DATA received, more or less, makes
/// the request malformed: a stream error of type PROTOCOL_ERROR. One that agrees is served.
#[tokio::test]
async fn a_content_length_that_disagrees_with_the_data_is_malformed() {
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let body = hello_frame("sized");
    let with_length = |stream: u32, length: usize| {
        let mut fields = request_fields(&server);
        fields.push((b"content-length".to_vec(), length.to_string().into_bytes()));
        headers_of(stream, 0, &fields)
    };
    // More DATA than announced, the stream not ended yet.
    let mut bytes = with_length(1, body.len() - 1);
    bytes.extend(raw_frames::frame(DATA, 0, 1, &body));
    client.send(&bytes).await;
    assert_eq!(client.reset(1).await, PROTOCOL_ERROR);
    // Less.
    let mut bytes = with_length(3, body.len() + 1);
    bytes.extend(raw_frames::last_data(3, &body));
    client.send(&bytes).await;
    assert_eq!(client.reset(3).await, PROTOCOL_ERROR);
    // Just as much, in two frames.
    let mut bytes = with_length(5, body.len());
    bytes.extend(raw_frames::frame(DATA, 0, 5, &body[..4]));
    bytes.extend(raw_frames::last_data(5, &body[4..]));
    client.send(&bytes).await;
    let frames = answered(&mut client, 5).await;
    assert_eq!(data_on(&frames, 5), body);
    drop(client);
    server.stop().await;
}

/// RFC 9113 §8.2.1 and §8.2.2: a field name that is not a lowercase token, a value with NUL,
/// CR or LF or with whitespace at either end, and the connection-specific fields make the
/// request malformed: a stream error of type PROTOCOL_ERROR. (`Content-Type`, `connection`
/// and `te: gzip` are checked in `http2_engine.rs`.)
#[tokio::test]
async fn malformed_fields_are_stream_errors() {
    let fields: [(&[u8], &[u8]); 12] = [
        (b"keep-alive", b"timeout=5"),
        (b"proxy-connection", b"keep-alive"),
        (b"transfer-encoding", b"chunked"),
        (b"upgrade", b"h2c"),
        (b"x-a b", b"1"),
        (b"x-a:b", b"1"),
        (b"x-\x7f", b"1"),
        (b"x-value", b"a\0b"),
        (b"x-value", b"a\rb"),
        (b"x-value", b"a\nb"),
        (b"x-value", b" a"),
        (b"x-value", b"a\t"),
    ];
    let server = server(builder()).await;
    let mut client = Client::connect(&server).await;
    let mut stream = 1;
    for (name, value) in fields {
        let mut request = request_fields(&server);
        request.push((name.to_vec(), value.to_vec()));
        client.send(&headers_of(stream, END_STREAM, &request)).await;
        assert_eq!(
            client.reset(stream).await,
            PROTOCOL_ERROR,
            "{}: {:?}",
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(value)
        );
        stream += 2;
    }
    client.send(&call(&server, stream)).await;
    answered(&mut client, stream).await;
    drop(client);
    server.stop().await;
}

/// RFC 9113 §8.3 and §8.3.1: a pseudo-header twice, one the RFC does not define, a response's
/// (`:status`) in a request, a missing `:method`, `:scheme` or `:path`, and an empty `:path`
/// make the request malformed: a stream error of type PROTOCOL_ERROR. (A pseudo-header after a
/// regular field is checked in `http2_engine.rs`.)
#[tokio::test]
async fn malformed_pseudo_headers_are_stream_errors() {
    let server = server(builder()).await;
    let base = request_fields(&server);
    let with = |extra: (&str, &str)| {
        let mut fields = base.clone();
        fields.insert(
            4,
            (extra.0.as_bytes().to_vec(), extra.1.as_bytes().to_vec()),
        );
        fields
    };
    let without = |name: &str| {
        let mut fields = base.clone();
        fields.retain(|(field, _)| field != name.as_bytes());
        fields
    };
    let mut empty_path = base.clone();
    empty_path[2].1.clear();
    let cases: Vec<(&str, Fields)> = vec![
        (":method twice", with((":method", "POST"))),
        (":scheme twice", with((":scheme", "https"))),
        (":path twice", with((":path", SAY_HELLO))),
        (":authority twice", with((":authority", "other.test"))),
        ("an unknown pseudo-header", with((":protocol", "websocket"))),
        ("another", with((":foo", "bar"))),
        (":status in a request", with((":status", "200"))),
        ("no :method", without(":method")),
        ("no :scheme", without(":scheme")),
        ("no :path", without(":path")),
        ("an empty :path", empty_path),
    ];
    let mut client = Client::connect(&server).await;
    let mut stream = 1;
    for (what, fields) in cases {
        client.send(&headers_of(stream, END_STREAM, &fields)).await;
        assert_eq!(client.reset(stream).await, PROTOCOL_ERROR, "{what}");
        stream += 2;
    }
    client.send(&call(&server, stream)).await;
    answered(&mut client, stream).await;
    drop(client);
    server.stop().await;
}
