//! How long a request stream may stay silent: [`IdleTimeout`], one timer per call that resets
//! in place, and [`WithIdleTimeout`], a stream that fails with `DEADLINE_EXCEEDED` when its
//! next item is late.
//!
//! The timer is a single boxed [`Sleep`] created at the first wait and moved in place ever
//! after (`Sleep::reset`), so a stream of any length costs one allocation for its timer, not
//! one per message.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tonic::Status;

use crate::deadline::deadline_after;

/// How long to wait for activity (the next message of a stream) before giving up.
///
/// One `IdleTimeout` serves a whole call. It allocates nothing when created; the first
/// [`poll_expired`](IdleTimeout::poll_expired) boxes one [`Sleep`], and that `Sleep` is moved
/// in place ([`Sleep::reset`]) ever after: no allocation per message, and no new timer
/// registration.
///
/// # When the countdown runs
///
/// The countdown covers only the time spent *waiting*: it starts at the first
/// `poll_expired` after a [`reset`](IdleTimeout::reset) (or ever), and `reset` marks activity
/// and stops it. Time the consumer spends not polling, busy with the previous message, does
/// not count. That matters for HTTP/2: a consumer that is not reading does not release flow
/// control window, so the peer may be unable to send; blaming the peer for that would be
/// wrong.
///
/// # What a message costs
///
/// `reset` clears a field. The wait that follows reads the clock once and notes its deadline,
/// but leaves the timer where it is: the timer only ever runs early (each wait's deadline is
/// later than the last), so when it fires before the current deadline, `poll_expired` moves
/// it to that deadline then, in place, and keeps waiting. A busy stream thus moves its timer
/// about once per `duration`, not once per message, and still expires exactly `duration`
/// after the wait began (to the timer's millisecond).
///
/// `poll_expired` must be called from within a tokio runtime with the time driver enabled,
/// like any tokio timer.
///
/// ```
/// use std::time::Duration;
/// use fastgrpc::stream::IdleTimeout;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let mut idle = IdleTimeout::new(Duration::from_secs(10));
/// // Waiting for a message: the countdown starts at the first poll.
/// let started = tokio::time::Instant::now();
/// std::future::poll_fn(|cx| idle.poll_expired(cx)).await;
/// assert_eq!(started.elapsed(), Duration::from_secs(10));
/// # }
/// ```
#[derive(Debug)]
pub struct IdleTimeout {
    duration: Duration,
    /// Boxed so it can stay pinned while `IdleTimeout` moves; created at the first wait.
    /// Invariant: its deadline is at most `expires` while a wait is running.
    sleep: Option<Pin<Box<Sleep>>>,
    /// When the running wait times out; `None` between a `reset` and the next wait.
    expires: Option<Instant>,
}

impl IdleTimeout {
    /// An idle timer of `duration`. Allocates nothing and needs no runtime until polled.
    pub const fn new(duration: Duration) -> IdleTimeout {
        IdleTimeout {
            duration,
            sleep: None,
            expires: None,
        }
    }

    /// The idle duration.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Records activity: the countdown stops, and the next wait starts a fresh one.
    pub fn reset(&mut self) {
        self.expires = None;
    }

    /// Polls while waiting for activity; `Ready` once `duration` has passed since the wait
    /// began without a [`reset`](IdleTimeout::reset). Stays `Ready` until reset.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let expires = *self
            .expires
            .get_or_insert_with(|| deadline_after(Instant::now(), self.duration));
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(expires)));
        // Each wait's deadline is `now + duration`, later than the one before, so the timer
        // (set for an earlier wait) can only be early, never late.
        debug_assert!(sleep.deadline() <= expires);
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if sleep.deadline() >= expires {
                return Poll::Ready(());
            }
            // Fired for an earlier wait: move it to this one's deadline, in place (same
            // allocation, same timer entry), and poll again to wait for that.
            sleep.as_mut().reset(expires);
        }
    }
}

pin_project! {
    /// A stream that fails with `DEADLINE_EXCEEDED` when its next item takes longer than an idle
    /// timeout to arrive.
    ///
    /// Every item, `Ok` or `Err`, counts as activity and resets the timer (in place, see
    /// [`IdleTimeout`]). On a timeout the stream yields one
    /// `Err(Status::deadline_exceeded(..))` and then ends; so does it after the inner stream ends.
    /// Without a timeout (`new(stream, None)`) it passes items through and allocates nothing.
    ///
    /// # Why `DEADLINE_EXCEEDED`
    ///
    /// gRPC itself has no per-message receive timeout (its deadline covers the whole call; grpc-go
    /// issue 445: "the scope of context is rpc ... instead of a particular message"), so there is
    /// no status the other implementations send for this; the choice follows the meaning of the
    /// codes in grpc's `doc/statuscodes.md`. `DEADLINE_EXCEEDED` is "the deadline expired before
    /// the operation could complete", which is what happened: a time limit on the call ran out,
    /// and the status (sent in trailers) reaches the client as is. `CANCELLED` is "the operation
    /// was cancelled, typically by the caller", and here the caller cancelled nothing: a client
    /// would read it as its own doing. tonic's `Server::timeout` does answer `CANCELLED`, but for a
    /// timeout on the whole call, mirroring the spec's `RST_STREAM(CANCEL)` for an expired client
    /// deadline, where the client's own clock turns it into `DEADLINE_EXCEEDED`; an idle timeout
    /// fires while the client's deadline is still ahead, so no such translation would happen.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fastgrpc::stream::WithIdleTimeout;
    /// use futures_util::StreamExt;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// // Two messages, then a client that goes quiet.
    /// let messages = futures_util::stream::iter([Ok(1), Ok(2)]).chain(futures_util::stream::pending());
    /// let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(30)));
    ///
    /// assert_eq!(stream.next().await.unwrap().unwrap(), 1);
    /// assert_eq!(stream.next().await.unwrap().unwrap(), 2);
    /// let error = stream.next().await.unwrap().unwrap_err();
    /// assert_eq!(error.code(), tonic::Code::DeadlineExceeded);
    /// assert!(stream.next().await.is_none());
    /// # }
    /// ```
    #[derive(Debug)]
    #[must_use = "streams do nothing unless polled"]
    pub struct WithIdleTimeout<S> {
        #[pin]
        inner: S,
        idle: Option<IdleTimeout>,
        done: bool,
    }
}

impl<S> WithIdleTimeout<S> {
    /// Wraps `inner`; `None` means no idle timeout.
    pub fn new(inner: S, idle_timeout: Option<Duration>) -> WithIdleTimeout<S> {
        WithIdleTimeout {
            inner,
            idle: idle_timeout.map(IdleTimeout::new),
            done: false,
        }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Unwraps the stream.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, T> Stream for WithIdleTimeout<S>
where
    S: Stream<Item = Result<T, Status>>,
{
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let (inner, idle, done) = (this.inner, this.idle, this.done);
        if *done {
            return Poll::Ready(None);
        }
        // The stream first: an item that is already there wins over a timer that has expired
        // meanwhile, since the peer did deliver in time.
        match inner.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                if let Some(idle) = idle {
                    idle.reset();
                }
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                *done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let Some(idle) = idle else {
                    return Poll::Pending;
                };
                match idle.poll_expired(cx) {
                    Poll::Ready(()) => {
                        *done = true;
                        Poll::Ready(Some(Err(idle_timeout_status(idle.duration()))))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let (_, upper) = self.inner.size_hint();
        // A timeout may add one error item.
        let extra = usize::from(self.idle.is_some());
        (0, upper.and_then(|upper| upper.checked_add(extra)))
    }
}

/// The status a stream ends with when its next message is late; see [`WithIdleTimeout`].
#[cold]
pub(crate) fn idle_timeout_status(duration: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "no message received for {duration:?} (the server's idle timeout)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use tonic::Code;

    fn poll_idle(idle: &mut IdleTimeout) -> Poll<()> {
        let waker = futures_util::task::noop_waker();
        idle.poll_expired(&mut Context::from_waker(&waker))
    }

    #[tokio::test(start_paused = true)]
    async fn idle_timeout_fires_after_the_duration_of_waiting() {
        let mut idle = IdleTimeout::new(Duration::from_secs(10));
        let started = Instant::now();
        std::future::poll_fn(|cx| idle.poll_expired(cx)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        // Stays expired until reset.
        assert!(poll_idle(&mut idle).is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn reset_restarts_the_countdown_in_place() {
        let start = Instant::now();
        let mut idle = IdleTimeout::new(Duration::from_secs(10));
        assert!(poll_idle(&mut idle).is_pending());
        let sleep: *const Sleep = &**idle.sleep.as_ref().unwrap();

        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(poll_idle(&mut idle).is_pending());
        idle.reset();
        assert!(poll_idle(&mut idle).is_pending());
        // The timer is not moved yet: still set for the first wait.
        let timer = |idle: &IdleTimeout| idle.sleep.as_ref().unwrap().deadline();
        assert_eq!(timer(&idle) - start, Duration::from_secs(10));

        // It fires for the first wait, and is moved to the second wait's deadline, in place.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            poll_idle(&mut idle).is_pending(),
            "10 s in, 1 s since reset"
        );
        assert_eq!(timer(&idle) - start, Duration::from_secs(19));
        assert!(std::ptr::eq(sleep, &**idle.sleep.as_ref().unwrap()));

        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(
            poll_idle(&mut idle).is_pending(),
            "18 s in, 9 s since reset"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(poll_idle(&mut idle).is_ready());

        // An expired timer can be reset and reused.
        idle.reset();
        assert!(poll_idle(&mut idle).is_pending());
        assert!(std::ptr::eq(sleep, &**idle.sleep.as_ref().unwrap()));
    }

    #[tokio::test(start_paused = true)]
    async fn time_not_spent_waiting_does_not_count() {
        let mut idle = IdleTimeout::new(Duration::from_secs(10));
        idle.reset();
        // The consumer is busy for longer than the timeout without polling.
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(poll_idle(&mut idle).is_pending());
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(poll_idle(&mut idle).is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn stream_items_reset_the_timer_and_silence_ends_it() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<u32, Status>>();
        let messages = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(10)));
        let started = Instant::now();

        let sender = tokio::spawn(async move {
            // Gaps just under the timeout, several times: each message resets the timer.
            for n in 0..5 {
                tokio::time::sleep(Duration::from_secs(9)).await;
                tx.send(Ok(n)).unwrap();
            }
            // An error item is activity too.
            tokio::time::sleep(Duration::from_secs(9)).await;
            tx.send(Err(Status::not_found("x"))).unwrap();
            // Then silence, with the channel still open.
            std::future::pending::<()>().await;
        });

        for n in 0..5 {
            assert_eq!(stream.next().await.unwrap().unwrap(), n);
        }
        assert_eq!(
            stream.next().await.unwrap().unwrap_err().code(),
            Code::NotFound
        );
        let error = stream.next().await.unwrap().unwrap_err();
        assert_eq!(error.code(), Code::DeadlineExceeded);
        assert!(error.message().contains("10s"), "{error:?}");
        assert_eq!(started.elapsed(), Duration::from_secs(6 * 9 + 10));
        // Ends after the timeout, without polling the inner stream again.
        assert!(stream.next().await.is_none());
        assert_eq!(stream.size_hint(), (0, Some(0)));
        sender.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn ready_item_wins_over_an_expired_timer() {
        let mut polls = 0;
        let messages = futures_util::stream::poll_fn(move |_cx| {
            polls += 1;
            // Pending on the first poll, then an item is there.
            if polls == 1 {
                Poll::Pending
            } else {
                Poll::Ready(Some(Ok::<_, Status>(polls)))
            }
        });
        let mut stream = Box::pin(WithIdleTimeout::new(messages, Some(Duration::from_secs(1))));
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(stream.as_mut().poll_next(&mut cx).is_pending());
        tokio::time::advance(Duration::from_secs(5)).await;
        // The timer has expired, but the item arrived: the item is delivered.
        assert!(matches!(
            stream.as_mut().poll_next(&mut cx),
            Poll::Ready(Some(Ok(2)))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_timeout_items_pass_through_and_there_is_no_timer() {
        let messages = futures_util::stream::iter([Ok(1), Err(Status::aborted("a")), Ok(3)])
            .chain(futures_util::stream::pending());
        let mut stream = WithIdleTimeout::new(messages, None);
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        assert_eq!(
            stream.next().await.unwrap().unwrap_err().code(),
            Code::Aborted
        );
        assert_eq!(stream.next().await.unwrap().unwrap(), 3);
        // Hours of silence: no timeout.
        let waker = futures_util::task::noop_waker();
        tokio::time::advance(Duration::from_secs(86_400)).await;
        assert!(
            Pin::new(&mut stream)
                .poll_next(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert!(stream.idle.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn stream_end_passes_through() {
        let messages = futures_util::stream::iter([Ok::<_, Status>(1)]);
        let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(1)));
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        assert!(stream.next().await.is_none());
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn the_largest_timeout_saturates() {
        let mut idle = IdleTimeout::new(Duration::MAX);
        let waker = futures_util::task::noop_waker();
        assert!(
            idle.poll_expired(&mut Context::from_waker(&waker))
                .is_pending()
        );
    }
}
