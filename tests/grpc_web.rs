//! gRPC-Web on the same port as gRPC, over HTTP/2: binary and base64 text, unary and server
//! streaming, statuses, bad input, and the inline path.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status};
use prost::Message;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    ResponseParameters, SimpleRequest, SimpleResponse, StreamingOutputCallRequest,
    StreamingOutputCallResponse,
};
use support::web::{frames, from_text};
use support::{RawResponse, TestServer, frame, raw_request, sized, until};

/// `UnaryCall` answers a payload of `response_size` bytes, or the status `response_status`
/// asks for; `StreamingOutputCall` answers one message per `response_parameters` entry.
struct Web;

impl TestService for Web {
    support::boxed_reply_streams!();

    fn unary_call(&self, request: Request<SimpleRequest>) -> impl RpcFuture<SimpleResponse> {
        let request = request.into_inner();
        if let Some(status) = request.response_status {
            return FastFuture::err(Status::new(status.code.into(), status.message));
        }
        FastFuture::ok(Response::new(SimpleResponse {
            payload: Some(support::zeros(request.response_size)),
            ..Default::default()
        }))
    }

    fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> impl RpcFuture<Self::StreamingOutputCallStream> {
        FastFuture::ok(Response::new(support::replies_as_asked(request)))
    }
}

async fn web_server() -> (TestServer, fastgrpc::transport::ServerStats) {
    let builder = Server::builder().add_service(TestServiceServer::new(Web));
    let stats = builder.stats();
    (TestServer::start(builder).await, stats)
}

/// A gRPC-Web call over HTTP/2 with `content_type` and `body` as given.
async fn web_call(
    server: &TestServer,
    method: &str,
    content_type: &str,
    body: Bytes,
) -> RawResponse {
    raw_request(
        server.addr,
        http::Method::POST,
        &format!("/grpc.testing.TestService/{method}"),
        &[("content-type", content_type), ("x-grpc-web", "1")],
        body,
    )
    .await
}

fn trailer_lines(trailers: &[u8]) -> Vec<String> {
    std::str::from_utf8(trailers)
        .unwrap()
        .split("\r\n")
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_binary_unary_call_answers_its_message_then_the_trailers_in_the_body() {
    let (server, stats) = web_server().await;
    let response = web_call(
        &server,
        "UnaryCall",
        "application/grpc-web+proto",
        sized(10),
    )
    .await;
    assert_eq!(response.status, http::StatusCode::OK);
    assert_eq!(
        response.headers["content-type"],
        "application/grpc-web+proto"
    );
    assert!(
        response.trailers.is_none(),
        "no HTTP trailers: {response:?}"
    );
    let frames = frames(&response.body);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0].0, 0);
    let reply = SimpleResponse::decode(&frames[0].1[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 10);
    assert_eq!(frames[1].0, 0x80);
    assert_eq!(trailer_lines(&frames[1].1), ["grpc-status:0"]);
    // Ready, so answered inline: no task.
    assert_eq!(stats.call_tasks_spawned(), 0);
    server.stop().await;
}

#[tokio::test]
async fn a_text_call_is_base64_both_ways() {
    let (server, _) = web_server().await;
    let body = Bytes::from(BASE64.encode(sized(3)));
    for content_type in [
        "application/grpc-web-text",
        "application/grpc-web-text+proto",
    ] {
        let response = web_call(&server, "UnaryCall", content_type, body.clone()).await;
        assert_eq!(
            response.headers["content-type"],
            "application/grpc-web-text+proto"
        );
        let frames = frames(&from_text(&response.body));
        let reply = SimpleResponse::decode(&frames[0].1[..]).unwrap();
        assert_eq!(reply.payload.unwrap().body.len(), 3);
        assert_eq!(trailer_lines(&frames[1].1), ["grpc-status:0"]);
    }
    // A body that is several padded encodings one after the other, as chunked clients send.
    let request = sized(3);
    let (first, second) = request.split_at(4);
    let body = format!("{}{}", BASE64.encode(first), BASE64.encode(second));
    let response = web_call(
        &server,
        "UnaryCall",
        "application/grpc-web-text",
        body.into(),
    )
    .await;
    let frames = frames(&from_text(&response.body));
    assert_eq!(trailer_lines(&frames[1].1), ["grpc-status:0"]);
    server.stop().await;
}

#[tokio::test]
async fn a_server_stream_answers_every_message_then_the_trailers() {
    let (server, _) = web_server().await;
    let request = StreamingOutputCallRequest {
        response_parameters: [1, 20, 300]
            .into_iter()
            .map(|size| ResponseParameters {
                size,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let response = web_call(
        &server,
        "StreamingOutputCall",
        "application/grpc-web",
        frame(&request.encode_to_vec()),
    )
    .await;
    let frames = frames(&response.body);
    let sizes: Vec<usize> = frames[..3]
        .iter()
        .map(|(flag, message)| {
            assert_eq!(*flag, 0);
            let reply = StreamingOutputCallResponse::decode(&message[..]).unwrap();
            reply.payload.unwrap().body.len()
        })
        .collect();
    assert_eq!(sizes, [1, 20, 300]);
    assert_eq!(frames[3].0, 0x80);
    assert_eq!(trailer_lines(&frames[3].1), ["grpc-status:0"]);
    assert_eq!(frames.len(), 4);
    server.stop().await;
}

#[tokio::test]
async fn a_failed_call_answers_its_status_in_web_form() {
    let (server, _) = web_server().await;
    let failing = SimpleRequest {
        response_status: Some(support::pb::grpc_testing::EchoStatus {
            code: 9,
            message: "not now".into(),
        }),
        ..Default::default()
    };
    let response = web_call(
        &server,
        "UnaryCall",
        "application/grpc-web+proto",
        frame(&failing.encode_to_vec()),
    )
    .await;
    // Trailers-only: the status in the headers, where gRPC-Web clients read it too.
    assert_eq!(
        response.headers["content-type"],
        "application/grpc-web+proto"
    );
    assert_eq!(response.grpc_status(), Some("9"));
    assert_eq!(response.grpc_message().as_deref(), Some("not now"));
    assert!(response.body.is_empty());

    // An unknown method, the same way.
    let response = web_call(&server, "NoSuchCall", "application/grpc-web", sized(1)).await;
    assert_eq!(response.grpc_status(), Some("12"));
    assert_eq!(
        response.headers["content-type"],
        "application/grpc-web+proto"
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_text_bodies_get_internal_and_other_content_types_415() {
    let (server, _) = web_server().await;
    for body in [&b"not base64!"[..], b"AAAAA"] {
        let response = web_call(
            &server,
            "UnaryCall",
            "application/grpc-web-text",
            Bytes::copy_from_slice(body),
        )
        .await;
        assert_eq!(response.grpc_status(), Some("13"), "{body:?}: {response:?}");
        assert!(
            response.grpc_message().unwrap().contains("base64"),
            "{response:?}"
        );
    }
    // A frame that declares more than it carries, as in gRPC.
    let truncated = Bytes::from_static(b"\0\0\0\0\x10abc");
    let response = web_call(&server, "UnaryCall", "application/grpc-web", truncated).await;
    assert_eq!(response.grpc_status(), Some("13"), "{response:?}");
    let response = web_call(
        &server,
        "UnaryCall",
        "application/grpc-web+thrift",
        sized(1),
    )
    .await;
    assert_eq!(response.status, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    server.stop().await;
}

#[tokio::test]
async fn a_text_body_that_arrives_in_pieces_is_decoded_as_it_comes() {
    let (server, stats) = web_server().await;
    let text = BASE64.encode(sized(40));
    // Split inside a base64 group; the rest is sent once the call has started, waiting for it.
    let (first, second) = text.split_at(7);
    let mut client = support::h2_client(&server, 1 << 20).await;
    let mut request = support::grpc_post(&server, "/grpc.testing.TestService/UnaryCall");
    request.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/grpc-web-text"),
    );
    let (response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(Bytes::copy_from_slice(first.as_bytes()), false)
        .unwrap();
    until("the call waits for the rest of its body", || {
        stats.call_tasks() == 1
    })
    .await;
    send.send_data(Bytes::copy_from_slice(second.as_bytes()), true)
        .unwrap();
    let (parts, mut body) = response.await.unwrap().into_parts();
    assert_eq!(
        parts.headers["content-type"],
        "application/grpc-web-text+proto"
    );
    let mut received = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        received.extend_from_slice(&chunk);
    }
    let frames = frames(&from_text(&received));
    let reply = SimpleResponse::decode(&frames[0].1[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 40);
    assert_eq!(trailer_lines(&frames[1].1), ["grpc-status:0"]);
    assert_eq!(
        stats.call_tasks_spawned(),
        1,
        "it waited for its body in a task"
    );
    server.stop().await;
}

/// A browser's preflight for a gRPC-Web call from a page of `origin`.
async fn preflight(server: &TestServer, origin: &str) -> RawResponse {
    raw_request(
        server.addr,
        http::Method::OPTIONS,
        "/grpc.testing.TestService/UnaryCall",
        &[
            ("origin", origin),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type,x-grpc-web,grpc-timeout",
            ),
        ],
        Bytes::new(),
    )
    .await
}

#[tokio::test]
async fn pages_of_any_origin_may_call_without_credentials_by_default() {
    let (server, _) = web_server().await;
    let response = preflight(&server, "https://app.example").await;
    assert_eq!(response.status, http::StatusCode::NO_CONTENT);
    assert_eq!(response.headers["access-control-allow-origin"], "*");
    assert_eq!(
        response.headers["access-control-allow-headers"],
        "content-type,x-grpc-web,grpc-timeout"
    );
    assert!(
        response.headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert!(
        response
            .headers
            .get("access-control-allow-credentials")
            .is_none()
    );

    let call = raw_request(
        server.addr,
        http::Method::POST,
        "/grpc.testing.TestService/UnaryCall",
        &[
            ("content-type", "application/grpc-web+proto"),
            ("origin", "https://app.example"),
        ],
        sized(1),
    )
    .await;
    assert_eq!(call.headers["access-control-allow-origin"], "*");
    let exposed = call.headers["access-control-expose-headers"]
        .to_str()
        .unwrap();
    assert!(exposed.contains("grpc-status") && exposed.contains("grpc-message"));
    // gRPC itself is not for browsers: no CORS headers there.
    let grpc = raw_request(
        server.addr,
        http::Method::POST,
        "/grpc.testing.TestService/UnaryCall",
        &[
            ("content-type", "application/grpc"),
            ("origin", "https://app.example"),
        ],
        sized(1),
    )
    .await;
    assert!(grpc.headers.get("access-control-allow-origin").is_none());
    // An OPTIONS that is no preflight is still not allowed.
    let options = raw_request(
        server.addr,
        http::Method::OPTIONS,
        "/grpc.testing.TestService/UnaryCall",
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(options.status, http::StatusCode::METHOD_NOT_ALLOWED);
    server.stop().await;
}

#[tokio::test]
async fn only_listed_origins_may_call_and_they_may_send_credentials() {
    let cors = fastgrpc::service::Cors::origins(["https://app.example"])
        .unwrap()
        .allow_credentials(true);
    let server = TestServer::start(
        Server::builder()
            .web_cors(cors)
            .add_service(TestServiceServer::new(Web)),
    )
    .await;
    let allowed = preflight(&server, "https://app.example").await;
    assert_eq!(allowed.status, http::StatusCode::NO_CONTENT);
    assert_eq!(
        allowed.headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(allowed.headers["access-control-allow-credentials"], "true");
    assert_eq!(allowed.headers["vary"], "origin");
    let refused = preflight(&server, "https://evil.example").await;
    assert_eq!(refused.status, http::StatusCode::FORBIDDEN);
    assert!(refused.headers.get("access-control-allow-origin").is_none());
    server.stop().await;
}

#[tokio::test]
async fn a_gzipped_grpc_web_request_is_decompressed() {
    let (server, _) = web_server().await;
    let request = SimpleRequest {
        response_size: 7,
        ..Default::default()
    };
    let body = support::compressed_frame(
        fastgrpc::CompressionEncoding::Gzip,
        &request.encode_to_vec(),
    );
    let response = raw_request(
        server.addr,
        http::Method::POST,
        "/grpc.testing.TestService/UnaryCall",
        &[
            ("content-type", "application/grpc-web+proto"),
            ("grpc-encoding", "gzip"),
        ],
        body,
    )
    .await;
    let frames = frames(&response.body);
    let reply = SimpleResponse::decode(&frames[0].1[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 7);
    assert_eq!(frames[1], (0x80, b"grpc-status:0\r\n".to_vec()));
    server.stop().await;
}
