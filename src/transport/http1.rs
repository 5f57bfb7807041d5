//! HTTP/1.1 connections, served with hyper's HTTP/1 server: gRPC-Web calls from browsers and
//! their CORS preflights, through the same services and router as HTTP/2.
//!
//! gRPC itself needs HTTP/2 (its status travels in trailers): a gRPC request over HTTP/1.1 is
//! answered `505 HTTP Version Not Supported` at once. A client that sends its headers too slowly
//! is cut off after the handshake timeout (hyper's header read timeout), so it cannot hold a
//! connection open that way.

use std::convert::Infallible;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use super::connect_info::ConnectInfo;
use super::{Started, panic_response, start_call};
use crate::body::{RequestBody, ResponseBody};
use crate::deadline;
use crate::handler::ResponseFuture;
use crate::protocol::{Protocol, Wire};
use crate::server::Shared;

/// Serves `io` over HTTP/1.1 until the peer closes it, or, once `shutdown` fires, until the
/// request in progress (if any) is answered or the drain grace runs out.
pub(crate) async fn serve<IO>(
    io: IO,
    connect_info: Option<ConnectInfo>,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) where
    IO: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let header_timeout = shared.connection.handshake_timeout;
    let drain_grace = shared.connection.drain_grace;
    let service =
        hyper::service::service_fn(move |request| answer(&shared, connect_info.as_ref(), request));
    let mut connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(io), service);
    let result = tokio::select! {
        result = &mut connection => result,
        () = shutdown.cancelled() => {
            // The request in progress finishes first, within the drain grace if one is set, as
            // over HTTP/2 (an endless reply stream would otherwise hold the shutdown open).
            Pin::new(&mut connection).graceful_shutdown();
            match drain_grace {
                None => connection.await,
                Some(grace) => tokio::time::timeout(grace, connection).await.unwrap_or(Ok(())),
            }
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, "HTTP/1.1 connection ended with an error");
    }
}

pin_project! {
    /// The answer to one request: the service's response, or `DEADLINE_EXCEEDED` if the call's
    /// deadline passes first. A ready response is taken at the first poll, without a box.
    /// HTTP/1.1's form of `call::finish_call` (hyper needs a future it can name, and has no
    /// reset to watch: it drops the future when the client goes), with its rules: an answer
    /// after the deadline is `DEADLINE_EXCEEDED`, a panic `INTERNAL`.
    struct Answer {
        response: ResponseFuture,
        #[pin]
        deadline: Option<Sleep>,
    }
}

impl Future for Answer {
    type Output = Result<http::Response<ResponseBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let response = this.response;
        match panic::catch_unwind(AssertUnwindSafe(|| Pin::new(response).poll(cx))) {
            Ok(Poll::Ready(Ok(response))) => {
                let late = this
                    .deadline
                    .as_ref()
                    .get_ref()
                    .as_ref()
                    .is_some_and(|deadline| deadline.is_elapsed());
                return Poll::Ready(Ok(if late {
                    crate::response::status(&deadline::exceeded())
                } else {
                    response
                }));
            }
            Ok(Poll::Ready(Err(never))) => match never {},
            Ok(Poll::Pending) => {}
            Err(panic) => return Poll::Ready(Ok(panic_response(panic))),
        }
        match this
            .deadline
            .as_mut()
            .as_pin_mut()
            .map(|deadline| deadline.poll(cx))
        {
            Some(Poll::Ready(())) => {
                Poll::Ready(Ok(crate::response::status(&deadline::exceeded())))
            }
            _ => Poll::Pending,
        }
    }
}

/// The most of a refused request's body read (and dropped) before the refusal is sent; past
/// it the refusal goes out anyway, and hyper closes the connection.
const MAX_DRAINED: usize = 4 * 1024 * 1024;

/// `refusal`, once `body` has ended (or `MAX_DRAINED` of it has been read).
async fn drained(
    mut body: Incoming,
    refusal: http::Response<ResponseBody>,
) -> Result<http::Response<ResponseBody>, Infallible> {
    use http_body::Body as _;
    let mut read = 0;
    while read <= MAX_DRAINED {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, bytes::Bytes::len),
            Some(Err(_)) | None => break,
        }
    }
    Ok(refusal)
}

fn answer(
    shared: &Shared,
    connect_info: Option<&ConnectInfo>,
    mut request: http::Request<Incoming>,
) -> Answer {
    let ready = |response| Answer {
        response: ResponseFuture::ok(response),
        deadline: None,
    };
    // The router's own test, so both transports agree on what gRPC is.
    // Refused at once, but only once the request's body is read: hyper would close the
    // connection under a client still sending it, which then sees a broken pipe, not the answer.
    let refusal = match Wire::of(request.headers().get(http::header::CONTENT_TYPE)) {
        // The router's own test, so both transports agree on what gRPC is.
        Some(wire) if wire.protocol == Protocol::Grpc => {
            Some(crate::response::http_version_not_supported())
        }
        None if request.method() == http::Method::POST => {
            Some(crate::response::unsupported_media_type())
        }
        _ => None,
    };
    if let Some(refusal) = refusal {
        return Answer {
            response: ResponseFuture::boxed(drained(request.into_body(), refusal)),
            deadline: None,
        };
    }
    let deadline = match deadline::call_deadline(&mut request, shared.default_timeout) {
        Ok(deadline) => deadline,
        Err(status) => return ready(crate::response::status(&status)),
    };
    let (parts, body) = request.into_parts();
    let request = http::Request::from_parts(parts, RequestBody::new(body));
    match start_call(shared, connect_info, request, deadline) {
        Started::Ready(response, _) => ready(response),
        Started::Pending(response) => Answer {
            response,
            deadline: deadline.map(|deadline| tokio::time::sleep_until(deadline.instant())),
        },
    }
}
