//! The per-message cost of an idle timeout on a stream: `WithIdleTimeout` (one timer, moved
//! in place) against the bare stream and against a naive adapter that creates a new
//! `tokio::time::sleep` for every message.
//!
//! Two shapes of stream: `arriving`, where every message comes after a `Pending` (as from a
//! socket: each message starts a wait, which reads the clock and polls the timer), and
//! `burst`, where messages are already there back to back. Each iteration pulls 1,000
//! messages on a current-thread runtime; divide the times by 1,000 for a message. The idle
//! timeout (60 s) never fires, as in a healthy stream: the cost measured is that of keeping
//! it.
//!
//! Allocations per message are counted first, outside criterion's timing, with a counting
//! global allocator on the benchmark thread (where the current-thread runtime runs
//! everything).
//!
//! Run: `cargo bench --bench idle_timeout`.

#[path = "../tests/support/alloc.rs"]
mod alloc;

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use criterion::{Criterion, Throughput};
use fastgrpc::Status;
use fastgrpc::stream::WithIdleTimeout;
use futures_util::{Stream, StreamExt};
use tokio::runtime::Runtime;
use tokio::time::Sleep;

#[global_allocator]
static ALLOCATOR: alloc::CountingAllocator = alloc::CountingAllocator;

/// Messages per iteration.
const BATCH: u32 = 1_000;
const IDLE: Duration = Duration::from_secs(60);

/// `BATCH` messages, each after a `Pending` that wakes itself (`arriving`), or all ready
/// (`burst`).
struct Messages {
    left: u32,
    pending_first: bool,
    ready: bool,
}

impl Messages {
    fn new(pending_first: bool) -> Messages {
        Messages {
            left: BATCH,
            pending_first,
            ready: false,
        }
    }
}

impl Stream for Messages {
    type Item = Result<u32, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        if self.pending_first && !self.ready {
            self.ready = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.ready = false;
        self.left -= 1;
        Poll::Ready(Some(Ok(self.left)))
    }
}

/// The naive idle timeout: a fresh boxed `sleep` after every message.
struct NaiveIdle<S> {
    inner: S,
    duration: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl<S> NaiveIdle<S> {
    fn new(inner: S, duration: Duration) -> NaiveIdle<S> {
        NaiveIdle {
            inner,
            duration,
            sleep: Box::pin(tokio::time::sleep(duration)),
        }
    }
}

impl<S: Stream<Item = Result<u32, Status>> + Unpin> Stream for NaiveIdle<S> {
    type Item = Result<u32, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(item)) => {
                let duration = self.duration;
                self.sleep = Box::pin(tokio::time::sleep(duration));
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Status::deadline_exceeded("idle")))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[derive(Clone, Copy)]
enum Variant {
    Bare,
    WithIdleTimeout,
    Naive,
}

impl Variant {
    const ALL: [Variant; 3] = [Variant::Bare, Variant::WithIdleTimeout, Variant::Naive];

    fn name(self) -> &'static str {
        match self {
            Variant::Bare => "bare",
            Variant::WithIdleTimeout => "with_idle_timeout",
            Variant::Naive => "naive_sleep_per_message",
        }
    }
}

/// Pulls every message of a fresh stream, returning their sum.
async fn drain(variant: Variant, pending_first: bool) -> u64 {
    async fn sum(mut stream: impl Stream<Item = Result<u32, Status>> + Unpin) -> u64 {
        let mut sum = 0u64;
        while let Some(item) = stream.next().await {
            sum += u64::from(item.unwrap());
        }
        sum
    }
    let messages = Messages::new(pending_first);
    match variant {
        Variant::Bare => sum(messages).await,
        Variant::WithIdleTimeout => sum(WithIdleTimeout::new(messages, Some(IDLE))).await,
        Variant::Naive => sum(NaiveIdle::new(messages, IDLE)).await,
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn print_allocations(rt: &Runtime) {
    const STREAMS: u32 = 10;
    println!(
        "allocations per message ({STREAMS} streams of {BATCH} messages, timer creation included):"
    );
    for (shape, pending_first) in [("arriving", true), ("burst", false)] {
        for variant in Variant::ALL {
            // Warm the runtime's queues so only the stream's own allocations show.
            rt.block_on(drain(variant, pending_first));
            let (_, allocations) = alloc::count_allocations(|| {
                for _ in 0..STREAMS {
                    black_box(rt.block_on(drain(variant, pending_first)));
                }
            });
            println!(
                "  {shape:8} {:24} {:>8.4} ({allocations} in {} messages)",
                variant.name(),
                allocations as f64 / f64::from(STREAMS * BATCH),
                STREAMS * BATCH
            );
        }
    }
}

fn bench(c: &mut Criterion, rt: &Runtime) {
    for (shape, pending_first) in [("arriving", true), ("burst", false)] {
        let mut group = c.benchmark_group(format!("idle_timeout/{shape}"));
        group.throughput(Throughput::Elements(u64::from(BATCH)));
        for variant in Variant::ALL {
            group.bench_function(variant.name(), |b| {
                b.iter(|| black_box(rt.block_on(drain(variant, pending_first))));
            });
        }
        group.finish();
    }
}

fn main() {
    let rt = runtime();
    print_allocations(&rt);
    let mut criterion = Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_secs(1))
        .configure_from_args();
    bench(&mut criterion, &rt);
    criterion.final_summary();
}
