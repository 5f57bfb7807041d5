//! The one door between the engine and the layer above it. The engine knows HTTP/2; what a
//! request means, what its reply is and when its time is up are that layer's ([`Calls`], which
//! the transport implements). The engine hands each request up with its body ([`RequestData`])
//! and sends what comes back: a reply at once, when the call was ready (in the poll that read
//! it: no box, spawn or waker), or later, through a [`Later`] the layer above keeps.

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;

use super::frame::Reason;
use super::mail::{Finished, Inbox, Outbox};

/// A request's body as the engine hands it up.
pub(crate) enum RequestData {
    /// All of it had arrived when the call started.
    Whole(Bytes),
    /// The rest arrives on the stream.
    Streaming(Arc<Inbox>),
}

/// A reply's body as the engine sends it.
pub(crate) enum Outgoing<B> {
    /// Everything is known: at most one message, then the trailers (if any; none is an empty
    /// DATA frame ending the stream, or, with no message either, a head that ends it).
    Whole {
        message: Option<Bytes>,
        trailers: Option<Fields>,
    },
    /// Frames still to come, polled with [`Calls::poll_body`].
    Streaming(B),
}

/// Header fields to send: a map, or fields fixed for good (the same on nearly every reply, so
/// no map is built and read back for them).
#[derive(Debug)]
pub(crate) enum Fields {
    Map(HeaderMap),
    Fixed(&'static [(HeaderName, HeaderValue)]),
}

impl Fields {
    /// The fields as a map, for those who read them as one.
    pub(crate) fn into_map(self) -> HeaderMap {
        match self {
            Fields::Map(map) => map,
            Fields::Fixed(fields) => {
                let mut map = crate::spare_maps::take();
                for (name, value) in fields {
                    map.append(name.clone(), value.clone());
                }
                map
            }
        }
    }
}

/// What a streaming reply body gave.
pub(crate) enum BodyFrame {
    Data(Bytes),
    /// The end: its trailers, or none (an empty DATA frame ends the stream).
    End(Option<HeaderMap>),
}

/// A reply, with its call if a deadline may still hold for its body.
pub(crate) type Reply<C> = (
    http::Response<<C as Calls>::Body>,
    Option<<C as Calls>::Call>,
);

/// How a reply stream whose deadline passed ends: data that carries its status, then trailers
/// (either may be missing; with neither, an empty DATA frame ends the stream).
#[derive(Debug, Default)]
pub(crate) struct Ending {
    pub(crate) data: Option<Bytes>,
    pub(crate) trailers: Option<HeaderMap>,
}

/// How starting a call went: its reply `R`, or the call `P` that waits (which the engine gives
/// to [`Calls::finish_later`]).
pub(crate) enum Started<R, P> {
    Ready(R),
    Pending(P),
}

/// What the engine needs from the layer above it.
pub(crate) trait Calls: Sized {
    /// A reply's body.
    type Body: Send + 'static;
    /// What the layer above read of a request's head (when its time is up, among the rest),
    /// kept with the stream until its call starts, and with its reply body.
    type Call: Copy + Send + 'static;
    /// A call that did not answer at once, with what the layer above knows of it by then
    /// (starting may have changed what its head said).
    type Pending;

    /// A request's head arrived: what the layer above reads of it (its deadline counted from
    /// now, so that time spent waiting to start counts), or the answer to a head it refuses.
    fn read(
        &self,
        head: &mut http::request::Parts,
    ) -> Result<Self::Call, http::Response<Self::Body>>;

    /// When `call`'s time is up, if it has a deadline.
    fn expires(call: &Self::Call) -> Option<Instant>;

    /// Calls are about to start (a connection idle until now no longer is).
    fn calls_arrived(&self);

    /// Starts a call at `now`; how it went, and the time after it ran (the engine's inline
    /// budget counts with it, so a call costs one clock read).
    fn start(
        &self,
        head: http::request::Parts,
        body: RequestData,
        call: Self::Call,
        now: std::time::Instant,
    ) -> (Started<Reply<Self>, Self::Pending>, std::time::Instant);

    /// Finishes a call that waited, in a task of its own; its reply goes back through `later`.
    fn finish_later(&self, pending: Self::Pending, later: Later<Self>);

    /// What a reply's body is.
    fn outgoing(body: Self::Body) -> Outgoing<Self::Body>;

    /// The next frame of a streaming reply body; its errors and panics end it with trailers.
    fn poll_body(body: &mut Self::Body, cx: &mut Context<'_>) -> Poll<BodyFrame>;

    /// How `call`'s reply stream ends once its deadline passed.
    fn deadline_ending(call: &Self::Call) -> Ending;
}

/// Where the reply of a call finishing in its own task goes, and whether its client gave up.
pub(crate) struct Later<C: Calls> {
    pub(in crate::http2) stream: u32,
    pub(in crate::http2) shared: Arc<Inbox>,
    pub(in crate::http2) outbox: Arc<Outbox<Reply<C>>>,
}

impl<C: Calls> Later<C> {
    /// Ready with the reason once the client has reset the stream.
    pub(crate) fn poll_reset(&self, cx: &mut Context<'_>) -> Poll<Reason> {
        self.shared.poll_reset(cx)
    }

    /// Hands the reply to the connection (dropped if the connection is gone).
    pub(crate) fn finish(self, reply: Reply<C>) {
        self.outbox.finish(Finished {
            stream: self.stream,
            reply,
        });
    }
}
