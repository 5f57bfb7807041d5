//! How long an HTTP/1.1 connection may wait for a request's head, kept by counting rather than
//! by a timer per request.
//!
//! hyper's own header read timeout arms a boxed timer each time it starts reading a head and
//! drops it once the head is read: an allocation, a clock read and a timer-wheel insert and
//! removal for every request, about 6% of a light call's server CPU over HTTP/1.1
//! (`docs/BENCHMARKS.md`). Here a request costs two atomic additions to the count and an `Arc`
//! clone (its guard's); one timer per connection looks at the count once a period.
//!
//! The rule it keeps: a connection with no answer in progress that has read no head, finished
//! no answer and written nothing for a whole period is cut off. A client that sends its head
//! too slowly, or an idle keep-alive connection, is closed one to two periods after it last did
//! anything; a reply still going out to a slow reader is not a stall (its writes count).
//!
//! The same watch carries one more bit the connection's task and its answers share: whether
//! the connection closes after its next answer (its maximum age passed while it was idle).

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
    /// Set when the connection is to close after its next answer.
    closing: AtomicBool,
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

    /// Completes once a whole `period` passed with no answer in progress, no head read, no
    /// answer finished and nothing written.
    pub(super) async fn stalled(&self, period: Duration) {
        let mut seen = self.state.load(Ordering::Relaxed);
        loop {
            tokio::time::sleep(period).await;
            let now = self.state.load(Ordering::Relaxed);
            if now == seen && now as u32 == 0 {
                return;
            }
            seen = now;
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

/// A connection's socket whose writes count as activity on its watch.
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
        Pin::new(&mut self.io).poll_read(cx, buf)
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

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_reads_no_head_stalls_after_one_period() {
        let watch = HeadWatch::default();
        let period = Duration::from_secs(10);
        let started = tokio::time::Instant::now();
        watch.stalled(period).await;
        assert_eq!(started.elapsed(), period);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_progress_never_stalls_and_its_end_restarts_the_wait() {
        let watch = Arc::new(HeadWatch::default());
        let period = Duration::from_secs(10);
        let answering = watch.head_read();
        let stalled = tokio::spawn({
            let watch = Arc::clone(&watch);
            async move { watch.stalled(period).await }
        });
        // However long the answer takes.
        tokio::time::sleep(Duration::from_secs(105)).await;
        assert!(!stalled.is_finished());
        drop(answering);
        let ended = tokio::time::Instant::now();
        // Its end is activity: cut off one to two periods after it, not before.
        tokio::time::sleep(period - Duration::from_secs(1)).await;
        assert!(!stalled.is_finished());
        stalled.await.unwrap();
        let waited = ended.elapsed();
        assert!(waited >= period && waited <= 2 * period, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn heads_read_within_each_period_keep_the_connection() {
        let watch = Arc::new(HeadWatch::default());
        let period = Duration::from_secs(10);
        let stalled = tokio::spawn({
            let watch = Arc::clone(&watch);
            async move { watch.stalled(period).await }
        });
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_secs(7)).await;
            drop(watch.head_read());
            assert!(!stalled.is_finished());
        }
        // Then nothing: cut off one to two periods after the last head.
        let last = tokio::time::Instant::now();
        stalled.await.unwrap();
        let waited = last.elapsed();
        assert!(waited >= period && waited <= 2 * period, "{waited:?}");
    }

    /// A reply going out slowly (its body given to hyper whole, so no answer is in progress)
    /// is not a stall while its writes go on.
    #[tokio::test(start_paused = true)]
    async fn writes_keep_a_connection_from_stalling() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let watch = Arc::new(HeadWatch::default());
        let period = Duration::from_secs(10);
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut written = Written::new(ours, Arc::clone(&watch));
        let stalled = tokio::spawn({
            let watch = Arc::clone(&watch);
            async move { watch.stalled(period).await }
        });
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
        assert!(waited >= period && waited <= 2 * period, "{waited:?}");
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
