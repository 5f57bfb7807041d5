//! Sending replies: the head at once, a whole reply in the same write when the windows allow,
//! reply streams polled as they wake and packed into as few DATA frames as the windows and the
//! frame size allow, then how each reply ends.
//!
//! Invariant: nothing is sent past the client's windows or while the write buffer is past its
//! high water; data waiting for window is queued per stream, in order.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use http::{HeaderMap, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::drain::Drain;
use super::streams::{ANSWERED_GRACE, Closed, End, Recv, Sending, unread_bytes};
use super::{BODY_ROUND_BYTES, Connection, WRITE_HIGH_WATER};
use crate::http2::calls::{BodyFrame, Calls, Fields, Outgoing};
use crate::http2::frame::{self, Reason};
use crate::http2::mail::{Mail, RecvEnd, StreamWaker};
use crate::http2::response;

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    /// Sends a call's reply: the head at once, the body as windows allow.
    pub(super) fn respond(
        &mut self,
        id: u32,
        response: http::Response<C::Body>,
        call: Option<C::Call>,
    ) {
        let (parts, body) = response.into_parts();
        self.send_reply(id, parts.status, parts.headers, C::outgoing(body), call);
    }

    /// Answers a request no call sees (its head was too large) with `status` alone.
    pub(super) fn answer_head(&mut self, id: u32, status: StatusCode) {
        let empty = Outgoing::Whole {
            message: None,
            trailers: None,
        };
        self.send_reply(id, status, HeaderMap::new(), empty, None);
    }

    // Inlined into `respond`, the hot caller: its arguments are not moved again.
    #[inline(always)]
    fn send_reply(
        &mut self,
        id: u32,
        status: StatusCode,
        headers: HeaderMap,
        outgoing: Outgoing<C::Body>,
        call: Option<C::Call>,
    ) {
        let max_frame = self.peer_max_frame_size;
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let trailers_only = matches!(
            &outgoing,
            Outgoing::Whole {
                message: None,
                trailers: None
            }
        );
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        response::encode_head(&mut self.encoder, status, headers, &mut block);
        frame::put_headers(&mut self.out.buf, id, &block, trailers_only, max_frame);
        stream.head_sent = true;
        self.pings.reset = true;
        match outgoing {
            Outgoing::Whole { message, trailers } => {
                if trailers_only {
                    self.block = block;
                    return self.send_done(id);
                }
                let room = stream.send_window.min(self.send_window);
                let fits = message.as_ref().is_none_or(|message| {
                    message.len() as i64 <= room && message.len() <= max_frame
                }) && self.out.len() < WRITE_HIGH_WATER;
                if fits {
                    // The usual case: the whole reply goes into this write, queued nowhere.
                    if let Some(message) = message {
                        let len = message.len() as i64;
                        stream.send_window -= len;
                        self.send_window -= len;
                        self.out.put_data(id, message, trailers.is_none());
                    } else if trailers.is_none() {
                        frame::put_data(&mut self.out.buf, id, &[], true);
                    }
                    if let Some(trailers) = trailers {
                        block.clear();
                        response::encode_trailers(&mut self.encoder, trailers, &mut block);
                        frame::put_headers(&mut self.out.buf, id, &block, true, max_frame);
                    }
                    self.block = block;
                    return self.send_done(id);
                }
                self.block = block;
                if let Some(message) = message {
                    stream.pending.push_back(message);
                }
                stream.pending_end = Some(match trailers {
                    Some(trailers) => End::Trailers(trailers),
                    None => End::Data,
                });
                self.flush_pending(id);
            }
            Outgoing::Streaming(body) => {
                self.block = block;
                let waker = Waker::from(Arc::new(StreamWaker {
                    stream: id,
                    outbox: Arc::clone(&self.outbox) as Arc<dyn Mail>,
                }));
                stream.sending = Some(Sending { body, waker, call });
                if let Some(expires) = call.as_ref().and_then(C::expires) {
                    self.arm_deadline(expires);
                }
                self.ready.push(id);
            }
        }
    }

    /// The reply is sent: the stream ends, or, if the client is still sending, stays
    /// half-closed (local) until the client ends it, its frames checked as an open stream's
    /// (their flow control, trailers and content-length). Nothing reads its data any more, and
    /// no window is given back for it: after [`ANSWERED_GRACE`], or once half a window has
    /// come, RST_STREAM NO_ERROR tells the client to stop (RFC 9113 §8.1), as it tells every
    /// such stream once the connection drains.
    pub(super) fn send_done(&mut self, id: u32) {
        let draining = self.drain == Drain::Final || self.peer_goaway;
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        if !stream.recv_open {
            self.streams.remove(&id);
            self.closed(id, Closed::Ended);
            return;
        }
        if draining {
            return self.stop_sending(id);
        }
        let stop_at = Instant::now() + ANSWERED_GRACE;
        stream.stop_at = Some(stop_at);
        let unread = unread_bytes(&stream.recv);
        stream.recv = Recv::Dropped;
        if let Some(shared) = stream.shared.take() {
            shared.end(RecvEnd::Reset(Reason::CANCEL));
        }
        self.release_connection(unread);
        self.arm_deadline(stop_at);
    }

    /// Polls the reply bodies that woke up, packing what they have into DATA frames.
    pub(super) fn send_bodies(&mut self, _cx: &mut Context<'_>) {
        let mut ready = std::mem::take(&mut self.ready);
        ready.sort_unstable();
        ready.dedup();
        for id in ready.drain(..) {
            self.send_body(id);
        }
        if self.ready.is_empty() {
            self.ready = ready;
        }
    }

    pub(super) fn send_body(&mut self, id: u32) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let Some(sending) = &mut stream.sending else {
            return;
        };
        if !stream.pending.is_empty() {
            // Waiting for window: polled again when it opens.
            return;
        }
        let room = stream.send_window.min(self.send_window).max(0) as usize;
        if room == 0 || self.out.len() >= WRITE_HIGH_WATER {
            self.blocked = true;
            return;
        }
        // A reply stream's small messages come packed (by the body): each frame polled is
        // queued as it is.
        let limit = room.min(BODY_ROUND_BYTES);
        let mut queued = 0usize;
        let mut cx = Context::from_waker(&sending.waker);
        let end = loop {
            if queued >= limit {
                break None;
            }
            match C::poll_body(&mut sending.body, &mut cx) {
                Poll::Pending => break None,
                Poll::Ready(BodyFrame::Data(data)) => {
                    queued += data.len();
                    stream.pending.push_back(data);
                }
                Poll::Ready(BodyFrame::End(Some(trailers))) => {
                    break Some(End::Trailers(Fields::Map(trailers)));
                }
                Poll::Ready(BodyFrame::End(None)) => break Some(End::Data),
            }
        };
        if let Some(end) = end {
            stream.sending = None;
            stream.pending_end = Some(end);
        } else if queued >= limit {
            // More may be ready: come back this poll.
            self.ready.push(id);
        }
        self.flush_pending(id);
    }

    /// Writes a stream's pending data as the windows allow, then how it ends.
    pub(super) fn flush_pending(&mut self, id: u32) {
        let max_frame = self.peer_max_frame_size;
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        while let Some(front) = stream.pending.front_mut() {
            let room = stream.send_window.min(self.send_window);
            if room <= 0 || self.out.len() >= WRITE_HIGH_WATER {
                self.blocked = true;
                return;
            }
            let len = front.len().min(room as usize).min(max_frame);
            let chunk = front.split_to(len);
            if front.is_empty() {
                stream.pending.pop_front();
            }
            let last = stream.pending.is_empty() && matches!(stream.pending_end, Some(End::Data));
            self.out.put_data(id, chunk, last);
            self.pings.reset = true;
            stream.send_window -= len as i64;
            self.send_window -= len as i64;
            if last {
                stream.pending_end = None;
                return self.send_done(id);
            }
        }
        let Some(end) = stream.pending_end.take() else {
            if stream.sending.is_some() {
                // Room again: the body may go on.
                self.ready.push(id);
            }
            return;
        };
        match end {
            End::Data => frame::put_data(&mut self.out.buf, id, &[], true),
            End::Trailers(trailers) => {
                let mut block = std::mem::take(&mut self.block);
                block.clear();
                response::encode_trailers(&mut self.encoder, trailers, &mut block);
                frame::put_headers(&mut self.out.buf, id, &block, true, max_frame);
                self.block = block;
            }
        }
        self.send_done(id);
    }

    /// The connection window or the write buffer opened: every stream that waited goes on.
    pub(super) fn flush_all_pending(&mut self) {
        self.blocked = false;
        let mut waiting = std::mem::take(&mut self.waiting);
        waiting.clear();
        waiting.extend(
            self.streams
                .iter()
                .filter(|(_, stream)| {
                    !stream.pending.is_empty()
                        || stream.pending_end.is_some()
                        || stream.sending.is_some()
                })
                .map(|(id, _)| *id),
        );
        for &id in &waiting {
            self.flush_pending(id);
        }
        self.waiting = waiting;
    }
}
