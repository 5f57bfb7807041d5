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

use super::connect_info::Connected;
use super::hosted::BoxError;
use super::{Shared, conn};

/// Serves every connection `incoming` yields until `signal` completes or `incoming` ends, then
/// shuts down gracefully: `incoming` is dropped (so a listener stops taking connections), every
/// connection is told to drain, and this returns once all have ended.
pub(super) async fn serve<I, IO, E, F>(
    shared: Shared,
    max_connections: Option<usize>,
    incoming: I,
    signal: F,
) where
    I: Stream<Item = Result<IO, E>>,
    IO: AsyncRead + AsyncWrite + Connected + Send + Unpin + 'static,
    E: Into<BoxError>,
    F: Future<Output = ()>,
{
    let shared = Arc::new(shared);
    let shutdown = CancellationToken::new();
    let connections = TaskTracker::new();
    accept_until(
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
}

/// Hands each connection of `incoming`, with its slot, to `spawn`, until `signal` completes or
/// `incoming` ends; drops `incoming` on return.
async fn accept_until<I, IO, E, F>(
    signal: F,
    incoming: I,
    max_connections: Option<usize>,
    mut spawn: impl FnMut(IO, Option<OwnedSemaphorePermit>),
) where
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
            () = &mut signal => return,
            accepted = next_connection(incoming.as_mut(), slots.as_ref()) => accepted,
        };
        match accepted {
            Some((Ok(io), slot)) => spawn(io, slot),
            Some((Err(error), _)) => accept_failed(error.into()).await,
            None => return,
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

/// Accept errors concern one connection or a passing shortage; none stops the server.
async fn accept_failed(error: BoxError) {
    match error.downcast_ref::<io::Error>().map(io::Error::kind) {
        Some(
            io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused,
        ) => {}
        Some(_) => {
            // Out of file descriptors or memory: back off instead of spinning on the error.
            tracing::error!(%error, "accepting a connection failed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A stream of connections of its own (say, one doing its own handshakes) reports a
        // failed connection: skip it, letting other tasks run should it fail again at once.
        None => {
            tracing::debug!(%error, "an incoming connection failed");
            tokio::task::yield_now().await;
        }
    }
}

/// One connection's task: the TLS handshake if the server has TLS, then HTTP/2. Both
/// handshakes together must finish within the handshake timeout.
async fn connection<IO>(io: IO, shared: Arc<Shared>, shutdown: CancellationToken)
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
        return conn::serve(io, info, handshake_deadline, shared, shutdown).await;
    }
    let info = shared.connect_info.then(|| io.connect_info());
    conn::serve(io, info, handshake_deadline, shared, shutdown).await
}
