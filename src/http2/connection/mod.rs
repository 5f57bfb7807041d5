//! One HTTP/2 server connection, owned by its task: the read buffer, the write buffer, HPACK's
//! two tables, every stream and both directions of flow control.
//!
//! A poll reads what the socket has, handles every whole frame in the buffer (DATA is sliced
//! out of it, not copied), then starts the calls whose requests arrived, answering those that
//! are ready at once, and writes everything produced in the poll with one write. Calls that
//! wait finish in tasks and hand their responses back through the [`Outbox`]; reply bodies are
//! polled here, woken per stream, and their messages packed into as few DATA frames as the
//! windows and the frame size allow.
//!
//! Every buffer has a bound: the read buffer one frame (whose size we announce), a header
//! block four header lists, the write buffer [`WRITE_HIGH_WATER`] (beyond it nothing more is
//! read, so a client that does not read cannot make us queue answers to its pings or
//! requests), request data the windows we announce, reply data what the handler produced and
//! the client's window allows.
//!
//! Invariant: the connection's task owns all of it; calls' tasks and bodies reach it only
//! through the [`Outbox`] (and a stream's `Inbox`), which the poll drains first.
//!
//! This file holds the connection's state and its poll (the read/write loop); each concern has
//! a file of its own, each an `impl Connection` block: `frames` (reading frames), `streams` (the
//! stream table and states), `flow` (flow control and SETTINGS), `calls` (starting calls),
//! `send` (replies), `ping`, `drain` and `timers`.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

mod drain;
mod flow;
mod frames;
mod ping;
mod send;
mod start;
mod streams;
mod timers;
use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep};

use self::drain::Drain;
use self::frames::Continuation;
use self::ping::PingStrikes;
use self::streams::{Closed, ResetBudget, Stream, StreamIds};
use super::buffers;
use super::calls::{Calls, Reply};
use super::config::Config;
use super::frame::{self, FrameError, HEAD_LEN, Reason, Settings};
use super::hpack;
use super::mail::{Outbox, RecvEnd, Taken};
use super::output::Output;
use super::request::Reused;

/// The client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads per round before the calls that arrived are started.
const READS_PER_ROUND: usize = 8;

/// Past this much unwritten output, nothing more is read until some of it is written.
const WRITE_HIGH_WATER: usize = 256 * 1024;

/// How much of one streaming reply is sent in one round, so that one fast stream does not keep
/// the others (and the reading) waiting.
const BODY_ROUND_BYTES: usize = 64 * 1024;

/// How the connection ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The client closed it, or it was shut down and drained.
    Closed,
    /// A protocol error (we sent GOAWAY with this reason), an I/O error, or a dead peer.
    Error(String),
}

pub(crate) struct Connection<IO, C: Calls> {
    io: IO,
    config: Config,
    /// The layer above: where requests go and replies come from.
    calls: C,
    read_buf: BytesMut,
    /// What is to be written (`out.buf` takes the frames).
    out: Output,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    streams: HashMap<u32, Stream<C>, StreamIds>,
    /// The highest stream the client opened.
    last_stream: u32,
    /// The streams that closed last, and how (see [`Closed`]).
    closed: VecDeque<(u32, Closed)>,
    /// Calls to start, in the order their requests arrived.
    queue: VecDeque<u32>,
    continuation: Option<Continuation>,
    /// The client's settings that matter to us.
    peer_initial_window: i64,
    peer_max_frame_size: usize,
    /// Connection flow control: what we may send, what the client may send.
    send_window: i64,
    recv_window: i64,
    recv_unreleased: u32,
    /// Streams whose pending data waits for the connection window or the write buffer.
    blocked: bool,
    preface_seen: bool,
    settings_seen: bool,
    settings_acked: bool,
    drain: Drain,
    peer_goaway: bool,
    /// The error we send GOAWAY for; the connection closes once it is written.
    failed: Option<(Reason, &'static str)>,
    /// Set once a graceful end has begun shutting the socket down: nothing is read or written
    /// any more, and the connection ends when the shutdown does.
    closing: bool,
    outbox: Arc<Outbox<Reply<C>>>,
    taken: Taken<Reply<C>>,
    /// Timers: the next keepalive or drain ping (or its timeout), the shutdown PING's wait,
    /// the settings ack and the deadlines of reply streams.
    ping_timer: Pin<Box<Sleep>>,
    ping_outstanding: bool,
    ack_timer: Pin<Box<Sleep>>,
    deadline_timer: Pin<Box<Sleep>>,
    deadline_armed: bool,
    /// Streams whose reply bodies woke up, to poll this round.
    ready: Vec<u32>,
    resets: ResetBudget,
    pings: PingStrikes,
    /// Header blocks are encoded here before they are framed; kept between responses.
    block: Vec<u8>,
    /// Streams to flush when the connection window or the write buffer opens; kept.
    waiting: Vec<u32>,
    /// What a request head hands on to the next (see `RequestHead::reusing`).
    reused: Reused,
}

impl<IO, C: Calls> Drop for Connection<IO, C> {
    fn drop(&mut self) {
        self.outbox.close();
        for (_, stream) in self.streams.drain() {
            if let Some(shared) = stream.shared {
                shared.end(RecvEnd::Reset(Reason::CANCEL));
            }
        }
    }
}

impl<IO, C> Connection<IO, C>
where
    IO: AsyncRead + AsyncWrite + Unpin,
    C: Calls,
{
    pub(crate) fn new(
        io: IO,
        config: Config,
        calls: C,
        handshake_deadline: Instant,
    ) -> Connection<IO, C> {
        let mut write_buf = BytesMut::with_capacity(buffers::INITIAL);
        Settings {
            header_table_size: None,
            enable_push: Some(false),
            max_concurrent_streams: Some(config.max_concurrent_streams),
            initial_window_size: Some(config.initial_stream_window_size),
            max_frame_size: Some(config.max_frame_size),
            max_header_list_size: Some(config.max_header_list_size),
        }
        .put(&mut write_buf);
        let connection_window = config.initial_connection_window_size.max(65_535);
        if connection_window > 65_535 {
            frame::put_window_update(&mut write_buf, 0, connection_window - 65_535);
        }
        let now = Instant::now();
        Connection {
            io,
            read_buf: BytesMut::with_capacity(buffers::INITIAL),
            out: Output::new(write_buf),
            decoder: hpack::Decoder::new(hpack::DEFAULT_TABLE_SIZE),
            encoder: hpack::Encoder::default(),
            streams: HashMap::default(),
            last_stream: 0,
            closed: VecDeque::new(),
            queue: VecDeque::new(),
            continuation: None,
            peer_initial_window: 65_535,
            peer_max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE as usize,
            send_window: 65_535,
            recv_window: connection_window as i64,
            recv_unreleased: 0,
            blocked: false,
            preface_seen: false,
            settings_seen: false,
            settings_acked: false,
            drain: Drain::Open,
            peer_goaway: false,
            failed: None,
            closing: false,
            outbox: Arc::new(Outbox::default()),
            taken: Taken::default(),
            ping_timer: Box::pin(tokio::time::sleep_until(
                now + config
                    .keepalive
                    .map_or(Duration::from_secs(86_400 * 365), |k| k.interval),
            )),
            ping_outstanding: false,
            // The client's preface and SETTINGS, and its ack of ours, are due by then.
            ack_timer: Box::pin(tokio::time::sleep_until(handshake_deadline)),
            deadline_timer: Box::pin(tokio::time::sleep_until(now)),
            deadline_armed: false,
            ready: Vec::new(),
            resets: ResetBudget::new(config.max_concurrent_streams),
            pings: PingStrikes {
                last: None,
                strikes: 0,
                reset: false,
            },
            block: Vec::with_capacity(256),
            waiting: Vec::new(),
            reused: Reused::default(),
            config,
            calls,
        }
    }

    /// Whether the client has sent its preface and SETTINGS.
    pub(crate) fn handshake_done(&self) -> bool {
        self.settings_seen
    }

    /// Serves until the connection ends.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Ended> {
        let budget = self.config.inline_budget;
        let mut serving_since = None;
        // Buffers given back while the connection was idle.
        if self.read_buf.capacity() == 0 {
            self.read_buf = buffers::take();
        }
        if self.out.buf.capacity() == 0 {
            self.out.buf = buffers::take();
        }
        if self.closing {
            return self.poll_shutdown(cx);
        }
        for _ in 0..16 {
            self.outbox.register(cx.waker());
            self.take_outbox(cx);
            if let Some(ended) = self.poll_timers(cx) {
                return Poll::Ready(ended);
            }
            // Everything the socket has, before any call starts: a request whose DATA came in
            // another segment than its HEADERS is then still answered inline, whole.
            let mut drained = true;
            // Whether this round left the socket unread because the write buffer was full: the
            // read side's readiness may have been taken already, so nothing would wake us for
            // it; the round after the buffer drains must read.
            let mut read_skipped = false;
            for _ in 0..READS_PER_ROUND {
                if self.failed.is_some() {
                    break;
                }
                if self.out.len() >= WRITE_HIGH_WATER {
                    read_skipped = true;
                    break;
                }
                match self.poll_read(cx) {
                    Poll::Ready(Err(ended)) => return Poll::Ready(ended),
                    Poll::Ready(Ok(_)) => drained = false,
                    Poll::Pending => {
                        drained = true;
                        break;
                    }
                }
                if let Err(error) = self.handle_frames() {
                    self.fail(error);
                }
            }
            let spent = self.start_calls(cx, &mut serving_since, budget);
            self.send_bodies(cx);
            if self.blocked {
                self.flush_all_pending();
            }
            if let Poll::Ready(Err(error)) = self.poll_write(cx) {
                return Poll::Ready(Ended::Error(error));
            }
            if let Some(ended) = self.poll_close(cx) {
                return Poll::Ready(ended);
            }
            if spent {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            // Go round again only if the socket may have more, or work is left. A write still
            // pending has registered the waker; one that emptied the buffer lets us read.
            let may_read = read_skipped && self.out.len() < WRITE_HIGH_WATER;
            if drained && !may_read && self.queue.is_empty() && self.ready.is_empty() {
                if self.read_buf.is_empty() && self.out.is_empty() {
                    // Nothing half-read or unwritten: an idle connection holds no buffer.
                    buffers::give_back(std::mem::take(&mut self.read_buf));
                    buffers::give_back(std::mem::take(&mut self.out.buf));
                }
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Closes once a failure's GOAWAY or the final GOAWAY has been written and nothing is left:
    /// at once after a failure; after a graceful end, once the socket's shutdown is done (it
    /// lingers for the peer to close, `transport::linger`), reading nothing more meanwhile.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Option<Ended> {
        let done = match self.failed {
            Some(_) => true,
            None => (self.drain == Drain::Final || self.peer_goaway) && self.streams.is_empty(),
        };
        if !done || !self.out.is_empty() {
            return None;
        }
        if let Some((reason, why)) = self.failed {
            let _ = Pin::new(&mut self.io).poll_shutdown(cx);
            return Some(Ended::Error(format!("{why} ({reason:?})")));
        }
        self.closing = true;
        match self.poll_shutdown(cx) {
            Poll::Ready(ended) => Some(ended),
            Poll::Pending => None,
        }
    }

    /// Shuts the socket down after a graceful end; the connection has ended once it is done.
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> Poll<Ended> {
        Pin::new(&mut self.io)
            .poll_shutdown(cx)
            .map(|_| Ended::Closed)
    }

    /// A connection error: GOAWAY with its reason; everything else stops.
    fn fail(&mut self, error: FrameError) {
        let (reason, why) = match error {
            FrameError::Connection(reason, why) => (reason, why),
            FrameError::Stream(stream, reason, why) => return self.reset(stream, reason, why),
        };
        if self.failed.is_some() {
            return;
        }
        tracing::debug!(why, ?reason, "HTTP/2 connection error");
        frame::put_goaway(&mut self.out.buf, self.last_stream, reason, why.as_bytes());
        self.failed = Some((reason, why));
        // Bounded: a peer that does not read may never take the GOAWAY.
        self.ack_timer
            .as_mut()
            .reset(Instant::now() + self.config.drain.final_goaway_wait);
        self.queue.clear();
        for (_, stream) in self.streams.drain() {
            if let Some(shared) = stream.shared {
                shared.end(RecvEnd::Reset(reason));
            }
        }
    }

    /// Reads what the socket has; `Ok(true)` if it read anything.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool, Ended>> {
        let frame_limit = HEAD_LEN + self.config.max_frame_size as usize;
        if self.read_buf.capacity() - self.read_buf.len() < 4096 {
            self.read_buf.reserve(frame_limit.max(16 * 1024));
        }
        match tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read_buf) {
            Poll::Ready(Ok(0)) => Poll::Ready(Err(Ended::Closed)),
            Poll::Ready(Ok(_)) => Poll::Ready(Ok(true)),
            Poll::Ready(Err(error)) => Poll::Ready(Err(Ended::Error(error.to_string()))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Writes the output; streams that waited for room in it go on as it empties.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), String>> {
        loop {
            let wrote_any = !self.out.is_empty();
            if let Err(error) = std::task::ready!(self.out.poll_write(&mut self.io, cx)) {
                return Poll::Ready(Err(error.to_string()));
            }
            if wrote_any {
                // TLS streams hold written bytes until flushed.
                if let Poll::Ready(Err(error)) = Pin::new(&mut self.io).poll_flush(cx) {
                    return Poll::Ready(Err(error.to_string()));
                }
            }
            if !self.blocked {
                return Poll::Ready(Ok(()));
            }
            self.flush_all_pending();
            if self.out.is_empty() {
                return Poll::Ready(Ok(()));
            }
        }
    }
}
