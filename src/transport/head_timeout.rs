//! How long an HTTP/1.1 connection may wait for a request's head, kept by counting rather than
//! by a timer per request.
//!
//! hyper's own header read timeout arms a boxed timer each time it starts reading a head and
//! drops it once the head is read: an allocation, a clock read and a timer-wheel insert and
//! removal for every request, about 6% of a light call's server CPU over HTTP/1.1
//! (`docs/BENCHMARKS.md`). Here a request costs two atomic additions to the count and an `Arc`
//! clone (its guard's); one timer per connection looks at the count once a period.
//!
//! The rule it keeps: a connection with no answer in progress that has read no head and
//! finished no answer for a whole period is cut off. A client that sends its head too slowly,
//! or an idle keep-alive connection, is closed one to two periods after it last did anything.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

/// One connection's heads read and answers in progress.
#[derive(Debug, Default)]
pub(super) struct HeadWatch {
    /// Low 32 bits: answers in progress. High 32 bits: events (a head read, an answer
    /// finished), wrapping; only their change is read.
    state: AtomicU64,
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

    /// Completes once a whole `period` passed with no answer in progress, no head read and no
    /// answer finished.
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

    #[test]
    fn answers_and_events_are_counted_apart() {
        let watch = Arc::new(HeadWatch::default());
        let answers: Vec<_> = (0..3).map(|_| watch.head_read()).collect();
        assert_eq!(watch.state.load(Ordering::Relaxed), 3 * EVENT + 3);
        drop(answers);
        assert_eq!(watch.state.load(Ordering::Relaxed), 6 * EVENT);
    }
}
