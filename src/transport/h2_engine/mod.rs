//! The connection driver: one HTTP/2 connection, served with the h2 crate directly.
//!
//! h2 flushes queued frames whenever its connection is polled. Answering each stream right
//! after accepting it would therefore cost one `write(2)` per response. Instead the driver
//! accepts *every* stream h2 has ready (`poll_accept` until it is pending: by then all bytes
//! the socket had were read, so most request bodies are complete), answers the whole batch, and
//! only then polls again, which writes all the responses together.
//!
//! A stream whose response is ready is answered inside that poll, on the connection's thread:
//! no task, no box, no waker. A stream whose response is pending moves to a spawned task.
//!
//! Inline work is bounded: once a poll has served calls for the connection's inline budget,
//! the driver sends what is answered and yields to the worker's other tasks, and the streams
//! still queued wait for the next poll. A batch of slow calls thus answers as it goes, and
//! the other connections on the worker are not held up.
//!
//! This file accepts streams and starts their calls (`transport::call`); `send.rs` writes the
//! responses.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::RecvStream;
use h2::server::{Connection, SendResponse};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod send;

use self::send::{pump, send_head, send_inline};
use super::config::{DRAIN_PROBE, Keepalive, SHUTDOWN_PING_WAIT, drain_reason, sleep_for};
use super::{Activity, ConnectInfo, Started, finish_call, start_call};
use crate::body::RequestBody;
use crate::deadline::{self, Deadline};
use crate::handler::{ResponseFuture, clock};
use crate::server::Shared;

/// How many accept-and-answer rounds one poll may run before letting other tasks in.
const ROUNDS_PER_POLL: usize = 16;

/// Serves `io` until the peer closes it, it fails or stops answering keepalive pings, or it is
/// drained: `shutdown` fires or the connection reaches its maximum age, and then calls in
/// flight end (or the drain grace runs out).
///
/// `connect_info`, if the server gives it to handlers, goes into every request's extensions.
/// The HTTP/2 handshake must be over by `handshake_deadline`.
pub(crate) async fn serve<IO>(
    io: IO,
    connect_info: Option<ConnectInfo>,
    handshake_deadline: Instant,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let config = &shared.connection;
    let handshake = config.h2_builder().handshake::<IO, Bytes>(io);
    let mut conn = tokio::select! {
        result = tokio::time::timeout_at(handshake_deadline, handshake) => match result {
            Ok(Ok(conn)) => conn,
            Ok(Err(error)) => {
                tracing::debug!(%error, "HTTP/2 handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("HTTP/2 handshake timed out");
                return;
            }
        },
        () = shutdown.cancelled() => return,
    };
    let keepalive = shared.connection.keepalive;
    // With keepalive the pinger owns the connection's one `PingPong` from the start; without,
    // the drain takes it to check that the peer still answers.
    let (keepalive_pings, drain_pings) = match keepalive {
        Some(_) => (conn.ping_pong(), None),
        None => (None, conn.ping_pong()),
    };
    let activity = Activity::new(shared.stats.clone());
    let mut driver = Driver {
        shared: shared.clone(),
        activity: Arc::clone(&activity),
        connect_info,
        queue: VecDeque::new(),
    };
    // Outlives the select: a draining connection still needs to notice a dead peer, or a call
    // in flight on it would hold the connection (and a graceful shutdown) open forever.
    let mut dead_peer = pin!(unanswered_ping(keepalive_pings, keepalive, None));
    let drain_reason = tokio::select! {
        result = poll_fn(|cx| driver.poll(&mut conn, cx)) => return log_end(result),
        () = dead_peer.as_mut() => {
            tracing::debug!("keepalive ping unanswered; closing the connection");
            return;
        }
        reason = drain_reason(&shared.connection, &activity, &shutdown) => reason,
    };
    tracing::debug!(reason = drain_reason, "draining the connection");
    let dead_peer = async {
        let drain_probe = unanswered_ping(drain_pings, Some(DRAIN_PROBE), Some(SHUTDOWN_PING_WAIT));
        tokio::select! {
            () = dead_peer => {}
            () = drain_probe => {}
        }
    };
    log_end(drain(&mut conn, &mut driver, pin!(dead_peer)).await);
}

fn log_end(result: Result<(), h2::Error>) {
    if let Err(error) = result {
        tracing::debug!(%error, "HTTP/2 connection ended with an error");
    }
}

/// Sends GOAWAY (the peer opens no new streams) and serves the streams in flight until they
/// end, until the drain grace runs out, or until `dead_peer` finds the peer gone; in the last
/// two cases the connection is dropped with its calls.
///
/// h2 sends the final GOAWAY, and closes a connection with no stream left, once the peer
/// acknowledges the PING sent with the first. A peer that never does (it vanished, or is a
/// health checker that stopped after the handshake) is found by `dead_peer`: the drain's own
/// pings, from [`SHUTDOWN_PING_WAIT`] on. The final GOAWAY is not forced here: h2 would drop the
/// frames still queued on streams that just ended (it flushes only its codec when told to
/// close).
async fn drain<IO>(
    conn: &mut Connection<IO, Bytes>,
    driver: &mut Driver,
    dead_peer: Pin<&mut impl Future<Output = ()>>,
) -> Result<(), h2::Error>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    conn.graceful_shutdown();
    let grace = driver.shared.connection.drain_grace;
    let finish = poll_fn(|cx| driver.poll(conn, cx));
    tokio::select! {
        result = finish => result,
        () = sleep_for(grace) => {
            tracing::debug!("drain grace over; closing the connection with calls in flight");
            Ok(())
        }
        () = dead_peer => {
            tracing::debug!("ping unanswered while draining; closing the connection");
            Ok(())
        }
    }
}

/// Pings the peer after `first`, then at the keepalive interval; completes when a ping goes
/// unanswered for the keepalive timeout. Never completes without keepalive (or once the
/// connection is gone, which the driver notices itself).
async fn unanswered_ping(
    ping_pong: Option<h2::PingPong>,
    keepalive: Option<Keepalive>,
    first: Option<Duration>,
) {
    let (Some(mut ping_pong), Some(keepalive)) = (ping_pong, keepalive) else {
        return std::future::pending().await;
    };
    let mut wait = first.unwrap_or(keepalive.interval);
    loop {
        tokio::time::sleep(wait).await;
        wait = keepalive.interval;
        if ping_pong.send_ping(h2::Ping::opaque()).is_err() {
            return std::future::pending().await;
        }
        let pong = poll_fn(|cx| ping_pong.poll_pong(cx));
        match tokio::time::timeout(keepalive.timeout, pong).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => return std::future::pending().await,
            Err(_) => return,
        }
    }
}

/// A stream h2 has handed over, waiting in the driver's queue for its call to start.
struct Accepted {
    request: http::Request<RecvStream>,
    respond: SendResponse<Bytes>,
    /// From `grpc-timeout` and the server's default, counted from when the stream was accepted.
    deadline: Option<Deadline>,
}

struct Driver {
    shared: Arc<Shared>,
    /// This connection's outstanding calls; spawns the tasks that finish calls.
    activity: Arc<Activity>,
    /// What every request of this connection gets in its extensions, if anything.
    connect_info: Option<ConnectInfo>,
    /// Streams accepted and not yet served, oldest first. A poll whose inline budget ran out
    /// leaves the rest here for the next; kept between polls so its buffer is allocated once.
    queue: VecDeque<Accepted>,
}

impl Driver {
    fn poll<IO>(
        &mut self,
        conn: &mut Connection<IO, Bytes>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), h2::Error>>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let budget = self.shared.connection.inline_budget;
        // When this poll's budget is spent, counted from when it started serving calls. The
        // clock is read once per round, and once per call, by the call's `impl` step if it has
        // one (`handler::clock`).
        let mut serving_since = None;
        for _ in 0..ROUNDS_PER_POLL {
            // Polling the connection also flushes what the previous round queued.
            if let Poll::Ready(ended) = self.accept(conn, cx) {
                return Poll::Ready(ended);
            }
            if self.queue.is_empty() {
                return Poll::Pending;
            }
            if self.shared.connection.max_connection_idle.is_some() {
                self.activity.touch();
            }
            let mut now = std::time::Instant::now();
            let spent_at = *serving_since.get_or_insert_with(|| now + budget);
            while let Some(stream) = self.queue.pop_front() {
                clock::open_call(now);
                serve_stream(
                    &self.shared,
                    &self.activity,
                    self.connect_info.as_ref(),
                    stream,
                    cx,
                );
                now = clock::close_call();
                if now >= spent_at {
                    // Send what is answered, then let the worker's other tasks run; the
                    // streams still queued go on in the next poll.
                    if let Poll::Ready(ended) = self.accept(conn, cx) {
                        return Poll::Ready(ended);
                    }
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
            }
        }
        // Streams keep arriving: yield to other tasks, and come back at once.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Queues every stream h2 has ready, until it has none (by then all bytes the socket had
    /// were read, so most request bodies are complete); ready when the connection has ended.
    fn accept<IO>(
        &mut self,
        conn: &mut Connection<IO, Bytes>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), h2::Error>>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        loop {
            match conn.poll_accept(cx) {
                Poll::Ready(Some(Ok((mut request, respond)))) => {
                    match deadline::call_deadline(&mut request, self.shared.default_timeout) {
                        Ok(deadline) => self.queue.push_back(Accepted {
                            request,
                            respond,
                            deadline,
                        }),
                        Err(status) => {
                            let response = crate::response::status(&status);
                            send_inline(response, respond, None, &self.activity, cx);
                        }
                    }
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Err(error)),
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Answers one stream: inline if its response is ready, from a spawned task otherwise. A
/// stream the client has reset already is dropped, and one whose deadline has passed is
/// answered `DEADLINE_EXCEEDED`, both without starting the call.
fn serve_stream(
    shared: &Shared,
    activity: &Arc<Activity>,
    connect_info: Option<&ConnectInfo>,
    stream: Accepted,
    cx: &mut Context<'_>,
) {
    let Accepted {
        request,
        mut respond,
        deadline,
    } = stream;
    // A no-op waker: the driver only looks. Were it registered, later changes to the stream
    // would wake the connection for nothing.
    if let Poll::Ready(reason) = respond.poll_reset(&mut Context::from_waker(Waker::noop())) {
        tracing::debug!(?reason, "client reset the stream before its call started");
        return;
    }
    let (parts, recv) = request.into_parts();
    let request = http::Request::from_parts(parts, take_received(recv, cx));
    match start_call(shared, connect_info, request, deadline) {
        Started::Ready(response, deadline) => {
            send_inline(response, respond, deadline, activity, cx)
        }
        Started::Pending(pending) => activity.spawn(finish_pending(pending, respond, deadline)),
    }
}

/// Completes a pending call; drops it when the client resets the stream or the deadline
/// passes first (a deadline that passed before the task ran stops the call from starting).
async fn finish_pending(
    response: ResponseFuture,
    mut respond: SendResponse<Bytes>,
    deadline: Option<Deadline>,
) {
    let reset = poll_fn(|cx| respond.poll_reset(cx));
    let Some((response, deadline)) = finish_call(response, deadline, reset).await else {
        return;
    };
    if let Some((stream, body)) = send_head(response, respond) {
        pump(stream, body, deadline).await;
    }
}

/// The body as far as it has been received; complete if the client has finished sending.
///
/// Each `poll_data` takes h2's lock once: a body in one DATA frame costs two (the frame, then
/// the end).
fn take_received(mut recv: RecvStream, cx: &mut Context<'_>) -> RequestBody {
    let mut received: Option<Bytes> = None;
    loop {
        match recv.poll_data(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                let _ = recv.flow_control().release_capacity(chunk.len());
                received = Some(match received {
                    None => chunk,
                    Some(first) => {
                        let mut joined = BytesMut::from(first);
                        joined.extend_from_slice(&chunk);
                        joined.freeze()
                    }
                });
            }
            Poll::Ready(None) => return RequestBody::complete(received.unwrap_or_default()),
            // Not all here yet (or broken, which reading the rest reports): finish later.
            Poll::Ready(Some(Err(_))) | Poll::Pending => {
                return RequestBody::streaming(received, recv);
            }
        }
    }
}
