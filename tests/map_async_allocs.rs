//! Allocation counts of `map_async`, measured with a counting global allocator.
//!
//! The adapter allocates its buffer and wakers once, when it is built. After that, ready results
//! pass through without allocating, and pending ones cost only what their own futures cost.

use support::alloc;
use support::futures as test_futures;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use fastgrpc::FastFuture;
use fastgrpc::stream::MapAsyncExt;
use futures_util::stream::{self, Stream};
use test_futures::{CountingWaker, YieldOnce, sum_all};

const ITEMS: u64 = 1000;
const PARALLELISM: usize = 16;

#[test]
fn all_ready_stream_allocates_nothing_at_all() {
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let (sum, allocations) = alloc::count_allocations(|| {
        let mut mapped = stream::iter(0..ITEMS).map_async(PARALLELISM, FastFuture::<u64, ()>::ok);
        sum_all(&mut mapped, &waker, &counter)
    });
    assert_eq!(sum, ITEMS * (ITEMS - 1) / 2);
    // Building included: the buffer and wakers are only made when a future has to wait.
    assert_eq!(allocations, 0, "ready results must pass straight through");
    assert_eq!(counter.count(), 0, "nothing waited");
}

#[test]
fn buffer_and_wakers_are_built_once_whatever_the_length() {
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    // Only the first future waits; its own box is the one allocation that is not
    // `map_async`'s.
    let run = |items: u64| {
        alloc::count_allocations(|| {
            let mut mapped = stream::iter(0..items).map_async(PARALLELISM, |n| {
                if n == 0 {
                    FastFuture::boxed(YieldOnce::new(0))
                } else {
                    FastFuture::ok(n)
                }
            });
            sum_all(&mut mapped, &waker, &counter)
        })
        .1
    };
    assert_eq!(run(10), run(10_000));
    assert_eq!(run(10), 1 + 4 + PARALLELISM as u64);
}

#[test]
fn ready_async_blocks_allocate_nothing_once_warm() {
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut mapped = stream::iter(0..ITEMS).map_async(PARALLELISM, |n| {
        let captured = [n; 4];
        FastFuture::from_future(async move { Ok(captured.iter().sum::<u64>() / 4) })
    });
    // The first item may allocate this thread's recycled block for the async block's layout.
    let mut cx = Context::from_waker(&waker);
    assert_eq!(
        Pin::new(&mut mapped).poll_next(&mut cx),
        Poll::Ready(Some(Ok(0)))
    );

    let (sum, allocations) = alloc::count_allocations(|| sum_all(&mut mapped, &waker, &counter));
    assert_eq!(sum, ITEMS * (ITEMS - 1) / 2);
    assert_eq!(allocations, 0);
}

#[test]
fn pending_results_cost_only_their_own_futures() {
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    // Every 4th future is pending once; the ready ones behind it wait in the buffer.
    let mut mapped = stream::iter(0..ITEMS).map_async(PARALLELISM, |n| {
        if n % 4 == 0 {
            FastFuture::boxed(YieldOnce::new(n))
        } else {
            FastFuture::ok(n)
        }
    });

    let (sum, allocations) = alloc::count_allocations(|| sum_all(&mut mapped, &waker, &counter));
    assert_eq!(sum, ITEMS * (ITEMS - 1) / 2);
    // The `FastFuture::boxed` of each pending future, plus what the first one to wait makes
    // `map_async` build: the buffer, the shared wake state and its bits, the array of wakers
    // and one waker per position. Nothing per item, neither for buffering the ready results
    // behind a pending one nor for waking.
    let buffer_and_wakers = 4 + PARALLELISM as u64;
    assert_eq!(allocations, ITEMS / 4 + buffer_and_wakers);
    assert!(counter.count() > 0, "the pending futures woke the stream");
}
