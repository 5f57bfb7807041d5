//! Reading frames: the preface, then every whole frame in the read buffer, each handled by
//! what it is; header blocks (with their CONTINUATIONs) open streams or end them as trailers.
//!
//! Invariant: frames are handled in the order they came, and an HPACK block is decoded even when
//! its stream is refused or closed, so the decoder's table stays in step with the client's.

use std::collections::VecDeque;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::drain::Drain;
use super::ping::{KEEPALIVE_PING, SHUTDOWN_PING};
use super::streams::{Closed, Received, Recv, Stream, unread_bytes};
use super::{Connection, PREFACE};
use crate::http2::calls::Calls;
use crate::http2::frame::{self, Frame, FrameError, HEAD_LEN, Head, Reason};
use crate::http2::hpack::{self, Decoded};
use crate::http2::mail::RecvEnd;
use crate::http2::request::{RequestHead, Trailers};

/// A header block arriving in CONTINUATION frames.
pub(super) struct Continuation {
    pub(super) stream: u32,
    pub(super) end_stream: bool,
    pub(super) depends_on_itself: bool,
    pub(super) block: BytesMut,
}

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    /// Handles every whole frame in the read buffer.
    pub(super) fn handle_frames(&mut self) -> Result<(), FrameError> {
        if !self.preface_seen {
            // Judged as it arrives: a client that sent something else hears so at once.
            let seen = self.read_buf.len().min(PREFACE.len());
            if self.read_buf[..seen] != PREFACE[..seen] {
                return Err(FrameError::Connection(
                    Reason::PROTOCOL_ERROR,
                    "no HTTP/2 preface",
                ));
            }
            if seen < PREFACE.len() {
                return Ok(());
            }
            let _ = self.read_buf.split_to(PREFACE.len());
            self.preface_seen = true;
        }
        let max_frame_size = self.config.max_frame_size as usize;
        while self.read_buf.len() >= HEAD_LEN && self.failed.is_none() {
            let head = Head::parse(self.read_buf[..HEAD_LEN].try_into().expect("9 bytes"));
            if head.len > max_frame_size {
                return Err(FrameError::Connection(
                    Reason::FRAME_SIZE_ERROR,
                    "a frame above our SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            if self.read_buf.len() < HEAD_LEN + head.len {
                // Room for the rest of the frame, so the next read completes it.
                self.read_buf
                    .reserve(HEAD_LEN + head.len - self.read_buf.len());
                return Ok(());
            }
            let _ = self.read_buf.split_to(HEAD_LEN);
            let payload = self.read_buf.split_to(head.len).freeze();
            if !self.settings_seen && head.kind != frame::kind::SETTINGS {
                return Err(FrameError::Connection(
                    Reason::PROTOCOL_ERROR,
                    "the first frame is not SETTINGS",
                ));
            }
            if let Some(continuation) = &self.continuation
                && (head.kind != frame::kind::CONTINUATION || head.stream != continuation.stream)
            {
                return Err(FrameError::Connection(
                    Reason::PROTOCOL_ERROR,
                    "a header block interrupted",
                ));
            }
            match frame::parse(head, payload) {
                Ok(frame) => self.handle(frame)?,
                Err(FrameError::Stream(stream, reason, why)) => self.reset(stream, reason, why),
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    pub(super) fn handle(&mut self, frame: Frame) -> Result<(), FrameError> {
        match frame {
            Frame::Settings(settings) => {
                self.settings_seen = true;
                self.apply_settings(settings)?;
                frame::put_settings_ack(&mut self.out.buf);
            }
            Frame::SettingsAck => {
                self.settings_acked = true;
            }
            Frame::Ping {
                ack: false,
                payload,
            } => {
                self.police_ping()?;
                frame::put_ping(&mut self.out.buf, true, payload);
            }
            Frame::Ping { ack: true, payload } => {
                if payload == SHUTDOWN_PING && self.drain == Drain::Announced {
                    self.final_goaway();
                } else if payload == KEEPALIVE_PING {
                    self.ping_outstanding = false;
                    let interval = match (self.config.keepalive, self.drain) {
                        (Some(keepalive), _) => keepalive.interval,
                        (None, _) => self.config.drain.probe.interval,
                    };
                    self.ping_timer.as_mut().reset(Instant::now() + interval);
                }
            }
            Frame::GoAway { .. } => {
                self.peer_goaway = true;
                self.stop_answered_streams();
            }
            Frame::WindowUpdate {
                stream: 0,
                increment,
            } => {
                self.send_window += increment as i64;
                if self.send_window > frame::MAX_WINDOW as i64 {
                    return Err(FrameError::Connection(
                        Reason::FLOW_CONTROL_ERROR,
                        "connection window above 2^31-1",
                    ));
                }
                self.flush_all_pending();
            }
            Frame::WindowUpdate { stream, increment } => {
                self.check_not_idle(stream, "WINDOW_UPDATE on an idle stream")?;
                if let Some(state) = self.streams.get_mut(&stream) {
                    state.send_window += increment as i64;
                    if state.send_window > frame::MAX_WINDOW as i64 {
                        self.reset(
                            stream,
                            Reason::FLOW_CONTROL_ERROR,
                            "stream window above 2^31-1",
                        );
                        return Ok(());
                    }
                    self.flush_pending(stream);
                    self.ready.push(stream);
                }
            }
            Frame::RstStream { stream, reason } => {
                self.check_not_idle(stream, "RST_STREAM on an idle stream")?;
                if let Some(state) = self.streams.remove(&stream) {
                    tracing::debug!(stream, ?reason, "the client reset a stream");
                    let answered = state.answered();
                    self.closed(stream, Closed::ByClient);
                    self.release_connection(unread_bytes(&state.recv));
                    if let Some(shared) = state.shared {
                        shared.end(RecvEnd::Reset(reason));
                    }
                    // A stream answered whole did its work: ending its side with a reset
                    // (as h2's client does) wastes nothing.
                    if !answered {
                        self.count_wasted_stream()?;
                    }
                }
            }
            Frame::Priority { .. } | Frame::Unknown => {}
            Frame::Data {
                stream,
                end_stream,
                data,
                flow_len,
            } => self.data(stream, end_stream, data, flow_len)?,
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                depends_on_itself,
                block,
            } => {
                if end_headers {
                    self.header_block(stream, end_stream, depends_on_itself, &block)?;
                } else {
                    let mut buffered = BytesMut::with_capacity(block.len() * 2);
                    buffered.extend_from_slice(&block);
                    self.continuation = Some(Continuation {
                        stream,
                        end_stream,
                        depends_on_itself,
                        block: buffered,
                    });
                }
            }
            Frame::Continuation {
                end_headers, block, ..
            } => {
                let continuation = self.continuation.as_mut().ok_or(FrameError::Connection(
                    Reason::PROTOCOL_ERROR,
                    "CONTINUATION without a header block to continue",
                ))?;
                // Four header lists: more than any block whose list fits, so an honest client
                // never gets here; a CONTINUATION flood does.
                if continuation.block.len() + block.len()
                    > 4 * self.config.max_header_list_size as usize
                {
                    return Err(FrameError::Connection(
                        Reason::ENHANCE_YOUR_CALM,
                        "a header block too large",
                    ));
                }
                continuation.block.extend_from_slice(&block);
                if end_headers {
                    let done = self.continuation.take().expect("checked above");
                    self.header_block(
                        done.stream,
                        done.end_stream,
                        done.depends_on_itself,
                        &done.block,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// A whole header block: a new request, or a request's trailers.
    pub(super) fn header_block(
        &mut self,
        id: u32,
        end_stream: bool,
        depends_on_itself: bool,
        block: &[u8],
    ) -> Result<(), FrameError> {
        let max_list = self.config.max_header_list_size as usize;
        let compression = |error: hpack::CompressionError| {
            FrameError::Connection(Reason::COMPRESSION_ERROR, error.0)
        };
        if let Some(stream) = self.streams.get_mut(&id) {
            // Trailers: they must end the stream (RFC 9113 §8.1).
            let mut trailers = Trailers::default();
            let decoded = self
                .decoder
                .decode(block, max_list, |name, value| trailers.field(name, value))
                .map_err(compression)?;
            if !stream.recv_open {
                self.reset(id, Reason::STREAM_CLOSED, "HEADERS after END_STREAM");
                return Ok(());
            }
            let trailers = match (end_stream, decoded, trailers.finish()) {
                (false, ..) => Err("trailers without END_STREAM"),
                (_, Decoded::TooLarge, _) => Err("trailers above the header list limit"),
                (_, _, result) => result,
            };
            match trailers {
                Ok(trailers) => {
                    stream.recv_open = false;
                    match &stream.recv {
                        Recv::Shared(shared) => shared.end(RecvEnd::Done(Some(trailers))),
                        // A call not started yet gets its trailers dropped: gRPC requests have none.
                        Recv::Before(_) | Recv::Dropped => {}
                    }
                    self.end_if_done(id);
                }
                Err(why) => self.reset(id, Reason::PROTOCOL_ERROR, why),
            }
            return Ok(());
        }
        if id.is_multiple_of(2) {
            return Err(FrameError::Connection(
                Reason::PROTOCOL_ERROR,
                "a client stream with an even id",
            ));
        }
        let mut head = RequestHead::reusing(&mut self.reused);
        let decoded = self
            .decoder
            .decode(block, max_list, |name, value| head.field(name, value))
            .map_err(compression)?;
        // A stream that closed already (we reset or answered it; its block was decoded for
        // HPACK's sake), one after the final GOAWAY (the client knows it was not processed),
        // one that depends on itself, or one past the limit the client was told: no head is
        // built, and what it would reuse is kept for the next request.
        let refused = if self.drain == Drain::Final || self.failed.is_some() {
            Some(None)
        } else if id <= self.last_stream {
            Some(Some(Reason::STREAM_CLOSED))
        } else if depends_on_itself {
            Some(Some(Reason::PROTOCOL_ERROR))
        } else if self.streams.len() >= self.config.max_concurrent_streams as usize {
            Some(Some(Reason::REFUSED_STREAM))
        } else {
            None
        };
        self.last_stream = self.last_stream.max(id);
        if let Some(reset) = refused {
            let opens_a_request = head.has_pseudo_fields();
            drop(head);
            return match reset {
                None => Ok(()),
                Some(Reason::STREAM_CLOSED) => match self.closed_how(id) {
                    Some(_) => self.on_closed_stream(id, "HEADERS on a closed stream"),
                    // A request reusing an id (§5.1.1); trailers late for a stream closed too
                    // long ago to be remembered cost only that stream.
                    None if opens_a_request => Err(FrameError::Connection(
                        Reason::PROTOCOL_ERROR,
                        "a new stream whose id is not above the last one",
                    )),
                    None => self.on_closed_stream(id, "trailers on a forgotten stream"),
                },
                Some(Reason::REFUSED_STREAM) => {
                    frame::put_rst_stream(&mut self.out.buf, id, Reason::REFUSED_STREAM);
                    self.closed(id, Closed::ByUs);
                    // Counted as a reset (rapid reset's budget).
                    self.count_wasted_stream()
                }
                Some(reason) => {
                    frame::put_rst_stream(&mut self.out.buf, id, reason);
                    self.closed(id, Closed::ByUs);
                    Ok(())
                }
            };
        }
        let mut stream = Stream {
            recv_open: !end_stream,
            recv: Recv::Before(Received::default()),
            recv_window: self.config.initial_stream_window_size as i64,
            recv_unreleased: 0,
            content_length: None,
            received: 0,
            send_window: self.peer_initial_window,
            head_sent: false,
            pending: VecDeque::new(),
            pending_end: None,
            sending: None,
            shared: None,
            head: None,
            stop_at: None,
        };
        if decoded == Decoded::TooLarge {
            // 431, as h2 answers (RFC 6585), and the stream ends here.
            drop(head);
            self.streams.insert(id, stream);
            self.answer_head(id, http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
            return Ok(());
        }
        match head.finish() {
            Ok((mut parts, content_length)) => {
                if end_stream && content_length.is_some_and(|length| length != 0) {
                    frame::put_rst_stream(&mut self.out.buf, id, Reason::PROTOCOL_ERROR);
                    self.closed(id, Closed::ByUs);
                    return Ok(());
                }
                stream.content_length = content_length;
                match self.calls.read(&mut parts) {
                    Ok(call) => {
                        stream.head = Some((parts, call));
                        self.streams.insert(id, stream);
                        self.queue.push_back(id);
                    }
                    Err(answer) => {
                        self.streams.insert(id, stream);
                        self.respond(id, answer, None);
                    }
                }
            }
            Err(why) => {
                tracing::debug!(stream = id, why, "malformed request");
                frame::put_rst_stream(&mut self.out.buf, id, Reason::PROTOCOL_ERROR);
                self.closed(id, Closed::ByUs);
            }
        }
        Ok(())
    }
}
