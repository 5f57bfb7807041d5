//! A scripted HTTP/2 client for fastgrpc's own engine: the preface sent, then frames written
//! and read raw over a real loopback socket; a server of [`EchoGreeter`](crate::EchoGreeter)
//! for it to talk to, and the frame types and error codes of RFC 9113.
//!
//! Every read is bounded ([`READ_LIMIT`]), so a server that does not answer as expected makes
//! a test fail, never hang.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::pb::helloworld::greeter_server::GreeterServer;
use super::raw_frames::{self, Frame, PREFACE};
use super::tonic_pb::helloworld as client_pb;
use super::tonic_pb::helloworld::greeter_client::GreeterClient;
use super::{TestServer, channel};

/// Frame types (RFC 9113 §6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

/// Flags (RFC 9113 §6).
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const SETTINGS_TIMEOUT: u32 = 0x4;
pub const STREAM_CLOSED: u32 = 0x5;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const COMPRESSION_ERROR: u32 = 0x9;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// How long any one read waits for the frame it expects.
pub const READ_LIMIT: Duration = Duration::from_secs(5);

pub const SAY_HELLO: &str = "/helloworld.Greeter/SayHello";

/// `builder` serving [`EchoGreeter`](crate::EchoGreeter) on fastgrpc's engine, on a loopback port.
pub async fn server(builder: fastgrpc::Builder) -> TestServer {
    TestServer::start(builder.add_service(GreeterServer::new(crate::EchoGreeter))).await
}

/// A new connection is served, within a second, while whatever the test did goes on.
pub async fn still_serves(server: &TestServer) {
    let started = Instant::now();
    let mut client = GreeterClient::new(channel(server).await);
    let reply = client
        .say_hello(client_pb::HelloRequest { name: "ok".into() })
        .await
        .expect("a new connection is served");
    assert_eq!(reply.into_inner().message, "ok");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

/// A scripted client: the preface and SETTINGS sent, frames written and read raw.
#[derive(Debug)]
pub struct Client {
    tcp: TcpStream,
    /// Every byte read so far.
    read: Vec<u8>,
    /// How many of the frames read have been returned by a read so far.
    returned: usize,
}

impl Client {
    /// Connects and sends the preface with an empty SETTINGS frame.
    pub async fn connect(server: &TestServer) -> Client {
        let mut client = Client::connect_bare(server).await;
        client.send(PREFACE).await;
        client
    }

    /// Connects and sends nothing.
    pub async fn connect_bare(server: &TestServer) -> Client {
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        // Frames go out as the test writes them: no write waits for the ACK of the last.
        tcp.set_nodelay(true).unwrap();
        Client {
            tcp,
            read: Vec::new(),
            returned: 0,
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).await.unwrap();
    }

    /// Sends `bytes`, as much of them as the server takes, until all are sent or the server
    /// has taken nothing for `stall` (a server that stopped reading takes only what the
    /// socket buffers hold); returns how much it took.
    pub async fn send_until_stalled(&mut self, bytes: &[u8], stall: Duration) -> usize {
        let mut sent = 0;
        while sent < bytes.len() {
            match tokio::time::timeout(stall, self.tcp.write(&bytes[sent..])).await {
                Ok(Ok(n)) if n > 0 => sent += n,
                _ => break,
            }
        }
        sent
    }

    /// Reads frames until `until` holds for one of them, or the connection closes, or
    /// [`READ_LIMIT`] passes; returns every frame read since the connection opened.
    pub async fn read_until(&mut self, until: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        self.read_until_after(0, until).await
    }

    /// Reads until `until` holds for one of the frames no earlier read returned (or the
    /// connection closes, or [`READ_LIMIT`] passes); returns those frames.
    pub async fn read_new(&mut self, until: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let start = self.returned;
        let frames = self.read_until_after(start, until).await;
        frames[start..].to_vec()
    }

    /// Reads until `until` holds for a frame after the first `start`; returns every frame.
    async fn read_until_after(
        &mut self,
        start: usize,
        until: impl Fn(&Frame) -> bool,
    ) -> Vec<Frame> {
        let deadline = tokio::time::Instant::now() + READ_LIMIT;
        let mut buf = [0u8; 16 * 1024];
        loop {
            let frames = raw_frames::parse(&self.read);
            if frames.iter().skip(start).any(&until) {
                self.returned = frames.len();
                return frames;
            }
            match tokio::time::timeout_at(deadline, self.tcp.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => {
                    self.returned = frames.len();
                    return frames;
                }
                Ok(Ok(n)) => self.read.extend_from_slice(&buf[..n]),
            }
        }
    }

    /// Whether the server closes the connection (EOF, or a reset) within [`READ_LIMIT`],
    /// whatever it sends before.
    pub async fn closed(&mut self) -> bool {
        let deadline = tokio::time::Instant::now() + READ_LIMIT;
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout_at(deadline, self.tcp.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(n)) => self.read.extend_from_slice(&buf[..n]),
                Err(_) => return false,
            }
        }
    }

    /// Reads until GOAWAY; its error code and debug data.
    pub async fn goaway(&mut self) -> (u32, Vec<u8>) {
        let frames = self.read_until(|frame| frame.kind == GOAWAY).await;
        let goaway = frames
            .iter()
            .find(|frame| frame.kind == GOAWAY)
            .unwrap_or_else(|| panic!("no GOAWAY in {frames:?}"));
        let code = u32::from_be_bytes(goaway.payload[4..8].try_into().unwrap());
        (code, goaway.payload[8..].to_vec())
    }

    /// Reads until RST_STREAM on `stream`; its error code.
    pub async fn reset(&mut self, stream: u32) -> u32 {
        let is_reset = |frame: &Frame| frame.kind == RST_STREAM && frame.stream == stream;
        let frames = self.read_until(is_reset).await;
        let reset = frames
            .iter()
            .find(|frame| is_reset(frame))
            .unwrap_or_else(|| panic!("no RST_STREAM on {stream} in {frames:?}"));
        u32::from_be_bytes(reset.payload[..4].try_into().unwrap())
    }

    /// Sends a PING with `payload` and reads until its ACK; the frames before the ACK that no
    /// earlier read returned. A server handles frames in order, so these
    /// are all it sent in answer to what came before the PING.
    pub async fn ping(&mut self, payload: [u8; 8]) -> Vec<Frame> {
        self.send(&raw_frames::frame(PING, 0, 0, &payload)).await;
        let is_ack = |frame: &Frame| frame.kind == PING && frame.flags & ACK != 0;
        let mut frames = self
            .read_new(|frame| is_ack(frame) && frame.payload == payload)
            .await;
        let ack = frames
            .iter()
            .position(|frame| is_ack(frame) && frame.payload == payload)
            .unwrap_or_else(|| panic!("no PING ACK in {frames:?}"));
        frames.truncate(ack);
        frames
    }
}

/// HEADERS (END_HEADERS) of a gRPC call to `SayHello` on `stream`.
pub fn headers(server: &TestServer, stream: u32) -> Vec<u8> {
    raw_frames::grpc_headers(stream, &server.addr.to_string(), SAY_HELLO)
}

/// A whole call on `stream`: HEADERS, then DATA with a HelloRequest and END_STREAM.
pub fn call(server: &TestServer, stream: u32) -> Vec<u8> {
    let mut bytes = headers(server, stream);
    bytes.extend(raw_frames::last_data(stream, &crate::hello_frame("hi")));
    bytes
}
