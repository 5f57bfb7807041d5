//! HTTP/1.1 on the same listener as HTTP/2: gRPC-Web calls and CORS preflights served, plain
//! gRPC refused clearly, and hostile input (pipelining, slow headers, oversized or broken
//! bodies) answered without hangs.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use fastgrpc::{Request, Response, Server};
use prost::Message;
use support::http1::{Http1Response, responses};
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    Payload, SimpleRequest, SimpleResponse, StreamingInputCallRequest, StreamingInputCallResponse,
};
use support::web::{frames, from_text};
use support::{TestServer, frame, sized};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `UnaryCall` answers a payload of `response_size` bytes, echoing `x-echo` metadata, or, with
/// `fill_username`, never answers; `StreamingInputCall` adds up its requests' payload sizes.
struct Sized;

impl TestService for Sized {
    support::boxed_reply_streams!();

    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, fastgrpc::Status> {
        let echo = request.metadata().get("x-echo").cloned();
        let request = request.into_inner();
        if request.fill_username {
            std::future::pending::<()>().await;
        }
        let mut response = Response::new(SimpleResponse {
            payload: Some(Payload {
                r#type: 0,
                body: Bytes::from(vec![1; request.response_size as usize]),
            }),
            ..Default::default()
        });
        if let Some(echo) = echo {
            response.metadata_mut().insert("x-echo", echo);
        }
        Ok(response)
    }

    async fn streaming_input_call(
        &self,
        request: Request<fastgrpc::Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, fastgrpc::Status> {
        support::sum_payloads(request).await
    }
}

async fn server(builder: fastgrpc::Builder) -> (TestServer, fastgrpc::transport::ServerStats) {
    let builder = builder.add_service(TestServiceServer::new(Sized));
    let stats = builder.stats();
    (TestServer::start(builder).await, stats)
}

/// An HTTP/1.1 request's bytes, to `UnaryCall`.
fn request(method: &str, content_type: &str, extra: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    request_to("UnaryCall", method, content_type, extra, body)
}

/// An HTTP/1.1 request's bytes, to the test service's method `rpc` (or to `rpc` itself, a
/// path if it starts with `/`).
fn request_to(
    rpc: &str,
    method: &str,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let path = match rpc.starts_with('/') {
        true => rpc.to_owned(),
        false => format!("/grpc.testing.TestService/{rpc}"),
    };
    support::http1::request(method, &path, content_type, extra, body)
}

/// Sends `bytes` on a new connection and reads until the server closes it (bounded).
async fn exchange(server: &TestServer, bytes: &[u8]) -> Vec<u8> {
    support::http1::exchange(server.addr, bytes).await
}

const CLOSE: (&str, &str) = ("connection", "close");

/// A POST of `body` to `UnaryCall` with `content_type` and `extra` headers on a new connection
/// (closed after it); the answer.
async fn post(
    server: &TestServer,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> Http1Response {
    let mut headers = extra.to_vec();
    headers.push(CLOSE);
    let raw = exchange(server, &request("POST", content_type, &headers, body)).await;
    responses(&raw).remove(0)
}

#[tokio::test]
async fn grpc_web_calls_are_served_over_http1_inline() {
    let (server, stats) = server(Server::builder()).await;
    let response = &post(&server, "application/grpc-web+proto", &[], &sized(12)).await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/grpc-web+proto")
    );
    let frames = frames(&response.body);
    let reply = SimpleResponse::decode(&frames[0].1[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 12);
    assert_eq!(frames[1], (0x80, b"grpc-status:0\r\n".to_vec()));
    assert_eq!(stats.call_tasks_spawned(), 0, "a ready call needs no task");

    // The text form, too.
    let body = BASE64.encode(sized(3));
    let response = &post(&server, "application/grpc-web-text", &[], body.as_bytes()).await;
    assert_eq!(
        response.header("content-type"),
        Some("application/grpc-web-text+proto")
    );
    let decoded = from_text(&response.body);
    let reply = SimpleResponse::decode(&frames_of(&decoded)[0][..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 3);
    server.stop().await;
}

/// The message payloads of a decoded body's data frames.
fn frames_of(body: &[u8]) -> Vec<Vec<u8>> {
    frames(body)
        .into_iter()
        .filter(|(flag, _)| *flag == 0)
        .map(|(_, payload)| payload)
        .collect()
}

#[tokio::test]
async fn plain_grpc_over_http1_is_refused_with_505() {
    let (server, _) = server(Server::builder()).await;
    assert_eq!(
        post(&server, "application/grpc", &[], &sized(1))
            .await
            .status,
        505
    );
    server.stop().await;
}

#[tokio::test]
async fn a_preflight_over_http1_is_answered() {
    let (server, _) = server(Server::builder()).await;
    let raw = exchange(
        &server,
        &request(
            "OPTIONS",
            "text/plain",
            &[
                ("origin", "https://app.example"),
                ("access-control-request-method", "POST"),
                CLOSE,
            ],
            b"",
        ),
    )
    .await;
    let response = &responses(&raw)[0];
    assert_eq!(response.status, 204);
    assert_eq!(response.header("access-control-allow-origin"), Some("*"));
    server.stop().await;
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (server, _) = server(Server::builder()).await;
    let mut bytes = request("POST", "application/grpc-web", &[], &sized(1));
    bytes.extend(request("POST", "application/grpc-web", &[], &sized(2)));
    bytes.extend(request("POST", "application/grpc-web", &[CLOSE], &sized(3)));
    let raw = exchange(&server, &bytes).await;
    let sizes: Vec<usize> = responses(&raw)
        .iter()
        .map(|response| {
            let reply = SimpleResponse::decode(&frames_of(&response.body)[0][..]).unwrap();
            reply.payload.unwrap().body.len()
        })
        .collect();
    assert_eq!(sizes, [1, 2, 3]);
    server.stop().await;
}

#[tokio::test]
async fn bad_bodies_over_http1_get_their_status() {
    let (server, _) = server(Server::builder()).await;
    // A message larger than the 4 MiB limit, declared in its frame header.
    let mut oversized = vec![0u8];
    oversized.extend((5u32 << 20).to_be_bytes());
    oversized.extend([0u8; 100]);
    let response = &post(&server, "application/grpc-web", &[], &oversized).await;
    assert_eq!(response.header("grpc-status"), Some("8"), "{response:?}");

    let response = &post(&server, "application/grpc-web-text", &[], b"not base64!").await;
    let trailers = String::from_utf8_lossy(&response.body).into_owned();
    let status = response
        .header("grpc-status")
        .map(str::to_owned)
        .unwrap_or(trailers);
    assert!(status.contains("13"), "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_sends_its_headers_too_slowly_is_cut_off() {
    let (server, _) = server(Server::builder().handshake_timeout(Duration::from_millis(300))).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    // A request line and one header, then nothing more.
    tcp.write_all(b"POST /grpc.testing.TestService/UnaryCall HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(_))),
        "closed cleanly within 5 s: {closed:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    server.stop().await;
}

/// An idle keep-alive connection outlives the head timeout (a client pool reuses it after a
/// pause), and is closed once idle for the idle timeout (within one head timeout more).
#[tokio::test]
async fn an_idle_keep_alive_connection_is_kept_until_the_idle_timeout() {
    let head = Duration::from_millis(200);
    let idle = Duration::from_millis(1500);
    let (server, _) = server(
        Server::builder()
            .handshake_timeout(head)
            .http1_idle_timeout(idle),
    )
    .await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&connect_call(false)).await.unwrap();
    let first = support::http1::read_sized(&mut tcp).await.unwrap();
    assert_eq!(first.status, 200, "{first:?}");
    // Idle for three head timeouts, more than the one or two that close a head begun: what is
    // tested is time passing.
    tokio::time::sleep(3 * head).await;
    tcp.write_all(&connect_call(false)).await.unwrap();
    let second = support::http1::read_sized(&mut tcp)
        .await
        .expect("the idle connection is still open and serves its next request");
    assert_eq!(second.status, 200, "{second:?}");
    let answered = Instant::now();
    // Then nothing: closed after the idle timeout.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(0))),
        "closed cleanly within 10 s: {closed:?}"
    );
    let open = answered.elapsed();
    // Within one head timeout of the idle one, with slack for a loaded machine.
    assert!(open >= idle, "{open:?}");
    assert!(open < idle + head + Duration::from_secs(2), "{open:?}");
    server.stop().await;
}

/// After an idle pause, a request head that begins and does not end is cut off by the head
/// timeout, not kept for the idle one.
#[tokio::test]
async fn a_head_begun_on_an_idle_connection_has_the_head_timeout() {
    let head = Duration::from_millis(200);
    let (server, _) = server(
        Server::builder()
            .handshake_timeout(head)
            .http1_idle_timeout(Duration::from_secs(60)),
    )
    .await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&connect_call(false)).await.unwrap();
    let first = support::http1::read_sized(&mut tcp).await.unwrap();
    assert_eq!(first.status, 200, "{first:?}");
    tokio::time::sleep(3 * head).await;
    tcp.write_all(b"POST /grpc.testing.TestService/UnaryCall HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let begun = Instant::now();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(_))),
        "closed cleanly within 10 s: {closed:?}"
    );
    let open = begun.elapsed();
    assert!(open >= head, "{open:?}");
    assert!(open < 2 * head + Duration::from_secs(2), "{open:?}");
    server.stop().await;
}

/// A Connect unary call (`application/proto`) to `UnaryCall` over HTTP/1.1, kept alive:
/// answered at once, or with `fill_username` only at its `connect-timeout-ms` deadline.
fn connect_call(waits: bool) -> Vec<u8> {
    let message = SimpleRequest {
        fill_username: waits,
        ..Default::default()
    };
    request(
        "POST",
        "application/proto",
        &[("connect-timeout-ms", "600")],
        &message.encode_to_vec(),
    )
}

/// A small body is read whole before its call starts, however it arrives: in pieces, and then
/// in one piece on the same kept-alive connection (where the call ends at its last byte).
#[tokio::test]
async fn a_small_body_sent_in_pieces_is_read_whole_and_the_connection_goes_on() {
    let (server, stats) = server(Server::builder()).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    let call = |size: i32| {
        let message = SimpleRequest {
            response_size: size,
            ..Default::default()
        };
        request("POST", "application/proto", &[], &message.encode_to_vec())
    };
    let first = call(5);
    let (head_and_some, rest) = first.split_at(first.len() - 1);
    tcp.write_all(head_and_some).await.unwrap();
    tcp.flush().await.unwrap();
    // The last byte goes in a write of its own, after a yield: the server, which cannot answer
    // without it, most likely reads the body in two pieces.
    tokio::task::yield_now().await;
    tcp.write_all(rest).await.unwrap();
    let answer = support::http1::read_sized(&mut tcp).await.unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    let reply = SimpleResponse::decode(&answer.body[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 5);

    tcp.write_all(&call(7)).await.unwrap();
    let answer = support::http1::read_sized(&mut tcp).await.unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    let reply = SimpleResponse::decode(&answer.body[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 7);
    assert_eq!(stats.call_tasks_spawned(), 0, "both were ready calls");
    drop(tcp);
    server.stop().await;
}

#[tokio::test]
async fn an_answer_in_progress_at_the_maximum_age_closes_the_connection_after_it() {
    let (server, _) =
        server(Server::builder().max_connection_age(Duration::from_millis(200))).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&connect_call(true)).await.unwrap();
    // The age passes while the call waits for its 600 ms deadline.
    let answer = last_answer(&mut tcp).await;
    assert_eq!(answer.status, 504, "{answer:?}");
    server.stop().await;
}

/// An answer given before its request's body was read to the end (a message over the limit,
/// refused as soon as its size shows) says `connection: close`: the bytes left unread stand
/// before any next request, so the connection cannot go on, and a client that pools
/// connections must know not to send another on it.
#[tokio::test]
async fn an_answer_before_the_body_is_read_closes_the_connection_and_says_so() {
    let service = TestServiceServer::new(Sized).max_decoding_message_size(1024);
    let server = TestServer::start(Server::builder().add_service(service)).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    // Larger than what is read before the call starts: the call reads it as it arrives.
    let declared = 256 * 1024;
    let mut bytes = head_declaring(declared);
    // Half of the body: the rest never comes.
    bytes.extend(vec![0x0a; declared / 2]);
    tcp.write_all(&bytes).await.unwrap();
    let answer = last_answer(&mut tcp).await;
    assert_eq!(answer.status, 429, "{answer:?}");
    server.stop().await;
}

/// The head of a Connect call to `UnaryCall` that declares a body of `len` bytes, sent apart.
fn head_declaring(len: usize) -> Vec<u8> {
    let head = request("POST", "application/proto", &[], &[]);
    let head = String::from_utf8(head).unwrap();
    head.replace(
        "content-length: 0\r\n",
        &format!("content-length: {len}\r\n"),
    )
    .into_bytes()
}

/// A server that answers before reading its request's body (a message over the limit) and
/// closes: a client still writing that body reads the whole answer, and then the end of the
/// connection, not a reset. The server reads and drops what the client still sends before it
/// closes (`transport/linger.rs`); closing with those bytes unread would make its kernel answer
/// RST, and the client's writes fail before it reads the answer.
#[tokio::test]
async fn an_early_answer_reaches_a_client_still_sending_its_body_then_a_clean_close() {
    let service = TestServiceServer::new(Sized).max_decoding_message_size(1024);
    let server = TestServer::start(Server::builder().add_service(service)).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    // More than the sockets' buffers hold while nobody reads, and less than what a lingering
    // close reads.
    let declared = 2 << 20;
    tcp.write_all(&head_declaring(declared)).await.unwrap();
    let (mut reader, mut writer) = tcp.split();
    let sending = async {
        let chunk = [0x0a; 16 * 1024];
        for _ in 0..declared / chunk.len() {
            writer.write_all(&chunk).await?;
        }
        writer.shutdown().await
    };
    let reading = async {
        let answer = support::http1::read_sized(&mut reader).await;
        let mut rest = Vec::new();
        (answer, reader.read_to_end(&mut rest).await)
    };
    let (sent, (answer, end)) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(sending, reading)
    })
    .await
    .expect("the exchange ends within 10 s");
    let answer = answer.expect("the answer is read, not lost to a reset");
    assert_eq!(answer.status, 429, "{answer:?}");
    assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
    assert!(
        matches!(end, Ok(0)),
        "then a clean close, not a reset: {end:?}"
    );
    assert!(sent.is_ok(), "the whole body went out: {sent:?}");
    server.stop().await;
}

/// A client that never stops sending after an early answer does not keep the server reading:
/// the connection is closed under it, after a bounded time and number of bytes.
#[tokio::test]
async fn a_client_that_never_stops_sending_after_an_early_answer_is_closed_on() {
    let service = TestServiceServer::new(Sized).max_decoding_message_size(1024);
    let server = TestServer::start(Server::builder().add_service(service)).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&head_declaring(1 << 40)).await.unwrap();
    let (mut reader, mut writer) = tcp.split();
    // The test's own bound: far more than the server reads while it lingers plus what both
    // sockets' buffers can hold.
    let most = 256 << 20;
    let sending = async {
        let chunk = [0x0a; 64 * 1024];
        let mut sent = 0;
        while sent < most {
            if writer.write_all(&chunk).await.is_err() {
                return Some(sent);
            }
            sent += chunk.len();
        }
        None
    };
    let reading = async {
        let answer = support::http1::read_sized(&mut reader).await;
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest).await;
        answer
    };
    let (sent, answer) = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::join!(sending, reading)
    })
    .await
    .expect("the server closes within 10 s");
    let answer = answer.expect("the answer is read");
    assert_eq!(answer.status, 429, "{answer:?}");
    assert!(
        sent.is_some(),
        "the server still read after {most} bytes: not closed"
    );
    server.stop().await;
}

/// HTTP/1.1 has no GOAWAY: a connection closed while idle could lose a request already on its
/// way, so one past its age closes after its next answer instead.
#[tokio::test]
async fn an_idle_connection_past_its_maximum_age_closes_after_its_next_answer() {
    let age = Duration::from_millis(200);
    let (server, _) = server(Server::builder().max_connection_age(age)).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    let opened = Instant::now();
    tcp.write_all(&connect_call(false)).await.unwrap();
    let first = support::http1::read_sized(&mut tcp).await.unwrap();
    assert_eq!(first.status, 200, "{first:?}");
    // Idle past the age (give or take its 10%): what is tested is time passing.
    tokio::time::sleep((age * 2).saturating_sub(opened.elapsed())).await;
    tcp.write_all(&connect_call(false)).await.unwrap();
    let next = last_answer(&mut tcp).await;
    assert_eq!(next.status, 200, "{next:?}");
    server.stop().await;
}

/// The answer `tcp` reads next, which must say `connection: close` and be followed by a clean
/// close.
async fn last_answer(tcp: &mut TcpStream) -> Http1Response {
    let answer = support::http1::read_sized(tcp)
        .await
        .expect("the call is answered, not lost");
    assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(0))),
        "closed cleanly after it: {closed:?}"
    );
    answer
}

#[tokio::test]
async fn with_http1_off_every_connection_is_http2() {
    let (server, _) = server(Server::builder().accept_http1(false)).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&request(
        "POST",
        "application/grpc-web",
        &[CLOSE],
        &sized(1),
    ))
    .await
    .unwrap();
    // Taken for HTTP/2, whose handshake fails: the connection is closed (or reset) with no
    // HTTP/1 answer.
    let mut raw = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut raw)).await;
    assert!(read.is_ok(), "closed within 10 s");
    assert!(
        !raw.starts_with(b"HTTP/1.1"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    server.stop().await;
}

#[tokio::test]
async fn deadlines_and_metadata_hold_for_grpc_web_over_http1() {
    let (server, _) = server(Server::builder()).await;
    let never = frame(
        &SimpleRequest {
            fill_username: true,
            ..Default::default()
        }
        .encode_to_vec(),
    );
    let response = &post(
        &server,
        "application/grpc-web",
        &[("grpc-timeout", "50m")],
        &never,
    )
    .await;
    assert_eq!(response.header("grpc-status"), Some("4"), "{response:?}");

    let response = post(
        &server,
        "application/grpc-web",
        &[("x-echo", "seen")],
        &sized(1),
    )
    .await;
    assert_eq!(response.header("x-echo"), Some("seen"));
    server.stop().await;
}

#[tokio::test]
async fn a_request_stream_sent_whole_is_served_over_grpc_web() {
    // Browsers cannot stream requests, but a gRPC-Web client can send a whole request stream
    // in one body (Envoy's gRPC-Web filter passes such calls on): it is served.
    let (server, _) = server(Server::builder()).await;
    let mut body = Vec::new();
    for size in [3, 4, 5] {
        body.extend_from_slice(&frame(
            &StreamingInputCallRequest {
                payload: Some(Payload {
                    r#type: 0,
                    body: Bytes::from(vec![0; size]),
                }),
                ..Default::default()
            }
            .encode_to_vec(),
        ));
    }
    let raw = exchange(
        &server,
        &request_to(
            "StreamingInputCall",
            "POST",
            "application/grpc-web",
            &[CLOSE],
            &body,
        ),
    )
    .await;
    let response = &responses(&raw)[0];
    let reply = StreamingInputCallResponse::decode(&frames_of(&response.body)[0][..]).unwrap();
    assert_eq!(reply.aggregated_payload_size, 12);
    server.stop().await;
}

/// A service of its own (not generated, so nothing contained its panic) whose call waits, then
/// panics.
struct PanicsAfterWaiting;

impl fastgrpc::service::NamedService for PanicsAfterWaiting {
    const NAME: &'static str = "test.Panics";
}

impl fastgrpc::service::FastService for PanicsAfterWaiting {
    fn call(
        &self,
        _: http::Request<fastgrpc::service::RequestBody>,
    ) -> fastgrpc::service::ResponseFuture {
        fastgrpc::FastFuture::from_future(async {
            tokio::task::yield_now().await;
            panic!("the call panicked after waiting")
        })
    }
}

/// A call that panics while it waits ends with `INTERNAL` over HTTP/1.1, as over HTTP/2, and
/// the connection answers the next request (before, the panic reached hyper's connection task).
#[tokio::test]
async fn a_call_that_panics_after_waiting_is_internal_over_http1_and_the_connection_goes_on() {
    let server = TestServer::start(Server::builder().add_service(PanicsAfterWaiting)).await;
    let panicking = request_to(
        "/test.Panics/Call",
        "POST",
        "application/grpc-web",
        &[],
        &[0; 5],
    );
    let mut both = panicking.clone();
    both.extend(request_to(
        "/test.Panics/Call",
        "POST",
        "application/grpc-web",
        &[CLOSE],
        &[0; 5],
    ));
    let raw = exchange(&server, &both).await;
    let answers = responses(&raw);
    assert_eq!(answers.len(), 2, "both requests answered on one connection");
    for answer in &answers {
        assert_eq!(answer.header("grpc-status"), Some("13"), "{answer:?}");
    }
    server.stop().await;
}
