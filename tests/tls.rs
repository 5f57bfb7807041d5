//! TLS (the `tls` feature): tonic's TLS client against a fastgrpc server, with certificates made
//! here (a CA, a server certificate for `localhost`, a client certificate). Client-certificate
//! authentication, the peer's chain in `ConnectInfo`, clients that fail the handshake
//! (plaintext, certificate-less, silent) without disturbing the others, and ALPN: HTTP/1.1
//! clients over TLS (tokio-rustls' client, Connect calls written by hand) served beside HTTP/2.

use std::time::Duration;

use fastgrpc::Server;
use fastgrpc::transport::TlsConfig;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use support::pb::helloworld::greeter_server::GreeterServer;
use support::{RecordingGreeter, TestServer, say_hello};
use tokio::io::AsyncReadExt;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// A CA and the certificates it signed, in PEM (and the client's in DER, to compare).
struct Pki {
    ca: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
    client_der: Vec<u8>,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fastgrpc test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca = Issuer::new(ca_params, ca_key);

    let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(vec![name.to_owned()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        (cert, key)
    };
    let (server_cert, server_key) = leaf("localhost", ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = leaf("test-client", ExtendedKeyUsagePurpose::ClientAuth);
    Pki {
        ca: ca_cert.pem(),
        server_cert: server_cert.pem(),
        server_key: server_key.serialize_pem(),
        client_cert: client_cert.pem(),
        client_key: client_key.serialize_pem(),
        client_der: client_cert.der().to_vec(),
    }
}

/// A TLS server for `localhost` recording what its calls see; with `client_ca`, clients must
/// present a certificate signed by it.
async fn tls_server(pki: &Pki, client_ca: bool) -> (TestServer, RecordingGreeter) {
    let mut tls = TlsConfig::from_pem(&pki.server_cert, &pki.server_key).unwrap();
    if client_ca {
        tls = tls.client_ca_pem(&pki.ca).unwrap();
    }
    serve(tls.build().unwrap()).await
}

async fn serve(tls: fastgrpc::transport::rustls::ServerConfig) -> (TestServer, RecordingGreeter) {
    let greeter = RecordingGreeter::default();
    let server = TestServer::start(
        Server::builder()
            .tls_config(tls)
            .connect_info(true)
            .handshake_timeout(Duration::from_millis(500))
            .add_service(GreeterServer::new(greeter.clone())),
    )
    .await;
    (server, greeter)
}

/// A TLS channel to `server` trusting the test CA, with the client certificate if `identity`.
async fn tls_channel(server: &TestServer, pki: &Pki, identity: bool) -> Result<Channel, String> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&pki.ca))
        .domain_name("localhost");
    if identity {
        tls = tls.identity(Identity::from_pem(&pki.client_cert, &pki.client_key));
    }
    Endpoint::from_shared(format!("https://{}", server.addr))
        .unwrap()
        .timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(10))
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .map_err(|error| format!("{error:?}"))
}

#[tokio::test]
async fn tls_calls_are_served_and_see_their_addresses() {
    let pki = pki();
    let (server, greeter) = tls_server(&pki, false).await;
    let channel = tls_channel(&server, &pki, false).await.unwrap();
    assert_eq!(say_hello(channel, "tls").await.unwrap(), "Hello tls");

    let seen = greeter.seen();
    let [Some(info)] = seen.as_slice() else {
        panic!("one call with connection information: {seen:?}");
    };
    assert_eq!(info.local_addr(), Some(server.addr));
    assert!(info.remote_addr().unwrap().ip().is_loopback());
    assert!(info.peer_certs().is_none(), "no client certificate asked");
    // tonic's own accessor works over TLS too with the `tonic-remote-addr` feature.
    let expected = info
        .remote_addr()
        .filter(|_| cfg!(feature = "tonic-remote-addr"));
    assert_eq!(*greeter.tonic_remote.lock().unwrap(), [expected]);
    server.stop().await;
}

#[tokio::test]
async fn client_certificate_required_refuses_clients_without_one() {
    let pki = pki();
    let (server, greeter) = tls_server(&pki, true).await;

    // Without a certificate: the handshake (TLS 1.3: the first read after it) fails.
    let refused = match tls_channel(&server, &pki, false).await {
        Err(error) => Err(error),
        Ok(channel) => say_hello(channel, "anonymous")
            .await
            .map_err(|status| status.to_string()),
    };
    assert!(
        refused.is_err(),
        "a client without a certificate is refused"
    );
    assert!(greeter.seen().is_empty(), "no call reached the handler");

    // With one: served, and the handler sees the chain the client presented.
    let channel = tls_channel(&server, &pki, true).await.unwrap();
    assert_eq!(say_hello(channel, "mtls").await.unwrap(), "Hello mtls");
    let seen = greeter.seen();
    let [Some(info)] = seen.as_slice() else {
        panic!("one call with connection information: {seen:?}");
    };
    let chain = info.peer_certs().expect("the client's chain");
    assert_eq!(chain.len(), 1);
    assert_eq!(chain[0].as_ref(), pki.client_der.as_slice());
    server.stop().await;
}

#[tokio::test]
async fn plaintext_and_silent_clients_fail_alone() {
    let pki = pki();
    let (server, greeter) = tls_server(&pki, false).await;

    // A plaintext HTTP/2 client: its preface is no TLS ClientHello.
    let plaintext = match Endpoint::from_shared(server.url())
        .unwrap()
        .timeout(Duration::from_secs(5))
        .connect()
        .await
    {
        Err(error) => Err(error.to_string()),
        Ok(channel) => say_hello(channel, "plain")
            .await
            .map_err(|status| status.to_string()),
    };
    assert!(plaintext.is_err(), "a plaintext client gets no answer");

    // A client that connects and says nothing holds neither the accept loop nor other
    // clients; its connection is closed when the handshake timeout (500 ms) runs out.
    let mut silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let channel = tls_channel(&server, &pki, false).await.unwrap();
    assert_eq!(say_hello(channel, "tls").await.unwrap(), "Hello tls");
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut byte))
        .await
        .expect("the silent connection is closed within the handshake timeout");
    assert!(matches!(closed, Ok(0) | Err(_)), "closed: {closed:?}");

    assert_eq!(
        greeter.seen().len(),
        1,
        "only the TLS client's call arrived"
    );
    server.stop().await;
}

/// A rustls `ServerConfig` of one's own, from the test PKI, with the ALPN protocols `alpn`.
fn own_config(pki: &Pki, alpn: &[&[u8]]) -> fastgrpc::transport::rustls::ServerConfig {
    use fastgrpc::transport::rustls::pki_types::pem::PemObject;
    use fastgrpc::transport::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider =
        std::sync::Arc::new(fastgrpc::transport::rustls::crypto::ring::default_provider());
    let mut config = fastgrpc::transport::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(pki.server_cert.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(pki.server_key.as_bytes()).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    config
}

#[tokio::test]
async fn a_rustls_config_of_ones_own_gets_h2_and_http1_alpn() {
    let pki = pki();
    let (server, _greeter) = serve(own_config(&pki, &[])).await;
    // tonic's client refuses a server that does not select h2.
    let channel = tls_channel(&server, &pki, false).await.unwrap();
    assert_eq!(say_hello(channel, "own").await.unwrap(), "Hello own");
    let tls = tls_connect(&server, &pki, &[b"http/1.1"]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(connect_call_over_http1(tls, "own").await.status, 200);
    server.stop().await;
}

/// A config's own ALPN list is kept as it is; an empty one gets `h2` alone when the server
/// does not serve HTTP/1.1.
#[tokio::test]
async fn an_alpn_list_of_ones_own_is_kept_and_http1_is_offered_only_when_served() {
    let pki = pki();
    let h2_only = [
        Server::builder().tls_config(own_config(&pki, &[b"h2"])),
        Server::builder()
            .accept_http1(false)
            .tls_config(own_config(&pki, &[])),
    ];
    for builder in h2_only {
        let server =
            TestServer::start(builder.add_service(GreeterServer::new(RecordingGreeter::default())))
                .await;
        let refused = tls_connect(&server, &pki, &[b"http/1.1"]).await;
        assert!(
            refused.is_err(),
            "no protocol in common: {:?}",
            refused.map(|_| ())
        );
        let channel = tls_channel(&server, &pki, false).await.unwrap();
        assert_eq!(say_hello(channel, "h2").await.unwrap(), "Hello h2");
        server.stop().await;
    }
}

/// A TLS connection to `server` trusting the test CA, offering the ALPN protocols `alpn` (none
/// if empty); the handshake's error if it fails.
async fn tls_connect(
    server: &TestServer,
    pki: &Pki,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use fastgrpc::transport::rustls;
    use rustls::pki_types::pem::PemObject;

    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(pki.ca.as_bytes()).unwrap())
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(server.addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connecting =
        tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)).connect(name, tcp);
    tokio::time::timeout(Duration::from_secs(10), connecting)
        .await
        .expect("the handshake ends within 10 s")
}

/// A Connect unary call (JSON) to `SayHello` over HTTP/1.1 on `tls`, the connection closed after
/// it: the answer.
async fn connect_call_over_http1<IO>(mut tls: IO, name: &str) -> support::http1::Http1Response
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    let body = format!(r#"{{"name":"{name}"}}"#);
    let request = support::http1::request(
        "POST",
        "/helloworld.Greeter/SayHello",
        "application/json",
        &[("connection", "close")],
        body.as_bytes(),
    );
    tls.write_all(&request).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut raw))
        .await
        .expect("answered and closed within 10 s")
        .unwrap();
    let mut answers = support::http1::responses(&raw);
    assert_eq!(answers.len(), 1, "{answers:?}");
    answers.pop().unwrap()
}

/// Browsers and curl may speak HTTP/1.1 over TLS: the server offers `http/1.1` beside `h2` and
/// serves a connection that chose it over HTTP/1.1, and one whose client offered no ALPN by its
/// first bytes, as without TLS.
#[tokio::test]
async fn http1_clients_over_tls_are_served_whether_they_offer_alpn_or_not() {
    let pki = pki();
    let (server, greeter) = tls_server(&pki, false).await;
    for (offered, chosen) in [
        (&[&b"http/1.1"[..]][..], Some(&b"http/1.1"[..])),
        (&[][..], None),
    ] {
        let tls = tls_connect(&server, &pki, offered).await.unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), chosen);
        let answer = connect_call_over_http1(tls, "web").await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.body, br#"{"message":"Hello web"}"#, "{answer:?}");
    }
    // A client offering both gets HTTP/2, which gRPC needs.
    let tls = tls_connect(&server, &pki, &[b"h2", b"http/1.1"])
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    assert_eq!(
        greeter.seen().len(),
        2,
        "both HTTP/1.1 calls reached the handler"
    );
    server.stop().await;
}

/// `alpn_http1(false)` offers `h2` alone: a client that speaks only HTTP/1.1 fails the
/// handshake, gRPC's clients are served as ever.
#[tokio::test]
async fn alpn_http1_off_offers_http2_alone() {
    let pki = pki();
    let tls = TlsConfig::from_pem(&pki.server_cert, &pki.server_key)
        .unwrap()
        .alpn_http1(false)
        .build()
        .unwrap();
    assert_eq!(tls.alpn_protocols, [b"h2".to_vec()]);
    let (server, greeter) = serve(tls).await;
    let refused = tls_connect(&server, &pki, &[b"http/1.1"]).await;
    assert!(
        refused.is_err(),
        "no protocol in common: {:?}",
        refused.map(|_| ())
    );
    let channel = tls_channel(&server, &pki, false).await.unwrap();
    assert_eq!(say_hello(channel, "h2").await.unwrap(), "Hello h2");
    assert_eq!(greeter.seen().len(), 1);
    server.stop().await;
}

#[test]
fn bad_pem_is_refused_with_what_was_wrong() {
    let pki = pki();
    let error = TlsConfig::from_pem("not PEM", &pki.server_key).unwrap_err();
    assert!(error.to_string().contains("certificate chain"), "{error}");
    let error = TlsConfig::from_pem(&pki.server_cert, "not PEM").unwrap_err();
    assert!(error.to_string().contains("private key"), "{error}");
    let error = TlsConfig::from_pem(&pki.server_cert, &pki.server_key)
        .unwrap()
        .client_ca_pem("")
        .unwrap_err();
    assert!(error.to_string().contains("client CA"), "{error}");
    // A key that does not match the certificate.
    let error = TlsConfig::from_pem(&pki.server_cert, &pki.client_key)
        .unwrap()
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("certificate and key"), "{error}");
}
