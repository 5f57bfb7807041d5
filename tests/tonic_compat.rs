//! tonic compatibility, both ways: tonic-generated services (and tonic-health) hosted in a
//! fastgrpc server beside fastgrpc services, and fastgrpc services mounted in tonic's server.

use std::pin::Pin;

use fastgrpc::service::ForTonic;
use fastgrpc::{Code, FastFuture, Request, Response, RpcFuture, Server, Status, Streaming};
use futures_util::{Stream, StreamExt};
use support::pb::grpc_testing::test_service_server::{TestService, TestServiceServer};
use support::pb::grpc_testing::{Empty, StreamingOutputCallRequest, StreamingOutputCallResponse};
use support::pb::helloworld as fast_hello;
use support::pb::helloworld::greeter_server::{
    Greeter as FastGreeter, GreeterServer as FastGreeterServer,
};
use support::tonic_pb::grpc_testing as tonic_testing;
use support::tonic_pb::grpc_testing::test_service_client::TestServiceClient;
use support::tonic_pb::helloworld::greeter_client::GreeterClient;
use support::tonic_pb::helloworld::greeter_server::{Greeter as TonicGreeter, GreeterServer};
use support::tonic_pb::helloworld::{HelloReply, HelloRequest};
use support::{TestServer, channel};
use tokio::net::TcpListener;
use tonic_health::ServingStatus;
use tonic_health::pb::health_check_response::ServingStatus as WireStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, health_check_response};

/// A service written for tonic, unchanged.
struct TonicHello;

#[tonic::async_trait]
impl TonicGreeter for TonicHello {
    async fn say_hello(
        &self,
        request: tonic::Request<HelloRequest>,
    ) -> Result<tonic::Response<HelloReply>, Status> {
        let name = request.into_inner().name;
        if name.is_empty() {
            return Err(Status::invalid_argument("name is empty"));
        }
        tokio::task::yield_now().await;
        let mut reply = tonic::Response::new(HelloReply {
            message: format!("Hello {name} from tonic!"),
        });
        reply
            .metadata_mut()
            .insert("served-by", "tonic".parse().unwrap());
        Ok(reply)
    }
}

/// The same service written for fastgrpc.
struct FastHello;

impl FastGreeter for FastHello {
    fn say_hello(
        &self,
        request: Request<fast_hello::HelloRequest>,
    ) -> impl RpcFuture<fast_hello::HelloReply> {
        let name = request.into_inner().name;
        FastFuture::ok(Response::new(fast_hello::HelloReply {
            message: format!("Hello {name}!"),
        }))
    }
}

/// `TonicHello` ported to fastgrpc: the body is the same; only the `#[tonic::async_trait]`
/// attribute and the trait's path changed (what docs/MIGRATING_FROM_TONIC.md shows).
struct PortedHello;

impl FastGreeter for PortedHello {
    async fn say_hello(
        &self,
        request: tonic::Request<fast_hello::HelloRequest>,
    ) -> Result<tonic::Response<fast_hello::HelloReply>, Status> {
        let name = request.into_inner().name;
        if name.is_empty() {
            return Err(Status::invalid_argument("name is empty"));
        }
        tokio::task::yield_now().await;
        let mut reply = tonic::Response::new(fast_hello::HelloReply {
            message: format!("Hello {name} from tonic!"),
        });
        reply
            .metadata_mut()
            .insert("served-by", "tonic".parse().unwrap());
        Ok(reply)
    }
}

/// A fastgrpc service: `EmptyCall` answers at once, `FullDuplexCall` echoes each request's
/// first response size as a payload of that many bytes; the rest is left UNIMPLEMENTED.
struct FastTests;

type Echoes = Pin<Box<dyn Stream<Item = Result<StreamingOutputCallResponse, Status>> + Send>>;

impl TestService for FastTests {
    type StreamingOutputCallStream = Echoes;
    type FullDuplexCallStream = Echoes;
    type HalfDuplexCallStream = Echoes;

    fn empty_call(&self, _request: Request<Empty>) -> impl RpcFuture<Empty> {
        FastFuture::ok(Response::new(Empty {}))
    }

    fn full_duplex_call(
        &self,
        request: Request<Streaming<StreamingOutputCallRequest>>,
    ) -> impl RpcFuture<Echoes> {
        let echoes = request.into_inner().map(|request| {
            let size = request?.response_parameters.first().map_or(0, |p| p.size);
            Ok(StreamingOutputCallResponse {
                payload: Some(support::pb::grpc_testing::Payload {
                    body: vec![b'x'; size as usize].into(),
                    ..Default::default()
                }),
            })
        });
        FastFuture::ok(Response::new(Box::pin(echoes) as Echoes))
    }
}

fn echo_request(size: i32) -> tonic_testing::StreamingOutputCallRequest {
    tonic_testing::StreamingOutputCallRequest {
        response_parameters: vec![tonic_testing::ResponseParameters {
            size,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Sends three requests on one bidirectional call and collects the sizes echoed back.
async fn duplex_sizes(client: &mut TestServiceClient<tonic::transport::Channel>) -> Vec<usize> {
    let requests = tokio_stream::iter([1, 300, 70_000].map(echo_request));
    let replies = client
        .full_duplex_call(requests)
        .await
        .unwrap()
        .into_inner();
    replies
        .map(|reply| reply.unwrap().payload.unwrap().body.len())
        .collect()
        .await
}

#[tokio::test]
async fn tonic_services_are_hosted_beside_fastgrpc_services() {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_service_status("helloworld.Greeter", ServingStatus::Serving)
        .await;
    let server = TestServer::start(
        Server::builder()
            .add_tower_service(GreeterServer::new(TonicHello))
            .add_tower_service(health)
            .add_service(TestServiceServer::new(FastTests)),
    )
    .await;
    let channel = channel(&server).await;

    // The tonic service, with its metadata and its errors.
    let mut greeter = GreeterClient::new(channel.clone());
    let reply = greeter
        .say_hello(HelloRequest {
            name: "Ferris".into(),
        })
        .await
        .unwrap();
    assert_eq!(reply.metadata().get("served-by").unwrap(), "tonic");
    assert_eq!(reply.get_ref().message, "Hello Ferris from tonic!");
    let error = greeter
        .say_hello(HelloRequest::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument);
    assert_eq!(error.message(), "name is empty");

    // The fastgrpc service beside it, unary and streaming, on the same connection.
    let mut tests = TestServiceClient::new(channel.clone());
    tests.empty_call(tonic_testing::Empty {}).await.unwrap();
    assert_eq!(duplex_sizes(&mut tests).await, [1, 300, 70_000]);
    let unimplemented = tests
        .unary_call(tonic_testing::SimpleRequest::default())
        .await
        .unwrap_err();
    assert_eq!(unimplemented.code(), Code::Unimplemented);

    // tonic-health: Check, and Watch (a server stream) following a change made at run time.
    let mut health = HealthClient::new(channel);
    let check = |service: &str| HealthCheckRequest {
        service: service.into(),
    };
    let status = health.check(check("helloworld.Greeter")).await.unwrap();
    assert_eq!(status.get_ref().status(), WireStatus::Serving);
    let unknown = health.check(check("no.Such")).await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let mut watch = health
        .watch(check("helloworld.Greeter"))
        .await
        .unwrap()
        .into_inner();
    let first: health_check_response::ServingStatus = watch.next().await.unwrap().unwrap().status();
    assert_eq!(first, WireStatus::Serving);
    reporter
        .set_service_status("helloworld.Greeter", ServingStatus::NotServing)
        .await;
    let next = watch.next().await.unwrap().unwrap().status();
    assert_eq!(next, WireStatus::NotServing);
    drop(watch);
    server.stop().await;
}

/// Serves `routes` with tonic's own server on a loopback port; returns its address.
async fn serve_with_tonic(
    router: tonic::transport::server::Router,
) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(router.serve_with_incoming_shutdown(
        tokio_stream::wrappers::TcpListenerStream::new(listener),
        async {
            let _ = stopped.await;
        },
    ));
    (addr, stop)
}

#[tokio::test]
async fn fastgrpc_services_are_mounted_in_tonic() {
    let greeter = FastGreeterServer::new(FastHello);
    let router = tonic::transport::Server::builder()
        .add_service(ForTonic::new(greeter))
        .add_service(ForTonic::new(TestServiceServer::new(FastTests)));
    let (addr, stop) = serve_with_tonic(router).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();

    let mut greeter = GreeterClient::new(channel.clone());
    let reply = greeter
        .say_hello(HelloRequest {
            name: "tonic".into(),
        })
        .await
        .unwrap();
    assert_eq!(reply.get_ref().message, "Hello tonic!");

    let mut tests = TestServiceClient::new(channel);
    tests.empty_call(tonic_testing::Empty {}).await.unwrap();
    assert_eq!(duplex_sizes(&mut tests).await, [1, 300, 70_000]);
    let unimplemented = tests
        .unary_call(tonic_testing::SimpleRequest::default())
        .await
        .unwrap_err();
    assert_eq!(unimplemented.code(), Code::Unimplemented);
    let _ = stop.send(());
}

#[tokio::test]
async fn a_tonic_service_ported_to_fastgrpc_answers_the_same() {
    let tonic_server =
        TestServer::start(Server::builder().add_tower_service(GreeterServer::new(TonicHello)))
            .await;
    let ported_server =
        TestServer::start(Server::builder().add_service(FastGreeterServer::new(PortedHello))).await;
    for name in ["Ferris", ""] {
        let mut answers = Vec::new();
        for server in [&tonic_server, &ported_server] {
            let mut client = GreeterClient::new(channel(server).await);
            let answer = client
                .say_hello(HelloRequest { name: name.into() })
                .await
                .map(|reply| {
                    let served_by = reply.metadata().get("served-by").cloned();
                    (reply.into_inner().message, served_by)
                })
                .map_err(|status| (status.code(), status.message().to_owned()));
            answers.push(answer);
        }
        assert_eq!(answers[0], answers[1], "{name:?}");
    }
    tonic_server.stop().await;
    ported_server.stop().await;
}
