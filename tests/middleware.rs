//! Middleware: tower layers server-wide and per service, and interceptors (sync and async).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fastgrpc::service::{CalledMethod, async_interceptor};
use fastgrpc::{Code, FastFuture, Request, Response, RpcFuture, Server, Status};
use support::pb::grpc_testing::Empty;
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::helloworld::greeter_server::{Greeter, GreeterServer};
use support::pb::helloworld::{HelloReply, HelloRequest};
use support::tonic_pb::grpc_testing as tonic_testing;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::tonic_pb::helloworld as client_pb;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::{TestServer, channel, hello, until};
use tower::ServiceBuilder;

/// Greets at once, or after `sleep:<ms>`'s milliseconds; counts the calls it runs at once and
/// says who the interceptor said the caller is (the `Caller` extension), if anyone.
#[derive(Default, Clone)]
struct SleepyGreeter(Arc<Running>);

/// The calls a [`SleepyGreeter`] and its clones are running, and the most they ran at once.
#[derive(Default)]
struct Running {
    now: AtomicUsize,
    most_at_once: AtomicUsize,
}

#[derive(Clone)]
struct Caller(String);

impl Greeter for SleepyGreeter {
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        let caller = request.extensions().get::<Caller>().cloned();
        let name = request.into_inner().name;
        let running = Arc::clone(&self.0);
        async move {
            if let Some(ms) = name.strip_prefix("sleep:") {
                let now = running.now.fetch_add(1, Ordering::SeqCst) + 1;
                running.most_at_once.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
                running.now.fetch_sub(1, Ordering::SeqCst);
            }
            let by = caller.map_or(String::new(), |caller| format!(" (for {})", caller.0));
            Ok(Response::new(HelloReply {
                message: format!("Hello {name}!{by}"),
            }))
        }
    }
}

struct Empties;

impl TestService for Empties {
    support::boxed_reply_streams!();

    fn empty_call(&self, _request: Request<Empty>) -> impl RpcFuture<Empty> {
        FastFuture::ok(Response::new(Empty {}))
    }
}

#[tokio::test]
async fn a_per_service_timeout_layer_ends_slow_calls_of_that_service_only() {
    let greeter = SleepyGreeter::default();
    let server = TestServer::start(
        Server::builder()
            .add_layered_service(
                GreeterServer::new(greeter),
                ServiceBuilder::new().timeout(Duration::from_millis(250)),
            )
            .add_service(TestServiceServer::new(Empties)),
    )
    .await;
    let channel = channel(&server).await;
    let mut client = GreeterClient::new(channel.clone());
    let status = client.say_hello(hello("sleep:2000")).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    let fast = client.say_hello(hello("quick")).await.unwrap();
    assert_eq!(fast.get_ref().message, "Hello quick!");
    TestServiceClient::new(channel)
        .empty_call(tonic_testing::Empty {})
        .await
        .unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_concurrency_limit_layer_queues_calls_and_load_shedding_refuses_them() {
    let greeter = SleepyGreeter::default();
    let server = TestServer::start(Server::builder().add_layered_service(
        GreeterServer::new(greeter.clone()),
        ServiceBuilder::new().concurrency_limit(1),
    ))
    .await;
    let queued = channel(&server).await;
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let mut client = GreeterClient::new(queued.clone());
            tokio::spawn(async move { client.say_hello(hello("sleep:30")).await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(greeter.0.most_at_once.load(Ordering::SeqCst), 1);
    server.stop().await;

    let greeter = SleepyGreeter::default();
    let server = TestServer::start(Server::builder().add_layered_service(
        GreeterServer::new(greeter.clone()),
        ServiceBuilder::new().load_shed().concurrency_limit(1),
    ))
    .await;
    let channel = channel(&server).await;
    let mut first = GreeterClient::new(channel.clone());
    let slow = tokio::spawn(async move { first.say_hello(hello("sleep:300")).await });
    until("the first call runs", || {
        greeter.0.now.load(Ordering::SeqCst) == 1
    })
    .await;
    let shed = GreeterClient::new(channel)
        .say_hello(hello("second"))
        .await
        .unwrap_err();
    assert_eq!(shed.code(), Code::ResourceExhausted, "{shed:?}");
    slow.await.unwrap().unwrap();
    server.stop().await;
}

#[tokio::test]
async fn server_wide_layers_see_every_call_and_compose_with_tower_http() {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    // Counts every request it passes on (a stand-in for a metrics layer).
    let count_calls = tower::util::MapRequestLayer::new(move |request| {
        counter.fetch_add(1, Ordering::SeqCst);
        request
    });
    let server = TestServer::start(
        Server::builder()
            .layer(count_calls)
            .layer(tower_http::trace::TraceLayer::new_for_grpc())
            .layer(ServiceBuilder::new().timeout(Duration::from_millis(250)))
            .add_service(GreeterServer::new(SleepyGreeter::default())),
    )
    .await;
    let channel = channel(&server).await;
    let mut client = GreeterClient::new(channel.clone());
    let reply = client.say_hello(hello("layers")).await.unwrap();
    assert_eq!(reply.get_ref().message, "Hello layers!");
    let slow = client.say_hello(hello("sleep:2000")).await.unwrap_err();
    assert_eq!(slow.code(), Code::DeadlineExceeded);
    // An unknown service still passes the layers, and still gets UNIMPLEMENTED.
    let unknown = TestServiceClient::new(channel)
        .empty_call(tonic_testing::Empty {})
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::Unimplemented);
    assert_eq!(count.load(Ordering::SeqCst), 3);
    server.stop().await;
}

/// The transport reads a request's `content-type` once for the router, except when a
/// server-wide layer comes between: it may change the request, and the router then reads what
/// the layer passed on. Here a layer mends a client that labels its JSON `application/proto`.
#[tokio::test]
async fn a_server_wide_layer_that_rewrites_the_content_type_is_heeded() {
    let mend = tower::util::MapRequestLayer::new(|mut request: http::Request<_>| {
        let headers = request.headers_mut();
        if headers.get("x-really") == Some(&http::HeaderValue::from_static("json")) {
            headers.insert(
                "content-type",
                http::HeaderValue::from_static("application/json"),
            );
        }
        request
    });
    let server = TestServer::start(
        Server::builder()
            .layer(mend)
            .add_service(GreeterServer::new(SleepyGreeter::default())),
    )
    .await;
    let request = support::http1::request(
        "POST",
        "/helloworld.Greeter/SayHello",
        "application/proto",
        &[("x-really", "json"), ("connection", "close")],
        br#"{"name":"mended"}"#,
    );
    let raw = support::http1::exchange(server.addr, &request).await;
    let answer = support::http1::responses(&raw).remove(0);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.body, br#"{"message":"Hello mended!"}"#);
    server.stop().await;
}

/// Lets in callers with a token, naming them for the handler; refuses the others.
fn authenticate(mut request: Request<()>) -> Result<Request<()>, Status> {
    let method = request.extensions().get::<CalledMethod>().unwrap();
    assert_eq!(method.service(), "helloworld.Greeter");
    assert_eq!(method.method(), "SayHello");
    let caller = match request.metadata().get("authorization") {
        Some(token) => token
            .to_str()
            .unwrap()
            .trim_start_matches("Bearer ")
            .to_owned(),
        None => return Err(Status::unauthenticated("no token")),
    };
    request.extensions_mut().insert(Caller(caller));
    Ok(request)
}

fn with_token(name: &str, token: &str) -> tonic::Request<client_pb::HelloRequest> {
    let mut request = tonic::Request::new(hello(name));
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

#[tokio::test]
async fn an_interceptor_sees_the_method_and_metadata_and_can_refuse() {
    let server = TestServer::start(
        Server::builder().add_service(GreeterServer::with_interceptor(
            SleepyGreeter::default(),
            authenticate,
        )),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    let refused = client.say_hello(hello("anonymous")).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert_eq!(refused.message(), "no token");
    let reply = client.say_hello(with_token("Ann", "ann")).await.unwrap();
    assert_eq!(reply.get_ref().message, "Hello Ann! (for ann)");
    server.stop().await;
}

#[tokio::test]
async fn an_async_interceptor_may_wait_before_letting_a_call_in() {
    let checked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&checked);
    let interceptor = async_interceptor(move |request: Request<()>| {
        let counter = Arc::clone(&counter);
        async move {
            // Looks the token up somewhere that answers later.
            tokio::task::yield_now().await;
            counter.fetch_add(1, Ordering::SeqCst);
            authenticate(request)
        }
    });
    let server = TestServer::start(
        Server::builder().add_service(GreeterServer::with_interceptor(
            SleepyGreeter::default(),
            interceptor,
        )),
    )
    .await;
    let mut client = GreeterClient::new(channel(&server).await);
    let refused = client.say_hello(hello("anonymous")).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    let reply = client.say_hello(with_token("Bo", "bo")).await.unwrap();
    assert_eq!(reply.get_ref().message, "Hello Bo! (for bo)");
    assert_eq!(checked.load(Ordering::SeqCst), 2);
    server.stop().await;
}
