//! How a deadline ends a call, whatever the protocol and transport.
//!
//! Before the answer: [`within_deadline`] takes a call's answer as the service gave it. A ready
//! answer stands unless the deadline passed meanwhile; a pending one is raced against the
//! deadline in [`WithinDeadline`]. Either way a call whose deadline passes first is answered
//! `DEADLINE_EXCEEDED` in its own protocol ([`Call::failure`]), and the service's future is
//! dropped.
//!
//! During a reply stream: HTTP/2's connection keeps one timer for all its streams and ends a
//! stream whose deadline passed with what [`Call::ending`] writes; HTTP/1.1 has no such timer,
//! and wraps the reply body in [`DeadlineBody`], which ends it the same way.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tonic::Status;

use super::Call;
use crate::FastFuture;
use crate::body::{ResponseBody, ResponseFuture};
use crate::deadline::exceeded;

/// `answer`, the service's answer to `call`, held to the call's deadline: `DEADLINE_EXCEEDED`
/// in the call's protocol if the deadline passes before the answer is there. A ready answer
/// costs a clock read if the call has a deadline, and nothing else.
pub(crate) fn within_deadline(answer: ResponseFuture, call: &Call) -> ResponseFuture {
    let Some(deadline) = call.deadline() else {
        return answer;
    };
    match answer.into_ready() {
        Ok(Ok(response)) => FastFuture::ok(in_time(response, call)),
        Ok(Err(never)) => match never {},
        Err(pending) => FastFuture::boxed(WithinDeadline {
            answer: pending,
            timer: tokio::time::sleep_until(deadline.instant()),
            call: *call,
        }),
    }
}

/// `response` if the call's deadline has not passed, else `DEADLINE_EXCEEDED`: a reply that
/// comes late is not sent, since its client has stopped waiting.
fn in_time(response: http::Response<ResponseBody>, call: &Call) -> http::Response<ResponseBody> {
    if call.expired() {
        call.failure(&exceeded())
    } else {
        response
    }
}

pin_project! {
    /// A pending answer raced against its call's deadline: see [`within_deadline`].
    pub(crate) struct WithinDeadline {
        answer: ResponseFuture,
        #[pin]
        timer: Sleep,
        call: Call,
    }
}

impl Future for WithinDeadline {
    type Output = Result<http::Response<ResponseBody>, std::convert::Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // The answer first: one that is there wins over a timer that fired meanwhile, unless
        // the deadline has passed by then.
        if let Poll::Ready(answer) = Pin::new(this.answer).poll(cx) {
            let Ok(response) = answer;
            return Poll::Ready(Ok(in_time(response, this.call)));
        }
        match this.timer.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Ok(this.call.failure(&exceeded()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A reply body held to its call's deadline, for transports without a timer of their own
/// (HTTP/1.1): it ends with the call's `DEADLINE_EXCEEDED` ending once the deadline passes, and
/// drops the stream that produced it.
pub(crate) struct DeadlineBody {
    /// `None` once the deadline passed or the body ended.
    inner: Option<ResponseBody>,
    timer: Pin<Box<Sleep>>,
    call: Call,
    /// What is still to be sent of the ending, data first.
    ending: Option<(Option<Bytes>, Option<http::HeaderMap>)>,
}

impl DeadlineBody {
    /// `body`, held to `call`'s deadline; as it is if the call has none or the body is whole.
    pub(crate) fn wrap(body: ResponseBody, call: &Call) -> ResponseBody {
        match call.deadline() {
            Some(deadline) if !body.is_whole() => ResponseBody::new(DeadlineBody {
                inner: Some(body),
                timer: Box::pin(tokio::time::sleep_until(deadline.instant())),
                call: *call,
                ending: None,
            }),
            _ => body,
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if let Some(inner) = this.inner.as_mut() {
            // The timer first: once the deadline has passed, nothing more of the stream goes out,
            // even what it has ready.
            if this.timer.as_mut().poll(cx).is_pending() {
                let frame = std::task::ready!(Pin::new(inner).poll_frame(cx));
                if frame.is_none() {
                    this.inner = None;
                }
                return Poll::Ready(frame);
            }
            this.inner = None;
            let ending = this.call.ending(&exceeded());
            this.ending = Some((ending.data, ending.trailers));
        }
        let Some((data, trailers)) = this.ending.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(data) = data.take() {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        let trailers = trailers.take();
        this.ending = None;
        Poll::Ready(trailers.map(|trailers| Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_none() && self.ending.is_none()
    }
}
