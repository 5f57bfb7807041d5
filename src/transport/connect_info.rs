//! What a handler can learn about the connection its call arrived on: the local and peer
//! addresses and, over TLS, the client's certificate chain.
//!
//! The information is gathered once per connection (one `Arc`) and, when
//! [`Builder::connect_info`](crate::Builder::connect_info) is on, put into each request's
//! extensions. That insertion is not free: `http::Extensions` boxes its map on first use, so a
//! request that carried no extension before pays three allocations (the map, its table, the
//! boxed value), one that already carried a deadline pays one. Hence off by default.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;

/// Where a connection was made: an IP socket address, or a unix socket address.
#[derive(Clone)]
#[non_exhaustive]
pub enum Address {
    /// TCP: an IP address and a port.
    Inet(SocketAddr),
    /// A unix domain socket; a client's is usually unnamed (no path).
    #[cfg(unix)]
    Unix(tokio::net::unix::SocketAddr),
}

impl Address {
    /// The IP socket address, if this is one.
    pub fn as_inet(&self) -> Option<SocketAddr> {
        match self {
            Address::Inet(addr) => Some(*addr),
            #[cfg(unix)]
            Address::Unix(_) => None,
        }
    }

    /// The path of a named unix socket (`None` for an IP address or an unnamed socket).
    #[cfg(unix)]
    pub fn as_unix_path(&self) -> Option<&std::path::Path> {
        match self {
            Address::Inet(_) => None,
            Address::Unix(addr) => addr.as_pathname(),
        }
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Inet(addr) => write!(f, "{addr}"),
            #[cfg(unix)]
            Address::Unix(addr) => match addr.as_pathname() {
                Some(path) => write!(f, "unix:{}", path.display()),
                None => f.write_str("unix:(unnamed)"),
            },
        }
    }
}

/// The connection a call arrived on, in the request's extensions when
/// [`Builder::connect_info`](crate::Builder::connect_info) is on.
///
/// Cloning it is one reference count: every call of a connection shares one.
///
/// ```
/// use fastgrpc::transport::ConnectInfo;
/// use fastgrpc::{Request, Status};
///
/// fn caller(request: &Request<()>) -> Result<String, Status> {
///     let info = ConnectInfo::of(request)
///         .ok_or_else(|| Status::internal("connect_info is off"))?;
///     Ok(match info.remote_addr() {
///         Some(addr) => addr.ip().to_string(),
///         None => "a local peer".to_owned(),
///     })
/// }
/// ```
#[derive(Clone)]
pub struct ConnectInfo {
    inner: Arc<Inner>,
}

struct Inner {
    local: Option<Address>,
    remote: Option<Address>,
    #[cfg(feature = "tls")]
    peer_certs: Option<Vec<tokio_rustls::rustls::pki_types::CertificateDer<'static>>>,
}

impl ConnectInfo {
    /// The addresses of a connection, as a [`Connected`] implementation reports them.
    pub fn new(local: Option<Address>, remote: Option<Address>) -> Self {
        ConnectInfo {
            inner: Arc::new(Inner {
                local,
                remote,
                #[cfg(feature = "tls")]
                peer_certs: None,
            }),
        }
    }

    /// The connection information in `request`'s extensions, if the server put it there.
    pub fn of<T>(request: &tonic::Request<T>) -> Option<&ConnectInfo> {
        request.extensions().get::<ConnectInfo>()
    }

    /// The server's end of the connection.
    pub fn local(&self) -> Option<&Address> {
        self.inner.local.as_ref()
    }

    /// The client's end of the connection.
    pub fn remote(&self) -> Option<&Address> {
        self.inner.remote.as_ref()
    }

    /// The server's IP address and port (`None` over a unix socket).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local().and_then(Address::as_inet)
    }

    /// The client's IP address and port (`None` over a unix socket).
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.remote().and_then(Address::as_inet)
    }

    /// The certificate chain the client presented over TLS, its own certificate first;
    /// `None` without TLS or when the client sent none.
    #[cfg(feature = "tls")]
    pub fn peer_certs(
        &self,
    ) -> Option<&[tokio_rustls::rustls::pki_types::CertificateDer<'static>]> {
        self.inner.peer_certs.as_deref()
    }

    /// This connection's addresses with the peer's certificates.
    #[cfg(feature = "tls")]
    pub(crate) fn with_peer_certs(
        &self,
        certs: Option<Vec<tokio_rustls::rustls::pki_types::CertificateDer<'static>>>,
    ) -> Self {
        ConnectInfo {
            inner: Arc::new(Inner {
                local: self.inner.local.clone(),
                remote: self.inner.remote.clone(),
                peer_certs: certs,
            }),
        }
    }
}

impl Default for ConnectInfo {
    /// Nothing known: what a connection that cannot tell its addresses reports.
    fn default() -> Self {
        ConnectInfo::new(None, None)
    }
}

impl fmt::Debug for ConnectInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("ConnectInfo");
        debug
            .field("local", &self.inner.local)
            .field("remote", &self.inner.remote);
        #[cfg(feature = "tls")]
        debug.field(
            "peer_certs",
            &self.inner.peer_certs.as_ref().map(|certs| certs.len()),
        );
        debug.finish()
    }
}

/// A connection that can tell where it comes from. Every connection a server serves implements
/// it; the server asks once per connection, and only when
/// [`Builder::connect_info`](crate::Builder::connect_info) is on.
///
/// The default method reports nothing, so an I/O type of your own (for
/// [`Builder::serve_with_incoming`](crate::Builder::serve_with_incoming)) needs one line:
///
/// ```
/// # use std::{io, pin::Pin, task::{Context, Poll}};
/// # use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
/// struct Pipe(tokio::io::DuplexStream);
/// impl fastgrpc::transport::Connected for Pipe {}
/// # impl AsyncRead for Pipe {
/// #     fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
/// #         Pin::new(&mut self.0).poll_read(cx, buf)
/// #     }
/// # }
/// ```
pub trait Connected {
    /// The addresses (and TLS details) of this connection.
    fn connect_info(&self) -> ConnectInfo {
        ConnectInfo::default()
    }
}

impl Connected for TcpStream {
    fn connect_info(&self) -> ConnectInfo {
        ConnectInfo::new(
            self.local_addr().ok().map(Address::Inet),
            self.peer_addr().ok().map(Address::Inet),
        )
    }
}

#[cfg(unix)]
impl Connected for tokio::net::UnixStream {
    fn connect_info(&self) -> ConnectInfo {
        ConnectInfo::new(
            self.local_addr().ok().map(Address::Unix),
            self.peer_addr().ok().map(Address::Unix),
        )
    }
}

/// An in-memory connection: no addresses.
impl Connected for tokio::io::DuplexStream {}

/// A TLS connection: the addresses of the connection under it, and the certificate chain the
/// client presented.
#[cfg(feature = "tls")]
impl<IO: Connected> Connected for tokio_rustls::server::TlsStream<IO> {
    fn connect_info(&self) -> ConnectInfo {
        let (io, session) = self.get_ref();
        let certs = session
            .peer_certificates()
            .map(|certs| certs.iter().map(|cert| cert.clone().into_owned()).collect());
        io.connect_info().with_peer_certs(certs)
    }
}
