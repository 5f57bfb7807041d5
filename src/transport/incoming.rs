//! The accept loop that every way of serving shares (TCP, unix sockets, any stream of
//! connections), and what each connection's task does before HTTP/2 starts.
//!
//! The loop only takes connections and spawns their tasks: a connection limit is a semaphore
//! permit taken before the next accept, and anything slow about a new connection (the TLS
//! handshake, the HTTP/2 preface) happens in its own task, bounded by the handshake timeout, so
//! a slow or silent client never holds up the others.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::ServerState;
use super::connect_info::{ConnectInfo, Connected};
use super::http1;
use super::sniff::{Protocol, sniff};
use crate::service::BoxError;

/// Serves every connection `incoming` yields until `signal` completes, `incoming` ends or it
/// reports that it can accept no more, then shuts down gracefully: `incoming` is dropped (so a
/// listener stops taking connections), every connection is told to drain, and this returns
/// once all have ended, with the error that stopped accepting if one did.
pub(crate) async fn serve<I, IO, E, F>(
    shared: ServerState,
    max_connections: Option<usize>,
    incoming: I,
    signal: F,
) -> io::Result<()>
where
    I: Stream<Item = Result<IO, E>>,
    IO: AsyncRead + AsyncWrite + Connected + Send + Unpin + 'static,
    E: Into<BoxError>,
    F: Future<Output = ()>,
{
    let shared = Arc::new(shared);
    let shutdown = CancellationToken::new();
    let connections = TaskTracker::new();
    let stopped_by = accept_until(
        signal,
        incoming,
        max_connections,
        |io, slot: Option<OwnedSemaphorePermit>| {
            let serve = connection(io, shared.clone(), shutdown.clone());
            connections.spawn(async move {
                serve.await;
                drop(slot);
            });
        },
    )
    .await;
    shutdown.cancel();
    connections.close();
    connections.wait().await;
    stopped_by.map_or(Ok(()), Err)
}

/// Hands each connection of `incoming`, with its slot, to `spawn`, until `signal` completes,
/// `incoming` ends, or it fails for good (the error is returned); drops `incoming` on return.
async fn accept_until<I, IO, E, F>(
    signal: F,
    incoming: I,
    max_connections: Option<usize>,
    mut spawn: impl FnMut(IO, Option<OwnedSemaphorePermit>),
) -> Option<io::Error>
where
    I: Stream<Item = Result<IO, E>>,
    E: Into<BoxError>,
    F: Future<Output = ()>,
{
    // One permit per connection being served, when their number is limited.
    let slots = max_connections.map(|max| Arc::new(Semaphore::new(max)));
    let mut signal = std::pin::pin!(signal);
    let mut incoming = std::pin::pin!(incoming);
    loop {
        let accepted = tokio::select! {
            () = &mut signal => return None,
            accepted = next_connection(incoming.as_mut(), slots.as_ref()) => accepted,
        };
        match accepted {
            Some((Ok(io), slot)) => spawn(io, slot),
            Some((Err(error), _)) => {
                if let Err(broken) = accept_failed(error.into()).await {
                    return Some(broken);
                }
            }
            None => return None,
        }
    }
}

/// Waits for a free connection slot (if their number is limited), then for a connection;
/// `None` once `incoming` has ended.
async fn next_connection<I, T>(
    mut incoming: std::pin::Pin<&mut I>,
    slots: Option<&Arc<Semaphore>>,
) -> Option<(T, Option<OwnedSemaphorePermit>)>
where
    I: Stream<Item = T>,
{
    let slot = match slots {
        Some(slots) => Some(slots.clone().acquire_owned().await.expect("never closed")),
        None => None,
    };
    let accepted = incoming.next().await?;
    Some((accepted, slot))
}

/// What a failed accept means for the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcceptError {
    /// One connection failed (it was reset or aborted before it was accepted, or its network
    /// went away): take the next.
    Connection,
    /// A passing shortage (file descriptors, memory): wait a little, then accept again.
    Shortage,
    /// The listener itself is unusable (closed, not listening, not a socket): stop serving.
    Broken,
}

impl AcceptError {
    /// Sorts an accept error, by `errno` where there is one. Anything not known to concern a
    /// single connection or a listener that is broken counts as a shortage: backing off and
    /// retrying keeps the server up, and the error is logged.
    fn of(error: &io::Error) -> AcceptError {
        use io::ErrorKind::*;
        #[cfg(unix)]
        if let Some(errno) = error.raw_os_error() {
            // accept(2) on Linux: network errors of the new connection are reported by accept
            // and are to be treated as a failed connection.
            const CONNECTION: [i32; 14] = [
                libc::ECONNABORTED,
                libc::ECONNRESET,
                libc::ECONNREFUSED,
                libc::EPROTO,
                libc::ENOPROTOOPT,
                libc::EHOSTDOWN,
                libc::EHOSTUNREACH,
                libc::ENETDOWN,
                libc::ENETUNREACH,
                libc::EOPNOTSUPP,
                libc::EPERM,
                libc::ETIMEDOUT,
                libc::EINTR,
                libc::EAGAIN,
            ];
            const BROKEN: [i32; 4] = [libc::EBADF, libc::EINVAL, libc::ENOTSOCK, libc::EFAULT];
            if CONNECTION.contains(&errno) {
                return AcceptError::Connection;
            }
            if BROKEN.contains(&errno) {
                return AcceptError::Broken;
            }
            return AcceptError::Shortage;
        }
        match error.kind() {
            ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
            | TimedOut | HostUnreachable | NetworkUnreachable | NetworkDown => {
                AcceptError::Connection
            }
            InvalidInput => AcceptError::Broken,
            _ => AcceptError::Shortage,
        }
    }
}

/// Deals with a failed accept: skips a failed connection, backs off from a shortage, and gives
/// back the error of a listener that is broken. An error of a stream of connections of your own
/// that is not an `io::Error` counts as one failed connection.
async fn accept_failed(error: BoxError) -> io::Result<()> {
    let sorted = error
        .downcast_ref::<io::Error>()
        .map_or(AcceptError::Connection, AcceptError::of);
    match sorted {
        AcceptError::Connection => {
            tracing::debug!(%error, "an incoming connection failed");
            // Let other tasks run should it fail again at once.
            tokio::task::yield_now().await;
            Ok(())
        }
        AcceptError::Shortage => {
            // Out of file descriptors or memory: back off instead of spinning on the error.
            tracing::error!(%error, "accepting a connection failed; retrying in 50 ms");
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(())
        }
        AcceptError::Broken => {
            tracing::error!(%error, "the listener is broken; no more connections are accepted");
            Err(error
                .downcast::<io::Error>()
                .map_or_else(io::Error::other, |error| *error))
        }
    }
}

/// One connection's task: the TLS handshake if the server has TLS, then HTTP/2. Both
/// handshakes together must finish within the handshake timeout.
async fn connection<IO>(io: IO, shared: Arc<ServerState>, shutdown: CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Connected + Send + Unpin + 'static,
{
    // Counted from accept to close, handshakes included.
    let _counted = shared.stats.connection();
    let handshake_deadline = Instant::now() + shared.connection.handshake_timeout;
    #[cfg(feature = "tls")]
    if let Some(acceptor) = &shared.tls {
        let Some(io) = acceptor.accept(io, handshake_deadline, &shutdown).await else {
            return;
        };
        let info = shared.connect_info.then(|| io.connect_info());
        let negotiated = super::tls::negotiated(&io);
        return http(io, negotiated, info, handshake_deadline, shared, shutdown).await;
    }
    let info = shared.connect_info.then(|| io.connect_info());
    http(io, None, info, handshake_deadline, shared, shutdown).await
}

/// Serves HTTP/2 or HTTP/1.1: the one that TLS negotiated (`negotiated`), or else HTTP/2, or, if
/// the server accepts HTTP/1.1, whichever of the two the connection's first bytes show (told
/// apart within the handshake deadline).
async fn http<IO>(
    io: IO,
    negotiated: Option<Protocol>,
    info: Option<ConnectInfo>,
    handshake_deadline: Instant,
    shared: Arc<ServerState>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    match negotiated {
        Some(Protocol::Http2) => {
            return http2(io, info, handshake_deadline, shared, shutdown).await;
        }
        Some(Protocol::Http1) if shared.connection.accept_http1 => {
            return http1(io, info, shared, shutdown).await;
        }
        Some(Protocol::Http1) => {
            // A rustls config of the user's own offers `http/1.1` while the server does not
            // serve it.
            tracing::debug!("TLS negotiated http/1.1, which the server does not accept");
            return;
        }
        None => {}
    }
    if !shared.connection.accept_http1 {
        return http2(io, info, handshake_deadline, shared, shutdown).await;
    }
    let sniffed = tokio::select! {
        sniffed = tokio::time::timeout_at(handshake_deadline, sniff(io)) => sniffed,
        () = shutdown.cancelled() => return,
    };
    match sniffed {
        Ok(Some((Protocol::Http2, io))) => {
            http2(io, info, handshake_deadline, shared, shutdown).await;
        }
        Ok(Some((Protocol::Http1, io))) => http1(io, info, shared, shutdown).await,
        Ok(None) => {}
        Err(_) => tracing::debug!("the connection sent nothing telling its protocol in time"),
    }
}

/// Serves HTTP/1.1 with hyper.
async fn http1<IO>(
    io: IO,
    info: Option<ConnectInfo>,
    shared: Arc<ServerState>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    // Closed through it too: an answer saying `connection: close` is not lost to a RST when the
    // client has already sent more.
    let io = super::linger::LingeringClose::new(io);
    http1::serve(io, info, shared, shutdown).await;
}

/// Serves HTTP/2 with the server's engine.
async fn http2<IO>(
    io: IO,
    info: Option<ConnectInfo>,
    handshake_deadline: Instant,
    shared: Arc<ServerState>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    // The socket closes through it: the last replies are never lost to a RST.
    let io = super::linger::LingeringClose::new(io);
    super::http2::serve(io, info, handshake_deadline, shared, shutdown).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_are_sorted_by_what_they_mean_for_the_server() {
        let cases = [
            (
                io::Error::from(io::ErrorKind::ConnectionReset),
                AcceptError::Connection,
            ),
            (
                io::Error::from(io::ErrorKind::InvalidInput),
                AcceptError::Broken,
            ),
            (io::Error::other("unknown"), AcceptError::Shortage),
        ];
        for (error, sorted) in cases {
            assert_eq!(AcceptError::of(&error), sorted, "{error}");
        }
        #[cfg(unix)]
        for (errno, sorted) in [
            (libc::ECONNABORTED, AcceptError::Connection),
            (libc::EHOSTUNREACH, AcceptError::Connection),
            (libc::EMFILE, AcceptError::Shortage),
            (libc::ENFILE, AcceptError::Shortage),
            (libc::ENOBUFS, AcceptError::Shortage),
            (libc::EBADF, AcceptError::Broken),
            (libc::EINVAL, AcceptError::Broken),
            (libc::ENOTSOCK, AcceptError::Broken),
        ] {
            let error = io::Error::from_raw_os_error(errno);
            assert_eq!(AcceptError::of(&error), sorted, "{error}");
        }
    }
}
