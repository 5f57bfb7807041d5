//! What the integration tests share, as this crate's library (`support`): generated code,
//! fixtures (a server on a loopback port, services the tests have in common), tonic clients,
//! and raw and scripted HTTP/2 clients for requests tonic would never send.
//!
//! The tests are a few binaries by subject (`calls.rs`, `connections.rs`), and apart only
//! those that need a process of their own: a global allocator (`allocation_counts.rs`,
//! `faults.rs`), the machine's cores to themselves (`inline.rs`, and `readme.rs`, which runs
//! cargo), or process-wide `tracing` and OpenTelemetry state (`tracing.rs`). The guide's
//! examples run as this library's doc tests.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// fastgrpc's generated servers (and the messages), from the workspace's `protos` crate.
pub use protos as pb;
/// tonic's generated clients (and servers), for the same protos.
pub use protos::tonic_pb;

/// A fastgrpc server on an ephemeral loopback port, stopped gracefully by [`TestServer::stop`].
#[derive(Debug)]
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    pub async fn start(builder: fastgrpc::Builder) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(builder.serve_with_listener(listener, async {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            stop: Some(stop),
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Asks for a graceful shutdown, without waiting for it ([`TestServer::stop`] waits).
    pub fn begin_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Shuts down gracefully and waits (bounded) until the server returns.
    pub async fn stop(self) {
        self.stop_within(Duration::from_secs(10)).await;
    }

    /// Shuts down gracefully and waits until the server returns, failing after `limit`.
    pub async fn stop_within(mut self, limit: Duration) {
        self.begin_stop();
        tokio::time::timeout(limit, self.task)
            .await
            .unwrap_or_else(|_| panic!("server stops within {limit:?}"))
            .expect("server task did not panic")
            .expect("server returned Ok");
    }
}

pub async fn channel(server: &TestServer) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(server.url())
        .unwrap()
        .timeout(Duration::from_secs(10))
        .connect()
        .await
        .expect("connect to the test server")
}

/// What a raw HTTP/2 exchange returned.
#[derive(Debug)]
pub struct RawResponse {
    pub status: http::StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
    pub trailers: Option<http::HeaderMap>,
}

impl RawResponse {
    /// `grpc-status` from the trailers, or from the headers of a trailers-only response.
    pub fn grpc_status(&self) -> Option<&str> {
        self.trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| self.headers.get("grpc-status"))
            .map(|v| v.to_str().unwrap())
    }

    pub fn grpc_message(&self) -> Option<String> {
        let value = self
            .trailers
            .as_ref()
            .and_then(|t| t.get("grpc-message"))
            .or_else(|| self.headers.get("grpc-message"))?;
        let status = tonic::Status::from_header_map(&{
            let mut map = http::HeaderMap::new();
            map.insert("grpc-status", http::HeaderValue::from_static("2"));
            map.insert("grpc-message", value.clone());
            map
        })?;
        Some(status.message().to_owned())
    }
}

/// Sends one request with exactly the given method, path, headers and body, over a fresh
/// HTTP/2 connection, and collects the whole answer.
pub async fn raw_request(
    addr: SocketAddr,
    method: http::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> RawResponse {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut request = http::Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let (response, mut send) = client
        .send_request(request.body(()).unwrap(), body.is_empty())
        .unwrap();
    if !body.is_empty() {
        send.send_data(body, true).unwrap();
    }
    let response = tokio::time::timeout(Duration::from_secs(10), response)
        .await
        .expect("answer within 10 s")
        .unwrap();
    let (parts, mut recv) = response.into_parts();
    let mut body = BytesMut::new();
    while let Some(chunk) = recv.data().await {
        let chunk = chunk.unwrap();
        let _ = recv.flow_control().release_capacity(chunk.len());
        body.extend_from_slice(&chunk);
    }
    let trailers = recv.trailers().await.unwrap();
    RawResponse {
        status: parts.status,
        headers: parts.headers,
        body: body.freeze(),
        trailers,
    }
}

/// An h2 client connection to `server` with the given stream window, its driver spawned.
pub async fn h2_client(server: &TestServer, window: u32) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(window)
        .handshake(tcp)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client.ready().await.unwrap()
}

/// The head of a gRPC POST to `path` (`/package.Service/Method`) on `server`.
pub fn grpc_post(server: &TestServer, path: &str) -> http::Request<()> {
    http::Request::post(format!("http://{}{path}", server.addr))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap()
}

/// A gRPC POST with the usual headers.
pub async fn raw_grpc(addr: SocketAddr, path: &str, body: Bytes) -> RawResponse {
    raw_request(
        addr,
        http::Method::POST,
        path,
        &[("content-type", "application/grpc"), ("te", "trailers")],
        body,
    )
    .await
}

/// One gRPC frame (uncompressed) around `message`.
pub fn frame(message: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(5 + message.len());
    buf.extend_from_slice(&[0]);
    buf.extend_from_slice(&(message.len() as u32).to_be_bytes());
    buf.extend_from_slice(message);
    buf.freeze()
}

/// A greeter that records the [`fastgrpc::transport::ConnectInfo`] each call finds in its
/// extensions (`None` where there is none) and answers `Hello {name}`.
#[derive(Debug, Clone, Default)]
pub struct RecordingGreeter {
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<Option<fastgrpc::transport::ConnectInfo>>>>,
    /// What tonic's `Request::remote_addr()` answered in each call.
    pub tonic_remote: std::sync::Arc<std::sync::Mutex<Vec<Option<SocketAddr>>>>,
}

impl RecordingGreeter {
    /// Every connection information recorded so far.
    pub fn seen(&self) -> Vec<Option<fastgrpc::transport::ConnectInfo>> {
        self.seen.lock().unwrap().clone()
    }
}

impl pb::helloworld::greeter_server::Greeter for RecordingGreeter {
    fn say_hello(
        &self,
        request: fastgrpc::Request<pb::helloworld::HelloRequest>,
    ) -> impl fastgrpc::RpcFuture<pb::helloworld::HelloReply> {
        let info = fastgrpc::transport::ConnectInfo::of(&request).cloned();
        self.seen.lock().unwrap().push(info);
        self.tonic_remote
            .lock()
            .unwrap()
            .push(request.remote_addr());
        let name = request.into_inner().name;
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(pb::helloworld::HelloReply {
            message: format!("Hello {name}"),
        }))
    }
}

/// A tonic channel whose connections `connect` makes (a socket of the test's own, a unix
/// socket, an in-memory pipe).
pub async fn channel_with<F, Fut, IO>(connect: F) -> tonic::transport::Channel
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = std::io::Result<IO>> + Send + 'static,
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let connector = tower::service_fn(move |_: http::Uri| {
        let connecting = connect();
        async move { connecting.await.map(hyper_util::rt::TokioIo::new) }
    });
    tonic::transport::Endpoint::from_static("http://fastgrpc.test")
        .timeout(Duration::from_secs(10))
        .connect_with_connector(connector)
        .await
        .expect("connect to the test server")
}

/// Calls `SayHello` with `name` over `channel`; the reply's message.
pub async fn say_hello(
    channel: tonic::transport::Channel,
    name: &str,
) -> Result<String, tonic::Status> {
    let mut client = tonic_pb::helloworld::greeter_client::GreeterClient::new(channel);
    let reply = client
        .say_hello(tonic_pb::helloworld::HelloRequest { name: name.into() })
        .await?;
    Ok(reply.into_inner().message)
}

/// Raw HTTP/2 bytes, for exchanges whose framing a client library would not produce (or not in
/// one write): the client preface, and a gRPC call's frames, header block uncompressed.
pub mod raw_frames {
    /// The client connection preface and an empty SETTINGS frame.
    pub const PREFACE: &[u8] =
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

    /// A frame of `kind` with `flags` on `stream` carrying `payload`.
    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut frame = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        frame.extend_from_slice(&[kind, flags]);
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    /// Appends a field to an HPACK block as a literal without indexing, with a new name and
    /// no Huffman coding (RFC 7541 §6.2.2): it leaves the dynamic table as it was.
    pub fn literal(block: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        block.push(0x00);
        string(block, name);
        string(block, value);
    }

    /// A string literal without Huffman coding: its length as a 7-bit prefix integer
    /// (RFC 7541 §5.1, §5.2), then its bytes.
    fn string(block: &mut Vec<u8>, bytes: &[u8]) {
        let mut len = bytes.len();
        if len < 0x7f {
            block.push(len as u8);
        } else {
            block.push(0x7f);
            len -= 0x7f;
            while len >= 0x80 {
                block.push(len as u8 | 0x80);
                len >>= 7;
            }
            block.push(len as u8);
        }
        block.extend_from_slice(bytes);
    }

    /// An HPACK block of `fields`, in order, each a [`literal`].
    pub fn header_block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut block = Vec::new();
        for (name, value) in fields {
            literal(&mut block, name, value);
        }
        block
    }

    /// HEADERS (END_HEADERS) of a gRPC POST to `path`: HPACK literals, no Huffman coding.
    pub fn grpc_headers(stream: u32, authority: &str, path: &str) -> Vec<u8> {
        // :method POST and :scheme http from the static table.
        let mut block = vec![0x83, 0x86];
        literal(&mut block, b":path", path.as_bytes());
        literal(&mut block, b":authority", authority.as_bytes());
        literal(&mut block, b"content-type", b"application/grpc");
        literal(&mut block, b"te", b"trailers");
        frame(0x1, 0x4, stream, &block)
    }

    /// A DATA frame that ends the stream.
    pub fn last_data(stream: u32, body: &[u8]) -> Vec<u8> {
        frame(0x0, 0x1, stream, body)
    }

    /// RST_STREAM with CANCEL.
    pub fn cancel(stream: u32) -> Vec<u8> {
        frame(0x3, 0x0, stream, &8u32.to_be_bytes())
    }

    /// A frame as read back: type, flags, stream and payload.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Frame {
        pub kind: u8,
        pub flags: u8,
        pub stream: u32,
        pub payload: Vec<u8>,
    }

    /// The whole frames at the start of `bytes`, in order (a cut-off last one is left out).
    pub fn parse(mut bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        while bytes.len() >= 9 {
            let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
            if bytes.len() < 9 + len {
                break;
            }
            let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap()) & 0x7fff_ffff;
            frames.push(Frame {
                kind: bytes[3],
                flags: bytes[4],
                stream,
                payload: bytes[9..9 + len].to_vec(),
            });
            bytes = &bytes[9 + len..];
        }
        frames
    }

    /// The last-stream-ids of the GOAWAY frames among `frames`, in order.
    pub fn goaway_last_stream_ids(frames: &[Frame]) -> Vec<u32> {
        frames
            .iter()
            .filter(|frame| frame.kind == 0x7)
            .map(|frame| u32::from_be_bytes(frame.payload[..4].try_into().unwrap()) & 0x7fff_ffff)
            .collect()
    }
}

pub mod scripted;

/// Reading gRPC-Web answers.
pub mod web {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;

    /// The frames of a gRPC-Web body: (flag, payload) pairs.
    pub fn frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut frames = Vec::new();
        while !body.is_empty() {
            let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
            frames.push((body[0], body[5..5 + len].to_vec()));
            body = &body[5 + len..];
        }
        frames
    }

    /// Decodes a `-text` body, in which each chunk the server sent is padded on its own.
    pub fn from_text(body: &[u8]) -> Vec<u8> {
        let mut decoded = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            // Up to and including the first group with padding, or to the end.
            let end = rest
                .chunks(4)
                .position(|group| group.contains(&b'='))
                .map_or(rest.len(), |padded| (padded + 1) * 4);
            decoded.extend(BASE64.decode(&rest[..end]).unwrap());
            rest = &rest[end..];
        }
        decoded
    }
}

/// `message` compressed with `encoding` (gzip or deflate, as flate2 writes them, independently
/// of the server's own code) in one gRPC frame with the compressed flag set.
pub fn compressed_frame(encoding: fastgrpc::CompressionEncoding, message: &[u8]) -> Bytes {
    use std::io::Write;
    let level = flate2::Compression::default();
    let payload = match encoding {
        fastgrpc::CompressionEncoding::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
            encoder.write_all(message).unwrap();
            encoder.finish().unwrap()
        }
        fastgrpc::CompressionEncoding::Deflate => {
            let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
            encoder.write_all(message).unwrap();
            encoder.finish().unwrap()
        }
        other => panic!("the tests compress with gzip or deflate, not {other:?}"),
    };
    let mut frame = BytesMut::with_capacity(5 + payload.len());
    frame.extend_from_slice(&[1]);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(&payload);
    frame.freeze()
}

/// The message in a compressed frame's `payload`, decompressed with flate2.
pub fn decompressed(encoding: fastgrpc::CompressionEncoding, payload: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut message = Vec::new();
    match encoding {
        fastgrpc::CompressionEncoding::Gzip => {
            flate2::read::GzDecoder::new(payload).read_to_end(&mut message)
        }
        fastgrpc::CompressionEncoding::Deflate => {
            flate2::read::ZlibDecoder::new(payload).read_to_end(&mut message)
        }
        other => panic!("the tests decompress gzip or deflate, not {other:?}"),
    }
    .unwrap();
    message
}

pub mod alloc;
pub mod futures;
pub mod http1;

/// Waits until `condition` holds, checking every millisecond; fails, naming `what`, after 10 s.
/// For what a test cannot be told of directly (a count on the server, a file appearing).
pub async fn until(what: &str, condition: impl Fn() -> bool) {
    until_shown(|| what.to_owned(), condition).await;
}

/// [`until`], failing with what `state` says at that moment: for conditions on counts, which
/// the failure should show.
pub async fn until_shown(state: impl Fn() -> String, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not yet: {}",
            state()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The reply streams of a test's `grpc.testing.TestService`, boxed.
pub type Replies = fastgrpc::BoxStream<pb::grpc_testing::StreamingOutputCallResponse>;

/// Names the three reply-stream types of a `grpc.testing.TestService` implementation as
/// [`Replies`]: what every test service writes, since a trait's associated types have no
/// defaults on stable Rust.
#[macro_export]
macro_rules! boxed_reply_streams {
    () => {
        type StreamingOutputCallStream = $crate::Replies;
        type FullDuplexCallStream = $crate::Replies;
        type HalfDuplexCallStream = $crate::Replies;
    };
}

/// A reply stream of `reply`, then a panic in the stream itself.
pub fn one_reply_then_panic(reply: pb::grpc_testing::StreamingOutputCallResponse) -> Replies {
    use futures_util::StreamExt;
    let mut reply = Some(reply);
    futures_util::stream::iter(0..2)
        .map(move |_| match reply.take() {
            Some(reply) => Ok(reply),
            None => panic!("the reply stream panicked"),
        })
        .boxed()
}

/// A payload of `size` zero bytes.
pub fn zeros(size: i32) -> pb::grpc_testing::Payload {
    pb::grpc_testing::Payload {
        r#type: 0,
        body: Bytes::from(vec![0; size as usize]),
    }
}

/// A streamed reply with a payload of `size` zero bytes.
pub fn reply(size: i32) -> pb::grpc_testing::StreamingOutputCallResponse {
    pb::grpc_testing::StreamingOutputCallResponse {
        payload: Some(zeros(size)),
    }
}

/// `StreamingOutputCall` as the interop cases define it: one [`reply`] per response parameter,
/// of its size, at once.
pub fn replies_as_asked(
    request: fastgrpc::Request<pb::grpc_testing::StreamingOutputCallRequest>,
) -> Replies {
    use futures_util::StreamExt;
    let sizes: Vec<i32> = request
        .into_inner()
        .response_parameters
        .iter()
        .map(|p| p.size)
        .collect();
    futures_util::stream::iter(sizes)
        .map(|size| Ok(reply(size)))
        .boxed()
}

/// `StreamingInputCall` as the interop cases define it: the sum of the request messages'
/// payload sizes.
pub async fn sum_payloads(
    request: fastgrpc::Request<fastgrpc::Streaming<pb::grpc_testing::StreamingInputCallRequest>>,
) -> Result<fastgrpc::Response<pb::grpc_testing::StreamingInputCallResponse>, fastgrpc::Status> {
    let mut requests = request.into_inner();
    let mut total = 0;
    while let Some(request) = requests.message().await? {
        total += request.payload.map_or(0, |p| p.body.len() as i32);
    }
    Ok(fastgrpc::Response::new(
        pb::grpc_testing::StreamingInputCallResponse {
            aggregated_payload_size: total,
        },
    ))
}

/// A `UnaryCall` request body asking for a reply payload of `size` bytes.
pub fn sized(size: i32) -> Bytes {
    use prost::Message;
    frame(
        &pb::grpc_testing::SimpleRequest {
            response_size: size,
            ..Default::default()
        }
        .encode_to_vec(),
    )
}

/// The payload size of the next reply on a tonic client's reply stream; the reply must come.
pub async fn next_payload_len(
    replies: &mut tonic::Streaming<tonic_pb::grpc_testing::StreamingOutputCallResponse>,
) -> usize {
    let reply = replies.message().await.expect("a reply").expect("a reply");
    reply.payload.map_or(0, |payload| payload.body.len())
}

/// A greeter that answers with the name it is given, so a long name makes a long reply.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoGreeter;

impl pb::helloworld::greeter_server::Greeter for EchoGreeter {
    fn say_hello(
        &self,
        request: fastgrpc::Request<pb::helloworld::HelloRequest>,
    ) -> impl fastgrpc::RpcFuture<pb::helloworld::HelloReply> {
        fastgrpc::FastFuture::ok(fastgrpc::Response::new(pb::helloworld::HelloReply {
            message: request.into_inner().name,
        }))
    }
}

/// A `SayHello` request for tonic's client.
pub fn hello(name: &str) -> tonic_pb::helloworld::HelloRequest {
    tonic_pb::helloworld::HelloRequest { name: name.into() }
}

/// A `SayHello` request's body: one uncompressed gRPC frame.
pub fn hello_frame(name: &str) -> Bytes {
    use prost::Message;
    frame(&pb::helloworld::HelloRequest { name: name.into() }.encode_to_vec())
}

/// The guide's examples (`docs/GUIDE.md`) as doc tests. They use the generated code of the
/// workspace's test protos, which the published crate does not build, so they run here; the
/// runtime crate shows the same guide in its documentation.
#[cfg(doctest)]
#[doc = include_str!("../../docs/GUIDE.md")]
pub struct Guide;
