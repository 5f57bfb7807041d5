//! Tracing: fastgrpc's own span per call (OpenTelemetry's RPC attributes, entered while the
//! handler runs, the client's `traceparent` as its parent when exported through
//! `tracing-opentelemetry`), and tower-http's `TraceLayer`, server-wide. (A binary of its own:
//! `tracing` caches per call site whether anyone listens, which a test on another thread could
//! decide first, and one test sets OpenTelemetry's process-wide propagator.)

use std::sync::Arc;

use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server};
use support::pb::helloworld::greeter_server::{Greeter, GreeterServer};
use support::pb::helloworld::{HelloReply, HelloRequest};
use support::tonic_pb::helloworld as client_pb;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{TestServer, channel};

struct Quick;

impl Greeter for Quick {
    /// Answers at once; a name of "fail" is refused with `INVALID_ARGUMENT`; the reply names
    /// the span the handler runs in.
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let name = request.into_inner().name;
        if name == "fail" {
            return FastFuture::err(tonic::Status::invalid_argument("fail"));
        }
        if name == "span" {
            let current = tracing::Span::current();
            let name = current.metadata().map_or("none", |m| m.name());
            return FastFuture::ok(Response::new(HelloReply {
                message: name.to_owned(),
            }));
        }
        FastFuture::ok(Response::new(HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

/// Collects what a `tracing` subscriber writes, for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// One thread: the subscriber set for this test is the default of the thread the server runs on.
#[tokio::test(flavor = "current_thread")]
async fn tower_http_tracing_records_each_call_with_its_method_status_and_duration() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let server = TestServer::start(
        Server::builder()
            .layer(tower_http::trace::TraceLayer::new_for_grpc())
            .add_service(GreeterServer::new(Quick)),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    client
        .say_hello(client_pb::HelloRequest {
            name: "traced".into(),
        })
        .await
        .unwrap();
    server.stop().await;

    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let call = log
        .lines()
        .find(|line| line.contains("finished processing request"))
        .unwrap_or_else(|| panic!("no per-call event in:\n{log}"));
    assert!(
        call.contains("/helloworld.Greeter/SayHello version"),
        "{call}"
    );
    assert!(call.contains("latency="), "{call}");
    let end = log
        .lines()
        .find(|line| line.contains("end of stream"))
        .unwrap();
    assert!(
        end.contains("status=0"),
        "the gRPC status, read from the trailers: {end}"
    );
}

/// A span's fields by name, as recorded so far (with its id under "id").
type SpanFields = std::collections::BTreeMap<String, String>;

/// The spans a subscriber saw open, by name, with their fields as recorded by the end of the
/// call.
#[derive(Clone, Default)]
struct Spans(Arc<std::sync::Mutex<Vec<(String, SpanFields)>>>);

struct Fields<'a>(&'a mut std::collections::BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S> tracing_subscriber::Layer<S> for Spans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert("id".to_owned(), format!("{}", id.into_u64()));
        attributes.record(&mut Fields(&mut fields));
        let name = attributes.metadata().name().to_owned();
        self.0.lock().unwrap().push((name, fields));
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let id = format!("{}", id.into_u64());
        let mut spans = self.0.lock().unwrap();
        if let Some((_, fields)) = spans.iter_mut().rev().find(|(_, f)| f["id"] == id) {
            values.record(&mut Fields(fields));
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_call_has_a_span_with_the_rpc_attributes_entered_while_its_handler_runs() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let server = TestServer::start(Server::builder().add_service(GreeterServer::new(Quick))).await;
    let mut client = GreeterClient::new(channel(&server).await);
    let reply = client
        .say_hello(client_pb::HelloRequest {
            name: "span".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        reply.into_inner().message,
        "grpc.server",
        "the handler runs in the call's span"
    );
    let refused = client
        .say_hello(client_pb::HelloRequest {
            name: "fail".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    server.stop().await;

    let spans = spans.0.lock().unwrap().clone();
    let calls: Vec<_> = spans
        .iter()
        .filter(|(name, _)| name == "grpc.server")
        .collect();
    assert_eq!(calls.len(), 2, "one span per call: {spans:?}");
    for (_, fields) in &calls {
        assert_eq!(fields["rpc.system"], "grpc");
        assert_eq!(fields["rpc.service"], "helloworld.Greeter");
        assert_eq!(fields["rpc.method"], "SayHello");
        assert_eq!(fields["otel.name"], "helloworld.Greeter/SayHello");
        assert_eq!(fields["otel.kind"], "server");
    }
    assert_eq!(calls[0].1["rpc.grpc.status_code"], "0");
    assert_eq!(calls[1].1["rpc.grpc.status_code"], "3");
}

#[tokio::test(flavor = "current_thread")]
async fn a_clients_traceparent_becomes_the_parent_of_the_exported_span() {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let exporter = opentelemetry_sdk::trace::InMemorySpanExporterBuilder::new().build();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let server = TestServer::start(Server::builder().add_service(GreeterServer::new(Quick))).await;
    let hello = support::pb::helloworld::HelloRequest {
        name: "traced".into(),
    };
    let answer = support::raw_request(
        server.addr,
        http::Method::POST,
        "/helloworld.Greeter/SayHello",
        &[
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            (
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
        ],
        support::frame(&prost::Message::encode_to_vec(&hello)),
    )
    .await;
    assert_eq!(answer.grpc_status(), Some("0"));
    server.stop().await;
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    let call = spans
        .iter()
        .find(|span| span.name == "helloworld.Greeter/SayHello")
        .unwrap_or_else(|| panic!("no span for the call: {spans:?}"));
    assert_eq!(
        call.span_context.trace_id().to_string(),
        "0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(call.parent_span_id.to_string(), "b7ad6b7169203331");
    assert_eq!(call.span_kind, opentelemetry::trace::SpanKind::Server);
    let attribute = |key: &str| {
        call.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(attribute("rpc.system").as_deref(), Some("grpc"));
    assert_eq!(attribute("rpc.grpc.status_code").as_deref(), Some("0"));
}
