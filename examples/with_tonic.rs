//! fastgrpc and tonic, each hosting the other's services: `cargo run --example with_tonic`.
//!
//! - On 127.0.0.1:50051, fastgrpc's server hosts a service written for tonic (the greeter of
//!   `tonic_greeter_server.rs`, unchanged) with `add_tower_service`.
//! - On 127.0.0.1:50052, tonic's server hosts a service written for fastgrpc, wrapped in
//!   `ForTonic`.
//!
//! It calls each once with tonic's client, prints the replies, and stops. This is how a
//! server moves from tonic one service at a time (`docs/MIGRATING_FROM_TONIC.md`).

use fastgrpc::service::ForTonic;
use fastgrpc::{FastFuture, RpcFuture};

/// Messages and fastgrpc's server side, compiled by the workspace's `protos` crate.
pub use protos::helloworld as fast;
/// The same proto as tonic generates it (its server side and client).
pub use protos::tonic_pb::helloworld as tonic_pb;

/// A service written for tonic.
struct TonicGreeter;

#[tonic::async_trait]
impl tonic_pb::greeter_server::Greeter for TonicGreeter {
    async fn say_hello(
        &self,
        request: tonic::Request<tonic_pb::HelloRequest>,
    ) -> Result<tonic::Response<tonic_pb::HelloReply>, tonic::Status> {
        let name = request.into_inner().name;
        Ok(tonic::Response::new(tonic_pb::HelloReply {
            message: format!("Hello {name}, from a tonic service in fastgrpc's server"),
        }))
    }
}

/// A service written for fastgrpc.
struct FastGreeter;

impl fast::greeter_server::Greeter for FastGreeter {
    fn say_hello(
        &self,
        request: tonic::Request<fast::HelloRequest>,
    ) -> impl RpcFuture<fast::HelloReply> {
        let name = request.into_inner().name;
        FastFuture::ok(tonic::Response::new(fast::HelloReply {
            message: format!("Hello {name}, from a fastgrpc service in tonic's server"),
        }))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (stop, stopped) = tokio::sync::watch::channel(());
    let signal = |mut stopped: tokio::sync::watch::Receiver<()>| async move {
        let _ = stopped.changed().await;
    };

    let fastgrpc_server = fastgrpc::Server::builder()
        .add_tower_service(tonic_pb::greeter_server::GreeterServer::new(TonicGreeter))
        .serve_with_shutdown("127.0.0.1:50051".parse()?, signal(stopped.clone()));
    let tonic_server = tonic::transport::Server::builder()
        .add_service(ForTonic::new(fast::greeter_server::GreeterServer::new(
            FastGreeter,
        )))
        .serve_with_shutdown("127.0.0.1:50052".parse()?, signal(stopped));
    let fastgrpc_server = tokio::spawn(fastgrpc_server);
    let tonic_server = tokio::spawn(tonic_server);

    for port in [50051, 50052] {
        let reply = call(port).await?;
        println!("127.0.0.1:{port}: {reply}");
    }
    stop.send(())?;
    fastgrpc_server.await??;
    tonic_server.await??;
    Ok(())
}

/// One `SayHello` with tonic's client, retried briefly while the server starts.
async fn call(port: u16) -> Result<String, Box<dyn std::error::Error>> {
    let url = format!("http://127.0.0.1:{port}");
    let mut attempts = 0;
    let channel = loop {
        match tonic::transport::Endpoint::from_shared(url.clone())?
            .connect()
            .await
        {
            Ok(channel) => break channel,
            Err(_) if attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(error) => return Err(error.into()),
        }
    };
    let mut client = tonic_pb::greeter_client::GreeterClient::new(channel);
    let reply = client
        .say_hello(tonic_pb::HelloRequest {
            name: "Ferris".into(),
        })
        .await?;
    Ok(reply.into_inner().message)
}
