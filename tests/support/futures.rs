//! Hand-made futures and a hand-driven poll loop for the `map_async` tests and benchmark:
//! deterministic pending futures, in-flight counting, and a waker that proves wake-ups.
//! A module of the tests' `support` library; the benchmark includes this file with `#[path]`
//! (hence `dead_code`: it takes only what it needs).
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::Stream;

/// Pending on its first poll, after waking itself; ready with `value` on the next. Not
/// zero-sized, so boxing it allocates (a zero-sized future would box for free).
#[derive(Debug)]
pub struct YieldOnce {
    pub yielded: bool,
    pub value: u64,
}

impl YieldOnce {
    pub fn new(value: u64) -> Self {
        YieldOnce {
            yielded: false,
            value,
        }
    }
}

impl Future for YieldOnce {
    type Output = Result<u64, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.yielded {
            return Poll::Ready(Ok(self.value));
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Futures alive at once (created, not yet dropped), and the most seen.
#[derive(Debug, Default)]
pub struct InFlight {
    pub now: AtomicUsize,
    pub max: AtomicUsize,
}

/// Counts itself in an `InFlight` from creation to drop.
#[derive(Debug)]
pub struct Tracked<Fut> {
    inner: Fut,
    in_flight: Arc<InFlight>,
}

impl<Fut> Tracked<Fut> {
    pub fn new(inner: Fut, in_flight: &Arc<InFlight>) -> Self {
        let now = in_flight.now.fetch_add(1, Ordering::SeqCst) + 1;
        in_flight.max.fetch_max(now, Ordering::SeqCst);
        Tracked {
            inner,
            in_flight: Arc::clone(in_flight),
        }
    }
}

impl<Fut> Drop for Tracked<Fut> {
    fn drop(&mut self) {
        self.in_flight.now.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<Fut: Future + Unpin> Future for Tracked<Fut> {
    type Output = Fut::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Fut::Output> {
        Pin::new(&mut self.inner).poll(cx)
    }
}

/// Counts wake-ups, so a poll loop can tell a real wake-up from a lost one.
#[derive(Debug, Default)]
pub struct CountingWaker(pub AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl CountingWaker {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Pulls every item of `stream`, polling again only after a wake-up (a `Pending` that no
/// wake-up follows fails), and sums the successful items. Allocates nothing itself.
pub fn sum_all<S>(stream: &mut S, waker: &Waker, counter: &CountingWaker) -> u64
where
    S: Stream<Item = Result<u64, ()>> + Unpin,
{
    let mut cx = Context::from_waker(waker);
    let mut sum = 0;
    loop {
        let before = counter.count();
        match Pin::new(&mut *stream).poll_next(&mut cx) {
            Poll::Ready(Some(item)) => sum += item.unwrap(),
            Poll::Ready(None) => return sum,
            Poll::Pending => assert!(counter.count() > before, "lost wake-up"),
        }
    }
}
