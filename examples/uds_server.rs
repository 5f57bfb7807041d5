//! The greeter on a unix domain socket, called once over it: `cargo run --example uds_server`
//! (Unix only). With `--path PATH` it serves there until Ctrl-C instead of calling itself.

#[cfg(unix)]
mod demo {
    use std::path::PathBuf;

    use fastgrpc::transport::ConnectInfo;
    use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server};

    pub use protos::helloworld;
    use protos::tonic_pb::helloworld as client_pb;

    use helloworld::greeter_server::{Greeter, GreeterServer};
    use helloworld::{HelloReply, HelloRequest};

    struct MyGreeter;

    impl Greeter for MyGreeter {
        fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
            // Over a unix socket the peer has a path (often unnamed), not an IP address.
            let peer = ConnectInfo::of(&request)
                .and_then(|info| info.remote().cloned())
                .map_or("unknown".into(), |peer| format!("{peer:?}"));
            let name = request.into_inner().name;
            FastFuture::ok(Response::new(HelloReply {
                message: format!("Hello {name} (peer {peer})!"),
            }))
        }
    }

    pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
        let mut args = std::env::args().skip(1);
        let serve_only = match (args.next().as_deref(), args.next()) {
            (Some("--path"), Some(path)) => Some(PathBuf::from(path)),
            (None, _) => None,
            _ => return Err("usage: uds_server [--path PATH]".into()),
        };
        let path = serve_only.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("fastgrpc-greeter-{}.sock", std::process::id()))
        });
        let server = Server::builder()
            .connect_info(true)
            .add_service(GreeterServer::new(MyGreeter));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve_with_uds(path.clone(), async {
            let _ = stopped.await;
        }));
        println!("greeter listening on {}", path.display());
        if serve_only.is_some() {
            tokio::signal::ctrl_c().await?;
        } else {
            println!("{}", call_over(&path).await?);
        }
        let _ = stop.send(());
        serving.await??;
        Ok(())
    }

    /// tonic's client over the socket: its connector opens a `UnixStream` instead of TCP.
    async fn call_over(path: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
        // Bounded wait for the socket file to appear.
        for _ in 0..100 {
            if path.exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let path = path.to_owned();
        let connector = tower::service_fn(move |_: http::Uri| {
            let path = path.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        });
        // The URI is required by the API but not used by the connector.
        let channel = tonic::transport::Endpoint::from_static("http://localhost")
            .connect_with_connector(connector)
            .await?;
        let mut client = client_pb::greeter_client::GreeterClient::new(channel);
        let reply = client
            .say_hello(client_pb::HelloRequest {
                name: "unix".into(),
            })
            .await?;
        Ok(reply.into_inner().message)
    }
}

#[cfg(unix)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    demo::run().await
}

#[cfg(not(unix))]
fn main() {
    eprintln!("unix domain sockets need a Unix system");
}
