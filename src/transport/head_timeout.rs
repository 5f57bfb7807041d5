//! How long an HTTP/1.1 connection may wait for a request's head, and how long it may stay
//! idle, kept by counting rather than by a timer per request.
//!
//! hyper's own header read timeout arms a boxed timer each time it starts reading a head and
//! drops it once the head is read: an allocation, a clock read and a timer-wheel insert and
//! removal for every request, about 6% of a light call's server CPU over HTTP/1.1
//! (`docs/BENCHMARKS.md`). Here a request costs two atomic additions to the count and an `Arc`
//! clone (its guard's); one timer per connection looks at the count once a period.
//!
//! The rules it keeps, for a connection with no answer in progress: one that has begun to
//! receive a request's head (bytes arrived since its last answer) and has read no whole head,
//! finished no answer and written nothing for a whole head period is cut off, one to two
//! periods after it last did anything; one that has received nothing since (an idle keep-alive
//! connection) is closed once it has been quiet for the idle timeout, give or take a period.
//! Clients' pools keep idle connections for long (Go's for 90 s): the idle timeout is longer
//! than the head timeout, so that a connection reused after a pause is still open. A reply
//! still going out to a slow reader is not a stall (its writes count).
//!
//! The same watch carries two more bits the connection's task and its answers share: whether
//! the connection closes after its next answer (its maximum age passed while it was idle), and
//! whether the request being answered has body left unread (its answer then closes the
//! connection, and says so).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One connection's heads read and answers in progress.
#[derive(Debug, Default)]
pub(super) struct HeadWatch {
    /// Low 32 bits: answers in progress. High 32 bits: events (a head read, an answer
    /// finished, bytes written), wrapping; only their change is read.
    state: AtomicU64,
    /// Set when bytes arrive, cleared when an answer finishes: whether the next request has
    /// begun to arrive.
    heard: AtomicBool,
    /// Set when the connection is to close after its next answer.
    closing: AtomicBool,
    /// Set while the request being answered has body bytes still unread.
    unread: AtomicBool,
}

/// Why a connection was found stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stall {
    /// A request's head began to arrive and did not end within the head timeout.
    Head,
    /// Nothing arrived for the idle timeout.
    Idle,
}

/// Adds one to the events.
const EVENT: u64 = 1 << 32;

impl HeadWatch {
    /// Notes a head just read; its answer is in progress until the guard is dropped (with the
    /// response's body, once hyper has written it).
    pub(super) fn head_read(self: &Arc<Self>) -> Answering {
        self.state.fetch_add(EVENT + 1, Ordering::Relaxed);
        Answering {
            watch: Arc::clone(self),
        }
    }

    /// Whether an answer is in progress: hyper has read its head and not yet dropped its body.
    pub(super) fn answering(&self) -> bool {
        self.state.load(Ordering::Relaxed) as u32 > 0
    }

    /// From now on, the next answer closes the connection.
    pub(super) fn close_after_next_answer(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }

    /// Whether answers close the connection.
    pub(super) fn closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Whether the request being answered still has body bytes unread (`true`), or has been
    /// read to its end (`false`).
    pub(super) fn set_unread(&self, unread: bool) {
        self.unread.store(unread, Ordering::Relaxed);
    }

    /// Whether the request being answered still has body bytes unread: its answer then closes
    /// the connection, since the next request would start after bytes nobody read.
    pub(super) fn unread(&self) -> bool {
        self.unread.load(Ordering::Relaxed)
    }

    /// Whether bytes arrived since the last answer finished.
    fn heard(&self) -> bool {
        self.heard.load(Ordering::Relaxed)
    }

    /// Completes when the connection stalls, with no answer in progress and no head read, no
    /// answer finished and nothing written meanwhile: for a whole `head` period once a
    /// request's head has begun to arrive ([`Stall::Head`]), for `idle` if nothing arrived
    /// ([`Stall::Idle`]). Looks once a period (the shorter of the two).
    pub(super) async fn stalled(&self, head: Duration, idle: Duration) -> Stall {
        let period = head.min(idle);
        let mut seen = self.state.load(Ordering::Relaxed);
        // How long the connection has been quiet, and how long since a head was seen to have
        // begun, both as counted at each look.
        let mut quiet = Duration::ZERO;
        let mut head_begun: Option<Duration> = None;
        loop {
            tokio::time::sleep(period).await;
            let now = self.state.load(Ordering::Relaxed);
            if now != seen || now as u32 > 0 {
                seen = now;
                quiet = Duration::ZERO;
                // Bytes that came after the answer finished: the next head, from now on.
                head_begun = (now as u32 == 0 && self.heard()).then_some(Duration::ZERO);
                continue;
            }
            quiet = quiet.saturating_add(period);
            match &mut head_begun {
                Some(waited) => {
                    *waited += period;
                    if *waited >= head {
                        return Stall::Head;
                    }
                }
                None if self.heard() => head_begun = Some(Duration::ZERO),
                None if quiet >= idle => return Stall::Idle,
                None => {}
            }
        }
    }
}

/// One answer in progress.
#[derive(Debug)]
pub(super) struct Answering {
    watch: Arc<HeadWatch>,
}

impl Answering {
    pub(super) fn watch(&self) -> &HeadWatch {
        &self.watch
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        // One event more and one answer fewer, in one addition: the answers' count is at least
        // one here, so subtracting one from it borrows nothing from the events.
        self.watch.state.fetch_add(EVENT - 1, Ordering::Relaxed);
        // What arrives from now on is the next request. (A next head hyper has already read
        // whole is taken at once; one read in part then waits as an idle connection would.)
        self.watch.heard.store(false, Ordering::Relaxed);
    }
}

pin_project! {
    /// A response body that keeps its answer counted in progress until hyper drops it.
    pub(super) struct Watched<B> {
        #[pin]
        body: B,
        answering: Answering,
    }
}

impl<B> Watched<B> {
    pub(super) fn new(body: B, answering: Answering) -> Self {
        Watched { body, answering }
    }
}

impl<B: Body<Data = Bytes>> Body for Watched<B> {
    type Data = Bytes;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.project().body.poll_frame(cx)
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A connection's socket whose writes count as activity on its watch, and whose reads tell it
/// that a request has begun to arrive.
#[derive(Debug)]
pub(super) struct Written<IO> {
    io: IO,
    watch: Arc<HeadWatch>,
}

impl<IO> Written<IO> {
    pub(super) fn new(io: IO, watch: Arc<HeadWatch>) -> Self {
        Written { io, watch }
    }

    fn count(&self, written: &Poll<io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(n)) if *n > 0) {
            self.watch.state.fetch_add(EVENT, Ordering::Relaxed);
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Written<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.watch.heard.store(true, Ordering::Relaxed);
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Written<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.count(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.count(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const HEAD: Duration = Duration::from_secs(10);
    const IDLE: Duration = Duration::from_secs(120);

    /// `watch.stalled(head, idle)` running in a task of its own.
    fn watching(
        watch: &Arc<HeadWatch>,
        head: Duration,
        idle: Duration,
    ) -> tokio::task::JoinHandle<Stall> {
        let watch = Arc::clone(watch);
        tokio::spawn(async move { watch.stalled(head, idle).await })
    }

    /// A socket on `watch` and the peer that writes into it.
    fn socket(
        watch: &Arc<HeadWatch>,
    ) -> (Written<tokio::io::DuplexStream>, tokio::io::DuplexStream) {
        let (ours, theirs) = tokio::io::duplex(64);
        (Written::new(ours, Arc::clone(watch)), theirs)
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_receives_nothing_is_closed_after_the_idle_timeout() {
        let watch = HeadWatch::default();
        let started = tokio::time::Instant::now();
        assert_eq!(watch.stalled(HEAD, IDLE).await, Stall::Idle);
        assert_eq!(started.elapsed(), IDLE);
    }

    /// A keep-alive connection reused after a pause longer than the head timeout (a client
    /// pool's) is still open; one quiet for the idle timeout is closed.
    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_outlives_the_head_timeout_until_the_idle_one() {
        let watch = Arc::new(HeadWatch::default());
        let (mut socket, mut peer) = socket(&watch);
        let stalled = watching(&watch, HEAD, IDLE);
        // A request arrives and is answered.
        peer.write_all(b"POST / HTTP/1.1\r\n\r\n").await.unwrap();
        socket.read_exact(&mut [0; 19]).await.unwrap();
        drop(watch.head_read());
        let answered = tokio::time::Instant::now();
        tokio::time::sleep(IDLE - Duration::from_secs(1)).await;
        assert!(!stalled.is_finished(), "open well past the head timeout");
        assert_eq!(stalled.await.unwrap(), Stall::Idle);
        let waited = answered.elapsed();
        assert!(waited >= IDLE && waited <= IDLE + HEAD, "{waited:?}");
    }

    /// Once bytes of the next request arrive, its head must be whole within the head timeout,
    /// however long the connection was idle before.
    #[tokio::test(start_paused = true)]
    async fn a_head_begun_after_a_pause_has_the_head_timeout() {
        let watch = Arc::new(HeadWatch::default());
        let (mut socket, mut peer) = socket(&watch);
        let stalled = watching(&watch, HEAD, IDLE);
        drop(watch.head_read());
        tokio::time::sleep(Duration::from_secs(35)).await;
        peer.write_all(b"POST / HT").await.unwrap();
        socket.read_exact(&mut [0; 9]).await.unwrap();
        let begun = tokio::time::Instant::now();
        assert_eq!(stalled.await.unwrap(), Stall::Head);
        let waited = begun.elapsed();
        assert!(waited >= HEAD && waited <= 2 * HEAD, "{waited:?}");
    }

    /// The first request's bytes (read when the connection was told apart) start its head.
    #[tokio::test(start_paused = true)]
    async fn a_first_head_sent_too_slowly_has_the_head_timeout() {
        let watch = Arc::new(HeadWatch::default());
        let (mut socket, mut peer) = socket(&watch);
        peer.write_all(b"POST").await.unwrap();
        socket.read_exact(&mut [0; 4]).await.unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(watch.stalled(HEAD, IDLE).await, Stall::Head);
        assert_eq!(started.elapsed(), 2 * HEAD);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_progress_never_stalls_and_its_end_restarts_the_wait() {
        let watch = Arc::new(HeadWatch::default());
        let answering = watch.head_read();
        let stalled = watching(&watch, HEAD, HEAD);
        // However long the answer takes.
        tokio::time::sleep(Duration::from_secs(105)).await;
        assert!(!stalled.is_finished());
        drop(answering);
        let ended = tokio::time::Instant::now();
        // Its end is activity: cut off one to two periods after it, not before.
        tokio::time::sleep(HEAD - Duration::from_secs(1)).await;
        assert!(!stalled.is_finished());
        assert_eq!(stalled.await.unwrap(), Stall::Idle);
        let waited = ended.elapsed();
        assert!(waited >= HEAD && waited <= 2 * HEAD, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn heads_read_within_each_period_keep_the_connection() {
        let watch = Arc::new(HeadWatch::default());
        let stalled = watching(&watch, HEAD, HEAD);
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_secs(7)).await;
            drop(watch.head_read());
            assert!(!stalled.is_finished());
        }
        // Then nothing: cut off one to two periods after the last head.
        let last = tokio::time::Instant::now();
        stalled.await.unwrap();
        let waited = last.elapsed();
        assert!(waited >= HEAD && waited <= 2 * HEAD, "{waited:?}");
    }

    /// A reply going out slowly (its body given to hyper whole, so no answer is in progress)
    /// is not a stall while its writes go on.
    #[tokio::test(start_paused = true)]
    async fn writes_keep_a_connection_from_stalling() {
        let watch = Arc::new(HeadWatch::default());
        let (mut written, mut theirs) = socket(&watch);
        let stalled = watching(&watch, HEAD, HEAD);
        let mut scratch = [0; 15];
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_secs(7)).await;
            written.write_all(b"some of a reply").await.unwrap();
            theirs.read_exact(&mut scratch).await.unwrap();
            assert!(!stalled.is_finished());
        }
        // Then nothing more: a stall, one to two periods after the last write.
        let last = tokio::time::Instant::now();
        stalled.await.unwrap();
        let waited = last.elapsed();
        assert!(waited >= HEAD && waited <= 2 * HEAD, "{waited:?}");
    }

    #[test]
    fn answers_and_events_are_counted_apart() {
        let watch = Arc::new(HeadWatch::default());
        let answers: Vec<_> = (0..3).map(|_| watch.head_read()).collect();
        assert_eq!(watch.state.load(Ordering::Relaxed), 3 * EVENT + 3);
        drop(answers);
        assert_eq!(watch.state.load(Ordering::Relaxed), 6 * EVENT);
    }
}
