//! The stream table and the streams' states (RFC 9113 §5.1): what is kept per open stream,
//! how the last closed ones are remembered, and the rules for frames on streams that are not
//! open.
//!
//! Invariant: a stream is in the table while either side is open; once both sides have ended,
//! or either has reset it, it is out of the table and among the remembered closed streams,
//! with how it closed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::Connection;
use crate::http2::calls::{Calls, Fields};
use crate::http2::frame::{self, FrameError, Reason};
use crate::http2::mail::{Inbox, RecvEnd};

/// A stream the client opened and has not reset, and whose either side is still open: open,
/// half-closed (remote) once the client ends its side, half-closed (local) once our reply has
/// ended ([`Stream::answered`]) while the client is still sending.
pub(super) struct Stream<C: Calls> {
    /// The client has not ended its side yet.
    pub(super) recv_open: bool,
    pub(super) recv: Recv,
    /// What the client may still send on this stream (our window).
    pub(super) recv_window: i64,
    /// Received and read, not yet given back with WINDOW_UPDATE.
    pub(super) recv_unreleased: u32,
    pub(super) content_length: Option<u64>,
    pub(super) received: u64,
    /// What we may send on this stream (the client's window).
    pub(super) send_window: i64,
    /// Whether the response head has been sent.
    pub(super) head_sent: bool,
    /// Reply data waiting for window, then how the stream ends.
    pub(super) pending: VecDeque<Bytes>,
    pub(super) pending_end: Option<End>,
    pub(super) sending: Option<Sending<C>>,
    /// Set for calls running in tasks, and request bodies read while they arrive.
    pub(super) shared: Option<Arc<Inbox>>,
    /// The request head and what the layer above read of it (its deadline among the rest,
    /// counted from when the headers arrived), until its call starts.
    pub(super) head: Option<(http::request::Parts, C::Call)>,
    /// Answered while the client was still sending: when it is told to stop.
    pub(super) stop_at: Option<Instant>,
}

impl<C: Calls> Stream<C> {
    /// Whether the reply has been sent whole, END_STREAM included.
    pub(super) fn answered(&self) -> bool {
        self.head_sent
            && self.sending.is_none()
            && self.pending.is_empty()
            && self.pending_end.is_none()
    }
}

/// Where a stream's request body goes.
pub(super) enum Recv {
    /// The call has not started: data is kept here, and given whole if the request ends first.
    Before(Received),
    /// The call is reading it.
    Shared(Arc<Inbox>),
    /// Nobody reads it any more (the call ended first): data is dropped and credited back.
    Dropped,
}

/// Request data received before the call started: nearly always one chunk, kept without a
/// vector.
#[derive(Default)]
pub(super) struct Received {
    pub(super) first: Option<Bytes>,
    pub(super) more: Vec<Bytes>,
}

impl Received {
    pub(super) fn push(&mut self, data: Bytes) {
        match self.first {
            None => self.first = Some(data),
            Some(_) => self.more.push(data),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.first.iter().chain(&self.more).map(Bytes::len).sum()
    }

    pub(super) fn into_chunks(self) -> impl Iterator<Item = Bytes> {
        self.first.into_iter().chain(self.more)
    }

    /// The whole body as one `Bytes`: the only chunk itself when there is one.
    pub(super) fn join(self) -> Bytes {
        match (self.first, self.more.is_empty()) {
            (None, _) => Bytes::new(),
            (Some(first), true) => first,
            (Some(first), false) => {
                let mut joined = BytesMut::with_capacity(
                    first.len() + self.more.iter().map(Bytes::len).sum::<usize>(),
                );
                joined.extend_from_slice(&first);
                for chunk in self.more {
                    joined.extend_from_slice(&chunk);
                }
                joined.freeze()
            }
        }
    }
}

/// A reply body being sent.
pub(super) struct Sending<C: Calls> {
    pub(super) body: C::Body,
    pub(super) waker: Waker,
    /// The call the body answers, if a deadline may hold for it.
    pub(super) call: Option<C::Call>,
}

/// How a reply ends once its data is sent.
pub(super) enum End {
    Trailers(Fields),
    /// An empty DATA frame with END_STREAM.
    Data,
}

/// Bytes of a request body that were received and never read.
pub(super) fn unread_bytes(recv: &Recv) -> usize {
    match recv {
        Recv::Before(received) => received.len(),
        Recv::Shared(_) | Recv::Dropped => 0,
    }
}

/// Hashes stream ids for the map of open streams: one multiplication, where the standard
/// hasher (SipHash) cost a tenth of a call's instructions for the map's few lookups per call.
/// A client picks its ids, so it could make them collide; but the map holds at most the
/// streams the client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS), which bounds
/// what colliding ids can cost a lookup.
#[derive(Clone, Copy, Default)]
pub(super) struct StreamIds;

impl std::hash::BuildHasher for StreamIds {
    type Hasher = StreamIdHasher;
    fn build_hasher(&self) -> StreamIdHasher {
        StreamIdHasher(0)
    }
}

#[derive(Default)]
pub(super) struct StreamIdHasher(u64);

impl std::hash::Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u32(u32::from(byte));
        }
    }

    fn write_u32(&mut self, id: u32) {
        // Fibonacci hashing: spreads consecutive ids over both the low bits (the bucket) and
        // the high ones (the map's tag).
        self.0 = (self.0 ^ u64::from(id)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// How a stream that is no longer open closed, for the frames that still come on it
/// (RFC 9113 §5.1, "closed").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Closed {
    /// We reset it: the client may send on it until it learns that, so its frames are ignored.
    ByUs,
    /// The client reset it: DATA or HEADERS on it is a stream error of type STREAM_CLOSED.
    ByClient,
    /// Both sides ended it with END_STREAM: DATA or HEADERS on it is a connection error of type
    /// STREAM_CLOSED.
    Ended,
}

/// How many closed streams a connection remembers. DATA on a stream below the client's last
/// one that is not remembered gets a stream error STREAM_CLOSED (as h2 answers streams it has
/// forgotten), so DATA late for a stream we reset long ago costs the client nothing but that
/// stream's reset; so do trailers. HEADERS that open a request there are a connection error
/// PROTOCOL_ERROR: the client opens a stream whose id is not new (§5.1.1).
pub(super) const CLOSED_REMEMBERED: usize = 128;

/// How long a stream answered while its client is still sending stays half-closed (local)
/// before RST_STREAM NO_ERROR tells the client to stop: long enough for the frames it had
/// sent to arrive and be judged by the stream's rules (whatever the timing, as h2spec checks
/// them), short enough that a client that keeps an idle request side open (h2's, tonic's,
/// which wait for that reset) gets its concurrency slot back soon. grpc-go resets at once.
pub(super) const ANSWERED_GRACE: Duration = Duration::from_secs(1);

/// How many streams the client may waste, resetting them before their replies end, making us
/// reset them, or opening them past the concurrency limit (CVE-2023-44487, rapid reset, and
/// CVE-2025-8671): a bucket of
/// `max_concurrent_streams`, refilled at as many per second. An honest client cancels far
/// fewer; one that opens and resets streams in a loop empties it within a second and gets
/// GOAWAY `ENHANCE_YOUR_CALM`. A reset stream costs us little (its call is dropped, or never
/// started), so the bucket only bounds the churn.
pub(super) struct ResetBudget {
    pub(super) tokens: f64,
    pub(super) capacity: f64,
    pub(super) last: Instant,
}

impl ResetBudget {
    pub(super) fn new(capacity: u32) -> ResetBudget {
        ResetBudget {
            tokens: capacity as f64,
            capacity: capacity.max(1) as f64,
            last: Instant::now(),
        }
    }

    /// Takes one token; `false` when there is none left.
    pub(super) fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.capacity;
        self.tokens = (self.tokens + refill).min(self.capacity);
        self.last = now;
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    pub(super) fn check_not_idle(&self, stream: u32, why: &'static str) -> Result<(), FrameError> {
        // Even ids are the server's, and it opens none: they stay idle (§5.1.1).
        if stream > self.last_stream || stream.is_multiple_of(2) {
            return Err(FrameError::Connection(Reason::PROTOCOL_ERROR, why));
        }
        Ok(())
    }

    /// Remembers how `stream` closed (the oldest such memory goes when there are too many).
    pub(super) fn closed(&mut self, stream: u32, how: Closed) {
        if self.closed.len() == CLOSED_REMEMBERED {
            self.closed.pop_front();
        }
        self.closed.push_back((stream, how));
    }

    /// How `stream` closed, if it is remembered.
    pub(super) fn closed_how(&self, stream: u32) -> Option<Closed> {
        self.closed
            .iter()
            .rev()
            .find(|(id, _)| *id == stream)
            .map(|(_, how)| *how)
    }

    /// DATA or HEADERS on a stream below the client's last that is not open (§5.1, "closed"):
    /// ignored if we reset it, a connection error if both sides had ended it, else a stream
    /// error; all of type STREAM_CLOSED.
    pub(super) fn on_closed_stream(
        &mut self,
        stream: u32,
        why: &'static str,
    ) -> Result<(), FrameError> {
        match self.closed_how(stream) {
            Some(Closed::ByUs) => Ok(()),
            Some(Closed::Ended) => Err(FrameError::Connection(Reason::STREAM_CLOSED, why)),
            Some(Closed::ByClient) | None => {
                tracing::debug!(stream, why, "a frame on a closed stream");
                frame::put_rst_stream(&mut self.out.buf, stream, Reason::STREAM_CLOSED);
                Ok(())
            }
        }
    }

    /// Ends one stream with RST_STREAM; the connection goes on.
    pub(super) fn reset(&mut self, stream: u32, reason: Reason, why: &'static str) {
        tracing::debug!(stream, why, ?reason, "resetting a stream");
        frame::put_rst_stream(&mut self.out.buf, stream, reason);
        self.closed(stream, Closed::ByUs);
        if let Some(state) = self.streams.remove(&stream) {
            self.release_connection(unread_bytes(&state.recv));
            if let Some(shared) = state.shared {
                shared.end(RecvEnd::Reset(reason));
            }
            // A reset the client provoked (a frame that breaks an open stream's rules) wastes
            // the stream as surely as its own RST_STREAM would (CVE-2025-8671, "MadeYouReset"):
            // it draws on the same budget.
            if !self.resets.take() {
                self.fail(FrameError::Connection(
                    Reason::ENHANCE_YOUR_CALM,
                    "too many streams reset or refused",
                ));
            }
        }
    }

    /// A stream the client opened that did no work: it reset it before its reply ended, or
    /// opened it past the concurrency limit.
    pub(super) fn count_wasted_stream(&mut self) -> Result<(), FrameError> {
        if self.resets.take() {
            Ok(())
        } else {
            Err(FrameError::Connection(
                Reason::ENHANCE_YOUR_CALM,
                "too many streams reset or refused",
            ))
        }
    }

    /// Ends a stream whose reply is sent while the client is still sending, with RST_STREAM
    /// NO_ERROR: what it sends is not needed (RFC 9113 §8.1). Not a wasted stream.
    pub(super) fn stop_sending(&mut self, id: u32) {
        let Some(stream) = self.streams.remove(&id) else {
            return;
        };
        frame::put_rst_stream(&mut self.out.buf, id, Reason::NO_ERROR);
        self.closed(id, Closed::ByUs);
        self.release_connection(unread_bytes(&stream.recv));
        if let Some(shared) = stream.shared {
            shared.end(RecvEnd::Reset(Reason::CANCEL));
        }
    }

    /// Ends every half-closed (local) stream: once the connection drains, nothing the client
    /// sends on them would be read.
    pub(super) fn stop_answered_streams(&mut self) {
        let mut answered = std::mem::take(&mut self.waiting);
        answered.clear();
        answered.extend(
            self.streams
                .iter()
                .filter(|(_, stream)| stream.recv_open && stream.answered())
                .map(|(id, _)| *id),
        );
        for &id in &answered {
            self.stop_sending(id);
        }
        self.waiting = answered;
    }

    /// Forgets `id` once both sides have ended it.
    pub(super) fn end_if_done(&mut self, id: u32) {
        if self
            .streams
            .get(&id)
            .is_some_and(|stream| !stream.recv_open && stream.answered())
        {
            self.streams.remove(&id);
            self.closed(id, Closed::Ended);
        }
    }
}
