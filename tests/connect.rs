//! The Connect protocol's unary calls, and JSON over gRPC and gRPC-Web, on the same port and
//! handlers as gRPC: proto and JSON over HTTP/2 and HTTP/1.1, errors as HTTP statuses with
//! JSON bodies, metadata as headers and `trailer-` headers, `connect-timeout-ms`, compression,
//! and bad input answered clearly with the connection going on.

use std::time::Duration;

use bytes::Bytes;
use fastgrpc::{
    Code, CompressionEncoding, FastFuture, Request, Response, RpcFuture, Server, Status,
};
use futures_util::StreamExt;
use prost::Message;
use serde_json::{Value, json};
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    Payload, ResponseParameters, SimpleRequest, SimpleResponse, StreamingInputCallRequest,
    StreamingInputCallResponse, StreamingOutputCallRequest, StreamingOutputCallResponse,
};
use support::pb::jsontest::Scalars;
use support::pb::jsontest::json_test_server::JsonTestServer;
use support::{RawResponse, TestServer, frame, raw_request};

/// `UnaryCall` answers a payload of `response_size` zero bytes, with `x-echo` metadata
/// echoed as a header and `x-trailer` trailing metadata; or the status `response_status` asks
/// for (with details if its message is `details`); or, with `fill_username`, never; or, with
/// `fill_oauth_scope`, it panics.
struct Probe;

impl TestService for Probe {
    support::boxed_reply_streams!();

    /// One reply per `response_parameters` entry, each after its `interval_us`, then
    /// `x-trailer` trailing metadata; or the status `response_status` asks for, at once.
    fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> impl RpcFuture<Self::StreamingOutputCallStream> {
        let request = request.into_inner();
        if let Some(status) = request.response_status {
            return FastFuture::err(Status::new(status.code.into(), status.message));
        }
        let replies =
            futures_util::stream::iter(request.response_parameters).then(|p| async move {
                if p.interval_us > 0 {
                    tokio::time::sleep(Duration::from_micros(p.interval_us as u64)).await;
                }
                Ok(support::reply(p.size))
            });
        let mut response = Response::new(replies.boxed());
        let mut trailers = tonic::metadata::MetadataMap::new();
        trailers.insert("x-trailer", "streamed".parse().unwrap());
        response
            .extensions_mut()
            .insert(fastgrpc::Trailers(trailers));
        FastFuture::ok(response)
    }

    async fn streaming_input_call(
        &self,
        request: Request<fastgrpc::Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        support::sum_payloads(request).await
    }

    /// A reply per request, of the size its first response parameter asks for.
    fn full_duplex_call(
        &self,
        request: Request<fastgrpc::Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Self::FullDuplexCallStream> {
        let replies = request.into_inner().map(|request| {
            let request = request?;
            Ok(support::reply(
                request.response_parameters.first().map_or(0, |p| p.size),
            ))
        });
        FastFuture::ok(Response::new(replies.boxed()))
    }

    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let echo = request.metadata().get("x-echo").cloned();
        let request = request.into_inner();
        if let Some(status) = request.response_status {
            if status.message == "details" {
                return Err(Status::with_details(
                    Code::from(status.code),
                    "with details",
                    Bytes::from(details()),
                ));
            }
            return Err(Status::new(status.code.into(), status.message));
        }
        if request.fill_username {
            std::future::pending::<()>().await;
        }
        assert!(!request.fill_oauth_scope, "asked to panic");
        let mut response = Response::new(SimpleResponse {
            payload: Some(support::zeros(request.response_size)),
            ..Default::default()
        });
        if let Some(echo) = echo {
            response.metadata_mut().insert("x-echo", echo);
        }
        let mut trailers = tonic::metadata::MetadataMap::new();
        trailers.insert("x-trailer", "t".parse().unwrap());
        trailers.insert_bin(
            "x-raw-bin",
            tonic::metadata::MetadataValue::from_bytes(&[0, 1, 2]),
        );
        response
            .extensions_mut()
            .insert(fastgrpc::Trailers(trailers));
        Ok(response)
    }
}

/// An encoded `google.rpc.Status` with one detail, as `tonic-types` builds them.
fn details() -> Vec<u8> {
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
        #[prost(message, repeated, tag = "3")]
        details: Vec<fastgrpc::types::Any>,
    }
    RpcStatus {
        code: 5,
        message: "with details".into(),
        details: vec![fastgrpc::types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: vec![0x0a, 0x02, b'h', b'i'],
        }],
    }
    .encode_to_vec()
}

async fn server(builder: fastgrpc::Builder) -> TestServer {
    TestServer::start(
        builder
            .add_service(TestServiceServer::new(Probe).accept_compressed(CompressionEncoding::Gzip))
            .add_service(JsonTestServer::new(support::pb::JsonEcho)),
    )
    .await
}

const UNARY: &str = "/grpc.testing.TestService/UnaryCall";

/// A Connect unary POST over HTTP/2.
async fn post(
    server: &TestServer,
    path: &str,
    content_type: &str,
    extra: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> RawResponse {
    let mut headers = vec![("content-type", content_type)];
    headers.extend_from_slice(extra);
    raw_request(server.addr, http::Method::POST, path, &headers, body.into()).await
}

/// A Connect unary POST of `json` over HTTP/2.
async fn post_json(server: &TestServer, path: &str, json: Value) -> RawResponse {
    post(server, path, "application/json", &[], json.to_string()).await
}

fn body_json(response: &RawResponse) -> Value {
    serde_json::from_slice(&response.body).unwrap_or_else(|error| panic!("{error}: {response:?}"))
}

/// The JSON error a failed Connect call answers, checked to have Connect's content type.
fn error_of(response: &RawResponse) -> Value {
    assert_eq!(
        response.headers["content-type"], "application/json",
        "{response:?}"
    );
    assert!(
        response.trailers.is_none(),
        "no HTTP trailers: {response:?}"
    );
    body_json(response)
}

#[tokio::test]
async fn unary_calls_in_proto_and_json_are_answered_over_http2() {
    let server = server(Server::builder()).await;
    let request = SimpleRequest {
        response_size: 3,
        ..Default::default()
    };
    let response = post(
        &server,
        UNARY,
        "application/proto",
        &[],
        request.encode_to_vec(),
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.headers["content-type"], "application/proto");
    let reply = SimpleResponse::decode(response.body.clone()).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 3);
    assert!(
        response.trailers.is_none(),
        "Connect sends no HTTP trailers"
    );

    let response = post_json(&server, UNARY, json!({ "responseSize": 3 })).await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.headers["content-type"], "application/json");
    assert_eq!(
        body_json(&response),
        json!({ "payload": { "body": "AAAA" } })
    );

    // connect-protocol-version: 1 is accepted, as is its absence (above); another is not.
    let versioned = [("connect-protocol-version", "1")];
    let response = post(&server, UNARY, "application/json", &versioned, "{}").await;
    assert_eq!(response.status, 200, "{response:?}");
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("connect-protocol-version", "2")],
        "{}",
    )
    .await;
    assert_eq!(response.status, 400);
    assert_eq!(error_of(&response)["code"], "invalid_argument");
    server.stop().await;
}

#[tokio::test]
async fn unary_calls_in_proto_and_json_are_answered_over_http1() {
    let server = server(Server::builder()).await;
    let body = json!({ "responseSize": 2 }).to_string();
    let request = support::http1::request(
        "POST",
        UNARY,
        "application/json",
        &[("connection", "close"), ("x-echo", "over 1.1")],
        body.as_bytes(),
    );
    let raw = support::http1::exchange(server.addr, &request).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.header("x-echo"), Some("over 1.1"));
    assert_eq!(response.header("trailer-x-trailer"), Some("t"));
    let reply: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(reply, json!({ "payload": { "body": "AAA=" } }));

    let proto = SimpleRequest {
        response_size: 1,
        ..Default::default()
    }
    .encode_to_vec();
    let request = support::http1::request(
        "POST",
        UNARY,
        "application/proto",
        &[("connection", "close")],
        &proto,
    );
    let raw = support::http1::exchange(server.addr, &request).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 200, "{response:?}");
    let reply = SimpleResponse::decode(&response.body[..]).unwrap();
    assert_eq!(reply.payload.unwrap().body.len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn metadata_goes_out_as_headers_and_trailing_metadata_as_trailer_headers() {
    let server = server(Server::builder()).await;
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("x-echo", "hello")],
        "{}",
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.headers["x-echo"], "hello");
    assert_eq!(response.headers["trailer-x-trailer"], "t");
    assert_eq!(response.headers["trailer-x-raw-bin"], "AAEC");
    for name in response.headers.keys() {
        assert!(
            !name.as_str().starts_with("grpc-"),
            "{name} leaked: {response:?}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn errors_are_the_http_status_and_a_json_body_with_code_message_and_details() {
    let server = server(Server::builder()).await;
    for (code, http, name) in [
        (5, 404, "not_found"),
        (3, 400, "invalid_argument"),
        (7, 403, "permission_denied"),
        (8, 429, "resource_exhausted"),
        (14, 503, "unavailable"),
        (16, 401, "unauthenticated"),
        (1, 499, "canceled"),
        (12, 501, "unimplemented"),
    ] {
        let request = json!({ "responseStatus": { "code": code, "message": "no ☺" } });
        let response = post_json(&server, UNARY, request).await;
        assert_eq!(response.status, http, "{name}: {response:?}");
        let error = error_of(&response);
        assert_eq!(error, json!({ "code": name, "message": "no ☺" }));
    }
    let request = json!({ "responseStatus": { "code": 5, "message": "details" } });
    let response = post_json(&server, UNARY, request).await;
    assert_eq!(
        error_of(&response),
        json!({
            "code": "not_found",
            "message": "with details",
            "details": [{ "type": "google.rpc.ErrorInfo", "value": "CgJoaQ" }],
        })
    );
    // A panic in the handler is `internal`, and the connection goes on (a fresh one here).
    let response = post_json(&server, UNARY, json!({ "fillOauthScope": true })).await;
    assert_eq!(response.status, 500);
    assert_eq!(error_of(&response)["code"], "internal");
    server.stop().await;
}

#[tokio::test]
async fn unknown_routes_are_404_with_an_unimplemented_body() {
    let server = server(Server::builder()).await;
    for path in ["/grpc.testing.TestService/Nope", "/no.Such/Service"] {
        let response = post_json(&server, path, json!({})).await;
        assert_eq!(response.status, 404, "{path}: {response:?}");
        assert_eq!(error_of(&response)["code"], "unimplemented");
    }
    server.stop().await;
}

#[tokio::test]
async fn connect_timeout_ms_sets_the_deadline_and_a_malformed_one_is_refused() {
    let server = server(Server::builder()).await;
    let hang = json!({ "fillUsername": true }).to_string();
    let started = std::time::Instant::now();
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("connect-timeout-ms", "50")],
        hang.clone(),
    )
    .await;
    assert_eq!(response.status, 504, "{response:?}");
    assert_eq!(error_of(&response)["code"], "deadline_exceeded");
    assert!(started.elapsed() >= Duration::from_millis(50));
    for bad in ["", "abc", "-1", "12345678901", "1.5"] {
        let response = post(
            &server,
            UNARY,
            "application/json",
            &[("connect-timeout-ms", bad)],
            "{}",
        )
        .await;
        assert_eq!(response.status, 400, "{bad:?}: {response:?}");
        assert_eq!(error_of(&response)["code"], "invalid_argument");
    }
    // A ready call within its deadline is answered as usual.
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("connect-timeout-ms", "10000")],
        "{}",
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    server.stop().await;

    // The server's own timeout is answered in Connect's form too.
    let timed = self::server(Server::builder().timeout(Duration::from_millis(50))).await;
    let response = post(&timed, UNARY, "application/json", &[], hang).await;
    assert_eq!(response.status, 504, "{response:?}");
    assert_eq!(error_of(&response)["code"], "deadline_exceeded");
    timed.stop().await;
}

#[tokio::test]
async fn content_encoding_and_accept_encoding_negotiate_compression() {
    let server = TestServer::start(
        Server::builder().add_service(
            TestServiceServer::new(Probe)
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip),
        ),
    )
    .await;
    let json = json!({ "responseSize": 100 }).to_string();
    let gzipped = support::compressed_frame(CompressionEncoding::Gzip, json.as_bytes()).slice(5..);
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("content-encoding", "gzip"), ("accept-encoding", "gzip")],
        gzipped,
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.headers["content-encoding"], "gzip");
    let reply = support::decompressed(CompressionEncoding::Gzip, &response.body);
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["payload"]["body"].as_str().unwrap().len(), 136);

    // Without accept-encoding the reply is plain.
    let response = post(&server, UNARY, "application/json", &[], json.clone()).await;
    assert!(response.headers.get("content-encoding").is_none());
    body_json(&response);

    // HTTP's weights: a weighted gzip is accepted, gzip at q=0 is refused.
    for (accepted, compressed) in [("br, gzip;q=0.8", true), ("gzip;q=0, br", false)] {
        let headers = [("accept-encoding", accepted)];
        let response = post(&server, UNARY, "application/json", &headers, json.clone()).await;
        assert_eq!(
            response.headers.contains_key("content-encoding"),
            compressed,
            "{accepted}: {response:?}"
        );
    }

    // An encoding the server does not accept is `unimplemented`, naming what it accepts.
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("content-encoding", "br")],
        json,
    )
    .await;
    assert_eq!(response.status, 501, "{response:?}");
    assert_eq!(error_of(&response)["code"], "unimplemented");
    assert!(
        response.headers["accept-encoding"]
            .to_str()
            .unwrap()
            .contains("gzip")
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_json_is_invalid_argument_and_the_connection_goes_on() {
    let server = server(Server::builder()).await;
    let mut client = support::h2_client(&server, 65_535).await;
    let cases = [
        "{nope",
        r#"{"responseSize": "many"}"#,
        r#"{"responseSize": 1, "responseSize": 2}"#,
        "[]",
        "",
    ];
    for body in cases {
        let request = http::Request::post(format!("{}{UNARY}", server.url()))
            .header("content-type", "application/json")
            .body(())
            .unwrap();
        let (response, mut send) = client.send_request(request, false).unwrap();
        send.send_data(Bytes::from(body), true).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), 400, "{body:?}");
        let mut body_stream = response.into_body();
        let mut answer = Vec::new();
        while let Some(chunk) = body_stream.data().await {
            answer.extend_from_slice(&chunk.unwrap());
        }
        let error: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(error["code"], "invalid_argument", "{body:?}: {error}");
    }
    // The same connection still serves a good call.
    let request = http::Request::post(format!("{}{UNARY}", server.url()))
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(Bytes::from_static(b"{}"), true).unwrap();
    assert_eq!(response.await.unwrap().status(), 200);
    server.stop().await;
}

#[tokio::test]
async fn an_oversized_message_is_resource_exhausted() {
    let server = TestServer::start(
        Server::builder().add_service(TestServiceServer::new(Probe).max_decoding_message_size(64)),
    )
    .await;
    let big = json!({ "payload": { "body": "A".repeat(200) } });
    let response = post_json(&server, UNARY, big).await;
    assert_eq!(response.status, 429, "{response:?}");
    assert_eq!(error_of(&response)["code"], "resource_exhausted");
    server.stop().await;
}

#[tokio::test]
async fn google_protobuf_empty_is_the_empty_object() {
    let server = server(Server::builder()).await;
    let response = post_json(&server, "/jsontest.JsonTest/Ping", json!({})).await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(body_json(&response), json!({}));
    let response = post(
        &server,
        "/jsontest.JsonTest/Ping",
        "application/proto",
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert!(response.body.is_empty());
    // A field Empty does not have is skipped, as any unknown field; what is not an object is
    // refused.
    let response = post_json(&server, "/jsontest.JsonTest/Ping", json!({ "x": 1 })).await;
    assert_eq!(response.status, 200, "{response:?}");
    let response = post_json(&server, "/jsontest.JsonTest/Ping", json!([])).await;
    assert_eq!(response.status, 400, "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn json_rides_grpc_and_grpc_web_too() {
    let server = server(Server::builder()).await;
    let message = json!({ "s": "hi", "i64": "-5", "color": "COLOR_RED" });
    let response = post(
        &server,
        "/jsontest.JsonTest/Echo",
        "application/grpc+json",
        &[("te", "trailers")],
        frame(message.to_string().as_bytes()),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("0"), "{response:?}");
    assert_eq!(response.headers["content-type"], "application/grpc+json");
    let echoed: Value = serde_json::from_slice(&response.body[5..]).unwrap();
    assert_eq!(echoed, message);

    let response = post(
        &server,
        "/jsontest.JsonTest/Echo",
        "application/grpc-web+json",
        &[],
        frame(message.to_string().as_bytes()),
    )
    .await;
    assert_eq!(
        response.headers["content-type"],
        "application/grpc-web+json"
    );
    let frames = support::web::frames(&response.body);
    assert_eq!(frames.len(), 2, "{response:?}");
    let echoed: Value = serde_json::from_slice(&frames[0].1).unwrap();
    assert_eq!(echoed, message);

    // Bad JSON in a gRPC frame is INVALID_ARGUMENT.
    let response = post(
        &server,
        "/jsontest.JsonTest/Echo",
        "application/grpc+json",
        &[("te", "trailers")],
        frame(b"{\"i32\":\"one\"}"),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("3"), "{response:?}");
    server.stop().await;
}

/// A client built from a newer schema sends fields this server does not know: by default they
/// are skipped, in every JSON wire format, at any depth, and the rest of the message is read.
#[tokio::test]
async fn unknown_json_fields_are_skipped_by_default() {
    let server = server(Server::builder()).await;
    let response = post_json(
        &server,
        UNARY,
        json!({ "responseSize": 2, "noSuchField": { "deep": [1, null] } }),
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        body_json(&response),
        json!({ "payload": { "body": "AAA=" } })
    );

    let sent = json!({ "s": "kept", "child": { "value": "v", "added": 1 }, "color": "COLOR_NEW" });
    let response = post(
        &server,
        "/jsontest.JsonTest/Echo",
        "application/grpc+json",
        &[("te", "trailers")],
        frame(sent.to_string().as_bytes()),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("0"), "{response:?}");
    let echoed: Value = serde_json::from_slice(&response.body[5..]).unwrap();
    // An enum value name the server's enum lacks is skipped as an unknown field is.
    assert_eq!(echoed, json!({ "s": "kept", "child": { "value": "v" } }));
    server.stop().await;
}

#[tokio::test]
async fn pages_of_other_origins_may_call_as_cors_allows() {
    let server = server(
        Server::builder()
            .web_cors(fastgrpc::service::Cors::origins(["https://app.example"]).unwrap()),
    )
    .await;
    let origin = [("origin", "https://app.example")];
    let response = post(&server, UNARY, "application/json", &origin, "{}").await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.headers["access-control-allow-origin"],
        "https://app.example"
    );
    let preflight = raw_request(
        server.addr,
        http::Method::OPTIONS,
        UNARY,
        &[
            ("origin", "https://app.example"),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type,connect-protocol-version,connect-timeout-ms",
            ),
        ],
        Bytes::new(),
    )
    .await;
    assert_eq!(preflight.status, 204, "{preflight:?}");
    assert_eq!(
        preflight.headers["access-control-allow-headers"],
        "content-type,connect-protocol-version,connect-timeout-ms"
    );
    let other = [("origin", "https://evil.example")];
    let response = post(&server, UNARY, "application/json", &other, "{}").await;
    assert!(
        response
            .headers
            .get("access-control-allow-origin")
            .is_none()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_strict_server_refuses_unknown_json_fields() {
    let server = server(Server::builder().reject_unknown_json_fields(true)).await;
    let response = post_json(&server, UNARY, json!({ "responseSize": 2, "nam": "typo" })).await;
    assert_eq!(response.status, 400, "{response:?}");
    let error = error_of(&response);
    assert_eq!(error["code"], "invalid_argument");
    assert!(
        error["message"].as_str().unwrap().contains("nam"),
        "{error}"
    );
    // A known field alone is still served.
    let response = post_json(&server, UNARY, json!({ "responseSize": 2 })).await;
    assert_eq!(response.status, 200, "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_connect_body_that_is_not_protobuf_is_invalid_argument_and_grpc_keeps_internal() {
    let server = server(Server::builder()).await;
    // Field 1 declaring 50 bytes but holding 2.
    let broken: &[u8] = &[0x0a, 50, b'h', b'i'];
    let response = post(&server, UNARY, "application/proto", &[], broken).await;
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(error_of(&response)["code"], "invalid_argument");
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+proto",
        &[],
        frame(broken),
    )
    .await;
    let envelopes = envelopes_in(&response);
    let end: Value = serde_json::from_slice(&envelopes.last().unwrap().1).unwrap();
    assert_eq!(end["error"]["code"], "invalid_argument", "{end}");
    let response = post(
        &server,
        UNARY,
        "application/grpc",
        &[("te", "trailers")],
        frame(broken),
    )
    .await;
    assert_eq!(response.grpc_status(), Some("13"), "as grpc-go answers");
    server.stop().await;
}

#[tokio::test]
async fn a_refused_http1_request_is_read_before_the_answer() {
    let server = server(Server::builder()).await;
    // Larger than a socket buffer: the server must read it all for the client to finish
    // writing and then read the answer (the next request on the connection too).
    let body = vec![b'x'; 4 << 20];
    let mut bytes = support::http1::request("POST", UNARY, "text/plain", &[], &body);
    bytes.extend(support::http1::request(
        "POST",
        UNARY,
        "application/json",
        &[("connection", "close")],
        b"{}",
    ));
    let raw = support::http1::exchange(server.addr, &bytes).await;
    let responses = support::http1::responses(&raw);
    assert_eq!(responses.len(), 2, "both answered on one connection");
    assert_eq!(responses[0].status, 415);
    assert!(String::from_utf8_lossy(&responses[0].body).contains("Connect"));
    assert_eq!(responses[1].status, 200);
    server.stop().await;
}

const SERVER_STREAM: &str = "/grpc.testing.TestService/StreamingOutputCall";
const CLIENT_STREAM: &str = "/grpc.testing.TestService/StreamingInputCall";
const BIDI: &str = "/grpc.testing.TestService/FullDuplexCall";

/// A request asking for replies of `sizes` bytes, each `interval_us` apart.
fn asking(sizes: &[i32], interval_us: i32) -> StreamingOutputCallRequest {
    StreamingOutputCallRequest {
        response_parameters: sizes
            .iter()
            .map(|&size| ResponseParameters {
                size,
                interval_us,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A streaming answer's envelopes: (flag, payload).
fn envelopes_in(response: &RawResponse) -> Vec<(u8, Vec<u8>)> {
    assert_eq!(response.status, 200, "{response:?}");
    assert!(
        response.trailers.is_none(),
        "no HTTP trailers: {response:?}"
    );
    support::web::frames(&response.body)
}

/// The end-of-stream message of a streaming answer, checked to be its last envelope.
fn end_of(envelopes: &[(u8, Vec<u8>)]) -> Value {
    let (flag, json) = envelopes.last().expect("an end-of-stream envelope");
    assert_eq!(*flag, 0x02, "the last envelope ends the stream");
    serde_json::from_slice(json).unwrap()
}

#[tokio::test]
async fn server_streaming_over_connect_in_proto_and_json() {
    let server = server(Server::builder()).await;
    let request = asking(&[3, 0, 5], 0);
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+proto",
        &[],
        frame(&request.encode_to_vec()),
    )
    .await;
    assert_eq!(
        response.headers["content-type"],
        "application/connect+proto"
    );
    let envelopes = envelopes_in(&response);
    assert_eq!(
        envelopes.len(),
        4,
        "three replies and the end: {envelopes:?}"
    );
    for (envelope, size) in envelopes.iter().zip([3, 0, 5]) {
        assert_eq!(envelope.0, 0);
        let reply = StreamingOutputCallResponse::decode(&envelope.1[..]).unwrap();
        assert_eq!(reply.payload.map_or(0, |p| p.body.len()), size);
    }
    assert_eq!(
        end_of(&envelopes),
        json!({ "metadata": { "x-trailer": ["streamed"] } })
    );

    let json_request = json!({ "responseParameters": [{ "size": 2 }, { "size": 1 }] });
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+json",
        &[],
        frame(json_request.to_string().as_bytes()),
    )
    .await;
    assert_eq!(response.headers["content-type"], "application/connect+json");
    let envelopes = envelopes_in(&response);
    let replies: Vec<Value> = envelopes[..2]
        .iter()
        .map(|(_, json)| serde_json::from_slice(json).unwrap())
        .collect();
    assert_eq!(
        replies,
        [
            json!({ "payload": { "body": "AAA=" } }),
            json!({ "payload": { "body": "AA==" } })
        ]
    );
    assert_eq!(envelopes.len(), 3);
    server.stop().await;
}

#[tokio::test]
async fn a_stream_that_fails_ends_with_the_error_in_its_end_of_stream_message() {
    let server = server(Server::builder()).await;
    let failing = StreamingOutputCallRequest {
        response_status: Some(support::pb::grpc_testing::EchoStatus {
            code: 9,
            message: "not now".into(),
        }),
        ..Default::default()
    };
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+proto",
        &[],
        frame(&failing.encode_to_vec()),
    )
    .await;
    let envelopes = envelopes_in(&response);
    assert_eq!(envelopes.len(), 1, "the end alone: {envelopes:?}");
    assert_eq!(
        end_of(&envelopes),
        json!({ "error": { "code": "failed_precondition", "message": "not now" } })
    );

    // An envelope that the body ends inside of.
    let mut truncated = frame(&asking(&[1], 0).encode_to_vec()).to_vec();
    truncated.truncate(truncated.len() - 1);
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+proto",
        &[],
        truncated,
    )
    .await;
    assert_eq!(
        end_of(&envelopes_in(&response))["error"]["code"],
        "internal"
    );

    // An envelope with flags a client may not send.
    let mut flagged = frame(&asking(&[1], 0).encode_to_vec()).to_vec();
    flagged[0] = 0x02;
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+proto",
        &[],
        flagged,
    )
    .await;
    assert_eq!(
        end_of(&envelopes_in(&response))["error"]["code"],
        "internal"
    );

    // An unknown route is an HTTP 404, as for unary calls.
    let response = post(
        &server,
        "/grpc.testing.TestService/Nope",
        "application/connect+proto",
        &[],
        Bytes::new(),
    )
    .await;
    assert_eq!(response.status, 404, "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn connect_timeout_ms_ends_a_stream_that_runs_past_it() {
    let server = server(Server::builder()).await;
    let started = std::time::Instant::now();
    let response = post(
        &server,
        SERVER_STREAM,
        "application/connect+proto",
        &[("connect-timeout-ms", "150")],
        frame(&asking(&[1, 1, 1, 1], 100_000).encode_to_vec()),
    )
    .await;
    let envelopes = envelopes_in(&response);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(envelopes.len() < 5, "the stream was cut: {envelopes:?}");
    assert_eq!(end_of(&envelopes)["error"]["code"], "deadline_exceeded");
    server.stop().await;
}

#[tokio::test]
async fn client_and_bidi_streaming_over_connect() {
    let server = server(Server::builder()).await;
    let mut body = Vec::new();
    for size in [10, 20, 30] {
        let message = StreamingInputCallRequest {
            payload: Some(Payload {
                body: vec![0; size].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        body.extend_from_slice(&frame(&message.encode_to_vec()));
    }
    let response = post(
        &server,
        CLIENT_STREAM,
        "application/connect+proto",
        &[],
        body,
    )
    .await;
    let envelopes = envelopes_in(&response);
    assert_eq!(envelopes.len(), 2, "{envelopes:?}");
    let reply = StreamingInputCallResponse::decode(&envelopes[0].1[..]).unwrap();
    assert_eq!(reply.aggregated_payload_size, 60);
    assert_eq!(end_of(&envelopes), json!({}));

    let mut body = Vec::new();
    for size in [1, 2] {
        body.extend_from_slice(&frame(&asking(&[size], 0).encode_to_vec()));
    }
    let response = post(&server, BIDI, "application/connect+proto", &[], body).await;
    let envelopes = envelopes_in(&response);
    assert_eq!(envelopes.len(), 3, "{envelopes:?}");
    server.stop().await;
}

#[tokio::test]
async fn connect_streaming_over_http1() {
    let server = server(Server::builder()).await;
    let request = support::http1::request(
        "POST",
        SERVER_STREAM,
        "application/connect+proto",
        &[("connection", "close")],
        &frame(&asking(&[4, 4], 0).encode_to_vec()),
    );
    let raw = support::http1::exchange(server.addr, &request).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 200, "{response:?}");
    let envelopes = support::web::frames(&response.body);
    assert_eq!(envelopes.len(), 3, "{envelopes:?}");
    assert_eq!(envelopes[2].0, 0x02);
    server.stop().await;
}

#[tokio::test]
async fn a_unary_request_to_a_streaming_method_is_415() {
    let server = server(Server::builder()).await;
    let response = post(
        &server,
        SERVER_STREAM,
        "application/proto",
        &[],
        asking(&[1], 0).encode_to_vec(),
    )
    .await;
    assert_eq!(response.status, 415, "{response:?}");
    assert_eq!(error_of(&response)["code"], "unimplemented");
    server.stop().await;
}

/// A GET over HTTP/2 to `path_and_query`.
async fn get(server: &TestServer, path_and_query: &str) -> RawResponse {
    raw_request(
        server.addr,
        http::Method::GET,
        path_and_query,
        &[],
        Bytes::new(),
    )
    .await
}

#[tokio::test]
async fn get_calls_methods_without_side_effects_in_json_or_base64_proto() {
    let server = server(Server::builder()).await;
    // `{"s":"a b","i64":"7"}`, percent-encoded as browsers do.
    let response = get(
        &server,
        "/jsontest.JsonTest/Echo?encoding=json&message=%7B%22s%22%3A%22a%20b%22%2C%22i64%22%3A%227%22%7D&connect=v1",
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(body_json(&response), json!({ "s": "a b", "i64": "7" }));

    let message = Scalars {
        s: "proto".into(),
        ..Default::default()
    }
    .encode_to_vec();
    use base64::Engine as _;
    let base64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&message);
    let response = get(
        &server,
        &format!("/jsontest.JsonTest/Echo?message={base64}&encoding=proto&base64=1&unknown=ok"),
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.headers["content-type"], "application/proto");
    assert_eq!(Scalars::decode(response.body.clone()).unwrap().s, "proto");

    // Over HTTP/1.1, as a browser's fetch sends it.
    let request = "GET /jsontest.JsonTest/Echo?encoding=json&message=%7B%7D HTTP/1.1\r\n\
                   host: test\r\nconnection: close\r\n\r\n";
    let raw = support::http1::exchange(server.addr, request.as_bytes()).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.body, b"{}");
    server.stop().await;
}

#[tokio::test]
async fn get_is_refused_for_methods_with_side_effects_and_bad_queries() {
    let server = server(Server::builder()).await;
    let response = get(
        &server,
        "/jsontest.JsonTest/EchoWellKnown?encoding=json&message=%7B%7D",
    )
    .await;
    assert_eq!(response.status, 405, "{response:?}");
    assert_eq!(error_of(&response)["code"], "unimplemented");
    for bad in [
        "encoding=json&message=%zz",
        "encoding=proto&base64=1&message=!!",
        "encoding=yaml&message=x",
        "encoding=json&message=%7Bnope",
        "encoding&message=x",
        "message=x&encoding=",
    ] {
        let response = get(&server, &format!("/jsontest.JsonTest/Echo?{bad}")).await;
        assert_eq!(response.status, 400, "{bad}: {response:?}");
        assert_eq!(error_of(&response)["code"], "invalid_argument", "{bad}");
    }
    // The first `encoding` is the one, for the format the call answers in and the one its
    // message is read in alike.
    let response = get(
        &server,
        "/jsontest.JsonTest/Echo?encoding=json&message=%7B%7D&encoding=yaml",
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(body_json(&response), json!({}));
    // A GET that is not Connect's is what it always was: 405.
    let response = get(&server, "/jsontest.JsonTest/Echo?x=1").await;
    assert_eq!(response.status, 405);
    server.stop().await;
}

#[tokio::test]
async fn a_server_wide_layer_s_refusal_is_in_connect_s_form() {
    let server = server(
        Server::builder().layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50))),
    )
    .await;
    let hang = json!({ "fillUsername": true }).to_string();
    let response = post(&server, UNARY, "application/json", &[], hang.clone()).await;
    assert_eq!(response.status, 504, "{response:?}");
    assert_eq!(error_of(&response)["code"], "deadline_exceeded");
    // A call the layer lets through is answered as always.
    let response = post_json(&server, UNARY, json!({ "responseSize": 1 })).await;
    assert_eq!(response.status, 200, "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_panic_in_a_server_wide_layer_is_an_internal_error_in_connect_s_form() {
    let panics = tower::util::MapRequestLayer::new(
        |request: http::Request<fastgrpc::service::RequestBody>| {
            if request.headers().contains_key("x-panic") {
                std::panic::panic_any("the layer was asked to panic");
            }
            request
        },
    );
    let server = server(Server::builder().layer(panics)).await;
    let body = json!({ "responseSize": 1 }).to_string();
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("x-panic", "1")],
        body,
    )
    .await;
    assert_eq!(response.status, 500, "{response:?}");
    assert_eq!(error_of(&response)["code"], "internal");
    // The connection and the server go on.
    let response = post_json(&server, UNARY, json!({ "responseSize": 1 })).await;
    assert_eq!(response.status, 200, "{response:?}");
    server.stop().await;
}

#[tokio::test]
async fn bad_binary_metadata_is_invalid_argument() {
    let server = server(Server::builder()).await;
    for (value, status) in [
        ("AAEC", 200),
        ("AAE", 200),
        ("AAE=", 200),
        ("not base64!", 400),
    ] {
        let response = post(
            &server,
            UNARY,
            "application/json",
            &[("x-token-bin", value)],
            "{}",
        )
        .await;
        assert_eq!(response.status, status, "{value:?}: {response:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_interceptor_s_refusal_is_a_connect_error() {
    let refusing = TestServiceServer::with_interceptor(Probe, |request: Request<()>| match request
        .metadata()
        .get("authorization")
    {
        Some(_) => Ok(request),
        None => Err(Status::unauthenticated("who are you?")),
    });
    let server = TestServer::start(Server::builder().add_service(refusing)).await;
    let response = post_json(&server, UNARY, json!({})).await;
    assert_eq!(response.status, 401, "{response:?}");
    assert_eq!(
        error_of(&response),
        json!({ "code": "unauthenticated", "message": "who are you?" })
    );
    let response = post(
        &server,
        UNARY,
        "application/json",
        &[("authorization", "Bearer x")],
        "{}",
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    server.stop().await;
}

/// A Connect unary request: its content type, other headers and body.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], Bytes);

/// A generated server answers a Connect unary call in Connect's form itself; behind a tower
/// layer (which may read the answer) it answers in gRPC's, and the router translates. Either
/// way the client gets the same answer, header for header and byte for byte: replies with
/// metadata, trailing metadata and compression, failures, a panic, refusals.
#[tokio::test]
async fn a_connect_answer_is_the_same_made_by_the_handler_or_translated() {
    let probe = || {
        TestServiceServer::new(Probe)
            .accept_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Gzip)
    };
    let direct = TestServer::start(Server::builder().add_service(probe())).await;
    let layered = TestServer::start(
        Server::builder().add_layered_service(probe(), tower::layer::util::Identity::new()),
    )
    .await;
    let proto = SimpleRequest {
        response_size: 40,
        ..Default::default()
    }
    .encode_to_vec();
    let json = |value: Value| Bytes::from(value.to_string());
    let echo = [("x-echo", "hi"), ("accept-encoding", "identity")];
    let compressing = [("accept-encoding", "gzip")];
    let cases: [Case<'_>; 8] = [
        ("application/proto", &echo, Bytes::from(proto.clone())),
        (
            "application/json",
            &echo,
            json(json!({ "responseSize": 3 })),
        ),
        ("application/proto", &compressing, Bytes::from(proto)),
        (
            "application/json",
            &[],
            json(json!({ "responseStatus": { "code": 5, "message": "details" } })),
        ),
        (
            "application/json",
            &[],
            json(json!({ "fillOauthScope": true })),
        ),
        (
            "application/json",
            &[("content-encoding", "br")],
            json(json!({})),
        ),
        (
            "application/json",
            &compressing,
            Bytes::from_static(b"{nope"),
        ),
        (
            "application/proto",
            &[("connect-timeout-ms", "x")],
            Bytes::new(),
        ),
    ];
    for (content_type, extra, body) in cases {
        let made = post(&direct, UNARY, content_type, extra, body.clone()).await;
        let translated = post(&layered, UNARY, content_type, extra, body).await;
        let case = format!("{content_type} {extra:?}");
        assert_eq!(made.status, translated.status, "{case}");
        let mut made_headers = made.headers.clone();
        let mut translated_headers = translated.headers.clone();
        made_headers.remove("date");
        translated_headers.remove("date");
        assert_eq!(made_headers, translated_headers, "{case}");
        assert_eq!(made.body, translated.body, "{case}");
        assert!(made.trailers.is_none(), "{case}: {made:?}");
    }
    direct.stop().await;
    layered.stop().await;
}

/// The head timeout over HTTP/1.1 (the handshake timeout) waits for a request's head, never for
/// an answer: a handler slower than it and a reply stream slower than it are both given whole.
#[tokio::test]
async fn answers_slower_than_the_http1_head_timeout_are_given_whole() {
    let server = server(Server::builder().handshake_timeout(Duration::from_millis(200))).await;
    // The stream outlasts two timeouts.
    a_slow_stream_is_given_whole_over_http1(&server, &[("connection", "close")]).await;

    // A handler that never answers, stopped by its 700 ms deadline: answered, not cut off.
    let request = support::http1::request(
        "POST",
        UNARY,
        "application/proto",
        &[("connection", "close"), ("connect-timeout-ms", "700")],
        &SimpleRequest {
            fill_username: true,
            ..Default::default()
        }
        .encode_to_vec(),
    );
    let raw = support::http1::exchange(server.addr, &request).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 504, "{response:?}");
    server.stop().await;
}

/// A reply stream that outlasts the connection's maximum age over HTTP/1.1 is given whole, and
/// the connection closes after it.
#[tokio::test]
async fn a_reply_stream_across_the_http1_maximum_age_is_given_whole() {
    let server = server(Server::builder().max_connection_age(Duration::from_millis(200))).await;
    // Kept alive: the server closes the connection, after the stream.
    a_slow_stream_is_given_whole_over_http1(&server, &[]).await;
    server.stop().await;
}

/// Asks `server` over HTTP/1.1, with the `extra` headers, for three replies 300 ms apart, and
/// checks they all came, then the end of the stream, before the connection closed.
async fn a_slow_stream_is_given_whole_over_http1(server: &TestServer, extra: &[(&str, &str)]) {
    let request = support::http1::request(
        "POST",
        SERVER_STREAM,
        "application/connect+proto",
        extra,
        &frame(&asking(&[4, 4, 4], 300_000).encode_to_vec()),
    );
    let raw = support::http1::exchange(server.addr, &request).await;
    let response = support::http1::responses(&raw).remove(0);
    assert_eq!(response.status, 200, "{response:?}");
    let envelopes = support::web::frames(&response.body);
    assert_eq!(envelopes.len(), 4, "{envelopes:?}");
    assert_eq!(envelopes[3].0, 0x02);
}
