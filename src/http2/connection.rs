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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep};

use super::buffers;
use super::frame::{self, Frame, FrameError, HEAD_LEN, Head, Reason, Settings};
use super::hpack::{self, Decoded};
use super::output::Output;
use super::request::{RequestHead, Reused, Trailers};
use super::response;
use super::shared::{Finished, Outbox, RecvEnd, StreamShared, StreamWaker, Taken};
use crate::body::{Outgoing, RequestBody, ResponseBody};
use crate::deadline::{self, Deadline};
use crate::handler::{Panic, ResponseFuture, clock, panic_status};
use crate::server::Shared;
use crate::status;
use crate::transport::config::{DRAIN_PROBE, FINAL_GOAWAY_WAIT, SHUTDOWN_PING_WAIT};
use crate::transport::{Activity, ConnectInfo, Started, finish_call, start_call};

/// The client connection preface (RFC 9113 §3.4).
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads per round before the calls that arrived are started.
const READS_PER_ROUND: usize = 8;

/// Past this much unwritten output, nothing more is read until some of it is written.
const WRITE_HIGH_WATER: usize = 256 * 1024;

/// How much of one streaming reply is sent in one round, so that one fast stream does not keep
/// the others (and the reading) waiting.
const BODY_ROUND_BYTES: usize = 64 * 1024;

/// The payloads of our two kinds of PING.
const SHUTDOWN_PING: [u8; 8] = *b"fgshutdn";
const KEEPALIVE_PING: [u8; 8] = *b"fgkeepal";

/// How the connection ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The client closed it, or it was shut down and drained.
    Closed,
    /// A protocol error (we sent GOAWAY with this reason), an I/O error, or a dead peer.
    Error(String),
}

/// Request data received before the call started: nearly always one chunk, kept without a
/// vector.
#[derive(Default)]
struct Received {
    first: Option<Bytes>,
    more: Vec<Bytes>,
}

impl Received {
    fn push(&mut self, data: Bytes) {
        match self.first {
            None => self.first = Some(data),
            Some(_) => self.more.push(data),
        }
    }

    fn len(&self) -> usize {
        self.first.iter().chain(&self.more).map(Bytes::len).sum()
    }

    fn into_chunks(self) -> impl Iterator<Item = Bytes> {
        self.first.into_iter().chain(self.more)
    }

    /// The whole body as one `Bytes`: the only chunk itself when there is one.
    fn join(self) -> Bytes {
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

/// Where a stream's request body goes.
enum Recv {
    /// The call has not started: data is kept here, and given whole if the request ends first.
    Before(Received),
    /// The call is reading it.
    Shared(Arc<StreamShared>),
    /// Nobody reads it any more (the call ended first): data is dropped and credited back.
    Dropped,
}

/// A reply body being sent.
struct Sending {
    body: ResponseBody,
    waker: Waker,
    deadline: Option<Deadline>,
}

/// Hashes stream ids for the map of open streams: one multiplication, where the standard
/// hasher (SipHash) cost a tenth of a call's instructions for the map's few lookups per call.
/// A client picks its ids, so it could make them collide; but the map holds at most the
/// streams the client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS), which bounds
/// what colliding ids can cost a lookup.
#[derive(Clone, Copy, Default)]
struct StreamIds;

impl std::hash::BuildHasher for StreamIds {
    type Hasher = StreamIdHasher;
    fn build_hasher(&self) -> StreamIdHasher {
        StreamIdHasher(0)
    }
}

#[derive(Default)]
struct StreamIdHasher(u64);

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
enum Closed {
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
/// stream's reset. HEADERS on such a stream is a connection error PROTOCOL_ERROR: to the
/// client, it opens a stream whose id is not new (§5.1.1).
const CLOSED_REMEMBERED: usize = 128;

/// A stream the client opened and has not reset, and whose either side is still open: open,
/// half-closed (remote) once the client ends its side, half-closed (local) once our reply has
/// ended ([`Stream::answered`]) while the client is still sending.
struct Stream {
    /// The client has not ended its side yet.
    recv_open: bool,
    recv: Recv,
    /// What the client may still send on this stream (our window).
    recv_window: i64,
    /// Received and read, not yet given back with WINDOW_UPDATE.
    recv_unreleased: u32,
    content_length: Option<u64>,
    received: u64,
    /// What we may send on this stream (the client's window).
    send_window: i64,
    /// Whether the response head has been sent.
    head_sent: bool,
    /// Reply data waiting for window, then how the stream ends.
    pending: VecDeque<Bytes>,
    pending_end: Option<End>,
    sending: Option<Sending>,
    /// Set for calls running in tasks, and request bodies read while they arrive.
    shared: Option<Arc<StreamShared>>,
    /// The request head, until its call starts.
    head: Option<http::request::Parts>,
    /// From `grpc-timeout` and the server's default, counted from when the headers arrived.
    deadline: Option<Deadline>,
}

impl Stream {
    /// Whether the reply has been sent whole, END_STREAM included.
    fn answered(&self) -> bool {
        self.head_sent
            && self.sending.is_none()
            && self.pending.is_empty()
            && self.pending_end.is_none()
    }
}

/// How a reply ends once its data is sent.
enum End {
    Trailers(HeaderMap),
    /// An empty DATA frame with END_STREAM.
    Data,
}

/// A header block arriving in CONTINUATION frames.
struct Continuation {
    stream: u32,
    end_stream: bool,
    depends_on_itself: bool,
    block: BytesMut,
}

/// The drain, once it has begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Drain {
    Open,
    /// The first GOAWAY (2^31-1) and the shutdown PING went out at `since`.
    Announced,
    /// The final GOAWAY went out: no new stream; close once the last ends.
    Final,
}

pub(crate) struct Connection<IO> {
    io: IO,
    shared: Arc<Shared>,
    activity: Arc<Activity>,
    connect_info: Option<ConnectInfo>,
    read_buf: BytesMut,
    /// What is to be written (`out.buf` takes the frames).
    out: Output,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    streams: HashMap<u32, Stream, StreamIds>,
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
    outbox: Arc<Outbox>,
    taken: Taken,
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

/// The client's pings against the server's policy (`transport::config::PingPolicy`).
struct PingStrikes {
    last: Option<Instant>,
    strikes: u8,
    /// We sent HEADERS or DATA since the last ping: the next one is fine.
    reset: bool,
}

/// Strikes allowed before `too_many_pings` (gRFC A8; grpc-go's `maxPingStrikes`).
const MAX_PING_STRIKES: u8 = 2;

/// Without calls, and without `permit_without_calls`, a client may still ping this often
/// (grpc-go's `defaultPingTimeout`).
const IDLE_PING_INTERVAL: Duration = Duration::from_secs(2 * 60 * 60);

/// How many streams the client may waste, resetting them before their replies end, making us
/// reset them, or opening them past the concurrency limit (CVE-2023-44487, rapid reset, and
/// CVE-2025-8671): a bucket of
/// `max_concurrent_streams`, refilled at as many per second. An honest client cancels far
/// fewer; one that opens and resets streams in a loop empties it within a second and gets
/// GOAWAY `ENHANCE_YOUR_CALM`. A reset stream costs us little (its call is dropped, or never
/// started), so the bucket only bounds the churn.
struct ResetBudget {
    tokens: f64,
    capacity: f64,
    last: Instant,
}

impl ResetBudget {
    fn new(capacity: u32) -> ResetBudget {
        ResetBudget {
            tokens: capacity as f64,
            capacity: capacity.max(1) as f64,
            last: Instant::now(),
        }
    }

    /// Takes one token; `false` when there is none left.
    fn take(&mut self) -> bool {
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

impl<IO> Connection<IO>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    pub(crate) fn new(
        io: IO,
        shared: Arc<Shared>,
        activity: Arc<Activity>,
        connect_info: Option<ConnectInfo>,
        handshake_deadline: Instant,
    ) -> Connection<IO> {
        let config = &shared.connection;
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
            shared,
            activity,
            connect_info,
        }
    }

    /// Whether the client has sent its preface and SETTINGS.
    pub(crate) fn handshake_done(&self) -> bool {
        self.settings_seen
    }

    /// Starts a graceful shutdown: GOAWAY with 2^31-1 and a PING; the final GOAWAY follows its
    /// ack (or [`SHUTDOWN_PING_WAIT`]), and the connection closes once its streams end.
    pub(crate) fn graceful_shutdown(&mut self) {
        if self.drain != Drain::Open {
            return;
        }
        frame::put_goaway(
            &mut self.out.buf,
            frame::MAX_STREAM_ID,
            Reason::NO_ERROR,
            b"",
        );
        frame::put_ping(&mut self.out.buf, false, SHUTDOWN_PING);
        self.drain = Drain::Announced;
        let now = Instant::now();
        self.ack_timer.as_mut().reset(now + SHUTDOWN_PING_WAIT);
        if self.shared.connection.keepalive.is_none() {
            // The drain's own liveness checks start once the shutdown PING's wait is over.
            self.ping_outstanding = false;
            self.ping_timer.as_mut().reset(now + SHUTDOWN_PING_WAIT);
        }
    }

    /// Sends the final GOAWAY now; the connection closes once no stream is left.
    fn final_goaway(&mut self) {
        if self.drain == Drain::Final {
            return;
        }
        frame::put_goaway(&mut self.out.buf, self.last_stream, Reason::NO_ERROR, b"");
        self.drain = Drain::Final;
        self.stop_answered_streams();
        self.ack_timer
            .as_mut()
            .reset(Instant::now() + FINAL_GOAWAY_WAIT);
    }

    /// Serves until the connection ends.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Ended> {
        let budget = self.shared.connection.inline_budget;
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
            .reset(Instant::now() + FINAL_GOAWAY_WAIT);
        self.queue.clear();
        for (_, stream) in self.streams.drain() {
            if let Some(shared) = stream.shared {
                shared.end(RecvEnd::Reset(reason));
            }
        }
    }

    /// Reads what the socket has; `Ok(true)` if it read anything.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool, Ended>> {
        let frame_limit = HEAD_LEN + self.shared.connection.max_frame_size as usize;
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

    /// Handles every whole frame in the read buffer.
    fn handle_frames(&mut self) -> Result<(), FrameError> {
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
        let max_frame_size = self.shared.connection.max_frame_size as usize;
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

    fn handle(&mut self, frame: Frame) -> Result<(), FrameError> {
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
                    let interval = match (self.shared.connection.keepalive, self.drain) {
                        (Some(keepalive), _) => keepalive.interval,
                        (None, _) => DRAIN_PROBE.interval,
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
                    > 4 * self.shared.connection.max_header_list_size as usize
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

    /// Counts a client's ping against the policy; too many too soon end the connection.
    fn police_ping(&mut self) -> Result<(), FrameError> {
        let policy = self.shared.connection.ping_policy;
        let now = Instant::now();
        let last = self.pings.last.replace(now);
        if std::mem::take(&mut self.pings.reset) {
            self.pings.strikes = 0;
            return Ok(());
        }
        let allowed = if self.streams.is_empty() && !policy.permit_without_calls {
            IDLE_PING_INTERVAL
        } else {
            policy.min_interval
        };
        if last.is_some_and(|last| now.duration_since(last) < allowed) {
            self.pings.strikes += 1;
        }
        if self.pings.strikes > MAX_PING_STRIKES {
            return Err(FrameError::Connection(
                Reason::ENHANCE_YOUR_CALM,
                "too_many_pings",
            ));
        }
        Ok(())
    }

    /// A stream the client opened that did no work: it reset it before its reply ended, or
    /// opened it past the concurrency limit.
    fn count_wasted_stream(&mut self) -> Result<(), FrameError> {
        if self.resets.take() {
            Ok(())
        } else {
            Err(FrameError::Connection(
                Reason::ENHANCE_YOUR_CALM,
                "too many streams reset or refused",
            ))
        }
    }

    fn check_not_idle(&self, stream: u32, why: &'static str) -> Result<(), FrameError> {
        // Even ids are the server's, and it opens none: they stay idle (§5.1.1).
        if stream > self.last_stream || stream.is_multiple_of(2) {
            return Err(FrameError::Connection(Reason::PROTOCOL_ERROR, why));
        }
        Ok(())
    }

    fn apply_settings(&mut self, settings: Settings) -> Result<(), FrameError> {
        if let Some(size) = settings.header_table_size {
            self.encoder.set_peer_table_size(size as usize);
        }
        if let Some(size) = settings.max_frame_size {
            self.peer_max_frame_size = size as usize;
        }
        if let Some(window) = settings.initial_window_size {
            let delta = window as i64 - self.peer_initial_window;
            self.peer_initial_window = window as i64;
            for stream in self.streams.values_mut() {
                stream.send_window += delta;
                if stream.send_window > frame::MAX_WINDOW as i64 {
                    return Err(FrameError::Connection(
                        Reason::FLOW_CONTROL_ERROR,
                        "a stream window above 2^31-1",
                    ));
                }
            }
            if delta > 0 {
                self.flush_all_pending();
                self.ready.extend(self.streams.keys());
            }
        }
        Ok(())
    }

    /// Remembers how `stream` closed (the oldest such memory goes when there are too many).
    fn closed(&mut self, stream: u32, how: Closed) {
        if self.closed.len() == CLOSED_REMEMBERED {
            self.closed.pop_front();
        }
        self.closed.push_back((stream, how));
    }

    /// How `stream` closed, if it is remembered.
    fn closed_how(&self, stream: u32) -> Option<Closed> {
        self.closed
            .iter()
            .rev()
            .find(|(id, _)| *id == stream)
            .map(|(_, how)| *how)
    }

    /// DATA or HEADERS on a stream below the client's last that is not open (§5.1, "closed"):
    /// ignored if we reset it, a connection error if both sides had ended it, else a stream
    /// error; all of type STREAM_CLOSED.
    fn on_closed_stream(&mut self, stream: u32, why: &'static str) -> Result<(), FrameError> {
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

    /// Ends a stream whose reply is sent while the client is still sending, with RST_STREAM
    /// NO_ERROR: what it sends is not needed (RFC 9113 §8.1). Not a wasted stream.
    fn stop_sending(&mut self, id: u32) {
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
    fn stop_answered_streams(&mut self) {
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
    fn end_if_done(&mut self, id: u32) {
        if self
            .streams
            .get(&id)
            .is_some_and(|stream| !stream.recv_open && stream.answered())
        {
            self.streams.remove(&id);
            self.closed(id, Closed::Ended);
        }
    }

    /// Ends one stream with RST_STREAM; the connection goes on.
    fn reset(&mut self, stream: u32, reason: Reason, why: &'static str) {
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

    fn data(
        &mut self,
        id: u32,
        end_stream: bool,
        data: Bytes,
        flow_len: usize,
    ) -> Result<(), FrameError> {
        self.check_not_idle(id, "DATA on an idle stream")?;
        if flow_len as i64 > self.recv_window {
            return Err(FrameError::Connection(
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.recv_window -= flow_len as i64;
        let Some(stream) = self.streams.get_mut(&id) else {
            // A stream already closed: the data is dropped, its window given back.
            self.release_connection(flow_len);
            return self.on_closed_stream(id, "DATA on a closed stream");
        };
        if !stream.recv_open {
            self.release_connection(flow_len);
            self.reset(id, Reason::STREAM_CLOSED, "DATA after END_STREAM");
            return Ok(());
        }
        if flow_len as i64 > stream.recv_window {
            self.release_connection(flow_len);
            self.reset(
                id,
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the stream window",
            );
            return Ok(());
        }
        stream.recv_window -= flow_len as i64;
        stream.received += data.len() as u64;
        if stream.content_length.is_some_and(|length| {
            stream.received > length || (end_stream && stream.received != length)
        }) {
            self.release_connection(flow_len);
            self.reset(
                id,
                Reason::PROTOCOL_ERROR,
                "DATA disagrees with content-length",
            );
            return Ok(());
        }
        // Padding is never read: credit it back at once.
        let padding = flow_len - data.len();
        let mut release = padding;
        match &mut stream.recv {
            Recv::Before(received) => {
                if !data.is_empty() {
                    received.push(data);
                }
            }
            Recv::Shared(shared) => {
                if !data.is_empty() {
                    shared.push(data);
                }
            }
            Recv::Dropped => release += data.len(),
        }
        if end_stream {
            stream.recv_open = false;
            if let Recv::Shared(shared) = &stream.recv {
                shared.end(RecvEnd::Done(None));
            }
        }
        let done = !stream.recv_open && stream.answered();
        if release > 0 {
            self.release(id, release);
        }
        if done {
            self.streams.remove(&id);
            self.closed(id, Closed::Ended);
        }
        Ok(())
    }

    /// Gives `bytes` of window back on `id` and the connection, sending WINDOW_UPDATEs once
    /// half a window has come back (coalesced: a few per window, not one per frame). A stream
    /// whose reply was sent gets no more window: at that point it is told to stop instead.
    fn release(&mut self, id: u32, bytes: usize) {
        let half_stream = self.shared.connection.initial_stream_window_size / 2;
        let mut unwanted = false;
        if let Some(stream) = self.streams.get_mut(&id)
            && stream.recv_open
        {
            stream.recv_unreleased += bytes as u32;
            if stream.recv_unreleased >= half_stream.max(1) {
                if stream.answered() {
                    unwanted = true;
                } else {
                    frame::put_window_update(&mut self.out.buf, id, stream.recv_unreleased);
                    stream.recv_window += stream.recv_unreleased as i64;
                    stream.recv_unreleased = 0;
                }
            }
        }
        self.release_connection(bytes);
        if unwanted {
            self.stop_sending(id);
        }
    }

    fn release_connection(&mut self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.recv_unreleased += bytes as u32;
        let half = self
            .shared
            .connection
            .initial_connection_window_size
            .max(65_535)
            / 2;
        if self.recv_unreleased >= half {
            frame::put_window_update(&mut self.out.buf, 0, self.recv_unreleased);
            self.recv_window += self.recv_unreleased as i64;
            self.recv_unreleased = 0;
        }
    }

    /// A whole header block: a new request, or a request's trailers.
    fn header_block(
        &mut self,
        id: u32,
        end_stream: bool,
        depends_on_itself: bool,
        block: &[u8],
    ) -> Result<(), FrameError> {
        let max_list = self.shared.connection.max_header_list_size as usize;
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
        } else if self.streams.len() >= self.shared.connection.max_concurrent_streams as usize {
            Some(Some(Reason::REFUSED_STREAM))
        } else {
            None
        };
        self.last_stream = self.last_stream.max(id);
        if let Some(reset) = refused {
            drop(head);
            return match reset {
                None => Ok(()),
                Some(Reason::STREAM_CLOSED) => match self.closed_how(id) {
                    Some(_) => self.on_closed_stream(id, "HEADERS on a closed stream"),
                    None => Err(FrameError::Connection(
                        Reason::PROTOCOL_ERROR,
                        "a new stream whose id is not above the last one",
                    )),
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
            recv_window: self.shared.connection.initial_stream_window_size as i64,
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
            deadline: None,
        };
        if decoded == Decoded::TooLarge {
            // 431, as h2 answers (RFC 6585), and the stream ends here.
            drop(head);
            self.streams.insert(id, stream);
            self.respond(id, too_large_response(), None);
            return Ok(());
        }
        match head.finish() {
            Ok((parts, content_length)) => {
                if end_stream && content_length.is_some_and(|length| length != 0) {
                    frame::put_rst_stream(&mut self.out.buf, id, Reason::PROTOCOL_ERROR);
                    self.closed(id, Closed::ByUs);
                    return Ok(());
                }
                stream.content_length = content_length;
                let mut request = http::Request::from_parts(parts, ());
                let deadline = deadline::call_deadline(&mut request, self.shared.default_timeout);
                stream.head = Some(request.into_parts().0);
                self.streams.insert(id, stream);
                match deadline {
                    Ok(deadline) => {
                        self.streams.get_mut(&id).expect("inserted").deadline = deadline;
                        self.queue.push_back(id);
                    }
                    Err(status) => self.respond(id, crate::response::status(&status), None),
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

/// Bytes of a request body that were received and never read.
fn unread_bytes(recv: &Recv) -> usize {
    match recv {
        Recv::Before(received) => received.len(),
        Recv::Shared(_) | Recv::Dropped => 0,
    }
}

fn too_large_response() -> http::Response<ResponseBody> {
    let mut response = http::Response::new(ResponseBody::empty());
    *response.status_mut() = http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
    response
}

impl<IO> Connection<IO>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    /// Takes what the calls' tasks and bodies sent: finished responses, woken bodies, and
    /// request data read (window to give back).
    fn take_outbox(&mut self, _cx: &mut Context<'_>) {
        let mut taken = std::mem::take(&mut self.taken);
        self.outbox.take(&mut taken);
        for (id, bytes) in taken.consumed.drain(..) {
            self.release(id, bytes);
        }
        self.ready.append(&mut taken.ready);
        for finished in taken.finished.drain(..) {
            let Finished {
                stream,
                response,
                deadline,
            } = finished;
            self.respond(stream, response, deadline);
        }
        self.taken = taken;
    }

    /// Keepalive and drain pings, the shutdown PING's wait, the settings ack, and the deadlines
    /// of reply streams; `Some` when the connection must end.
    fn poll_timers(&mut self, cx: &mut Context<'_>) -> Option<Ended> {
        if self.ack_timer.as_mut().poll(cx).is_ready() {
            if let Some((reason, why)) = self.failed {
                return Some(Ended::Error(format!(
                    "{why} ({reason:?}); its GOAWAY was not taken"
                )));
            }
            match self.drain {
                Drain::Open if !self.settings_seen => {
                    return Some(Ended::Error(
                        "no HTTP/2 preface and SETTINGS in time".into(),
                    ));
                }
                Drain::Open if !self.settings_acked => {
                    self.fail(FrameError::Connection(
                        Reason::SETTINGS_TIMEOUT,
                        "our SETTINGS were not acknowledged",
                    ));
                }
                Drain::Announced => {
                    tracing::debug!("shutdown PING unanswered: sending the final GOAWAY");
                    self.final_goaway();
                    return None;
                }
                Drain::Final if self.streams.is_empty() => {
                    // A peer that does not read can keep the socket's buffer full.
                    return Some(Ended::Error("the final GOAWAY could not be written".into()));
                }
                _ => {}
            }
            self.ack_timer
                .as_mut()
                .reset(Instant::now() + Duration::from_secs(86_400 * 365));
        }
        let probe = match (self.shared.connection.keepalive, self.drain) {
            (Some(keepalive), _) => Some((keepalive.interval, keepalive.timeout)),
            (None, Drain::Open) => None,
            (None, _) => Some((DRAIN_PROBE.interval, DRAIN_PROBE.timeout)),
        };
        if let Some((_, timeout)) = probe
            && self.ping_timer.as_mut().poll(cx).is_ready()
        {
            if self.ping_outstanding {
                return Some(Ended::Error("a ping went unanswered".into()));
            }
            frame::put_ping(&mut self.out.buf, false, KEEPALIVE_PING);
            self.ping_outstanding = true;
            self.ping_timer.as_mut().reset(Instant::now() + timeout);
            // Registers the timer again.
            let _ = self.ping_timer.as_mut().poll(cx);
        }
        if self.deadline_armed && self.deadline_timer.as_mut().poll(cx).is_ready() {
            self.deadline_armed = false;
            let now = Instant::now();
            let mut next: Option<Instant> = None;
            for stream in self.streams.values_mut() {
                let Some(deadline) = stream.sending.as_ref().and_then(|sending| sending.deadline)
                else {
                    continue;
                };
                if deadline.instant() <= now {
                    stream.sending = None;
                    stream.pending_end = Some(End::Trailers(status::trailers(
                        &deadline::exceeded(),
                        HeaderMap::new(),
                    )));
                } else {
                    next =
                        Some(next.map_or(deadline.instant(), |next| next.min(deadline.instant())));
                }
            }
            if let Some(next) = next {
                self.arm_deadline(next);
            }
            self.flush_all_pending();
        }
        None
    }

    fn arm_deadline(&mut self, at: Instant) {
        if !self.deadline_armed || at < self.deadline_timer.deadline() {
            self.deadline_timer.as_mut().reset(at);
            self.deadline_armed = true;
        }
    }

    /// Starts the queued calls, inline while the budget lasts; `true` if it ran out (the rest
    /// wait for the next poll, which the caller asks for at once).
    fn start_calls(
        &mut self,
        cx: &mut Context<'_>,
        serving_since: &mut Option<std::time::Instant>,
        budget: Duration,
    ) -> bool {
        if self.queue.is_empty() {
            return false;
        }
        if self.shared.connection.max_connection_idle.is_some() {
            self.activity.touch();
        }
        let mut now = std::time::Instant::now();
        let spent_at = *serving_since.get_or_insert_with(|| now + budget);
        while let Some(id) = self.queue.pop_front() {
            clock::open_call(now);
            self.start_call(id, cx);
            now = clock::close_call();
            if now >= spent_at {
                return true;
            }
        }
        false
    }

    fn start_call(&mut self, id: u32, _cx: &mut Context<'_>) {
        let Some(stream) = self.streams.get_mut(&id) else {
            // Reset by the client before its call started.
            return;
        };
        let Some(parts) = stream.head.take() else {
            return;
        };
        let chunks = match std::mem::replace(&mut stream.recv, Recv::Dropped) {
            Recv::Before(chunks) => chunks,
            other => {
                stream.recv = other;
                Received::default()
            }
        };
        let received = chunks.len();
        let body = if stream.recv_open {
            let shared = StreamShared::new(id, Arc::clone(&self.outbox));
            for chunk in chunks.into_chunks() {
                shared.push(chunk);
            }
            stream.recv = Recv::Shared(Arc::clone(&shared));
            stream.shared = Some(Arc::clone(&shared));
            RequestBody::engine(shared)
        } else {
            RequestBody::complete(chunks.join())
        };
        let deadline = stream.deadline;
        if !stream.recv_open {
            // The handler owns the whole body now: its window goes back at once.
            self.release_connection(received);
        }
        let request = http::Request::from_parts(parts, body);
        match start_call(&self.shared, self.connect_info.as_ref(), request, deadline) {
            Started::Ready(response, deadline) => self.respond(id, response, deadline),
            Started::Pending(pending) => {
                let stream = self.streams.get_mut(&id).expect("present above");
                let shared = Arc::clone(
                    stream
                        .shared
                        .get_or_insert_with(|| StreamShared::new(id, Arc::clone(&self.outbox))),
                );
                let outbox = Arc::clone(&self.outbox);
                self.activity
                    .spawn(finish_pending(pending, id, shared, outbox, deadline));
            }
        }
    }

    /// Sends a response: the head at once, the body as windows allow.
    fn respond(
        &mut self,
        id: u32,
        response: http::Response<ResponseBody>,
        deadline: Option<Deadline>,
    ) {
        let max_frame = self.peer_max_frame_size;
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        let (parts, body) = response.into_parts();
        let outgoing = body.into_outgoing();
        let trailers_only = matches!(
            &outgoing,
            Outgoing::Whole {
                message: None,
                trailers: None
            }
        );
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        response::encode_head(&mut self.encoder, parts.status, parts.headers, &mut block);
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
                    outbox: Arc::clone(&self.outbox),
                }));
                stream.sending = Some(Sending {
                    body,
                    waker,
                    deadline,
                });
                if let Some(deadline) = deadline {
                    self.arm_deadline(deadline.instant());
                }
                self.ready.push(id);
            }
        }
    }

    /// The reply is sent: the stream ends, or, if the client is still sending, stays
    /// half-closed (local) until the client ends it, its frames checked as an open stream's
    /// (their flow control, trailers and content-length). Nothing reads its data any more, and
    /// no window is given back for it: once half a window has come, RST_STREAM NO_ERROR tells
    /// the client to stop (RFC 9113 §8.1), as it tells every such stream once the connection
    /// drains.
    fn send_done(&mut self, id: u32) {
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
        let unread = unread_bytes(&stream.recv);
        stream.recv = Recv::Dropped;
        if let Some(shared) = stream.shared.take() {
            shared.end(RecvEnd::Reset(Reason::CANCEL));
        }
        self.release_connection(unread);
    }

    /// Polls the reply bodies that woke up, packing what they have into DATA frames.
    fn send_bodies(&mut self, _cx: &mut Context<'_>) {
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

    fn send_body(&mut self, id: u32) {
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
        // A reply stream's small messages come packed (`ResponseBody`'s frames): each frame
        // polled is queued as it is.
        let limit = room.min(BODY_ROUND_BYTES);
        let mut queued = 0usize;
        let mut cx = Context::from_waker(&sending.waker);
        let end = loop {
            if queued >= limit {
                break None;
            }
            let polled = panic::catch_unwind(AssertUnwindSafe(|| {
                Pin::new(&mut sending.body).poll_frame(&mut cx)
            }));
            match polled {
                Ok(Poll::Pending) => break None,
                Ok(Poll::Ready(Some(Ok(frame)))) => match frame.into_data() {
                    Ok(data) => {
                        queued += data.len();
                        stream.pending.push_back(data);
                    }
                    Err(frame) => {
                        break Some(End::Trailers(frame.into_trailers().unwrap_or_default()));
                    }
                },
                Ok(Poll::Ready(Some(Err(status)))) => {
                    break Some(End::Trailers(status::trailers(&status, HeaderMap::new())));
                }
                Ok(Poll::Ready(None)) => break Some(End::Data),
                Err(panic) => {
                    break Some(End::Trailers(status::trailers(
                        &panic_status(panic as Panic),
                        HeaderMap::new(),
                    )));
                }
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
    fn flush_pending(&mut self, id: u32) {
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
    fn flush_all_pending(&mut self) {
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

impl<IO> Drop for Connection<IO> {
    fn drop(&mut self) {
        self.outbox.close();
        for (_, stream) in self.streams.drain() {
            if let Some(shared) = stream.shared {
                shared.end(RecvEnd::Reset(Reason::CANCEL));
            }
        }
    }
}

/// Completes a call that did not answer at once, in its task, and hands its response to the
/// connection; drops it when the client resets the stream first.
async fn finish_pending(
    response: ResponseFuture,
    stream: u32,
    shared: Arc<StreamShared>,
    outbox: Arc<Outbox>,
    deadline: Option<Deadline>,
) {
    let reset = std::future::poll_fn(|cx| shared.poll_reset(cx));
    if let Some((response, deadline)) = finish_call(response, deadline, reset).await {
        outbox.finish(Finished {
            stream,
            response,
            deadline,
        });
    }
}
