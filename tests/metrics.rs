//! gRFC A66's server metrics (`Builder::meter_provider`), read back from OpenTelemetry's
//! in-memory exporter: each instrument and attribute, for every kind of call and every way a
//! call ends, with the byte counts checked against the messages actually sent and received.

/// greeter_server's `--metrics-addr` endpoint, the example's own code.
#[path = "../examples/support/prometheus.rs"]
mod prometheus_endpoint;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server, Status, Streaming};
use futures_util::StreamExt;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use prost::Message;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{
    EchoStatus, Empty, ResponseParameters, SimpleRequest, SimpleResponse,
    StreamingInputCallRequest, StreamingInputCallResponse, StreamingOutputCallRequest,
};
use support::{
    RawResponse, TestServer, frame, raw_grpc, raw_request, reply, until, until_shown, zeros,
};

const UNARY: &str = "grpc.testing.TestService/UnaryCall";

struct Service;

impl TestService for Service {
    support::boxed_reply_streams!();

    /// Panics (inline).
    fn empty_call(&self, _request: Request<Empty>) -> impl RpcFuture<Empty> {
        if true {
            panic!("the handler panicked");
        }
        FastFuture::ok(Response::new(Empty {}))
    }

    /// `response_size` zero bytes; the status asked for; with `fill_username`, never answers.
    async fn unary_call(
        &self,
        request: Request<SimpleRequest>,
    ) -> Result<Response<SimpleResponse>, Status> {
        let request = request.into_inner();
        if request.fill_username {
            std::future::pending::<()>().await;
        }
        if let Some(status) = request.response_status.filter(|s| s.code != 0) {
            return Err(Status::new(status.code.into(), status.message));
        }
        Ok(Response::new(SimpleResponse {
            payload: Some(zeros(request.response_size)),
            ..Default::default()
        }))
    }

    /// One reply per response parameter.
    fn streaming_output_call(
        &self,
        request: Request<StreamingOutputCallRequest>,
    ) -> impl RpcFuture<Self::StreamingOutputCallStream> {
        FastFuture::ok(Response::new(support::replies_as_asked(request)))
    }

    /// The sum of the payload sizes.
    async fn streaming_input_call(
        &self,
        request: Request<Streaming<StreamingInputCallRequest>>,
    ) -> Result<Response<StreamingInputCallResponse>, Status> {
        support::sum_payloads(request).await
    }

    /// A reply per request, of the size its first parameter asks.
    fn full_duplex_call(
        &self,
        request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Self::FullDuplexCallStream> {
        let replies = request.into_inner().map(|request| {
            let request = request?;
            Ok(reply(
                request.response_parameters.first().map_or(0, |p| p.size),
            ))
        });
        FastFuture::ok(Response::new(replies.boxed()))
    }

    /// One reply, then a panic inside the reply stream.
    fn half_duplex_call(
        &self,
        _request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Self::HalfDuplexCallStream> {
        FastFuture::ok(Response::new(support::one_reply_then_panic(reply(3))))
    }
}

/// A server with metrics into an in-memory exporter.
struct Metered {
    server: TestServer,
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

/// One data point: the instrument, its attributes, and its count and sum (a counter's value
/// is its sum, counted once).
#[derive(Debug, Clone, PartialEq)]
struct Point {
    name: String,
    method: String,
    status: Option<String>,
    count: u64,
    sum: f64,
}

impl Metered {
    async fn start() -> Metered {
        Self::start_with(TestServiceServer::new(Service)).await
    }

    async fn start_with(service: TestServiceServer<Service>) -> Metered {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let builder = Server::builder()
            .meter_provider(&provider)
            .add_service(service);
        Metered {
            server: TestServer::start(builder).await,
            provider,
            exporter,
        }
    }

    /// Every data point exported now.
    fn points(&self) -> Vec<Point> {
        self.exporter.reset();
        self.provider.force_flush().expect("flush the metrics");
        let exported = self.exporter.get_finished_metrics().unwrap();
        let mut points = Vec::new();
        for resource in &exported {
            for scope in resource.scope_metrics() {
                assert_eq!(scope.scope().name(), "fastgrpc");
                for metric in scope.metrics() {
                    collect(metric, &mut points);
                }
            }
        }
        points
    }

    /// The points of instrument `name` for `method`, by status.
    fn of(&self, name: &str, method: &str) -> Vec<Point> {
        let mut points: Vec<_> = self
            .points()
            .into_iter()
            .filter(|p| p.name == name && p.method == method)
            .collect();
        points.sort_by(|a, b| a.status.cmp(&b.status));
        points
    }

    /// The one point of `name` for `method` and `status`, waiting (bounded) until it has
    /// `count` observations: a call the client gave up on ends on the server a moment later.
    async fn wait_for(&self, name: &str, method: &str, status: &str, count: u64) -> Point {
        let point = || {
            self.of(name, method)
                .into_iter()
                .find(|p| p.status.as_deref() == Some(status) && p.count >= count)
        };
        until_shown(
            || {
                format!(
                    "{count} {name} for {method} {status}, in {:?}",
                    self.of(name, method)
                )
            },
            || point().is_some(),
        )
        .await;
        point().expect("found")
    }
}

fn collect(metric: &opentelemetry_sdk::metrics::data::Metric, points: &mut Vec<Point>) {
    let point = |attributes: Vec<&opentelemetry::KeyValue>, count: u64, sum: f64| {
        let get = |key: &str| {
            attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.to_string())
        };
        Point {
            name: metric.name().to_owned(),
            method: get("grpc.method").expect("every point has grpc.method"),
            status: get("grpc.status"),
            count,
            sum,
        }
    };
    match metric.data() {
        AggregatedMetrics::U64(MetricData::Sum(sum)) => {
            for p in sum.data_points() {
                points.push(point(p.attributes().collect(), 1, p.value() as f64));
            }
        }
        AggregatedMetrics::U64(MetricData::Histogram(histogram)) => {
            for p in histogram.data_points() {
                points.push(point(p.attributes().collect(), p.count(), p.sum() as f64));
            }
        }
        AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
            for p in histogram.data_points() {
                points.push(point(p.attributes().collect(), p.count(), p.sum()));
            }
        }
        other => panic!("unexpected data for {}: {other:?}", metric.name()),
    }
}

const STARTED: &str = "grpc.server.call.started";
const DURATION: &str = "grpc.server.call.duration";
const SENT: &str = "grpc.server.call.sent_total_compressed_message_size";
const RECEIVED: &str = "grpc.server.call.rcvd_total_compressed_message_size";

/// The point of `name` for `method` and `status` now, which must exist.
fn point(metered: &Metered, name: &str, method: &str, status: &str) -> Point {
    metered
        .of(name, method)
        .into_iter()
        .find(|p| p.status.as_deref() == Some(status))
        .unwrap_or_else(|| panic!("no {name} for {method} {status}"))
}

fn assert_call(
    metered: &Metered,
    method: &str,
    status: &str,
    calls: u64,
    sent: u64,
    received: u64,
) {
    let started: f64 = metered.of(STARTED, method).iter().map(|p| p.sum).sum();
    assert!(started >= calls as f64, "{method}: started {started}");
    let duration = point(metered, DURATION, method, status);
    assert_eq!(duration.count, calls, "{method} {status}: calls");
    assert!(duration.sum > 0.0 && duration.sum < 10.0, "{duration:?}");
    let sent_point = point(metered, SENT, method, status);
    assert_eq!(
        (sent_point.count, sent_point.sum),
        (calls, sent as f64),
        "{method} {status}: sent"
    );
    let received_point = point(metered, RECEIVED, method, status);
    assert_eq!(
        (received_point.count, received_point.sum),
        (calls, received as f64),
        "{method} {status}: received"
    );
}

fn simple(size: i32) -> SimpleRequest {
    SimpleRequest {
        response_size: size,
        ..Default::default()
    }
}

/// `calls` calls of `simple(size)` recorded as `OK`, with their messages' bytes.
fn assert_unary_ok(metered: &Metered, calls: u64, size: i32) {
    let reply = SimpleResponse {
        payload: Some(zeros(size)),
        ..Default::default()
    };
    let (sent, received) = (
        reply.encoded_len() as u64,
        simple(size).encoded_len() as u64,
    );
    assert_call(metered, UNARY, "OK", calls, calls * sent, calls * received);
}

#[tokio::test]
async fn unary_calls_by_method_and_status_with_their_message_bytes() {
    let metered = Metered::start().await;
    let request = simple(100);
    let path = format!("/{UNARY}");
    for _ in 0..3 {
        let answer = raw_grpc(metered.server.addr, &path, frame(&request.encode_to_vec())).await;
        assert_eq!(answer.grpc_status(), Some("0"));
    }
    assert_unary_ok(&metered, 3, 100);
    let started = metered.of(STARTED, UNARY);
    assert_eq!(started.len(), 1);
    assert_eq!((started[0].sum, started[0].status.as_ref()), (3.0, None));

    // An error the handler returns: trailers-only, nothing sent.
    let failing = SimpleRequest {
        response_status: Some(EchoStatus {
            code: 5,
            message: "not here".into(),
        }),
        ..Default::default()
    };
    let answer = raw_grpc(metered.server.addr, &path, frame(&failing.encode_to_vec())).await;
    assert_eq!(answer.grpc_status(), Some("5"));
    assert_call(
        &metered,
        UNARY,
        "NOT_FOUND",
        1,
        0,
        failing.encoded_len() as u64,
    );
    metered.server.stop().await;
}

#[tokio::test]
async fn calls_started_in_tasks_are_metered_as_inline_ones() {
    let metered = Metered::start_with(TestServiceServer::new(Service).run_inline(false)).await;
    let request = simple(10);
    for _ in 0..2 {
        let answer = raw_grpc(
            metered.server.addr,
            &format!("/{UNARY}"),
            frame(&request.encode_to_vec()),
        )
        .await;
        assert_eq!(answer.grpc_status(), Some("0"));
    }
    assert_unary_ok(&metered, 2, 10);
    metered.server.stop().await;
}

#[tokio::test]
async fn streaming_calls_of_each_kind() {
    let metered = Metered::start().await;
    let addr = metered.server.addr;

    // Server streaming: three replies.
    let request = StreamingOutputCallRequest {
        response_parameters: [10, 2000, 0]
            .into_iter()
            .map(|size| ResponseParameters {
                size,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let path = "/grpc.testing.TestService/StreamingOutputCall";
    let answer = raw_grpc(addr, path, frame(&request.encode_to_vec())).await;
    assert_eq!(answer.grpc_status(), Some("0"));
    let sent: usize = [10, 2000, 0]
        .map(|size| reply(size).encoded_len())
        .iter()
        .sum();
    assert_call(
        &metered,
        "grpc.testing.TestService/StreamingOutputCall",
        "OK",
        1,
        sent as u64,
        request.encoded_len() as u64,
    );

    // Client streaming, its second message sent once the call has started on the server (so
    // the body is read as it arrives, not whole).
    let messages: Vec<_> = [5, 70]
        .map(|size| StreamingInputCallRequest {
            payload: Some(zeros(size)),
            ..Default::default()
        })
        .to_vec();
    let mut client = support::h2_client(&metered.server, 65_535).await;
    let (response, mut body) = client
        .send_request(
            support::grpc_post(
                &metered.server,
                "/grpc.testing.TestService/StreamingInputCall",
            ),
            false,
        )
        .unwrap();
    body.send_data(frame(&messages[0].encode_to_vec()), false)
        .unwrap();
    let method = "grpc.testing.TestService/StreamingInputCall";
    until("the call has started", || {
        !metered.of(STARTED, method).is_empty()
    })
    .await;
    body.send_data(frame(&messages[1].encode_to_vec()), true)
        .unwrap();
    let (_, mut recv) = response.await.unwrap().into_parts();
    let mut reply_bytes = BytesMut::new();
    while let Some(chunk) = recv.data().await {
        reply_bytes.extend_from_slice(&chunk.unwrap());
    }
    let trailers = recv.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["grpc-status"], "0");
    let received: usize = messages.iter().map(Message::encoded_len).sum();
    let expected_reply = StreamingInputCallResponse {
        aggregated_payload_size: 75,
    };
    assert_call(
        &metered,
        method,
        "OK",
        1,
        expected_reply.encoded_len() as u64,
        received as u64,
    );

    // Bidirectional: two requests, two replies, in one body.
    let requests: Vec<_> = [1, 300]
        .map(|size| StreamingOutputCallRequest {
            response_parameters: vec![ResponseParameters {
                size,
                ..Default::default()
            }],
            ..Default::default()
        })
        .to_vec();
    let mut body = BytesMut::new();
    for request in &requests {
        body.extend_from_slice(&frame(&request.encode_to_vec()));
    }
    let answer = raw_grpc(
        addr,
        "/grpc.testing.TestService/FullDuplexCall",
        body.freeze(),
    )
    .await;
    assert_eq!(answer.grpc_status(), Some("0"));
    assert_call(
        &metered,
        "grpc.testing.TestService/FullDuplexCall",
        "OK",
        1,
        (reply(1).encoded_len() + reply(300).encoded_len()) as u64,
        requests.iter().map(Message::encoded_len).sum::<usize>() as u64,
    );
    metered.server.stop().await;
}

#[tokio::test]
async fn grpc_web_calls_are_metered_as_grpc() {
    let metered = Metered::start().await;
    let request = simple(7);
    let answer: RawResponse = raw_request(
        metered.server.addr,
        http::Method::POST,
        &format!("/{UNARY}"),
        &[("content-type", "application/grpc-web+proto")],
        frame(&request.encode_to_vec()),
    )
    .await;
    assert_eq!(answer.status, 200);
    // And over HTTP/1.1, as browsers without TLS call.
    let body = frame(&request.encode_to_vec());
    let mut http1 = format!(
        "POST /{UNARY} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/grpc-web+proto\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    http1.extend_from_slice(&body);
    let answer = http1_exchange(metered.server.addr, &http1).await;
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_unary_ok(&metered, 2, 7);
    metered.server.stop().await;
}

#[tokio::test]
async fn connect_calls_are_metered_as_grpc() {
    let metered = Metered::start().await;
    let request = simple(7);
    for (content_type, body) in [
        ("application/proto", Bytes::from(request.encode_to_vec())),
        ("application/connect+proto", frame(&request.encode_to_vec())),
    ] {
        let answer: RawResponse = raw_request(
            metered.server.addr,
            http::Method::POST,
            &format!("/{UNARY}"),
            &[("content-type", content_type)],
            body,
        )
        .await;
        assert_eq!(answer.status, 200, "{answer:?}");
    }
    assert_unary_ok(&metered, 2, 7);
    // A failure is counted with its code, as the client reads it in Connect's form.
    let failing = SimpleRequest {
        response_status: Some(support::pb::grpc_testing::EchoStatus {
            code: 5,
            message: "gone".into(),
        }),
        ..Default::default()
    };
    let answer = raw_request(
        metered.server.addr,
        http::Method::POST,
        &format!("/{UNARY}"),
        &[("content-type", "application/proto")],
        Bytes::from(failing.encode_to_vec()),
    )
    .await;
    assert_eq!(answer.status, 404, "{answer:?}");
    metered.wait_for(DURATION, UNARY, "NOT_FOUND", 1).await;
    metered.server.stop().await;
}

#[tokio::test]
async fn unknown_methods_and_services_are_labelled_other() {
    let metered = Metered::start().await;
    for path in [
        "/grpc.testing.TestService/NoSuchMethod",
        "/no.Such/Service",
        "/grpc.testing.TestService/UnimplementedCall",
    ] {
        let answer = raw_grpc(metered.server.addr, path, frame(b"")).await;
        assert_eq!(answer.grpc_status(), Some("12"), "{path}");
    }
    // UnimplementedCall is declared (its default answers UNIMPLEMENTED), so it has its name.
    assert_call(&metered, "other", "UNIMPLEMENTED", 2, 0, 0);
    assert_call(
        &metered,
        "grpc.testing.TestService/UnimplementedCall",
        "UNIMPLEMENTED",
        1,
        0,
        0,
    );
    let labels: Vec<_> = metered.points().into_iter().map(|p| p.method).collect();
    assert!(
        labels.iter().all(|m| !m.contains("NoSuch")),
        "a made-up method became a label: {labels:?}"
    );
    metered.server.stop().await;
}

#[tokio::test]
async fn deadlines_cancels_and_panics_are_recorded_as_the_client_sees_them() {
    let metered = Metered::start().await;
    let addr = metered.server.addr;
    let forever = SimpleRequest {
        fill_username: true,
        ..Default::default()
    };

    // Past its deadline: the client gets DEADLINE_EXCEEDED.
    let answer = raw_request(
        addr,
        http::Method::POST,
        &format!("/{UNARY}"),
        &[
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", "20m"),
        ],
        frame(&forever.encode_to_vec()),
    )
    .await;
    assert_eq!(answer.grpc_status(), Some("4"));
    let point = metered
        .wait_for(DURATION, UNARY, "DEADLINE_EXCEEDED", 1)
        .await;
    assert!(point.sum >= 0.02, "{point:?}");

    // Cancelled by the client: a reset while the handler waits.
    let mut client = support::h2_client(&metered.server, 65_535).await;
    let (response, mut body) = client
        .send_request(
            support::grpc_post(&metered.server, &format!("/{UNARY}")),
            false,
        )
        .unwrap();
    body.send_data(frame(&forever.encode_to_vec()), true)
        .unwrap();
    until("both calls have started", || {
        metered
            .of(STARTED, UNARY)
            .iter()
            .map(|p| p.sum)
            .sum::<f64>()
            >= 2.0
    })
    .await;
    body.send_reset(h2::Reason::CANCEL);
    drop(response);
    metered.wait_for(DURATION, UNARY, "CANCELLED", 1).await;

    // A panic in the handler, and one in a reply stream: INTERNAL.
    let answer = raw_grpc(addr, "/grpc.testing.TestService/EmptyCall", frame(b"")).await;
    assert_eq!(answer.grpc_status(), Some("13"));
    assert_call(
        &metered,
        "grpc.testing.TestService/EmptyCall",
        "INTERNAL",
        1,
        0,
        0,
    );
    let answer = raw_grpc(
        addr,
        "/grpc.testing.TestService/HalfDuplexCall",
        Bytes::new(),
    )
    .await;
    assert_eq!(answer.grpc_status(), Some("13"));
    let half_duplex = "grpc.testing.TestService/HalfDuplexCall";
    metered.wait_for(DURATION, half_duplex, "INTERNAL", 1).await;
    assert_eq!(
        point_sum(&metered, SENT, half_duplex, "INTERNAL"),
        reply(3).encoded_len() as f64,
        "the reply sent before the panic counts"
    );
    metered.server.stop().await;
}

fn point_sum(metered: &Metered, name: &str, method: &str, status: &str) -> f64 {
    point(metered, name, method, status).sum
}

/// GET `path` from `addr` over HTTP/1.1: the status line and the body.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let request = format!("GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
    let answer = String::from_utf8(http1_exchange(addr, request.as_bytes()).await).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[tokio::test]
async fn the_examples_prometheus_endpoint_serves_the_instruments_by_their_prometheus_names() {
    let (provider, registry) = prometheus_endpoint::provider().unwrap();
    let builder = Server::builder()
        .meter_provider(&provider)
        .add_service(TestServiceServer::new(Service));
    let server = TestServer::start(builder).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = listener.local_addr().unwrap();
    let serving = tokio::spawn(prometheus_endpoint::serve(listener, registry));

    let request = simple(2000);
    for _ in 0..2 {
        let answer = raw_grpc(
            server.addr,
            &format!("/{UNARY}"),
            frame(&request.encode_to_vec()),
        )
        .await;
        assert_eq!(answer.grpc_status(), Some("0"));
    }
    raw_grpc(server.addr, "/no.Such/Method", frame(b"")).await;

    let (status, text) = http_get(endpoint, "/metrics").await;
    assert!(status.contains("200"), "{status}");
    let value = |prefix: &str| -> f64 {
        let line = text
            .lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let method = format!("grpc_method=\"{UNARY}\"");
    let ok = format!("{method},grpc_status=\"OK\"");
    assert_eq!(
        value(&format!("grpc_server_call_started_total{{{method}")),
        2.0
    );
    assert_eq!(
        value(&format!("grpc_server_call_duration_seconds_count{{{ok}")),
        2.0
    );
    let reply = SimpleResponse {
        payload: Some(zeros(2000)),
        ..Default::default()
    };
    assert_eq!(
        value(&format!(
            "grpc_server_call_sent_total_compressed_message_size_bytes_sum{{{ok}"
        )),
        2.0 * reply.encoded_len() as f64
    );
    // Both replies (2,007 bytes) in the (1024, 2048] bucket; both requests in the first.
    let sent_bucket = |le: &str| -> f64 {
        let prefix =
            format!("grpc_server_call_sent_total_compressed_message_size_bytes_bucket{{{ok}");
        let bound = format!("le=\"{le}\"}}");
        let line = text
            .lines()
            .find(|line| line.starts_with(&prefix) && line.contains(&bound))
            .unwrap_or_else(|| panic!("no bucket {le} in:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!((sent_bucket("1024"), sent_bucket("2048")), (0.0, 2.0));
    assert_eq!(
        value(&format!(
            "grpc_server_call_rcvd_total_compressed_message_size_bytes_count{{{ok}"
        )),
        2.0
    );
    assert_eq!(
        value("grpc_server_call_started_total{grpc_method=\"other\""),
        1.0
    );
    let (status, _) = http_get(endpoint, "/elsewhere").await;
    assert!(status.contains("404"), "{status}");
    serving.abort();
    server.stop().await;
}

/// Writes `request` to `addr` over a fresh TCP connection and reads the answer until the
/// server closes it.
async fn http1_exchange(addr: std::net::SocketAddr, request: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    answer
}
