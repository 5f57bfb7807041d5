//! The send side of a connection: a call's response (head, message or stream, trailers) onto
//! its h2 stream. Ready responses are sent from the connection's poll; a streaming body that
//! has to wait for the client's flow-control window, or for its next message, goes on in a
//! task of its own ([`pump`]).

use std::future::poll_fn;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use h2::SendStream;
use h2::server::SendResponse;
use http_body::Body;
use tonic::Status;

use crate::body::{Outgoing, ResponseBody};
use crate::deadline::{self, Deadline};
use crate::handler::{Panic, panic_status};
use crate::status;
use crate::transport::Activity;

/// Sends a response from the connection's poll: a unary one is queued whole at once (h2
/// buffers what flow control does not yet allow, bounded by the message size); a streaming one
/// sends what it has ready now, up to a budget, and is pumped by its own task after that.
pub(crate) fn send_inline(
    response: http::Response<ResponseBody>,
    respond: SendResponse<Bytes>,
    deadline: Option<Deadline>,
    activity: &Arc<Activity>,
    cx: &mut Context<'_>,
) {
    let Some((mut stream, mut body)) = send_head(response, respond) else {
        return;
    };
    if send_ready_frames(&mut stream, &mut body, cx) == Flow::Continue {
        activity.spawn(pump(stream, body, deadline));
    }
}

/// How much of a streaming body is sent inline, without waiting for the client's window: a
/// reply that completes within it (a unary reply behind a tower layer, a short stream) needs no
/// task of its own, and a slow reader still makes the server buffer at most this much.
const INLINE_FRAMES: usize = 16;
const INLINE_BYTES: usize = 64 * 1024;

/// Sends the frames `body` yields at once, within the inline budget.
fn send_ready_frames(
    stream: &mut SendStream<Bytes>,
    body: &mut ResponseBody,
    cx: &mut Context<'_>,
) -> Flow {
    let mut sent = 0;
    for _ in 0..INLINE_FRAMES {
        if sent >= INLINE_BYTES {
            break;
        }
        let Poll::Ready(frame) = poll_body(body, cx) else {
            break;
        };
        if let Ok(Some(Ok(frame))) = &frame {
            sent += frame.data_ref().map_or(0, Bytes::len);
        }
        if send_frame(stream, frame) == Flow::Done {
            return Flow::Done;
        }
    }
    Flow::Continue
}

/// Sends the head of `response`, and the whole of a unary one; gives back a streaming body
/// still to be sent.
pub(crate) fn send_head(
    response: http::Response<ResponseBody>,
    mut respond: SendResponse<Bytes>,
) -> Option<(SendStream<Bytes>, ResponseBody)> {
    let (parts, body) = response.into_parts();
    let head = http::Response::from_parts(parts, ());
    let result = match body.into_outgoing() {
        Outgoing::Whole { message, trailers } => {
            let ends_with_headers = message.is_none() && trailers.is_none();
            respond
                .send_response(head, ends_with_headers)
                .and_then(|mut stream| send_unary_body(&mut stream, message, trailers))
        }
        Outgoing::Streaming(body) => match respond.send_response(head, false) {
            Ok(stream) => return Some((stream, body)),
            Err(error) => Err(error),
        },
    };
    log_send_error(result);
    None
}

fn send_unary_body(
    stream: &mut SendStream<Bytes>,
    message: Option<Bytes>,
    trailers: Option<http::HeaderMap>,
) -> Result<(), h2::Error> {
    if let Some(message) = message {
        stream.send_data(message, trailers.is_none())?;
    }
    match trailers {
        Some(trailers) => stream.send_trailers(trailers),
        None => Ok(()),
    }
}

/// Sends a streaming body until it ends, or ends it with `DEADLINE_EXCEEDED` when the deadline
/// passes first (dropping the handler's stream).
pub(crate) async fn pump(
    mut stream: SendStream<Bytes>,
    body: ResponseBody,
    deadline: Option<Deadline>,
) {
    tokio::select! {
        () = pump_frames(&mut stream, body) => {}
        () = deadline::passes(deadline) => {
            let trailers = status::trailers(&deadline::exceeded(), http::HeaderMap::new());
            log_send_error(stream.send_trailers(trailers));
        }
    }
}

/// Sends a streaming body frame by frame. The next message is produced only once the peer's
/// flow-control window has room, so a slow reader holds the server to one buffered message.
/// A reset from the client drops the body, and with it the handler's stream.
async fn pump_frames(stream: &mut SendStream<Bytes>, mut body: ResponseBody) {
    loop {
        if poll_fn(|cx| poll_window(stream, cx)).await.is_err() {
            tracing::debug!("the client closed the stream; dropping the reply stream");
            return;
        }
        let frame = poll_fn(|cx| {
            if let Poll::Ready(reason) = stream.poll_reset(cx) {
                tracing::debug!(
                    ?reason,
                    "client reset the stream; dropping the reply stream"
                );
                return Poll::Ready(None);
            }
            poll_body(&mut body, cx).map(Some)
        })
        .await;
        let Some(frame) = frame else { return };
        if send_frame(stream, frame) == Flow::Done {
            return;
        }
    }
}

/// A frame of a reply body, or the panic of the handler's stream that was producing it.
type Polled = Result<Option<Result<http_body::Frame<Bytes>, Status>>, Panic>;

/// Polls the next frame of `body`. The handler's stream runs here: its panic ends this call only.
fn poll_body(body: &mut ResponseBody, cx: &mut Context<'_>) -> Poll<Polled> {
    match panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *body).poll_frame(cx))) {
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(frame)) => Poll::Ready(Ok(frame)),
        Err(panic) => Poll::Ready(Err(panic)),
    }
}

/// Whether a reply stream goes on after a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Done,
}

/// Sends one polled frame: data goes on; trailers, an error, a panic or the end finish the
/// stream (so does a failed send: the client is gone).
fn send_frame(stream: &mut SendStream<Bytes>, frame: Polled) -> Flow {
    let ended = match frame {
        Ok(Some(Ok(frame))) => match frame.into_data() {
            Ok(data) => match stream.send_data(data, false) {
                Ok(()) => return Flow::Continue,
                Err(error) => Err(error),
            },
            Err(frame) => stream.send_trailers(frame.into_trailers().unwrap_or_default()),
        },
        // Only a hosted service's body can fail or end without trailers (fastgrpc's own end
        // with a status): a failure still reaches the client as a status.
        Ok(Some(Err(status))) => {
            stream.send_trailers(status::trailers(&status, http::HeaderMap::new()))
        }
        Ok(None) => stream.send_data(Bytes::new(), true),
        Err(panic) => stream.send_trailers(status::trailers(
            &panic_status(panic),
            http::HeaderMap::new(),
        )),
    };
    log_send_error(ended);
    Flow::Done
}

/// Ready once the stream may send at least one byte more than it has buffered.
fn poll_window(stream: &mut SendStream<Bytes>, cx: &mut Context<'_>) -> Poll<Result<(), ()>> {
    // The reservation counts buffered data, so capacity shows only once the peer's window
    // covers what is buffered plus one byte.
    stream.reserve_capacity(1);
    while stream.capacity() == 0 {
        match std::task::ready!(stream.poll_capacity(cx)) {
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Poll::Ready(Err(())),
        }
    }
    Poll::Ready(Ok(()))
}

/// A failed send means the client went away: there is nobody left to tell.
fn log_send_error(result: Result<(), h2::Error>) {
    if let Err(error) = result {
        tracing::debug!(%error, "could not send the response");
    }
}
