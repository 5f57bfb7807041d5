//! The server: a builder of hosted services, the accept loop, and graceful shutdown.
//!
//! ```no_run
//! # async fn run(greeter: impl fastgrpc::server::FastService + fastgrpc::server::NamedService) -> std::io::Result<()> {
//! let addr = "127.0.0.1:50051".parse().unwrap();
//! fastgrpc::Server::builder()
//!     .add_service(greeter)
//!     .serve_with_shutdown(addr, async { tokio::signal::ctrl_c().await.ok(); })
//!     .await
//! # }
//! ```

mod conn;
mod router;
mod service;

pub use self::service::{FastService, NamedService};

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::router::Router;

/// Entry point: `Server::builder()` starts configuring a server.
#[derive(Debug, Clone, Copy)]
pub struct Server;

impl Server {
    /// A builder with no services and default HTTP/2 settings.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// Configures the services and HTTP/2 settings of a server, then serves.
#[derive(Debug, Default)]
pub struct Builder {
    router: Router,
    http2: Http2Settings,
    default_timeout: Option<Duration>,
}

/// What every connection of a server shares.
#[derive(Debug)]
struct Shared {
    router: Router,
    http2: Http2Settings,
    /// Deadline of calls whose client sets none (or a later one).
    default_timeout: Option<Duration>,
}

/// HTTP/2 settings the server announces.
#[derive(Debug, Clone)]
struct Http2Settings {
    initial_stream_window_size: u32,
    initial_connection_window_size: u32,
    max_frame_size: u32,
    max_concurrent_streams: Option<u32>,
    data_frame_budget: usize,
}

impl Default for Http2Settings {
    fn default() -> Self {
        // Windows of 1 MiB (hyper's defaults): a typical request body arrives in the same
        // read as its headers, so the strict path applies, without waiting for WINDOW_UPDATEs.
        Http2Settings {
            initial_stream_window_size: 1024 * 1024,
            initial_connection_window_size: 1024 * 1024,
            max_frame_size: 16 * 1024,
            max_concurrent_streams: None,
            // h2 closes a connection whose small DATA frames pile up unread beyond this
            // budget. Its default (half the connection window: about 2,000 frames of tiny
            // messages) is crossed by one socket read from a client streaming small messages,
            // each in its own frame as gRPC clients send them. 4 MiB allows about 16,000 such
            // frames in flight, some 2 MB of buffered frames per connection at worst.
            data_frame_budget: 4 * 1024 * 1024,
        }
    }
}

impl Http2Settings {
    fn builder(&self) -> h2::server::Builder {
        let mut builder = h2::server::Builder::new();
        builder
            .initial_window_size(self.initial_stream_window_size)
            .initial_connection_window_size(self.initial_connection_window_size)
            .max_frame_size(self.max_frame_size)
            .data_frame_budget(self.data_frame_budget);
        if let Some(max) = self.max_concurrent_streams {
            builder.max_concurrent_streams(max);
        }
        builder
    }
}

impl Builder {
    /// Hosts `service` under its [`NamedService::NAME`]; a later service of the same name
    /// replaces an earlier one.
    pub fn add_service<S>(mut self, service: S) -> Self
    where
        S: FastService + NamedService,
    {
        self.router.add(S::NAME, Box::new(service));
        self
    }

    /// Gives every call at most `timeout`: a call whose client sets no `grpc-timeout`, or a
    /// longer one, ends with `DEADLINE_EXCEEDED` after `timeout` (default: no limit).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// The HTTP/2 flow-control window of each stream (default 1 MiB).
    pub fn initial_stream_window_size(mut self, size: u32) -> Self {
        self.http2.initial_stream_window_size = size;
        self
    }

    /// The HTTP/2 flow-control window of each connection (default 1 MiB).
    pub fn initial_connection_window_size(mut self, size: u32) -> Self {
        self.http2.initial_connection_window_size = size;
        self
    }

    /// The largest HTTP/2 frame payload the server accepts (default 16 KiB).
    pub fn max_frame_size(mut self, size: u32) -> Self {
        self.http2.max_frame_size = size;
        self
    }

    /// How many streams a client may have open at once on one connection (default: no limit).
    pub fn max_concurrent_streams(mut self, max: impl Into<Option<u32>>) -> Self {
        self.http2.max_concurrent_streams = max.into();
        self
    }

    /// How much framing overhead of received small DATA frames a connection may buffer before
    /// h2 closes it with `ENHANCE_YOUR_CALM` (default 4 MiB: about 16,000 tiny frames).
    pub fn data_frame_budget(mut self, bytes: usize) -> Self {
        self.http2.data_frame_budget = bytes;
        self
    }

    /// Binds `addr` and serves until the process ends.
    pub async fn serve(self, addr: SocketAddr) -> io::Result<()> {
        self.serve_with_shutdown(addr, std::future::pending()).await
    }

    /// Binds `addr` and serves until `signal` completes, then shuts down gracefully: it stops
    /// accepting connections, sends GOAWAY on each open one, and returns once every call in
    /// flight has finished.
    pub async fn serve_with_shutdown<F>(self, addr: SocketAddr, signal: F) -> io::Result<()>
    where
        F: Future<Output = ()>,
    {
        let listener = TcpListener::bind(addr).await?;
        self.serve_with_listener(listener, signal).await
    }

    /// Serves connections from a bound `listener` until `signal` completes (see
    /// [`serve_with_shutdown`](Self::serve_with_shutdown)).
    pub async fn serve_with_listener<F>(self, listener: TcpListener, signal: F) -> io::Result<()>
    where
        F: Future<Output = ()>,
    {
        let shared = Arc::new(Shared {
            router: self.router,
            http2: self.http2,
            default_timeout: self.default_timeout,
        });
        let shutdown = CancellationToken::new();
        let connections = TaskTracker::new();
        let mut signal = std::pin::pin!(signal);
        loop {
            let accepted = tokio::select! {
                () = &mut signal => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, _peer)) => {
                    // Responses are written whole; delaying them (Nagle) only adds latency.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(conn::serve(stream, shared.clone(), shutdown.clone()));
                }
                Err(error) => accept_failed(error).await,
            }
        }
        drop(listener);
        shutdown.cancel();
        connections.close();
        connections.wait().await;
        Ok(())
    }
}

/// Accept errors concern one connection or a passing shortage; none stops the server.
async fn accept_failed(error: io::Error) {
    match error.kind() {
        io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionRefused => {}
        _ => {
            // Out of file descriptors or memory: back off instead of spinning on the error.
            tracing::error!(%error, "accepting a connection failed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fastgrpc::Server")
    }
}
