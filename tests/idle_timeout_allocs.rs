//! The idle timeout resets in place: after its first item, a stream wrapped in
//! `WithIdleTimeout` allocates nothing per message, however many messages it carries.
//!
//! The stream runs on a current-thread runtime, so all its work (polling, waking, the timer)
//! happens on the test thread, the only one counted.

use support::alloc;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use fastgrpc::Status;
use fastgrpc::stream::WithIdleTimeout;
use futures_util::{Stream, StreamExt};

const MESSAGES: u32 = 1_000;

/// A stream whose every message arrives "later": each poll first answers `Pending` (waking
/// itself, as a socket read would once data arrives), then the item. So every message starts
/// a wait, and every wait moves the idle timer.
struct Arriving {
    next: u32,
    end: u32,
    ready: bool,
}

impl Stream for Arriving {
    type Item = Result<u32, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.next == self.end {
            return Poll::Ready(None);
        }
        if !self.ready {
            self.ready = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.ready = false;
        self.next += 1;
        Poll::Ready(Some(Ok(self.next - 1)))
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// A runtime whose clock only moves when every task waits, straight to the next timer.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Messages every 6 ms against a 10 ms idle timeout, for `MESSAGES + 1` messages: the stream
/// never times out, which it would at 10 ms unless its timer were moved again and again. The
/// timer runs early (it is moved lazily), so it fires during nearly every wait and is moved,
/// in place, each time. Returns the allocations of all messages after the first.
async fn allocations_after_first_item() -> u64 {
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_millis(6));
    ticks.tick().await; // The first tick is immediate; start with a full gap.
    let mut sent = 0u32;
    let messages = futures_util::stream::poll_fn(move |cx| {
        ticks.poll_tick(cx).map(|_| {
            sent += 1;
            Some(Ok::<_, Status>(sent))
        })
    });
    let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_millis(10)));
    assert_eq!(stream.next().await.unwrap().unwrap(), 1);

    let before = alloc::counted();
    alloc::set_counting(true);
    for expected in 2..=MESSAGES + 1 {
        let n = stream.next().await.unwrap().unwrap();
        assert_eq!(n, expected);
    }
    alloc::set_counting(false);
    let allocations = alloc::counted() - before;

    // Every gap was waited out on the paused clock: 6 ms each, no timeout in 6 s.
    assert_eq!(started.elapsed(), Duration::from_millis(6) * (MESSAGES + 1));
    allocations
}

#[test]
fn moving_the_idle_timer_allocates_nothing_per_message() {
    let rt = paused_runtime();
    // Warm the runtime's own queues first, so only the stream's steady state is measured.
    rt.block_on(allocations_after_first_item());
    let allocations = rt.block_on(allocations_after_first_item());
    assert_eq!(
        allocations, 0,
        "{allocations} allocations for {MESSAGES} messages"
    );
}

/// The same with messages that are never late enough to fire the timer: each wait still
/// reads the clock and polls the timer.
#[test]
fn waits_that_never_fire_the_timer_allocate_nothing_per_message() {
    let rt = runtime();
    let run = || {
        rt.block_on(async {
            let messages = Arriving {
                next: 0,
                end: MESSAGES + 1,
                ready: false,
            };
            let mut stream = WithIdleTimeout::new(messages, Some(Duration::from_secs(60)));
            assert_eq!(stream.next().await.unwrap().unwrap(), 0);
            let before = alloc::counted();
            alloc::set_counting(true);
            for expected in 1..=MESSAGES {
                assert_eq!(stream.next().await.unwrap().unwrap(), expected);
            }
            alloc::set_counting(false);
            alloc::counted() - before
        })
    };
    run();
    assert_eq!(run(), 0);
}

#[test]
fn without_a_timeout_nothing_is_allocated_at_all() {
    let rt = runtime();
    let run = || {
        rt.block_on(async {
            let mut stream = WithIdleTimeout::new(
                Arriving {
                    next: 0,
                    end: MESSAGES,
                    ready: false,
                },
                None,
            );
            while let Some(item) = stream.next().await {
                item.unwrap();
            }
        })
    };
    run(); // Warm the runtime's queues.
    let ((), allocations) = alloc::count_allocations(run);
    assert_eq!(allocations, 0);
}

/// The contrast: a timer created per message, as a naive adapter would, allocates per
/// message. This keeps the tests above honest: the counting does see a timer's box.
#[test]
fn a_new_sleep_per_message_allocates_per_message() {
    let rt = runtime();
    let ((), allocations) = alloc::count_allocations(|| {
        rt.block_on(async {
            for _ in 0..MESSAGES {
                let mut sleep = Box::pin(tokio::time::sleep(Duration::from_secs(60)));
                // Poll once so it is registered, like a waiting stream's timer.
                let waker = futures_util::task::noop_waker();
                assert!(
                    sleep
                        .as_mut()
                        .poll(&mut Context::from_waker(&waker))
                        .is_pending()
                );
            }
        })
    });
    assert!(
        allocations >= u64::from(MESSAGES),
        "{allocations} allocations"
    );
}
