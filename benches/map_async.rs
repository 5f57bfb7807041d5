//! `map_async(16, f)` against futures' `map(f).buffered(16)`, over 1,000 items.
//!
//! Three inputs: every future ready, every future pending once (it wakes itself and is ready
//! on its next poll: deterministic, no timers), and every 4th one pending. Both adapters get the
//! same `f`, returning a `FastFuture`; a pending one is a `FastFuture::boxed`, one allocation
//! that both sides pay. The stream is drained by a loop that polls again only after a wake-up,
//! on this thread, so the figures are the adapters' own costs.
//!
//! Before timing, one full pass of each is run with the counting allocator on, and the
//! allocations per item while pulling the items are printed, with those of building the adapter
//! apart. `map_async` builds its buffer and wakers (`parallelism + 4` allocations, once) when the
//! first future waits, so with pending inputs that fixed cost is in the pulling count.
//!
//! Run: `cargo bench --bench map_async`.

#[path = "../tests/support/alloc.rs"]
mod alloc;
#[path = "../tests/support/futures.rs"]
mod test_futures;

use std::hint::black_box;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fastgrpc::FastFuture;
use fastgrpc::stream::MapAsyncExt;
use futures_util::stream::{self, Stream, StreamExt};
use test_futures::{CountingWaker, YieldOnce, sum_all};

#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

const ITEMS: u64 = 1_000;
const PARALLELISM: usize = 16;

fn pending(value: u64) -> FastFuture<u64, ()> {
    FastFuture::boxed(YieldOnce::new(value))
}

#[derive(Clone, Copy)]
enum Input {
    AllReady,
    AllPending,
    Mixed,
}

impl Input {
    const ALL: [Input; 3] = [Input::AllReady, Input::AllPending, Input::Mixed];

    fn name(self) -> &'static str {
        match self {
            Input::AllReady => "all-ready",
            Input::AllPending => "all-pending",
            Input::Mixed => "mixed",
        }
    }

    /// The `f` both adapters map with.
    fn f(self) -> impl FnMut(u64) -> FastFuture<u64, ()> {
        move |n| match self {
            Input::AllReady => FastFuture::ok(n),
            Input::AllPending => pending(n),
            Input::Mixed if n % 4 == 0 => pending(n),
            Input::Mixed => FastFuture::ok(n),
        }
    }
}

fn with_map_async(input: Input) -> impl Stream<Item = Result<u64, ()>> + Unpin {
    stream::iter(0..ITEMS).map_async(PARALLELISM, input.f())
}

fn with_buffered(input: Input) -> impl Stream<Item = Result<u64, ()>> + Unpin {
    stream::iter(0..ITEMS).map(input.f()).buffered(PARALLELISM)
}

/// Prints the allocations of building a stream with `build` and of draining it.
fn report<S>(
    name: &str,
    input: Input,
    build: impl FnOnce() -> S,
    waker: &Waker,
    counter: &CountingWaker,
) where
    S: Stream<Item = Result<u64, ()>> + Unpin,
{
    let (stream, building) = alloc::count_allocations(build);
    let (sum, draining) = alloc::count_allocations(|| sum_all(&mut { stream }, waker, counter));
    assert_eq!(sum, ITEMS * (ITEMS - 1) / 2);
    println!(
        "{name} {}: {:.3} allocations/element ({draining} pulling {ITEMS} items, {building} building)",
        input.name(),
        draining as f64 / ITEMS as f64,
    );
}

fn bench(c: &mut Criterion) {
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    for input in Input::ALL {
        // Allocations of one full pass, outside the timing: building the adapter, then
        // pulling every item.
        report(
            "map_async",
            input,
            || with_map_async(input),
            &waker,
            &counter,
        );
        report("buffered", input, || with_buffered(input), &waker, &counter);

        let mut group = c.benchmark_group(input.name());
        group.throughput(Throughput::Elements(ITEMS));
        group.bench_function("map_async", |b| {
            b.iter(|| black_box(sum_all(&mut with_map_async(input), &waker, &counter)))
        });
        group.bench_function("buffered", |b| {
            b.iter(|| black_box(sum_all(&mut with_buffered(input), &waker, &counter)))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
