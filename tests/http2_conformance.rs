//! fastgrpc's own HTTP/2 engine against RFC 9113, section by section: a scripted client writes
//! raw frames over a real loopback socket and checks the frames that come back. Each test names
//! the section it checks. The attacks, and the receiver rules `http2_engine.rs` already checks,
//! are not repeated here.
//!
//! Where the test needs to know that the server sent nothing more, it sends a PING and reads
//! until its ACK: the server handles frames in order, so what it had to say about the frames
//! before the PING comes before the ACK. The servers here take pings at any rate for that.

mod support;

use std::time::Duration;

use fastgrpc::Server;
use support::raw_frames::{self, Frame};
use support::scripted::{
    ACK, Client, DATA, END_STREAM, FRAME_SIZE_ERROR, GOAWAY, HEADERS, PADDED, PING, RST_STREAM,
    SETTINGS, WINDOW_UPDATE, headers, hello_body, server, still_serves,
};

/// Setting identifiers (§6.5.2).
const MAX_FRAME_SIZE: u16 = 0x5;

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
        "stream {stream} answered with HEADERS, DATA and trailers: {frames:?}"
    );
    on_stream
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
        &hello_body(b"flags"),
    ));
    client.send(&bytes).await;
    let frames = answered(&mut client, 1).await;
    assert_eq!(data_on(&frames, 1), hello_body(b"flags"));
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
    let name = vec![b'm'; 32_768 - 9];
    let body = hello_body(&name);
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
    let name = vec![b'f'; 40_000];
    let body = hello_body(&name);
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
