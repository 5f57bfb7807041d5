//! The server: a builder of hosted services and connection settings, which serves them
//! (`transport`, below) through the router and layers it composes (`service`, above).
//!
//! ```no_run
//! # async fn run(greeter: impl fastgrpc::service::FastService + fastgrpc::service::NamedService) -> std::io::Result<()> {
//! let addr = "127.0.0.1:50051".parse().unwrap();
//! fastgrpc::Server::builder()
//!     .add_service(greeter)
//!     .serve_with_shutdown(addr, async { tokio::signal::ctrl_c().await.ok(); })
//!     .await
//! # }
//! ```

use crate::codec::json::DecodeOptions;
use crate::service::{
    BoxError, Boxed, Cors, Dispatcher, FastService, Layers, NamedService, Router, TowerService,
};
use crate::transport::{Connected, ServerStats};

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use futures_util::Stream;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tower_layer::Layer;

use crate::service::FromTower;
use crate::transport::config::{ConnectionConfig, Keepalive};
#[cfg(feature = "tls")]
use crate::transport::tls;
use crate::transport::{ServerState, incoming};

/// Entry point: `Server::builder()` starts configuring a server.
#[derive(Debug, Clone, Copy)]
pub struct Server;

impl Server {
    /// A builder with no services and default HTTP/2 settings.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

/// Configures the services, HTTP/2 settings and limits of a server, then serves.
#[derive(Debug, Default)]
pub struct Builder {
    router: Router,
    /// Layers around the whole router, outermost first.
    layers: Layers,
    /// Who may call from pages of other origins.
    cors: Cors,
    connection: ConnectionConfig,
    default_timeout: Option<Duration>,
    max_connections: Option<usize>,
    stats: ServerStats,
    /// Whether each request gets the [`ConnectInfo`](crate::transport::ConnectInfo) of its connection.
    connect_info: bool,
    /// REST transcoding is off (it is on by default).
    no_rest: bool,
    /// Where the services' OpenAPI document is served, if anywhere.
    openapi_path: Option<String>,
    #[cfg(feature = "tls")]
    tls: Option<tokio_rustls::rustls::ServerConfig>,
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

    /// Hosts a tower service under its [`NamedService::NAME`]: a tonic-generated server,
    /// `tonic-health`'s or `tonic-reflection`'s, or any `Service` over HTTP requests.
    ///
    /// Each call clones the service and drives it as tower does (`poll_ready`, then `call`);
    /// a call it answers at once is still sent inline.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// let (reporter, health) = tonic_health::server::health_reporter();
    /// reporter.set_service_status("", tonic_health::ServingStatus::Serving).await;
    /// fastgrpc::Server::builder()
    ///     .add_tower_service(health)
    ///     .serve("127.0.0.1:50051".parse().unwrap())
    ///     .await
    /// # }
    /// ```
    pub fn add_tower_service<S>(self, service: S) -> Self
    where
        S: TowerService + NamedService,
    {
        self.add_layered_service(service, tower_layer::Identity::new())
    }

    /// Hosts `service` wrapped in `layer` (tower middleware for this service only: a timeout,
    /// a concurrency limit, tonic's interceptors...), under the service's
    /// [`NamedService::NAME`]. The service may be a fastgrpc-generated server or a tower one.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn run() -> std::io::Result<()> {
    /// let (_reporter, health) = tonic_health::server::health_reporter();
    /// let limits = tower::ServiceBuilder::new()
    ///     .concurrency_limit(64)
    ///     .timeout(Duration::from_secs(2));
    /// fastgrpc::Server::builder()
    ///     .add_layered_service(health, limits)
    ///     .serve("127.0.0.1:50051".parse().unwrap())
    ///     .await
    /// # }
    /// ```
    pub fn add_layered_service<S, L>(mut self, service: S, layer: L) -> Self
    where
        S: NamedService,
        L: Layer<S, Service: TowerService>,
    {
        self.router
            .add(S::NAME, Box::new(FromTower::new(layer.layer(service))));
        self
    }

    /// Wraps every call, whichever service it is for (unknown ones too), in `layer`: tower
    /// middleware such as tower-http's `TraceLayer`, a global concurrency limit or load
    /// shedding. The first layer added is the outermost. Without any, calls reach the router
    /// directly and cost nothing extra; with some, each call costs a boxed future.
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Boxed, Service: TowerService> + Send + 'static,
    {
        self.layers.push(layer);
        self
    }

    /// Records gRPC's standard server metrics (gRFC A66) with `provider`'s meter for
    /// `fastgrpc`: `grpc.server.call.started`, `grpc.server.call.duration`, and the message
    /// bytes each call sent and received, by method and status. Methods of services added
    /// with [`add_service`](Self::add_service) are labelled by name; any other call (an
    /// unknown method, a hosted tower service's) as `other`. See the guide's section on
    /// metrics.
    ///
    /// Without a provider nothing is measured and nothing costs. The instruments are bound to
    /// each method's labels once (OpenTelemetry's bound instruments): with
    /// `opentelemetry_sdk` 0.33 this feature turns its implementation of them on; a
    /// `MeterProvider` of another kind must implement `bind`.
    #[cfg(feature = "opentelemetry")]
    pub fn meter_provider(mut self, provider: &impl opentelemetry::metrics::MeterProvider) -> Self {
        self.router
            .set_metrics(crate::metrics::Instruments::new(provider));
        self
    }

    /// Whether HTTP/1.1 connections are served beside HTTP/2 on the same listener (default:
    /// yes), told apart by their first bytes. Browsers call gRPC-Web over HTTP/1.1 (they speak
    /// HTTP/2 only over TLS); gRPC itself needs HTTP/2 and is answered `505` over HTTP/1.1.
    /// With `false` every connection is taken for HTTP/2.
    pub fn accept_http1(mut self, enabled: bool) -> Self {
        self.connection.accept_http1 = enabled;
        self
    }

    /// Refuses JSON requests that name a field their message does not have (or an enum value
    /// its enum does not have) with `INVALID_ARGUMENT`, instead of skipping it. Skipping is the
    /// default, as connect-go, connect-es and grpc-gateway do: a client built on a newer
    /// `.proto` can still call an older server, as binary protobuf allows. Refusing catches a
    /// client's typo (`{"nam": "x"}`).
    pub fn reject_unknown_json_fields(mut self, reject: bool) -> Self {
        self.router.set_json(DecodeOptions {
            reject_unknown_fields: reject,
        });
        self
    }

    /// Whether the `google.api.http` rules of the hosted services answer HTTP/JSON requests
    /// (REST transcoding; default: yes). A request whose content type is none of gRPC's and
    /// whose path is no `/package.Service/Method` of a hosted service is matched against every
    /// service's rules, bound into its method's request and answered in JSON; see the guide's
    /// section on REST. Two rules of different services that match the same requests make
    /// serving fail.
    pub fn rest_transcoding(mut self, enabled: bool) -> Self {
        self.no_rest = !enabled;
        self
    }

    /// Serves the OpenAPI 3.1 document of the hosted services' REST face at `path` (such as
    /// `/openapi.json`; default: not served): the document `fastgrpc-build` generated for each
    /// service with `google.api.http` rules (its `OPENAPI`), or, with several, one document
    /// with the `paths` and `components` of all of them. A GET has it as `application/json`
    /// over HTTP/1.1 and HTTP/2, with the CORS headers of [`web_cors`](Self::web_cors); any
    /// other method is answered 405.
    ///
    /// It is served only while the server transcodes ([`rest_transcoding`](Self::rest_transcoding)
    /// and a service with rules). A `path` not starting with `/`, or one a rule answers for
    /// GET, makes serving fail (`InvalidInput`).
    ///
    /// ```no_run
    /// # async fn run(echo: impl fastgrpc::service::FastService + fastgrpc::service::NamedService) -> std::io::Result<()> {
    /// fastgrpc::Server::builder()
    ///     .add_service(echo)
    ///     .openapi_path("/openapi.json")
    ///     .serve("127.0.0.1:50051".parse().unwrap())
    ///     .await
    /// # }
    /// ```
    pub fn openapi_path(mut self, path: impl Into<String>) -> Self {
        self.openapi_path = Some(path.into());
        self
    }

    /// Which web pages may call the server's gRPC-Web methods from a browser (CORS): the
    /// preflight `OPTIONS` is answered, and answers to an allowed page let it read the status.
    /// Default: [`Cors::any_origin`], pages of any origin, without credentials.
    pub fn web_cors(mut self, cors: Cors) -> Self {
        self.cors = cors;
        self
    }

    /// Gives every call at most `timeout`: a call whose client sets no `grpc-timeout`, or a
    /// longer one, ends with `DEADLINE_EXCEEDED` after `timeout` (default: no limit).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// How long one poll of a connection may run calls inline, on the connection's thread,
    /// before it sends the answers it has and lets the worker's other tasks (other connections,
    /// spawned calls) run; the calls left wait for the next poll (default 500 µs).
    ///
    /// The budget is checked between calls, so a single call that computes for longer still
    /// runs to its end; methods whose calls do are moved to spawned tasks by adaptive inline
    /// (see the generated server's `inline_cost_limit`).
    pub fn inline_budget(mut self, budget: Duration) -> Self {
        self.connection.inline_budget = budget;
        self
    }

    /// The HTTP/2 flow-control window of each stream (default 1 MiB).
    pub fn initial_stream_window_size(mut self, size: u32) -> Self {
        self.connection.initial_stream_window_size = size;
        self
    }

    /// The HTTP/2 flow-control window of each connection (default 1 MiB).
    pub fn initial_connection_window_size(mut self, size: u32) -> Self {
        self.connection.initial_connection_window_size = size;
        self
    }

    /// The largest HTTP/2 frame payload the server accepts (default 16 KiB).
    pub fn max_frame_size(mut self, size: u32) -> Self {
        self.connection.max_frame_size = size;
        self
    }

    /// How many streams a client may have open at once on one connection (default 1,024);
    /// a client queues further calls until one ends.
    pub fn max_concurrent_streams(mut self, max: u32) -> Self {
        self.connection.max_concurrent_streams = max;
        self
    }

    /// The largest header list (request headers or trailers, as HPACK counts them) a client
    /// may send (default 16 KiB).
    pub fn max_header_list_size(mut self, bytes: u32) -> Self {
        self.connection.max_header_list_size = bytes;
        self
    }

    /// How many connections are served at once (default: no limit). Beyond it the server
    /// stops accepting until one closes; the kernel's backlog holds new ones meanwhile.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = Some(max.max(1));
        self
    }

    /// How long a new connection may take to send the HTTP/2 preface and settings
    /// (default 10 s); a connection that sends nothing is closed after it. Over HTTP/1.1 it
    /// also bounds each request's head once it has begun to arrive: a connection with no
    /// answer in progress that has received part of a head, and reads no whole head, finishes
    /// no answer and writes nothing for this long, is closed (within twice the time), while it
    /// drains too. An HTTP/1.1 connection with nothing sent since its last answer is idle
    /// instead ([`http1_idle_timeout`](Self::http1_idle_timeout)).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.connection.handshake_timeout = timeout;
        self
    }

    /// How long an HTTP/1.1 keep-alive connection may stay idle, with no answer in progress and
    /// nothing received since its last answer, before the server closes it (default 120 s,
    /// within one [`handshake_timeout`](Self::handshake_timeout) more). Keep it longer than
    /// your clients' pools keep idle connections (Go's `http.Transport` 90 s): a client that
    /// sends on a connection the server is closing gets an error for that request instead of
    /// an answer.
    pub fn http1_idle_timeout(mut self, timeout: Duration) -> Self {
        self.connection.http1_idle_timeout = timeout;
        self
    }

    /// Pings each connection every `interval` and closes it when a ping is not answered
    /// within `timeout`: peers that vanished without closing (a pulled cable, a dead NAT
    /// entry) stop holding calls and memory (default: no pings).
    pub fn http2_keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.connection.keepalive = Some(Keepalive { interval, timeout });
        self
    }

    /// How often clients may send keepalive pings (gRFC A8): at most one per `min_interval`
    /// (default 5 minutes), and, unless `permit_without_calls` (default false), none while the
    /// client has no call open. A client that pings more often gets two strikes, then GOAWAY
    /// `ENHANCE_YOUR_CALM` with `too_many_pings`, as grpc-go's and gRPC C-core's servers do;
    /// gRPC clients then back off their keepalive time.
    pub fn http2_keepalive_policy(
        mut self,
        min_interval: Duration,
        permit_without_calls: bool,
    ) -> Self {
        self.connection.ping_policy = crate::transport::config::PingPolicy {
            min_interval,
            permit_without_calls,
        };
        self
    }

    /// Sends GOAWAY on each connection once it is `age` old, give or take a random 10% (so
    /// connections opened together do not all reconnect together), so clients reconnect;
    /// behind an L4 load balancer this spreads load over new replicas (default: connections
    /// live as long as their clients keep them). HTTP/1.1 has no GOAWAY: an HTTP/1.1
    /// connection closes after its answer in progress (bounded by the
    /// [`drain_grace`](Self::drain_grace)), or, if it has none, after its next answer, so that
    /// no request already on its way is lost; such an answer says `connection: close` unless
    /// its head went out first (a reply stream).
    pub fn max_connection_age(mut self, age: Duration) -> Self {
        self.connection.max_connection_age = Some(age);
        self
    }

    /// Sends GOAWAY on a connection that has had no call in progress for `idle`, so clients
    /// that went quiet give their connection's resources back (default: idle connections stay
    /// open; see also [`http2_keepalive`](Self::http2_keepalive) for peers that vanished).
    /// HTTP/1.1 connections have [`http1_idle_timeout`](Self::http1_idle_timeout) instead.
    pub fn max_connection_idle(mut self, idle: Duration) -> Self {
        self.connection.max_connection_idle = Some(idle);
        self
    }

    /// A handle on the counts of what the server holds (connections, tasks finishing calls),
    /// valid before, while and after it serves.
    ///
    /// ```
    /// let builder = fastgrpc::Server::builder();
    /// let stats = builder.stats();
    /// assert_eq!((stats.connections(), stats.call_tasks()), (0, 0));
    /// ```
    pub fn stats(&self) -> ServerStats {
        self.stats.clone()
    }

    /// After GOAWAY (for age, idleness or shutdown), how long calls in flight may go on before their
    /// connection is closed (default: as long as they take, while the peer answers pings). It
    /// bounds an HTTP/1.1 connection's answer in progress at shutdown or at its maximum age
    /// alike.
    ///
    /// Without a grace a drain is still bounded for peers that are gone: an HTTP/2 connection
    /// with no call in flight closes once the peer acknowledges the shutdown PING; from 5 s
    /// after the GOAWAY the peer is pinged every 10 s, and the connection, with any calls in
    /// flight, closed when a ping goes unanswered for 2 s (with
    /// [`http2_keepalive`](Self::http2_keepalive), at its interval and timeout). fastgrpc's
    /// engine also sends the final GOAWAY at 5 s, and closes an idle connection then.
    /// An HTTP/1.1 connection has no pings: only a grace bounds a request that never ends there
    /// (a head that never ends is cut by the [`handshake_timeout`](Self::handshake_timeout)).
    pub fn drain_grace(mut self, grace: Duration) -> Self {
        self.connection.drain_grace = Some(grace);
        self
    }

    /// The hosted services, layers and routing as one service, for calls in-process (see
    /// [`Dispatcher`]).
    ///
    /// # Panics
    /// If two `google.api.http` rules of different services match the same requests, or the
    /// [`openapi_path`](Self::openapi_path) is refused (serving fails with the same message
    /// instead).
    pub fn into_dispatcher(mut self) -> Dispatcher {
        if let Err(conflict) = self.transcode() {
            panic!("{conflict}");
        }
        self.layers
            .wrap(self.router, self.cors, self.default_timeout)
    }

    /// Gathers the services' `google.api.http` rules, unless transcoding is off.
    fn transcode(&mut self) -> Result<(), String> {
        if self.no_rest {
            return Ok(());
        }
        self.router.transcode(self.openapi_path.as_deref())
    }

    /// Puts a [`ConnectInfo`](crate::transport::ConnectInfo) (the peer's and the server's addresses, and over TLS the
    /// client's certificates) in every request's extensions, where handlers read it with
    /// [`ConnectInfo::of`](crate::transport::ConnectInfo::of) (default: off).
    ///
    /// Off by default because every call pays for it: the information is
    /// gathered once per connection, but `http::Extensions` allocates its map on the first
    /// insertion, so a ready unary call costs 3 more allocations (1 if it already carries a
    /// deadline).
    pub fn connect_info(mut self, enabled: bool) -> Self {
        self.connect_info = enabled;
        self
    }

    /// Serves TLS on every connection, with `config` (rustls, as [`TlsConfig`](crate::transport::TlsConfig) builds it from
    /// PEM files or as you build it). If `config` names no ALPN protocols, `h2` is offered (gRPC
    /// clients require it), and `http/1.1` after it unless [`accept_http1(false)`](Self::accept_http1);
    /// a list of its own is kept as it is. A connection is served over the HTTP version ALPN
    /// chose, or, if the client offered none, the one its first bytes show. The handshake runs
    /// in each connection's task, within the [`handshake_timeout`](Self::handshake_timeout).
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: tokio_rustls::rustls::ServerConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Binds `addr` and serves until the process ends.
    pub async fn serve(self, addr: SocketAddr) -> io::Result<()> {
        self.serve_with_shutdown(addr, std::future::pending()).await
    }

    /// Binds `addr` and serves until `signal` completes, then shuts down gracefully: it stops
    /// accepting connections, sends GOAWAY on each open one, and returns once every call in
    /// flight has finished (see [`drain_grace`](Self::drain_grace) for the bounds on that).
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
        let incoming = futures_util::stream::poll_fn(move |cx| {
            listener.poll_accept(cx).map(|accepted| {
                Some(accepted.map(|(stream, _peer)| {
                    // Responses are written whole; delaying them (Nagle) only adds latency.
                    let _ = stream.set_nodelay(true);
                    stream
                }))
            })
        });
        self.serve_with_incoming(incoming, signal).await
    }

    /// Binds a unix domain socket at `path` and serves connections from it until `signal`
    /// completes (see [`serve_with_shutdown`](Self::serve_with_shutdown)). The socket file is
    /// removed when serving ends; binding fails if `path` already exists.
    ///
    /// ```no_run
    /// # async fn run(greeter: impl fastgrpc::service::FastService + fastgrpc::service::NamedService) -> std::io::Result<()> {
    /// fastgrpc::Server::builder()
    ///     .add_service(greeter)
    ///     .serve_with_uds("/run/greeter.sock", async { tokio::signal::ctrl_c().await.ok(); })
    ///     .await
    /// # }
    /// ```
    #[cfg(unix)]
    pub async fn serve_with_uds<P, F>(self, path: P, signal: F) -> io::Result<()>
    where
        P: AsRef<std::path::Path>,
        F: Future<Output = ()>,
    {
        let path = path.as_ref();
        let listener = tokio::net::UnixListener::bind(path)?;
        let served = self.serve_with_unix_listener(listener, signal).await;
        let _ = std::fs::remove_file(path);
        served
    }

    /// Serves connections from a bound unix domain socket `listener` until `signal` completes
    /// (see [`serve_with_shutdown`](Self::serve_with_shutdown)).
    #[cfg(unix)]
    pub async fn serve_with_unix_listener<F>(
        self,
        listener: tokio::net::UnixListener,
        signal: F,
    ) -> io::Result<()>
    where
        F: Future<Output = ()>,
    {
        let incoming = futures_util::stream::poll_fn(move |cx| {
            listener
                .poll_accept(cx)
                .map(|accepted| Some(accepted.map(|(stream, _peer)| stream)))
        });
        self.serve_with_incoming(incoming, signal).await
    }

    /// Serves every connection `incoming` yields (any byte stream: a listener of another kind,
    /// connections accepted elsewhere, in-memory pipes) until `signal` completes or `incoming`
    /// ends, then shuts down gracefully (see [`serve_with_shutdown`](Self::serve_with_shutdown)).
    ///
    /// # Errors
    /// An `Err` item of `incoming` is sorted by what it means (by its `errno` where it has one):
    /// - one failed connection (reset or aborted before it was accepted, its network gone, or
    ///   an error that is not an `io::Error`): logged at debug level and skipped;
    /// - a passing shortage (out of file descriptors or memory, and any error not known to be
    ///   one of the others): logged, and accepting resumes after 50 ms;
    /// - a listener that is broken (`EBADF`, `EINVAL`, `ENOTSOCK`, `EFAULT`; `InvalidInput`
    ///   where there is no `errno`): accepting stops, the connections being served drain as on
    ///   shutdown, and the error is returned.
    ///
    /// Nothing else fails once serving has started; the other `serve*` methods can also fail to
    /// bind first. Before it starts, serving fails (`InvalidInput`) if two `google.api.http`
    /// rules of different services match the same requests, or the
    /// [`openapi_path`](Self::openapi_path) is refused.
    ///
    /// A connection type of your own implements
    /// [`Connected`], which tells its addresses (or nothing) to
    /// [`connect_info`](Self::connect_info).
    ///
    /// ```no_run
    /// # async fn run(greeter: impl fastgrpc::service::FastService + fastgrpc::service::NamedService) -> std::io::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
    /// // Connections accepted elsewhere, sent here over a channel.
    /// let (connections, incoming) = tokio::sync::mpsc::channel::<tokio::net::TcpStream>(16);
    /// tokio::spawn(async move {
    ///     while let Ok((stream, _)) = listener.accept().await {
    ///         let _ = connections.send(stream).await;
    ///     }
    /// });
    /// let incoming = futures_util::stream::unfold(incoming, |mut rx| async move {
    ///     rx.recv().await.map(|stream| (Ok::<_, std::io::Error>(stream), rx))
    /// });
    /// fastgrpc::Server::builder()
    ///     .add_service(greeter)
    ///     .serve_with_incoming(incoming, std::future::pending())
    ///     .await
    /// # }
    /// ```
    pub async fn serve_with_incoming<I, IO, E, F>(
        mut self,
        incoming: I,
        signal: F,
    ) -> io::Result<()>
    where
        I: Stream<Item = Result<IO, E>>,
        IO: AsyncRead + AsyncWrite + Connected + Send + Unpin + 'static,
        E: Into<BoxError>,
        F: Future<Output = ()>,
    {
        self.transcode()
            .map_err(|conflict| io::Error::new(io::ErrorKind::InvalidInput, conflict))?;
        #[cfg(feature = "tls")]
        let tls = self.tls.map(|config| {
            tls::Acceptor::new(tls::with_default_alpn(config, self.connection.accept_http1))
        });
        let shared = ServerState {
            service: self
                .layers
                .wrap(self.router, self.cors, self.default_timeout),
            connection: self.connection,
            default_timeout: self.default_timeout,
            stats: self.stats,
            connect_info: self.connect_info,
            #[cfg(feature = "tls")]
            tls,
        };
        incoming::serve(shared, self.max_connections, incoming, signal).await
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fastgrpc::Server")
    }
}
