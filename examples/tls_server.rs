//! The greeter over TLS: `cargo run --features tls --example tls_server -- CERT KEY [CLIENT_CA]`.
//!
//! `CERT` is the server's certificate chain and `KEY` its private key, both PEM. With
//! `CLIENT_CA` (PEM), clients must present a certificate it signed (mutual TLS), and the
//! greeting names the client's certificate. `--addr HOST:PORT` (default 127.0.0.1:50051).
//! Ctrl-C stops it gracefully.
//!
//! A development certificate for `localhost`, self-signed, with openssl:
//!
//! ```sh
//! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
//!     -subj /CN=localhost -addext subjectAltName=DNS:localhost \
//!     -keyout server.key -out server.pem
//! cargo run --features tls --example tls_server -- server.pem server.key
//! ```
//!
//! A client then trusts `server.pem` as its CA and connects to `https://localhost:50051`
//! (tonic: `ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem))`;
//! grpcurl: `grpcurl -cacert server.pem -import-path proto -proto helloworld.proto
//! -d '{"name":"Ferris"}' localhost:50051 helloworld.Greeter/SayHello`).

use fastgrpc::transport::{ConnectInfo, TlsConfig};
use fastgrpc::{FastFuture, Request, Response, RpcFuture, Server};

pub use protos::helloworld;

use helloworld::greeter_server::{Greeter, GreeterServer};
use helloworld::{HelloReply, HelloRequest};

struct MyGreeter;

impl Greeter for MyGreeter {
    fn say_hello(&self, request: Request<HelloRequest>) -> impl RpcFuture<HelloReply> {
        // Who is calling: the peer's address, and its certificate under mutual TLS.
        let caller = match ConnectInfo::of(&request) {
            Some(info) => {
                let certs = info.peer_certs().map_or(0, <[_]>::len);
                format!(" (from {:?}, {certs} client certificate(s))", info.remote())
            }
            None => String::new(),
        };
        let name = request.into_inner().name;
        FastFuture::ok(Response::new(HelloReply {
            message: format!("Hello {name}!{caller}"),
        }))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:50051".parse()?;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs a value")?.parse()?,
            "-h" | "--help" => {
                println!("usage: tls_server [--addr HOST:PORT] CERT KEY [CLIENT_CA]");
                return Ok(());
            }
            file => files.push(file.to_owned()),
        }
    }
    let (cert, key, client_ca) = match files.as_slice() {
        [cert, key] => (cert, key, None),
        [cert, key, client_ca] => (cert, key, Some(client_ca)),
        _ => return Err("usage: tls_server [--addr HOST:PORT] CERT KEY [CLIENT_CA]".into()),
    };

    let mut tls = TlsConfig::from_pem(std::fs::read(cert)?, std::fs::read(key)?)?;
    if let Some(client_ca) = client_ca {
        tls = tls.client_ca_pem(std::fs::read(client_ca)?)?;
    }
    println!("greeter listening on {addr} (TLS)");
    Server::builder()
        .tls_config(tls.build()?)
        .connect_info(true)
        .add_service(GreeterServer::new(MyGreeter))
        .serve_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
            println!("shutting down: finishing calls in flight");
        })
        .await?;
    Ok(())
}
