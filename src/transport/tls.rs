//! TLS (the `tls` feature): rustls with the ring provider, ALPN `h2` and `http/1.1`, optional
//! client certificates. The handshake runs in the connection's own task, within the handshake
//! timeout; the protocol ALPN chose picks the connection's HTTP server.

use std::fmt;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use super::sniff::Protocol;

/// The ALPN protocol of HTTP/2 over TLS, which gRPC clients require the server to select.
const ALPN_H2: &[u8] = b"h2";
/// The ALPN protocol of HTTP/1.1, which browsers and curl offer for gRPC-Web and Connect.
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// A TLS server configuration made from PEM files: the server's certificate chain and key, and
/// optionally the roots that client certificates must chain to. [`build`](Self::build) gives
/// the rustls `ServerConfig` for [`Builder::tls_config`](crate::Builder::tls_config); for
/// anything this does not cover, build a `rustls::ServerConfig` yourself.
///
/// ```no_run
/// # async fn run(greeter: impl fastgrpc::service::FastService + fastgrpc::service::NamedService)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// use fastgrpc::transport::TlsConfig;
///
/// let tls = TlsConfig::from_pem(std::fs::read("server.pem")?, std::fs::read("server.key")?)?
///     // Only clients with a certificate signed by this CA may connect (mutual TLS).
///     .client_ca_pem(std::fs::read("client-ca.pem")?)?
///     .build()?;
/// fastgrpc::Server::builder()
///     .tls_config(tls)
///     .connect_info(true) // handlers see the client's certificate chain
///     .add_service(greeter)
///     .serve("0.0.0.0:50051".parse()?)
///     .await?;
/// # Ok(())
/// # }
/// ```
pub struct TlsConfig {
    cert_chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_roots: Option<RootCertStore>,
    client_auth_optional: bool,
    alpn_http1: bool,
}

impl TlsConfig {
    /// The server's certificate chain (PEM `CERTIFICATE` blocks, its own certificate first)
    /// and private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem(
        cert_chain: impl AsRef<[u8]>,
        key: impl AsRef<[u8]>,
    ) -> Result<TlsConfig, TlsError> {
        let cert_chain = certificates(cert_chain.as_ref(), "the server's certificate chain")?;
        let key = PrivateKeyDer::from_pem_slice(key.as_ref())
            .map_err(|error| TlsError::new("the server's private key", error))?;
        Ok(TlsConfig {
            cert_chain,
            key,
            client_roots: None,
            client_auth_optional: false,
            alpn_http1: true,
        })
    }

    /// Asks every client for a certificate chaining to one of `roots` (PEM `CERTIFICATE`
    /// blocks), and refuses the connection of a client without one, unless
    /// [`client_auth_optional`](Self::client_auth_optional). Handlers find the chain in
    /// [`ConnectInfo::peer_certs`](crate::transport::ConnectInfo::peer_certs).
    pub fn client_ca_pem(mut self, roots: impl AsRef<[u8]>) -> Result<TlsConfig, TlsError> {
        let mut store = RootCertStore::empty();
        for cert in certificates(roots.as_ref(), "the client CA roots")? {
            store
                .add(cert)
                .map_err(|error| TlsError::new("a client CA root", error))?;
        }
        self.client_roots = Some(store);
        Ok(self)
    }

    /// With client CA roots set: also accept clients that present no certificate (one that
    /// does present one must still chain to the roots). Default: a certificate is required.
    pub fn client_auth_optional(mut self, optional: bool) -> TlsConfig {
        self.client_auth_optional = optional;
        self
    }

    /// Whether ALPN offers `http/1.1` beside `h2` (default: yes), so that clients speaking only
    /// HTTP/1.1 over TLS (browsers' gRPC-Web and Connect clients on some stacks, `curl
    /// --http1.1`) are served too. With `false` only `h2` is offered, and such clients fail the
    /// handshake; gRPC clients offer `h2` and get it either way.
    pub fn alpn_http1(mut self, enabled: bool) -> TlsConfig {
        self.alpn_http1 = enabled;
        self
    }

    /// The rustls configuration: ring's cryptography, TLS 1.3 and 1.2, ALPN `h2` and (unless
    /// [`alpn_http1(false)`](Self::alpn_http1)) `http/1.1`.
    pub fn build(self) -> Result<ServerConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| TlsError::new("the protocol versions", error))?;
        let builder = match self.client_roots {
            None => builder.with_no_client_auth(),
            Some(roots) => {
                let mut verifier =
                    WebPkiClientVerifier::builder_with_provider(roots.into(), provider);
                if self.client_auth_optional {
                    verifier = verifier.allow_unauthenticated();
                }
                let verifier = verifier
                    .build()
                    .map_err(|error| TlsError::new("the client certificate verifier", error))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(self.cert_chain, self.key)
            .map_err(|error| TlsError::new("the server's certificate and key", error))?;
        config.alpn_protocols = alpn_protocols(self.alpn_http1);
        Ok(config)
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("cert_chain", &self.cert_chain.len())
            .field(
                "client_roots",
                &self.client_roots.as_ref().map(RootCertStore::len),
            )
            .field("client_auth_optional", &self.client_auth_optional)
            .field("alpn_http1", &self.alpn_http1)
            .finish_non_exhaustive()
    }
}

/// Every PEM `CERTIFICATE` block of `pem`; at least one.
fn certificates(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::new(what, error))?;
    if certs.is_empty() {
        return Err(TlsError::new(what, "no CERTIFICATE block in the PEM data"));
    }
    Ok(certs)
}

/// A TLS configuration could not be made: which part was wrong, and why.
#[derive(Debug)]
pub struct TlsError {
    what: &'static str,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl TlsError {
    fn new(
        what: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        TlsError {
            what,
            source: source.into(),
        }
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS configuration: {}: {}", self.what, self.source)
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// The ALPN protocols offered, most preferred first: HTTP/2, and HTTP/1.1 if `http1`.
fn alpn_protocols(http1: bool) -> Vec<Vec<u8>> {
    let mut protocols = vec![ALPN_H2.to_vec()];
    if http1 {
        protocols.push(ALPN_HTTP1.to_vec());
    }
    protocols
}

/// `config` offering HTTP/2 by ALPN, and HTTP/1.1 if the server serves it (`http1`), unless it
/// already names its protocols.
pub(crate) fn with_default_alpn(mut config: ServerConfig, http1: bool) -> ServerConfig {
    if config.alpn_protocols.is_empty() {
        config.alpn_protocols = alpn_protocols(http1);
    }
    config
}

/// The HTTP version that ALPN chose on `stream`, if it chose one the server knows; `None` when
/// the client offered no ALPN (the first bytes tell, as without TLS).
pub(crate) fn negotiated<IO>(stream: &TlsStream<IO>) -> Option<Protocol> {
    match stream.get_ref().1.alpn_protocol()? {
        ALPN_H2 => Some(Protocol::Http2),
        ALPN_HTTP1 => Some(Protocol::Http1),
        _ => None,
    }
}

/// What a TLS server's connections share.
#[derive(Clone)]
pub(crate) struct Acceptor(TlsAcceptor);

impl Acceptor {
    pub(crate) fn new(config: ServerConfig) -> Self {
        Acceptor(TlsAcceptor::from(Arc::new(config)))
    }

    /// Runs the TLS handshake on `io`, giving up at `deadline` or at shutdown. A client that
    /// fails it (a plaintext client, a refused certificate) only loses its own connection.
    pub(crate) async fn accept<IO>(
        &self,
        io: IO,
        deadline: Instant,
        shutdown: &CancellationToken,
    ) -> Option<TlsStream<IO>>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        tokio::select! {
            result = tokio::time::timeout_at(deadline, self.0.accept(io)) => match result {
                Ok(Ok(stream)) => Some(stream),
                Ok(Err(error)) => {
                    tracing::debug!(%error, "TLS handshake failed");
                    None
                }
                Err(_) => {
                    tracing::debug!("TLS handshake timed out");
                    None
                }
            },
            () = shutdown.cancelled() => None,
        }
    }
}

impl fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acceptor").finish_non_exhaustive()
    }
}
