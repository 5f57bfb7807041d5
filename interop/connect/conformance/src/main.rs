//! The server under test of the Connect conformance suite (connectrpc/conformance,
//! `connectconformance --mode server`), written on fastgrpc's public API as a user's server is.
//!
//! The runner writes one `ServerCompatRequest` to stdin (a 4-byte big-endian length, then the
//! message); this listens on a free loopback port, as the request asks (TLS with the runner's
//! certificate, client certificates, a message size limit), writes the `ServerCompatResponse`
//! (host, port, certificate) to stdout the same way, and serves `ConformanceService`
//! (`service.rs`) until SIGTERM. fastgrpc serves every protocol on every
//! connection, so one server answers whichever the runner asks for.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};

use fastgrpc::transport::TlsConfig;
use fastgrpc::{CompressionEncoding, Server};
use prost::Message;

mod service;

/// The suite's messages and the service, compiled from `proto/` by `build.rs`.
pub mod pb {
    #![allow(missing_docs, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/connectrpc.conformance.v1.rs"));
}

use pb::conformance_service_server::ConformanceServiceServer;

/// Every encoding the suite may use: requests in any of them are read, and replies are
/// compressed as the client accepts.
const ENCODINGS: [CompressionEncoding; 3] = [
    CompressionEncoding::Gzip,
    CompressionEncoding::Zstd,
    CompressionEncoding::Deflate,
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let request = pb::ServerCompatRequest::decode(&read_delimited(&mut std::io::stdin())?[..])?;
    tokio::runtime::Runtime::new()?.block_on(serve(request))
}

async fn serve(request: pb::ServerCompatRequest) -> Result<(), Box<dyn std::error::Error>> {
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
    let port = listener.local_addr()?.port();

    let mut service = ConformanceServiceServer::new(service::Conformance);
    for encoding in ENCODINGS {
        service = service
            .accept_compressed(encoding)
            .send_compressed(encoding);
    }
    if request.message_receive_limit > 0 {
        service = service.max_decoding_message_size(request.message_receive_limit as usize);
    }
    let mut builder = Server::builder();
    let mut pem_cert = Vec::new();
    if request.use_tls {
        let creds = request
            .server_creds
            .ok_or("use_tls is set, but the request has no server_creds")?;
        let mut tls = TlsConfig::from_pem(&creds.cert, &creds.key)?;
        if !request.client_tls_cert.is_empty() {
            tls = tls.client_ca_pem(&request.client_tls_cert)?;
        }
        builder = builder.tls_config(tls.build()?);
        pem_cert = creds.cert;
    }

    let response = pb::ServerCompatResponse {
        host: Ipv4Addr::LOCALHOST.to_string(),
        port: port.into(),
        pem_cert,
    };
    write_delimited(&mut std::io::stdout(), &response.encode_to_vec())?;

    builder
        .add_service(service)
        .serve_with_listener(listener, stopped())
        .await?;
    Ok(())
}

/// Completes when the runner stops the server: SIGTERM, or Ctrl-C when run by hand.
async fn stopped() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The largest request the runner is expected to write; more means a broken stream.
const MAX_DELIMITED: usize = 16 * 1024 * 1024;

/// One length-prefixed message (4 bytes, big-endian, then the message).
fn read_delimited(input: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_DELIMITED {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a message of {len} bytes announced on stdin"),
        ));
    }
    let mut message = vec![0; len];
    input.read_exact(&mut message)?;
    Ok(message)
}

fn write_delimited(output: &mut impl Write, message: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(message.len()).map_err(std::io::Error::other)?;
    output.write_all(&len.to_be_bytes())?;
    output.write_all(message)?;
    output.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delimited_message_reads_back_whole() {
        let mut written = Vec::new();
        write_delimited(&mut written, b"hello").unwrap();
        assert_eq!(written[..4], [0, 0, 0, 5]);
        assert_eq!(read_delimited(&mut &written[..]).unwrap(), b"hello");
        assert!(read_delimited(&mut &written[..6]).is_err());
    }
}
