//! Request and response bodies as the server hands them to services and takes them back.
//!
//! A [`RequestBody`] is usually *whole*: the connection read every DATA frame of the stream
//! before calling the service, so the body is one contiguous `Bytes` and a unary call can decode
//! it at once. Otherwise it carries the HTTP/2 stream the rest arrives on, or, when the service
//! is hosted by another server (tonic) or the request came over HTTP/1.1, that body.
//!
//! A [`ResponseBody`] is what a handler produces: at most one encoded message and the
//! trailers, a stream of encoded messages, nothing at all for a trailers-only response (the
//! status is then in the headers), or any other HTTP body (from a hosted tower service). Both
//! types implement [`http_body::Body`] so they fit any tower stack.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_util::Stream;
use http::HeaderMap;
use http_body::{Body as _, Frame, SizeHint};
use tonic::Status;

use crate::http2::{Fields, Outgoing};
use crate::status;

/// What watches a reply from its handler to its end (the call's span and metrics,
/// `observe.rs`): the reply body tells it what it sends and how it ends.
pub(crate) trait Watch: Send {
    /// Runs one poll of the body in the call's scope (its span), the call marked busy meanwhile.
    fn poll_in_scope(
        &mut self,
        poll: &mut dyn FnMut() -> Poll<Option<Result<Frame<Bytes>, Status>>>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>>;
    /// Counts `data`, a piece of the reply body.
    fn sent(&mut self, data: &[u8]);
    /// The call ended with `code`.
    fn end(&mut self, code: tonic::Code);
    /// The call ended with these trailers (their status), or none.
    fn end_with(&mut self, trailers: Option<&HeaderMap>);
}

/// The body of a request, whole or still arriving.
pub struct RequestBody {
    /// Data already received and not yet handed out.
    received: Option<Bytes>,
    /// Where the rest comes from; `None` once everything has been received.
    rest: Option<Rest>,
    /// Where the metrics count the message bytes read from a body still arriving.
    #[cfg(feature = "opentelemetry")]
    counted: Option<
        Box<(
            crate::metrics::Framing,
            std::sync::Arc<std::sync::atomic::AtomicU64>,
        )>,
    >,
}

/// The source of the part of a request body that has not arrived yet.
enum Rest {
    /// The stream, when fastgrpc's own HTTP/2 engine serves the call.
    Engine(std::sync::Arc<crate::http2::Inbox>),
    /// Another server's body (a fastgrpc service mounted in tonic, or a test's body).
    Body(tonic::body::Body),
}

impl RequestBody {
    /// A body whose bytes have all been received.
    pub fn whole(data: Bytes) -> Self {
        Self::of(Some(data), None)
    }

    fn of(received: Option<Bytes>, rest: Option<Rest>) -> Self {
        RequestBody {
            received,
            rest,
            #[cfg(feature = "opentelemetry")]
            counted: None,
        }
    }

    /// A body with nothing in it.
    pub fn empty() -> Self {
        Self::whole(Bytes::new())
    }

    /// A body of which the rest arrives through fastgrpc's own HTTP/2 connection.
    pub(crate) fn engine(rest: std::sync::Arc<crate::http2::Inbox>) -> Self {
        Self::of(None, Some(Rest::Engine(rest)))
    }

    /// Any HTTP body, read as it arrives (a body that has already ended is whole).
    ///
    /// ```
    /// use fastgrpc::service::RequestBody;
    /// let body = RequestBody::new(http_body_util::Full::new(bytes::Bytes::from_static(b"\0\0\0\0\0")));
    /// assert!(body.into_whole().is_err(), "a foreign body is read as a stream");
    /// ```
    pub fn new<B>(body: B) -> Self
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if body.is_end_stream() {
            return Self::empty();
        }
        Self::of(None, Some(Rest::Body(tonic::body::Body::new(body))))
    }

    /// The whole body, if it has all been received.
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn as_whole(&self) -> Option<&[u8]> {
        match self.rest {
            None => Some(self.received.as_deref().unwrap_or_default()),
            Some(_) => None,
        }
    }

    /// From now on, adds the message bytes of the data read from the body, framed as
    /// `framing` says, to `counter`.
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn count_into(
        &mut self,
        framing: crate::metrics::Framing,
        counter: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) {
        self.counted = Some(Box::new((framing, counter)));
    }

    /// Counts `data`, read from the body, if the metrics asked for it.
    #[cfg(feature = "opentelemetry")]
    fn count(&mut self, data: &[u8]) {
        if let Some(counted) = &mut self.counted {
            let (framing, counter) = &mut **counted;
            counter.fetch_add(
                framing.message_bytes(data),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// Takes the whole body if it has been received; gives the body back otherwise.
    pub fn into_whole(self) -> Result<Bytes, Self> {
        match self.rest {
            None => Ok(self.received.unwrap_or_default()),
            Some(_) => Err(self),
        }
    }
}

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = if let Some(data) = self.received.take().filter(|data| !data.is_empty()) {
            Some(Ok(Frame::data(data)))
        } else {
            match self.rest.as_mut() {
                None => return Poll::Ready(None),
                Some(Rest::Engine(rest)) => ready!(poll_engine_frame(rest, cx)),
                Some(Rest::Body(rest)) => ready!(Pin::new(rest).poll_frame(cx)),
            }
        };
        #[cfg(feature = "opentelemetry")]
        if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()?.data_ref()) {
            self.count(data);
        }
        // Data may follow; an error, trailers or the end close the body.
        if !matches!(&frame, Some(Ok(frame)) if frame.is_data()) {
            self.rest = None;
        }
        Poll::Ready(frame)
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

/// The next frame of a request stream of fastgrpc's own engine.
fn poll_engine_frame(
    rest: &crate::http2::Inbox,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
    use crate::http2::RecvEnd;
    Poll::Ready(match ready!(rest.poll_next(cx)) {
        Ok(data) => Some(Ok(Frame::data(data))),
        Err(RecvEnd::Done(None)) => None,
        Err(RecvEnd::Done(Some(trailers))) => Some(Ok(Frame::trailers(trailers))),
        Err(RecvEnd::Reset(reason)) => Some(Err(Status::cancelled(format!(
            "the client ended the request stream (reset with code {})",
            reason.0
        )))),
    })
}

impl From<Bytes> for RequestBody {
    fn from(data: Bytes) -> Self {
        Self::whole(data)
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
            .field("whole", &self.rest.is_none())
            .finish()
    }
}

/// Frames of a streaming reply, already encoded: what [`ResponseBody::streaming`] sends.
pub(crate) type FrameStream = Pin<Box<dyn Stream<Item = Result<Bytes, Status>> + Send + 'static>>;

/// What a service's `call` returns: a response that is often already there.
pub type ResponseFuture =
    crate::future::FastFuture<http::Response<ResponseBody>, std::convert::Infallible>;

/// The body of a response: one encoded message and trailers, a stream of messages, nothing, or
/// another server's body.
///
/// An empty body (the `Default`) marks a trailers-only response: the status travels in the
/// response headers and the stream ends with them.
#[derive(Default)]
pub struct ResponseBody {
    kind: Kind,
    /// The call's span and metrics, for a body whose end is still to come (a stream).
    observed: Option<Box<dyn Watch>>,
}

enum Kind {
    /// At most one message, then the trailers (if any).
    Unary {
        message: Option<Bytes>,
        trailers: Option<Fields>,
    },
    /// Messages as the stream yields them (those ready together already in one buffer, see
    /// `handler::streaming`), then trailers built from how it ended.
    Streaming {
        frames: FrameStream,
        /// Trailing metadata the handler attached, sent with the final status.
        metadata: HeaderMap,
        /// Set once the trailers were handed out.
        done: bool,
    },
    /// Whatever a hosted tower service (a tonic server, say) answered, sent as it is.
    Body(tonic::body::Body),
}

impl Default for Kind {
    fn default() -> Self {
        Kind::Unary {
            message: None,
            trailers: None,
        }
    }
}

impl ResponseBody {
    /// A body carrying one encoded message followed by `trailers`.
    pub(crate) fn unary(message: Bytes, trailers: Fields) -> Self {
        Self::of(Kind::Unary {
            message: Some(message),
            trailers: Some(trailers),
        })
    }

    /// A body carrying `data` and nothing after it (no trailers): a Connect unary answer, or
    /// a plain HTTP one.
    pub(crate) fn whole(data: Bytes) -> Self {
        Self::of(Kind::Unary {
            message: Some(data),
            trailers: None,
        })
    }

    /// Takes the message and trailers of a body whose whole content is known (any that
    /// [`unary`](Self::unary), [`whole`](Self::whole) or [`empty`](Self::empty) made), leaving
    /// it empty; `None`, and the body as it was, for any other.
    pub(crate) fn take_whole(&mut self) -> Option<(Option<Bytes>, Option<HeaderMap>)> {
        match &mut self.kind {
            Kind::Unary { message, trailers } if self.observed.is_none() => {
                Some((message.take(), trailers.take().map(Fields::into_map)))
            }
            _ => None,
        }
    }

    /// Whether the whole body is known (a unary answer, or none): nothing of it is still to
    /// come.
    pub(crate) fn is_whole(&self) -> bool {
        matches!(self.kind, Kind::Unary { .. })
    }

    fn of(kind: Kind) -> Self {
        ResponseBody {
            kind,
            observed: None,
        }
    }

    /// A body carrying the frames `frames` yields; it ends with `grpc-status: 0` and
    /// `metadata` when the stream ends, or with the status of the first error it yields.
    pub(crate) fn streaming(frames: FrameStream, metadata: HeaderMap) -> Self {
        Self::of(Kind::Streaming {
            frames,
            metadata,
            done: false,
        })
    }

    /// A new response of this body with `headers`.
    #[inline]
    pub(crate) fn with_headers(self, headers: HeaderMap) -> http::Response<ResponseBody> {
        let mut response = http::Response::new(self);
        // `Response::new` gave it an empty map, which owns no memory (`HeaderMap::new` does
        // not allocate): forgetting it skips a drop that would find nothing to free.
        std::mem::forget(std::mem::replace(response.headers_mut(), headers));
        response
    }

    /// A body with nothing in it (a trailers-only response).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Any HTTP body, sent frame by frame as it yields them; an error it yields ends the call
    /// with that error's status (see [`tonic::Status::from_error`]).
    pub fn new<B>(body: B) -> Self
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let mut body = Some(body);
        // Our own body passes through unwrapped, so layers that keep its type cost no box.
        if let Some(own) = (&mut body as &mut dyn std::any::Any).downcast_mut::<Option<Self>>() {
            return own.take().unwrap_or_default();
        }
        let body = body.map(tonic::body::Body::new).unwrap_or_default();
        if body.is_end_stream() {
            return Self::empty();
        }
        Self::of(Kind::Body(body))
    }

    /// How the body is to be sent: all at once, or streamed.
    pub(crate) fn into_outgoing(self) -> Outgoing<ResponseBody> {
        match self.kind {
            Kind::Unary { message, trailers } => Outgoing::Whole { message, trailers },
            kind => Outgoing::Streaming(ResponseBody {
                kind,
                observed: self.observed,
            }),
        }
    }

    /// Ends `observed` now if the whole reply is known (its message and trailers), or hands it
    /// to the body to end with the stream.
    pub(crate) fn observe(&mut self, mut observed: impl Watch + 'static) {
        match &self.kind {
            Kind::Unary { message, trailers } => {
                if let Some(message) = message {
                    observed.sent(message);
                }
                match trailers {
                    Some(Fields::Map(trailers)) => observed.end_with(Some(trailers)),
                    Some(Fields::Fixed(fields)) => {
                        let status = fields.iter().find(|(name, _)| *name == status::GRPC_STATUS);
                        observed.end(status::code_of(status.map(|(_, value)| value)));
                    }
                    None => observed.end_with(None),
                }
            }
            Kind::Streaming { .. } | Kind::Body(_) => self.observed = Some(Box::new(observed)),
        }
    }

    /// Polls the next frame, observing it: message bytes sent, and the status at the end.
    fn poll_observed(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let Some(mut observed) = self.observed.take() else {
            return self.poll_kind(cx);
        };
        // A panic in the stream leaves the call marked busy: its drop then ends it INTERNAL,
        // as the transport answers.
        let polled = observed.poll_in_scope(&mut || self.poll_kind(cx));
        match &polled {
            Poll::Pending => {}
            Poll::Ready(Some(Ok(frame))) => match frame.data_ref() {
                Some(data) => observed.sent(data),
                None => observed.end_with(frame.trailers_ref()),
            },
            Poll::Ready(Some(Err(error))) => observed.end(error.code()),
            // Ended without trailers: the client finds no status.
            Poll::Ready(None) => observed.end(tonic::Code::Unknown),
        }
        self.observed = Some(observed);
        polled
    }
}

impl ResponseBody {
    /// The next frame of the body, as its kind yields it.
    fn poll_kind(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        match &mut self.kind {
            Kind::Unary { message, trailers } => {
                if let Some(message) = message.take() {
                    return Poll::Ready(Some(Ok(Frame::data(message))));
                }
                Poll::Ready(
                    trailers
                        .take()
                        .map(|trailers| Ok(Frame::trailers(trailers.into_map()))),
                )
            }
            Kind::Streaming { done: true, .. } => Poll::Ready(None),
            Kind::Streaming {
                frames,
                metadata,
                done,
            } => {
                let end = match ready!(frames.as_mut().poll_next(cx)) {
                    Some(Ok(frame)) => return Poll::Ready(Some(Ok(Frame::data(frame)))),
                    Some(Err(status)) => status::trailers(&status, std::mem::take(metadata)),
                    None => status::ok_trailers(std::mem::take(metadata)),
                };
                *done = true;
                Poll::Ready(Some(Ok(Frame::trailers(end))))
            }
            Kind::Body(body) => Pin::new(body).poll_frame(cx),
        }
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        self.poll_observed(cx)
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Unary { message, trailers } => message.is_none() && trailers.is_none(),
            Kind::Streaming { done, .. } => *done,
            Kind::Body(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Unary { message, .. } => {
                SizeHint::with_exact(message.as_ref().map_or(0, |m| m.len() as u64))
            }
            Kind::Streaming { .. } => SizeHint::new(),
            Kind::Body(body) => body.size_hint(),
        }
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Unary { message, trailers } => f
                .debug_struct("ResponseBody::Unary")
                .field("message", &message.as_ref().map(Bytes::len))
                .field("trailers", trailers)
                .finish(),
            Kind::Streaming { done, .. } => f
                .debug_struct("ResponseBody::Streaming")
                .field("done", done)
                .finish_non_exhaustive(),
            Kind::Body(body) => f.debug_tuple("ResponseBody::Body").field(body).finish(),
        }
    }
}
