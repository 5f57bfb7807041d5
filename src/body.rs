//! Request and response bodies as the server hands them to services and takes them back.
//!
//! A [`RequestBody`] is usually *complete*: the connection driver read every DATA frame of the
//! stream before calling the service, so the body is one contiguous `Bytes` and a unary call
//! can decode it at once. Otherwise it carries what has arrived and the h2 stream for the rest.
//!
//! A [`ResponseBody`] is what a unary handler produces: at most one encoded message and the
//! trailers, or nothing at all for a trailers-only response (the status is then in the
//! headers). Both types implement [`http_body::Body`] so they fit any tower stack.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Frame, SizeHint};
use tonic::Status;

/// The body of a request, complete or still arriving.
pub struct RequestBody {
    /// Data already received and not yet handed out.
    received: Option<Bytes>,
    /// The rest of the stream; `None` once everything has been received.
    rest: Option<h2::RecvStream>,
}

impl RequestBody {
    /// A body whose bytes have all been received.
    pub fn complete(data: Bytes) -> Self {
        RequestBody {
            received: Some(data),
            rest: None,
        }
    }

    /// A body with nothing in it.
    pub fn empty() -> Self {
        Self::complete(Bytes::new())
    }

    /// A body of which `received` has arrived and `rest` will bring the remainder.
    pub(crate) fn streaming(received: Option<Bytes>, rest: h2::RecvStream) -> Self {
        RequestBody {
            received,
            rest: Some(rest),
        }
    }

    /// Takes the whole body if it has been received; gives the body back otherwise.
    pub fn into_complete(self) -> Result<Bytes, Self> {
        match self.rest {
            None => Ok(self.received.unwrap_or_default()),
            Some(_) => Err(self),
        }
    }

    /// Reads the rest of the body into one buffer, refusing to hold more than `max_len` bytes.
    pub async fn collect(mut self, max_len: usize) -> Result<Bytes, Status> {
        let first = self.received.take().unwrap_or_default();
        let Some(mut rest) = self.rest.take() else {
            return Ok(first);
        };
        let mut buf = BytesMut::from(first);
        while let Some(chunk) = rest.data().await {
            let chunk = chunk.map_err(stream_error)?;
            let _ = rest.flow_control().release_capacity(chunk.len());
            if buf.len() + chunk.len() > max_len {
                return Err(Status::resource_exhausted(format!(
                    "request body is larger than the limit of {max_len} bytes"
                )));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    }
}

/// The status for a request stream that broke while the server was reading it.
pub(crate) fn stream_error(error: h2::Error) -> Status {
    if error.is_reset() || error.is_go_away() {
        Status::cancelled(format!("the client ended the request stream: {error}"))
    } else {
        Status::internal(format!("failed to read the request stream: {error}"))
    }
}

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(data) = self.received.take().filter(|data| !data.is_empty()) {
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        let Some(rest) = self.rest.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(chunk) = ready!(rest.poll_data(cx)) {
            let chunk = chunk.map_err(stream_error)?;
            let _ = rest.flow_control().release_capacity(chunk.len());
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        let trailers = ready!(rest.poll_trailers(cx)).map_err(stream_error)?;
        self.rest = None;
        Poll::Ready(trailers.map(|trailers| Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.received.as_ref().is_none_or(Bytes::is_empty)
    }

    fn size_hint(&self) -> SizeHint {
        let received = self.received.as_ref().map_or(0, |data| data.len() as u64);
        match self.rest {
            None => SizeHint::with_exact(received),
            Some(_) => {
                let mut hint = SizeHint::new();
                hint.set_lower(received);
                hint
            }
        }
    }
}

impl From<Bytes> for RequestBody {
    fn from(data: Bytes) -> Self {
        Self::complete(data)
    }
}

impl Default for RequestBody {
    fn default() -> Self {
        Self::empty()
    }
}

impl fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestBody")
            .field("received", &self.received.as_ref().map(Bytes::len))
            .field("complete", &self.rest.is_none())
            .finish()
    }
}

/// The body of a response: one encoded message and trailers, or nothing.
///
/// An empty body (the `Default`) marks a trailers-only response: the status travels in the
/// response headers and the stream ends with them.
#[derive(Default)]
pub struct ResponseBody {
    message: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl ResponseBody {
    /// A body carrying one encoded message followed by `trailers`.
    pub fn unary(message: Bytes, trailers: HeaderMap) -> Self {
        ResponseBody {
            message: Some(message),
            trailers: Some(trailers),
        }
    }

    /// A body with nothing in it (a trailers-only response).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Splits the body into its message and trailers, for senders that write frames directly.
    pub(crate) fn into_parts(self) -> (Option<Bytes>, Option<HeaderMap>) {
        (self.message, self.trailers)
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if let Some(message) = self.message.take() {
            return Poll::Ready(Some(Ok(Frame::data(message))));
        }
        Poll::Ready(
            self.trailers
                .take()
                .map(|trailers| Ok(Frame::trailers(trailers))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.message.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.message.as_ref().map_or(0, |m| m.len() as u64))
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBody")
            .field("message", &self.message.as_ref().map(Bytes::len))
            .field("trailers", &self.trailers)
            .finish()
    }
}
