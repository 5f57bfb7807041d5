//! fastgrpc's own HTTP/2 server connection (RFC 9113), built for gRPC: frames parsed in place,
//! HPACK for the few headers gRPC sends, one task owning every stream of its connection.
//!
//! - `frame`: frames parsed and written;
//! - `hpack`: header compression;
//! - `request`, `response`: request heads checked and built, response heads encoded;
//! - `shared`: what a connection shares with its calls' tasks;
//! - `connection`: the connection itself.
//!
//! The only HTTP/2 engine since the h2 crate's was retired (`docs/ARCHITECTURE.md` says why).

mod buffers;
mod connection;
pub(crate) mod frame;
pub(crate) mod hpack;
mod output;
mod request;
mod response;
mod shared;

use std::future::poll_fn;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::server::Shared;
use crate::transport::{Activity, ConnectInfo, drain_reason};
use connection::{Connection, Ended};
pub(crate) use shared::{RecvEnd, StreamShared};

/// Serves `io` with fastgrpc's engine until the peer closes it, it fails, or it is drained
/// (shutdown, maximum age or idleness).
pub(crate) async fn serve<IO>(
    io: IO,
    connect_info: Option<ConnectInfo>,
    handshake_deadline: Instant,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let activity = Activity::new(shared.stats.clone());
    let mut conn = Connection::new(
        io,
        Arc::clone(&shared),
        Arc::clone(&activity),
        connect_info,
        handshake_deadline,
    );
    let reason = tokio::select! {
        ended = poll_fn(|cx| conn.poll(cx)) => return log_end(ended),
        reason = drain_reason(&shared.connection, &activity, &shutdown) => reason,
    };
    if !conn.handshake_done() {
        return;
    }
    tracing::debug!(reason, "draining the connection");
    conn.graceful_shutdown();
    let grace = shared.connection.drain_grace;
    tokio::select! {
        ended = poll_fn(|cx| conn.poll(cx)) => log_end(ended),
        () = crate::transport::sleep_for(grace) => {
            tracing::debug!("drain grace over; closing the connection with calls in flight");
        }
    }
}

fn log_end(ended: Ended) {
    if let Ended::Error(error) = ended {
        tracing::debug!(%error, "HTTP/2 connection ended with an error");
    }
}
