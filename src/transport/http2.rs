//! HTTP/2 connections: fastgrpc's engine (`crate::http2`) serving the server's calls, and the
//! connection's life around it (drains for shutdown, age and idleness, their grace).
//!
//! [`ServerCalls`] is the engine's door to the rest of the server: it starts calls through
//! `call.rs` (deadlines, panics, `ConnectInfo`), finishes those that wait in tasks the server
//! counts, and tells the engine what a reply's body is.

use std::future::poll_fn;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::HeaderMap;
use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ServerState;
use super::beside::{Beside, First};
use super::{Activity, ConnectInfo, Started, drain_reason, finish_call, start_call, within_grace};
use crate::body::{RequestBody, ResponseBody};
use crate::call::Call;
use crate::deadline::Deadline;
use crate::handler::{Panic, ResponseFuture, panic_status};
use crate::http2::{BodyFrame, Calls, Connection, Ended, Ending, Later, Outgoing, RequestData};
use crate::status;

/// Serves `io` with fastgrpc's engine until the peer closes it, it fails, or it is drained
/// (shutdown, maximum age or idleness).
pub(crate) async fn serve<IO>(
    io: IO,
    connect_info: Option<ConnectInfo>,
    handshake_deadline: Instant,
    shared: Arc<ServerState>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let activity = Activity::new(shared.stats.clone());
    let calls = ServerCalls {
        shared: Arc::clone(&shared),
        activity: Arc::clone(&activity),
        connect_info,
    };
    let config = shared.connection.engine();
    let mut conn = Connection::new(io, config, calls, handshake_deadline);
    let drain = drain_reason(&shared.connection, Some(&activity), &shutdown);
    let reason = match Beside::new(poll_fn(|cx| conn.poll(cx)), drain).await {
        First::Main(ended) => return log_end(ended),
        First::Side(reason) => reason,
    };
    if !conn.handshake_done() {
        return;
    }
    tracing::debug!(reason = reason.as_str(), "draining the connection");
    conn.graceful_shutdown();
    let drained = poll_fn(|cx| conn.poll(cx));
    if let Some(ended) = within_grace(shared.connection.drain_grace, drained).await {
        log_end(ended);
    }
}

fn log_end(ended: Ended) {
    if let Ended::Error(error) = ended {
        tracing::debug!(%error, "HTTP/2 connection ended with an error");
    }
}

/// The server's calls, as one connection's engine sees them.
struct ServerCalls {
    shared: Arc<ServerState>,
    /// Counts the connection's tasks and marks it busy (for the idle timeout).
    activity: Arc<Activity>,
    connect_info: Option<ConnectInfo>,
}

impl Calls for ServerCalls {
    type Body = ResponseBody;
    type Call = Call;
    /// The call's answer, and the call as starting left it (a REST call is marked so then).
    type Pending = (ResponseFuture, Call);

    #[inline]
    fn read(&self, head: &mut http::request::Parts) -> Result<Call, http::Response<ResponseBody>> {
        Call::read(head, self.shared.default_timeout).map_err(|refusal| *refusal)
    }

    fn expires(call: &Call) -> Option<Instant> {
        call.deadline().map(Deadline::instant)
    }

    fn calls_arrived(&self) {
        if self.shared.connection.max_connection_idle.is_some() {
            self.activity.touch();
        }
    }

    #[inline]
    fn start(
        &self,
        head: http::request::Parts,
        body: RequestData,
        mut call: Call,
        now: std::time::Instant,
    ) -> (
        crate::http2::Started<(http::Response<ResponseBody>, Option<Call>), Self::Pending>,
        std::time::Instant,
    ) {
        let body = match body {
            RequestData::Whole(data) => RequestBody::whole(data),
            RequestData::Streaming(stream) => RequestBody::engine(stream),
        };
        let request = http::Request::from_parts(head, body);
        // Adaptive inline times the call's first poll from this reading, and leaves its own.
        call.start_clock(now);
        let started = match start_call(&self.shared, self.connect_info.as_ref(), request, &mut call)
        {
            Started::Ready(reply) => crate::http2::Started::Ready(reply),
            Started::Pending(pending) => crate::http2::Started::Pending((pending, call)),
        };
        (started, call.ended())
    }

    fn finish_later(&self, (pending, call): (ResponseFuture, Call), later: Later<Self>) {
        self.activity.spawn(async move {
            let reset = poll_fn(|cx| later.poll_reset(cx));
            if let Some(reply) = finish_call(pending, call, reset).await {
                later.finish(reply);
            }
        });
    }

    #[inline]
    fn outgoing(body: ResponseBody) -> Outgoing<ResponseBody> {
        body.into_outgoing()
    }

    fn poll_body(body: &mut ResponseBody, cx: &mut Context<'_>) -> Poll<BodyFrame> {
        let polled = panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *body).poll_frame(cx)));
        Poll::Ready(match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Some(Ok(frame)))) => match frame.into_data() {
                Ok(data) => BodyFrame::Data(data),
                Err(frame) => BodyFrame::End(Some(frame.into_trailers().unwrap_or_default())),
            },
            Ok(Poll::Ready(Some(Err(status)))) => {
                BodyFrame::End(Some(status::trailers(&status, HeaderMap::new())))
            }
            Ok(Poll::Ready(None)) => BodyFrame::End(None),
            Err(panic) => BodyFrame::End(Some(status::trailers(
                &panic_status(panic as Panic),
                HeaderMap::new(),
            ))),
        })
    }

    fn deadline_ending(call: &Call) -> Ending {
        let ending = call.ending(&crate::deadline::exceeded());
        Ending {
            data: ending.data,
            trailers: ending.trailers,
        }
    }
}
